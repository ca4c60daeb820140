/* heatmap_view.h - the n x n cost matrix pane: rows A0.., columns B0.., a heat
 * scale with a legend, numbers when they fit, the assignment's cells marked.
 * Colour + UTF-8: cells are blocks of the theme's heat colours (grid_heat), or
 * half blocks (two matrix rows per screen row) when numbers do not fit. */
#ifndef MS_UI_HEATMAP_VIEW_H
#define MS_UI_HEATMAP_VIEW_H

#include "explore_worker.h"
#include "grid.h"
#include "layout.h"

/* off: first row/column shown when n does not fit (clamped, written back). */
void heatmap_render(grid *g, const ui_rect *r, const explore_snapshot *v, int *off);
enum { HEAT_NUMBERS = 0, HEAT_HALF = 1, HEAT_GLYPHS = 2 };
/* How an n x n matrix is drawn in a w x h pane (utf8/color of the grid). */
int heatmap_mode(int n, int w, int h, int utf8, int color);
/* Rows the pane needs at most (title, header, matrix rows, legend), <= h. */
int heatmap_height(int n, int w, int h, int utf8, int color);
/* Heat level 0..HEAT_LEVELS-1 of x in [lo, hi]. */
int heat_level(double x, double lo, double hi);

#endif
