/* ms_limits.c - the derived-memory budget (see ms_limits.h). */
#include "analysis/ms_limits.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align/cost_matrix.h"
#include "analysis/diagnose.h"
#include "core/env.h"
#include "io/model_io.h"

/* The largest derived allocation found so far, and what causes it. */
typedef struct {
    double bytes;
    char why[320];
} need;

static void consider(need *w, double bytes, const char *why) {
    if (bytes <= w->bytes) return;
    w->bytes = bytes;
    snprintf(w->why, sizeof w->why, "%s", why);
}

static double model_bytes(const moe_model *m) { return m ? 4.0 * (double)m->nparams : 0; }

/* A layer read expert by expert (moe_alloc_shell: its routed experts not held):
 * their float32 bytes, which are inputs too though never all in memory. */
static double streamed_bytes(const moe_model *m) {
    if (!m || m->cfg.n <= 0 || !m->experts || m->experts[0].fc1_w) return 0;
    return 4.0 * (double)m->cfg.n * (double)moe_expert_size(&m->cfg);
}

static void model_needs(need *w, const moe_model *m, unsigned uses) {
    const moe_config *c = &m->cfg;
    const char *p = m->path ? m->path : "(model)", *L = m->layer ? m->layer : "moe";
    double n = c->n, h = c->h;
    char why[320];
    if (uses & MS_USE_WM) {
        snprintf(why, sizeof why, "%s: h = %d (tensor '%.100s.experts.0.fc1.weight') needs an "
                 "h x h weight-matching matrix", p, c->h, L);
        consider(w, 8.0 * h * h + 8.0 * h, why);
    }
    if (uses & MS_USE_COST) {
        snprintf(why, sizeof why, "%s: n = %d experts of width d = %d (tensor '%.100s.gate.weight') "
                 "need Gram blocks for the expert cost", p, c->n, c->d, L);
        consider(w, cost_expert_bytes(c, c->n, c->n) + 8.0 * n * n, why);
    }
}

static void eval_needs(need *w, const moe_model *m, const evalset *E, unsigned uses) {
    const moe_config *c = &m->cfg;
    double N = E->N, n = c->n, d = c->d, C = c->has_head ? c->C : 0;
    char why[320];
    if (uses & MS_USE_EVAL) {
        snprintf(why, sizeof why, "%s: N = %d samples (tensor 'inputs') with n = %d experts, "
                 "C = %d outputs and d = %d (from %s) need per-sample scores, logits and outputs",
                 E->path ? E->path : "(eval)", E->N, c->n, c->C, c->d, m->path ? m->path : "?");
        consider(w, 4.0 * N * (2 * n + C + 3 * d), why);
    }
    if (uses & MS_USE_DIAG) {
        double Ns = N < DG_OUTPUT_SAMPLES ? N : DG_OUTPUT_SAMPLES;
        snprintf(why, sizeof why, "%s: every one of n = %d experts' outputs (d = %d) on %.0f "
                 "samples of %s", m->path ? m->path : "?", c->n, c->d, Ns,
                 E->path ? E->path : "(eval)");
        consider(w, 4.0 * n * Ns * d + 4.0 * Ns * c->h * 2, why);
    }
}


int ms_limits_check(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses,
                    ms_err *err) {
    if (moe_range_check(A, E, err) || (B && moe_range_check(B, E, err))) return -1;
    return ms_limits_memory(A, B, E, uses, err);
}

int ms_limits_memory(const moe_model *A, const moe_model *B, const evalset *E, unsigned uses, ms_err *err) {
    need w = {0, ""};
    model_needs(&w, A, uses);
    if (B) model_needs(&w, B, uses);
    if (E) eval_needs(&w, A, E, uses);
    double input = model_bytes(A) + model_bytes(B);
    if (E) input += 4.0 * (double)E->N * (E->d + (E->targets ? E->C : 1));
    double machine = ms_mem_machine();
    double budget = MS_MEM_RATIO * (input + streamed_bytes(A) + streamed_bytes(B));
    if (budget < MS_MEM_FLOOR) budget = MS_MEM_FLOOR;
    if (budget > machine) budget = machine;
    char nb[32], bb[32], ib[32], fb[32], mb[32];
    if (w.bytes > budget)
        return ms_fail(err, "%s: %s, over the limit of %s here (%g times the %s of parameters and "
                            "samples, at least %s, at most this machine's %s; MOESCOPE_MAX_MEMORY "
                            "lowers it)",
                       w.why, ms_bytes_str(nb, sizeof nb, w.bytes), ms_bytes_str(bb, sizeof bb, budget),
                       MS_MEM_RATIO, ms_bytes_str(ib, sizeof ib, input),
                       ms_bytes_str(fb, sizeof fb, MS_MEM_FLOOR), ms_bytes_str(mb, sizeof mb, machine));
    // the inputs are held too: a real layer is gigabytes, and what it derives comes on top
    if (input + w.bytes > machine)
        return ms_fail(err, "%s: %s, on top of the %s the inputs take as float32: over this "
                            "machine's %s (MOESCOPE_MAX_MEMORY lowers it)",
                       w.bytes > 0 ? w.why : "the inputs alone", ms_bytes_str(nb, sizeof nb, w.bytes),
                       ms_bytes_str(ib, sizeof ib, input), ms_bytes_str(mb, sizeof mb, machine));
    return 0;
}
