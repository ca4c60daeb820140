/* theme.h - colours looked up by meaning (ui_role), curses-free.
 *
 * Colours use the 8 basic terminal colours (curses numbering: 0 black, 1 red,
 * 2 green, 3 yellow, 4 blue, 5 magenta, 6 cyan, 7 white; -1 the default), with
 * an optional 256-colour refinement. Heat maps name a step of the theme's heat
 * scale (grid_heat); theme_heat maps it to a colour of the terminal's depth
 * (a viridis-like ramp of 13 colours at 256, 8 at 16, 5 at 8) and a text
 * colour that contrasts with it. The monochrome theme (NO_COLOR, or a terminal
 * without colours) uses attributes only; views then draw the heat scale with
 * shade glyphs. */
#ifndef MS_UI_THEME_H
#define MS_UI_THEME_H

#include "grid.h"
#include "core/ms_error.h"

enum { TA_BOLD = 1, TA_REVERSE = 2, TA_UNDERLINE = 4, TA_DIM = 8 };

typedef struct {
    int fg, bg;         /* 0..7 or -1 */
    int fg256, bg256;   /* 0..255 or -1: used when the terminal has 256 colours */
    int attr;           /* TA_* */
} theme_style;

/* A colour scale for heat maps, per terminal depth: len colours from cheap
 * to dear (perceptually ordered, viridis-like), and for each a text colour
 * that contrasts with it. */
#define THEME_RAMP_MAX 16
typedef struct {
    int len;
    int bg[THEME_RAMP_MAX];
    int fg[THEME_RAMP_MAX];
} theme_ramp;

enum { RAMP_8 = 0, RAMP_16, RAMP_256, RAMP_COUNT };

typedef struct {
    int color;          /* 0: monochrome */
    theme_style style[ROLE_COUNT];
    theme_ramp ramp[RAMP_COUNT];
} theme;

/* Colour unless NO_COLOR is set (to anything) or has_colors is 0. */
int theme_env_color(int has_colors);
void theme_init(theme *t, int color);
/* Optional overrides from a file of lines "role fg bg [bold|reverse|underline|dim]...",
 * e.g. "curve_naive 1 -1 bold", and "heat256 c0 c1 ..." (also heat16, heat8):
 * 2 to 16 colour indices, cheap to dear, for the heat scale (text on each is
 * black or white by the colour's lightness). Unknown roles are an error naming
 * the line. */
int theme_load(theme *t, const char *path, ms_err *err);
const char *theme_role_name(int role);
/* Heat step (0..HEAT_STEPS-1) to a background colour and its contrasting text
 * colour for a terminal with ncolors colours; -1 (default) in monochrome. */
void theme_heat(const theme *t, int step, int ncolors, int *bg, int *fg);
/* Heat step of x in [lo, hi] (0 when the range is empty). */
int heat_step(double x, double lo, double hi);

#endif
