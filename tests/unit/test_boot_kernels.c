/* test_boot_kernels.c - the error bars' fast parts against their plain
 * definitions: the blocked means (bootstrap.c's two-row kernel, any rows, any
 * resample range, any R) bit-identical to the plain sum over units; the
 * barriers along the resamples equal to one curve's at a time; the interval's
 * tail statistics and selections equal to a full sort's percentiles on arrays
 * full of ties, at every level. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "landscape/bootstrap.h"
#include "testlib.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile's default on a sorted copy */
static double sorted_percentile(const double *v, int R, double p) {
    double *s = malloc((size_t)R * sizeof(double));
    memcpy(s, v, (size_t)R * sizeof(double));
    qsort(s, (size_t)R, sizeof(double), cmp_double);
    double pos = p * (R - 1);
    int i = (int)floor(pos);
    double out = i >= R - 1 ? s[R - 1] : s[i] + (pos - i) * (s[i + 1] - s[i]);
    free(s);
    return out;
}

static void test_interval(void) {
    const int sizes[] = {1, 2, 3, 7, 26, 27, 64, 100, 999, 1000, 5000};
    const double levels[] = {0.95, 0.5, 0.99, 0.9, 0.0, 1.0};
    rng_t g;
    rng_seed(&g, 7);
    int bad = 0, cases = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof *sizes; si++)
        for (size_t li = 0; li < sizeof levels / sizeof *levels; li++)
            for (int rep = 0; rep < 20; rep++) {
                int R = sizes[si];
                double *v = malloc((size_t)R * sizeof(double)), lo, hi;
                for (int r = 0; r < R; r++) { // ties: a few distinct values, or continuous ones
                    double u = rng_uniform(&g);
                    v[r] = rep % 3 == 0 ? floor(u * 4) : rep % 3 == 1 ? (u < 0.6 ? 0.0 : u) : u - 0.5;
                }
                double want_lo = sorted_percentile(v, R, (1.0 - levels[li]) / 2.0);
                double want_hi = sorted_percentile(v, R, 1.0 - (1.0 - levels[li]) / 2.0);
                ls_boot_interval(v, R, levels[li], &lo, &hi);
                cases++;
                if (lo != want_lo || hi != want_hi) {
                    if (bad++ < 5)
                        printf("R %d level %g rep %d: [%.17g, %.17g] vs sorted [%.17g, %.17g]\n", R, levels[li], rep,
                               lo, hi, want_lo, want_hi);
                }
                free(v);
            }
    CHECK(bad == 0, "interval = the sorted percentiles: %d of %d cases differ", bad, cases);
    double v[5] = {1, 2, NAN, 4, 5}, lo, hi;
    ls_boot_interval(v, 5, 0.95, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi), "a NaN makes the interval NaN: [%g, %g]", lo, hi);
}

static void test_means(void) {
    rng_t g;
    rng_seed(&g, 11);
    const int Ss[] = {1, 2, 16, 37}, Rs[] = {1, 8, 13, 1000};
    int bad = 0;
    for (size_t si = 0; si < 4; si++)
        for (size_t ri = 0; ri < 4; ri++) {
            int S = Ss[si], R = Rs[ri], nr = 5;
            ls_boot b;
            ls_boot_init(&b, S, R, LS_BOOT_SEED + si);
            double *x = malloc((size_t)nr * S * sizeof(double));
            for (int i = 0; i < nr * S; i++) x[i] = rng_uniform(&g) * 3 - 1;
            const double *rows[5];
            for (int j = 0; j < nr; j++) rows[j] = x + (size_t)j * S;
            // every resample takes S units
            for (int r = 0; r < R; r++) {
                double tot = 0;
                for (int i = 0; i < S; i++) tot += b.wt[(size_t)i * R + r];
                if (tot != S) bad++;
            }
            // ranges: all, a block from 3, the last one
            int ranges[3][2] = {{0, R}, {R > 3 ? 3 : 0, R}, {R - 1, R}};
            for (int q = 0; q < 3; q++) {
                int r0 = ranges[q][0], r1 = ranges[q][1], n = r1 - r0;
                for (int nrq = 1; nrq <= nr; nrq++) {
                    double *out = malloc((size_t)nrq * n * sizeof(double));
                    ls_boot_means(&b, rows, nrq, r0, r1, out);
                    for (int j = 0; j < nrq; j++)
                        for (int r = r0; r < r1; r++) {
                            double s = 0.0;
                            for (int i = 0; i < S; i++) s += (double)b.wt[(size_t)i * R + r] * rows[j][i];
                            if (memcmp(&(double){s / S}, &out[(size_t)j * n + r - r0], sizeof(double))) bad++;
                        }
                    free(out);
                }
            }
            free(x);
            ls_boot_free(&b);
        }
    CHECK(bad == 0, "blocked means: %d values differ from the plain sum's bits", bad);
}

static void test_barriers(void) {
    rng_t g;
    rng_seed(&g, 5);
    const int T = 6, n = 11;
    double m[6][11];
    const double *mp[6];
    for (int t = 0; t < T; t++) {
        for (int r = 0; r < n; r++) m[t][r] = rng_uniform(&g);
        mp[t] = m[t];
    }
    m[3][4] = NAN;
    double vals[11];
    ls_boot_barriers(mp, T, n, vals);
    int bad = 0;
    for (int r = 0; r < n; r++) {
        double bar = -INFINITY;
        int nan = 0;
        for (int t = 0; t < T; t++) {
            double tt = (double)t / (T - 1), e = m[t][r] - ((1.0 - tt) * m[0][r] + tt * m[T - 1][r]);
            if (isnan(e)) nan = 1;
            else if (e > bar) bar = e;
        }
        if (nan ? !isnan(vals[r]) : vals[r] != bar) bad++;
    }
    CHECK(bad == 0, "barriers along the resamples: %d differ from one curve at a time", bad);
    CHECK(isnan(vals[4]) && !isnan(vals[3]), "a NaN point makes that resample's barrier NaN only");
}

int main(void) {
    test_interval();
    test_means();
    test_barriers();
    return test_summary("test_boot_kernels");
}
