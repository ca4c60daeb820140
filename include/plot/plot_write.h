/* plot_write.h - a figure (plot.h) written to a file, the format chosen by its
 * name: SVG (vector, plot_svg.c) when it ends in .svg, else PNG (plot_png.c).
 * Every file is written atomically and carries the provenance (PNG text
 * chunks, SVG <metadata>), the title and the legend. */
#ifndef MS_PLOT_WRITE_H
#define MS_PLOT_WRITE_H

#include <stdint.h>

#include "core/ms_error.h"
#include "plot/plot.h"

/* One figure. */
int plot_write(const plot_spec *p, const char *path, ms_err *err);
/* Panels of one width stacked top to bottom into one file (a two-panel figure
 * such as the scatter or the study). */
int plot_write_stack(const plot_spec *const *panels, int npanels, const char *path, ms_err *err);

/* The landscape: every order's barrier, sorted ascending, over its rank
 * (1 = lowest barrier), with some orders marked (marked_idx are 0-based
 * indices into barriers_sorted, so rank = idx + 1) in their colour and named in
 * the legend (marked_labels, e.g. "expert cost (rank 3)"), each with a dashed
 * guide line. 40320 points draw in milliseconds (points closer than a pixel are
 * merged). Written at size (NULL: the default). */
int plot_landscape_write(const double *barriers_sorted, long n, const long *marked_idx,
                         const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                         const char *title, const plot_size *size, const char *path, ms_err *err);
/* The same with the rank on a log axis when log_rank (40320 orders: the top
 * ranks get as much room as the rest). */
int plot_landscape_write_ex(const double *barriers_sorted, long n, const long *marked_idx,
                            const char *const *marked_labels, const uint32_t *marked_rgb, int nmarked,
                            const char *title, int log_rank, const plot_size *size, const char *path,
                            ms_err *err);

#endif
