/* vexp.h - exp(x) on 4 floats at once (one SSE register, GCC vector types), for
 * the loops that spend their time in libm's scalar expf: the attention softmax
 * and GPT-2's tanh GELU (gelu_new) over every hidden unit.
 *
 * exp(x) = 2^n e^r, n = round(x / ln 2), r = x - n ln 2 (ln 2 split in two, so r
 * is exact to float), e^r by its degree-6 Taylor polynomial on |r| <= ln2 / 2
 * (truncation below 2e-9 relative), 2^n put into the exponent bits. Inputs are
 * clamped to [-87, 88]: exp(-87) = 1.6e-38 (near the smallest normal; smaller
 * results come out as that, not as subnormals) and exp(88) = 1.65e38. Measured
 * against double exp over [-87, 88]: within 2 float ulp (tests/unit/test_kernels.c).
 *
 * The scalar forms run the same operations on lane 0, so a scalar and a vector
 * path give the same value bit for bit. */
#ifndef MS_VEXP_H
#define MS_VEXP_H

#include <stdint.h>

typedef float vexp_f4 __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t vexp_i4 __attribute__((vector_size(16), aligned(4), may_alias));

/* lanes of a where m is set, else of b */
static inline vexp_f4 vexp_select(vexp_i4 m, vexp_f4 a, vexp_f4 b) {
    vexp_i4 r = ((vexp_i4)a & m) | ((vexp_i4)b & ~m);
    return (vexp_f4)r;
}

static inline vexp_f4 vexp_splat(float c) { return (vexp_f4){c, c, c, c}; }

/* x finite */
static inline vexp_f4 vexp4(vexp_f4 x) {
    const vexp_f4 hi = vexp_splat(88.0f), lo = vexp_splat(-87.0f);
    x = vexp_select(x > hi, hi, x);
    x = vexp_select(x < lo, lo, x);
    vexp_f4 t = x * vexp_splat(1.44269504f);
    // round to nearest: add 0.5 with t's sign, then truncate
    vexp_i4 sign = (vexp_i4)t & (vexp_i4){INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
    vexp_f4 half = (vexp_f4)((vexp_i4)vexp_splat(0.5f) | sign);
    vexp_i4 n = __builtin_convertvector(t + half, vexp_i4);
    vexp_f4 nf = __builtin_convertvector(n, vexp_f4);
    vexp_f4 r = x - nf * vexp_splat(0.693145752f); // ln 2, high part (exact times n)
    r = r - nf * vexp_splat(1.42860677e-06f);      // ln 2, low part
    vexp_f4 p = vexp_splat(1.0f / 720.0f);
    p = p * r + vexp_splat(1.0f / 120.0f);
    p = p * r + vexp_splat(1.0f / 24.0f);
    p = p * r + vexp_splat(1.0f / 6.0f);
    p = p * r + vexp_splat(0.5f);
    p = p * r + vexp_splat(1.0f);
    p = p * r + vexp_splat(1.0f);
    vexp_i4 bits = (n + 127) << 23; // 2^n, n in [-126, 127]
    return p * (vexp_f4)bits;
}

/* GPT-2's gelu_new, 0.5 x (1 + tanh(u)) with u = sqrt(2/pi) (x + 0.044715 x^3),
 * written as x / (1 + exp(-2u)) (the same function: 1 + tanh(u) = 2 / (1 + e^-2u)) */
static inline vexp_f4 vgelu_tanh4(vexp_f4 x) {
    vexp_f4 u = vexp_splat(0.79788456080286536f) * (x + vexp_splat(0.044715f) * x * x * x);
    return x / (vexp_splat(1.0f) + vexp4(vexp_splat(-2.0f) * u));
}

static inline float vexp1(float x) {
    vexp_f4 v = {x, x, x, x};
    return vexp4(v)[0];
}

static inline float vgelu_tanh1(float x) {
    vexp_f4 v = {x, x, x, x};
    return vgelu_tanh4(v)[0];
}

#endif
