/* bootstrap.c - resampling the evaluation set's units (bootstrap.h). */
#include "landscape/bootstrap.h"

#include <math.h>
#include <stdlib.h>

#include "core/ms_alloc.h"

uint64_t ls_boot_draw(uint64_t seed, uint64_t k) {
    uint64_t z = seed + (k + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ls_boot_init(ls_boot *b, int S, int R, uint64_t seed) {
    b->S = S, b->R = R, b->seed = seed;
    b->count = ms_calloc((size_t)R * (S > 0 ? S : 1), sizeof(uint32_t));
    for (int r = 0; r < R; r++)
        for (int i = 0; i < S; i++)
            b->count[(size_t)r * S + ls_boot_draw(seed, (uint64_t)r * S + i) % (uint64_t)S]++;
}

void ls_boot_free(ls_boot *b) {
    free(b->count);
    b->count = NULL;
}

void ls_boot_means(const ls_boot *b, const double *seq, int T, int r, double *means) {
    const uint32_t *w = b->count + (size_t)r * b->S;
    for (int m = 0; m < T; m++) {
        const double *x = seq + (size_t)m * b->S;
        double s = 0.0;
        for (int i = 0; i < b->S; i++) s += (double)w[i] * x[i];
        means[m] = s / b->S;
    }
}

/* as ls_curve_stats (t_m = m / (T - 1)): a NaN anywhere makes it NaN */
double ls_boot_barrier_of(const double *means, int T) {
    double l0 = means[0], l1 = means[T - 1], bar = -INFINITY;
    for (int m = 0; m < T; m++) {
        double t = T > 1 ? (double)m / (T - 1) : 0.0, e = means[m] - ((1.0 - t) * l0 + t * l1);
        if (isnan(e)) return NAN;
        if (e > bar) bar = e;
    }
    return bar;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(const double *v, int R, double p) {
    double pos = p * (R - 1);
    int i = (int)floor(pos);
    if (i >= R - 1) return v[R - 1];
    return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

void ls_boot_interval(double *vals, int R, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (R < 1) return;
    for (int r = 0; r < R; r++)
        if (isnan(vals[r])) return;
    qsort(vals, (size_t)R, sizeof(double), cmp_double);
    *lo = percentile(vals, R, (1.0 - level) / 2.0);
    *hi = percentile(vals, R, 1.0 - (1.0 - level) / 2.0);
}

void ls_boot_curve(const ls_boot *b, const double *seq, int T, double *lo, double *hi) {
    double *vals = ms_malloc((size_t)b->R * sizeof(double)), *means = ms_malloc((size_t)T * sizeof(double));
    for (int r = 0; r < b->R; r++) {
        ls_boot_means(b, seq, T, r, means);
        vals[r] = ls_boot_barrier_of(means, T);
    }
    ls_boot_interval(vals, b->R, LS_BOOT_LEVEL, lo, hi);
    free(vals);
    free(means);
}
