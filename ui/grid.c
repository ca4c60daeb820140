/* grid.c - the cell grid (see grid.h). */
#include "grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_error.h"

void grid_init(grid *g, int w, int h, int utf8) {
    if (w < 0) w = 0;
    if (h < 0) h = 0;
    g->w = w;
    g->h = h;
    g->utf8 = utf8;
    g->color = 0;
    g->cells = ms_malloc((size_t)(w > 0 ? w : 1) * (size_t)(h > 0 ? h : 1) * sizeof(grid_cell));
    grid_clear(g);
}

void grid_free(grid *g) {
    free(g->cells);
    g->cells = NULL;
    g->w = g->h = 0;
}

void grid_clear(grid *g) {
    for (int i = 0; i < g->w * g->h; i++) {
        g->cells[i].cp = ' ';
        g->cells[i].role = ROLE_NORMAL;
        g->cells[i].fg_heat = g->cells[i].bg_heat = 0;
    }
}

grid_cell *grid_at(grid *g, int x, int y) {
    if (x < 0 || y < 0 || x >= g->w || y >= g->h) return NULL;
    return &g->cells[y * g->w + x];
}

void grid_put(grid *g, int x, int y, uint32_t cp, int role) {
    grid_cell *c = grid_at(g, x, y);
    if (!c) return;
    if (!g->utf8 && cp > 126) cp = '?';
    if (cp < 32) cp = ' ';
    c->cp = cp;
    c->role = (uint8_t)role;
    c->fg_heat = c->bg_heat = 0;
}

void grid_heat(grid *g, int x, int y, int fg_step, int bg_step) {
    grid_cell *c = grid_at(g, x, y);
    if (!c) return;
    if (fg_step >= HEAT_STEPS) fg_step = HEAT_STEPS - 1;
    if (bg_step >= HEAT_STEPS) bg_step = HEAT_STEPS - 1;
    c->fg_heat = (uint8_t)(fg_step < 0 ? 0 : fg_step + 1);
    c->bg_heat = (uint8_t)(bg_step < 0 ? 0 : bg_step + 1);
}

void grid_fill(grid *g, int x, int y, int w, int h, uint32_t cp, int role) {
    for (int j = y; j < y + h; j++)
        for (int i = x; i < x + w; i++) grid_put(g, i, j, cp, role);
}

int utf8_decode(const char *s, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    if (u[0] < 0x80) { *cp = u[0]; return 1; }
    int len = (u[0] & 0xE0) == 0xC0 ? 2 : (u[0] & 0xF0) == 0xE0 ? 3 : (u[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (!len) { *cp = '?'; return 1; }
    uint32_t v = u[0] & (0x7F >> len);
    for (int i = 1; i < len; i++) {
        if ((u[i] & 0xC0) != 0x80) { *cp = '?'; return i; }
        v = (v << 6) | (u[i] & 0x3F);
    }
    *cp = v;
    return len;
}

int utf8_encode(uint32_t cp, char *out) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int grid_text(grid *g, int x, int y, int maxw, int role, const char *s) {
    int col = 0;
    while (*s && col < maxw) {
        uint32_t cp;
        s += utf8_decode(s, &cp);
        grid_put(g, x + col, y, cp, role);
        col++;
    }
    return col;
}

int grid_printf(grid *g, int x, int y, int maxw, int role, const char *fmt, ...) {
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return grid_text(g, x, y, maxw, role, buf);
}

void grid_role(grid *g, int x, int y, int w, int role) {
    for (int i = x; i < x + w; i++) {
        grid_cell *c = grid_at(g, i, y);
        if (c) c->role = (uint8_t)role;
    }
}

char *grid_row_utf8(const grid *g, int y, char *buf, int cap) {
    int n = 0;
    if (cap < 1) return buf;
    if (y >= 0 && y < g->h) {
        for (int x = 0; x < g->w; x++) {
            char tmp[4];
            int k = utf8_encode(g->cells[y * g->w + x].cp, tmp);
            if (n + k >= cap) break;
            memcpy(buf + n, tmp, (size_t)k);
            n += k;
        }
    }
    buf[n] = 0;
    return buf;
}

int grid_find(const grid *g, const char *s, int *x_out) {
    char buf[8192];
    for (int y = 0; y < g->h; y++) {
        grid_row_utf8(g, y, buf, sizeof buf);
        char *p = strstr(buf, s);
        if (p) {
            if (x_out) {
                int col = 0;
                for (const char *q = buf; q < p;) {
                    uint32_t cp;
                    q += utf8_decode(q, &cp);
                    col++;
                }
                *x_out = col;
            }
            return y;
        }
    }
    return -1;
}
