/* layers_view.h - the layer list (l): every MoE layer of the checkpoint, the
 * one shown marked, the one the evaluation set was made for marked, the one
 * loading with its percentage; Enter switches A and B to the layer under the
 * cursor (tui.c loads both off the UI thread, layer_load.h). */
#ifndef MS_UI_LAYERS_VIEW_H
#define MS_UI_LAYERS_VIEW_H

#include "grid.h"
#include "layout.h"

/* l: the MoE layers of A's checkpoint, to switch A and B to another one */
typedef struct {
    char **names;   /* owned (app_set_layers) */
    int n;
    int current;    /* the layer shown, -1 unknown */
    int cursor;
    int open;       /* the list is on the screen */
    int top;
    int loading;    /* the layer being loaded in the background (tui.c), -1 none */
    double load_frac; /* how far, 0..1 */
} layer_list;

void layers_render(grid *g, const ui_rect *r, layer_list *l, const char *eval_layer, int network);

#endif
