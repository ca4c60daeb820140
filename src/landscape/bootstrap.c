/* bootstrap.c - resampling the evaluation set's units (bootstrap.h). */
#include "landscape/bootstrap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"

uint64_t ls_boot_draw(uint64_t seed, uint64_t k) {
    uint64_t z = seed + (k + 1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

void ls_boot_init(ls_boot *b, int S, int R, uint64_t seed) {
    b->S = S, b->R = R, b->seed = seed;
    b->wt = ms_calloc((size_t)R * (S > 0 ? S : 1), sizeof(float));
    for (int r = 0; r < R; r++)
        for (int i = 0; i < S; i++)
            b->wt[(ls_boot_draw(seed, (uint64_t)r * S + i) % (uint64_t)S) * R + r] += 1.0f;
}

void ls_boot_free(ls_boot *b) {
    free(b->wt);
    b->wt = NULL;
}

/* The means are the landscape's hot loop (every order's every point under 1000
 * resamples: 10^10 products for 9! orders). Two rows share each load of 8
 * resamples' weights, and their 8 + 8 sums stay in registers across the units:
 * 8 vector accumulators of 2 doubles, the widest block the baseline's 16 SSE
 * registers hold with the weights beside them. GCC's vector types keep it
 * portable; the sum over units runs in order, so the bits are the plain loop's. */
typedef double v2d __attribute__((vector_size(16)));
typedef float v2f __attribute__((vector_size(8)));
#define BOOT_RB 8

static void means_block(const float *wt, int S, int R, const double *x0, const double *x1, double *o0,
                        double *o1) {
    v2d a0[BOOT_RB / 2] = {0}, a1[BOOT_RB / 2] = {0};
    for (int i = 0; i < S; i++) {
        const float *w = wt + (size_t)i * R;
        v2d u = {x0[i], x0[i]}, v = {x1[i], x1[i]};
#pragma GCC unroll 4
        for (int q = 0; q < BOOT_RB / 2; q++) {
            v2f wf;
            memcpy(&wf, w + 2 * q, sizeof wf);
            v2d wd = __builtin_convertvector(wf, v2d);
            a0[q] += wd * u;
            a1[q] += wd * v;
        }
    }
    for (int q = 0; q < BOOT_RB / 2; q++)
        for (int e = 0; e < 2; e++) {
            o0[2 * q + e] = a0[q][e] / S;
            if (o1) o1[2 * q + e] = a1[q][e] / S;
        }
}

void ls_boot_means(const ls_boot *b, const double *const *x, int nr, int r0, int r1, double *out) {
    const int S = b->S, R = b->R, n = r1 - r0;
    for (int j = 0; j < nr; j += 2) {
        const double *x0 = x[j], *x1 = j + 1 < nr ? x[j + 1] : x[j];
        double *o0 = out + (size_t)j * n, *o1 = j + 1 < nr ? o0 + n : NULL;
        int r = r0;
        for (; r + BOOT_RB <= r1; r += BOOT_RB)
            means_block(b->wt + r, S, R, x0, x1, o0 + (r - r0), o1 ? o1 + (r - r0) : NULL);
        for (; r < r1; r++) // the resamples beyond the last block of 8
            for (int k = 0; k < (o1 ? 2 : 1); k++) {
                const double *xk = k ? x1 : x0;
                double s = 0.0;
                for (int i = 0; i < S; i++) s += (double)b->wt[(size_t)i * R + r] * xk[i];
                (k ? o1 : o0)[r - r0] = s / S;
            }
    }
}

int ls_boot_block(const ls_boot *b, int T) {
    double fit = LS_BOOT_BLOCK_MB * 1048576.0 / ((double)T * sizeof(double));
    if (fit >= b->R) return b->R;
    return fit < 8 ? 8 : (int)fit / 8 * 8;
}

/* as ls_curve_stats (t_m = m / (T - 1)): a NaN anywhere makes it NaN. Point by
 * point along the resamples, the same operations per resample as one curve's. */
void ls_boot_barriers(const double *const *mp, int T, int n, double *vals) {
    const double *l0 = mp[0], *l1 = mp[T - 1];
    for (int r = 0; r < n; r++) vals[r] = -INFINITY;
    for (int m = 0; m < T; m++) {
        const double t = T > 1 ? (double)m / (T - 1) : 0.0, *x = mp[m];
        for (int r = 0; r < n; r++) {
            double e = x[r] - ((1.0 - t) * l0[r] + t * l1[r]);
            if (isnan(e)) vals[r] = NAN;
            else if (e > vals[r]) vals[r] = e; // false once vals[r] is NaN
        }
    }
}

/* v reordered so that v[k] is its k-th smallest, none after it smaller
 * (Hoare's selection; no NaN) */
static void select_kth(double *v, int n, int k) {
    int lo = 0, hi = n - 1;
    while (hi > lo) {
        double piv = v[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < piv) i++;
            while (v[j] > piv) j--;
            if (i <= j) {
                double t = v[i];
                v[i++] = v[j];
                v[j--] = t;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return; // between j and i every value is the pivot
    }
}

/* the k smallest of v[0..n) (dir 1; dir -1: the k largest) into out, sorted
 * from the extreme inwards: one pass, and after the first few values almost
 * every one fails the comparison with out[k - 1] - cheaper than a selection,
 * whose comparisons mispredict half the time */
static void extremes(const double *restrict v, int n, int k, int dir, double *restrict out) {
    const double d = dir;
    int c = 0;
    for (; c < k && c < n; c++) { // the first k, sorted
        double x = v[c] * d;
        int j = c;
        for (; j > 0 && out[j - 1] > x; j--) out[j] = out[j - 1];
        out[j] = x;
    }
    double worst = out[k - 1];
    for (int i = c; i < n; i++) {
        double x = v[i] * d;
        if (x >= worst) continue;
        int j = k - 1;
        for (; j > 0 && out[j - 1] > x; j--) out[j] = out[j - 1];
        out[j] = x;
        worst = out[k - 1];
    }
    for (int i = 0; i < k; i++) out[i] *= d;
}

#define BOOT_TAIL_MAX 64

/* the sorted values' position p (R - 1), linearly interpolated: the two order
 * statistics beside it from the nearer tail when it is short, else by selection */
static double percentile(double *v, int R, double p) {
    double pos = p * (R - 1);
    int i = (int)floor(pos);
    if (i >= R - 1) i = R - 1;
    int j = i + 1 < R ? i + 1 : i; // the statistics i and j (0-based, ascending)
    double a, b, tail[BOOT_TAIL_MAX];
    if (j + 1 <= BOOT_TAIL_MAX) {
        extremes(v, R, j + 1, 1, tail);
        a = tail[i], b = tail[j];
    } else if (R - i <= BOOT_TAIL_MAX) {
        extremes(v, R, R - i, -1, tail);
        a = tail[R - 1 - i], b = tail[R - 1 - j];
    } else {
        select_kth(v, R, i);
        a = b = v[i];
        for (int k = i + 1; k < R; k++)
            if (k == i + 1 || v[k] < b) b = v[k];
    }
    return i == R - 1 ? a : a + (pos - i) * (b - a);
}

void ls_boot_interval(double *vals, int R, double level, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (R < 1) return;
    for (int r = 0; r < R; r++)
        if (isnan(vals[r])) return;
    *lo = percentile(vals, R, (1.0 - level) / 2.0);
    *hi = percentile(vals, R, 1.0 - (1.0 - level) / 2.0);
}

void ls_boot_curve_barriers(const ls_boot *b, const double *seq, int T, double *vals) {
    const int R = b->R, rb = ls_boot_block(b, T);
    double *means = ms_malloc((size_t)T * rb * sizeof(double));
    const double **x = ms_malloc((size_t)T * sizeof *x), **mp = ms_malloc((size_t)T * sizeof *mp);
    for (int m = 0; m < T; m++) x[m] = seq + (size_t)m * b->S;
    for (int r0 = 0; r0 < R; r0 += rb) {
        int r1 = r0 + rb < R ? r0 + rb : R;
        for (int m = 0; m < T; m++) mp[m] = means + (size_t)m * (r1 - r0);
        ls_boot_means(b, x, T, r0, r1, means);
        ls_boot_barriers(mp, T, r1 - r0, vals + r0);
    }
    free(means);
    free(x);
    free(mp);
}

void ls_boot_curve(const ls_boot *b, const double *seq, int T, double *lo, double *hi) {
    double *vals = ms_malloc((size_t)b->R * sizeof(double));
    ls_boot_curve_barriers(b, seq, T, vals);
    ls_boot_interval(vals, b->R, LS_BOOT_LEVEL, lo, hi);
    free(vals);
}
