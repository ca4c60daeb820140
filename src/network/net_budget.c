/* net_budget.c - a network's evaluation against the memory limit (net_budget.h). */
#include "network/net_budget.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "core/mem_budget.h"
#include "core/wpanel.h"
#include "network/net_eval.h"
#include "network/net_forward.h"

/* the workers an evaluation starts by default: one per CPU, at most 8 */
static double workers(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (double)n;
}

double net_eval_bytes(const net_model *m, const net_evalset *E) {
    const net_config *c = &m->cfg;
    // (net_tokens' value, spelled out: net_evalset.c calls this)
    double T = c->arch == NET_VIT ? c->npos : E->T, d = c->d, nmax = 1, hmax = 1;
    for (int i = 0; i < c->nmoe; i++) {
        const moe_config *b = &m->moe[i].cfg;
        nmax = fmax(nmax, b->n), hmax = fmax(hmax, fmax(b->h, b->hs));
    }
    // a worker: its items' rows (whole sequences of about NET_ITEM_TOKENS tokens), the
    // forward's workspace for them (net_ws: a decoder's q|k|v, latent attention, gated
    // MLP, rotary table, a panel of logits), a head's scores (T, T), the residual stream,
    // the gates and the block's inputs, an MoE block's own workspace, a panel of mapped
    // weights converted to float32 (core/wpanel.h); the prefix: every
    // token's (N T, d)
    double spi = fmax(1, floor(NET_ITEM_TOKENS / T)), cap = spi * T, chunk = fmin(cap, 256);
    double worker = 4.0 * (net_ws_floats(c, (int)cap, (int)T) + T * T + cap * (2 * d + nmax) +
                           chunk * (2 * nmax + 2 * hmax + 4 * d) + WP_PANEL_FLOATS);
    return 4.0 * (double)E->N * T * d + workers() * worker;
}

int net_mem_check(const net_model *m, const net_evalset *E, ms_err *err) {
    const net_config *c = &m->cfg;
    double T = c->arch == NET_VIT ? c->npos : E->T;
    char what[700];
    snprintf(what, sizeof what, "%s on %s: an evaluation of %d x %.0f tokens (d = %d, vocabulary %d)", m->path,
             E->path, E->N, T, c->d, c->vocab);
    return ms_mem_fits(net_eval_bytes(m, E), what, err);
}

int net_inputs_mem_check(const net_model *m, const net_evalset *E, int block, ms_err *err) {
    const moe_config *b = &m->moe[block].cfg;
    double rows = (double)E->N * (m->cfg.arch == NET_VIT ? m->cfg.npos : E->T), d = m->cfg.d;
    // the inputs (N T, d), and what the layer's own evaluation derives per row of them
    // (ms_limits.h, MS_USE_EVAL: scores and gates of n experts, outputs): 2n + 3d floats
    double need = 4.0 * rows * (d + 2.0 * b->n + 3 * d) + net_eval_bytes(m, E);
    char what[700];
    snprintf(what, sizeof what, "%s on %s: MoE block %d's inputs, %.0f tokens of d = %.0f, for its layer "
             "computed alone (n = %d experts)", m->path, E->path, m->cfg.moe_layers[block], rows, d, b->n);
    return ms_mem_fits(need, what, err);
}
