/* wpanel.c - products with weights in their stored dtype (wpanel.h). */
#include "core/wpanel.h"

#include <cblas.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"

size_t wp_dtype_size(wp_dtype dt) { return dt == WP_F32 ? 4 : dt == WP_MXFP4 ? 0 : 2; }

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

/* FP4 (E2M1) codes 0..15: sign bit 3 */
static const float fp4_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* MXFP4 element e of W: its code times 2^(scale - 127), as the codec decodes it */
static float mx_at(wref W, size_t e) {
    const uint8_t *q = W.p;
    return fp4_values[(q[e >> 1] >> ((e & 1) * 4)) & 15] * ldexpf(1.0f, (int)W.sc[e >> 5] - 127);
}

/* the element (r, c) of W's storage (its layout: rows, or transposed) */
static size_t elem_at(wref W, size_t r, size_t c) { return W.tr ? c * W.ld + r * (W.rs ? W.rs : 1) : r * W.ld + c; }

/* element e of W as float32 */
static float one_f32(wref W, size_t e) {
    switch (W.dt) {
    case WP_F32: return ((const float *)W.p)[e];
    case WP_BF16: {
        uint32_t b = (uint32_t)((const uint16_t *)W.p)[e] << 16;
        float f;
        memcpy(&f, &b, 4);
        return f;
    }
    case WP_F16: pthread_once(&f16_once, f16_init); return f16_table[((const uint16_t *)W.p)[e]];
    case WP_MXFP4: return mx_at(W, e);
    }
    return 0.0f;
}

/* n bfloat16 values from s into dst as float32: each a float32's top half (8 at a
 * time with SSE2: a zero half interleaved below each; the scalar loop is not
 * vectorized at -O2, and this conversion is every mapped weight's) */
static void bf16_run(const uint16_t *s, size_t n, float *dst) {
    uint32_t *d = (uint32_t *)(void *)dst;
    size_t i = 0;
#ifdef __SSE2__
    const __m128i z = _mm_setzero_si128();
    for (; i + 8 <= n; i += 8) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        _mm_storeu_si128((__m128i *)(void *)(d + i), _mm_unpacklo_epi16(z, v));
        _mm_storeu_si128((__m128i *)(void *)(d + i + 4), _mm_unpackhi_epi16(z, v));
    }
#endif
    for (; i < n; i++) d[i] = (uint32_t)s[i] << 16;
}

/* n values of stored elements e0, e0 + step, ... into dst as float32 */
static void step_f32(wref W, size_t e0, size_t step, size_t n, float *dst) {
    if (W.dt == WP_BF16) { // the transposed layouts' common case, in a loop of its own
        const uint16_t *s = (const uint16_t *)W.p + e0;
        uint32_t *d = (uint32_t *)(void *)dst;
        for (size_t i = 0; i < n; i++) d[i] = (uint32_t)s[i * step] << 16;
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = one_f32(W, e0 + i * step);
}

/* n values of stored row r from column c0 on into dst as float32 */
static void run_f32(wref W, size_t r, size_t c0, size_t n, float *dst) {
    if (W.tr) { // a stored column: ld apart
        step_f32(W, elem_at(W, r, c0), W.ld, n, dst);
        return;
    }
    size_t e0 = r * W.ld + c0;
    switch (W.dt) {
    case WP_F32: memcpy(dst, (const float *)W.p + e0, n * sizeof(float)); return;
    case WP_BF16: bf16_run((const uint16_t *)W.p + e0, n, dst); return;
    case WP_F16: {
        const uint16_t *s = (const uint16_t *)W.p + e0;
        pthread_once(&f16_once, f16_init);
        for (size_t i = 0; i < n; i++) dst[i] = f16_table[s[i]];
        return;
    }
    case WP_MXFP4: { // a block's scale once per 32 values
        const uint8_t *q = W.p;
        for (size_t i = 0; i < n;) {
            size_t e = e0 + i, run = 32 - (e & 31);
            if (run > n - i) run = n - i;
            float s = ldexpf(1.0f, (int)W.sc[e >> 5] - 127);
            for (size_t j = 0; j < run; j++, e++) dst[i + j] = fp4_values[(q[e >> 1] >> ((e & 1) * 4)) & 15] * s;
            i += run;
        }
        return;
    }
    }
}

/* element c of stored row r */
static float at_f32(wref W, size_t r, size_t c) { return one_f32(W, elem_at(W, r, c)); }

/* n values of view W's row r (its rows, cols) from column c0 on into dst */
static void view_f32(wref W, size_t r, size_t c0, size_t n, float *dst) {
    size_t sr = W.rows ? (size_t)W.rows[r] : r;
    if (!W.cols) {
        run_f32(W, sr, c0, n, dst);
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = at_f32(W, sr, (size_t)W.cols[c0 + i]);
}

/* columns a mix forms at once (its second source's values on the stack) */
#define MIX_COLS 256

/* n values of W's row r from column c0 on: a view's, or a mix's ta a + tb b */
static void chunk_f32(wref W, size_t r, size_t c0, size_t n, float *dst) {
    view_f32(W, r, c0, n, dst);
    if (!W.b) return;
    float tmp[MIX_COLS];
    for (size_t o = 0; o < n; o += MIX_COLS) {
        size_t k = n - o < MIX_COLS ? n - o : MIX_COLS;
        view_f32(*W.b, r, c0 + o, k, tmp);
        float ta = W.ta, tb = W.tb, *d = dst + o;
        for (size_t i = 0; i < k; i++) d[i] = ta * d[i] + tb * tmp[i]; // moe_interpolate's rounding
    }
}

void wp_rows_f32(wref W, size_t K, size_t r0, size_t nr, float *dst) {
    for (size_t r = 0; r < nr; r++) chunk_f32(W, r0 + r, 0, K, dst + r * K);
}

wref wp_offset(wref W, size_t elems) {
    if (W.dt == WP_MXFP4) {
        W.p = (const uint8_t *)W.p + elems / 2;
        W.sc += elems / 32;
        return W;
    }
    W.p = (const char *)W.p + elems * wp_dtype_size(W.dt);
    return W;
}

wref wp_view(wref W, const int *rows, const int *cols) {
    W.rows = rows, W.cols = cols;
    return W;
}

wref wp_mix(wref a, const wref *b, float ta, float tb) {
    a.b = b, a.ta = ta, a.tb = tb;
    return a;
}

int wp_is_plain_f32(wref W) { return W.dt == WP_F32 && !W.rows && !W.cols && !W.b && !W.tr; }

/* n values of view W's column c from row r0 on (W[r0 + i][c]) into dst */
static void vcol_f32(wref W, size_t c, size_t r0, size_t n, float *dst) {
    size_t sc = W.cols ? (size_t)W.cols[c] : c;
    if (!W.rows) {
        step_f32(W, elem_at(W, r0, sc), W.tr ? (W.rs ? W.rs : 1) : W.ld, n, dst);
        return;
    }
    for (size_t i = 0; i < n; i++) dst[i] = at_f32(W, (size_t)W.rows[r0 + i], sc);
}

/* the panel (K, nr) of W's rows n0 .. n0 + nr transposed: column k of them as row k
 * (a transposed layout's runs; a mix's second source as it is stored) */
static void tpanel_f32(wref W, size_t K, size_t n0, size_t nr, float *dst) {
    float tmp[MIX_COLS];
    for (size_t k = 0; k < K; k++) {
        float *d = dst + k * nr;
        vcol_f32(W, k, n0, nr, d);
        for (size_t o = 0; W.b && o < nr; o += MIX_COLS) {
            size_t q = nr - o < MIX_COLS ? nr - o : MIX_COLS;
            vcol_f32(*W.b, k, n0 + o, q, tmp);
            for (size_t i = 0; i < q; i++) d[o + i] = W.ta * d[o + i] + W.tb * tmp[i]; // moe_interpolate's rounding
        }
    }
}

/* each thread's panel: converted rows of W, WP_PANEL_FLOATS at most */
static _Thread_local float t_panel[WP_PANEL_FLOATS];

void wp_gemm_nt(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy) {
    if (M <= 0 || N <= 0) return;
    if (wp_is_plain_f32(W)) {
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
    if (W.tr || (W.b && W.b->tr)) { // stored [K, N]: panels (K, nr) of stored rows' runs, multiplied as they are
        for (int n0 = 0; n0 < N; n0 += nb) {
            int nr = N - n0 < nb ? N - n0 : nb;
            tpanel_f32(W, (size_t)K, (size_t)n0, (size_t)nr, t_panel);
            // Y[:, n0 .. n0 + nr) (M, nr) = X (M, K) panel, panel (K, nr)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, nr, K, 1.0f, X, ldx, t_panel, nr, beta, Y + n0,
                        ldy);
        }
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

int wp_same(wref a, wref b, size_t N, size_t K) {
    if (a.dt != b.dt || a.rows || a.cols || a.b || b.rows || b.cols || b.b || a.tr != b.tr) return 0;
    if (a.tr) { // element by element (an interleaved layout's rows are every other stored column)
        size_t es = wp_dtype_size(a.dt);
        for (size_t r = 0; r < N; r++)
            for (size_t c = 0; c < K; c++)
                if (memcmp((const char *)a.p + elem_at(a, r, c) * es, (const char *)b.p + elem_at(b, r, c) * es, es))
                    return 0;
        return 1;
    }
    if (a.dt == WP_MXFP4) { // a row's blocks (K / 2 bytes) and scales (K / 32)
        for (size_t r = 0; r < N; r++)
            if (memcmp((const uint8_t *)a.p + r * a.ld / 2, (const uint8_t *)b.p + r * b.ld / 2, K / 2) ||
                memcmp(a.sc + r * a.ld / 32, b.sc + r * b.ld / 32, K / 32))
                return 0;
        return 1;
    }
    size_t es = wp_dtype_size(a.dt);
    for (size_t r = 0; r < N; r++)
        if (memcmp((const char *)a.p + r * a.ld * es, (const char *)b.p + r * b.ld * es, K * es)) return 0;
    return 1;
}

int wp_finite(wref W, size_t N, size_t K, size_t *at) {
    if (W.dt == WP_MXFP4 && !W.rows && !W.cols && !W.b) { // only a scale past 2^125 can overflow (6 x 2^126 does)
        for (size_t r = 0; r < N; r++)
            for (size_t c0 = 0; c0 < K; c0 += 32) // a block at a time (ld and K multiples of 32)
                for (size_t c = c0; W.sc[(r * W.ld + c0) >> 5] >= 253 && c < c0 + 32 && c < K; c++)
                    if (!isfinite(mx_at(W, r * W.ld + c))) {
                        *at = r * K + c;
                        return 1;
                    }
        return 0;
    }
    if (W.dt == WP_MXFP4 || W.rows || W.cols || W.b || W.tr) { // the values themselves, a chunk at a time
        float v[MIX_COLS];
        for (size_t r = 0; r < N; r++)
            for (size_t c0 = 0; c0 < K; c0 += MIX_COLS) {
                size_t k = K - c0 < MIX_COLS ? K - c0 : MIX_COLS;
                chunk_f32(W, r, c0, k, v);
                for (size_t c = 0; c < k; c++)
                    if (!isfinite(v[c])) {
                        *at = r * K + c0 + c;
                        return 1;
                    }
            }
        return 0;
    }
    for (size_t r = 0; r < N; r++) {
        const void *row = (const char *)W.p + r * W.ld * wp_dtype_size(W.dt);
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
