import numpy as np
import pytest

from lancefmt.encoding._dictionary import dictionary_validity, expand_string_dictionary

from encoding_reference import bits


def test_expand_string_dictionary():
    items = [b"x", b"", b"yyy"]
    item_offsets = np.array([0, 1, 1, 4], dtype=np.int64)
    data = np.frombuffer(b"xyyy", dtype=np.uint8)
    idx = np.array([1, 0, 3, 2, 1], dtype=np.uint8)  # 0 = null, k = item k-1
    for large in (False, True):
        offsets, out, validity, nulls, bad = expand_string_dictionary(idx, item_offsets, None, data, large)
        assert bad == -1 and nulls == 1
        assert offsets.dtype == (np.int64 if large else np.int32)
        got = [None if not ok else out[offsets[i]:offsets[i + 1]].tobytes()
               for i, ok in enumerate(bits(validity, 5))]
        assert got == [b"x", None, b"yyy", b"", b"x"]


def test_expand_null_item_and_bad_index():
    item_offsets = np.array([0, 1, 1], dtype=np.int64)
    data = np.frombuffer(b"a", dtype=np.uint8)
    item_validity = np.array([0b01], dtype=np.uint8)  # item 1 is null
    offsets, out, validity, nulls, bad = expand_string_dictionary(
        np.array([2, 1], np.uint8), item_offsets, item_validity, data, False)
    assert nulls == 1 and bits(validity, 2) == [False, True]
    *_, bad = expand_string_dictionary(np.array([1, 3], np.uint8), item_offsets, None, data, False)
    assert bad == 1


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                                   np.uint32, np.uint64])
def test_dictionary_validity(dtype):
    idx = np.array([0, 2, 1, 2], dtype=dtype)
    validity, nulls, bad = dictionary_validity(idx, 3, np.array([0b011], np.uint8))
    assert bad == -1 and nulls == 2 and bits(validity, 4) == [True, False, True, False]
    validity, nulls, bad = dictionary_validity(idx, 3, None)
    assert validity is None and nulls == 0
    _, _, bad = dictionary_validity(np.array([0, 3], dtype=dtype), 3, None)
    assert bad == 1


def test_dictionary_validity_negative_index():
    _, _, bad = dictionary_validity(np.array([0, -1], np.int32), 3, None)
    assert bad == 1
