/* bitmap_font.c - load BDF bitmap fonts and draw UTF-8 text with them. */
#include "core/env.h"
#include "plot/bitmap_font.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- BDF parsing ---- */

static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = tolower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

int bm_font_load(bm_font *f, const char *path, ms_err *err) {
    memset(f, 0, sizeof *f);
    f->default_char = '?';
    FILE *fp = fopen(path, "r");
    if (!fp) return ms_fail(err, "%s: cannot open font: %s", path, strerror(errno));
    char line[512];
    int lineno = 0, in_char = 0, in_bitmap = 0, row = 0, enc = -1, nglyph = 0;
    int have_startfont = 0;
    bm_glyph g;
    memset(&g, 0, sizeof g);
    while (fgets(line, sizeof line, fp)) {
        lineno++;
        if (!have_startfont) {
            if (strncmp(line, "STARTFONT", 9)) {
                fclose(fp);
                return ms_fail(err, "%s: not a BDF font (no STARTFONT on line 1)", path);
            }
            have_startfont = 1;
            continue;
        }
        if (in_bitmap) {
            if (!strncmp(line, "ENDCHAR", 7)) {
                if (enc >= 0 && enc < 256) {
                    g.present = 1;
                    f->glyph[enc] = g;
                    nglyph++;
                }
                in_bitmap = in_char = 0;
                continue;
            }
            if (row >= g.h) continue; /* extra rows: ignore */
            uint32_t bits = 0;
            int nbits = 0;
            for (char *p = line; *p && *p != '\n' && *p != '\r'; p++) {
                int v = hexval((unsigned char)*p);
                if (v < 0) {
                    fclose(fp);
                    return ms_fail(err, "%s:%d: bad hex digit in glyph %d bitmap", path,
                                   lineno, enc);
                }
                if (nbits < 32) bits |= (uint32_t)v << (28 - nbits);
                nbits += 4;
            }
            g.rows[row++] = bits;
            continue;
        }
        if (!strncmp(line, "FONT_ASCENT ", 12)) {
            f->ascent = atoi(line + 12);
        } else if (!strncmp(line, "FONT_DESCENT ", 13)) {
            f->descent = atoi(line + 13);
        } else if (!strncmp(line, "DEFAULT_CHAR ", 13)) {
            int dc = atoi(line + 13);
            if (dc > 0 && dc < 256) f->default_char = dc;
        } else if (!strncmp(line, "STARTCHAR", 9)) {
            in_char = 1;
            enc = -1;
            memset(&g, 0, sizeof g);
        } else if (in_char && !strncmp(line, "ENCODING ", 9)) {
            enc = atoi(line + 9);
        } else if (in_char && !strncmp(line, "DWIDTH ", 7)) {
            g.dwidth = atoi(line + 7);
        } else if (in_char && !strncmp(line, "BBX ", 4)) {
            if (sscanf(line + 4, "%d %d %d %d", &g.w, &g.h, &g.xoff, &g.yoff) != 4 || g.w < 0 ||
                g.h < 0 || g.w > BM_MAX_GLYPH_W || g.h > BM_MAX_GLYPH_H) {
                fclose(fp);
                return ms_fail(err, "%s:%d: glyph %d: BBX missing or larger than %dx%d", path,
                               lineno, enc, BM_MAX_GLYPH_W, BM_MAX_GLYPH_H);
            }
        } else if (in_char && !strncmp(line, "BITMAP", 6)) {
            in_bitmap = 1;
            row = 0;
        }
    }
    fclose(fp);
    if (!have_startfont) return ms_fail(err, "%s: empty file, not a BDF font", path);
    if (in_char) return ms_fail(err, "%s: truncated (glyph %d has no ENDCHAR)", path, enc);
    if (f->ascent <= 0 || f->descent < 0 || f->ascent + f->descent > BM_MAX_GLYPH_H)
        return ms_fail(err, "%s: missing or bad FONT_ASCENT/FONT_DESCENT (%d/%d)", path,
                       f->ascent, f->descent);
    for (int c = 32; c <= 126; c++)
        if (!f->glyph[c].present)
            return ms_fail(err, "%s: %d glyphs, but the printable ASCII glyph %d ('%c') is missing",
                           path, nglyph, c, c);
    if (!f->glyph[f->default_char].present) f->default_char = '?';
    return 0;
}

/* ---- lookup ---- */

static int readable(const char *p) { return access(p, R_OK) == 0; }

int bm_font_find_in(const char *name, const char *const *dirs, int ndirs, char *out,
                    size_t outsz, ms_err *err) {
    char looked[700] = "";
    size_t used = 0;
    for (int i = 0; i < ndirs; i++) {
        if (!dirs[i] || !dirs[i][0]) continue;
        snprintf(out, outsz, "%s/%s", dirs[i], name);
        if (readable(out)) return 0;
        if (used < sizeof looked) {
            int w = snprintf(looked + used, sizeof looked - used, "%s%s", used ? ", " : "",
                             dirs[i]);
            if (w > 0) used += (size_t)w;
        }
    }
    out[0] = 0;
    return ms_fail(err,
                   "font '%s' not found (looked in: %s); set MOESCOPE_ASSETS to the directory "
                   "that holds fonts/ (the assets/ of the source tree, or "
                   "$(PREFIX)/share/moescope)",
                   name, used ? looked : "nowhere");
}

int bm_font_open(bm_font *f, const char *name, ms_err *err) {
    enum { NDIRS = 8 };
    char buf[NDIRS][PATH_MAX];
    const char *dirs[NDIRS];
    int nd = 0;
    const char *env = env_get(ENV_ASSETS);
    if (env) {
        snprintf(buf[nd], PATH_MAX, "%s/fonts", env);
        dirs[nd] = buf[nd];
        nd++;
    }
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0; /* exe is now the executable's directory */
        /* installed layout first, then the source tree from build/<cfg>/[tests/] */
        snprintf(buf[nd], PATH_MAX, "%.3000s/../share/moescope/fonts", exe);
        dirs[nd] = buf[nd];
        nd++;
        // build/<cfg>/tests/<kind>/ is four levels under the source tree
        const char *ups[] = {"", "/..", "/../..", "/../../..", "/../../../.."};
        for (int u = 0; u < 5; u++) {
            snprintf(buf[nd], PATH_MAX, "%.3000s%s/assets/fonts", exe, ups[u]);
            dirs[nd] = buf[nd];
            nd++;
        }
    }
    // the install prefix's; never the current directory (a binary run in a world-writable
    // directory would load whatever fonts someone left there)
#ifdef MS_DATADIR
    snprintf(buf[nd], PATH_MAX, "%s/fonts", MS_DATADIR);
    dirs[nd] = buf[nd];
    nd++;
#endif
    char path[PATH_MAX + 64];
    if (bm_font_find_in(name, dirs, nd, path, sizeof path, err)) return -1;
    return bm_font_load(f, path, err);
}

/* ---- drawing ---- */

/* Next code point of a UTF-8 string (advances *s); malformed bytes give '?'. */
static int utf8_next(const char **s) {
    const unsigned char *p = (const unsigned char *)*s;
    int c = p[0];
    if (c < 0x80) {
        *s += 1;
        return c;
    }
    int n = (c >= 0xF0) ? 3 : (c >= 0xE0) ? 2 : (c >= 0xC0) ? 1 : -1;
    if (n < 0) {
        *s += 1;
        return '?';
    }
    int cp = c & (0x3F >> n);
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            *s += i;
            return '?';
        }
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    *s += n + 1;
    return cp;
}

static const bm_glyph *glyph_of(const bm_font *f, int cp) {
    if (cp < 0 || cp > 255 || !f->glyph[cp].present) cp = f->default_char;
    return &f->glyph[cp];
}

int bm_line_height(const bm_font *f, int scale) { return (f->ascent + f->descent) * scale; }

int bm_text_width(const bm_font *f, const char *s, int scale) {
    int w = 0;
    while (*s) w += glyph_of(f, utf8_next(&s))->dwidth;
    return w * scale;
}

void bm_draw_text(const bm_font *f, const char *s, int x, int y, int scale, int rotate,
                  bm_put_fn put, void *ctx) {
    int pen = 0; /* along the text, unscaled pixels */
    while (*s) {
        const bm_glyph *g = glyph_of(f, utf8_next(&s));
        // glyph row r sits at line-box row ascent - (yoff + h) + r
        int top = f->ascent - (g->yoff + g->h);
        for (int r = 0; r < g->h; r++) {
            uint32_t bits = g->rows[r];
            for (int c = 0; bits && c < g->w; c++) {
                if (!(bits & (0x80000000u >> c))) continue;
                int u = pen + g->xoff + c, v = top + r; /* unrotated, unscaled */
                for (int sy = 0; sy < scale; sy++)
                    for (int sx = 0; sx < scale; sx++) {
                        int uu = u * scale + sx, vv = v * scale + sy;
                        if (rotate) put(ctx, x + vv, y - uu);
                        else put(ctx, x + uu, y + vv);
                    }
            }
        }
        pen += g->dwidth;
    }
}
