/* curves_view.h - loss (or accuracy) against t in [0,1] for naive, skip-order,
 * the current alignment and the selected order, plus the chord between the
 * endpoints; a labelled y axis and a legend. Braille dots (2x4 per cell) on
 * UTF-8 grids, one glyph per series in ASCII. */
#ifndef MS_UI_CURVES_VIEW_H
#define MS_UI_CURVES_VIEW_H

#include "explore_worker.h"
#include "grid.h"
#include "layout.h"

/* metric_acc: plot accuracy instead of loss. */
void curves_render(grid *g, const ui_rect *r, const explore_snapshot *v, int metric_acc);

#endif
