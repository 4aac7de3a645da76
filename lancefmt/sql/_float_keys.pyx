# cython: language_level=3, boundscheck=False, wraparound=False
"""Order keys of floats in one pass (see :mod:`lancefmt.sql.float_order`): a float's bits with
the magnitude bits of negative numbers flipped, which sorts as IEEE 754 total order."""
from libc.stdint cimport int16_t, int32_t, int64_t

cdef int64_t MAG64 = 0x7FFFFFFFFFFFFFFF
cdef int32_t MAG32 = 0x7FFFFFFF
cdef int16_t MAG16 = 0x7FFF


def keys64(const int64_t[::1] bits, int64_t[::1] out):
    cdef Py_ssize_t i, n = bits.shape[0]
    cdef int64_t b
    with nogil:
        for i in range(n):
            b = bits[i]
            out[i] = b ^ ((b >> 63) & MAG64)


def keys32(const int32_t[::1] bits, int32_t[::1] out):
    cdef Py_ssize_t i, n = bits.shape[0]
    cdef int32_t b
    with nogil:
        for i in range(n):
            b = bits[i]
            out[i] = b ^ ((b >> 31) & MAG32)


def keys16(const int16_t[::1] bits, int16_t[::1] out):
    cdef Py_ssize_t i, n = bits.shape[0]
    cdef int16_t b
    with nogil:
        for i in range(n):
            b = bits[i]
            out[i] = <int16_t>(b ^ ((b >> 15) & MAG16))
