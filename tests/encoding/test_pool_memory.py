"""pool_empty: big decode outputs come from pyarrow's memory pool (recycled pages, no page
faults per scan), small ones from numpy; both are ordinary writable arrays."""
import numpy as np
import pyarrow as pa
import pytest

from lancefmt.encoding.pool_memory import POOL_MIN_BYTES, pool_empty
from lancefmt.encoding.v2_1 import _fastlanes


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int64, np.float64])
def test_big_arrays_live_in_the_pool_and_small_ones_in_numpy(dtype):
    item = np.dtype(dtype).itemsize
    big = pool_empty(POOL_MIN_BYTES // item + 3, dtype)
    assert isinstance(big.base, pa.Buffer) and big.dtype == dtype and big.flags.writeable
    assert big.size == POOL_MIN_BYTES // item + 3 and big.ctypes.data % 64 == 0
    big[:] = 7
    assert (big == 7).all()
    small = pool_empty(3, dtype)
    assert small.base is None and small.size == 3 and small.dtype == dtype
    assert pool_empty(0, dtype).size == 0


def test_page_decodes_return_pool_arrays_with_the_right_values():
    rng = np.random.default_rng(1)
    values = rng.integers(0, 1 << 62, 40_000, dtype=np.uint64)
    data = values.view(np.uint8)
    starts = np.array([0, 16_000 * 8], dtype=np.int64)
    counts = np.array([16_000, 24_000], dtype=np.int64)
    out = _fastlanes.gather_fixed_chunks(data, starts, counts, 8)
    assert isinstance(out.base, pa.Buffer)
    expect = values.copy()
    del data, values  # the output holds its own pool buffer
    np.testing.assert_array_equal(out.view(np.uint64), expect)
