/* test_lesson_view.c - the lesson screen's layout, without a terminal: the
 * title and progress, paragraphs wrapped at spaces within the width (no word
 * lost), the reproduce line, the keys, the "computing" state and the
 * too-small message. */
#include <string.h>

#include "lesson_view.h"
#include "testlib.h"

/* Every word of text appears, in order, in the grid's rows. */
static int words_in_order(const grid *g, const char *text) {
    char all[8192] = "", row[1024];
    for (int y = 0; y < g->h; y++) {
        strncat(all, grid_row_utf8(g, y, row, sizeof row), sizeof all - strlen(all) - 2);
        strcat(all, " ");
    }
    char buf[LESSON_TEXT];
    snprintf(buf, sizeof buf, "%s", text);
    const char *at = all;
    for (char *w = strtok(buf, " \n"); w; w = strtok(NULL, " \n")) {
        const char *f = strstr(at, w);
        if (!f) return 0;
        at = f + strlen(w);
    }
    return 1;
}

int main(void) {
    lesson_step s;
    memset(&s, 0, sizeof s);
    s.index = 2;
    snprintf(s.title, sizeof s.title, "Aligning recovers the scramble");
    snprintf(s.text, sizeof s.text,
             "The expert cost compares Gram matrices of each expert's weights, which no hidden "
             "permutation changes: 1.37e-06 on the assigned cells.\nThe assignment picks the "
             "order 1 0 3 2, the inverse of the scramble.\n");
    snprintf(s.cli, sizeof s.cli, "moescope cost A.safetensors S.safetensors");
    grid g;
    grid_init(&g, 50, 20, 1);
    lesson_render(&g, &s, 2, NULL);
    int x;
    CHECK(grid_find(&g, "step 3/7: Aligning recovers", &x) == 0, "title row");
    CHECK(words_in_order(&g, s.text), "a word of the text is lost or out of order");
    CHECK(grid_find(&g, "reproduce: moescope cost", &x) >= 0, "reproduce line");
    CHECK(grid_find(&g, "x explore this pair", &x) == g.h - 1, "keys on the last row");
    char row[1024];
    for (int y = 3; y < g.h; y++) { // wrapped at spaces: no row ends inside a word
        grid_row_utf8(&g, y, row, sizeof row);
        int n = (int)strlen(row);
        CHECK(!(n >= g.w - 2 && row[g.w - 3] != ' ' && row[g.w - 2] != ' ' && row[g.w - 1] != ' '),
              "row %d runs to the edge: '%s'", y, row);
    }
    CHECK(grid_find(&g, "1.37e-06", &x) >= 0, "a number was split by the wrap");
    lesson_render(&g, NULL, 4, "working");
    CHECK(grid_find(&g, "computing step 5", &x) >= 0, "computing state");
    CHECK(grid_find(&g, "working", &x) == g.h - 2, "status line");
    grid_free(&g);
    grid_init(&g, 30, 8, 0);
    lesson_render(&g, &s, 2, NULL);
    CHECK(grid_find(&g, "terminal too small", &x) == 0, "too small");
    grid_free(&g);
    return test_summary("test_lesson_view");
}
