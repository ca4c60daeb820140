/* footer_view.h - each toggle with its key and state, the action keys, and
 * the message line. Remembers where each item was drawn so a mouse click on
 * it acts like its key. */
#ifndef MS_UI_FOOTER_VIEW_H
#define MS_UI_FOOTER_VIEW_H

#include "explore_worker.h"
#include "grid.h"
#include "keys.h"
#include "layout.h"

typedef struct {
    int x0, x1, y; /* [x0, x1) on row y */
    int key;
} footer_hit;

typedef struct {
    footer_hit hit[24];
    int nhit;
} footer_hits;

void footer_render(grid *g, const ui_rect *r, const explore_request *q, int metric_acc, footer_hits *hits);
/* The key of the footer item at (x, y), or 0. */
int footer_key_at(const footer_hits *hits, int x, int y);
/* The message line: msg (an error when is_error) on the left, the worker's
 * status on the right. */
void message_render(grid *g, const ui_rect *r, const char *msg, int is_error, const explore_snapshot *v);

#endif
