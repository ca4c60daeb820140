/* heatmap_view.h - the n x n cost matrix pane: rows A0.., columns B0.., a heat
 * scale with a legend, numbers when they fit, the assignment's cells marked. */
#ifndef MS_UI_HEATMAP_VIEW_H
#define MS_UI_HEATMAP_VIEW_H

#include "engine.h"
#include "grid.h"
#include "layout.h"

/* off: first row/column shown when n does not fit (clamped, written back). */
void heatmap_render(grid *g, const ui_rect *r, const engine_view *v, int *off);
/* Heat level 0..HEAT_LEVELS-1 of x in [lo, hi]. */
int heat_level(double x, double lo, double hi);

#endif
