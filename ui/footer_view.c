/* footer_view.c - see footer_view.h. */
#include "footer_view.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    int key;
    const char *label; /* "order:" */
    const char *value; /* "ON", NULL for plain actions */
    int on;
} item;

void footer_render(grid *g, const ui_rect *r, const explore_request *q, int metric_acc, footer_hits *hits) {
    item it[] = {
        {'o', "order:", q->order_stage ? "ON" : "OFF", q->order_stage},
        {'w', "wm:", q->wm_stage ? "ON" : "OFF", q->wm_stage},
        {'c', "centre:", q->center ? "ON" : "OFF", q->center},
        {'m', "cost:", cost_method_name(q->method), 1},
        {'a', "", metric_acc ? "accuracy" : "loss", 1},
        {'p', "png", NULL, 0},
        {'e', "export", NULL, 0},
        {'d', "diag", NULL, 0},
        {'v', "scatter", NULL, 0},
        {'?', "help", NULL, 0},
        {'q', "quit", NULL, 0},
    };
    int nit = (int)(sizeof it / sizeof it[0]);
    hits->nhit = 0;
    grid_fill(g, r->x, r->y, r->w, r->h, ' ', ROLE_NORMAL);
    int x = r->x, y = r->y;
    for (int i = 0; i < nit; i++) {
        char key[2] = {(char)it[i].key, 0};
        int len = 2 + (int)strlen(it[i].label) + (it[i].value ? (int)strlen(it[i].value) : 0);
        if (x + len > r->x + r->w && x > r->x) {
            if (y + 1 >= r->y + r->h) break;
            y++;
            x = r->x;
        }
        int x0 = x;
        x += grid_text(g, x, y, 1, ROLE_KEY, key);
        x += grid_text(g, x, y, 1, ROLE_NORMAL, " ");
        x += grid_text(g, x, y, r->x + r->w - x, ROLE_NORMAL, it[i].label);
        if (it[i].value) x += grid_text(g, x, y, r->x + r->w - x, it[i].on ? ROLE_ON : ROLE_OFF, it[i].value);
        if (hits->nhit < (int)(sizeof hits->hit / sizeof hits->hit[0]))
            hits->hit[hits->nhit++] = (footer_hit){x0, x, y, it[i].key};
        hits->end_x = x;
        hits->end_y = y;
        x += i == 4 ? 3 : 1;
        if (i == 4 && x - 2 < r->x + r->w) grid_put(g, x - 2, y, g->utf8 ? 0x2502 : '|', ROLE_BORDER);
    }
}

int footer_key_at(const footer_hits *hits, int x, int y) {
    for (int i = 0; i < hits->nhit; i++)
        if (hits->hit[i].y == y && x >= hits->hit[i].x0 && x < hits->hit[i].x1) return hits->hit[i].key;
    return 0;
}

void message_render(grid *g, const ui_rect *r, const char *msg, int is_error, const explore_snapshot *v,
                    const char *load, const ui_rect *alt, int room) {
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_NORMAL);
    char status[300] = "";
    int srole = v && v->failed && !v->busy ? ROLE_ERROR : ROLE_DIM;
    if (load && load[0]) {
        snprintf(status, sizeof status, "%s", load);
        srole = ROLE_MESSAGE;
    } else if (v && v->status[0]) {
        snprintf(status, sizeof status, "%s%s", v->busy ? "busy: " : "", v->status);
    }
    int sl = (int)strlen(status), ml = msg ? (int)strlen(msg) : 0;
    if (room > r->w - 1) room = r->w - 1; /* the screen's bottom-right cell is not drawn */
    if (ml && sl && ml + 2 + sl > room && alt && alt->w >= sl) {
        /* the message keeps its line, the status moves beside the footer */
        grid_text(g, alt->x + alt->w - sl, alt->y, sl, srole, status);
        sl = 0;
    }
    if (ml && sl && ml + 2 + sl > room) {
        int keep = room - ml - 2; /* the status gets what the message leaves */
        sl = keep >= 12 ? keep : 0;
    }
    if (sl > room) sl = room;
    if (ml) grid_text(g, r->x, r->y, sl ? room - sl - 2 : room, is_error ? ROLE_ERROR : ROLE_MESSAGE, msg);
    if (sl) grid_text(g, r->x + room - sl, r->y, sl, srole, status);
}
