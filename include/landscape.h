/* landscape.h - loss curves, barriers and the landscape of all expert orders
 * (SPEC §5).
 *
 * Legend: T interpolation points, t_m = m/(T-1). Curves go from A (t=0) to the
 * aligned B' (t=1). With a head the loss is cross-entropy (classification) or
 * MSE (regression); without one it is the layer-output loss (mean squared
 * distance from the chord of the two layers' outputs). */
#ifndef MS_LANDSCAPE_H
#define MS_LANDSCAPE_H

#include <stdatomic.h>
#include <stdint.h>

#include "align.h"
#include "model.h"

#define LS_MAX_N 16        /* experts the landscape and the TUI handle */
#define LS_EXHAUSTIVE_MAX 9 /* n <= 9: every order; above: sampled */

typedef enum { LS_CLASSIFY = 0, LS_REGRESS = 1, LS_LAYER = 2 } ls_kind;

typedef struct {
    int n, T;
    int order[LS_MAX_N];
    double *loss;  // (T)
    double *acc;   // (T), NULL unless classification
    double barrier, acc_barrier, auc; /* acc_barrier NaN unless classification */
} ls_curve;

void ls_curve_free(ls_curve *c);
void ls_curve_copy(ls_curve *dst, const ls_curve *src);
/* Fill barrier, acc_barrier and auc from loss/acc (SPEC §5 formulas). */
void ls_curve_stats(ls_curve *c);
double ls_t(int m, int T); /* m/(T-1) */
/* n! as a double: the number of expert orders of n experts */
double ls_factorial(int n);

/* What the loss means for this model and evaluation set. */
ls_kind ls_kind_of(const moe_model *m, const evalset *E);
/* Sum of per-sample losses of logits (N,C) against samples [r0, r0+N) of E
 * (cross-entropy; squared error summed over C for regression) into *loss_sum,
 * and the number of correct argmaxes (ties to the smaller index) into
 * *correct for classification. The mean loss is loss_sum/N (classification)
 * or loss_sum/(N*C) (regression), as in moe_eval. */
void ls_loss_logits(const evalset *E, int r0, const float *logits, int N, int C,
                    double *loss_sum, long *correct);

/* The curve from A to Bp, where Bp is B already aligned (any order/WM). */
int curve_compute(const moe_model *A, const moe_model *Bp, const evalset *E, int T,
                  ls_curve *out, ms_err *err);

typedef struct {
    int order[LS_MAX_N];
    double barrier, acc_barrier, auc;
} ls_row;

struct landscape;

typedef struct {
    int T;               /* points, default 25 */
    int wm;              /* weight matching inside each order (default 1) */
    int center;          /* gate centring for the gate method (default 1) */
    long nsample;        /* n > exhaustive_max: orders to sample (default 20000) */
    int exhaustive_max;  /* every order when n <= this (default LS_EXHAUSTIVE_MAX); tests
                            lower it to check the sampled estimate against the exact rank */
    uint64_t seed;       /* for sampling */
    atomic_int *cancel;  /* polled often; when it becomes non-zero, stop and return -1 */
    /* called from the computing thread as rows finish; may be NULL */
    void (*progress)(void *ctx, long done, long total);
    void *ctx;
    /* Added: called once from the computing thread as soon as the curves
     * (naive, skip_order, methods), endpoints, rank, l_hat and best_barrier
     * of L are final, usually long before every row is done. May be NULL. */
    void (*on_ranks)(void *ctx, const struct landscape *L);
    int nthreads;        /* worker threads; 0 = the online CPUs; at most 8 either way */
    double mem_mb;       /* budget for the per-point buffers in MB (0: 1024); over it the
                          * points, then the samples, are processed in chunks */
    /* Added: what the landscape is doing before rows come out, for a gauge:
     * called from the calling thread during the pairs' weight matching
     * ("weight-matching pairs", done/total pairs), each chunk's per-t
     * precompute ("precomputing pairs", done/total pair outputs) and the
     * middle-point pass ("middle point", done/total orders; when the t
     * range is chunked, "orders on a chunk of points" for the others), at
     * most about every 20 ms. what is a static string. May be NULL; uses
     * ctx. */
    void (*phase)(void *ctx, const char *what, long done, long total);
} ls_opts;

void ls_opts_default(ls_opts *o);

typedef struct landscape {
    int n, T;
    ls_kind kind;
    double *t;                  // (T)
    double loss_a, loss_b, acc_a, acc_b;
    ls_curve naive, skip_order;
    ls_curve methods[2];        /* [COST_GATE], [COST_EXPERT] */
    double *cost[2];            /* (n,n) each */
    double cost_total[2];
    int rank[2];                /* 1 + #{pi : B(pi) < B(chosen) - tau} (rank.h) */
    int tied[2];                /* #{pi : |B(pi) - B(chosen)| <= tau}, the chosen included */
    int rank_auc[2];            /* position with ties at tau broken by loss AUC (rank.h) */
    double tau;                 /* 1e-6 * max(B(naive), 1e-3) */
    double l_hat[2];            /* NaN when the denominator is <= 0 */
    long norders;               /* n! or the number sampled */
    long ndone;                 /* rows filled so far */
    ls_row *rows;               /* (norders), sorted by barrier once complete */
    int exhaustive;             /* 0: sampled estimate */
    double pct_lo[2], pct_hi[2];/* sampled: 95% CI of each method's rank percentile */
    int best, worst;            /* row indices (in the sorted rows) */
    /* Added fields. In progress callbacks rows[0..done) are final (in the
     * order they finished); the rows are sorted only when all are done. */
    int ranks_ready;            /* rank, l_hat, best_barrier valid */
    double best_barrier;        /* B(best) (exhaustive: exact; sampled: over the sample) */
    double rank_est[2];         /* sampled: estimated rank among all n! orders */
    double n_fact;              /* n! as a double */
    double secs_ranks, secs_total; /* wall time to the ranks and to the end */
} landscape;

/* Everything of SPEC §5 for the pair (A, B). Partial progress goes through
 * o->progress; a cancel returns -1 with "cancelled" in err. */
int landscape_compute(const moe_model *A, const moe_model *B, const evalset *E,
                      const ls_opts *o, landscape *L, ms_err *err);
void landscape_free(landscape *L);

/* JSON (SPEC §6 keys exactly) and CSV reports, written atomically. */
int landscape_write_json(const landscape *L, const char *a_path, const char *b_path,
                         const char *e_path, const char *layer, const char *path, ms_err *err);
int landscape_write_csv(const landscape *L, const char *path, ms_err *err);
/* Curves side by side: columns t, then <name>_loss (and <name>_acc when the
 * curve has accuracy) for each of the nc curves; written atomically. */
int curves_write_csv(const ls_curve *curves, const char *const *names, int nc, const char *path,
                     ms_err *err);

#endif
