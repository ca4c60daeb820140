/* geo_network.c - the routing geometry of a network's MoE blocks and the
 * transport test (geo_network.h). */
#include "analysis/geo_network.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem_budget.h"
#include "core/progress.h"

void geo_network_split(int N, int T, double frac, int *train_seqs, int *train_tokens) {
    if (N < 2) { // one sequence: its first tokens train
        int t = (int)lround(frac * T);
        *train_seqs = 0;
        *train_tokens = t < 1 ? 1 : t > T - 1 ? T - 1 : t;
        return;
    }
    int s = (int)lround(frac * N);
    s = s < 1 ? 1 : s > N - 1 ? N - 1 : s;
    *train_seqs = s;
    *train_tokens = s * T;
}

typedef struct {
    float **X; // (L) each (N T, d)
} net_inputs;

static const float *net_inputs_get(void *ctx, int l, ms_err *err) { return ((net_inputs *)ctx)->X[l]; }

/* Every block's inputs (N T, d) floats are held at once, and each block's states and
 * PCA coordinates (N T, r) doubles with its choices: checked against the memory limit
 * before any is made (64 blocks of a long set are gigabytes). */
static int network_fits(const net_model *m, const net_evalset *E, size_t rows, ms_err *err) {
    double need = 0;
    for (int l = 0; l < m->cfg.nmoe; l++) {
        const moe_config *c = &m->moe[l].cfg;
        double r = c->n - 1 < c->d ? c->n - 1 : c->d;
        need += (double)rows * (4.0 * c->d + 8.0 * 2 * r + 4.0 * c->k);
    }
    char what[700];
    snprintf(what, sizeof what, "%s: the routing geometry of its %d MoE blocks on the %zu tokens of %s (every "
             "block's inputs, states and choices)", m->path, m->cfg.nmoe, rows, E->path);
    return ms_mem_fits(need, what, err);
}

int geometry_network(const net_model *m, const net_evalset *E, double frac, geo_opts *o, const net_par *par,
                     geometry *G, ms_err *err) {
    int L = m->cfg.nmoe, d = m->cfg.d, T = net_tokens(m, E), ts;
    size_t rows = (size_t)E->N * T;
    memset(G, 0, sizeof *G);
    if (L < 2)
        return ms_fail(err, "%s has %s: the routing geometry compares MoE layers across depth, so it needs "
                            "two or more (config.json's moe.layers)",
                       m->path, L ? "one MoE block only" : "no MoE block");
    if (network_fits(m, E, rows, err)) return -1;
    net_inputs in = {.X = ms_calloc((size_t)L, sizeof(float *))};
    for (int l = 0; l < L; l++) in.X[l] = ms_malloc(rows * d * sizeof(float)); // (N T, d)
    net_run r = {.block_inputs = in.X};
    net_eval_result res;
    progress_begin("geometry: the blocks' inputs", 0, "");
    int rc = net_evaluate(m, E, NULL, &r, par, &res, err);
    progress_end();
    if (!rc) {
        net_eval_result_free(&res);
        geo_layer_in *li = ms_malloc((size_t)L * sizeof(geo_layer_in));
        for (int l = 0; l < L; l++)
            li[l] = (geo_layer_in){.name = m->moe[l].layer, .block = m->cfg.moe_layers[l], .moe = &m->moe[l]};
        o->N = (int)rows;
        geo_network_split(E->N, T, frac, &ts, &o->ntrain);
        rc = geometry_compute(li, L, net_inputs_get, &in, o, G, err);
        free(li);
    }
    for (int l = 0; l < L; l++) free(in.X[l]);
    free(in.X);
    return rc;
}

const char *geo_transport_name(int t) {
    static const char *names[GT_COUNT] = {"canonical", "raw", "random", "specific", "mean"};
    return t >= 0 && t < GT_COUNT ? names[t] : "?";
}

/* One transport: the maps K (L, r, r) of every step into block i from block
 * i - 1 (K_i at index i), and which block is replaced (-1: every one after the first). */
typedef struct {
    const geometry *G;
    const double *K;
    int only;
} transport_edit;

/* x <- x + U (c_hat - c) for each row of X, c_hat from the row of prev */
static void transport_fn(void *ctx, int i, float *X, const float *prev, int M, size_t row0) {
    const transport_edit *t = ctx;
    const geometry *G = t->G;
    if (i == 0 || !prev || (t->only >= 0 && i != t->only)) return;
    int r = G->r, d = G->d;
    const geo_layer *a = &G->layers[i - 1], *b = &G->layers[i];
    const double *K = t->K + (size_t)i * r * r;
    double *y = ms_malloc((size_t)r * 2 * sizeof(double)), *dc = y + r;
    for (int row = 0; row < M; row++) {
        const float *xp = prev + (size_t)row * d;
        float *x = X + (size_t)row * d;
        for (int q = 0; q < r; q++) { // block i - 1's centred state, and block i's state
            double sa = 0.0, sb = 0.0;
            for (int j = 0; j < d; j++) {
                sa += a->ctl.U[(size_t)j * a->ctl.r + q] * xp[j];
                sb += b->ctl.U[(size_t)j * b->ctl.r + q] * x[j];
            }
            y[q] = sa - a->mu[q];
            dc[q] = -(sb - b->mu[q]); // - (c - mu)
        }
        for (int q = 0; q < r; q++) {
            double s = 0.0;
            for (int p = 0; p < r; p++) s += y[p] * K[(size_t)p * r + q];
            dc[q] += s; // c_hat - c = (mu + y K) - c
        }
        for (int j = 0; j < d; j++) {
            double s = 0.0;
            for (int q = 0; q < r; q++) s += b->ctl.U[(size_t)j * b->ctl.r + q] * dc[q];
            x[j] = (float)(x[j] + s);
        }
    }
    free(y);
}

/* out (r, r) = A B C^T */
static void mul3(const double *A, const double *B, const double *C, int r, double *out) {
    double *AB = ms_malloc((size_t)r * r * sizeof(double));
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, r, r, r, 1.0, A, r, B, r, 0.0, AB, r);
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, r, r, r, 1.0, AB, r, C, r, 0.0, out, r);
    free(AB);
}

/* K (L, r, r) of transport t: into block i (i >= 1) from block i - 1 */
static void transport_maps(const geometry *G, int t, double *K) {
    int L = G->L, r = G->r;
    size_t rr = (size_t)r * r;
    memset(K, 0, (size_t)L * rr * sizeof(double));
    const double *Q = G->gpa.Q, *R = G->rand_R;
    for (int i = 1; i < L; i++) {
        double *Ki = K + i * rr;
        if (t == GT_CANONICAL) mul3(Q + (i - 1) * rr, G->fit[GEO_CANONICAL].A, Q + i * rr, r, Ki);
        if (t == GT_SPECIFIC) mul3(Q + (i - 1) * rr, G->fit[GEO_CANONICAL].Al + (i - 1) * rr, Q + i * rr, r, Ki);
        if (t == GT_RANDOM) mul3(R + (i - 1) * rr, G->fit[GEO_RANDOM].A, R + i * rr, r, Ki);
        if (t == GT_RAW) memcpy(Ki, G->fit[GEO_RAW].A, rr * sizeof(double));
    }
}

static int held_loss(const net_model *m, const net_evalset *H, const transport_edit *te, const net_par *par,
                     double *loss, ms_err *err) {
    net_edit ed = {.fn = transport_fn, .ctx = (void *)te};
    net_run r = {.edit = te ? &ed : NULL};
    net_eval_result res;
    if (net_evaluate(m, H, NULL, &r, par, &res, err)) return -1;
    *loss = res.loss;
    net_eval_result_free(&res);
    return 0;
}

int geo_transport_run(const geometry *G, const net_model *m, const net_evalset *E, int ntrain_seqs,
                      const net_par *par, geo_transport *T, ms_err *err) {
    memset(T, 0, sizeof *T);
    int L = G->L, S = L - 1;
    if (ntrain_seqs < 1 || ntrain_seqs >= E->N)
        return ms_fail(err, "%s: the transport test needs held-out sequences (the evaluation set has %d, %d of "
                            "them for training)",
                       E->path, E->N, ntrain_seqs);
    // the held-out sequences (images) as an evaluation set of their own: a view, E keeps the data
    net_evalset H = *E;
    H.N = E->N - ntrain_seqs;
    if (E->ids) H.ids = E->ids + (size_t)ntrain_seqs * E->T;
    if (E->pixels) H.pixels = E->pixels + (size_t)ntrain_seqs * E->C * E->H * E->W;
    if (E->labels) H.labels = E->labels + ntrain_seqs;
    T->L = L, T->ntrain_seqs = ntrain_seqs, T->heldout_seqs = H.N;
    T->dnll = ms_malloc((size_t)GT_COUNT * S * sizeof(double));
    double *K = ms_malloc((size_t)L * G->r * G->r * sizeof(double));
    int rc = held_loss(m, &H, NULL, par, &T->loss, err);
    progress_begin("geometry: transport", (double)GT_COUNT * L, "evaluations");
    for (int t = 0; t < GT_COUNT && !rc; t++) {
        transport_maps(G, t, K);
        for (int only = 1; only <= L && !rc; only++) { // L: every block after the first at once
            transport_edit te = {.G = G, .K = K, .only = only < L ? only : -1};
            double loss = NAN;
            rc = held_loss(m, &H, &te, par, &loss, err);
            if (only < L) T->dnll[(size_t)t * S + only - 1] = loss - T->loss;
            else T->all[t] = loss - T->loss;
            progress_add(1);
        }
    }
    progress_end();
    free(K);
    if (rc) geo_transport_free(T);
    return rc;
}

void geo_transport_free(geo_transport *T) {
    free(T->dnll);
    memset(T, 0, sizeof *T);
}
