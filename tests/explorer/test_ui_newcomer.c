/* test_ui_newcomer.c - what a new user of the explorer met (issue: round three),
 * without a terminal: the matrix header under the cursor, the help scrolling,
 * the status line fitted to any width, the sort columns that exist, the pins'
 * colours and legend, the sampled rank's wording, the prompts' line editing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "core/env.h"
#include "export.h"
#include "io/provenance.h"
#include "footer_view.h"
#include "heatmap_view.h"
#include "keys.h"
#include "line_edit.h"
#include "theme.h"
#include "model/symmetry.h"
#include "ui_fixture.h"
#include "testlib.h"

/* occurrences of s in screen row y */
static int row_count(const grid *g, int y, const char *s) {
    char buf[8192];
    grid_row_utf8(g, y, buf, sizeof buf);
    int k = 0;
    for (const char *p = buf; (p = strstr(p, s)); p += strlen(s)) k++;
    return k;
}

/* Tab and the arrows: the cursor column's label once in the header, in the
 * cursor's colours, at its column (was drawn a second time beside it). */
static void test_heat_header(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    app_render(&f.a, &f.v, &f.g);
    app_key(&f.a, '\t', &f.v);
    app_key(&f.a, K_RIGHT, &f.v);
    app_key(&f.a, K_RIGHT, &f.v);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    int y = f.a.layout.heat.y + 1;
    for (int c = 0; c < 4; c++) {
        char lab[16];
        snprintf(lab, sizeof lab, "B%d", c);
        CHECK(row_count(&f.g, y, lab) == 1, "header holds %s once (%d)", lab, row_count(&f.g, y, lab));
    }
    int x = -1;
    char buf[8192];
    grid_row_utf8(&f.g, y, buf, sizeof buf);
    const char *p = strstr(buf, "B2");
    if (p) x = (int)(p - buf);
    CHECK(x > 0 && f.g.cells[y * f.g.w + x].role == ROLE_CURSOR, "B2 in the cursor's colours");
    CHECK(x > 0 && f.g.cells[y * f.g.w + x - 1].role != ROLE_CURSOR, "only the label, not its padding");
    /* the labels stay in order: B1 before B2 before B3 */
    CHECK(strstr(buf, "B1") < strstr(buf, "B2") && strstr(buf, "B2") < strstr(buf, "B3"), "labels in order");
    fix_free(&f);
}

/* The help is taller than its box at 120x40: it scrolls (j/k, G) to its
 * last row, the symmetry paragraph's end, instead of cutting it; any other
 * key closes it. */
static void test_help_scroll(void) {
    ui_fix f;
    fix_init(&f, 4, 120, 40, 1);
    moe_symmetry sym;
    moe_symmetry_group(&f.a.info.cfg, &sym);
    const char *last = strrchr(sym.why, ' ');
    last = last ? last + 1 : sym.why;
    app_key(&f.a, '?', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "keys (j/k PgUp/PgDn scroll, other keys close)", NULL) >= 0, "the title says it scrolls");
    CHECK(grid_find(&f.g, last, NULL) < 0, "the paragraph's end is below the box at first ('%s')", last);
    CHECK(grid_find(&f.g, "expert-order stage on/off", NULL) >= 0, "the first key shows");
    app_key(&f.a, 'G', &f.v);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    CHECK(f.a.show_help, "G scrolls, the help stays");
    CHECK(grid_find(&f.g, last, NULL) >= 0, "G: the paragraph's last word shows ('%s')", last);
    CHECK(grid_find(&f.g, "symmetry group: ", NULL) >= 0, "G: its heading too");
    int bottom = f.a.help_scroll;
    app_key(&f.a, 'j', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.help_scroll == bottom, "j at the end stays at the end (%d, %d)", f.a.help_scroll, bottom);
    app_key(&f.a, 'k', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.help_scroll == bottom - 1, "k scrolls back one row");
    app_mouse(&f.a, 60, 20, 3, &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.show_help && f.a.help_scroll == bottom, "the wheel scrolls it down, to the end (%d)", f.a.help_scroll);
    app_mouse(&f.a, 60, 20, 2, &f.v);
    CHECK(f.a.show_help && f.a.help_scroll == (bottom > 3 ? bottom - 3 : 0), "and up (%d)", f.a.help_scroll);
    app_key(&f.a, 'x', &f.v);
    CHECK(!f.a.show_help, "another key closes it");
    /* a screen where it all fits: no scrolling, the old title */
    fix_grid(&f, 200, 60, 1);
    app_key(&f.a, '?', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "keys (any key closes)", NULL) >= 0 && grid_find(&f.g, last, NULL) >= 0,
          "200x60: all of it, nothing to scroll");
    fix_free(&f);
}

/* s on a regression set (no accuracy column): rank, order, AUC and round,
 * never the missing acc.barrier; with labels all four. */
static void test_sort_columns(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    const char *want_cls[] = {"order", "acc.barrier", "AUC", "rank"}, *want_reg[] = {"order", "AUC", "rank", "order"};
    for (int k = 0; k < 4; k++) {
        app_key(&f.a, 's', &f.v);
        CHECK(strstr(f.a.msg, want_cls[k]) != NULL, "labels: s #%d sorts by %s (%s)", k + 1, want_cls[k], f.a.msg);
    }
    f.v.kind = LS_REGRESS;
    for (int k = 0; k < 4; k++) {
        app_key(&f.a, 's', &f.v);
        app_render(&f.a, &f.v, &f.g);
        CHECK(strstr(f.a.msg, want_reg[k]) != NULL && !strstr(f.a.msg, "acc"), "targets: s #%d sorts by %s (%s)", k + 1,
              want_reg[k], f.a.msg);
        CHECK(grid_find(&f.g, "acc.barrier", NULL) < 0, "targets: no acc.barrier on the screen");
    }
    fix_free(&f);
}

/* the message line's text (row y, from x0 on), trailing spaces dropped */
static void line_text(const grid *g, int y, char *buf, int cap) {
    grid_row_utf8(g, y, buf, cap);
    int l = (int)strlen(buf);
    while (l > 0 && buf[l - 1] == ' ') buf[--l] = 0;
}

/* The status line at every width from 80 to 200 columns, under messages of
 * several lengths: the status is one of its wordings whole, or cut at a
 * word with an ellipsis, never mid-word ("...rank 2433 of 40320 (ti"); at
 * 120 columns beside a message the rank shows whole. */
static void test_status_fit(void) {
    char t[3][STATUS_TIER_CAP];
    int nt = status_tiers("done: expert order rank 2433 of 40320 (tied: 3; by AUC 12)", t);
    CHECK(nt == 3 && !strcmp(t[1], "done: expert order rank 2433 of 40320") && !strcmp(t[2], "expert rank 2433/40320"),
          "three wordings (%d: '%s' '%s')", nt, t[1], t[2]);
    nt = status_tiers("busy: computing landscape 120/40320", t);
    CHECK(nt == 2 && !strcmp(t[1], "busy: landscape 120/40320"), "busy: two wordings ('%s')", t[1]);
    CHECK(status_tiers("done", t) == 1, "one word: one wording");
    char out[64];
    CHECK(text_fit("order 1 2 3 rank 17", 12, 0, 1, out, sizeof out) == 12 && !strcmp(out, "order 1 2..."),
          "ASCII: cut at a word, '...' (%s)", out);
    CHECK(text_fit("abc", 12, 1, 1, out, sizeof out) == 3 && !strcmp(out, "abc"), "fits: whole");
    CHECK(text_fit("supercalifragilistic", 8, 1, 1, out, sizeof out) == 8 && !strcmp(out, "superca\u2026"),
          "a long word is cut inside (%s)", out);
    CHECK(text_fit("no layer 'model.layers.1'", 20, 0, 0, out, sizeof out) == 20 && !strcmp(out, "no layer 'model.laye"),
          "a message keeps every column (%s)", out);

    const char *status = "expert order rank 2433 of 40320 (tied: 3; by AUC 12)";
    const char *msgs[] = {"", "sorted by AUC, ascending",
                          "pinned order 1 2 3 0 as 1 (weight matching on)",
                          "saved dense4-seed1-seed2.curves-expert-wm.png (the landscape figure when the table is complete)"};
    int bad = 0;
    for (int w = 80; w <= 200; w++)
        for (int m = 0; m < 4; m++) {
            ui_fix f;
            fix_init(&f, 4, w, 30, 1);
            snprintf(f.v.status, sizeof f.v.status, "done: %s", status);
            app_message(&f.a, 0, "%s", msgs[m]);
            app_render(&f.a, &f.v, &f.g);
            char line[8192], foot[8192];
            line_text(&f.g, f.g.h - 1, line, sizeof line);
            line_text(&f.g, f.g.h - 2, foot, sizeof foot);
            /* where the status went, and in which wording */
            const char *where = strstr(line, "rank") ? line : foot;
            const char *st = strstr(where, "done: expert");
            if (!st) st = strstr(where, "expert rank");
            int ok = st && (!strcmp(st, "done: expert order rank 2433 of 40320 (tied: 3; by AUC 12)") ||
                            !strcmp(st, "done: expert order rank 2433 of 40320") || !strcmp(st, "expert rank 2433/40320") ||
                            strstr(st, "\u2026"));
            /* the message whole, or as much of it as the line holds */
            int msg_ok = !msgs[m][0] || strstr(line, msgs[m]) ||
                         (strstr(line, "\u2026") && !strncmp(line, msgs[m], (size_t)(w - 4)));
            /* a message that leaves no room for a status: alone */
            if (!st && !strstr(where, "rank")) ok = (int)strlen(msgs[m]) + 2 + 12 > w - 1;
            if (w == 120 && m == 2) ok = ok && (strstr(line, "rank 2433 of 40320") || strstr(line, "rank 2433/40320") ||
                                               strstr(foot, "rank 2433"));
            if (!ok || !msg_ok) {
                if (bad++ < 4) printf("  %d cols, message %d:\n  |%s|\n  |%s|\n", w, m, foot, line);
            }
            fix_free(&f);
        }
    CHECK(bad == 0, "%d widths cut the status or the message mid-word", bad);
}

/* does the file at path hold s (bytes, anywhere)? */
static int file_has(const char *path, const char *s) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    static char buf[1 << 20];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    for (size_t i = 0; i + strlen(s) <= n; i++)
        if (!memcmp(buf + i, s, strlen(s))) return 1;
    return 0;
}

/* The figure of the explorer (p, --png-live): the pins' legend names keep
 * the digit apart from the order ("pin 1 [3 2 1 0]"); a pin equal to the
 * plotted curve is drawn over it (after it, dashed), not hidden under it;
 * Creation Time is the export's moment, not the explorer's start. */
static void test_figure_pins_time(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    setenv("SOURCE_DATE_EPOCH", "1000000000", 1);
    env_refresh();
    char *argv[] = {"moescope", "a", "b"};
    prov_set_command(3, argv);
    app_key(&f.a, 'P', &f.v); /* the plotted order 3 2 1 0, pinned: the same curve twice */
    CHECK(f.a.pins.n == 1, "pinned");
    char dir[] = "/tmp/moescope-fig-XXXXXX", svg[600], png[600];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(svg, sizeof svg, "%s/c.svg", dir);
    snprintf(png, sizeof png, "%s/c.png", dir);
    ms_err err;
    setenv("SOURCE_DATE_EPOCH", "2000000000", 1); /* time passes in the explorer */
    env_refresh();
    CHECK(export_curves_png(&f.v, &f.a.pins, 0, NULL, "d/seed1.safetensors", "d/seed2.safetensors", svg, &err) == 0 &&
              export_curves_png(&f.v, &f.a.pins, 0, NULL, "d/seed1.safetensors", "d/seed2.safetensors", png, &err) == 0,
          "export: %s", err.msg);
    CHECK(file_has(png, "2033-05-18T03:33:20Z") && !file_has(png, "2001-09-09"), "PNG: Creation Time of the export");
    CHECK(file_has(png, "pin 1 [3 2 1 0] (barrier 0.2)") && file_has(png, "order [3 2 1 0] (barrier 0.2)"),
          "legend: the orders in brackets");
    FILE *fp = fopen(svg, "r");
    static char buf[1 << 20];
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    if (fp) fclose(fp);
    buf[n] = 0;
    const char *sel = strstr(buf, "data-label=\"order [3 2 1 0]"), *pn = strstr(buf, "data-label=\"pin 1 [3 2 1 0]");
    CHECK(sel && pn && pn > sel, "the pin is drawn after (over) the plotted curve");
    const char *pin_end = pn ? strstr(pn, "</g>") : NULL;
    char *dash = pn ? strstr(pn, "stroke-dasharray") : NULL;
    CHECK(dash && dash < pin_end, "the pin is dashed: the plotted curve shows between its dashes");
    /* the SVG title inside the font's group */
    const char *font = strstr(buf, "font-family"), *title = strstr(buf, "class=\"title\"");
    CHECK(font && title && font < title, "SVG: the title inside the font-family group");
    remove(svg);
    remove(png);
    rmdir(dir);
    unsetenv("SOURCE_DATE_EPOCH");
    env_refresh();
    fix_free(&f);
}

/* Four pins: four colours (roles) in the plot, in the legend and in the
 * table's mark column; the legend reads "1 [3 2 1 0] 0.2000", the digit
 * apart from the order. */
static void test_pin_colours(void) {
    ui_fix f;
    fix_init(&f, 4, 120, 40, 1);
    f.g.color = 1;
    ls_curve keep = f.v.selected;
    const int orders[4][4] = {{3, 2, 1, 0}, {0, 2, 1, 3}, {1, 0, 3, 2}, {2, 3, 0, 1}};
    for (int i = 0; i < 4; i++) {
        if (i) fake_curve(&f.v.selected, 4, 25, orders[i], 0.1 + 0.1 * i);
        app_key(&f.a, 'P', &f.v);
        if (i) {
            free(f.v.selected.loss);
            free(f.v.selected.acc);
        }
    }
    f.v.selected = keep;
    CHECK(f.a.pins.n == 4, "four pins (%d)", f.a.pins.n);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    const ui_rect *cr = &f.a.layout.curves;
    int roles[4] = {-1, -1, -1, -1};
    for (int y = cr->y + 1; y < cr->y + cr->h; y++)
        for (int x = cr->x; x < cr->x + cr->w; x++) {
            const grid_cell *c = &f.g.cells[y * f.g.w + x];
            if (c->cp >= '1' && c->cp <= '4' && c->role >= ROLE_CURVE_PIN(0) && c->role <= ROLE_CURVE_PIN(3))
                roles[c->cp - '1'] = c->role;
        }
    int distinct = 1;
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) distinct &= roles[i] >= 0 && roles[i] != roles[j];
    CHECK(distinct, "the pins' digits in four roles (%d %d %d %d)", roles[0], roles[1], roles[2], roles[3]);
    char want[64];
    snprintf(want, sizeof want, "1 [3 2 1 0] 0.2000");
    CHECK(grid_find(&f.g, want, NULL) > cr->y, "legend: '%s'", want);
    /* each role has a colour of its own in the default theme, on 8 and 256 colours */
    theme th;
    theme_init(&th, 1);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++) {
            const theme_style *a = &th.style[ROLE_CURVE_PIN(i)], *b = &th.style[ROLE_CURVE_PIN(j)];
            CHECK(a->fg256 != b->fg256 && (a->fg != b->fg || a->attr != b->attr), "pins %d and %d look apart", j + 1,
                  i + 1);
        }
    fix_free(&f);
}

/* the prompts' line editing (readline's keys) */
static void test_line_edit(void) {
    line_edit e;
    line_edit_set(&e, "out/figs/name.json");
    CHECK(e.cur == e.len && e.len == 18, "set: the cursor at the end");
    line_edit_key(&e, 23); /* Ctrl-W: the last path component */
    CHECK(!strcmp(e.buf, "out/figs/"), "Ctrl-W: one component (%s)", e.buf);
    line_edit_key(&e, 23);
    CHECK(!strcmp(e.buf, "out/"), "Ctrl-W again: the next (%s)", e.buf);
    line_edit_key(&e, K_HOME);
    line_edit_key(&e, '/');
    CHECK(!strcmp(e.buf, "/out/") && e.cur == 1, "Home, then typing inserts at the start (%s)", e.buf);
    line_edit_key(&e, K_END);
    line_edit_key(&e, 'a');
    line_edit_key(&e, 'b');
    line_edit_key(&e, K_LEFT);
    line_edit_key(&e, K_LEFT);
    line_edit_key(&e, 'X');
    CHECK(!strcmp(e.buf, "/out/Xab") && e.cur == 6, "arrows move, typing inserts at the cursor (%s)", e.buf);
    line_edit_key(&e, K_DELETE);
    CHECK(!strcmp(e.buf, "/out/Xb"), "Delete: the character at the cursor (%s)", e.buf);
    line_edit_key(&e, K_BACKSPACE);
    CHECK(!strcmp(e.buf, "/out/b") && e.cur == 5, "Backspace: the one before (%s)", e.buf);
    line_edit_key(&e, 11); /* Ctrl-K */
    CHECK(!strcmp(e.buf, "/out/"), "Ctrl-K: to the end (%s)", e.buf);
    line_edit_key(&e, K_LEFT);
    line_edit_key(&e, 21); /* Ctrl-U */
    CHECK(!strcmp(e.buf, "/") && e.cur == 0, "Ctrl-U: to the start (%s)", e.buf);
    line_edit_key(&e, 5); /* Ctrl-E */
    line_edit_key(&e, 1); /* Ctrl-A */
    CHECK(e.cur == 0, "Ctrl-A, Ctrl-E: the ends");
    CHECK(!line_edit_key(&e, K_ENTER) && !line_edit_key(&e, K_ESC), "Enter and Esc are the caller's");
    /* a line longer than its room scrolls to keep the cursor in view */
    line_edit_set(&e, "abcdefghijklmnopqrstuvwxyz");
    int from, cc;
    line_edit_view(&e, 10, &from, &cc);
    CHECK(from == 17 && cc == 9, "the end in view (%d, %d)", from, cc);
    line_edit_key(&e, K_HOME);
    line_edit_view(&e, 10, &from, &cc);
    CHECK(from == 0 && cc == 0, "the start in view");
}

/* One export directory: the first p, e or x asks for it (the default
 * offered), the answer is kept for the others, O asks again, Esc keeps it;
 * x's name prompt comes after the directory. */
static void test_export_dir_prompt(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    snprintf(f.a.dir_default, sizeof f.a.dir_default, "/home/me");
    CHECK(app_key(&f.a, 'p', &f.v) == FX_REDRAW && f.a.prompt == PROMPT_DIR && !strcmp(f.a.line.buf, "/home/me"),
          "p: the directory asked first, the default offered (%s)", f.a.line.buf);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "export directory for p, e and x (Enter, Esc): /home/me", NULL) == f.g.h - 1,
          "the prompt on the message line");
    int cx = -1;
    grid_find(&f.g, "/home/me", &cx);
    CHECK(cx >= 0 && f.g.cells[(f.g.h - 1) * f.g.w + cx + 8].role == ROLE_CURSOR, "the cursor after the text");
    app_key(&f.a, K_LEFT, &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.g.cells[(f.g.h - 1) * f.g.w + cx + 7].role == ROLE_CURSOR, "Left: the cursor on the last character");
    app_key(&f.a, 21, &f.v); /* Ctrl-U */
    app_key(&f.a, K_END, &f.v);
    for (const char *c = "/tmp/figs"; *c; c++) app_key(&f.a, *c, &f.v);
    CHECK(!strcmp(f.a.line.buf, "e/tmp/figs"), "edited: %s", f.a.line.buf); /* Ctrl-U kept what was after the cursor */
    app_key(&f.a, K_HOME, &f.v);
    app_key(&f.a, K_DELETE, &f.v);
    CHECK(app_key(&f.a, K_ENTER, &f.v) == FX_OUT_DIR && !f.a.prompt, "Enter: the caller checks the directory");
    CHECK(app_export_dir(&f.a, "/nope", "/nope: cannot write there") == 0 && f.a.msg_error && !f.a.export_dir[0],
          "a refused directory: said, nothing kept, nothing exported");
    app_key(&f.a, 'p', &f.v);
    CHECK(f.a.prompt == PROMPT_DIR && f.a.prompt_then == FX_PNG, "asked again");
    app_key(&f.a, K_ENTER, &f.v);
    CHECK(app_export_dir(&f.a, "/tmp/figs", "") == FX_PNG && !strcmp(f.a.export_dir, "/tmp/figs"),
          "accepted: the figure asked for is written next");
    CHECK(app_key(&f.a, 'p', &f.v) == FX_PNG && app_key(&f.a, 'e', &f.v) == FX_EXPORT, "then p and e at once");
    CHECK(app_key(&f.a, 'x', &f.v) == FX_REDRAW && f.a.prompt == PROMPT_STATE, "x: its name prompt at once");
    app_key(&f.a, K_ESC, &f.v);
    CHECK(app_key(&f.a, 'O', &f.v) == FX_REDRAW && f.a.prompt == PROMPT_DIR && !strcmp(f.a.line.buf, "/tmp/figs"),
          "O: the directory asked again, the current one offered");
    app_key(&f.a, 23, &f.v); /* Ctrl-W */
    app_key(&f.a, K_ESC, &f.v);
    CHECK(!f.a.prompt && !strcmp(f.a.export_dir, "/tmp/figs"), "Esc: unchanged");
    /* x before any directory: the directory, then the name */
    f.a.export_dir[0] = 0;
    app_key(&f.a, 'x', &f.v);
    CHECK(f.a.prompt == PROMPT_DIR, "x first: the directory");
    app_key(&f.a, K_ENTER, &f.v);
    CHECK(app_export_dir(&f.a, "/tmp/figs", "") == FX_REDRAW && f.a.prompt == PROMPT_STATE &&
              strstr(f.a.line.buf, ".state-expert-wm.json"), "then the name (%s)", f.a.line.buf);
    fix_free(&f);
}

/* export_dir_ready: made with its parents, "~" the home directory, a file refused, an
 * input's folder refused */
static void test_export_dir_ready(void) {
    char dir[] = "/tmp/moescope-outdir-XXXXXX", want[600], out[600], why[600];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(want, sizeof want, "%s/a/b/", dir);
    CHECK(export_dir_ready(want, NULL, 0, out, sizeof out, why, sizeof why) == 0 && !why[0], "made with its parents: %s", why);
    snprintf(want, sizeof want, "%s/a/b", dir);
    CHECK(!strcmp(out, want), "no trailing '/' (%s)", out);
    struct stat st;
    CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode), "the directory exists");
    snprintf(want, sizeof want, "%s/f", dir);
    FILE *fp = fopen(want, "w");
    if (fp) fclose(fp);
    CHECK(export_dir_ready(want, NULL, 0, out, sizeof out, why, sizeof why) != 0 && strstr(why, "not a directory"),
          "a file: refused (%s)", why);
    snprintf(want, sizeof want, "%s/f/sub", dir);
    CHECK(export_dir_ready(want, NULL, 0, out, sizeof out, why, sizeof why) != 0 && strstr(why, "cannot make"),
          "under a file: refused (%s)", why);
    CHECK(export_dir_ready("~", NULL, 0, out, sizeof out, why, sizeof why) == 0 && out[0] == '/', "~: home (%s)", out);
    /* never a checkpoint folder given as input nor inside one: refused before anything is
     * made (also by a path through a directory it would make and "..") */
    char ck[600];
    snprintf(ck, sizeof ck, "%s/ck", dir);
    CHECK(mkdir(ck, 0777) == 0, "the input folder");
    const char *ins[2] = {ck, NULL};
    snprintf(want, sizeof want, "%s/new/../ck/exports", dir);
    CHECK(export_dir_ready(want, ins, 2, out, sizeof out, why, sizeof why) != 0 &&
              strstr(why, "is inside the folder of the input checkpoint"), "inside the input's folder: refused (%s)", why);
    snprintf(want, sizeof want, "%s/new", dir);
    CHECK(stat(want, &st) != 0, "nothing made for the refused directory");
    CHECK(export_dir_ready(ck, ins, 2, out, sizeof out, why, sizeof why) != 0, "the input's folder itself: refused");
    snprintf(want, sizeof want, "%s/beside", dir);
    CHECK(export_dir_ready(want, ins, 2, out, sizeof out, why, sizeof why) == 0 && stat(want, &st) == 0,
          "beside it: made (%s)", why);
    rmdir(want);
    rmdir(ck);
    char def[600];
    export_dir_default(def, sizeof def);
    CHECK(def[0] == '/' && access(def, W_OK) == 0, "the default is absolute and writable (%s)", def);
    snprintf(want, sizeof want, "%s/a/b", dir);
    rmdir(want);
    snprintf(want, sizeof want, "%s/a", dir);
    rmdir(want);
    snprintf(want, sizeof want, "%s/f", dir);
    remove(want);
    rmdir(dir);
}

/* A network's title at 80 and 120 columns (and between): row 2 keeps both end
 * points' losses, shortening the objective's name and the dimensions first;
 * row 1 says the set's sequences and the tokens the blocks route (the routing
 * load's count), or "64 seq" when narrow. */
static void test_network_title(void) {
    int bad = 0;
    for (int w = 80; w <= 160; w += 10) {
        ui_fix f;
        fake_view(&f.v, 4);
        ui_info in = fake_info(4);
        strcpy(in.layer, "transformer.h.0.mlp");
        strcpy(in.a_name, "every4/seed1");
        strcpy(in.b_name, "every4/seed2");
        strcpy(in.cfg.family, "gpt2");
        strcpy(in.objective, "network loss, MoE block 0 (mean next-token cross-entropy)");
        strcpy(in.n_full, "64 sequences, 8256 tokens");
        strcpy(in.n_short, "64 seq");
        in.N = 8192;
        app_init(&f.a, &in, 25);
        char **names = malloc(3 * sizeof(char *));
        for (int i = 0; i < 3; i++) {
            names[i] = malloc(32);
            snprintf(names[i], 32, "transformer.h.%d.mlp", i);
        }
        app_set_layers(&f.a, names, 3, 0);
        grid_init(&f.g, w, 24, 1);
        app_render(&f.a, &f.v, &f.g);
        /* skip-order moves every block of the network: its legend entry says so */
        if (count_rows_with(&f.g, &f.a.layout.curves, "skip-order, all 3 blocks 0.3000") != 1 && bad++ < 3)
            printf("  %d cols: skip-order's legend entry does not say it moves all 3 blocks\n", w);
        char r1[4096], r2[4096];
        line_text(&f.g, 0, r1, sizeof r1);
        line_text(&f.g, 1, r2, sizeof r2);
        int ok = strstr(r2, "A 0.3000 B 0.3200") && (int)strlen(r2) <= w && strstr(r2, "loss") &&
                 (strstr(r1, "64 sequences, 8256 tokens") || strstr(r1, "64 seq")) && !strstr(r1, "N=");
        if (w >= 120) ok = ok && strstr(r2, "acc A 0.900 B 0.890");
        if (!ok && bad++ < 3) printf("  %d cols:\n  |%s|\n  |%s|\n", w, r1, r2);
        fix_free(&f);
    }
    CHECK(bad == 0, "%d widths lose a network title's losses or its set's count, or skip-order's blocks", bad);
}

int main(void) {
    test_heat_header();
    test_help_scroll();
    test_sort_columns();
    test_status_fit();
    test_figure_pins_time();
    test_pin_colours();
    test_line_edit();
    test_export_dir_prompt();
    test_export_dir_ready();
    test_network_title();
    return test_summary("test_ui_newcomer");
}
