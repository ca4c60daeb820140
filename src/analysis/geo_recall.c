/* geo_recall.c - expert choices, the linear readout of logits, top-k recall
 * (geo_recall.h). */
#include "analysis/geo_recall.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_linalg.h"
#include "model/evaluator.h"
#include "model/moe_kernels.h"

int geo_choice_k(const moe_config *c) { return c->router == ROUTER_TOPK && c->k < c->n ? c->k : 1; }

void geo_choices(const moe_config *c, const float *corr, const float *S, int m, int k, int *choice) {
    int n = c->n;
    float *g = ms_malloc((size_t)(m > 0 ? m : 1) * n * sizeof(float)); // (m, n) gate weights
    moe_route_full(c, corr, S, m, g);
    for (int t = 0; t < m; t++) moe_topk(g + (size_t)t * n, n, k, choice + (size_t)t * k);
    free(g);
}

int geo_readout_fit(const double *Y, int ntrain, int q, const float *S, int n, double *B, ms_err *err) {
    int w = q + 1;
    double *X = ms_malloc((size_t)ntrain * w * sizeof(double)), *T = ms_malloc((size_t)ntrain * n * sizeof(double));
    for (int t = 0; t < ntrain; t++) {
        memcpy(X + (size_t)t * w, Y + (size_t)t * q, (size_t)q * sizeof(double));
        X[(size_t)t * w + q] = 1.0;
        for (int i = 0; i < n; i++) T[(size_t)t * n + i] = S[(size_t)t * n + i];
    }
    int rc = la_lstsq(X, ntrain, w, T, n, B, err);
    free(X);
    free(T);
    return rc ? ms_prefix(err, "the logits' readout") : 0;
}

double geo_recall(const moe_config *c, const float *corr, const double *Y, int t0, int t1, int q,
                  const double *B, const int *choice, int k) {
    int n = c->n, m = t1 - t0;
    if (m < 1) return NAN;
    float *S = ms_malloc((size_t)m * n * sizeof(float)); // (m, n) the logits read out
    int *sel = ms_malloc((size_t)m * k * sizeof(int));   // (m, k)
    for (int t = 0; t < m; t++) {
        const double *y = Y + (size_t)t * q;
        for (int i = 0; i < n; i++) {
            double v = B[(size_t)q * n + i]; // the intercept row
            for (int a = 0; a < q; a++) v += y[a] * B[(size_t)a * n + i];
            S[(size_t)t * n + i] = (float)v;
        }
    }
    geo_choices(c, corr, S, m, k, sel);
    double hits = 0.0;
    for (int t = 0; t < m; t++) {
        const int *got = sel + (size_t)t * k, *want = choice + (size_t)(t0 + t) * k;
        for (int a = 0; a < k; a++)
            for (int b = 0; b < k; b++) hits += got[a] == want[b];
    }
    free(S);
    free(sel);
    return hits / ((double)m * k);
}

int geo_recall_by_rank(const moe_config *c, const float *corr, const double *Y, int N, int ntrain, int r,
                       const float *S, const int *choice, int k, double *R, ms_err *err) {
    int n = c->n, rc = 0;
    double *Yq = ms_malloc((size_t)N * r * sizeof(double)), *B = ms_malloc((size_t)(r + 1) * n * sizeof(double));
    for (int q = 1; q <= r && !rc; q++) {
        for (int t = 0; t < N; t++) memcpy(Yq + (size_t)t * q, Y + (size_t)t * r, (size_t)q * sizeof(double));
        rc = geo_readout_fit(Yq, ntrain, q, S, n, B, err);
        if (!rc) R[q - 1] = geo_recall(c, corr, Yq + (size_t)ntrain * q, ntrain, N, q, B, choice, k);
    }
    free(Yq);
    free(B);
    return rc;
}
