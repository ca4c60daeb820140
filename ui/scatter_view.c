/* scatter_view.c - see scatter_view.h. */
#include "scatter_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "orders_view.h"
#include "align/cost_matrix.h"
#include "landscape/rank.h"
#include "orders_view.h"

/* braille dot bit for (dx 0..1, dy 0..3) inside a cell */
static const uint8_t dot_bit[4][2] = {{0x01, 0x08}, {0x02, 0x10}, {0x04, 0x20}, {0x40, 0x80}};

int scatter_cell(const scatter_geom *G, double x, double y, int *cx, int *cy) {
    if (!isfinite(x) || !isfinite(y)) return -1;
    int W = G->pw * G->sub_x, H = G->ph * G->sub_y;
    double sx = G->xhi > G->xlo ? G->xhi - G->xlo : 1, sy = G->yhi > G->ylo ? G->yhi - G->ylo : 1;
    int X = (int)lround((x - G->xlo) / sx * (W - 1)), Y = (int)lround((G->yhi - y) / sy * (H - 1));
    if (X < 0 || Y < 0 || X >= W || Y >= H) return -1;
    *cx = X;
    *cy = Y;
    return 0;
}

/* the range of vals padded by 5% (a point on the frame is hard to see) */
static void padded_range(const double *vals, long n, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (long k = 0; k < n; k++)
        if (isfinite(vals[k])) *lo = fmin(*lo, vals[k]), *hi = fmax(*hi, vals[k]);
    if (!isfinite(*lo)) *lo = *hi = 0;
    double pad = (*hi - *lo) * 0.05;
    if (pad <= 0) pad = fabs(*hi) * 0.05 + 1e-6;
    *lo -= pad;
    *hi += pad;
}

/* among every row: the sample's and those beside it (explore_snapshot.nextra) */
static long find_order(const explore_snapshot *v, const int *order) {
    return ls_rows_find(v->rows, v->ndone + v->nextra, v->orders, v->n, order);
}

/* A mark's letter at its point; a cell another mark took passes it to the right. */
static void put_mark(grid *g, const scatter_geom *G, const double *x, const double *y, long k, char letter) {
    int X, Y;
    if (k < 0 || scatter_cell(G, x[k], y[k], &X, &Y)) return;
    int cx = G->px + X / G->sub_x, cy = G->py + Y / G->sub_y;
    for (int tries = 0; tries < 4; tries++, cx++) {
        grid_cell *c = grid_at(g, cx, cy);
        if (!c || cx >= G->px + G->pw) return;
        if (c->role != ROLE_MARK) break;
    }
    grid_put(g, cx, cy, (uint32_t)letter, ROLE_MARK);
}

/* The points and the marks. x, y: (nr) cost and barrier of each row. */
static void draw_points(grid *g, const scatter_geom *G, const explore_snapshot *v, const double *x,
                        const double *y, long nr, long best_row) {
    uint8_t *bits = ms_calloc((size_t)(G->pw * G->ph), 1); // (ph, pw)
    for (long k = 0; k < nr; k++) {
        int X, Y;
        if (scatter_cell(G, x[k], y[k], &X, &Y)) continue;
        int ci = (Y / G->sub_y) * G->pw + X / G->sub_x;
        bits[ci] |= G->sub_x == 2 ? dot_bit[Y % 4][X % 2] : 1;
    }
    for (int j = 0; j < G->ph; j++)
        for (int i = 0; i < G->pw; i++) {
            uint8_t b = bits[j * G->pw + i];
            if (b) grid_put(g, G->px + i, G->py + j, G->sub_x == 2 ? 0x2800u + b : '.', ROLE_CURVE_NAIVE);
        }
    free(bits);
    /* the identity and the best first: the chosen orders' letters win a shared cell */
    int id[LS_MAX_N];
    for (int i = 0; i < v->n; i++) id[i] = i;
    put_mark(g, G, x, y, find_order(v, id), 'I');
    put_mark(g, G, x, y, best_row, '*');
    if (v->have_selected) put_mark(g, G, x, y, find_order(v, v->selected.order), '>');
    if (v->have_methods) {
        for (int m = 0; m < COST_NMETHODS; m++)
            if (v->method_have[m]) put_mark(g, G, x, y, find_order(v, v->method_order[m]), cost_methods[m].mark);
    }
}

void scatter_render(grid *g, const ui_rect *r, const explore_snapshot *v, long best_row) {
    if (r->w < 20 || r->h < 6) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    const char *m = v ? cost_method_name(v->req.method) : "expert";
    // every row is a point, those beside a sample too (the methods' orders); rho is the sample's
    long nr = v && v->cost ? v->ndone + v->nextra : 0, ns = v && v->cost ? v->ndone : 0;
    if (nr < 2) {
        grid_printf(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "scatter: %s cost against barrier (v: curves)", m);
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "waiting for the landscape's orders...");
        return;
    }
    double *x = ms_malloc((size_t)nr * 2 * sizeof(double)); // (2, nr): cost, barrier
    double *y = x + nr;
    for (long k = 0; k < nr; k++) {
        x[k] = v->orders ? ls_order_cost(v->cost, v->orders, v->n, v->rows[k].id) : NAN;
        y[k] = v->rows[k].barrier;
    }
    char title[200];
    double rho = rank_spearman(x, y, ns);
    char cnt[96];
    if (orders_sampled(v) && v->nextra > 0) snprintf(cnt, sizeof cnt, "%ld sampled orders + %ld beside", ns, v->nextra);
    else snprintf(cnt, sizeof cnt, "%s%ld orders", orders_sampled(v) ? "sampled " : "", ns);
    snprintf(title, sizeof title, "scatter: %s cost against barrier, %s%s, Spearman rho %.3f (v: curves)", m,
             v->have_landscape ? "" : "so far ", cnt, rho);
    if ((int)strlen(title) > r->w - 1)
        snprintf(title, sizeof title, "scatter: %s cost vs barrier, %s, rho %.3f (v: curves)", m, cnt, rho);
    if ((int)strlen(title) > r->w - 1) snprintf(title, sizeof title, "%s cost vs barrier  rho %.3f (v)", m, rho);
    grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, title);
    /* y labels | axis | plot; below: the x axis with its ends, the marks' key */
    int lw = 8;
    scatter_geom G = {.px = r->x + lw + 1, .py = r->y + 1, .pw = r->w - lw - 2, .ph = r->h - 4,
                      .sub_x = g->utf8 ? 2 : 1, .sub_y = g->utf8 ? 4 : 1};
    padded_range(x, nr, &G.xlo, &G.xhi);
    padded_range(y, nr, &G.ylo, &G.yhi);
    axis_y(g, r->x, lw, G.px, G.py, G.ph, G.ylo, G.yhi, G.sub_y, "barrier");
    int ay = G.py + G.ph;
    grid_put(g, G.px - 1, ay, g->utf8 ? 0x2514 : '+', ROLE_BORDER);
    for (int i = 0; i < G.pw; i++) grid_put(g, G.px + i, ay, g->utf8 ? 0x2500 : '-', ROLE_BORDER);
    /* round x ticks under the axis, one precision */
    double tick[8];
    int dec = 0, nt = axis_nice_ticks(G.xlo, G.xhi, G.pw >= 40 ? 4 : 2, tick, &dec), last_end = -1;
    for (int k = 0; k < nt; k++) {
        int X, Y;
        if (scatter_cell(&G, tick[k], G.ylo, &X, &Y)) continue;
        char lab[32];
        axis_format(tick[k], dec, 9, lab, sizeof lab);
        int cx = G.px + X / G.sub_x - (int)strlen(lab) / 2;
        if (cx <= last_end || cx + (int)strlen(lab) > r->x + r->w) continue;
        grid_put(g, G.px + X / G.sub_x, ay, g->utf8 ? 0x252C : '+', ROLE_BORDER);
        last_end = cx + grid_text(g, cx, ay + 1, r->x + r->w - cx, ROLE_DIM, lab);
    }
    /* the key, shorter where it would be cut */
    const char *dot = g->utf8 ? "\u28FF " : ". ";
    char key[300], lg[200];
    int kw = r->w - 1 + (g->utf8 ? 2 : 0); // the dot's bytes beyond its one column
    int head = snprintf(key, sizeof key, "%s%s cost sum_i C[i][pi(i)]  ", dot, m);
    orders_marks_legend(lg, sizeof lg, kw - head, " ", NULL);
    snprintf(key + head, sizeof key - (size_t)head, "%s", lg);
    if ((int)strlen(key) - (g->utf8 ? 2 : 0) > r->w - 1) {
        head = snprintf(key, sizeof key, "%sorders  ", dot);
        orders_marks_legend(lg, sizeof lg, kw - head, " ", NULL);
        snprintf(key + head, sizeof key - (size_t)head, "%s", lg);
    }
    if ((int)strlen(key) - (g->utf8 ? 2 : 0) > r->w - 1) snprintf(key, sizeof key, "%sorders; marks as in the table", dot);
    grid_text(g, r->x + 1, ay + 2, r->w - 1, ROLE_DIM, key);
    draw_points(g, &G, v, x, y, nr, best_row);
    free(x);
}
