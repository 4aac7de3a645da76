"""Big decode outputs in a memory pool that keeps freed pages, instead of numpy's malloc.

glibc hands big blocks back to the OS when they are freed, so a fresh numpy array of a page's
values page-faults in every 4 KiB of it again on each scan (about 10,000 faults, a quarter of a
2.2 scan of 2M rows). pyarrow's default pool (mimalloc) keeps freed pages for only 10 ms: a
read of an object store decodes more slowly than that, so its outputs faulted in again anyway
(a 1 GB 2.2 scan over S3: 22,000 faults, decoding 0.57 s of CPU against 0.21 s from local
files). The outputs therefore come from pyarrow's jemalloc pool, whose freed pages lapse over
:data:`DECAY_MS` (arrow's jemalloc, separate from the default pool: the setting is that pool's,
process-wide), or from the default pool where the build has no jemalloc. Small arrays stay with
numpy, where allocation is cheaper.
"""
import numpy as np
import pyarrow as pa

POOL_MIN_BYTES = 1 << 16
DECAY_MS = 10_000  # freed decode memory kept this long for the next scan or batch

_pool = None


def decode_pool() -> pa.MemoryPool:
    """The pool of big decode outputs (jemalloc with :data:`DECAY_MS`, else the default)."""
    global _pool
    if _pool is None:
        try:
            pool = pa.jemalloc_memory_pool()
            pa.jemalloc_set_decay_ms(DECAY_MS)  # arenas created from now on: before any use
        except NotImplementedError:  # a pyarrow built without jemalloc
            pool = pa.default_memory_pool()
        _pool = pool
    return _pool


def pool_empty(count: int, dtype) -> np.ndarray:
    """An uninitialised, writable 1-D array of ``count`` values (pool memory when big)."""
    dtype = np.dtype(dtype)
    nbytes = int(count) * dtype.itemsize
    if nbytes < POOL_MIN_BYTES:
        return np.empty(count, dtype=dtype)
    return np.frombuffer(pa.allocate_buffer(nbytes, memory_pool=_pool or decode_pool()),
                         dtype=dtype)
