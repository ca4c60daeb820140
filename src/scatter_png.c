/* scatter_png.c - does the data-free cost predict the barrier? Every order of
 * a landscape as a point (its assignment cost sum_i C[i][pi(i)], its loss
 * barrier), one panel per cost (gate above, expert below), the chosen order
 * and the best order marked, Spearman's rho in the title. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape.h"
#include "plot_png.h"
#include "rank.h"

#define SC_W 960
#define SC_H 480

static int render_panel(const landscape *L, int m, uint8_t **rgb, ms_err *err) {
    long nr = L->ndone;
    int n = L->n;
    double *x = ms_malloc((size_t)nr * 2 * sizeof(double)); // (2, nr): cost, barrier
    double *y = x + nr;
    long ib = L->best;
    for (long k = 0; k < nr; k++) {
        x[k] = cost_of_order(L->cost[m], L->rows[k].order, n);
        y[k] = L->rows[k].barrier;
    }
    double cx = cost_of_order(L->cost[m], L->methods[m].order, n), cy = L->methods[m].barrier;
    double bx = x[ib], by = y[ib];
    char lab_all[64], lab_ch[96], lab_best[64], title[160];
    snprintf(lab_all, sizeof lab_all, "%s %ld orders", L->exhaustive ? "all" : "sampled", nr);
    snprintf(lab_ch, sizeof lab_ch, "the %s-cost order (rank %d)", m == 0 ? "gate" : "expert", L->rank[m]);
    snprintf(lab_best, sizeof lab_best, "best order (barrier %.4g)", by);
    snprintf(title, sizeof title, "%s cost against loss barrier: Spearman rho = %.3f",
             m == 0 ? "gate" : "expert", rank_spearman(x, y, nr));
    plot_series s[3] = {
        {.label = lab_all, .x = x, .y = y, .n = (int)nr, .rgb = PLOT_RGB_OTHER, .markers = 1,
         .no_line = 1, .marker_size = nr > 2000 ? 1.5 : 3},
        {.label = lab_best, .x = &bx, .y = &by, .n = 1, .rgb = PLOT_RGB_BEST, .markers = 1,
         .no_line = 1, .marker_size = 8},
        {.label = lab_ch, .x = &cx, .y = &cy, .n = 1, .rgb = m == 0 ? PLOT_RGB_GATE : PLOT_RGB_EXPERT,
         .markers = 1, .no_line = 1, .marker_size = 6},
    };
    plot_spec p;
    plot_spec_init(&p);
    p.title = title;
    p.xlabel = "assignment cost of the order, sum_i C[i][pi(i)]";
    p.ylabel = "loss barrier";
    p.width = SC_W;
    p.height = SC_H;
    p.series = s;
    p.nseries = 3;
    // a margin so the extreme orders (often the chosen one) are not on the frame
    double lo = INFINITY, hi = -INFINITY;
    for (long k = 0; k < nr; k++)
        if (isfinite(x[k])) lo = fmin(lo, x[k]), hi = fmax(hi, x[k]);
    if (hi > lo) p.xmin = lo - 0.04 * (hi - lo), p.xmax = hi + 0.04 * (hi - lo);
    int w, h;
    int rc = plot_render_rgb(&p, rgb, &w, &h, err);
    free(x);
    return rc;
}

int landscape_write_scatter_png(const landscape *L, const char *path, ms_err *err) {
    if (L->ndone < 1 || !L->cost[0] || !L->cost[1]) return ms_fail(err, "%s: no orders to plot", path);
    uint8_t *top = NULL, *bot = NULL;
    if (render_panel(L, 0, &top, err) || render_panel(L, 1, &bot, err)) {
        free(top);
        return ms_prefix(err, "%s", path);
    }
    size_t a = (size_t)SC_W * SC_H * 3;
    uint8_t *all = ms_malloc(2 * a); // (2 * SC_H, SC_W, 3)
    memcpy(all, top, a);
    memcpy(all + a, bot, a);
    int rc = plot_write_png_rgb(all, SC_W, 2 * SC_H, path, err);
    free(top);
    free(bot);
    free(all);
    return rc;
}
