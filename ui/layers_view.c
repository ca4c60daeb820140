/* layers_view.c - see layers_view.h. */
#include "layers_view.h"

#include <stdio.h>
#include <string.h>

#include "help_view.h"

void layers_render(grid *g, const ui_rect *area, layer_list *l, const char *eval_layer, int network) {
    /* as tall as the list and a note need */
    ui_rect box = *area;
    if (box.h > l->n + 4) box.h = l->n + 4;
    const ui_rect *r = &box;
    if (r->w < 20 || r->h < 5) return;
    char title[96];
    snprintf(title, sizeof title, "MoE layers: %d (Enter switches A and B, Esc closes)", l->n);
    if ((int)strlen(title) + 6 > r->w) snprintf(title, sizeof title, "layers: %d (Enter, Esc)", l->n);
    overlay_box(g, r, title);
    int rows = r->h - 4, x = r->x + 2, w = r->w - 4;
    // a network's set is its tokens or images: every block is measured on the network's loss
    if (network) eval_layer = NULL;
    grid_text(g, x, r->y + r->h - 2, w, ROLE_DIM,
              network ? "every block: curves and landscape on the network loss"
              : eval_layer && eval_layer[0] ? "[eval set]: curves and landscape; others: the data-free parts"
                                            : "the evaluation set's layer is unknown: curves only for the layer it came with");
    if (l->cursor < l->top) l->top = l->cursor;
    if (l->cursor >= l->top + rows) l->top = l->cursor - rows + 1;
    if (l->top > l->n - rows) l->top = l->n - rows;
    if (l->top < 0) l->top = 0;
    for (int i = 0; i < rows && l->top + i < l->n; i++) {
        int k = l->top + i, y = r->y + 1 + i;
        int cur = k == l->cursor;
        const char *eval = eval_layer && eval_layer[0] && !strcmp(eval_layer, l->names[k]) ? "  [eval set]" : "";
        char line[512], loading[32] = "";
        if (k == l->loading) snprintf(loading, sizeof loading, "  (loading %.0f%%)", 100 * l->load_frac);
        snprintf(line, sizeof line, "%c %3d  %s%s%s%s", k == l->current ? '>' : ' ', k, l->names[k],
                 k == l->current ? "  (shown)" : "", loading, eval);
        if (cur) grid_fill(g, x - 1, y, w + 2, 1, ' ', ROLE_CURSOR);
        grid_text(g, x, y, w, cur ? ROLE_CURSOR : k == l->current ? ROLE_MARK : ROLE_NORMAL, line);
    }
    if (l->n > rows)
        grid_printf(g, r->x + r->w - 14, r->y + r->h - 1, 12, ROLE_DIM, " %d-%d/%d ", l->top + 1,
                    l->top + rows < l->n ? l->top + rows : l->n, l->n);
}
