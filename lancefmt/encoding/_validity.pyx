# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Bitmap kernels: Arrow validity and boolean bitmaps (LSB-first), as Lance stores them.

Arrow arrays that were sliced keep their bitmaps at a bit offset; Lance pages always start a
bitmap at bit 0. ``copy_bitmap`` re-aligns them with a byte-wise shift (no per-bit Python).
"""
import numpy as np

cimport numpy as cnp
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

cnp.import_array()


def copy_bitmap(buf, Py_ssize_t bit_offset, Py_ssize_t n):
    """The ``n`` bits of ``buf`` starting at ``bit_offset``, as a fresh bitmap starting at bit 0.

    Bits past ``n`` in the last byte are zero. ``buf`` is any object with the buffer protocol.
    """
    cdef const uint8_t[::1] src = memoryview(buf).cast("B")
    cdef Py_ssize_t nbytes = (n + 7) >> 3
    cdef cnp.ndarray out = np.zeros(nbytes, dtype=np.uint8)
    cdef uint8_t[::1] dst = out
    cdef Py_ssize_t i, byte0 = bit_offset >> 3
    cdef int shift = bit_offset & 7
    cdef Py_ssize_t avail
    if n < 0 or bit_offset < 0:
        raise ValueError("negative bitmap range")
    if n == 0:
        return out
    if src.shape[0] * 8 < bit_offset + n:
        raise ValueError("bitmap shorter than the requested range")
    avail = src.shape[0] - byte0
    with nogil:
        if shift == 0:
            memcpy(&dst[0], &src[byte0], nbytes)
        else:
            for i in range(nbytes):
                dst[i] = src[byte0 + i] >> shift
                if i + 1 < avail:
                    dst[i] |= <uint8_t>(src[byte0 + i + 1] << (8 - shift))
        if n & 7:
            dst[nbytes - 1] &= <uint8_t>((1 << (n & 7)) - 1)
    return out
