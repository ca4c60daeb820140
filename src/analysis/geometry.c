/* geometry.c - the routing geometry of a model's MoE layers (geometry.h): the
 * gates first (ranks, hence the common width r), then each layer's inputs in
 * turn (states, PCA, choices; the inputs are dropped after), then what spans
 * the layers (angles, the gauge, the transitions). */
#include "analysis/geometry.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_angles.h"
#include "analysis/geo_baselines.h"
#include "analysis/geo_recall.h"
#include "core/progress.h"
#include "model/moe_kernels.h"

const char *geo_method_name(int m) {
    static const char *names[GEO_NMETHODS] = {"canonical", "raw", "random", "pca", "cca"};
    return m >= 0 && m < GEO_NMETHODS ? names[m] : "?";
}

const char *geo_method_title(int m) {
    static const char *titles[GEO_NMETHODS] = {"canonical gauge (GPA)", "raw (each layer's SVD basis)",
                                               "random gauge", "residual PCA at rank r", "CCA chain"};
    return m >= 0 && m < GEO_NMETHODS ? titles[m] : "?";
}

void geo_opts_default(geo_opts *o) {
    memset(o, 0, sizeof *o);
    o->seed = 1;
    o->gpa_max_iter = GEO_GPA_MAX_ITER;
    o->gpa_tol = GEO_GPA_TOL;
}

/* Every layer's router from its gate; the common rank r and the largest. */
static int layers_init(const geo_layer_in *in, int L, geometry *G, ms_err *err) {
    if (L < 2)
        return ms_fail(err, "%s is the only MoE layer: the routing geometry compares layers across depth, "
                            "so it needs two or more",
                       L == 1 ? in[0].name : "(none)");
    G->layers = ms_calloc((size_t)L, sizeof(geo_layer));
    G->L = L;
    for (int l = 0; l < L; l++) {
        geo_layer *y = &G->layers[l];
        const moe_model *m = in[l].moe;
        y->name = ms_strdup(in[l].name);
        y->block = in[l].block;
        y->n = m->cfg.n, y->d = m->cfg.d, y->cfg = m->cfg;
        y->k = geo_choice_k(&m->cfg);
        if (m->corr_b) {
            y->corr = ms_malloc((size_t)y->n * sizeof(float));
            memcpy(y->corr, m->corr_b, (size_t)y->n * sizeof(float));
        }
        if (l && y->d != G->d)
            return ms_fail(err, "%s has width d = %d but %s has d = %d: the layers must read one residual "
                                "stream",
                           y->name, y->d, G->layers[0].name, G->d);
        G->d = y->d;
        if (geo_control_init(&y->ctl, m->gate_w, y->n, y->d, err)) return ms_prefix(err, "%s", y->name);
        if (y->ctl.r == 0)
            return ms_fail(err, "%s: every gate row is the same after centring (rank 0): the router reads "
                                "nothing of its input, so it has no control subspace",
                           y->name);
        G->r = l == 0 || y->ctl.r < G->r ? y->ctl.r : G->r;
        G->rmax = y->ctl.r > G->rmax ? y->ctl.r : G->rmax;
    }
    return 0;
}

/* the trace of U^T S U over that of S: S (d, d), U (d, q) */
static double variance_share(const double *S, int d, const double *U, int q) {
    double *SU = ms_malloc((size_t)d * q * sizeof(double)), in = 0.0, tr = 0.0;
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, d, q, d, 1.0, S, d, U, q, 0.0, SU, q);
    for (int j = 0; j < d; j++) {
        tr += S[(size_t)j * d + j];
        for (int a = 0; a < q; a++) in += U[(size_t)j * q + a] * SU[(size_t)j * q + a];
    }
    free(SU);
    return tr > 0 ? in / tr : NAN;
}

/* -1 when the training inputs do not vary (a constant or all-zero capture): every
 * share and R^2 would be 0/0. S (d, d) their covariance, mu (d) their mean. */
static int inputs_vary(const double *S, const double *mu, int d, int ntr, ms_err *err) {
    double tr = 0.0, m2 = 0.0;
    for (int j = 0; j < d; j++) tr += S[(size_t)j * d + j], m2 += mu[j] * mu[j];
    if (tr > 1e-20 * (1.0 + m2)) return 0;
    return ms_fail(err, "its inputs do not vary (every one of the %d training tokens is the same vector%s): "
                        "the routing geometry needs inputs that do (a capture of constant or zero inputs?)",
                   ntr, m2 == 0.0 ? ", all zero" : "");
}

/* Layer l's states (the logit check on all r_l directions, then the first r
 * kept) and residual PCA, from its inputs X (N, d). */
static int layer_coordinates(geometry *G, int l, const float *X, ms_err *err) {
    geo_layer *y = &G->layers[l];
    int N = G->N, ntr = G->ntrain, r = G->r, rl = y->ctl.r, d = G->d;
    double *C = ms_malloc((size_t)N * rl * sizeof(double)); // (N, r_l) every direction's state
    geo_control_states(&y->ctl, X, N, rl, C);
    y->logit_error = geo_control_logit_error(&y->ctl, X, C, N);
    y->Y = ms_malloc((size_t)N * r * sizeof(double));
    for (int t = 0; t < N; t++) memcpy(y->Y + (size_t)t * r, C + (size_t)t * rl, (size_t)r * sizeof(double));
    free(C);
    y->mu = ms_malloc((size_t)r * sizeof(double));
    geo_center(y->Y, N, ntr, r, y->mu);
    double *mux = ms_malloc((size_t)d * sizeof(double)), *S = ms_malloc((size_t)d * d * sizeof(double));
    double *V = ms_malloc((size_t)d * r * sizeof(double)), *pmu = ms_malloc((size_t)r * sizeof(double));
    geo_input_covariance(X, N, ntr, d, mux, S);
    int rc = inputs_vary(S, mux, d, ntr, err);
    if (!rc) y->var_control = variance_share(S, d, y->ctl.U, rl);
    if (!rc) rc = geo_pca_directions(S, d, r, V, &y->var_pca, err);
    if (!rc) {
        y->P = ms_malloc((size_t)N * r * sizeof(double));
        geo_project(X, N, d, V, r, r, y->P);
        geo_center(y->P, N, ntr, r, pmu);
    }
    free(mux);
    free(S);
    free(V);
    free(pmu);
    return rc ? ms_prefix(err, "%s", y->name) : 0;
}

/* Layer l's expert choices, its readout and the recalls from the states and PCA. */
static int layer_choices(geometry *G, int l, const moe_model *m, const float *X, ms_err *err) {
    geo_layer *y = &G->layers[l];
    int N = G->N, ntr = G->ntrain, r = G->r, n = y->n, k = y->k;
    float *S = ms_malloc((size_t)N * n * sizeof(float)); // (N, n) the router's own logits
    moe_gate_logits(m, X, N, S);
    y->choice = ms_malloc((size_t)N * k * sizeof(int));
    geo_choices(&y->cfg, y->corr, S, N, k, y->choice);
    y->B = ms_malloc((size_t)(r + 1) * n * sizeof(double));
    double *Bp = ms_malloc((size_t)(r + 1) * n * sizeof(double));
    int rc = geo_readout_fit(y->Y, ntr, r, S, n, y->B, err);
    if (!rc) rc = geo_readout_fit(y->P, ntr, r, S, n, Bp, err);
    if (!rc) {
        y->recall_states = geo_recall(&y->cfg, y->corr, y->Y + (size_t)ntr * r, ntr, N, r, y->B, y->choice, k);
        y->recall_pca = geo_recall(&y->cfg, y->corr, y->P + (size_t)ntr * r, ntr, N, r, Bp, y->choice, k);
        y->recall_rank = ms_malloc((size_t)2 * r * sizeof(double));
        rc = geo_recall_by_rank(&y->cfg, y->corr, y->Y, N, ntr, r, S, y->choice, k, y->recall_rank, err);
    }
    if (!rc) rc = geo_recall_by_rank(&y->cfg, y->corr, y->P, N, ntr, r, S, y->choice, k, y->recall_rank + r, err);
    y->recall_shared = y->recall_specific = NAN;
    free(S);
    free(Bp);
    return rc ? ms_prefix(err, "%s", y->name) : 0;
}

/* residual PCA's axes signed along the depth (geo_align_signs); its recall,
 * an affine readout, is the same either way */
static void align_pca_signs(geometry *G) {
    double **P = ms_malloc((size_t)G->L * sizeof(double *));
    for (int l = 0; l < G->L; l++) P[l] = G->layers[l].P;
    geo_align_signs(P, G->L, G->N, G->ntrain, G->r);
    free(P);
}

/* every pair's principal angles, their mean (degrees) and mean cos^2 */
static int angles_compute(geometry *G, ms_err *err) {
    int L = G->L, R = G->rmax;
    G->angles = ms_malloc((size_t)L * L * R * sizeof(double));
    G->mean_angle = ms_malloc((size_t)L * L * sizeof(double));
    G->overlap = ms_malloc((size_t)L * L * sizeof(double));
    for (size_t q = 0; q < (size_t)L * L * R; q++) G->angles[q] = NAN;
    for (int a = 0; a < L; a++)
        for (int b = a; b < L; b++) {
            const geo_control *ca = &G->layers[a].ctl, *cb = &G->layers[b].ctl;
            int k = ca->r < cb->r ? ca->r : cb->r;
            double *th = G->angles + ((size_t)a * L + b) * R;
            if (geo_principal_angles(ca->U, ca->r, cb->U, cb->r, G->d, th, err))
                return ms_prefix(err, "%s and %s", G->layers[a].name, G->layers[b].name);
            double s = 0.0, c2 = 0.0;
            for (int i = 0; i < k; i++) s += th[i], c2 += cos(th[i]) * cos(th[i]);
            memcpy(G->angles + ((size_t)b * L + a) * R, th, (size_t)R * sizeof(double));
            G->mean_angle[a * L + b] = G->mean_angle[b * L + a] = s / k * 180.0 / M_PI;
            G->overlap[a * L + b] = G->overlap[b * L + a] = c2 / k;
        }
    return 0;
}

/* GPA on the training states, then every layer's canonical coordinates */
static int gauge_compute(geometry *G, const geo_opts *o, ms_err *err) {
    int L = G->L, N = G->N, r = G->r;
    const double **Y = ms_malloc((size_t)L * sizeof(double *));
    for (int l = 0; l < L; l++) Y[l] = G->layers[l].Y; // the training rows come first
    int rc = geo_gpa_fit(Y, L, G->ntrain, r, o->gpa_max_iter, o->gpa_tol, &G->gpa, err);
    free(Y);
    for (int l = 0; l < L && !rc; l++) {
        geo_layer *y = &G->layers[l];
        y->Z = ms_malloc((size_t)N * r * sizeof(double));
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, r, r, 1.0, y->Y, r, G->gpa.Q + (size_t)l * r * r,
                    r, 0.0, y->Z, r);
    }
    return rc;
}

/* the transitions in each method's coordinates */
static int fits_compute(geometry *G, const geo_opts *o, ms_err *err) {
    int L = G->L, N = G->N, r = G->r, rc = 0;
    const double **Y = ms_malloc((size_t)L * sizeof(double *));
    double **tmp = ms_malloc((size_t)L * sizeof(double *));
    for (int l = 0; l < L; l++) tmp[l] = ms_malloc((size_t)N * r * sizeof(double));
    rng_t g;
    rng_seed(&g, o->seed);
    for (int m = 0; m < GEO_NMETHODS && !rc; m++) {
        const double *const *raw = (const double *const *)Y;
        for (int l = 0; l < L; l++) Y[l] = G->layers[l].Y;
        if (m == GEO_RANDOM) {
            G->rand_R = ms_malloc((size_t)L * r * r * sizeof(double));
            rc = geo_random_gauge(raw, L, N, r, &g, tmp, G->rand_R, err);
        }
        if (m == GEO_CCA) rc = geo_cca_chain(raw, L, N, G->ntrain, r, tmp, err);
        for (int l = 0; l < L && !rc; l++)
            Y[l] = m == GEO_CANONICAL ? G->layers[l].Z
                 : m == GEO_PCA       ? G->layers[l].P
                 : m == GEO_RANDOM || m == GEO_CCA ? tmp[l]
                                                   : G->layers[l].Y;
        if (!rc) rc = geo_fit_transitions(Y, L, N, G->ntrain, r, &G->fit[m], err);
        if (rc) ms_prefix(err, "%s", geo_method_title(m));
    }
    for (int l = 0; l < L; l++) free(tmp[l]);
    free(tmp);
    free(Y);
    return rc;
}

/* layer l's choices from the states the transitions predict from layer l - 1
 * (canonical gauge), taken back into its raw basis for the readout */
static void transported_recall(geometry *G) {
    int N = G->N, ntr = G->ntrain, r = G->r, m = N - ntr;
    const geo_fit *f = &G->fit[GEO_CANONICAL];
    double *zh = ms_malloc((size_t)m * r * sizeof(double)), *yh = ms_malloc((size_t)m * r * sizeof(double));
    for (int l = 1; l < G->L; l++) {
        geo_layer *y = &G->layers[l];
        const double *Q = G->gpa.Q + (size_t)l * r * r, *zp = G->layers[l - 1].Z + (size_t)ntr * r;
        for (int which = 0; which < 2; which++) {
            const double *A = which ? f->Al + (size_t)(l - 1) * r * r : f->A;
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, r, r, 1.0, zp, r, A, r, 0.0, zh, r);
            // y = z Q^T (Q orthogonal)
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, r, r, 1.0, zh, r, Q, r, 0.0, yh, r);
            double rec = geo_recall(&y->cfg, y->corr, yh, ntr, N, r, y->B, y->choice, y->k);
            if (which) y->recall_specific = rec;
            else y->recall_shared = rec;
        }
    }
    free(zh);
    free(yh);
}

int geometry_compute(const geo_layer_in *in, int L, geo_inputs_fn get, void *ctx, const geo_opts *o,
                     geometry *G, ms_err *err) {
    memset(G, 0, sizeof *G);
    G->N = o->N, G->ntrain = o->ntrain, G->seed = o->seed;
    int rc = layers_init(in, L, G, err);
    if (!rc && (G->ntrain < G->r + 2 || G->N - G->ntrain < 1))
        rc = ms_fail(err, "%d tokens split %d for training / %d held out: the common rank r = %d needs more "
                          "than %d training tokens and at least one held out",
                     G->N, G->ntrain, G->N - G->ntrain, G->r, G->r + 1);
    progress_begin("geometry: layers", L, "layers");
    for (int l = 0; l < L && !rc; l++) {
        if (progress_cancelled()) { // a listener's cancel (progress.h): the explorer stopping
            rc = ms_fail(err, "cancelled");
            break;
        }
        const float *X = get(ctx, l, err);
        if (!X) rc = -1;
        if (!rc) rc = layer_coordinates(G, l, X, err);
        if (!rc) rc = layer_choices(G, l, in[l].moe, X, err);
        progress_set(l + 1);
    }
    progress_end();
    if (!rc) align_pca_signs(G);
    if (!rc) rc = angles_compute(G, err);
    if (!rc) rc = gauge_compute(G, o, err);
    if (!rc) rc = fits_compute(G, o, err);
    if (!rc) transported_recall(G);
    if (rc) geometry_free(G);
    return rc;
}

void geometry_free(geometry *G) {
    for (int l = 0; G->layers && l < G->L; l++) {
        geo_layer *y = &G->layers[l];
        free(y->name);
        free(y->corr);
        geo_control_free(&y->ctl);
        free(y->mu);
        free(y->Y);
        free(y->Z);
        free(y->P);
        free(y->B);
        free(y->recall_rank);
        free(y->choice);
    }
    free(G->layers);
    free(G->angles);
    free(G->mean_angle);
    free(G->overlap);
    free(G->rand_R);
    geo_gpa_free(&G->gpa);
    for (int m = 0; m < GEO_NMETHODS; m++) geo_fit_free(&G->fit[m]);
    memset(G, 0, sizeof *G);
}
