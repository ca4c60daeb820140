/* rank.c - rank, tie class, AUC tie-break, L-hat and Spearman's rho over
 * arrays (definitions in rank.h). The comparisons are written exactly as
 * tests/oracle/oracle.py writes them (B < b - tau, |B - b| <= tau, x - start > tau
 * opens a class), so both agree bit for bit on the same float64 values. */
#include "landscape/rank.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_error.h"

rank_view rank_view_arrays(const double *barrier, const double *auc, const int *order, int width,
                           long count) {
    rank_view v = {.count = count, .width = width, .barrier = barrier, .auc = auc, .order = order,
                   .stride = 0};
    return v;
}

static double bar_at(const rank_view *v, long i) {
    if (!v->stride) return v->barrier[i];
    return *(const double *)((const char *)v->barrier + (size_t)i * v->stride);
}

static double auc_at(const rank_view *v, long i) {
    if (!v->auc) return 0.0;
    if (!v->stride) return v->auc[i];
    return *(const double *)((const char *)v->auc + (size_t)i * v->stride);
}

static int has_orders(const rank_view *v) { return v->order || (v->orders8 && v->id); }

/* element i's order, entry k */
static int order_entry(const rank_view *v, long i, int k) {
    if (v->order) {
        const int *o = v->stride ? (const int *)((const char *)v->order + (size_t)i * v->stride)
                                 : v->order + (size_t)i * v->width;
        return o[k];
    }
    long id = v->stride ? *(const long *)((const char *)v->id + (size_t)i * v->stride) : v->id[i];
    return v->orders8[(size_t)id * v->width + k];
}

double rank_tau(double naive_barrier) { return 1e-6 * fmax(naive_barrier, 1e-3); }

long rank_of(const rank_view *v, double b, double tau) {
    long r = 1;
    for (long i = 0; i < v->count; i++) {
        double x = bar_at(v, i);
        if (isnan(b)) r += !isnan(x);
        else r += x < b - tau;
    }
    return r;
}

long rank_tied_count(const rank_view *v, double b, double tau) {
    long c = 0;
    for (long i = 0; i < v->count; i++) {
        double x = bar_at(v, i);
        if (isnan(b)) c += isnan(x) != 0;
        else c += fabs(x - b) <= tau;
    }
    return c;
}

/* element i's order against p, lexicographically (0 without orders) */
static int order_cmp(const rank_view *v, long i, const int *p) {
    if (!p || !has_orders(v)) return 0;
    for (int k = 0; k < v->width; k++) {
        int a = order_entry(v, i, k);
        if (a != p[k]) return a < p[k] ? -1 : 1;
    }
    return 0;
}

/* element i (auc ai) before the chosen (auc ab, order p) inside a tie class:
 * AUC ascending, NaN last, then lexicographic order. 0 when equal. */
static int auc_order_cmp(const rank_view *v, long i, double aa, double ab, const int *p) {
    int na = isnan(aa) != 0, nb = isnan(ab) != 0;
    if (na != nb) return na - nb;
    if (!na && aa != ab) return aa < ab ? -1 : 1;
    return order_cmp(v, i, p);
}

static int dbl_cmp(const void *pa, const void *pb) {
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The start of the greedy tie class that holds b (finite): the classes below
 * b depend only on the barriers <= b, so only those are sorted. */
static double class_start(const rank_view *v, double b, double tau) {
    long m = 0;
    for (long i = 0; i < v->count; i++) m += bar_at(v, i) <= b;
    double *xs = ms_malloc((size_t)(m + 1) * sizeof(double));
    long k = 0;
    for (long i = 0; i < v->count; i++) {
        double x = bar_at(v, i);
        if (x <= b) xs[k++] = x;
    }
    xs[k++] = b; // the chosen itself (a duplicate changes no class)
    qsort(xs, (size_t)k, sizeof(double), dbl_cmp);
    double start = xs[0];
    for (long i = 1; i < k; i++)
        if (xs[i] - start > tau) start = xs[i];
    free(xs);
    return start;
}

void rank_chosen(const rank_view *v, double b, double auc, const int *order, double tau,
                 rank_info *out) {
    int in_view = !order || !has_orders(v);
    for (long i = 0; i < v->count && !in_view; i++) in_view = order_cmp(v, i, order) == 0;
    out->rank = rank_of(v, b, tau);
    out->tied = rank_tied_count(v, b, tau) + !in_view;
    long before = 0;
    if (isnan(b)) {
        for (long i = 0; i < v->count; i++) {
            double x = bar_at(v, i);
            if (!isnan(x)) before++;
            else before += auc_order_cmp(v, i, auc_at(v, i), auc, order) < 0;
        }
    } else {
        double f = class_start(v, b, tau);
        for (long i = 0; i < v->count; i++) {
            double x = bar_at(v, i);
            if (x < f) before++;
            else if (x >= f && !(x - f > tau))
                before += auc_order_cmp(v, i, auc_at(v, i), auc, order) < 0;
        }
    }
    out->rank_auc = 1 + before;
}

void rank_table(const rank_view *v, double tau, long *rank, long *tied, long *cls) {
    long n = v->count, lo = 0, tlo = 0, hi = 0, nfin = 0, c = -1;
    while (nfin < n && !isnan(bar_at(v, nfin))) nfin++;
    double start = 0.0;
    for (long i = 0; i < nfin; i++) {
        double b = bar_at(v, i);
        // sorted, so each set is a run whose ends only move right as b grows:
        // [0, lo) have B < b - tau, [tlo, hi) have |B - b| <= tau
        while (lo < i && bar_at(v, lo) < b - tau) lo++;
        while (tlo < i && !(fabs(bar_at(v, tlo) - b) <= tau)) tlo++;
        while (hi < nfin && (hi <= i || fabs(bar_at(v, hi) - b) <= tau)) hi++;
        if (rank) rank[i] = 1 + lo;
        if (tied) tied[i] = hi - tlo;
        if (i == 0 || b - start > tau) {
            start = b;
            c++;
        }
        if (cls) cls[i] = c;
    }
    for (long i = nfin; i < n; i++) {
        if (rank) rank[i] = 1 + nfin;
        if (tied) tied[i] = n - nfin;
        if (cls) cls[i] = c + 1;
    }
}

void rank_wilson95(double phat, double nobs, double *lo, double *hi) {
    const double z = 1.959963984540054;
    double den = 1.0 + z * z / nobs;
    double ctr = (phat + z * z / (2.0 * nobs)) / den;
    double half = z * sqrt(phat * (1.0 - phat) / nobs + z * z / (4.0 * nobs * nobs)) / den;
    *lo = phat <= 0 || ctr - half < 0 ? 0 : ctr - half;
    *hi = phat >= 1 || ctr + half > 1 ? 1 : ctr + half;
}

double rank_l_hat(double b, double best, double naive) {
    double den = naive - best;
    return den > 0 ? 100.0 * (b - best) / den : NAN;
}

typedef struct {
    double x;
    long i;
} rank_pair;

static int pair_cmp(const void *pa, const void *pb) {
    const rank_pair *a = pa, *b = pb;
    int na = isnan(a->x) != 0, nb = isnan(b->x) != 0;
    if (na != nb) return na - nb;
    if (!na && a->x != b->x) return a->x < b->x ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

void rank_average(const double *x, long n, double *r) {
    rank_pair *p = ms_malloc((size_t)(n > 0 ? n : 1) * sizeof(rank_pair));
    for (long i = 0; i < n; i++) p[i] = (rank_pair){x[i], i};
    qsort(p, (size_t)n, sizeof(rank_pair), pair_cmp);
    for (long s = 0; s < n;) {
        long e = s + 1;
        while (e < n && (p[e].x == p[s].x || (isnan(p[e].x) && isnan(p[s].x)))) e++;
        double avg = 0.5 * (double)(s + 1 + e); // mean of positions s+1 .. e
        for (long k = s; k < e; k++) r[p[k].i] = avg;
        s = e;
    }
    free(p);
}

double rank_spearman(const double *x, const double *y, long n) {
    if (n < 2) return NAN;
    for (long i = 0; i < n; i++)
        if (isnan(x[i]) || isnan(y[i])) return NAN;
    double *rx = ms_malloc((size_t)n * 2 * sizeof(double)); // (2, n)
    double *ry = rx + n;
    rank_average(x, n, rx);
    rank_average(y, n, ry);
    double mx = 0, my = 0;
    for (long i = 0; i < n; i++) {
        mx += rx[i];
        my += ry[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxy = 0, sxx = 0, syy = 0;
    for (long i = 0; i < n; i++) {
        double dx = rx[i] - mx, dy = ry[i] - my;
        sxy += dx * dy;
        sxx += dx * dx;
        syy += dy * dy;
    }
    free(rx);
    if (sxx <= 0 || syy <= 0) return NAN;
    return sxy / sqrt(sxx * syy);
}
