# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels of the NGRAM index: trigram tokens of Arrow string buffers, and Lance's posting
lists (64-bit roaring treemaps) encoded, decoded, intersected and merged.

Tokens (see ``ngram_fold`` for the text rules): each character stands for a fixed string of
*positions* (0..255; -1 breaks a trigram). ASCII comes from :data:`_ASCII_POS`, other code
points from the fold table (a dense index for the BMP, a sorted list above it). Three
consecutive positions ``a b c`` make the token ``a*37*37 + b*37 + c``. Every string is read
byte by byte in C; a byte sequence that is not UTF-8 only breaks trigrams.

A posting list is what roaring-rs' ``RoaringTreemap::serialize_into`` writes: u64 count of
32-bit bitmaps, then per bitmap (ascending high halves) u32 high half and a portable 32-bit
roaring bitmap. We write them as roaring-rs does for bitmaps built by inserts (no run
containers, an array container up to 4096 values, else an 8 KiB bitset, offsets always
present) and read any valid one, run containers included, checking every count and offset.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, memset

import numpy as np
import pyarrow as pa

cimport numpy as cnp

cnp.import_array()

ctypedef fused offset_t:
    int32_t
    int64_t

#: one past the largest token (three positions of at most 255)
TOKEN_SPACE = 255 * 37 * 37 + 255 * 37 + 255 + 1
DEF _TOKEN_SPACE = 358786
DEF _ARRAY_LIMIT = 4096
DEF _COOKIE_NO_RUN = 12346
DEF _COOKIE_RUN = 12347
DEF _BITSET_BYTES = 8192

cdef int16_t _ASCII_POS[128]


cdef inline int16_t _rust_pos(int byte) noexcept nogil:
    """Lance's ``ngram_to_token`` position of an ASCII letter or digit (u8 arithmetic,
    wrapping: an upper-case letter lands outside 1..36)."""
    cdef int p
    if byte <= 57:
        p = byte - 48
    else:
        p = (byte - 97 + 10) & 0xFF
    return <int16_t>((p + 1) & 0xFF)


cdef void _init_ascii() noexcept:
    cdef int c
    for c in range(128):
        if 48 <= c <= 57 or 97 <= c <= 122:
            _ASCII_POS[c] = _rust_pos(c)
        elif 65 <= c <= 90:
            _ASCII_POS[c] = _rust_pos(c + 32)  # the value is lower-cased first
        else:
            _ASCII_POS[c] = -1


_init_ascii()


def fold_positions(text: str):
    """Positions (int16, -1 for anything else) of the characters of a fold-table string."""
    out = np.empty(len(text), dtype=np.int16)
    for i, ch in enumerate(text):
        c = ord(ch)
        out[i] = _rust_pos(c) if c < 128 and ch.isalnum() else -1
    return out


cdef class FoldTable:
    """The per-code-point strings of ``ngram_fold.TABLE`` as positions, for the kernels."""
    cdef object _keep
    cdef const uint16_t* bmp        # 65536 entries: 0 = none, k = entry k - 1
    cdef const uint32_t* sup_cp     # sorted code points >= 0x10000
    cdef const uint16_t* sup_entry
    cdef Py_ssize_t n_sup
    cdef const int16_t* pool
    cdef const uint32_t* entry_off  # entries + 1
    cdef Py_ssize_t n_entries

    def __init__(self, table: dict):
        items = sorted(table.items())
        n = len(items)
        if n >= 65535:
            raise ValueError("fold table too large")
        bmp = np.zeros(65536, dtype=np.uint16)
        sup_cp = []
        sup_entry = []
        pools = []
        offs = np.zeros(n + 1, dtype=np.uint32)
        for k, (cp, seq) in enumerate(items):
            pos = fold_positions(seq)
            pools.append(pos)
            offs[k + 1] = offs[k] + len(pos)
            if cp < 0x10000:
                bmp[cp] = k + 1
            else:
                sup_cp.append(cp)
                sup_entry.append(k)
        pool = np.concatenate(pools) if pools else np.zeros(1, np.int16)
        sup_cp_a = np.asarray(sup_cp if sup_cp else [0x7FFFFFFF], dtype=np.uint32)
        sup_entry_a = np.asarray(sup_entry if sup_entry else [0], dtype=np.uint16)
        self._keep = (bmp, sup_cp_a, sup_entry_a, pool, offs)
        cdef const uint16_t[::1] vb = bmp
        cdef const uint32_t[::1] vc = sup_cp_a
        cdef const uint16_t[::1] ve = sup_entry_a
        cdef const int16_t[::1] vp = pool
        cdef const uint32_t[::1] vo = offs
        self.bmp = &vb[0]
        self.sup_cp = &vc[0]
        self.sup_entry = &ve[0]
        self.n_sup = len(sup_cp)
        self.pool = &vp[0]
        self.entry_off = &vo[0]
        self.n_entries = n


cdef inline Py_ssize_t _entry_of(FoldTable ft, uint32_t cp) noexcept nogil:
    """The table entry of ``cp`` (non-ASCII), or -1."""
    cdef Py_ssize_t lo, hi, mid
    if cp < 0x10000:
        return <Py_ssize_t>ft.bmp[cp] - 1
    lo = 0
    hi = ft.n_sup
    while lo < hi:
        mid = (lo + hi) >> 1
        if ft.sup_cp[mid] < cp:
            lo = mid + 1
        else:
            hi = mid
    if lo < ft.n_sup and ft.sup_cp[lo] == cp:
        return ft.sup_entry[lo]
    return -1


cdef struct TokBuf:
    uint32_t* data
    Py_ssize_t n
    Py_ssize_t cap


cdef inline int _push_token(TokBuf* b, uint32_t t) noexcept nogil:
    cdef uint32_t* grown
    cdef Py_ssize_t cap
    if b.n == b.cap:
        cap = b.cap * 2 if b.cap else 256
        grown = <uint32_t*>realloc(b.data, cap * sizeof(uint32_t))
        if grown == NULL:
            return -1
        b.data = grown
        b.cap = cap
    b.data[b.n] = t
    b.n += 1
    return 0


cdef inline int _utf8_char(const uint8_t* p, Py_ssize_t n, Py_ssize_t i, uint32_t* cp) noexcept nogil:
    """Width of the UTF-8 character at ``p[i]`` (>= 0x80) and its code point; 0 when the
    bytes there are not a well-formed character."""
    cdef uint8_t c = p[i]
    cdef int k, j
    cdef uint32_t v
    if 0xC2 <= c <= 0xDF:
        k = 1
        v = c & 0x1F
    elif 0xE0 <= c <= 0xEF:
        k = 2
        v = c & 0x0F
    elif 0xF0 <= c <= 0xF4:
        k = 3
        v = c & 0x07
    else:
        return 0
    if i + k >= n:
        return 0
    for j in range(1, k + 1):
        if (p[i + j] & 0xC0) != 0x80:
            return 0
        v = (v << 6) | (p[i + j] & 0x3F)
    if (k == 2 and v < 0x800) or (k == 3 and (v < 0x10000 or v > 0x10FFFF)) or (0xD800 <= v <= 0xDFFF):
        return 0
    cp[0] = v
    return k + 1


cdef int _tokenize(const uint8_t* p, Py_ssize_t n, FoldTable ft, TokBuf* out) noexcept nogil:
    """The trigram tokens of one UTF-8 string, in order (duplicates kept), into ``out``."""
    cdef Py_ssize_t i = 0, e, k, w
    cdef int run = 0
    cdef int16_t v
    cdef uint32_t w0 = 0, w1 = 0, cp = 0
    cdef uint8_t c
    out.n = 0
    while i < n:
        c = p[i]
        if c < 0x80:
            v = _ASCII_POS[c]
            i += 1
            if v < 0:
                run = 0
            else:
                if run >= 2:
                    if _push_token(out, w0 * 1369 + w1 * 37 + <uint32_t>v) < 0:
                        return -1
                else:
                    run += 1
                w0 = w1
                w1 = <uint32_t>v
            continue
        w = _utf8_char(p, n, i, &cp)
        if w == 0:
            i += 1
            run = 0
            continue
        i += w
        e = _entry_of(ft, cp)
        if e < 0:
            run = 0
            continue
        for k in range(ft.entry_off[e], ft.entry_off[e + 1]):
            v = ft.pool[k]
            if v < 0:
                run = 0
            else:
                if run >= 2:
                    if _push_token(out, w0 * 1369 + w1 * 37 + <uint32_t>v) < 0:
                        return -1
                else:
                    run += 1
                w0 = w1
                w1 = <uint32_t>v
    return 0


def query_tokens(bytes text, FoldTable ft):
    """Sorted unique tokens of one UTF-8 string."""
    cdef TokBuf buf
    buf.data = NULL
    buf.n = 0
    buf.cap = 0
    cdef const uint8_t* p = text
    cdef Py_ssize_t n = len(text)
    cdef int rc
    try:
        with nogil:
            rc = _tokenize(p, n, ft, &buf)
        if rc < 0:
            raise MemoryError()
        out = np.empty(buf.n, dtype=np.uint32)
        if buf.n:
            memcpy(cnp.PyArray_DATA(out), buf.data, buf.n * sizeof(uint32_t))
        return np.unique(out)
    finally:
        free(buf.data)


cdef int _chunk_pass(const offset_t* offsets, const uint8_t* data, Py_ssize_t data_len,
                     const uint8_t* validity, Py_ssize_t bit_offset, Py_ssize_t length,
                     uint32_t row_base, FoldTable ft, uint32_t* last, int64_t* counts,
                     const uint64_t* row_ids, uint64_t* ids_out, TokBuf* buf) noexcept nogil:
    """One pass over a string array's rows: count (``ids_out`` NULL) or place each row's id
    once under each of its tokens (nulls under token 0, as Lance does). ``last[t]`` is one
    more than the last row counted under ``t``. -1: no memory; -2: bad offsets."""
    cdef Py_ssize_t r, j, b
    cdef int64_t start, stop
    cdef uint32_t t, mark
    for r in range(length):
        mark = row_base + <uint32_t>r + 1
        if validity != NULL:
            b = bit_offset + r
            if not (validity[b >> 3] >> (b & 7)) & 1:
                if last[0] != mark:
                    last[0] = mark
                    if ids_out != NULL:
                        ids_out[counts[0]] = row_ids[mark - 1]
                    counts[0] += 1
                continue
        start = offsets[r]
        stop = offsets[r + 1]
        if start < 0 or stop < start or stop > data_len:
            return -2
        if _tokenize(data + start, stop - start, ft, buf) < 0:
            return -1
        for j in range(buf.n):
            t = buf.data[j]
            if last[t] != mark:
                last[t] = mark
                if ids_out != NULL:
                    ids_out[counts[t]] = row_ids[mark - 1]
                counts[t] += 1
    return 0


cdef int _array_pass(arr, Py_ssize_t row_base, FoldTable ft, uint32_t* last, int64_t* counts,
                     const uint64_t* row_ids, uint64_t* ids_out, TokBuf* buf) except -3:
    bufs = arr.buffers()
    cdef Py_ssize_t length = len(arr)
    cdef Py_ssize_t off = arr.offset
    cdef const uint8_t[::1] vbits
    cdef const uint8_t* vptr = NULL
    cdef const uint8_t[::1] dview
    cdef const uint8_t* dptr = NULL
    cdef Py_ssize_t dlen = 0
    cdef const int32_t[::1] o32
    cdef const int64_t[::1] o64
    cdef int rc
    cdef uint32_t base = <uint32_t>row_base
    if length == 0:
        return 0
    if bufs[0] is not None and arr.null_count:
        vbits = np.frombuffer(bufs[0], dtype=np.uint8)
        if vbits.shape[0] * 8 < off + length:
            raise ValueError("validity bitmap shorter than the array")
        vptr = &vbits[0]
    if bufs[2] is not None and bufs[2].size:
        dview = np.frombuffer(bufs[2], dtype=np.uint8)
        dptr = &dview[0]
        dlen = dview.shape[0]
    else:
        dptr = <const uint8_t*>b""
    if pa.types.is_string(arr.type):
        o32 = np.frombuffer(bufs[1], dtype=np.int32)[off:off + length + 1]
        if o32.shape[0] != length + 1:
            raise ValueError("offsets shorter than the array")
        with nogil:
            rc = _chunk_pass(&o32[0], dptr, dlen, vptr, off, length, base, ft, last, counts, row_ids, ids_out, buf)
    else:
        o64 = np.frombuffer(bufs[1], dtype=np.int64)[off:off + length + 1]
        if o64.shape[0] != length + 1:
            raise ValueError("offsets shorter than the array")
        with nogil:
            rc = _chunk_pass(&o64[0], dptr, dlen, vptr, off, length, base, ft, last, counts, row_ids, ids_out, buf)
    if rc == -1:
        raise MemoryError()
    if rc == -2:
        raise ValueError("string offsets outside the data buffer")
    return 0


def token_lists(chunks, row_ids, FoldTable ft):
    """Inverted lists of string arrays ``chunks`` (``string`` or ``large_string``), whose rows
    have the ids ``row_ids`` (ascending, one per row across the chunks): ``(tokens, offsets,
    ids)``, tokens ascending, each token's ids ``ids[offsets[k]:offsets[k+1]]`` ascending and
    unique."""
    cdef const uint64_t[::1] rid = np.ascontiguousarray(row_ids, dtype=np.uint64)
    total = sum(len(c) for c in chunks)
    if total != rid.shape[0]:
        raise ValueError("one row id per value is needed")
    if total >= 0xFFFFFFFF:
        raise ValueError("an NGRAM build takes fewer than 2**32 - 1 rows at once")
    counts_a = np.zeros(_TOKEN_SPACE, dtype=np.int64)
    last_a = np.zeros(_TOKEN_SPACE, dtype=np.uint32)
    cdef int64_t[::1] counts = counts_a
    cdef uint32_t[::1] last = last_a
    cdef TokBuf buf
    buf.data = NULL
    buf.n = 0
    buf.cap = 0
    cdef Py_ssize_t base
    cdef uint64_t[::1] ids_v
    cdef const uint64_t* rptr = &rid[0] if total else <const uint64_t*>NULL
    try:
        base = 0
        for c in chunks:
            _array_pass(c, base, ft, &last[0], &counts[0], rptr, NULL, &buf)
            base += len(c)
        offsets = np.zeros(_TOKEN_SPACE + 1, dtype=np.int64)
        np.cumsum(counts_a, out=offsets[1:])
        ids = np.empty(int(offsets[_TOKEN_SPACE]), dtype=np.uint64)
        if ids.size:
            ids_v = ids
            counts_a[:] = offsets[:_TOKEN_SPACE]
            last_a[:] = 0
            base = 0
            for c in chunks:
                _array_pass(c, base, ft, &last[0], &counts[0], rptr, &ids_v[0], &buf)
                base += len(c)
    finally:
        free(buf.data)
    present = np.flatnonzero(np.diff(offsets)).astype(np.uint32)
    out_off = np.empty(present.size + 1, dtype=np.int64)
    out_off[:present.size] = offsets[:_TOKEN_SPACE][present]
    out_off[present.size] = ids.size
    return present, out_off, ids


# -- posting lists: encode ----------------------------------------------------------------------
cdef Py_ssize_t _encoded_size(const uint64_t* ids, Py_ssize_t s, Py_ssize_t e) noexcept nogil:
    """Bytes of the treemap of the (ascending) ids ``s..e``."""
    cdef Py_ssize_t total = 8, k = s, card
    cdef uint64_t hi, key, v
    while k < e:
        hi = ids[k] >> 32
        total += 12
        while k < e:
            v = ids[k]
            if (v >> 32) != hi:
                break
            key = v >> 16
            card = 0
            while k < e and (ids[k] >> 16) == key:
                card += 1
                k += 1
            total += 8 + (2 * card if card <= _ARRAY_LIMIT else _BITSET_BYTES)
    return total


cdef inline void _put_u16(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF


cdef inline void _put_u32(uint8_t* p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = (v >> 24) & 0xFF


cdef inline void _put_u64(uint8_t* p, uint64_t v) noexcept nogil:
    _put_u32(p, <uint32_t>(v & 0xFFFFFFFFULL))
    _put_u32(p + 4, <uint32_t>(v >> 32))


cdef Py_ssize_t _encode(const uint64_t* ids, Py_ssize_t s, Py_ssize_t e, uint8_t* out) noexcept nogil:
    """Write the treemap of ids ``s..e`` at ``out``; returns the bytes written."""
    cdef Py_ssize_t pos = 8, k = s, g, c, n_cont, card, j, hdr, data_pos
    cdef uint64_t hi, key, v
    cdef uint64_t groups = 0
    cdef uint32_t low
    cdef uint8_t* bits
    while k < e:
        hi = ids[k] >> 32
        g = k
        while g < e and (ids[g] >> 32) == hi:
            g += 1
        n_cont = 0
        c = k
        while c < g:
            key = ids[c] >> 16
            while c < g and (ids[c] >> 16) == key:
                c += 1
            n_cont += 1
        groups += 1
        _put_u32(out + pos, <uint32_t>hi)
        _put_u32(out + pos + 4, _COOKIE_NO_RUN)
        _put_u32(out + pos + 8, <uint32_t>n_cont)
        hdr = pos + 12
        data_pos = hdr + 8 * n_cont
        c = k
        j = 0
        while c < g:
            key = ids[c] >> 16
            card = 0
            while c + card < g and (ids[c + card] >> 16) == key:
                card += 1
            _put_u16(out + hdr + 4 * j, <uint32_t>(key & 0xFFFF))
            _put_u16(out + hdr + 4 * j + 2, <uint32_t>(card - 1))
            _put_u32(out + hdr + 4 * n_cont + 4 * j, <uint32_t>(data_pos - (pos + 4)))
            if card <= _ARRAY_LIMIT:
                for v in range(card):
                    _put_u16(out + data_pos + 2 * v, <uint32_t>(ids[c + v] & 0xFFFF))
                data_pos += 2 * card
            else:
                bits = out + data_pos
                memset(bits, 0, _BITSET_BYTES)
                for v in range(card):
                    low = <uint32_t>(ids[c + v] & 0xFFFF)
                    bits[low >> 3] |= <uint8_t>(1 << (low & 7))
                data_pos += _BITSET_BYTES
            c += card
            j += 1
        pos = data_pos
        k = g
    _put_u64(out, groups)
    return pos


def encode_lists(list_offsets, ids):
    """Treemap bytes of every list (list ``k`` is ``ids[o[k]:o[k+1]]``, ascending and
    unique). Returns ``(offsets int64 [n+1], data uint8)``: list k is
    ``data[offsets[k]:offsets[k+1]]``."""
    cdef const int64_t[::1] lo = np.ascontiguousarray(list_offsets, dtype=np.int64)
    cdef const uint64_t[::1] idv = np.ascontiguousarray(ids, dtype=np.uint64)
    cdef const uint64_t* iptr
    cdef Py_ssize_t n = lo.shape[0] - 1, k
    if n < 0:
        raise ValueError("list offsets are empty")
    if n and (lo[0] < 0 or lo[n] > idv.shape[0] or np.any(np.diff(np.asarray(lo)) < 0)):
        raise ValueError("list offsets outside the ids")
    iptr = &idv[0] if idv.shape[0] else <const uint64_t*>NULL
    sizes = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] sz = sizes
    with nogil:
        for k in range(n):
            sz[k] = _encoded_size(iptr, lo[k], lo[k + 1])
    out_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=out_off[1:])
    data = np.empty(int(out_off[n]), dtype=np.uint8)
    cdef int64_t[::1] oo = out_off
    cdef uint8_t[::1] dv = data
    cdef uint8_t* dptr = &dv[0] if dv.shape[0] else <uint8_t*>NULL
    with nogil:
        for k in range(n):
            _encode(iptr, lo[k], lo[k + 1], dptr + oo[k])
    return out_off, data


# -- posting lists: decode ----------------------------------------------------------------------
cdef inline uint32_t _u16(const uint8_t* p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8)


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint64_t _u64(const uint8_t* p) noexcept nogil:
    return <uint64_t>_u32(p) | (<uint64_t>_u32(p + 4) << 32)


cdef inline int _popcount8(uint8_t b) noexcept nogil:
    cdef int n = 0
    while b:
        b &= b - 1
        n += 1
    return n


# error codes of _decode (negative); their words are in _REASONS
_REASONS = {
    -1: "is shorter than its header",
    -2: "declares more bitmaps than it has bytes for",
    -3: "bitmap keys are not ascending",
    -4: "has an unknown roaring cookie",
    -5: "declares more containers than it has bytes for",
    -6: "container keys are not ascending",
    -7: "container data lies outside the list",
    -8: "container values are not ascending",
    -9: "container cardinality does not match its data",
    -10: "has bytes after its last bitmap",
    -11: "has more than 2**32 values",
    -12: "has an empty bitmap",
}


cdef int64_t _decode(const uint8_t* p, Py_ssize_t n, uint64_t* out) noexcept nogil:
    """Check the treemap ``p[0:n]`` and, when ``out`` is not NULL, write its ids (ascending).
    Returns the number of ids, or a negative code (see ``_REASONS``)."""
    cdef Py_ssize_t pos = 8, base, hdr, offs, data, q, size, j, r, nruns
    cdef uint64_t groups, gi
    cdef int64_t total = 0
    cdef int64_t prev_hi = -1
    cdef int32_t prev_key
    cdef uint32_t hi, cookie, key, card, v, last_v, start, length, run_end, bit
    cdef bint runs, has_offsets, is_run, first
    cdef const uint8_t* run_flags
    cdef uint64_t high
    if n < 8:
        return -1
    groups = _u64(p)
    if groups > <uint64_t>((n - 8) // 12):
        return -2
    for gi in range(groups):
        if n - pos < 12:
            return -1
        hi = _u32(p + pos)
        if <int64_t>hi <= prev_hi:
            return -3
        prev_hi = hi
        base = pos + 4
        high = (<uint64_t>hi) << 32
        cookie = _u32(p + base)
        if cookie == _COOKIE_NO_RUN:
            size = _u32(p + base + 4)
            hdr = base + 8
            runs = False
            run_flags = NULL
            has_offsets = True
        elif (cookie & 0xFFFF) == _COOKIE_RUN:
            size = (cookie >> 16) + 1
            runs = True
            run_flags = p + base + 4
            hdr = base + 4 + (size + 7) // 8
            has_offsets = size >= 4
        else:
            return -4
        if size == 0:
            return -12
        if hdr > n or size > (n - hdr) // 4:
            return -5
        offs = hdr + 4 * size
        if has_offsets:
            if size > (n - offs) // 4:
                return -5
            data = offs + 4 * size
        else:
            data = offs
        prev_key = -1
        for j in range(size):
            key = _u16(p + hdr + 4 * j)
            card = _u16(p + hdr + 4 * j + 2) + 1
            if <int32_t>key <= prev_key:
                return -6
            prev_key = key
            is_run = runs and ((run_flags[j >> 3] >> (j & 7)) & 1)
            if has_offsets:
                q = base + <Py_ssize_t>_u32(p + offs + 4 * j)
                if q != data:
                    return -7
            q = data
            if is_run:
                if n - q < 2:
                    return -7
                nruns = _u16(p + q)
                if nruns == 0 or nruns > (n - q - 2) // 4:
                    return -7
                last_v = 0
                first = True
                v = 0
                for r in range(nruns):
                    start = _u16(p + q + 2 + 4 * r)
                    length = _u16(p + q + 4 + 4 * r)
                    run_end = start + length
                    if run_end > 0xFFFF or (not first and start <= last_v):
                        return -8
                    if out != NULL:
                        for bit in range(start, run_end + 1):
                            out[total + v] = high | (<uint64_t>key << 16) | bit
                            v += 1
                    else:
                        v += length + 1
                    last_v = run_end
                    first = False
                if v != card:
                    return -9
                data = q + 2 + 4 * nruns
            elif card <= _ARRAY_LIMIT:
                if n - q < 2 * <Py_ssize_t>card:
                    return -7
                if out != NULL:
                    for r in range(card):
                        v = _u16(p + q + 2 * r)
                        if r and v <= last_v:
                            return -8
                        last_v = v
                        out[total + r] = high | (<uint64_t>key << 16) | v
                data = q + 2 * card
            else:
                if n - q < _BITSET_BYTES:
                    return -7
                v = 0
                for r in range(_BITSET_BYTES):
                    if p[q + r]:
                        if out != NULL:
                            for bit in range(8):
                                if (p[q + r] >> bit) & 1:
                                    out[total + v] = high | (<uint64_t>key << 16) | (8 * r + bit)
                                    v += 1
                        else:
                            v += _popcount8(p[q + r])
                if v != card:
                    return -9
                data = q + _BITSET_BYTES
            total += card
            if total > 0xFFFFFFFFLL:
                return -11
        pos = data
    if pos != n:
        return -10
    return total


def decode_list(data):
    """Ids (uint64, ascending) of one serialized treemap; ValueError(reason) when malformed."""
    cdef const uint8_t[::1] v = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, np.uint8)
    cdef Py_ssize_t n = len(data)
    cdef int64_t count
    cdef uint64_t[::1] ov
    with nogil:
        count = _decode(&v[0], n, NULL)
    if count < 0:
        raise ValueError(_REASONS[count])
    out = np.empty(count, dtype=np.uint64)
    if count:
        ov = out
        with nogil:
            count = _decode(&v[0], n, &ov[0])
        if count < 0:
            raise ValueError(_REASONS[count])
    return out


def decode_lists(offsets, data):
    """Every treemap of a binary column's ``offsets`` (n+1) and ``data``: ``(list_offsets
    int64 [n+1], ids uint64)``. ValueError("list k: reason") when one is malformed."""
    cdef const int64_t[::1] o = np.ascontiguousarray(offsets, dtype=np.int64)
    cdef const uint8_t[::1] d = np.frombuffer(data, dtype=np.uint8) if len(data) else np.zeros(1, np.uint8)
    cdef Py_ssize_t n = o.shape[0] - 1, k, dlen = len(data)
    cdef int64_t c
    if n < 0:
        raise ValueError("offsets are empty")
    for k in range(n):
        if o[k] < 0 or o[k + 1] < o[k] or o[k + 1] > dlen:
            raise ValueError(f"list {k}: offsets outside the data")
    counts = np.empty(n, dtype=np.int64)
    cdef int64_t[::1] cv = counts
    with nogil:
        for k in range(n):
            c = _decode(&d[0] + o[k], o[k + 1] - o[k], NULL)
            cv[k] = c
            if c < 0:
                break
    bad = np.flatnonzero(counts < 0)
    if bad.size:
        k = int(bad[0])
        raise ValueError(f"list {k}: {_REASONS[int(counts[k])]}")
    list_off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=list_off[1:])
    ids = np.empty(int(list_off[n]), dtype=np.uint64)
    cdef uint64_t[::1] iv
    cdef int64_t[::1] lv = list_off
    if ids.size:
        iv = ids
        with nogil:
            for k in range(n):
                if lv[k + 1] > lv[k]:
                    c = _decode(&d[0] + o[k], o[k + 1] - o[k], &iv[0] + lv[k])
                    cv[k] = c
                    if c < 0:
                        break
        bad = np.flatnonzero(counts < 0)
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"list {k}: {_REASONS[int(counts[k])]}")
    return list_off, ids


# -- set operations on ascending uint64 arrays --------------------------------------------------
def intersect_sorted(a, b):
    """Values in both ascending unique arrays (galloping through the longer one)."""
    cdef const uint64_t[::1] x = np.ascontiguousarray(a, dtype=np.uint64)
    cdef const uint64_t[::1] y = np.ascontiguousarray(b, dtype=np.uint64)
    if x.shape[0] > y.shape[0]:
        x, y = y, x
    cdef Py_ssize_t nx = x.shape[0], ny = y.shape[0], i, j = 0, step, lo, hi, mid, m = 0
    out = np.empty(nx, dtype=np.uint64)
    if nx == 0 or ny == 0:
        return out[:0]
    cdef uint64_t[::1] ov = out
    cdef uint64_t v
    with nogil:
        for i in range(nx):
            v = x[i]
            if j >= ny:
                break
            if y[j] < v:
                step = 1
                lo = j
                while j + step < ny and y[j + step] < v:
                    lo = j + step
                    step <<= 1
                hi = j + step if j + step < ny else ny
                lo += 1
                while lo < hi:
                    mid = (lo + hi) >> 1
                    if y[mid] < v:
                        lo = mid + 1
                    else:
                        hi = mid
                j = lo
            if j < ny and y[j] == v:
                ov[m] = v
                m += 1
                j += 1
    return out[:m]


def union_lists(tok_a, off_a, ids_a, tok_b, off_b, ids_b):
    """Per-token union of two sets of lists (tokens ascending, lists ascending unique):
    ``(tokens, offsets, ids)``."""
    cdef const uint32_t[::1] ta = np.ascontiguousarray(tok_a, dtype=np.uint32)
    cdef const uint32_t[::1] tb = np.ascontiguousarray(tok_b, dtype=np.uint32)
    cdef const int64_t[::1] oa = np.ascontiguousarray(off_a, dtype=np.int64)
    cdef const int64_t[::1] ob = np.ascontiguousarray(off_b, dtype=np.int64)
    cdef const uint64_t[::1] ia = np.ascontiguousarray(ids_a, dtype=np.uint64)
    cdef const uint64_t[::1] ib = np.ascontiguousarray(ids_b, dtype=np.uint64)
    cdef Py_ssize_t na = ta.shape[0], nb = tb.shape[0]
    if oa.shape[0] != na + 1 or ob.shape[0] != nb + 1:
        raise ValueError("offsets do not match the tokens")
    if oa[na] > ia.shape[0] or ob[nb] > ib.shape[0]:
        raise ValueError("offsets outside the ids")
    tokens = np.empty(na + nb, dtype=np.uint32)
    offsets = np.zeros(na + nb + 1, dtype=np.int64)
    ids = np.empty(int(oa[na] + ob[nb]), dtype=np.uint64)
    cdef uint32_t[::1] to = tokens
    cdef int64_t[::1] oo = offsets
    cdef uint64_t[::1] io = ids
    cdef Py_ssize_t i = 0, j = 0, t = 0, m = 0, p, q, pe, qe
    with nogil:
        while i < na or j < nb:
            if j >= nb or (i < na and ta[i] < tb[j]):
                to[t] = ta[i]
                for p in range(oa[i], oa[i + 1]):
                    io[m] = ia[p]
                    m += 1
                i += 1
            elif i >= na or tb[j] < ta[i]:
                to[t] = tb[j]
                for q in range(ob[j], ob[j + 1]):
                    io[m] = ib[q]
                    m += 1
                j += 1
            else:
                to[t] = ta[i]
                p, pe, q, qe = oa[i], oa[i + 1], ob[j], ob[j + 1]
                while p < pe or q < qe:
                    if q >= qe or (p < pe and ia[p] < ib[q]):
                        io[m] = ia[p]
                        p += 1
                    elif p >= pe or ib[q] < ia[p]:
                        io[m] = ib[q]
                        q += 1
                    else:
                        io[m] = ia[p]
                        p += 1
                        q += 1
                    m += 1
                i += 1
                j += 1
            t += 1
            oo[t] = m
    return tokens[:t], offsets[:t + 1], ids[:m]
