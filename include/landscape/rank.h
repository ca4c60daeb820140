/* rank.h - ranks of a chosen order among many, robust to ties and float noise.
 *
 * The loss barrier is clipped at 0 (its maximum includes both end points), so
 * on easy pairs thousands of orders share the barrier 0, and float noise
 * separates orders whose curves are the same. Two barriers are tied when they
 * differ by at most tau = 1e-6 * max(B(naive), 1e-3). For a chosen barrier b:
 *
 *   rank     = 1 + #{pi : B(pi) < b - tau}          (1 is best)
 *   tied     = #{pi : |B(pi) - b| <= tau}          (the chosen order included)
 *   rank_auc = the chosen order's position (1-based) in the tie-broken order:
 *              sort the barriers ascending and cut them into tie classes
 *              greedily - a class starts at the smallest barrier not yet in a
 *              class and takes every barrier x with x - start <= tau; classes
 *              come in that order, and inside a class the orders are sorted by
 *              loss AUC ascending (NaN last), then lexicographically by order.
 *   L-hat    = 100 * (b - B(best)) / (B(naive) - B(best)), NaN when the
 *              denominator is <= 0.
 *
 * rank <= rank_auc <= rank + tied - 1 always. NaN barriers form one class after
 * every number; a NaN chosen barrier ranks after every finite one.
 * Spearman's rho is the Pearson correlation of average ranks (ties share the
 * mean of the positions they span), as scipy.stats.spearmanr computes it. */
#ifndef MS_RANK_H
#define MS_RANK_H

#include <stddef.h>

/* Elements i = 0..count-1: barrier, loss AUC and order (width ints). With
 * stride 0 the three are packed arrays (barrier[i], auc[i], order[i*width]);
 * otherwise each is `stride` bytes from one element to the next, so an array
 * of structs (e.g. &rows[0].barrier, &rows[0].auc) is viewed in place. The
 * orders may instead be bytes kept apart: element i's order is
 * orders8[id_i * width ..), id_i read at id like the barrier (a landscape's
 * rows: .orders8 = L->orders, .id = &L->rows[0].id). auc and the orders may
 * be NULL (then equal, and the chosen order is taken to be one of the
 * elements). */
typedef struct {
    long count;
    int width;
    const double *barrier;
    const double *auc;
    const int *order;
    size_t stride;
    const unsigned char *orders8;
    const long *id;
} rank_view;

typedef struct {
    long rank, tied, rank_auc;
} rank_info;

/* A view of packed arrays. */
rank_view rank_view_arrays(const double *barrier, const double *auc, const int *order, int width,
                           long count);

/* tau = 1e-6 * max(naive_barrier, 1e-3) (1e-9 when naive_barrier is NaN) */
double rank_tau(double naive_barrier);

/* 1 + #{i : B_i < b - tau} (NaN b: 1 + #{finite B_i}) */
long rank_of(const rank_view *v, double b, double tau);
/* #{i : |B_i - b| <= tau} (NaN b: #{NaN B_i}) */
long rank_tied_count(const rank_view *v, double b, double tau);

/* rank, tied and rank_auc of the chosen order (barrier b, AUC auc, order
 * order[width]) among the elements of v. When the chosen order is not among
 * them (a sampled landscape) it is counted as one more element. */
void rank_chosen(const rank_view *v, double b, double auc, const int *order, double tau,
                 rank_info *out);

/* Every element's rank, tied count and tie-class index (0-based, in barrier
 * order), for elements already sorted by barrier ascending (NaN last); any
 * output may be NULL. O(count). */
void rank_table(const rank_view *v, double tau, long *rank, long *tied, long *cls);

double rank_l_hat(double b, double best, double naive);

/* The 95 % Wilson score interval [lo, hi] (fractions) of a proportion phat
 * observed in nobs draws: a sampled landscape's rank percentile, (rank - 1) /
 * samples, is one. lo is 0 when phat is 0, hi 1 when phat is 1. */
void rank_wilson95(double phat, double nobs, double *lo, double *hi);

/* Average ranks (1-based) of x[0..n) into r[0..n); NaN sorts last. */
void rank_average(const double *x, long n, double *r);
/* Spearman's rho of (x, y); NaN when n < 2, any value is NaN, or either side
 * is constant. */
double rank_spearman(const double *x, const double *y, long n);

#endif
