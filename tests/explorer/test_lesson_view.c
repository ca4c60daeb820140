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

/* The reproduce rows of a long cli at 80 columns, copied as a terminal would
 * (each row, trailing blanks dropped): each command whole once the shell joins
 * the rows ending in " \\", the comment on rows starting with '#'. */
static void test_reproduce_copyable(void) {
    lesson_step s;
    memset(&s, 0, sizeof s);
    snprintf(s.title, sizeof s.title, "A scramble computes the same function");
    snprintf(s.text, sizeof s.text, "Take A and shuffle it.\n");
    const char *c1 = "/home/someone/moescope/moescope scramble /home/someone/moescope/sample-checkpoints/gpt/"
                     "topk4/seed1 -o /home/someone/moescope-lesson/S --seed 7 --translate";
    const char *c2 = "moescope eval /home/someone/moescope-lesson/S --eval /home/someone/moescope/"
                     "sample-checkpoints/gpt/topk4/eval.safetensors";
    snprintf(s.cli, sizeof s.cli, "%s; %s   # the order pi; the same loss for both", c1, c2);
    grid g;
    grid_init(&g, 80, 30, 1);
    lesson_render(&g, &s, 1, NULL);
    int x, y = grid_find(&g, "reproduce:", &x) + 1;
    char cmds[4][2048] = {{0}}, row[1024];
    int nc = 0, comment = 0, joined = 0;
    for (; y > 0 && y < g.h - 3 && nc < 4; y++) {
        grid_row_utf8(&g, y, row, sizeof row);
        int n = (int)strlen(row);
        while (n > 0 && row[n - 1] == ' ') row[--n] = 0;
        char *t = row;
        while (*t == ' ') t++;
        if (!*t) break;
        if (*t == '#') { comment = comment || strstr(t, "the order pi") != NULL; continue; }
        int cont = n >= 2 && !strcmp(row + n - 2, " \\");
        if (cont) row[n - 2] = 0;
        if (joined) strcat(cmds[nc], " ");
        strcat(cmds[nc], t);
        joined = cont;
        if (!cont) nc++;
    }
    CHECK(nc == 2 && !strcmp(cmds[0], c1) && !strcmp(cmds[1], c2), "the commands copied whole (%d):\n%s\n%s", nc,
          cmds[0], cmds[1]);
    CHECK(comment, "the comment on a row of its own, starting with #");
    grid_free(&g);
}

int main(void) {
    test_reproduce_copyable();
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
    int yr = grid_find(&g, "reproduce:", &x);
    CHECK(yr >= 0 && grid_find(&g, "moescope cost A.safetensors S.safetensors", &x) == yr + 1,
          "reproduce: the command whole on the row after it");
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
