# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels of the direct take (``direct_take.py``): fixed-width values gathered straight from
memory-mapped data files, every column over every fragment in one job.

A column is described by *segments*: runs of rows whose values lie at a known place. Segment
``s`` holds the rows ``[starts[s], starts[s + 1])`` (dataset-wide physical row numbers) at
address ``ptrs[s]``, either flat (``widths[s] == -1``: row ``i`` of the segment is the
``value_bytes`` bytes at ``ptrs[s] + i * value_bytes``) or as one FastLanes bit-packed block of
1024 values (``widths[s]`` bits each, words of ``8 * value_bytes`` bits; see ``_fastlanes.pyx``).

:func:`miniblock_segments` cuts a 2.1/2.2 mini-block page into such segments (checking every
chunk header and block against the chunk it sits in); the caller checks that the segments' bytes
lie inside the mapped file before it makes a :class:`SegmentTable` of them (which checks the
table itself, once). A take is then a :class:`GatherJob` over the wanted columns' tables that
any number of threads share; it checks the requested rows against the tables as it goes.
:func:`gather` is the same for one column on the calling thread.
"""
import numpy as np
import pyarrow as pa

cimport numpy as cnp
from libc.stdint cimport int8_t, int16_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.string cimport memcpy
from cpython.mem cimport PyMem_Free, PyMem_Malloc

from lancefmt.encoding.v2_1._chunk_header cimport CHUNK_OUTSIDE, CHUNK_OVERRUN, chunk_values

cnp.import_array()

cdef extern from *:
    void __builtin_prefetch(const void* addr) noexcept nogil

cdef extern from *:
    """
    /* a demand load of one byte that the compiler keeps (its value is not used) */
    static inline void lancefmt_touch(const void *p) { (void)*(const volatile unsigned char *)p; }
    """
    void _touch "lancefmt_touch"(const void* p) noexcept nogil

# Rows ahead whose bytes are prefetched (the gathers are independent cache misses); a power
# of two (the bit-packed loop keeps a ring of this many rows).
DEF LOOKAHEAD = 64

cdef int[8] FL_ORDER = [0, 4, 2, 6, 1, 5, 3, 7]


cdef inline int _chunk_blocks(const uint8_t* src, int64_t size, int64_t s, int64_t csize,
                              int size_width, bint bitpacked, int bits, int64_t row0,
                              int64_t count, int64_t* rs, int64_t* offs, int16_t* ws,
                              Py_ssize_t* nseg, uint64_t* width) noexcept nogil:
    """The segments of one chunk (``src[s:s + csize]``, ``count`` rows from ``row0``),
    appended at ``nseg``: one per bit-packed block, or one for a flat chunk. 0, or which
    check failed (CHUNK_OUTSIDE, CHUNK_OVERRUN, or 3: a bit width past the word, in
    ``width``)."""
    cdef int64_t vlen, vstart, pos = 0, g, groups
    cdef int wb = bits // 8
    cdef uint64_t w
    cdef int bad = chunk_values(src, size, s, csize, size_width, &vstart, &vlen)
    if bad:
        return bad
    if not bitpacked:
        if count * wb > vlen:
            return CHUNK_OVERRUN
        rs[nseg[0]] = row0
        offs[nseg[0]] = vstart
        ws[nseg[0]] = -1
        nseg[0] += 1
        return 0
    groups = (count + 1023) >> 10
    for g in range(groups):
        if pos + wb > vlen:
            return CHUNK_OVERRUN
        w = 0
        memcpy(&w, src + vstart + pos, wb)
        if w > <uint64_t>bits:
            width[0] = w
            return 3
        if pos + wb + 128 * <int64_t>w > vlen:
            return CHUNK_OVERRUN
        rs[nseg[0]] = row0 + (g << 10)
        offs[nseg[0]] = vstart + pos + wb
        ws[nseg[0]] = <int16_t>w
        nseg[0] += 1
        pos += wb + 128 * <int64_t>w
    return 0


def _chunk_error(int bad, Py_ssize_t c, uint64_t w, int bits):
    if bad == CHUNK_OUTSIDE:
        return ValueError(f"chunk {c} lies outside the page data")
    if bad == CHUNK_OVERRUN:
        return ValueError(f"chunk {c}: header or values run past the chunk")
    return ValueError(f"chunk {c}: bit width {w} exceeds the {bits}-bit word")


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
    cdef uint64_t w = 0
    cdef int bad = 0
    with nogil:
        for c in range(nch):
            count = value_starts[c + 1] - value_starts[c]
            if count == 0:
                continue
            bad = _chunk_blocks(src, size, chunk_offsets[c], chunk_sizes[c], size_width,
                                bitpacked, bits, value_starts[c], count, &rs[0], &offs[0],
                                &ws[0], &nseg, &w)
            if bad:
                break
    if bad:
        raise _chunk_error(bad, c, w, bits)
    return row_starts[:nseg], offsets[:nseg], widths[:nseg]


def chunk_segments(const uint64_t[::1] addresses, const int64_t[::1] sizes,
                   const int64_t[::1] row_starts, const int64_t[::1] counts,
                   const int8_t[::1] size_widths, const uint8_t[::1] bitpacked,
                   const int8_t[::1] bits):
    """Segments of whole mini-block chunks fetched into memory (a take from an object store):
    chunk ``c`` is the ``sizes[c]`` bytes at ``addresses[c]`` (in buffers the caller keeps
    alive, each exactly the chunk's bytes) holding ``counts[c]`` rows from ``row_starts[c]``,
    ``bits[c]``-bit values, bit-packed or flat. Returns ``(starts, ends, ptrs, widths)`` per
    segment, addresses absolute, in chunk order; every header and block is checked against
    its chunk, any inconsistency is a ValueError."""
    cdef Py_ssize_t nch = addresses.shape[0], c, nseg = 0
    if not (sizes.shape[0] == row_starts.shape[0] == counts.shape[0] == size_widths.shape[0]
            == bitpacked.shape[0] == bits.shape[0] == nch):
        raise ValueError("chunk arrays disagree in length")
    cdef int64_t cap = 0
    for c in range(nch):
        if counts[c] < 0 or bits[c] not in (8, 16, 32, 64) or size_widths[c] not in (2, 4):
            raise ValueError(f"chunk {c} is malformed")
        cap += ((counts[c] + 1023) >> 10) if bitpacked[c] else 1
    starts = np.empty(cap, dtype=np.int64)
    offsets = np.empty(cap, dtype=np.int64)
    widths = np.empty(cap, dtype=np.int16)
    ptrs = np.empty(cap, dtype=np.uint64)
    ends = np.empty(cap, dtype=np.int64)
    cdef int64_t[::1] rs = starts
    cdef int64_t[::1] offs = offsets
    cdef int16_t[::1] ws = widths
    cdef uint64_t[::1] pt = ptrs
    cdef int64_t[::1] en = ends
    cdef Py_ssize_t first
    cdef uint64_t w = 0
    cdef int bad = 0
    with nogil:
        for c in range(nch):
            if counts[c] == 0:
                continue
            first = nseg
            bad = _chunk_blocks(<const uint8_t*>addresses[c], sizes[c], 0, sizes[c],
                                size_widths[c], bitpacked[c], bits[c], row_starts[c], counts[c],
                                &rs[0], &offs[0], &ws[0], &nseg, &w)
            if bad:
                break
            for first in range(first, nseg):
                pt[first] = addresses[c] + <uint64_t>offs[first]
                en[first] = min(rs[first] + 1024, row_starts[c] + counts[c]) \
                    if ws[first] >= 0 else row_starts[c] + counts[c]
    if bad:
        raise _chunk_error(bad, c, w, bits[c])
    return starts[:nseg], ends[:nseg], ptrs[:nseg], widths[:nseg]


ctypedef fused word_t:
    uint8_t
    uint16_t
    uint32_t
    uint64_t


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


cdef inline Py_ssize_t _seek(const int64_t* st, Py_ssize_t nseg, Py_ssize_t s,
                             int64_t row) noexcept nogil:
    """The segment of ``row``, starting from segment ``s`` (the previous row's)."""
    if st[s] <= row < st[s + 1]:
        return s
    if s + 2 <= nseg and st[s + 1] <= row < st[s + 2]:
        return s + 1  # sorted rows step to the next segment
    return _segment_of(st, nseg, row)


cdef struct TableRef:  # what the kernels read of a SegmentTable, usable without the GIL
    const int64_t* st
    const uint64_t* pt
    const int16_t* wd
    Py_ssize_t segments
    int value_bytes
    bint flat


cdef class SegmentTable:
    """A column's segments (``starts``, ``ptrs``, ``widths``; see the module docstring) with
    ``value_bytes``-byte values, checked once when made: ordered, one more start than
    segments, widths within the word and bit-packed blocks of at most 1024 rows. The rows it
    holds are ``[starts[0], starts[-1])``. It keeps the arrays (not the bytes ``ptrs``
    address: the caller keeps those alive)."""
    cdef const int64_t[::1] st
    cdef const uint64_t[::1] pt
    cdef const int16_t[::1] wd
    cdef readonly int value_bytes
    cdef readonly bint flat
    cdef readonly Py_ssize_t segments
    cdef readonly int64_t first, total
    cdef TableRef ref

    def __init__(self, const int64_t[::1] starts, const uint64_t[::1] ptrs,
                 const int16_t[::1] widths, int value_bytes):
        cdef Py_ssize_t nseg = ptrs.shape[0], s
        if starts.shape[0] != nseg + 1 or widths.shape[0] != nseg:
            raise ValueError("segment arrays disagree in length")
        if value_bytes not in (1, 2, 4, 8):
            raise ValueError(f"{value_bytes}-byte values")
        cdef int t = value_bytes * 8
        cdef bint flat = True
        for s in range(nseg):
            if starts[s + 1] < starts[s] or widths[s] < -1 or widths[s] > t or (
                    widths[s] >= 0 and starts[s + 1] - starts[s] > 1024):
                raise ValueError(f"segment {s} is malformed")
            flat = flat and widths[s] < 0
        self.st, self.pt, self.wd = starts, ptrs, widths
        self.value_bytes = value_bytes
        self.flat = flat
        self.segments = nseg
        self.first = starts[0]
        self.total = starts[nseg]
        self.ref.st = &starts[0]
        self.ref.pt = &ptrs[0] if nseg else NULL
        self.ref.wd = &widths[0] if nseg else NULL
        self.ref.segments = nseg
        self.ref.value_bytes = value_bytes
        self.ref.flat = flat


# How a run of rows was found: not yet looked at, ascending, in any order, or with a row
# outside the columns.
DEF ROWS_UNSEEN = 0
DEF ROWS_ASCENDING = 1
DEF ROWS_UNORDERED = 2
DEF ROWS_OUTSIDE = 3


cdef uint8_t _scan_rows(const int64_t* rows, Py_ssize_t lo, Py_ssize_t hi, int64_t first,
                        int64_t total) noexcept nogil:
    """ROWS_ASCENDING, ROWS_UNORDERED or ROWS_OUTSIDE for ``rows[lo:hi]`` (one branch-free
    pass: a row outside ``[first, total)`` wraps to a big unsigned offset)."""
    cdef uint64_t span = <uint64_t>(total - first), outside = 0
    cdef Py_ssize_t k
    cdef int64_t prev = rows[lo] if hi > lo else 0
    cdef bint descends = False
    for k in range(lo, hi):
        outside |= <uint64_t>(<uint64_t>(rows[k] - first) >= span)
        descends |= rows[k] < prev
        prev = rows[k]
    if outside:
        return ROWS_OUTSIDE
    return ROWS_UNORDERED if descends else ROWS_ASCENDING


cdef void _gather_range(const TableRef* tbl, bint ascending, const int64_t* rows, Py_ssize_t lo,
                        Py_ssize_t hi, uint8_t* dst, const int64_t* pos) noexcept nogil:
    """``rows[lo:hi]`` (checked) of one column into ``dst``: the value of ``rows[k]`` at
    index ``pos[k]`` (``k`` when ``pos`` is NULL)."""
    if hi <= lo:
        return
    cdef const int64_t* st = tbl.st
    cdef Py_ssize_t nseg = tbl.segments
    cdef const uint64_t* ptrs = tbl.pt
    cdef const int16_t* widths = tbl.wd
    cdef int value_bytes = tbl.value_bytes
    # ascending rows, 16 or more per 1024-row block on average
    cdef bint dense = ascending and (hi - lo) * 64 >= rows[hi - 1] - rows[lo] + 1
    if tbl.flat and ascending and pos == NULL:
        if value_bytes == 1:
            _run_flat_sorted(<uint8_t>0, st, nseg, ptrs, rows, lo, hi, dst)
        elif value_bytes == 2:
            _run_flat_sorted(<uint16_t>0, st, nseg, ptrs, rows, lo, hi, dst)
        elif value_bytes == 4:
            _run_flat_sorted(<uint32_t>0, st, nseg, ptrs, rows, lo, hi, dst)
        else:
            _run_flat_sorted(<uint64_t>0, st, nseg, ptrs, rows, lo, hi, dst)
    elif value_bytes == 1:
        _run_ring(<uint8_t>0, st, nseg, ptrs, widths, rows, lo, hi, dst, dense, pos)
    elif value_bytes == 2:
        _run_ring(<uint16_t>0, st, nseg, ptrs, widths, rows, lo, hi, dst, dense, pos)
    elif value_bytes == 4:
        _run_ring(<uint32_t>0, st, nseg, ptrs, widths, rows, lo, hi, dst, dense, pos)
    else:
        _run_ring(<uint64_t>0, st, nseg, ptrs, widths, rows, lo, hi, dst, dense, pos)


def _outside(const int64_t[::1] rows, Py_ssize_t lo, Py_ssize_t hi, int64_t total):
    """The ValueError naming the first row of ``rows[lo:hi]`` outside ``[0, total)``."""
    cdef Py_ssize_t k
    for k in range(lo, hi):
        if rows[k] < 0 or rows[k] >= total:
            return ValueError(f"row {rows[k]} outside the column's {total} rows")
    return ValueError(f"row outside the column's {total} rows")


def gather(const int64_t[::1] starts, const uint64_t[::1] ptrs, const int16_t[::1] widths,
           int value_bytes, const int64_t[::1] rows, uint8_t[::1] out,
           Py_ssize_t lo=0, Py_ssize_t hi=-1):
    """Write the values of ``rows[lo:hi]`` (any order, repeats allowed) to
    ``out[lo * value_bytes:hi * value_bytes]``: one column, on the calling thread (a take of
    several columns is a :class:`GatherJob`). ``ptrs`` must address the segments' bytes in a
    buffer the caller keeps alive; the table and the rows are checked before any byte is
    read."""
    cdef SegmentTable tbl = SegmentTable(starts, ptrs, widths, value_bytes)
    cdef Py_ssize_t n = rows.shape[0]
    if hi < 0:
        hi = n
    if not 0 <= lo <= hi <= n:
        raise ValueError("bad row range")
    if out.shape[0] < n * value_bytes:
        raise ValueError("output too small")
    if hi == lo:
        return
    cdef uint8_t seen
    with nogil:
        seen = _scan_rows(&rows[0], lo, hi, tbl.first, tbl.total)
        if seen != ROWS_OUTSIDE:
            _gather_range(&tbl.ref, seen == ROWS_ASCENDING, &rows[0], lo, hi, &out[0], NULL)
    if seen == ROWS_OUTSIDE:
        raise _outside(rows, lo, hi, tbl.total)


cdef extern from *:
    """
    #include <time.h>
    static inline Py_ssize_t lancefmt_fetch_add(Py_ssize_t *p) {
        return __atomic_fetch_add(p, 1, __ATOMIC_ACQ_REL);
    }
    static inline Py_ssize_t lancefmt_load(Py_ssize_t *p) {
        return __atomic_load_n(p, __ATOMIC_ACQUIRE);
    }
    static inline unsigned char lancefmt_load8(unsigned char *p) {
        return __atomic_load_n(p, __ATOMIC_RELAXED);
    }
    static inline void lancefmt_store8(unsigned char *p, unsigned char v) {
        __atomic_store_n(p, v, __ATOMIC_RELAXED);
    }
    static inline double lancefmt_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
    }
    static inline void lancefmt_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #endif
    }
    """
    Py_ssize_t _fetch_add "lancefmt_fetch_add"(Py_ssize_t* p) noexcept nogil
    Py_ssize_t _load "lancefmt_load"(Py_ssize_t* p) noexcept nogil
    uint8_t _load8 "lancefmt_load8"(uint8_t* p) noexcept nogil
    void _store8 "lancefmt_store8"(uint8_t* p, uint8_t v) noexcept nogil
    double _now "lancefmt_now"() noexcept nogil
    void _relax "lancefmt_relax"() noexcept nogil


# Rows per group of group_rows: a page of 8-byte values (the rows of a group lie on one or
# two pages of each column); and at most this many groups (their counters stay in cache).
DEF GROUP_SHIFT = 9
DEF MAX_GROUPS = 65536


def group_rows(const int64_t[::1] rows, int64_t first, int64_t total, int64_t[::1] grouped,
               int64_t[::1] positions):
    """Rows in any order, regrouped by where they lie (a counting sort on ``row >> shift``,
    keeping the given order within a group): ``grouped[d] = rows[positions[d]]``. A take of
    shuffled rows then walks the columns front to back, a few rows per page, instead of
    jumping across all of them for every row (each jump a cache and TLB miss); the values are
    put back in place through ``positions``. Rows outside ``[first, total)`` go to the
    nearest group (the take reports them)."""
    cdef Py_ssize_t n = rows.shape[0], k
    if grouped.shape[0] != n or positions.shape[0] != n:
        raise ValueError("outputs of another length")
    cdef uint64_t span = <uint64_t>max(total - first, 1)
    cdef int shift = GROUP_SHIFT
    while (span >> shift) >= MAX_GROUPS:
        shift += 1
    cdef Py_ssize_t groups = <Py_ssize_t>(span >> shift) + 1
    starts = np.zeros(groups + 1, np.int64)
    cdef int64_t[::1] at = starts
    cdef uint64_t g, last = <uint64_t>(groups - 1)
    cdef int64_t d
    with nogil:
        for k in range(n):
            g = <uint64_t>(rows[k] - first) >> shift if rows[k] >= first else 0
            at[(g if g < last else last) + 1] += 1
        for k in range(groups):
            at[k + 1] += at[k]
        for k in range(n):
            g = <uint64_t>(rows[k] - first) >> shift if rows[k] >= first else 0
            g = g if g < last else last
            d = at[g]
            at[g] = d + 1
            grouped[d] = rows[k]
            positions[d] = k


# Rows per unit of a shared gather: small enough that a late or slow thread leaves little
# for the others to wait on, large enough that the per-unit restart (a segment search and
# the prefetch ring filling) stays negligible.
DEF UNIT_ROWS = 4096


cdef class GatherJob:
    """One take of several columns, shared by any number of threads. The rows are cut into
    runs of ``UNIT_ROWS``; every (run, column) pair is a unit, and each thread calling
    :meth:`run` claims the next unclaimed unit until none is left. A thread that wakes late
    (a pool thread on a busy machine can take milliseconds) or runs slowly then costs
    nothing: the others do its part. The first unit of a run checks its rows (inside the
    columns? ascending?) for the run's other units; a run with a row outside is skipped and
    :meth:`check` reports it once every unit is done."""
    cdef list tables, keep
    cdef TableRef* refs
    cdef uint8_t** outs
    cdef uint8_t[::1] seen  # per run of rows: ROWS_*
    cdef const int64_t* rows
    cdef const int64_t[::1] rows_view
    cdef const int64_t* pos
    cdef const int64_t[::1] pos_view
    cdef Py_ssize_t n, ncol, runs, units
    cdef int64_t first, total
    cdef Py_ssize_t claimed, done

    def __cinit__(self):
        self.outs = NULL
        self.refs = NULL

    def __init__(self, list tables, const int64_t[::1] rows, list outs, bint regroup=False):
        """``tables``: a :class:`SegmentTable` per column, all holding the same rows;
        ``outs``: a writable uint8 array per column for the values of ``rows``, in their
        order. ``regroup``: read the rows grouped by where they lie (:func:`group_rows`; for
        many rows in random order) and put each value back in its place."""
        if len(outs) != len(tables):
            raise ValueError("one output per column")
        self.n = rows.shape[0]
        self.pos = NULL
        cdef SegmentTable first_table
        if regroup and self.n and tables:
            first_table = <SegmentTable?>tables[0]
            # pool memory: fresh numpy arrays would fault in every page
            grouped = np.frombuffer(pa.allocate_buffer(self.n * 8), np.int64)
            positions = np.frombuffer(pa.allocate_buffer(self.n * 8), np.int64)
            group_rows(rows, first_table.first, first_table.total, grouped, positions)
            rows = grouped
            self.pos_view = positions
            self.pos = &self.pos_view[0]
        self.ncol = len(tables)
        self.tables = list(tables)
        self.keep = []
        self.rows_view = rows
        self.rows = &rows[0] if self.n else NULL
        cdef SegmentTable tbl
        cdef uint8_t[::1] out
        cdef Py_ssize_t c
        PyMem_Free(self.outs)  # (a second __init__)
        PyMem_Free(self.refs)
        self.outs = <uint8_t**>PyMem_Malloc(max(self.ncol, 1) * sizeof(uint8_t*))
        self.refs = <TableRef*>PyMem_Malloc(max(self.ncol, 1) * sizeof(TableRef))
        if self.outs == NULL or self.refs == NULL:
            raise MemoryError()
        for c in range(self.ncol):
            tbl = self.tables[c]
            out = outs[c]
            if out.shape[0] < self.n * tbl.value_bytes:
                raise ValueError("output too small")
            if c == 0:
                self.first, self.total = tbl.first, tbl.total
            elif (tbl.first, tbl.total) != (self.first, self.total):
                raise ValueError("the columns hold different rows")
            self.outs[c] = &out[0] if out.shape[0] else NULL
            self.refs[c] = tbl.ref
            self.keep.append(out)
        self.runs = (self.n + UNIT_ROWS - 1) // UNIT_ROWS
        self.units = self.runs * self.ncol
        self.seen = np.zeros(max(self.runs, 1), np.uint8)
        self.claimed = 0
        self.done = 0

    def __dealloc__(self):
        PyMem_Free(self.outs)
        PyMem_Free(self.refs)

    def run(self):
        """Claim and gather units until none is left (without the GIL)."""
        cdef Py_ssize_t u, r, c, lo, hi
        cdef uint8_t state
        with nogil:
            while True:
                u = _fetch_add(&self.claimed)
                if u >= self.units:
                    break
                r = u // self.ncol
                c = u % self.ncol
                lo = r * UNIT_ROWS
                hi = min(lo + UNIT_ROWS, self.n)
                state = _load8(&self.seen[r])
                if state == ROWS_UNSEEN:  # (two threads may both look: they agree)
                    state = _scan_rows(self.rows, lo, hi, self.first, self.total)
                    _store8(&self.seen[r], state)
                if state != ROWS_OUTSIDE:
                    _gather_range(&self.refs[c], state == ROWS_ASCENDING, self.rows, lo, hi,
                                  self.outs[c], self.pos)
                _fetch_add(&self.done)

    def finished(self, double spin_seconds=0.0):
        """Whether every unit is done, waiting up to ``spin_seconds`` (busy, without the
        GIL) for units other threads are still on."""
        cdef double until
        with nogil:
            if _load(&self.done) < self.units and spin_seconds > 0:
                until = _now() + spin_seconds
                while _load(&self.done) < self.units and _now() < until:
                    _relax()
        return _load(&self.done) >= self.units

    def check(self):
        """Once finished: a ValueError naming the first row outside the columns, if any."""
        cdef Py_ssize_t r
        for r in range(self.runs):
            if self.seen[r] == ROWS_OUTSIDE:
                raise _outside(self.rows_view, r * UNIT_ROWS,
                               min((r + 1) * UNIT_ROWS, self.n), self.total)


cdef void _run_flat_sorted(word_t tag, const int64_t* st, Py_ssize_t nseg, const uint64_t* ptrs,
                           const int64_t* rows, Py_ssize_t lo, Py_ssize_t hi,
                           uint8_t* dst) noexcept nogil:
    """Ascending rows of flat segments only (2.0 plain pages): segment by segment, a tight
    copy loop over the rows falling in each, prefetching LOOKAHEAD rows ahead (the long
    segments make the per-segment restart free, and the loop is cheaper than the ring)."""
    cdef Py_ssize_t k = lo, j, e, s = 0
    cdef int64_t start, stop
    cdef const uint8_t* base
    cdef word_t v
    cdef word_t* out = <word_t*>dst
    cdef int wb = sizeof(word_t)
    while k < hi:
        s = _seek(st, nseg, s, rows[k])
        start = st[s]
        stop = st[s + 1]
        base = <const uint8_t*>ptrs[s]
        e = k + 1
        while e < hi and rows[e] < stop:
            e += 1
        for j in range(k, e):
            if j + LOOKAHEAD < e:
                __builtin_prefetch(base + (rows[j + LOOKAHEAD] - start) * wb)
            memcpy(&v, base + (rows[j] - start) * wb, sizeof(word_t))
            memcpy(out + j, &v, sizeof(word_t))
        k = e


cdef uint64_t[1] _ZERO_WORD = [0]


cdef void _run_ring(word_t tag, const int64_t* st, Py_ssize_t nseg, const uint64_t* ptrs,
                    const int16_t* widths, const int64_t* rows, Py_ssize_t lo, Py_ssize_t hi,
                    uint8_t* dst, bint dense, const int64_t* pos) noexcept nogil:
    """The gather loop for rows in any order (already checked), flat and bit-packed segments
    alike. A planning cursor runs LOOKAHEAD rows ahead of the reads, across segment
    boundaries: for its row it finds the segment, works out the one or two words holding the
    value (their addresses, the shift and the mask) and prefetches them into a ring slot;
    the read of a row is then two loads, shifts and a mask, with no branch on the data.
    ``dense``: the rows ascend, many per block (the cursor then touches each page of a
    bit-packed block as it enters it). ``pos``: where each row's value goes (NULL: in the
    rows' order)."""
    cdef unsigned t = sizeof(word_t) * 8
    cdef unsigned lanes = 1024 // t
    cdef word_t ones = <word_t>(~(<word_t>0))
    cdef const uint8_t* ring_lo[LOOKAHEAD]
    cdef const uint8_t* ring_hi[LOOKAHEAD]
    cdef word_t[LOOKAHEAD] ring_mask
    cdef uint8_t[LOOKAHEAD] ring_sh
    cdef Py_ssize_t lag = min(<Py_ssize_t>LOOKAHEAD, hi - lo)
    cdef Py_ssize_t j, a, q, s = 0
    cdef int64_t row, start = 0, stop = 0  # the planning cursor's segment (none yet)
    cdef word_t mask = 0
    cdef int16_t ws = 0
    cdef const uint8_t* base = NULL
    cdef const uint8_t* p
    cdef uint64_t i
    cdef unsigned r, b, sh, w
    cdef word_t lo_w, hi_w, v
    cdef word_t* out = <word_t*>dst
    for j in range(lo, hi + lag):
        if j - lag >= lo:  # read row j - lag
            a = (j - lag) & (LOOKAHEAD - 1)
            memcpy(&lo_w, ring_lo[a], sizeof(word_t))
            memcpy(&hi_w, ring_hi[a], sizeof(word_t))
            sh = ring_sh[a]
            v = <word_t>((lo_w >> sh) | (<word_t>(hi_w << 1) << (t - 1 - sh))) & ring_mask[a]
            memcpy(out + (pos[j - lag] if pos != NULL else j - lag), &v, sizeof(word_t))
        if j < hi:  # plan row j
            row = rows[j]
            if row < start or row >= stop:  # another segment: load its description
                s = _seek(st, nseg, s, row)
                start = st[s]
                stop = st[s + 1]
                base = <const uint8_t*>ptrs[s]
                ws = widths[s]
                mask = ones if ws < 0 or ws >= <int16_t>t else <word_t>(((<word_t>1) << ws) - 1)
                if ws == 0:
                    base = <const uint8_t*>_ZERO_WORD
                    mask = 0
                elif ws > 0 and dense:
                    # one load per page of the block (dense ascending rows read most of it):
                    # the page walks start here rather than at the first prefetch into each
                    # page (measured: ~10% off a dense sorted take after the caches went cold)
                    q = 0
                    while q < 128 * <Py_ssize_t>ws:
                        _touch(base + q)
                        q += 4096
                    _touch(base + 128 * <Py_ssize_t>ws - 1)
            i = <uint64_t>(row - start)
            a = j & (LOOKAHEAD - 1)
            ring_mask[a] = mask
            if ws < 0:
                p = base + i * sizeof(word_t)
                ring_lo[a] = p
                ring_hi[a] = p
                ring_sh[a] = 0
            elif ws == 0:
                ring_lo[a] = base
                ring_hi[a] = base
                ring_sh[a] = 0
                continue
            else:
                w = <unsigned>ws
                r = <unsigned>(i & 127)
                b = (8 * <unsigned>FL_ORDER[(r // lanes) * 64 // t] + <unsigned>(i >> 7)) * w
                sh = b % t
                p = base + ((b // t) * lanes + r % lanes) * sizeof(word_t)
                ring_lo[a] = p
                ring_hi[a] = p + (lanes * sizeof(word_t) if sh + w > t else 0)
                ring_sh[a] = <uint8_t>sh
                __builtin_prefetch(ring_hi[a])
            __builtin_prefetch(p)
