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


cdef Py_ssize_t _sizes(const uint8_t* data, const int64_t* offsets, Py_ssize_t n,
                       const uint8_t* lens, int64_t* out_offsets) noexcept nogil:
    """Fill ``out_offsets`` (n + 1); -1 on success, else the index of the bad string."""
    cdef Py_ssize_t i, p, end
    cdef int64_t total = 0
    cdef uint8_t c
    out_offsets[0] = 0
    for i in range(n):
        p = offsets[i]
        end = offsets[i + 1]
        while p < end:
            c = data[p]
            if c == 255:
                if p + 1 >= end:
                    return i
                total += 1
                p += 2
            else:
                if lens[c] == 0:
                    return i
                total += lens[c]
                p += 1
        out_offsets[i + 1] = total
    return -1


cdef void _decode(const uint8_t* data, Py_ssize_t in_start, Py_ssize_t in_end,
                  const uint64_t* symbols, const uint8_t* lens, uint8_t* out) noexcept nogil:
    cdef Py_ssize_t p = in_start
    cdef uint8_t c
    while p < in_end:
        c = data[p]
        if c == 255:
            out[0] = data[p + 1]
            out += 1
            p += 2
        else:
            memcpy(out, &symbols[c], 8)
            out += lens[c]
            p += 1


def fsst_decode(const uint8_t[::1] data, const int64_t[::1] offsets,
                const uint64_t[::1] symbols, const uint8_t[::1] lens):
    """Decompress the strings ``data[offsets[i]:offsets[i+1]]``.

    ``symbols``: 256 words, symbol c's bytes first (LE); ``lens``: 256 lengths, 0 for codes that
    are not symbols. Returns ``(out_offsets int64[n+1], out_data uint8, bad)`` where ``bad`` is
    -1 or the first string that does not decode (then the other results are meaningless).
    Offsets must be checked by the caller to be monotonic and within ``data``.
    """
    if symbols.shape[0] != 256 or lens.shape[0] != 256:
        raise ValueError("FSST tables must have 256 entries")
    cdef Py_ssize_t n = offsets.shape[0] - 1
    if n < 0:
        raise ValueError("FSST strings need at least one offset")
    if offsets[0] < 0 or offsets[n] > data.shape[0]:
        raise ValueError("FSST offsets outside the data")
    cdef cnp.ndarray out_off = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] oo = out_off
    cdef Py_ssize_t bad = -1, i
    cdef const uint8_t* src = &data[0] if data.shape[0] else NULL
    with nogil:
        for i in range(n):
            if offsets[i + 1] < offsets[i]:
                bad = i
                break
    if bad != -1:
        raise ValueError(f"FSST offsets go backwards at string {bad}")
    with nogil:
        bad = _sizes(src, &offsets[0], n, &lens[0], &oo[0])
    if bad != -1:
        return out_off, np.empty(0, dtype=np.uint8), bad
    cdef int64_t total = oo[n]
    cdef cnp.ndarray out = np.empty(total + 8, dtype=np.uint8)
    cdef uint8_t[::1] ov = out
    with nogil:
        for i in range(n):
            _decode(src, offsets[i], offsets[i + 1], &symbols[0], &lens[0], &ov[0] + oo[i])
    return out_off, out[:total], -1
