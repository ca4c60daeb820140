/* test_geometry.c - the routing geometry (analysis/geometry.h) on constructed
 * systems, against what they were built to show:
 *   - LAPACK's wrappers: an SVD rebuilds its matrix, eigenvectors, least squares
 *     on an exact system, Procrustes finds a planted rotation;
 *   - a router's rank: generic n - 1, duplicate rows (reported), n - 1 > d, and
 *     rank 0 refused; the states give back the centred logits;
 *   - a planted system (states from one known A, a random subspace and a random
 *     gauge per layer, noise outside the subspaces): eta_share ~ 1, A recovered
 *     up to the gauge, the raw and random gauges far lower; without noise R^2 ~ 1
 *     shared and specific alike;
 *   - the gauge is exact: rotating one layer's states by any Q in O(r) leaves
 *     GPA's residual and every canonical R^2 as they were; one rotation of the
 *     whole residual stream (inputs and gates) changes no reported invariant;
 *     adding a vector to every gate row changes nothing;
 *   - refusals: one layer, widths that differ, too few training tokens.
 * The numbers against an independent numpy/scipy version: tests/oracle/test_geometry.py,
 * which runs this program as `test_geometry --run IN.safetensors OUT.json` (the
 * layers' gates and inputs in, the JSON report out). */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_angles.h"
#include "analysis/geo_baselines.h"
#include "analysis/geo_linalg.h"
#include "analysis/geo_report.h"
#include "analysis/geometry.h"
#include "io/safetensors.h"
#include "testlib.h"

static void gauss(double *x, size_t n, double s, rng_t *g) {
    for (size_t i = 0; i < n; i++) x[i] = s * rng_normal(g);
}

static double max_abs_diff(const double *a, const double *b, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(a[i] - b[i]));
    return m;
}

/* C (m, p) = A (m, k) B (k, p) */
static void mul(const double *A, const double *B, int m, int k, int p, double *C) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, p, k, 1.0, A, k, B, p, 0.0, C, p);
}

static void test_linalg(void) {
    rng_t g;
    rng_seed(&g, 7);
    int m = 7, n = 5;
    double A[35], s[5], U[35], VT[25], US[35], R[35];
    gauss(A, 35, 1, &g);
    ms_err err;
    CHECK(la_svd(A, m, n, s, U, VT, &err) == 0, "svd: %s", err.msg);
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) US[i * n + j] = U[i * n + j] * s[j];
    mul(US, VT, m, n, n, R);
    CHECK(max_abs_diff(R, A, 35) < 1e-12, "U S V^T rebuilds A (%.3g)", max_abs_diff(R, A, 35));
    CHECK(s[0] >= s[1] && s[1] >= s[4] && s[4] > 0, "singular values descending");
    double AT[35]; // the wide case (5, 7)
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) AT[j * m + i] = A[i * n + j];
    double s2[5];
    CHECK(la_svd(AT, n, m, s2, NULL, NULL, &err) == 0 && max_abs_diff(s, s2, 5) < 1e-12, "A^T: the same values");
    // a symmetric matrix: S v = w v
    double S[25], w[5], Sv[5];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, n, n, m, 1.0, A, n, A, n, 0.0, S, n);
    double S0[25];
    memcpy(S0, S, sizeof S);
    CHECK(la_eigh(S, n, w, &err) == 0 && w[0] <= w[4], "eigh ascending");
    cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1.0, S0, n, S + 4 * n, 1, 0.0, Sv, 1);
    for (int j = 0; j < n; j++) Sv[j] -= w[4] * S[4 * n + j];
    CHECK(cblas_dnrm2(n, Sv, 1) < 1e-10 * w[4], "the top eigenvector (row 4)");
    CHECK(fabs(w[4] - s[0] * s[0]) < 1e-10 * w[4], "its eigenvalue is sigma_1^2");
    // least squares on an exact system, then Procrustes of a planted rotation
    double Bt[15], Y[21], B[15], Q[9], Q2[9], X3[21];
    gauss(Bt, 15, 1, &g);
    mul(A, Bt, m, n, 3, Y);
    CHECK(la_lstsq(A, m, n, Y, 3, B, &err) == 0 && max_abs_diff(B, Bt, 15) < 1e-10, "lstsq exact");
    CHECK(la_random_orthogonal(&g, 3, Q, &err) == 0, "random rotation");
    double QtQ[9];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 3, 3, 3, 1.0, Q, 3, Q, 3, 0.0, QtQ, 3);
    double I3[9] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
    CHECK(max_abs_diff(QtQ, I3, 9) < 1e-12, "Q^T Q = I");
    gauss(X3, 21, 1, &g);
    mul(X3, Q, m, 3, 3, Y);
    CHECK(la_procrustes(X3, Y, m, 3, Q2, &err) == 0 && max_abs_diff(Q, Q2, 9) < 1e-10, "Procrustes finds Q");
}

/* ---- layers built in memory ---- */

typedef struct {
    int L, N, d, n;
    moe_model *moe;  // (L)
    float **X;       // (L) each (N, d)
    char names[8][24];
    geo_layer_in in[8];
} sys_t;

static const float *sys_inputs(void *ctx, int l, ms_err *err) { return ((sys_t *)ctx)->X[l]; }

static void sys_alloc(sys_t *s, int L, int N, int d, int n, int k) {
    memset(s, 0, sizeof *s);
    s->L = L, s->N = N, s->d = d, s->n = n;
    s->moe = ms_calloc((size_t)L, sizeof(moe_model));
    s->X = ms_calloc((size_t)L, sizeof(float *));
    moe_config c = {.n = n, .d = d, .h = 1, .k = k, .router = k < n ? ROUTER_TOPK : ROUTER_DENSE,
                    .has_gate_bias = 1};
    for (int l = 0; l < L; l++) {
        moe_alloc_shell(&s->moe[l], &c);
        s->X[l] = ms_calloc((size_t)N * d, sizeof(float));
        snprintf(s->names[l], sizeof s->names[l], "layer%d", l);
        s->in[l] = (geo_layer_in){.name = s->names[l], .block = l, .moe = &s->moe[l]};
    }
}

static void sys_free(sys_t *s) {
    for (int l = 0; l < s->L; l++) {
        moe_free(&s->moe[l]);
        free(s->X[l]);
    }
    free(s->moe);
    free(s->X);
}

static int sys_geometry(sys_t *s, int ntrain, geometry *G, ms_err *err) {
    geo_opts o;
    geo_opts_default(&o);
    o.N = s->N, o.ntrain = ntrain;
    return geometry_compute(s->in, s->L, sys_inputs, s, &o, G, err);
}

/* A planted system: z_0 ~ N(0, I_r), z_{l+1} = z_l A + eps noise with A symmetric
 * (eigenvalues 0.6 .. 0.95 in a random basis); layer l's control subspace a random
 * U_l (d, r), its gauge a random G_l: x_l = (z_l G_l) U_l^T + noise outside U_l +
 * an offset; the gate W_l = M_l U_l^T + 1 v_l^T (M_l's rows centred: the centred
 * router reads exactly U_l), a random bias. A (r, r) and z_0 (N, r) are returned. */
static void plant(sys_t *s, int r, double eps, uint64_t seed, double *A, double *z0) {
    int L = s->L, N = s->N, d = s->d, n = s->n;
    rng_t g;
    rng_seed(&g, seed);
    ms_err err;
    double *E = ms_malloc((size_t)r * r * sizeof(double)), *T = ms_malloc((size_t)r * r * sizeof(double));
    la_random_orthogonal(&g, r, E, &err);
    for (int a = 0; a < r; a++)
        for (int b = 0; b < r; b++) T[a * r + b] = E[a * r + b] * (0.6 + 0.35 * a / (r > 1 ? r - 1 : 1));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, r, r, 1.0, T, r, E, r, 0.0, A, r); // E D E^T
    double *z = ms_malloc((size_t)N * r * sizeof(double)), *zn = ms_malloc((size_t)N * r * sizeof(double));
    double *c = ms_malloc((size_t)N * r * sizeof(double)), *Gl = ms_malloc((size_t)r * r * sizeof(double));
    double *U = ms_malloc((size_t)d * r * sizeof(double)), *Gd = ms_malloc((size_t)d * r * sizeof(double));
    double *M = ms_malloc((size_t)n * r * sizeof(double)), *nz = ms_malloc((size_t)d * sizeof(double));
    double *sv = ms_malloc((size_t)r * sizeof(double)), *VT = ms_malloc((size_t)r * r * sizeof(double));
    gauss(z, (size_t)N * r, 1.0, &g);
    memcpy(z0, z, (size_t)N * r * sizeof(double));
    for (int l = 0; l < L; l++) {
        if (l) {
            mul(z, A, N, r, r, zn);
            for (size_t q = 0; q < (size_t)N * r; q++) z[q] = zn[q] + eps * rng_normal(&g);
        }
        la_random_orthogonal(&g, r, Gl, &err);
        mul(z, Gl, N, r, r, c);
        gauss(Gd, (size_t)d * r, 1.0, &g);
        la_svd(Gd, d, r, sv, U, VT, &err); // U (d, r) orthonormal
        for (int t = 0; t < N; t++) {
            for (int j = 0; j < d; j++) nz[j] = 2.0 * rng_normal(&g) + 0.5 * (j % 3);
            double p[64] = {0}; // remove the noise's part inside span(U)
            for (int a = 0; a < r; a++)
                for (int j = 0; j < d; j++) p[a] += U[j * r + a] * nz[j];
            for (int j = 0; j < d; j++) {
                double v = nz[j];
                for (int a = 0; a < r; a++) v += U[j * r + a] * (c[(size_t)t * r + a] - p[a]);
                s->X[l][(size_t)t * d + j] = (float)v;
            }
        }
        gauss(M, (size_t)n * r, 1.0, &g);
        for (int a = 0; a < r; a++) {
            double mean = 0;
            for (int i = 0; i < n; i++) mean += M[i * r + a];
            for (int i = 0; i < n; i++) M[i * r + a] -= mean / n;
        }
        double v[64];
        gauss(v, (size_t)d, 1.0, &g);
        for (int i = 0; i < n; i++) {
            for (int j = 0; j < d; j++) {
                double w = v[j];
                for (int a = 0; a < r; a++) w += M[i * r + a] * U[j * r + a];
                s->moe[l].gate_w[(size_t)i * d + j] = (float)w;
            }
            s->moe[l].gate_b[i] = (float)(0.2 * rng_normal(&g));
        }
    }
    free(E), free(T), free(z), free(zn), free(c), free(Gl), free(U), free(Gd), free(M), free(nz), free(sv), free(VT);
}

static void test_rank(void) {
    ms_err err;
    rng_t g;
    rng_seed(&g, 3);
    float W[8 * 6];
    for (int q = 0; q < 48; q++) W[q] = (float)rng_normal(&g);
    geo_control c;
    CHECK(geo_control_init(&c, W, 5, 6, &err) == 0 && c.r == 4 && c.rmax == 4 && c.dup_i < 0, "generic: n - 1 = 4 (r %d)", c.r);
    double WtU[4 * 4];
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 4, 4, 6, 1.0, c.U, 4, c.U, 4, 0.0, WtU, 4);
    double I4[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    CHECK(max_abs_diff(WtU, I4, 16) < 1e-12, "U orthonormal");
    float X[10 * 6];
    for (int q = 0; q < 60; q++) X[q] = (float)rng_normal(&g);
    double C[10 * 4];
    geo_control_states(&c, X, 10, 4, C);
    double e = geo_control_logit_error(&c, X, C, 10);
    CHECK(e < 1e-13, "centred logits from the states (%.3g)", e);
    geo_control_free(&c);
    memcpy(W + 3 * 6, W + 1 * 6, 6 * sizeof(float)); // rows 1 and 3 equal
    CHECK(geo_control_init(&c, W, 5, 6, &err) == 0 && c.r == 3 && c.dup_i == 1 && c.dup_j == 3,
          "duplicate rows: rank 3, rows 1 and 3 named (r %d, %d %d)", c.r, c.dup_i, c.dup_j);
    geo_control_free(&c);
    CHECK(geo_control_init(&c, W, 8, 3, &err) == 0 && c.r == 3 && c.rmax == 3, "n - 1 > d: rank d = 3 (r %d)", c.r);
    geo_control_free(&c);
    for (int i = 1; i < 5; i++) memcpy(W + i * 6, W, 6 * sizeof(float)); // every row the same
    CHECK(geo_control_init(&c, W, 5, 6, &err) == 0 && c.r == 0, "every row equal: rank 0 (r %d)", c.r);
    geo_control_free(&c);
}

static void test_planted(void) {
    ms_err err;
    int r = 5;
    double A[25], *z0 = ms_malloc((size_t)3000 * r * sizeof(double));
    for (int pass = 0; pass < 2; pass++) {
        sys_t s;
        sys_alloc(&s, 4, 3000, 16, r + 1, 2);
        double eps = pass ? 0.0 : 0.05;
        plant(&s, r, eps, 11 + pass, A, z0);
        geometry G;
        int rc = sys_geometry(&s, 2400, &G, &err);
        CHECK(rc == 0, "planted: %s", err.msg);
        if (rc) {
            sys_free(&s);
            continue;
        }
        const geo_fit *f = &G.fit[GEO_CANONICAL];
        CHECK(G.r == r && G.gpa.converged, "rank %d, GPA converged in %d", G.r, G.gpa.iterations);
        for (int l = 0; l < 4; l++) {
            CHECK(G.layers[l].logit_error < 1e-10, "layer %d: logits from the states (%.3g)", l, G.layers[l].logit_error);
            CHECK(G.layers[l].recall_states > 0.999, "layer %d: recall from the states %.4f", l, G.layers[l].recall_states);
        }
        if (pass) {
            // GPA's gauge is the most alike, not exactly the planted one: float32-level
            CHECK(f->shared > 1 - 1e-5 && fabs(f->shared - f->specific) < 1e-5,
                  "noise-free: R^2 shared %.9f = specific %.9f ~ 1", f->shared, f->specific);
        } else {
            CHECK(f->eta > 0.99 && f->eta < 1.005, "eta_share %.4f ~ 1", f->eta);
            CHECK(f->shared > 0.95, "shared R^2 %.4f", f->shared);
            CHECK(G.fit[GEO_RAW].shared < f->shared - 0.2 && G.fit[GEO_RANDOM].shared < f->shared - 0.2,
                  "raw %.3f and random %.3f gauges far below %.3f", G.fit[GEO_RAW].shared, G.fit[GEO_RANDOM].shared,
                  f->shared);
            CHECK(fabs(G.fit[GEO_RAW].specific - f->specific) < 1e-9, "the specific fit is the gauge's own");
            for (int l = 1; l < 4; l++)
                CHECK(G.layers[l].recall_shared > 0.8, "layer %d: transported recall %.3f", l, G.layers[l].recall_shared);
        }
        // A up to the gauge: Z_l ~ (z_l - mean) R^T for one rotation R (found from the
        // first layer), so A_hat ~ R A R^T
        int ntr = 2400;
        double mu[5] = {0}, R[25], RA[25], RAR[25];
        for (int t = 0; t < ntr; t++)
            for (int a = 0; a < r; a++) mu[a] += z0[(size_t)t * r + a] / ntr;
        for (int t = 0; t < 3000; t++)
            for (int a = 0; a < r; a++) z0[(size_t)t * r + a] -= mu[a];
        la_procrustes(G.layers[0].Z, z0, ntr, r, R, &err);
        mul(R, A, r, r, r, RA);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, r, r, 1.0, RA, r, R, r, 0.0, RAR, r);
        CHECK(max_abs_diff(RAR, f->A, 25) < (pass ? 0.01 : 0.03), "A recovered up to the gauge (%.3g)",
              max_abs_diff(RAR, f->A, 25));
        geometry_free(&G);
        sys_free(&s);
    }
    free(z0);
}

/* is every invariant of G2 within tol of G's: ranks, singular values, angles,
 * variance shares, recalls, GPA's residual and R^2 of the methods in mask */
static void same_invariants(const geometry *G, const geometry *G2, double tol, unsigned mask, const char *what) {
    int L = G->L, ok = G2->L == L && G2->r == G->r;
    double worst = 0.0;
    for (int l = 0; ok && l < L; l++) {
        const geo_layer *a = &G->layers[l], *b = &G2->layers[l];
        ok = a->ctl.r == b->ctl.r;
        for (int i = 0; ok && i < a->ctl.r; i++) worst = fmax(worst, fabs(a->ctl.sv[i] - b->ctl.sv[i]) / a->ctl.sv[0]);
        worst = fmax(worst, fabs(a->var_control - b->var_control));
        worst = fmax(worst, fabs(a->var_pca - b->var_pca));
        worst = fmax(worst, fabs(a->recall_states - b->recall_states));
        worst = fmax(worst, fabs(a->recall_pca - b->recall_pca));
        if (l) worst = fmax(worst, fabs(a->recall_shared - b->recall_shared));
    }
    for (size_t q = 0; ok && q < (size_t)L * L; q++) worst = fmax(worst, fabs(G->mean_angle[q] - G2->mean_angle[q]) / 90);
    worst = fmax(worst, fabs(G->gpa.residual - G2->gpa.residual));
    worst = fmax(worst, fabs(G->gpa.residual0 - G2->gpa.residual0));
    for (int m = 0; ok && m < GEO_NMETHODS; m++) {
        if (!(mask >> m & 1)) continue;
        const geo_fit *f = &G->fit[m], *f2 = &G2->fit[m];
        worst = fmax(worst, fmax(fabs(f->shared - f2->shared), fabs(f->specific - f2->specific)));
        worst = fmax(worst, fmax(fabs(f->identity - f2->identity), fabs(f->eta - f2->eta)));
        for (int l = 0; l + 1 < L; l++) worst = fmax(worst, fabs(f->r2_shared[l] - f2->r2_shared[l]));
    }
    CHECK(ok && worst <= tol, "%s: every invariant unchanged (worst %.3g, tol %.3g)", what, worst, tol);
}

/* Every layer's axes negated at random (the signs an eigensolver or SVD may give):
 * residual PCA's transitions and the identity gauge's residual stay put. */
static void test_sign_flips(const geometry *G) {
    int L = G->L, N = G->N, ntr = G->ntrain, r = G->r;
    rng_t g;
    rng_seed(&g, 9);
    double *P[8], *Y[8];
    for (int l = 0; l < L; l++) {
        P[l] = ms_malloc((size_t)N * r * sizeof(double));
        Y[l] = ms_malloc((size_t)N * r * sizeof(double));
        for (int a = 0; a < r; a++) {
            double sp = rng_uniform(&g) < 0.5 ? -1.0 : 1.0, sy = rng_uniform(&g) < 0.5 ? -1.0 : 1.0;
            for (int t = 0; t < N; t++) {
                P[l][(size_t)t * r + a] = sp * G->layers[l].P[(size_t)t * r + a];
                Y[l][(size_t)t * r + a] = sy * G->layers[l].Y[(size_t)t * r + a];
            }
        }
    }
    ms_err err;
    geo_align_signs(P, L, N, ntr, r);
    geo_fit f;
    geo_gpa gp;
    CHECK(geo_fit_transitions((const double *const *)P, L, N, ntr, r, &f, &err) == 0, "fit: %s", err.msg);
    CHECK(geo_gpa_fit((const double *const *)Y, L, ntr, r, GEO_GPA_MAX_ITER, GEO_GPA_TOL, &gp, &err) == 0, "gpa: %s",
          err.msg);
    const geo_fit *f0 = &G->fit[GEO_PCA];
    double w = fmax(fmax(fabs(f.shared - f0->shared), fabs(f.identity - f0->identity)), fabs(f.eta - f0->eta));
    CHECK(w < 1e-9, "residual PCA's axes negated at random: shared, identity R^2, eta unchanged (%.3g)", w);
    CHECK(fabs(gp.residual0 - G->gpa.residual0) < 1e-9 && fabs(gp.residual - G->gpa.residual) < 1e-9,
          "the states' axes negated at random: GPA's residual and the identity gauge's unchanged (%.3g, %.3g)",
          fabs(gp.residual0 - G->gpa.residual0), fabs(gp.residual - G->gpa.residual));
    geo_fit_free(&f);
    geo_gpa_free(&gp);
    for (int l = 0; l < L; l++) free(P[l]), free(Y[l]);
}

static void test_gauge_exact(void) {
    ms_err err;
    int r = 4, N = 1500, ntr = 1200, L = 3, d = 12;
    double A[16], *z0 = ms_malloc((size_t)N * r * sizeof(double));
    sys_t s;
    sys_alloc(&s, L, N, d, r + 1, 2);
    plant(&s, r, 0.1, 21, A, z0);
    geometry G;
    CHECK(sys_geometry(&s, ntr, &G, &err) == 0, "gauge: %s", err.msg);
    test_sign_flips(&G);
    // one layer's states turned by a random Q: GPA and the fits on them again
    rng_t g;
    rng_seed(&g, 5);
    double Q[16];
    la_random_orthogonal(&g, r, Q, &err);
    const double *Y[3];
    double *Y1 = ms_malloc((size_t)N * r * sizeof(double)), *Z[3];
    mul(G.layers[1].Y, Q, N, r, r, Y1);
    for (int l = 0; l < L; l++) Y[l] = l == 1 ? Y1 : G.layers[l].Y;
    geo_gpa gp;
    CHECK(geo_gpa_fit(Y, L, ntr, r, GEO_GPA_MAX_ITER, GEO_GPA_TOL, &gp, &err) == 0, "gpa: %s", err.msg);
    for (int l = 0; l < L; l++) {
        Z[l] = ms_malloc((size_t)N * r * sizeof(double));
        mul(Y[l], gp.Q + (size_t)l * r * r, N, r, r, Z[l]);
    }
    geo_fit f;
    CHECK(geo_fit_transitions((const double *const *)Z, L, N, ntr, r, &f, &err) == 0, "fit: %s", err.msg);
    const geo_fit *f0 = &G.fit[GEO_CANONICAL];
    double worst = fabs(gp.residual - G.gpa.residual);
    for (int l = 0; l + 1 < L; l++)
        worst = fmax(worst, fmax(fabs(f.r2_shared[l] - f0->r2_shared[l]), fabs(f.r2_specific[l] - f0->r2_specific[l])));
    CHECK(worst < 1e-9, "a layer's basis turned by Q: GPA's residual and R^2 unchanged (%.3g)", worst);
    CHECK(max_abs_diff(f.A, f0->A, 16) < 1e-8, "and the shared A itself (%.3g)", max_abs_diff(f.A, f0->A, 16));
    geo_fit_free(&f);
    geo_gpa_free(&gp);
    for (int l = 0; l < L; l++) free(Z[l]);
    free(Y1);
    // the whole residual stream turned by O (inputs x O, gates W O): nothing changes
    double *O = ms_malloc((size_t)d * d * sizeof(double)), *xr = ms_malloc((size_t)d * sizeof(double));
    la_random_orthogonal(&g, d, O, &err);
    sys_t s2;
    sys_alloc(&s2, L, N, d, r + 1, 2);
    for (int l = 0; l < L; l++) {
        for (int t = 0; t < N + r + 1; t++) { // the N inputs, then the n gate rows
            float *row = t < N ? s.X[l] + (size_t)t * d : s.moe[l].gate_w + (size_t)(t - N) * d;
            float *dst = t < N ? s2.X[l] + (size_t)t * d : s2.moe[l].gate_w + (size_t)(t - N) * d;
            for (int j = 0; j < d; j++) {
                xr[j] = 0;
                for (int q = 0; q < d; q++) xr[j] += row[q] * O[q * d + j];
            }
            for (int j = 0; j < d; j++) dst[j] = (float)xr[j];
        }
        memcpy(s2.moe[l].gate_b, s.moe[l].gate_b, (size_t)(r + 1) * sizeof(float));
    }
    geometry G2;
    CHECK(sys_geometry(&s2, ntr, &G2, &err) == 0, "rotated stream: %s", err.msg);
    // the bases' signs come out otherwise (each layer's SVD and PCA axes), and
    // residual PCA and the identity gauge's residual must not see it
    same_invariants(&G, &G2, 2e-5, 1u << GEO_CANONICAL | 1u << GEO_PCA | 1u << GEO_CCA,
                    "the residual stream turned");
    geometry_free(&G2);
    // one vector added to every gate row of every layer
    for (int l = 0; l < L; l++) {
        memcpy(s2.X[l], s.X[l], (size_t)N * d * sizeof(float));
        double v[16];
        gauss(v, (size_t)d, 3.0, &g);
        for (int i = 0; i <= r; i++)
            for (int j = 0; j < d; j++) s2.moe[l].gate_w[i * d + j] = s.moe[l].gate_w[i * d + j] + (float)v[j];
    }
    CHECK(sys_geometry(&s2, ntr, &G2, &err) == 0, "translated gates: %s", err.msg);
    same_invariants(&G, &G2, 2e-5, 1u << GEO_CANONICAL | 1u << GEO_PCA | 1u << GEO_CCA,
                    "a vector added to every gate row");
    geometry_free(&G2);
    sys_free(&s2);
    free(O), free(xr), free(z0);
    geometry_free(&G);
    sys_free(&s);
}

static void test_refusals(void) {
    ms_err err;
    geometry G;
    sys_t s;
    sys_alloc(&s, 3, 200, 6, 4, 2);
    rng_t g;
    rng_seed(&g, 9);
    for (int l = 0; l < 3; l++) {
        for (int q = 0; q < 24; q++) s.moe[l].gate_w[q] = (float)rng_normal(&g);
        for (int q = 0; q < 1200; q++) s.X[l][q] = (float)rng_normal(&g);
    }
    geo_opts o;
    geo_opts_default(&o);
    o.N = 200, o.ntrain = 150;
    CHECK(geometry_compute(s.in, 1, sys_inputs, &s, &o, &G, &err) == -1 && strstr(err.msg, "layer0 is the only MoE layer"),
          "one layer: %s", err.msg);
    o.ntrain = 4; // r = 3 needs more than 4
    CHECK(geometry_compute(s.in, 3, sys_inputs, &s, &o, &G, &err) == -1 && strstr(err.msg, "training"),
          "too few training tokens: %s", err.msg);
    o.ntrain = 200;
    CHECK(geometry_compute(s.in, 3, sys_inputs, &s, &o, &G, &err) == -1 && strstr(err.msg, "held out"),
          "nothing held out: %s", err.msg);
    o.ntrain = 150;
    for (int i = 1; i < 4; i++) memcpy(s.moe[2].gate_w + i * 6, s.moe[2].gate_w, 6 * sizeof(float));
    CHECK(geometry_compute(s.in, 3, sys_inputs, &s, &o, &G, &err) == -1 && strstr(err.msg, "layer2") &&
              strstr(err.msg, "rank 0"),
          "a rank-0 router named: %s", err.msg);
    memcpy(s.moe[2].gate_w + 6, s.moe[1].gate_w, 6 * sizeof(float)); // rank 1 now: reported, used
    CHECK(geometry_compute(s.in, 3, sys_inputs, &s, &o, &G, &err) == 0 && G.r == 1 && G.layers[2].ctl.r == 1 &&
              G.layers[2].ctl.dup_i >= 0,
          "a rank-deficient router: common rank %d, duplicate rows %d %d", G.r, G.layers[2].ctl.dup_i,
          G.layers[2].ctl.dup_j);
    geometry_free(&G);
    moe_config c = s.moe[1].cfg;
    moe_free(&s.moe[1]);
    c.d = 5;
    moe_alloc_shell(&s.moe[1], &c);
    CHECK(geometry_compute(s.in, 3, sys_inputs, &s, &o, &G, &err) == -1 && strstr(err.msg, "width"),
          "widths that differ: %s", err.msg);
    sys_free(&s);
}

/* The oracle's driver: IN holds gate.L [n, d], bias.L [n], inputs.L [N, d] for
 * L = 0 .. layers-1 and the metadata layers, ntrain, k, seed; OUT gets the JSON. */
static int run_driver(const char *in, const char *out) {
    ms_err err;
    st_file f;
    if (st_open(&f, in, &err)) return printf("%s\n", err.msg), 1;
    int L = atoi(st_meta(&f, "layers")), k = atoi(st_meta(&f, "k"));
    char name[32];
    snprintf(name, sizeof name, "inputs.0");
    const st_tensor *t = st_find(&f, name);
    snprintf(name, sizeof name, "gate.0");
    const st_tensor *tg = st_find(&f, name);
    sys_t s;
    sys_alloc(&s, L, (int)t->shape[0], (int)t->shape[1], (int)tg->shape[0], k);
    int rc = 0;
    for (int l = 0; l < L && !rc; l++) {
        snprintf(name, sizeof name, "gate.%d", l);
        rc = st_read_f32(&f, st_find(&f, name), s.moe[l].gate_w, &err);
        snprintf(name, sizeof name, "bias.%d", l);
        if (!rc) rc = st_read_f32(&f, st_find(&f, name), s.moe[l].gate_b, &err);
        snprintf(name, sizeof name, "inputs.%d", l);
        if (!rc) rc = st_read_f32(&f, st_find(&f, name), s.X[l], &err);
    }
    geo_opts o;
    geo_opts_default(&o);
    o.N = s.N, o.ntrain = atoi(st_meta(&f, "ntrain"));
    o.seed = strtoull(st_meta(&f, "seed"), NULL, 10);
    st_close(&f);
    geometry G;
    if (!rc) rc = geometry_compute(s.in, L, sys_inputs, &s, &o, &G, &err);
    if (!rc) {
        rc = geometry_write_json(&G, NULL, out, &err);
        geometry_free(&G);
    }
    sys_free(&s);
    if (rc) printf("%s\n", err.msg);
    return rc ? 1 : 0;
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "--run")) return run_driver(argv[2], argv[3]);
    test_linalg();
    test_rank();
    test_planted();
    test_gauge_exact();
    test_refusals();
    return test_summary("test_geometry");
}
