/* vexp.h - exp(x) on vectors of floats (GCC vector types): the one
 * exponential of moescope's vector loops (core/vrows.c, the landscape
 * kernel), Cephes' expf polynomial, within about 1 float ulp of exp over
 * [-87, 88] (tests/unit/test_vrows.c). Callers clamp x to [-87, 88] first:
 * exp(-87) = 1.6e-38 (near the smallest normal) and exp(88) = 1.65e38. */
#ifndef MS_VEXP_H
#define MS_VEXP_H

/* The polynomial on a vector x already clamped to [-87, 88], for a float
 * vector type VF: k = round(x log2 e) by ROUND, then p(x - k ln 2) 2^k by
 * SCALE(p, k). Every vector form shares the polynomial, so they agree bit for
 * bit: AVX-512
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

#endif
