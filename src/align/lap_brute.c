/* lap_brute.c - the exhaustive reference for lap_solve (tests) and the second
 * best assignment (the margin `moescope cost` reports). */
#include "align/lap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BRUTE_MAX 9

/* Depth-first over injective maps rows -> columns of c (n, m), n <= m.
 * Lexicographically first optimum wins (strict <), so the result is
 * deterministic. skip (n) or NULL: a map equal to skip everywhere is ignored. */
typedef struct {
    const double *c;
    int n, m;
    const int *skip;
    int cur[BRUTE_MAX], best[BRUTE_MAX];
    int used[BRUTE_MAX + 1];
    double best_sum;
    int found;
} brute;

static void brute_rec(brute *b, int i, double sum) {
    if (i == b->n) {
        if (b->skip && !memcmp(b->cur, b->skip, (size_t)b->n * sizeof(int))) return;
        if (!b->found || sum < b->best_sum) {
            b->best_sum = sum;
            memcpy(b->best, b->cur, (size_t)b->n * sizeof(int));
            b->found = 1;
        }
        return;
    }
    for (int j = 0; j < b->m; j++) {
        if (b->used[j]) continue;
        b->used[j] = 1;
        b->cur[i] = j;
        brute_rec(b, i + 1, sum + b->c[i * b->m + j]);
        b->used[j] = 0;
    }
}

/* c (n, m), minimise; 0 if some map exists (other than skip). */
static int brute_run(const double *c, int n, int m, const int *skip, int *out, double *sum) {
    brute b = {.c = c, .n = n, .m = m, .skip = skip};
    brute_rec(&b, 0, 0.0);
    if (!b.found) return -1;
    memcpy(out, b.best, (size_t)n * sizeof(int));
    *sum = b.best_sum;
    return 0;
}

static int check_finite(const double *cost, int nr, int nc, ms_err *err) {
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++) {
            double x = cost[i * nc + j];
            if (!isfinite(x))
                return ms_fail(err, "lap: cost[%d][%d] is %s (costs must be finite)", i, j,
                               isnan(x) ? "NaN" : x > 0 ? "+inf" : "-inf");
        }
    return 0;
}

int lap_solve_brute(const double *cost, int nr, int nc, int maximize, int *row_to_col,
                    double *total, ms_err *err) {
    if (nr < 0 || nc < 0 || nr > BRUTE_MAX || nc > BRUTE_MAX)
        return ms_fail(err, "lap_solve_brute: shape (%d, %d) outside 0..%d", nr, nc, BRUTE_MAX);
    for (int i = 0; i < nr; i++) row_to_col[i] = -1;
    *total = 0;
    if (nr == 0 || nc == 0) return 0;
    if (check_finite(cost, nr, nc, err)) return -1;
    int tr = nr > nc, n = tr ? nc : nr, m = tr ? nr : nc;
    // c (n, m): minimise form, transposed when there are more rows than columns
    double c[BRUTE_MAX * BRUTE_MAX];
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++) {
            double x = maximize ? -cost[i * nc + j] : cost[i * nc + j];
            if (tr) c[j * m + i] = x;
            else c[i * m + j] = x;
        }
    int best[BRUTE_MAX];
    double s;
    brute_run(c, n, m, NULL, best, &s); /* n >= 1: a map always exists */
    if (tr) {
        for (int t = 0; t < n; t++) row_to_col[best[t]] = t;
    } else {
        memcpy(row_to_col, best, (size_t)n * sizeof(int));
    }
    double sum = 0;
    for (int i = 0; i < nr; i++)
        if (row_to_col[i] >= 0) sum += cost[i * nc + row_to_col[i]];
    *total = sum;
    return 0;
}

/* The best assignment other than an optimal `given` (sigma), in O(n^3) worst
 * case (n solves of Murty's split would be O(n^4): minutes at n = 4096).
 * Any other assignment differs from sigma by disjoint cycles of rows, row i
 * taking column sigma(k) at a change of w(i,k) = c[i][sigma(k)] - c[i][sigma(i)].
 * sigma optimal means no cycle is negative, so the best other assignment is
 * sigma moved along one minimum-weight cycle of length >= 2. Potentials p
 * (shortest distances from a virtual source: Bellman-Ford rounds of O(n^2))
 * make w(i,k) + p(i) - p(k) >= 0; then a Dijkstra from each row, pruned at
 * the best cycle found so far, finds the minimum cycle. Returns 1 (and
 * leaves row_to_col alone) if given is not optimal (a negative cycle). */
static int second_by_cycles(const double *cost, int n, int maximize, const int *sg,
                            int *row_to_col) {
    double s = maximize ? -1.0 : 1.0;
#define W(i, k) (s * cost[(size_t)(i) * n + sg[k]] - s * cost[(size_t)(i) * n + sg[i]])
    double *p = ms_calloc((size_t)n, sizeof(double));
    double *dist = ms_malloc((size_t)n * sizeof(double));
    int *pred = ms_malloc((size_t)n * sizeof(int)), *best_pred = ms_malloc((size_t)n * sizeof(int));
    char *done = ms_malloc((size_t)n);
    int rc = 0, changed = 1;
    for (int round = 0; changed && rc == 0; round++) {
        if (round > n) rc = 1; /* still improving after n rounds: a negative cycle */
        changed = 0;
        for (int i = 0; i < n; i++)
            for (int k = 0; k < n; k++) {
                double v = p[i] + W(i, k);
                if (k != i && v < p[k] - 1e-12 * (fabs(p[k]) + fabs(v))) p[k] = v, changed = 1;
            }
    }
    double best = INFINITY;
    int best_s = -1, best_last = -1;
    for (int src = 0; src < n && rc == 0; src++) {
        for (int v = 0; v < n; v++) dist[v] = INFINITY, done[v] = 0, pred[v] = -1;
        dist[src] = 0;
        int improved = 0;
        for (;;) {
            int u = -1;
            for (int v = 0; v < n; v++)
                if (!done[v] && (u < 0 || dist[v] < dist[u])) u = v;
            if (u < 0 || !(dist[u] < best)) break; /* pruned: no shorter cycle through src */
            done[u] = 1;
            for (int v = 0; v < n; v++) {
                if (v == u) continue;
                double wr = W(u, v) + p[u] - p[v];
                if (wr < 0) wr = 0; /* rounding: reduced weights are >= 0 */
                if (v == src) {
                    if (dist[u] + wr < best) best = dist[u] + wr, best_s = src, best_last = u,
                                             improved = 1;
                } else if (!done[v] && dist[u] + wr < dist[v]) {
                    dist[v] = dist[u] + wr;
                    pred[v] = u;
                }
            }
        }
        if (improved) memcpy(best_pred, pred, (size_t)n * sizeof(int));
    }
#undef W
    if (rc == 0 && best_s >= 0) {
        // the cycle src -> ... -> last -> src: each row takes the column of its successor
        memcpy(row_to_col, sg, (size_t)n * sizeof(int));
        int next = best_s;
        for (int u = best_last; u >= 0; next = u, u = u == best_s ? -1 : best_pred[u])
            row_to_col[u] = sg[next];
    } else if (rc == 0) {
        rc = 1;
    }
    free(p);
    free(dist);
    free(pred);
    free(best_pred);
    free(done);
    return rc;
}

int lap_second_best(const double *cost, int n, int maximize, const int *given, int *row_to_col,
                    double *second, ms_err *err) {
    if (n < 2) return ms_fail(err, "lap_second_best: needs n >= 2 (n = %d)", n);
    for (int i = 0; i < n; i++)
        if (given[i] < 0 || given[i] >= n)
            return ms_fail(err, "lap_second_best: given[%d] = %d is not a column", i, given[i]);
    if (check_finite(cost, n, n, err)) return -1;
    size_t nn = (size_t)n * n;
    if (n <= BRUTE_MAX) {
        double c[BRUTE_MAX * BRUTE_MAX];
        for (size_t k = 0; k < nn; k++) c[k] = maximize ? -cost[k] : cost[k];
        double s;
        brute_run(c, n, n, given, row_to_col, &s); /* n >= 2: another permutation exists */
    } else if (second_by_cycles(cost, n, maximize, given, row_to_col) == 0) {
        // done in O(n^3) (given was optimal, as lap_solve returns it)
    } else {
        // given is not optimal: Murty's first split: the second best differs from given in some row
        // r, so it is the best over r of "given[r] forbidden". Forbidding is a
        // large finite cost: any assignment through it costs more than every
        // assignment avoiding it (n cells of at most maxabs each).
        double maxabs = 0;
        for (size_t k = 0; k < nn; k++) maxabs = fmax(maxabs, fabs(cost[k]));
        double big = 4.0 * (double)n * (maxabs + 1.0);
        double *c = ms_malloc(nn * sizeof(double));
        int *cand = ms_malloc((size_t)n * sizeof(int));
        double best = INFINITY;
        int have = 0;
        for (int r = 0; r < n; r++) {
            for (size_t k = 0; k < nn; k++) c[k] = maximize ? -cost[k] : cost[k];
            c[(size_t)r * n + given[r]] = big;
            double t;
            if (lap_solve(c, n, n, 0, cand, &t, err)) {
                free(c);
                free(cand);
                return -1;
            }
            if (cand[r] == given[r]) continue; /* cannot happen for n >= 2 */
            if (!have || t < best) {
                best = t;
                memcpy(row_to_col, cand, (size_t)n * sizeof(int));
                have = 1;
            }
        }
        free(c);
        free(cand);
        if (!have) return ms_fail(err, "lap_second_best: no second assignment");
    }
    double sum = 0;
    for (int i = 0; i < n; i++) sum += cost[(size_t)i * n + row_to_col[i]];
    *second = sum;
    return 0;
}
