# cython: language_level=3
"""Lance's float32 lane sums, shared by the exact search (``_distance.pyx``) and the IVF
kernels (``_ivf.pyx``) so both sum in one order: see ``_distance.pyx``'s docstring."""


cdef inline float fma_f32(float a, float b, float c) noexcept nogil:
    # a*b is exact in double; one rounding of the sum to float (a fused multiply-add, bar
    # double rounding in rare halfway cases)
    return <float>(<double>a * <double>b + <double>c)


cdef inline float reduce8(const float* e) noexcept nogil:
    cdef float a0 = e[0] + e[4], a1 = e[1] + e[5], a2 = e[2] + e[6], a3 = e[3] + e[7]
    return (a0 + a2) + (a1 + a3)


cdef inline float short_f32(const float* x, const float* y, Py_ssize_t dim, bint l2) noexcept nogil:
    """pylance 14's float32 kernel for vectors of at most 16 values (see module docstring)."""
    cdef float acc[8]
    cdef float tail = 0.0, d, head = 0.0
    cdef Py_ssize_t i, j, full = dim - dim % 8
    for j in range(8):
        acc[j] = 0.0
    for i in range(0, full, 8):
        for j in range(8):
            if l2:
                d = x[i + j] - y[i + j]
                acc[j] = fma_f32(d, d, acc[j])
            else:
                acc[j] = fma_f32(x[i + j], y[i + j], acc[j])
    for i in range(full, dim):
        if l2:
            d = x[i] - y[i]
            tail += d * d
        else:
            tail += x[i] * y[i]
    if full:
        head = reduce8(acc)
    return head + tail


cdef inline float l2_f32(const float* x, const float* y, Py_ssize_t dim) noexcept nogil:
    cdef float sums[16]
    cdef float tail = 0.0, d, total = 0.0
    cdef Py_ssize_t i, j, full = dim - dim % 16
    if dim <= 16:
        return short_f32(x, y, dim, True)
    for j in range(16):
        sums[j] = 0.0
    for i in range(full, dim):
        d = x[i] - y[i]
        tail += d * d
    for i in range(0, full, 16):
        for j in range(16):
            d = x[i + j] - y[i + j]
            sums[j] += d * d
    for j in range(16):
        total += sums[j]
    return tail + total


cdef inline float dot_f32(const float* x, const float* y, Py_ssize_t dim) noexcept nogil:
    cdef float sums[16]
    cdef float tail = 0.0, total = 0.0
    cdef Py_ssize_t i, j, full = dim - dim % 16
    if dim <= 16:
        return short_f32(x, y, dim, False)
    for j in range(16):
        sums[j] = 0.0
    for i in range(full, dim):
        tail += x[i] * y[i]
    for i in range(0, full, 16):
        for j in range(16):
            sums[j] += x[i + j] * y[i + j]
    for j in range(16):
        total += sums[j]
    return tail + total
