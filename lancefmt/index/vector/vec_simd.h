/* Float32 L2 and dot products for graph building and searching (no particular summation order:
 * HNSW needs distances, not pylance's exact bits), with an AVX2/FMA build chosen at run time.
 */
#ifndef LANCEFMT_VEC_SIMD_H
#define LANCEFMT_VEC_SIMD_H

#include <stddef.h>

static float lancefmt_vec_base(const float *a, const float *b, ptrdiff_t dim, int dot) {
    float p[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float acc = 0.0f;
    const ptrdiff_t full = dim - dim % 8;
    for (ptrdiff_t i = 0; i < full; i += 8) {
        for (int j = 0; j < 8; j++) {
            if (dot) p[j] += a[i + j] * b[i + j];
            else { const float d = a[i + j] - b[i + j]; p[j] += d * d; }
        }
    }
    for (ptrdiff_t i = full; i < dim; i++) {
        if (dot) acc += a[i] * b[i];
        else { const float d = a[i] - b[i]; acc += d * d; }
    }
    for (int j = 0; j < 8; j++) acc += p[j];
    return dot ? 1.0f - acc : acc;
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#include <immintrin.h>

__attribute__((target("avx2,fma")))
static float lancefmt_vec_avx2(const float *a, const float *b, ptrdiff_t dim, int dot) {
    __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
    ptrdiff_t i = 0;
    for (; i + 16 <= dim; i += 16) {
        __m256 x0 = _mm256_loadu_ps(a + i), y0 = _mm256_loadu_ps(b + i);
        __m256 x1 = _mm256_loadu_ps(a + i + 8), y1 = _mm256_loadu_ps(b + i + 8);
        if (dot) {
            s0 = _mm256_fmadd_ps(x0, y0, s0);
            s1 = _mm256_fmadd_ps(x1, y1, s1);
        } else {
            __m256 d0 = _mm256_sub_ps(x0, y0), d1 = _mm256_sub_ps(x1, y1);
            s0 = _mm256_fmadd_ps(d0, d0, s0);
            s1 = _mm256_fmadd_ps(d1, d1, s1);
        }
    }
    for (; i + 8 <= dim; i += 8) {
        __m256 x0 = _mm256_loadu_ps(a + i), y0 = _mm256_loadu_ps(b + i);
        if (dot) s0 = _mm256_fmadd_ps(x0, y0, s0);
        else { __m256 d0 = _mm256_sub_ps(x0, y0); s0 = _mm256_fmadd_ps(d0, d0, s0); }
    }
    s0 = _mm256_add_ps(s0, s1);
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(s0), _mm256_extractf128_ps(s0, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_shuffle_ps(h, h, 0x55));
    float acc = _mm_cvtss_f32(h);
    for (; i < dim; i++) {
        if (dot) acc += a[i] * b[i];
        else { const float d = a[i] - b[i]; acc += d * d; }
    }
    return dot ? 1.0f - acc : acc;
}

/* Distances from q to the rows ids[0..n) of base (rows of dim): one call per expanded graph
 * node, the next rows prefetched while the current one is summed (graph walks miss the cache
 * on nearly every row). */
__attribute__((target("avx2,fma")))
static void lancefmt_vec_many_avx2(const float *q, const float *base, const unsigned *ids,
                                   ptrdiff_t n, ptrdiff_t dim, int dot, float *out) {
    const ptrdiff_t bytes = dim * (ptrdiff_t)sizeof(float);
    for (ptrdiff_t k = 0; k < n && k < 2; k++)
        for (ptrdiff_t o = 0; o < bytes; o += 64)
            __builtin_prefetch((const char *)(base + (ptrdiff_t)ids[k] * dim) + o);
    for (ptrdiff_t k = 0; k < n; k++) {
        if (k + 2 < n)
            for (ptrdiff_t o = 0; o < bytes; o += 64)
                __builtin_prefetch((const char *)(base + (ptrdiff_t)ids[k + 2] * dim) + o);
        out[k] = lancefmt_vec_avx2(q, base + (ptrdiff_t)ids[k] * dim, dim, dot);
    }
}
#endif

typedef float (*lancefmt_vec_fn)(const float *, const float *, ptrdiff_t, int);

static lancefmt_vec_fn lancefmt_vec_pick(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return lancefmt_vec_avx2;
#endif
    return lancefmt_vec_base;
}

static void lancefmt_vec_many_base(const float *q, const float *base, const unsigned *ids,
                                   ptrdiff_t n, ptrdiff_t dim, int dot, float *out) {
    for (ptrdiff_t k = 0; k < n; k++)
        out[k] = lancefmt_vec_base(q, base + (ptrdiff_t)ids[k] * dim, dim, dot);
}

typedef void (*lancefmt_vec_many_fn)(const float *, const float *, const unsigned *, ptrdiff_t,
                                     ptrdiff_t, int, float *);

static lancefmt_vec_many_fn lancefmt_vec_many_pick(void) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return lancefmt_vec_many_avx2;
#endif
    return lancefmt_vec_many_base;
}

#endif
