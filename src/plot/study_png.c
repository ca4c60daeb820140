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
    plot_series *bar_ser; // (4 P)
    double *bar_xy;       // (4 P, 4): x0 x1 y0 y1
    plot_series strip_ser[2 + 2 * 64];
    double *strip_xy;     // (2, P) x, (2, P) y
    double ci[64][4];
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
    static const uint32_t col[4] = {PLOT_RGB_NAIVE, PLOT_RGB_SKIP, PLOT_RGB_GATE, PLOT_RGB_EXPERT};
    static const char *lab[4] = {"naive", "skip-order", "gate cost", "expert cost"};
    int P = S->npairs, ns = 4 * P;
    plot_series *ser = F->bar_ser = ms_calloc((size_t)ns, sizeof(plot_series));
    double *xy = F->bar_xy = ms_malloc((size_t)ns * 4 * sizeof(double));
    double ymax = 0;
    for (int k = 0; k < P; k++) {
        const st_pair *p = &S->pairs[k];
        double v[4] = {p->naive.barrier, p->skip.barrier, p->m[0].c.barrier, p->m[1].c.barrier};
        for (int b = 0; b < 4; b++) {
            double *q = xy + (size_t)(4 * k + b) * 4;
            q[0] = q[1] = (k + 1) + (b - 1.5) * 0.18;
            q[2] = 0;
            q[3] = isfinite(v[b]) ? v[b] : NAN;
            if (isfinite(v[b]) && v[b] > ymax) ymax = v[b];
            ser[4 * k + b] = (plot_series){.label = k == 0 ? lab[b] : NULL, .x = q, .y = q + 2,
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

static void strip_build(const study *S, const plot_size *size, study_fig *F) {
    int P = S->npairs;
    plot_series *ser = F->strip_ser;
    int ns = 0;
    double *buf = F->strip_xy = ms_malloc((size_t)P * 4 * sizeof(double));
    static const uint32_t col[2] = {PLOT_RGB_GATE, PLOT_RGB_EXPERT};
    double (*ci)[4] = F->ci;
    for (int m = 0; m < 2; m++) {
        double *x = buf + (size_t)m * P, *y = buf + (size_t)(2 + m) * P;
        for (int k = 0; k < P; k++) {
            x[k] = S->pairs[k].m[m].rank_percentile;
            y[k] = P - k + (m ? -0.12 : 0.12); /* the first pair on top, the methods side by side */
        }
        ser[ns++] = (plot_series){.label = m ? "expert cost" : "gate cost", .x = x, .y = y, .n = P,
                                  .rgb = col[m], .markers = 1, .no_line = 1, .marker_size = 5};
    }
    // sampled landscapes: the 95% interval of each percentile (first 32 pairs)
    for (int k = 0; k < P && k < 32; k++)
        for (int m = 0; m < 2; m++) {
            const st_pair *p = &S->pairs[k];
            if (p->exhaustive) continue;
            double *q = ci[2 * k + m];
            q[0] = p->m[m].pct_lo, q[1] = p->m[m].pct_hi;
            q[2] = q[3] = P - k + (m ? -0.12 : 0.12);
            ser[ns++] = (plot_series){.x = q, .y = q + 2, .n = 2, .rgb = col[m]};
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
