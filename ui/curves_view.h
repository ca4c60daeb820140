/* curves_view.h - loss (or accuracy) against t in [0,1] for naive, skip-order,
 * the current alignment, the selected order and the pinned ones, plus the chord between the
 * endpoints; a labelled y axis and a legend. Braille dots (2x4 per cell) on
 * UTF-8 grids, one glyph per series in ASCII. */
#ifndef MS_UI_CURVES_VIEW_H
#define MS_UI_CURVES_VIEW_H

#include "explore/explore_worker.h"
#include "grid.h"
#include "layout.h"
#include "pins.h"

/* metric_acc: plot accuracy instead of loss. pins (may be NULL): pinned
 * curves overlaid, each with its digit. */
/* net_blocks: a network's MoE blocks when more than one (their skip-order moves
 * every block, which its legend entry says), else 0 */
void curves_render(grid *g, const ui_rect *r, const explore_snapshot *v, const pin_set *pins, int metric_acc,
                   int net_blocks);

#endif
