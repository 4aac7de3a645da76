/* PQ distance tables for sub-vectors of at most 16 values, summed in pylance 14's order.
 *
 * For every centroid c of sub-vector j: lane l (l < 8) holds the product (or squared
 * difference) of value l, then fused-multiply-adds value l + 8; the lanes reduce as an AVX
 * register does, ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7)); values past the last full group of 8
 * are added one by one. All centroids of a sub-vector are done together (the codebook is
 * stored transposed), so the loops run over contiguous centroid values. The AVX2/FMA build
 * (chosen at run time) uses the CPU's fused multiply-add; the baseline build emulates it in
 * double precision (exact but for rare double roundings).
 */
#ifndef LANCEFMT_PQ_SIMD_H
#define LANCEFMT_PQ_SIMD_H

#include <stddef.h>
#include <stdint.h>

#define LANCEFMT_PQ_TABLE_BODY(FMA)                                                       \
    const ptrdiff_t sub = dim / m, full = sub - sub % 8;                                 \
    float *__restrict__ lanes = work;                                                     \
    float *__restrict__ tail = work + 8 * ncent;                                          \
    for (ptrdiff_t j = 0; j < m; j++) {                                                   \
        for (ptrdiff_t c = 0; c < ncent; c++) tail[c] = 0.0f;                             \
        for (ptrdiff_t i = 0; i < sub; i++) {                                             \
            const float x = query[j * sub + i];                                           \
            const float *__restrict__ row = codebook_t + (j * sub + i) * ncent;           \
            float *__restrict__ lane = lanes + (i % 8) * ncent;                           \
            if (i < 8 && i < full) {                                                      \
                if (dot) { for (ptrdiff_t c = 0; c < ncent; c++) lane[c] = x * row[c]; }  \
                else {                                                                    \
                    for (ptrdiff_t c = 0; c < ncent; c++) {                               \
                        const float d = x - row[c];                                       \
                        lane[c] = d * d;                                                  \
                    }                                                                     \
                }                                                                         \
            } else if (i < full) {                                                        \
                if (dot) { for (ptrdiff_t c = 0; c < ncent; c++) lane[c] = FMA(x, row[c], lane[c]); } \
                else {                                                                    \
                    for (ptrdiff_t c = 0; c < ncent; c++) {                               \
                        const float d = x - row[c];                                       \
                        lane[c] = FMA(d, d, lane[c]);                                     \
                    }                                                                     \
                }                                                                         \
            } else if (dot) {                                                             \
                for (ptrdiff_t c = 0; c < ncent; c++) tail[c] += x * row[c];              \
            } else {                                                                      \
                for (ptrdiff_t c = 0; c < ncent; c++) {                                   \
                    const float d = x - row[c];                                           \
                    tail[c] += d * d;                                                     \
                }                                                                         \
            }                                                                             \
        }                                                                                 \
        float *__restrict__ o = out + j * ncent;                                          \
        if (full) {                                                                       \
            for (ptrdiff_t c = 0; c < ncent; c++) {                                       \
                const float a0 = lanes[c] + lanes[4 * ncent + c];                         \
                const float a1 = lanes[ncent + c] + lanes[5 * ncent + c];                 \
                const float a2 = lanes[2 * ncent + c] + lanes[6 * ncent + c];             \
                const float a3 = lanes[3 * ncent + c] + lanes[7 * ncent + c];             \
                const float v = ((a0 + a2) + (a1 + a3)) + tail[c];                        \
                o[c] = dot ? 1.0f - v : v;                                                \
            }                                                                             \
        } else {                                                                          \
            for (ptrdiff_t c = 0; c < ncent; c++) {                                       \
                const float v = 0.0f + tail[c];                                           \
                o[c] = dot ? 1.0f - v : v;                                                \
            }                                                                             \
        }                                                                                 \
    }

static inline float lancefmt_fma_emulated(float a, float b, float c) {
    return (float)((double)a * (double)b + (double)c);
}

static void lancefmt_pq_table_base(const float *__restrict__ query, ptrdiff_t dim,
                                   const float *__restrict__ codebook_t, ptrdiff_t m,
                                   ptrdiff_t ncent, int dot, float *__restrict__ out,
                                   float *__restrict__ work) {
    LANCEFMT_PQ_TABLE_BODY(lancefmt_fma_emulated)
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx2,fma")))
static inline float lancefmt_fma_hw(float a, float b, float c) {
    return __builtin_fmaf(a, b, c);
}

__attribute__((target("avx2,fma")))
static void lancefmt_pq_table_avx2(const float *__restrict__ query, ptrdiff_t dim,
                                   const float *__restrict__ codebook_t, ptrdiff_t m,
                                   ptrdiff_t ncent, int dot, float *__restrict__ out,
                                   float *__restrict__ work) {
    LANCEFMT_PQ_TABLE_BODY(lancefmt_fma_hw)
}

static int lancefmt_pq_has_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    }
    return known;
}
#endif

/* work: 9 * ncent floats */
static void lancefmt_pq_table(const float *query, ptrdiff_t dim, const float *codebook_t,
                              ptrdiff_t m, ptrdiff_t ncent, int dot, float *out, float *work) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (lancefmt_pq_has_avx2()) {
        lancefmt_pq_table_avx2(query, dim, codebook_t, m, ncent, dot, out, work);
        return;
    }
#endif
    lancefmt_pq_table_base(query, dim, codebook_t, m, ncent, dot, out, work);
}

#endif
