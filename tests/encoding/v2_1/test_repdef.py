"""Rep/def kernels and assembly on the worked examples of lance_v21_encodings.md §4.3 / §5.6,
plus full-zip control words of every width (2- and 4-byte words do not occur in files small
enough to write in a test, so they are built by hand)."""
import struct

import numpy as np
import pyarrow as pa
import pytest

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.encoding.v2_1._repdef import (row_starts, unravel_list, zip_walk_fixed,
                                            zip_walk_variable)
from lancefmt.encoding.v2_1.assemble import page_array
from lancefmt.encoding.v2_1.layout import Layers
from lancefmt.encoding.v2_1.pages import PageData
from lancefmt.encoding.v2_1.values import FixedValues
from lancefmt.errors import CorruptFileError, UnsupportedFeatureError

u16 = lambda xs: np.array(xs, dtype=np.uint16)  # noqa: E731


def _layers(*kinds):
    return Layers.of(kinds, "test", None)


def test_list_of_lists_worked_example():
    # [[[1,2],[]], null, [], [null,[3]], [[null]]]: layers [3,6,6]
    layers = _layers(pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULL_AND_EMPTY_LIST,
                     pb.REPDEF_NULL_AND_EMPTY_LIST)
    rep = u16([2, 0, 1, 2, 2, 2, 1, 2])
    defs = u16([0, 0, 3, 4, 5, 2, 0, 1])
    vals = FixedValues(32, 4, np.array([1, 2, 3, 0], "<i4").view(np.uint8))
    t = pa.list_(pa.list_(pa.int32()))
    arr = page_array(PageData(layers, rep, defs, vals, 4), [t, t.value_type, pa.int32()],
                     "p", None)
    assert arr.to_pylist() == [[[1, 2], []], None, [], [None, [3]], [[None]]]
    assert row_starts(rep, 2).tolist() == [0, 3, 4, 5, 7]


def test_unravel_list_offsets_and_validity():
    offsets, validity, rep2, def2 = unravel_list(u16([1, 0, 1, 1, 1]), u16([0, 0, 1, 2, 0]),
                                                 0, 1, 2, 2)
    assert offsets.tolist() == [0, 2, 2, 2, 3]
    assert validity.tolist() == [True, False, True, True]
    assert rep2.tolist() == [0, 0, 0, 0] and def2.tolist() == [0, 1, 2, 0]


def test_struct_nulls_at_every_level():
    # struct<x:int16> [{1}, null, {null}, {4}, {5}]: layers [3,3]
    layers = _layers(pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULLABLE_ITEM)
    t = pa.struct([("x", pa.int16())])
    vals = FixedValues(16, 5, np.array([1, 0, 0, 4, 5], "<i2").view(np.uint8))
    arr = page_array(PageData(layers, None, u16([0, 2, 1, 0, 0]), vals, 5), [t, pa.int16()],
                     "p", None)
    assert arr.to_pylist() == [{"x": 1}, None, {"x": None}, {"x": 4}, {"x": 5}]


def test_bad_levels_are_corrupt():
    layers = _layers(pb.REPDEF_NULLABLE_ITEM)
    vals = FixedValues(32, 2, np.zeros(8, np.uint8))
    with pytest.raises(CorruptFileError):
        page_array(PageData(layers, None, u16([0, 7]), vals, 2), [pa.int32()], "p", None)
    with pytest.raises(UnsupportedFeatureError):
        page_array(PageData(layers, None, u16([0, 0]), vals, 2), [pa.list_(pa.int32()),
                                                                    pa.int32()], "p", None)


@pytest.mark.parametrize("width", [1, 2, 4])
def test_full_zip_control_words_of_every_width(width):
    bits_def = {1: 2, 2: 6, 4: 10}[width]
    fmt = {1: "<B", 2: "<H", 4: "<I"}[width]
    # entries: (rep, def, value or None); max visible def 1
    entries = [(1, 0, 7), (0, 1, 0), (1, 2, None), (1, 0, 9)]
    fixed = b"".join(struct.pack(fmt, (r << bits_def) | d) +
                     (struct.pack("<i", v) if d <= 1 else b"") for r, d, v in entries)
    rep, defs, data, vis = zip_walk_fixed(np.frombuffer(fixed, np.uint8), len(entries), width,
                                          bits_def, 1, 4)
    assert rep.tolist() == [1, 0, 1, 1] and defs.tolist() == [0, 1, 2, 0] and vis == 3
    assert data.view("<i4").tolist() == [7, 0, 9]
    rep2, defs2, data2, vis2 = zip_walk_fixed(np.frombuffer(fixed, np.uint8), -1, width,
                                              bits_def, 1, 4)
    assert rep2.tolist() == rep.tolist() and vis2 == 3
    strings = [(1, 0, b"abc"), (0, 1, None), (1, 2, None), (1, 0, b"")]
    var = b"".join(struct.pack(fmt, (r << bits_def) | d) +
                   (struct.pack("<I", len(v)) + v if d == 0 else b"") for r, d, v in strings)
    rep, defs, offs, data, vis = zip_walk_variable(np.frombuffer(var, np.uint8), 4, width,
                                                   bits_def, 1, 32)
    assert offs.tolist() == [0, 3, 3, 3] and bytes(data) == b"abc" and vis == 3
    with pytest.raises(ValueError):
        zip_walk_variable(np.frombuffer(var[:-3], np.uint8), 4, width, bits_def, 1, 32)
    with pytest.raises(ValueError):
        zip_walk_fixed(np.frombuffer(fixed[:-1], np.uint8), 4, width, bits_def, 1, 4)
