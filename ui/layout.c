/* layout.c - see layout.h. */
#include "layout.h"

#include <string.h>

int layout_order_chars(int n) {
    int w = n - 1; /* the spaces */
    for (int e = 0; e < n; e++) w += e >= 100 ? 3 : e >= 10 ? 2 : 1;
    return w;
}

int layout_orders_width(int n) {
    int ow = layout_order_chars(n);
    if (ow < 5) ow = 5;
    /* 64 or 256 experts do not fit a column: the table abbreviates them
       (order_abbrev.h) to about ten entries, the heat map keeping the width */
    if (ow > 30) ow = 30;
    /* marks rank(5) order barrier(8) acc.bar(8) auc(8), single spaces */
    return ORDERS_MARKS + 1 + 5 + 1 + ow + 1 + 8 + 1 + 8 + 1 + 8;
}

int rect_contains(const ui_rect *r, int x, int y) {
    return x >= r->x && x < r->x + r->w && y >= r->y && y < r->y + r->h;
}

void layout_compute(ui_layout *L, int w, int h, int n) {
    memset(L, 0, sizeof *L);
    L->w = w;
    L->h = h;
    if (w < UI_MIN_W || h < UI_MIN_H) {
        L->too_small = 1;
        return;
    }
    L->title = (ui_rect){0, 0, w, 2};
    /* the footer's hints in one row (footer_plan shortens them, never wraps); below
       116 columns a row below them holds the diagnostics' flag count and the status
       when neither fits beside the hints or a long message */
    int fh = w >= 116 ? 1 : 2;
    L->footer = (ui_rect){0, h - 1 - fh, w, fh};
    L->message = (ui_rect){0, h - 1, w, 1};
    int body_y = 2, body_h = h - 3 - fh;

    /* right column: the orders, as wide as a row, at most half the screen;
       larger screens give the extra width to the plot */
    int ow = layout_orders_width(n);
    /* the left column keeps 34 columns: a 4x4 matrix with numbers and a
       readable plot; so at 80 columns every column of a 4-expert row shows */
    int cap = w / 2 > w - 35 ? w / 2 : w - 35;
    if (ow > cap) ow = cap;
    /* wide screens: the table gets 40% (its cost and barrier-bar columns)
       rather than leaving the plot a mostly empty width */
    if (w >= 140 && ow < w * 2 / 5) ow = w * 2 / 5;
    int left_w = w - ow - 1;
    L->sep_x = left_w;
    L->orders = (ui_rect){left_w + 1, body_y, ow, body_h};

    /* left column: heat map (title, header, n rows, legend) then curves */
    int heat_h = n + 3;
    int min_curves = 8; /* n = 8 still fits at 80x24 */
    if (heat_h > body_h - min_curves) heat_h = body_h - min_curves;
    if (heat_h < 4) heat_h = 4;
    L->heat = (ui_rect){0, body_y, left_w, heat_h};
    L->curves = (ui_rect){0, body_y + heat_h, left_w, body_h - heat_h};

    int ovw = w - 8 < 90 ? w - 8 : 90, ovh = h - 4;
    L->overlay = (ui_rect){(w - ovw) / 2, 2, ovw, ovh};
    L->overlay_wide = (ui_rect){4, 2, w - 8, ovh};
}
