/* net_budget.c - a network's evaluation against the memory limit (net_budget.h). */
#include "network/net_budget.h"

#include <math.h>
#include <stdio.h>
#include <unistd.h>

#include "core/mem_budget.h"
#include "network/net_forward.h"

/* the workers an evaluation starts by default: one per CPU, at most 8 */
static double workers(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 8 ? 8 : (double)n;
}

int net_mem_check(const net_model *m, const net_evalset *E, ms_err *err) {
    const net_config *c = &m->cfg;
    // (net_tokens' and net_head_rows' values, spelled out: net_evalset.c calls this)
    double T = c->arch == NET_VIT ? c->npos : E->T, d = c->d, nmax = 1;
    double rows = fmin(512, fmax(64, (double)(NET_HEAD_FLOATS / (c->vocab > 0 ? c->vocab : 1))));
    for (int i = 0; i < c->nmoe; i++) nmax = m->moe[i].cfg.n > nmax ? m->moe[i].cfg.n : nmax;
    // a worker: one sequence's activations (x, q|k|v, o, the MLP, h, gates), its scores,
    // a panel of logits; the prefix: every token's (N T, d)
    double worker = 4.0 * (T * (7 * d + c->ff + nmax) + T * T + rows * c->vocab);
    double need = 4.0 * (double)E->N * T * d + workers() * worker;
    char what[700];
    snprintf(what, sizeof what, "%s on %s: an evaluation of %d x %.0f tokens (d = %d, vocabulary %d)", m->path,
             E->path, E->N, T, c->d, c->vocab);
    return ms_mem_fits(need, what, err);
}
