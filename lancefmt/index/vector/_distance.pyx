# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, nonecheck=False, cdivision=True
"""Distances from one query to many vectors, summed in the order Lance sums them.

Lance's kernels (``lance-linalg``) add per-lane partial sums: 16 lanes for float32, 8 for
float64, the tail (``dim % lanes`` values) first, then the lanes in order. Float32 vectors of
at most 16 values take another path in pylance 14 (observed): 8 fused multiply-add lanes,
reduced as an AVX register is ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)), then the tail. Adding in
those orders gives the same float32 values pylance reports for L2 and dot, so ties and the
order of results match its brute-force search. Cosine follows Lance's 16/8-lane split; uint8 sums are
exact integers. Each function fills ``out`` (one float32 per row of ``data``) without the GIL,
so fragment scans on several threads compute at once.
"""
import numpy as np
from libc.math cimport sqrtf, sqrt
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t

from ._lanes cimport dot_f32, l2_f32


cdef inline double l2_f64(const double* x, const double* y, Py_ssize_t dim) noexcept nogil:
    cdef double sums[8]
    cdef double tail = 0.0, d, total = 0.0
    cdef Py_ssize_t i, j, full = dim - dim % 8
    for j in range(8):
        sums[j] = 0.0
    for i in range(full, dim):
        d = x[i] - y[i]
        tail += d * d
    for i in range(0, full, 8):
        for j in range(8):
            d = x[i + j] - y[i + j]
            sums[j] += d * d
    for j in range(8):
        total += sums[j]
    return tail + total


cdef inline double dot_f64(const double* x, const double* y, Py_ssize_t dim) noexcept nogil:
    cdef double sums[8]
    cdef double tail = 0.0, total = 0.0
    cdef Py_ssize_t i, j, full = dim - dim % 8
    for j in range(8):
        sums[j] = 0.0
    for i in range(full, dim):
        tail += x[i] * y[i]
    for i in range(0, full, 8):
        for j in range(8):
            sums[j] += x[i + j] * y[i + j]
    for j in range(8):
        total += sums[j]
    return tail + total


cdef inline float cosine_f32(const float* x, float x_norm, const float* y, Py_ssize_t dim) noexcept nogil:
    """Lance's ``cosine_fast`` for float32: 16-lane, then 8-lane, then scalar tail."""
    cdef float yy16[16]
    cdef float xy16[16]
    cdef float yy8[8]
    cdef float xy8[8]
    cdef float yy = 0.0, xy = 0.0, s16 = 0.0, s8 = 0.0, t16 = 0.0, t8 = 0.0, tail_yy = 0.0, tail_xy = 0.0
    cdef Py_ssize_t i, j, full16 = dim - dim % 16, full8 = dim - dim % 8
    for j in range(16):
        yy16[j] = 0.0
        xy16[j] = 0.0
    for j in range(8):
        yy8[j] = 0.0
        xy8[j] = 0.0
    for i in range(0, full16, 16):
        for j in range(16):
            xy16[j] += x[i + j] * y[i + j]
            yy16[j] += y[i + j] * y[i + j]
    for i in range(full16, full8, 8):
        for j in range(8):
            xy8[j] += x[i + j] * y[i + j]
            yy8[j] += y[i + j] * y[i + j]
    for j in range(16):
        s16 += yy16[j]
        t16 += xy16[j]
    for j in range(8):
        s8 += yy8[j]
        t8 += xy8[j]
    for i in range(full8, dim):
        tail_yy += y[i] * y[i]
        tail_xy += x[i] * y[i]
    yy = s16 + s8 + tail_yy
    xy = t16 + t8 + tail_xy
    return 1.0 - xy / x_norm / sqrtf(yy)


cdef inline double cosine_f64(const double* x, double x_norm, const double* y, Py_ssize_t dim) noexcept nogil:
    cdef double xy = dot_f64(x, y, dim)
    cdef double yy = dot_f64(y, y, dim)
    return 1.0 - xy / x_norm / sqrt(yy)


def norm_f32(const float[::1] x):
    """Lance's float32 L2 norm (16 lanes)."""
    return sqrtf(dot_f32(&x[0], &x[0], x.shape[0]))


def fill_f32(const float[::1] q, const float[:, ::1] data, float[::1] out, int kind):
    """kind: 0 l2, 1 cosine, 2 dot."""
    cdef Py_ssize_t n = data.shape[0], dim = data.shape[1], r
    cdef float qn
    if q.shape[0] != dim or out.shape[0] < n:
        raise ValueError("query and data dimensions differ")
    if n == 0 or dim == 0:
        return
    with nogil:
        if kind == 0:
            for r in range(n):
                out[r] = l2_f32(&q[0], &data[r, 0], dim)
        elif kind == 2:
            for r in range(n):
                out[r] = 1.0 - dot_f32(&data[r, 0], &q[0], dim)
        else:
            qn = sqrtf(dot_f32(&q[0], &q[0], dim))
            for r in range(n):
                out[r] = cosine_f32(&q[0], qn, &data[r, 0], dim)


def fill_f64(const double[::1] q, const double[:, ::1] data, float[::1] out, int kind):
    cdef Py_ssize_t n = data.shape[0], dim = data.shape[1], r
    cdef double qn
    if q.shape[0] != dim or out.shape[0] < n:
        raise ValueError("query and data dimensions differ")
    if n == 0 or dim == 0:
        return
    with nogil:
        if kind == 0:
            for r in range(n):
                out[r] = <float>l2_f64(&q[0], &data[r, 0], dim)
        elif kind == 2:
            for r in range(n):
                out[r] = 1.0 - <float>dot_f64(&data[r, 0], &q[0], dim)
        else:
            qn = sqrt(dot_f64(&q[0], &q[0], dim))
            for r in range(n):
                out[r] = <float>cosine_f64(&q[0], qn, &data[r, 0], dim)


cdef inline int popcount8(uint8_t v) noexcept nogil:
    cdef int c = 0
    while v:
        v &= v - 1
        c += 1
    return c


def fill_u8(const uint8_t[::1] q, const uint8_t[:, ::1] data, float[::1] out, int kind):
    """kind: 0 l2 (squared differences), 2 dot (1 - dot), 3 hamming (differing bits)."""
    cdef Py_ssize_t n = data.shape[0], dim = data.shape[1], r, i
    cdef uint32_t acc
    cdef int d
    cdef int table[256]
    if q.shape[0] != dim or out.shape[0] < n:
        raise ValueError("query and data dimensions differ")
    for i in range(256):
        table[i] = popcount8(<uint8_t>i)
    with nogil:
        for r in range(n):
            acc = 0
            if kind == 3:
                for i in range(dim):
                    acc += table[data[r, i] ^ q[i]]
                out[r] = <float>acc
            elif kind == 0:
                for i in range(dim):
                    d = <int>data[r, i] - <int>q[i]
                    acc += <uint32_t>(d * d)
                out[r] = <float>acc
            else:
                for i in range(dim):
                    acc += <uint32_t>data[r, i] * <uint32_t>q[i]
                out[r] = 1.0 - <float>acc


def min_per_list(const float[::1] dist, const int64_t[::1] offsets, float[::1] out, uint8_t[::1] empty):
    """For multivector rows: the smallest of each row's vector distances (``offsets`` has one
    more entry than ``out``); ``empty[r]`` set where a row holds no vector."""
    cdef Py_ssize_t rows = out.shape[0], r, i
    cdef int64_t lo, hi
    cdef float best
    if offsets.shape[0] != rows + 1:
        raise ValueError("offsets and rows differ")
    if rows and (offsets[0] < 0 or offsets[rows] > dist.shape[0]):
        raise ValueError("offsets past the distances")
    with nogil:
        for r in range(rows):
            lo = offsets[r]
            hi = offsets[r + 1]
            if hi <= lo or lo < 0 or hi > dist.shape[0]:
                empty[r] = 1
                continue
            best = dist[lo]
            for i in range(lo + 1, hi):
                if dist[i] < best:
                    best = dist[i]
            out[r] += best
