/* lap.h - the linear assignment solver (Jonker-Volgenant style shortest
 * augmenting path with column reduction, reduction transfer and augmenting
 * row reduction), exact, for dense row-major cost matrices.
 *
 * cost is (nr, nc). Every row is assigned when nr <= nc; every column when
 * nr > nc (the other rows get -1). NaN, -inf (and +inf) costs are rejected
 * with an error. Extra memory: O(nr + nc) plus 384 bytes per row (the
 * candidate lists), plus an nr x nc transposed copy when nr > nc (callers
 * holding such a matrix transposed can pass that; the result is the same,
 * see below).
 *
 * Which optimum, when several assignments reach the optimal total: the
 * solver's choice is a fixed function of the cost values, so
 *   - the same matrix always gives the same assignment (every run, and
 *     whether the CPU's vector path or the plain one runs);
 *   - maximising c gives exactly the assignment of minimising -c;
 *   - nr > nc gives exactly the transpose of the assignment of the (nc, nr)
 *     transposed matrix (column j's row there is row_to_col's inverse here).
 * Inside the solver every tie between candidate columns goes to a free
 * column first, then to the lowest index; between rows, to the lowest index.
 * Which optimum that selects is otherwise unspecified (an optimum that is
 * unique is of course returned). */
#ifndef MS_LAP_H
#define MS_LAP_H

#include "core/ms_error.h"

/* row_to_col (nr): column of each row, or -1. total: sum of chosen costs.
 * maximize != 0 maximises instead of minimising. The calling thread's cancel
 * (progress.h) stops it between rows: -1 "cancelled". */
int lap_solve(const double *cost, int nr, int nc, int maximize, int *row_to_col,
              double *total, ms_err *err);

/* How the solver runs (tests): candidate lists (lap.c) from cand_min columns
 * on (0: 512); they change the speed, never the assignment. Tests lower it to
 * cover small sizes. */
typedef struct {
    int cand_min;
} lap_opts;
/* lap_solve as o says (NULL: the defaults). */
int lap_solve_opts(const double *cost, int nr, int nc, int maximize, const lap_opts *o,
                   int *row_to_col, double *total, ms_err *err);

/* Reference: exhaustive search over all assignments, nr, nc <= 9. Same
 * conventions and tie-breaking-independent total. Used by tests. */
int lap_solve_brute(const double *cost, int nr, int nc, int maximize, int *row_to_col,
                    double *total, ms_err *err);

/* Best assignment that differs from `given` in at least one row (square only,
 * n <= 9: exhaustive; larger and `given` optimal: the minimum-weight cycle of
 * the exchange graph, O(n^3); otherwise by forbidding each assigned cell in turn).
 * Its total goes to *second; returns -1 when n < 2. */
int lap_second_best(const double *cost, int n, int maximize, const int *given,
                    int *row_to_col, double *second, ms_err *err);

#endif
