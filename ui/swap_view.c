/* swap_view.c - see swap_view.h. */
#include "swap_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "theme.h"

/* One pass over the rows instead of a search per swap (n = 256: 32640
 * searches of the whole table on every frame): a row whose order differs from
 * the current one in exactly two slots i < j is the (i, j) swap (two
 * permutations that differ in two slots hold each other's entries there).
 * The first row of an order counts, as a search from the top would find it. */
int swap_deltas(const explore_snapshot *v, double *delta) {
    int n = v->n;
    for (int i = 0; i < n * n; i++) delta[i] = NAN;
    if (!v->rows || !v->orders) return -1;
    const int *cur = v->current_order;
    long base_k = -1;
    long nr = v->ndone + v->nextra; /* a sample's rows and those beside it (the methods' orders) */
    for (long k = 0; k < nr && base_k < 0; k++)
        if (ls_order_is(v->orders, n, v->rows[k].id, cur)) base_k = k;
    if (base_k < 0) return -1;
    double base = v->rows[base_k].barrier;
    if (isnan(base)) return -1;
    uint8_t *seen = ms_calloc((size_t)n * (size_t)n, 1); // (n, n): the swap's first row is in
    for (long k = 0; k < nr; k++) {
        const uint8_t *o = v->orders + (size_t)v->rows[k].id * (size_t)n;
        int d[3], nd = 0;
        for (int s = 0; s < n && nd < 3; s++)
            if (o[s] != cur[s]) d[nd++] = s;
        if (nd != 2 || o[d[0]] != cur[d[1]] || o[d[1]] != cur[d[0]]) continue;
        if (seen[d[0] * n + d[1]]++) continue;
        delta[d[0] * n + d[1]] = delta[d[1] * n + d[0]] = v->rows[k].barrier - base;
    }
    free(seen);
    for (int i = 0; i < n; i++) delta[i * n + i] = 0;
    return 0;
}

/* below the matrix: the best swap, and the slot whose swaps help most */
static void swap_summary(grid *g, const ui_rect *r, int y, const double *d, int n) {
    int bi = -1, bj = -1, worst = -1;
    double best = 0, wsum = 0;
    for (int i = 0; i < n; i++) {
        double s = 0;
        for (int j = 0; j < n; j++) {
            double x = d[i * n + j];
            if (isnan(x) || i == j) continue;
            if (j > i && x < best) best = x, bi = i, bj = j;
            if (x < 0) s += x;
        }
        if (s < wsum) wsum = s, worst = i;
    }
    if (y >= r->y + r->h) return;
    char s[128];
    if (bi < 0) snprintf(s, sizeof s, "no swap lowers the barrier");
    else snprintf(s, sizeof s, "best swap: slots %d,%d %+.3g; slot %d most to blame", bi, bj, best, worst);
    if (bi >= 0 && (int)strlen(s) > r->w - 1) snprintf(s, sizeof s, "best %d<->%d %+.3g; blame s%d", bi, bj, best, worst);
    grid_text(g, r->x + 1, y, r->w - 1, bi < 0 ? ROLE_DIM : ROLE_MESSAGE, s);
}

void swap_render(grid *g, const ui_rect *r, const explore_snapshot *v) {
    if (r->w <= 0 || r->h <= 0) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    const char *t1 = "barrier change when slots i, j swap (b: costs)", *t2 = "swap i,j: barrier change (b)";
    grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, (int)strlen(t1) < r->w ? t1 : t2);
    int n = v ? v->n : 0;
    double *d = n ? malloc(sizeof(double) * (size_t)(n * n)) : NULL; // (n, n)
    if (!d || swap_deltas(v, d)) {
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "waiting for the current order's row...");
        free(d);
        return;
    }
    double lo = 0, hi = 0;
    for (int i = 0; i < n * n; i++)
        if (!isnan(d[i])) lo = fmin(lo, d[i]), hi = fmax(hi, d[i]);
    /* numbers (7 wide) when they fit, else one sign or shade a cell */
    int cw = (r->w - 3) / n >= 8 ? 8 : (r->w - 3) / n >= 7 ? 7 : 2;
    int rows = r->h - 3 < n ? r->h - 3 : n;
    /* 64 or 256 slots: the columns that fit (the summary below covers all) */
    int cols = (r->w - 3) / cw < n ? (r->w - 3) / cw : n;
    for (int j = 0; j < cols; j++) grid_printf(g, r->x + 3 + j * cw, r->y + 1, cw, ROLE_DIM, "%*d", cw - 1, j);
    for (int i = 0; i < rows; i++) {
        int y = r->y + 2 + i;
        grid_printf(g, r->x, y, 3, ROLE_DIM, "s%d", i);
        for (int j = 0; j < cols; j++) {
            double x = d[i * n + j];
            int cx = r->x + 3 + j * cw;
            char b[32];
            if (i == j) snprintf(b, sizeof b, "%s", "\u00b7");
            else if (isnan(x)) snprintf(b, sizeof b, "?");
            else if (cw >= 7) axis_format(x, 3, cw - 1, b, sizeof b);
            else snprintf(b, sizeof b, "%c", x < 0 ? '-' : x > 0 ? '+' : '0');
            if (cw >= 7 && i != j && !isnan(x) && x > 0) { /* the sign makes - and + read alike */
                char t[40];
                snprintf(t, sizeof t, "+%s", b);
                if ((int)strlen(t) <= cw - 1) memcpy(b, t, strlen(t) + 1);
            }
            int role = !isnan(x) && x < 0 ? ROLE_MARK : ROLE_NORMAL;
            grid_printf(g, cx, y, cw, role, "%*s", cw - 1, b);
            if (g->color && !isnan(x) && i != j)
                for (int k = 0; k < cw - 1; k++) grid_heat(g, cx + k, y, -1, heat_step(x, lo, hi));
        }
    }
    swap_summary(g, r, r->y + 2 + rows, d, n);
    free(d);
}
