/* RaBitQ extended-code levels of one row (see _ivf.pyx best_levels_row): over `steps`
 * scales t in [0.5, 2^ex_bits], the magnitudes k = min(floor(t * u), top) whose codes k + 0.5
 * have the largest cosine with the row u; sums in 8 float lanes, then the lanes in order.
 * The AVX2 build (chosen at run time) runs the same float operations in wider registers, so
 * both builds give the same levels.
 */
#ifndef LANCEFMT_RQ_SIMD_H
#define LANCEFMT_RQ_SIMD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#define LANCEFMT_RQ_LEVELS_BODY                                                           \
    const int top = (1 << ex_bits) - 1;                                                   \
    const float topf = (float)top;                                                        \
    const ptrdiff_t body = dim - dim % 8;                                                 \
    float best_t = 0.5f;                                                                  \
    double best = -1.0;                                                                   \
    for (int s = 0; s < steps; s++) {                                                     \
        const float t = (float)(0.5 + (top + 0.5) * s / (steps - 1));                     \
        float ipl[8] = {0, 0, 0, 0, 0, 0, 0, 0}, nnl[8] = {0, 0, 0, 0, 0, 0, 0, 0};       \
        for (ptrdiff_t j = 0; j < body; j += 8) {                                         \
            for (int l = 0; l < 8; l++) {                                                 \
                float uu = (float)(int)(t * row[j + l]);                                  \
                uu = (uu < topf ? uu : topf) + 0.5f;                                      \
                ipl[l] += uu * row[j + l];                                                \
                nnl[l] += uu * uu;                                                        \
            }                                                                             \
        }                                                                                 \
        float ip = 0, nn = 0;                                                             \
        for (int l = 0; l < 8; l++) { ip += ipl[l]; nn += nnl[l]; }                       \
        for (ptrdiff_t j = body; j < dim; j++) {                                          \
            float uu = (float)(int)(t * row[j]);                                          \
            uu = (uu < topf ? uu : topf) + 0.5f;                                          \
            ip += uu * row[j];                                                            \
            nn += uu * uu;                                                                \
        }                                                                                 \
        const double cosv = ip / sqrt(nn);                                                \
        if (cosv > best) { best = cosv; best_t = t; }                                     \
    }                                                                                     \
    for (ptrdiff_t j = 0; j < dim; j++) {                                                 \
        const int k = (int)(best_t * row[j]);                                             \
        out[j] = (uint8_t)(k > top ? top : k);                                            \
    }

static void lancefmt_rq_levels_base(const float *__restrict__ row, ptrdiff_t dim, int ex_bits,
                                    int steps, uint8_t *__restrict__ out) {
    LANCEFMT_RQ_LEVELS_BODY
}

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
__attribute__((target("avx2")))
static void lancefmt_rq_levels_avx2(const float *__restrict__ row, ptrdiff_t dim, int ex_bits,
                                    int steps, uint8_t *__restrict__ out) {
    LANCEFMT_RQ_LEVELS_BODY
}

static int lancefmt_rq_has_avx2(void) {
    static int known = -1;
    if (known < 0) {
        __builtin_cpu_init();
        known = __builtin_cpu_supports("avx2");
    }
    return known;
}
#endif

static void lancefmt_rq_levels(const float *row, ptrdiff_t dim, int ex_bits, int steps,
                               uint8_t *out) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    if (lancefmt_rq_has_avx2()) {
        lancefmt_rq_levels_avx2(row, dim, ex_bits, steps, out);
        return;
    }
#endif
    lancefmt_rq_levels_base(row, dim, ex_bits, steps, out);
}

#endif
