"""The checked Cython kernels of legacy pages (lancefmt/encoding/legacy/_kernels.pyx)."""
import numpy as np
import pytest

from lancefmt.encoding.legacy._kernels import (absolute_positions, check_dictionary_keys,
                                               rebase_positions)


def test_rebase_string_positions_with_empty_values_as_nulls():
    pos = np.array([100, 103, 103, 107, 107], np.int64)
    offsets, validity, nulls, bad = rebase_positions(pos, 0, 200, False, True)
    assert bad == -1 and nulls == 2
    assert offsets.dtype == np.int32 and offsets.tolist() == [0, 3, 3, 7, 7]
    assert np.unpackbits(validity, bitorder="little")[:4].tolist() == [1, 0, 1, 0]
    offsets, validity, nulls, bad = rebase_positions(pos, 0, 200, True, False)
    assert offsets.dtype == np.int64 and validity is None and nulls == 0 and bad == -1


@pytest.mark.parametrize("pos,bad", [([5, 4], 1), ([-1, 3], 0), ([0, 300], 1), ([250, 260], 0),
                                     ([0, 10, 9, 20], 2)])
def test_positions_backwards_or_out_of_bounds_are_bad(pos, bad):
    assert rebase_positions(np.array(pos, np.int64), 0, 200, True, True)[3] == bad


def test_int32_list_positions_and_the_2gib_limit():
    offsets, _, _, bad = rebase_positions(np.array([3, 3, 9], np.int32), 0, 9, False, False)
    assert bad == -1 and offsets.tolist() == [0, 0, 6]
    big = np.array([0, 2**31 + 5], np.int64)
    assert rebase_positions(big, 0, 2**40, False, False)[3] == 1      # too big for int32
    assert rebase_positions(big, 0, 2**40, True, False)[3] == -1


def test_dictionary_keys():
    assert check_dictionary_keys(np.array([0, 2, 1], np.uint8), 3) == -1
    assert check_dictionary_keys(np.array([0, 3, 1], np.uint8), 3) == 1
    assert check_dictionary_keys(np.array([0, -1], np.int16), 3) == 1
    assert check_dictionary_keys(np.array([], np.int64), 0) == -1


def test_absolute_positions():
    assert absolute_positions(np.array([4, 6, 6, 10], np.int64), 1000).tolist() == \
        [1000, 1002, 1002, 1006]
