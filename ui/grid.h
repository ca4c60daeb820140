/* grid.h - a curses-free cell grid the views draw into.
 *
 * Every cell holds one codepoint and a role (what the cell means: a title, a
 * heat level, the naive curve...). ui/theme maps roles to colours, ui/tui.c
 * blits the grid to the terminal. Keeping the drawing here makes every view
 * testable without a terminal. */
#ifndef MS_UI_GRID_H
#define MS_UI_GRID_H

#include <stdint.h>

typedef enum {
    ROLE_NORMAL = 0,
    ROLE_TITLE,         /* the title line */
    ROLE_PANE_TITLE,    /* a pane's heading */
    ROLE_BORDER,        /* separators, axes */
    ROLE_DIM,           /* secondary text */
    ROLE_HEAT_0,        /* heat scale, cheap ... */
    ROLE_HEAT_1,
    ROLE_HEAT_2,
    ROLE_HEAT_3,
    ROLE_HEAT_4,
    ROLE_HEAT_5,
    ROLE_HEAT_6,
    ROLE_HEAT_7,        /* ... expensive */
    ROLE_ASSIGNED,      /* assigned cell of the cost matrix */
    ROLE_CURSOR,        /* selected row */
    ROLE_MARK,          /* best / gate / expert / identity marks */
    ROLE_CURVE_NAIVE,
    ROLE_CURVE_SKIP,
    ROLE_CURVE_CURRENT,
    ROLE_CURVE_SELECTED,
    ROLE_CURVE_PINNED,  /* orders pinned with P: the first pin, */
    ROLE_CURVE_PIN2,    /* then each pin a colour of its own (ROLE_CURVE_PIN(i)) */
    ROLE_CURVE_PIN3,
    ROLE_CURVE_PIN4,
    ROLE_CHORD,
    ROLE_KEY,           /* a key name in the footer / help */
    ROLE_ON,            /* toggle state on */
    ROLE_OFF,           /* toggle state off */
    ROLE_MESSAGE,
    ROLE_ERROR,
    ROLE_GAUGE,
    ROLE_COUNT
} ui_role;

/* pin i's role (0-based, i < PINS_MAX = 4) */
#define ROLE_CURVE_PIN(i) (ROLE_CURVE_PINNED + (i))

#define HEAT_LEVELS 8   /* glyph ramp of the monochrome / ASCII heat map */
#define HEAT_STEPS 16   /* colour heat scale: steps a cell can name (theme maps them) */

/* A cell's colours come from its role, except where a heat step is set:
 * bg_heat paints the background with that step of the theme's colour scale
 * (text on it then takes the scale's contrasting colour; the role still gives
 * bold/underline...), fg_heat paints the glyph (half blocks: fg = upper row). */
typedef struct {
    uint32_t cp;     /* unicode codepoint (ASCII when the grid is ASCII) */
    uint8_t role;
    uint8_t fg_heat; /* 0: none; 1 + step (step 0..HEAT_STEPS-1) */
    uint8_t bg_heat; /* 0: none; 1 + step */
} grid_cell;

typedef struct {
    int w, h;
    int utf8;        /* 0: only ASCII is drawn (others become '?') */
    int color;       /* 0: monochrome (views carry meaning in glyphs); set after grid_init */
    grid_cell *cells; // (h, w)
} grid;

void grid_init(grid *g, int w, int h, int utf8);
void grid_free(grid *g);
void grid_clear(grid *g);
/* Put one codepoint (clears the cell's heat colours); outside the grid is ignored. */
void grid_put(grid *g, int x, int y, uint32_t cp, int role);
/* Heat colours of a cell: steps 0..HEAT_STEPS-1, or -1 for none. */
void grid_heat(grid *g, int x, int y, int fg_step, int bg_step);
grid_cell *grid_at(grid *g, int x, int y); /* NULL outside */
/* Fill a rectangle with cp/role. */
void grid_fill(grid *g, int x, int y, int w, int h, uint32_t cp, int role);
/* UTF-8 text at (x, y), at most maxw columns; returns the columns written. */
int grid_text(grid *g, int x, int y, int maxw, int role, const char *s);
int grid_printf(grid *g, int x, int y, int maxw, int role, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Set the role of a span without changing the text. */
void grid_role(grid *g, int x, int y, int w, int role);
/* Row y as UTF-8 (trailing spaces kept) into buf; returns buf. For tests. */
char *grid_row_utf8(const grid *g, int y, char *buf, int cap);
/* Does any row contain the UTF-8 string s? Returns the row or -1. */
int grid_find(const grid *g, const char *s, int *x_out);
/* Decode one UTF-8 sequence at s; returns the bytes used (>= 1). */
int utf8_decode(const char *s, uint32_t *cp);
int utf8_encode(uint32_t cp, char *out); /* returns bytes (1..4) */

#endif
