/* line_edit.c - see line_edit.h. */
#include "line_edit.h"

#include <stdio.h>
#include <string.h>

#include "keys.h"

#define CTRL(c) ((c) & 0x1f)

void line_edit_set(line_edit *e, const char *text) {
    snprintf(e->buf, sizeof e->buf, "%s", text ? text : "");
    e->len = e->cur = (int)strlen(e->buf);
}

/* remove bytes [a, b) */
static void cut(line_edit *e, int a, int b) {
    if (a < 0) a = 0;
    if (b > e->len) b = e->len;
    if (a >= b) return;
    memmove(e->buf + a, e->buf + b, (size_t)(e->len - b + 1));
    e->len -= b - a;
    if (e->cur > b) e->cur -= b - a;
    else if (e->cur > a) e->cur = a;
}

int line_edit_key(line_edit *e, int key) {
    switch (key) {
    case K_LEFT: case CTRL('b'): if (e->cur > 0) e->cur--; return 1;
    case K_RIGHT: case CTRL('f'): if (e->cur < e->len) e->cur++; return 1;
    case K_HOME: case CTRL('a'): e->cur = 0; return 1;
    case K_END: case CTRL('e'): e->cur = e->len; return 1;
    case K_BACKSPACE: case 127: case CTRL('h'): cut(e, e->cur - 1, e->cur); return 1;
    case K_DELETE: case CTRL('d'): cut(e, e->cur, e->cur + 1); return 1;
    case CTRL('u'): cut(e, 0, e->cur); return 1;
    case CTRL('k'): cut(e, e->cur, e->len); return 1;
    case CTRL('w'): {
        int a = e->cur;
        while (a > 0 && (e->buf[a - 1] == ' ' || e->buf[a - 1] == '/')) a--; /* the separators first */
        while (a > 0 && e->buf[a - 1] != ' ' && e->buf[a - 1] != '/') a--;
        cut(e, a, e->cur);
        return 1;
    }
    default: break;
    }
    if (key >= 32 && key < 127) {
        if (e->len + 1 >= (int)sizeof e->buf) return 1; /* full: the key is still an editing key */
        memmove(e->buf + e->cur + 1, e->buf + e->cur, (size_t)(e->len - e->cur + 1));
        e->buf[e->cur++] = (char)key;
        e->len++;
        return 1;
    }
    return 0;
}

void line_edit_view(const line_edit *e, int w, int *from, int *cursor_col) {
    int f = 0;
    if (w < 2) w = 2;
    /* the cursor cell (after the text: one more) stays inside the w columns */
    if (e->cur >= w) f = e->cur - w + 1;
    *from = f;
    *cursor_col = e->cur - f;
}
