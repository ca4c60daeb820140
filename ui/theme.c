/* theme.c - the default colour theme, the monochrome one, and theme files. */
#include "theme.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *role_names[ROLE_COUNT] = {
    "normal", "title", "pane_title", "border", "dim",
    "heat_0", "heat_1", "heat_2", "heat_3", "heat_4", "heat_5", "heat_6", "heat_7",
    "assigned", "cursor", "mark",
    "curve_naive", "curve_skip", "curve_current", "curve_selected", "chord",
    "key", "on", "off", "message", "error", "gauge",
};

const char *theme_role_name(int role) {
    return role >= 0 && role < ROLE_COUNT ? role_names[role] : "?";
}

int theme_env_color(int has_colors) {
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0]) return 0; /* no-color.org: set and non-empty */
    return has_colors != 0;
}

static void set(theme *t, int role, int fg, int bg, int attr) {
    t->style[role] = (theme_style){fg, bg, -1, -1, attr};
}

void theme_init(theme *t, int color) {
    memset(t, 0, sizeof *t);
    t->color = color;
    for (int r = 0; r < ROLE_COUNT; r++) set(t, r, -1, -1, 0);
    if (!color) {
        /* monochrome: meaning carried by attributes and glyphs */
        set(t, ROLE_TITLE, -1, -1, TA_BOLD);
        set(t, ROLE_PANE_TITLE, -1, -1, TA_REVERSE);
        set(t, ROLE_DIM, -1, -1, TA_DIM);
        set(t, ROLE_ASSIGNED, -1, -1, TA_BOLD | TA_UNDERLINE);
        set(t, ROLE_CURSOR, -1, -1, TA_REVERSE);
        set(t, ROLE_MARK, -1, -1, TA_BOLD);
        set(t, ROLE_CURVE_CURRENT, -1, -1, TA_BOLD);
        set(t, ROLE_KEY, -1, -1, TA_BOLD);
        set(t, ROLE_ON, -1, -1, TA_BOLD);
        set(t, ROLE_OFF, -1, -1, TA_DIM);
        set(t, ROLE_ERROR, -1, -1, TA_BOLD);
        set(t, ROLE_GAUGE, -1, -1, TA_REVERSE);
        return;
    }
    set(t, ROLE_TITLE, 7, 4, TA_BOLD);
    set(t, ROLE_PANE_TITLE, 0, 6, 0);
    set(t, ROLE_BORDER, 4, -1, 0);
    set(t, ROLE_DIM, -1, -1, TA_DIM);
    /* heat: blue (cheap) to red (expensive); text stays readable on each */
    static const int heat_bg[HEAT_LEVELS] = {4, 4, 6, 6, 2, 3, 5, 1};
    static const int heat_fg[HEAT_LEVELS] = {7, 7, 0, 0, 0, 0, 7, 7};
    static const int heat_256[HEAT_LEVELS] = {18, 25, 31, 36, 71, 142, 172, 160};
    for (int i = 0; i < HEAT_LEVELS; i++) {
        set(t, ROLE_HEAT_0 + i, heat_fg[i], heat_bg[i], 0);
        t->style[ROLE_HEAT_0 + i].bg256 = heat_256[i];
        t->style[ROLE_HEAT_0 + i].fg256 = i < 5 && i > 1 ? 16 : 231;
    }
    set(t, ROLE_ASSIGNED, 7, 0, TA_BOLD | TA_UNDERLINE);
    set(t, ROLE_CURSOR, 0, 7, 0);
    set(t, ROLE_MARK, 3, -1, TA_BOLD);
    set(t, ROLE_CURVE_NAIVE, 1, -1, 0);
    set(t, ROLE_CURVE_SKIP, 3, -1, 0);
    set(t, ROLE_CURVE_CURRENT, 2, -1, TA_BOLD);
    set(t, ROLE_CURVE_SELECTED, 6, -1, TA_BOLD);
    set(t, ROLE_CHORD, 7, -1, TA_DIM);
    set(t, ROLE_KEY, 0, 6, TA_BOLD);
    set(t, ROLE_ON, 2, -1, TA_BOLD);
    set(t, ROLE_OFF, 1, -1, 0);
    set(t, ROLE_MESSAGE, 6, -1, 0);
    set(t, ROLE_ERROR, 7, 1, TA_BOLD);
    set(t, ROLE_GAUGE, 0, 2, 0);
}

int theme_load(theme *t, const char *path, ms_err *err) {
    FILE *fp = fopen(path, "r");
    if (!fp) return ms_fail(err, "%s: cannot open theme", path);
    char line[256];
    int lineno = 0;
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        if (*p == '#' || *p == '\n' || !*p) continue;
        char name[64], a1[32] = "", a2[32] = "", a3[32] = "";
        int fg, bg;
        int got = sscanf(p, "%63s %d %d %31s %31s %31s", name, &fg, &bg, a1, a2, a3);
        int role = -1;
        for (int r = 0; r < ROLE_COUNT && got >= 1; r++)
            if (!strcmp(name, role_names[r])) role = r;
        if (got < 3 || role < 0 || fg < -1 || fg > 255 || bg < -1 || bg > 255) {
            fclose(fp);
            return ms_fail(err, "%s:%d: expected 'role fg bg [attrs]' with a known role", path, lineno);
        }
        int attr = 0;
        const char *as[3] = {a1, a2, a3};
        for (int i = 0; i < 3; i++) {
            if (!strcmp(as[i], "bold")) attr |= TA_BOLD;
            else if (!strcmp(as[i], "reverse")) attr |= TA_REVERSE;
            else if (!strcmp(as[i], "underline")) attr |= TA_UNDERLINE;
            else if (!strcmp(as[i], "dim")) attr |= TA_DIM;
        }
        theme_style *s = &t->style[role];
        s->fg = fg < 8 ? fg : -1;
        s->bg = bg < 8 ? bg : -1;
        s->fg256 = fg >= 8 ? fg : -1;
        s->bg256 = bg >= 8 ? bg : -1;
        s->attr = attr;
    }
    fclose(fp);
    return 0;
}
