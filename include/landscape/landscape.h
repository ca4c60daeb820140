/* landscape.h - the landscape of all expert orders: for every order,
 * the curve from A to B aligned with it, its barrier, ranks and L-hat.
 * Curves themselves (ls_curve, curve_compute) are in curve.h.
 *
 * The writers of landscape_report.c are declared here too: they print exactly the
 * structs of this header and curve.h, and nothing else uses them. */
#ifndef MS_LANDSCAPE_H
#define MS_LANDSCAPE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

#include "align/align.h"
#include "core/simd.h"
#include "landscape/curve.h"
#include "landscape/landscape_orders.h"
#include "io/evalset.h"
#include "model/model.h"

/* `--exhaustive`: every order up to this many experts (11! = 39916800 rows) */
#define LS_EXHAUSTIVE_FORCED_MAX 11
/* On an objective (a network) each (order, t) is whole network evaluations:
 * every order only up to this many experts (720 orders), above it a sample */
#define LS_OBJ_EXHAUSTIVE_MAX 6
#define LS_OBJ_SAMPLES 500
/* A layer's orders sampled above LS_EXHAUSTIVE_MAX experts, by the commands
 * (landscape, study: --samples N) and the explorer alike: at n = 64 the table
 * comes in tens of seconds, and a rank percentile's 95% Wilson interval is at
 * most about +-2.2 points wide (p = 1/2), a rank-1 order's [0, 0.19%]. */
#define LS_SAMPLES 2000

/* One order's results. Its experts are not in the row (n up to 256 would make
 * every row 1 KB; an 11-expert table has 39.9M rows): id indexes the
 * landscape's orders, a (norders, n) byte array, so row r's order is
 * orders[r.id * n .. r.id * n + n). Rows move (sorting, copies, processes);
 * the ids go with them. */
typedef struct ls_row {
    double barrier, acc_barrier, auc;
    double bar_lo, bar_hi; /* the barrier's bootstrap interval, valid when the
                              landscape's boot_resamples > 0 (bootstrap.h) */
    long id;
} ls_row;

/* the row whose order is p among rows[0..count), -1 when none */
long ls_rows_find(const ls_row *rows, long count, const uint8_t *orders, int n, const int *p);

struct landscape;

/* One checkpoint's evaluation on E, made once and lent to every landscape it
 * takes part in (a study's pairs share it): loss and accuracy (NaN unless
 * classifying; layer-only sets: loss 0) and, for layer-only sets, the layer's
 * contribution D(x) = layer(x) - x (residual) or layer(x), (N, d). */
/* --points of every command and the explorer: the interpolation points t = 0 .. 1,
 * at least one between the end points (a barrier needs a middle), at most what a
 * curve's table holds in reason */
enum { LS_POINTS_MIN = 3, LS_POINTS_MAX = 100000 };

typedef struct {
    double loss, acc;
    float *D;            /* (N, d) layer mode only, else NULL */
    double *seq;         /* (N) each sample's loss (the named curves' error bars), NULL in layer mode */
} ls_endpoint;

/* Evaluate m on E as the landscape's end points (an error when E does not fit
 * m); free with ls_endpoint_free. */
int ls_endpoint_eval(const moe_model *m, const evalset *E, ls_endpoint *e, ms_err *err);
void ls_endpoint_free(ls_endpoint *e);

/* Splitting one landscape over cooperating processes (the MPI build: src/mpi/landscape_mpi.c
 * implements it; the plain build never sets it). Every process runs landscape_compute with
 * the same inputs and options; each computes its share (ls_share) of the pairs' weight
 * matching, of the pair outputs at every point and of the order blocks, and the hooks
 * exchange the results. Each hook is called from the calling thread, by every process at
 * the same step, and returns 0 or -1 (err set). */
typedef struct ls_partition {
    int rank, size;  /* this process, of size; rank 0 alone gets the finished table */
    /* items [0, total) of item_bytes each at buf: this process filled its share
     * ls_share(total, rank, size); afterwards every process holds all of them */
    int (*allgather)(const struct ls_partition *p, void *buf, long total, size_t item_bytes,
                     ms_err *err);
    /* this process's nlocal finished rows; rank 0 receives every process's rows, in rank
     * order, into rows[0..total) (its own are rows[0..nlocal)) while reporting the rows done
     * over all processes through progress (may be NULL) */
    int (*gather_rows)(const struct ls_partition *p, struct ls_row *rows, long nlocal, long total,
                       void (*progress)(void *ctx, long done, long total), void *ctx, ms_err *err);
    /* rows done over all processes, from this process's count (rank 0: the sum of the
     * latest counts heard from the others and its own; others: -1, nothing to show) */
    long (*rows_done)(const struct ls_partition *p, long local);
    /* items [lo, lo + nlocal) of total, item_bytes each, at buf: this process's; rank 0
     * receives every process's into buf[0..total) (its own already at buf + lo), the
     * others send theirs (the per-sample losses of the error bars) */
    int (*gather)(const struct ls_partition *p, void *buf, long lo, long nlocal, long total,
                  size_t item_bytes, ms_err *err);
    long *evals;     /* NULL, or where an objective's split landscape adds the evaluations
                        this process made (moescope-mpi's MOESCOPE_MPI_STATS) */
    void *ctx;
} ls_partition;

typedef struct {
    int T;               /* points, default 25, LS_POINTS_MIN..LS_POINTS_MAX */
    int wm;              /* weight matching inside each order (default 1) */
    int center;          /* gate centring for the gate method (default 1) */
    /* every pair's hidden units matched as this method matches them
     * (align_match_hidden: activation by their activations on the evaluation
     * set's inputs, the others by weight matching; default COST_EXPERT), as
     * align --method does; a network's other MoE blocks are aligned by it too */
    cost_method hidden;
    long nsample;        /* n > exhaustive_max: orders to sample (default LS_SAMPLES) */
    int all_orders;      /* group-limited routers: every order of S_n, not only the
                            group-preserving ones (the default; see landscape.groups) */
    int exhaustive_max;  /* every order when n <= this (default LS_EXHAUSTIVE_MAX); tests
                            lower it to check the sampled estimate against the exact rank */
    uint64_t seed;       /* for sampling */
    atomic_int *cancel;  /* polled often; when it becomes non-zero, stop and return -1 */
    /* called from the computing thread as rows finish; may be NULL */
    void (*progress)(void *ctx, long done, long total);
    void *ctx;
    /* called once from the computing thread as soon as the curves
     * (naive, skip_order, methods), endpoints, rank, l_hat and best_barrier
     * of L are final, usually long before every row is done. May be NULL. */
    void (*on_ranks)(void *ctx, const struct landscape *L);
    int nthreads;        /* worker threads; 0 = the online CPUs; at most 8 either way */
    int all_error_bars;  /* every order's error bars up to 2^29 per-unit losses (orders x
                            points x units; minutes of resampling), not only up to 2^25 */
    double mem_mb;       /* budget for the per-point buffers in MB (0: 1024); over it the
                          * points, then the samples, are processed in chunks */
    /* what the landscape is doing before rows come out, for a gauge:
     * called from the calling thread during the pairs' weight matching
     * ("weight-matching pairs", done/total pairs), each chunk's per-t
     * precompute ("precomputing pairs", done/total pair outputs) and the
     * middle-point pass ("middle point", done/total orders; when the t
     * range is chunked, "orders on a chunk of points" for the others), at
     * most about every 20 ms. what is a static string. May be NULL; uses
     * ctx. */
    void (*phase)(void *ctx, const char *what, long done, long total);
    /* A's and B's evaluations (ls_endpoint_eval of the same models on
     * the same E), borrowed; NULL: the landscape evaluates them itself. */
    const ls_endpoint *end_a, *end_b;

    /* NULL, or this process's part of a landscape split over processes (above);
     * then only rank 0's L holds the table, the others' only their own rows */
    const ls_partition *part;

    /* NULL: the loss is the layer's own (its head, or the layer-output chord) on
     * E. Else every order is measured on this objective (a network's held-out
     * loss: curve.h), E is not read, and the landscape runs the plain driver of
     * landscape_obj.c: each (order, t) one evaluation of the objective, the
     * middle point first for early ranks as below. */
    const ls_objective *objective;

    /* NULL, or exactly the orders to range over, ngiven of them ((ngiven, n)
     * bytes, distinct): a screening's survivors (landscape_screen.h). The table
     * is then theirs alone, ranked as a sample (not exhaustive). */
    const uint8_t *given;
    long ngiven;

    /* the error bars from the sweep's per-sample losses (default 0): every order's
     * kept (landscape.order_units) while they fit 256 MB, for ls_layer_intervals,
     * which then takes them instead of evaluating every order again. Split over
     * processes (part), every process keeps its share and rank 0 gathers them. */
    int keep_units;
    /* with keep_units, beyond LS_JSON_UNITS_MAX values: each order's resampled
     * as soon as its row is done and dropped instead, up to 2^25 of them (2^29
     * with all_error_bars), the intervals complete when landscape_compute
     * returns (one process, every sample at once). The resampling costs orders
     * x points x samples x 1000 products, as the table's would: the landscape
     * command, study and the explorer ask for it (default 0: a table while it
     * fits 256 MB, as screening's subset keeps for its survivors) */
    int stream_units;
} ls_opts;

void ls_opts_default(ls_opts *o);

/* The orders landscape_compute ranges over for a layer of config c: their
 * number (all of them when *exhaustive, else the sample size); *groups > 1
 * when they are a group-limited router's group-preserving orders (the
 * default for such routers unless o->all_orders), else 0. */
long ls_orders_planned(const moe_config *c, const ls_opts *o, int *exhaustive, int *groups);
/* -1 when --exhaustive asked for every order and n has too many to take them all:
 * refused before any work (never sampled in its place). path names the checkpoint. */
int ls_check_orders(const moe_config *c, const ls_opts *o, const char *path, ms_err *err);

/* Where a landscape's wall time goes (landscape.secs_step), in the order the
 * steps run: the two cost matrices and the methods' orders; weight matching of
 * every (slot, B's expert) pair; evaluating A and B on E (the end points); the
 * per-point precompute (every pair's expert interpolated and applied to E at
 * each t, gate scores, shared parts); the orders (the fused kernel over every
 * order, the named curves and the ranks). */
enum { LS_STEP_COSTS, LS_STEP_WM, LS_STEP_ENDS, LS_STEP_PRE, LS_STEP_ORDERS, LS_STEPS };
/* "cost matrices", "weight matching", "end points", "precompute", "orders";
 * key: the JSON keys (cost_matrices, weight_matching, ...) */
const char *ls_step_name(int step, int key);

typedef struct landscape {
    int n, T;
    ls_kind kind;
    double *t;                  // (T)
    double loss_a, loss_b, acc_a, acc_b;
    ls_curve naive, skip_order;
    ls_curve methods[COST_NMETHODS]; /* by cost_method (cost_method.h) */
    double *cost[COST_NMETHODS];   /* (n,n) each */
    double cost_total[COST_NMETHODS];
    int rank[COST_NMETHODS];    /* 1 + #{pi : B(pi) < B(chosen) - tau} (rank.h) */
    int tied[COST_NMETHODS];    /* #{pi : |B(pi) - B(chosen)| <= tau}, the chosen included */
    int rank_auc[COST_NMETHODS];/* position with ties at tau broken by loss AUC (rank.h) */
    double tau;                 /* 1e-6 * max(B(naive), 1e-3) */
    double l_hat[COST_NMETHODS];            /* NaN when the denominator is <= 0 */
    /* L-hat scaled by the median barrier over the orders instead of the naive one:
     * 100 (B(chosen) - B(best)) / (B(median) - B(best)). The naive barrier is that
     * of B's identity order, which depends on how B's seed happened to label its
     * experts; the orders' median does not (NaN when the denominator is <= 0;
     * set once every order is done) */
    double l_hat_median[COST_NMETHODS];
    double median_barrier;
    long norders;               /* n! or the number sampled */
    long ndone;                 /* rows filled so far */
    ls_row *rows;               /* (norders), sorted by barrier once complete */
    uint8_t *orders;            /* (norders, n) every order, set before the first row:
                                 * row r's is orders + r.id * n (ls_order_get) */
    int exhaustive;             /* 0: sampled estimate */
    cost_method hidden;         /* how every pair's hidden units were matched (ls_opts.hidden) */
    double pct_lo[COST_NMETHODS], pct_hi[COST_NMETHODS]; /* sampled: 95% CI of each method's rank percentile */
    int best, worst;            /* row indices (in the sorted rows) */
    /* In progress callbacks rows[0..done) are final (in the
     * order they finished); the rows are sorted only when all are done. */
    int ranks_ready;            /* rank, l_hat, best_barrier valid */
    double best_barrier;        /* B(best) (exhaustive: exact; sampled: over the sample) */
    double rank_est[COST_NMETHODS]; /* sampled: estimated rank among all n! orders, 1 +
                                 * percentile * n_fact (inf when n_fact is) */
    double n_fact;              /* the orders ranked over: n!, or (m!)^g g! (groups);
                                 * inf past a double (all orders of n > 170) */
    double n_fact_log10;        /* log10 of that count, finite at every n */
    int groups, group_size;     /* groups > 1: the orders are the group-preserving ones of a
                                 * group-limited router (S_m wr S_g, m = group_size) */
    double secs_ranks, secs_total; /* wall time to the ranks and to the end */
    double secs_step[LS_STEPS];    /* wall time per step (LS_STEP_*); the rest of
                                      secs_total is planning, sorting and ranks */
    double cpu_step[LS_STEPS];     /* the process's CPU time per step (all threads):
                                      on a shared machine, what each step costs */
    double secs_load;              /* set by the caller: loading the inputs (0: not
                                      measured), reported beside the steps */
    /* an objective's landscape (ls_opts.objective): what its loss is (borrowed) */
    const char *objective;
    /* the layer-only proxy beside a network's landscape (net_landscape.h): every
     * order's layer-only barrier at the block's own inputs, by order id (rows'
     * id), its Spearman rho with the network barrier over the orders, and the
     * network rank of the proxy's best order; has_proxy 0 when not computed */
    int has_proxy;
    double *proxy_barrier;         // (norders) by order id
    double proxy_spearman;
    long proxy_best_id, proxy_best_rank;
    double proxy_secs;             /* its wall time */
    /* Error bars (bootstrap.h), from every order's per-unit losses (an objective's
     * landscape, e.g. a network's; a layer's with ls_opts.keep_units): boot_resamples resamples of the
     * nseq units (boot_unit: "sequences", "images"); each row's barrier interval
     * (ls_row.bar_lo, bar_hi); each method's rank interval (its rank among the
     * table's rows in each resample, as rank). boot_resamples 0: none (boot_why
     * says why). */
    int nseq, boot_resamples;
    const char *boot_unit, *boot_why;
    int nthreads;                  /* the threads it was computed on; its error bars use as many */
    double rank_lo[COST_NMETHODS], rank_hi[COST_NMETHODS];
    double *unit_loss;             // (norders, T, nseq) by order id: each unit's loss at each point;
                                   // NULL when they were resampled as they came (not kept)
    /* (norders, T, N) by order id: the sweep's per-sample losses (ls_opts.keep_units),
     * NaN at t = 0 and, unless order_units_end, at t = 1 (A's and B's there);
     * ls_layer_intervals takes them into unit_loss */
    double *order_units;
    int order_units_end;
} landscape;

/* the JSON holds every row's per-unit losses ("unit_loss") up to this many values */
#define LS_JSON_UNITS_MAX (1L << 20)

/* Every order's curve, barrier and rank for the pair (A, B). Partial progress goes through
 * o->progress; a cancel returns -1 with "cancelled" in err. */
int landscape_compute(const moe_model *A, const moe_model *B, const evalset *E,
                      const ls_opts *o, landscape *L, ms_err *err);
void landscape_free(landscape *L);
/* A layer's landscape (not an objective's), complete: its named curves'
 * per-sample losses and barrier intervals (bootstrap.h), as the kernel kept
 * them (ls_opts.keep_units), else computed again the plain way (curve_compute:
 * T layer evaluations each), and every order's too, for the rows' barrier
 * intervals and each method's rank interval: those the sweep kept
 * (L->order_units, ls_opts.keep_units), else evaluated again up to 720 orders
 * (beyond, boot_why says why the rows have none); nothing to do when the sweep
 * resampled them as they came (L->boot_resamples set). wm: the landscape's; cancel
 * (may be NULL) is polled between the orders: non-zero stops with "cancelled". */
/* a layer's orders evaluated again for their per-sample losses (ls_layer_intervals):
 * up to 6! of them, a few seconds on the samples (a curve is ~5 ms on dense4) */
#define LS_BOOT_LAYER_ORDERS 720
#define LS_BOOT_LAYER_ORDERS_S "720"
int ls_layer_intervals(const moe_model *A, const moe_model *B, const evalset *E, int wm, landscape *L,
                       atomic_int *cancel, ms_err *err);

/* JSON (the documented keys exactly) and CSV reports, written atomically. */
int landscape_write_json(const landscape *L, const char *a_path, const char *b_path,
                         const char *e_path, const char *layer, const char *path, ms_err *err);
struct cJSON;
/* the same with a "screening" object (landscape_screen.h: ls_screen_json, taken
 * over) when screening is not NULL */
int landscape_write_json_with(const landscape *L, const char *a_path, const char *b_path, const char *e_path,
                              const char *layer, struct cJSON *screening, const char *path, ms_err *err);
int landscape_write_csv(const landscape *L, const char *path, ms_err *err);
/* the "bootstrap" object of every JSON report with error bars: units, count,
 * resamples, level, seed; or {"none": why} when resamples is 0 (a cJSON *) */
struct cJSON *ls_json_bootstrap(int nseq, int resamples, const char *unit, const char *why);
/* a curve as the landscape's JSON writes it: order, barrier, barrier_ci95 (with
 * per-unit losses), acc_barrier, loss_auc, loss, acc, and with units its
 * per-unit losses "unit_loss" (T arrays of nseq) */
struct cJSON *ls_json_curve(const ls_curve *c, int n, int units);
/* The CSV table's header and one row, in the format landscape --csv writes
 * and the explorer's saved table (x) too: rank, order ("2 0 3 1"), barrier,
 * acc_barrier, loss_auc (%.9g, "nan"), tied, tie_class (the class of barriers
 * within tau, from 0 in barrier order), and proxy_barrier when proxy is not
 * NULL (has_proxy); barrier_ci95_lo, barrier_ci95_hi: the barrier's 95%
 * bootstrap interval when ci (the rows carry one), else "nan"; then the field
 * last when not NULL (the explorer's "found" of a sampled table). */
void ls_csv_header(FILE *f, int has_proxy);
void ls_csv_row(FILE *f, long rank, const int *order, int n, const ls_row *r, long tied, long cls,
                const double *proxy, int ci, const char *last);
/* Curves side by side: columns t, then <name>_loss (and <name>_acc when the
 * curve has accuracy) for each of the nc curves; written atomically. */
int curves_write_csv(const ls_curve *curves, const char *const *names, int nc, const char *path,
                     ms_err *err);

#endif
