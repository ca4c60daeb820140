/* lap.c - the linear assignment solver: Jonker-Volgenant (LAPJV).
 *
 * Jonker & Volgenant, "A shortest augmenting path algorithm for dense and
 * sparse linear assignment problems", Computing 38 (1987). The solver works on
 * column duals v only (row duals are implicit: u_i = min_j c_ij - v_j).
 *
 *   square:      column reduction, reduction transfer, two passes of
 *                augmenting row reduction, then a Dijkstra-like shortest
 *                augmenting path for every row still free.
 *   rectangular: (n rows < m columns, rows all assigned) v starts at 0, which
 *                is dual feasible for "every row, at most one per column";
 *                augmenting row reduction and augmentation only ever lower v
 *                of assigned columns, so unassigned columns keep v = 0 and the
 *                result is optimal. nr > nc is solved on a transposed copy.
 *   maximise:    the kernels read sg * c with sg = -1 (exact; no copy).
 *
 * Invariant kept by every phase: each assigned row i sits on a column that
 * minimises its reduced cost c_ij - v_j. The shortest path phase needs only
 * that, so any phase may stop early (we cap augmenting row reduction for
 * floating point safety) without costing exactness.
 *
 * Where the time goes (n in the thousands, uniform or weight-matching costs):
 * tens of thousands of full row scans, in augmenting row reduction (two
 * smallest reduced costs) and in the shortest path phase (one relaxation per
 * scanned row). Both are contiguous, branch-free vector passes (lap_two_min,
 * lap_relax); the textbook's todo-column list (an index gather per element
 * and a separate minimum scan) is replaced by a full masked pass that relaxes
 * and finds the minimum at once, and predecessors are recovered after the
 * search instead of being stored in the hot loop. What is left is bound by
 * memory bandwidth: each scan streams one row of the cost matrix.
 *
 * Ties: a free column wins over an assigned one (Dijkstra minimum, augmenting
 * row reduction), then the lowest index (column minima, two smallest,
 * Dijkstra minimum); every kernel merges its vector lanes in that order, so
 * the result does not depend on the vector width. Integer costs are where it
 * matters: with costs in [0, 100) each row has ~n/100 zeros, and a search
 * that stops at the first free column among the tied minima is short, where
 * one that takes the lowest index walks the plateau of tied assigned columns
 * (100x slower at n = 2000). */
#include "lap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Scratch for one solve. c is (n, m), n <= m, row-major, minimise. */
typedef struct {
    const double *c; /* (n, m) */
    double sg;       /* +1 minimise, -1 maximise: the solver sees sg * c (exact) */
    int n, m;
    int *rowsol;   /* (n) column of each row, -1 free */
    int *colsol;   /* (m) row of each column, -1 free */
    double *v;     /* (m) column duals */
    long long *fm; /* (m) -1 where the column is free, 0 where assigned (a lane mask) */
    int *freecols; /* (m) the free columns, in no order; nfc of them */
    int *fpos;     /* (m) position of a free column in freecols */
    int nfc;
    double *dd;    /* (m) tentative distance of todo columns, +inf once ready */
    double *vv;    /* (m) v for todo columns, -inf once ready (see lap_relax) */
    int *steprow;  /* (n) row scanned at each Dijkstra step */
    double *steph; /* (n) its offset h = u_row - dist(row) */
    int *readycol; /* (n) column made ready after each step */
    double *readyd; /* (n) and its final distance */
    int *freerows; /* (n) rows still to assign */
    int nfree;
} lapjv;

/* Hot kernels. Vector extensions (4 doubles) with unaligned loads: plain C
 * that GCC lowers to SSE2 pairs on baseline x86-64, to one AVX2 register in
 * the avx2 clone, and to AVX-512VL compares into mask registers (fewer
 * blends, ~10% faster) in the x86-64-v4 clone; glibc's ifunc picks one at
 * load time. Every clone computes the same values: the only products are by
 * sg = +-1, exact, so fusing them into an FMA rounds nothing differently. */
typedef double vd4 __attribute__((vector_size(32), aligned(8), may_alias));
typedef long long vi4 __attribute__((vector_size(32), aligned(8), may_alias));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_ADDRESS__)
#define LAP_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "avx2", "default"), noinline))
#else
#define LAP_CLONES __attribute__((noinline))
#endif

/* mask ? a : b, lane-wise. A macro, not a function: passing or returning a
 * 32-byte vector by value changes the ABI between SSE and AVX builds. */
#define vd4_blend(mask, a, b) ((vd4)(((vi4)(a) & (mask)) | ((vi4)(b) & ~(mask))))

/* One Dijkstra step, fused: relax every column through row ri with offset h,
 * dd[j] = min(dd[j], sg * ri[j] - vv[j] - h), and return the smallest dd with its
 * column in *jmin. Ties: a free column (fm = -1) before an assigned one, then the
 * lowest index. Preferring a free column ends the search at once on integer
 * costs, where dozens of columns share each distance; without it the search
 * walks the whole plateau of tied assigned columns first. Ready columns have
 * vv = -inf, so their candidate is +inf and dd = +inf stays: no gather, no
 * branch, one contiguous pass. Predecessors are not stored here (a scattered
 * int store per improved column); the augmenting path is recovered afterwards
 * from the few scanned rows (lapjv_augment). */
static inline __attribute__((always_inline)) double
lap_relax_body(const double *restrict ri, double sg, const double *restrict vv,
               double *restrict dd, const long long *restrict fm, double h, int m, int *jmin,
               int masked) {
    const vd4 hv = {h, h, h, h}, sv = {sg, sg, sg, sg}, four = {4, 4, 4, 4};
    vd4 best = {INFINITY, INFINITY, INFINITY, INFINITY}, bidx = {0, 0, 0, 0};
    vd4 bestf = best, bidxf = bidx; /* the same over free columns only */
    vd4 idx = {0, 1, 2, 3};
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        vd4 r = *(const vd4 *)(ri + j), v = *(const vd4 *)(vv + j), d = *(vd4 *)(dd + j);
        vd4 x = r * sv - v - hv;
        d = vd4_blend(x < d, x, d);
        *(vd4 *)(dd + j) = d;
        vi4 lb = d < best; /* strict: the earliest column of each lane */
        best = vd4_blend(lb, d, best);
        bidx = vd4_blend(lb, idx, bidx);
        if (masked) {
            vi4 lf = (d < bestf) & *(const vi4 *)(fm + j);
            bestf = vd4_blend(lf, d, bestf);
            bidxf = vd4_blend(lf, idx, bidxf);
        }
        idx += four;
    }
    double mn = INFINITY, bi = (double)m, mnf = INFINITY, bif = (double)m;
    for (int l = 0; l < 4; l++) {
        if (best[l] < mn || (best[l] == mn && bidx[l] < bi)) {
            mn = best[l];
            bi = bidx[l];
        }
        if (bestf[l] < mnf || (bestf[l] == mnf && bidxf[l] < bif)) {
            mnf = bestf[l];
            bif = bidxf[l];
        }
    }
    for (; j < m; j++) { /* tail: higher indices, strict < keeps ties low */
        double x = ri[j] * sg - vv[j] - h;
        if (x < dd[j]) dd[j] = x;
        if (dd[j] < mn) {
            mn = dd[j];
            bi = j;
        }
        if (masked && fm[j] && dd[j] < mnf) {
            mnf = dd[j];
            bif = j;
        }
    }
    *jmin = (int)(mnf == mn ? bif : bi);
    return mn;
}

/* The free-column preference in the pass (many free columns) or left to the
 * caller, who checks its short list of free columns (lapjv_free_tie): the
 * mask costs ~15% of a pass that is otherwise bound by streaming the row. */
LAP_CLONES
static double lap_relax(const double *restrict ri, double sg, const double *restrict vv,
                        double *restrict dd, const long long *restrict fm, double h, int m,
                        int *jmin) {
    return lap_relax_body(ri, sg, vv, dd, fm, h, m, jmin, 1);
}

LAP_CLONES
static double lap_relax_plain(const double *restrict ri, double sg, const double *restrict vv,
                              double *restrict dd, double h, int m, int *jmin) {
    return lap_relax_body(ri, sg, vv, dd, NULL, h, m, jmin, 0);
}

/* The two smallest of sg * ri[j] - v[j]: umin at *j1 (lowest index on ties) and
 * usubmin at *j2 (lowest index among the rest); m >= 2. *jf gets the lowest free
 * column (fm = -1) whose value equals umin, or -1 if no free column attains
 * it. Same vector layout as lap_relax: each lane keeps its own top two and
 * its smallest free value, then the lanes are merged. */
static inline __attribute__((always_inline)) double
lap_two_min_body(const double *restrict ri, double sg, const double *restrict v,
                 const long long *restrict fm, int m, int *j1, double *usubmin, int *j2, int *jf,
                 int masked) {
    const vd4 sv = {sg, sg, sg, sg}, four = {4, 4, 4, 4};
    vd4 m1 = {INFINITY, INFINITY, INFINITY, INFINITY}, m2 = m1, mf = m1;
    vd4 i1 = {-1, -1, -1, -1}, i2 = i1, iff = i1, idx = {0, 1, 2, 3};
    int j = 0;
    for (; j + 4 <= m; j += 4) {
        vd4 x = *(const vd4 *)(ri + j) * sv - *(const vd4 *)(v + j);
        vi4 lt1 = x < m1, lt2 = x < m2;
        // lt1: old first becomes second; else lt2: x becomes second
        m2 = vd4_blend(lt1, m1, vd4_blend(lt2, x, m2));
        i2 = vd4_blend(lt1, i1, vd4_blend(lt2, idx, i2));
        m1 = vd4_blend(lt1, x, m1);
        i1 = vd4_blend(lt1, idx, i1);
        if (masked) {
            vi4 ltf = (x < mf) & *(const vi4 *)(fm + j);
            mf = vd4_blend(ltf, x, mf);
            iff = vd4_blend(ltf, idx, iff);
        }
        idx += four;
    }
    // merge: (value, index) pairs, lexicographic; the tail comes last
    double a = INFINITY, b = INFINITY, f = INFINITY;
    double ia = -1, ib = -1, fi = -1;
#define LAP_PUSH(val, ix)                                                              \
    do {                                                                               \
        double pv = (val), pi = (ix);                                                  \
        if (pi < 0) break;                                                             \
        if (pv < a || (pv == a && pi < ia) || ia < 0) {                                \
            b = a, ib = ia, a = pv, ia = pi;                                           \
        } else if (pv < b || (pv == b && pi < ib) || ib < 0) {                         \
            b = pv, ib = pi;                                                           \
        }                                                                              \
    } while (0)
#define LAP_PUSHF(val, ix)                                                             \
    do {                                                                               \
        double pv = (val), pi = (ix);                                                  \
        if (pi >= 0 && (pv < f || (pv == f && pi < fi) || fi < 0)) f = pv, fi = pi;    \
    } while (0)
    for (int l = 0; l < 4; l++) {
        LAP_PUSH(m1[l], i1[l]);
        LAP_PUSH(m2[l], i2[l]);
        LAP_PUSHF(mf[l], iff[l]);
    }
    for (; j < m; j++) {
        double x = ri[j] * sg - v[j];
        LAP_PUSH(x, (double)j);
        if (masked && fm[j]) LAP_PUSHF(x, (double)j);
    }
#undef LAP_PUSH
#undef LAP_PUSHF
    *j1 = (int)ia;
    *j2 = (int)ib;
    *jf = fi >= 0 && f == a ? (int)fi : -1;
    *usubmin = b;
    return a;
}

LAP_CLONES
static double lap_two_min(const double *restrict ri, double sg, const double *restrict v,
                          const long long *restrict fm, int m, int *j1, double *usubmin,
                          int *j2, int *jf) {
    return lap_two_min_body(ri, sg, v, fm, m, j1, usubmin, j2, jf, 1);
}

/* The same without the free column (*jf = -1): see lap_relax_plain. */
LAP_CLONES
static double lap_two_min_plain(const double *restrict ri, double sg, const double *restrict v,
                                int m, int *j1, double *usubmin, int *j2, int *jf) {
    return lap_two_min_body(ri, sg, v, NULL, m, j1, usubmin, j2, jf, 0);
}

/* 1 if every x[k] is finite: x - x is 0 for finite values and NaN for
 * inf/NaN, and NaN survives the sum. One vector pass, no branch per value. */
LAP_CLONES
static int lap_all_finite(const double *restrict x, size_t nx) {
    vd4 acc = {0, 0, 0, 0};
    size_t k = 0;
    for (; k + 4 <= nx; k += 4) {
        vd4 a = *(const vd4 *)(x + k);
        acc += a - a;
    }
    double t = acc[0] + acc[1] + acc[2] + acc[3];
    for (; k < nx; k++) t += x[k] - x[k];
    return t == 0;
}

/* Column minima of sg * c (n, n), scanned row by row so the n*n pass is
 * contiguous (the textbook column-by-column scan strides by n doubles and
 * misses cache on every element for n in the thousands). cmin (n) gets the
 * minima, imin (n) their rows as doubles (lowest row on ties, strict <). */
LAP_CLONES
static void lap_colmin(const double *restrict c, double sg, int n, double *restrict cmin,
                       double *restrict imin) {
    for (int j = 0; j < n; j++) {
        cmin[j] = c[j] * sg;
        imin[j] = 0;
    }
    const vd4 sv = {sg, sg, sg, sg};
    for (int i = 1; i < n; i++) {
        const double *row = c + (size_t)i * n;
        const vd4 iv = {i, i, i, i};
        int j = 0;
        for (; j + 4 <= n; j += 4) {
            vd4 x = *(const vd4 *)(row + j) * sv, cm = *(vd4 *)(cmin + j);
            vi4 lt = x < cm;
            *(vd4 *)(cmin + j) = vd4_blend(lt, x, cm);
            *(vd4 *)(imin + j) = vd4_blend(lt, iv, *(vd4 *)(imin + j));
        }
        for (; j < n; j++) {
            double x = row[j] * sg;
            if (x < cmin[j]) {
                cmin[j] = x;
                imin[j] = i;
            }
        }
    }
}

/* Column reduction + reduction transfer, square only (n == m).
 * The column minima are found row by row so the n*n scan is contiguous in
 * memory (the textbook column-by-column scan strides by m doubles and misses
 * cache on every element for n in the thousands). */
static void lapjv_init_square(lapjv *s) {
    const int n = s->n;
    const double sg = s->sg;
    double *cmin = s->dd, *imin = s->vv; /* (n) each, scratch reuse */
    int *matches = s->steprow; /* (n) columns whose minimum lies in row i */
    lap_colmin(s->c, sg, n, cmin, imin);
    memset(matches, 0, (size_t)n * sizeof(int));
    for (int j = 0; j < n; j++) {
        int i = (int)imin[j];
        s->v[j] = cmin[j];
        if (++matches[i] == 1) {
            s->rowsol[i] = j;
            s->colsol[j] = i;
        } else {
            s->colsol[j] = -1;
        }
        s->fm[j] = s->colsol[j] < 0 ? -1 : 0;
    }
    // reduction transfer: a row that owns exactly one column min passes its
    // slack (second smallest reduced cost) to that column's dual, so the
    // column looks dearer to the other rows.
    s->nfree = 0;
    for (int i = 0; i < n; i++) {
        if (matches[i] == 0) {
            s->rowsol[i] = -1;
            s->freerows[s->nfree++] = i;
        } else if (matches[i] == 1) {
            int j1 = s->rowsol[i], a, b, f;
            double second;
            // the row's minimum is 0 at j1 (possibly tied): what we need is
            // the smallest reduced cost over the other columns
            double first =
                lap_two_min_plain(s->c + (size_t)i * n, sg, s->v, n, &a, &second, &b, &f);
            s->v[j1] -= a == j1 ? second : first;
        }
        // matches > 1: row keeps one column (reduced cost 0, its minimum);
        // the other columns it won stay free (colsol = -1).
    }
}

/* Column j is assigned from now on (an assigned column never becomes free). */
static void lapjv_take(lapjv *s, int j) {
    if (!s->fm[j]) return;
    s->fm[j] = 0;
    int p = s->fpos[j], last = s->freecols[--s->nfc];
    s->freecols[p] = last;
    s->fpos[last] = p;
}

static void lapjv_list_free(lapjv *s) {
    s->nfc = 0;
    for (int j = 0; j < s->m; j++)
        if (s->fm[j]) {
            s->fpos[j] = s->nfc;
            s->freecols[s->nfc++] = j;
        }
}

/* Few free columns: the kernels run without the mask and the tie goes to the
 * lowest free column found on the list; the choice is the same either way. */
static int lapjv_few_free(const lapjv *s) { return 8L * s->nfc < s->m; }

/* Augmenting row reduction: each free row takes its cheapest column, lowering
 * that column's dual to the row's second cheapest reduced cost; the previous
 * owner is freed and, if the dual really moved, reprocessed at once. Two
 * passes, as in the paper. Floating point can make a dual step round to zero
 * and two rows then trade a column forever, so immediate reprocessing has a
 * budget; rows beyond it wait for the exact shortest path phase. */
static void lapjv_arr(lapjv *s) {
    const int m = s->m;
    if (m < 2) return; /* 1x1: the shortest path phase does it */
    long budget = 8L * s->n + 64; /* immediate re-insertions allowed, both passes */
    for (int pass = 0; pass < 2 && s->nfree > 0; pass++) {
        int k = 0, prvnumfree = s->nfree;
        s->nfree = 0;
        while (k < prvnumfree) {
            int i = s->freerows[k++];
            int j1, j2, jf;
            double usubmin, umin;
            const double *ri = s->c + (size_t)i * m;
            if (lapjv_few_free(s)) {
                umin = lap_two_min_plain(ri, s->sg, s->v, m, &j1, &usubmin, &j2, &jf);
                for (int q = 0; q < s->nfc; q++) {
                    int j = s->freecols[q];
                    if (ri[j] * s->sg - s->v[j] == umin && (jf < 0 || j < jf)) jf = j;
                }
            } else {
                umin = lap_two_min(ri, s->sg, s->v, s->fm, m, &j1, &usubmin, &j2, &jf);
            }
            int strict = umin < usubmin;
            if (jf >= 0) {
                // a free column is among the cheapest: take it, nobody is evicted
                if (strict) s->v[jf] -= usubmin - umin; /* then jf == j1 */
                s->rowsol[i] = jf;
                s->colsol[jf] = i;
                lapjv_take(s, jf);
                continue;
            }
            int i0 = s->colsol[j1];
            if (strict) {
                s->v[j1] -= usubmin - umin;
            } else if (i0 >= 0) {
                // tie: take the equally cheap second column instead of evicting
                j1 = j2;
                i0 = s->colsol[j2];
            }
            if (i0 >= 0) s->rowsol[i0] = -1;
            s->rowsol[i] = j1;
            s->colsol[j1] = i;
            lapjv_take(s, j1);
            if (i0 >= 0) {
                if (strict && budget-- > 0) s->freerows[--k] = i0;
                else s->freerows[s->nfree++] = i0;
            }
        }
    }
}

/* Shortest augmenting path from freerow: Dijkstra on reduced costs, one
 * lap_relax pass per scanned row, then the dual update and the flip of the
 * alternating path. */
static void lapjv_augment(lapjv *s, int freerow) {
    const int m = s->m;
    // row i is c + i * m: one multiply per scan of m elements, so no table of
    // row pointers is needed
    const double *c = s->c, sg = s->sg;
    double *dd = s->dd, *vv = s->vv, *v = s->v;
    for (int j = 0; j < m; j++) {
        dd[j] = INFINITY;
        vv[j] = v[j];
    }
    int nstep = 0, end, i = freerow;
    double h = 0, dend;
    for (;;) {
        s->steprow[nstep] = i;
        s->steph[nstep] = h;
        nstep++;
        int jmin;
        double mn;
        if (lapjv_few_free(s)) {
            mn = lap_relax_plain(c + (size_t)i * m, sg, vv, dd, h, m, &jmin);
            for (int q = 0, jf = -1; q < s->nfc; q++) {
                int j = s->freecols[q];
                if (dd[j] == mn && (jf < 0 || j < jf)) jmin = jf = j;
            }
        } else {
            mn = lap_relax(c + (size_t)i * m, sg, vv, dd, s->fm, h, m, &jmin);
        }
        if (s->colsol[jmin] < 0) {
            end = jmin;
            dend = mn;
            break;
        }
        // jmin is ready at distance mn; its row is scanned next
        s->readycol[nstep - 1] = jmin;
        s->readyd[nstep - 1] = mn;
        dd[jmin] = INFINITY;
        vv[jmin] = -INFINITY;
        i = s->colsol[jmin];
        h = c[(size_t)i * m + jmin] * sg - v[jmin] - mn; /* u_i - dist(i) */
    }
    // Walk the path back. Column j (final distance dj) was last lowered by
    // some row scanned before j became ready, and lap_relax stored exactly
    // (c[r][j] - v[j]) - h_r, so the same expression finds it: take the
    // earliest step that reaches dj (a tight edge, so still a shortest
    // path). The nearest value is the fallback should a platform round
    // differently (excess precision); on IEEE doubles the match is exact.
    int j = end, limit = nstep;
    double dj = dend;
    for (;;) {
        int k = -1;
        double bestdiff = INFINITY;
        for (int t = 0; t < limit; t++) {
            double x = c[(size_t)s->steprow[t] * m + j] * sg - v[j] - s->steph[t];
            if (x == dj) {
                k = t;
                break;
            }
            if (fabs(x - dj) < bestdiff) {
                bestdiff = fabs(x - dj);
                k = t;
            }
        }
        int r = s->steprow[k], jprev = s->rowsol[r];
        s->colsol[j] = r;
        lapjv_take(s, j);
        s->rowsol[r] = j;
        if (r == freerow) break;
        j = jprev; /* == readycol[k - 1]: made ready after step k - 1 */
        dj = s->readyd[k - 1];
        limit = k;
    }
    // ready columns move their dual so reduced costs on the tree stay tight
    for (int t = 0; t < nstep - 1; t++) v[s->readycol[t]] += s->readyd[t] - dend;
}

/* Solve sg * c (n, m), n <= m, finite, minimise; rowsol (n) gets every row's column. */
static void lapjv_run(const double *c, double sg, int n, int m, int *rowsol) {
    lapjv s = {.c = c, .sg = sg, .n = n, .m = m, .rowsol = rowsol};
    s.colsol = ms_malloc((size_t)m * sizeof(int));
    s.v = ms_malloc((size_t)m * sizeof(double));
    s.fm = ms_malloc((size_t)m * sizeof(long long));
    s.freecols = ms_malloc((size_t)m * sizeof(int));
    s.fpos = ms_malloc((size_t)m * sizeof(int));
    s.dd = ms_malloc((size_t)m * sizeof(double));
    s.vv = ms_malloc((size_t)m * sizeof(double));
    s.steprow = ms_malloc((size_t)m * sizeof(int));
    s.steph = ms_malloc((size_t)m * sizeof(double));
    s.readycol = ms_malloc((size_t)m * sizeof(int));
    s.readyd = ms_malloc((size_t)m * sizeof(double));
    s.freerows = ms_malloc((size_t)n * sizeof(int));
    if (n == m && n > 1) {
        lapjv_init_square(&s);
    } else {
        for (int j = 0; j < m; j++) {
            s.v[j] = 0;
            s.colsol[j] = -1;
            s.fm[j] = -1;
        }
        for (int i = 0; i < n; i++) {
            rowsol[i] = -1;
            s.freerows[i] = i;
        }
        s.nfree = n;
    }
    lapjv_list_free(&s);
    lapjv_arr(&s);
    // augment never frees a row, so the free list can be walked as is
    for (int f = 0; f < s.nfree; f++) lapjv_augment(&s, s.freerows[f]);
    free(s.colsol);
    free(s.v);
    free(s.fm);
    free(s.freecols);
    free(s.fpos);
    free(s.dd);
    free(s.vv);
    free(s.steprow);
    free(s.steph);
    free(s.readycol);
    free(s.readyd);
    free(s.freerows);
}

static const char *nonfinite_name(double x) {
    if (isnan(x)) return "NaN";
    return x > 0 ? "+inf" : "-inf";
}

int lap_solve(const double *cost, int nr, int nc, int maximize, int *row_to_col,
              double *total, ms_err *err) {
    if (nr < 0 || nc < 0) return ms_fail(err, "lap: bad shape (%d, %d)", nr, nc);
    for (int i = 0; i < nr; i++) row_to_col[i] = -1;
    *total = 0;
    if (nr == 0 || nc == 0) return 0;
    size_t nn = (size_t)nr * nc;
    // reject non-finite costs, naming the first bad cell
    if (!lap_all_finite(cost, nn))
        for (size_t k = 0; k < nn; k++)
            if (!isfinite(cost[k]))
                return ms_fail(err, "lap: cost[%zu][%zu] is %s (costs must be finite)",
                               k / (size_t)nc, k % (size_t)nc, nonfinite_name(cost[k]));
    int transpose = nr > nc;
    int n = transpose ? nc : nr, m = transpose ? nr : nc;
    // the solver minimises sg * c for a (n, m) matrix with n <= m. Maximise
    // is the sign sg = -1 inside the kernels (exact, and no copy: a fresh
    // n*n buffer costs page faults comparable to the whole solve); only
    // more rows than columns needs a transposed copy.
    const double *c = cost;
    double *work = NULL;
    if (transpose) {
        work = ms_malloc(nn * sizeof(double));
        // work (nc, nr) = cost (nr, nc) transposed, in tiles to stay in cache
        const int B = 32;
        for (int i0 = 0; i0 < nr; i0 += B)
            for (int j0 = 0; j0 < nc; j0 += B)
                for (int i = i0; i < i0 + B && i < nr; i++)
                    for (int j = j0; j < j0 + B && j < nc; j++)
                        work[(size_t)j * nr + i] = cost[(size_t)i * nc + j];
        c = work;
    }
    int *rowsol = ms_malloc((size_t)n * sizeof(int));
    lapjv_run(c, maximize ? -1.0 : 1.0, n, m, rowsol);
    if (transpose) {
        for (int t = 0; t < n; t++) row_to_col[rowsol[t]] = t;
    } else {
        memcpy(row_to_col, rowsol, (size_t)n * sizeof(int));
    }
    free(rowsol);
    free(work);
    double sum = 0;
    for (int i = 0; i < nr; i++)
        if (row_to_col[i] >= 0) sum += cost[(size_t)i * nc + row_to_col[i]];
    *total = sum;
    return 0;
}
