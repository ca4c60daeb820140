/* study.h - the landscape of every pair (i < j) of a pool of checkpoints, and
 * mean +- sample standard deviation over the pairs (the paper's tables).
 *
 * Per pair: the naive and skip-order barriers (loss, accuracy, loss AUC), both
 * methods' chosen order, cost, barriers, rank, tied, rank_auc, L-hat, rank
 * percentile (sampled landscapes: with a 95% interval) and Spearman's rho
 * between the method's assignment cost sum_i C[i][pi(i)] and the barrier over
 * every order of the landscape ("does the data-free cost predict the
 * barrier?"), the best and worst barrier, and the identity order's rank. */
#ifndef MS_STUDY_H
#define MS_STUDY_H

#include <stdio.h>

#include "landscape/landscape.h"
#include "landscape/landscape_screen.h"

/* one pair; every number is a double so the summary can walk them by offset */
typedef struct {
    double barrier, acc_barrier, loss_auc;
    double bar_lo, bar_hi; /* the barrier's 95% bootstrap interval (NaN: not computed) */
} st_curve;

typedef struct {
    st_curve c;
    double cost, rank, tied, rank_auc, l_hat, rank_percentile, spearman;
    double l_hat_median;   /* L-hat scaled by the median barrier (labelling-free, landscape.h) */
    double rank_est;       /* = rank when exhaustive; sampled: 1 + percentile x the set's
                            * orders, the rank among all of them (NaN past a double) */
    double pct_lo, pct_hi; /* 95% interval of the rank percentile (= it when exhaustive) */
    double rank_lo, rank_hi; /* the rank's 95% bootstrap interval over the evaluation set's
                              * units (NaN: not computed, a layer's landscape) */
    int order[LS_MAX_N];
} st_method;

typedef struct {
    int ia, ib;            /* indices into the pool */
    int n, exhaustive;
    double norders;        /* the orders in the set ranked over (n!, or the group-preserving
                            * ones); may be inf, norders_log10 is always finite */
    double norders_log10;
    double nranked;        /* the orders the counts below are over: all of the set, or the
                            * sample (a sampled landscape) */
    double loss_a, loss_b, acc_a, acc_b; /* the end points (accuracy NaN unless classifying) */
    st_curve naive, skip;
    st_method m[COST_NMETHODS]; /* by cost_method */
    double zero_tied;      /* orders among the nranked tied at barrier 0 (B <= tau) */
    double zero_pct;       /* 100 zero_tied / nranked */
    double zero_lo, zero_hi; /* sampled: its 95% Wilson interval (percent); else = zero_pct */
    double zero_est;       /* zero_pct / 100 * norders: exact when exhaustive, else the
                            * estimate for the whole set (NaN past a double) */
    double best, worst, identity_rank, tau;
    int best_order[LS_MAX_N], worst_order[LS_MAX_N];
    /* a network's landscape: the layer-only proxy's Spearman rho with the network
     * barrier and the network rank of its best order (NaN without the proxy) */
    double proxy_spearman, proxy_rank;
    int nseq;              /* the units the intervals resample (0: no intervals) */
    const char *unit;      /* what they are (static) */
    const char *boot_why;  /* no rank intervals: why (static; the landscape's boot_why), else NULL */
    /* a screened pair (study --screen K, landscape_screen.h): the numbers above
     * are the survivors' landscape (ranks among the survivors); the subset's */
    int scr_units, scr_of_units; /* the subset's units of the set's */
    double scr_orders;     /* orders screened on the subset */
    double scr_full;       /* survivors: evaluated on the whole set */
    double scr_with_ci, scr_undist, scr_undist_out; /* orders with a subset interval; of them
                            * not distinguished from the subset's best; of those, screened out */
    double scr_rank[COST_NMETHODS]; /* each method's order's rank on the subset among every
                            * order (1 + the orders with a lower subset barrier) */
} st_pair;

/* A summary field: its JSON path ("methods.expert.rank") and where it lives. */
typedef struct {
    const char *path;
    size_t offset;         /* of a double in st_pair */
} st_field;

/* The numeric fields in report order; *n receives the count. */
const st_field *study_fields(int *n);
static inline double st_get(const st_pair *p, const st_field *f) {
    return *(const double *)((const char *)p + f->offset);
}

typedef struct {
    double mean, std;      /* std: sample (n - 1); NaN below 2 values */
    int n;                 /* finite values */
} st_stat;

typedef struct {
    int npool;
    const char *const *paths; /* (npool), borrowed */
    int npairs;
    st_pair *pairs;        /* (npairs), (0,1), (0,2), ..., (1,2), ... */
    st_stat *summary;      /* one per study_fields entry */
    int T;
    int kind;              /* ls_kind of the pool on E */
    int nevals;            /* checkpoint evaluations made (one per checkpoint, shared by its pairs) */
    /* files of a directory left out of the pool, and why (borrowed; set by the caller) */
    int nleft;
    const char *const *left, *const *left_why;
    char objective[160];   /* what the loss is when not the layer's own ("" then) */
    int screen_keep;       /* > 0: every pair screened (study --screen K): its scr_* */
    const char *scr_unit;  /* the subset's units ("samples", "sequences") */
} study;

/* The pairs measured on an objective (a network's loss) instead of the layers'
 * own: make(ctx, i, j, &obj) before pair (i, j)'s landscape (the objective
 * holds its end points; make_sub the screening's subset), done(ctx) after it; proxy(ctx, i, j, L) (may be NULL)
 * fills L's proxy fields from the finished landscape. */
typedef struct {
    int (*make)(void *ctx, int i, int j, const ls_objective **obj, ms_err *err);
    /* the same on the screening's subset (study --screen), freed by done too */
    int (*make_sub)(void *ctx, int i, int j, const ls_objective **obj, ms_err *err);
    void (*done)(void *ctx);
    int (*proxy)(void *ctx, int i, int j, landscape *L, ms_err *err);
    void *ctx;
} study_objective;

/* Mean and sample std of the finite values among v[0..n). */
st_stat study_stat(const double *v, int n);

/* The pair's record from its finished landscape. */
void study_pair_from(st_pair *p, const landscape *L, int ia, int ib);

/* Every pair of models[0..npool) on E with the landscape options o; progress
 * (may be NULL) after each pair. Each model is evaluated on E once and its
 * evaluation lent to the landscapes of its npool - 1 pairs. scr (NULL or keep
 * 0: none): every pair screened (landscape_screen), the subset of E its own. */
int study_run(const moe_model *models, const char *const *paths, int npool, const evalset *E,
              const ls_opts *o, const ls_screen_opts *scr, void (*progress)(int done, int total), study *S,
              ms_err *err);
/* The same on objectives (E is not read): every pair's landscape on so->make's
 * (screened: on so->make_sub's first). */
int study_run_obj(const moe_model *models, const char *const *paths, int npool,
                  const study_objective *so, const ls_opts *o, const ls_screen_opts *scr,
                  void (*progress)(int done, int total), study *S, ms_err *err);
void study_free(study *S);

/* Ratios of the mean barriers over the pairs: naive/gate, naive/expert,
 * skip_order/gate, skip_order/expert (NaN where the denominator is <= 0). */
void study_ratios(const study *S, double r[4]);

/* Reports, written atomically. The text table goes to a FILE. */
void study_print(const study *S, FILE *f);
int study_write_json(const study *S, const char *e_path, const char *path, ms_err *err);
int study_write_csv(const study *S, const char *path, ms_err *err);
int study_write_latex(const study *S, const char *path, ms_err *err);

#endif
