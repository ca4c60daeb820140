/* heatmap.h - a matrix as a heat map (PNG, or SVG for a name ending in .svg):
 * one cell per entry coloured on a sequential colour-blind-safe scale
 * (viridis: dark violet at vmin, yellow at vmax), the entry printed in each
 * cell large enough for it, row labels on the left, column labels below,
 * a colour bar with its label on the right, a title on top. Written
 * atomically with the provenance (PNG text chunks, SVG <metadata>). */
#ifndef MS_HEATMAP_H
#define MS_HEATMAP_H

#include <stdint.h>

#include "core/ms_error.h"
#include "plot/plot.h"

typedef struct {
    const double *v;                 // (rows, cols), row-major; NaN: a blank cell
    int rows, cols;
    const char *const *row_labels;   // (rows), may be NULL
    const char *const *col_labels;   // (cols), may be NULL
    const char *title, *xlabel, *ylabel, *scale_label; /* may be NULL */
    double vmin, vmax;               /* the colour scale's ends */
    const char *cell_fmt;            /* printf format of a cell's number ("%.0f"); NULL: none */
    const plot_size *size;           /* NULL: the default */
} plot_heatmap;

/* The colour of v on [lo, hi] (clamped): viridis, 0xRRGGBB. */
uint32_t plot_viridis(double v, double lo, double hi);
int plot_heatmap_write(const plot_heatmap *h, const char *path, ms_err *err);

#endif
