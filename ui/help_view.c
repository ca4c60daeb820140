/* help_view.c - see help_view.h. */
#include "help_view.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"
#include "orders_view.h"
#include "pins.h"
#include "model/symmetry.h"

void overlay_box(grid *g, const ui_rect *r, const char *title) {
    uint32_t h = g->utf8 ? 0x2500 : '-', v = g->utf8 ? 0x2502 : '|';
    uint32_t tl = g->utf8 ? 0x250C : '+', tr = g->utf8 ? 0x2510 : '+';
    uint32_t bl = g->utf8 ? 0x2514 : '+', br = g->utf8 ? 0x2518 : '+';
    grid_fill(g, r->x, r->y, r->w, r->h, ' ', ROLE_NORMAL);
    for (int i = 1; i < r->w - 1; i++) {
        grid_put(g, r->x + i, r->y, h, ROLE_BORDER);
        grid_put(g, r->x + i, r->y + r->h - 1, h, ROLE_BORDER);
    }
    for (int j = 1; j < r->h - 1; j++) {
        grid_put(g, r->x, r->y + j, v, ROLE_BORDER);
        grid_put(g, r->x + r->w - 1, r->y + j, v, ROLE_BORDER);
    }
    grid_put(g, r->x, r->y, tl, ROLE_BORDER);
    grid_put(g, r->x + r->w - 1, r->y, tr, ROLE_BORDER);
    grid_put(g, r->x, r->y + r->h - 1, bl, ROLE_BORDER);
    grid_put(g, r->x + r->w - 1, r->y + r->h - 1, br, ROLE_BORDER);
    grid_printf(g, r->x + 2, r->y, r->w - 4, ROLE_PANE_TITLE, " %s ", title);
}

/* The help's rows drawn from virtual row `scroll` on: rows before it are
 * counted, not drawn, so the one layout serves every scroll position. */
typedef struct {
    grid *g;
    int y0, rows, scroll, row;
} help_rows;

/* the screen row of the next virtual row, or -1 when it is not shown */
static int help_next(help_rows *h) {
    int y = h->row++ - h->scroll;
    return y >= 0 && y < h->rows ? h->y0 + y : -1;
}

/* The symmetry group's name and its why, word-wrapped to width w. */
static void symmetry_rows(help_rows *h, int x, int w, const moe_config *c) {
    moe_symmetry s;
    moe_symmetry_group(c, &s);
    if (w < 10) return;
    int y = help_next(h);
    if (y >= 0) grid_printf(h->g, x, y, w, ROLE_KEY, "symmetry group: %s", s.name);
    const char *p = s.why;
    while (*p) {
        int len = (int)strlen(p), cut = len <= w ? len : w;
        if (cut < len)
            for (int i = cut; i > w / 2; i--)
                if (p[i] == ' ') {
                    cut = i;
                    break;
                }
        if ((y = help_next(h)) >= 0) {
            char line[512];
            snprintf(line, sizeof line, "%.*s", cut, p);
            grid_text(h->g, x, y, w, ROLE_DIM, line);
        }
        p += cut;
        while (*p == ' ') p++;
    }
}

/* Every row of the help from h->row on (draws those in view). */
static void help_rows_all(help_rows *h, const ui_rect *r, const moe_config *c, int pair) {
    grid *g = h->g;
    int x = r->x + 2, half = (r->w - 4) / 2, col = 0, y = -1;
    for (int i = 0; i < key_table_len; i++) {
        const key_binding *k = &key_table[i];
        if (!k->help) continue;
        if (pair && (int)strlen(k->help) <= half - 11) continue; /* after the long ones */
        if ((y = help_next(h)) < 0) continue;
        grid_printf(g, x, y, 10, ROLE_KEY, "%-9s", k->name);
        grid_text(g, x + 10, y, r->w - 13, ROLE_NORMAL, k->help);
    }
    for (int i = 0; pair && i < key_table_len; i++) {
        const key_binding *k = &key_table[i];
        if (!k->help || (int)strlen(k->help) > half - 11) continue;
        if (col == 0) y = help_next(h);
        if (y >= 0) {
            int cx = x + col * half;
            grid_printf(g, cx, y, 10, ROLE_KEY, "%-9s", k->name);
            grid_text(g, cx + 10, y, half - 11, ROLE_NORMAL, k->help);
        }
        col = (col + 1) % 2;
    }
    if ((y = help_next(h)) >= 0)
        grid_text(g, x, y, r->w - 4, ROLE_NORMAL, "mouse: click a row to plot it, click a footer item, wheel scrolls");
    if ((y = help_next(h)) >= 0) {
        char pn[32], lg[200];
        snprintf(pn, sizeof pn, "1-%d pinned (P)", PINS_MAX);
        orders_marks_legend(lg, sizeof lg, r->w - 4 - 7, "  ", pn);
        grid_printf(g, x, y, r->w - 4, ROLE_DIM, "marks: %s", lg);
    }
    if (c) symmetry_rows(h, x, r->w - 4, c);
}

int help_render(grid *g, const ui_rect *r, const moe_config *c, int scroll) {
    if (r->w < 20 || r->h < 5) return 0;
    int inner = r->h - 2, nkeys = 0;
    for (int i = 0; i < key_table_len; i++) nkeys += key_table[i].help != NULL;
    /* one key a row when they all fit; else the keys with short help share
       rows two by two; what is still below the box scrolls into view */
    int pair = nkeys + 2 > inner;
    help_rows count = {g, 0, 0, 1 << 30, 0};
    help_rows_all(&count, r, c, pair);
    int total = count.row;
    if (scroll > total - inner) scroll = total - inner;
    if (scroll < 0) scroll = 0;
    overlay_box(g, r, total > inner ? "keys (j/k PgUp/PgDn scroll, other keys close)" : "keys (any key closes)");
    help_rows h = {g, r->y + 1, inner, scroll, 0};
    help_rows_all(&h, r, c, pair);
    if (total > inner) /* where we are */
        grid_printf(g, r->x + r->w - 14, r->y + r->h - 1, 12, ROLE_DIM, " %d-%d/%d ", scroll + 1,
                    scroll + inner < total ? scroll + inner : total, total);
    return scroll;
}

/* Word-wrap lines to width; draw the rows [scroll, scroll + rows) at (x, y0)
 * when draw. Returns the number of wrapped rows. */
static int wrap_lines(grid *g, int x, int y0, int width0, int rows, char *const *lines, int nlines, int scroll,
                      int draw) {
    int row = 0;
    for (int i = 0; i < nlines; i++) {
        const char *p = lines[i];
        int first = 1, width = width0;
        while (*p || first) {
            int len = (int)strlen(p), take = len;
            if (take > width) {
                take = width;
                while (take > 0 && p[take] != ' ') take--;
                if (take == 0) take = width;
            }
            int y = row - scroll;
            if (draw && y >= 0 && y < rows) {
                char buf[1024];
                snprintf(buf, sizeof buf, "%s%.*s", first ? "" : "  ", take, p);
                grid_text(g, x, y0 + y, width0, ROLE_NORMAL, buf);
            }
            row++;
            p += take;
            while (*p == ' ') p++;
            first = 0;
            if (width0 > 2) width = width0 - 2; /* continuation rows are indented */
        }
    }
    return row;
}

int text_box_render(grid *g, const ui_rect *r, const char *title, char *const *lines, int nlines, int scroll) {
    if (r->w < 20 || r->h < 4) return scroll;
    overlay_box(g, r, title);
    int width = r->w - 4, rows = r->h - 2;
    int total = wrap_lines(g, r->x + 2, r->y + 1, width, rows, lines, nlines, 0, 0);
    if (scroll > total - rows) scroll = total - rows;
    if (scroll < 0) scroll = 0;
    wrap_lines(g, r->x + 2, r->y + 1, width, rows, lines, nlines, scroll, 1);
    if (total > rows) /* where we are */
        grid_printf(g, r->x + r->w - 14, r->y + r->h - 1, 12, ROLE_DIM, " %d-%d/%d ", scroll + 1,
                    scroll + rows < total ? scroll + rows : total, total);
    return scroll;
}
