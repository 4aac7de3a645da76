# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False, nonecheck=False, cdivision=True
"""k-means inner loops for short vectors (PQ sub-vectors), without the GIL.

For a handful of dimensions a matrix product is limited by writing its ``rows x k`` output,
so :func:`assign_small` finds each row's nearest centroid directly: ``|c|^2 - 2 x.c`` for all
centroids at once (centroids stored transposed, so the inner loop runs over contiguous
centroid values and vectorizes; the C loop in ``kmeans_simd.h`` runs as AVX2 where the CPU
has it), then the smallest. :func:`accumulate` adds rows into their
cluster's sum for the next means. :func:`pq_encode` codes every sub-vector of a block of rows
in one call (no copies of the strided sub-vectors, no Python per sub-vector). Callers check
shapes before calling.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport malloc, free


cdef extern from "index/vector/kmeans_simd.h":
    void lancefmt_assign_strided(const float *x, Py_ssize_t n, Py_ssize_t dim, Py_ssize_t ldx,
                                 const float *ct, const float *cnorm, Py_ssize_t k, float *acc,
                                 int64_t *labels, float *dists) nogil
    void lancefmt_assign_small(const float *x, Py_ssize_t n, Py_ssize_t dim, const float *ct,
                               const float *cnorm, Py_ssize_t k, float *acc, int64_t *labels,
                               float *dists) nogil


def assign_small(const float[:, ::1] x, const float[:, ::1] cT, const float[::1] cnorm,
                 int64_t[::1] labels, float[::1] dists):
    """Nearest centroid (squared L2) of every row of ``x``; ``cT`` is ``dim x k`` (the loop is
    C in ``kmeans_simd.h``: AVX2 when the CPU has it)."""
    cdef Py_ssize_t n = x.shape[0], dim = x.shape[1], k = cT.shape[1]
    cdef float* acc
    if cT.shape[0] != dim or cnorm.shape[0] != k or labels.shape[0] < n or dists.shape[0] < n:
        raise ValueError("k-means shapes differ")
    if k == 0:
        raise ValueError("no centroids")
    if n == 0:
        return
    acc = <float*>malloc(k * sizeof(float))
    if acc == NULL:
        raise MemoryError()
    with nogil:
        lancefmt_assign_small(&x[0, 0], n, dim, &cT[0, 0], &cnorm[0], k, acc, &labels[0], &dists[0])
    free(acc)


def accumulate(const float[:, ::1] x, const int64_t[::1] labels, double[:, ::1] sums,
               int64_t[::1] counts):
    """``sums[label] += row`` and ``counts[label] += 1`` for every row."""
    cdef Py_ssize_t n = x.shape[0], dim = x.shape[1], k = sums.shape[0], i, j
    cdef int64_t lab
    if labels.shape[0] < n or sums.shape[1] != dim or counts.shape[0] != k:
        raise ValueError("k-means shapes differ")
    with nogil:
        for i in range(n):
            lab = labels[i]
            if lab < 0 or lab >= k:
                continue
            counts[lab] += 1
            for j in range(dim):
                sums[lab, j] += x[i, j]


def update_min_dist(const float[:, ::1] x, const float[::1] c, double[::1] d2):
    """``d2[i] = min(d2[i], |x[i] - c|^2)`` (k-means++ seeding), summed in 4 lanes (4
    independent chains instead of one: the seeding is latency-bound)."""
    cdef Py_ssize_t n = x.shape[0], dim = x.shape[1], i, j, body = dim - dim % 4
    cdef double acc, v0, v1, v2, v3, a0, a1, a2, a3
    if c.shape[0] != dim or d2.shape[0] < n:
        raise ValueError("k-means shapes differ")
    with nogil:
        for i in range(n):
            a0 = 0.0
            a1 = 0.0
            a2 = 0.0
            a3 = 0.0
            j = 0
            while j < body:
                v0 = <double>x[i, j] - <double>c[j]
                v1 = <double>x[i, j + 1] - <double>c[j + 1]
                v2 = <double>x[i, j + 2] - <double>c[j + 2]
                v3 = <double>x[i, j + 3] - <double>c[j + 3]
                a0 += v0 * v0
                a1 += v1 * v1
                a2 += v2 * v2
                a3 += v3 * v3
                j += 4
            acc = (a0 + a1) + (a2 + a3)
            for j in range(body, dim):
                v0 = <double>x[i, j] - <double>c[j]
                acc += v0 * v0
            if acc < d2[i]:
                d2[i] = acc


# rows per pass over the sub-vectors: their floats stay in cache across the m codebooks
DEF ENCODE_ROWS = 256


def pq_encode(const float[:, ::1] x, const float[:, :, ::1] cT, const float[:, ::1] cnorm,
              uint8_t[:, ::1] out):
    """``out[i, j]``: the nearest of the ``k`` centroids of sub-vector ``j`` to row ``i``'s
    sub-vector ``j`` (squared L2); ``cT[j]`` is that codebook transposed (``sub x k``),
    ``cnorm[j]`` its squared norms; ``k <= 256``."""
    cdef Py_ssize_t n = x.shape[0], dim = x.shape[1], m = cT.shape[0], sub = cT.shape[1]
    cdef Py_ssize_t k = cT.shape[2], s, e, i, j
    cdef float* acc
    cdef int64_t* labels
    cdef float* dists
    if m * sub != dim or cnorm.shape[0] != m or cnorm.shape[1] != k or out.shape[0] < n or \
            out.shape[1] != m or k == 0 or k > 256:
        raise ValueError("PQ encoding shapes differ")
    if n == 0:
        return
    acc = <float*>malloc(k * sizeof(float))
    labels = <int64_t*>malloc(ENCODE_ROWS * sizeof(int64_t))
    dists = <float*>malloc(ENCODE_ROWS * sizeof(float))
    if acc == NULL or labels == NULL or dists == NULL:
        free(acc)
        free(labels)
        free(dists)
        raise MemoryError()
    with nogil:
        for s in range(0, n, ENCODE_ROWS):
            e = min(n, s + ENCODE_ROWS)
            for j in range(m):
                lancefmt_assign_strided(&x[s, j * sub], e - s, sub, dim, &cT[j, 0, 0], &cnorm[j, 0],
                                        k, acc, labels, dists)
                for i in range(e - s):
                    out[s + i, j] = <uint8_t>labels[i]
    free(acc)
    free(labels)
    free(dists)
