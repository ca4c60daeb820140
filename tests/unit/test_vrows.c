/* test_vrows.c - core/vrows.h's row loops in every vector form this CPU runs:
 * against plain double formulas (exp within 2 ulp, softmax, log-sum-exp, gelu_new, the exact-erf
 * GELU and its negative tail, SiLU-GLU, LayerNorm: float rounding), against
 * the scalar loops bit for bit (the bias add, relu with its bias, g x + y,
 * never an FMA), the argmax's ties and NaNs as a scalar loop has
 * them; AVX-512 and AVX2 the same bits, plain within float rounding; and a
 * value's bits independent of its place in a row (rows of every length up
 * to 40, the tail through the same lanes). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "core/vrows.h"
#include "testlib.h"

enum { NMAX = 5000 };

static float X[NMAX], W[NMAX], B[NMAX], Y0[NMAX], Y1[NMAX];

static void fill(rng_t *r, float *p, int n, double scale) {
    for (int i = 0; i < n; i++) p[i] = (float)(scale * rng_normal(r));
}

static double rel(double a, double b) { return fabs(a - b) / fmax(fabs(b), 1e-30); }

/* softmax, log-sum-exp, gelu_new and LayerNorm of one form against double */
static void test_formulas(const vr_ops *o, const char *name) {
    rng_t r;
    rng_seed(&r, 3);
    const int ns[] = {1, 3, 16, 17, 40, 255, 4096, NMAX};
    double ws = 0, wl = 0, wg = 0, wn = 0;
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        int n = ns[t];
        fill(&r, X, n, 3.0);
        memcpy(Y0, X, (size_t)n * sizeof(float));
        o->softmax(Y0, n);
        double mx = -INFINITY, se = 0;
        for (int i = 0; i < n; i++) mx = fmax(mx, X[i]);
        for (int i = 0; i < n; i++) se += exp((double)X[i] - mx);
        // against exp of the float difference (its rounding, |x - max| 6e-8, is the input's)
        double sf = 0;
        for (int i = 0; i < n; i++) sf += exp((double)(X[i] - (float)mx));
        for (int i = 0; i < n; i++) ws = fmax(ws, rel(Y0[i], exp((double)(X[i] - (float)mx)) / sf));
        int am;
        double l = o->logsumexp(X, n, &am);
        wl = fmax(wl, fabs(l - (mx + log(se))) / fmax(1.0, fabs(mx + log(se))));
        CHECK(X[am] == (float)mx, "%s: argmax of %d is a largest value", name, n);
        memcpy(Y0, X, (size_t)n * sizeof(float));
        o->gelu_tanh(Y0, (size_t)n);
        for (int i = 0; i < n; i++) {
            double v = X[i], g = 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
            wg = fmax(wg, fabs(Y0[i] - g) / fmax(1.0, fabs(g)));
        }
        fill(&r, W, n, 1.0);
        fill(&r, B, n, 1.0);
        o->layernorm(X, n, W, B, 1e-5, Y0);
        double mu = 0, var = 0;
        for (int i = 0; i < n; i++) mu += X[i];
        mu /= n;
        for (int i = 0; i < n; i++) var += (X[i] - mu) * (X[i] - mu);
        var /= n;
        for (int i = 0; i < n; i++) {
            double y = (X[i] - mu) / sqrt(var + 1e-5) * W[i] + B[i];
            wn = fmax(wn, fabs(Y0[i] - y) / fmax(1.0, fabs(y)));
        }
    }
    // the exact-erf GELU and SiLU-GLU with their biases, over [-12, 12]
    enum { NV = 4801 };
    double wa = 0, wt = 0, wsg = 0;
    for (int i = 0; i < NV; i++) X[i] = (float)(-12.0 + 24.0 * i / (NV - 1)), B[i] = 0.0f;
    memcpy(Y0, X, NV * sizeof(float));
    o->gelu_bias(Y0, B, 1, NV);
    for (int i = 0; i < NV; i++) {
        double v = X[i], g = 0.5 * v * erfc(-v / sqrt(2.0));
        wa = fmax(wa, fabs(Y0[i] - g));
        if (v < -1 && fabs(g) > 1e-20) wt = fmax(wt, fabs(Y0[i] - g) / fabs(g));
    }
    for (int i = 0; i < NV; i++) W[i] = 1.0f - X[i] / 7, Y1[i] = 0.0f;
    memcpy(Y0, X, NV * sizeof(float));
    o->silu_glu_bias(Y0, W, B, Y1, 1, NV);
    for (int i = 0; i < NV; i++) {
        double a = X[i], y = a / (1 + exp(-a)) * W[i];
        wsg = fmax(wsg, fabs(Y0[i] - y) / fmax(1.0, fabs(y)));
    }
    CHECK(wa < 3e-7, "%s: GELU within 3e-7 of the double formula on [-12, 12] (%.3g)", name, wa);
    CHECK(wt < 2e-5, "%s: GELU's negative tail relatively close (%.3g)", name, wt);
    CHECK(wsg < 1e-6, "%s: SiLU-GLU within 1e-6 of the double formula (%.3g)", name, wsg);
    CHECK(ws < 1e-6, "%s: softmax within 1e-6 relative of double (%.3g)", name, ws);
    CHECK(wl < 1e-7, "%s: log-sum-exp within 1e-7 of double (%.3g)", name, wl);
    CHECK(wg < 1e-6, "%s: gelu_new within 1e-6 of double (%.3g)", name, wg);
    CHECK(wn < 1e-6, "%s: LayerNorm within 1e-6 of double (%.3g)", name, wn);
}

/* e^x within 2 float ulp of exp over [-87, 88], clamped outside */
static void test_exp(const vr_ops *o, const char *name) {
    double ulp = 0;
    for (int i0 = -87000; i0 <= 88000; i0 += 7 * NMAX) {
        int n = 0;
        for (int i = i0; i <= 88000 && n < NMAX; i += 7) X[n++] = (float)(i / 1000.0);
        memcpy(Y0, X, (size_t)n * sizeof(float));
        o->exp(Y0, n);
        for (int i = 0; i < n; i++) {
            double ref = exp((double)X[i]);
            ulp = fmax(ulp, fabs(Y0[i] - ref) / (nextafterf((float)ref, INFINITY) - (float)ref));
        }
    }
    CHECK(ulp <= 2.0, "%s: exp within 2 ulp over [-87, 88] (%.3g ulp)", name, ulp);
    float e[2] = {-200.0f, 200.0f};
    o->exp(e, 2);
    CHECK(e[0] > 0 && e[0] < 2e-38f && e[1] > 1e38f && isfinite(e[1]),
          "%s: exp clamps: exp(-200) tiny, exp(200) large and finite", name);
}

/* the add and axpy as the scalar loops, bit for bit; the argmax as a scalar loop */
static void test_exact(const vr_ops *o, const char *name) {
    rng_t r;
    rng_seed(&r, 5);
    int bad_add = 0, bad_axpy = 0, bad_am = 0, bad_relu = 0;
    for (int n = 1; n <= 70; n++) {
        fill(&r, X, n, 1.0);
        fill(&r, B, n, 1.0);
        memcpy(Y0, X, (size_t)n * sizeof(float));
        memcpy(Y1, X, (size_t)n * sizeof(float));
        o->add(Y0, B, n);
        for (int i = 0; i < n; i++) Y1[i] += B[i];
        bad_add += memcmp(Y0, Y1, (size_t)n * sizeof(float)) != 0;
        memcpy(Y0, X, (size_t)n * sizeof(float));
        if (n % 5 == 0) Y0[0] = NAN, Y0[n - 1] = -0.0f, B[n - 1] = 0.0f;
        memcpy(Y1, Y0, (size_t)n * sizeof(float));
        o->relu_bias(Y0, B, 1, n);
        for (int i = 0; i < n; i++) {
            float v = Y1[i] + B[i];
            Y1[i] = v > 0.0f ? v : 0.0f;
        }
        bad_relu += memcmp(Y0, Y1, (size_t)n * sizeof(float)) != 0;
        memcpy(Y0, X, (size_t)n * sizeof(float));
        o->axpy(Y0, 0.37f, B, n);
        for (int i = 0; i < n; i++) {
            volatile float t = 0.37f * B[i]; // rounded apart, as the loop's
            bad_axpy += Y0[i] != X[i] + t;
        }
        // few distinct values: ties everywhere; NaNs and -inf at times
        for (int i = 0; i < n; i++) X[i] = (float)(rng_u64(&r) % 5);
        if (n % 3 == 0) X[rng_u64(&r) % (uint64_t)n] = NAN;
        if (n % 7 == 0) X[0] = NAN;
        if (n % 11 == 0)
            for (int i = 0; i < n; i++) X[i] = -INFINITY;
        int am, want = 0;
        o->logsumexp(X, n, &am);
        for (int i = 1; i < n; i++)
            if (X[i] > X[want]) want = i;
        bad_am += am != want;
    }
    CHECK(bad_add == 0, "%s: add as the scalar loop (%d rows differ)", name, bad_add);
    CHECK(bad_relu == 0, "%s: relu with its bias as the scalar rule, NaN and -0 to +0 (%d rows differ)", name,
          bad_relu);
    CHECK(bad_axpy == 0, "%s: axpy as the scalar loop, no FMA (%d values differ)", name, bad_axpy);
    CHECK(bad_am == 0, "%s: argmax as a scalar loop, ties and NaNs (%d rows differ)", name, bad_am);
}

/* a value's bits wherever it sits: gelu_new of rows of every length, each a
 * prefix of one long row */
static void test_places(const vr_ops *o, const char *name) {
    rng_t r;
    rng_seed(&r, 9);
    fill(&r, X, 64, 2.0);
    memcpy(Y0, X, 64 * sizeof(float));
    o->gelu_tanh(Y0, 64);
    int bad = 0;
    for (int n = 1; n <= 40; n++)
        for (int s = 0; s < 3; s++) {
            memcpy(Y1, X + s, (size_t)n * sizeof(float));
            o->gelu_tanh(Y1, (size_t)n);
            bad += memcmp(Y1, Y0 + s, (size_t)n * sizeof(float)) != 0;
        }
    CHECK(bad == 0, "%s: gelu_new's values do not depend on their place in a row (%d rows differ)", name, bad);
    // the GELU and SiLU-GLU rows: rows of every width, each a prefix of the long one
    memset(B, 0, 64 * sizeof(float));
    for (int i = 0; i < 64; i++) W[i] = 0.5f + X[i] / 4;
    float g[64], sg[64];
    memcpy(g, X, sizeof g);
    o->gelu_bias(g, B, 1, 64);
    memcpy(sg, X, sizeof sg);
    o->silu_glu_bias(sg, W, B, B, 1, 64);
    int bad_g = 0, bad_s = 0;
    for (int n = 1; n <= 40; n++) {
        memcpy(Y1, X, (size_t)n * sizeof(float));
        o->gelu_bias(Y1, B, 1, n);
        bad_g += memcmp(Y1, g, (size_t)n * sizeof(float)) != 0;
        // and as rows of a matrix (m rows of width n: the same bits)
        float M[3 * 40], S3[3 * 40];
        for (int r2 = 0; r2 < 3; r2++) memcpy(M + r2 * n, X, (size_t)n * sizeof(float)), memcpy(S3 + r2 * n, W, (size_t)n * sizeof(float));
        o->silu_glu_bias(M, S3, B, B, 3, n);
        for (int r2 = 0; r2 < 3; r2++) bad_s += memcmp(M + r2 * n, sg, (size_t)n * sizeof(float)) != 0;
    }
    CHECK(bad_g == 0, "%s: GELU rows of every width give the long row's bits (%d differ)", name, bad_g);
    CHECK(bad_s == 0, "%s: SiLU-GLU rows of a matrix give the long row's bits (%d differ)", name, bad_s);
}

/* two forms on the same rows: bit for bit (same arithmetic) or within tol */
static void test_pair(const vr_ops *a, const vr_ops *b, const char *what, double tol) {
    rng_t r;
    rng_seed(&r, 11);
    double worst = 0;
    int bits = 1;
    const int ns[] = {1, 5, 16, 33, 100, 4096};
    for (size_t t = 0; t < sizeof ns / sizeof *ns; t++) {
        int n = ns[t];
        fill(&r, X, n, 3.0);
        fill(&r, W, n, 1.0);
        fill(&r, B, n, 1.0);
        float *ys[2] = {Y0, Y1};
        const vr_ops *f[2] = {a, b};
        double l[2];
        for (int k = 0; k < 2; k++) {
            memcpy(ys[k], X, (size_t)n * sizeof(float));
            f[k]->softmax(ys[k], n);
        }
        for (int i = 0; i < n; i++) worst = fmax(worst, rel(Y0[i], Y1[i])), bits &= Y0[i] == Y1[i];
        for (int k = 0; k < 2; k++) {
            memcpy(ys[k], X, (size_t)n * sizeof(float));
            f[k]->gelu_tanh(ys[k], (size_t)n);
        }
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(Y0[i] - Y1[i])), bits &= Y0[i] == Y1[i];
        for (int k = 0; k < 2; k++) {
            memcpy(ys[k], X, (size_t)n * sizeof(float));
            f[k]->gelu_bias(ys[k], B, 1, n);
        }
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(Y0[i] - Y1[i])), bits &= Y0[i] == Y1[i];
        for (int k = 0; k < 2; k++) {
            memcpy(ys[k], X, (size_t)n * sizeof(float));
            f[k]->silu_glu_bias(ys[k], W, B, B, 1, n);
        }
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(Y0[i] - Y1[i]) / fmax(1.0, fabs(Y1[i]))), bits &= Y0[i] == Y1[i];
        for (int k = 0; k < 2; k++) f[k]->layernorm(X, n, W, B, 1e-5, ys[k]);
        for (int i = 0; i < n; i++) worst = fmax(worst, fabs(Y0[i] - Y1[i])), bits &= Y0[i] == Y1[i];
        int am[2];
        for (int k = 0; k < 2; k++) l[k] = f[k]->logsumexp(X, n, &am[k]);
        worst = fmax(worst, fabs(l[0] - l[1]));
        bits &= l[0] == l[1] && am[0] == am[1];
    }
    if (tol == 0) CHECK(bits, "%s: bit for bit", what);
    else CHECK(worst <= tol, "%s: within %.0e (%.3g)", what, tol, worst);
}

int main(void) {
    ms_simd cpu = ms_simd_cpu();
    for (int s = MS_SIMD_PLAIN; s <= (int)cpu; s++) {
        const vr_ops *o = vr_ops_for((ms_simd)s);
        CHECK((int)o->simd == s, "the %s form is the one asked for", ms_simd_name((ms_simd)s));
        test_exp(o, ms_simd_name((ms_simd)s));
        test_formulas(o, ms_simd_name((ms_simd)s));
        test_exact(o, ms_simd_name((ms_simd)s));
        test_places(o, ms_simd_name((ms_simd)s));
    }
    if (cpu >= MS_SIMD_AVX512)
        test_pair(vr_ops_for(MS_SIMD_AVX512), vr_ops_for(MS_SIMD_AVX2), "AVX-512 and AVX2 forms", 0);
    if (cpu >= MS_SIMD_AVX2)
        test_pair(vr_ops_for(MS_SIMD_AVX2), vr_ops_for(MS_SIMD_PLAIN), "AVX2 and plain forms", 2e-6);
    CHECK(vr_ops_for(MS_SIMD_AUTO)->simd == ms_simd_pick(MS_SIMD_AUTO), "the running form is the one picked");
    return test_summary("test_vrows");
}
