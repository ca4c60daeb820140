/* theme.c - the default colour theme, the monochrome one, and theme files. */
#include "core/env.h"
#include "theme.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *role_names[ROLE_COUNT] = {
    "normal", "title", "pane_title", "border", "dim",
    "heat_0", "heat_1", "heat_2", "heat_3", "heat_4", "heat_5", "heat_6", "heat_7",
    "assigned", "cursor", "mark",
    "curve_naive", "curve_skip", "curve_current", "curve_selected", "curve_pinned",
    "curve_pin2", "curve_pin3", "curve_pin4", "chord",
    "key", "on", "off", "message", "error", "gauge",
};

const char *theme_role_name(int role) {
    return role >= 0 && role < ROLE_COUNT ? role_names[role] : "?";
}

int theme_env_color(int has_colors) {
    if (env_get(ENV_NO_COLOR)) return 0; /* no-color.org: set and non-empty */
    return has_colors != 0;
}

/* Relative lightness 0..1 of an xterm colour index (the usual palette). */
static double xterm_luma(int c) {
    static const int base[16][3] = {{0, 0, 0}, {205, 0, 0}, {0, 205, 0}, {205, 205, 0}, {0, 0, 238}, {205, 0, 205},
                                    {0, 205, 205}, {229, 229, 229}, {127, 127, 127}, {255, 0, 0}, {0, 255, 0},
                                    {255, 255, 0}, {92, 92, 255}, {255, 0, 255}, {0, 255, 255}, {255, 255, 255}};
    static const int lv[6] = {0, 95, 135, 175, 215, 255};
    int r, g, b;
    if (c < 0) return 0;
    if (c < 16) {
        r = base[c][0], g = base[c][1], b = base[c][2];
    } else if (c < 232) {
        r = lv[(c - 16) / 36], g = lv[(c - 16) / 6 % 6], b = lv[(c - 16) % 6];
    } else {
        r = g = b = 8 + 10 * (c - 232);
    }
    return (0.2126 * r + 0.7152 * g + 0.0722 * b) / 255.0;
}

static void ramp_set(theme_ramp *rp, const int *bg, int len, int white, int black) {
    if (len > THEME_RAMP_MAX) len = THEME_RAMP_MAX;
    rp->len = len;
    for (int i = 0; i < len; i++) {
        rp->bg[i] = bg[i];
        /* black text on light colours, white on dark ones */
        rp->fg[i] = xterm_luma(bg[i]) > 0.45 ? black : white;
    }
}

int heat_step(double x, double lo, double hi) {
    if (!(hi > lo) || isnan(x)) return 0;
    int s = (int)floor((x - lo) / (hi - lo) * HEAT_STEPS);
    return s < 0 ? 0 : s >= HEAT_STEPS ? HEAT_STEPS - 1 : s;
}

void theme_heat(const theme *t, int step, int ncolors, int *bg, int *fg) {
    *bg = *fg = -1;
    if (!t->color || ncolors < 8) return;
    const theme_ramp *rp = &t->ramp[ncolors >= 256 ? RAMP_256 : ncolors >= 16 ? RAMP_16 : RAMP_8];
    if (rp->len < 1) return;
    if (step < 0) step = 0;
    if (step >= HEAT_STEPS) step = HEAT_STEPS - 1;
    int i = step * rp->len / HEAT_STEPS;
    *bg = rp->bg[i];
    *fg = rp->fg[i];
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
    /* heat scale, cheap to dear, viridis-like (dark purple, blue, teal,
       green, yellow): lightness rises monotonically, so it reads in grey too
       and is colour-blind safe. 256 colours: the nearest xterm cube colours to
       viridis in CIELAB lightness; 16 and 8 colours: the closest hues. */
    static const int r256[] = {53, 61, 60, 24, 31, 30, 36, 35, 78, 113, 148, 184, 220};
    static const int r16[] = {5, 4, 12, 6, 14, 2, 10, 11};
    static const int r8[] = {5, 4, 6, 2, 3};
    ramp_set(&t->ramp[RAMP_256], r256, (int)(sizeof r256 / sizeof r256[0]), 231, 16);
    ramp_set(&t->ramp[RAMP_16], r16, (int)(sizeof r16 / sizeof r16[0]), 15, 0);
    ramp_set(&t->ramp[RAMP_8], r8, (int)(sizeof r8 / sizeof r8[0]), 7, 0);
    /* the glyph-ramp roles (legend of the shaded map) follow the same scale */
    for (int i = 0; i < HEAT_LEVELS; i++) {
        int step = (2 * i + 1) * HEAT_STEPS / (2 * HEAT_LEVELS), bg, fg;
        theme_heat(t, step, 8, &bg, &fg);
        set(t, ROLE_HEAT_0 + i, fg, bg, 0);
        theme_heat(t, step, 256, &bg, &fg);
        t->style[ROLE_HEAT_0 + i].bg256 = bg;
        t->style[ROLE_HEAT_0 + i].fg256 = fg;
    }
    set(t, ROLE_ASSIGNED, 7, 0, TA_BOLD | TA_UNDERLINE);
    set(t, ROLE_CURSOR, 0, 7, 0);
    set(t, ROLE_MARK, 3, -1, TA_BOLD);
    set(t, ROLE_CURVE_NAIVE, 1, -1, 0);
    set(t, ROLE_CURVE_SKIP, 3, -1, 0);
    set(t, ROLE_CURVE_CURRENT, 2, -1, TA_BOLD);
    set(t, ROLE_CURVE_SELECTED, 6, -1, TA_BOLD);
    /* the pins apart from each other and from the live curves: magenta and
       blue, then their bright (bold) shades; on 256 colours four hues */
    static const int pin8[4] = {5, 4, 5, 4}, pin256[4] = {207, 75, 208, 130};
    for (int i = 0; i < 4; i++) {
        set(t, ROLE_CURVE_PIN(i), pin8[i], -1, i >= 2 ? TA_BOLD : 0);
        t->style[ROLE_CURVE_PIN(i)].fg256 = pin256[i];
    }
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
        if (!strncmp(p, "heat", 4) && (p[4] == '2' || p[4] == '1' || p[4] == '8')) {
            /* heat256 / heat16 / heat8 c0 c1 ...: the heat scale */
            int which = p[4] == '2' ? RAMP_256 : p[4] == '1' ? RAMP_16 : RAMP_8;
            int cs[THEME_RAMP_MAX], nc = 0, used = 0;
            char *q = p;
            while (*q && *q != ' ' && *q != '\t') q++;
            while (nc < THEME_RAMP_MAX && sscanf(q, "%d%n", &cs[nc], &used) == 1) {
                if (cs[nc] < 0 || cs[nc] > 255) break;
                nc++;
                q += used;
            }
            while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
            if (nc < 2 || *q) {
                fclose(fp);
                return ms_fail(err, "%s:%d: expected 'heat256|heat16|heat8 c0 c1 ...' with 2 to %d colours 0..255", path,
                               lineno, THEME_RAMP_MAX);
            }
            ramp_set(&t->ramp[which], cs, nc, which == RAMP_256 ? 231 : which == RAMP_16 ? 15 : 7,
                     which == RAMP_256 ? 16 : 0);
            continue;
        }
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
