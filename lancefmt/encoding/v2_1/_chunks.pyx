# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Mini-block chunk kernels: parse every chunk header of a page in one pass, and gather the
chunks' value buffers into page-wide buffers (so a page's values decode in one call instead of
one per chunk).

Chunk header (lance_v21_encodings.md §3.3): u16 num_levels, [u16 rep size], [u16 def size],
one u16 (2.1) or u32 (2.2) size per value buffer, 0xFE padding to 8; then the rep, def and value
buffers, each padded to 8. Every buffer is checked to lie inside its chunk.
"""
import numpy as np

from lancefmt.encoding.pool_memory import pool_empty

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()


cdef inline int64_t _pad8(int64_t n) noexcept nogil:
    return (n + 7) & ~(<int64_t>7)


cdef inline uint32_t _u16(const uint8_t[::1] d, int64_t p) noexcept nogil:
    return d[p] | (<uint32_t>d[p + 1] << 8)


cdef inline uint32_t _u32(const uint8_t[::1] d, int64_t p) noexcept nogil:
    return d[p] | (<uint32_t>d[p + 1] << 8) | (<uint32_t>d[p + 2] << 16) | (<uint32_t>d[p + 3] << 24)


def parse_headers(const uint8_t[::1] data, const int64_t[::1] starts, const int64_t[::1] sizes,
                  bint has_rep, bint has_def, int num_buffers, int size_width):
    """Per chunk: num_levels, (start, length) of rep, def and each value buffer (absolute
    positions in ``data``). Returns (levels int64[n], bufs int64[n, 2 + num_buffers, 2]);
    rep/def entries are (0, 0) when absent. Raises ValueError naming the first bad chunk."""
    cdef Py_ssize_t n = starts.shape[0], c, b
    cdef int64_t s, size, pos, head, ln
    cdef int bad = -1
    if sizes.shape[0] != n or size_width not in (2, 4) or num_buffers < 0:
        raise ValueError("bad chunk table")
    for c in range(n):
        if starts[c] < 0 or sizes[c] < 0 or starts[c] + sizes[c] > data.shape[0]:
            raise ValueError(f"chunk {c} lies outside the page data")
    levels = np.zeros(n, dtype=np.int64)
    bufs = np.zeros((n, 2 + num_buffers, 2), dtype=np.int64)
    cdef int64_t[::1] lv = levels
    cdef int64_t[:, :, ::1] bo = bufs
    head = 2 + 2 * has_rep + 2 * has_def + size_width * num_buffers
    with nogil:
        for c in range(n):
            s = starts[c]
            size = sizes[c]
            if head > size:
                bad = c
                break
            lv[c] = _u16(data, s)
            pos = 2
            if has_rep:
                bo[c, 0, 1] = _u16(data, s + pos)
                pos += 2
            if has_def:
                bo[c, 1, 1] = _u16(data, s + pos)
                pos += 2
            for b in range(num_buffers):
                if size_width == 2:
                    bo[c, 2 + b, 1] = _u16(data, s + pos)
                else:
                    bo[c, 2 + b, 1] = _u32(data, s + pos)
                pos += size_width
            pos = _pad8(pos)
            for b in range(2 + num_buffers):
                if b < 2 and not (has_rep if b == 0 else has_def):
                    continue
                ln = bo[c, b, 1]
                if pos + ln > size:
                    bad = c
                    break
                bo[c, b, 0] = s + pos
                pos = _pad8(pos + ln)
            if bad >= 0:
                break
    if bad >= 0:
        raise ValueError(f"chunk {bad}: header or buffers run past the chunk")
    return levels, bufs


def gather(const uint8_t[::1] data, const int64_t[:, ::1] ranges):
    """The ``(start, length)`` ranges of ``data`` back to back (ranges already checked)."""
    cdef Py_ssize_t n = ranges.shape[0], i
    cdef int64_t total = 0, pos = 0
    for i in range(n):
        if ranges[i, 0] < 0 or ranges[i, 1] < 0 or ranges[i, 0] + ranges[i, 1] > data.shape[0]:
            raise ValueError("range outside the data")
        total += ranges[i, 1]
    out = pool_empty(total, dtype=np.uint8)
    cdef uint8_t[::1] o = out
    with nogil:
        for i in range(n):
            if ranges[i, 1]:
                memcpy(&o[pos], &data[ranges[i, 0]], ranges[i, 1])
            pos += ranges[i, 1]
    return out


def gather_variable(const uint8_t[::1] data, const int64_t[:, ::1] ranges,
                    const int64_t[::1] counts, int offset_bits):
    """Mini-block Variable buffers of many chunks -> one (offsets int64[total + 1], bytes).

    Chunk buffer: ``counts[c] + 1`` offsets of ``offset_bits`` bits, counted from the buffer
    start, then the bytes. Offsets must rise and stay inside the buffer."""
    cdef Py_ssize_t n = ranges.shape[0], c, i
    cdef int64_t total = 0, dtotal = 0, k = 0, dpos = 0, s, ln, cnt, o0, o1, prev, cur
    cdef int w = offset_bits // 8, bad = -1
    if offset_bits not in (32, 64) or counts.shape[0] != n:
        raise ValueError("bad variable-width parameters")
    for c in range(n):
        if ranges[c, 0] < 0 or ranges[c, 1] < 0 or ranges[c, 0] + ranges[c, 1] > data.shape[0]:
            raise ValueError("range outside the data")
        if counts[c] < 0 or (counts[c] + 1) * w > ranges[c, 1]:
            raise ValueError(f"chunk {c}: {counts[c]} offsets do not fit its buffer")
        total += counts[c]
        dtotal += ranges[c, 1]
    offsets = pool_empty(total + 1, dtype=np.int64)
    out = pool_empty(dtotal, dtype=np.uint8)
    cdef int64_t[::1] off = offsets
    cdef uint8_t[::1] o = out
    off[0] = 0
    with nogil:
        for c in range(n):
            s = ranges[c, 0]
            ln = ranges[c, 1]
            cnt = counts[c]
            if w == 4:
                o0 = _u32(data, s)
            else:
                o0 = _u32(data, s) | (<int64_t>_u32(data, s + 4) << 32)
            prev = o0
            if o0 < (cnt + 1) * w or o0 > ln:
                bad = c
                break
            for i in range(1, cnt + 1):
                if w == 4:
                    cur = _u32(data, s + 4 * i)
                else:
                    cur = _u32(data, s + 8 * i) | (<int64_t>_u32(data, s + 8 * i + 4) << 32)
                if cur < prev or cur > ln:
                    bad = c
                    break
                k += 1
                off[k] = dpos + (cur - o0)
                prev = cur
            if bad >= 0:
                break
            o1 = prev
            if o1 > o0:
                memcpy(&o[dpos], &data[s + o0], o1 - o0)
            dpos += o1 - o0
    if bad >= 0:
        raise ValueError(f"chunk {bad}: variable-width offsets out of order or past the buffer")
    return offsets, out[:dpos]


def chunk_table(const uint8_t[::1] meta, bint wide, int64_t num_items, int64_t data_size):
    """A mini-block page's chunk table in one pass: per chunk metadata word (u16, or u32 when
    ``wide``) ``log2(values) | (size / 8 - 1) << 4``; the last chunk holds the items left.
    Returns (counts, offsets[n + 1], sizes, value_starts[n + 1]) as int64. Raises ValueError
    when the words are cut short, no chunk holds the items, the chunks hold more items than
    the page, or their bytes run past ``data_size``."""
    cdef int width = 4 if wide else 2
    cdef Py_ssize_t nbytes = meta.shape[0]
    if nbytes % width:
        raise ValueError(f"chunk metadata of {nbytes} bytes")
    cdef Py_ssize_t n = nbytes // width, i
    if n == 0 and num_items:
        raise ValueError(f"{num_items} items but no chunks")
    counts = np.empty(n, dtype=np.int64)
    sizes = np.empty(n, dtype=np.int64)
    offsets = np.empty(n + 1, dtype=np.int64)
    starts = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] cn = counts, sz = sizes, of = offsets, vs = starts
    cdef uint32_t word
    cdef int64_t held = 0
    with nogil:
        of[0] = 0
        vs[0] = 0
        for i in range(n):
            word = _u32(meta, i * 4) if wide else _u16(meta, i * 2)
            cn[i] = (<int64_t>1) << (word & 0xF)
            sz[i] = ((<int64_t>(word >> 4)) + 1) * 8
            of[i + 1] = of[i] + sz[i]
            if i + 1 < n:
                held += cn[i]
    if n:
        if num_items - held < 0:
            raise ValueError(f"chunks hold more than the page's {num_items} items")
        cn[n - 1] = num_items - held
        if of[n] > data_size:
            raise ValueError(f"chunks of {of[n]} bytes in a {data_size}-byte buffer")
    with nogil:
        for i in range(n):
            vs[i + 1] = vs[i] + cn[i]
    return counts, offsets, sizes, starts
