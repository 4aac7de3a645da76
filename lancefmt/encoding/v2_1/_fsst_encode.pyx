# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""FSST string compression: the symbol-table builder's counting pass and the encoder.

A table holds up to 255 symbols of 1 to 8 bytes (code = index, code 255 escapes one literal
byte). Matching is greedy longest-first: symbols of 2+ bytes are chained per first two bytes,
longest first, and single-byte symbols sit in a 256-entry table. The builder (see
:mod:`.fsst_encoder`) repeatedly compresses a sample with the current table, counting how
often each code and each pair of consecutive codes occurs (:func:`count_codes`), and keeps the
candidates (codes and concatenated pairs) of the largest gain = count * length, as in the FSST
paper (Boncz, Neumann, Leis, VLDB 2020). Both passes run without the GIL.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int16_t, int64_t, uint8_t, uint32_t, uint64_t
from cpython.mem cimport PyMem_Free, PyMem_Malloc
from libc.string cimport memcpy

cnp.import_array()

cdef enum:
    NCODES = 512     # 0..254 symbols, 256 + b: the literal byte b


cdef struct Table:
    uint64_t vals[255]
    uint8_t lens[255]
    int nsym
    int16_t single[256]
    int16_t head[65536]
    int16_t nxt[255]


cdef inline uint64_t _mask(int length) noexcept nogil:
    if length >= 8:
        return 0xFFFFFFFFFFFFFFFF
    return ((<uint64_t>1) << (8 * length)) - 1


cdef int _load_table(Table* t, const uint64_t[::1] vals, const uint8_t[::1] lens) except -1:
    cdef int n = vals.shape[0]
    cdef int i, length
    cdef int key
    if n > 255 or lens.shape[0] != n:
        raise ValueError("an FSST table holds at most 255 symbols, one length each")
    t.nsym = n
    for i in range(256):
        t.single[i] = -1
    for i in range(65536):
        t.head[i] = -1
    for i in range(n):
        if lens[i] < 1 or lens[i] > 8:
            raise ValueError("FSST symbol lengths are 1..8")
        t.vals[i] = vals[i] & _mask(lens[i])
        t.lens[i] = lens[i]
        t.nxt[i] = -1
    # chains longest first: insert by ascending length, each at the head
    for length in range(2, 9):
        for i in range(n):
            if t.lens[i] == length:
                key = <int>(t.vals[i] & 0xFFFF)
                t.nxt[i] = t.head[key]
                t.head[key] = i
    for i in range(n):
        if t.lens[i] == 1 and t.single[t.vals[i] & 0xFF] == -1:
            t.single[t.vals[i] & 0xFF] = i
    return 0


cdef inline int _match(const Table* t, const uint8_t* p, int64_t remaining,
                       const uint8_t* buf_end, int* used) noexcept nogil:
    """The code of the longest symbol at ``p`` (256 + byte when only an escape fits)."""
    cdef uint64_t w = 0
    cdef int c, length
    if p + 8 <= buf_end:
        memcpy(&w, p, 8)
    else:
        memcpy(&w, p, buf_end - p)
    if remaining >= 2:
        c = t.head[w & 0xFFFF]
        while c >= 0:
            length = t.lens[c]
            if length <= remaining and (w & _mask(length)) == t.vals[c]:
                used[0] = length
                return c
            c = t.nxt[c]
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
    out_off = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_off
    cdef int64_t total = offsets[n] - offsets[0]
    out = np.empty(2 * total + 8, dtype=np.uint8)
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
