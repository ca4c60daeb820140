/* pins.c - see pins.h. */
#include "pins.h"

#include <stdio.h>
#include <string.h>

#include "order_abbrev.h"

int pins_find(const pin_set *s, const int *order, int n, int wm) {
    for (int i = 0; i < s->n; i++)
        if (s->p[i].wm == wm && s->p[i].c.n == n && !memcmp(s->p[i].c.order, order, sizeof(int) * (size_t)n))
            return i;
    return -1;
}

int pins_toggle(pin_set *s, const ls_curve *c, int wm) {
    int i = pins_find(s, c->order, c->n, wm);
    if (i >= 0) {
        ls_curve_free(&s->p[i].c);
        memmove(&s->p[i], &s->p[i + 1], sizeof(pin) * (size_t)(s->n - i - 1));
        s->n--;
        return PIN_REMOVED;
    }
    if (s->n >= PINS_MAX) return PIN_FULL;
    ls_curve_copy(&s->p[s->n].c, c);
    s->p[s->n].wm = wm;
    s->n++;
    return PIN_ADDED;
}

void pins_clear(pin_set *s) {
    for (int i = 0; i < s->n; i++) ls_curve_free(&s->p[i].c);
    s->n = 0;
}

char pins_glyph(int i) { return (char)('1' + i); }

void pins_label(const pin_set *s, int i, int cur_wm, int brief, char *buf, int cap) {
    char o[64];
    order_abbrev(s->p[i].c.order, s->p[i].c.n, 32, 0, o, sizeof o);
    const char *wm = s->p[i].wm == cur_wm ? "" : s->p[i].wm ? " (wm on)" : " (wm off)";
    /* the order in brackets, apart from the pin's digit before it */
    if (brief) snprintf(buf, (size_t)cap, "[%s]%s", o, wm);
    else snprintf(buf, (size_t)cap, "pin %d [%s]%s", i + 1, o, wm);
}
