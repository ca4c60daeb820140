/* vrows.c - loops over float32 rows in three vector forms (vrows.h). */
#include "core/vrows.h"

#include <immintrin.h>
#include <math.h>
#include <stdint.h>

#include "core/vexp.h"

/* 0, 1, ..., 15: a step's positions */
static const _Alignas(64) int32_t vr_iota[16] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

#define VR_VL 16
#define VR_SUF avx512
#define VR_SIMD MS_SIMD_AVX512
#define VR_TARGET __attribute__((target("arch=x86-64-v4")))
#include "vrows_lanes.h"
#undef VR_VL
#undef VR_SUF
#undef VR_SIMD
#undef VR_TARGET

#define VR_VL 8
#define VR_SUF avx2
#define VR_SIMD MS_SIMD_AVX2
#define VR_TARGET __attribute__((target("arch=x86-64-v3")))
#include "vrows_lanes.h"
#undef VR_VL
#undef VR_SUF
#undef VR_SIMD
#undef VR_TARGET

#define VR_VL 4
#define VR_SUF plain
#define VR_SIMD MS_SIMD_PLAIN
#define VR_TARGET
#include "vrows_lanes.h"
#undef VR_VL
#undef VR_SUF
#undef VR_SIMD
#undef VR_TARGET

const vr_ops *vr_ops_for(ms_simd s) {
    static const vr_ops *forms[] = {NULL, &ops_plain, &ops_avx2, &ops_avx512};
    static const vr_ops *running;
    if (s == MS_SIMD_AUTO) {
        const vr_ops *r = __atomic_load_n(&running, __ATOMIC_ACQUIRE);
        if (!r) __atomic_store_n(&running, r = forms[ms_simd_pick(MS_SIMD_AUTO)], __ATOMIC_RELEASE);
        return r;
    }
    return forms[ms_simd_pick(s)];
}

void vr_add(float *y, const float *b, int n) { vr_ops_for(MS_SIMD_AUTO)->add(y, b, n); }
void vr_axpy(float *y, float g, const float *x, int n) { vr_ops_for(MS_SIMD_AUTO)->axpy(y, g, x, n); }
void vr_relu_bias(float *H, const float *b, int m, int h) { vr_ops_for(MS_SIMD_AUTO)->relu_bias(H, b, m, h); }
void vr_gelu_bias(float *H, const float *b, int m, int h) { vr_ops_for(MS_SIMD_AUTO)->gelu_bias(H, b, m, h); }
void vr_silu_glu_bias(float *H, const float *H3, const float *b1, const float *b3, int m, int h) {
    vr_ops_for(MS_SIMD_AUTO)->silu_glu_bias(H, H3, b1, b3, m, h);
}
void vr_softmax(float *s, int n) { vr_ops_for(MS_SIMD_AUTO)->softmax(s, n); }
double vr_logsumexp(const float *x, int n, int *argmax) {
    return vr_ops_for(MS_SIMD_AUTO)->logsumexp(x, n, argmax);
}
void vr_gelu_tanh(float *x, size_t n) { vr_ops_for(MS_SIMD_AUTO)->gelu_tanh(x, n); }
void vr_layernorm(const float *x, int d, const float *w, const float *b, double eps, float *y) {
    vr_ops_for(MS_SIMD_AUTO)->layernorm(x, d, w, b, eps, y);
}
