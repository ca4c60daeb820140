/* bitmap_font.h - BDF bitmap fonts for the PNG plots (assets/fonts/).
 *
 * The fonts are the public-domain X11 misc-fixed fonts converted to BDF (see
 * assets/fonts/README.md). A font covers code points 0..255 (ISO 8859-1);
 * strings are UTF-8 and anything beyond 255 is drawn as '?'.
 *
 * Lookup order for a font file NAME (e.g. "9x15.bdf"):
 *   $MOESCOPE_ASSETS/fonts/NAME, then beside the executable (/proc/self/exe):
 *   <dir>/../share/moescope/fonts (make install), <dir>/assets/fonts,
 *   <dir>/../assets/fonts and up to four levels up (so build/rel/moescope and
 *   build/rel/tests/unit/test_x find the source tree's assets), then
 *   $(PREFIX)/share/moescope/fonts (the prefix it was built for). Never the current directory: run from a world-writable directory, a
 *   binary would load fonts someone left there. Not found: an error listing where
 *   it looked; text is never silently dropped. */
#ifndef MS_BITMAP_FONT_H
#define MS_BITMAP_FONT_H

#include <stddef.h>
#include <stdint.h>

#include "core/ms_error.h"

#define BM_MAX_GLYPH_W 32
#define BM_MAX_GLYPH_H 64

typedef struct {
    int present;
    int dwidth;           /* advance in pixels */
    int w, h, xoff, yoff; /* BBX: bitmap size and offset of its bottom-left from the origin */
    uint32_t rows[BM_MAX_GLYPH_H]; /* row r (top first): bit (31 - c) set = pixel at column c */
} bm_glyph;

typedef struct {
    int ascent, descent;  /* pixels above / below the baseline */
    int default_char;     /* drawn for missing glyphs */
    bm_glyph glyph[256];
} bm_font;

/* Parse a BDF file. */
int bm_font_load(bm_font *f, const char *path, ms_err *err);
/* Find NAME in the given directories, in order; the first readable one wins.
 * out receives the full path. -1 with a message listing the directories. */
int bm_font_find_in(const char *name, const char *const *dirs, int ndirs, char *out,
                    size_t outsz, ms_err *err);
/* Find NAME by the lookup order above and load it. */
int bm_font_open(bm_font *f, const char *name, ms_err *err);

/* Line height (ascent + descent) and advance of s, both times scale. */
int bm_line_height(const bm_font *f, int scale);
int bm_text_width(const bm_font *f, const char *s, int scale);

/* Called for every set pixel (each scale x scale block is scale^2 calls). */
typedef void (*bm_put_fn)(void *ctx, int x, int y);

/* Draw s with the top-left of its line box at (x, y). rotate != 0 draws it
 * rotated 90 degrees counter-clockwise (reading upwards), the line box's
 * top-left then being at (x, y) with the text running from y towards y - width. */
void bm_draw_text(const bm_font *f, const char *s, int x, int y, int scale, int rotate,
                  bm_put_fn put, void *ctx);

#endif
