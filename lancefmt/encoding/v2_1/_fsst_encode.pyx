# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""FSST string compression: the symbol-table builder's counting pass and the encoder.

A table holds up to 255 symbols of 1 to 8 bytes (code = index, code 255 escapes one literal
byte). Matching is greedy longest-first: symbols of 2+ bytes sit in a hash table on (symbol,
length), a 64 Ki table per first two bytes says which lengths exist (at most 7 probes, each
short), and single-byte symbols sit in a 256-entry table. The builder (see
:mod:`.fsst_encoder`) repeatedly compresses a sample with the current table, counting how
often each code and each pair of consecutive codes occurs (:func:`count_codes`), and keeps the
candidates (codes and concatenated pairs) of the largest gain = count * length, as in the FSST
paper (Boncz, Neumann, Leis, VLDB 2020). Both passes run without the GIL.
"""
import numpy as np

from lancefmt.encoding.pool_memory import pool_empty

cimport numpy as cnp
from libc.stdint cimport int16_t, int64_t, uint8_t, uint32_t, uint64_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy, memset

cnp.import_array()

cdef enum:
    NCODES = 512     # 0..254 symbols, 256 + b: the literal byte b


cdef enum:
    HASH_BITS = 11   # 2048 slots for at most 255 symbols: short probe runs
    HASH_SLOTS = 1 << HASH_BITS


cdef struct Table:
    uint64_t vals[255]
    uint8_t lens[255]
    int nsym
    int16_t single[256]
    # bit (L - 2) set: some symbol of length L (2..8) starts with these two bytes, so only
    # lengths that can match are looked up (a chain per two-byte prefix degenerates when many
    # symbols share it, e.g. "name-1", "name-12", ...)
    uint8_t lengths[65536]
    int16_t slots[HASH_SLOTS]   # open addressing on (symbol, length): code or -1


cdef inline uint64_t _mask(int length) noexcept nogil:
    if length >= 8:
        return 0xFFFFFFFFFFFFFFFF
    return ((<uint64_t>1) << (8 * length)) - 1


cdef inline int _slot(uint64_t value, int length) noexcept nogil:
    return <int>(((value ^ (<uint64_t>length << 59)) * <uint64_t>0x9E3779B97F4A7C15) >> (64 - HASH_BITS))


cdef int _load_table(Table* t, const uint64_t[::1] vals, const uint8_t[::1] lens) except -1:
    cdef int n = vals.shape[0]
    cdef int i, h, c, length
    if n > 255 or lens.shape[0] != n:
        raise ValueError("an FSST table holds at most 255 symbols, one length each")
    t.nsym = n
    for i in range(256):
        t.single[i] = -1
    memset(t.lengths, 0, sizeof(t.lengths))
    for i in range(HASH_SLOTS):
        t.slots[i] = -1
    for i in range(n):
        if lens[i] < 1 or lens[i] > 8:
            raise ValueError("FSST symbol lengths are 1..8")
        t.vals[i] = vals[i] & _mask(lens[i])
        t.lens[i] = lens[i]
    for i in range(n):
        length = t.lens[i]
        if length == 1:
            if t.single[t.vals[i] & 0xFF] == -1:
                t.single[t.vals[i] & 0xFF] = i
            continue
        t.lengths[t.vals[i] & 0xFFFF] |= <uint8_t>(1 << (length - 2))
        h = _slot(t.vals[i], length)
        while True:
            c = t.slots[h]
            if c < 0 or (t.lens[c] == length and t.vals[c] == t.vals[i]):
                t.slots[h] = i   # a repeated symbol: the later code, as any decodes the same
                break
            h = (h + 1) & (HASH_SLOTS - 1)
    return 0


cdef inline int _match(const Table* t, const uint8_t* p, int64_t remaining,
                       const uint8_t* buf_end, int* used) noexcept nogil:
    """The code of the longest symbol at ``p`` (256 + byte when only an escape fits)."""
    cdef uint64_t w = 0
    cdef uint64_t key
    cdef int c, h, length
    cdef unsigned int bits
    if p + 8 <= buf_end:
        memcpy(&w, p, 8)
    else:
        memcpy(&w, p, buf_end - p)
    if remaining >= 2:
        bits = t.lengths[w & 0xFFFF]
        if remaining < 8:
            bits &= (1u << (remaining - 1)) - 1   # lengths 2..remaining
        length = 8
        while bits:
            if bits & (1u << (length - 2)):
                bits &= ~(1u << (length - 2))
                key = w & _mask(length)
                h = _slot(key, length)
                c = t.slots[h]
                while c >= 0:
                    if t.lens[c] == length and t.vals[c] == key:
                        used[0] = length
                        return c
                    h = (h + 1) & (HASH_SLOTS - 1)
                    c = t.slots[h]
            length -= 1
    used[0] = 1
    c = t.single[w & 0xFF]
    if c >= 0:
        return c
    return 256 + <int>(w & 0xFF)


def count_codes(const uint8_t[::1] data, const int64_t[::1] offsets,
                const uint64_t[::1] vals, const uint8_t[::1] lens):
    """Compress ``data[offsets[i]:offsets[i+1]]`` with the table and count codes and pairs of
    consecutive codes within a string: ``(count1 uint32[512], count2 uint32[512 * 512])``."""
    cdef Table* t = <Table*>PyMem_Malloc(sizeof(Table))
    if t == NULL:
        raise MemoryError()
    try:
        _load_table(t, vals, lens)
        return _count(t, data, offsets)
    finally:
        PyMem_Free(t)


cdef _count(Table* t, const uint8_t[::1] data, const int64_t[::1] offsets):
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0 or offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("FSST sample offsets outside the data")
    cdef Py_ssize_t i
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError("FSST sample offsets go backwards")
    c1 = np.zeros(NCODES, dtype=np.uint32)
    c2 = np.zeros(NCODES * NCODES, dtype=np.uint32)
    cdef uint32_t[::1] count1 = c1
    cdef uint32_t[::1] count2 = c2
    if n == 0 or data.shape[0] == 0:
        return c1, c2
    cdef const uint8_t* base = &data[0]
    cdef const uint8_t* end = base + data.shape[0]
    cdef int64_t p, stop
    cdef int code, prev, used
    with nogil:
        for i in range(n):
            p = offsets[i]
            stop = offsets[i + 1]
            prev = -1
            while p < stop:
                code = _match(t, base + p, stop - p, end, &used)
                count1[code] += 1
                if prev >= 0:
                    count2[prev * NCODES + code] += 1
                prev = code
                p += used
    return c1, c2


def fsst_encode(const uint8_t[::1] data, const int64_t[::1] offsets,
                const uint64_t[::1] vals, const uint8_t[::1] lens):
    """Compress every string with the table: ``(out_offsets int64[n+1] from 0, out uint8)``.
    The output is at most twice the input (every byte escaped)."""
    cdef Table* t = <Table*>PyMem_Malloc(sizeof(Table))
    if t == NULL:
        raise MemoryError()
    try:
        _load_table(t, vals, lens)
        return _encode(t, data, offsets)
    finally:
        PyMem_Free(t)


cdef _encode(Table* t, const uint8_t[::1] data, const int64_t[::1] offsets):
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0 or offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("FSST input offsets outside the data")
    cdef Py_ssize_t i
    for i in range(n):
        if offsets[i + 1] < offsets[i]:
            raise ValueError("FSST input offsets go backwards")
    out_off = pool_empty(n + 1, np.int64)
    cdef int64_t[::1] oo = out_off
    cdef int64_t total = offsets[n] - offsets[0]
    out = pool_empty(2 * total + 8, np.uint8)
    cdef uint8_t* o = <uint8_t*>cnp.PyArray_DATA(out)
    cdef const uint8_t* base = &data[0] if data.shape[0] else NULL
    cdef const uint8_t* end = base + data.shape[0]
    cdef int64_t p, stop, pos = 0
    cdef int code, used
    oo[0] = 0
    with nogil:
        for i in range(n):
            p = offsets[i]
            stop = offsets[i + 1]
            while p < stop:
                code = _match(t, base + p, stop - p, end, &used)
                if code < 256:
                    o[pos] = <uint8_t>code
                    pos += 1
                else:
                    o[pos] = 255
                    o[pos + 1] = <uint8_t>(code - 256)
                    pos += 2
                p += used
            oo[i + 1] = pos
    return out_off, out[:pos]


def pair_candidates(const uint64_t[::1] cv, const int64_t[::1] cl, const uint32_t[::1] c1,
                    const uint32_t[::1] c2):
    """The candidate symbols of the next FSST table, ``(values, lengths, gains)``: every used
    code (``c1 > 0``, in code order, gain count * length), then every pair of consecutive
    codes seen (``c2[a * ncodes + b] > 0``, in that order) whose first symbol is shorter than
    8 bytes, joined and cut to 8 bytes (gain count * joined length). One pass over the pair
    counts instead of numpy's nonzero, gathers and masks over all of them."""
    cdef Py_ssize_t nc = cv.shape[0], a, b, k = 0, cap = 0
    if cl.shape[0] != nc or c1.shape[0] != nc or c2.shape[0] != nc * nc:
        raise ValueError("code tables of different sizes")
    for a in range(nc):
        cap += c1[a] > 0
    for a in range(nc * nc):
        cap += c2[a] > 0
    values = np.empty(cap, dtype=np.uint64)
    lengths = np.empty(cap, dtype=np.int64)
    gains = np.empty(cap, dtype=np.int64)
    cdef uint64_t[::1] v = values
    cdef int64_t[::1] ln = lengths
    cdef int64_t[::1] g = gains
    cdef int64_t la, lb
    cdef uint32_t cnt
    with nogil:
        for a in range(nc):
            if c1[a]:
                v[k] = cv[a]
                ln[k] = cl[a]
                g[k] = <int64_t>c1[a] * cl[a]
                k += 1
        for a in range(nc):
            la = cl[a]
            if la >= 8:
                continue
            for b in range(nc):
                cnt = c2[a * nc + b]
                if not cnt:
                    continue
                lb = min(cl[b], 8 - la)
                v[k] = cv[a] | ((cv[b] & _mask(<int>lb)) << (la * 8))
                ln[k] = la + lb
                g[k] = <int64_t>cnt * (la + lb)
                k += 1
    return values[:k], lengths[:k], gains[:k]
