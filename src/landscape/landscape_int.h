/* landscape_int.h - the landscape's internal state, shared by its three files:
 *   landscape.c         the driver (landscape_compute) and its steps: plan,
 *                       pairs, end points, named curves, ranks, fill, sort
 *   landscape_sweep.c   the per-chunk work: precompute (pair outputs, gate
 *                       scores, shared sums, head per t), the orders' sweep
 *                       over blocks of orders, and the thread pool running both
 *   landscape_kernel.c  the fused per-order kernel (routing, mix, LayerNorm,
 *                       head, loss for 16 samples per vector lane)
 *
 * The state is split by lifetime: the problem (inputs and what is derived
 * from them once, read-only during the sweeps), the plan (every buffer size,
 * computed once), the current chunk of points, the per-order results and the
 * thread pool. */
#ifndef MS_LANDSCAPE_INT_H
#define MS_LANDSCAPE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "core/simd.h"
#include "landscape/landscape.h"
#include "landscape/landscape_tuning.h"

enum { SH_MAIN = 0, SH_NAIVE = 1, SH_SKIP = 2, SH_COUNT = 3 };
/* the named curves: naive, skip-order, then each method's order (cost_method.h) */
enum { NM_NAIVE = 0, NM_SKIP = 1, NM_METHOD = 2, NM_COUNT = NM_METHOD + COST_NMETHODS };

/* Everything the per-order kernel reads is stored "lane-major": samples in
 * blocks of LS_L, and within a block a value for every sample side by side,
 * e.g. Y of one pair at one t is (nb, d, LS_L). The kernel then computes
 * LS_L samples at once with plain vector arithmetic (one sample per lane) and
 * never reduces across a vector. The last block is padded with zeros and its
 * padding lanes are left out of every sum. 16: one AVX-512 register of
 * floats (two AVX2 ones); the kernel's forms for narrower registers run the
 * same lanes in pieces. */
#define LS_L 16

/* Sample-dependent GEMMs run on panels of LS_PANEL rows at fixed offsets in
 * the evaluation set, so a sample's numbers are the same whether its chunk
 * holds all samples or a few panels (OpenBLAS's result for a row may depend
 * on the row count of the call). Sample chunks are whole panels. */
#define LS_PANEL 128

/* Orders per work item. Consecutive orders in lexicographic order share
 * their leading slots, so a block of 720 = 6! (n = 8: one 2-slot prefix)
 * reads only 38 of the 64 pairs; per sample block that is ~50 KiB of Y and
 * H'Y, which stays in L1/L2 while all 720 orders use it, and one t's pair
 * outputs (MBs, beyond L2) stream from memory once per 720 orders (measured
 * on dense8: 32 -> 128 orders per block took all orders from 8.4 s to
 * 6.6-7.1 s; with the kernel's prefix path, 128 -> 720 from 6.5 to 5.4 CPU s). */
#define LS_BLOCK 720

#define LS_MAX_THREADS 8 /* workers: more than 8 did not pay on the targets measured */
/* o->nthreads, 0: the online CPUs; 1 .. LS_MAX_THREADS (inline: the layer sweep
 * and the objective's both ask, and neither file may need the other for it) */
static inline int ls_threads(const ls_opts *o) {
    long nt = o->nthreads > 0 ? o->nthreads : sysconf(_SC_NPROCESSORS_ONLN);
    return nt < 1 ? 1 : nt > LS_MAX_THREADS ? LS_MAX_THREADS : (int)nt;
}

/* per-thread workspace */
typedef struct {
    float *E;      // (esize) one interpolated expert
    float *EM;     // (2, esize) a mapped layer's pair decoded into floats (precompute), else NULL
    float *H;      // (Nc, h) hidden
    float *H3;     // (Nc, h) GLU linear branch
    float *Ye;     // (Nc, d) one expert's output
    float *Wt;     // (n*n, d) interpolated gate rows for all (i,j)
    float *bt;     // (n*n)
    float *Zb;     // (Nc, d) the shared experts' sum (precompute)
    float *Sx;     // (Nc, nn) gate scores (precompute)
    float *hraw;   // (2d + C*d + C) the head at one t (precompute)
    float *z;      // (d, LS_L) kernel: block output (64-byte aligned, as lg and lev)
    float *lg;     // (Cp, LS_L) kernel: logits
    float *lev;    // kernel's prefix path: partial sums, loss sums (NULL: unused)
    int (*ord)[LS_MAX_N], (*pair)[LS_MAX_N]; // (LS_BLOCK) a block's orders and their pairs
    int (*lp)[LS_MAX_N], (*lc)[LS_MAX_N];    // (LS_BLOCK) those active at one t
    /* kernel: where each order of a call puts its per-sample losses at the
     * call's t, indexed by sample (ls_results.units); NULL: not kept */
    double **ps;
    double **psbuf; // (LS_BLOCK) ps's storage
    /* streamed error bars (ls_results.boot): the block's per-sample losses at
     * the last chunk's points, (LS_BLOCK, ls_results.nbl, N); NULL otherwise */
    double *ublk;
} ls_ws;

/* The problem: inputs and what is derived from them once. */
typedef struct {
    const moe_model *A, *B;
    float *rw[2], *rb[2]; // (n, d), (n) A's and B's gates as the routing reads them (moe_gate_routing)
    const evalset *E;
    const moe_config *cfg;
    const ls_opts *o;
    ls_tuning tune;   /* the kernel's path and form (landscape_tuning.h) */
    int n, d, h, N, C, T, nn; /* nn = n*n; C = 0 without a head */
    ls_kind kind;
    size_t esize;             /* floats of one expert (the larger of routed and shared) */
    /* the router is not the plain softmax top-k (renormalised, no selection
     * bias, groups or routed scale): the kernel routes with route_general */
    int general;
    int hmax;                 /* the larger of h and the shared width hs */
    /* shared experts of B per variant (aligned as each named alignment does) */
    const moe_expert *shB[SH_COUNT];
    float *shmem;      // (SH_COUNT, s, esize) their parameters (mapped: their biases)
    moe_expert *shx;   // (SH_COUNT, s)
    int *shperm;       // (SH_COUNT, s, hs) mapped: the hidden orders of their views, else NULL
    /* pairs: p < nn is (i = p/n, j = p%n) with the landscape's WM setting;
     * p = nn + i is (i, i) with the other setting (for naive / skip_order).
     * Only the hidden permutations are kept, not permuted copies of B's
     * experts ((n^2+n) copies would be GBs at GPT-2 size): the interpolated
     * expert of a pair is gathered from B's expert on the fly (cheap next to
     * its GEMMs) */
    int npairs;
    int *perm;       // (npairs, h) pair p's unit u is B's unit perm[p*h+u]
    int *pj;         // (npairs) B's expert of pair p
    const float *DA, *DB; // (N, d) each: the chord's ends, layer mode only
    /* layer mode where reordering B can change its function (B's routing ties
     * on some input, or the orders split a group-limited router's groups): each
     * order's chord ends at its own D_B'(x) = DBn(x) + sum_i g1_i(x) E^B_pi(i)(x),
     * the routed part computed by the kernel from B's logits and expert outputs
     * (the chunk's S1, Y1) */
    int own_chord;
    float *DBn;      // (N, d) B's output without its routed experts (own_chord)
    ls_endpoint own[2];   // A's and B's evaluation when the caller lent none
    int32_t *lablanes;   // (nb*LS_L) labels, -1 in the padding
    float *tglanes;      // (nb, C, LS_L) regression targets
    double loss_a, loss_b, acc_a, acc_b;
} ls_problem;

/* Every size, computed once (ls_plan_fill) and used by the accessors, the
 * memory budget and the allocation. */
typedef struct {
    int nb;          /* sample blocks of LS_L (the kernel's lanes) */
    int nbc;         /* blocks held at once (all unless chunked by samples) */
    int nsc;         /* sample chunks (1 unless one t exceeds the budget) */
    int cap_t;       /* interior points held at once */
    int Cp;          /* classes padded to a multiple of 4 (the kernel's passes) */
    size_t Nc;       /* lane rows held: nbc * LS_L */
    size_t rows_held; /* samples held: min(N, Nc) (the workspaces' rows) */
    size_t head_floats; /* one t's folded head H' (Cp, d) + c' (Cp); 0 in layer mode */
    size_t lane_d, lane_nn; /* one t's lane arrays of width d and nn: Nc * width */
    size_t S_floats, Y_bytes, base_floats, head_total; /* the chunk buffers */
    int prefix;      /* the kernel's prefix path is used (ls_prefix_applies) */
    ms_simd simd;    /* the kernel's form: the widest this CPU runs, or ls_opts.simd */
    const struct ls_form *form; /* ... its functions (ls_form_for), picked once */
    size_t E_floats, HY_floats; /* its chunk buffers (0 without it) */
    int gram;        /* ... with LayerNorm: the pair outputs' Gram products G (ls_prefix_gram) */
    size_t gsize, G_floats; /* ... one sample's G entries (ls_prefix_gsize), the chunk's G */
    int first_once;  /* the pairs' first layers from per-expert products (ls_first_applies) */
    size_t F_floats; /* ... one of its chunk buffers F, F3: 2n Nc h (0 without it) */
} ls_plan;

/* The current chunk of points and, within it, of samples. */
typedef struct {
    int *tidx, ntc;  /* (cap_t) t indices of the chunk, ntc of them */
    int end_chunk;   /* the chunk is t = 1 alone, filling the orders' lb/ab */
    int b0, nbn;     /* sample blocks [b0, b0+nbn) are precomputed */
    int cur_sc;      /* that sample chunk (-1: none) */
    int sc_last;     /* it is the last one: the orders' sums are complete */
    char pre_what[80]; /* the precompute's phase: "precomputing experts at points (samples 2/3)" */
    float *S;        // (cap_t, nbc, nn, LS_L) gate scores of every (slot, B row)
    float *Y;        // (cap_t, npairs, nbc, d, LS_L) pair outputs
    float *base;     // (cap_t, SH_COUNT, nbc, d, LS_L) shared sums + residual or - chord
    float *head;     // (cap_t, head_floats) interpolated head per t, folded
    float *corr;     // (cap_t, nn) selection biases of every (slot, B row) at t, NULL without
    float *S1;       // (nbc, n, LS_L) B's gate logits (own_chord), any t
    float *Y1;       // (n, nbc, d, LS_L) B's expert outputs E^B_j(x) (own_chord), any t
    /* the kernel's prefix path (ls_prefix_prepare), NULL without it */
    float *E;        // (cap_t, nbc, nn, LS_L) exp(S - the sample's largest S)
    float *HY;       // (cap_t, npairs + SH_COUNT, nbc, Cp, LS_L) folded head times the
                     // centred pair outputs, then times the centred shared variants
    float *G;        // (cap_t, nbc, gsize, LS_L) the centred pair outputs' Gram products
                     // (ls_prefix_gsize), NULL without LayerNorm
    unsigned char *pfx_ok; // (cap_t) the prefix path holds at that t (no exp underflows)
    /* first layers once (ls_plan.first_once), NULL without: X W1^T + 0 of A's
     * slots (rows 0..n-1) and of B's experts as stored (n..2n-1), any t */
    float *F;        // (2n, Nc, h) X W1^T
    float *F3;       // (2n, Nc, h) X W3^T (gated activations), NULL otherwise
} ls_chunk;

/* Per-order results over the points done so far. */
typedef struct {
    landscape *L;
    long norders;
    int exhaustive;
    int groups;             /* > 1: the orders are the wreath group's (G groups of n/G) */
    double *bar, *accb, *auc; // (norders) running barrier, acc barrier, AUC
    unsigned char *done;    // (norders) row emitted
    int *prog;              // (norders) points of the current chunk folded in
    double *acc_l;          // (norders) loss sums over the sample chunks so far (nsc > 1)
    long *acc_ok;           // (norders) correct counts likewise
    /* each order's L(1), Acc(1) when B's top-k ties at the k-th score on some
     * input: the reordered B then routes those inputs to other experts than B
     * (ties go to the smaller slot), so L(1) depends on the order; NULL
     * otherwise (every order's L(1) is B's loss) */
    double *lb, *ab;
    /* (norders, T, N) every order's per-sample losses at the points the sweep
     * evaluates (ls_opts.keep_units), NULL: not kept; split over processes, a
     * process other than rank 0 holds its own orders' alone, from order units_k0 */
    double *units;
    long units_k0;
    /* streamed error bars (ls_opts.keep_units, no table kept): each order's
     * per-sample losses go to boot as soon as its last point is done, then are
     * dropped. The points of the chunks before the last (the middle; t = 1 with
     * B's ties) are held for every order in ustore, the last chunk's in the
     * worker's block (ls_ws.ublk), t = 0 and 1 are A's and B's (uend). An
     * order finished in the ranks phase (which keeps no losses) is evaluated
     * again in the last sweep for them alone (reboot). Split over processes,
     * each feeds its own orders and rank 0 gathers what they gave
     * (ls_boot_acc_gather), not their losses. NULL: not streamed */
    struct ls_boot_acc *boot;
    double *ustore;         // (k1 - k0, une, N) this process's orders
    int *upos, *bpos;       // (T) each point's place in ustore, in ublk; -1: not there
    int une, nbl;
    const double *uend[2];  // (N) each: the rows at t = 0 and t = 1 (no ties)
    unsigned char *reboot;  // (norders)
    long filled;            /* rows written (under the pool's mu) */
    long k0, k1;            /* the orders this process sweeps (all unless o->part) */
    int failed;             /* an exchange with the other processes failed: perr */
    ms_err perr;
    double t0;              /* when landscape_compute started (ls_now) */
} ls_results;

typedef struct {
    int nthreads;
    ls_ws *ws;         // (nthreads)
    atomic_int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    double last_phase; /* when o->phase was last called (0: never) */
} ls_pool;

typedef struct {
    ls_problem pb;
    ls_plan pl;
    ls_chunk ck;
    ls_results rs;
    ls_pool pool;
} lsx;

/* One vector form of the kernel (landscape_kernel.c: AVX-512, AVX2 or plain),
 * its functions in one row, picked once per landscape (ls_plan.form) as
 * core/vrows picks its loops. orders: the per-order path; prefix and
 * selected: the prefix path's two forms (m <= LS_BLOCK); prepare: the prefix
 * path's per-chunk precompute. */
typedef void ls_orders_fn(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                          const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok);
struct ls_form {
    ms_simd simd;
    void (*prepare)(lsx *x);
    ls_orders_fn *orders, *prefix, *selected;
};
/* the row of form s (capped at the CPU's, ms_simd_pick) */
const struct ls_form *ls_form_for(ms_simd s);

/* One job for the pool: precompute items or blocks of orders. */
typedef struct {
    lsx *x;
    long nitems, next, grain;
    int kind;            /* 0 precompute, 1 orders, 2 first layers (ls_plan.first_once) */
    const long *list;    /* kind 1: order indices (NULL: all), */
    long nlist;
    double bmax;         /* kind 1: stop an order once its barrier reaches this */
    int finish;          /* kind 1: emit rows (the last chunk) */
    int units;           /* kind 1: the streamed error bars' losses kept (ls_results.boot) */
    int running;
    long ndone;          /* items finished (atomic) */
    const char *what;    /* phase name for o->phase, NULL: none */
    long unit;           /* o->phase counts items * unit, at most ptotal */
    long ptotal;
    long shown;          /* > 0: o->phase counts in these (a chunk's points), the items scaled */
    long pre_first, pre_count; /* kind 0: pair items [pre_first, +pre_count) of the
                                  chunk's, then its ntc per-t items */
} ls_job;

/* lane arrays of the current chunk */
static inline float *ls_Y_at(const lsx *x, int tc, int p) { // (nbc, d, LS_L)
    return x->ck.Y + ((size_t)tc * x->pb.npairs + p) * x->pl.lane_d;
}
static inline float *ls_base_at(const lsx *x, int tc, int v) { // (nbc, d, LS_L)
    return x->ck.base + ((size_t)tc * SH_COUNT + v) * x->pl.lane_d;
}
static inline float *ls_S_at(const lsx *x, int tc) { // (nbc, nn, LS_L)
    return x->ck.S + (size_t)tc * x->pl.lane_nn;
}
static inline const float *ls_corr_at(const lsx *x, int tc) { // (nn)
    return x->ck.corr + (size_t)tc * x->pb.nn;
}
static inline float *ls_head_at(const lsx *x, int tc) { // (Cp, d) then (Cp)
    return x->ck.head + (size_t)tc * x->pl.head_floats;
}

static inline float *ls_E_at(const lsx *x, int tc) { // (nbc, nn, LS_L)
    return x->ck.E + (size_t)tc * x->pl.lane_nn;
}
static inline float *ls_HY_at(const lsx *x, int tc, int p) { // (nbc, Cp, LS_L); p >= npairs: variant
    return x->ck.HY + ((size_t)tc * (x->pb.npairs + SH_COUNT) + p) * x->pl.Nc * x->pl.Cp;
}

static inline float *ls_G_at(const lsx *x, int tc) { // (nbc, gsize, LS_L)
    return x->ck.G + (size_t)tc * x->pl.Nc * x->pl.gsize;
}

/* landscape_kernel.c: the prefix path (see there) applies to this problem
 * (ls_opts.prefix: off, or on wherever it applies, for the tests) */
int ls_prefix_applies(const lsx *x);
size_t ls_prefix_ws_bytes(const lsx *x); /* its workspace (ls_ws.lev) */
/* its Gram products' entries per sample (n^2 (n (n-1)/2 + 1): the pairs of
 * pairs in two slots, and each pair with itself); 0 where they are not used
 * (no LayerNorm: no variance to find) */
size_t ls_prefix_gsize(const lsx *x);
void ls_prefix_ws_clear(const lsx *x, ls_ws *w); /* ... its loss sums, once */
/* its per-chunk precompute, once the chunk's S, Y, base and head are final */
void ls_prefix_prepare(lsx *x);

/* landscape_sweep.c: the pair outputs' first layers from per-expert products
 * (x W1(t)^T = (1-t) x W1A^T + t x W1B'^T: 2n GEMMs per sample chunk instead
 * of one per pair and t, a third of the precompute's flops). Applies to layers
 * of at least LS_FIRST_MIN weights per matrix (h d): below, the precompute costs
 * nothing and the evaluator's arithmetic (interpolate, then multiply) is kept
 * bit for bit. ls_first_once = 0 turns it off, 1 on at any size (tests). */
#define LS_FIRST_MIN 16384
extern int ls_first_once;
int ls_first_applies(const lsx *x);

/* landscape_kernel.c: loss sums of m orders at the chunk's point tc (see there) */
void ls_eval_orders_t(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                      const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok);

/* the same for one order (the named curves), m = 1 */
void ls_eval_order_t(const lsx *x, ls_ws *w, const int *pair, const int *col, int v, int tc,
                     double *ls, long *ok);

/* landscape_sweep.c */
double ls_now(void);
double ls_cpu_now(void); /* the process's CPU seconds, every thread */
int ls_cancelled(lsx *x);
void ls_phase(lsx *x, const char *what, long done, long total);
void ls_to_lanes(float *dst, const float *src, int N, int width, int nb);
void ls_order_value(const lsx *x, double lsum, long ok, double *loss, double *acc);
void ls_emit_row(lsx *x, long k);
void ls_report_progress(lsx *x);
int ls_run_job(lsx *x, ls_job *job);
int ls_load_samples(lsx *x, int sc);
int ls_sweep(lsx *x, ls_job *job);

/* landscape_orders.c: order k of the rows (exhaustive: the k-th in lexicographic order) */
void ls_order_of(const lsx *x, long k, int *p);

/* landscape_orders.c, shared with the objective's driver (landscape_obj.c), which has no lsx: */
/* every order of the exhaustive set (S_n, or with groups > 1 the wreath group's)
 * into o (norders, n), in row order */
void ls_orders_all(uint8_t *o, int n, int groups, long norders);
/* nsample distinct uniformly random orders of that set into out (nsample, n), from seed */
void ls_orders_sample(uint8_t *out, int n, int groups, long nsample, uint64_t seed);
/* landscape_table.c: the orders planned into dst (norders, n): o->given's, every
 * one (exhaustive), or a sample drawn from o->seed */
void ls_orders_fill(uint8_t *dst, int n, int groups, long norders, int exhaustive, const ls_opts *o);
/* the index of order p among L's orders, -1 if not there */
long ls_order_index(const landscape *L, int exhaustive, int groups, long norders, const int *p);
/* landscape_table.c: ranks (rank.h: tolerance tau, tie class, AUC tie-break), L-hat and the best
 * barrier from L's first filled rows; valid when every order not done has a
 * lower bound above every chosen barrier + tau */
void ls_ranks(landscape *L, long filled, int exhaustive, long norders);
/* the bound an order's lower bound must reach to rank no method differently: the
 * largest method barrier + tau, just above (INFINITY when one is NaN) */
double ls_methods_bound(const landscape *L);
/* L's rows sorted by barrier (NaN last, then by order), best and worst set, ndone = norders */
void ls_sort_rows(landscape *L);
/* landscape_boot.c: whether the orders' per-unit losses may be streamed into
 * their error bars: ls_opts.stream_units, or a test's MOESCOPE_TEST_BOOT_STREAM
 * (streamed wherever the stream applies, however few) */
int ls_boot_streams(const ls_opts *o);
/* landscape_boot.c: whether nu per-unit losses (orders x points x units) are
 * few enough to keep as a table (ls_opts.keep_units) even when they could be
 * streamed: no more than the JSON writes */
int ls_boot_as_table(double nu);
/* landscape_boot.c: the named curve whose values are the row of order p in a
 * layer's sweep (a method's, else with wm skip-order's), NULL when none */
const ls_curve *ls_named_row(const landscape *L, int wm, const int *p);
/* landscape_boot.c: the error bars (L->bar_lo .. rank_hi, bootstrap.h) from every
 * order's per-unit losses seq (norders, T, S) by order id, once ls_ranks is done;
 * -1 only when cancelled */
#define LS_BOOT_MAX_MB 256
#define LS_BOOT_MAX_MB_S "256"
int ls_boot_landscape(landscape *L, const double *seq, int S, const char *unit, atomic_int *cancel,
                      ms_err *err);
/* landscape_boot.c: the same error bars fed one order at a time, as soon as its
 * per-unit losses exist, so that no (norders, T, S) table is needed. new: once
 * the methods' curves (their seq, S units) and the naive barrier are final;
 * ref (T, may be NULL): rows many orders share (a layer's end points), NULL
 * where none; nslots: the threads that feed. feed: order id's rows (T
 * pointers to S losses each; ls_boot_acc_rows gives slot's array to fill),
 * from one thread per slot at a time. finish: once every order was fed and
 * ls_ranks is done, the rows' intervals and the methods' rank intervals. The
 * results are ls_boot_landscape's on the same losses, bit for bit. */
typedef struct ls_boot_acc ls_boot_acc;
ls_boot_acc *ls_boot_acc_new(const landscape *L, int S, const double *const *ref, int nslots);
const double **ls_boot_acc_rows(ls_boot_acc *a, int slot);
void ls_boot_acc_feed(ls_boot_acc *a, int slot, long id, const double *const *rows);
void ls_boot_acc_finish(const ls_boot_acc *a, landscape *L, const char *unit);
void ls_boot_acc_free(ls_boot_acc *a);
/* split over processes, each fed its orders [k0, k1): rank 0 gathers every order's
 * interval and the sums of the others' counts (integers: exact in any order), so
 * that its finish is one process's, bit for bit; -1 when an exchange fails */
int ls_boot_acc_gather(ls_boot_acc *a, const ls_partition *part, long k0, long k1, ms_err *err);
/* the orders' error bars: at most this many per-unit losses resampled (orders x
 * points x units, each under every resample: 1000 products), by default 2^25
 * (about 10 CPU s), with ls_opts.all_error_bars 2^29 (minutes) */
#define LS_BOOT_MAX_VALUES (1L << 29)
#define LS_BOOT_AUTO_VALUES (1L << 25)
#define LS_BOOT_AUTO_VALUES_S "33554432"
/* the bound in force: LS_BOOT_AUTO_VALUES unless a test lowers it to reach both
 * sides of it on small inputs (MOESCOPE_TEST_BOOT_BOUND; the messages keep
 * naming 2^25) */
double ls_boot_max_values(const ls_opts *o);
/* why the orders have no error bars when there are more than that */
static inline const char *ls_boot_too_many(const ls_opts *o) {
    return o->all_error_bars ? "more than 536870912 per-unit losses (orders x points x units) to resample"
                             : "more than " LS_BOOT_AUTO_VALUES_S " per-unit losses (orders x points x units) to "
                               "resample in seconds (--all-error-bars: every order's, 1000 products each)";
}
/* landscape_boot.c: c (its T set) again the plain way (curve.c) for its per-sample
 * losses and barrier interval: B aligned by order (NULL: identity) and weight
 * matching wm, the hidden units matched as method hidden matches them, on a layer's E */
int ls_order_units(const moe_model *A, const moe_model *B, const evalset *E, const int *order, int wm,
                   cost_method hidden, ls_curve *c, ms_err *err);
/* landscape_boot.c: order id's per-sample losses (T, S) into seq from those L
 * kept (L->order_units, the named curves' seq for the end points and the rows
 * the sweep takes from the curves); -1 when not kept. wm: the landscape's. */
int ls_kept_units(const landscape *L, int wm, long id, double *seq);
/* landscape_obj.c: landscape_compute on o->objective */
int ls_obj_compute(const moe_model *A, const moe_model *B, const ls_opts *o, landscape *L,
                   ms_err *err);

#endif
