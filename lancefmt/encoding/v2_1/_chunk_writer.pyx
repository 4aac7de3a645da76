# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Mini-block chunk assembly for pages without rep/def levels and one value buffer per chunk
(the common flat / bit-packed / variable case): header ``u16 0 | u16 or u32 size | 0xFE pad``,
the buffer, 0xFE padding to 8 bytes, and the chunk metadata word, all in one nogil pass."""
import numpy as np

from lancefmt.encoding.pool_memory import pool_empty

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
    out = pool_empty(total, np.uint8)
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


cdef inline int64_t _pow2_floor(int64_t x) noexcept nogil:
    cdef int64_t p = 1
    if x < 1:
        return 1
    while p <= x // 2:
        p <<= 1
    return p


cdef inline int64_t _value_buffer_bytes(const int64_t[::1] offsets, int64_t s, int64_t e,
                                        int width) noexcept nogil:
    """A chunk's value buffer: ``e - s + 1`` offsets, the bytes, padding to ``width``."""
    cdef int64_t size = width * (e - s + 1) + offsets[e] - offsets[s]
    return size + (width - size % width) % width


def assemble_variable(const uint8_t[::1] data, const int64_t[::1] offsets, int width,
                      bint large, int64_t target, int64_t max_values, int64_t max_value_buf,
                      int64_t max_chunk_total):
    """Mini-block chunks of strings / binary without levels, in one nogil pass: (chunk bytes,
    metadata words uint32), or None when a chunk cannot fit the limits (one value too big:
    the caller's general path decides). Chunks hold a power-of-two count of values whose
    offsets + bytes reach about ``target`` bytes (at most ``max_values``); each is ``u16 0 |
    u16 or u32 size | 0xFE pad``, then the value buffer (``count + 1`` offsets of ``width``
    bytes counted from the buffer start, the bytes, 0x48 padding to ``width``), 0xFE padding
    to 8."""
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef Py_ssize_t i
    if width not in (4, 8):
        raise ValueError(f"offset width {width} is not 4 or 8")
    if n < 1 or offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("string offsets outside the data")
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError("string offsets go backwards")
    # chunk boundaries: at most one chunk per value
    bounds = pool_empty(n + 1, np.int64)
    cdef int64_t[::1] b = bounds
    cdef Py_ssize_t nchunks = 0
    cdef int64_t s = 0, c, e, lo, hi, mid, goal, vbytes, total = 0
    cdef int header = 6 if large else 4
    cdef bint failed = False
    with nogil:
        b[0] = 0
        while s < n:
            # the last index whose offsets + bytes from s stay within target
            goal = offsets[s] + width * s + target
            lo, hi = s, n
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if offsets[mid] + width * mid <= goal:
                    lo = mid
                else:
                    hi = mid - 1
            c = _pow2_floor(lo - s)
            if c > max_values:
                c = max_values
            if s + c >= n:
                c = n - s
            while True:
                e = s + c
                vbytes = _value_buffer_bytes(offsets, s, e, width)
                if 16 + 4 + vbytes + 8 + 16 <= max_chunk_total and vbytes <= max_value_buf:
                    break
                if c == 1:
                    failed = True
                    break
                c = _pow2_floor(c - 1)
            if failed:
                break
            total += 8 + ((vbytes + 7) & ~7)
            s += c
            nchunks += 1
            b[nchunks] = s
    if failed:
        return None
    out = pool_empty(total, np.uint8)
    meta = np.empty(nchunks, dtype=np.uint32)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(out)
    cdef uint32_t[::1] m = meta
    cdef int64_t pos = 0, j, chunk_bytes, base, rel, nbytes
    cdef uint32_t off32
    cdef uint64_t off64
    cdef int log
    cdef Py_ssize_t k
    with nogil:
        for k in range(nchunks):
            s = b[k]
            e = b[k + 1]
            vbytes = _value_buffer_bytes(offsets, s, e, width)
            chunk_bytes = 8 + ((vbytes + 7) & ~7)
            memset(o + pos, 0, 2)
            if large:
                o[pos + 2] = vbytes & 0xFF
                o[pos + 3] = (vbytes >> 8) & 0xFF
                o[pos + 4] = (vbytes >> 16) & 0xFF
                o[pos + 5] = (vbytes >> 24) & 0xFF
            else:
                o[pos + 2] = vbytes & 0xFF
                o[pos + 3] = (vbytes >> 8) & 0xFF
            memset(o + pos + header, 0xFE, 8 - header)
            pos += 8
            base = width * (e - s + 1)
            for j in range(s, e + 1):
                rel = offsets[j] - offsets[s] + base
                if width == 4:
                    off32 = <uint32_t>rel
                    memcpy(o + pos + 4 * (j - s), &off32, 4)
                else:
                    off64 = <uint64_t>rel
                    memcpy(o + pos + 8 * (j - s), &off64, 8)
            nbytes = offsets[e] - offsets[s]
            if nbytes:
                memcpy(o + pos + base, &data[offsets[s]], nbytes)
            memset(o + pos + base + nbytes, 0x48, vbytes - base - nbytes)
            memset(o + pos + vbytes, 0xFE, chunk_bytes - 8 - vbytes)
            pos += chunk_bytes - 8
            log = 0
            if k + 1 < nchunks:
                c = e - s
                while c > 1:
                    c >>= 1
                    log += 1
            m[k] = <uint32_t>(((chunk_bytes // 8 - 1) << 4) | log)
    return out, meta


def max_length(const int64_t[::1] offsets):
    """The longest value of ``offsets`` (n + 1 positions): one pass, no array of lengths."""
    cdef Py_ssize_t i, n = offsets.shape[0] - 1
    cdef int64_t best = 0
    with nogil:
        for i in range(n):
            if offsets[i + 1] - offsets[i] > best:
                best = offsets[i + 1] - offsets[i]
    return best
