/* test_landscape_api.c - the landscape through its C API: agreement with the
 * plain curve path (curve_compute on align_models(order = pi)), ranks from the
 * early path equal the final ones, thread-count independence, and a request
 * cancelled mid-landscape stops early and frees everything (LeakSanitizer). */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/landscape.h"
#include "landscape/landscape_tuning.h"
#include "landscape/rank.h"
#include "core/rng.h"
#include "testlib.h"

static void fill(float *p, size_t cnt, rng_t *r, double scale) {
    for (size_t i = 0; i < cnt; i++) p[i] = (float)(scale * rng_normal(r));
}

/* a random layer; B is a noisy, expert-shuffled copy of A so barriers vary;
 * norm: a LayerNorm before the head */
static void make_models_act(moe_model *A, moe_model *B, int n, int d, int h, int C, uint64_t seed, int norm,
                            moe_act act) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = n, c.d = d, c.h = h, c.k = 2, c.s = 0, c.C = C;
    c.router = ROUTER_DENSE, c.act = act, c.residual = 1;
    c.has_gate_bias = c.has_expert_bias = c.has_head = 1;
    c.has_norm = norm;
    moe_alloc(A, &c);
    moe_alloc(B, &c);
    rng_t r;
    rng_seed(&r, seed);
    fill(A->mem, A->nparams, &r, 0.5);
    if (norm)
        for (int j = 0; j < d; j++) A->norm_w[j] = 1.0f + 0.1f * (float)rng_normal(&r);
    for (size_t i = 0; i < A->nparams; i++) B->mem[i] = A->mem[i] + (float)(0.4 * rng_normal(&r));
    // the head is shared (frozen backbone)
    if (norm) memcpy(B->norm_w, A->norm_w, (size_t)(2 * d) * sizeof(float));
    memcpy(B->head_w, A->head_w, (size_t)(C * d + C) * sizeof(float));
}

static void make_models_norm(moe_model *A, moe_model *B, int n, int d, int h, int C, uint64_t seed,
                             int norm) {
    make_models_act(A, B, n, d, h, C, seed, norm, ACT_RELU);
}

static void make_models(moe_model *A, moe_model *B, int n, int d, int h, int C, uint64_t seed) {
    make_models_norm(A, B, n, d, h, C, seed, 1);
}

static void make_evalset(evalset *e, int N, int d, int C, uint64_t seed) {
    memset(e, 0, sizeof *e);
    rng_t r;
    rng_seed(&r, seed);
    e->N = N, e->d = d, e->C = C;
    e->inputs = ms_malloc((size_t)N * d * sizeof(float));
    e->labels = ms_malloc((size_t)N * sizeof(int32_t));
    fill(e->inputs, (size_t)N * d, &r, 1.0);
    for (int i = 0; i < N; i++) e->labels[i] = (int32_t)rng_below(&r, (uint64_t)C);
}

static void free_evalset(evalset *e) {
    free(e->inputs);
    free(e->labels);
}

static int same_curve(const ls_curve *a, const ls_curve *b) {
    if (a->T != b->T || a->n != b->n || memcmp(a->order, b->order, sizeof a->order)) return 0;
    if (memcmp(a->loss, b->loss, (size_t)a->T * sizeof(double))) return 0;
    if (!a->acc != !b->acc || (a->acc && memcmp(a->acc, b->acc, (size_t)a->T * sizeof(double))))
        return 0;
    return a->barrier == b->barrier && a->auc == b->auc;
}

/* two landscapes bit for bit: rows, named curves, ranks */
static int same_landscape(const landscape *a, const landscape *b) {
    if (a->norders != b->norders || a->ndone != b->ndone) return 0;
    for (long k = 0; k < a->norders; k++) {
        const ls_row *x = &a->rows[k], *y = &b->rows[k];
        if (memcmp(a->orders + x->id * a->n, b->orders + y->id * b->n, (size_t)a->n) ||
            x->barrier != y->barrier ||
            x->auc != y->auc || !(x->acc_barrier == y->acc_barrier ||
                                  (isnan(x->acc_barrier) && isnan(y->acc_barrier))))
            return 0;
    }
    return same_curve(&a->naive, &b->naive) && same_curve(&a->skip_order, &b->skip_order) &&
           same_curve(&a->methods[0], &b->methods[0]) && same_curve(&a->methods[1], &b->methods[1]) &&
           a->rank[0] == b->rank[0] && a->rank[1] == b->rank[1] && a->best_barrier == b->best_barrier;
}

typedef struct {
    atomic_int cancel;
    long at_cancel;
    int calls, ranks_calls;
    long ranks_done;
    int rank[2];
    long cancel_after; /* cancel at the first progress with done >= this (0: never) */
} watch;

static void on_progress(void *ctx, long done, long total) {
    watch *w = ctx;
    w->calls++;
    if (w->cancel_after > 0 && done >= w->cancel_after && !w->cancel) {
        w->at_cancel = done;
        atomic_store(&w->cancel, 1);
    }
    (void)total;
}

static void on_ranks(void *ctx, const landscape *L) {
    watch *w = ctx;
    w->ranks_calls++;
    w->ranks_done = L->ndone;
    w->rank[0] = L->rank[0];
    w->rank[1] = L->rank[1];
}

/* ls_opts.phase: names, counts, and the thread it runs on (the caller's,
 * as documented: the TUI's gauge relies on it) */
typedef struct {
    int calls, bad, names, other_thread;
    pthread_t caller;
} phase_watch;

static void on_phase(void *ctx, const char *what, long done, long total) {
    phase_watch *p = ctx;
    p->calls++;
    if (!pthread_equal(pthread_self(), p->caller)) p->other_thread++;
    if (!what || total <= 0 || done < 0 || done > total) p->bad++;
    if (what && (!strcmp(what, "weight-matching pairs") || !strncmp(what, "precomputing experts at points", 30) ||
                 !strcmp(what, "middle point") || !strcmp(what, "orders on a chunk of points")))
        p->names++;
}

static long find_row(const landscape *L, const int *p) {
    return ls_rows_find(L->rows, L->ndone, L->orders, L->n, p);
}

/* row k's order (ints) */
static const int *row_order(const landscape *L, long k, int *buf) {
    ls_order_get(L->orders, L->n, L->rows[k].id, buf);
    return buf;
}

/* rows j and k hold the same order */
static int same_order(const landscape *L, long j, long k) {
    return !memcmp(L->orders + L->rows[j].id * L->n, L->orders + L->rows[k].id * L->n, (size_t)L->n);
}

/* A group-limited sigmoid router (n = 8, 4 groups of 2, 2 kept, ranked by the
 * sum of their top two, a selection bias): the landscape ranges over the
 * (2!)^4 4! = 384 group-preserving orders, every one once, and a sample of
 * them (exhaustive_max lowered) holds distinct group-preserving orders whose
 * barriers are the exhaustive ones. */
/* The kernel's prefix path (dense softmax routing with a head: partial sums
 * shared by orders with the same leading slots, the head applied per pair)
 * against its per-order reference path, which the numpy-oracle and golden
 * tests hold. The two sum the same float32 terms regrouped (the softmax
 * normalised once at the end, LayerNorm's centring and the head moved inside
 * the mix, its variance from the pair outputs' Gram products), so they agree
 * to float rounding: every loss, barrier and AUC within 2e-6 relative
 * (measured: ~1.4e-7), the same ranks but where a near-tie swaps. A gate whose logits
 * spread wider than the path's exp range takes the reference path at every t:
 * bit for bit. Both paths in each vector form of the kernel (forms_case). */
static double rel_diff(double a, double b) { return fabs(a - b) / fmax(1.0, fabs(b)); }

/* Two runs of one landscape by different arithmetic: the largest relative
 * difference of any order's barrier or AUC and of the methods' curves; orders
 * of Lr missing from Lp, and accuracy barriers more than 1/N apart, counted. */
static double worst_rel_diff(const landscape *Lp, const landscape *Lr, int N, int *missing, int *acc_off) {
    double worst = 0.0;
    *missing = *acc_off = 0;
    for (long k = 0; k < Lr->norders; k++) {
        int ob[LS_MAX_N];
        long q = find_row(Lp, row_order(Lr, k, ob));
        if (q < 0) {
            (*missing)++;
            continue;
        }
        worst = fmax(worst, rel_diff(Lp->rows[q].barrier, Lr->rows[k].barrier));
        worst = fmax(worst, rel_diff(Lp->rows[q].auc, Lr->rows[k].auc));
        if (!(fabs(Lp->rows[q].acc_barrier - Lr->rows[k].acc_barrier) <= 1.0 / N + 1e-12) &&
            !(isnan(Lp->rows[q].acc_barrier) && isnan(Lr->rows[k].acc_barrier)))
            (*acc_off)++;
    }
    for (int m = 0; m < 2; m++)
        for (int t = 0; t < Lr->T; t++)
            worst = fmax(worst, rel_diff(Lp->methods[m].loss[t], Lr->methods[m].loss[t]));
    return worst;
}

/* The kernel's vector forms (core/simd.h) on one landscape, each this CPU
 * runs: AVX-512 (16 lanes a register) and AVX2 (8) do the same arithmetic on
 * every lane, so bit for bit; plain (SSE, 4 lanes, no FMA: every product
 * rounded apart) within float rounding, 2e-6 relative (measured ~1e-7). */
static void forms_case(const char *what, const moe_model *A, const moe_model *B, const evalset *E,
                       const ls_opts *base, int prefix) {
    const char *path = prefix < 0 ? "per-order path" : prefix > 0 ? "prefix path" : "";
    ms_simd cpu = ms_simd_cpu();
    landscape L[MS_SIMD_AVX512 + 1];
    int ran[MS_SIMD_AVX512 + 1] = {0};
    for (int s = MS_SIMD_PLAIN; s <= (int)cpu; s++) {
        ls_tuning t = {.prefix = prefix, .simd = (ms_simd)s};
        ms_err err;
        ran[s] = landscape_compute_tuned(A, B, E, base, &t, &L[s], &err) == 0;
        CHECK(ran[s], "%s %s: the %s form runs (%s)", what, path, ms_simd_name((ms_simd)s), ran[s] ? "" : err.msg);
    }
    if (ran[MS_SIMD_AVX512] && ran[MS_SIMD_AVX2])
        CHECK(same_landscape(&L[MS_SIMD_AVX512], &L[MS_SIMD_AVX2]), "%s %s: AVX-512 and AVX2 forms bit for bit",
              what, path);
    if (ran[MS_SIMD_AVX2] && ran[MS_SIMD_PLAIN]) {
        int missing = 0, acc_off = 0;
        double worst = worst_rel_diff(&L[MS_SIMD_PLAIN], &L[MS_SIMD_AVX2], E->N, &missing, &acc_off);
        CHECK(missing == 0 && acc_off == 0 && worst <= 2e-6,
              "%s %s: plain vs AVX2 form: %d orders missing, %d accuracy barriers off, largest relative "
              "difference %.3g", what, path, missing, acc_off, worst);
    }
    for (int s = MS_SIMD_PLAIN; s <= (int)cpu; s++)
        if (ran[s]) landscape_free(&L[s]);
}

/* Lp's rank of method m is Lr's, or differs only by orders at the rank's edge:
 * rank = 1 + #{B < b - tau} moves when some barrier lies within the float
 * rounding between the two runs (eps relative) of that edge (a near-tie may
 * swap; every other order must count the same) */
static int same_rank_but_near_ties(const landscape *Lp, const landscape *Lr, int m, double eps) {
    double edge = Lr->methods[m].barrier - rank_tau(Lr->naive.barrier);
    double slack = 2.0 * eps * fmax(1.0, fabs(edge));
    long near = 0;
    for (long k = 0; k < Lr->norders; k++) near += fabs(Lr->rows[k].barrier - edge) <= slack;
    return labs((long)Lp->rank[m] - (long)Lr->rank[m]) <= near;
}

static void prefix_case(const char *what, const moe_model *A, const moe_model *B, const evalset *E,
                        int fallback) {
    ls_opts o;
    ls_opts_default(&o);
    o.T = 7;
    o.nthreads = 2;
    ms_err err;
    landscape Lp, Lr;
    const ls_tuning never = {.prefix = -1}, always = {.prefix = 1}; // also at n = 2 (2 orders), where it does not pay
    int rr = landscape_compute_tuned(A, B, E, &o, &never, &Lr, &err);
    int rp = landscape_compute_tuned(A, B, E, &o, &always, &Lp, &err);
    CHECK(rr == 0 && rp == 0, "%s: both paths run (%s)", what, rr || rp ? err.msg : "");
    if (rr || rp) {
        if (!rr) landscape_free(&Lr);
        if (!rp) landscape_free(&Lp);
        return;
    }
    int missing = 0, acc_off = 0;
    double worst = worst_rel_diff(&Lp, &Lr, E->N, &missing, &acc_off);
    CHECK(missing == 0 && acc_off == 0, "%s: %d orders missing, %d accuracy barriers off by more than 1/N",
          what, missing, acc_off);
    if (fallback) {
        CHECK(same_landscape(&Lp, &Lr), "%s: the reference path at every t, bit for bit", what);
    } else {
        CHECK(worst <= 2e-6 && worst > 0.0, "%s: prefix vs per-order path, largest relative difference %.3g",
              what, worst);
        CHECK(same_rank_but_near_ties(&Lp, &Lr, 0, worst) && same_rank_but_near_ties(&Lp, &Lr, 1, worst),
              "%s: same ranks but for near-ties (%d %d vs %d %d)", what, Lp.rank[0], Lp.rank[1], Lr.rank[0],
              Lr.rank[1]);
    }
    forms_case(what, A, B, E, &o, 0);
    forms_case(what, A, B, E, &o, -1);
    landscape_free(&Lr);
    landscape_free(&Lp);
}

static void test_prefix_path(void) {
    moe_model A, B;
    evalset E;
    make_models(&A, &B, 5, 8, 8, 3, 21);
    make_evalset(&E, 45, 8, 3, 22); // 45: a padded last block of 16 lanes
    prefix_case("classification, n = 5", &A, &B, &E, 0);
    // regression targets instead of labels
    evalset R = E;
    R.labels = NULL;
    R.targets = ms_malloc((size_t)R.N * R.C * sizeof(float));
    for (int i = 0; i < R.N * R.C; i++) R.targets[i] = (float)((i * 37) % 11) / 5.0f - 1.0f;
    prefix_case("regression, n = 5", &A, &B, &R, 0);
    // a gate whose logits span more than the path's exp range at every t
    for (int i = 0; i < 5 * 8; i++) A.gate_w[i] *= 400.0f, B.gate_w[i] *= 400.0f;
    prefix_case("wide gate logits, n = 5", &A, &B, &E, 1);
    moe_free(&A);
    moe_free(&B);
    // no LayerNorm before the head (the pair outputs are not centred then)
    make_models_norm(&A, &B, 5, 8, 8, 3, 24, 0);
    prefix_case("no norm, n = 5", &A, &B, &E, 0);
    moe_free(&A);
    moe_free(&B);
    // n = 2: no shared levels, both slots straight into the leaf
    make_models(&A, &B, 2, 8, 8, 3, 23);
    prefix_case("classification, n = 2", &A, &B, &E, 0);
    moe_free(&A);
    moe_free(&B);
    // a softmax top-2 router: the selected form (the same precompute, each
    // order's selected slots), with and without LayerNorm, classification and
    // regression
    for (int norm = 1; norm >= 0; norm--) {
        make_models_norm(&A, &B, 5, 8, 8, 3, 25 + norm, norm);
        A.cfg.router = B.cfg.router = ROUTER_TOPK; // k = 2 of 5
        prefix_case(norm ? "top-2 of 5" : "top-2 of 5, no norm", &A, &B, &E, 0);
        if (norm) prefix_case("top-2 of 5, regression", &A, &B, &R, 0);
        moe_free(&A);
        moe_free(&B);
    }
    free(R.targets);
    free_evalset(&E);
}

static int in_groups(const int *p, int n, int G) {
    int m = n / G;
    for (int a = 0; a < G; a++)
        for (int i = 1; i < m; i++)
            if (p[a * m + i] / m != p[a * m] / m) return 0;
    return 1;
}

/* The pairs' first layers from per-expert products (landscape_sweep.c: x W1(t)^T
 * = (1-t) x W1A^T + t (x W1B^T)[P]) against the reference (interpolate the
 * weights, then multiply, as the evaluator): the same sums of float32 products
 * grouped differently, so every loss, barrier and AUC within 1e-5 relative
 * (measured ~1e-7) and the same ranks; with and without weight matching (P the
 * identity or not), ReLU and gated SiLU, top-k, and in sample chunks. */
extern int ls_first_once;

static void test_first_layers(void) {
    const moe_act acts[2] = {ACT_RELU, ACT_SILU_GLU};
    for (int a = 0; a < 2; a++)
        for (int chunked = 0; chunked < 2; chunked++) {
            moe_model A, B;
            evalset E;
            make_models_act(&A, &B, 5, 12, 10, 3, 31 + a, 1, acts[a]);
            if (a == 1) A.cfg.router = B.cfg.router = ROUTER_TOPK; // k = 2 of 5
            make_evalset(&E, 150, 12, 3, 32);
            ls_opts o;
            ls_opts_default(&o);
            o.T = 6;
            o.nthreads = 2;
            o.wm = chunked; // weight matching in the chunked runs
            if (chunked) o.mem_mb = 0.0001;
            ms_err err;
            landscape Lr, Lf;
            ls_first_once = 0;
            int rr = landscape_compute(&A, &B, &E, &o, &Lr, &err);
            ls_first_once = 1;
            int rf = landscape_compute(&A, &B, &E, &o, &Lf, &err);
            ls_first_once = -1;
            CHECK(rr == 0 && rf == 0, "first layers (act %d, chunked %d): both run (%s)", a, chunked,
                  rr || rf ? err.msg : "");
            if (rr == 0 && rf == 0) {
                int missing, acc_off;
                double worst = worst_rel_diff(&Lf, &Lr, E.N, &missing, &acc_off);
                CHECK(missing == 0 && acc_off == 0 && worst <= 1e-5 && worst > 0.0,
                      "first layers once (act %d, chunked %d): %d orders missing, %d accuracy barriers off, "
                      "largest relative difference "
                      "%.3g", a, chunked, missing, acc_off, worst);
                CHECK(Lf.rank[0] == Lr.rank[0] && Lf.rank[1] == Lr.rank[1],
                      "first layers once (act %d, chunked %d): same ranks (%d %d vs %d %d)", a, chunked,
                      Lf.rank[0], Lf.rank[1], Lr.rank[0], Lr.rank[1]);
            }
            if (rr == 0) landscape_free(&Lr);
            if (rf == 0) landscape_free(&Lf);
            free_evalset(&E);
            moe_free(&A);
            moe_free(&B);
        }
}

static void test_wreath_orders(void) {
    moe_model A, B;
    evalset E;
    int n = 8, d = 6, C = 3;
    make_models(&A, &B, n, d, 4, C, 91);
    make_evalset(&E, 40, d, C, 92);
    moe_config c = A.cfg;
    c.router = ROUTER_TOPK, c.k = 2, c.score = SCORE_SIGMOID, c.n_group = 4, c.topk_group = 2;
    c.group_score = GROUP_TOP2_SUM, c.has_corr_bias = 1;
    moe_model A2, B2;
    moe_alloc(&A2, &c);
    moe_alloc(&B2, &c);
    rng_t r;
    rng_seed(&r, 93);
    fill(A2.mem, A2.nparams, &r, 0.5);
    fill(B2.mem, B2.nparams, &r, 0.5);
    memcpy(B2.norm_w, A2.norm_w, (size_t)(2 * d + C * d + C) * sizeof(float));
    ls_opts o;
    ls_opts_default(&o);
    o.T = 5;
    landscape Lx, Ls;
    ms_err err;
    int rx = landscape_compute(&A2, &B2, &E, &o, &Lx, &err);
    CHECK(rx == 0 && Lx.exhaustive && Lx.norders == 384 && Lx.groups == 4 && Lx.group_size == 2 &&
              Lx.n_fact == 384.0,
          "wreath: all 384 group-preserving orders: %s", rx ? err.msg : "");
    o.exhaustive_max = 5; // 120 < 384: sampled
    o.nsample = 150;
    o.seed = 5;
    int rs = landscape_compute(&A2, &B2, &E, &o, &Ls, &err);
    CHECK(rs == 0 && !Ls.exhaustive && Ls.norders == 150 && Ls.n_fact == 384.0,
          "wreath: 150 sampled group-preserving orders: %s", rs ? err.msg : "");
    if (rx == 0 && rs == 0) {
        int bad = 0, dup = 0, miss = 0;
        for (long k = 0; k < Lx.norders; k++) {
            int ob[LS_MAX_N];
            bad += !in_groups(row_order(&Lx, k, ob), n, 4);
            for (long q = k + 1; q < Lx.norders; q++) dup += same_order(&Lx, k, q);
        }
        CHECK(bad == 0 && dup == 0, "wreath: %d orders split a group, %d repeated", bad, dup);
        for (long k = 0; k < Ls.norders; k++) {
            int ob[LS_MAX_N];
            long q = find_row(&Lx, row_order(&Ls, k, ob));
            miss += q < 0 || fabs(Lx.rows[q].barrier - Ls.rows[k].barrier) > 1e-9;
            for (long j = k + 1; j < Ls.norders; j++) dup += same_order(&Ls, k, j);
        }
        CHECK(miss == 0 && dup == 0, "wreath sample: %d orders off the exhaustive rows, %d repeated",
              miss, dup);
        for (int m = 0; m < 2; m++)
            CHECK(Lx.rank[m] >= 1 && Lx.rank[m] <= 384, "wreath: rank %d among 384", Lx.rank[m]);
    }
    if (rx == 0) landscape_free(&Lx);
    if (rs == 0) landscape_free(&Ls);
    // the kernel's forms on the general router (sigmoid scores, groups,
    // selection biases), on the head's loss and, headless, on the layer's
    // chord; with any of the 8! orders (splitting groups), each order's own chord end
    o.exhaustive_max = 0, o.nsample = 0, o.seed = 1;
    forms_case("general router", &A2, &B2, &E, &o, -1);
    c.has_head = 0, c.has_norm = 0, c.C = 0;
    moe_model A3, B3;
    moe_alloc(&A3, &c);
    moe_alloc(&B3, &c);
    fill(A3.mem, A3.nparams, &r, 0.5);
    fill(B3.mem, B3.nparams, &r, 0.5);
    evalset El = E;
    El.labels = NULL, El.C = 0;
    forms_case("headless", &A3, &B3, &El, &o, -1);
    o.all_orders = 1, o.exhaustive_max = 5, o.nsample = 200; // 200 of the 8! orders
    forms_case("headless, all orders (own chords)", &A3, &B3, &El, &o, -1);
    moe_free(&A3);
    moe_free(&B3);
    moe_free(&A);
    moe_free(&B);
    moe_free(&A2);
    moe_free(&B2);
    free_evalset(&E);
}

/* The per-order path's top-k mix skips the slots no lane of a piece selects:
 * the forms, whose pieces differ (16, 8, 4 lanes), agree (forms_case), with
 * 8 experts, top-2, on 45 samples (a padded last block) and in sample chunks. */
static void test_topk_forms(void) {
    moe_model A, B;
    evalset E;
    make_models(&A, &B, 8, 16, 8, 5, 61);
    A.cfg.router = B.cfg.router = ROUTER_TOPK; // k = 2 of 8
    make_evalset(&E, 45, 16, 5, 62);
    ls_opts o;
    ls_opts_default(&o);
    o.T = 4;
    o.nthreads = 2;
    o.exhaustive_max = 7, o.nsample = 300; // 300 sampled orders
    forms_case("top-2 of 8", &A, &B, &E, &o, 0);
    forms_case("top-2 of 8", &A, &B, &E, &o, -1); // the per-order path (the selected form above)
    free_evalset(&E);
    make_evalset(&E, 200, 16, 5, 63);
    o.mem_mb = 0.0001;
    forms_case("top-2 of 8, in sample chunks", &A, &B, &E, &o, 0);
    free_evalset(&E);
    moe_free(&A);
    moe_free(&B);
}

int main(void) {
    moe_model A, B;
    evalset E;
    int n = 5, d = 8, h = 8, C = 3, N = 48, T = 7;
    make_models(&A, &B, n, d, h, C, 42);
    make_evalset(&E, N, d, C, 7);
    ms_err err;
    {   // n! for people: exact while it fits 15 digits, a power of ten beyond
        char nf[48];
        ls_factorial_format(nf, sizeof nf, 8);
        CHECK(!strcmp(nf, "40320"), "8! formats as %s", nf);
        ls_factorial_format(nf, sizeof nf, 17);
        CHECK(!strcmp(nf, "355687428096000"), "17! formats as %s", nf);
        ls_factorial_format(nf, sizeof nf, 4096); // beyond a double (was "inf")
        CHECK(!strcmp(nf, "about 10^13019"), "4096! formats as %s", nf);
    }

    // full landscape, two threads, with the early-ranks callback
    ls_opts o;
    ls_opts_default(&o);
    o.T = T;
    o.nthreads = 2;
    watch w;
    memset(&w, 0, sizeof w);
    o.progress = on_progress;
    o.on_ranks = on_ranks;
    o.ctx = &w;
    o.cancel = &w.cancel;
    landscape L;
    int rc = landscape_compute(&A, &B, &E, &o, &L, &err);
    CHECK(rc == 0, "landscape_compute: %s", rc ? err.msg : "");
    if (rc == 0) {
        CHECK(L.norders == 120 && L.ndone == 120 && L.exhaustive, "120 orders done");
        CHECK(w.ranks_calls == 1, "on_ranks called once (%d)", w.ranks_calls);
        CHECK(w.rank[0] == L.rank[0] && w.rank[1] == L.rank[1], "early ranks %d %d equal final %d %d",
              w.rank[0], w.rank[1], L.rank[0], L.rank[1]);
        CHECK(w.calls > 0, "progress reported");
        for (long k = 1; k < L.norders; k++)
            CHECK(L.rows[k - 1].barrier <= L.rows[k].barrier, "rows sorted at %ld", k);
        CHECK(L.best == 0 && L.rows[0].barrier == L.best_barrier, "best is row 0");
        // ranks by definition
        for (int m = 0; m < 2; m++) {
            long less = 0;
            for (long k = 0; k < L.norders; k++) less += L.rows[k].barrier < L.methods[m].barrier;
            CHECK(L.rank[m] == 1 + less, "rank[%d] = %d, by count %ld", m, L.rank[m], 1 + less);
            long k = find_row(&L, L.methods[m].order);
            CHECK(k >= 0 && L.rows[k].barrier == L.methods[m].barrier,
                  "method %d row equals its curve", m);
        }
        // every order's row equals the plain curve path, and L(1) is B's loss
        int picks[3][5] = {{0, 1, 2, 3, 4}, {4, 3, 2, 1, 0}, {2, 0, 4, 1, 3}};
        for (int q = 0; q < 3; q++) {
            align_opts ao;
            align_opts_default(&ao);
            ao.order = picks[q];
            moe_model Bp;
            align_result res;
            CHECK(align_models(&A, &B, &ao, &Bp, &res, &err) == 0, "align: %s", err.msg);
            ls_curve cv;
            CHECK(curve_compute(&A, &Bp, &E, T, &cv, &err) == 0, "curve: %s", err.msg);
            long k = find_row(&L, picks[q]);
            CHECK(k >= 0, "order present");
            if (k >= 0) {
                CHECK_CLOSE(L.rows[k].barrier, cv.barrier, 1e-5, "row barrier vs curve_compute");
                CHECK_CLOSE(L.rows[k].auc, cv.auc, 1e-5, "row AUC vs curve_compute");
                CHECK(fabs(L.rows[k].acc_barrier - cv.acc_barrier) <= 1.0 / N + 1e-9, "acc barrier");
            }
            CHECK_CLOSE(cv.loss[T - 1], L.loss_b, 1e-5, "L(1) is B's loss for every order");
            CHECK_CLOSE(cv.loss[0], L.loss_a, 1e-6, "L(0) is A's loss");
            ls_curve cp;
            ls_curve_copy(&cp, &cv);
            CHECK(cp.loss != cv.loss && cp.loss[3] == cv.loss[3] && cp.barrier == cv.barrier, "copy");
            ls_curve_free(&cp);
            ls_curve_free(&cv);
            moe_free(&Bp);
            align_result_free(&res);
        }
        // one thread, chunked t: identical numbers
        ls_opts o1 = o;
        o1.nthreads = 1;
        o1.progress = NULL;
        o1.on_ranks = NULL;
        o1.cancel = NULL;
        o1.mem_mb = 0.0001;
        landscape L1;
        rc = landscape_compute(&A, &B, &E, &o1, &L1, &err);
        CHECK(rc == 0, "single-thread chunked run: %s", rc ? err.msg : "");
        if (rc == 0) {
            int same = 1;
            for (long k = 0; k < L.norders; k++)
                same &= L1.rows[k].barrier == L.rows[k].barrier &&
                        !memcmp(L1.orders + L1.rows[k].id * n, L.orders + L.rows[k].id * n, (size_t)n);
            CHECK(same, "thread count and chunking change nothing");
            CHECK(L1.rank[0] == L.rank[0] && L1.rank[1] == L.rank[1], "same ranks");
            CHECK(same_landscape(&L, &L1), "chunked run: every row and curve bit-identical");
            landscape_free(&L1);
        }
        // without weight matching (identity permutations in the pairs), and
        // with it, a tiny budget against the default one, on N = 200 samples:
        // one t does not fit, so each t runs in chunks of 64 samples (four
        // chunks, the last one short and padded)
        evalset E200;
        make_evalset(&E200, 200, d, C, 13);
        for (int wm = 0; wm <= 1; wm++) {
            ls_opts ow = o1;
            ow.wm = wm;
            ow.nthreads = 2;
            ow.mem_mb = 0;
            landscape Lu, Lc;
            int ru = landscape_compute(&A, &B, &E200, &ow, &Lu, &err);
            CHECK(ru == 0, "wm=%d unchunked: %s", wm, ru ? err.msg : "");
            ow.mem_mb = 0.0001;
            int rcc = landscape_compute(&A, &B, &E200, &ow, &Lc, &err);
            CHECK(rcc == 0, "wm=%d chunked: %s", wm, rcc ? err.msg : "");
            if (ru == 0 && rcc == 0)
                CHECK(same_landscape(&Lu, &Lc), "wm=%d: sample chunks give identical results", wm);
            if (ru == 0) landscape_free(&Lu);
            if (rcc == 0) landscape_free(&Lc);
        }
        free_evalset(&E200);
        landscape_free(&L);
    }

    // the phase hook, on N = 45 samples (not a multiple of the kernel's 16
    // lanes: the padding must not count) with 3 classes (padded to 4)
    {
        evalset E45;
        make_evalset(&E45, 45, d, C, 11);
        ls_opts op;
        ls_opts_default(&op);
        op.T = 5;
        op.nthreads = 2;
        phase_watch pw;
        memset(&pw, 0, sizeof pw);
        pw.caller = pthread_self();
        op.phase = on_phase;
        op.ctx = &pw;
        landscape L45;
        rc = landscape_compute(&A, &B, &E45, &op, &L45, &err);
        CHECK(rc == 0, "landscape with a phase hook: %s", rc ? err.msg : "");
        CHECK(pw.calls >= 1 && pw.bad == 0 && pw.names == pw.calls,
              "phase hook: %d calls, %d bad, %d known names", pw.calls, pw.bad, pw.names);
        CHECK(pw.other_thread == 0, "phase hook: %d of %d calls from another thread", pw.other_thread, pw.calls);
        if (rc == 0) {
            int pk[5] = {3, 1, 4, 0, 2};
            align_opts ao;
            align_opts_default(&ao);
            ao.order = pk;
            moe_model Bp;
            align_result res;
            CHECK(align_models(&A, &B, &ao, &Bp, &res, &err) == 0, "align: %s", err.msg);
            ls_curve cv;
            CHECK(curve_compute(&A, &Bp, &E45, 5, &cv, &err) == 0, "curve: %s", err.msg);
            long k = find_row(&L45, pk);
            CHECK(k >= 0, "order present (N = 45)");
            if (k >= 0) {
                CHECK_CLOSE(L45.rows[k].barrier, cv.barrier, 1e-5, "N = 45: row barrier vs curve_compute");
                CHECK_CLOSE(L45.rows[k].auc, cv.auc, 1e-5, "N = 45: row AUC vs curve_compute");
                CHECK(fabs(L45.rows[k].acc_barrier - cv.acc_barrier) <= 1.0 / 45 + 1e-9, "N = 45: acc barrier");
            }
            ls_curve_free(&cv);
            moe_free(&Bp);
            align_result_free(&res);
            landscape_free(&L45);
        }
        free_evalset(&E45);
    }

    // cancellation: a larger landscape (n = 7, 5040 orders), cancelled at the first rows
    moe_model A7, B7;
    evalset E7;
    make_models(&A7, &B7, 7, 8, 8, 3, 9);
    make_evalset(&E7, 40, 8, 3, 10);
    ls_opts_default(&o);
    o.T = 9;
    memset(&w, 0, sizeof w);
    w.cancel_after = 1;
    o.progress = on_progress;
    o.ctx = &w;
    o.cancel = &w.cancel;
    rc = landscape_compute(&A7, &B7, &E7, &o, &L, &err);
    CHECK(rc == -1 && strstr(err.msg, "cancelled"), "cancelled mid-landscape returns -1 (%d: %s)", rc,
          rc ? err.msg : "");
    CHECK(w.cancel && w.at_cancel > 0 && w.at_cancel < 5040, "cancel came mid-way (%ld)", w.at_cancel);
    CHECK(L.rows == NULL && L.t == NULL, "a cancelled landscape holds nothing");
    // cancelled before it starts
    w.cancel = 1;
    rc = landscape_compute(&A7, &B7, &E7, &o, &L, &err);
    CHECK(rc == -1 && strstr(err.msg, "cancelled"), "cancelled up front returns -1");
    // sampled mode's estimate against the exact rank: the same n = 7 pair
    // exhaustively (5040 orders) and from 1000 sampled orders
    {
        landscape Lx, Ls;
        ls_opts_default(&o);
        o.T = 9;
        int rx = landscape_compute(&A7, &B7, &E7, &o, &Lx, &err);
        CHECK(rx == 0 && Lx.exhaustive && Lx.norders == 5040, "n = 7 exhaustive: %s", rx ? err.msg : "");
        o.exhaustive_max = 6;
        o.nsample = 1000;
        o.seed = 3;
        int rs = landscape_compute(&A7, &B7, &E7, &o, &Ls, &err);
        CHECK(rs == 0 && !Ls.exhaustive && Ls.norders == 1000 && Ls.ndone == 1000,
              "n = 7 sampled (1000 orders): %s", rs ? err.msg : "");
        if (rx == 0 && rs == 0) {
            for (int m = 0; m < 2; m++) {
                // the true percentile lies in the reported 95% interval, and
                // the estimate is the sampled fraction below scaled to n!
                double truth = 100.0 * (Lx.rank[m] - 1) / 5040.0;
                CHECK(Ls.pct_lo[m] <= truth && truth <= Ls.pct_hi[m],
                      "method %d: true rank %d (%.2f%%) inside the sampled CI %.2f..%.2f%%", m, Lx.rank[m],
                      truth, Ls.pct_lo[m], Ls.pct_hi[m]);
                double lo = 1 + Ls.pct_lo[m] / 100 * 5040, hi = 1 + Ls.pct_hi[m] / 100 * 5040;
                CHECK(lo <= Ls.rank_est[m] && Ls.rank_est[m] <= hi && fabs(Ls.rank_est[m] - Lx.rank[m]) <= hi - lo,
                      "method %d: rank_estimate %.1f in [%.1f, %.1f], exact %d", m, Ls.rank_est[m], lo, hi,
                      Lx.rank[m]);
                CHECK(Ls.n_fact == 5040.0, "n! = %g", Ls.n_fact);
                CHECK(Lx.rank_est[m] == Lx.rank[m], "exhaustive: rank_estimate is the rank");
                CHECK_CLOSE(Ls.methods[m].barrier, Lx.methods[m].barrier, 1e-12, "chosen barrier, both modes");
            }
            // every sampled order's barrier is the exhaustive one of that order
            int bad = 0;
            for (long k = 0; k < Ls.ndone; k++) {
                int ob[LS_MAX_N];
                long q = find_row(&Lx, row_order(&Ls, k, ob));
                if (q < 0 || fabs(Lx.rows[q].barrier - Ls.rows[k].barrier) > 1e-9) bad++;
            }
            CHECK(bad == 0, "%d sampled orders differ from the exhaustive landscape", bad);
        }
        if (rx == 0) landscape_free(&Lx);
        if (rs == 0) landscape_free(&Ls);
    }
    // bad T
    ls_opts_default(&o);
    o.T = 2;
    CHECK(landscape_compute(&A7, &B7, &E7, &o, &L, &err) == -1 && strstr(err.msg, "points"),
          "T = 2 refused");

    moe_free(&A7);
    moe_free(&B7);
    free_evalset(&E7);
    moe_free(&A);
    moe_free(&B);
    free_evalset(&E);
    test_wreath_orders();
    test_prefix_path();
    test_first_layers();
    test_topk_forms();
    return test_summary("test_landscape_api");
}
