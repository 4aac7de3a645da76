# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""FSST string decompression (Lance 2.1/2.2 ``Fsst`` encoding).

Each compressed string is a sequence of codes: a code c < 255 stands for symbol c (1 to 8
bytes), code 255 escapes the next byte, which is copied literally. Decoding runs two passes
without the GIL: the first sizes every output string exactly (and checks every code and that
no escape is cut off), the second writes each symbol as one unaligned 8-byte store into an
output with 8 bytes of slack.
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.string cimport memcpy

cnp.import_array()


cdef Py_ssize_t _decode_range(const uint8_t* data, const int64_t* offsets, Py_ssize_t start,
                              Py_ssize_t n, const uint64_t* symbols, const uint8_t* lens,
                              uint8_t* out, int64_t cap, int64_t* out_offsets,
                              int* bad) noexcept nogil:
    """Decode strings ``start``.. while the output surely fits in ``cap`` bytes (each code
    writes at most 8 bytes); returns the first string not decoded (n when done). Sets ``bad``
    on an unknown code or a cut-off escape."""
    cdef Py_ssize_t i, p, end
    cdef int64_t pos = out_offsets[start]
    cdef uint8_t c
    for i in range(start, n):
        p = offsets[i]
        end = offsets[i + 1]
        if pos + 8 * (end - p) + 8 > cap:
            return i
        while p < end:
            c = data[p]
            if c != 255:
                if lens[c] == 0:
                    bad[0] = 1
                    return i
                memcpy(out + pos, &symbols[c], 8)
                pos += lens[c]
                p += 1
            else:
                if p + 1 >= end:
                    bad[0] = 1
                    return i
                out[pos] = data[p + 1]
                pos += 1
                p += 2
        out_offsets[i + 1] = pos
    return n


def fsst_decode(const uint8_t[::1] data, const int64_t[::1] offsets,
                const uint64_t[::1] symbols, const uint8_t[::1] lens):
    """Decompress the strings ``data[offsets[i]:offsets[i+1]]``.

    ``symbols``: 256 words, symbol c's bytes first (LE); ``lens``: 256 lengths, 0 for codes that
    are not symbols. Returns ``(out_offsets int64[n+1], out_data uint8, bad)`` where ``bad`` is
    -1 or the first string that does not decode (then the other results are meaningless).
    One pass: the output starts at 3x the input and grows (copying) only when a string might
    not fit, so nothing is allocated beyond 8x the input.
    """
    if symbols.shape[0] != 256 or lens.shape[0] != 256:
        raise ValueError("FSST tables must have 256 entries")
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("FSST strings need at least one offset")
    if offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("FSST offsets outside the data")
    cdef Py_ssize_t bad_at = -1, i
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                bad_at = i
                break
    if bad_at != -1:
        raise ValueError(f"FSST offsets go backwards at string {bad_at}")
    cdef cnp.ndarray out_off = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_off
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    cdef int64_t in_len = offsets[n] - offsets[0]
    cdef int64_t cap = 3 * in_len + 64
    cdef cnp.ndarray out = np.empty(cap, dtype=np.uint8)
    cdef uint8_t* optr = <uint8_t*>cnp.PyArray_DATA(out)
    cdef int bad = 0
    cdef Py_ssize_t done = 0
    cdef int64_t need
    oo[0] = 0
    while True:
        with nogil:
            done = _decode_range(src, &offsets[0], done, n, &symbols[0], &lens[0], optr, cap,
                                 &oo[0], &bad)
        if bad:
            return out_off, np.empty(0, dtype=np.uint8), done
        if done >= n:
            break
        need = oo[done] + 8 * (offsets[done + 1] - offsets[done]) + 8
        grown = np.empty(min(max(2 * cap, need), 8 * in_len + 64), dtype=np.uint8)
        grown[:oo[done]] = out[:oo[done]]
        out = grown
        cap = out.shape[0]
        optr = <uint8_t*>cnp.PyArray_DATA(out)
    return out_off, out[:oo[n]], -1
