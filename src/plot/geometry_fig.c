/* geometry_fig.c - the angle heat map and the R^2 per step (geometry_fig.h). */
#include "plot/geometry_fig.h"

#include <stdio.h>
#include <stdlib.h>

#include "plot/heatmap.h"
#include "plot/plot_write.h"

/* a layer's label: "L3" for block 3, else "#l" */
static void layer_label(const geometry *G, int l, char *buf, size_t cap) {
    if (G->layers[l].block >= 0) snprintf(buf, cap, "L%d", G->layers[l].block);
    else snprintf(buf, cap, "#%d", l);
}

int geometry_write_angles(const geometry *G, const plot_size *size, const char *path, ms_err *err) {
    int L = G->L;
    char **lab = ms_malloc((size_t)L * sizeof(char *));
    for (int l = 0; l < L; l++) {
        lab[l] = ms_malloc(24);
        layer_label(G, l, lab[l], 24);
    }
    char title[160];
    snprintf(title, sizeof title, "mean principal angle between the routers' control subspaces (r = %d of d = %d)",
             G->r, G->d);
    plot_heatmap h = {.v = G->mean_angle, .rows = L, .cols = L, .row_labels = (const char *const *)lab,
                      .col_labels = (const char *const *)lab, .title = title, .xlabel = "MoE layer",
                      .ylabel = "MoE layer", .scale_label = "degrees", .vmin = 0, .vmax = 90,
                      .cell_fmt = "%.0f", .size = size};
    int rc = plot_heatmap_write(&h, path, err);
    for (int l = 0; l < L; l++) free(lab[l]);
    free(lab);
    return rc;
}

int geometry_write_r2(const geometry *G, const plot_size *size, const char *path, ms_err *err) {
    int S = G->L - 1;
    double *x = ms_malloc((size_t)S * sizeof(double));
    char **steps = ms_malloc((size_t)S * sizeof(char *)); // "L0->L1": the categories of x
    for (int l = 0; l < S; l++) {
        char a[24], b[24];
        layer_label(G, l, a, sizeof a);
        layer_label(G, l + 1, b, sizeof b);
        steps[l] = ms_malloc(52);
        snprintf(steps[l], 52, "%s->%s", a, b);
        x[l] = l + 1;
    }
    const geo_fit *c = &G->fit[GEO_CANONICAL];
    plot_series ser[7] = {
        {.label = "shared, canonical gauge (GPA)", .y = c->r2_shared, .rgb = PLOT_RGB_ALIGNED, .markers = 1},
        {.label = "layer-specific", .y = c->r2_specific, .rgb = PLOT_RGB_BEST, .dashed = 1, .markers = 1},
        {.label = "shared, raw gauge", .y = G->fit[GEO_RAW].r2_shared, .rgb = PLOT_RGB_NAIVE, .markers = 1},
        {.label = "shared, random gauge", .y = G->fit[GEO_RANDOM].r2_shared, .rgb = PLOT_RGB_SKIP, .markers = 1},
        {.label = "shared, residual PCA", .y = G->fit[GEO_PCA].r2_shared, .rgb = PLOT_RGB_GATE, .markers = 1},
        {.label = "shared, CCA chain", .y = G->fit[GEO_CCA].r2_shared, .rgb = PLOT_RGB_SELECTED, .markers = 1},
        {.label = "identity (y(l+1) = y(l))", .y = c->r2_identity, .rgb = PLOT_RGB_CHORD, .dashed = 1},
    };
    for (int k = 0; k < 7; k++) {
        ser[k].x = x, ser[k].n = S;
        ser[k].no_line = S < 2 && ser[k].markers; // one step: points
    }
    char title[160];
    snprintf(title, sizeof title, "held-out R\u00b2 of the transition into each MoE layer (eta_share %.2f)", c->eta);
    plot_spec p;
    plot_spec_init(&p, size);
    p.title = title;
    p.xlabel = "step into the next MoE layer";
    p.ylabel = "held-out R\u00b2"; // the fonts are Latin-1: the superscript two draws
    p.series = ser;
    p.nseries = 7;
    p.xmin = 0.5, p.xmax = S + 0.5;
    p.xcat = (const char *const *)steps, p.nxcat = S;
    int rc = plot_write(&p, path, err);
    for (int l = 0; l < S; l++) free(steps[l]);
    free(steps);
    free(x);
    return rc;
}
