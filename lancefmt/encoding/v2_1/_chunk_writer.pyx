# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Mini-block chunk assembly for pages without rep/def levels and one value buffer per chunk
(the common flat / bit-packed / variable case): header ``u16 0 | u16 or u32 size | 0xFE pad``,
the buffer, 0xFE padding to 8 bytes, and the chunk metadata word, all in one nogil pass."""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset

cnp.import_array()


def assemble_single_buffer(const uint8_t[::1] data, const int64_t[::1] starts,
                           const int64_t[::1] counts, bint large):
    """(chunk bytes, metadata words uint32) for chunks ``data[starts[k]:starts[k+1]]`` of
    ``counts[k]`` values (powers of two except the last)."""
    cdef Py_ssize_t k, nchunks = counts.shape[0]
    if starts.shape[0] != nchunks + 1:
        raise ValueError("starts must have one entry more than counts")
    if nchunks and (starts[0] < 0 or starts[nchunks] > data.shape[0]):
        raise ValueError("chunk ranges outside the data")
    cdef int64_t size, total = 0, limit = (1 << 32) - 1 if large else 65535
    for k in range(nchunks):
        size = starts[k + 1] - starts[k]
        if size < 0 or size > limit:
            raise ValueError(f"chunk {k}: value buffer of {size} bytes")
        total += 8 + ((size + 7) & ~7)
    out = np.empty(total, dtype=np.uint8)
    meta = np.empty(nchunks, dtype=np.uint32)
    cdef uint8_t[::1] o = out
    cdef uint32_t[::1] m = meta
    cdef int64_t pos = 0, chunk_bytes, c
    cdef int log
    with nogil:
        for k in range(nchunks):
            size = starts[k + 1] - starts[k]
            chunk_bytes = 8 + ((size + 7) & ~7)
            o[pos] = 0
            o[pos + 1] = 0
            if large:
                o[pos + 2] = size & 0xFF
                o[pos + 3] = (size >> 8) & 0xFF
                o[pos + 4] = (size >> 16) & 0xFF
                o[pos + 5] = (size >> 24) & 0xFF
                o[pos + 6] = 0xFE
                o[pos + 7] = 0xFE
            else:
                o[pos + 2] = size & 0xFF
                o[pos + 3] = (size >> 8) & 0xFF
                memset(&o[pos + 4], 0xFE, 4)
            if size:
                memcpy(&o[pos + 8], &data[starts[k]], size)
            if chunk_bytes - 8 - size:
                memset(&o[pos + 8 + size], 0xFE, chunk_bytes - 8 - size)
            log = 0
            if k + 1 < nchunks:
                c = counts[k]
                while c > 1:
                    c >>= 1
                    log += 1
            m[k] = <uint32_t>(((chunk_bytes // 8 - 1) << 4) | log)
            pos += chunk_bytes
    return out, meta


cdef inline uint64_t _word(const uint8_t* p, int w) noexcept nogil:
    """The ``w``-byte word at ``p`` (any alignment; fixed-size copies compile to one load)."""
    cdef uint64_t v8
    cdef uint32_t v4
    cdef uint16_t v2
    if w == 8:
        memcpy(&v8, p, 8)
        return v8
    if w == 4:
        memcpy(&v4, p, 4)
        return v4
    if w == 2:
        memcpy(&v2, p, 2)
        return v2
    return p[0]


def count_runs(const uint8_t[::1] data, int t, Py_ssize_t n, Py_ssize_t limit):
    """Runs of equal T-bit values among the first ``n`` of ``data``, counting stops early past
    ``limit`` (then ``limit + 1`` comes back): RLE is judged without a full pass over values
    that do not repeat."""
    if t not in (8, 16, 32, 64):
        raise ValueError(f"word width {t} is not 8, 16, 32 or 64")
    cdef int w = t // 8
    if n < 0 or data.shape[0] < n * w:
        raise ValueError(f"{n} values of {w} bytes need more than {data.shape[0]} bytes")
    cdef Py_ssize_t i, runs = 1 if n else 0
    cdef const uint8_t* p = &data[0] if n else NULL
    cdef uint64_t prev, cur
    if n == 0:
        return 0
    with nogil:
        prev = _word(p, w)
        for i in range(1, n):
            cur = _word(p + i * w, w)
            if cur != prev:
                runs += 1
                if runs > limit:
                    break
            prev = cur
    return runs
