/* order_abbrev.h - an expert order shortened to a width, for the views that
 * show one (the orders table, the curves' legend, the pins, the messages). */
#ifndef MS_UI_ORDER_ABBREV_H
#define MS_UI_ORDER_ABBREV_H

#include <stddef.h>

/* An order in at most w columns: whole, "identity", "id except 3 7 9", or its
 * first entries and "…" ("..." in ASCII); buf holds cap bytes. */
void order_abbrev(const int *o, int n, int w, int utf8, char *buf, size_t cap);

#endif
