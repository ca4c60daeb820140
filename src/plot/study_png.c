/* study_png.c - the study as one PNG: on top, per pair, bars of the naive,
 * skip-order, gate and expert loss barriers (pairs along x); below, a strip of
 * each method's rank percentile per pair (0% = the best order; a sampled
 * landscape adds its 95% interval as a line). Both name the pairs on a
 * categorical axis ("seed1-seed2", in the order of the study's table).
 * PNG, or SVG for a .svg path. */
#include "plot/study_png.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plot/figures.h"
#include "plot/plot_write.h"

/* The two panels and the arrays their series point into. */
typedef struct {
    plot_spec bars, strip;
    plot_series *bar_ser; // (NB P), NB = 2 + COST_NMETHODS
    double *bar_xy;       // (NB P, 4): x0 x1 y0 y1
    plot_series strip_ser[COST_NMETHODS * (1 + 32)];
    double *strip_xy;     // (COST_NMETHODS, P) x, (COST_NMETHODS, P) y
    double ci[COST_NMETHODS * 32][4];
    char labels[2 + COST_NMETHODS][48]; // the bars' legend: naive, skip-order, each method
    char (*names)[96];    // (P) the pairs' names, in the table's order
    const char **xcat;    // (P) the bars' axis: names[k] at k + 1
    const char **ycat;    // (P) the strip's, top down: names[P - 1 - j] at j + 1
} study_fig;

/* "seed1-seed2": the pool's names without their folder and ".safetensors",
 * with the folder when two members of the pool share a name */
static void pair_names(const study *S, study_fig *F) {
    int P = S->npairs, dup = 0;
    char (*stem)[96] = ms_malloc((size_t)(S->npool ? S->npool : 1) * sizeof *stem);
    for (int i = 0; i < S->npool; i++) {
        char full[256];
        fig_ckpt_name(S->paths[i], full, sizeof full);
        const char *b = strrchr(full, '/');
        snprintf(stem[i], sizeof stem[i], "%.95s", b ? b + 1 : full);
    }
    for (int i = 0; i < S->npool; i++)
        for (int j = 0; j < i; j++) dup |= !strcmp(stem[i], stem[j]);
    for (int i = 0; dup && i < S->npool; i++) fig_ckpt_name(S->paths[i], stem[i], sizeof stem[i]);
    F->names = ms_malloc((size_t)P * sizeof *F->names);
    F->xcat = ms_malloc((size_t)P * sizeof(char *));
    F->ycat = ms_malloc((size_t)P * sizeof(char *));
    for (int k = 0; k < P; k++)
        snprintf(F->names[k], sizeof F->names[k], "%.46s-%.46s", stem[S->pairs[k].ia], stem[S->pairs[k].ib]);
    for (int k = 0; k < P; k++) {
        F->xcat[k] = F->names[k];
        F->ycat[k] = F->names[P - 1 - k];
    }
    free(stem);
}

/* bars: each bar is a thick two-point line from 0 to its value */
/* panel sizes from the figure size (--size; NULL 960 x 600): bars 0.9, strip 0.5 of its height */
static void bars_build(const study *S, const plot_size *size, study_fig *F) {
    enum { NB = 2 + COST_NMETHODS }; // naive, skip-order, each method's order
    uint32_t col[NB] = {PLOT_RGB_NAIVE, PLOT_RGB_SKIP};
    char (*labs)[48] = F->labels;
    snprintf(labs[0], sizeof labs[0], "naive");
    snprintf(labs[1], sizeof labs[1], "skip-order");
    for (int m = 0; m < COST_NMETHODS; m++) {
        col[2 + m] = fig_method_rgb((cost_method)m);
        snprintf(labs[2 + m], sizeof labs[2 + m], "%s cost", cost_method_name((cost_method)m));
    }
    int P = S->npairs, ns = NB * P;
    plot_series *ser = F->bar_ser = ms_calloc((size_t)ns, sizeof(plot_series));
    double *xy = F->bar_xy = ms_malloc((size_t)ns * 4 * sizeof(double));
    double ymax = 0;
    for (int k = 0; k < P; k++) {
        const st_pair *p = &S->pairs[k];
        double v[NB] = {p->naive.barrier, p->skip.barrier};
        for (int m = 0; m < COST_NMETHODS; m++) v[2 + m] = p->m[m].c.barrier;
        for (int b = 0; b < NB; b++) {
            double *q = xy + (size_t)(NB * k + b) * 4;
            q[0] = q[1] = (k + 1) + (b - (NB - 1) / 2.0) * (0.72 / NB); // NB bars in 0.72 of a pair
            q[2] = 0;
            q[3] = isfinite(v[b]) ? v[b] : NAN;
            if (isfinite(v[b]) && v[b] > ymax) ymax = v[b];
            ser[NB * k + b] = (plot_series){.label = k == 0 ? labs[b] : NULL, .x = q, .y = q + 2,
                                           .n = 2, .rgb = col[b]};
        }
    }
    plot_spec sp;
    plot_spec_init(&sp, size);
    sp.title = "loss barrier per pair: naive, skip-order and the two methods' orders";
    sp.xlabel = "pair (in the order of the study's table)";
    sp.xcat = F->xcat;
    sp.nxcat = P;
    sp.ylabel = "loss barrier";
    sp.height = sp.height * 9 / 10;
    sp.series = ser;
    sp.nseries = ns;
    sp.xmin = 0.4, sp.xmax = P + 0.6;
    sp.ymin = 0, sp.ymax = ymax > 0 ? ymax * 1.08 : 1e-3;
    sp.line_width = P <= 10 ? 9.0 : P <= 30 ? 4.0 : 2.0;
    F->bars = sp;
}

/* method m's row within a pair's band of the strip: 0.24 between methods */
static double strip_offset(int m) {
    return ((COST_NMETHODS - 1) / 2.0 - m) * 0.24;
}

static void strip_build(const study *S, const plot_size *size, study_fig *F) {
    int P = S->npairs;
    plot_series *ser = F->strip_ser;
    int ns = 0;
    double *buf = F->strip_xy = ms_malloc((size_t)P * 2 * COST_NMETHODS * sizeof(double));
    double (*ci)[4] = F->ci;
    for (int m = 0; m < COST_NMETHODS; m++) {
        double *x = buf + (size_t)m * P, *y = buf + (size_t)(COST_NMETHODS + m) * P;
        for (int k = 0; k < P; k++) {
            x[k] = S->pairs[k].m[m].rank_percentile;
            y[k] = P - k + strip_offset(m); /* the first pair on top, the methods side by side */
        }
        ser[ns++] = (plot_series){.label = F->labels[2 + m], .x = x, .y = y, .n = P,
                                  .rgb = fig_method_rgb((cost_method)m), .markers = 1, .no_line = 1,
                                  .marker_size = 5};
    }
    // sampled landscapes: the 95% interval of each percentile (first 32 pairs)
    for (int k = 0; k < P && k < 32; k++)
        for (int m = 0; m < COST_NMETHODS; m++) {
            const st_pair *p = &S->pairs[k];
            if (p->exhaustive) continue;
            double *q = ci[COST_NMETHODS * k + m];
            q[0] = p->m[m].pct_lo, q[1] = p->m[m].pct_hi;
            q[2] = q[3] = P - k + strip_offset(m);
            ser[ns++] = (plot_series){.x = q, .y = q + 2, .n = 2, .rgb = fig_method_rgb((cost_method)m)};
        }
    plot_spec sp;
    plot_spec_init(&sp, size);
    sp.title = "rank percentile of the chosen order (0% = the best order)";
    sp.xlabel = "rank percentile (%)";
    sp.ylabel = "pair";
    sp.height = sp.height / 2;
    sp.series = ser;
    sp.nseries = ns;
    sp.xmin = -2, sp.xmax = 102;
    sp.ymin = 0.4, sp.ymax = P + 0.6;
    sp.ycat = F->ycat;
    sp.nycat = P;
    F->strip = sp;
}

int study_write_png(const study *S, const plot_size *size, const char *path, ms_err *err) {
    if (S->npairs < 1) return ms_fail(err, "%s: no pairs to plot", path);
    study_fig *F = ms_calloc(1, sizeof *F);
    pair_names(S, F);
    bars_build(S, size, F);
    strip_build(S, size, F);
    const plot_spec *panels[2] = {&F->bars, &F->strip};
    int rc = plot_write_stack(panels, 2, path, err);
    free(F->bar_ser);
    free(F->bar_xy);
    free(F->strip_xy);
    free(F->names);
    free(F->xcat);
    free(F->ycat);
    free(F);
    return rc;
}
