"""Shredding Arrow arrays into rep/def levels, checked against the levels pylance 14 wrote for
the same rows (lance_v21_encodings.md §4.3, observed bytes)."""
import numpy as np
import pyarrow as pa

from lancefmt._proto import encodings_v2_1_pb2 as pb
from lancefmt.encoding.v2_1.shred import layer_codes, shred


def levels(arr, path=()):
    s = shred(arr, path)
    layers, defs = layer_codes(s.kinds, s.kill)
    return s, layers, defs


def test_list_of_lists_matches_pylance():
    arr = pa.array([[[1, 2], []], None, [], [None, [3]], [[None]]], pa.list_(pa.list_(pa.int32())))
    s, layers, defs = levels(arr)
    assert layers == [pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULL_AND_EMPTY_LIST,
                      pb.REPDEF_NULL_AND_EMPTY_LIST]
    assert s.rep.tolist() == [2, 0, 1, 2, 2, 2, 1, 2]
    assert defs.tolist() == [0, 0, 3, 4, 5, 2, 0, 1]
    assert s.values.to_pylist() == [1, 2, 3, None]


def test_struct_nulls_match_pylance():
    arr = pa.array([{"x": 1}, None, {"x": None}, {"x": 4}, {"x": 5}],
                   pa.struct([("x", pa.int16())]))
    s, layers, defs = levels(arr, (0,))
    assert layers == [pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULLABLE_ITEM]
    assert s.rep is None and defs.tolist() == [0, 2, 1, 0, 0]


def test_list_of_structs_matches_pylance():
    arr = pa.array([[{"p": 1}, None], None, [], [{"p": None}], [{"p": 7}]],
                   pa.list_(pa.struct([("p", pa.int8())])))
    s, layers, defs = levels(arr, (0,))
    assert layers == [pb.REPDEF_NULLABLE_ITEM, pb.REPDEF_NULLABLE_ITEM,
                      pb.REPDEF_NULL_AND_EMPTY_LIST]
    assert s.rep.tolist() == [1, 0, 1, 1, 1, 1]
    assert defs.tolist() == [0, 2, 3, 4, 1, 0]
    assert len(s.values) == 4  # the null struct still owns a slot


def test_all_valid_page_has_no_def_levels():
    s, layers, defs = levels(pa.array(np.arange(10)))
    assert layers == [pb.REPDEF_ALL_VALID_ITEM] and defs is None and s.rep is None
