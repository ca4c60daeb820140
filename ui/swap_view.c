/* swap_view.c - see swap_view.h. */
#include "swap_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "axis.h"
#include "theme.h"

static double row_barrier(const explore_snapshot *v, const int *order) {
    long k = ls_rows_find(v->rows, v->ndone, v->orders, v->n, order);
    return k >= 0 ? v->rows[k].barrier : NAN;
}

int swap_deltas(const explore_snapshot *v, double *delta) {
    int n = v->n;
    double base = row_barrier(v, v->current_order);
    for (int i = 0; i < n * n; i++) delta[i] = NAN;
    if (isnan(base)) return -1;
    for (int i = 0; i < n; i++) {
        delta[i * n + i] = 0;
        for (int j = i + 1; j < n; j++) {
            int o[LS_MAX_N];
            memcpy(o, v->current_order, sizeof(int) * (size_t)n);
            o[i] = v->current_order[j];
            o[j] = v->current_order[i];
            delta[i * n + j] = delta[j * n + i] = row_barrier(v, o) - base;
        }
    }
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
    for (int j = 0; j < n; j++) grid_printf(g, r->x + 3 + j * cw, r->y + 1, cw, ROLE_DIM, "%*d", cw - 1, j);
    for (int i = 0; i < rows; i++) {
        int y = r->y + 2 + i;
        grid_printf(g, r->x, y, 3, ROLE_DIM, "s%d", i);
        for (int j = 0; j < n; j++) {
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
