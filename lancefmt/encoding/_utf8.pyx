# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""UTF-8 validation of decoded string pages (Unicode 15, table 3-7: no overlongs, no
surrogates, nothing above U+10FFFF), so a corrupt page never becomes a string array that fails
``validate(full=True)``.

One ``nogil`` pass over the page's bytes, row by row (each row must be valid on its own, not
only the bytes as a whole), eight ASCII bytes at a time where it can.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

ctypedef fused offset_t:
    int32_t
    int64_t


cdef inline Py_ssize_t _bad_byte(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """-1 if ``p[0:n]`` is valid UTF-8, else the offset of the first bad sequence."""
    cdef Py_ssize_t i = 0
    cdef uint64_t word
    cdef uint8_t c, c1
    cdef int k, j
    while i < n:
        if i + 8 <= n:
            memcpy(&word, p + i, 8)
            if (word & 0x8080808080808080ULL) == 0:
                i += 8
                continue
        c = p[i]
        if c < 0x80:
            i += 1
            continue
        if 0xC2 <= c <= 0xDF:
            k = 1
        elif 0xE0 <= c <= 0xEF:
            k = 2
        elif 0xF0 <= c <= 0xF4:
            k = 3
        else:
            return i
        if i + k >= n:  # the sequence runs past the end
            return i
        c1 = p[i + 1]
        # second-byte ranges that rule out overlongs, surrogates and > U+10FFFF
        if c == 0xE0 and not (0xA0 <= c1 <= 0xBF):
            return i
        if c == 0xED and not (0x80 <= c1 <= 0x9F):
            return i
        if c == 0xF0 and not (0x90 <= c1 <= 0xBF):
            return i
        if c == 0xF4 and not (0x80 <= c1 <= 0x8F):
            return i
        for j in range(1, k + 1):
            if (p[i + j] & 0xC0) != 0x80:
                return i
        i += k + 1
    return -1


cdef Py_ssize_t _first_bad_row(const uint8_t* data, Py_ssize_t size,
                               const offset_t[::1] offsets) noexcept nogil:
    cdef Py_ssize_t n = offsets.shape[0] - 1
    cdef Py_ssize_t i, lo, hi
    for i in range(n):
        lo = offsets[i]
        hi = offsets[i + 1]
        if hi > lo and _bad_byte(data + lo, hi - lo) >= 0:
            return i
    return -1


def first_invalid_utf8_row(data, offsets) -> int:
    """-1 when every row ``data[offsets[i]:offsets[i+1]]`` is valid UTF-8, else the first bad
    row. ``offsets``: int32/int64 numpy array of ``n + 1`` entries, already checked to be
    monotonic and within ``data`` (the caller's offset decoder does that; checked again here
    for the first and last)."""
    cdef const uint8_t[::1] buf = memoryview(data).cast("B")
    cdef const int32_t[::1] o32
    cdef const int64_t[::1] o64
    cdef Py_ssize_t bad, size = buf.shape[0]
    cdef const uint8_t* ptr = &buf[0] if size else NULL
    if len(offsets) < 2:
        return -1
    if offsets[0] < 0 or offsets[len(offsets) - 1] > size or offsets[0] > offsets[len(offsets) - 1]:
        raise ValueError("offsets outside the data")
    if offsets[len(offsets) - 1] == offsets[0]:
        return -1
    if offsets.dtype.itemsize == 4:
        o32 = offsets
        with nogil:
            bad = _first_bad_row(ptr, size, o32)
    else:
        o64 = offsets
        with nogil:
            bad = _first_bad_row(ptr, size, o64)
    return bad
