/* pins.h - orders pinned in the curves pane (curses-free): `P` keeps the
 * plotted order's curve so that several orders can be overlaid and compared,
 * `U` clears them. A pin is a copy of the curve as the worker computed it,
 * with the weight-matching setting it was computed under: the curve of a
 * fixed order depends on that stage only (not on the cost method or the
 * centring), and a pin made under the other setting says so in its label. */
#ifndef MS_UI_PINS_H
#define MS_UI_PINS_H

#include "landscape/curve.h"

#define PINS_MAX 4 /* the legend of an 80x24 screen holds this many beside the rest */

typedef struct {
    ls_curve c; /* owned copy (loss, acc) */
    int wm;     /* weight matching was on when it was computed */
} pin;

typedef struct {
    pin p[PINS_MAX];
    int n;
} pin_set;

enum { PIN_ADDED = 1, PIN_REMOVED = 2, PIN_FULL = 3 };

/* Pin c (computed with weight matching wm), or unpin it when an equal pin
 * (same order and setting) is there; PIN_FULL when PINS_MAX are pinned. */
int pins_toggle(pin_set *s, const ls_curve *c, int wm);
/* Index of the pin of order (n experts) computed with wm, or -1. */
int pins_find(const pin_set *s, const int *order, int n, int wm);
void pins_clear(pin_set *s);
/* The glyph that stands for pin i in the plot and the legend: '1', '2', ... */
char pins_glyph(int i);
/* "pin 1 [2 0 3 1]" plus " (wm off)" when the pin's setting is not cur_wm;
 * brief: "[2 0 3 1]" (the legend puts the pin's digit, in its colour, before it). */
void pins_label(const pin_set *s, int i, int cur_wm, int brief, char *buf, int cap);

#endif
