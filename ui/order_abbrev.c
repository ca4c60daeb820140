/* order_abbrev.c - an expert order in a given number of columns (order_abbrev.h). */
#include "order_abbrev.h"

#include <stdio.h>
#include <string.h>

#include "model/symmetry.h"

/* An order in at most w columns: all of it when it fits, "identity",
 * "id except 3 7 9" (the slots that move) or "id except 5 slots" for orders
 * near the identity, else its first entries and "…" ("..." in ASCII). */
void order_abbrev(const int *o, int n, int w, int utf8, char *buf, size_t cap) {
    size_t full = moe_order_format(buf, cap, o, n);
    if ((int)full <= w && full < cap) return;
    int moved = 0;
    for (int i = 0; i < n; i++) moved += o[i] != i;
    if (!moved) {
        snprintf(buf, cap, "identity");
        return;
    }
    if (moved <= n / 4) {
        size_t len = (size_t)snprintf(buf, cap, "id except");
        for (int i = 0; i < n && len < cap; i++)
            if (o[i] != i) len += (size_t)snprintf(buf + len, cap - len, " %d", i);
        if ((int)len <= w && len < cap) return;
        snprintf(buf, cap, "id except %d slots", moved);
        if ((int)strlen(buf) <= w) return;
    }
    const char *more = utf8 ? " \u2026" : " ...";
    int more_w = utf8 ? 2 : 4;
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < n; i++) {
        char one[16];
        int k = snprintf(one, sizeof one, i ? " %d" : "%d", o[i]);
        if ((int)len + k + more_w > w || len + (size_t)k + 1 >= cap) break;
        memcpy(buf + len, one, (size_t)k + 1);
        len += (size_t)k;
    }
    if (len + strlen(more) < cap) memcpy(buf + len, more, strlen(more) + 1);
}
