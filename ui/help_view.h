/* help_view.h - overlays: the key help (printed from the key table) and the
 * diagnostics pane. */
#ifndef MS_UI_HELP_VIEW_H
#define MS_UI_HELP_VIEW_H

#include "grid.h"
#include "layout.h"

#include "model/model.h"

/* A bordered box over r (cleared) with the title in its top border. */
void overlay_box(grid *g, const ui_rect *r, const char *title);
/* The key table, then the layer's symmetry group and why (c may be NULL),
 * from row `scroll` on when it is taller than the box; returns the scroll
 * clamped to the text (the caller's scroll never runs past the end). */
int help_render(grid *g, const ui_rect *r, const moe_config *c, int scroll);
/* A boxed list of text lines with a title; scroll: first line shown. */
/* A box of word-wrapped lines from wrapped row `scroll` on; returns the scroll
 * clamped to the text (so the caller's scroll never runs past the end). */
int text_box_render(grid *g, const ui_rect *r, const char *title, char *const *lines, int nlines, int scroll);

#endif
