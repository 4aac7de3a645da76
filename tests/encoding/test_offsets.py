import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from lancefmt.encoding._offsets import decode_adjusted_offsets, encode_adjusted_offsets

from encoding_reference import bits, decode_adjusted_offsets as ref_decode, encode_adjusted_offsets as ref_encode


def test_decode_strings_example():
    # ['a', '', None, 'dddd'] as pylance writes it: adjustment = 5 bytes + 1
    ends = np.array([1, 1, 7, 5], dtype=np.uint64)
    offsets, validity, nulls, bad = decode_adjusted_offsets(ends, 6, 5, False)
    assert bad == -1 and nulls == 1
    assert offsets.dtype == np.int32 and offsets.tolist() == [0, 1, 1, 1, 5]
    assert bits(validity, 4) == [True, True, False, True]


def test_decode_lists_example_large():
    # [[1, 2], [], None, [3]]: adjustment = num_items + 1 = 4
    offsets, validity, nulls, bad = decode_adjusted_offsets(
        np.array([2, 2, 6, 3], dtype=np.uint64), 4, 3, True)
    assert offsets.dtype == np.int64 and offsets.tolist() == [0, 2, 2, 2, 3]
    assert nulls == 1 and bits(validity, 4) == [True, True, False, True]


def test_decode_no_nulls_gives_no_bitmap():
    offsets, validity, nulls, bad = decode_adjusted_offsets(np.array([3, 4], np.uint64), 5, 4, False)
    assert validity is None and nulls == 0 and bad == -1


@pytest.mark.parametrize("ends,limit,bad_row", [
    ([1, 0], 10, 1),        # goes backwards
    ([1, 11], 10, 1),       # past the data
    ([20], 10, 0),          # valid-looking but past the data
])
def test_decode_rejects_bad_offsets(ends, limit, bad_row):
    *_, bad = decode_adjusted_offsets(np.array(ends, np.uint64), 100, limit, True)
    assert bad == bad_row


def test_decode_refuses_32bit_overflow():
    with pytest.raises(OverflowError):
        decode_adjusted_offsets(np.array([1], np.uint64), 2**40, 2**33, False)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 50), st.booleans()), max_size=60),
       st.sampled_from([np.int32, np.int64]), st.integers(0, 9))
def test_encode_decode_match_reference(rows, dtype, start):
    lengths = [l for l, _ in rows]
    valid = [v for _, v in rows]
    offsets = np.concatenate([[start], start + np.cumsum(lengths, dtype=np.int64)]).astype(dtype)
    bitmap = np.packbits(np.array(valid, dtype=bool), bitorder="little") if rows else None
    ends, adj = encode_adjusted_offsets(offsets, bitmap, 0)
    ref_ends, ref_adj = ref_encode(offsets.tolist(), valid)
    assert ends.tolist() == ref_ends and adj == ref_adj
    total = int(offsets[-1] - offsets[0])
    out, validity, nulls, bad = decode_adjusted_offsets(ends, adj, total, dtype == np.int64)
    ref_out, ref_valid, ref_bad = ref_decode(ref_ends, ref_adj, total)
    assert bad == ref_bad == -1
    assert out.tolist() == ref_out
    assert nulls == valid.count(False)
    if nulls:
        assert bits(validity, len(valid)) == ref_valid
    else:
        assert validity is None


def test_encode_with_bit_offset_and_explicit_adjustment():
    offsets = np.array([5, 7, 7, 9], dtype=np.int64)
    bitmap = np.array([0b0000_0100 | 0b0001_0000], dtype=np.uint8)  # bits 2 and 4 set
    ends, adj = encode_adjusted_offsets(offsets, bitmap, 2, 100)
    assert adj == 100
    assert ends.tolist() == [2, 2 + 100, 4]


def test_encode_empty():
    ends, adj = encode_adjusted_offsets(np.array([0], np.int32), None, 0)
    assert ends.tolist() == [] and adj == 1
