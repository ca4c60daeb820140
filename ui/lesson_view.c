/* lesson_view.c - see lesson_view.h. */
#include "lesson_view.h"

#include <stdio.h>
#include <string.h>

/* Words of text[0..len) wrapped into lines of at most w columns from row y;
 * returns the row after the last (stops before row ymax). */
static int wrap(grid *g, int x, int y, int w, int ymax, int role, const char *text, size_t len) {
    size_t i = 0;
    while (i < len && y < ymax) {
        while (i < len && text[i] == ' ') i++;
        size_t start = i, last_break = i;
        int cols = 0;
        while (i < len && cols < w) {
            if (text[i] == ' ') last_break = i;
            if (((unsigned char)text[i] & 0xC0) != 0x80) cols++;
            i++;
        }
        if (i < len && cols >= w && last_break > start) i = last_break; // break at a space
        char line[1024];
        size_t n = i - start < sizeof line - 1 ? i - start : sizeof line - 1;
        memcpy(line, text + start, n);
        line[n] = '\0';
        grid_text(g, x, y++, w, role, line);
    }
    return y;
}

/* One shell command t[0..len) on rows of at most w columns from row y, broken
 * at spaces with a trailing " \\" on every row but the last, so the rows copied
 * from the terminal are still the command (the shell joins them); returns the
 * row after the last. */
static int command_rows(grid *g, int x, int y, int w, int ymax, const char *t, size_t len) {
    size_t i = 0;
    while (i < len && y < ymax) {
        while (i < len && t[i] == ' ') i++;
        size_t start = i, br = start;
        if (len - start <= (size_t)w) {
            grid_printf(g, x, y++, w, ROLE_DIM, "%.*s", (int)(len - start), t + start);
            break;
        }
        for (size_t k = start; k < len && k - start <= (size_t)w - 2; k++)
            if (t[k] == ' ') br = k;
        if (br == start) br = start + (size_t)w - 2; // one word longer than the row: cut
        grid_printf(g, x, y++, w, ROLE_DIM, "%.*s \\", (int)(br - start), t + start);
        i = br;
    }
    return y;
}

/* "reproduce:" on a row of its own, the step's comment ("# the naive row") as
 * comment rows, then each command of cli (separated by "; ") on rows of its own
 * (command_rows): never a command wrapped the way text is. */
static void reproduce_rows(grid *g, int y, int w, int ymax, const char *cli) {
    grid_text(g, 2, y++, w, ROLE_DIM, "reproduce:");
    const char *hash = strstr(cli, " # ");
    size_t cmds = hash ? (size_t)(hash - cli) : strlen(cli);
    if (hash) {
        const char *c = hash + 1;
        y = wrap(g, 4, y, w - 2, ymax, ROLE_DIM, c, strlen(c));
    }
    const char *p = cli, *end = cli + cmds;
    while (p < end && y < ymax) {
        const char *semi = strstr(p, "; ");
        size_t len = semi && semi < end ? (size_t)(semi - p) : (size_t)(end - p);
        while (len > 0 && p[len - 1] == ' ') len--;
        y = command_rows(g, 4, y, w - 2, ymax, p, len);
        p += len;
        while (p < end && (*p == ';' || *p == ' ')) p++;
    }
}

static void keys_line(grid *g, int y) {
    static const char *keys[][2] = {{"n", "next"}, {"b", "back"}, {"x", "explore this pair"},
                                    {"q", "quit"}};
    int x = 1;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        x += grid_text(g, x, y, g->w - x, ROLE_KEY, keys[i][0]);
        x += grid_printf(g, x, y, g->w - x, ROLE_NORMAL, " %s   ", keys[i][1]);
    }
}

void lesson_render(grid *g, const lesson_step *s, int index, const char *status) {
    grid_clear(g);
    if (g->w < LESSON_MIN_W || g->h < LESSON_MIN_H) {
        grid_printf(g, 0, 0, g->w, ROLE_ERROR, "terminal too small for the lesson (need %dx%d)",
                    LESSON_MIN_W, LESSON_MIN_H);
        return;
    }
    grid_printf(g, 0, 0, g->w, ROLE_TITLE, " moescope lesson - step %d/%d%s%s", index + 1,
                LESSON_STEPS, s ? ": " : "", s ? s->title : "");
    for (int i = 0; i < LESSON_STEPS; i++) // progress: one mark per step
        grid_put(g, 1 + 2 * i, 1, i == index ? (g->utf8 ? 0x25CF : '*')
                                             : (g->utf8 ? 0x25CB : '.'),
                 i <= index ? ROLE_MARK : ROLE_DIM);
    int w = g->w - 4, y = 3, ymax = g->h - 3;
    if (!s) {
        grid_printf(g, 2, y, w, ROLE_MESSAGE, "computing step %d ...", index + 1);
    } else {
        const char *p = s->text;
        while (*p && y < ymax) { // one paragraph per line of text, a blank row between
            const char *nl = strchr(p, '\n');
            size_t len = nl ? (size_t)(nl - p) : strlen(p);
            y = wrap(g, 2, y, w, ymax, ROLE_NORMAL, p, len) + 1;
            p += len + (nl != NULL);
        }
        if (s->cli[0] && y < ymax) reproduce_rows(g, y, w, ymax, s->cli);
    }
    if (status) grid_text(g, 1, g->h - 2, g->w - 2, ROLE_MESSAGE, status);
    keys_line(g, g->h - 1);
}
