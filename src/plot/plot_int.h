/* plot_int.h - what the PNG and SVG renderers share beyond plot_png.h: the
 * landscape's guide lines (a dashed vertical line at each marked order, under
 * the data), so both formats draw the same figure. Private to src/plot_*.c. */
#ifndef MOESCOPE_PLOT_INT_H
#define MOESCOPE_PLOT_INT_H

#include <stdint.h>

#include "core/ms_error.h"
#include "plot/plot_png.h"

typedef struct {
    double x;     /* in data coordinates */
    uint32_t rgb; /* 0xRRGGBB, drawn at 80% opacity */
} plot_vline;

/* plot_svg_write with guide lines (g may be NULL when ng is 0) */
int plot_svg_write_guides(const plot_spec *p, const plot_vline *g, int ng, const char *path, ms_err *err);

#endif
