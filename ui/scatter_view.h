/* scatter_view.h - does the data-free cost predict the barrier? Every order
 * the landscape has done as a point: x its assignment cost under the shown
 * cost matrix (sum_i C[i][pi(i)], the method and centring of the request),
 * y its loss barrier. Braille dots (ASCII '.'); the best (*), gate-chosen
 * (G), expert-chosen (E), identity (I) and plotted (>) orders marked by
 * their letters; Spearman's rho between cost and barrier in the title.
 * Drawn in the curves pane's place (key v). */
#ifndef MS_UI_SCATTER_VIEW_H
#define MS_UI_SCATTER_VIEW_H

#include "explore/explore_worker.h"
#include "grid.h"
#include "layout.h"

/* best_row: the row with the smallest barrier (orders_state.best_row), -1 none. */
void scatter_render(grid *g, const ui_rect *r, const explore_snapshot *v, long best_row);

/* The plot's geometry in pane r, for the layout tests: the cell of a point
 * (cost x, barrier y) given the ranges, or -1 when outside. */
typedef struct {
    int px, py, pw, ph, sub_x, sub_y; /* plot origin and size in cells, dots per cell */
    double xlo, xhi, ylo, yhi;
} scatter_geom;
int scatter_cell(const scatter_geom *G, double x, double y, int *cx, int *cy);

#endif
