/* layout.h - pane geometry from the terminal size (curses-free).
 *
 *   row 0-1   title (checkpoints, architecture, endpoints)
 *   body      left column: cost matrix above, curves below | right: expert orders
 *   row h-2   footer (toggles and keys)
 *   row h-1   message line
 */
#ifndef MS_UI_LAYOUT_H
#define MS_UI_LAYOUT_H

#include "align/cost_method.h"

#define UI_MIN_W 80
#define UI_MIN_H 24
/* The orders table's mark columns: best, one per matching method (cost_methods[],
 * its mark: G E A R), identity, plotted. */
#define ORDERS_MARKS (1 + COST_NMETHODS + 2)

typedef struct {
    int x, y, w, h;
} ui_rect;

typedef struct {
    int w, h;
    int too_small;      /* below UI_MIN_W x UI_MIN_H: only a message is drawn */
    ui_rect title, heat, curves, orders, footer, message;
    int sep_x;          /* column of the separator between left and right */
    ui_rect overlay;    /* help / diagnostics box */
    ui_rect overlay_wide; /* the routing geometry's box (r): as wide as the screen allows, for its tables */
} ui_layout;

/* n: experts (the orders pane is as wide as its rows need). */
void layout_compute(ui_layout *L, int w, int h, int n);
/* Characters of an order of n experts written out ("0 12 3 ..."). */
int layout_order_chars(int n);
/* Width of one orders row for n experts. */
int layout_orders_width(int n);
int rect_contains(const ui_rect *r, int x, int y);

#endif
