# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False, nonecheck=False
"""Cython kernels under ``lancefmt.table.rowids``: RowIdSequence / RowDatasetVersionSequence bytes
-> segment table -> numpy uint64, the encoder's per-value work, and the row-id index lookup.

Decoding is two passes over untrusted bytes. ``scan_*`` walks the protobuf wire format with the
bounds-checked cursor of ``lancefmt/_wire.pxd`` and checks every length, offset and invariant,
producing one row per segment (see the ``C_*`` column constants). ``fill_*`` then writes the
values with unchecked inner loops, which is safe because every range they touch was checked by
the scan. Nothing here creates a Python object per value.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int64_t
from libc.string cimport memcpy

from lancefmt._wire cimport (
    WireCursor, wire_init, wire_done, wire_tag, wire_varint, wire_len, wire_skip,
)
from lancefmt.errors import CorruptFileError

cnp.import_array()

cdef extern from *:
    """
    #include <stdint.h>
    static inline int lf_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    /* popcount by table: without -mpopcnt __builtin_popcount becomes a libgcc call. */
    static unsigned char lf_popcnt[256];
    static inline int lf_popcount8(unsigned int x) { return lf_popcnt[x & 0xFFu]; }
    /* lf_bitpos[b] lists the positions of the set bits of byte b (LSB first), padded with 0.
       Stored as u64 (16 KiB, stays in L1) so that emitting a byte is 8 plain vector adds. */
    static uint64_t lf_bitpos[256][8];
    static void lf_init_bitpos(void) {
        for (int b = 0; b < 256; b++) {
            int k = 0;
            lf_popcnt[b] = (unsigned char)__builtin_popcount((unsigned int)b);
            for (int i = 0; i < 8; i++) if ((b >> i) & 1) lf_bitpos[b][k++] = (uint64_t)i;
            for (; k < 8; k++) lf_bitpos[b][k] = 0;
        }
    }
    /* Write 8 values base + position (only the first popcount(b) are meaningful); the caller
       advances by popcount(b). Branch-free, so random bitmaps do not stall on mispredictions. */
    static inline void lf_emit_byte(uint64_t* out, uint64_t base, unsigned int b) {
        const uint64_t* p = lf_bitpos[b & 0xFFu];
        for (int t = 0; t < 8; t++) out[t] = base + p[t];
    }
    """
    int lf_ctz64(unsigned long long x) noexcept nogil
    int lf_popcount8(unsigned int x) noexcept nogil
    void lf_init_bitpos() noexcept nogil
    void lf_emit_byte(uint64_t* out, uint64_t base, unsigned int b) noexcept nogil

lf_init_bitpos()

# Segment kinds: the field numbers of the U64Segment oneof.
KIND_RANGE = 1
KIND_RANGE_WITH_HOLES = 2
KIND_RANGE_WITH_BITMAP = 3
KIND_SORTED_ARRAY = 4
KIND_ARRAY = 5

# Columns of a segment table (uint64[n, N_COLUMNS]).
cdef enum:
    C_KIND = 0      # segment kind (1..5)
    C_START = 1     # range start (range kinds)
    C_END = 2       # range end, exclusive (range kinds)
    C_WIDTH = 3     # 16/32/64 for an EncodedU64Array payload (holes, sorted array, array), else 0
    C_BASE = 4      # EncodedU64Array base (0 for u64)
    C_OFFSET = 5    # payload offset in the input bytes (offsets/values, or the bitmap bytes)
    C_LENGTH = 6    # payload length in bytes
    C_COUNT = 7     # number of values the segment yields
    C_VERSION = 8   # version of a RowDatasetVersionRun (0 in a RowIdSequence)
    N_COLUMNS = 9


class Col:
    """Python names of the segment-table columns (see the C_* constants above)."""
    KIND = C_KIND
    START = C_START
    END = C_END
    WIDTH = C_WIDTH
    BASE = C_BASE
    OFFSET = C_OFFSET
    LENGTH = C_LENGTH
    COUNT = C_COUNT
    VERSION = C_VERSION
    N = N_COLUMNS

# A fragment holds at most 2**32 rows (row offsets are u32), so no sequence is longer.
MAX_SEQUENCE_LENGTH = 1 << 32
cdef uint64_t MAX_LEN = (<uint64_t>1) << 32
cdef uint64_t U64_MAX = 0xFFFFFFFFFFFFFFFF

cdef enum:
    E_OK = 0
    E_WIRE = -1
    E_WIRETYPE = -2
    E_NO_SEGMENT = -3
    E_NO_ARRAY = -4
    E_NO_HOLES = -5
    E_RANGE = -6
    E_WIDTH = -7
    E_HOLES = -8
    E_BITMAP = -9
    E_OVERFLOW = -10
    E_TOO_LONG = -11
    E_NO_SPAN = -12

_MESSAGES = {
    E_WIRE: "malformed protobuf (truncated field or bad varint)",
    E_WIRETYPE: "field has an unexpected wire type",
    E_NO_SEGMENT: "U64Segment has no segment kind",
    E_NO_ARRAY: "EncodedU64Array has no array kind",
    E_NO_HOLES: "RangeWithHoles has no holes array",
    E_RANGE: "range end is below its start",
    E_WIDTH: "array payload length is not a multiple of the value width",
    E_HOLES: "holes are not strictly increasing inside their range",
    E_BITMAP: "bitmap length does not match its range",
    E_OVERFLOW: "base + offset overflows u64",
    E_TOO_LONG: "sequence longer than 2**32 values",
    E_NO_SPAN: "RowDatasetVersionRun has no span",
}


cdef inline uint64_t _le16(const uint8_t* p) noexcept nogil:
    cdef uint16_t v
    memcpy(&v, p, 2)
    return v


cdef inline uint64_t _le32(const uint8_t* p) noexcept nogil:
    cdef uint32_t v
    memcpy(&v, p, 4)
    return v


cdef inline uint64_t _le64(const uint8_t* p) noexcept nogil:
    cdef uint64_t v
    memcpy(&v, p, 8)
    return v


cdef inline uint64_t _array_value(const uint8_t* p, int width, uint64_t base, Py_ssize_t i) noexcept nogil:
    if width == 16:
        return base + _le16(p + 2 * i)
    elif width == 32:
        return base + _le32(p + 4 * i)
    return _le64(p + 8 * i)


cdef int _parse_encoded_array(const uint8_t* d, Py_ssize_t s, Py_ssize_t e, uint64_t* row) noexcept nogil:
    """EncodedU64Array message in d[s:e] -> row[C_WIDTH, C_BASE, C_OFFSET, C_LENGTH]."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt, variant = 0, width
    cdef Py_ssize_t ps = 0, pn = 0, off = 0, plen = 0, n, i
    cdef uint64_t base = 0, mx = 0, v, limit
    wire_init(&c, d, s, e)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if 1 <= field <= 3:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &ps, &pn) < 0:
                return E_WIRE
            variant = field  # proto3 oneof: the last member on the wire wins
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    if variant == 0:
        return E_NO_ARRAY
    off = ps
    wire_init(&c, d, ps, ps + pn)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if field == 1 and variant != 3:
            if wt != 0:
                return E_WIRETYPE
            if wire_varint(&c, &base) < 0:
                return E_WIRE
        elif field == 2:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &off, &plen) < 0:
                return E_WIRE
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    width = 16 if variant == 1 else (32 if variant == 2 else 64)
    if plen % (width // 8) != 0:
        return E_WIDTH
    n = plen // (width // 8)
    if width < 64 and n > 0:
        limit = 0xFFFF if width == 16 else 0xFFFFFFFF
        if base > U64_MAX - limit:
            # Only near the top of u64 can base + offset wrap: look at the real offsets.
            for i in range(n):
                v = _array_value(d + off, width, 0, i)
                if v > mx:
                    mx = v
            if base > U64_MAX - mx:
                return E_OVERFLOW
    row[C_WIDTH] = width
    row[C_BASE] = base if width < 64 else 0
    row[C_OFFSET] = off
    row[C_LENGTH] = plen
    return E_OK


cdef int _parse_range_fields(const uint8_t* d, Py_ssize_t s, Py_ssize_t e, uint64_t* row,
                             Py_ssize_t* f3s, Py_ssize_t* f3n, bint* has3) noexcept nogil:
    """Range / RangeWithHoles / RangeWithBitmap: start=1, end=2, field 3 (bytes or message)."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt
    cdef uint64_t v
    wire_init(&c, d, s, e)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if field == 1 or field == 2:
            if wt != 0:
                return E_WIRETYPE
            if wire_varint(&c, &v) < 0:
                return E_WIRE
            row[C_START if field == 1 else C_END] = v
        elif field == 3:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, f3s, f3n) < 0:
                return E_WIRE
            has3[0] = True
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    if row[C_END] < row[C_START]:
        return E_RANGE
    return E_OK


cdef int _parse_segment(const uint8_t* d, Py_ssize_t s, Py_ssize_t e, uint64_t* row) noexcept nogil:
    """U64Segment message in d[s:e] -> one segment-table row (everything checked)."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt, kind = 0, rc, width
    cdef Py_ssize_t ps = 0, pn = 0, f3s = 0, f3n = 0, n, i, nbytes
    cdef bint has3 = False
    cdef uint64_t span, prev, v, count, base
    cdef const uint8_t* p
    cdef unsigned int last
    wire_init(&c, d, s, e)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if 1 <= field <= 5:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &ps, &pn) < 0:
                return E_WIRE
            kind = field  # the last oneof member wins
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    if kind == 0:
        return E_NO_SEGMENT
    for i in range(8):
        row[i] = 0
    row[C_KIND] = kind
    if kind >= 4:
        rc = _parse_encoded_array(d, ps, ps + pn, row)
        if rc < 0:
            return rc
        count = row[C_LENGTH] // (row[C_WIDTH] // 8)
        if count > MAX_LEN:
            return E_TOO_LONG
        row[C_COUNT] = count
        return E_OK
    rc = _parse_range_fields(d, ps, ps + pn, row, &f3s, &f3n, &has3)
    if rc < 0:
        return rc
    span = row[C_END] - row[C_START]
    if kind == 1:
        if span > MAX_LEN:
            return E_TOO_LONG
        row[C_COUNT] = span
        return E_OK
    if kind == 2:
        if not has3:
            return E_NO_HOLES
        rc = _parse_encoded_array(d, f3s, f3s + f3n, row)
        if rc < 0:
            return rc
        width = <int>row[C_WIDTH]
        base = row[C_BASE]
        p = d + row[C_OFFSET]
        n = row[C_LENGTH] // (width // 8)
        prev = 0
        for i in range(n):
            v = _array_value(p, width, base, i)
            if v < row[C_START] or v >= row[C_END] or (i > 0 and v <= prev):
                return E_HOLES
            prev = v
        count = span - <uint64_t>n
        if count > MAX_LEN:
            return E_TOO_LONG
        row[C_COUNT] = count
        return E_OK
    # kind == 3: bitmap bytes, LSB-first, exactly ceil(span / 8) of them.
    nbytes = f3n if has3 else 0
    if <uint64_t>nbytes != span // 8 + (1 if span % 8 else 0):
        return E_BITMAP
    row[C_OFFSET] = f3s
    row[C_LENGTH] = nbytes
    count = 0
    p = d + f3s
    for i in range(nbytes):
        last = p[i]
        if i == nbytes - 1 and span % 8:
            last &= (1u << (span % 8)) - 1
        count += lf_popcount8(last)
    row[C_COUNT] = count
    return E_OK


cdef int _count_repeated(const uint8_t* d, Py_ssize_t n, Py_ssize_t* out) noexcept nogil:
    """Number of field-1 messages at the top level of d[0:n] (other fields skipped)."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt
    cdef Py_ssize_t ps, pn, k = 0
    wire_init(&c, d, 0, n)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if field == 1:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &ps, &pn) < 0:
                return E_WIRE
            k += 1
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    out[0] = k
    return E_OK


cdef int _parse_run(const uint8_t* d, Py_ssize_t s, Py_ssize_t e, uint64_t* row) noexcept nogil:
    """RowDatasetVersionRun {span = 1: U64Segment, version = 2} -> one table row."""
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt, rc
    cdef Py_ssize_t ps = 0, pn = 0
    cdef bint has_span = False
    cdef uint64_t version = 0
    wire_init(&c, d, s, e)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if field == 1:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &ps, &pn) < 0:
                return E_WIRE
            has_span = True
        elif field == 2:
            if wt != 0:
                return E_WIRETYPE
            if wire_varint(&c, &version) < 0:
                return E_WIRE
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    if not has_span:
        return E_NO_SPAN
    rc = _parse_segment(d, ps, ps + pn, row)
    if rc < 0:
        return rc
    row[C_VERSION] = version
    return E_OK


cdef int _scan(const uint8_t* d, Py_ssize_t n, uint64_t[:, ::1] table, bint runs,
               uint64_t* total, Py_ssize_t* bad) noexcept nogil:
    cdef WireCursor c
    cdef uint32_t field
    cdef int wt, rc
    cdef Py_ssize_t ps, pn, k = 0
    cdef uint64_t acc = 0
    wire_init(&c, d, 0, n)
    while not wire_done(&c):
        if wire_tag(&c, &field, &wt) < 0:
            return E_WIRE
        if field == 1:
            if wt != 2:
                return E_WIRETYPE
            if wire_len(&c, &ps, &pn) < 0:
                return E_WIRE
            bad[0] = k
            if runs:
                rc = _parse_run(d, ps, ps + pn, &table[k, 0])
            else:
                rc = _parse_segment(d, ps, ps + pn, &table[k, 0])
            if rc < 0:
                return rc
            acc += table[k, C_COUNT]
            if acc > MAX_LEN:
                return E_TOO_LONG
            k += 1
        elif wire_skip(&c, wt) < 0:
            return E_WIRE
    total[0] = acc
    return E_OK


def _raise(int rc, what, path, segment=None):
    where = f" (segment {segment})" if segment is not None else ""
    raise CorruptFileError(f"bad {what}{where}: {_MESSAGES.get(rc, 'undecodable')}", path)


cdef object _scan_any(data, bint runs, path):
    cdef const uint8_t[::1] view
    cdef Py_ssize_t n, count = 0, bad = -1
    cdef uint64_t total = 0
    cdef int rc
    cdef const uint8_t* d
    what = "RowDatasetVersionSequence" if runs else "RowIdSequence"
    try:
        view = data
    except (TypeError, ValueError, BufferError) as exc:
        raise TypeError(f"{what} must be bytes-like, got {type(data).__name__}") from exc
    n = view.shape[0]
    table = np.zeros((0, N_COLUMNS), dtype=np.uint64)
    if n == 0:
        return table, 0
    d = &view[0]
    with nogil:
        rc = _count_repeated(d, n, &count)
    if rc < 0:
        _raise(rc, what, path)
    table = np.zeros((count, N_COLUMNS), dtype=np.uint64)
    cdef uint64_t[:, ::1] tv = table
    with nogil:
        rc = _scan(d, n, tv, runs, &total, &bad)
    if rc < 0:
        _raise(rc, what, path, bad if bad >= 0 else None)
    return table, int(total)


def scan_row_id_sequence(data, path=None):
    """RowIdSequence bytes -> (segment table uint64[n, N_COLUMNS], total value count).

    Raises CorruptFileError (naming ``path``) on any malformed or inconsistent input.
    """
    return _scan_any(data, False, path)


def scan_version_sequence(data, path=None):
    """RowDatasetVersionSequence bytes -> (run table uint64[n, N_COLUMNS] with C_VERSION, total)."""
    return _scan_any(data, True, path)


cdef void _fill_segment(const uint8_t* d, const uint64_t* row, uint64_t* out) noexcept nogil:
    """Write the values of one scanned segment to out[0:row[C_COUNT]] (ranges pre-checked)."""
    cdef int kind = <int>row[C_KIND]
    cdef int width = <int>row[C_WIDTH]
    cdef uint64_t start = row[C_START], end = row[C_END], base = row[C_BASE]
    cdef uint64_t count = row[C_COUNT], v, hv, k = 0, b64, bitbase
    cdef const uint8_t* p = d + row[C_OFFSET]
    cdef Py_ssize_t n, i, nbytes
    cdef unsigned int byte
    cdef uint64_t span = end - start
    if kind == 1:
        for i in range(<Py_ssize_t>count):
            out[i] = start + <uint64_t>i
    elif kind == 2:
        n = <Py_ssize_t>(row[C_LENGTH] // (width // 8))
        v = start
        for i in range(n):
            hv = _array_value(p, width, base, i)
            while v < hv:
                out[k] = v
                k += 1
                v += 1
            v = hv + 1
        while v < end:
            out[k] = v
            k += 1
            v += 1
    elif kind == 3:
        nbytes = <Py_ssize_t>row[C_LENGTH]
        for i in range(nbytes):
            byte = p[i]
            if i == nbytes - 1 and span % 8:
                byte &= (1u << (span % 8)) - 1
            bitbase = start + 8 * <uint64_t>i
            if k + 8 <= count:
                lf_emit_byte(out + k, bitbase, byte)
                k += <uint64_t>lf_popcount8(byte)
            else:
                b64 = byte
                while b64 and k < count:
                    out[k] = bitbase + <uint64_t>lf_ctz64(b64)
                    k += 1
                    b64 &= b64 - 1
    elif width == 64:
        memcpy(out, p, <size_t>count * 8)
    elif width == 32:
        for i in range(<Py_ssize_t>count):
            out[i] = base + _le32(p + 4 * i)
    else:
        for i in range(<Py_ssize_t>count):
            out[i] = base + _le16(p + 2 * i)


def fill_values(data, const uint64_t[:, ::1] table, Py_ssize_t total, Py_ssize_t first=0,
                Py_ssize_t stop=-1):
    """The values of segments ``table[first:stop]`` (scanned from ``data``) as one uint64 array.

    ``total`` must be the sum of their C_COUNT column, as returned by the scan.
    """
    cdef const uint8_t[::1] view = data
    cdef const uint8_t* d = &view[0] if view.shape[0] > 0 else NULL
    cdef Py_ssize_t i, pos = 0
    cdef uint64_t kind, width, count, span, nvals
    if stop < 0:
        stop = table.shape[0]
    if first < 0 or stop > table.shape[0] or first > stop or table.shape[1] != N_COLUMNS:
        raise ValueError("bad segment table window")
    # The table comes from a scan of these bytes; re-check the invariants the fill relies on.
    for i in range(first, stop):
        kind, width, count = table[i, C_KIND], table[i, C_WIDTH], table[i, C_COUNT]
        if table[i, C_OFFSET] > <uint64_t>view.shape[0] or \
                table[i, C_LENGTH] > <uint64_t>view.shape[0] - table[i, C_OFFSET]:
            raise ValueError("segment payload outside the data")
        span = table[i, C_END] - table[i, C_START] if table[i, C_END] >= table[i, C_START] else 0
        nvals = table[i, C_LENGTH] // (width // 8) if width in (16, 32, 64) else 0
        if (kind == 1 and count != span) or (kind == 2 and count != span - nvals) or \
                (kind >= 4 and count != nvals) or (kind == 3 and table[i, C_LENGTH] * 8 < span) or \
                kind < 1 or kind > 5:
            raise ValueError("segment table row is inconsistent")
        if pos + <Py_ssize_t>count > total:
            raise ValueError("segment counts exceed the requested total")
        pos += <Py_ssize_t>count
    out = np.empty(total, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    cdef uint64_t* op = &ov[0] if total > 0 else NULL
    if pos != total:
        raise ValueError("segment counts do not add up to the requested total")
    pos = 0
    with nogil:
        for i in range(first, stop):
            if table[i, C_COUNT] > 0:
                _fill_segment(d, &table[i, 0], op + pos)
                pos += <Py_ssize_t>table[i, C_COUNT]
    return out


def decode_row_id_sequence(data, path=None):
    """RowIdSequence bytes -> numpy uint64 row ids (checked scan, then unchecked fill)."""
    table, total = scan_row_id_sequence(data, path)
    if total == 0:
        return np.empty(0, dtype=np.uint64)
    return fill_values(data, table, total)


# ---------------------------------------------------------------------------------------------
# Per-segment expansion for segments built in memory (same loops as the decoder).

def fill_range(uint64_t[::1] out, uint64_t first):
    """``out[i] = first + i``: the ids of a range sequence written in one pass (an add of a
    prepared ``arange`` also reads it: a third more memory traffic on a big scan)."""
    cdef Py_ssize_t i, n = out.shape[0]
    with nogil:
        for i in range(n):
            out[i] = first + <uint64_t>i


def expand_holes(uint64_t start, uint64_t end, const uint64_t[::1] holes):
    """Values of start..end minus ``holes`` (sorted, strictly increasing, inside the range)."""
    cdef Py_ssize_t n = holes.shape[0], i
    cdef uint64_t v = start, k = 0, hv
    if end < start or <uint64_t>n > end - start:
        raise ValueError("holes do not fit their range")
    for i in range(n):
        if holes[i] < start or holes[i] >= end or (i > 0 and holes[i] <= holes[i - 1]):
            raise ValueError("holes must be strictly increasing inside their range")
    out = np.empty(end - start - <uint64_t>n, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    with nogil:
        for i in range(n):
            hv = holes[i]
            while v < hv:
                ov[k] = v
                k += 1
                v += 1
            v = hv + 1
        while v < end:
            ov[k] = v
            k += 1
            v += 1
    return out


def expand_bitmap(uint64_t start, uint64_t nbits, const uint8_t[::1] bitmap):
    """Values start + i for every set bit i < nbits of an LSB-first bitmap."""
    cdef Py_ssize_t nbytes = bitmap.shape[0], i
    cdef uint64_t count = 0, k = 0, b64, bitbase
    cdef unsigned int byte
    if <uint64_t>nbytes != nbits // 8 + (1 if nbits % 8 else 0):
        raise ValueError("bitmap length does not match its range")
    for i in range(nbytes):
        byte = bitmap[i]
        if i == nbytes - 1 and nbits % 8:
            byte &= (1u << (nbits % 8)) - 1
        count += lf_popcount8(byte)
    out = np.empty(count, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    with nogil:
        for i in range(nbytes):
            byte = bitmap[i]
            if i == nbytes - 1 and nbits % 8:
                byte &= (1u << (nbits % 8)) - 1
            bitbase = start + 8 * <uint64_t>i
            if k + 8 <= count:
                lf_emit_byte(&ov[k], bitbase, byte)
                k += <uint64_t>lf_popcount8(byte)
            else:
                b64 = byte
                while b64 and k < count:
                    ov[k] = bitbase + <uint64_t>lf_ctz64(b64)
                    k += 1
                    b64 &= b64 - 1
    return out


def bitmap_popcount(uint64_t nbits, const uint8_t[::1] bitmap):
    """Number of set bits among the first ``nbits`` of an LSB-first bitmap."""
    cdef Py_ssize_t i, nbytes = bitmap.shape[0]
    cdef uint64_t count = 0
    cdef unsigned int byte
    for i in range(nbytes):
        if <uint64_t>(8 * i) >= nbits:
            break
        byte = bitmap[i]
        if <uint64_t>(8 * i + 8) > nbits:
            byte &= (1u << (nbits % 8)) - 1
        count += lf_popcount8(byte)
    return count


# ---------------------------------------------------------------------------------------------
# Encoder kernels.

def value_stats(const uint64_t[::1] values):
    """(min, max, count, non_decreasing, strictly_increasing) of a uint64 array.

    ``non_decreasing`` is Lance's notion of "sorted" (``compute_stats``); empty -> (0, 0, 0, True, True).
    """
    cdef Py_ssize_t n = values.shape[0], i
    cdef uint64_t mn = U64_MAX, mx = 0, v
    cdef bint nondec = True, strict = True
    if n == 0:
        return 0, 0, 0, True, True
    with nogil:
        for i in range(n):
            v = values[i]
            if v < mn:
                mn = v
            if i > 0:
                if v < values[i - 1]:
                    nondec = False
                    strict = False
                elif v == values[i - 1]:
                    strict = False
            if v > mx:
                mx = v
    return mn, mx, n, nondec, strict


def holes_of(const uint64_t[::1] values, uint64_t lo, uint64_t hi):
    """Missing values of lo..=hi given strictly increasing ``values`` inside that range."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef uint64_t nholes, v, k = 0, cur
    if n == 0 or values[0] != lo or values[n - 1] != hi:
        raise ValueError("values must start at lo and end at hi")
    nholes = (hi - lo + 1) - <uint64_t>n
    out = np.empty(nholes, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    with nogil:
        cur = lo
        for i in range(n):
            v = values[i]
            while cur < v and k < nholes:
                ov[k] = cur
                k += 1
                cur += 1
            cur = v + 1
    return out


def bitmap_of(const uint64_t[::1] values, uint64_t lo, uint64_t nbits):
    """LSB-first presence bitmap of ``values`` (all in lo..lo+nbits) as bytes."""
    cdef Py_ssize_t n = values.shape[0], i
    cdef uint64_t off
    cdef Py_ssize_t nbytes = <Py_ssize_t>(nbits // 8 + (1 if nbits % 8 else 0))
    for i in range(n):
        if values[i] < lo or values[i] - lo >= nbits:
            raise ValueError("value outside the bitmap range")
    out = np.zeros(nbytes, dtype=np.uint8)
    cdef uint8_t[::1] ov = out
    with nogil:
        for i in range(n):
            off = values[i] - lo
            ov[off >> 3] |= <uint8_t>(1u << (off & 7))
    return out.tobytes()


# ---------------------------------------------------------------------------------------------
# Row-id index kernels.

def id_runs(const uint64_t[::1] ids, const uint8_t[::1] live, Py_ssize_t pos0):
    """Maximal runs of live positions whose ids go up by exactly one.

    ``ids[i]`` is the row id at fragment position ``pos0 + i``; ``live`` (same length, or empty
    for "all live") is 1 where the row is not deleted. Returns (id_start, pos_start, length)
    uint64 arrays.
    """
    cdef Py_ssize_t n = ids.shape[0], i, k = 0, run_start = -1
    cdef bint all_live = live.shape[0] == 0
    if not all_live and live.shape[0] != n:
        raise ValueError("live mask length does not match the ids")
    starts = np.empty(n, dtype=np.uint64)
    poss = np.empty(n, dtype=np.uint64)
    lens = np.empty(n, dtype=np.uint64)
    cdef uint64_t[::1] sv = starts, pv = poss, lv = lens
    with nogil:
        for i in range(n):
            if not all_live and not live[i]:
                if run_start >= 0:
                    lv[k] = <uint64_t>(i - run_start)
                    k += 1
                    run_start = -1
                continue
            if run_start >= 0 and ids[i] == ids[i - 1] + 1 and ids[i - 1] != U64_MAX:
                continue
            if run_start >= 0:
                lv[k] = <uint64_t>(i - run_start)
                k += 1
            run_start = i
            sv[k] = ids[i]
            pv[k] = <uint64_t>(pos0 + i)
        if run_start >= 0:
            lv[k] = <uint64_t>(n - run_start)
            k += 1
    return starts[:k].copy(), poss[:k].copy(), lens[:k].copy()


def mask_runs(const uint8_t[::1] live, Py_ssize_t first, Py_ssize_t n):
    """Runs of 1s in live[first:first+n] as (offset_from_first, length) uint64 arrays."""
    cdef Py_ssize_t i, k = 0, run_start = -1
    if first < 0 or n < 0 or first + n > live.shape[0]:
        raise ValueError("window outside the live mask")
    starts = np.empty(n // 2 + 1, dtype=np.uint64)
    lens = np.empty(n // 2 + 1, dtype=np.uint64)
    cdef uint64_t[::1] sv = starts, lv = lens
    with nogil:
        for i in range(n):
            if live[first + i]:
                if run_start < 0:
                    run_start = i
            elif run_start >= 0:
                sv[k] = <uint64_t>run_start
                lv[k] = <uint64_t>(i - run_start)
                k += 1
                run_start = -1
        if run_start >= 0:
            sv[k] = <uint64_t>run_start
            lv[k] = <uint64_t>(n - run_start)
            k += 1
    return starts[:k].copy(), lens[:k].copy()


cdef inline Py_ssize_t _upper_bound(const uint64_t* a, Py_ssize_t lo, Py_ssize_t hi,
                                    uint64_t x) noexcept nogil:
    """Index of the first element > x in sorted a[lo:hi] (hi if none)."""
    cdef Py_ssize_t mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


cdef enum:
    FENCE_SHIFT = 6   # one fence key per 64 sorted keys


FENCE_STRIDE = 1 << FENCE_SHIFT


cdef inline Py_ssize_t _last_le(const uint64_t* keys, Py_ssize_t n, const uint64_t* fences,
                                Py_ssize_t nf, uint64_t x) noexcept nogil:
    """Index of the last key <= x, or -1: a search of the (cache-resident) fences picks the
    64-key block, then a search inside that block (a few adjacent cache lines)."""
    cdef Py_ssize_t j = _upper_bound(fences, 0, nf, x) - 1
    cdef Py_ssize_t lo, hi
    if j < 0:
        return -1
    lo = j << FENCE_SHIFT
    hi = lo + (1 << FENCE_SHIFT)
    if hi > n:
        hi = n
    return _upper_bound(keys, lo, hi, x) - 1


def fences(const uint64_t[::1] keys):
    """Every 64th key of a sorted array: the first level of the two-level search."""
    return np.ascontiguousarray(np.asarray(keys)[::FENCE_STRIDE])


def lookup(const uint64_t[::1] run_ids, const uint64_t[:, ::1] run_spans,
           const uint64_t[::1] run_fences, const uint64_t[::1] sparse_ids,
           const uint64_t[::1] sparse_addrs, const uint64_t[::1] sparse_fences,
           const uint64_t[::1] query, uint64_t missing):
    """Row ids -> row addresses through sorted runs, then sorted single ids; ``missing`` if absent.

    ``run_spans[i] = (length, first address)`` of the run starting at ``run_ids[i]`` (one cache
    line holds both, so a hit costs one access after the search).
    """
    cdef Py_ssize_t nr = run_ids.shape[0], ns = sparse_ids.shape[0], nq = query.shape[0], i, j
    cdef Py_ssize_t nrf = run_fences.shape[0], nsf = sparse_fences.shape[0]
    cdef uint64_t q, d
    cdef const uint64_t* rid = &run_ids[0] if nr > 0 else NULL
    cdef const uint64_t* sid = &sparse_ids[0] if ns > 0 else NULL
    cdef const uint64_t* rf = &run_fences[0] if nrf > 0 else NULL
    cdef const uint64_t* sf = &sparse_fences[0] if nsf > 0 else NULL
    if run_spans.shape[0] != nr or run_spans.shape[1] != 2 or sparse_addrs.shape[0] != ns:
        raise ValueError("index arrays have mismatched lengths")
    if nrf != (nr + FENCE_STRIDE - 1) // FENCE_STRIDE or nsf != (ns + FENCE_STRIDE - 1) // FENCE_STRIDE:
        raise ValueError("fence arrays do not match their keys")
    for i in range(nrf):
        if rf[i] != rid[i << FENCE_SHIFT]:
            raise ValueError("run fences do not match the run ids")
    for i in range(nsf):
        if sf[i] != sid[i << FENCE_SHIFT]:
            raise ValueError("single fences do not match the single ids")
    out = np.empty(nq, dtype=np.uint64)
    cdef uint64_t[::1] ov = out
    with nogil:
        for i in range(nq):
            q = query[i]
            ov[i] = missing
            if nr > 0:
                j = _last_le(rid, nr, rf, nrf, q)
                if j >= 0:
                    d = q - rid[j]
                    if d < run_spans[j, 0]:
                        ov[i] = run_spans[j, 1] + d
                        continue
            if ns > 0:
                j = _last_le(sid, ns, sf, nsf, q)
                if j >= 0 and sid[j] == q:
                    ov[i] = sparse_addrs[j]
    return out
