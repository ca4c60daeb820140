/* landscape_orders.c - the set of expert orders a landscape ranges over: n!
 * (or a group-limited router's wreath group) numbered lexicographically,
 * enumerated, ranked or sampled, and each process's share of the items
 * (landscape_orders.h; those the drivers share in landscape_int.h). */
#include "landscape/landscape_orders.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "landscape_int.h"

double ls_factorial(int n) {
    double f = 1.0;
    for (int i = 2; i <= n; i++) f *= i;
    return f;
}

double ls_factorial_log10(int n) { return lgamma(n + 1.0) / log(10.0); }

double ls_wreath_log10(int G, int m) { return ls_factorial_log10(G) + G * ls_factorial_log10(m); }

void ls_count_format(char *buf, size_t cap, double log10_count) {
    if (log10_count < 15.0) snprintf(buf, cap, "%.0f", round(pow(10.0, log10_count)));
    else snprintf(buf, cap, "about 10^%.0f", floor(log10_count));
}

void ls_factorial_format(char *buf, size_t cap, int n) {
    double f = ls_factorial(n);
    if (f < 1e15) snprintf(buf, cap, "%.0f", f);
    else ls_count_format(buf, cap, ls_factorial_log10(n));
}

void ls_order_get(const uint8_t *orders, int n, long id, int *p) {
    const uint8_t *o = orders + (size_t)id * n;
    for (int i = 0; i < n; i++) p[i] = o[i];
}

int ls_order_is(const uint8_t *orders, int n, long id, const int *p) {
    const uint8_t *o = orders + (size_t)id * n;
    for (int i = 0; i < n; i++)
        if (o[i] != p[i]) return 0;
    return 1;
}

double ls_order_cost(const double *C, const uint8_t *orders, int n, long id) {
    const uint8_t *o = orders + (size_t)id * n;
    double s = 0.0;
    for (int i = 0; i < n; i++) s += C[(size_t)i * n + o[i]];
    return s;
}


/* k-th permutation of 0..n-1 in lexicographic order. */
static void perm_unrank(long k, int n, int *p) {
    int avail[LS_MAX_N];
    for (int i = 0; i < n; i++) avail[i] = i;
    long f = (long)ls_factorial(n - 1);
    for (int i = 0; i < n; i++) {
        long q = f ? k / f : 0;
        if (f) k %= f;
        p[i] = avail[q];
        for (int j = (int)q; j < n - 1 - i; j++) avail[j] = avail[j + 1];
        if (n - 1 - i > 0) f /= n - 1 - i;
    }
}

static long perm_rank(const int *p, int n) {
    long k = 0;
    for (int i = 0; i < n; i++) {
        int smaller = 0;
        for (int j = i + 1; j < n; j++) smaller += p[j] < p[i];
        k = k * (n - i) + smaller;
    }
    return k;
}

/* ---- a group-limited router's orders: the wreath product S_m wr S_g ----
 * pi[a m + i] = rho[a] m + tau_a[i] (slot group a takes all of B's group
 * rho[a], in the inner order tau_a). Numbered lexicographically in pi, i.e.
 * by the digits (rho[0], tau_0, rho[1], tau_1, ...), so neighbours share
 * their leading slots as in S_n. */

double ls_wreath_count(int G, int m) {
    double c = ls_factorial(G);
    for (int a = 0; a < G; a++) c *= ls_factorial(m);
    return c;
}

static void wreath_unrank(long k, int G, int m, int *p) {
    long mf = (long)ls_factorial(m), r[LS_MAX_N], t[LS_MAX_N];
    for (int a = G - 1; a >= 0; a--) { // the last digits first
        t[a] = k % mf;
        k /= mf;
        r[a] = k % (G - a);
        k /= G - a;
    }
    int avail[LS_MAX_N], tau[LS_MAX_N];
    for (int a = 0; a < G; a++) avail[a] = a;
    for (int a = 0; a < G; a++) {
        int gb = avail[r[a]];
        for (int j = (int)r[a]; j < G - 1 - a; j++) avail[j] = avail[j + 1];
        perm_unrank(t[a], m, tau);
        for (int i = 0; i < m; i++) p[a * m + i] = gb * m + tau[i];
    }
}

/* the index of p among the wreath group's orders, -1 if it splits a group */
static long wreath_rank(const int *p, int G, int m) {
    long k = 0, mf = (long)ls_factorial(m);
    int used[LS_MAX_N] = {0}, tau[LS_MAX_N];
    for (int a = 0; a < G; a++) {
        int gb = p[a * m] / m, r = 0;
        for (int i = 0; i < m; i++) {
            if (p[a * m + i] / m != gb) return -1;
            tau[i] = p[a * m + i] - gb * m;
        }
        if (used[gb]) return -1;
        for (int b = 0; b < gb; b++) r += !used[b];
        used[gb] = 1;
        k = (k * (G - a) + r) * mf + perm_rank(tau, m);
    }
    return k;
}

void ls_order_of(const lsx *x, long k, int *p) {
    if (x->rs.exhaustive && x->rs.groups) {
        wreath_unrank(k, x->rs.groups, x->pb.n / x->rs.groups, p);
    } else if (x->rs.exhaustive) {
        perm_unrank(k, x->pb.n, p);
    } else {
        ls_order_get(x->rs.L->orders, x->pb.n, k, p);
    }
}

long ls_order_index(const landscape *L, int exhaustive, int groups, long norders, const int *p) {
    if (exhaustive && groups) return wreath_rank(p, groups, L->n / groups);
    if (exhaustive) return perm_rank(p, L->n);
    for (long k = 0; k < norders; k++)
        if (ls_order_is(L->orders, L->n, k, p)) return k;
    return -1;
}


/* the next permutation in lexicographic order (0 after the last) */
static int perm_next(int *p, int n) {
    int i = n - 2;
    while (i >= 0 && p[i] > p[i + 1]) i--;
    if (i < 0) return 0;
    int j = n - 1;
    while (p[j] < p[i]) j--;
    int t = p[i];
    p[i] = p[j], p[j] = t;
    for (int a = i + 1, b = n - 1; a < b; a++, b--) t = p[a], p[a] = p[b], p[b] = t;
    return 1;
}

void ls_orders_all(uint8_t *o, int n, int groups, long norders) {
    int p[LS_MAX_N];
    for (int i = 0; i < n; i++) p[i] = i;
    for (long k = 0; k < norders; k++) {
        if (groups) wreath_unrank(k, groups, n / groups, p);
        else if (k > 0) perm_next(p, n);
        for (int i = 0; i < n; i++) o[(size_t)k * n + i] = (uint8_t)p[i];
    }
}

/* FNV-1a of an order's n bytes, never 0 (0 marks an empty slot) */
static uint64_t order_hash(const uint8_t *o, int n) {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) h = (h ^ o[i]) * 1099511628211ull;
    return h ? h : 1;
}

/* nsample distinct uniformly random orders of the set (n! or the wreath
 * group's, at least 2 nsample of them) into L->orders (nsample, n): for the
 * wreath group a group order rho, then an inner order per slot group, as
 * moe_scramble draws. Distinct by a hash set of (hash, index) over the drawn
 * orders: memory O(nsample n), whatever n! is. */
void ls_orders_sample(uint8_t *out, int n, int groups, long nsample, uint64_t seed) {
    size_t cap = 1;
    while (cap < (size_t)nsample * 2) cap <<= 1;
    uint64_t *hs = ms_calloc(cap, sizeof(uint64_t)); // hash, 0 = empty
    long *at_k = ms_malloc(cap * sizeof(long));      // the order with that hash
    rng_t r;
    rng_seed(&r, seed);
    int p[LS_MAX_N], rho[LS_MAX_N], tau[LS_MAX_N];
    long got = 0;
    while (got < nsample) {
        if (groups) {
            int G = groups, m = n / G;
            rng_permutation(&r, rho, G);
            for (int a = 0; a < G; a++) {
                rng_permutation(&r, tau, m);
                for (int i = 0; i < m; i++) p[a * m + i] = rho[a] * m + tau[i];
            }
        } else {
            rng_permutation(&r, p, n);
        }
        uint8_t *o = out + (size_t)got * n;
        for (int i = 0; i < n; i++) o[i] = (uint8_t)p[i];
        uint64_t hh = order_hash(o, n);
        size_t at = (size_t)(hh >> 20) & (cap - 1);
        int dup = 0;
        while (hs[at] && !dup) {
            dup = hs[at] == hh && !memcmp(out + (size_t)at_k[at] * n, o, (size_t)n);
            at = (at + 1) & (cap - 1);
        }
        if (dup) continue;
        hs[at] = hh;
        at_k[at] = got++;
    }
    free(hs);
    free(at_k);
}

void ls_share(long total, int rank, int size, long *lo, long *hi) {
    long q = total / size, r = total % size;
    *lo = rank * q + (rank < r ? rank : r);
    *hi = *lo + q + (rank < r);
}
