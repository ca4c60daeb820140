/* plot_int.h - what the files of src/plot/ share beyond plot.h: the extras a
 * figure may carry (the landscape's guide lines, a dashed vertical line at each
 * marked order under the data), the landscape figure's spec (plot.c), and each
 * format's writer (plot_png.c, plot_svg.c) for plot_write.c. */
#ifndef MS_PLOT_INT_H
#define MS_PLOT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "core/ms_error.h"
#include "plot/plot.h"

typedef struct {
    double x;     /* in data coordinates */
    uint32_t rgb; /* 0xRRGGBB, drawn at 80% opacity */
} plot_vline;

typedef struct {
    const plot_vline *vlines;
    int nvlines;
    double min_xstep;  /* x ticks at least this far apart (1 for ranks) */
    double marker_r;   /* marker radius before scaling; 0 = PLOT_MARKER_R */
    int outline_markers;
} plot_extra;

/* The landscape's spec (plot_write.h: plot_landscape_write): the arrays it
 * points into are owned by b. */
typedef struct {
    double *xs, *mx, *my;
    plot_series *ser;
    plot_vline *vl;
    char allbuf[64];
    plot_spec p;
    plot_extra ex;
} landscape_fig;
int landscape_fig_build(const double *barriers_sorted, long n, const long *marked_idx,
                        const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                        const char *title, int width, int height, int log_rank, landscape_fig *b,
                        ms_err *err);
void landscape_fig_free(landscape_fig *b);

/* A title in at most PLOT_TITLE_LINES lines no wider than maxw, width(ctx, s)
 * measuring a line: whole when it fits, else split after its ": " when both
 * parts fit, else wrapped at spaces; what the last line cannot hold ends in
 * "...". Returns the lines (0 for an empty title). */
#define PLOT_TITLE_LINES 3
#define PLOT_TITLE_CAP 512
int plot_title_lines(const char *title, int maxw, int (*width)(const void *ctx, const char *s), const void *ctx,
                     char lines[PLOT_TITLE_LINES][PLOT_TITLE_CAP]);

/* A PNG file of p (ex may be NULL), and of panels stacked. */
int plot_png_file(const plot_spec *p, const plot_extra *ex, const char *path, ms_err *err);
int plot_png_stack(const plot_spec *const *panels, int np, const char *path, ms_err *err);
/* An SVG file of panels stacked, the first with the guide lines g (ng of them). */
int plot_svg_file(const plot_spec *const *panels, int np, const plot_vline *g, int ng,
                  const char *path, ms_err *err);

/* s with the five XML specials escaped */
void plot_xml_put(FILE *fp, const char *s);
/* An SVG document's opening: the XML declaration, <svg> of W x H and the
 * provenance as <metadata> (the PNG's text chunks). */
void plot_svg_head(FILE *fp, int W, int H);

#endif
