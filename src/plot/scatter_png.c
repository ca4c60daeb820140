/* scatter_png.c - does the data-free cost predict the barrier? Every order of
 * a landscape as a point (its assignment cost sum_i C[i][pi(i)], its loss
 * barrier), one panel per cost (gate above, expert below), the chosen order
 * and the best order marked, Spearman's rho in the title. PNG, or SVG for a
 * path ending in .svg. */
#include "plot/scatter_png.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "landscape/rank.h"
#include "plot/figures.h"
#include "plot/plot_write.h"

/* One panel's spec and the arrays it points into (x: 2 nr doubles, free it). */
typedef struct {
    double *x;
    double cx, cy, bx, by;
    char lab_all[64], lab_ch[96], lab_best[64], title[200];
    plot_series s[3];
    plot_spec p;
} panel;

/* each panel 0.8 of the figure height (size: --size; NULL 960 x 600) */
static void panel_build(const landscape *L, int m, const plot_size *size, panel *P) {
    long nr = L->ndone;
    int n = L->n;
    P->x = ms_malloc((size_t)nr * 2 * sizeof(double)); // (2, nr): cost, barrier
    double *x = P->x, *y = x + nr;
    for (long k = 0; k < nr; k++) {
        x[k] = ls_order_cost(L->cost[m], L->orders, n, L->rows[k].id);
        y[k] = L->rows[k].barrier;
    }
    P->cx = cost_of_order(L->cost[m], L->methods[m].order, n), P->cy = L->methods[m].barrier;
    P->bx = x[L->best], P->by = y[L->best];
    snprintf(P->lab_all, sizeof P->lab_all, "%s %ld orders", L->exhaustive ? "all" : "sampled", nr);
    snprintf(P->lab_ch, sizeof P->lab_ch, "the %s-cost order (rank %d)", cost_method_name((cost_method)m),
             L->rank[m]);
    snprintf(P->lab_best, sizeof P->lab_best, "best order (barrier %.3g)", P->by);
    snprintf(P->title, sizeof P->title, "%s cost against loss barrier: Spearman rho = %.3f",
             cost_method_name((cost_method)m), rank_spearman(x, y, nr));
    P->s[0] = (plot_series){.label = P->lab_all, .x = x, .y = y, .n = (int)nr,
                            .rgb = PLOT_RGB_OTHER, .markers = 1, .no_line = 1,
                            .marker_size = nr > 2000 ? 1.5 : 3};
    P->s[1] = (plot_series){.label = P->lab_best, .x = &P->bx, .y = &P->by, .n = 1,
                            .rgb = PLOT_RGB_BEST, .markers = 1, .no_line = 1, .marker_size = 8};
    P->s[2] = (plot_series){.label = P->lab_ch, .x = &P->cx, .y = &P->cy, .n = 1,
                            .rgb = fig_method_rgb((cost_method)m), .markers = 1,
                            .no_line = 1, .marker_size = 6};
    plot_spec *p = &P->p;
    plot_spec_init(p, size);
    p->title = P->title;
    p->xlabel = "assignment cost of the order, sum_i C[i][pi(i)]";
    p->ylabel = "loss barrier";
    p->height = p->height * 4 / 5;
    p->series = P->s;
    p->nseries = 3;
    // a margin so the extreme orders (often the chosen one) are not on the frame
    double lo = INFINITY, hi = -INFINITY;
    for (long k = 0; k < nr; k++)
        if (isfinite(x[k])) lo = fmin(lo, x[k]), hi = fmax(hi, x[k]);
    if (hi > lo) p->xmin = lo - 0.04 * (hi - lo), p->xmax = hi + 0.04 * (hi - lo);
}

int landscape_write_scatter_png(const landscape *L, const plot_size *size, const char *path, ms_err *err) {
    int ok = L->ndone >= 1;
    for (int m = 0; m < COST_NMETHODS; m++) ok = ok && L->cost[m];
    if (!ok) return ms_fail(err, "%s: no orders to plot", path);
    panel *P = ms_calloc(COST_NMETHODS, sizeof(panel)); // a panel per method, stacked
    const plot_spec *panels[COST_NMETHODS];
    for (int m = 0; m < COST_NMETHODS; m++) panel_build(L, m, size, &P[m]), panels[m] = &P[m].p;
    int rc = plot_write_stack(panels, COST_NMETHODS, path, err);
    for (int m = 0; m < COST_NMETHODS; m++) free(P[m].x);
    free(P);
    return rc;
}
