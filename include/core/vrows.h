/* vrows.h - loops over rows of float32 that the evaluators spend their time in
 * outside the BLAS (bias adds, activations, softmax, log-sum-exp,
 * LayerNorm), each compiled for AVX-512, AVX2+FMA and plain SSE and run in
 * the widest form the CPU runs (core/simd.h).
 *
 * A row runs in steps of 16 values whatever the form (one AVX-512 register,
 * two AVX2 ones, four SSE ones), its tail through the same lanes, and every
 * sum over a row is kept in 16 partial sums, combined in lane order: so a
 * value never depends on where it sits in a row, and AVX-512 and AVX2 (FMA
 * both) give the same bits; the plain form agrees to float rounding. The
 * exponential is Cephes' polynomial (core/vexp.h's VEXP_STEPS, ~1 ulp). */
#ifndef MS_VROWS_H
#define MS_VROWS_H

#include <stddef.h>

#include "core/simd.h"

/* One form's loops. */
typedef struct {
    ms_simd simd;
    /* x (n) <- e^x, x clamped to [-87, 88] (core/vexp.h: about 1 float ulp) */
    void (*exp)(float *x, int n);
    /* y (n) += b: the scalar adds' values */
    void (*add)(float *y, const float *b, int n);
    /* y (n) += g x, the product rounded before the add (the scalar loop's
     * values, never an FMA) */
    void (*axpy)(float *y, float g, const float *x, int n);
    /* H (m, h) <- max(H + b, 0) (NaN and -0 to +0): the scalar rule's values */
    void (*relu_bias)(float *H, const float *b, int m, int h);
    /* H (m, h) <- gelu(H + b), the exact-erf GELU through erfc (within 2.4e-7
     * of the double formula on [-12, 12], the negative tail relatively close) */
    void (*gelu_bias)(float *H, const float *b, int m, int h);
    /* H (m, h) <- silu(H + b1) (H3 + b3) */
    void (*silu_glu_bias)(float *H, const float *H3, const float *b1, const float *b3, int m, int h);
    /* s (n) <- softmax(s): max subtracted, exp, the sum in double */
    void (*softmax)(float *s, int n);
    /* log sum_i exp(x_i) (n >= 1), the exps summed in double; *argmax: the
     * largest x's index, ties to the smaller one (x[0] NaN: 0) */
    double (*logsumexp)(const float *x, int n, int *argmax);
    /* x (n) <- GPT-2's gelu_new, 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x +
     * 0.044715 x^3), as x / (1 + exp(-2u)) */
    void (*gelu_tanh)(float *x, size_t n);
    /* y (d) = (x - mu) / sqrt(var + eps) w + b, mu and the biased var of x in double */
    void (*layernorm)(const float *x, int d, const float *w, const float *b, double eps, float *y);
} vr_ops;

/* the loops of form s (MS_SIMD_AUTO: the one that runs; capped at the CPU's) */
const vr_ops *vr_ops_for(ms_simd s);

/* the running form's loops */
void vr_add(float *y, const float *b, int n);
void vr_axpy(float *y, float g, const float *x, int n);
void vr_relu_bias(float *H, const float *b, int m, int h);
void vr_gelu_bias(float *H, const float *b, int m, int h);
void vr_silu_glu_bias(float *H, const float *H3, const float *b1, const float *b3, int m, int h);
void vr_softmax(float *s, int n);
double vr_logsumexp(const float *x, int n, int *argmax);
void vr_gelu_tanh(float *x, size_t n);
void vr_layernorm(const float *x, int d, const float *w, const float *b, double eps, float *y);

#endif
