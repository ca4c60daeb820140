/* footer_view.h - each toggle with its key and state, the action keys, and
 * the message line. Remembers where each item was drawn so a mouse click on
 * it acts like its key. */
#ifndef MS_UI_FOOTER_VIEW_H
#define MS_UI_FOOTER_VIEW_H

#include "explore/explore_worker.h"
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
    int end_x, end_y;  /* where the last item ended: the rest of that row is free */
} footer_hits;

void footer_render(grid *g, const ui_rect *r, const explore_request *q, int metric_acc, footer_hits *hits);
/* The key of the footer item at (x, y), or 0. */
int footer_key_at(const footer_hits *hits, int x, int y);
/* The message line's first room columns: msg (an error when is_error) on
 * the left, the worker's status on the right. When both do not fit the
 * message keeps the line and the status goes to alt (the free end of the
 * footer) if it fits there, else it gets what the message leaves. load not
 * NULL or "": a layer load's progress, shown in the status's place (the
 * worker's status is of the layer about to be replaced). */
void message_render(grid *g, const ui_rect *r, const char *msg, int is_error, const explore_snapshot *v,
                    const char *load, const ui_rect *alt, int room);

#endif
