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
 * search instead of being stored in the hot loop. Such a pass is bound by
 * memory bandwidth (it streams one row of the cost matrix), so most passes
 * are avoided: each row keeps a short list of its cheapest columns with a
 * bound on all the others (see "Candidate lists"), augmenting row reduction
 * and the shortest path search ask the list first and read the row only
 * when the answer could lie off the list. The lists change which rows are
 * read, never an answer: 5x fewer seconds on uniform costs at n = 5000.
 *
 * Ties: a free column wins over an assigned one (Dijkstra minimum, augmenting
 * row reduction), then the lowest index (column minima, two smallest,
 * Dijkstra minimum); every kernel merges its vector lanes in that order, so
 * the result does not depend on the vector width. Integer costs are where it
 * matters: with costs in [0, 100) each row has ~n/100 zeros, and a search
 * that stops at the first free column among the tied minima is short, where
 * one that takes the lowest index walks the plateau of tied assigned columns
 * (100x slower at n = 2000). */
#include "align/lap.h"
#include "core/progress.h"

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
    /* candidate lists (see "Candidate lists" below); K = 0: off */
    int K;
    int *cj;        /* (n, K) candidate columns of each row */
    double *cc;     /* (n, K) their costs c_ij (copied: no matrix access) */
    double *bound;  /* (n) every other column has sg * c_ij - v_j >= bound[i] */
    char *has;      /* (n) row i has a list */
    struct lap_heap_ent *hp; /* the shortest path search's queue */
    size_t hn, hcap;
    long saved, wasted; /* row passes the lists saved, and passes they added */
    double guess;       /* threshold guess for the next list (lap_cand_scan) */
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

/* The smallest (value, index) pair seen, a at ia, and the next, b at ib (by
 * value, then index; an index < 0 is no candidate and ignored) */
typedef struct {
    double a, ia, b, ib;
} lap_two;
static inline __attribute__((always_inline)) void lap_two_push(lap_two *t, double pv, double pi) {
    if (pi < 0) return;
    if (pv < t->a || (pv == t->a && pi < t->ia) || t->ia < 0) {
        t->b = t->a, t->ib = t->ia, t->a = pv, t->ia = pi;
    } else if (pv < t->b || (pv == t->b && pi < t->ib) || t->ib < 0) {
        t->b = pv, t->ib = pi;
    }
}
/* the smallest pair alone, f at fi */
typedef struct {
    double f, fi;
} lap_one;
static inline __attribute__((always_inline)) void lap_one_push(lap_one *t, double pv, double pi) {
    if (pi >= 0 && (pv < t->f || (pv == t->f && pi < t->fi) || t->fi < 0)) t->f = pv, t->fi = pi;
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
    lap_two t2 = {INFINITY, -1, INFINITY, -1};
    lap_one t1 = {INFINITY, -1};
    for (int l = 0; l < 4; l++) {
        lap_two_push(&t2, m1[l], i1[l]);
        lap_two_push(&t2, m2[l], i2[l]);
        lap_one_push(&t1, mf[l], iff[l]);
    }
    for (; j < m; j++) {
        double x = ri[j] * sg - v[j];
        lap_two_push(&t2, x, (double)j);
        if (masked && fm[j]) lap_one_push(&t1, x, (double)j);
    }
    *j1 = (int)t2.ia;
    *j2 = (int)t2.ib;
    *jf = t1.fi >= 0 && t1.f == t2.a ? (int)t1.fi : -1;
    *usubmin = t2.b;
    return t2.a;
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

/* Candidate lists. Every phase after the column reduction only lowers column
 * duals v (augmenting row reduction subtracts a slack, the shortest path
 * phase adds readyd - dend <= 0), so the reduced cost sg * c_ij - v_j of a
 * cell only grows. A row's list, taken once from a full pass, holds its K
 * cheapest columns (costs copied) and bound[i], the largest of their reduced
 * costs then: every column off the list still has a reduced cost >= bound[i]
 * (floating point subtraction is monotone). A question about the row's
 * smallest reduced costs whose answer lies strictly below bound[i] is
 * answered from the list alone, exactly as a full pass would answer it (the
 * same expressions, the same tie rules, since every column that could tie
 * is on the list); otherwise the row is read again and its list renewed.
 * On uniform and weight-matching costs most of the tens of thousands of
 * row passes become list passes: the matrix is streamed a few times
 * instead of once per pass. */
#define LAP_K 32

/* Lists from this many columns on (lap_opts.cand_min 0): below, a row is a
 * few cache lines and a full pass costs about what the list's upkeep does. */
#define LAP_CAND_MIN 512

/* Renew row i's list from one pass over the row: the K smallest of
 * x_j = sg * c_ij - v_j (any K among equals) and bound[i] their largest, or
 * +inf when the list holds the whole row. Values rejected on the way are
 * >= a threshold that only falls to the final K-th smallest, so they are
 * >= bound[i] too. */
/* Put x (column j) into the max-heap bx/buf of nb < K entries. */
static void lap_kheap_add(double *bx, int *buf, int nb, double x, int j) {
    int k = nb;
    while (k > 0 && bx[(k - 1) / 2] < x) {
        bx[k] = bx[(k - 1) / 2], buf[k] = buf[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    bx[k] = x, buf[k] = j;
}

/* Replace the largest entry of the full max-heap (K entries) by x, j. */
static void lap_kheap_replace(double *bx, int *buf, int K, double x, int j) {
    int k = 0;
    for (;;) {
        int c = 2 * k + 1;
        if (c >= K) break;
        if (c + 1 < K && bx[c + 1] > bx[c]) c++;
        if (!(bx[c] > x)) break;
        bx[k] = bx[c], buf[k] = buf[c];
        k = c;
    }
    bx[k] = x, buf[k] = j;
}

/* One pass over row ri: up to K of the smallest x_j = sg * ri[j] - v[j]
 * into buf/bx (a max-heap; the count is returned) and *bound, with every
 * column left out >= *bound (+inf when none is). Only values below the
 * threshold enter: first thr0, a guess (any value is correct; a good one
 * saves heap work), then the heap's top once it is full. Every value left
 * out was >= the threshold when seen, and the threshold only falls. */
LAP_CLONES
static int lap_cand_scan(const double *restrict ri, double sg, const double *restrict v, int m,
                         int K, double thr0, int *buf, double *bx, double *bound) {
    const vd4 sv = {sg, sg, sg, sg};
    int nb = 0, j = 0;
    double thr = thr0;
    vd4 tv = {thr, thr, thr, thr};
    for (; j < m; j += 4) {
        double x[4];
        int nl = m - j < 4 ? m - j : 4;
        if (nl == 4) {
            vd4 xv = *(const vd4 *)(ri + j) * sv - *(const vd4 *)(v + j);
            vi4 lt = xv < tv;
            if (!(lt[0] | lt[1] | lt[2] | lt[3])) continue;
            for (int l = 0; l < 4; l++) x[l] = xv[l];
        } else {
            for (int l = 0; l < nl; l++) x[l] = ri[j + l] * sg - v[j + l];
        }
        for (int l = 0; l < nl; l++) {
            if (!(x[l] < thr)) continue;
            if (nb < K) {
                lap_kheap_add(bx, buf, nb++, x[l], j + l);
                if (nb == K) thr = bx[0];
            } else {
                lap_kheap_replace(bx, buf, K, x[l], j + l);
                thr = bx[0];
            }
        }
        tv = (vd4){thr, thr, thr, thr};
    }
    *bound = nb < m ? thr : INFINITY;
    return nb;
}

/* Renew row i's list (see lap_cand_scan). The threshold guess is the last
 * list's bound (rows of one matrix are alike), and when fewer than two
 * columns fall below it, the row is read again without a guess. */
static void lapjv_cand_build(lapjv *s, int i) {
    const int K = s->K;
    int buf[LAP_K], *cj = s->cj + (size_t)i * K;
    double bx[LAP_K], *cc = s->cc + (size_t)i * K;
    const double *ri = s->c + (size_t)i * s->m;
    int nk = lap_cand_scan(ri, s->sg, s->v, s->m, K, s->guess, buf, bx, &s->bound[i]);
    if (nk < 2) nk = lap_cand_scan(ri, s->sg, s->v, s->m, K, INFINITY, buf, bx, &s->bound[i]);
    if (nk < 2) { /* reduced costs that overflowed to inf: a list that answers nothing */
        buf[0] = 0, buf[1] = 1, nk = 2;
        s->bound[i] = -INFINITY;
    }
    s->guess = s->bound[i];
    for (int k = 0; k < K; k++) { /* short lists repeat their first column */
        cj[k] = buf[k < nk ? k : 0];
        cc[k] = ri[cj[k]];
    }
    s->has[i] = 1;
}

/* Augmenting row reduction's question for row i from its list: the two
 * smallest reduced costs and the lowest free column at the smallest (see
 * lap_two_min). Returns 0 when the answer is not certain (usubmin reaches
 * the bound: a column off the list could be smaller or tie lower). */
static int lapjv_two_min_cand(lapjv *s, int i, int *j1, double *usubmin, int *j2, int *jf,
                              double *umin) {
    const int K = s->K;
    const int *cj = s->cj + (size_t)i * K;
    const double *cc = s->cc + (size_t)i * K, sg = s->sg;
    double a = INFINITY, b = INFINITY;
    int ia = -1, ib = -1, fi = -1;
    for (int k = 0; k < K; k++) {
        int j = cj[k];
        if (j == ia || j == ib) continue; /* padding repeats a column */
        double x = cc[k] * sg - s->v[j];
        if (x < a || (x == a && j < ia)) {
            b = a, ib = ia, a = x, ia = j;
        } else if (x < b || (x == b && j < ib)) {
            b = x, ib = j;
        }
    }
    if (!(b < s->bound[i]) || ib < 0) return 0;
    for (int k = 0; k < K; k++) {
        int j = cj[k];
        if (s->fm[j] && cc[k] * sg - s->v[j] == a && (fi < 0 || j < fi)) fi = j;
    }
    *j1 = ia;
    *j2 = ib;
    *jf = fi;
    *usubmin = b;
    *umin = a;
    return 1;
}

/* The shortest path search's queue: a binary heap of (key, tb), smallest
 * first. A column enters with its tentative distance whenever that falls
 * (stale entries are skipped when popped); tb orders equal keys as the
 * dense search's minimum does: a free column before an assigned one, then
 * the lowest index. A row read from its list enters as a marker with the
 * key bound - h, below which none of its other columns can reach; markers
 * sort before columns of the same key, so a marker reached is a row that
 * might hold the next minimum off its list: it is read again. */
struct lap_heap_ent {
    double key;
    unsigned long long tb; /* marker: the step; column: 1 << 62 | assigned << 32 | j */
};
#define LAP_TB_COL (1ULL << 62)

static int lap_heap_less(const struct lap_heap_ent *a, const struct lap_heap_ent *b) {
    return a->key < b->key || (a->key == b->key && a->tb < b->tb);
}

static void lap_heap_push(lapjv *s, double key, unsigned long long tb) {
    if (s->hn == s->hcap) {
        s->hcap = s->hcap ? 2 * s->hcap : 1024;
        s->hp = ms_realloc(s->hp, s->hcap * sizeof *s->hp);
    }
    struct lap_heap_ent e = {key, tb}, *h = s->hp;
    size_t k = s->hn++;
    while (k > 0 && lap_heap_less(&e, &h[(k - 1) / 2])) {
        h[k] = h[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    h[k] = e;
}

static struct lap_heap_ent lap_heap_pop(lapjv *s) {
    struct lap_heap_ent *h = s->hp, top = h[0], e = h[--s->hn];
    size_t k = 0, n = s->hn;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && lap_heap_less(&h[c + 1], &h[c])) c++;
        if (!lap_heap_less(&h[c], &e)) break;
        h[k] = h[c];
        k = c;
    }
    if (n) h[k] = e;
    return top;
}

/* Relax row i's list at step t (offset h) and queue its marker. */
static void lapjv_relax_cand(lapjv *s, int i, int t, double h) {
    const int K = s->K;
    const int *cj = s->cj + (size_t)i * K;
    const double *cc = s->cc + (size_t)i * K, sg = s->sg;
    for (int k = 0; k < K; k++) {
        int j = cj[k];
        double x = cc[k] * sg - s->vv[j] - h; /* ready: vv = -inf, x = +inf */
        if (x < s->dd[j]) {
            s->dd[j] = x;
            lap_heap_push(s, x, LAP_TB_COL | (s->fm[j] ? 0ULL : 1ULL << 32) | (unsigned)j);
        }
    }
    if (s->bound[i] < INFINITY) lap_heap_push(s, s->bound[i] - h, (unsigned long long)t);
}

/* Every search starts the same: no column reached (dd = inf) and the duals
 * as they stand copied to the working row vv. */
static void search_start(lapjv *s) {
    for (int j = 0; j < s->m; j++) {
        s->dd[j] = INFINITY;
        s->vv[j] = s->v[j];
    }
}

/* lapjv_augment's search on the lists: the same path, the same duals. The
 * dense search's minimum over all columns is the smallest queued column
 * once every marker is above it, since a row's columns off its list lie at
 * or above its marker. A marker reached renews that row's list; if the new
 * marker is not above the reached key (ties at the bound), or lists are
 * renewed about as often as rows are scanned, the search gives up and
 * returns 0 before changing anything: the dense search then runs instead. */
static int lapjv_augment_sparse(lapjv *s, int freerow, int *nstep_out, int *end_out,
                                double *dend_out) {
    const int m = s->m;
    const double *c = s->c, sg = s->sg;
    double *dd = s->dd, *vv = s->vv, *v = s->v;
    search_start(s);
    s->hn = 0;
    int nstep = 0, i = freerow, renewed = 0;
    double h = 0;
    if (!s->has[i]) lapjv_cand_build(s, i);
    else s->saved++;
    for (;;) {
        s->steprow[nstep] = i;
        s->steph[nstep] = h;
        lapjv_relax_cand(s, i, nstep, h);
        nstep++;
        int jmin = -1;
        double mn = 0;
        while (s->hn) {
            struct lap_heap_ent e = lap_heap_pop(s);
            if (e.tb < LAP_TB_COL) { /* a marker: renew that row's list */
                int t = (int)e.tb, r = s->steprow[t];
                lapjv_cand_build(s, r);
                double key = s->bound[r] - s->steph[t];
                s->wasted++;
                if (!(key > e.key) || 4 * ++renewed > nstep + 64) {
                    s->wasted += nstep;
                    return 0;
                }
                lapjv_relax_cand(s, r, t, s->steph[t]);
                continue;
            }
            int j = (int)(e.tb & 0xffffffffu);
            if (vv[j] == -INFINITY || e.key != dd[j]) continue; /* stale */
            jmin = j;
            mn = e.key;
            break;
        }
        if (jmin < 0) return 0; /* cannot happen: a free column is always reachable */
        if (s->colsol[jmin] < 0) {
            *end_out = jmin;
            *dend_out = mn;
            break;
        }
        s->readycol[nstep - 1] = jmin;
        s->readyd[nstep - 1] = mn;
        dd[jmin] = INFINITY;
        vv[jmin] = -INFINITY;
        i = s->colsol[jmin];
        h = c[(size_t)i * m + jmin] * sg - v[jmin] - mn;
        if (!s->has[i]) lapjv_cand_build(s, i);
        else s->saved++;
    }
    *nstep_out = nstep;
    return 1;
}

/* The lists pay when most questions are answered from them; on costs with
 * wide ties at the bound (integer costs) they are turned off for the rest of
 * the solve, which changes nothing but the speed. */
static int lapjv_cand_on(lapjv *s) {
    if (s->K && s->wasted > 64 + s->saved / 2)
        s->K = 0;
    return s->K;
}

#define LAP_ARR_WIDE 512

/* Augmenting row reduction: each free row takes its cheapest column, lowering
 * that column's dual to the row's second cheapest reduced cost; the previous
 * owner is freed and, if the dual really moved, reprocessed at once. Two
 * passes, as in the paper. Floating point can make a dual step round to zero
 * and two rows then trade a column forever, so immediate reprocessing has a
 * budget; rows beyond it wait for the exact shortest path phase. */
static void lapjv_arr(lapjv *s) {
    const int m = s->m;
    if (m < 2) return; /* 1x1: the shortest path phase does it */
    // immediate re-insertions allowed, both passes. Few when the matrix is
    // narrow: there every question is a full pass over a row that the
    // shortest path phase would read as cheaply (2x faster at n = 500); many
    // from LAP_ARR_WIDE columns on, where the candidate lists answer most
    // questions without a pass (fixed at 512 whatever lap_opts.cand_min is, so
    // the lists never change an answer)
    long budget = (s->m < LAP_ARR_WIDE ? 1L : 8L) * s->n + 64;
    for (int pass = 0; pass < 2 && s->nfree > 0; pass++) {
        int k = 0, prvnumfree = s->nfree;
        s->nfree = 0;
        while (k < prvnumfree) {
            int i = s->freerows[k++];
            int j1, j2, jf;
            double usubmin, umin;
            const double *ri = s->c + (size_t)i * m;
            int known = 0;
            if (lapjv_cand_on(s)) {
                int fresh = !s->has[i];
                if (fresh) lapjv_cand_build(s, i);
                known = lapjv_two_min_cand(s, i, &j1, &usubmin, &j2, &jf, &umin);
                if (known && !fresh) s->saved++;
                if (!known && !fresh) {
                    lapjv_cand_build(s, i);
                    known = lapjv_two_min_cand(s, i, &j1, &usubmin, &j2, &jf, &umin);
                }
                if (!known) s->wasted++;
            }
            if (known) {
                // answered from the list
            } else if (lapjv_few_free(s)) {
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
static void lapjv_search_dense(lapjv *s, int freerow, int *nstep_out, int *end_out,
                               double *dend_out) {
    const int m = s->m;
    // row i is c + i * m: one multiply per scan of m elements, so no table of
    // row pointers is needed
    const double *c = s->c, sg = s->sg;
    double *dd = s->dd, *vv = s->vv, *v = s->v;
    search_start(s);
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
    *nstep_out = nstep;
    *end_out = end;
    *dend_out = dend;
}

static void lapjv_augment(lapjv *s, int freerow) {
    const int m = s->m;
    const double *c = s->c, sg = s->sg;
    double *v = s->v;
    int nstep, end;
    double dend;
    if (!(lapjv_cand_on(s) && lapjv_augment_sparse(s, freerow, &nstep, &end, &dend)))
        lapjv_search_dense(s, freerow, &nstep, &end, &dend);
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
    int raised = 0;
    for (int t = 0; t < nstep - 1; t++) {
        v[s->readycol[t]] += s->readyd[t] - dend;
        raised |= s->readyd[t] > dend;
    }
    // readyd <= dend in exact arithmetic; should rounding ever raise a dual,
    // the lists' bounds no longer hold: they are taken again when needed
    if (raised && s->has) memset(s->has, 0, (size_t)s->n);
}

/* Free rows augmented between two looks at the calling thread's cancel (progress.h):
 * an assignment of unrelated experts at h = 3072 takes ~0.1 s, the explorer's q less */
#define LAP_CANCEL_ROWS 64

/* Solve sg * c (n, m), n <= m, finite, minimise; rowsol (n) gets every row's column.
 * 0, or -1 when cancelled (rowsol then incomplete). */
static int lapjv_run(const double *c, double sg, int n, int m, int cand_min, int *rowsol) {
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
    if (m >= cand_min && n > 1) {
        s.K = m < LAP_K ? m : LAP_K;
        s.cj = ms_malloc((size_t)n * s.K * sizeof(int));
        s.cc = ms_malloc((size_t)n * s.K * sizeof(double));
        s.bound = ms_malloc((size_t)n * sizeof(double));
        s.has = calloc((size_t)n, 1);
        s.guess = INFINITY;
    }
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
    int rc = 0;
    for (int f = 0; f < s.nfree && !rc; f++) {
        if (f % LAP_CANCEL_ROWS == 0 && progress_cancelled()) rc = -1;
        else lapjv_augment(&s, s.freerows[f]);
    }
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
    free(s.cj);
    free(s.cc);
    free(s.bound);
    free(s.has);
    free(s.hp);
    return rc;
}

static const char *nonfinite_name(double x) {
    if (isnan(x)) return "NaN";
    return x > 0 ? "+inf" : "-inf";
}

int lap_solve(const double *cost, int nr, int nc, int maximize, int *row_to_col,
              double *total, ms_err *err) {
    return lap_solve_opts(cost, nr, nc, maximize, NULL, row_to_col, total, err);
}

int lap_solve_opts(const double *cost, int nr, int nc, int maximize, const lap_opts *o,
                   int *row_to_col, double *total, ms_err *err) {
    int cand_min = o && o->cand_min > 0 ? o->cand_min : LAP_CAND_MIN;
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
    if (lapjv_run(c, maximize ? -1.0 : 1.0, n, m, cand_min, rowsol)) {
        for (int i = 0; i < nr; i++) row_to_col[i] = -1;
        free(rowsol);
        free(work);
        return ms_fail(err, "cancelled");
    }
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
