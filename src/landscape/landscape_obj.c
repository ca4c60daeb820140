/* landscape_obj.c - the landscape of every expert order measured on an
 * objective (ls_opts.objective: a network's held-out loss) instead of the
 * layer's own head: the plain driver.
 *
 * An (order, t) value is one evaluation of the objective on the layer
 * (1-t) A + t B', B' = B with the order's experts and gate rows in place and
 * each slot's hidden units permuted by its pair's weight matching (matched once
 * per (slot i, B's expert j), as in landscape.c). Everything downstream of the
 * layer (the rest of the network) is the objective's, so no work is shared
 * between orders here beyond the pairs; what makes it fast is doing few
 * evaluations:
 *   - every order is first evaluated at the middle t, a lower bound on its
 *     barrier (the end points are 0);
 *   - the named curves (naive, skip-order, the two methods) at every point;
 *   - then only the orders whose bound lies below a chosen barrier (+ tau),
 *     each stopped as soon as it reaches it: the ranks, L-hat and best barrier
 *     are then exact (on_ranks), before the other orders are finished for the
 *     table.
 * Orders go in blocks of OBJ_BLOCK, all of a block's orders at one t before the
 * next t (an objective whose backbone is interpolated recomputes its frozen
 * prefix when t changes). Results do not depend on the blocking: each value is
 * one evaluation of the same layer. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "align/align.h"
#include "align/weight_matching.h"
#include "io/provenance.h"
#include "landscape/rank.h"
#include "landscape_int.h"
#include "model/moe_kernels.h"
#include "model/symmetry.h"

#define OBJ_BLOCK 8

typedef struct {
    const moe_model *A, *B;
    const moe_config *c;
    const ls_objective *obj; // &ob
    ls_objective ob;         // the objective's view, its end points filled in when it left them (end)
    double *ends_seq;        // (2, S) those end points' per-unit losses
    const ls_opts *o;
    landscape *L;
    int n, h, T, exhaustive, groups;
    long norders;
    int *perm;        // (n n, h) pair (slot i, B's expert j): unit u is B's unit perm[u], o->wm's setting
    int *perm_other;  // (n, h) pair (i, i) with the other setting (naive or skip-order), after perm
    float *shmem;     // (SH_COUNT, s, esize) B's shared experts as each variant aligns them
    moe_expert *shx;  // (SH_COUNT, s)
    int *shperm;      // (SH_COUNT, s, hs) B's mapped shared experts: their views' hidden orders
    float *shf;       // (s, esize) ... the interpolated layer's decoded (moe_shared_decode), else NULL
    moe_model Bp, M;  // B aligned with one order; the interpolated layer
    double *bar, *accb, *auc; // (norders) running barrier, accuracy barrier, AUC
    unsigned char *done;      // (norders)
    int *prog;                // (norders) points of pts folded in
    int *pts, npts;           // interior points: the middle first, then the nearest to it
    int S;                    // the objective's units kept per value (0: none)
    double *seq;              // (norders, T, S) every order's per-unit losses, for the error bars
    /* or streamed into the error bars as each order's row comes out (no table):
     * the middle's for every order, the other points' of the orders begun */
    ls_boot_acc *boot;
    double *umid;             // (norders, S) at the middle point pts[0]
    double **ubuf;            // (norders) (T, S) the other points', NULL until begun
    long filled;
    double last_phase;
} ox;

static int ox_cancelled(const ox *x) { return x->o->cancel && atomic_load(x->o->cancel); }

static void ox_phase(ox *x, const char *what, long done, long total) {
    if (!x->o->phase) return;
    double now = ls_now();
    if (done && done < total && now - x->last_phase < 0.02) return;
    x->last_phase = now;
    x->o->phase(x->o->ctx, what, done, total);
}

/* B' for order (n): slot i holds B's expert order[i] and gate row, its hidden
 * units permuted by pair (i, order[i]) (or, other_diag, by the other setting's
 * diagonal pair: naive, skip-order); the shared experts as variant sh aligns them */
static void ox_aligned(ox *x, const int *order, int other_diag, int sh) {
    const moe_config *c = x->c;
    const moe_model *B = x->B;
    moe_model *Bp = &x->Bp;
    int n = c->n, d = c->d;
    int mapped = moe_is_mapped(B), glu = moe_act_glu(c->act);
    for (int i = 0; i < n; i++) {
        int j = order[i];
        memcpy(Bp->gate_w + (size_t)i * d, B->gate_w + (size_t)j * d, (size_t)d * sizeof(float));
        Bp->gate_b[i] = B->gate_b[j];
        if (B->corr_b) Bp->corr_b[i] = B->corr_b[j];
        const int *P = other_diag ? x->perm_other + (size_t)i * x->h : x->perm + ((size_t)i * n + j) * x->h;
        if (!mapped) {
            moe_expert_copy(&Bp->experts[i], &B->experts[j], c);
            moe_expert_permute_hidden(&Bp->experts[i], c, P);
            continue;
        }
        // a mapped block: slot i a view of B's expert j in its file (align_models_mapped's)
        const moe_expert *xj = &B->experts[j];
        moe_expert *y = &Bp->experts[i];
        for (int u = 0; u < x->h; u++) y->fc1_b[u] = xj->fc1_b[P[u]];
        for (int u = 0; u < x->h && glu; u++) y->fc3_b[u] = xj->fc3_b[P[u]];
        memcpy(y->fc2_b, xj->fc2_b, (size_t)d * sizeof(float));
        y->w1 = wp_view(xj->w1, P, NULL); // W1, W3 (h, d): rows; W2 (d, h): columns
        y->w3 = glu ? wp_view(xj->w3, P, NULL) : xj->w3;
        y->w2 = wp_view(xj->w2, NULL, P);
    }
    moe_config sc = moe_shared_config(c);
    for (int q = 0; q < c->s; q++) // mapped: B' as B (a clone), the variant's views in its slots
        moe_expert_copy(&Bp->shared[q], &x->shx[(size_t)sh * c->s + q], &sc);
}

/* L(t) and Acc(t) of order (n) at point m; seq (S): its per-unit losses, may be NULL */
static int ox_eval(ox *x, const int *order, int other_diag, int sh, int variant, int m, double *loss,
                   double *acc, double *seq, ms_err *err) {
    double t = ls_t(m, x->T);
    ox_aligned(x, order, other_diag, sh);
    moe_interpolate_routed(&x->M, x->A, &x->Bp, t);
    if (x->shf) moe_shared_decode(&x->M, x->shf); // the float path's products, bit for bit
    return x->obj->eval(x->obj->ctx, &x->M, t, variant, loss, acc, seq, err);
}

/* where order k's per-unit losses at point m go (NULL when not kept) */
static double *ox_seq(const ox *x, long k, int m) {
    if (x->seq) return x->seq + ((size_t)k * x->T + m) * x->S;
    if (!x->umid) return NULL;
    if (m == x->pts[0]) return x->umid + (size_t)k * x->S;
    if (m == 0 || m == x->T - 1) return (double *)(m ? x->obj->seq_b : x->obj->seq_a);
    if (!x->ubuf[k]) x->ubuf[k] = ms_malloc((size_t)x->T * x->S * sizeof(double));
    return x->ubuf[k] + (size_t)m * x->S;
}

/* fold one value of order k into its running statistics (as ls_curve_stats) */
static void ox_fold(ox *x, long k, int m, double loss, double acc) {
    double t = ls_t(m, x->T);
    const ls_objective *ob = x->obj;
    double e = loss - ((1.0 - t) * ob->loss_a + t * ob->loss_b);
    if (isnan(e) || isnan(x->bar[k])) x->bar[k] = NAN;
    else if (e > x->bar[k]) x->bar[k] = e;
    x->auc[k] += e / (double)(x->T - 1);
    if (ob->kind == LS_CLASSIFY) {
        double ea = (1.0 - t) * ob->acc_a + t * ob->acc_b - acc;
        if (isnan(ea) || isnan(x->accb[k])) x->accb[k] = NAN;
        else if (ea > x->accb[k]) x->accb[k] = ea;
    }
}

/* streamed: order k's losses to the error bars, from its curve's seq (T, S)
 * when not NULL (a method's), and dropped */
static void ox_feed(ox *x, long k, const double *seq) {
    if (!x->boot) return;
    const double **r = ls_boot_acc_rows(x->boot, 0);
    for (int m = 0; m < x->T; m++) r[m] = seq ? seq + (size_t)m * x->S : ox_seq(x, k, m);
    ls_boot_acc_feed(x->boot, 0, k, r);
    free(x->ubuf[k]);
    x->ubuf[k] = NULL;
}

static void ox_emit(ox *x, long k) {
    ls_row *r = &x->L->rows[x->filled++];
    r->id = k;
    r->barrier = x->bar[k];
    r->acc_barrier = x->obj->kind == LS_CLASSIFY ? x->accb[k] : NAN;
    r->auc = x->auc[k];
    x->done[k] = 1;
    x->L->ndone = x->filled;
    if (x->o->progress) x->o->progress(x->o->ctx, x->filled, x->norders);
}

/* Orders ks[0..cnt) from their own next point to the last (or, finite bmax, until
 * their barrier reaches it), in blocks of OBJ_BLOCK, t-major inside a block;
 * finished orders are emitted. what: the phase shown (NULL: rows only). */
static int ox_sweep(ox *x, const long *ks, long cnt, double bmax, const char *what, ms_err *err) {
    int p[LS_MAX_N];
    for (long b0 = 0; b0 < cnt; b0 += OBJ_BLOCK) {
        long b1 = b0 + OBJ_BLOCK < cnt ? b0 + OBJ_BLOCK : cnt;
        for (int q = 0; q < x->npts; q++)
            for (long j = b0; j < b1; j++) {
                long k = ks[j];
                if (x->done[k] || x->prog[k] != q || x->bar[k] >= bmax) continue;
                if (ox_cancelled(x)) return ms_fail(err, "cancelled");
                double loss, acc;
                ls_order_get(x->L->orders, x->n, k, p);
                if (ox_eval(x, p, 0, SH_MAIN, LS_VAR_MAIN, x->pts[q], &loss, &acc, ox_seq(x, k, x->pts[q]), err))
                    return -1;
                ox_fold(x, k, x->pts[q], loss, acc);
                x->prog[k]++;
            }
        for (long j = b0; j < b1; j++)
            if (!x->done[ks[j]] && x->prog[ks[j]] == x->npts) ox_emit(x, ks[j]), ox_feed(x, ks[j], NULL);
        if (what) ox_phase(x, what, b1, cnt);
    }
    return 0;
}

/* the named curves' values at the end points (the objective's) */
static void ox_named_ends(ox *x, ls_curve *const *cv) {
    const ls_objective *ob = x->obj;
    for (int a = 0; a < NM_COUNT; a++) {
        cv[a]->loss[0] = ob->loss_a, cv[a]->loss[x->T - 1] = ob->loss_b;
        if (cv[a]->acc) cv[a]->acc[0] = ob->acc_a, cv[a]->acc[x->T - 1] = ob->acc_b;
        if (cv[a]->seq && ob->seq_a) {
            memcpy(cv[a]->seq, ob->seq_a, (size_t)x->S * sizeof(double));
            memcpy(cv[a]->seq + (size_t)(x->T - 1) * x->S, ob->seq_b, (size_t)x->S * sizeof(double));
        }
    }
}

/* the named curves, naive, skip-order and each method's order, their ends set;
 * same[a]: an earlier method's curve with a's order (then one curve), else -1 */
static void ox_named_init(ox *x, ls_curve **cv, int *same) {
    landscape *L = x->L;
    const ls_objective *ob = x->obj;
    cv[NM_NAIVE] = &L->naive, cv[NM_SKIP] = &L->skip_order;
    for (int m = 0; m < COST_NMETHODS; m++) cv[NM_METHOD + m] = &L->methods[m];
    for (int a = 0; a < NM_COUNT; a++) {
        same[a] = -1;
        for (int b = NM_METHOD; a >= NM_METHOD && b < a && same[a] < 0; b++)
            if (!memcmp(cv[a]->order, cv[b]->order, (size_t)x->n * sizeof(int))) same[a] = b;
        cv[a]->n = x->n;
        cv[a]->T = x->T;
        cv[a]->loss = ms_malloc((size_t)x->T * sizeof(double));
        cv[a]->acc = ob->kind == LS_CLASSIFY ? ms_malloc((size_t)x->T * sizeof(double)) : NULL;
        if (x->seq || x->umid) {
            cv[a]->nseq = x->S;
            cv[a]->seq = ms_malloc((size_t)x->T * x->S * sizeof(double));
        }
    }
    ox_named_ends(x, cv);
}

/* named curve a (of ox_named_init) at point m: naive and skip-order move every
 * MoE layer together (their own variants), the methods' orders are rows of the
 * table; seq (S): its per-unit losses, may be NULL */
static int ox_named_eval(ox *x, ls_curve *const *cv, int a, int m, double *loss, double *acc, double *seq,
                         ms_err *err) {
    int wm = x->o->wm;
    int other = a == NM_NAIVE ? wm : a == NM_SKIP ? !wm : 0;
    int sh = a == NM_NAIVE ? SH_NAIVE : a == NM_SKIP ? SH_SKIP : SH_MAIN;
    int var = a == NM_NAIVE ? LS_VAR_NAIVE : a == NM_SKIP ? LS_VAR_SKIP : LS_VAR_MAIN;
    return ox_eval(x, cv[a]->order, other, sh, var, m, loss, acc, seq, err);
}

/* named curve a's value at point m; a method's order another chose first: that curve */
static void ox_named_set(ls_curve *const *cv, const int *same, int a, int m, double loss, double acc) {
    int b = same[a];
    if (b >= 0) loss = cv[b]->loss[m], acc = cv[b]->acc ? cv[b]->acc[m] : acc;
    if (b >= 0 && cv[a]->seq) // the per-unit losses too
        memcpy(cv[a]->seq + (size_t)m * cv[a]->nseq, cv[b]->seq + (size_t)m * cv[a]->nseq,
               (size_t)cv[a]->nseq * sizeof(double));
    cv[a]->loss[m] = loss;
    if (cv[a]->acc) cv[a]->acc[m] = acc;
}

/* the named curves at every interior point */
static int ox_named(ox *x, ms_err *err) {
    ls_curve *cv[NM_COUNT];
    int same[NM_COUNT];
    ox_named_init(x, cv, same);
    for (int q = 0; q < x->npts; q++)
        for (int a = 0; a < NM_COUNT; a++) {
            int m = x->pts[q];
            double loss = NAN, acc = NAN;
            if (ox_cancelled(x)) return ms_fail(err, "cancelled");
            double *seq = cv[a]->seq ? cv[a]->seq + (size_t)m * x->S : NULL;
            if (same[a] < 0 && ox_named_eval(x, cv, a, m, &loss, &acc, seq, err)) return -1;
            ox_named_set(cv, same, a, m, loss, acc);
            ox_phase(x, "named curves", (long)q * NM_COUNT + a + 1, (long)NM_COUNT * x->npts);
        }
    for (int a = 0; a < NM_COUNT; a++) ls_curve_stats(cv[a]), ls_curve_interval(cv[a]);
    return 0;
}

/* costs, the methods' orders, the shared variants (as landscape.c's
 * ls_named_alignments), naive and skip-order the identity */
static int ox_alignments(ox *x, ms_err *err) {
    const moe_config *c = x->c;
    landscape *L = x->L;
    int rc = 0;
    // the data-driven methods read the block's inputs the objective keeps
    // (a mapped block's experts read one at a time from its files)
    expert_source sa = moe_mapped_source(x->A), sb = moe_mapped_source(x->B);
    cost_input in = {.A = x->A, .B = x->B, .sa = &sa, .sb = &sb, .center = x->o->center, .X = x->obj->inputs,
                     .N = x->obj->ninputs, .d = c->d};
    for (int m = 0; m < COST_NMETHODS && !rc; m++) {
        L->cost[m] = ms_malloc((size_t)c->n * c->n * sizeof(double));
        rc = cost_matrix_in((cost_method)m, &in, L->cost[m], err);
        if (!rc) rc = align_order(c, L->cost[m], L->methods[m].order, &L->cost_total[m], err);
    }
    for (int i = 0; i < c->n; i++) L->naive.order[i] = L->skip_order.order[i] = i;
    moe_config sc = moe_shared_config(c);
    // B's mapped shared experts: each variant's views of its file, their biases alone here
    int mapped = moe_shared_mapped(x->B);
    size_t es = mapped ? moe_expert_bias_size(&sc) : moe_expert_size(&sc);
    x->shmem = ms_malloc((size_t)SH_COUNT * (c->s ? c->s : 1) * es * sizeof(float));
    x->shx = ms_calloc((size_t)SH_COUNT * (c->s ? c->s : 1), sizeof(moe_expert));
    x->shperm = mapped ? ms_malloc((size_t)SH_COUNT * c->s * sc.h * sizeof(int)) : NULL;
    x->shf = mapped ? ms_malloc((size_t)c->s * moe_expert_size(&sc) * sizeof(float)) : NULL;
    static const int stage[SH_COUNT][2] = {{1, -1}, {0, 0}, {0, 1}}; // order, wm (-1: o->wm)
    for (int v = 0; v < SH_COUNT && !rc && c->s > 0; v++) {
        align_opts ao;
        align_opts_default(&ao);
        ao.method = x->o->hidden, ao.X = x->obj->inputs, ao.N = x->obj->ninputs, ao.d = c->d; // its matching
        ao.order_stage = stage[v][0];
        ao.wm_stage = stage[v][1] < 0 ? x->o->wm : stage[v][1];
        for (int j = 0; j < c->s; j++) {
            moe_expert *e = &x->shx[v * c->s + j];
            float *p = x->shmem + ((size_t)v * c->s + j) * es;
            if (mapped) moe_expert_carve_biases(e, &sc, p);
            else moe_expert_carve(e, &sc, p);
        }
        int *views = mapped ? x->shperm + (size_t)v * c->s * sc.h : NULL;
        rc = align_shared(x->A, x->B, &ao, x->shx + (size_t)v * c->s, views, err);
    }
    return rc;
}

/* hidden-unit matching (o->hidden's, align_match_hidden) once per (slot i, B's
 * expert j) with o->wm, and the diagonal
 * with the other setting: pair p's hidden order at perm + p h (perm_other
 * follows perm); split over processes, each matches its share and all get all */
static int ox_pairs(ox *x, ms_err *err) {
    int n = x->n, h = x->h, wm = x->o->wm;
    long np = (long)n * n + n, lo = 0, hi = np;
    const ls_partition *part = x->o->part;
    x->perm = ms_malloc((size_t)np * h * sizeof(int));
    x->perm_other = x->perm + (size_t)n * n * h;
    if (part && part->size > 1) ls_share(np, part->rank, part->size, &lo, &hi);
    // a mapped block's pair decoded into two experts' floats (A's slot i kept while i is)
    size_t es = moe_expert_size(x->c);
    float *buf = moe_is_mapped(x->A) || moe_is_mapped(x->B) ? ms_malloc(2 * es * sizeof(float)) : NULL;
    moe_expert ta, tb;
    const moe_expert *ea = NULL;
    int ia = -1, rc = 0;
    for (long p = lo; p < hi && !rc; p++) {
        int i = p < n * n ? (int)p / n : (int)p - n * n, j = p < n * n ? (int)p % n : i;
        int *P = x->perm + (size_t)p * h;
        if (!(p < n * n ? wm : !wm)) {
            for (int u = 0; u < h; u++) P[u] = u;
        } else {
            if (i != ia) ea = moe_expert_floats(x->A, i, &ta, buf), ia = i;
            const moe_expert *eb = moe_expert_floats(x->B, j, &tb, buf ? buf + es : NULL);
            if (align_match_hidden(ea, eb, x->c, x->o->hidden, x->obj->inputs, x->obj->ninputs, P, NULL, err))
                rc = ms_prefix(err, "matching the hidden units of slot %d with B's expert %d", i, j);
        }
        ox_phase(x, "weight-matching pairs", p + 1 - lo, hi - lo);
        if (!rc && ox_cancelled(x)) rc = ms_fail(err, "cancelled");
    }
    free(buf);
    if (rc) return rc;
    if (part && part->size > 1) return part->allgather(part, x->perm, np, (size_t)h * sizeof(int), err);
    return 0;
}

/* every order's per-unit losses, the end points' filled in, when the objective
 * gives them and they fit LS_BOOT_MAX_MB (x->S set; split over processes, rank 0
 * alone holds them); else L->boot_why says why not */
static void ox_seq_alloc(ox *x) {
    int S = x->obj->nseq, T = x->T;
    if (S < 1 || (!x->obj->seq_a && !x->obj->end)) {
        x->L->boot_why = "the objective gives no per-unit losses";
        return;
    }
    double nu = (double)x->norders * T * S;
    int split = x->o->part && x->o->part->size > 1;
    int table = ls_boot_as_table(nu);
    if (!split && !table && nu <= ls_boot_max_values(x->o) &&
        (double)x->norders * S * sizeof(double) <= LS_BOOT_MAX_MB * 1048576.0) { // streamed (ox_feed)
        x->S = S;
        x->umid = ms_malloc((size_t)x->norders * S * sizeof(double));
        x->ubuf = ms_calloc((size_t)x->norders, sizeof *x->ubuf);
        return;
    }
    if (nu * sizeof(double) > LS_BOOT_MAX_MB * 1048576.0) {
        x->L->boot_why = split ? "split over processes, every order's per-unit losses would take more than "
                                 LS_BOOT_MAX_MB_S " MB"
                         : nu > ls_boot_max_values(x->o) ? ls_boot_too_many(x->o)
                                                            : "the orders' per-unit losses at the middle point would "
                                                              "take more than " LS_BOOT_MAX_MB_S " MB";
        return;
    }
    x->S = S;
    // split over processes, the others send their values' per-unit losses to rank 0 (ox_split)
    if (split && x->o->part->rank) return;
    x->seq = ms_malloc((size_t)x->norders * T * S * sizeof(double));
}

/* the end points known (the objective's, or evaluated here: ox_ends): into the
 * landscape and every order's per-unit losses */
static void ox_ends_set(ox *x) {
    const ls_objective *ob = x->obj;
    landscape *L = x->L;
    L->loss_a = ob->loss_a, L->loss_b = ob->loss_b;
    L->acc_a = ob->acc_a, L->acc_b = ob->acc_b;
    for (long k = 0; x->seq && k < x->norders; k++) {
        memcpy(ox_seq(x, k, 0), ob->seq_a, (size_t)x->S * sizeof(double));
        memcpy(ox_seq(x, k, x->T - 1), ob->seq_b, (size_t)x->S * sizeof(double));
    }
}

/* an objective that left its end points (end) evaluated here, in one process */
static int ox_ends(ox *x, ms_err *err) {
    ls_objective *ob = &x->ob;
    size_t S = ob->nseq > 0 ? (size_t)ob->nseq : 0;
    x->ends_seq = ms_calloc(2 * S + 1, sizeof(double));
    if (ob->end(ob->ctx, 0, &ob->loss_a, &ob->acc_a, S ? x->ends_seq : NULL, err) ||
        ob->end(ob->ctx, 1, &ob->loss_b, &ob->acc_b, S ? x->ends_seq + S : NULL, err))
        return -1;
    if (S) ob->seq_a = x->ends_seq, ob->seq_b = x->ends_seq + S;
    ob->end = NULL;
    ox_ends_set(x);
    return 0;
}

static int ox_setup(ox *x, const moe_model *A, const moe_model *B, const ls_opts *o, landscape *L,
                    ms_err *err) {
    if (moe_check_compatible(A, B, err)) return -1;
    if (A->cfg.n > LS_MAX_N)
        return ms_fail(err, "%s: %d experts; the landscape handles at most %d", A->path ? A->path : "A",
                       A->cfg.n, LS_MAX_N);
    if (o->T < 3) return ms_fail(err, "landscape: need at least 3 interpolation points, got %d", o->T);
    if (ls_check_orders(&A->cfg, o, A->path, err)) return -1;
    x->ob = *o->objective;
    x->A = A, x->B = B, x->c = &A->cfg, x->obj = &x->ob, x->o = o, x->L = L;
    x->n = A->cfg.n, x->h = A->cfg.h, x->T = o->T;
    x->norders = ls_orders_planned(x->c, o, &x->exhaustive, &x->groups);
    L->n = x->n, L->T = x->T, L->kind = x->obj->kind, L->objective = x->obj->what;
    L->loss_a = x->obj->loss_a, L->loss_b = x->obj->loss_b;
    L->acc_a = x->obj->acc_a, L->acc_b = x->obj->acc_b;
    L->t = ms_malloc((size_t)x->T * sizeof(double));
    for (int m = 0; m < x->T; m++) L->t[m] = ls_t(m, x->T);
    L->exhaustive = x->exhaustive, L->norders = x->norders, L->hidden = x->o->hidden;
    L->groups = x->groups, L->group_size = x->groups ? x->n / x->groups : x->n;
    L->n_fact = x->groups ? ls_wreath_count(x->groups, x->n / x->groups) : ls_factorial(x->n);
    L->n_fact_log10 = x->groups ? ls_wreath_log10(x->groups, x->n / x->groups) : ls_factorial_log10(x->n);
    L->best = L->worst = -1;
    L->orders = ms_malloc((size_t)x->norders * x->n + 1);
    ls_orders_fill(L->orders, x->n, x->groups, x->norders, x->exhaustive, o);
    L->rows = ms_calloc((size_t)x->norders, sizeof(ls_row));
    x->bar = ms_calloc((size_t)x->norders, sizeof(double)); // 0: the end points
    x->accb = ms_calloc((size_t)x->norders, sizeof(double));
    x->auc = ms_calloc((size_t)x->norders, sizeof(double));
    x->done = ms_calloc((size_t)x->norders, 1);
    x->prog = ms_calloc((size_t)x->norders, sizeof(int));
    // the middle (t = 0.5 for odd T) first, then outwards: the likeliest maxima
    int mid = (x->T - 1) / 2 > 0 ? (x->T - 1) / 2 : 1;
    x->pts = ms_malloc((size_t)x->T * sizeof(int));
    x->pts[x->npts++] = mid;
    for (int dist = 1; dist < x->T; dist++)
        for (int sg = -1; sg <= 1; sg += 2) {
            int m = mid + sg * dist;
            if (m >= 1 && m <= x->T - 2) x->pts[x->npts++] = m;
        }
    ox_seq_alloc(x);
    if (!x->ob.end) ox_ends_set(x);
    moe_clone(&x->Bp, B);
    moe_clone(&x->M, A);
    x->L->nthreads = ls_threads(o);
    prov_set_run(x->L->nthreads, x->T);
    return 0;
}

static void ox_free(ox *x) {
    free(x->perm); // perm_other with it
    free(x->shmem);
    free(x->shx);
    free(x->shperm);
    free(x->shf);
    moe_free(&x->Bp);
    moe_free(&x->M);
    free(x->bar);
    free(x->accb);
    free(x->auc);
    free(x->done);
    free(x->prog);
    free(x->pts);
    free(x->seq);
    free(x->ends_seq);
    ls_boot_acc_free(x->boot);
    free(x->umid);
    for (long k = 0; x->ubuf && k < x->norders; k++) free(x->ubuf[k]);
    free(x->ubuf);
}

/* a chosen order's row is its curve (the same evaluations) */
static void ox_method_rows(ox *x) {
    landscape *L = x->L;
    for (int m = 0; m < COST_NMETHODS; m++) {
        long k = ls_order_index(L, x->exhaustive, x->groups, x->norders, L->methods[m].order);
        if (k < 0 || x->done[k]) continue;
        x->bar[k] = L->methods[m].barrier;
        x->accb[k] = L->methods[m].acc_barrier;
        x->auc[k] = L->methods[m].auc;
        x->prog[k] = x->npts;
        if (x->seq) memcpy(ox_seq(x, k, 0), L->methods[m].seq, (size_t)x->T * x->S * sizeof(double));
        ox_emit(x, k);
        ox_feed(x, k, L->methods[m].seq);
    }
}

/* the middle point of every order; the named curves; the methods' orders as
 * rows; the candidates until the ranks are exact; every other order */
static int ox_orders(ox *x, ms_err *err) {
    landscape *L = x->L;
    long *ks = ms_malloc((size_t)x->norders * sizeof(long)), ncand = 0;
    for (long k = 0; k < x->norders; k++) ks[k] = k;
    int rc = 0, p[LS_MAX_N];
    for (long k = 0; k < x->norders && !rc; k++) { // the lower bounds
        double loss, acc;
        if (ox_cancelled(x)) rc = ms_fail(err, "cancelled");
        ls_order_get(L->orders, x->n, k, p);
        if (!rc) rc = ox_eval(x, p, 0, SH_MAIN, LS_VAR_MAIN, x->pts[0], &loss, &acc, ox_seq(x, k, x->pts[0]), err);
        if (!rc) ox_fold(x, k, x->pts[0], loss, acc), x->prog[k] = 1;
        ox_phase(x, "middle point", k + 1, x->norders);
    }
    if (!rc) rc = ox_named(x, err);
    if (!rc && x->umid) { // the methods' barriers in every resample: the stream can start
        const double **ref = ms_calloc((size_t)x->T, sizeof *ref);
        ref[0] = x->obj->seq_a, ref[x->T - 1] = x->obj->seq_b;
        x->boot = ls_boot_acc_new(L, x->S, ref, 1);
        free(ref);
    }
    if (!rc) {
        ox_method_rows(x);
        double bmax = ls_methods_bound(L);
        for (long k = 0; k < x->norders; k++)
            if (!x->done[k] && x->bar[k] < bmax) ks[ncand++] = k;
        rc = ox_sweep(x, ks, ncand, bmax, "orders that can rank first", err);
    }
    if (!rc) {
        ls_ranks(L, x->filled, x->exhaustive, x->norders);
        L->secs_ranks = ls_now();
        if (x->o->on_ranks) x->o->on_ranks(x->o->ctx, L);
        for (long k = 0; k < x->norders; k++) ks[k] = k;
        rc = ox_sweep(x, ks, x->norders, INFINITY, NULL, err);
    }
    free(ks);
    return rc;
}

/* ---- split over processes (ls_opts.part) ----
 * Every value is an item: first the end points when the objective left them
 * (E0 = 2 items, A's and B's evaluations: ox_ends), then interior point pts[q]
 * of a named curve or an order, item E0 + q W + r with W = NM_COUNT + norders
 * (r < NM_COUNT: named curve r, else order r - NM_COUNT), t-major so that a
 * process's share spans few points. The items whose value is another's cost
 * nothing (ox_item_cost); the others one evaluation each, and the processes
 * take contiguous runs of items holding equal shares of the evaluations
 * (ox_split_share: P ranks, C evaluations, at most ceil(C / P) each). Rank 0
 * gathers the values (as rows: id the item, barrier its loss, acc_barrier its
 * accuracy), then folds every order's points in pts order, as the single
 * process does: the same table, bit for bit. The progress is the items done
 * over all processes (rank 0's line). */

/* the items before the grid's: the end points when the objective left them */
static long ox_ends_items(const ox *x) { return x->ob.end ? 2 : 0; }

/* 0 for item i whose value is another's: a method's curve when an earlier one
 * chose its order, the methods' orders' rows (their curves' values:
 * ox_method_rows), mk[COST_NMETHODS]; else 1, one evaluation */
static int ox_item_cost(const ox *x, const int *same, const long *mk, long i) {
    long E0 = ox_ends_items(x);
    if (i < E0) return 1;
    long r = (i - E0) % (NM_COUNT + x->norders);
    if (r < NM_COUNT) return same[r] < 0;
    for (int k = 0; k < COST_NMETHODS; k++)
        if (r - NM_COUNT == mk[k]) return 0;
    return 1;
}

/* rank's items [lo, hi) of total: the run whose evaluations are its ls_share of
 * them all (an item with no evaluation goes with the next one that has one;
 * those after the last, to the last rank); *evals: all the evaluations */
static void ox_split_share(const ox *x, const int *same, const long *mk, long total, int rank, int size,
                           long *lo, long *hi, long *evals) {
    long C = 0;
    for (long i = 0; i < total; i++) C += ox_item_cost(x, same, mk, i);
    long clo, chi, c = 0;
    ls_share(C, rank, size, &clo, &chi);
    *lo = *hi = total;
    for (long i = 0; i < total; i++) { // c: the evaluations before item i
        if (c >= clo && *lo == total) *lo = i;
        if (c >= chi && *hi == total) *hi = i;
        c += ox_item_cost(x, same, mk, i);
    }
    if (rank == size - 1) *hi = total;
    if (*lo > *hi) *lo = *hi;
    *evals = C;
}

/* item i's loss, accuracy and per-unit losses seq (S; may be NULL); NaN for the items
 * of no cost (ox_item_cost) */
static int ox_item(ox *x, ls_curve *const *cv, const int *same, const long *mk, long i, double *loss,
                   double *acc, double *seq, ms_err *err) {
    long E0 = ox_ends_items(x), W = NM_COUNT + x->norders, r = (i - E0) % W;
    *loss = *acc = NAN;
    if (i < E0) return x->ob.end(x->ob.ctx, (int)i, loss, acc, seq, err);
    if (!ox_item_cost(x, same, mk, i)) return 0;
    int m = x->pts[(i - E0) / W], p[LS_MAX_N];
    if (r < NM_COUNT) return ox_named_eval(x, cv, (int)r, m, loss, acc, seq, err);
    ls_order_get(x->L->orders, x->n, r - NM_COUNT, p);
    return ox_eval(x, p, 0, SH_MAIN, LS_VAR_MAIN, m, loss, acc, seq, err);
}

/* rank 0: the gathered end points (when the objective left them: items 0 and 1)
 * into the objective's view, the landscape and the curves' ends */
static void ox_split_ends(ox *x, ls_curve *const *cv, const ls_row *v, const double *us) {
    if (!x->ob.end) return;
    size_t S = (size_t)x->S;
    ls_objective *ob = &x->ob;
    ob->loss_a = v[0].barrier, ob->acc_a = v[0].acc_barrier;
    ob->loss_b = v[1].barrier, ob->acc_b = v[1].acc_barrier;
    if (us) {
        x->ends_seq = ms_malloc(2 * S * sizeof(double));
        memcpy(x->ends_seq, us, 2 * S * sizeof(double));
        ob->seq_a = x->ends_seq, ob->seq_b = x->ends_seq + S;
    }
    ox_ends_set(x);
    ox_named_ends(x, cv);
}

/* rank 0: the gathered values (and per-unit losses us, (total, S), when kept)
 * into the named curves and the orders' rows */
static void ox_split_fold(ox *x, ls_curve *const *cv, const int *same, const ls_row *v, const double *us) {
    long W = NM_COUNT + x->norders, E0 = ox_ends_items(x);
    size_t S = (size_t)x->S;
    ox_split_ends(x, cv, v, us);
    for (int q = 0; q < x->npts; q++)
        for (int a = 0; a < NM_COUNT; a++) {
            long i = E0 + q * W + a;
            const ls_row *r = &v[i];
            if (us && same[a] < 0)
                memcpy(cv[a]->seq + (size_t)x->pts[q] * S, us + (size_t)i * S, S * sizeof(double));
            ox_named_set(cv, same, a, x->pts[q], r->barrier, r->acc_barrier);
        }
    for (int a = 0; a < NM_COUNT; a++) ls_curve_stats(cv[a]), ls_curve_interval(cv[a]);
    for (long k = 0; k < x->norders; k++)
        for (int q = 0; q < x->npts; q++) {
            long i = E0 + q * W + NM_COUNT + k;
            const ls_row *r = &v[i];
            ox_fold(x, k, x->pts[q], r->barrier, r->acc_barrier);
            if (us) memcpy(ox_seq(x, k, x->pts[q]), us + (size_t)i * S, S * sizeof(double));
        }
    const ls_opts *o = x->o;
    ls_opts quiet = *o;
    quiet.progress = NULL; // the rows are known at once
    x->o = &quiet;
    ox_method_rows(x);
    for (long k = 0; k < x->norders; k++)
        if (!x->done[k]) ox_emit(x, k);
    x->o = o;
}

static int ox_split(ox *x, ms_err *err) {
    const ls_partition *part = x->o->part;
    ls_curve *cv[NM_COUNT];
    int same[NM_COUNT], rc = 0;
    ox_named_init(x, cv, same);
    long total = ox_ends_items(x) + (NM_COUNT + x->norders) * x->npts, lo, hi, evals, mk[COST_NMETHODS];
    for (int m = 0; m < COST_NMETHODS; m++)
        mk[m] = ls_order_index(x->L, x->exhaustive, x->groups, x->norders, x->L->methods[m].order);
    ox_split_share(x, same, mk, total, part->rank, part->size, &lo, &hi, &evals);
    size_t held = (size_t)(part->rank ? hi - lo : total);
    ls_row *v = ms_calloc(held + 1, sizeof(ls_row));
    // every value's per-unit losses (the error bars), each process its own, rank 0 all
    double *us = x->S ? ms_malloc((held * x->S + 1) * sizeof(double)) : NULL;
    for (size_t q = 0; us && q < held * x->S; q++) us[q] = NAN; // the values that are another's stay NaN
    for (long i = lo; i < hi && !rc; i++) {
        ls_row *r = &v[i - lo];
        double *seq = us ? us + (size_t)(i - (part->rank ? lo : 0)) * x->S : NULL;
        if (ox_cancelled(x)) rc = ms_fail(err, "cancelled");
        if (!rc) rc = ox_item(x, cv, same, mk, i, &r->barrier, &r->acc_barrier, seq, err);
        if (!rc && part->evals) *part->evals += ox_item_cost(x, same, mk, i);
        r->id = i;
        long all = part->rows_done(part, i + 1 - lo);
        if (all >= 0 && x->o->progress) x->o->progress(x->o->ctx, all, total);
    }
    // a failed process stops the job (moescope-mpi aborts): no gather to wait for
    if (!rc) rc = part->gather_rows(part, v, hi - lo, total, x->o->progress, x->o->ctx, err);
    if (!rc && us) rc = part->gather(part, us, lo, hi - lo, total, (size_t)x->S * sizeof(double), err);
    if (!rc && part->rank == 0) ox_split_fold(x, cv, same, v, us);
    free(v);
    free(us);
    return rc;
}

int ls_obj_compute(const moe_model *A, const moe_model *B, const ls_opts *o, landscape *L,
                   ms_err *err) {
    ox x;
    memset(&x, 0, sizeof x);
    double t0 = ls_now(), c0 = ls_cpu_now(), *st = L->secs_step, *ct = L->cpu_step;
    int rc = ox_setup(&x, A, B, o, L, err);
    if (!rc) rc = ox_alignments(&x, err);
    st[LS_STEP_COSTS] = ls_now() - t0, ct[LS_STEP_COSTS] = ls_cpu_now() - c0;
    double t1 = ls_now(), c1 = ls_cpu_now();
    if (!rc) rc = ox_pairs(&x, err);
    st[LS_STEP_WM] = ls_now() - t1, ct[LS_STEP_WM] = ls_cpu_now() - c1;
    int remote = o->part && o->part->size > 1; // split over processes
    if (!rc && !remote && x.ob.end) { // split, they are two of the items (ox_split)
        t1 = ls_now(), c1 = ls_cpu_now();
        rc = ox_ends(&x, err);
        st[LS_STEP_ENDS] = ls_now() - t1, ct[LS_STEP_ENDS] = ls_cpu_now() - c1;
    }
    t1 = ls_now(), c1 = ls_cpu_now();
    if (!rc) rc = remote ? ox_split(&x, err) : ox_orders(&x, err);
    if (remote && o->part->rank) { // only rank 0 holds the table
        ox_free(&x);
        if (rc) landscape_free(L);
        return rc;
    }
    if (remote) L->secs_ranks = ls_now(); // the ranks come with the last value
    st[LS_STEP_ORDERS] = ls_now() - t1, ct[LS_STEP_ORDERS] = ls_cpu_now() - c1;
    L->secs_ranks -= t0;
    if (!rc && x.filled != x.norders)
        rc = ms_fail(err, "landscape: internal error, %ld of %ld orders done", x.filled, x.norders);
    if (!rc) {
        ls_ranks(L, x.filled, x.exhaustive, x.norders);
        if (x.seq) rc = ls_boot_landscape(L, x.seq, x.S, x.obj->unit, o->cancel, err);
        if (x.boot) ls_boot_acc_finish(x.boot, L, x.obj->unit);
        if (!rc && x.seq) L->unit_loss = x.seq, x.seq = NULL; // the JSON's
    }
    if (!rc) {
        ls_sort_rows(L);
        L->secs_total = ls_now() - t0;
    }
    ox_free(&x);
    if (rc) landscape_free(L);
    return rc;
}
