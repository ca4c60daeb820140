/* plot.h - a figure: line plots (series over x, a title, axis labels, a legend)
 * and what the PNG (plot_png.c) and SVG (plot_svg.c) renderers share: the
 * default size, the text scale, tick steps, axis ranges and line width, so both
 * formats draw the same figure. plot_write.h writes one by its file name.
 *
 * Colours by meaning (Okabe-Ito, colour-blind safe), shared with the TUI. */
#ifndef MS_PLOT_H
#define MS_PLOT_H

#include <stdint.h>

#include "core/ms_error.h"

#define PLOT_W 960             /* pixels, when a spec or a size says 0 */
#define PLOT_H 600

#define PLOT_RGB_NAIVE    0xD55E00u /* vermillion: identity order, no weight matching */
#define PLOT_RGB_SKIP     0xE69F00u /* orange: identity order + weight matching */
#define PLOT_RGB_ALIGNED  0x0072B2u /* blue: the chosen alignment */
#define PLOT_RGB_SELECTED 0x009E73u /* bluish green: the order selected in the list */
#define PLOT_RGB_CHORD    0x666666u /* grey (dashed): the chord between the end points */
#define PLOT_RGB_GATE     0xCC79A7u /* reddish purple: the gate-cost order */
#define PLOT_RGB_EXPERT   0x0072B2u /* blue: the expert-cost order (the default method) */
#define PLOT_RGB_BEST     0x000000u /* black: the best order */
#define PLOT_RGB_OTHER    0x56B4E9u /* sky blue: anything else (e.g. all orders) */

typedef struct {
    const char *label;   /* legend text; NULL or "" = not in the legend */
    const double *x, *y; /* n points; a NaN in y (or x) leaves a gap */
    int n;
    uint32_t rgb;        /* 0xRRGGBB */
    int dashed;          /* dashed line (e.g. the chord) */
    int markers;         /* filled circles at the points */
    int no_line;         /* markers only */
    double marker_size;  /* marker radius in pixels before scaling; 0 = 3.5 */
} plot_series;

typedef struct {
    const char *title, *xlabel, *ylabel; /* may be NULL */
    int width, height;   /* pixels; 0 = 960 x 600 */
    int scale;           /* text and stroke scale 1 or 2; 0 = auto (2 when width >= 1600) */
    const plot_series *series;
    int nseries;
    double xmin, xmax;   /* NaN (or xmin >= xmax, e.g. zero-initialised) = the data range */
    double ymin, ymax;   /* NaN (or ymin >= ymax) = the data range plus a margin */
    double line_width;   /* pixels before scaling; 0 = PLOT_LINE_WIDTH */
    int xlog;            /* x on a log10 axis, ticks at the powers of ten (x > 0) */
    /* categorical axes: category k (0-based) sits at x (or y) = k + 1 and its
       tick is labelled xcat[k] (every few when they would collide); 0: numeric */
    const char *const *xcat, *const *ycat;
    int nxcat, nycat;
} plot_spec;

/* The size and text scale a figure starts from (plot_spec_init, the figures'
 * writers); the commands' --size WxH and --font-scale set theirs. NULL where
 * one is taken: PLOT_W x PLOT_H, scale 0 (auto). */
typedef struct {
    int w, h, scale;
} plot_size;
/* "1600x1000" into out->w, out->h: 0, or -1 when malformed or outside 160x120 .. 16384x16384. */
int plot_parse_size(const char *s, plot_size *out);

/* The text and line scale drawn: the one asked for (0: 2 from 1600 px wide,
 * else 1), at most what a W x H canvas holds (about 480 px per step), 1..4. */
int plot_scale(int asked, int W, int H);
/* A spec with every field defaulted (NaN ranges), of size (may be NULL). */
void plot_spec_init(plot_spec *p, const plot_size *size);

#define PLOT_LINE_WIDTH 2.25   /* a series' stroke in pixels before scaling */
#define PLOT_MARKER_R 3.5      /* a marker's radius in pixels before scaling */

/* p's size in pixels (0 fields: PLOT_W x PLOT_H). */
void plot_dims(const plot_spec *p, int *W, int *H);
/* p drawable: a size within 160x120 .. 16384x16384, every series with data.
 * -1 with a message otherwise. */
int plot_check(const plot_spec *p, ms_err *err);
/* A series' stroke width at text scale s, in pixels. */
double plot_line_px(const plot_spec *p, double s);
/* The axis range of x (want_y 0) or y: the spec's own when set, else the
 * finite data (points with both coordinates finite), widened when degenerate,
 * y with a 6% margin. 1 when from the data, 0 when the spec set it. */
int plot_axis_range(const plot_spec *p, int want_y, double *lo, double *hi);
/* Nice tick step (1, 2 or 5 x 10^k) for about `target` ticks over [lo, hi]. */
double plot_nice_step(double lo, double hi, int target);
/* Every how many categories of a categorical axis a label is written: the
 * labels (widest maxw, in the units of len) take at most the axis length len
 * over ncat categories, with gap between them. 0 when ncat is 0. */
int plot_cat_stride(int ncat, double len, double maxw, double gap);
int plot_is_svg(const char *path); /* ends in .svg */

#endif
