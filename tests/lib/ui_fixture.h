/* ui_fixture.h - the explorer's views without a terminal, for the curses-free
 * UI tests: a hand-filled explore_snapshot of n experts (every order, curves
 * with known barriers), the app on it and a cell grid; counting helpers.
 * Static functions: each test program includes it once. */
#ifndef MS_TESTS_UI_FIXTURE_H
#define MS_TESTS_UI_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "grid.h"

/* a test uses some of them */
#define UIFX_FN static __attribute__((unused))

UIFX_FN void fake_curve(ls_curve *c, int n, int T, const int *order, double bump) {
    memset(c, 0, sizeof *c);
    c->n = n;
    c->T = T;
    memcpy(c->order, order, sizeof(int) * (size_t)n);
    c->loss = calloc((size_t)T, sizeof(double));
    c->acc = calloc((size_t)T, sizeof(double));
    for (int m = 0; m < T; m++) {
        double t = (double)m / (T - 1);
        c->loss[m] = 0.3 + 0.02 * t + bump * 4 * t * (1 - t);
        c->acc[m] = 0.9 - bump * t * (1 - t);
    }
    c->barrier = bump;
    c->acc_barrier = bump / 4;
    c->auc = bump * 2 / 3;
}

/* row k's order as ints (a few rotating buffers, so two may be compared) */
UIFX_FN const int *row_ord(const explore_snapshot *v, long k) {
    static int buf[4][LS_MAX_N];
    static int next;
    int *b = buf[next++ % 4];
    explore_row_order(v, &v->rows[k], b);
    return b;
}

/* every permutation of 0..n-1 in lexicographic order */
UIFX_FN long all_orders(int n, int (*out)[LS_MAX_N]) {
    int p[LS_MAX_N];
    for (int i = 0; i < n; i++) p[i] = i;
    long k = 0;
    for (;;) {
        memcpy(out[k++], p, sizeof p);
        int i = n - 2;
        while (i >= 0 && p[i] > p[i + 1]) i--;
        if (i < 0) break;
        int j = n - 1;
        while (p[j] < p[i]) j--;
        int t = p[i]; p[i] = p[j]; p[j] = t;
        for (int a = i + 1, b = n - 1; a < b; a++, b--) { t = p[a]; p[a] = p[b]; p[b] = t; }
    }
    return k;
}

UIFX_FN void fake_view(explore_snapshot *v, int n) {
    memset(v, 0, sizeof *v);
    int T = 25;
    v->generation = 7;
    v->n = n;
    v->T = T;
    v->kind = LS_CLASSIFY;
    v->t = calloc((size_t)T, sizeof(double));
    for (int m = 0; m < T; m++) v->t[m] = (double)m / (T - 1);
    v->req.order_stage = v->req.wm_stage = v->req.center = 1;
    v->req.method = COST_EXPERT;
    v->req.T = T;
    v->cost = calloc((size_t)(n * n), sizeof(double));
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) v->cost[i * n + j] = 1.0 + ((i * 7 + j * 3) % n) * 0.5;
    for (int i = 0; i < n; i++) v->cost_order[i] = (i + 1) % n;
    v->cost_total = 4.5;
    v->have_methods = 1;
    v->method_have[COST_GATE] = v->method_have[COST_EXPERT] = 1; /* no evaluation set's inputs */
    for (int i = 0; i < n; i++) {
        v->method_order[COST_GATE][i] = (i + 1) % n;
        v->method_order[COST_EXPERT][i] = n - 1 - i;
    }
    int id[LS_MAX_N];
    for (int i = 0; i < n; i++) id[i] = i;
    fake_curve(&v->naive, n, T, id, 0.5);
    fake_curve(&v->skip_order, n, T, id, 0.3);
    fake_curve(&v->current, n, T, v->cost_order, 0.05);
    int sel[LS_MAX_N];
    for (int i = 0; i < n; i++) sel[i] = n - 1 - i;
    fake_curve(&v->selected, n, T, sel, 0.2);
    v->have_naive = v->have_skip = v->have_current = v->have_selected = 1;
    long total = 1;
    for (int i = 2; i <= n; i++) total *= i;
    int (*ords)[LS_MAX_N] = calloc((size_t)total, sizeof *ords);
    all_orders(n, ords);
    v->rows = calloc((size_t)total, sizeof(ls_row));
    v->orders = calloc((size_t)total * n, 1);
    v->norders_held = total;
    for (long r = 0; r < total; r++) {
        v->rows[r].id = r;
        for (int i = 0; i < n; i++) v->orders[r * n + i] = (uint8_t)ords[r][i];
        v->rows[r].barrier = 0.01 + (double)((r * 7919) % total) / total; /* distinct */
        v->rows[r].acc_barrier = 0.001 * (double)(r % 13);
        v->rows[r].auc = 0.5 * v->rows[r].barrier;
    }
    free(ords);
    v->norders = v->ndone = total;
    v->have_landscape = 1;
    v->exhaustive = 1;
    v->loss_a = 0.3;
    v->loss_b = 0.32;
    v->acc_a = 0.9;
    v->acc_b = 0.89;
}

UIFX_FN void free_view(explore_snapshot *v) {
    ls_curve *c[4] = {&v->naive, &v->skip_order, &v->current, &v->selected};
    for (int i = 0; i < 4; i++) {
        free(c[i]->loss);
        free(c[i]->acc);
    }
    free(v->t);
    free(v->cost);
    free(v->rows);
    free(v->orders);
}

UIFX_FN ui_info fake_info(int n) {
    ui_info in;
    memset(&in, 0, sizeof in);
    strcpy(in.a_name, "seed1.safetensors");
    strcpy(in.b_name, "seed2.safetensors");
    strcpy(in.e_name, "eval.safetensors");
    strcpy(in.layer, "moe");
    in.cfg = (moe_config){.n = n, .d = 16, .h = 32, .k = 2, .s = 1, .C = 4, .router = ROUTER_TOPK};
    in.N = 512;
    return in;
}

/* The set-up most tests share: a fake view of n experts, the app on it and a
 * w x h grid; each test then states only what differs. */
typedef struct {
    explore_snapshot v;
    app_state a;
    grid g;
} ui_fix;

UIFX_FN void fix_init(ui_fix *f, int n, int w, int h, int utf8) {
    fake_view(&f->v, n);
    ui_info in = fake_info(n);
    app_init(&f->a, &in, 25);
    grid_init(&f->g, w, h, utf8);
}

/* a new grid (another size or charset), same view and app */
UIFX_FN void fix_grid(ui_fix *f, int w, int h, int utf8) {
    grid_free(&f->g);
    grid_init(&f->g, w, h, utf8);
}

UIFX_FN void fix_free(ui_fix *f) {
    grid_free(&f->g);
    app_free(&f->a);
    free_view(&f->v);
}

/* UI_DUMP=1 prints the screens (for eyeballing) */
UIFX_FN void dump(const grid *g) {
    if (!getenv("UI_DUMP")) return;
    char buf[8192];
    printf("---- %dx%d %s\n", g->w, g->h, g->utf8 ? "utf8" : "ascii");
    for (int y = 0; y < g->h; y++) printf("%s|\n", grid_row_utf8(g, y, buf, sizeof buf));
}

UIFX_FN int count_rows_with(const grid *g, const ui_rect *r, const char *s) {
    char buf[8192];
    int k = 0;
    for (int y = r->y; y < r->y + r->h; y++) {
        grid_row_utf8(g, y, buf, sizeof buf);
        if (strstr(buf, s)) k++;
    }
    return k;
}

/* count cells of a rectangle holding a codepoint in [lo, hi] */
UIFX_FN int count_cp(const grid *g, const ui_rect *r, uint32_t lo, uint32_t hi) {
    int k = 0;
    for (int y = r->y; y < r->y + r->h; y++)
        for (int x = r->x; x < r->x + r->w; x++) {
            uint32_t cp = g->cells[y * g->w + x].cp;
            k += cp >= lo && cp <= hi;
        }
    return k;
}

UIFX_FN int count_role(const grid *g, const ui_rect *r, int role) {
    int k = 0;
    for (int y = r->y; y < r->y + r->h; y++)
        for (int x = r->x; x < r->x + r->w; x++) k += g->cells[y * g->w + x].role == role;
    return k;
}

#endif
