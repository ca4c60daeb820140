/* plot_png.h - figures (plot.h) as PNG (libpng), for slides.
 *
 * Anti-aliased lines (coverage of a round-capped stroke, so any width looks
 * smooth), markers, dashed lines, axes with 1/2/5 x 10^k ticks, a title, axis
 * labels and a legend, text from the bitmap fonts in assets/fonts (see
 * bitmap_font.h). Files are written atomically (atomic_file.h): a viewer never
 * sees half a PNG. plot_write.h picks PNG or SVG by the file name. */
#ifndef MS_PLOT_PNG_H
#define MS_PLOT_PNG_H

#include <stdint.h>

#include "core/ms_error.h"
#include "plot/plot.h"

/* Render into a new RGB buffer (*rgb_out is (height, width, 3), free() it).
 * *w_out and *h_out receive the size. */
int plot_render_rgb(const plot_spec *p, uint8_t **rgb_out, int *w_out, int *h_out, ms_err *err);
/* The landscape figure (plot_write.h: plot_landscape_write) rendered at width x
 * height. */
int plot_landscape_render_rgb(const double *barriers_sorted, long n, const long *marked_idx,
                              const char *const *marked_labels, const uint32_t *marked_rgb,
                              int nmarked, const char *title, int width, int height,
                              uint8_t **rgb_out, ms_err *err);

/* Write an RGB buffer (h, w, 3) as a PNG, atomically. */
int plot_write_png_rgb(const uint8_t *rgb, int w, int h, const char *path, ms_err *err);
/* The same with the figure's title and legend (may be NULL) in text chunks. */
int plot_write_png_meta(const uint8_t *rgb, int w, int h, const char *title, const char *legend, const char *path,
                        ms_err *err);

#endif
