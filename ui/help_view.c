/* help_view.c - see help_view.h. */
#include "help_view.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"

static void box(grid *g, const ui_rect *r, const char *title) {
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

void help_render(grid *g, const ui_rect *r) {
    if (r->w < 20 || r->h < 5) return;
    box(g, r, "keys (any key closes)");
    int y = r->y + 1, x = r->x + 2;
    for (int i = 0; i < key_table_len && y < r->y + r->h - 2; i++) {
        if (!key_table[i].help) continue;
        grid_printf(g, x, y, 10, ROLE_KEY, "%-9s", key_table[i].name);
        grid_text(g, x + 10, y, r->w - 13, ROLE_NORMAL, key_table[i].help);
        y++;
    }
    if (y < r->y + r->h - 1) grid_text(g, x, y++, r->w - 4, ROLE_NORMAL, "mouse: click a row to plot it, click a footer item, wheel scrolls");
    if (y < r->y + r->h - 1) grid_text(g, x, y, r->w - 4, ROLE_DIM, "marks: * best  G gate-chosen  E expert-chosen  I identity");
}

void text_box_render(grid *g, const ui_rect *r, const char *title, char *const *lines, int nlines, int scroll) {
    if (r->w < 20 || r->h < 4) return;
    box(g, r, title);
    /* word-wrapped to the box; scroll counts wrapped rows */
    int width = r->w - 4, row = 0;
    for (int i = 0; i < nlines; i++) {
        const char *p = lines[i];
        int first = 1;
        while (*p || first) {
            int len = (int)strlen(p), take = len;
            if (take > width) {
                take = width;
                while (take > 0 && p[take] != ' ') take--;
                if (take == 0) take = width;
            }
            int y = row - scroll;
            if (y >= 0 && y < r->h - 2) {
                char buf[1024];
                snprintf(buf, sizeof buf, "%s%.*s", first ? "" : "  ", take, p);
                grid_text(g, r->x + 2, r->y + 1 + y, width, ROLE_NORMAL, buf);
            }
            row++;
            p += take;
            while (*p == ' ') p++;
            first = 0;
            if (!first && width > 2) width = r->w - 6;
        }
    }
}
