/* layers_view.h - the layer list (l): every MoE layer of the checkpoint, the
 * one shown marked, the one the evaluation set was made for marked, the one
 * loading with its percentage; Enter switches A and B to the layer under the
 * cursor (tui.c loads both off the UI thread, layer_load.h). */
#ifndef MS_UI_LAYERS_VIEW_H
#define MS_UI_LAYERS_VIEW_H

#include "app.h"

void layers_render(grid *g, const ui_rect *r, layer_list *l, const char *eval_layer);

#endif
