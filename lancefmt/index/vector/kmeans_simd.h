/* Nearest centroid of short vectors (PQ sub-vectors), with an AVX2/FMA build chosen at run time.
 *
 * acc[c] = |c|^2 - 2 x.c over all k centroids (centroids stored transposed: dim rows of k
 * values, so the inner loop is a contiguous axpy), then the smallest. The same C source is
 * compiled twice: for the baseline x86-64 (SSE2) and, with GCC's target attribute, for AVX2 +
 * FMA; lancefmt_assign_small() picks one per call from the CPU's features. Results are for
 * clustering only (fused multiply-adds round differently; nothing here must match pylance
 * bit for bit).
 */
#ifndef LANCEFMT_KMEANS_SIMD_H
#define LANCEFMT_KMEANS_SIMD_H

#include <stdint.h>
#include <stddef.h>

#define LANCEFMT_ASSIGN_BODY                                                        \
    for (ptrdiff_t i = 0; i < n; i++) {                                             \
        const float *xi = x + i * ldx;                                              \
        float xn = 0.0f;                                                            \
        for (ptrdiff_t c = 0; c < k; c++) acc[c] = cnorm[c];                        \
        for (ptrdiff_t j = 0; j < dim; j++) {                                       \
            const float v = xi[j];                                                  \
            const float m2 = -2.0f * v;                                             \
            const float *row = ct + j * k;                                          \
            xn += v * v;                                                            \
            for (ptrdiff_t c = 0; c < k; c++) acc[c] += m2 * row[c];                \
        }                                                                           \
        float best = acc[0];                                                        \
        int64_t arg = 0;                                                            \
        for (ptrdiff_t c = 1; c < k; c++) {                                         \
            if (acc[c] < best) { best = acc[c]; arg = c; }                          \
        }                                                                           \
        labels[i] = arg;                                                            \
        best += xn;                                                                 \
        dists[i] = best > 0.0f ? best : 0.0f;                                       \
    }

static void lancefmt_assign_base(const float *__restrict__ x, ptrdiff_t n, ptrdiff_t dim, ptrdiff_t ldx,
                                 const float *__restrict__ ct, const float *__restrict__ cnorm,
                                 ptrdiff_t k, float *__restrict__ acc,
                                 int64_t *__restrict__ labels, float *__restrict__ dists) {
    LANCEFMT_ASSIGN_BODY
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

__attribute__((target("avx2,fma")))
static void lancefmt_assign_avx2(const float *__restrict__ x, ptrdiff_t n, ptrdiff_t dim, ptrdiff_t ldx,
                                 const float *__restrict__ ct, const float *__restrict__ cnorm,
                                 ptrdiff_t k, float *__restrict__ acc,
                                 int64_t *__restrict__ labels, float *__restrict__ dists) {
    const ptrdiff_t k8 = k - k % 8;
    const ptrdiff_t k64 = k - k % 64;
    for (ptrdiff_t i = 0; i < n; i++) {
        const float *xi = x + i * ldx;
        float xn = 0.0f;
        for (ptrdiff_t j = 0; j < dim; j++) xn += xi[j] * xi[j];
        /* 64 centroids at a time in eight registers, over all dimensions */
        for (ptrdiff_t c0 = 0; c0 < k64; c0 += 64) {
            __m256 a0 = _mm256_loadu_ps(cnorm + c0), a1 = _mm256_loadu_ps(cnorm + c0 + 8);
            __m256 a2 = _mm256_loadu_ps(cnorm + c0 + 16), a3 = _mm256_loadu_ps(cnorm + c0 + 24);
            __m256 a4 = _mm256_loadu_ps(cnorm + c0 + 32), a5 = _mm256_loadu_ps(cnorm + c0 + 40);
            __m256 a6 = _mm256_loadu_ps(cnorm + c0 + 48), a7 = _mm256_loadu_ps(cnorm + c0 + 56);
            for (ptrdiff_t j = 0; j < dim; j++) {
                const float *row = ct + j * k + c0;
                const __m256 m2 = _mm256_set1_ps(-2.0f * xi[j]);
                a0 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row), a0);
                a1 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 8), a1);
                a2 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 16), a2);
                a3 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 24), a3);
                a4 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 32), a4);
                a5 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 40), a5);
                a6 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 48), a6);
                a7 = _mm256_fmadd_ps(m2, _mm256_loadu_ps(row + 56), a7);
            }
            _mm256_storeu_ps(acc + c0, a0); _mm256_storeu_ps(acc + c0 + 8, a1);
            _mm256_storeu_ps(acc + c0 + 16, a2); _mm256_storeu_ps(acc + c0 + 24, a3);
            _mm256_storeu_ps(acc + c0 + 32, a4); _mm256_storeu_ps(acc + c0 + 40, a5);
            _mm256_storeu_ps(acc + c0 + 48, a6); _mm256_storeu_ps(acc + c0 + 56, a7);
        }
        for (ptrdiff_t c = k64; c < k; c++) {
            float a = cnorm[c];
            for (ptrdiff_t j = 0; j < dim; j++) a += -2.0f * xi[j] * ct[j * k + c];
            acc[c] = a;
        }
        float best = acc[0];
        if (k8) {
            __m256 vmin = _mm256_loadu_ps(acc);
            for (ptrdiff_t c = 8; c < k8; c += 8) vmin = _mm256_min_ps(vmin, _mm256_loadu_ps(acc + c));
            float lanes[8];
            _mm256_storeu_ps(lanes, vmin);
            best = lanes[0];
            for (int l = 1; l < 8; l++) if (lanes[l] < best) best = lanes[l];
        }
        for (ptrdiff_t c = k8; c < k; c++) if (acc[c] < best) best = acc[c];
        int64_t arg = 0;
        for (ptrdiff_t c = 0; c < k; c++) {
            if (acc[c] == best) { arg = c; break; }
        }
        labels[i] = arg;
        best += xn;
        dists[i] = best > 0.0f ? best : 0.0f;
    }
}

static int lancefmt_has_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
}
#endif

/* rows of x lie ldx floats apart (a sub-vector of longer rows: ldx > dim) */
static void lancefmt_assign_strided(const float *x, ptrdiff_t n, ptrdiff_t dim, ptrdiff_t ldx,
                                    const float *ct, const float *cnorm, ptrdiff_t k, float *acc,
                                    int64_t *labels, float *dists) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (lancefmt_has_avx2()) {
        lancefmt_assign_avx2(x, n, dim, ldx, ct, cnorm, k, acc, labels, dists);
        return;
    }
#endif
    lancefmt_assign_base(x, n, dim, ldx, ct, cnorm, k, acc, labels, dists);
}

static void lancefmt_assign_small(const float *x, ptrdiff_t n, ptrdiff_t dim, const float *ct,
                                  const float *cnorm, ptrdiff_t k, float *acc, int64_t *labels,
                                  float *dists) {
    lancefmt_assign_strided(x, n, dim, dim, ct, cnorm, k, acc, labels, dists);
}

#endif
