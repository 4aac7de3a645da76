"""Big decode outputs in pyarrow's memory pool instead of numpy's malloc.

glibc hands big blocks back to the OS when they are freed, so a fresh numpy array of a page's
values page-faults in every 4 KiB of it again on each scan (about 10,000 faults, a quarter of a
2.2 scan of 2M rows). The pool keeps freed pages and hands them out again. Small arrays stay
with numpy, where allocation is cheaper.
"""
import numpy as np
import pyarrow as pa

POOL_MIN_BYTES = 1 << 16


def pool_empty(count: int, dtype) -> np.ndarray:
    """An uninitialised, writable 1-D array of ``count`` values (pool memory when big)."""
    dtype = np.dtype(dtype)
    nbytes = int(count) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(count, dtype=dtype)
    return np.frombuffer(pa.allocate_buffer(nbytes), dtype=dtype)
