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

/* Cephes' expf polynomial (~1 ulp), the moescope-wide exponential of the
 * vector kernels (core/vrows.c, the landscape kernel, the activations), on
 * a vector x already clamped to [-87, 88], for a float vector type VF: k =
 * round(x log2 e) by ROUND, then p(x - k ln 2) 2^k by SCALE(p, k). Every
 * vector form shares the polynomial, so they agree bit for bit: AVX-512
 * rounds and scales in one instruction each (VEXP_ROUND16, VEXP_SCALE16; they
 * need <immintrin.h> and the AVX-512 target), the others by float tricks
 * (VEXP_ROUND_ADD, VEXP_SCALE_BITS), with the same results (round to nearest
 * even; p 2^k exact, or rounded once where it is subnormal). */
#define VEXP_STEPS(VF, out, x, ROUND, SCALE)                                             \
    do {                                                                                 \
        VF k_ = ROUND((x) * 1.44269504088896341f);                                       \
        VF r_ = (x) - k_ * 0.693359375f + k_ * 2.12194440e-4f;                           \
        VF p_ = (VF){0} + 1.9875691500e-4f;                                              \
        p_ = p_ * r_ + 1.3981999507e-3f;                                                 \
        p_ = p_ * r_ + 8.3334519073e-3f;                                                 \
        p_ = p_ * r_ + 4.1665795894e-2f;                                                 \
        p_ = p_ * r_ + 1.6666665459e-1f;                                                 \
        p_ = p_ * r_ + 5.0000001201e-1f;                                                 \
        p_ = p_ * r_ * r_ + r_ + 1.0f;                                                   \
        (out) = SCALE(p_, k_);                                                           \
    } while (0)
#define VEXP_ROUND_ADD(v) (((v) + 12582912.0f) - 12582912.0f)
/* p 2^k through the exponent bits, VI the int vector type of p's */
#define VEXP_SCALE_BITS(VI, p, k) ((p) * (__typeof__(p))((__builtin_convertvector((k), VI) + 127) << 23))
#define VEXP_ROUND16(v)                                                                  \
    ((__typeof__(v))_mm512_roundscale_ps((__m512)(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC))
#define VEXP_SCALE16(p, k) ((__typeof__(p))_mm512_scalef_ps((__m512)(p), (__m512)(k)))

static inline float vexp1(float x) {
    vexp_f4 v = {x, x, x, x};
    return vexp4(v)[0];
}

static inline float vgelu_tanh1(float x) {
    vexp_f4 v = {x, x, x, x};
    return vgelu_tanh4(v)[0];
}

#endif
