/* lap_reference.h - the assignment solver's tie rule, stated as plain code:
 * a scalar, unoptimised copy of src/align/lap.c's algorithm (column reduction,
 * reduction transfer, two passes of augmenting row reduction, shortest
 * augmenting paths) with every minimum taken by a plain ascending loop, as
 * lap.h states the rule: between candidate columns a free (never assigned)
 * column first, then the lowest index; between rows the lowest index.
 *
 * On tied costs the optimum is not unique and which optimal assignment comes
 * out is decided by these rules; cost matrices, align and weight matching pass
 * that choice on to the user. test_lap.c requires lap_solve's assignment to be
 * exactly this reference's, so the vector kernels (4 lanes, then merged) must
 * keep the scalar rule. Changing the rule means changing this file and lap.c's
 * documentation with it. Included by tests only. */
#ifndef MS_LAP_REFERENCE_H
#define MS_LAP_REFERENCE_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* c is (n, m), n <= m, minimise sg * c; rowsol (n) gets each row's column */
static void lapref_run(const double *c, double sg, int n, int m, int *rowsol) {
    int *colsol = malloc(sizeof(int) * m), *freerows = malloc(sizeof(int) * n);
    double *v = malloc(sizeof(double) * m), *dd = malloc(sizeof(double) * m);
    int *ready = malloc(sizeof(int) * m), *steprow = malloc(sizeof(int) * (n + 1));
    double *steph = malloc(sizeof(double) * (n + 1)), *readyd = malloc(sizeof(double) * (n + 1));
    int *readycol = malloc(sizeof(int) * (n + 1));
    int nfree = 0;
#define C(i, j) (c[(size_t)(i) * m + (j)] * sg)
    // the two smallest reduced costs of row i: (u1 at j1, u2 at j2), lowest
    // index on ties; jf: the lowest free column whose reduced cost is u1, or -1
#define TWO_MIN(i, u1, j1, u2, j2, jf)                                             \
    do {                                                                           \
        u1 = u2 = INFINITY;                                                        \
        j1 = j2 = -1;                                                              \
        for (int j_ = 0; j_ < m; j_++) {                                           \
            double x_ = C(i, j_) - v[j_];                                          \
            if (j1 < 0 || x_ < u1) u2 = u1, j2 = j1, u1 = x_, j1 = j_;             \
            else if (j2 < 0 || x_ < u2) u2 = x_, j2 = j_;                          \
        }                                                                          \
        jf = -1;                                                                   \
        for (int j_ = 0; j_ < m && jf < 0; j_++)                                   \
            if (colsol[j_] < 0 && C(i, j_) - v[j_] == u1) jf = j_;                 \
    } while (0)
    if (n == m && n > 1) {
        // column reduction: each column's minimum, lowest row on ties
        int *matches = calloc(n, sizeof(int));
        for (int j = 0; j < n; j++) {
            int imin = 0;
            for (int i = 1; i < n; i++)
                if (C(i, j) < C(imin, j)) imin = i;
            v[j] = C(imin, j);
            if (++matches[imin] == 1) rowsol[imin] = j, colsol[j] = imin;
            else colsol[j] = -1;
        }
        // reduction transfer
        for (int i = 0; i < n; i++) {
            if (matches[i] == 0) {
                rowsol[i] = -1;
                freerows[nfree++] = i;
            } else if (matches[i] == 1) {
                int j1 = rowsol[i], a, b, f;
                double first, second;
                TWO_MIN(i, first, a, second, b, f);
                (void)b, (void)f;
                v[j1] -= a == j1 ? second : first;
            }
        }
        free(matches);
    } else {
        for (int j = 0; j < m; j++) v[j] = 0, colsol[j] = -1;
        for (int i = 0; i < n; i++) rowsol[i] = -1, freerows[nfree++] = i;
    }
    // augmenting row reduction, two passes, immediate re-insertion budgeted
    if (m >= 2) {
        long budget = (m < 512 ? 1L : 8L) * n + 64; /* lap.c's LAP_ARR_WIDE */
        for (int pass = 0; pass < 2 && nfree > 0; pass++) {
            int k = 0, prv = nfree;
            nfree = 0;
            while (k < prv) {
                int i = freerows[k++], j1, j2, jf;
                double umin, usub;
                TWO_MIN(i, umin, j1, usub, j2, jf);
                int strict = umin < usub;
                if (jf >= 0) { // a free column among the cheapest: nobody is evicted
                    if (strict) v[jf] -= usub - umin;
                    rowsol[i] = jf, colsol[jf] = i;
                    continue;
                }
                int i0 = colsol[j1];
                if (strict) v[j1] -= usub - umin;
                else if (i0 >= 0) j1 = j2, i0 = colsol[j2];
                if (i0 >= 0) rowsol[i0] = -1;
                rowsol[i] = j1;
                colsol[j1] = i;
                if (i0 >= 0) {
                    if (strict && budget-- > 0) freerows[--k] = i0;
                    else freerows[nfree++] = i0;
                }
            }
        }
    }
    // shortest augmenting paths (Dijkstra: the smallest distance; on ties a
    // free column, then the lowest index)
    for (int f = 0; f < nfree; f++) {
        int freerow = freerows[f], nstep = 0, end, i = freerow;
        double h = 0, dend;
        for (int j = 0; j < m; j++) dd[j] = INFINITY, ready[j] = 0;
        for (;;) {
            steprow[nstep] = i, steph[nstep] = h, nstep++;
            double mn = INFINITY;
            int jmin = m;
            for (int j = 0; j < m; j++) {
                if (ready[j]) continue;
                double x = C(i, j) - v[j] - h;
                if (x < dd[j]) dd[j] = x;
                if (dd[j] < mn || (dd[j] == mn && jmin < m && colsol[j] < 0 && colsol[jmin] >= 0)) mn = dd[j], jmin = j;
            }
            if (colsol[jmin] < 0) {
                end = jmin, dend = mn;
                break;
            }
            readycol[nstep - 1] = jmin, readyd[nstep - 1] = mn, ready[jmin] = 1;
            i = colsol[jmin];
            h = C(i, jmin) - v[jmin] - mn;
        }
        // the path back: for each column, the earliest scanned row that reaches its distance
        int j = end, limit = nstep;
        double dj = dend;
        for (;;) {
            int k = -1;
            double bestdiff = INFINITY;
            for (int t = 0; t < limit; t++) {
                double x = C(steprow[t], j) - v[j] - steph[t];
                if (x == dj) {
                    k = t;
                    break;
                }
                if (fabs(x - dj) < bestdiff) bestdiff = fabs(x - dj), k = t;
            }
            int r = steprow[k], jprev = rowsol[r];
            colsol[j] = r, rowsol[r] = j;
            if (r == freerow) break;
            j = jprev, dj = readyd[k - 1], limit = k;
        }
        for (int t = 0; t < nstep - 1; t++) v[readycol[t]] += readyd[t] - dend;
    }
#undef TWO_MIN
#undef C
    free(colsol), free(freerows), free(v), free(dd), free(ready);
    free(steprow), free(steph), free(readyd), free(readycol);
}

/* lap_solve's conventions: cost (nr, nc), more rows than columns solved on
 * the transpose, maximise as sg = -1; row_to_col (nr), -1 for unassigned rows */
static void lapref_solve(const double *cost, int nr, int nc, int maximize, int *row_to_col) {
    for (int i = 0; i < nr; i++) row_to_col[i] = -1;
    if (nr == 0 || nc == 0) return;
    int tr = nr > nc, n = tr ? nc : nr, m = tr ? nr : nc;
    double *w = malloc(sizeof(double) * nr * nc);
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < nc; j++)
            w[tr ? (size_t)j * nr + i : (size_t)i * nc + j] = cost[(size_t)i * nc + j];
    int *rowsol = malloc(sizeof(int) * n);
    lapref_run(w, maximize ? -1.0 : 1.0, n, m, rowsol);
    for (int t = 0; t < n; t++) {
        if (tr) row_to_col[rowsol[t]] = t;
        else row_to_col[t] = rowsol[t];
    }
    free(rowsol), free(w);
}

#endif
