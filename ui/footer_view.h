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

/* One footer item as drawn: "o order:ON" is key 'o', label "order:", value "ON". */
typedef struct {
    int key;
    const char *label;
    const char *value; /* NULL for plain actions */
    int on;
} footer_item;

/* The footer's items for a width of w columns, in one row (curses-free): the
 * toggles with their states, then the actions. What does not fit goes by
 * priority - first the actions the help (?) and the flag count name (v scatter,
 * d diag), then the toggles' labels shorten (ord:, ctr:, the cost's value
 * alone), then the exports (p, e), then "accuracy" to "acc"; ? help and q quit
 * always stay. Decided with the longest values (OFF, accuracy), so a toggle
 * never reflows the row. Returns how many items out[FOOTER_MAX] holds. */
#define FOOTER_MAX 12
int footer_plan(int w, const explore_request *q, int metric_acc, footer_item *out);
/* Columns the items take in one row (the separator after the toggles included). */
int footer_width(const footer_item *it, int n);

/* The footer's items in the first row of r (footer_plan); a row below it is the
 * caller's (the flags, the status). */
void footer_render(grid *g, const ui_rect *r, const explore_request *q, int metric_acc, footer_hits *hits);
/* The key of the footer item at (x, y), or 0. */
int footer_key_at(const footer_hits *hits, int x, int y);
/* s fitted to w columns: whole when it fits, else cut and marked with an
 * ellipsis; at_word: at a word boundary (inside a word over half the room
 * long), "..." in ASCII; else as much as fits, the ellipsis only in UTF-8 (a
 * message keeps every column of its reason). Returns the columns of out. */
int text_fit(const char *s, int w, int utf8, int at_word, char *out, int cap);
/* The worker's status in up to 3 wordings, longest first (returns how many):
 * as it is; without its closing remark in parentheses; in few words
 * ("done: expert order rank 2433 of 40320 (tied: 3; by AUC 12)" ->
 * "expert rank 2433/40320"). */
#define STATUS_TIER_CAP 320
int status_tiers(const char *s, char tiers[3][STATUS_TIER_CAP]);
/* The message line's first room columns: msg (an error when is_error) on
 * the left, the worker's status on the right, in the longest of its wordings
 * that fits beside the message, or in alt (the free end of the footer) when
 * the message takes the line. When none fits, the message stays whole and
 * the status gets what it leaves, cut at a word with an ellipsis; a message
 * too long for the line keeps what fits (text_fit). load not
 * NULL or "": a layer load's progress, shown in the status's place (the
 * worker's status is of the layer about to be replaced). */
void message_render(grid *g, const ui_rect *r, const char *msg, int is_error, const explore_snapshot *v,
                    const char *load, const ui_rect *alt, int room);

#endif
