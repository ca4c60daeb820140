/* test_ui_large.c - the TUI's views at many experts without a terminal: the
 * cost matrix's cursor, scrolling and zoom (block means, the assignment's
 * marks, checked against sums computed here), the sampled orders table (the
 * rank percentile and its Wilson interval computed here from the rows, then
 * the worker's figures in their place once it has them), the
 * abbreviated orders, the title's family and router, the layer list and its
 * load's progress, and the swap view's deltas at n = 256 against a search per swap. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "app.h"
#include "heatmap_view.h"
#include "keys.h"
#include "layout.h"
#include "orders_view.h"
#include "landscape/rank.h"
#include "scatter_view.h"
#include "state_export.h"
#include "swap_view.h"
#include "model/symmetry.h"
#include "order_abbrev.h"
#include "testlib.h"

/* the most experts the explorer takes here, at most 64 */
#define NBIG (LS_MAX_N < 64 ? LS_MAX_N : 64)

/* row r holds order p: the worker keeps the orders apart, row r's at id r */
static void set_row_order(explore_snapshot *v, long r, const int *p) {
    v->rows[r].id = r;
    for (int i = 0; i < v->n; i++) v->orders[(size_t)r * v->n + i] = (uint8_t)p[i];
}

static void curve_of(ls_curve *c, int n, const int *order, double barrier) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->T = 5;
    memcpy(c->order, order, sizeof(int) * (size_t)n);
    c->loss = calloc(5, sizeof(double));
    for (int m = 0; m < 5; m++) c->loss[m] = 0.1 + barrier * (m == 2);
    c->barrier = barrier;
    c->acc_barrier = c->auc = NAN;
}

/* n experts, cost C[i][j] = ((5i + 3j) mod 11) + i / n, assignment
 * pi(i) = (7i + 3) mod n (n odd-free: 7 is coprime to 16 and 64), nrows
 * sampled rows with barriers 0.001 * ((r * 37) mod nrows) + 0.01 */
static void big_view(explore_snapshot *v, int n, long nrows) {
    memset(v, 0, sizeof *v);
    v->n = n;
    v->T = 5;
    v->kind = LS_LAYER;
    v->t = calloc(5, sizeof(double));
    for (int m = 0; m < 5; m++) v->t[m] = m / 4.0;
    v->req.order_stage = v->req.wm_stage = v->req.center = 1;
    v->req.method = COST_EXPERT;
    v->req.T = 5;
    v->cost = calloc((size_t)n * n, sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) v->cost[i * n + j] = (5 * i + 3 * j) % 11 + (double)i / n;
    for (int i = 0; i < n; i++) v->cost_order[i] = (7 * i + 3) % n;
    v->cost_total = 1;
    v->have_methods = 1;
    v->method_have[COST_GATE] = v->method_have[COST_EXPERT] = 1;
    memcpy(v->method_order[COST_EXPERT], v->cost_order, sizeof v->cost_order);
    for (int i = 0; i < n; i++) v->method_order[COST_GATE][i] = i;
    int id[LS_MAX_N];
    for (int i = 0; i < n; i++) id[i] = i;
    curve_of(&v->naive, n, id, 0.5);
    curve_of(&v->current, n, v->cost_order, 0.0305);
    memcpy(v->current_order, v->cost_order, sizeof v->cost_order);
    v->have_naive = v->have_current = 1;
    v->rows = calloc((size_t)nrows, sizeof(ls_row));
    v->orders = calloc((size_t)nrows * n, 1);
    v->norders_held = nrows;
    for (long r = 0; r < nrows; r++) {
        int p[LS_MAX_N];
        for (int i = 0; i < n; i++) p[i] = (int)((i + r) % n);
        set_row_order(v, r, p);
        v->rows[r].barrier = 0.01 + 0.001 * (double)((r * 37) % nrows);
        v->rows[r].acc_barrier = NAN;
        v->rows[r].auc = v->rows[r].barrier / 2;
    }
    v->norders = v->ndone = nrows;
    v->have_landscape = 1;
}

static void free_big(explore_snapshot *v) {
    free(v->naive.loss);
    free(v->current.loss);
    free(v->t);
    free(v->cost);
    free(v->rows);
    free(v->orders);
}

static int row_has(const grid *g, int y, const char *s) {
    char buf[8192];
    return strstr(grid_row_utf8(g, y, buf, sizeof buf), s) != NULL;
}

/* the column x of label s on row y, -1 if absent */
static int col_of(const grid *g, int y, const char *s) {
    char buf[8192];
    grid_row_utf8(g, y, buf, sizeof buf);
    const char *p = strstr(buf, s);
    if (!p) return -1;
    int col = 0;
    for (const char *q = buf; q < p;) {
        uint32_t cp;
        q += utf8_decode(q, &cp);
        col++;
    }
    return col;
}

/* Scrolling: the cursor moves, the view follows, the labels with it. */
static void test_scroll(void) {
    int n = NBIG;
    explore_snapshot v;
    big_view(&v, n, 10);
    grid g;
    grid_init(&g, 40, 12, 0); /* ASCII, monochrome: glyphs, 9 rows shown */
    ui_rect r = {0, 0, 40, 12};
    heat_view hv;
    memset(&hv, 0, sizeof hv);
    hv.focus = 1;
    heatmap_render(&g, &r, &v, &hv);
    CHECK(row_has(&g, 2, "A0 ") && !row_has(&g, 2 + 9, "A9 "), "first rows shown from A0");
    heatmap_move(&hv, n, n - 1, n - 1);
    grid_clear(&g);
    heatmap_render(&g, &r, &v, &hv);
    char want[16];
    snprintf(want, sizeof want, "A%d", n - 1);
    CHECK(hv.row == n - 1 && hv.col == n - 1, "cursor at the last cell (%d, %d)", hv.row, hv.col);
    CHECK(row_has(&g, 2 + 8, want) && !row_has(&g, 2, "A0 "), "the view followed to %s", want);
    snprintf(want, sizeof want, "B%d", n - 1);
    CHECK(col_of(&g, 1, want) >= 0, "column label %s shown", want);
    /* the readout names the cell and its cost */
    char val[64];
    snprintf(val, sizeof val, "A%d B%d %.4g", n - 1, n - 1, v.cost[n * n - 1]);
    CHECK(row_has(&g, 11, val), "readout '%s'", val);
    /* the cursor cell has the cursor's role, and only it among the cells */
    int cur = 0;
    for (int y = 2; y < 11; y++)
        for (int x = 4; x < 40; x++) cur += g.cells[y * 40 + x].role == ROLE_CURSOR;
    CHECK(cur >= 1 && cur <= 3, "one cursor cell (%d columns)", cur);
    /* [ ] moves the view and takes the cursor along */
    hv.row0 -= 3;
    hv.follow = 0;
    grid_clear(&g);
    heatmap_render(&g, &r, &v, &hv);
    CHECK(hv.row <= hv.row0 + 8, "the cursor stays in the scrolled view (row %d, view %d)", hv.row, hv.row0);
    grid_free(&g);
    free_big(&v);
}

/* the smallest block side at which ceil(n / b) rows fit h - 3 and columns w - label */
static int fit_expected(int n, int w, int h) {
    int label = 2 + (n - 1 >= 100 ? 3 : n - 1 >= 10 ? 2 : 1);
    for (int b = 1; b <= n; b++) {
        int u = (n + b - 1) / b;
        if (u <= h - 3 && u <= w - label) return b;
    }
    return n;
}

/* Zoom: levels 1, 2, 4, ... fit; block means and assigned blocks as summed here. */
static void test_zoom(void) {
    int n = NBIG;
    explore_snapshot v;
    big_view(&v, n, 10);
    static const int sz[][2] = {{40, 12}, {30, 8}, {60, 20}};
    for (int s = 0; s < 3; s++) {
        int w = sz[s][0], h = sz[s][1];
        int fit = heatmap_zoom_fit(n, w, h, 0, 0, 1), want = fit_expected(n, w, h);
        /* at zoom 1 glyph mode shows n rows when they fit: then fit is 1 */
        CHECK(fit == want || (fit == 1 && n <= h - 3), "%dx%d: fit %d, expected %d", w, h, fit, want);
        int z = 1, steps = 0;
        while (z < fit && steps < 20) {
            int nz = heatmap_zoom_step(z, fit, 1);
            CHECK(nz > z && (nz == fit || nz == 2 * z), "zoom out %d -> %d (fit %d)", z, nz, fit);
            z = nz;
            steps++;
        }
        CHECK(heatmap_zoom_step(fit, fit, 1) == fit && heatmap_zoom_step(1, fit, -1) == 1, "zoom stops at both ends");
        /* groups of 8 experts: a side dividing 8, or a multiple of it */
        int gfit = heatmap_zoom_fit(n, w, h, 0, 0, 8);
        CHECK(gfit >= fit && (8 % gfit == 0 || gfit % 8 == 0), "%dx%d: grouped fit %d (plain %d)", w, h, gfit, fit);
        if (fit > 1) CHECK(heatmap_zoom_step(fit, fit, -1) < fit, "zoom back in from the fit");
    }
    /* the whole matrix at the fit: every assigned block marked '@', the others
       the ramp glyph of their mean's level */
    int w = 40, h = 12, fit = heatmap_zoom_fit(n, w, h, 0, 0, 1);
    grid g;
    grid_init(&g, w, h, 0);
    ui_rect r = {0, 0, w, h};
    heat_view hv;
    memset(&hv, 0, sizeof hv);
    hv.zoom = fit;
    heatmap_render(&g, &r, &v, &hv);
    int b = fit, u = (n + b - 1) / b, label = 2 + (n - 1 >= 10 ? 2 : 1), cw = w - label >= 2 * u ? 2 : 1;
    /* the scale spans the block means */
    double lo = INFINITY, hi = -INFINITY;
    for (int bi = 0; bi < u; bi++)
        for (int bj = 0; bj < u; bj++) {
            double sum = 0;
            int cnt = 0;
            for (int i = bi * b; i < n && i < bi * b + b; i++)
                for (int j = bj * b; j < n && j < bj * b + b; j++) sum += v.cost[i * n + j], cnt++;
            lo = fmin(lo, sum / cnt), hi = fmax(hi, sum / cnt);
        }
    int bad = 0, marks = 0, want_marks = 0;
    for (int bi = 0; bi < u; bi++)
        for (int bj = 0; bj < u; bj++) {
            double sum = 0;
            int cnt = 0, assigned = 0;
            for (int i = bi * b; i < n && i < bi * b + b; i++) {
                for (int j = bj * b; j < n && j < bj * b + b; j++) sum += v.cost[i * n + j], cnt++;
                assigned |= v.cost_order[i] / b == bj;
            }
            uint32_t cp = g.cells[(2 + bi) * w + label + bj * cw].cp;
            uint32_t exp = assigned ? '@' : (uint32_t)".:-=+*#%"[heat_level(sum / cnt, lo, hi)];
            want_marks += assigned;
            marks += cp == '@';
            if (cp != exp && bad++ < 3) printf("  block (%d,%d): '%c' want '%c'\n", bi, bj, (int)cp, (int)exp);
        }
    CHECK(bad == 0 && marks == want_marks, "%d blocks of %d: means and marks (%d marks, %d expected)", u * u, b, marks,
          want_marks);
    char t[32];
    snprintf(t, sizeof t, "%dx%d block mean", b, b);
    CHECK(row_has(&g, 0, t) || row_has(&g, 0, "x mean"), "title says the statistic");
    /* colour + UTF-8: heat backgrounds under the blocks, diamonds for the assignment */
    grid_free(&g);
    grid_init(&g, w, h, 1);
    g.color = 1;
    heatmap_render(&g, &r, &v, &hv);
    int dia = 0, heat = 0;
    for (int y = 2; y < 2 + u; y++)
        for (int x = label; x < label + u * cw; x++) {
            dia += g.cells[y * w + x].cp == 0x25C6;
            heat += g.cells[y * w + x].bg_heat > 0;
        }
    CHECK(dia == want_marks * cw && heat == u * u * cw, "colour: %d diamond cells, %d on heat (want %d, %d)", dia, heat,
          want_marks * cw, u * u * cw);
    grid_free(&g);
    free_big(&v);
}

/* Wilson's 95% interval, written out here */
static void wilson95(double p, double N, double *lo, double *hi) {
    double z = 1.959963984540054, z2 = z * z;
    double c = (p + z2 / (2 * N)) / (1 + z2 / N);
    double d = z / (1 + z2 / N) * sqrt(p * (1 - p) / N + z2 / (4 * N * N));
    *lo = fmax(0, c - d);
    *hi = fmin(1, c + d);
}

/* The sampled table: says so, of how many, and the chosen order's percentile with its CI. */
static void test_sampled(void) {
    int n = NBIG;
    long nrows = 2000;
    explore_snapshot v;
    big_view(&v, n, nrows);
    sample_rank sr;
    CHECK(orders_sampled(&v) && orders_sample_rank(&v, &sr), "a sample with a rank");
    long less = 0;
    double tau = rank_tau(0.5);
    for (long k = 0; k < nrows; k++) less += v.rows[k].barrier < v.current.barrier - tau;
    double lo, hi;
    wilson95((double)less / nrows, nrows, &lo, &hi);
    CHECK(sr.less == less && less == 21, "orders below the chosen one: %ld (want %ld, 21)", sr.less, less);
    CHECK_CLOSE(sr.pct, 100.0 * less / nrows, 1e-12, "percentile");
    CHECK_CLOSE(sr.lo, 100 * lo, 1e-9, "CI low");
    CHECK_CLOSE(sr.hi, 100 * hi, 1e-9, "CI high");
    CHECK_CLOSE(sr.log10_total, lgamma(n + 1.0) / log(10.0), 1e-12, "log10 n!");
    grid g;
    grid_init(&g, 60, 24, 1);
    ui_rect r = {0, 0, 60, 24};
    orders_state s;
    orders_init(&s);
    orders_update(&s, &v);
    orders_render(&g, &r, &s, &v);
    char want[128];
    snprintf(want, sizeof want, "2000/2000 sampled of about 10^%d", (int)floor(lgamma(n + 1.0) / log(10.0)));
    CHECK(row_has(&g, 0, want), "title: %s", want);
    snprintf(want, sizeof want, "top %.3g%% (95%% CI %.3g-%.3g%%)", 100.0 * less / nrows, 100 * lo, 100 * hi);
    CHECK(grid_find(&g, want, NULL) >= 0, "CI line: %s", want);
    /* no accuracy: no acc.bar column; the orders abbreviated, the selected one in full */
    CHECK(grid_find(&g, "acc.bar", NULL) < 0 && grid_find(&g, "AUC", NULL) >= 0, "layer-only: barrier and AUC only");
    char full[LS_MAX_N * 4 + 8];
    int o0[LS_MAX_N];
    explore_row_order(&v, &v.rows[s.idx[0]], o0);
    moe_order_format(full, sizeof full, o0, n);
    char head[24];
    snprintf(head, sizeof head, "order %.*s", 12, full);
    CHECK(grid_find(&g, head, NULL) >= 0, "the selected order below the table (%s)", head);
    v.have_landscape = 0; /* the table filling in */
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    CHECK(!sr.final && grid_find(&g, "so far", NULL) >= 0, "the running estimate is labelled so");
    /* the worker's figures, once it has the rank (early: before the table), replace the running estimate */
    int m = v.req.method;
    double l10 = lgamma(n + 1.0) / log(10.0);
    v.rank[m] = 7;
    v.pct[m] = 0.3, v.pct_lo[m] = 0.1, v.pct_hi[m] = 0.7;
    v.rank_est[m] = 1 + 0.003 * pow(10.0, l10);
    v.nsampled = nrows;
    CHECK(orders_sample_rank(&v, &sr) && sr.final && sr.pct == 0.3 && sr.lo == 0.1 && sr.hi == 0.7 && sr.less == 6 &&
              sr.nrows == nrows,
          "the worker's figures: final %d pct %g lo %g hi %g less %ld", sr.final, sr.pct, sr.lo, sr.hi, sr.less);
    CHECK_CLOSE(sr.log10_est, log10(v.rank_est[m]), 1e-12, "log10 of the worker's rank estimate");
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    CHECK(grid_find(&g, "top 0.3% (95% CI 0.1-0.7%)", NULL) >= 0 && grid_find(&g, "filling", NULL) >= 0 &&
              grid_find(&g, "final", NULL) < 0,
          "the worker's figures shown, not called final before the table is");
    v.have_landscape = 1;
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    CHECK(grid_find(&g, "final", NULL) >= 0, "final once the table is complete");
    v.have_landscape = 0;
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    snprintf(want, sizeof want, "top %.3g%%", 100.0 * less / nrows);
    CHECK(grid_find(&g, want, NULL) < 0 && grid_find(&g, "so far", NULL) < 0,
          "the running estimate is gone (ranks early: the table still filling in)");
    /* an order in the worse half: the bottom share, its interval turned round,
       and an estimated rank that reads apart from the number of orders */
    v.pct[m] = 76.5, v.pct_lo[m] = 75.9, v.pct_hi[m] = 77.1;
    v.rank_est[m] = 1 + 0.765 * pow(10.0, l10);
    grid_free(&g);
    grid_init(&g, 100, 24, 1);
    r.w = 100;
    orders_render(&g, &r, &s, &v);
    char e[32], t[32];
    double le = l10 + log10(0.765);
    snprintf(e, sizeof e, "%.1fx10^%d", pow(10.0, le - floor(le)), (int)floor(le));
    snprintf(t, sizeof t, "%.1fx10^%d", pow(10.0, l10 - floor(l10)), (int)floor(l10));
    snprintf(want, sizeof want, "bottom 23.5%% (95%% CI 22.9-24.1%%), rank ~%s of %s", e, t);
    CHECK(grid_find(&g, want, NULL) >= 0 && grid_find(&g, "top 76", NULL) < 0, "worse half: %s", want);
    CHECK(strcmp(e, t) != 0, "the estimate (%s) reads apart from the set's size (%s)", e, t);
    v.have_landscape = 1;
    v.req.order_stage = 0;
    CHECK(!orders_sample_rank(&v, &sr), "order stage off: no rank, not even the worker's");
    v.req.order_stage = 1;
    v.rank[m] = 0;
    /* a group-limited router's set */
    v.groups = 4;
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    double wreath = 1;
    for (int k = 2; k <= n / 4; k++) wreath *= k;
    wreath = pow(wreath, 4) * 24;
    if (wreath < 1e9) snprintf(want, sizeof want, "(%d!)^4 4! = %.0f group-preserving orders", n / 4, wreath);
    else snprintf(want, sizeof want, "(%d!)^4 4! = about 10^%d group-preserving", n / 4, (int)floor(log10(wreath)));
    CHECK(grid_find(&g, want, NULL) >= 0, "group line: %s", want);
    orders_free(&s);
    grid_free(&g);
    free_big(&v);
}

/* 256 experts: 256! is past a double, the worker's rank estimate inf; the
 * log10 of the estimate comes from the share */
static void test_sampled_256(void) {
    explore_snapshot v;
    big_view(&v, 256, 100);
    int m = v.req.method;
    v.rank[m] = 2;
    v.pct[m] = 1, v.pct_lo[m] = 0.2, v.pct_hi[m] = 5;
    v.rank_est[m] = INFINITY;
    sample_rank sr;
    CHECK(orders_sample_rank(&v, &sr) && sr.final, "256: the worker's figures");
    CHECK_CLOSE(sr.log10_est, log10(0.01) + lgamma(257.0) / log(10.0), 1e-9, "256: log10 of the estimate");
    free_big(&v);
}

/* the swap view's deltas by the plain search: one ls_rows_find per swap */
static int swap_plain(const explore_snapshot *v, double *delta) {
    int n = v->n;
    for (int i = 0; i < n * n; i++) delta[i] = NAN;
    long kb = ls_rows_find(v->rows, v->ndone, v->orders, n, v->current_order);
    double base = kb >= 0 ? v->rows[kb].barrier : NAN;
    if (isnan(base)) return -1;
    for (int i = 0; i < n; i++) {
        delta[i * n + i] = 0;
        for (int j = i + 1; j < n; j++) {
            int o[LS_MAX_N];
            memcpy(o, v->current_order, sizeof(int) * (size_t)n);
            o[i] = v->current_order[j];
            o[j] = v->current_order[i];
            long k = ls_rows_find(v->rows, v->ndone, v->orders, n, o);
            delta[i * n + j] = delta[j * n + i] = (k >= 0 ? v->rows[k].barrier : NAN) - base;
        }
    }
    return 0;
}

static int same_deltas(const double *a, const double *b, int nn) {
    for (int i = 0; i < nn; i++)
        if (isnan(a[i]) != isnan(b[i]) || (!isnan(a[i]) && a[i] != b[i])) return 0;
    return 1;
}

/* n = 256: the swap view's one pass over the rows gives what a search per
 * swap gives, on rows holding swaps (some twice: the first counts), the
 * current order twice, 3-cycles, random orders and a NaN barrier */
static void test_swaps_256(void) {
    int n = 256;
    long nrows = 1500;
    explore_snapshot v;
    big_view(&v, n, nrows);
    unsigned st = 12345;
#define RND() (st = st * 1103515245u + 12345u, (st >> 8) % 0xFFFFFF)
    int *cur = v.current_order;
    for (int i = n - 1; i > 0; i--) { /* a shuffled current order */
        int j = (int)(RND() % (unsigned)(i + 1)), t = cur[i];
        cur[i] = cur[j], cur[j] = t;
    }
    for (long r = 0; r < nrows; r++) {
        int p[LS_MAX_N];
        memcpy(p, cur, sizeof(int) * (size_t)n);
        int kind = (int)(r % 5), i = (int)(RND() % (unsigned)n), j = (int)(RND() % (unsigned)n), k = (int)(RND() % (unsigned)n);
        if (kind <= 2 && i != j) { /* a swap; small indices repeat, so some swaps come twice */
            if (kind == 2) i %= 8, j = 8 + j % 8;
            int t = p[i];
            p[i] = p[j], p[j] = t;
        } else if (kind == 3 && i != j && j != k && i != k) { /* a 3-cycle: three slots differ */
            int t = p[i];
            p[i] = p[j], p[j] = p[k], p[k] = t;
        } else if (kind == 4) { /* a random order */
            for (int a = n - 1; a > 0; a--) {
                int b = (int)(RND() % (unsigned)(a + 1)), t = p[a];
                p[a] = p[b], p[b] = t;
            }
        }
        set_row_order(&v, r, p);
        v.rows[r].barrier = 0.01 + 0.001 * (double)(RND() % 1000);
    }
    v.rows[nrows / 3].barrier = NAN; /* a row without a barrier */
    double *d1 = malloc(sizeof(double) * (size_t)(n * n)), *d2 = malloc(sizeof(double) * (size_t)(n * n));
    int r1 = swap_deltas(&v, d1), r2 = swap_plain(&v, d2);
    long found = 0;
    for (int i = 0; i < n * n; i++) found += !isnan(d1[i]) && i % (n + 1);
    CHECK(r1 == r2 && same_deltas(d1, d2, n * n), "256: one pass = a search per swap (%d %d)", r1, r2);
    CHECK(found > 500 && found < n * (n - 1), "256: many swaps found, not all (%ld)", found);
    /* drawn: the slots that fit the pane, nothing past it */
    grid g;
    grid_init(&g, 120, 24, 1);
    ui_rect pane = {0, 0, 50, 20};
    swap_render(&g, &pane, &v);
    int outside = 0;
    for (int y = 0; y < g.h; y++)
        for (int x = 0; x < g.w; x++)
            if (x >= pane.w || y >= pane.h) outside += g.cells[y * g.w + x].cp != ' ';
    CHECK(outside == 0 && grid_find(&g, "s16", NULL) == 18, "256: the swaps stay in their pane (%d cells outside)", outside);
    grid_free(&g);
    /* the current order's row: present twice (the first counts), then missing */
    int first = -1;
    for (long r = 0; r < nrows && first < 0; r++)
        if (explore_row_is(&v, &v.rows[r], cur)) first = (int)r;
    CHECK(first >= 0, "the current order has rows");
    set_row_order(&v, nrows - 1, cur);
    v.rows[nrows - 1].barrier = 99;
    r1 = swap_deltas(&v, d1), r2 = swap_plain(&v, d2);
    CHECK(r1 == 0 && r2 == 0 && same_deltas(d1, d2, n * n), "256: a second row of the current order changes nothing");
    v.rows[first].barrier = NAN;
    r1 = swap_deltas(&v, d1), r2 = swap_plain(&v, d2);
    CHECK(r1 == -1 && r2 == -1 && same_deltas(d1, d2, n * n), "256: the current order's barrier NaN: no deltas");
    for (long r = 0; r < nrows; r++)
        if (explore_row_is(&v, &v.rows[r], cur)) set_row_order(&v, r, v.method_order[COST_GATE]);
    r1 = swap_deltas(&v, d1), r2 = swap_plain(&v, d2);
    CHECK(r1 == -1 && r2 == -1 && same_deltas(d1, d2, n * n), "256: no row of the current order: no deltas");
#undef RND
    free(d1);
    free(d2);
    free_big(&v);
}

static void test_abbrev(void) {
    int n = 16, p[16];
    char buf[256];
    for (int i = 0; i < n; i++) p[i] = i;
    order_abbrev(p, n, 20, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "identity"), "identity: %s", buf);
    p[3] = 7, p[7] = 3;
    order_abbrev(p, n, 20, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "id except 3 7"), "two slots: %s", buf);
    order_abbrev(p, n, 12, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "0 1 2 7 4 \u2026"), "narrow: the first entries: %s", buf);
    p[9] = 12, p[12] = 9;
    order_abbrev(p, n, 18, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "id except 3 7 9 12"), "four slots: %s", buf);
    order_abbrev(p, n, 17, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "id except 4 slots"), "the count when the slots do not fit: %s", buf);
    for (int i = 0; i < n; i++) p[i] = (5 * i + 1) % n;
    order_abbrev(p, n, 12, 0, buf, sizeof buf);
    CHECK(!strcmp(buf, "1 6 11 0 ..."), "prefix, ASCII, 12 columns: '%s'", buf);
    order_abbrev(p, n, 12, 1, buf, sizeof buf);
    CHECK(!strcmp(buf, "1 6 11 0 5 \u2026"), "prefix, UTF-8, 12 columns: '%s'", buf);
    order_abbrev(p, n, 100, 0, buf, sizeof buf);
    CHECK(!strncmp(buf, "1 6 11 0 5 10 15", 16) && !strchr(buf, '.'), "whole when it fits: %s", buf);
}

static ui_info big_info(int n, const char *family) {
    ui_info in;
    memset(&in, 0, sizeof in);
    strcpy(in.a_name, "A");
    strcpy(in.b_name, "B");
    strcpy(in.e_name, "eval.safetensors");
    strcpy(in.layer, "model.layers.3.mlp");
    in.cfg = (moe_config){.n = n, .d = 2048, .h = 1024, .k = 8, .router = ROUTER_TOPK, .act = ACT_SILU_GLU};
    snprintf(in.cfg.family, sizeof in.cfg.family, "%s", family);
    in.N = 512;
    return in;
}

/* The title names the family and the router, groups too, at 80 columns. */
static void test_title(void) {
    explore_snapshot v;
    big_view(&v, NBIG, 10);
    for (int w = 80; w <= 160; w += 80) {
        ui_info in = big_info(NBIG, "olmoe");
        app_state a;
        app_init(&a, &in, 5);
        grid g;
        grid_init(&g, w, 24, 1);
        app_render(&a, &v, &g);
        char want[96];
        snprintf(want, sizeof want, " olmoe n=%d d=2048 h=1024 %ssoftmax top-8", NBIG, w > 80 ? "router " : "");
        CHECK(row_has(&g, 1, want), "%d columns: '%s'", w, want);
        CHECK(row_has(&g, 0, w > 80 ? "layer model.layers.3.mlp" : "layer "), "%d columns: the layer", w);
        app_free(&a);
        in = big_info(NBIG, "deepseek_v3");
        in.cfg.score = SCORE_SIGMOID;
        in.cfg.n_group = 8;
        in.cfg.topk_group = 4;
        app_init(&a, &in, 5);
        grid_clear(&g);
        app_render(&a, &v, &g);
        CHECK(row_has(&g, 1, w > 80 ? "sigmoid top-8, 8 groups top 4" : "sigmoid top-8, 8 groups"),
              "%d columns: the groups", w);
        CHECK(row_has(&g, 1, "deepseek_v3 n="), "%d columns: the family", w);
        app_free(&a);
        grid_free(&g);
    }
    free_big(&v);
}

/* Tab gives the arrows to the matrix, z / Z zoom, l lists the layers. */
static void test_keys_large(void) {
    explore_snapshot v;
    big_view(&v, NBIG, 10);
    ui_info in = big_info(NBIG, "olmoe");
    app_state a;
    app_init(&a, &in, 5);
    grid g;
    grid_init(&g, 80, 24, 0);
    app_render(&a, &v, &g);
    long cur0 = a.orders.cursor;
    app_key(&a, '\t', &v);
    CHECK(a.heat.focus, "Tab: the matrix has the arrows");
    app_key(&a, K_DOWN, &v);
    app_key(&a, K_RIGHT, &v);
    app_key(&a, K_RIGHT, &v);
    CHECK(a.heat.row == 1 && a.heat.col == 2 && a.orders.cursor == cur0, "arrows moved the matrix cursor only");
    app_render(&a, &v, &g);
    int fit = a.heat_fit;
    app_key(&a, 'z', &v);
    CHECK(a.heat.zoom == heatmap_zoom_step(1, fit, 1), "z: zoom %d (fit %d)", a.heat.zoom, fit);
    for (int i = 0; i < 12; i++) app_key(&a, 'z', &v);
    CHECK(a.heat.zoom == fit, "z stops at the whole matrix (%d)", a.heat.zoom);
    app_render(&a, &v, &g);
    CHECK(fit == 1 || grid_find(&g, "mean", NULL) >= 0, "zoomed title");
    for (int i = 0; i < 12; i++) app_key(&a, 'Z', &v);
    CHECK(a.heat.zoom <= 1, "Z back to every cell");
    app_key(&a, K_ESC, &v);
    CHECK(!a.heat.focus, "Esc: the arrows back to the orders");
    /* a click on the map puts the cursor on the cell drawn there */
    app_render(&a, &v, &g);
    const ui_rect *hr = &a.layout.heat;
    int cx = hr->x + 12, cy = hr->y + 5;
    uint32_t drawn = g.cells[cy * g.w + cx].cp;
    CHECK(app_mouse(&a, cx, cy, 1, &v) == FX_REDRAW && a.heat.focus, "click: the matrix has the arrows");
    {
        int i = a.heat.row, j = a.heat.col, n = NBIG;
        double lo = INFINITY, hi = -INFINITY;
        for (int k = 0; k < n * n; k++) lo = fmin(lo, v.cost[k]), hi = fmax(hi, v.cost[k]);
        uint32_t want = v.cost_order[i] == j ? '@' : (uint32_t)".:-=+*#%"[heat_level(v.cost[i * n + j], lo, hi)];
        CHECK(drawn == want, "clicked cell (%d, %d): drawn '%c', its cost gives '%c'", i, j, (int)drawn, (int)want);
    }
    app_key(&a, '\t', &v);
    int row_before = a.heat.row;
    app_key(&a, K_DOWN, &v);
    CHECK(a.heat.row == row_before && !a.heat.focus, "Tab again: the arrows move the orders, the matrix cursor stays");
    /* Enter and P name a 64-expert order abbreviated, never cut mid-number */
    app_key(&a, K_ENTER, &v);
    CHECK(!strncmp(a.msg, "plotting order ", 15) && strlen(a.msg) <= 15 + 48 &&
              (NBIG <= 16 || strstr(a.msg, "...") || strstr(a.msg, "id except")),
          "plotting message abbreviated: %s", a.msg);
    curve_of(&v.selected, NBIG, v.cost_order, 0.2);
    v.have_selected = 1;
    app_key(&a, 'P', &v);
    CHECK(a.pins.n == 1 && strstr(a.msg, " as 1 (weight matching on)") && strlen(a.msg) < 90, "pin message: %s", a.msg);
    app_render(&a, &v, &g);
    CHECK(grid_find(&g, "1 [", NULL) > a.layout.curves.y, "the pin in the legend");
    app_key(&a, 'U', &v);
    free(v.selected.loss);
    v.have_selected = 0;
    /* layers: one says so; two open the list, Enter on the other asks to switch */
    char **one = malloc(sizeof(char *));
    one[0] = strdup("model.layers.0.mlp");
    app_set_layers(&a, one, 1, 0);
    CHECK(app_key(&a, 'l', &v) == FX_REDRAW && !a.layers.open && strstr(a.msg, "one MoE layer"), "one layer: %s", a.msg);
    char **two = malloc(2 * sizeof(char *));
    two[0] = strdup("model.layers.0.mlp");
    two[1] = strdup("model.layers.1.mlp");
    app_set_layers(&a, two, 2, 0);
    snprintf(a.info.eval_layer, sizeof a.info.eval_layer, "model.layers.0.mlp");
    app_key(&a, 'l', &v);
    app_render(&a, &v, &g);
    CHECK(a.layers.open && grid_find(&g, "model.layers.1.mlp", NULL) >= 0 && grid_find(&g, "(shown)  [eval set]", NULL) >= 0,
          "the list shows both, the current one and the set's marked");
    CHECK(app_key(&a, K_ENTER, &v) == FX_REDRAW && !a.layers.open, "Enter on the shown layer: nothing to do");
    app_key(&a, 'l', &v);
    app_key(&a, 'j', &v);
    CHECK(app_key(&a, K_ENTER, &v) == FX_LAYER && a.layers.cursor == 1, "Enter on the other: switch");
    /* the load runs off the UI thread (tui.c): its progress in the status's place and in the list */
    app_set_loading(&a, 1, 0.5, "load model-00002-of-00002.safetensors");
    CHECK(!strcmp(a.load_status, "loading layer model.layers.1.mlp... 50% (model-00002-of-00002.safetensors)"),
          "loading status: %s", a.load_status);
    app_message(&a, 0, "%s", "");
    snprintf(v.status, sizeof v.status, "computing landscape 3/10");
    v.busy = 1;
    grid_clear(&g);
    app_render(&a, &v, &g);
    CHECK(grid_find(&g, "loading layer model.layers.1.mlp... 50%", NULL) == g.h - 1 &&
              grid_find(&g, "computing landscape", NULL) < 0,
          "the status line shows the load, not the old layer's worker");
    app_key(&a, 'l', &v);
    app_render(&a, &v, &g);
    CHECK(a.layers.cursor == 0 && grid_find(&g, "model.layers.1.mlp  (loading 50%)", NULL) >= 0,
          "the list marks the loading layer");
    app_key(&a, 'j', &v);
    CHECK(app_key(&a, K_ENTER, &v) == FX_REDRAW && strstr(a.msg, "is loading already (50%)"),
          "Enter on the loading layer: said so (%s)", a.msg);
    app_key(&a, 'l', &v);
    CHECK(app_key(&a, K_ENTER, &v) == FX_LAYER && a.layers.cursor == 0,
          "Enter on the shown layer while another loads: FX_LAYER (tui.c cancels the load)");
    app_set_loading(&a, -1, 0, NULL);
    CHECK(!a.load_status[0] && a.layers.loading == -1, "no load: no status");
    app_key(&a, 'l', &v);
    CHECK(app_key(&a, K_ENTER, &v) == FX_REDRAW, "no load: Enter on the shown layer does nothing");
    v.status[0] = 0;
    v.busy = 0;
    app_set_loading(&a, 1, 0.25, "");
    app_switched(&a, "model.layers.1.mlp", &in.cfg, 1, "eval.safetensors was captured at layer 0, not this one");
    CHECK(a.layers.current == 1 && !a.heat.focus && a.heat.row == 0 && a.msg_error, "switched: the view afresh");
    CHECK(a.layers.loading == -1 && !a.load_status[0], "switched: the load is over");
    grid_clear(&g);
    app_render(&a, &v, &g);
    CHECK(grid_find(&g, "no eval set for this layer", NULL) == 1 && grid_find(&g, "no landscape for this layer", NULL) > 1,
          "data-free: the title and the panes say so");
    app_free(&a);
    grid_free(&g);
    free_big(&v);
}

/* A sample without the expert method's order: that order is a row all the
 * same (explore_snapshot.nextra), ranked and marked with the sample's rows,
 * the best when lowest, and the line under the table says how it was found. */
static void test_beside_sample(void) {
    int n = NBIG;
    long nrows = 200;
    explore_snapshot v;
    big_view(&v, n, nrows);
    v.nsampled = nrows;
    v.orders = realloc(v.orders, (size_t)(nrows + 1) * n);
    v.rows = realloc(v.rows, (size_t)(nrows + 1) * sizeof(ls_row));
    long k = ls_rows_find(v.rows, nrows, v.orders, n, v.method_order[COST_EXPERT]);
    CHECK(k < 0, "the sample lacks the expert method's order");
    set_row_order(&v, nrows, v.method_order[COST_EXPERT]);
    v.rows[nrows].barrier = 0.005; /* below every sampled row (>= 0.01) */
    v.rows[nrows].acc_barrier = v.rows[nrows].auc = v.rows[nrows].bar_lo = v.rows[nrows].bar_hi = NAN;
    v.nextra = 1;
    orders_state s;
    orders_init(&s);
    orders_update(&s, &v);
    CHECK(s.nidx == nrows + 1 && s.best_row == nrows && s.rank[nrows] == 1,
          "the order beside the sample is a row, ranked first: %ld rows, best %ld", s.nidx, s.best_row);
    grid g;
    grid_init(&g, 160, 24, 1);
    ui_rect r = {0, 0, 160, 24};
    orders_render(&g, &r, &s, &v);
    CHECK(row_has(&g, 3, "* E") && row_has(&g, 3, "0.0050"), "its row first, marked best * and E");
    CHECK(grid_find(&g, "beside the sample (rows, not drawn into it): E expert", NULL) > 3 &&
              grid_find(&g, "best found 0.0050 (the expert method)", NULL) > 3,
          "the line under the table: beside the sample, the best found and how");
    /* the scatter: every row a point, the one beside the sample too (its mark found), the
     * best row beside the sample inside the points drawn (ASan: no read past them) */
    grid_clear(&g);
    scatter_render(&g, &r, &v, s.best_row);
    CHECK(grid_find(&g, "200 sampled orders + 1 beside", NULL) == 0, "the scatter's title counts both");
    /* the swaps of the current order (the expert method's, beside the sample) */
    double *d = malloc((size_t)n * n * sizeof(double));
    memcpy(v.current_order, v.method_order[COST_EXPERT], sizeof v.current_order);
    CHECK(swap_deltas(&v, d) == 0, "the swaps: the current order's row is the one beside the sample");
    free(d);
    /* the exported table: said to be a sample, each row with how it was found */
    char dir[] = "/tmp/moescope-beside-XXXXXX", csv[64];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    ms_err err;
    v.orders_in_set_log10 = orders_total_log10(n, 0);
    v.orders_in_set = pow(10.0, v.orders_in_set_log10);
    CHECK(state_write(&v, NULL, "a.safetensors", "b.safetensors", csv, &err) == 0, "state_write: %s", err.msg);
    FILE *fp = fopen(csv, "r");
    char line[4096];
    int said = 0, header = 0, rows = 0, first_beside = 0, sampled = 0;
    while (fp && fgets(line, sizeof line, fp)) {
        if (!strncmp(line, "# orders: a uniform sample of 200 of about 10^", 46) && strstr(line, "and 1 evaluated beside it"))
            said = 1;
        if (line[0] == '#') continue;
        if (!header) {
            header = !strcmp(line, "rank,order,barrier,acc_barrier,loss_auc,tied,tie_class,barrier_ci95_lo,"
                                   "barrier_ci95_hi,found\n");
            continue;
        }
        rows++;
        if (rows == 1) first_beside = !strncmp(line, "1,", 2) && strstr(line, ",the expert method\n") != NULL;
        sampled += strstr(line, ",sampled\n") != NULL;
    }
    if (fp) fclose(fp);
    remove(csv);
    rmdir(dir);
    CHECK(said && header, "the CSV says it is a sample, with a column found");
    CHECK(rows == nrows + 1 && sampled == nrows && first_beside,
          "the CSV: the 200 sampled rows and, first, the expert method's beside them (%d rows, %d sampled)", rows, sampled);
    v.rows[nrows].barrier = 0.5; /* now above the sample's best */
    v.rows_epoch++;
    orders_update(&s, &v);
    grid_clear(&g);
    orders_render(&g, &r, &s, &v);
    CHECK(s.best_row != nrows && grid_find(&g, "best found 0.0100 (sampled)", NULL) > 3,
          "a sampled order the best: said so");
    v.nextra = 0;
    orders_update(&s, &v);
    CHECK(s.nidx == nrows, "no rows beside the sample: the sample's alone");
    orders_free(&s);
    grid_free(&g);
    free_big(&v);
}

int main(void) {
    test_scroll();
    test_zoom();
    test_sampled();
    test_beside_sample();
    test_sampled_256();
    test_swaps_256();
    test_abbrev();
    test_title();
    test_keys_large();
    return test_summary("test_ui_large");
}
