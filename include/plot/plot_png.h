/* plot_png.h - line plots and the order landscape as PNG (libpng), for slides.
 *
 * Anti-aliased lines (coverage of a round-capped stroke, so any width looks
 * smooth), markers, dashed lines, axes with 1/2/5 x 10^k ticks, a title, axis
 * labels and a legend, text from the bitmap fonts in assets/fonts (see
 * bitmap_font.h). Files are written atomically (atomic_file.h): a viewer never
 * sees half a PNG.
 *
 * Colours by meaning (Okabe-Ito, colour-blind safe), shared with the TUI. */
#ifndef MS_PLOT_PNG_H
#define MS_PLOT_PNG_H

#include <stdint.h>

#include "core/ms_error.h"

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
    double line_width;   /* pixels before scaling; 0 = 2.25 */
    int xlog;            /* x on a log10 axis, ticks at the powers of ten (x > 0) */
} plot_spec;

/* The size and text scale every figure of this process starts from
 * (plot_spec_init, the landscape); the commands' --size WxH and --font-scale
 * set it. Default 960 x 600, scale 0 (auto). */
typedef struct {
    int w, h, scale;
} plot_size;
extern plot_size plot_default_size;
/* "1600x1000" into out->w, out->h: 0, or -1 when malformed or outside 160x120 .. 16384x16384. */
int plot_parse_size(const char *s, plot_size *out);

/* The text and line scale drawn: the one asked for (0: 2 from 1600 px wide,
 * else 1), at most what a W x H canvas holds (about 480 px per step), 1..4. */
int plot_scale(int asked, int W, int H);
/* A spec with every field defaulted (NaN ranges, plot_default_size). */
void plot_spec_init(plot_spec *p);

/* Render into a new RGB buffer (*rgb_out is (height, width, 3), free() it).
 * *w_out and *h_out receive the size. */
int plot_render_rgb(const plot_spec *p, uint8_t **rgb_out, int *w_out, int *h_out, ms_err *err);
/* Render and write a PNG atomically; its text chunks carry the provenance,
 * the title ("Title") and the legend ("Legend", a label a line). A path
 * ending in .svg writes the same figure as SVG (plot_svg_write). */
int plot_png_write(const plot_spec *p, const char *path, ms_err *err);
/* The figure as SVG (vector): same series, colours, ticks, title and legend;
 * each series a <g class="series" data-label="its legend text">. */
int plot_svg_write(const plot_spec *p, const char *path, ms_err *err);
int plot_is_svg(const char *path); /* ends in .svg */
/* Panels of one width stacked top to bottom into one file: SVG when path ends
 * in .svg, else PNG (a two-panel figure such as the scatter or the study). */
int plot_svg_write_stack(const plot_spec *const *panels, int npanels, const char *path, ms_err *err);
int plot_write_stack(const plot_spec *const *panels, int npanels, const char *path, ms_err *err);

/* The landscape: every order's barrier, sorted ascending, over its rank
 * (1 = lowest barrier), with some orders marked (marked_idx are 0-based
 * indices into barriers_sorted, so rank = idx + 1) in their colour and named in
 * the legend (marked_labels, e.g. "expert cost (rank 3)"). 40320 points draw
 * in milliseconds (points closer than a pixel are merged). */
int plot_landscape_render_rgb(const double *barriers_sorted, long n, const long *marked_idx,
                              const char *const *marked_labels, const uint32_t *marked_rgb,
                              int nmarked, const char *title, int width, int height,
                              uint8_t **rgb_out, ms_err *err);
/* Written at plot_default_size; a path ending in .svg writes SVG. */
int plot_png_landscape(const double *barriers_sorted, long n, const long *marked_idx,
                       const char *const *marked_labels, const uint32_t *marked_rgb,
                       int nmarked, const char *title, const char *path, ms_err *err);
/* The same with the rank on a log axis when log_rank (40320 orders: the top
 * ranks get as much room as the rest). */
int plot_png_landscape_ex(const double *barriers_sorted, long n, const long *marked_idx,
                          const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                          const char *title, int log_rank, const char *path, ms_err *err);

/* Write an RGB buffer (h, w, 3) as a PNG, atomically. */
int plot_write_png_rgb(const uint8_t *rgb, int w, int h, const char *path, ms_err *err);
/* The same with the figure's title and legend (may be NULL) in text chunks. */
int plot_write_png_meta(const uint8_t *rgb, int w, int h, const char *title, const char *legend, const char *path,
                        ms_err *err);

/* Nice tick step (1, 2 or 5 x 10^k) for about `target` ticks over [lo, hi]. */
double plot_nice_step(double lo, double hi, int target);

#endif
