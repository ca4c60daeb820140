/* axis.h - the y axis the plot views share (curves, scatter): round tick
 * values (1, 2 or 5 x 10^e) all printed with the step's decimals, at the rows
 * their values fall on, and the metric's name on a free row. Curses-free. */
#ifndef MS_UI_AXIS_H
#define MS_UI_AXIS_H

#include "grid.h"

/* About k round ticks in [lo, hi] (at most k + 1, at most 8) into tick, the
 * decimals they need into dec. Returns the count (0 when hi <= lo). */
int axis_nice_ticks(double lo, double hi, int k, double *tick, int *dec);
/* Row (0 = top) of value y in a plot of ph rows spanning [lo, hi] top to
 * bottom, with sub rows per cell (4 for braille, 1 for ASCII). */
int axis_row(double y, double lo, double hi, int ph, int sub);
/* The axis line at column px - 1 over rows py..py+ph-1, labels (lw - 1 wide,
 * right-aligned) in columns x..x+lw-1, and label (e.g. "loss") on the first
 * row without a tick. Scientific notation when a value does not fit. */
void axis_y(grid *g, int x, int lw, int px, int py, int ph, double lo, double hi, int sub, const char *label);
/* A value in at most w columns: fixed with dec decimals when it fits, else
 * scientific ("1.2e+18") so that neighbours never run together. */
void axis_format(double val, int dec, int w, char *out, int cap);

#endif
