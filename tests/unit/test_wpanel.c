/* test_wpanel.c - products with weights in their stored dtype (core/wpanel.c):
 *   - the panel form (rows of W converted a panel at a time) against the plain
 *     one (W converted whole, one sgemm): the same values to float rounding,
 *     within 1e-6 of the sum of the terms' sizes (OpenBLAS blocks a product by
 *     its width, so the panels' sums are not all the same bits), for bfloat16,
 *     float16 and float32, rows ld apart, accumulating or not, a K wider than
 *     one panel;
 *   - both against a product in double of the values the bits stand for,
 *     decoded here from the formats' definitions;
 *   - the finite check finds an inf or NaN where it is;
 *   - MXFP4 (blocks and scales) decoded from the format's definition (E2M1 codes,
 *     2^(scale - 127)), a row-offset view into the blocks too;
 *   - views (rows and columns read in another order) and mixes ta A + tb P(B) of
 *     two sources in any dtypes: every panel's values bit for bit the float32
 *     ta * a + tb * b this file forms itself (moe_interpolate's rounding), and the
 *     products within 1e-6 of the double product of those values;
 *   - a transposed layout (tr: stored [K, N], GPT-OSS's BF16 experts; every other
 *     stored column with rs 2, its offset view the columns between): its values
 *     bit for bit those of the stored columns, the products within 1e-6 of the
 *     double product, as a view (rows, columns permuted) and in a mix with a
 *     matrix stored as rows (either source transposed); wp_same, wp_finite. */
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

/* a stored matrix of N rows ld apart in dt, random values; *sc its MXFP4 scales */
static void *random_stored(rng_t *r, wp_dtype dt, int N, int ld, uint8_t **sc) {
    size_t nw = (size_t)N * ld;
    *sc = NULL;
    if (dt == WP_MXFP4) {
        uint8_t *q = malloc(nw / 2);
        *sc = malloc(nw / 32);
        for (size_t i = 0; i < nw / 2; i++) q[i] = (uint8_t)rng_below(r, 256);
        for (size_t i = 0; i < nw / 32; i++) (*sc)[i] = (uint8_t)(122 + rng_below(r, 8));
        return q;
    }
    unsigned char *bytes = malloc(nw * wp_dtype_size(dt));
    for (size_t i = 0; i < nw; i++) {
        float v = (float)(0.5 * rng_normal(r));
        if (dt == WP_F32) memcpy(bytes + i * 4, &v, 4);
        else {
            uint16_t h = dt == WP_BF16 ? to_bf16(v) : to_f16(v);
            memcpy(bytes + i * 2, &h, 2);
        }
    }
    return bytes;
}

static void one_case(rng_t *r, wp_dtype dt, int M, int N, int K, int ld, float beta) {
    uint8_t *sc;
    unsigned char *bytes = random_stored(r, dt, N, ld, &sc);
    wref W = {.p = bytes, .dt = dt, .ld = (size_t)ld};
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

/* an FP4 (E2M1) code's value from the format: sign, 2 exponent bits (bias 1), 1 mantissa bit */
static double fp4_value(int q) {
    int e = (q >> 1) & 3, m = q & 1;
    double v = e ? ldexp(1.0 + 0.5 * m, e - 1) : 0.5 * m;
    return q & 8 ? -v : v;
}

/* element (r, c) of a stored matrix, decoded here */
static double stored_at(const void *p, const uint8_t *sc, wp_dtype dt, int ld, size_t r, size_t c) {
    size_t e = r * (size_t)ld + c;
    if (dt != WP_MXFP4) return value_of(p, dt, e);
    int q = (((const uint8_t *)p)[e / 2] >> (4 * (e & 1))) & 15;
    return fp4_value(q) * ldexp(1.0, sc[e / 32] - 127);
}

static const char *dt_name(wp_dtype dt) {
    return dt == WP_F32 ? "F32" : dt == WP_F16 ? "F16" : dt == WP_BF16 ? "BF16" : "MXFP4";
}

/* W = ta A + tb B' (B' = B's rows in order rows, columns in order cols; either may
 * be NULL), A and B in dtypes da, db: the panels' values against this file's own
 * float32 mix, the panel and whole products against the double product */
/* X W^T for random X (M, K) through the panels and through the whole-matrix
 * reference, against the double product with w (N, K), the values W holds: the
 * worst error of either, relative to sum |x w| */
static double gemm_worst(rng_t *r, int M, int N, int K, wref W, const float *w) {
    float *X = malloc((size_t)M * K * sizeof(float)), *Y0 = malloc((size_t)M * N * sizeof(float));
    float *Y1 = malloc((size_t)M * N * sizeof(float));
    for (size_t i = 0; i < (size_t)M * K; i++) X[i] = (float)rng_normal(r);
    wp_gemm_nt(M, N, K, X, K, W, 0.0f, Y0, N);
    wp_gemm_nt_ref(M, N, K, X, K, W, 0.0f, Y1, N);
    double worst = 0;
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double a = 0, m = 0;
            for (int k = 0; k < K; k++) {
                double x = (double)X[(size_t)i * K + k] * w[(size_t)j * K + k];
                a += x, m += fabs(x);
            }
            size_t o = (size_t)i * N + j;
            worst = fmax(worst, fmax(fabs(Y0[o] - a), fabs(Y1[o] - a)) / (m > 0 ? m : 1));
        }
    free(X), free(Y0), free(Y1);
    return worst;
}

static void mix_case(rng_t *r, wp_dtype da, wp_dtype db, int M, int N, int K, int perm_rows, int perm_cols,
                     double t) {
    int ld = K + 32; // rows apart, MXFP4's blocks whole
    uint8_t *sa, *sb;
    void *pa = random_stored(r, da, N, ld, &sa), *pb = random_stored(r, db, N, ld, &sb);
    int *rows = perm_rows ? malloc((size_t)N * sizeof(int)) : NULL, *cols = perm_cols ? malloc((size_t)K * sizeof(int)) : NULL;
    if (rows) rng_permutation(r, rows, N);
    if (cols) rng_permutation(r, cols, K);
    float ta = (float)(1.0 - t), tb = (float)t;
    wref A = {.p = pa, .dt = da, .ld = (size_t)ld, .sc = sa}, B = {.p = pb, .dt = db, .ld = (size_t)ld, .sc = sb};
    B = wp_view(B, rows, cols);
    wref W = t < 0 ? B : wp_mix(A, &B, ta, tb); // t < 0: the view alone
    // the matrix in float32 as moe_interpolate forms it, from the decoded values
    float *w = malloc((size_t)N * K * sizeof(float)), *got = malloc((size_t)N * K * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int c = 0; c < K; c++) {
            float b = (float)stored_at(pb, sb, db, ld, rows ? (size_t)rows[i] : (size_t)i, cols ? (size_t)cols[c] : (size_t)c);
            float a = (float)stored_at(pa, sa, da, ld, (size_t)i, (size_t)c);
            w[(size_t)i * K + c] = t < 0 ? b : ta * a + tb * b;
        }
    wp_rows_f32(W, (size_t)K, 0, (size_t)N, got);
    size_t same = 0;
    for (size_t i = 0; i < (size_t)N * K; i++) same += !memcmp(&w[i], &got[i], 4);
    CHECK(same == (size_t)N * K, "%s + %s mix t %g%s%s %dx%d: every value bit for bit (%zu of %zu)", dt_name(da),
          dt_name(db), t, rows ? ", rows permuted" : "", cols ? ", columns permuted" : "", N, K, same, (size_t)N * K);
    double worst = gemm_worst(r, M, N, K, W, w);
    CHECK(worst < 1e-6, "%s + %s mix %dx%dx%d: panels and whole within 1e-6 of sum |x w| (%.3g)", dt_name(da),
          dt_name(db), M, N, K, worst);
    free(pa), free(pb), free(sa), free(sb), free(rows), free(cols), free(w), free(got);
}

/* an MXFP4 view from a row on (wp_offset) reads the blocks and scales of that row;
 * rows ld apart skip the others (GPT-OSS's gate | up rows interleaved) */
static void test_mxfp4_offset(rng_t *r) {
    int N = 6, K = 64;
    uint8_t *sc;
    void *q = random_stored(r, WP_MXFP4, N, K, &sc);
    wref W = {.p = q, .dt = WP_MXFP4, .ld = (size_t)(2 * K), .sc = sc}; // every other row
    wref U = wp_offset(W, (size_t)K);                                    // the rows between
    float g[3 * 64], u[3 * 64];
    wp_rows_f32(W, (size_t)K, 0, 3, g);
    wp_rows_f32(U, (size_t)K, 0, 3, u);
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < K; c++) {
            bad += g[i * K + c] != (float)stored_at(q, sc, WP_MXFP4, K, (size_t)(2 * i), (size_t)c);
            bad += u[i * K + c] != (float)stored_at(q, sc, WP_MXFP4, K, (size_t)(2 * i + 1), (size_t)c);
        }
    CHECK(bad == 0, "MXFP4 interleaved rows and their offset view decode as the format says (%d wrong)", bad);
    size_t at = 99;
    CHECK(wp_finite(W, 3, (size_t)K, &at) == 0, "MXFP4 with scales near 2^0 is finite");
    sc[2 * 2 + 1] = 255; // row 1 (stored row 2), its second block: 2^128 overflows
    CHECK(wp_finite(W, 3, (size_t)K, &at) == 1 && at == (size_t)K + 32, "MXFP4 overflowing scale found at %d (%zu)",
          K + 32, at);
    free(q), free(sc);
}

static void test_finite(void) {
    uint16_t b[12];
    for (int i = 0; i < 12; i++) b[i] = to_bf16((float)i);
    size_t at = 99;
    CHECK(wp_finite((wref){.p = b, .dt = WP_BF16, .ld = 4}, 3, 4, &at) == 0, "finite bfloat16 values pass");
    b[6] = 0x7f80; // +inf
    CHECK(wp_finite((wref){.p = b, .dt = WP_BF16, .ld = 4}, 3, 4, &at) == 1 && at == 6, "bfloat16 inf found at 6 (%zu)", at);
    uint16_t h[6] = {0x3c00, 0x3c00, 0x3c00, 0x7e00, 0, 0}; // f16 NaN at 3
    CHECK(wp_finite((wref){.p = h, .dt = WP_F16, .ld = 3}, 2, 3, &at) == 1 && at == 3, "float16 NaN found at 3 (%zu)", at);
    CHECK(wp_finite((wref){.p = h, .dt = WP_F16, .ld = 3}, 1, 3, &at) == 0, "rows before it pass");
}

/* W (N, K) stored transposed in dt: S [K, ld] with W[r][c] = S[c][r rs + off];
 * perm: rows and columns read permuted; other: mixed with a random row-stored B
 * (other 2: B the transposed one, A row-stored) */
static void trans_case(rng_t *r, wp_dtype dt, int M, int N, int K, int rs, int off, int perm, int other) {
    int ld = N * rs + 3;
    uint8_t *sc, *sb;
    void *S = random_stored(r, dt, K, ld, &sc), *pb = random_stored(r, WP_BF16, N, K, &sb);
    wref T = {.p = S, .dt = dt, .ld = (size_t)ld, .tr = 1, .rs = (size_t)rs};
    T = wp_offset(T, (size_t)off);
    int *rows = perm ? malloc((size_t)N * sizeof(int)) : NULL, *cols = perm ? malloc((size_t)K * sizeof(int)) : NULL;
    if (perm) rng_permutation(r, rows, N), rng_permutation(r, cols, K);
    wref V = wp_view(T, rows, cols), B = {.p = pb, .dt = WP_BF16, .ld = (size_t)K};
    float ta = 0.6f, tb = 0.4f;
    wref W = other == 1 ? wp_mix(V, &B, ta, tb) : other == 2 ? wp_mix(B, &V, ta, tb) : V;
    float *w = malloc((size_t)N * K * sizeof(float)), *got = malloc((size_t)N * K * sizeof(float));
    for (int i = 0; i < N; i++)
        for (int c = 0; c < K; c++) {
            size_t sr = rows ? (size_t)rows[i] : (size_t)i, scl = cols ? (size_t)cols[c] : (size_t)c;
            float t = (float)stored_at(S, sc, dt, ld, scl, sr * rs + off), b = (float)value_of(pb, WP_BF16, (size_t)i * K + c);
            w[(size_t)i * K + c] = other == 1 ? ta * t + tb * b : other == 2 ? ta * b + tb * t : t;
        }
    wp_rows_f32(W, (size_t)K, 0, (size_t)N, got);
    size_t same = 0;
    for (size_t i = 0; i < (size_t)N * K; i++) same += !memcmp(&w[i], &got[i], 4);
    const char *how = other == 1 ? ", mixed with rows" : other == 2 ? ", the mix's second" : "";
    CHECK(same == (size_t)N * K, "%s transposed rs %d off %d%s%s %dx%d: every value bit for bit (%zu of %zu)", dt_name(dt),
          rs, off, perm ? ", permuted" : "", how, N, K, same, (size_t)N * K);
    double worst = gemm_worst(r, M, N, K, W, w);
    CHECK(worst < 1e-6, "%s transposed%s%s %dx%dx%d: panels and whole within 1e-6 of sum |x w| (%.3g)", dt_name(dt),
          perm ? ", permuted" : "", how, M, N, K, worst);
    if (!perm && !other) {
        size_t at = 99;
        CHECK(wp_same(T, T, (size_t)N, (size_t)K) == 1 && wp_finite(T, (size_t)N, (size_t)K, &at) == 0,
              "%s transposed: the same as itself, finite", dt_name(dt));
        wref U = T;
        U.tr = 0;
        CHECK(!wp_same(T, U, (size_t)N, (size_t)K), "a transposed layout is not its rows' layout");
    }
    free(S), free(sc), free(pb), free(sb), free(rows), free(cols), free(w), free(got);
}

int main(void) {
    rng_t r;
    rng_seed(&r, 7);
    wp_dtype dts[3] = {WP_BF16, WP_F16, WP_F32};
    for (int t = 0; t < 3; t++) {
        one_case(&r, dts[t], 37, 1100, 256, 256, 0.0f);  // 512-row panels, a tail of 76
        one_case(&r, dts[t], 5, 300, 1000, 1010, 1.0f);  // 131-row panels, rows apart, accumulating
        one_case(&r, dts[t], 3, 9, WP_PANEL_FLOATS + 1000, WP_PANEL_FLOATS + 1000, 0.0f); // a row wider than a panel
    }
    test_finite();
    // views and mixes: every pair of dtypes once, permutations, t at its ends
    wp_dtype all[4] = {WP_BF16, WP_F16, WP_F32, WP_MXFP4};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) mix_case(&r, all[i], all[j], 7, 40, 96, i & 1, j & 1, 0.3);
    mix_case(&r, WP_MXFP4, WP_MXFP4, 5, 20, 64, 0, 0, -1);  // MXFP4 alone, through panels
    mix_case(&r, WP_BF16, WP_BF16, 5, 20, 512, 1, 1, -1);   // a view alone
    mix_case(&r, WP_BF16, WP_BF16, 9, 300, 512, 1, 1, 0.0); // several panels; t = 0 and 1
    mix_case(&r, WP_BF16, WP_F16, 9, 30, WP_PANEL_FLOATS + 1000, 1, 1, 1.0); // a row wider than a panel
    test_mxfp4_offset(&r);
    // transposed layouts: GPT-OSS's down_proj (rs 1), gate | up interleaved (rs 2, offset 1: up)
    for (int t = 0; t < 3; t++) trans_case(&r, dts[t], 7, 300, 96, 1, 0, 0, 0);
    trans_case(&r, WP_BF16, 9, 300, 1000, 2, 0, 0, 0); // 131-row panels
    trans_case(&r, WP_BF16, 5, 30, 64, 2, 1, 0, 0);
    trans_case(&r, WP_BF16, 5, 30, 64, 2, 1, 1, 0);   // a view of it
    trans_case(&r, WP_BF16, 5, 30, 64, 1, 0, 1, 1);   // mixed: A transposed, B rows
    trans_case(&r, WP_F16, 5, 300, 128, 2, 1, 0, 2);  // mixed: A rows, B transposed
    return test_summary("test_wpanel");
}
