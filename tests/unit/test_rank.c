/* test_rank.c - rank.c against brute force on thousands of small arrays full
 * of ties (exact, within tau, just outside tau, NaN), the constructed case of
 * many orders at 0 with the chosen one 1e-9 above, rank_table against the
 * per-element functions, L-hat, and Spearman's rho against known values and
 * its properties. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/rank.h"
#include "core/rng.h"
#include "testlib.h"

#define W 4 /* order width: 24 distinct orders */

static void unrank(int k, int *p) {
    int pool[W];
    for (int i = 0; i < W; i++) pool[i] = i;
    int f = 6; // (W-1)!
    for (int i = 0; i < W; i++) {
        int q = k / f;
        k %= f;
        p[i] = pool[q];
        memmove(pool + q, pool + q + 1, (size_t)(W - 1 - q) * sizeof(int));
        if (i < W - 1) f /= (W - 1 - i);
    }
}

typedef struct {
    double b, auc;
    int order[W];
    long cls;
} item;

static int bar_cmp(const void *pa, const void *pb) {
    const item *a = pa, *b = pb;
    int na = isnan(a->b) != 0, nb = isnan(b->b) != 0;
    if (na != nb) return na - nb;
    if (!na && a->b != b->b) return a->b < b->b ? -1 : 1;
    return memcmp(a->order, b->order, sizeof a->order);
}

static int lex(const int *a, const int *b) {
    for (int i = 0; i < W; i++)
        if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
    return 0;
}

static int full_cmp(const void *pa, const void *pb) {
    const item *a = pa, *b = pb;
    if (a->cls != b->cls) return a->cls < b->cls ? -1 : 1;
    int na = isnan(a->auc) != 0, nb = isnan(b->auc) != 0;
    if (na != nb) return na - nb;
    if (!na && a->auc != b->auc) return a->auc < b->auc ? -1 : 1;
    return lex(a->order, b->order);
}

/* Brute force: sort everything (the chosen added when absent), cut greedy
 * classes, sort by (class, auc, order), find the chosen. */
static long brute_rank_auc(const item *xs, int m, const item *ch, double tau) {
    item *all = malloc((size_t)(m + 1) * sizeof(item));
    memcpy(all, xs, (size_t)m * sizeof(item));
    int k = m, present = 0;
    for (int i = 0; i < m; i++) present |= lex(xs[i].order, ch->order) == 0;
    if (!present) all[k++] = *ch;
    qsort(all, (size_t)k, sizeof(item), bar_cmp);
    long c = -1;
    double start = 0;
    for (int i = 0; i < k; i++) {
        if (isnan(all[i].b)) all[i].cls = 1000000;
        else {
            if (c < 0 || all[i].b - start > tau) {
                start = all[i].b;
                c++;
            }
            all[i].cls = c;
        }
    }
    qsort(all, (size_t)k, sizeof(item), full_cmp);
    long pos = -1;
    for (int i = 0; i < k; i++)
        if (lex(all[i].order, ch->order) == 0) pos = i + 1;
    free(all);
    return pos;
}

static double pick_value(rng_t *r, double tau) {
    static const double base[] = {0.0, 0.0, 0.0, 0.01, 0.02, 0.5};
    double b = base[rng_below(r, 6)];
    switch (rng_below(r, 6)) {
    case 0: return b;
    case 1: return b + tau * 0.5 * rng_uniform(r);
    case 2: return b + tau * (1.0 + rng_uniform(r));
    case 3: return b + 1e-9;
    case 4: return rng_below(r, 30) == 0 ? NAN : b;
    default: return b + 0.1 * rng_uniform(r);
    }
}

static void test_brute(void) {
    rng_t r;
    rng_seed(&r, 7);
    int bad_auc = 0, bad_rank = 0, bad_tied = 0, bad_bounds = 0, bad_table = 0;
    for (int trial = 0; trial < 4000; trial++) {
        double naive = rng_below(&r, 4) == 0 ? 0.0 : 0.5 * rng_uniform(&r);
        double tau = rank_tau(naive);
        int m = 1 + (int)rng_below(&r, 24);
        // m distinct orders out of 24
        int ids[24];
        for (int i = 0; i < 24; i++) ids[i] = i;
        for (int i = 23; i > 0; i--) {
            int j = (int)rng_below(&r, (uint64_t)i + 1), t = ids[i];
            ids[i] = ids[j];
            ids[j] = t;
        }
        item xs[24];
        double B[24], A[24];
        int O[24 * W];
        for (int i = 0; i < m; i++) {
            xs[i].b = pick_value(&r, tau);
            xs[i].auc = rng_below(&r, 3) == 0 ? 0.0 : (rng_below(&r, 20) == 0 ? NAN : rng_uniform(&r));
            unrank(ids[i], xs[i].order);
            B[i] = xs[i].b;
            A[i] = xs[i].auc;
            memcpy(O + i * W, xs[i].order, sizeof xs[i].order);
        }
        // the chosen: one of them, or (sampled) one more order
        item ch;
        if (rng_below(&r, 3) || m == 24) ch = xs[rng_below(&r, (uint64_t)m)];
        else {
            ch.b = pick_value(&r, tau);
            ch.auc = rng_uniform(&r);
            unrank(ids[m], ch.order);
        }
        rank_view v = rank_view_arrays(B, A, O, W, m);
        rank_info ri;
        rank_chosen(&v, ch.b, ch.auc, ch.order, tau, &ri);
        int present = 0;
        long less = 0, tied = 0;
        for (int i = 0; i < m; i++) {
            present |= lex(xs[i].order, ch.order) == 0;
            if (isnan(ch.b)) {
                less += !isnan(B[i]);
                tied += isnan(B[i]) != 0;
            } else {
                less += B[i] < ch.b - tau;
                tied += fabs(B[i] - ch.b) <= tau;
            }
        }
        tied += !present;
        bad_rank += ri.rank != 1 + less;
        bad_tied += ri.tied != tied;
        long want = brute_rank_auc(xs, m, &ch, tau);
        if (ri.rank_auc != want && bad_auc++ < 5)
            printf("trial %d: rank_auc %ld, brute force %ld\n", trial, ri.rank_auc, want);
        bad_bounds += !(ri.rank <= ri.rank_auc && ri.rank_auc <= ri.rank + ri.tied - 1);
        // rank_table on the sorted elements against the per-element functions
        qsort(xs, (size_t)m, sizeof(item), bar_cmp);
        for (int i = 0; i < m; i++) B[i] = xs[i].b;
        long tr[24], tt[24], tc[24];
        v = rank_view_arrays(B, NULL, NULL, W, m);
        rank_table(&v, tau, tr, tt, tc);
        long c = -1;
        double start = 0;
        for (int i = 0; i < m; i++) {
            bad_table += tr[i] != rank_of(&v, B[i], tau);
            bad_table += tt[i] != rank_tied_count(&v, B[i], tau);
            if (!isnan(B[i]) && (c < 0 || B[i] - start > tau)) {
                start = B[i];
                c++;
            }
            if (!isnan(B[i])) bad_table += tc[i] != c;
            else bad_table += tc[i] != c + 1;
        }
    }
    CHECK(bad_rank == 0, "rank differs from brute force in %d trials", bad_rank);
    CHECK(bad_tied == 0, "tied differs from brute force in %d trials", bad_tied);
    CHECK(bad_auc == 0, "rank_auc differs from brute force in %d trials", bad_auc);
    CHECK(bad_bounds == 0, "rank <= rank_auc <= rank + tied - 1 broken in %d trials", bad_bounds);
    CHECK(bad_table == 0, "rank_table differs from the per-element functions %d times", bad_table);
}

/* Orders 0..k-1 at barrier 0 (AUC decreasing with the index), the chosen at
 * 1e-9 with the middle AUC, the rest well above. */
static void test_constructed(void) {
    enum { M = 24, K = 15 };
    double B[M], A[M];
    int O[M * W];
    for (int i = 0; i < M; i++) {
        unrank(i, O + i * W);
        B[i] = i < K ? 0.0 : 0.05 + 0.01 * i;
        A[i] = i < K ? 0.02 - 0.001 * i : 0.1;
    }
    int c = K; // the chosen: 1e-9 above 0, AUC between orders 6 and 7
    B[c] = 1e-9;
    A[c] = 0.02 - 0.001 * 6.5;
    double tau = rank_tau(0.3);
    rank_view v = rank_view_arrays(B, A, O, W, M);
    rank_info ri;
    rank_chosen(&v, B[c], A[c], O + c * W, tau, &ri);
    CHECK(ri.rank == 1, "rank %ld, want 1 (1e-9 is within tau = %g of 0)", ri.rank, tau);
    CHECK(ri.tied == K + 1, "tied %ld, want %d", ri.tied, K + 1);
    // AUC ascending in the class: orders 14..7 (8 of them) come first
    CHECK(ri.rank_auc == K - 7 + 1, "rank_auc %ld, want %d", ri.rank_auc, K - 7 + 1);
    // the paper's rank without tolerance would be K + 1
    CHECK(rank_of(&v, B[c], 0.0) == K + 1, "rank without tolerance %ld", rank_of(&v, B[c], 0.0));
    // a chosen 2 tau above 0: outside the class of 0
    B[c] = 2 * tau;
    rank_chosen(&v, B[c], A[c], O + c * W, tau, &ri);
    CHECK(ri.rank == K + 1 && ri.tied == 1 && ri.rank_auc == K + 1, "2 tau above: %ld %ld %ld",
          ri.rank, ri.tied, ri.rank_auc);
    CHECK(rank_tau(0.0) == 1e-9 && rank_tau(2.0) == 2e-6 && rank_tau(NAN) == 1e-9, "tau floor");
}

static void test_l_hat(void) {
    CHECK_CLOSE(rank_l_hat(0.3, 0.1, 0.5), 50.0, 1e-12, "l_hat");
    CHECK(isnan(rank_l_hat(0.3, 0.1, 0.1)), "l_hat with denominator 0 is NaN");
    CHECK(isnan(rank_l_hat(0.3, 0.2, 0.1)), "l_hat with negative denominator is NaN");
}

static void test_spearman(void) {
    // scipy.stats.spearmanr([1,2,3,4,5], [5,6,7,8,7]) = 0.8207826816681233
    double x[] = {1, 2, 3, 4, 5}, y[] = {5, 6, 7, 8, 7};
    CHECK_CLOSE(rank_spearman(x, y, 5), 0.8207826816681233, 1e-12, "spearman with a tie");
    double r[5];
    rank_average(y, 5, r);
    CHECK(r[0] == 1 && r[1] == 2 && r[2] == 3.5 && r[3] == 5 && r[4] == 3.5, "average ranks");
    CHECK(isnan(rank_spearman(x, x, 1)), "n < 2");
    double cst[] = {2, 2, 2, 2, 2};
    CHECK(isnan(rank_spearman(x, cst, 5)), "constant side");
    double withnan[] = {1, NAN, 3, 4, 5};
    CHECK(isnan(rank_spearman(withnan, y, 5)), "NaN input");
    // properties: invariant under monotone maps, odd under negation, 1 on itself
    rng_t g;
    rng_seed(&g, 3);
    int bad = 0;
    for (int t = 0; t < 200; t++) {
        long n = 2 + (long)rng_below(&g, 40);
        double a[42], b[42], ea[42], nb[42];
        for (long i = 0; i < n; i++) {
            a[i] = (double)rng_below(&g, 6);
            b[i] = a[i] + (double)rng_below(&g, 4);
            ea[i] = exp(a[i]);
            nb[i] = -b[i];
        }
        double s = rank_spearman(a, b, n);
        if (isnan(s)) continue;
        bad += fabs(rank_spearman(ea, b, n) - s) > 1e-12;
        bad += fabs(rank_spearman(a, nb, n) + s) > 1e-12;
        bad += fabs(rank_spearman(a, a, n) - 1.0) > 1e-12;
        bad += s < -1 - 1e-12 || s > 1 + 1e-12;
    }
    CHECK(bad == 0, "spearman properties broken %d times", bad);
}

int main(void) {
    test_brute();
    test_constructed();
    test_l_hat();
    test_spearman();
    return test_summary("test_rank");
}
