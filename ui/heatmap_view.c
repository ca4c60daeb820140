/* heatmap_view.c - see heatmap_view.h. */
#include "heatmap_view.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int heat_level(double x, double lo, double hi) {
    if (!(hi > lo)) return 0;
    int l = (int)floor((x - lo) / (hi - lo) * HEAT_LEVELS);
    if (l < 0) l = 0;
    if (l >= HEAT_LEVELS) l = HEAT_LEVELS - 1;
    return l;
}

/* shade glyphs carry the level when numbers do not fit (and in monochrome) */
static uint32_t shade(const grid *g, int level) {
    static const uint32_t u[HEAT_LEVELS] = {0x00B7, 0x2591, 0x2591, 0x2592, 0x2592, 0x2593, 0x2593, 0x2588};
    static const char a[HEAT_LEVELS + 1] = ".:-=+*#%";
    return g->utf8 ? u[level] : (uint32_t)a[level];
}

void heatmap_render(grid *g, const ui_rect *r, const engine_view *v, int *off) {
    if (r->w <= 0 || r->h <= 0) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    if (!v || !v->cost) {
        grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "cost matrix");
        grid_text(g, r->x + 1, r->y + 2, r->w - 1, ROLE_DIM, "computing...");
        return;
    }
    const engine_request *q = &v->req;
    grid_printf(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, "cost: %s  gate centring %s  total %.4g",
                cost_method_name(q->method), q->center ? "on" : "off", v->cost_total);
    int n = v->n;
    // C is (n, n): C[i*n+j] cost of B's expert j in A's slot i
    const double *C = v->cost;
    double lo = C[0], hi = C[0];
    for (int i = 0; i < n * n; i++) {
        if (C[i] < lo) lo = C[i];
        if (C[i] > hi) hi = C[i];
    }
    int label_w = n > 10 ? 4 : 3;
    int avail_w = r->w - label_w;
    int rows_fit = r->h - 3; /* title, column header, legend */
    if (rows_fit < 1) return;
    /* numbers when 7 columns per cell fit, else shaded 2-column cells */
    int cw = avail_w / n;
    if (cw > 9) cw = 9;
    int numbers = cw >= 7;
    if (!numbers) cw = avail_w / n >= 3 ? 3 : 2;
    int cols_fit = avail_w / cw;
    int shown = n;
    if (shown > rows_fit) shown = rows_fit;
    if (shown > cols_fit) shown = cols_fit;
    int o = *off;
    if (o > n - shown) o = n - shown;
    if (o < 0) o = 0;
    *off = o;
    /* column header */
    int y = r->y + 1;
    for (int j = 0; j < shown; j++) {
        if (cw >= 3)
            grid_printf(g, r->x + label_w + j * cw, y, cw, ROLE_DIM, "%*s%d", cw - 2 - (o + j >= 10), "B", o + j);
        else
            grid_printf(g, r->x + label_w + j * cw, y, cw, ROLE_DIM, "%d", (o + j) % 10);
    }
    if (shown < n)
        grid_printf(g, r->x + label_w + shown * cw, y, r->w - label_w - shown * cw, ROLE_DIM,
                    " %d-%d/%d [ ]", o, o + shown - 1, n);
    for (int i = 0; i < shown; i++) {
        int ai = o + i;
        y = r->y + 2 + i;
        grid_printf(g, r->x, y, label_w, ROLE_DIM, "A%d", ai);
        for (int j = 0; j < shown; j++) {
            int bj = o + j;
            double c = C[ai * n + bj];
            int assigned = v->cost_order[ai] == bj;
            int role = assigned ? ROLE_ASSIGNED : ROLE_HEAT_0 + heat_level(c, lo, hi);
            int x = r->x + label_w + j * cw;
            if (numbers) {
                char buf[32];
                snprintf(buf, sizeof buf, "%*.*g%c", cw - 1, cw - 3 > 4 ? 4 : cw - 3, c, assigned ? '*' : ' ');
                grid_fill(g, x, y, cw, 1, ' ', role);
                grid_text(g, x, y, cw, role, buf);
            } else {
                uint32_t glyph = assigned ? (g->utf8 ? 0x25C6 : '@') : shade(g, heat_level(c, lo, hi));
                for (int k = 0; k < cw - 1; k++) grid_put(g, x + k, y, glyph, role);
            }
        }
    }
    /* legend: the scale from cheap to dear */
    y = r->y + 2 + shown;
    if (y < r->y + r->h) {
        int x = r->x + 1;
        x += grid_printf(g, x, y, r->x + r->w - x, ROLE_DIM, "%.3g ", lo);
        for (int l = 0; l < HEAT_LEVELS && x < r->x + r->w; l++) grid_put(g, x++, y, shade(g, l), ROLE_HEAT_0 + l);
        x += grid_printf(g, x, y, r->x + r->w - x, ROLE_DIM, " %.3g ", hi);
        grid_text(g, x, y, r->x + r->w - x, ROLE_DIM, numbers ? " *assigned" : (g->utf8 ? " \u25C6assigned" : " @assigned"));
    }
}
