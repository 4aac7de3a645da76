# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, nonecheck=False
"""The merge_insert key probe for dense integer keys: every target key looks itself up in a
direct-address table of the source's keys (``lut[key - lo]`` = source row, -1 = none).

One pass without the GIL over a chunk of target keys, writing the (target row, source row)
pairs found; numpy would need four temporaries of the chunk's size for the same work.
"""
import numpy as np
from libc.stdint cimport int32_t, int64_t, uint64_t


def probe(const int64_t[::1] keys, int64_t lo, const int32_t[::1] lut, int64_t first_row):
    """(target rows, source rows) as int64 arrays for the keys found in ``lut``; target rows
    are numbered from ``first_row``."""
    cdef Py_ssize_t n = keys.shape[0], i, found = 0
    cdef uint64_t span = <uint64_t>lut.shape[0], off
    cdef int32_t hit
    rows_np = np.empty(n, dtype=np.int64)
    hits_np = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] rows = rows_np
    cdef int64_t[::1] hits = hits_np
    with nogil:
        for i in range(n):
            # modular: a key below lo wraps to at least 2**63 - lo, which is >= span
            off = <uint64_t>keys[i] - <uint64_t>lo
            if off < span:
                hit = lut[off]
                if hit >= 0:
                    rows[found] = first_row + i
                    hits[found] = hit
                    found += 1
    return rows_np[:found], hits_np[:found]
