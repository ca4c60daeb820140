/* test_wpanel.c - products with weights in their stored dtype (core/wpanel.c):
 *   - the panel form (rows of W converted a panel at a time) against the plain
 *     one (W converted whole, one sgemm): the same values to float rounding,
 *     within 1e-6 of the sum of the terms' sizes (OpenBLAS blocks a product by
 *     its width, so the panels' sums are not all the same bits), for bfloat16,
 *     float16 and float32, rows ld apart, accumulating or not, a K wider than
 *     one panel;
 *   - both against a product in double of the values the bits stand for,
 *     decoded here from the formats' definitions;
 *   - the finite check finds an inf or NaN where it is. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/wpanel.h"
#include "testlib.h"

/* float -> bfloat16 (round to nearest even) and -> binary16 (normal range), as
 * a checkpoint holds them */
static uint16_t to_bf16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static uint16_t to_f16(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = (b >> 16) & 0x8000u;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    uint32_t man = b & 0x7fffffu;
    if (e <= 0) return (uint16_t)sign; // tiny: zero (the values here are not)
    uint32_t h = sign | ((uint32_t)e << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++;
    return (uint16_t)h;
}

/* the value of element i of the stored bits, from the formats' definitions */
static double value_of(const void *p, wp_dtype dt, size_t i) {
    if (dt == WP_F32) return ((const float *)p)[i];
    uint16_t h = ((const uint16_t *)p)[i];
    if (dt == WP_BF16) {
        uint32_t b = (uint32_t)h << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return h & 0x8000u ? -v : v;
}

static void one_case(rng_t *r, wp_dtype dt, int M, int N, int K, int ld, float beta) {
    size_t es = wp_dtype_size(dt), nw = (size_t)N * ld;
    unsigned char *bytes = malloc(nw * es);
    for (size_t i = 0; i < nw; i++) {
        float v = (float)(0.5 * rng_normal(r));
        if (dt == WP_F32) memcpy(bytes + i * 4, &v, 4);
        else {
            uint16_t h = dt == WP_BF16 ? to_bf16(v) : to_f16(v);
            memcpy(bytes + i * 2, &h, 2);
        }
    }
    wref W = {bytes, dt, (size_t)ld};
    float *X = malloc((size_t)M * K * sizeof(float)), *Y0 = malloc((size_t)M * N * sizeof(float));
    float *Y1 = malloc((size_t)M * N * sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++) X[i] = (float)rng_normal(r);
    for (size_t i = 0; i < (size_t)M * N; i++) Y0[i] = Y1[i] = (float)rng_normal(r);
    // the double product and the sum of its terms' sizes (a float sum's rounding bound)
    double *want = malloc((size_t)M * N * sizeof(double)), *mag = malloc((size_t)M * N * sizeof(double));
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double a = beta * (double)Y0[(size_t)i * N + j], s = fabs(a);
            for (int k = 0; k < K; k++) {
                double t = (double)X[(size_t)i * K + k] * value_of(bytes, dt, (size_t)j * ld + k);
                a += t, s += fabs(t);
            }
            want[(size_t)i * N + j] = a, mag[(size_t)i * N + j] = s;
        }
    wp_gemm_nt(M, N, K, X, K, W, beta, Y0, N);
    wp_gemm_nt_ref(M, N, K, X, K, W, beta, Y1, N);
    double worst = 0, worst_ref = 0;
    size_t same = 0;
    for (size_t i = 0; i < (size_t)M * N; i++) {
        worst = fmax(worst, fabs(Y0[i] - Y1[i]) / mag[i]);
        worst_ref = fmax(worst_ref, fmax(fabs(Y0[i] - want[i]), fabs(Y1[i] - want[i])) / mag[i]);
        same += !memcmp(&Y0[i], &Y1[i], 4);
    }
    const char *nm = dt == WP_F32 ? "F32" : dt == WP_F16 ? "F16" : "BF16";
    CHECK(worst < 1e-6, "%s %dx%dx%d ld %d: panels vs whole within 1e-6 of sum |x w| (%.3g; %zu of %zu bits equal)", nm, M, N, K,
          ld, worst, same, (size_t)M * N);
    CHECK(worst_ref < 1e-6, "%s %dx%dx%d: both within 1e-6 of sum |x w| of the double product (%.3g)", nm, M, N, K, worst_ref);
    free(bytes), free(X), free(Y0), free(Y1), free(want), free(mag);
}

static void test_finite(void) {
    uint16_t b[12];
    for (int i = 0; i < 12; i++) b[i] = to_bf16((float)i);
    size_t at = 99;
    CHECK(wp_finite((wref){b, WP_BF16, 4}, 3, 4, &at) == 0, "finite bfloat16 values pass");
    b[6] = 0x7f80; // +inf
    CHECK(wp_finite((wref){b, WP_BF16, 4}, 3, 4, &at) == 1 && at == 6, "bfloat16 inf found at 6 (%zu)", at);
    uint16_t h[6] = {0x3c00, 0x3c00, 0x3c00, 0x7e00, 0, 0}; // f16 NaN at 3
    CHECK(wp_finite((wref){h, WP_F16, 3}, 2, 3, &at) == 1 && at == 3, "float16 NaN found at 3 (%zu)", at);
    CHECK(wp_finite((wref){h, WP_F16, 3}, 1, 3, &at) == 0, "rows before it pass");
}

int main(void) {
    rng_t r;
    rng_seed(&r, 7);
    wp_dtype dts[3] = {WP_BF16, WP_F16, WP_F32};
    for (int t = 0; t < 3; t++) {
        one_case(&r, dts[t], 37, 300, 256, 256, 0.0f);   // 128-row panels, a tail of 44
        one_case(&r, dts[t], 5, 70, 1000, 1010, 1.0f);   // 32-row panels, rows apart, accumulating
        one_case(&r, dts[t], 3, 9, 33000, 33000, 0.0f);  // a row wider than a panel
    }
    test_finite();
    return test_summary("test_wpanel");
}
