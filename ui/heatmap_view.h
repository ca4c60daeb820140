/* heatmap_view.h - the n x n cost matrix pane: rows A0.., columns B0.., a heat
 * scale with a legend, numbers when they fit, the assignment's cells marked.
 * Colour + UTF-8: cells are blocks of the theme's heat colours (grid_heat), or
 * half blocks (two matrix rows per screen row) when numbers do not fit.
 *
 * Large n (64, 256 experts): the matrix scrolls in both directions around a
 * cursor cell (the row and column labels follow), and zooms out: at zoom b
 * every screen cell summarises a b x b block of the matrix by the mean of its
 * costs, on a heat scale from the smallest to the largest block mean, and a
 * block that holds an assigned pair (i, pi(i)) is marked. The
 * zoom levels double the block side up to the smallest block at which the
 * whole matrix fits the pane. Only the visible cells are computed and drawn. */
#ifndef MS_UI_HEATMAP_VIEW_H
#define MS_UI_HEATMAP_VIEW_H

#include "explore/explore_worker.h"
#include "grid.h"
#include "layout.h"

/* Where the pane looks. row0/col0 are the first row and column shown in
 * units of the current zoom (matrix rows at zoom 1, blocks when zoomed);
 * heatmap_render clamps them and keeps the cursor cell in view: by moving the
 * view when follow is set (the cursor moved last), else by moving the cursor
 * (the view was scrolled). */
typedef struct {
    int row, col;     /* the cursor: a matrix cell */
    int row0, col0;   /* first unit shown */
    int zoom;         /* block side; 0 or 1: every cell */
    int focus;        /* the cursor keys move the cell (Tab) */
    int follow;
    int centre;       /* once: put the cursor in the middle of the view (after a zoom) */
} heat_view;

void heatmap_render(grid *g, const ui_rect *r, const explore_snapshot *v, heat_view *s);
enum { HEAT_NUMBERS = 0, HEAT_HALF = 1, HEAT_GLYPHS = 2, HEAT_BLOCKS = 3 };
/* How an n x n matrix is drawn in a w x h pane (utf8/color of the grid) at zoom 1. */
int heatmap_mode(int n, int w, int h, int utf8, int color);
/* Rows the pane needs at most (title, header, matrix rows, legend), <= h. */
int heatmap_height(int n, int zoom, int w, int h, int utf8, int color);
/* The smallest block side at which all of the matrix shows (1: it does at zoom
 * 1); align > 1 (the experts of a group-limited router's group): only sides
 * that divide it or that it divides, so that blocks never straddle groups. */
int heatmap_zoom_fit(int n, int w, int h, int utf8, int color, int align);
/* The next zoom level out (dir > 0: 1, 2, 4, ... then fit) or in (dir < 0).
 * The doublings divide a power-of-two group size, as the fit does. */
int heatmap_zoom_step(int zoom, int fit, int dir);
/* The matrix cell drawn at screen cell (x, y) of pane r by the last render
 * (s as it left it): 1 and *row, *col (a block's first cell when zoomed; the
 * upper row of a half-block line), or 0 off the map. */
int heatmap_hit(const ui_rect *r, int n, const heat_view *s, int utf8, int color, int x, int y, int *row, int *col);
/* Move the cursor by (drow, dcol) units of the zoom (clamped to the matrix). */
void heatmap_move(heat_view *s, int n, int drow, int dcol);
/* Heat level 0..HEAT_LEVELS-1 of x in [lo, hi]. */
int heat_level(double x, double lo, double hi);

#endif
