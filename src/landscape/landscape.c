/* landscape.c - the fast, exact landscape of every expert order: the driver.
 *
 * Work that does not depend on the whole order is done once:
 *   - a pair (slot i, B's expert j) has one weight matching and, for each
 *     interior t, one output of the interpolated expert Y_ij^t (N,d): n^2
 *     pairs, not n!*n experts;
 *   - the gate score of slot i holding B's gate row j at t, S_ij^t (N), for
 *     all n^2 (i,j) in one GEMM per t;
 *   - the shared experts' sum (aligned once, common to all orders), the
 *     residual, the chord (layer-only mode) and the interpolated head per t.
 * An order pi at t then costs only routing, the mix sum_i g_i Y_{i,pi(i)}^t,
 * LayerNorm, the head and the loss: one fused, lane-parallel pass over the
 * samples (landscape_kernel.c), run for a block of orders at a time so the pair
 * outputs it reads stay in cache.
 *
 * Ranks early: every order is first evaluated at the middle t (usually where
 * the barrier is), which bounds its barrier from below. The chosen orders'
 * curves are finished next, then only the orders whose bound lies below a
 * chosen barrier, and the ranks, L-hat and best barrier are final (on_ranks);
 * the remaining orders are finished afterwards for the full table.
 *
 * Threads: the calling thread coordinates (progress, cancel) while nthreads
 * workers split the items; OpenBLAS runs single-threaded inside them. Y is
 * held for all interior t at once when it fits the memory budget
 * (ls_opts.mem_mb, default 1024 MB); otherwise the t range is processed in
 * chunks (the ranks then come at the end), and when even one t does not fit,
 * each t is processed in chunks of samples, every order's loss sum carried
 * from one chunk to the next. Results do not depend on the chunking or the
 * thread count: every (order, t) value is computed by the same calls on the
 * same data, its per-block sums added in the same order.
 *
 * The driver (landscape_compute, at the end) reads top to bottom like the
 * forward pass of a model: check, named alignments, orders, pairs, end points,
 * named curves, plan, then per chunk of points {precompute, sweep}, ranks,
 * fill, sort. The state, and what the other files hold: landscape_int.h; the
 * set of orders (numbering, sampling, shares): landscape_orders.c. */
#define _GNU_SOURCE /* qsort_r */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/blas_threads.h"
#include "model/evaluator.h"
#include "landscape_int.h"
#include "align/lap.h"
#include "model/moe_kernels.h"
#include "io/provenance.h"
#include "landscape/rank.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "align/weight_matching.h"
#include "core/env.h"

/* the named alignments' curves (in L), the pairs and gate columns of each
 * slot, its shared variant, and its loss sums per point of the chunk */
typedef struct {
    ls_curve *curve[NM_COUNT];
    int pair[NM_COUNT][LS_MAX_N], col[NM_COUNT][LS_MAX_N], sh[NM_COUNT];
    double *ls; // (NM_COUNT, cap_t)
    long *ok;   // (NM_COUNT, cap_t)
    /* (NM_COUNT, T, N) their per-sample losses as the kernel computes them
     * (ls_opts.keep_units, on the process that reports), NULL: not kept */
    double *units;
} ls_named;

/* The pair outputs Y are tens of MB written once: with 4 KiB pages the page
 * faults cost more than the GEMMs that fill them (notably in VMs), so they
 * live in an anonymous mapping with transparent huge pages requested. */
static void *big_alloc(size_t bytes) {
    size_t len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "%s: out of memory mapping %zu bytes at %s:%d\n", ms_process_name(), bytes,
                __FILE__, __LINE__);
        exit(3);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

static void big_free(void *p, size_t bytes) {
    if (!p) return;
    size_t len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    munmap(p, len);
}

/* index of order p among the rows' orders, -1 if not there */
static long order_index(const lsx *x, const int *p) {
    return ls_order_index(x->rs.L, x->rs.exhaustive, x->rs.groups, x->rs.norders, p);
}

/* ---------------- results ---------------- */

/* why a job stopped early: a failed exchange with the other processes, else a cancel */
static int ls_stop_error(const lsx *x, ms_err *err) {
    if (x->rs.failed) return ms_fail(err, "%s", x->rs.perr.msg);
    return ms_fail(err, "cancelled");
}

/* E fits m: a model with a head checks labels/targets, a layer the width */
static int ls_check_evalset(const moe_model *m, const evalset *E, ms_err *err) {
    if (m->cfg.has_head) return moe_eval_check(m, E, err);
    if (E->d != m->cfg.d)
        return ms_fail(err, "%s: inputs have width %d but the layer has d = %d",
                       E->path ? E->path : "evaluation set", E->d, m->cfg.d);
    return 0;
}

int ls_endpoint_eval(const moe_model *m, const evalset *E, ls_endpoint *e, ms_err *err) {
    memset(e, 0, sizeof *e);
    if (ls_check_evalset(m, E, err)) return -1;
    ls_kind kind = ls_kind_of(m, E);
    int N = E->N, d = m->cfg.d, C = m->cfg.has_head ? m->cfg.C : 0;
    e->loss = 0.0;
    e->acc = NAN;
    e->D = NULL;
    float *Z = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
    moe_forward(m, E->inputs, N, Z, NULL);
    if (kind == LS_LAYER) {
        // the chord's end: the layer's own contribution
        if (m->cfg.residual)
            for (size_t q = 0; q < (size_t)N * d; q++) Z[q] -= E->inputs[q];
        e->D = Z;
        return 0;
    }
    float *lg = ms_malloc((size_t)N * C * sizeof(float)); // (N, C)
    moe_head(m, Z, N, lg);
    double ls = 0.0;
    long ok = 0;
    ls_loss_logits(E, 0, lg, N, C, &ls, &ok);
    e->loss = kind == LS_CLASSIFY ? ls / N : ls / ((double)N * C);
    if (kind == LS_CLASSIFY) e->acc = (double)ok / N;
    e->seq = ms_malloc((size_t)(N ? N : 1) * sizeof(double));
    for (int i = 0; i < N; i++) { // each sample's own loss, as curve_compute_units
        double li = 0.0;
        long oki = 0;
        ls_loss_logits(E, i, lg + (size_t)i * C, 1, C, &li, &oki);
        e->seq[i] = kind == LS_CLASSIFY ? li : li / C;
    }
    free(Z);
    free(lg);
    return 0;
}

void ls_endpoint_free(ls_endpoint *e) {
    free(e->D);
    free(e->seq);
    e->D = NULL;
    e->seq = NULL;
}

/* (N, d): B's layer output without its routed experts, [sig(v.x)] sum_j
 * E^sh_j(x) + o, for the chord's end D_B'(x) of every order (own_chord). */
static float *nonrouted(const moe_model *B, const float *X, int N, ms_err *err) {
    const moe_config *c = &B->cfg;
    moe_config sc = moe_shared_config(c);
    int d = c->d, hs = sc.h;
    enum { CH = 256 };
    float *D = ms_calloc((size_t)(N ? N : 1) * d, sizeof(float));   // (N, d)
    float *H = ms_malloc((size_t)CH * hs * sizeof(float));          // (CH, hs)
    float *H3 = ms_malloc((size_t)CH * hs * sizeof(float));         // (CH, hs)
    float *Y = ms_malloc((size_t)CH * d * sizeof(float));           // (CH, d)
    for (int r0 = 0; r0 < N; r0 += CH) {
        int m = N - r0 < CH ? N - r0 : CH;
        const float *Xr = X + (size_t)r0 * d;
        float *Dr = D + (size_t)r0 * d;
        for (int j = 0; j < c->s; j++) {
            moe_expert_forward(&B->shared[j], &sc, Xr, m, H, moe_act_glu(c->act) ? H3 : NULL, Y);
            for (int r = 0; r < m; r++) {
                float gb = 1.0f;
                if (c->shared_gated) { // the evaluator's shared_gate: dot in double
                    double a = 0.0;
                    for (int q = 0; q < d; q++) a += (double)B->shared_gate_w[q] * Xr[(size_t)r * d + q];
                    gb = (float)(1.0 / (1.0 + exp(-a)));
                }
                for (int q = 0; q < d; q++) Dr[(size_t)r * d + q] += gb * Y[(size_t)r * d + q];
            }
        }
        if (B->out_b)
            for (int r = 0; r < m; r++)
                for (int q = 0; q < d; q++) Dr[(size_t)r * d + q] += B->out_b[q];
    }
    free(H);
    free(H3);
    free(Y);
    (void)err;
    return D;
}

/* Does every order's L(1) equal B's loss? Not when B's routing ties on some
 * evaluation input (the k-th selection score, or a group score, equal to the
 * next: the reordered B then routes it to other experts, ties going to the
 * smaller slot), nor when the orders include ones that split the groups of a
 * group-limited router (such a reordered B computes another function). Then
 * allocate x->rs.lb, x->rs.ab for every order's own L(1); without a head,
 * each order's chord ends at its own D_B'(x) instead (own_chord: the kernel
 * subtracts t D_B'(x), its routed part computed per order). */
static int end_ties(lsx *x, const moe_model *B, ms_err *err) {
    const moe_config *c = &B->cfg;
    int n = c->n, N = x->pb.N;
    int split = moe_groups_active(c) > 1 && !x->rs.groups;
    long cnt = 0;
    enum { CH = 256 };
    float *S = ms_malloc((size_t)CH * n * sizeof(float)); // (CH, n)
    for (int r0 = 0; r0 < N && c->router == ROUTER_TOPK; r0 += CH) {
        int m = N - r0 < CH ? N - r0 : CH;
        moe_gate_logits(B, x->pb.E->inputs + (size_t)r0 * x->pb.d, m, S);
        for (int r = 0; r < m; r++)
            cnt += moe_route_tie(c, B->corr_b, S + (size_t)r * n) != 0;
    }
    free(S);
    if (!cnt && !split) return 0;
    if (x->pb.kind == LS_LAYER) { // every order's chord ends at its own D_B'
        x->pb.own_chord = 1;
        x->pb.DBn = nonrouted(B, x->pb.E->inputs, N, err);
        return x->pb.DBn ? 0 : -1;
    }
    x->rs.lb = ms_malloc((size_t)x->rs.norders * sizeof(double));
    x->rs.ab = ms_malloc((size_t)x->rs.norders * sizeof(double));
    return 0;
}

static void compute_ranks(lsx *x) { ls_ranks(x->rs.L, x->rs.filled, x->rs.exhaustive, x->rs.norders); }

const char *ls_step_name(int step, int key) {
    static const char *const names[LS_STEPS][2] = {
        {"cost matrices", "cost_matrices"}, {"weight matching", "weight_matching"},
        {"end points", "end_points"},       {"precompute", "precompute"},
        {"orders", "orders"}};
    return step >= 0 && step < LS_STEPS ? names[step][key ? 1 : 0] : "?";
}

/* MOESCOPE_LS_DEBUG=1: phase times on stderr (for the benchmarks) */
static void ls_debug(const lsx *x, const char *what, long count) {
    static int on = -1;
    if (on < 0) on = env_get(ENV_LS_DEBUG) != NULL;
    if (on) fprintf(stderr, "landscape: %8.4f s  %s (%ld)\n", ls_now() - x->rs.t0, what, count);
}

/* ---------------- plan ---------------- */

/* Every buffer size, from the memory budget: one t's lane arrays per sample
 * block (Y of every pair, S, the shared variants) plus its head; as many t as
 * the budget holds, and when not even one t fits, one t in chunks of samples
 * (whole panels, see LS_PANEL). */
static void ls_plan_fill(lsx *x) {
    ls_plan *pl = &x->pl;
    const ls_problem *pb = &x->pb;
    int d = pb->d, nint = pb->T - 2;
    pl->nb = (pb->N + LS_L - 1) / LS_L;
    pl->Cp = (pb->C + 3) / 4 * 4;
    pl->head_floats = pb->kind == LS_LAYER ? 0 : (size_t)pl->Cp * d + (size_t)pl->Cp;
    pl->simd = ms_simd_pick(pb->tune.simd);
    pl->form = ls_form_for(pl->simd);
    size_t per_block =
        (size_t)LS_L * ((size_t)pb->npairs * d + pb->nn + SH_COUNT * d) * sizeof(float);
    pl->prefix = ls_prefix_applies(x);
    if (pl->prefix) { // the prefix path's exps, head products and Gram products
        pl->gsize = ls_prefix_gsize(x);
        pl->gram = pl->gsize > 0;
        per_block += (size_t)LS_L * (pb->nn + (size_t)(pb->npairs + SH_COUNT) * pl->Cp + pl->gsize) *
                     sizeof(float);
    }
    size_t per_head = pl->head_floats * sizeof(float);
    size_t per_t = (size_t)pl->nb * per_block + per_head;
    // the first layers once: per held block, whatever the number of points
    pl->first_once = ls_first_applies(x);
    size_t per_first = pl->first_once ? (size_t)LS_L * 2 * pb->n * pb->h * sizeof(float) *
                                            (moe_act_glu(pb->cfg->act) ? 2 : 1) : 0;
    size_t all_first = (size_t)pl->nb * per_first;
    double mb = pb->o->mem_mb > 0 ? pb->o->mem_mb : 1024.0;
    size_t budget = (size_t)(mb * 1024.0 * 1024.0);
    pl->nbc = pl->nb;
    if (per_t + all_first <= budget) {
        pl->cap_t = (int)((budget - all_first) / per_t);
    } else {
        pl->cap_t = 1;
        size_t avail = budget > per_head ? budget - per_head : 0;
        // whole panels; at least one, even over the budget
        const long pblk = LS_PANEL / LS_L;
        long fit = (long)(avail / (per_block + per_first)) / pblk * pblk;
        pl->nbc = fit < pblk ? (int)pblk : fit < pl->nb ? (int)fit : pl->nb;
        if (pl->nbc > pl->nb) pl->nbc = pl->nb;
    }
    if (pl->cap_t < 1) pl->cap_t = 1;
    if (pl->cap_t > nint - 1) pl->cap_t = nint - 1 > 0 ? nint - 1 : 1;
    pl->nsc = (pl->nb + pl->nbc - 1) / pl->nbc;
    pl->Nc = (size_t)pl->nbc * LS_L;
    pl->rows_held = pb->N < (int)pl->Nc ? (size_t)pb->N : pl->Nc;
    pl->lane_d = pl->Nc * d;
    pl->lane_nn = pl->Nc * pb->nn;
    pl->S_floats = (size_t)pl->cap_t * pl->lane_nn;
    pl->Y_bytes = (size_t)pl->cap_t * pb->npairs * pl->lane_d * sizeof(float);
    pl->base_floats = (size_t)pl->cap_t * SH_COUNT * pl->lane_d;
    pl->head_total = (size_t)pl->cap_t * (pl->head_floats ? pl->head_floats : 1);
    pl->F_floats = pl->first_once ? 2 * (size_t)pb->n * pl->Nc * pb->h : 0;
    if (pl->prefix) {
        pl->E_floats = pl->S_floats;
        pl->HY_floats = (size_t)pl->cap_t * (pb->npairs + SH_COUNT) * pl->Nc * pl->Cp;
        pl->G_floats = (size_t)pl->cap_t * pl->Nc * pl->gsize;
    }
}

/* bytes rounded up to 64, 64-byte aligned; exits when out of memory, as ms_malloc */
static void *lane_alloc(size_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, bytes ? bytes : 64);
    if (!p) {
        fprintf(stderr, "%s: out of memory allocating %zu bytes at %s:%d\n", ms_process_name(), bytes,
                __FILE__, __LINE__);
        exit(3);
    }
    return p;
}

static void ws_alloc(const lsx *x, ls_ws *w) {
    size_t N = x->pl.rows_held, d = (size_t)x->pb.d, n = (size_t)x->pb.n;
    size_t C = (size_t)(x->pb.C > 0 ? x->pb.C : 1);
    w->E = ms_malloc(x->pb.esize * sizeof(float));
    int mapped = moe_is_mapped(x->pb.A) || moe_is_mapped(x->pb.B);
    w->EM = mapped ? ms_malloc(2 * x->pb.esize * sizeof(float)) : NULL;
    size_t hm = (size_t)x->pb.hmax; // routed and shared experts share H
    w->H = ms_malloc(N * hm * sizeof(float));
    w->H3 = moe_act_glu(x->pb.cfg->act) ? ms_malloc(N * hm * sizeof(float)) : NULL;
    w->Ye = ms_malloc(N * d * sizeof(float));
    w->Wt = ms_malloc(n * n * d * sizeof(float));
    w->bt = ms_malloc(n * n * sizeof(float));
    w->Zb = ms_malloc(N * d * sizeof(float));
    w->Sx = ms_malloc(N * n * n * sizeof(float));
    w->hraw = ms_malloc((2 * d + C * d + C) * sizeof(float));
    // 64-byte aligned: the kernel reads them 64 bytes at a time
    w->z = lane_alloc(d * LS_L * sizeof(float));
    w->lg = lane_alloc((size_t)(x->pl.Cp > 0 ? x->pl.Cp : 4) * LS_L * sizeof(float));
    if (x->pl.prefix) {
        w->lev = lane_alloc(ls_prefix_ws_bytes(x));
        ls_prefix_ws_clear(x, w);
    }
    w->ord = ms_malloc(LS_BLOCK * sizeof *w->ord);
    w->pair = ms_malloc(LS_BLOCK * sizeof *w->pair);
    w->lp = ms_malloc(LS_BLOCK * sizeof *w->lp);
    w->lc = ms_malloc(LS_BLOCK * sizeof *w->lc);
    w->psbuf = x->rs.units || x->rs.upos ? ms_malloc(LS_BLOCK * sizeof *w->psbuf) : NULL;
    if (x->rs.upos && x->rs.nbl)
        w->ublk = ms_malloc((size_t)LS_BLOCK * x->rs.nbl * x->pb.N * sizeof(double));
}

static void ws_free(ls_ws *w) {
    free(w->E);
    free(w->EM);
    free(w->H);
    free(w->H3);
    free(w->Ye);
    free(w->Wt);
    free(w->bt);
    free(w->Zb);
    free(w->Sx);
    free(w->hraw);
    free(w->z);
    free(w->lg);
    free(w->lev);
    free(w->ord);
    free(w->pair);
    free(w->lp);
    free(w->lc);
    free(w->psbuf);
    free(w->ublk);
}

/* The streamed error bars' plan (ls_results.boot): which points the chunks
 * before the last evaluate (held for every order: ustore) and which the last
 * (held per block: ublk), as ls_points runs them; 0 when the held points take
 * more than LS_BOOT_MAX_MB. */
static int stream_plan(lsx *x) {
    ls_results *rs = &x->rs;
    int T = x->pb.T, nint = T - 2, cap = x->pl.cap_t;
    int mid = (T - 1) / 2 > 0 ? (T - 1) / 2 : 1;
    int nrest = nint - 1, nchunks = 1 + (nrest + cap - 1) / cap;
    rs->upos = ms_malloc((size_t)2 * T * sizeof(int));
    rs->bpos = rs->upos + T;
    for (int m = 0; m < T; m++) rs->upos[m] = rs->bpos[m] = -1;
    rs->une = rs->nbl = 0;
    // the points of the last chunk: the middle alone (one chunk), else the rest's last
    if (nchunks == 1) rs->bpos[mid] = rs->nbl++;
    for (int dist = 1, q = 0; dist < T; dist++)
        for (int sg = -1; sg <= 1; sg += 2) {
            int m = mid + sg * dist;
            if (m < 1 || m > T - 2) continue;
            if (nchunks > 1 && q++ >= (nchunks - 2) * cap) rs->bpos[m] = rs->nbl++;
        }
    for (int m = 1; m < T; m++)
        if (rs->bpos[m] < 0 && (m < T - 1 || rs->lb)) rs->upos[m] = rs->une++;
    if ((double)rs->norders * rs->une * x->pb.N * sizeof(double) > LS_BOOT_MAX_MB * 1048576.0) {
        free(rs->upos);
        rs->upos = rs->bpos = NULL;
        return 0;
    }
    // (the same test as one process's, so a split one streams where it does; each process
    // holds its own orders')
    rs->ustore = ms_malloc(((size_t)(rs->k1 - rs->k0) * rs->une * x->pb.N + 1) * sizeof(double));
    rs->reboot = ms_calloc((size_t)rs->norders, 1);
    return 1;
}

/* why the orders' per-sample losses are not streamed into the error bars (units_plan
 * may still keep them as a table), NULL when nothing stops the stream */
static const char *units_why(const lsx *x, double nu) {
    const ls_problem *pb = &x->pb;
    if (!ls_boot_streams(pb->o))
        return "every order's per-sample losses would take more than " LS_BOOT_MAX_MB_S " MB";
    if (x->pl.nsc > 1)
        return "the samples swept in chunks (the memory budget), every order's per-sample losses would take "
               "more than " LS_BOOT_MAX_MB_S " MB";
    if ((long)pb->T * pb->N > LS_SEQ_MAX_VALUES) return "more per-sample losses per curve than kept";
    if (nu > ls_boot_max_values(pb->o)) return ls_boot_too_many(pb->o);
    return NULL;
}

/* ls_opts.keep_units: every order's per-sample losses as a table (x->rs.units,
 * for ls_layer_intervals and the JSON's per-order losses) when they are few, or
 * the stream does not apply and they fit LS_BOOT_MAX_MB; else streamed into the
 * error bars (stream_plan) when it applies; else none, L->boot_why says why */
static void units_plan(lsx *x) {
    const ls_problem *pb = &x->pb;
    const ls_partition *part = pb->o->part;
    double nu = (double)x->rs.norders * pb->T * pb->N;
    int fits = nu * sizeof(double) <= LS_BOOT_MAX_MB * 1048576.0;
    const char *why = units_why(x, nu);
    if (!pb->o->keep_units) return;
    int table = ls_boot_as_table(nu) || !ls_boot_streams(pb->o);
    if (!why && !table && stream_plan(x)) return;
    if (!why && !fits) why = "the points swept in chunks (the memory budget), the orders' per-sample losses "
                             "held would take more than " LS_BOOT_MAX_MB_S " MB";
    if (!fits || nu > ls_boot_max_values(pb->o)) { // nor a table past the resampling's bound
        x->rs.L->boot_why = why;
        return;
    }
    size_t n = (size_t)nu;
    if (part && part->rank) {
        x->rs.units_k0 = x->rs.k0;
        n = (size_t)(x->rs.k1 - x->rs.k0) * pb->T * pb->N;
    }
    x->rs.units = ms_malloc((n ? n : 1) * sizeof(double));
    for (size_t i = 0; i < n; i++) x->rs.units[i] = NAN;
}

/* The plan's buffers: labels/targets in lanes, the chunk's arrays, the
 * workspaces and the named curves' sums. */
static void ls_alloc(lsx *x, ls_named *nm) {
    const ls_plan *pl = &x->pl;
    ls_problem *pb = &x->pb;
    size_t Np = (size_t)pl->nb * LS_L;
    // every order's per-sample losses (ls_opts.keep_units): a table or streamed
    // (units_plan). A table's end points' rows are the caller's (every order's
    // are A's and B's, but for B's ties: then the end chunk writes each order's
    // own). Split over processes, each keeps its own orders' and rank 0 gathers them all
    // (a table), or each streams its own (ls_boot_acc_gather).
    units_plan(x);
    if (pb->kind == LS_CLASSIFY) {
        pb->lablanes = lane_alloc(Np * sizeof(int32_t));
        for (size_t r = 0; r < Np; r++)
            pb->lablanes[r] = r < (size_t)pb->N ? (int32_t)pb->E->labels[r] : -1;
    } else if (pb->kind == LS_REGRESS) {
        pb->tglanes = lane_alloc(Np * pb->C * sizeof(float));
        ls_to_lanes(pb->tglanes, pb->E->targets, pb->N, pb->C, pl->nb);
    }
    if (pl->nsc > 1) {
        x->rs.acc_l = ms_malloc((size_t)x->rs.norders * sizeof(double));
        x->rs.acc_ok = ms_malloc((size_t)x->rs.norders * sizeof(long));
    }
    x->ck.tidx = ms_malloc((size_t)(pb->T - 2) * sizeof(int));
    x->ck.S = lane_alloc(pl->S_floats * sizeof(float));
    x->ck.Y = big_alloc(pl->Y_bytes);
    x->ck.base = big_alloc(pl->base_floats * sizeof(float));
    x->ck.head = lane_alloc(pl->head_total * sizeof(float));
    if (pb->own_chord) { // t-independent: one sample chunk's B logits and expert outputs
        x->ck.S1 = lane_alloc(pl->Nc * pb->n * sizeof(float));
        x->ck.Y1 = lane_alloc((size_t)pb->n * pl->lane_d * sizeof(float));
    }
    if (pl->prefix) {
        // page-aligned, as Y and base: the kernel reads them 64 bytes at a time
        x->ck.E = big_alloc(pl->E_floats * sizeof(float));
        x->ck.HY = big_alloc(pl->HY_floats * sizeof(float));
        if (pl->gram) x->ck.G = big_alloc(pl->G_floats * sizeof(float));
        x->ck.pfx_ok = ms_calloc((size_t)pl->cap_t, 1);
    }
    if (pl->first_once) {
        x->ck.F = big_alloc(pl->F_floats * sizeof(float));
        if (moe_act_glu(pb->cfg->act)) x->ck.F3 = big_alloc(pl->F_floats * sizeof(float));
    }
    if (pb->cfg->has_corr_bias) x->ck.corr = ms_malloc((size_t)pl->cap_t * pb->nn * sizeof(float));
    x->ck.cur_sc = -1;
    x->ck.sc_last = 1;
    x->pool.ws = ms_calloc((size_t)x->pool.nthreads, sizeof(ls_ws));
    for (int i = 0; i < x->pool.nthreads; i++) ws_alloc(x, &x->pool.ws[i]);
    nm->ls = ms_calloc((size_t)NM_COUNT * pl->cap_t, sizeof(double)); // (NM_COUNT, cap_t)
    nm->ok = ms_calloc((size_t)NM_COUNT * pl->cap_t, sizeof(long));   // (NM_COUNT, cap_t)
    // the named curves' per-sample losses (their error bars), as the plain curve keeps them;
    // split over processes, rank 0's, or every process's when each streams its orders'
    // (their barriers in every resample are what an order's are compared to)
    if (pb->o->keep_units && (!(pb->o->part && pb->o->part->rank) || x->rs.upos) &&
        (long)pb->T * pb->N <= LS_SEQ_MAX_VALUES)
        nm->units = ms_calloc((size_t)NM_COUNT * pb->T * pb->N, sizeof(double));
}

/* ---------------- the steps ---------------- */

static int ls_check(const moe_model *A, const moe_model *B, const evalset *E, const ls_opts *o,
                    ms_err *err) {
    if (moe_check_compatible(A, B, err)) return -1;
    const moe_config *c = &A->cfg;
    if (c->n > LS_MAX_N)
        return ms_fail(err, "%s: %d experts; the landscape handles at most %d",
                       A->path ? A->path : "A", c->n, LS_MAX_N);
    if (o->T < 3) return ms_fail(err, "landscape: need at least 3 interpolation points, got %d", o->T);
    if (ls_check_orders(c, o, A->path, err)) return -1;
    return ls_check_evalset(A, E, err);
}

static void ls_problem_init(lsx *x, const moe_model *A, const moe_model *B, const evalset *E,
                            const ls_opts *o, landscape *L) {
    ls_problem *pb = &x->pb;
    const moe_config *c = &A->cfg;
    pb->A = A, pb->B = B, pb->E = E, pb->cfg = c, pb->o = o;
    // the gate rows every (slot, B row) pair interpolates: each model's centred
    // once (moe_gate_routing), so a translation B carries never enters the mix
    for (int q = 0; q < 2; q++) {
        pb->rw[q] = ms_malloc(((size_t)c->n * c->d + c->n) * sizeof(float));
        pb->rb[q] = pb->rw[q] + (size_t)c->n * c->d;
        moe_gate_routing(q ? B : A, pb->rw[q], pb->rb[q]);
    }
    pb->n = c->n, pb->d = c->d, pb->h = c->h, pb->N = E->N, pb->T = o->T;
    pb->C = c->has_head ? c->C : 0;
    pb->nn = c->n * c->n;
    pb->npairs = pb->nn + c->n;
    pb->kind = ls_kind_of(A, E);
    moe_config sc = moe_shared_config(c);
    size_t es = moe_expert_size(c), ss = moe_expert_size(&sc);
    pb->esize = es > ss ? es : ss;
    pb->hmax = c->hs > c->h ? c->hs : c->h;
    // the plain softmax top-k (renormalised; no bias, groups or scale) has the
    // fast routing; everything else routes as moe_route in route_general
    pb->general = c->score != SCORE_SOFTMAX || c->has_corr_bias || c->n_group > 1 ||
                  c->renorm != RENORM_YES || c->renorm_eps != 0.0f ||
                  (c->scale != 0.0f && c->scale != 1.0f);
    x->rs.L = L;
    x->rs.t0 = ls_now();
    x->pool.nthreads = L->nthreads = ls_threads(o);
    prov_set_run(x->pool.nthreads, pb->T); // reports say how they were made
    pthread_mutex_init(&x->pool.mu, NULL);
    pthread_cond_init(&x->pool.cv, NULL);
    L->n = pb->n;
    L->T = pb->T;
    L->hidden = o->hidden;
    L->kind = pb->kind;
    L->t = ms_malloc((size_t)pb->T * sizeof(double));
    for (int m = 0; m < pb->T; m++) L->t[m] = ls_t(m, pb->T);
    L->n_fact = ls_factorial(pb->n);
    L->n_fact_log10 = ls_factorial_log10(pb->n);
    L->best = L->worst = -1;
    L->median_barrier = NAN;
    for (int m = 0; m < COST_NMETHODS; m++) L->l_hat_median[m] = NAN;
}

/* The four named alignments, as `align` and `curve` choose them: the two cost
 * matrices once, the methods' orders from them (align_order, as align_models
 * does), naive and skip-order the identity, and the shared experts of the three
 * variants aligned alone (align_shared). Their hidden permutations are the
 * pairs' (ls_match_pairs), so no aligned copy of B is made and no slot is
 * weight-matched twice: at Mixtral size four copies of B were 22 GB and the 24
 * extra matchings 120 TFLOP. */
static int ls_named_alignments(lsx *x, ls_named *nm, ms_err *err) {
    const moe_model *A = x->pb.A, *B = x->pb.B;
    const moe_config *c = x->pb.cfg;
    const ls_opts *o = x->pb.o;
    landscape *L = x->rs.L;
    int rc = 0;
    // the data-driven methods read the evaluation set's inputs (a layer's are the block's)
    // (a mapped layer's experts read one at a time from its files)
    expert_source sa = moe_mapped_source(A), sb = moe_mapped_source(B);
    cost_input in = {.A = A, .B = B, .sa = &sa, .sb = &sb, .center = o->center, .X = x->pb.E->inputs,
                     .N = x->pb.E->N, .d = x->pb.E->d};
    for (int m = 0; m < COST_NMETHODS && !rc; m++) {
        L->cost[m] = ms_malloc((size_t)c->n * c->n * sizeof(double));
        rc = cost_matrix_in((cost_method)m, &in, L->cost[m], err);
        if (!rc)
            rc = align_order(c, L->cost[m], nm->curve[NM_METHOD + m]->order, &L->cost_total[m], err);
    }
    for (int a = NM_NAIVE; a <= NM_SKIP; a++)
        for (int i = 0; i < c->n; i++) nm->curve[a]->order[i] = i;
    if (!rc && c->s > 0) {
        // shared variants: [SH_MAIN] as the methods align them, then naive's, skip-order's
        static const int stage[SH_COUNT][2] = {{1, -1}, {0, 0}, {0, 1}}; // order, wm (-1: o->wm)
        ls_problem *pb = &x->pb;
        moe_config sc = moe_shared_config(c); // width hs
        // B's mapped shared experts: views of its file (align_shared), their biases here
        int mapped = moe_shared_mapped(B);
        size_t ss = mapped ? moe_expert_bias_size(&sc) : moe_expert_size(&sc);
        pb->shmem = ms_malloc((size_t)SH_COUNT * c->s * ss * sizeof(float));
        pb->shx = ms_malloc((size_t)SH_COUNT * c->s * sizeof(moe_expert));
        pb->shperm = mapped ? ms_malloc((size_t)SH_COUNT * c->s * sc.h * sizeof(int)) : NULL;
        for (int v = 0; v < SH_COUNT && !rc; v++) {
            align_opts ao;
            align_opts_default(&ao);
            ao.method = o->hidden, ao.X = x->pb.E->inputs, ao.N = x->pb.E->N, ao.d = x->pb.E->d; // its matching
            ao.order_stage = stage[v][0];
            ao.wm_stage = stage[v][1] < 0 ? o->wm : stage[v][1];
            for (int j = 0; j < c->s; j++) {
                int q = v * c->s + j;
                if (mapped) moe_expert_carve_biases(&pb->shx[q], &sc, pb->shmem + (size_t)q * ss);
                else moe_expert_carve(&pb->shx[q], &sc, pb->shmem + (size_t)q * ss);
            }
            pb->shB[v] = pb->shx + (size_t)v * c->s;
            int *views = mapped ? pb->shperm + (size_t)v * c->s * sc.h : NULL;
            rc = align_shared(A, B, &ao, pb->shx + (size_t)v * c->s, views, err);
        }
    }
    return rc;
}

/* Every order (exhaustive) or a sample of them, and their running state. */
static void ls_orders_init(lsx *x) {
    const ls_opts *o = x->pb.o;
    ls_results *rs = &x->rs;
    int exhaustive;
    rs->norders = ls_orders_planned(x->pb.cfg, o, &exhaustive, &rs->groups);
    rs->exhaustive = exhaustive;
    rs->L->groups = rs->groups;
    rs->L->group_size = rs->groups ? x->pb.n / rs->groups : x->pb.n;
    int G = rs->groups, n = x->pb.n;
    rs->L->n_fact = G ? ls_wreath_count(G, n / G) : ls_factorial(n);
    rs->L->n_fact_log10 = G ? ls_wreath_log10(G, n / G) : ls_factorial_log10(n);
    rs->L->exhaustive = rs->exhaustive;
    rs->L->norders = rs->norders;
    // the orders, (norders, n) bytes: drawn, or every one (the exhaustive rows
    // unrank their own; a process that is not rank 0 keeps none)
    if (!rs->exhaustive || !o->part || !o->part->rank)
        rs->L->orders = ms_malloc((size_t)rs->norders * n + 1);
    if (rs->L->orders) ls_orders_fill(rs->L->orders, n, rs->groups, rs->norders, rs->exhaustive, o);
    // split over processes: whole blocks of orders each (the blocks of one process)
    rs->k0 = 0, rs->k1 = rs->norders;
    long nrows = rs->norders; // rank 0 receives every row at the end
    if (o->part) {
        long b0, b1;
        ls_share((rs->norders + LS_BLOCK - 1) / LS_BLOCK, o->part->rank, o->part->size, &b0, &b1);
        rs->k0 = b0 * LS_BLOCK < rs->norders ? b0 * LS_BLOCK : rs->norders;
        rs->k1 = b1 * LS_BLOCK < rs->norders ? b1 * LS_BLOCK : rs->norders;
        if (o->part->rank) nrows = rs->k1 - rs->k0;
    }
    rs->L->rows = ms_calloc((size_t)nrows, sizeof(ls_row));
    rs->bar = ms_calloc((size_t)rs->norders, sizeof(double)); // 0: the end points
    rs->accb = ms_calloc((size_t)rs->norders, sizeof(double));
    rs->auc = ms_calloc((size_t)rs->norders, sizeof(double));
    rs->done = ms_calloc((size_t)rs->norders, 1);
    rs->prog = ms_calloc((size_t)rs->norders, sizeof(int));
}

/* Hidden-unit matching once per (slot i, B's expert j) as o->hidden matches
 * (align_match_hidden: weight matching, or activations on the set's inputs),
 * and the diagonal with the other setting for naive / skip_order. */
static int ls_match_pairs(lsx *x, ms_err *err) {
    ls_problem *pb = &x->pb;
    int n = pb->n, h = pb->h, wm_main = pb->o->wm;
    pb->perm = ms_malloc((size_t)pb->npairs * h * sizeof(int));
    pb->pj = ms_malloc((size_t)pb->npairs * sizeof(int));
    const ls_partition *part = pb->o->part;
    long lo = 0, hi = pb->npairs; // split over processes: this one's pairs
    if (part) ls_share(pb->npairs, part->rank, part->size, &lo, &hi);
    ls_phase(x, "weight-matching pairs", 0, pb->npairs);
    // a mapped layer's pair decoded into two experts' floats (A's slot i kept while i is)
    size_t es = moe_expert_size(pb->cfg);
    float *buf = moe_is_mapped(pb->A) || moe_is_mapped(pb->B) ? ms_malloc(2 * es * sizeof(float)) : NULL;
    moe_expert ta, tb;
    const moe_expert *ea = NULL;
    int ia = -1, rc = 0;
    for (int p = 0; p < pb->npairs && !rc; p++) {
        int i = p < pb->nn ? p / n : p - pb->nn, j = p < pb->nn ? p % n : i;
        int wm = p < pb->nn ? wm_main : !wm_main;
        int *P = pb->perm + (size_t)p * h; // (h)
        pb->pj[p] = j;
        if (p < lo || p >= hi) continue;
        if (!wm) {
            for (int u = 0; u < h; u++) P[u] = u;
        } else {
            if (i != ia) ea = moe_expert_floats(pb->A, i, &ta, buf), ia = i;
            const moe_expert *eb = moe_expert_floats(pb->B, j, &tb, buf ? buf + es : NULL);
            if (align_match_hidden(ea, eb, pb->cfg, pb->o->hidden, pb->E->inputs, pb->E->N, P, NULL, err))
                rc = ms_prefix(err, "matching the hidden units of slot %d with B's expert %d", i, j);
        }
        if (rc) break;
        ls_phase(x, "weight-matching pairs", p + 1, pb->npairs);
        if (wm) ls_debug(x, "pair weight-matched", p);
        if (ls_cancelled(x)) rc = ms_fail(err, "cancelled");
    }
    free(buf);
    if (rc) return rc;
    if (part) return part->allgather(part, pb->perm, pb->npairs, (size_t)h * sizeof(int), err);
    return 0;
}

/* L(0) is A's loss, L(1) B's: every aligned B' computes B's function, unless
 * B's top-k ties at the k-th score (end_ties: then each order's own L(1)).
 * Layer mode: the chord's ends D_A, D_B. A caller that evaluated A and B
 * already (a study: once per checkpoint, not once per pair) lends them. */
static int ls_end_points(lsx *x, ms_err *err) {
    ls_problem *pb = &x->pb;
    const ls_endpoint *ea = pb->o->end_a, *eb = pb->o->end_b;
    if (!ea) {
        if (ls_endpoint_eval(pb->A, pb->E, &pb->own[0], err)) return -1;
        ea = &pb->own[0];
    }
    if (!eb) {
        if (ls_endpoint_eval(pb->B, pb->E, &pb->own[1], err)) return -1;
        eb = &pb->own[1];
    }
    pb->DA = ea->D, pb->DB = eb->D;
    pb->loss_a = ea->loss, pb->acc_a = ea->acc;
    pb->loss_b = eb->loss, pb->acc_b = eb->acc;
    if (end_ties(x, pb->B, err)) return -1;
    landscape *L = x->rs.L;
    L->loss_a = pb->loss_a, L->loss_b = pb->loss_b;
    L->acc_a = pb->acc_a, L->acc_b = pb->acc_b;
    return 0;
}

/* The named curves' end points, and the pairs, gate columns and shared
 * variant each reads. */
static void ls_named_init(lsx *x, ls_named *nm) {
    const ls_problem *pb = &x->pb;
    int n = pb->n, T = pb->T, wm_main = pb->o->wm;
    for (int a = 0; a < NM_COUNT; a++) {
        ls_curve *cv = nm->curve[a];
        cv->n = n;
        cv->T = T;
        cv->loss = ms_malloc((size_t)T * sizeof(double));
        cv->acc = pb->kind == LS_CLASSIFY ? ms_malloc((size_t)T * sizeof(double)) : NULL;
        cv->loss[0] = pb->loss_a;
        cv->loss[T - 1] = pb->loss_b;
        if (cv->acc) {
            cv->acc[0] = pb->acc_a;
            cv->acc[T - 1] = pb->acc_b;
        }
        // the landscape's pairs have WM = o->wm; the extra diagonal the other
        int wm = a == NM_NAIVE ? 0 : a == NM_SKIP ? 1 : wm_main;
        for (int i = 0; i < n; i++) {
            nm->col[a][i] = cv->order[i];
            nm->pair[a][i] = wm == wm_main ? i * n + cv->order[i] : pb->nn + i;
        }
        nm->sh[a] = a == NM_NAIVE ? SH_NAIVE : a == NM_SKIP ? SH_SKIP : SH_MAIN;
    }
}

/* The points of chunk ch: t = 1 alone (ch < 0, ties in B's routing), the
 * middle (ch = 0: every order's lower bound), then the others nearest the
 * middle first (the likeliest maxima, so the ranks phase stops most orders
 * after a few points). */
static void ls_chunk_points(lsx *x, int ch, const int *rest, int nrest, int mid) {
    ls_chunk *ck = &x->ck;
    ck->end_chunk = ch < 0;
    if (ch <= 0) {
        ck->tidx[0] = ch < 0 ? x->pb.T - 1 : mid;
        ck->ntc = 1;
    } else {
        int s = (ch - 1) * x->pl.cap_t;
        ck->ntc = nrest - s < x->pl.cap_t ? nrest - s : x->pl.cap_t;
        memcpy(ck->tidx, rest + s, (size_t)ck->ntc * sizeof(int));
    }
    memset(x->rs.prog, 0, (size_t)x->rs.norders * sizeof(int));
    ck->cur_sc = -1; // new points: nothing precomputed
}

/* One chunk: per sample chunk, precompute, the named curves (4 orders: the
 * calling thread does them) and, unless it is the last chunk, every order. */
static int ls_chunk_run(lsx *x, ls_named *nm, int ch, int last, ms_err *err) {
    const ls_plan *pl = &x->pl;
    ls_chunk *ck = &x->ck;
    memset(nm->ls, 0, (size_t)NM_COUNT * pl->cap_t * sizeof(double));
    memset(nm->ok, 0, (size_t)NM_COUNT * pl->cap_t * sizeof(long));
    if (pl->nsc > 1) {
        memset(x->rs.acc_l, 0, (size_t)x->rs.norders * sizeof(double));
        memset(x->rs.acc_ok, 0, (size_t)x->rs.norders * sizeof(long));
    }
    long nblocks = (x->rs.k1 - x->rs.k0 + LS_BLOCK - 1) / LS_BLOCK; // this process's
    for (int sc = 0; sc < pl->nsc; sc++) {
        if (ls_load_samples(x, sc)) return ls_stop_error(x, err);
        for (int a = 0; a < NM_COUNT; a++)
            for (int tc = 0; tc < ck->ntc; tc++) {
                if (ls_cancelled(x)) return ms_fail(err, "cancelled");
                size_t q = (size_t)a * pl->cap_t + tc;
                double *ps[1] = {nm->units ? nm->units + ((size_t)a * x->pb.T + ck->tidx[tc]) * x->pb.N : NULL};
                x->pool.ws[0].ps = nm->units ? ps : NULL;
                ls_eval_order_t(x, &x->pool.ws[0], nm->pair[a], nm->col[a], nm->sh[a], tc,
                                &nm->ls[q], &nm->ok[q]);
                x->pool.ws[0].ps = NULL;
            }
        if (last) continue;
        ls_job oj = {.x = x, .nitems = nblocks, .grain = 1, .kind = 1, .bmax = INFINITY, .units = 1,
                     .what = ch < 0    ? "end point (ties in B's routing)"
                             : ch == 0 ? "middle point"
                                       : "orders on a chunk of points",
                     .unit = LS_BLOCK, .ptotal = x->rs.norders};
        if (ls_run_job(x, &oj)) return ls_stop_error(x, err);
    }
    for (int a = 0; a < NM_COUNT; a++)
        for (int tc = 0; tc < ck->ntc; tc++) {
            size_t q = (size_t)a * pl->cap_t + tc;
            double lv, av;
            ls_order_value(x, nm->ls[q], nm->ok[q], &lv, &av);
            nm->curve[a]->loss[ck->tidx[tc]] = lv;
            if (nm->curve[a]->acc) nm->curve[a]->acc[ck->tidx[tc]] = av;
        }
    return 0;
}

/* The named curves' per-sample losses (nm->units) into their curves, the end
 * points' from A's and B's evaluations (a layer's chord: 0 at both ends) but
 * for B's ties, where the end chunk computed t = 1; then their intervals */
static void ls_named_units(lsx *x, ls_named *nm) {
    if (!nm->units) return;
    const ls_problem *pb = &x->pb;
    const ls_endpoint *ea = pb->o->end_a ? pb->o->end_a : &pb->own[0];
    const ls_endpoint *eb = pb->o->end_b ? pb->o->end_b : &pb->own[1];
    size_t N = (size_t)pb->N, T = (size_t)pb->T;
    for (int a = 0; a < NM_COUNT; a++) {
        ls_curve *cv = nm->curve[a];
        double *seq = nm->units + (size_t)a * T * N;
        for (size_t s = 0; s < N; s++) {
            seq[s] = ea->seq ? ea->seq[s] : 0.0;
            if (!x->rs.lb) seq[(T - 1) * N + s] = eb->seq ? eb->seq[s] : 0.0;
        }
        free(cv->seq);
        cv->seq = ms_malloc(T * N * sizeof(double));
        memcpy(cv->seq, seq, T * N * sizeof(double));
        cv->nseq = (int)N;
        ls_curve_interval(cv);
    }
}

/* The streamed error bars' accumulator, once the named curves are complete
 * (their per-sample losses, the methods' barriers in every resample) */
static void stream_start(lsx *x) {
    ls_results *rs = &x->rs;
    if (!rs->upos) return;
    const landscape *L = rs->L;
    int T = x->pb.T, N = x->pb.N;
    const double **ref = ms_calloc((size_t)T, sizeof *ref);
    rs->uend[0] = ref[0] = L->naive.seq; // A's, every order's
    rs->uend[1] = L->naive.seq + (size_t)(T - 1) * N;
    if (!rs->lb) ref[T - 1] = rs->uend[1]; // B's, every order's
    rs->boot = ls_boot_acc_new(L, N, ref, x->pool.nthreads);
    free(ref);
}

/* The last chunk: the named curves are complete and the chosen orders' rows
 * are their curves (same arithmetic, bit for bit). Branch and bound: only
 * orders whose lower bound is below a chosen barrier (+ tau: the chosen
 * orders' tie classes need every tied order's AUC) can change a rank or the
 * best barrier; each stops as soon as its bound reaches the larger one. Then
 * the ranks (on_ranks), then every other order for the table. */
static int ls_ranks_then_rest(lsx *x, ls_named *nm, ms_err *err) {
    landscape *L = x->rs.L;
    ls_results *rs = &x->rs;
    for (int a = 0; a < NM_COUNT; a++) ls_curve_stats(nm->curve[a]);
    ls_named_units(x, nm);
    stream_start(x);
    for (int a = NM_SKIP; a < NM_COUNT; a++) {
        if (a == NM_SKIP && !x->pb.o->wm) continue;
        long k = order_index(x, nm->curve[a]->order);
        if (k < rs->k0 || k >= rs->k1 || rs->done[k]) continue; // not this process's
        rs->bar[k] = nm->curve[a]->barrier;
        rs->accb[k] = x->pb.kind == LS_CLASSIFY ? nm->curve[a]->acc_barrier : 0.0;
        rs->auc[k] = nm->curve[a]->auc;
        rs->prog[k] = x->ck.ntc;
        rs->done[k] = 1;
        ls_emit_row(x, k);
        if (rs->boot) { // its losses are a named curve's (as ls_layer_intervals takes them)
            const ls_curve *c = ls_named_row(L, x->pb.o->wm, nm->curve[a]->order);
            const double **r = ls_boot_acc_rows(rs->boot, 0);
            for (int m = 0; m < x->pb.T; m++) r[m] = c->seq + (size_t)m * x->pb.N;
            ls_boot_acc_feed(rs->boot, 0, k, r);
        }
    }
    ls_report_progress(x);
    double bmax = ls_methods_bound(L);
    long ncand = 0;
    long *cand = ms_malloc((size_t)rs->norders * sizeof(long));
    for (long k = rs->k0; k < rs->k1; k++)
        if (!rs->done[k] && rs->bar[k] < bmax) cand[ncand++] = k;
    // streamed: the candidates keep no losses here; each is evaluated again in the
    // last sweep, from its state before this one (its row, when out, is kept)
    double *snap = rs->boot ? ms_malloc((size_t)(3 * ncand + 1) * sizeof(double)) : NULL;
    for (long i = 0; snap && i < ncand; i++)
        snap[3 * i] = rs->bar[cand[i]], snap[3 * i + 1] = rs->accb[cand[i]], snap[3 * i + 2] = rs->auc[cand[i]];
    ls_job cj = {.x = x, .nitems = (ncand + LS_BLOCK - 1) / LS_BLOCK, .grain = 1, .kind = 1,
                 .list = cand, .nlist = ncand, .finish = 1, .bmax = bmax};
    int rc = ls_sweep(x, &cj);
    for (long i = 0; snap && i < ncand; i++) {
        long k = cand[i];
        if (rs->done[k]) rs->reboot[k] = 1;
        else rs->bar[k] = snap[3 * i], rs->accb[k] = snap[3 * i + 1], rs->auc[k] = snap[3 * i + 2];
        rs->prog[k] = 0;
    }
    free(snap);
    free(cand);
    if (rc) return ls_stop_error(x, err);
    // split over processes, the early ranks would see only this process's orders
    if (!x->pb.o->part) compute_ranks(x);
    L->secs_ranks = ls_now() - rs->t0;
    ls_debug(x, "ranks (candidate orders)", ncand);
    ls_report_progress(x);
    if (x->pb.o->on_ranks && !x->pb.o->part) x->pb.o->on_ranks(x->pb.o->ctx, L);
    ls_job rj = {.x = x, .nitems = (rs->k1 - rs->k0 + LS_BLOCK - 1) / LS_BLOCK, .grain = 1,
                 .kind = 1, .finish = 1, .bmax = INFINITY, .units = 1};
    if (ls_sweep(x, &rj)) return ls_stop_error(x, err);
    return 0;
}

/* Every point, chunk by chunk (see ls_chunk_points). */
static int ls_points(lsx *x, ls_named *nm, ms_err *err) {
    int T = x->pb.T, nint = T - 2;
    int mid = (T - 1) / 2 > 0 ? (T - 1) / 2 : 1; // t = 0.5 for odd T
    int *rest = ms_malloc((size_t)nint * sizeof(int)), nrest = 0;
    for (int dist = 1; dist < T; dist++)
        for (int sg = -1; sg <= 1; sg += 2) {
            int m = mid + sg * dist;
            if (m >= 1 && m <= T - 2) rest[nrest++] = m;
        }
    int nchunks = 1 + (nrest + x->pl.cap_t - 1) / x->pl.cap_t, rc = 0;
    for (int ch = x->rs.lb ? -1 : 0; ch < nchunks && !rc; ch++) {
        int last = ch == nchunks - 1;
        ls_chunk_points(x, ch, rest, nrest, mid);
        rc = ls_chunk_run(x, nm, ch, last, err);
        ls_debug(x, last ? "named curves" : "every order on a chunk", x->rs.norders);
        if (!rc && last) rc = ls_ranks_then_rest(x, nm, err);
    }
    free(rest);
    return rc;
}

/* The final table: ranks from the complete rows (equal to the early ones),
 * the rows sorted by barrier, best and worst. */
static int ls_fill_sort(lsx *x, ms_err *err) {
    landscape *L = x->rs.L;
    ls_report_progress(x);
    const ls_partition *part = x->pb.o->part;
    if (part) { // every process's rows to rank 0; the others are done
        if (part->gather_rows(part, L->rows, x->rs.filled, x->rs.norders, x->pb.o->progress,
                              x->pb.o->ctx, err))
            return -1;
        // the per-sample losses likewise (every process kept them, or none); streamed,
        // only what each process's orders gave the error bars
        size_t ub = (size_t)x->pb.T * x->pb.N * sizeof(double);
        if (x->rs.units && part->gather(part, x->rs.units, x->rs.k0, x->rs.k1 - x->rs.k0, x->rs.norders, ub,
                                        err))
            return -1;
        if (x->rs.boot && ls_boot_acc_gather(x->rs.boot, part, x->rs.k0, x->rs.k1, err)) return -1;
        L->ndone = x->rs.filled;
        if (part->rank) return 0;
        x->rs.filled = x->rs.norders;
    }
    if (x->rs.filled != x->rs.norders)
        return ms_fail(err, "landscape: internal error, %ld of %ld orders done", x->rs.filled,
                       x->rs.norders);
    compute_ranks(x);
    if (part) L->secs_ranks = ls_now() - x->rs.t0; // split: the ranks come with the last row
    ls_sort_rows(L);
    L->secs_total = ls_now() - x->rs.t0;
    return 0;
}

static void ls_release(lsx *x, ls_named *nm) {
    if (x->pool.ws)
        for (int i = 0; i < x->pool.nthreads; i++) ws_free(&x->pool.ws[i]);
    free(x->pool.ws);
    pthread_mutex_destroy(&x->pool.mu);
    pthread_cond_destroy(&x->pool.cv);
    free(x->ck.tidx);
    free(x->ck.S);
    big_free(x->ck.Y, x->pl.Y_bytes);
    big_free(x->ck.base, x->pl.base_floats * sizeof(float));
    free(x->ck.head);
    free(x->ck.corr);
    free(x->ck.S1);
    free(x->ck.Y1);
    big_free(x->ck.E, x->pl.E_floats * sizeof(float));
    big_free(x->ck.HY, x->pl.HY_floats * sizeof(float));
    big_free(x->ck.G, x->pl.G_floats * sizeof(float));
    free(x->ck.pfx_ok);
    big_free(x->ck.F, x->pl.F_floats * sizeof(float));
    if (x->ck.F3) big_free(x->ck.F3, x->pl.F_floats * sizeof(float));
    ls_endpoint_free(&x->pb.own[0]);
    ls_endpoint_free(&x->pb.own[1]);
    void *pbuf[] = {x->pb.rw[0], x->pb.rw[1], x->pb.perm, x->pb.pj, x->pb.DBn, x->pb.lablanes, x->pb.tglanes, x->pb.shmem,
                    x->pb.shperm, x->pb.shx, x->rs.bar, x->rs.accb, x->rs.auc, x->rs.done,
                    x->rs.prog, x->rs.acc_l, x->rs.acc_ok, x->rs.lb, x->rs.ab, x->rs.units, nm->ls, nm->ok, nm->units};
    for (size_t i = 0; i < sizeof pbuf / sizeof pbuf[0]; i++) free(pbuf[i]);
    ls_boot_acc_free(x->rs.boot);
    free(x->rs.ustore);
    free(x->rs.upos); // bpos with it
    free(x->rs.reboot);
}

/* The driver: plan the work, match the pairs, the end points, the named
 * curves, then per chunk of points {precompute, sweep the orders}, the ranks,
 * and the sorted table. */
int landscape_compute(const moe_model *A, const moe_model *B, const evalset *E,
                      const ls_opts *o, landscape *L, ms_err *err) {
    return landscape_compute_tuned(A, B, E, o, NULL, L, err);
}

int landscape_compute_tuned(const moe_model *A, const moe_model *B, const evalset *E, const ls_opts *o,
                            const ls_tuning *t, landscape *L, ms_err *err) {
    memset(L, 0, sizeof *L);
    ls_opts od;
    if (!o) {
        ls_opts_default(&od);
        o = &od;
    }
    if (o->objective) return ls_obj_compute(A, B, o, L, err);
    if (ls_check(A, B, E, o, err)) return -1;
    // one parallel layer: the pool's workers, BLAS single-threaded everywhere
    // (also here, for the end points and weight matching: OpenBLAS's own
    // threads would spin on the cores the workers need, 30% of a small
    // landscape's time)
    blas_single_enter();
    lsx x;
    memset(&x, 0, sizeof x);
    ls_named nm = {.curve = {&L->naive, &L->skip_order}};
    for (int m = 0; m < COST_NMETHODS; m++) nm.curve[NM_METHOD + m] = &L->methods[m];
    ls_problem_init(&x, A, B, E, o, L);
    if (t) x.pb.tune = *t;
    // real-sized experts (one pair's weight-matching GEMMs >= 6 GFLOP): the cost
    // matrices' and the pairs' big GEMMs on BLAS's threads (one at a time, so no
    // worker competes for the cores), the rest single-threaded as above
    int big = (double)x.pb.h * x.pb.h * x.pb.d >= 1e9;
    if (big) blas_wide_enter(x.pool.nthreads);
    double *st = L->secs_step, *ct = L->cpu_step, t0 = ls_now(), c0 = ls_cpu_now();
    int rc = ls_named_alignments(&x, &nm, err);
    st[LS_STEP_COSTS] = ls_now() - t0, ct[LS_STEP_COSTS] = ls_cpu_now() - c0;
    if (!rc) {
        ls_debug(&x, "named alignments", NM_COUNT);
        ls_orders_init(&x);
        t0 = ls_now(), c0 = ls_cpu_now();
        rc = ls_match_pairs(&x, err);
        st[LS_STEP_WM] = ls_now() - t0, ct[LS_STEP_WM] = ls_cpu_now() - c0;
    }
    if (big) blas_wide_leave();
    if (!rc) {
        ls_debug(&x, "pairs weight-matched", x.pb.npairs);
        t0 = ls_now(), c0 = ls_cpu_now();
        rc = ls_end_points(&x, err);
        st[LS_STEP_ENDS] = ls_now() - t0, ct[LS_STEP_ENDS] = ls_cpu_now() - c0;
    }
    if (!rc) {
        ls_named_init(&x, &nm);
        ls_plan_fill(&x);
        ls_alloc(&x, &nm);
        t0 = ls_now(), c0 = ls_cpu_now();
        rc = ls_points(&x, &nm, err); // the precompute's share is added up in ls_load_samples
        st[LS_STEP_ORDERS] = ls_now() - t0 - st[LS_STEP_PRE];
        ct[LS_STEP_ORDERS] = ls_cpu_now() - c0 - ct[LS_STEP_PRE];
    }
    if (!rc) {
        ls_debug(&x, "all orders", x.rs.norders);
        rc = ls_fill_sort(&x, err);
    }
    if (!rc && x.rs.boot && !(o->part && o->part->rank)) ls_boot_acc_finish(x.rs.boot, L, "samples");
    if (!rc && x.rs.units && !(o->part && o->part->rank)) { // the caller's (ls_layer_intervals)
        L->order_units = x.rs.units, L->order_units_end = x.rs.lb != NULL;
        x.rs.units = NULL;
    }
    ls_release(&x, &nm);
    blas_single_leave();
    if (rc) landscape_free(L);
    return rc;
}
