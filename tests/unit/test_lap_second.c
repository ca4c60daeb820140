/* test_lap_second.c - lap_second_best beyond the exhaustive range (n > 9), where it
 * takes the minimum-weight cycle of the exchange graph (O(n^3)), against Murty's
 * first split done here independently: for every row r, the optimum with the cell
 * (r, given[r]) forbidden; the second best is the least of them. Random real costs,
 * integer costs with many ties, maximisation, and a non-optimal `given` (the
 * fall-back path). */
#include <stdlib.h>
#include <string.h>

#include "align/lap.h"
#include "core/rng.h"
#include "testlib.h"

/* Murty's split with lap_solve, minimising s * cost. */
static double murty_second(const double *cost, int n, int maximize, const int *given) {
    double s = maximize ? -1 : 1, best = INFINITY;
    double *c = malloc((size_t)n * n * sizeof(double));
    int *a = malloc((size_t)n * sizeof(int));
    for (int r = 0; r < n; r++) {
        double big = 0;
        for (int k = 0; k < n * n; k++) big = fmax(big, fabs(cost[k]));
        for (int k = 0; k < n * n; k++) c[k] = s * cost[k];
        c[r * n + given[r]] = 4.0 * n * (big + 1);
        double t;
        ms_err err;
        if (lap_solve(c, n, n, 0, a, &t, &err)) continue;
        double sum = 0;
        for (int i = 0; i < n; i++) sum += s * cost[i * n + a[i]];
        if (a[r] != given[r] && sum < best) best = sum;
    }
    free(c);
    free(a);
    return s * best;
}

static void one(uint64_t seed, int n, int ties, int maximize) {
    rng_t r;
    rng_seed(&r, seed);
    double *cost = malloc((size_t)n * n * sizeof(double));
    for (int k = 0; k < n * n; k++)
        cost[k] = ties ? (double)(rng_u64(&r) % 4) : rng_uniform(&r) * 10 - 5;
    int *opt = malloc((size_t)n * sizeof(int)), *sec = malloc((size_t)n * sizeof(int));
    double total, second;
    ms_err err;
    CHECK(lap_solve(cost, n, n, maximize, opt, &total, &err) == 0, "lap_solve");
    CHECK(lap_second_best(cost, n, maximize, opt, sec, &second, &err) == 0, "second best: %s",
          err.msg);
    double want = murty_second(cost, n, maximize, opt);
    CHECK_CLOSE(second, want, 1e-9, "second best total vs Murty's split");
    double sum = 0;
    int differs = 0, *seen = calloc((size_t)n, sizeof(int)), perm = 1;
    for (int i = 0; i < n; i++) {
        sum += cost[i * n + sec[i]];
        differs |= sec[i] != opt[i];
        if (sec[i] < 0 || sec[i] >= n || seen[sec[i]]++) perm = 0;
    }
    CHECK(perm, "the second best is a permutation (seed %llu)", (unsigned long long)seed);
    CHECK(differs, "the second best differs from the optimum");
    CHECK_CLOSE(sum, second, 1e-12, "its cells add up to the total");
    // a given assignment that is not optimal: the identity (fall-back path)
    for (int i = 0; i < n; i++) opt[i] = i;
    CHECK(lap_second_best(cost, n, maximize, opt, sec, &second, &err) == 0, "second best (id)");
    CHECK_CLOSE(second, murty_second(cost, n, maximize, opt), 1e-9, "non-optimal given");
    free(seen);
    free(cost);
    free(opt);
    free(sec);
}

int main(void) {
    for (uint64_t s = 1; s <= 40; s++) one(s, 10 + (int)(s % 23), (int)(s % 3 == 0), (int)(s % 4 == 1));
    return test_summary("test_lap_second");
}
