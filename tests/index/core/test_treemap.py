"""Lance's serialized RowIdTreeMap: round trips, and every malformed input is CorruptFileError."""
import struct

import numpy as np
import pytest
from pyroaring import BitMap

from lancefmt.errors import CorruptFileError, UnsupportedFeatureError
from lancefmt.index.core.treemap import decode_treemap, encode_treemap


def test_round_trip_across_fragments():
    ids = np.array([0, 5, 7, (1 << 32) | 3, (3 << 32) | 9, (3 << 32) | 10], dtype=np.uint64)
    data = encode_treemap(ids)
    assert struct.unpack_from("<I", data)[0] == 3  # fragments 0, 1, 3
    assert decode_treemap(data).tolist() == ids.tolist()
    assert decode_treemap(encode_treemap(np.empty(0, np.uint64))).size == 0


def test_layout_matches_lance():
    body = BitMap([1, 2]).serialize()
    data = struct.pack("<III", 1, 4, len(body)) + body
    assert decode_treemap(data).tolist() == [(4 << 32) | 1, (4 << 32) | 2]
    assert encode_treemap(np.array([(4 << 32) | 1, (4 << 32) | 2], np.uint64)) == data


@pytest.mark.parametrize("data", [
    b"", b"\x01\x00", struct.pack("<I", 1_000_000),             # too short, huge count
    struct.pack("<III", 1, 0, 100) + b"x" * 10,                 # bitmap overruns
    struct.pack("<III", 1, 0, 4) + b"\xff" * 4,                 # not a roaring bitmap
    encode_treemap(np.array([1], np.uint64)) + b"junk",         # trailing bytes
])
def test_malformed_maps_are_corrupt(data):
    with pytest.raises(CorruptFileError):
        decode_treemap(data, "x.lance")


def test_whole_fragment_entries_are_refused():
    with pytest.raises(UnsupportedFeatureError):
        decode_treemap(struct.pack("<III", 1, 0, 0))
