/* footer_view.c - see footer_view.h. */
#include "footer_view.h"

#include <stdio.h>
#include <string.h>

/* the steps that shorten the footer, in the order they are taken */
enum { FS_DROP_V, FS_DROP_D, FS_CENTRE, FS_ORDER, FS_COST, FS_DROP_P, FS_DROP_E, FS_METRIC, FS_COUNT };

static int item_cols(const footer_item *it) {
    return 2 + (int)strlen(it->label) + (it->value ? (int)strlen(it->value) : 0);
}

int footer_width(const footer_item *it, int n) {
    int w = 0;
    for (int i = 0; i < n; i++) w += item_cols(&it[i]) + (i == 0 ? 0 : it[i - 1].key == 'a' ? 3 : 1);
    return w;
}

/* the items after the first `level` steps; widest: the longest values */
static int footer_items(int level, const explore_request *q, int metric_acc, int widest, footer_item *out) {
    const char *method = widest ? "expert" : cost_method_name(q->method);
    int acc = widest || metric_acc;
#define ONOFF(x) (widest || !(x) ? "OFF" : "ON")
    footer_item all[] = {
        {'o', level > FS_ORDER ? "ord:" : "order:", ONOFF(q->order_stage), q->order_stage},
        {'w', "wm:", ONOFF(q->wm_stage), q->wm_stage},
        {'c', level > FS_CENTRE ? "ctr:" : "centre:", ONOFF(q->center), q->center},
        {'m', level > FS_COST ? "" : "cost:", method, 1},
        {'a', "", acc ? (level > FS_METRIC ? "acc" : "accuracy") : "loss", 1},
        {'p', "png", NULL, 0},
        {'e', "export", NULL, 0},
        {'d', "diag", NULL, 0},
        {'v', "scatter", NULL, 0},
        {'?', "help", NULL, 0},
        {'q', "quit", NULL, 0},
    };
#undef ONOFF
    int n = 0;
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        int k = all[i].key;
        if ((k == 'v' && level > FS_DROP_V) || (k == 'd' && level > FS_DROP_D) ||
            (k == 'p' && level > FS_DROP_P) || (k == 'e' && level > FS_DROP_E))
            continue;
        out[n++] = all[i];
    }
    return n;
}

int footer_plan(int w, const explore_request *q, int metric_acc, footer_item *out) {
    int level = 0;
    while (level < FS_COUNT && footer_width(out, footer_items(level, q, metric_acc, 1, out)) > w) level++;
    return footer_items(level, q, metric_acc, 0, out);
}

void footer_render(grid *g, const ui_rect *r, const explore_request *q, int metric_acc, footer_hits *hits) {
    footer_item it[FOOTER_MAX];
    int nit = footer_plan(r->w, q, metric_acc, it);
    hits->nhit = 0;
    grid_fill(g, r->x, r->y, r->w, r->h, ' ', ROLE_NORMAL);
    int x = r->x, y = r->y, right = r->x + r->w;
    for (int i = 0; i < nit && x < right; i++) {
        char key[2] = {(char)it[i].key, 0};
        int x0 = x;
        x += grid_text(g, x, y, 1, ROLE_KEY, key);
        x += grid_text(g, x, y, right - x, ROLE_NORMAL, " ");
        x += grid_text(g, x, y, right - x, ROLE_NORMAL, it[i].label);
        if (it[i].value) x += grid_text(g, x, y, right - x, it[i].on ? ROLE_ON : ROLE_OFF, it[i].value);
        if (hits->nhit < (int)(sizeof hits->hit / sizeof hits->hit[0]))
            hits->hit[hits->nhit++] = (footer_hit){x0, x, y, it[i].key};
        hits->end_x = x;
        hits->end_y = y;
        int sep = it[i].key == 'a';
        x += sep ? 3 : 1;
        if (sep && x - 2 < right) grid_put(g, x - 2, y, g->utf8 ? 0x2502 : '|', ROLE_BORDER);
    }
}

int footer_key_at(const footer_hits *hits, int x, int y) {
    for (int i = 0; i < hits->nhit; i++)
        if (hits->hit[i].y == y && x >= hits->hit[i].x0 && x < hits->hit[i].x1) return hits->hit[i].key;
    return 0;
}

/* columns of UTF-8 text s (one a codepoint: the UI's text has no wide glyphs) */
static int text_cols(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

/* the byte offset of column c in s */
static int text_byte(const char *s, int c) {
    int b = 0;
    for (; s[b] && c > 0; c--) {
        b++;
        while (((unsigned char)s[b] & 0xC0) == 0x80) b++;
    }
    return b;
}

int text_fit(const char *s, int w, int utf8, int at_word, char *out, int cap) {
    out[0] = 0;
    if (w <= 0 || cap < 8) return 0;
    int cols = text_cols(s);
    if (cols <= w) {
        snprintf(out, (size_t)cap, "%s", s);
        return cols;
    }
    const char *dots = utf8 ? "\u2026" : at_word ? "..." : "";
    int dl = utf8 ? 1 : at_word ? 3 : 0;
    if (w <= dl || !at_word) { /* as much as fits, the ellipsis where it has room */
        if (w > dl) {
            snprintf(out, (size_t)cap, "%.*s%s", text_byte(s, w - dl), s, dots);
            return w;
        }
        snprintf(out, (size_t)cap, "%.*s", text_byte(s, w), s);
        return w;
    }
    /* cut at the last word boundary that leaves room for the ellipsis (a
       word over half the room long is cut inside) */
    int keep = w - dl, cut = text_byte(s, keep), b = cut;
    while (b > 0 && s[b] != ' ') b--;
    if (b > 0 && text_cols(s) - text_cols(s + b) > keep / 2) cut = b;
    while (cut > 0 && (s[cut - 1] == ' ' || s[cut - 1] == ',' || s[cut - 1] == ';' || s[cut - 1] == '(')) cut--;
    snprintf(out, (size_t)cap, "%.*s%s", cut, s, dots);
    return text_cols(out);
}

/* replace every from in buf by to (buf holds cap bytes) */
static void replace_all(char *buf, size_t cap, const char *from, const char *to) {
    char tmp[STATUS_TIER_CAP];
    size_t fl = strlen(from), tl = strlen(to), o = 0;
    for (const char *p = buf; *p && o + tl + 1 < sizeof tmp && o + tl + 1 < cap;) {
        if (!strncmp(p, from, fl)) {
            memcpy(tmp + o, to, tl);
            o += tl;
            p += fl;
        } else {
            tmp[o++] = *p++;
        }
    }
    memcpy(buf, tmp, o);
    buf[o] = 0;
}

int status_tiers(const char *s, char tiers[3][STATUS_TIER_CAP]) {
    snprintf(tiers[0], STATUS_TIER_CAP, "%s", s);
    /* 1: without its closing remark in parentheses */
    snprintf(tiers[1], STATUS_TIER_CAP, "%s", s);
    size_t l = strlen(tiers[1]);
    char *open = strrchr(tiers[1], '(');
    if (l && tiers[1][l - 1] == ')' && open && open > tiers[1] + 1 && open[-1] == ' ') open[-1] = 0;
    /* 2: in few words: "expert rank 2433/40320", "landscape 120/40320" */
    char *c = tiers[2];
    snprintf(c, STATUS_TIER_CAP, "%s", !strncmp(tiers[1], "done: ", 6) ? tiers[1] + 6 : tiers[1]);
    replace_all(c, STATUS_TIER_CAP, " order rank ", " rank ");
    replace_all(c, STATUS_TIER_CAP, "computing landscape", "landscape");
    replace_all(c, STATUS_TIER_CAP, " order at percentile ", " at ");
    replace_all(c, STATUS_TIER_CAP, "; table ", ", table ");
    /* "N of M" -> "N/M" */
    char *p = c;
    while ((p = strstr(p, " of ")) != NULL) {
        if (p > c && p[-1] >= '0' && p[-1] <= '9' && p[4] >= '0' && p[4] <= '9') {
            *p = '/';
            memmove(p + 1, p + 4, strlen(p + 4) + 1);
        }
        p++;
    }
    int n = 1 + (strcmp(tiers[1], tiers[0]) != 0);
    if (strcmp(tiers[2], tiers[n - 1])) {
        if (n == 1) memcpy(tiers[1], tiers[2], STATUS_TIER_CAP);
        n++;
    }
    return n;
}

/* the status the message line shows: a layer load's progress, else the worker's */
static void status_text(const explore_snapshot *v, const char *load, char *status, size_t cap) {
    status[0] = 0;
    if (load && load[0]) snprintf(status, cap, "%s", load);
    else if (v && v->status[0]) snprintf(status, cap, "%s%s", v->busy ? "busy: " : "", v->status);
}

void message_render(grid *g, const ui_rect *r, const char *msg, int is_error, const explore_snapshot *v,
                    const char *load, const ui_rect *alt, int room) {
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_NORMAL);
    char status[300];
    status_text(v, load, status, sizeof status);
    int srole = load && load[0] ? ROLE_MESSAGE : v && v->failed && !v->busy ? ROLE_ERROR : ROLE_DIM;
    if (room > r->w - 1) room = r->w - 1; /* the screen's bottom-right cell is not drawn */
    if (!msg) msg = "";
    int ml = text_cols(msg), mrole = is_error ? ROLE_ERROR : ROLE_MESSAGE;
    char tiers[3][STATUS_TIER_CAP], out[STATUS_TIER_CAP];
    int nt = status[0] ? status_tiers(status, tiers) : 0;
    /* the longest wording of the status beside the message, or beside the
       footer (the free end of its last row) when the message takes the line */
    for (int k = 0; k < nt; k++) {
        int sl = text_cols(tiers[k]);
        if ((ml ? ml + 2 : 0) + sl <= room) {
            if (ml) grid_text(g, r->x, r->y, room, mrole, msg);
            grid_text(g, r->x + room - sl, r->y, sl, srole, tiers[k]);
            return;
        }
        if (ml && alt && alt->w >= sl) {
            text_fit(msg, room, g->utf8, 0, out, sizeof out);
            grid_text(g, r->x, r->y, room, mrole, out);
            grid_text(g, alt->x + alt->w - sl, alt->y, sl, srole, tiers[k]);
            return;
        }
    }
    /* neither fits whole: the message first, the status in what it leaves
       (cut at a word, marked), or the message alone, marked where it is cut */
    int left = room - ml - 2;
    if (nt && ml && left >= 12) {
        grid_text(g, r->x, r->y, ml, mrole, msg);
        int sl = text_fit(tiers[nt - 1], left, g->utf8, 1, out, sizeof out);
        grid_text(g, r->x + room - sl, r->y, sl, srole, out);
    } else if (ml) {
        text_fit(msg, room, g->utf8, 0, out, sizeof out);
        grid_text(g, r->x, r->y, room, mrole, out);
    } else if (nt) {
        int sl = text_fit(tiers[nt - 1], room, g->utf8, 1, out, sizeof out);
        grid_text(g, r->x + room - sl, r->y, sl, srole, out);
    }
}
