/* net_landscape.c - the layer-only proxy beside a network's landscape
 * (net_landscape.h). */
#include "network/net_landscape.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "landscape/rank.h"
#include "network/net_budget.h"

int net_block_inputs(const net_model *A, const net_evalset *E, int block, const net_par *par,
                     evalset *out, ms_err *err) {
    memset(out, 0, sizeof *out);
    if (net_inputs_mem_check(A, E, block, err)) return -1;
    size_t rows = (size_t)E->N * net_tokens(A, E);
    out->inputs = ms_malloc(rows * A->cfg.d * sizeof(float)); // (N T, d)
    float *in[NET_MAX_LAYERS] = {0};
    in[block] = out->inputs;
    net_run r = {.block_inputs = in, .inputs_only = 1}; // no block after it, no head: the same inputs
    net_eval_result res;
    if (net_evaluate(A, E, NULL, &r, par, &res, err)) {
        evalset_free(out);
        return -1;
    }
    net_eval_result_free(&res);
    out->N = (int)rows;
    out->d = A->cfg.d;
    out->path = ms_strdup(E->path);
    out->row_unit = "tokens";
    return 0;
}

static double secs_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int net_landscape_proxy(const moe_model *A, const moe_model *B, const evalset *inputs,
                        const ls_opts *o, landscape *L, ms_err *err) {
    double t0 = secs_now();
    ls_opts po = *o;
    po.objective = NULL;
    po.progress = NULL, po.on_ranks = NULL, po.end_a = po.end_b = NULL, po.part = NULL;
    landscape P;
    if (landscape_compute(A, B, inputs, &po, &P, err)) return ms_prefix(err, "the layer-only proxy");
    int rc = 0;
    if (P.norders != L->norders || memcmp(P.orders, L->orders, (size_t)L->norders * L->n))
        rc = ms_fail(err, "the layer-only proxy ranged over other orders than the network's landscape");
    long N = L->norders;
    double *net = ms_malloc((size_t)(N ? N : 1) * sizeof(double)); // by order id
    free(L->proxy_barrier);
    L->proxy_barrier = ms_malloc((size_t)(N ? N : 1) * sizeof(double));
    for (long r = 0; r < N && !rc; r++) {
        L->proxy_barrier[P.rows[r].id] = P.rows[r].barrier;
        net[L->rows[r].id] = L->rows[r].barrier;
    }
    if (!rc) {
        L->proxy_spearman = rank_spearman(L->proxy_barrier, net, N);
        L->proxy_best_id = P.rows[P.best].id;
        rank_view v = {.count = N, .width = L->n, .barrier = &L->rows[0].barrier,
                       .stride = sizeof(ls_row)};
        L->proxy_best_rank = rank_of(&v, net[L->proxy_best_id], L->tau);
        L->has_proxy = 1;
        L->proxy_secs = secs_now() - t0;
    }
    free(net);
    landscape_free(&P);
    return rc;
}
