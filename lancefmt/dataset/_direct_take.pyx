# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels of the direct take (``direct_take.py``): fixed-width values gathered straight from
memory-mapped data files, one call per column over every fragment.

A column is described by *segments*: runs of rows whose values lie at a known place. Segment
``s`` holds the rows ``[starts[s], starts[s + 1])`` (dataset-wide physical row numbers) at
address ``ptrs[s]``, either flat (``widths[s] == -1``: row ``i`` of the segment is the
``value_bytes`` bytes at ``ptrs[s] + i * value_bytes``) or as one FastLanes bit-packed block of
1024 values (``widths[s]`` bits each, words of ``8 * value_bytes`` bits; see ``_fastlanes.pyx``).

:func:`miniblock_segments` cuts a 2.1/2.2 mini-block page into such segments (checking every
chunk header and block against the chunk it sits in); the caller checks that the segments' bytes
lie inside the mapped file before it hands their addresses to :func:`gather`, which then only
has to check the requested rows against the segment table.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int16_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()

cdef extern from *:
    void __builtin_prefetch(const void* addr) noexcept nogil

# Rows ahead whose bytes are prefetched (the gathers are independent cache misses); a power
# of two (the bit-packed loop keeps a ring of this many rows).
DEF LOOKAHEAD = 64

cdef int[8] FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


cdef inline int64_t _header_word(const uint8_t* p, int width) noexcept nogil:
    """A little-endian u16 (2.1) or u32 (2.2) chunk-header word."""
    if width == 2:
        return p[0] | (<int64_t>p[1] << 8)
    return p[0] | (<int64_t>p[1] << 8) | (<int64_t>p[2] << 16) | (<int64_t>p[3] << 24)


def miniblock_segments(const uint8_t[::1] data, const int64_t[::1] chunk_offsets,
                       const int64_t[::1] chunk_sizes, const int64_t[::1] value_starts,
                       int size_width, bint bitpacked, int bits):
    """Segments of a mini-block page without levels and with one value buffer per chunk:
    ``(row_starts, byte_offsets, widths)`` with rows counted from the page start and byte
    offsets into ``data`` (the page's chunk buffer). Bit-packed chunks give one segment per
    1024-value block (``[width word][128 * width bytes]``), flat chunks one per chunk.

    Chunk ``c`` lies at ``chunk_offsets[c]`` (``chunk_sizes[c]`` bytes) and holds the rows
    ``value_starts[c]`` up to ``value_starts[c + 1]``; its header is a u16 level count and a
    u16/u32 (``size_width``) value-buffer size, padded to 8 bytes. Any inconsistency with
    ``data`` is a ValueError."""
    cdef Py_ssize_t nch = chunk_offsets.shape[0], size = data.shape[0]
    if bits not in (8, 16, 32, 64):
        raise ValueError(f"values of {bits} bits")
    if size_width not in (2, 4):
        raise ValueError("bad chunk header width")
    if chunk_sizes.shape[0] != nch or value_starts.shape[0] != nch + 1:
        raise ValueError("chunk table arrays disagree in length")
    cdef int wb = bits // 8
    cdef Py_ssize_t c, nseg = 0
    cdef int64_t count, cap = 0
    for c in range(nch):
        count = value_starts[c + 1] - value_starts[c]
        if count < 0 or value_starts[c] < 0:
            raise ValueError(f"chunk {c} holds a negative number of rows")
        cap += ((count + 1023) >> 10) if bitpacked else 1
    row_starts = np.empty(cap, dtype=np.int64)
    offsets = np.empty(cap, dtype=np.int64)
    widths = np.empty(cap, dtype=np.int16)
    cdef int64_t[::1] rs = row_starts
    cdef int64_t[::1] offs = offsets
    cdef int16_t[::1] ws = widths
    cdef const uint8_t* src = &data[0] if size else NULL
    cdef int64_t s, csize, head, vlen, vstart, pos, g, groups
    cdef uint64_t w
    cdef int bad = 0  # 1: chunk outside data, 2: header/values past the chunk, 3: bit width
    with nogil:
        for c in range(nch):
            count = value_starts[c + 1] - value_starts[c]
            if count == 0:
                continue
            s = chunk_offsets[c]
            csize = chunk_sizes[c]
            if s < 0 or csize < 0 or s > size or csize > size - s:
                bad = 1
                break
            head = 2 + size_width
            if head > csize:
                bad = 2
                break
            vlen = _header_word(src + s + 2, size_width)
            vstart = (head + 7) & ~(<int64_t>7)
            if vstart + vlen > csize:
                bad = 2
                break
            vstart += s
            if not bitpacked:
                if count * wb > vlen:
                    bad = 2
                    break
                rs[nseg] = value_starts[c]
                offs[nseg] = vstart
                ws[nseg] = -1
                nseg += 1
                continue
            groups = (count + 1023) >> 10
            pos = 0
            for g in range(groups):
                if pos + wb > vlen:
                    bad = 2
                    break
                w = 0
                memcpy(&w, src + vstart + pos, wb)
                if w > <uint64_t>bits:
                    bad = 3
                    break
                if pos + wb + 128 * <int64_t>w > vlen:
                    bad = 2
                    break
                rs[nseg] = value_starts[c] + (g << 10)
                offs[nseg] = vstart + pos + wb
                ws[nseg] = <int16_t>w
                nseg += 1
                pos += wb + 128 * <int64_t>w
            if bad:
                break
    if bad == 1:
        raise ValueError(f"chunk {c} lies outside the page data")
    if bad == 2:
        raise ValueError(f"chunk {c}: header or values run past the chunk")
    if bad == 3:
        raise ValueError(f"chunk {c}: bit width {w} exceeds the {bits}-bit word")
    return row_starts[:nseg], offsets[:nseg], widths[:nseg]


ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


cdef inline word_t _load(const uint8_t* p, Py_ssize_t k, word_t tag) noexcept nogil:
    """Word ``k`` of ``p`` (little-endian, any alignment)."""
    cdef word_t v
    memcpy(&v, p + k * sizeof(word_t), sizeof(word_t))
    return v


cdef inline word_t _unpack_one(const uint8_t* block, int w, int64_t i, word_t tag) noexcept nogil:
    """Value ``i`` (0..1023) of a FastLanes block of ``word_t`` words packed at ``w`` bits
    (the word width is a compile-time constant in each specialisation)."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int r = <int>(i & 127)
    cdef int row = 8 * FL_ORDER[(r // lanes) * 64 // t] + <int>(i >> 7)
    cdef int lane = r % lanes
    cdef int b = row * w
    cdef int k = b // t
    cdef int sh = b % t
    cdef word_t v
    if w == 0:
        return 0
    v = <word_t>(_load(block, k * lanes + lane, tag) >> sh)
    if sh + w > t:
        v = <word_t>(v | (_load(block, (k + 1) * lanes + lane, tag) << (t - sh)))
    if w < t:
        v = <word_t>(v & ((<word_t>1 << w) - 1))
    return v


cdef inline Py_ssize_t _segment_of(const int64_t* starts, Py_ssize_t nseg,
                                   int64_t row) noexcept nogil:
    """The last segment starting at or before ``row`` (``starts[0] <= row < starts[nseg]``)."""
    cdef Py_ssize_t lo = 0, hi = nseg, mid
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if starts[mid] <= row:
            lo = mid
        else:
            hi = mid
    return lo


def gather(const int64_t[::1] starts, const uint64_t[::1] ptrs, const int16_t[::1] widths,
           int value_bytes, const int64_t[::1] rows, uint8_t[::1] out,
           Py_ssize_t lo=0, Py_ssize_t hi=-1):
    """Write the values of ``rows[lo:hi]`` (any order, repeats allowed) to
    ``out[lo * value_bytes:hi * value_bytes]``. ``ptrs`` must address the segments' bytes in a
    buffer the caller keeps alive (checked when the segments were made); the rows are checked
    here against the segment table, once, before any byte is read. Runs without the GIL."""
    cdef Py_ssize_t nseg = ptrs.shape[0], n = rows.shape[0]
    if hi < 0:
        hi = n
    if not 0 <= lo <= hi <= n:
        raise ValueError("bad row range")
    if starts.shape[0] != nseg + 1 or widths.shape[0] != nseg:
        raise ValueError("segment arrays disagree in length")
    if value_bytes not in (1, 2, 4, 8):
        raise ValueError(f"{value_bytes}-byte values")
    if out.shape[0] < n * value_bytes:
        raise ValueError("output too small")
    if hi == lo:
        return
    if nseg == 0:
        raise ValueError("row outside the column")
    cdef int t = value_bytes * 8
    cdef int64_t first = starts[0], total = starts[nseg], row
    cdef Py_ssize_t k, s, bad = -1
    cdef const int64_t* st = &starts[0]
    for s in range(nseg):  # the table itself: ordered, blocks of at most 1024 rows
        if st[s + 1] < st[s] or widths[s] < -1 or widths[s] > t or (
                widths[s] >= 0 and st[s + 1] - st[s] > 1024):
            raise ValueError(f"segment {s} is malformed")
    cdef uint8_t* dst = &out[0]
    cdef bint ascending = True
    with nogil:
        for k in range(lo, hi):  # the one up-front check of every row
            row = rows[k]
            if row < first or row >= total:
                bad = k
                break
            if k > lo and row < rows[k - 1]:
                ascending = False
        if bad < 0 and ascending:
            if value_bytes == 1:
                _run_sorted(<uint8_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            elif value_bytes == 2:
                _run_sorted(<uint16_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            elif value_bytes == 4:
                _run_sorted(<uint32_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            else:
                _run_sorted(<uint64_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
        elif bad < 0:
            if value_bytes == 1:
                _run(<uint8_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            elif value_bytes == 2:
                _run(<uint16_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            elif value_bytes == 4:
                _run(<uint32_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
            else:
                _run(<uint64_t>0, st, nseg, &ptrs[0], &widths[0], &rows[0], lo, hi, dst)
    if bad >= 0:
        raise ValueError(f"row {rows[bad]} outside the column's {total} rows")


cdef inline const uint8_t* _word_addr(const uint8_t* block, int w, int64_t i,
                                     word_t tag) noexcept nogil:
    """Where value ``i`` of a segment starts (its first packed word, or the flat value)."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int r
    if w < 0:
        return block + i * sizeof(word_t)
    r = <int>(i & 127)
    return block + (((8 * FL_ORDER[(r // lanes) * 64 // t] + <int>(i >> 7)) * w // t) * lanes
                    + r % lanes) * sizeof(word_t)


cdef inline Py_ssize_t _seek(const int64_t* st, Py_ssize_t nseg, Py_ssize_t s,
                             int64_t row) noexcept nogil:
    """The segment of ``row``, starting from segment ``s`` (the previous row's)."""
    if st[s] <= row < st[s + 1]:
        return s
    if s + 2 <= nseg and st[s + 1] <= row < st[s + 2]:
        return s + 1  # sorted rows step to the next segment
    return _segment_of(st, nseg, row)


cdef void _run(word_t tag, const int64_t* st, Py_ssize_t nseg, const uint64_t* ptrs,
               const int16_t* widths, const int64_t* rows, Py_ssize_t lo, Py_ssize_t hi,
               uint8_t* dst) noexcept nogil:
    """The gather loop for one word width (rows already checked). The bytes of the row
    LOOKAHEAD places ahead are prefetched (its segment followed by a second cursor)."""
    cdef Py_ssize_t k, s = 0, ps = 0
    cdef int64_t row, prow
    cdef int16_t w
    cdef word_t v
    for k in range(lo, min(lo + LOOKAHEAD, hi)):
        prow = rows[k]
        ps = _seek(st, nseg, ps, prow)
        __builtin_prefetch(_word_addr(<const uint8_t*>ptrs[ps], widths[ps], prow - st[ps], tag))
    for k in range(lo, hi):
        if k + LOOKAHEAD < hi:
            prow = rows[k + LOOKAHEAD]
            ps = _seek(st, nseg, ps, prow)
            __builtin_prefetch(_word_addr(<const uint8_t*>ptrs[ps], widths[ps], prow - st[ps],
                                          tag))
        row = rows[k]
        s = _seek(st, nseg, s, row)
        w = widths[s]
        if w < 0:
            v = _load(<const uint8_t*>ptrs[s], row - st[s], tag)
        else:
            v = _unpack_one(<const uint8_t*>ptrs[s], w, row - st[s], tag)
        memcpy(dst + k * sizeof(word_t), &v, sizeof(word_t))


cdef void _run_sorted(word_t tag, const int64_t* st, Py_ssize_t nseg, const uint64_t* ptrs,
                      const int16_t* widths, const int64_t* rows, Py_ssize_t lo, Py_ssize_t hi,
                      uint8_t* dst) noexcept nogil:
    """The gather loop for ascending rows: segment by segment, a tight loop over the rows
    falling in each (prefetching LOOKAHEAD rows ahead within the segment)."""
    cdef Py_ssize_t k = lo, j, e, s = 0
    cdef int64_t start, stop
    cdef const uint8_t* base
    cdef int16_t w
    cdef word_t v
    cdef word_t* out = <word_t*>dst
    cdef int wb = sizeof(word_t)
    while k < hi:
        s = _seek(st, nseg, s, rows[k])
        start = st[s]
        stop = st[s + 1]
        base = <const uint8_t*>ptrs[s]
        w = widths[s]
        e = k + 1
        while e < hi and rows[e] < stop:
            e += 1
        if w < 0:
            for j in range(k, e):
                if j + LOOKAHEAD < e:
                    __builtin_prefetch(base + (rows[j + LOOKAHEAD] - start) * wb)
                memcpy(&v, base + (rows[j] - start) * wb, sizeof(word_t))
                memcpy(out + j, &v, sizeof(word_t))
        elif w == 0:
            v = 0
            for j in range(k, e):
                memcpy(out + j, &v, sizeof(word_t))
        else:
            _unpack_rows(base, w, start, rows, k, e, out)
        k = e


cdef inline Py_ssize_t _packed_word(int64_t i, int w, word_t tag) noexcept nogil:
    """Index of the first word holding value ``i`` of a block packed at ``w`` bits."""
    cdef int t = sizeof(word_t) * 8
    cdef int lanes = 1024 // t
    cdef int r = <int>(i & 127)
    return (((8 * FL_ORDER[(r // lanes) * 64 // t] + <int>(i >> 7)) * w) // t) * lanes + r % lanes


cdef void _unpack_rows(const uint8_t* base, int w, int64_t start, const int64_t* rows,
                       Py_ssize_t k, Py_ssize_t e, word_t* out) noexcept nogil:
    """Values of ``rows[k:e]`` (all in the block at ``base``, packed at 0 < w bits): two
    word loads and shifts per row, no branch on the data (the second word is the first one
    again when the value sits in one word: no extra cache line, nothing past the block).
    Each row's word positions are computed once, up to LOOKAHEAD rows ahead (when its words
    are prefetched), and kept in a ring until the row is read."""
    cdef unsigned t = sizeof(word_t) * 8
    cdef unsigned lanes = 1024 // t
    cdef word_t mask = <word_t>(~(<word_t>0)) if <unsigned>w >= t else \
        <word_t>(((<word_t>1) << w) - 1)
    cdef Py_ssize_t j, a
    cdef uint64_t i
    cdef unsigned r, b, sh
    cdef uint32_t[LOOKAHEAD] ring_w, ring_n
    cdef uint8_t[LOOKAHEAD] ring_s
    cdef word_t lo, hi, v
    # rows read lag the planned ones by ``lag`` (at most the ring size; no more than the
    # block's row count, so a block with few wanted rows costs no idle turns)
    cdef Py_ssize_t lag = min(<Py_ssize_t>LOOKAHEAD, e - k)
    for j in range(k, e + lag):
        if j - lag >= k:  # read row j - lag (then its ring slot may be reused)
            a = (j - lag) & (LOOKAHEAD - 1)
            memcpy(&lo, base + ring_w[a] * sizeof(word_t), sizeof(word_t))
            memcpy(&hi, base + ring_n[a] * sizeof(word_t), sizeof(word_t))
            sh = ring_s[a]
            v = <word_t>((lo >> sh) | (<word_t>(hi << 1) << (t - 1 - sh))) & mask
            memcpy(out + j - lag, &v, sizeof(word_t))
        if j < e:  # plan row j: its words, prefetched
            i = <uint64_t>(rows[j] - start)
            r = <unsigned>(i & 127)
            b = (8 * <unsigned>FL_ORDER[(r // lanes) * 64 // t] + <unsigned>(i >> 7)) * <unsigned>w
            sh = b % t
            a = j & (LOOKAHEAD - 1)
            ring_w[a] = (b // t) * lanes + r % lanes
            ring_n[a] = ring_w[a] + (lanes if sh + <unsigned>w > t else 0)
            ring_s[a] = <uint8_t>sh
            __builtin_prefetch(base + ring_w[a] * sizeof(word_t))
