/* swap_view.h - which slot causes the barrier? For the order the toggles give
 * (identity when the order stage is off), each cell (i, j) is the barrier of
 * the order with slots i and j swapped minus its own barrier, read from the
 * landscape's rows (weight matching as in the table): a negative cell is a
 * swap that lowers the barrier. Numbers when they fit, else signs and shades;
 * the best swap and the slot whose swaps lower the barrier most below.
 * Drawn in the cost matrix's place (key b); 64 or 256 slots show the rows and
 * columns that fit, the summary covering all of them. */
#ifndef MS_UI_SWAP_VIEW_H
#define MS_UI_SWAP_VIEW_H

#include "explore/explore_worker.h"
#include "grid.h"
#include "layout.h"

/* Delta (n, n) for v's current order: NaN where the swapped order's row is
 * not done yet (and on the diagonal, 0). Returns 0, or -1 when the current
 * order's own row is not done. */
int swap_deltas(const explore_snapshot *v, double *delta);
void swap_render(grid *g, const ui_rect *r, const explore_snapshot *v);

#endif
