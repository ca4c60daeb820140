/* wpanel.c - products with weights in their stored dtype (wpanel.h). */
#include "core/wpanel.h"

#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"

size_t wp_dtype_size(wp_dtype dt) { return dt == WP_F32 ? 4 : 2; }

/* every binary16's float32, made once: a table look-up per element */
static float f16_table[65536];
static pthread_once_t f16_once = PTHREAD_ONCE_INIT;

static float half_to_float(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
    if (exp == 0x1f) bits = sign | 0x7f800000u | (man << 13);  // inf, nan
    else if (exp != 0) bits = sign | ((exp + 112u) << 23) | (man << 13);
    else if (man == 0) bits = sign;                               // +-0
    else {                                                        // subnormal: man 2^-24
        float v = (float)man * 0x1p-24f;
        memcpy(&bits, &v, 4);
        bits |= sign;
    }
    float out;
    memcpy(&out, &bits, 4);
    return out;
}

static void f16_init(void) {
    for (uint32_t h = 0; h < 65536; h++) f16_table[h] = half_to_float((uint16_t)h);
}

/* n values of row src (dtype dt) into dst as float32 */
static void row_f32(const void *src, wp_dtype dt, size_t n, float *dst) {
    switch (dt) {
    case WP_F32: memcpy(dst, src, n * sizeof(float)); return;
    case WP_BF16: { // bfloat16 is a float32's top half
        const uint16_t *s = src;
        uint32_t *d = (uint32_t *)(void *)dst;
        for (size_t i = 0; i < n; i++) d[i] = (uint32_t)s[i] << 16;
        return;
    }
    case WP_F16: {
        const uint16_t *s = src;
        pthread_once(&f16_once, f16_init);
        for (size_t i = 0; i < n; i++) dst[i] = f16_table[s[i]];
        return;
    }
    }
}

static const void *row_at(wref W, size_t r) {
    return (const char *)W.p + r * W.ld * wp_dtype_size(W.dt);
}

void wp_rows_f32(wref W, size_t K, size_t r0, size_t nr, float *dst) {
    for (size_t r = 0; r < nr; r++) row_f32(row_at(W, r0 + r), W.dt, K, dst + r * K);
}

wref wp_offset(wref W, size_t elems) {
    W.p = (const char *)W.p + elems * wp_dtype_size(W.dt);
    return W;
}

/* each thread's panel: converted rows of W, WP_PANEL_FLOATS at most */
static _Thread_local float t_panel[WP_PANEL_FLOATS];

void wp_gemm_nt(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy) {
    if (M <= 0 || N <= 0) return;
    if (W.dt == WP_F32) {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, X, ldx, W.p, (int)W.ld, beta, Y, ldy);
        return;
    }
    // rows per panel: as many whole rows as fit (a row wider than the panel: one
    // row at a time through the reference's buffer)
    int nb = K > 0 && K <= WP_PANEL_FLOATS ? WP_PANEL_FLOATS / K : 0;
    if (nb == 0) {
        wp_gemm_nt_ref(M, N, K, X, ldx, W, beta, Y, ldy);
        return;
    }
    for (int n0 = 0; n0 < N; n0 += nb) {
        int nr = N - n0 < nb ? N - n0 : nb;
        wp_rows_f32(W, (size_t)K, (size_t)n0, (size_t)nr, t_panel);
        // Y[:, n0 .. n0 + nr) (M, nr) = X (M, K) panel^T, panel (nr, K)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, nr, K, 1.0f, X, ldx, t_panel, K, beta, Y + n0, ldy);
    }
}

void wp_gemm_nt_ref(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy) {
    if (M <= 0 || N <= 0) return;
    float *w = ms_malloc((size_t)N * (size_t)(K > 0 ? K : 1) * sizeof(float)); // W (N, K) as float32
    wp_rows_f32(W, (size_t)K, 0, (size_t)N, w);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, X, ldx, w, K, beta, Y, ldy);
    free(w);
}

int wp_finite(wref W, size_t N, size_t K, size_t *at) {
    for (size_t r = 0; r < N; r++) {
        const void *row = row_at(W, r);
        for (size_t c = 0; c < K; c++) {
            uint16_t h;
            int bad;
            switch (W.dt) {
            case WP_F32: bad = !isfinite(((const float *)row)[c]); break;
            default: // bf16: exponent 0xff; f16: exponent 0x1f
                memcpy(&h, (const char *)row + 2 * c, 2);
                bad = W.dt == WP_BF16 ? (h & 0x7f80u) == 0x7f80u : (h & 0x7c00u) == 0x7c00u;
                break;
            }
            if (bad) {
                *at = r * K + c;
                return 1;
            }
        }
    }
    return 0;
}
