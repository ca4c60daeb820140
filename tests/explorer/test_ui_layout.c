/* test_ui_layout.c - the TUI's drawing and key handling without a terminal:
 * a hand-filled explore_snapshot rendered into cell grids at several sizes, in
 * UTF-8 and ASCII. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "app.h"
#include "curves_view.h"
#include "analysis/diagnose.h"
#include "core/env.h"
#include "export.h"
#include "plot/figures.h"
#include "state_export.h"
#include "swap_view.h"
#include <cJSON.h>
#include <unistd.h>
#include "heatmap_view.h"
#include "keys.h"
#include "layout.h"
#include "orders_view.h"
#include "core/rng.h"
#include "model/symmetry.h"
#include "ui_fixture.h"
#include "testlib.h"
#include "theme.h"

static void test_sizes(void) {
    static const int sizes[][2] = {{80, 24}, {100, 30}, {132, 43}, {200, 60}};
    for (int utf8 = 0; utf8 <= 1; utf8++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            int w = sizes[s][0], h = sizes[s][1];
            ui_fix f;
            fix_init(&f, 4, w, h, utf8);
            app_render(&f.a, &f.v, &f.g);
            dump(&f.g);
            const ui_layout *L = &f.a.layout;
            CHECK(!L->too_small, "%dx%d too small", w, h);
            /* panes inside the screen and not overlapping */
            const ui_rect *rs[] = {&L->title, &L->heat, &L->curves, &L->orders, &L->footer, &L->message};
            for (int i = 0; i < 6; i++) {
                CHECK(rs[i]->x >= 0 && rs[i]->y >= 0 && rs[i]->x + rs[i]->w <= w && rs[i]->y + rs[i]->h <= h,
                      "%dx%d pane %d outside", w, h, i);
                for (int j = 0; j < i; j++) {
                    int ox = rs[i]->x < rs[j]->x + rs[j]->w && rs[j]->x < rs[i]->x + rs[i]->w;
                    int oy = rs[i]->y < rs[j]->y + rs[j]->h && rs[j]->y < rs[i]->y + rs[i]->h;
                    CHECK(!(ox && oy), "%dx%d panes %d and %d overlap", w, h, i, j);
                }
            }
            CHECK(grid_find(&f.g, "seed1.safetensors", NULL) == 0, "%dx%d title", w, h);
            /* full wording from 100 columns, compact below */
            CHECK(grid_find(&f.g, w >= 100 ? "n=4 d=16 h=32 router softmax top-2 shared 1" : "n=4 d=16 h=32 softmax top-2 s=1", NULL) == 1,
                  "%dx%d arch", w, h);
            CHECK(grid_find(&f.g, "layer moe", NULL) == 0 && grid_find(&f.g, "N=512", NULL) == 0, "%dx%d layer, N", w, h);
            CHECK(grid_find(&f.g, "acc A 0.900 B 0.890", NULL) == 1, "%dx%d endpoint accuracies", w, h);
            CHECK(grid_find(&f.g, "loss A 0.3000 B 0.3200", NULL) == 1, "%dx%d endpoints", w, h);
            /* the heat title never loses the total: the full wording from 100 columns */
            CHECK(grid_find(&f.g, w >= 100 ? "cost: expert  gate centring on  total 4.5" : "expert  centring on  total 4.5",
                            NULL) == 2, "%dx%d heat title", w, h);
            for (int i = 0; i < 4; i++) {
                char lab[16];
                snprintf(lab, sizeof lab, "A%d", i);
                CHECK(count_rows_with(&f.g, &L->heat, lab) == 1, "%dx%d row label %s", w, h, lab);
                snprintf(lab, sizeof lab, "B%d", i);
                CHECK(count_rows_with(&f.g, &L->heat, lab) >= 1, "%dx%d column label %s", w, h, lab);
            }
            /* the 4 assigned cells */
            CHECK(count_role(&f.g, &L->heat, ROLE_ASSIGNED) >= 4, "%dx%d assigned cells", w, h);
            CHECK(count_rows_with(&f.g, &L->heat, "*") >= 4, "%dx%d assigned marks", w, h);
            /* numbers fit at n = 4 */
            CHECK(count_rows_with(&f.g, &L->heat, "1.5") >= 1, "%dx%d numbers shown", w, h);
            CHECK(grid_find(&f.g, "expert orders 24/24", NULL) == 2, "%dx%d orders title", w, h);
            int page = L->orders.h - 3;
            int want = page < 24 ? page : 24;
            int rows = 0;
            char buf[8192];
            for (int y = L->orders.y + 3; y < L->orders.y + L->orders.h; y++) {
                grid_row_utf8(&f.g, y, buf, sizeof buf);
                rows += strstr(buf + L->sep_x + (utf8 ? 3 : 1), "0.") != NULL; /* the separator is 3 bytes in UTF-8 */
            }
            CHECK(rows == want, "%dx%d order rows %d want %d", w, h, rows, want);
            /* rank 1 row is first and marked best */
            CHECK(count_rows_with(&f.g, &L->orders, "*") >= 1, "%dx%d best mark", w, h);
            /* the footer's hints: one row, shortened below 90 columns */
            CHECK(grid_find(&f.g, w >= 90 ? "o order:ON" : "o ord:ON", NULL) == L->footer.y, "%dx%d footer order", w, h);
            CHECK(grid_find(&f.g, "wm:ON", NULL) == L->footer.y, "%dx%d footer wm", w, h);
            CHECK(grid_find(&f.g, w >= 90 ? "c centre:ON" : "c ctr:ON", NULL) == L->footer.y, "%dx%d footer centre", w, h);
            CHECK(grid_find(&f.g, w >= 90 ? "m cost:expert" : "m expert", NULL) == L->footer.y, "%dx%d footer method", w, h);
            CHECK(grid_find(&f.g, "? help q quit", NULL) == L->footer.y, "%dx%d footer quit", w, h);
            CHECK(L->footer.y + L->footer.h == h - 1 && grid_find(&f.g, "scatter", NULL) < L->footer.y + (w >= 100),
                  "%dx%d the footer's hints in one row", w, h);
            CHECK(grid_find(&f.g, "current barrier=0.0500", NULL) >= 0, "%dx%d current barrier", w, h);
            CHECK(grid_find(&f.g, "skip-order", NULL) >= 0 && grid_find(&f.g, "naive", NULL) >= 0 &&
                      grid_find(&f.g, "chord", NULL) >= 0 && grid_find(&f.g, "3 2 1 0", NULL) >= 0,
                  "%dx%d legend", w, h);
            ui_rect plot = L->curves;
            int braille = count_cp(&f.g, &plot, 0x2801, 0x28FF);
            if (utf8) {
                CHECK(braille > 20, "%dx%d braille dots %d", w, h, braille);
            } else {
                CHECK(braille == 0, "%dx%d no braille in ASCII", w, h);
                CHECK(count_cp(&f.g, &(ui_rect){0, 0, w, h}, 127, 0x10FFFF) == 0, "%dx%d ASCII only", w, h);
                CHECK(count_role(&f.g, &plot, ROLE_CURVE_CURRENT) > 5, "%dx%d ASCII current curve", w, h);
            }
            CHECK(count_role(&f.g, &plot, ROLE_CURVE_NAIVE) > 5, "%dx%d naive plotted", w, h);
            /* at 80x24 the legend's four rows leave a short plot where the
               curves cover most of the chord */
            CHECK(count_role(&f.g, &plot, ROLE_CHORD) > (w > UI_MIN_W ? 3 : 0), "%dx%d chord plotted", w, h);
            CHECK(grid_find(&f.g, "loss", NULL) >= 0, "%dx%d y label", w, h);
            fix_free(&f);
        }
}

/* the curves pane keeps at least 8 rows (a readable plot) for every n the TUI
 * takes, down to the minimum screen: large n give rows of the heat map up */
static void test_curves_rows(void) {
    static const int sizes[][2] = {{UI_MIN_W, UI_MIN_H}, {100, 30}, {200, 60}};
    int bad = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (int n = 2; n <= LS_MAX_N; n++) {
            ui_layout L;
            layout_compute(&L, sizes[s][0], sizes[s][1], n);
            if (L.curves.h < 8 || L.heat.h < 4) {
                if (bad++ < 5)
                    printf("  %dx%d n=%d: curves %d rows, heat map %d\n", sizes[s][0], sizes[s][1], n, L.curves.h,
                           L.heat.h);
            }
        }
    CHECK(bad == 0, "%d layouts squeeze the curves below 8 rows", bad);
}

static void test_too_small(void) {
    ui_fix f;
    fix_init(&f, 4, 60, 20, 1);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "terminal too small: 60x20, need at least 80x24", NULL) >= 0, "too-small message");
    CHECK(grid_find(&f.g, "expert orders", NULL) < 0, "no panes when too small");
    fix_grid(&f, 100, 30, 1);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "expert orders", NULL) >= 0, "panes back after resize");
    fix_free(&f);
}

static void test_keys(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    app_render(&f.a, &f.v, &f.g);
    /* toggles change the request and the footer */
    CHECK(app_key(&f.a, 'o', &f.v) & FX_SUBMIT, "o submits");
    CHECK(f.a.req.order_stage == 0, "o toggles the order stage");
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "order:OFF", NULL) == f.a.layout.footer.y, "footer shows order:OFF");
    CHECK(app_key(&f.a, 'w', &f.v) & FX_SUBMIT, "w submits");
    CHECK(f.a.req.wm_stage == 0, "w toggles");
    CHECK(app_key(&f.a, 'c', &f.v) & FX_SUBMIT, "c submits");
    CHECK(f.a.req.center == 0, "c toggles");
    CHECK(app_key(&f.a, 'm', &f.v) & FX_SUBMIT, "m submits");
    CHECK(f.a.req.method == COST_GATE, "m switches to gate");
    app_render(&f.a, &f.v, &f.g);
    int fy = f.a.layout.footer.y;
    CHECK(grid_find(&f.g, "wm:OFF", NULL) == fy && grid_find(&f.g, "centre:OFF", NULL) == fy &&
              grid_find(&f.g, "cost:gate", NULL) == fy,
          "footer states");
    CHECK(app_key(&f.a, 'a', &f.v) == FX_REDRAW && f.a.metric_acc == 1, "a switches to accuracy");
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "q quit", NULL) >= f.a.layout.footer.y, "footer keeps quit with 'accuracy'");
    CHECK(grid_find(&f.g, "curves: accuracy", NULL) >= 0, "accuracy plot title");
    CHECK(grid_find(&f.g, "acc.barrier=", NULL) >= 0, "accuracy barrier in legend");
    {
        /* the y axis label follows the metric */
        const ui_rect *cr = &f.a.layout.curves;
        ui_rect labels = {cr->x, cr->y + 1, 8, cr->h - 1};
        CHECK(count_rows_with(&f.g, &labels, "accuracy") == 1 && count_rows_with(&f.g, &labels, "loss") == 0,
              "y label says accuracy");
        app_key(&f.a, 'a', &f.v);
        app_render(&f.a, &f.v, &f.g);
        CHECK(count_rows_with(&f.g, &labels, "loss") == 1 && count_rows_with(&f.g, &labels, "accuracy") == 0, "y label back to loss");
        CHECK(grid_find(&f.g, "current barrier=0.0500", NULL) >= 0, "loss barrier back in the legend");
        app_key(&f.a, 'a', &f.v);
    }
    snprintf(f.a.export_dir, sizeof f.a.export_dir, "."); /* chosen: test_ui_newcomer asks for it */
    CHECK(app_key(&f.a, 'p', &f.v) == FX_PNG, "p asks for a PNG");
    CHECK(app_key(&f.a, 'e', &f.v) == FX_EXPORT, "e asks for an export");
    CHECK(app_key(&f.a, 'q', &f.v) == FX_QUIT, "q quits");
    /* help lists every key of the table */
    app_key(&f.a, '?', &f.v);
    app_render(&f.a, &f.v, &f.g);
    for (int i = 0; i < key_table_len; i++)
        if (key_table[i].help) CHECK(grid_find(&f.g, key_table[i].help, NULL) >= 0, "help lists %s", key_table[i].name);
    app_key(&f.a, 'x', &f.v);
    CHECK(!f.a.show_help, "any key closes help");
    app_key(&f.a, 'd', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "computing diagnostics\u2026", NULL) >= 0, "diagnostics placeholder while computing");
    app_key(&f.a, 'd', &f.v);
    /* movement */
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.cursor == 0, "cursor starts at the top");
    app_key(&f.a, 'j', &f.v);
    app_key(&f.a, K_DOWN, &f.v);
    CHECK(f.a.orders.cursor == 2, "j and Down move down");
    app_key(&f.a, 'k', &f.v);
    CHECK(f.a.orders.cursor == 1, "k moves up");
    app_key(&f.a, 'G', &f.v);
    CHECK(f.a.orders.cursor == 23, "G goes to the last row");
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.top + f.a.orders.page > 23, "last row visible");
    app_key(&f.a, 'g', &f.v);
    CHECK(f.a.orders.cursor == 0 && f.a.orders.top == 0, "g goes to the top");
    app_key(&f.a, K_PGDN, &f.v);
    CHECK(f.a.orders.cursor == f.a.orders.page - 1, "PgDn moves a page");
    app_key(&f.a, K_PGUP, &f.v);
    CHECK(f.a.orders.cursor == 0, "PgUp moves back");
    /* Enter selects the row under the cursor */
    app_key(&f.a, 'j', &f.v);
    const ls_row *row = orders_selected(&f.a.orders, &f.v);
    CHECK(row != NULL, "a row is selected");
    CHECK(app_key(&f.a, K_ENTER, &f.v) & FX_SUBMIT, "Enter submits");
    CHECK(f.a.req.has_selected && row && explore_row_is(&f.v, row, f.a.req.selected), "selected order requested");
    /* rank order: barriers ascending */
    app_render(&f.a, &f.v, &f.g);
    double prev = -1;
    int sorted = 1;
    for (long i = 0; i < f.a.orders.nidx; i++) {
        double b = f.v.rows[f.a.orders.idx[i]].barrier;
        sorted &= b >= prev;
        prev = b;
    }
    CHECK(sorted && f.a.orders.nidx == 24, "sorted by barrier");
    CHECK(f.a.orders.rank[f.a.orders.idx[0]] == 1 && f.a.orders.rank[f.a.orders.idx[23]] == 24, "ranks 1..24");
    /* sort by order */
    app_key(&f.a, 's', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.sort == SORT_ORDER, "s cycles the sort column");
    CHECK(grid_find(&f.g, "0 1 2 3", NULL) == f.a.layout.orders.y + 3 || f.a.orders.top > 0, "identity first by order");
    /* then by accuracy barrier, by AUC (ascending), back to rank, to order */
    for (int k = 0; k < 4; k++) {
        app_key(&f.a, 's', &f.v);
        app_render(&f.a, &f.v, &f.g);
        int srt = f.a.orders.sort, ok = f.a.orders.nidx == 24;
        for (long i = 1; i < f.a.orders.nidx; i++) {
            const ls_row *p0 = &f.v.rows[f.a.orders.idx[i - 1]], *p1 = &f.v.rows[f.a.orders.idx[i]];
            double x0 = srt == SORT_ACC ? p0->acc_barrier : srt == SORT_AUC ? p0->auc : p0->barrier;
            double x1 = srt == SORT_ACC ? p1->acc_barrier : srt == SORT_AUC ? p1->auc : p1->barrier;
            if (srt != SORT_ORDER) ok &= x0 <= x1;
            else ok &= memcmp(row_ord(&f.v, f.a.orders.idx[i - 1]), row_ord(&f.v, f.a.orders.idx[i]), sizeof(int) * 4) < 0;
        }
        static const int want_sort[4] = {SORT_ACC, SORT_AUC, SORT_RANK, SORT_ORDER};
        CHECK(srt == want_sort[k] && ok, "s: sorted by %s", orders_sort_name(want_sort[k]));
        CHECK(grid_find(&f.g, orders_sort_name(srt), NULL) >= 0, "sort column named (%s)", orders_sort_name(srt));
    }
    /* S reverses: descending, the marker after the sorted column's name */
    app_key(&f.a, 'S', &f.v);
    app_render(&f.a, &f.v, &f.g);
    {
        int ok = f.a.orders.desc && f.a.orders.nidx == 24;
        for (long i = 1; i < f.a.orders.nidx; i++)
            ok &= memcmp(row_ord(&f.v, f.a.orders.idx[i - 1]), row_ord(&f.v, f.a.orders.idx[i]), sizeof(int) * 4) > 0;
        CHECK(ok, "S: descending by order");
        CHECK(grid_find(&f.g, f.g.utf8 ? "order▾" : "orderv", NULL) >= 0, "the arrow follows the sorted column's name");
        CHECK(grid_find(&f.g, "barrier▾", NULL) < 0 && grid_find(&f.g, "barrierv", NULL) < 0, "no arrow after barrier");
    }
    app_key(&f.a, 'S', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(!f.a.orders.desc, "S again: ascending");
    /* filter "2 0" */
    app_key(&f.a, '/', &f.v);
    app_key(&f.a, '2', &f.v);
    app_key(&f.a, ' ', &f.v);
    app_key(&f.a, '0', &f.v);
    app_key(&f.a, K_ENTER, &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.nidx == 2, "filter 2 0 leaves 2 rows (%ld)", f.a.orders.nidx);
    CHECK(count_rows_with(&f.g, &f.a.layout.orders, "2 0 1 3") == 1 && count_rows_with(&f.g, &f.a.layout.orders, "2 0 3 1") == 1,
          "filtered rows drawn");
    CHECK(count_rows_with(&f.g, &f.a.layout.orders, "1 0 2 3") == 0, "others hidden");
    CHECK(grid_find(&f.g, "filter /2 0", NULL) >= 0, "filter shown");
    app_key(&f.a, K_ESC, &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.nidx == 24, "Esc clears the filter");
    /* mouse: click a row selects and plots it; click the footer toggles */
    int y = f.a.layout.orders.y + 3 + 2;
    int fx = app_mouse(&f.a, f.a.layout.orders.x + 5, y, 1, &f.v);
    row = orders_selected(&f.a.orders, &f.v);
    CHECK((fx & FX_SUBMIT) && row && f.a.orders.cursor == 2 && explore_row_is(&f.v, row, f.a.req.selected),
          "click selects a row");
    int ox = -1, oy = grid_find(&f.g, "o order:", &ox);
    int before = f.a.req.order_stage;
    CHECK(oy >= 0 && (app_mouse(&f.a, ox, oy, 1, &f.v) & FX_SUBMIT) && f.a.req.order_stage != before, "click toggles the order stage");
    app_mouse(&f.a, 0, 0, 3, &f.v);
    CHECK(f.a.orders.cursor == 5, "wheel scrolls");
    fix_free(&f);
}

static void test_big(void) {
    /* 8 experts: 40320 rows, only the visible ones drawn; heat map shaded */
    ui_fix f;
    fix_init(&f, 8, 80, 24, 0);
    for (int utf8 = 0; utf8 <= 1; utf8++) {
        fix_grid(&f, 80, 24, utf8);
        app_render(&f.a, &f.v, &f.g);
        CHECK(grid_find(&f.g, "expert orders 40320/40320", NULL) == 2, "40320 rows");
        CHECK(count_rows_with(&f.g, &f.a.layout.heat, "A7") == 1, "8x8 heat map fits at 80x24");
        app_key(&f.a, 'G', &f.v);
        app_render(&f.a, &f.v, &f.g);
        CHECK(grid_find(&f.g, "40320 ", NULL) >= 0, "last rank drawn");
        app_key(&f.a, 'g', &f.v);
    }
    /* the filter narrows 40320 to 720 */
    app_key(&f.a, '/', &f.v);
    app_key(&f.a, '7', &f.v);
    app_key(&f.a, K_ENTER, &f.v);
    fix_grid(&f, 100, 30, 1);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.orders.nidx == 5040, "filter 7 leaves 7! rows (%ld)", f.a.orders.nidx);
    fix_free(&f);

    /* 12 experts in the heat map: it scrolls */
    fix_init(&f, 4, 80, 24, 1); /* rows unused */
    free(f.v.cost);
    f.v.n = 12;
    f.v.cost = calloc(144, sizeof(double));
    for (int i = 0; i < 144; i++) f.v.cost[i] = i % 13;
    for (int i = 0; i < 12; i++) f.v.cost_order[i] = i;
    f.v.ndone = f.v.norders = 0;
    heat_view hv = {0};
    ui_rect r = {0, 2, 40, 8};
    heatmap_render(&f.g, &r, &f.v, &hv);
    CHECK(grid_find(&f.g, "0-4/12", NULL) >= 0, "heat map says which rows are shown");
    hv.row0 = hv.col0 = 100;
    grid_clear(&f.g);
    heatmap_render(&f.g, &r, &f.v, &hv);
    CHECK(hv.row0 == 7 && grid_find(&f.g, "A11", NULL) >= 0, "heat map scrolls to the end (off %d)", hv.row0);
    fix_free(&f);
}


/* cells of r whose background / foreground is a heat step */
static int count_heat(const grid *g, const ui_rect *r, int fg, int bg) {
    int k = 0;
    for (int y = r->y; y < r->y + r->h; y++)
        for (int x = r->x; x < r->x + r->w; x++) {
            const grid_cell *c = &g->cells[y * g->w + x];
            k += (!fg || c->fg_heat) && (!bg || c->bg_heat) && (fg || bg);
        }
    return k;
}

static void test_color_heatmap(void) {
    /* colour + UTF-8, numbers fit (n = 4 at 100x30): every matrix cell a block
       of heat background with the number on it */
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    f.g.color = 1;
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    const ui_layout *L = &f.a.layout;
    CHECK(heatmap_mode(4, L->heat.w, L->heat.h, 1, 1) == HEAT_NUMBERS, "n=4 colour: numbers mode");
    CHECK(count_rows_with(&f.g, &L->heat, "1.5") >= 1 && count_rows_with(&f.g, &L->heat, "*") >= 4, "numbers and marks on colour");
    /* the 16 cells, each a block of the cell width, plus the legend's scale */
    int cells = 0, steps_lo = HEAT_STEPS, steps_hi = -1;
    for (int i = 0; i < 4; i++) {
        int y = L->heat.y + 2 + i;
        for (int x = L->heat.x; x < L->heat.x + L->heat.w; x++) {
            const grid_cell *c = &f.g.cells[y * f.g.w + x];
            if (!c->bg_heat) continue;
            cells++;
            if (c->bg_heat - 1 < steps_lo) steps_lo = c->bg_heat - 1;
            if (c->bg_heat - 1 > steps_hi) steps_hi = c->bg_heat - 1;
        }
    }
    CHECK(cells >= 16 * 7, "heat background under every matrix cell (%d cells)", cells);
    CHECK(steps_lo == 0 && steps_hi == HEAT_STEPS - 1, "the scale spans cheap to dear (%d..%d)", steps_lo, steps_hi);
    /* the cheapest value (1) sits on step 0, the dearest (2.5) on the top step */
    int x0 = -1, y0 = grid_find(&f.g, "2.500*", &x0);
    CHECK(y0 >= 0 && f.g.cells[y0 * f.g.w + x0].bg_heat == HEAT_STEPS && f.g.cells[y0 * f.g.w + x0].role == ROLE_ASSIGNED,
          "assigned dearest cell: top step, bold/underlined role");
    int ly = L->heat.y + L->heat.h - 1;
    CHECK(count_heat(&f.g, &(ui_rect){0, ly, L->heat.w, 1}, 0, 1) >= HEAT_STEPS / 2, "legend shows the colour scale");
    CHECK(count_heat(&f.g, &L->curves, 0, 1) == 0 && count_heat(&f.g, &L->orders, 0, 1) == 0, "heat colours only in the map");
    fix_free(&f);

    /* colour + UTF-8, numbers do not fit (n = 8 at 80x24 and 100x30): half blocks */
    static const int sizes[][2] = {{80, 24}, {100, 30}};
    for (int s = 0; s < 2; s++) {
        fix_init(&f, 8, sizes[s][0], sizes[s][1], 1);
        f.g.color = 1;
        app_render(&f.a, &f.v, &f.g);
        dump(&f.g);
        L = &f.a.layout;
        CHECK(heatmap_mode(8, L->heat.w, L->heat.h, 1, 1) == HEAT_HALF, "%dx%d n=8: half-block mode", f.g.w, f.g.h);
        CHECK(L->heat.h == 4 + 3, "%dx%d half blocks: 4 rows for 8 (pane %d)", f.g.w, f.g.h, L->heat.h);
        CHECK(L->curves.y == L->heat.y + L->heat.h && L->curves.y + L->curves.h == L->footer.y,
              "%dx%d the curves take the rows saved", f.g.w, f.g.h);
        ui_rect map = {L->heat.x, L->heat.y + 2, L->heat.w, 4};
        int halves = count_cp(&f.g, &map, 0x2580, 0x2580);
        int both = count_heat(&f.g, &map, 1, 1);
        CHECK(halves >= 64 && halves % 32 == 0 && both == halves, "%dx%d '\u2580' cells with fg and bg steps (%d, %d)",
              f.g.w, f.g.h, halves, both);
        /* fg is row 2k, bg row 2k+1 of the same column */
        int xm = -1, ym = grid_find(&f.g, "\u2580", &xm);
        if (ym >= 0) {
            const grid_cell *c = &f.g.cells[ym * f.g.w + xm];
            double lo = 1.0, hi = 1.0 + 3.5; /* fake costs: 1 + ((7i + 3j) % 8) / 2 */
            CHECK(c->fg_heat - 1 == heat_step(f.v.cost[0], lo, hi) && c->bg_heat - 1 == heat_step(f.v.cost[8], lo, hi),
                  "%dx%d upper half row A0, lower half row A1", f.g.w, f.g.h);
        }
        /* the assignment beside the map; every row label pair */
        char want[32];
        snprintf(want, sizeof want, "A0\u2192B%d A1\u2192B%d", f.v.cost_order[0], f.v.cost_order[1]);
        CHECK(count_rows_with(&f.g, &L->heat, want) == 1, "%dx%d assignment listed (%s)", f.g.w, f.g.h, want);
        snprintf(want, sizeof want, "A6\u2192B%d A7\u2192B%d", f.v.cost_order[6], f.v.cost_order[7]);
        CHECK(count_rows_with(&f.g, &L->heat, want) == 1, "%dx%d last pair listed", f.g.w, f.g.h);
        CHECK(count_rows_with(&f.g, &L->heat, "2 rows/line") == 1, "%dx%d legend explains the half blocks", f.g.w, f.g.h);
        fix_free(&f);
    }
    /* a small pane: half blocks scroll like the numbers did */
    {
        fix_init(&f, 4, 40, 8, 1);
        f.g.color = 1;
        heat_view hv = {0};
        explore_snapshot *w = &f.v;
        free(w->cost);
        w->n = 16;
        w->cost = calloc(256, sizeof(double));
        for (int i = 0; i < 256; i++) w->cost[i] = i % 17;
        for (int i = 0; i < 16; i++) w->cost_order[i] = 15 - i;
        w->ndone = w->norders = 0;
        ui_rect r = {0, 0, 40, 8};
        heatmap_render(&f.g, &r, w, &hv);
        dump(&f.g);
        CHECK(heatmap_mode(16, 40, 8, 1, 1) == HEAT_HALF, "n=16 in 40x8: half blocks");
        CHECK(grid_find(&f.g, "0-9/16", NULL) >= 0, "half-block map scrolls (10 of 16 rows in 5 lines)");
        CHECK(grid_find(&f.g, "A0\u2192B15", NULL) >= 0, "n=16 assignment listed");
        hv.row0 = hv.col0 = 100;
        grid_clear(&f.g);
        heatmap_render(&f.g, &r, w, &hv);
        CHECK(hv.row0 == 6 && grid_find(&f.g, "A14\u2192B1 A15\u2192B0", NULL) >= 0, "half-block map scrolls to the end");
        fix_free(&f);
    }
    /* monochrome keeps the shade glyphs and sets no colour; colour + ASCII
       draws the ASCII ramp on heat backgrounds */
    for (int color = 0; color <= 1; color++)
        for (int utf8 = 0; utf8 <= 1; utf8++) {
            if (color && utf8) continue;
            fix_init(&f, 8, 80, 24, utf8);
            f.g.color = color;
            app_render(&f.a, &f.v, &f.g);
            L = &f.a.layout;
            ui_rect all = {0, 0, f.g.w, f.g.h};
            CHECK(count_cp(&f.g, &all, 0x2580, 0x2580) == 0, "no half blocks (color %d utf8 %d)", color, utf8);
            CHECK(L->heat.h == 8 + 3, "one row a matrix row (color %d utf8 %d)", color, utf8);
            if (color)
                CHECK(count_heat(&f.g, &L->heat, 0, 1) >= 64 && count_cp(&f.g, &all, 127, 0x10FFFF) == 0,
                      "colour ASCII: heat backgrounds, ASCII glyphs");
            else
                CHECK(count_heat(&f.g, &all, 1, 0) + count_heat(&f.g, &all, 0, 1) == 0 &&
                          (utf8 ? count_cp(&f.g, &L->heat, 0x2591, 0x2593) > 10 : count_rows_with(&f.g, &L->heat, "%") >= 1),
                      "monochrome: no heat colours, shade glyphs (utf8 %d)", utf8);
            fix_free(&f);
        }
}

static void test_theme_heat(void) {
    theme t;
    theme_init(&t, 0);
    int bg, fg;
    theme_heat(&t, 3, 256, &bg, &fg);
    CHECK(bg == -1 && fg == -1, "monochrome: no heat colour");
    theme_init(&t, 1);
    /* 256 colours: the scale's lightness rises from cheap to dear (viridis-like),
       text contrasts (white on the dark end, black on the light end) */
    int first, last, fg0, fg1;
    theme_heat(&t, 0, 256, &first, &fg0);
    theme_heat(&t, HEAT_STEPS - 1, 256, &last, &fg1);
    CHECK(first >= 16 && last >= 16 && first != last, "256-colour scale uses the cube (%d..%d)", first, last);
    CHECK(fg0 == 231 && fg1 == 16, "contrasting text: white on dark, black on light (%d, %d)", fg0, fg1);
    int distinct = 0, prev = -2;
    for (int s = 0; s < HEAT_STEPS; s++) {
        theme_heat(&t, s, 256, &bg, &fg);
        distinct += bg != prev;
        prev = bg;
    }
    CHECK(distinct >= 10, "256-colour scale has %d distinct steps", distinct);
    int ok8 = 1, ok16 = 1;
    for (int s = 0; s < HEAT_STEPS; s++) {
        theme_heat(&t, s, 8, &bg, &fg);
        ok8 &= bg >= 0 && bg < 8 && fg >= 0 && fg < 8 && bg != fg;
        theme_heat(&t, s, 16, &bg, &fg);
        ok16 &= bg >= 0 && bg < 16 && fg >= 0 && fg < 16 && bg != fg;
    }
    CHECK(ok8 && ok16, "8- and 16-colour ramps stay within the palette");
    theme_heat(&t, 0, 8, &first, &fg);
    theme_heat(&t, HEAT_STEPS - 1, 8, &last, &fg);
    CHECK(first != last, "8-colour ramp spans colours");
    CHECK(heat_step(1, 1, 2) == 0 && heat_step(2, 1, 2) == HEAT_STEPS - 1 && heat_step(1.5, 1, 2) == HEAT_STEPS / 2 &&
              heat_step(5, 5, 5) == 0 && heat_step(NAN, 0, 1) == 0,
          "heat steps");
    /* theme files: heat256 lines set the scale; malformed ones are errors */
    char path[] = "/tmp/ms_theme_XXXXXX";
    int fd = mkstemp(path);
    FILE *fp = fdopen(fd, "w");
    fprintf(fp, "# test\nheat256 17 18 19 226\ncurve_naive 9 -1 bold\n");
    fclose(fp);
    ms_err err;
    CHECK(theme_load(&t, path, &err) == 0, "theme file loads");
    theme_heat(&t, 0, 256, &bg, &fg);
    theme_heat(&t, HEAT_STEPS - 1, 256, &last, &fg1);
    CHECK(bg == 17 && fg == 231 && last == 226 && fg1 == 16, "heat256 line sets the scale (%d %d %d %d)", bg, fg, last, fg1);
    fp = fopen(path, "w");
    fprintf(fp, "heat256 17 x\n");
    fclose(fp);
    CHECK(theme_load(&t, path, &err) == -1 && strstr(err.msg, ":1:"), "bad heat line names the line");
    remove(path);
    /* the shipped theme loads (tests run from the repository root) */
    theme_init(&t, 1);
    CHECK(theme_load(&t, "assets/themes/magma.theme", &err) == 0, "assets/themes/magma.theme loads");
    theme_heat(&t, 0, 256, &bg, &fg);
    theme_heat(&t, HEAT_STEPS - 1, 256, &last, &fg1);
    CHECK(bg == 16 && last == 229 && fg == 231 && fg1 == 16, "magma: black to pale yellow");
}

static void test_help_small(void) {
    /* at the minimum size the help still lists every key of the table at once */
    ui_fix f;
    fix_init(&f, 4, 80, 24, 1);
    app_key(&f.a, '?', &f.v);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    for (int i = 0; i < key_table_len; i++)
        if (key_table[i].help) {
            char want[128];
            snprintf(want, sizeof want, "%-9s %s", key_table[i].name, key_table[i].help);
            CHECK(grid_find(&f.g, want, NULL) >= 0, "80x24 help lists %s", key_table[i].name);
        }
    // the rows after the keys (mouse, marks, symmetry) may scroll into view
    if (grid_find(&f.g, "mouse: click a row", NULL) < 0) {
        app_key(&f.a, 'G', &f.v);
        app_render(&f.a, &f.v, &f.g);
    }
    CHECK(grid_find(&f.g, "mouse: click a row", NULL) >= 0, "80x24 help mentions the mouse");
    fix_free(&f);
}

static void test_diag_scroll(void) {
    ui_fix f;
    fix_init(&f, 4, 80, 24, 1);
    CHECK(app_key(&f.a, 'd', &f.v) & FX_DIAG, "d asks for diagnostics");
    int n = 60;
    char **lines = malloc(sizeof(char *) * (size_t)n);
    for (int i = 0; i < n; i++) {
        char buf[64];
        snprintf(buf, sizeof buf, "[ok] finding number %d", i);
        lines[i] = strdup(buf);
    }
    app_set_diag(&f.a, lines, n);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "finding number 0", NULL) >= 0 && grid_find(&f.g, "finding number 59", NULL) < 0, "diag first page");
    app_key(&f.a, 'G', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "finding number 59", NULL) >= 0 && f.a.diag_scroll == n - (f.a.layout.overlay.h - 2),
          "G: last finding, scroll clamped (%d)", f.a.diag_scroll);
    int at_end = f.a.diag_scroll;
    app_key(&f.a, 'j', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.diag_scroll == at_end, "j at the end stays");
    app_key(&f.a, 'k', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.diag_scroll == at_end - 1, "k scrolls back one");
    app_key(&f.a, K_PGUP, &f.v);
    app_key(&f.a, 'g', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.diag_scroll == 0 && f.a.show_diag, "g: top, still open");
    app_key(&f.a, 'x', &f.v);
    CHECK(!f.a.show_diag, "other keys close the diagnostics");
    fix_free(&f);
}

/* the pane follows the worker's diagnostics: a placeholder while they
   compute (keys still answered), then the findings, flags first */
static void test_diag_view(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    CHECK(app_key(&f.a, 'd', &f.v) & FX_DIAG, "d asks the worker for diagnostics");
    f.v.diag_state = EXPLORE_DIAG_COMPUTING;
    f.v.diag_method = f.a.req.method;
    f.v.diag_center = f.a.req.center;
    f.v.diag_epoch = 1;
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "computing diagnostics\u2026", NULL) >= 0 && f.a.ndiag == 0, "computing: placeholder");
    CHECK(app_key(&f.a, 'j', &f.v) == FX_REDRAW && f.a.show_diag, "keys answered while computing");
    /* ASCII grid: no ellipsis glyph */
    fix_grid(&f, 100, 30, 0);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "computing diagnostics...", NULL) >= 0, "ASCII placeholder");
    fix_grid(&f, 100, 30, 1);
    /* ready: an ok, a warn and the rank finding that names a CLI flag */
    dg_finding it[3];
    memset(it, 0, sizeof it);
    it[0].severity = DG_OK;
    snprintf(it[0].code, sizeof it[0].code, "experts_distinct");
    snprintf(it[0].who, sizeof it[0].who, "A");
    snprintf(it[0].text, sizeof it[0].text, "experts are distinct");
    it[1].severity = DG_WARN;
    snprintf(it[1].code, sizeof it[1].code, "margin");
    snprintf(it[1].text, sizeof it[1].text, "the assignment margin is thin");
    it[2].severity = DG_INFO;
    snprintf(it[2].code, sizeof it[2].code, "best_order");
    snprintf(it[2].text, sizeof it[2].text, "landscape skipped: the rank is not known");
    it[2].next = DG_NEXT_LANDSCAPE;
    f.v.diag.items = it;
    f.v.diag.n = f.v.diag.cap = 3;
    f.v.diag_state = EXPLORE_DIAG_READY;
    f.v.diag_epoch = 2;
    f.v.rank[f.a.req.method] = 5;
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.ndiag == 4 && grid_find(&f.g, "3 findings, 1 flag (warn or bad) first", NULL) >= 0, "ready: findings (%d lines)",
          f.a.ndiag);
    int yw = grid_find(&f.g, "[warn] the assignment margin is thin", NULL);
    int yo = grid_find(&f.g, "[ok] A: experts are distinct", NULL);
    CHECK(yw >= 0 && yo > yw, "flags first (%d, %d)", yw, yo);
    CHECK(grid_find(&f.g, "order ranks 5 of 24 by loss barrier (orders pane)", NULL) >= 0 &&
              grid_find(&f.g, "landscape skipped", NULL) < 0,
          "the rank finding points at the orders pane");
    /* the flags counted beside the footer, the pane closed or not */
    CHECK(grid_find(&f.g, "1 flag: d", NULL) >= f.a.layout.footer.y, "flag count by the footer or on the message line");
    app_key(&f.a, 'x', &f.v);
    it[0].severity = DG_BAD;
    app_render(&f.a, &f.v, &f.g);
    int fx = 0, fy = grid_find(&f.g, "2 flags: d", &fx);
    CHECK(fy >= 0 && f.g.cells[fy * f.g.w + fx].role == ROLE_ERROR, "a bad finding: the count as an error");
    it[0].severity = DG_OK;
    app_key(&f.a, 'd', &f.v);
    /* findings of another method: back to the placeholder */
    f.v.diag_method = f.a.req.method == COST_GATE ? COST_EXPERT : COST_GATE;
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.ndiag == 0 && grid_find(&f.g, "computing diagnostics", NULL) >= 0, "other method's findings not shown");
    /* failed: the error */
    f.v.diag_method = f.a.req.method;
    f.v.diag_state = EXPLORE_DIAG_FAILED;
    f.v.diag_epoch = 3;
    snprintf(f.v.diag_error, sizeof f.v.diag_error, "diagnose: something broke");
    app_render(&f.a, &f.v, &f.g);
    CHECK(f.a.ndiag == 1 && grid_find(&f.g, "diagnose: something broke", NULL) >= 0, "failure shown");
    f.v.diag.items = NULL;
    f.v.diag.n = 0;
    fix_free(&f);
}

static void test_spinner(void) {
    /* n = 8 before the landscape reports rows: a spinner with the phase, the
       number of orders known, not 0/0 */
    ui_fix f;
    fix_init(&f, 8, 120, 36, 1);
    f.v.ndone = 0;
    f.v.have_landscape = 0;
    f.v.busy = 1;
    snprintf(f.v.phase, sizeof f.v.phase, "preparing the 64 expert pairs");
    f.v.phase_since = 100.0;
    snprintf(f.v.status, sizeof f.v.status, "computing landscape");
    f.a.now = 103.2;
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    CHECK(grid_find(&f.g, "expert orders 0/40320", NULL) == 2, "orders pane: 0/40320, not 0/0");
    int x = -1, y = grid_find(&f.g, "preparing the 64 expert pairs (3 s)", &x);
    CHECK(y == 3, "phase and elapsed time shown");
    uint32_t f1 = y >= 0 ? f.g.cells[y * f.g.w + x - 2].cp : 0;
    CHECK(f1 >= 0x2801 && f1 <= 0x28FF, "braille spinner (U+%04X)", f1);
    f.a.now = 103.35;
    app_render(&f.a, &f.v, &f.g);
    uint32_t f2 = y >= 0 ? f.g.cells[y * f.g.w + x - 2].cp : 0;
    CHECK(f2 != f1 && f2 >= 0x2801 && f2 <= 0x28FF, "the spinner turns");
    CHECK(grid_find(&f.g, "rows appear here", NULL) >= 0, "rows placeholder");
    /* the status on the message line ends before the last column */
    char buf[8192];
    grid_row_utf8(&f.g, f.g.h - 1, buf, sizeof buf);
    CHECK(strstr(buf, "busy: computing landscape ") && buf[strlen(buf) - 1] == ' ', "status clear of the last cell");
    /* ASCII spinner */
    fix_grid(&f, 120, 36, 0);
    app_render(&f.a, &f.v, &f.g);
    y = grid_find(&f.g, "preparing the 64", &x);
    CHECK(y == 3 && strchr("|/-\\", (int)f.g.cells[y * f.g.w + x - 2].cp), "ASCII spinner");
    /* once rows arrive, the gauge */
    f.v.ndone = 4000;
    f.v.phase[0] = 0;
    app_render(&f.a, &f.v, &f.g);
    /* the marks' legend does not fit beside the count at n = 8: it takes the
       second row and the gauge goes beside the count */
    CHECK(grid_find(&f.g, "expert orders 4000/40320 [", NULL) == 2 && grid_find(&f.g, "  10%", NULL) == 2 &&
              grid_find(&f.g, "*best G gate E expert A act R router I id >plot", NULL) == 3,
          "gauge after the first rows");
    fix_free(&f);
}


/* ---- the worker on a small random pair (real computation, n = 4) ---- */

static void eng_fill(float *p, size_t cnt, rng_t *r, double scale) {
    for (size_t i = 0; i < cnt; i++) p[i] = (float)(scale * rng_normal(r));
}

static void eng_models(moe_model *A, moe_model *B, evalset *E, int n, int d, int h, int C) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = n, c.d = d, c.h = h, c.k = 2, c.C = C;
    c.router = ROUTER_DENSE, c.act = ACT_RELU, c.residual = 1;
    c.has_gate_bias = c.has_expert_bias = c.has_norm = c.has_head = 1;
    moe_alloc(A, &c);
    moe_alloc(B, &c);
    rng_t r;
    rng_seed(&r, 42);
    eng_fill(A->mem, A->nparams, &r, 0.5);
    for (int j = 0; j < d; j++) A->norm_w[j] = 1.0f + 0.1f * (float)rng_normal(&r);
    for (size_t i = 0; i < A->nparams; i++) B->mem[i] = A->mem[i] + (float)(0.4 * rng_normal(&r));
    memcpy(B->norm_w, A->norm_w, (size_t)(2 * d + C * d + C) * sizeof(float)); /* shared head */
    int pi[8] = {2, 0, 3, 1};
    moe_permute_experts(B, pi);
    memset(E, 0, sizeof *E);
    E->N = 96, E->d = d, E->C = C;
    E->inputs = ms_malloc((size_t)E->N * d * sizeof(float));
    E->labels = ms_malloc((size_t)E->N * sizeof(int32_t));
    eng_fill(E->inputs, (size_t)E->N * d, &r, 1.0);
    for (int i = 0; i < E->N; i++) E->labels[i] = (int32_t)rng_below(&r, (uint64_t)C);
}

#define ENG_WAIT(g, v, cond) EXPLORE_WAIT(g, v, 60000, cond)

/* The row of the current order's barrier in the table shown (NAN: none). */
static double row_barrier_of(const explore_snapshot *v, const int *order) {
    for (long k = 0; k < v->ndone; k++)
        if (!memcmp(row_ord(v, k), order, sizeof(int) * (size_t)v->n)) return v->rows[k].barrier;
    return NAN;
}

/* a worker on A, B, E; v and q zeroed, q asking for every stage at T = 9 */
static explore_worker *worker_begin(moe_model *A, moe_model *B, evalset *E, explore_snapshot *v, explore_request *q) {
    ms_err err;
    explore_worker *g = explore_start(A, B, E, &err);
    CHECK(g != NULL, "worker starts (%s)", g ? "" : err.msg);
    memset(v, 0, sizeof *v);
    memset(q, 0, sizeof *q);
    q->order_stage = q->wm_stage = q->center = 1;
    q->T = 9;
    return g;
}

/* The activation method matches hidden units by their activations (align
 * --method activation): the table then matches every pair so too, its row of
 * the current order being the current curve; under weight matching (the expert
 * method's table) that order's row is another number on this pair. */
static void test_worker_activation(void) {
    moe_model A, B;
    evalset E;
    eng_models(&A, &B, &E, 4, 8, 16, 3);
    rng_t r;
    rng_seed(&r, 7); /* B further from A: the two matchings differ */
    for (size_t i = 0; i < (size_t)(B.norm_w - B.mem); i++) B.mem[i] += (float)(0.5 * rng_normal(&r));
    explore_snapshot v;
    explore_request q;
    explore_worker *g = worker_begin(&A, &B, &E, &v, &q);
    if (!g) return;
    double cur = NAN, tab[2][24], diff = 0;
    int ord[4] = {0}, all[24][4], na = 0;
    for (int a = 0; a < 4; a++) // the 24 orders, to look each up in both tables
        for (int b = 0; b < 4; b++)
            for (int c = 0; c < 4; c++)
                if (a != b && a != c && b != c) all[na][0] = a, all[na][1] = b, all[na][2] = c, all[na++][3] = 6 - a - b - c;
    for (int pass = 0; pass < 2; pass++) {
        q.method = pass ? COST_EXPERT : COST_ACTIVATION;
        explore_submit(g, &q);
        ENG_WAIT(g, &v, !v.busy && v.req.method == q.method && v.have_current && v.have_landscape && v.ndone == 24);
        if (!pass) memcpy(ord, v.current_order, sizeof ord), cur = v.current.barrier;
        for (int k = 0; k < 24; k++) tab[pass][k] = row_barrier_of(&v, all[k]);
    }
    double row = NAN;
    for (int k = 0; k < 24; k++) {
        if (!memcmp(all[k], ord, sizeof ord)) row = tab[0][k];
        if (fabs(tab[0][k] - tab[1][k]) > diff) diff = fabs(tab[0][k] - tab[1][k]);
    }
    CHECK(fabs(row - cur) <= 1e-6 * (1 + fabs(cur)), "activation method: its current barrier %g = its row %g", cur, row);
    CHECK(diff > 1e-4, "the activation table is not weight matching's (largest difference %g)", diff);
    explore_stop(g);
    explore_snapshot_free(&v);
    evalset_free(&E);
    moe_free(&A);
    moe_free(&B);
}

static void test_worker(void) {
    moe_model A, B;
    evalset E;
    eng_models(&A, &B, &E, 4, 8, 8, 3);
    explore_snapshot v;
    explore_request q;
    explore_worker *g = worker_begin(&A, &B, &E, &v, &q);
    if (!g) return;
    q.method = COST_EXPERT;
    explore_submit(g, &q);
    ENG_WAIT(g, &v, !v.busy && v.have_landscape && v.have_current);
    CHECK(!v.busy && v.have_landscape && v.ndone == 24 && v.norders == 24, "landscape of 24 orders (%ld)", v.ndone);
    CHECK(v.have_naive && v.have_skip && v.have_current && v.have_methods && !v.failed, "curves and costs");
    CHECK(!memcmp(v.current_order, v.method_order[COST_EXPERT], sizeof(int) * 4), "current = expert order");
    /* ranks from the rows */
    double bsel = NAN;
    for (long k = 0; k < v.ndone; k++)
        if (!memcmp(row_ord(&v, k), v.method_order[COST_EXPERT], sizeof(int) * 4)) bsel = v.rows[k].barrier;
    long r = 1;
    for (long k = 0; k < v.ndone; k++) r += v.rows[k].barrier < bsel;
    CHECK(!isnan(bsel) && v.rank[COST_EXPERT] == r, "expert rank %d = 1 + #{smaller barriers} %ld", v.rank[COST_EXPERT], r);
    CHECK(strstr(v.status, "done") != NULL && v.phase[0] == 0, "status done, no phase (%s)", v.status);
    /* the current curve's barrier is the landscape row of its order */
    int found = 0;
    for (long k = 0; k < v.ndone; k++)
        if (!memcmp(row_ord(&v, k), v.current_order, sizeof(int) * 4))
            found = fabs(v.rows[k].barrier - v.current.barrier) <= 1e-6 * (1 + fabs(v.current.barrier));
    CHECK(found, "current barrier = its landscape row");
    double b_wm = v.current.barrier;
    unsigned long epoch_wm = v.rows_epoch;
    ls_row first = v.rows[0];

    /* weight matching off: a new table; then on again: the kept one */
    q.wm_stage = 0;
    explore_submit(g, &q);
    ENG_WAIT(g, &v, !v.busy && v.have_landscape && v.req.wm_stage == 0 && v.have_current);
    CHECK(v.req.wm_stage == 0 && v.have_landscape && v.rows_epoch != epoch_wm, "wm off: its own table");
    q.wm_stage = 1;
    explore_submit(g, &q);
    ENG_WAIT(g, &v, !v.busy && v.have_landscape && v.req.wm_stage == 1 && v.have_current);
    CHECK(v.have_landscape && v.ndone == 24 && !memcmp(&v.rows[0], &first, sizeof first) &&
              v.current.barrier == b_wm,
          "wm on again: the same table and curve");

    /* gate method, centring off: the landscape stays, ranks follow */
    q.method = COST_GATE;
    q.center = 0;
    explore_submit(g, &q);
    ENG_WAIT(g, &v, !v.busy && v.req.method == COST_GATE && v.have_current);
    CHECK(v.have_landscape && !memcmp(v.current_order, v.method_order[COST_GATE], sizeof(int) * 4) &&
              v.rank[COST_GATE] >= 1 && v.rank[COST_GATE] <= 24,
          "gate method: rank %d", v.rank[COST_GATE]);
    /* a selected order is plotted */
    q.has_selected = 1;
    int sel[4] = {3, 2, 1, 0};
    memcpy(q.selected, sel, sizeof sel);
    explore_submit(g, &q);
    ENG_WAIT(g, &v, !v.busy && v.have_selected && v.req.has_selected);
    CHECK(v.have_selected && !memcmp(v.selected.order, sel, sizeof sel), "selected order curve");
    /* a burst of requests: the last one wins */
    for (int k = 0; k < 6; k++) {
        q.wm_stage = k & 1;
        q.order_stage = (k >> 1) & 1;
        explore_submit(g, &q);
    }
    ENG_WAIT(g, &v, !v.busy && v.have_current && v.have_landscape);
    CHECK(v.req.wm_stage == 1 && v.req.order_stage == 0 && !v.busy, "the newest request is the one shown");
    int id[4] = {0, 1, 2, 3};
    CHECK(!memcmp(v.current_order, id, sizeof id) && fabs(v.current.barrier - v.skip_order.barrier) < 1e-12,
          "order stage off: current = skip-order");
    /* diagnostics on the worker's thread, equal to diag_findings called here */
    {
        explore_request_diag(g, COST_EXPERT, 1);
        explore_poll(g, &v);
        CHECK(v.diag_state == EXPLORE_DIAG_COMPUTING || v.diag_state == EXPLORE_DIAG_READY, "diag asked (%d)", v.diag_state);
        ENG_WAIT(g, &v, v.diag_state == EXPLORE_DIAG_READY || v.diag_state == EXPLORE_DIAG_FAILED);
        CHECK(v.diag_state == EXPLORE_DIAG_READY && v.diag_method == COST_EXPERT && v.diag_center == 1 && v.diag.n > 0,
              "worker diagnostics ready (%d findings) %s", v.diag.n, v.diag_error);
        diag_opts dopt;
        diag_opts_default(&dopt);
        dopt.method = COST_EXPERT;
        dopt.center = 1;
        dopt.landscape = 1; /* n = 4: the worker computes it too */
        dg_list want;
        ms_err err;
        memset(&want, 0, sizeof want);
        CHECK(diag_findings(&A, &B, &E, &dopt, &want, &err) == 0, "diag_findings: %s", err.msg);
        int same = want.n == v.diag.n;
        for (int i = 0; same && i < want.n; i++)
            same = want.items[i].severity == v.diag.items[i].severity && !strcmp(want.items[i].code, v.diag.items[i].code) &&
                   !strcmp(want.items[i].text, v.diag.items[i].text);
        CHECK(same, "worker findings equal diag_findings (%d vs %d)", v.diag.n, want.n);
        int nwant = want.n;
        dg_list_free(&want);
        unsigned long ep = v.diag_epoch;
        /* another (method, centring), then back: the kept result, at once */
        explore_request_diag(g, COST_GATE, 0);
        ENG_WAIT(g, &v, v.diag_method == COST_GATE && v.diag_state >= EXPLORE_DIAG_READY);
        CHECK(v.diag_state == EXPLORE_DIAG_READY && v.diag_center == 0 && v.diag_epoch != ep, "gate, no centring: its own findings");
        explore_request_diag(g, COST_EXPERT, 1);
        explore_poll(g, &v);
        CHECK(v.diag_state == EXPLORE_DIAG_READY && v.diag_method == COST_EXPERT && v.diag.n == nwant,
              "asked again: published without recomputing");
        /* the app shows them */
        ui_info in = fake_info(4);
        app_state ap;
        app_init(&ap, &in, 9);
        grid gr;
        grid_init(&gr, 100, 30, 1);
        app_key(&ap, 'd', &v);
        app_render(&ap, &v, &gr);
        CHECK(grid_find(&gr, "(warn or bad) first", NULL) >= 0 && ap.ndiag == v.diag.n + 1, "pane lists the worker's findings");
        grid_free(&gr);
        app_free(&ap);
    }
    /* stop while computing (cancel, join, free: LeakSanitizer checks) */
    q.wm_stage = 0;
    q.T = 11;
    explore_submit(g, &q);
    explore_stop(g);
    explore_snapshot_free(&v);
    moe_free(&A);
    moe_free(&B);
    free(E.inputs);
    free(E.labels);
}

static void test_units(void) {
    CHECK(heat_level(0, 0, 1) == 0 && heat_level(1, 0, 1) == HEAT_LEVELS - 1 && heat_level(0.5, 0, 1) == HEAT_LEVELS / 2,
          "heat levels");
    CHECK(heat_level(3, 3, 3) == 0, "flat matrix");
    int o[4] = {2, 0, 3, 1};
    CHECK(order_matches(o, 4, "20") && order_matches(o, 4, "203") && !order_matches(o, 4, "21") &&
              !order_matches(o, 4, "20310"),
          "filter: digits without separators, one expert each (n <= 10)");
    int o12[12] = {11, 2, 0, 1, 3, 4, 5, 6, 7, 8, 9, 10};
    CHECK(order_matches(o12, 12, "11 2") && order_matches(o12, 12, "11,2,0") && !order_matches(o12, 12, "1 1"),
          "filter: n > 10 needs separators");
    CHECK(order_matches(o, 4, "2 0") && order_matches(o, 4, "2,0,3") && order_matches(o, 4, "") &&
              !order_matches(o, 4, "2 1") && !order_matches(o, 4, "2 0 3 1 0"),
          "order prefix filter");
    char buf[64];
    moe_order_format(buf, sizeof buf, o, 4);
    CHECK(!strcmp(buf, "2 0 3 1"), "order format '%s'", buf);
    setenv("NO_COLOR", "1", 1);
    env_refresh();
    CHECK(theme_env_color(1) == 0, "NO_COLOR turns colour off");
    unsetenv("NO_COLOR");
    env_refresh();
    CHECK(theme_env_color(1) == 1 && theme_env_color(0) == 0, "colour when the terminal has it");
    theme t;
    theme_init(&t, 0);
    int coloured = 0;
    for (int r = 0; r < ROLE_COUNT; r++) coloured += t.style[r].fg >= 0 || t.style[r].bg >= 0;
    CHECK(coloured == 0, "monochrome theme has no colours");
    theme_init(&t, 1);
    CHECK(t.style[ROLE_HEAT_0].bg != t.style[ROLE_HEAT_7].bg, "colour heat scale");
    CHECK(keys_lookup('o') == ACT_TOGGLE_ORDER && keys_lookup(K_PGDN) == ACT_PGDN && keys_lookup('?') == ACT_HELP,
          "key table");
    /* UTF-8 round trip through the grid */
    grid g;
    grid_init(&g, 10, 1, 1);
    grid_text(&g, 0, 0, 10, ROLE_NORMAL, "a\u2800\u00e9b");
    CHECK(!strcmp(grid_row_utf8(&g, 0, buf, sizeof buf), "a\u2800\u00e9b      "), "utf8 row '%s'", buf);
    grid_free(&g);
    grid_init(&g, 4, 1, 0);
    grid_text(&g, 0, 0, 10, ROLE_NORMAL, "\u00e9xyz");
    CHECK(!strcmp(grid_row_utf8(&g, 0, buf, sizeof buf), "?xyz"), "ascii grid replaces non-ASCII '%s'", buf);
    grid_free(&g);
}

/* --png-live rewrites the figure exactly when what it shows changes: the old
 * additive hash made selected orders 0 2 1 and 1 0 2 alike and ignored the
 * selected curve's barrier. */
static void test_png_live_key(void) {
    explore_snapshot v;
    fake_view(&v, 3);
    v.have_selected = 1;
    int o1[3] = {0, 2, 1}, o2[3] = {1, 0, 2};
    memcpy(v.selected.order, o1, sizeof o1);
    v.selected.barrier = 0.25;
    curves_key k1, k2;
    curves_key_of(&v, NULL, 0, &k1);
    curves_key_of(&v, NULL, 0, &k2);
    CHECK(curves_key_equal(&k1, &k2), "same view, same key");
    memcpy(v.selected.order, o2, sizeof o2);
    curves_key_of(&v, NULL, 0, &k2);
    CHECK(!curves_key_equal(&k1, &k2), "selected 0 2 1 and 1 0 2 differ");
    memcpy(v.selected.order, o1, sizeof o1);
    v.selected.barrier = 0.5;
    curves_key_of(&v, NULL, 0, &k2);
    CHECK(!curves_key_equal(&k1, &k2), "the selected curve's barrier counts");
    v.selected.barrier = 0.25;
    curves_key_of(&v, NULL, 1, &k2);
    CHECK(!curves_key_equal(&k1, &k2), "the metric counts");
    v.req.center = 0;
    curves_key_of(&v, NULL, 0, &k2);
    CHECK(!curves_key_equal(&k1, &k2), "the toggles count");
    v.req.center = 1;
    v.have_selected = 0;
    curves_key_of(&v, NULL, 0, &k2);
    CHECK(!curves_key_equal(&k1, &k2), "a curve leaving counts");
    free_view(&v);
}

/* the export's name records the pair's folder, the order stage and weight matching */
static void test_export_name(void) {
    explore_request q;
    memset(&q, 0, sizeof q);
    q.order_stage = 1;
    q.wm_stage = 1;
    q.method = COST_EXPERT;
    q.center = 1;
    char out[512];
    export_aligned_name("sample-checkpoints/dense4/seed2.safetensors", &q, out, sizeof out);
    CHECK(!strcmp(out, "dense4-seed2.aligned-expert-wm.safetensors"), "name %s", out);
    export_aligned_name("seed2.safetensors", &q, out, sizeof out);
    CHECK(!strcmp(out, "seed2.aligned-expert-wm.safetensors"), "name without a folder %s", out);
    q.method = COST_GATE;
    q.center = 0;
    q.wm_stage = 0;
    export_aligned_name("/x/shared4/seed2.safetensors", &q, out, sizeof out);
    CHECK(!strcmp(out, "shared4-seed2.aligned-gate-uncentred-nowm.safetensors"), "gate name %s", out);
    q.order_stage = 0;
    export_aligned_name("./seed2.safetensors", &q, out, sizeof out);
    CHECK(!strcmp(out, "seed2.aligned-identity-nowm.safetensors"), "identity name %s", out);
    /* a sharded B is exported as a directory: no .safetensors suffix on its name */
    export_aligned_name("sample-checkpoints/mixtral4/seed2", &q, out, sizeof out);
    CHECK(!strcmp(out, "mixtral4-seed2.aligned-identity-nowm"), "sharded B: a directory name %s", out);
    /* the figures of `p`: both checkpoints, B's folder only when it differs */
    q.order_stage = q.wm_stage = q.center = 1;
    q.method = COST_EXPERT;
    export_plot_name("s/dense4/seed1.safetensors", "s/dense4/seed2.safetensors", &q, 0, 0, out, sizeof out);
    CHECK(!strcmp(out, "dense4-seed1-seed2.curves-expert-wm.png"), "curves name %s", out);
    export_plot_name("s/dense4/seed1.safetensors", "s/topk4/seed2.safetensors", &q, 0, 1, out, sizeof out);
    CHECK(!strcmp(out, "dense4-seed1-topk4-seed2.curves-acc-expert-wm.png"), "accuracy curves name %s", out);
    q.wm_stage = 0;
    q.center = 0;
    export_plot_name("seed1.safetensors", "seed2.safetensors", &q, 1, 0, out, sizeof out);
    CHECK(!strcmp(out, "seed1-seed2.landscape-nowm-uncentred.png"), "landscape name %s", out);
}

/* A mark column per matching method (cost_methods[]): a row chosen by several
 * methods shows each one's mark in its own column, at 80x24 as on a wide screen;
 * the legend names the methods from the table. */
static void test_method_mark_columns(void) {
    for (int w = 80; w <= 160; w += 80) {
        ui_fix f;
        fix_init(&f, 4, w, 24, 1);
        for (int m = 0; m < COST_NMETHODS; m++) f.v.method_have[m] = 1;
        memcpy(f.v.method_order[COST_ACTIVATION], f.v.method_order[COST_EXPERT], sizeof f.v.method_order[0]);
        memcpy(f.v.method_order[COST_ROUTER], f.v.method_order[COST_GATE], sizeof f.v.method_order[0]);
        app_render(&f.a, &f.v, &f.g);
        const ui_rect *o = &f.a.layout.orders;
        int ge = 0, ear = 0, other = 0;
        for (int y = o->y + 3; y < o->y + o->h; y++) {
            char mk[COST_NMETHODS + 1];
            for (int m = 0; m < COST_NMETHODS; m++) mk[m] = (char)f.g.cells[y * f.g.w + o->x + 1 + m].cp;
            mk[COST_NMETHODS] = 0;
            if (!strcmp(mk, "G  R")) ge++;
            else if (!strcmp(mk, " EA ")) ear++;
            else if (strcspn(mk, "GEAR") < COST_NMETHODS) other++;
        }
        CHECK(ge == 1 && ear == 1 && other == 0, "%d cols: G and R on one row, E and A on another, each in its "
              "method's column (%d %d %d)", w, ge, ear, other);
        CHECK(grid_find(&f.g, w < 100 ? "GEAR methods" : "A act", NULL) >= 0, "%d cols: the legend names the four methods", w);
        fix_free(&f);
    }
}

/* At the advertised minimum, 80x24, nothing is cut: the matrix total, every
 * legend entry with its barrier (an order plotted too), the marks' legend,
 * every column of the orders table for n = 4 and n = 8 (colour, monochrome,
 * ASCII), and a long message beside the worker's status. */
static void test_80x24_nothing_cut(void) {
    for (int n = 4; n <= 8; n += 4)
        for (int mode = 0; mode < 3; mode++) {
            ui_fix f;
            fix_init(&f, n, 80, 24, mode != 2);
            f.g.color = mode == 0;
            snprintf(f.v.status, sizeof f.v.status, "done: expert order rank 10 of %ld", f.v.norders);
            app_message(&f.a, 0, "saved dense4-seed2.aligned-expert-wm.safetensors (B aligned to A)");
            app_render(&f.a, &f.v, &f.g);
            dump(&f.g);
            const char *m = mode == 0 ? "colour" : mode == 1 ? "mono" : "ascii";
            CHECK(count_rows_with(&f.g, &f.a.layout.heat, "total 4.5") == 1, "n=%d %s: matrix total", n, m);
            char want[64];
            snprintf(want, sizeof want, "current barrier=0.0500");
            CHECK(count_rows_with(&f.g, &f.a.layout.curves, want) == 1, "n=%d %s: current barrier", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.curves, "naive 0.5000") == 1, "n=%d %s: naive barrier", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.curves, "skip-order 0.3000") == 1, "n=%d %s: skip barrier", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.curves, " 0.2000") == 1, "n=%d %s: the plotted order's barrier", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.curves, "chord") == 1, "n=%d %s: chord in the legend", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.orders, "I id") == 1, "n=%d %s: identity mark named", n, m);
            CHECK(count_rows_with(&f.g, &f.a.layout.orders, "acc.bar     AUC") == 1 ||
                      count_rows_with(&f.g, &f.a.layout.orders, "acc.bar  AUC") == 1 ||
                      count_rows_with(&f.g, &f.a.layout.orders, "acc.bar      AUC") == 1,
                  "n=%d %s: AUC column", n, m);
            /* every value column's numbers: the AUC of the first row ends the row */
            char row[8192];
            grid_row_utf8(&f.g, f.a.layout.orders.y + 3, row, sizeof row);
            CHECK(strstr(row, "0.0050") != NULL, "n=%d %s: first row's AUC shown: %s", n, m, row);
            CHECK(grid_find(&f.g, "(B aligned to A)", NULL) >= 0, "n=%d %s: the whole message", n, m);
            CHECK(grid_find(&f.g, f.v.status, NULL) >= 0, "n=%d %s: the whole status", n, m);
            fix_free(&f);
        }
}

/* where letter ch is in rows [y0, y1) of r, -1 if absent */
static int find_letter(const grid *g, const ui_rect *r, int y0, int y1, uint32_t ch, int *x_out) {
    for (int y = y0; y < y1; y++)
        for (int x = r->x + 9; x < r->x + r->w; x++)
            if (g->cells[y * g->w + x].cp == ch && g->cells[y * g->w + x].role == ROLE_MARK) {
                *x_out = x;
                return y;
            }
    return -1;
}

/* v: the scatter of every order's assignment cost against its barrier in the
 * curves pane's place; rho as scipy would compute it (brute force here), the
 * identity and the gate order where their cost and barrier put them. */
static void test_scatter(void) {
    static const int sizes[][3] = {{100, 30, 1}, {80, 24, 0}, {200, 60, 1}};
    for (int si = 0; si < 3; si++) {
        ui_fix f;
        fix_init(&f, 4, sizes[si][0], sizes[si][1], sizes[si][2]);
        int n = 4;
        /* the rows' barriers follow the cost loosely: rho is neither 0 nor 1 */
        for (long k = 0; k < f.v.ndone; k++) {
            double c = 0;
            for (int i = 0; i < n; i++) c += f.v.cost[i * n + row_ord(&f.v, k)[i]];
            f.v.rows[k].barrier = 0.1 * c + 0.05 * (double)((k * 5) % 7);
        }
        CHECK(app_key(&f.a, 'v', &f.v) == FX_REDRAW && f.a.scatter == 1, "v shows the scatter");
        app_render(&f.a, &f.v, &f.g);
        dump(&f.g);
        const ui_rect *cr = &f.a.layout.curves;
        CHECK(count_rows_with(&f.g, cr, "curves:") == 0, "%dx%d: the scatter replaces the curves", sizes[si][0], sizes[si][1]);
        /* Spearman by brute force: Pearson of the average ranks */
        long N = f.v.ndone;
        double xs[24], ys[24], rx[24], ry[24];
        for (long k = 0; k < N; k++) {
            xs[k] = 0;
            for (int i = 0; i < n; i++) xs[k] += f.v.cost[i * n + row_ord(&f.v, k)[i]];
            ys[k] = f.v.rows[k].barrier;
        }
        for (long k = 0; k < N; k++) {
            double lx = 0, ex = 0, ly = 0, ey = 0;
            for (long j = 0; j < N; j++) {
                lx += xs[j] < xs[k], ex += xs[j] == xs[k];
                ly += ys[j] < ys[k], ey += ys[j] == ys[k];
            }
            rx[k] = lx + (ex + 1) / 2;
            ry[k] = ly + (ey + 1) / 2;
        }
        double mx = (N + 1) / 2.0, sxy = 0, sxx = 0, syy = 0;
        for (long k = 0; k < N; k++) {
            sxy += (rx[k] - mx) * (ry[k] - mx);
            sxx += (rx[k] - mx) * (rx[k] - mx);
            syy += (ry[k] - mx) * (ry[k] - mx);
        }
        char want[32];
        snprintf(want, sizeof want, "rho %.3f", sxy / sqrt(sxx * syy));
        CHECK(count_rows_with(&f.g, cr, want) == 1, "%dx%d: %s in the title", sizes[si][0], sizes[si][1], want);
        /* the marks: identity (row of order 0 1 2 3) and the gate order */
        int py0 = cr->y + 1, py1 = cr->y + cr->h - 3, xi = 0, xg = 0;
        int yi = find_letter(&f.g, cr, py0, py1, 'I', &xi), yg = find_letter(&f.g, cr, py0, py1, 'G', &xg);
        CHECK(yi >= 0 && yg >= 0, "%dx%d: I and G marked", sizes[si][0], sizes[si][1]);
        long ki = -1, kg = -1;
        for (long k = 0; k < N; k++) {
            int is_id = 1, is_g = 1;
            for (int i = 0; i < n; i++) {
                is_id &= row_ord(&f.v, k)[i] == i;
                is_g &= row_ord(&f.v, k)[i] == f.v.method_order[COST_GATE][i];
            }
            if (is_id) ki = k;
            if (is_g) kg = k;
        }
        CHECK(ki >= 0 && kg >= 0 && (xs[ki] < xs[kg]) == (xi < xg), "%dx%d: I and G ordered by cost (%g %g, columns %d %d)",
              sizes[si][0], sizes[si][1], ki >= 0 ? xs[ki] : 0, kg >= 0 ? xs[kg] : 0, xi, xg);
        CHECK(ki >= 0 && kg >= 0 && (ys[ki] < ys[kg]) == (yi > yg), "%dx%d: I and G ordered by barrier (rows %d %d)",
              sizes[si][0], sizes[si][1], yi, yg);
        /* the points: dots (braille or '.') in at least a dozen cells */
        int dots = 0;
        for (int y = py0; y < py1; y++)
            for (int x = cr->x + 9; x < cr->x + cr->w; x++) {
                uint32_t cp = f.g.cells[y * f.g.w + x].cp;
                dots += f.g.cells[y * f.g.w + x].role == ROLE_CURVE_NAIVE && (cp == '.' || (cp > 0x2800 && cp <= 0x28FF));
            }
        CHECK(dots >= (sizes[si][2] ? 12 : 8), "%dx%d: points drawn (%d cells)", sizes[si][0], sizes[si][1], dots);
        CHECK(count_rows_with(&f.g, cr, "barrier") >= 1, "%dx%d: y axis named", sizes[si][0], sizes[si][1]);
        CHECK(app_key(&f.a, 'v', &f.v) == FX_REDRAW && f.a.scatter == 0, "v again: the curves");
        app_render(&f.a, &f.v, &f.g);
        CHECK(count_rows_with(&f.g, cr, "curves:") == 1, "the curves back");
        fix_free(&f);
    }
}

/* 200x60: the orders table takes 40% of the width, with each order's
 * assignment cost (checked by brute force) and a bar of its barrier that
 * grows with the barrier; y ticks are round numbers in one precision. */
static void test_wide(void) {
    ui_fix f;
    fix_init(&f, 4, 200, 60, 1);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    const ui_rect *o = &f.a.layout.orders;
    CHECK(o->w >= 80, "200 columns: orders pane %d wide", o->w);
    CHECK(count_rows_with(&f.g, o, "     cost  barrier") == 1, "cost and bar columns");
    int prev_bar = -1, mono = 1;
    char buf[8192];
    for (int i = 0; i < 24 && o->y + 3 + i < o->y + o->h; i++) {
        int y = o->y + 3 + i;
        long ri = f.a.orders.idx[f.a.orders.top + i];
        double c = 0;
        for (int k = 0; k < 4; k++) c += f.v.cost[k * 4 + row_ord(&f.v, ri)[k]];
        char want[32];
        snprintf(want, sizeof want, "%9.3f", c);
        grid_row_utf8(&f.g, y, buf, sizeof buf);
        CHECK(strstr(buf, want) != NULL, "row %d cost %s", i, want);
        int bar = 0;
        for (int x = o->x; x < o->x + o->w; x++) {
            uint32_t cp = f.g.cells[y * f.g.w + x].cp;
            if (cp >= 0x2589 && cp <= 0x258F) bar += 0x2590 - cp;
            if (cp == 0x2588) bar += 8;
        }
        mono &= bar >= prev_bar; /* sorted by barrier: bars never shrink */
        prev_bar = bar;
    }
    CHECK(mono && prev_bar > 8, "bars grow with the barrier (last %d eighths)", prev_bar);
    /* y ticks: every label on the axis is a multiple of one round step, same decimals */
    const ui_rect *cr = &f.a.layout.curves;
    int nlab = 0, dec0 = -1, same_dec = 1;
    for (int y = cr->y + 1; y < cr->y + cr->h; y++) {
        grid_row_utf8(&f.g, y, buf, sizeof buf);
        char *bar = strstr(buf, "\u2524"); /* the tick glyph */
        if (!bar) continue;
        *bar = 0;
        char *num = buf + strspn(buf, " ");
        char *dot = strchr(num, '.');
        int dec = dot ? (int)strlen(dot + 1) - 1 : 0; /* the label ends with a space */
        if (dec0 < 0) dec0 = dec;
        same_dec &= dec == dec0;
        double val = atof(num), step = pow(10, -dec);
        double m = val / step;
        CHECK(fabs(m - round(m)) < 1e-6, "tick %s is round", num);
        nlab++;
    }
    CHECK(nlab >= 3 && same_dec, "%d y ticks, one precision", nlab);
    fix_free(&f);
}

/* the accuracy axis of a figure stops at 1 (and 0), around the data */
static void test_accuracy_range(void) {
    double x[3] = {0, 0.5, 1}, y[3] = {0.97, 0.91, 0.995};
    plot_series se = {.label = "a", .x = x, .y = y, .n = 3};
    plot_spec p;
    plot_spec_init(&p, NULL);
    p.series = &se;
    p.nseries = 1;
    fig_accuracy_range(&p);
    CHECK(p.ymax <= 1 && p.ymax >= 0.995 && p.ymin < 0.91 && p.ymin > 0.85, "accuracy range %g..%g", p.ymin, p.ymax);
    double y2[3] = {0.01, 0.0, 0.02};
    se.y = y2;
    fig_accuracy_range(&p);
    CHECK(p.ymin == 0 && p.ymax > 0.02, "accuracy range near 0: %g..%g", p.ymin, p.ymax);
}

/* numbers that do not fit their column (weights of 1e18) switch to
 * scientific notation instead of running together */
static void test_huge_numbers(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    for (int i = 0; i < 16; i++) f.v.cost[i] *= 1e18;
    f.v.rows[0].acc_barrier = 3e18; /* row 0 has the lowest barrier: the first shown */
    f.v.rows[0].auc = -2.5e17;
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    char buf[8192];
    int sci_rows = 0, bad = 0;
    for (int y = f.a.layout.heat.y + 2; y < f.a.layout.heat.y + 6; y++) {
        grid_row_utf8(&f.g, y, buf, sizeof buf);
        buf[f.a.layout.sep_x] = 0;
        sci_rows += strstr(buf, "e+18") != NULL;
        /* every cell a separate word: 4 numbers after the label */
        int words = 0;
        for (char *t = strtok(buf, " *"); t; t = strtok(NULL, " *")) words++;
        bad += words != 5;
    }
    CHECK(sci_rows == 4 && bad == 0, "heat map: 1e18 costs in scientific notation, apart (%d rows, %d bad)", sci_rows, bad);
    int found = 0;
    for (int y = f.a.layout.orders.y + 3; y < f.a.layout.orders.y + f.a.layout.orders.h; y++) {
        grid_row_utf8(&f.g, y, buf, sizeof buf);
        found += strstr(buf, "e+18") && strstr(buf, "e+17");
    }
    CHECK(found == 1, "orders table: 3e18 and -2.5e17 in scientific notation");
    fix_free(&f);
}

/* x: the name prompt, then the state as JSON (or the table as CSV) */
/* a file's bytes contain s (PNG tEXt chunks are stored uncompressed) */
static int file_has(const char *path, const char *s) {
    FILE *fp = fopen(path, "rb");
    if (!fp) return 0;
    static char buf[1 << 20];
    size_t nr = fread(buf, 1, sizeof buf, fp), ls = strlen(s);
    fclose(fp);
    for (size_t i = 0; i + ls <= nr; i++)
        if (!memcmp(buf + i, s, ls)) return 1;
    return 0;
}

/* P pins the plotted order's curve, several stay overlaid (digits on the
 * curves and in the legend), P again unpins, U clears; the figure, the live
 * PNG key and the saved state carry them */
static void test_pins(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    f.g.color = 1;
    explore_snapshot none = f.v;
    none.have_selected = 0;
    CHECK(app_key(&f.a, 'P', &none) == FX_REDRAW && f.a.pins.n == 0 && f.a.msg_error &&
              strstr(f.a.msg, "plot an order first"), "P with nothing plotted says so");
    app_key(&f.a, 'P', &f.v);
    CHECK(f.a.pins.n == 1 && !strcmp(f.a.msg, "pinned order 3 2 1 0 as 1 (weight matching on)"), "pinned: %s", f.a.msg);
    /* another order plotted: the first stays */
    ls_curve keep = f.v.selected;
    int o2[4] = {0, 2, 1, 3};
    fake_curve(&f.v.selected, 4, 25, o2, 0.4);
    app_key(&f.a, 'P', &f.v);
    CHECK(f.a.pins.n == 2, "two pins");
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    const ui_rect *cr = &f.a.layout.curves;
    CHECK(grid_find(&f.g, "1 [3 2 1 0] 0.2000", NULL) > cr->y && grid_find(&f.g, "2 [0 2 1 3] 0.4000", NULL) > cr->y,
          "both pins in the legend with their barriers");
    CHECK(grid_find(&f.g, "current barrier=0.0500", NULL) > cr->y, "the live curves stay in the legend");
    /* each pin's digit sits on its curve's peak inside the plot */
    int dx = -1, dy = -1, found1 = 0, found2 = 0, ax = -1;
    int axis_y = grid_find(&f.g, "\u2514", &ax); /* the plot's corner: rows above it are the plot */
    CHECK(axis_y > cr->y, "plot axis found");
    for (int y = cr->y + 1; y < axis_y; y++)
        for (int x = ax + 1; x < cr->x + cr->w; x++) {
            uint32_t ch = f.g.cells[y * f.g.w + x].cp;
            if (ch == '1') found1 = 1;
            if (ch == '2') found2 = 1, dx = x, dy = y;
        }
    CHECK(found1 && found2, "digits 1 and 2 in the plot (2 at %d,%d)", dx, dy);
    CHECK(dy >= 0 && f.g.cells[dy * f.g.w + dx].role == ROLE_CURVE_PIN(1), "the digit has its pin's role");
    /* another weight-matching setting: the pin says what it was computed under */
    f.v.req.wm_stage = 0;
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "1 [3 2 1 0] (wm on)", NULL) > cr->y, "a pin of the other setting is labelled");
    f.v.req.wm_stage = 1;
    /* the live PNG changes with the pins */
    curves_key k0, k1;
    curves_key_of(&f.v, NULL, 0, &k0);
    curves_key_of(&f.v, &f.a.pins, 0, &k1);
    CHECK(!curves_key_equal(&k0, &k1), "pins count for --png-live");
    /* the figure's legend and the state */
    char dir[] = "/tmp/moescope-pins-XXXXXX", png[600], js[600];
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    snprintf(png, sizeof png, "%s/c.png", dir);
    snprintf(js, sizeof js, "%s/s.json", dir);
    ms_err err;
    CHECK(export_curves_png(&f.v, &f.a.pins, 0, NULL, "a/seed1.safetensors", "a/seed2.safetensors", png, &err) == 0,
          "export: %s", err.msg);
    CHECK(file_has(png, "pin 1 [3 2 1 0] (barrier 0.2)") && file_has(png, "pin 2 [0 2 1 3] (barrier 0.4)"),
          "the PNG legend names the pins");
    CHECK(state_write(&f.v, &f.a.pins, "a.safetensors", "b.safetensors", js, &err) == 0, "state: %s", err.msg);
    CHECK(file_has(js, "\"pinned\"") && file_has(js, "\"wm_stage\""), "the state lists the pins");
    remove(png);
    remove(js);
    rmdir(dir);
    /* P on a pinned order unpins it; at most PINS_MAX; U clears */
    app_key(&f.a, 'P', &f.v);
    CHECK(f.a.pins.n == 1 && !strcmp(f.a.msg, "unpinned order 0 2 1 3"), "P again unpins: %s", f.a.msg);
    for (int i = 0; i < PINS_MAX; i++) {
        int o[4] = {i % 4, (i + 1) % 4, (i + 2) % 4, (i + 3) % 4};
        free(f.v.selected.loss);
        free(f.v.selected.acc);
        fake_curve(&f.v.selected, 4, 25, o, 0.1 + 0.05 * i);
        app_key(&f.a, 'P', &f.v);
    }
    CHECK(f.a.pins.n == PINS_MAX && f.a.msg_error && strstr(f.a.msg, "pinned already"), "full: %s", f.a.msg);
    /* 80x24 ASCII: the pins' digits and the live curves' names still fit */
    fix_grid(&f, 80, 24, 0);
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    CHECK(grid_find(&f.g, "current", NULL) > cr->y && grid_find(&f.g, "chord", NULL) > 0 &&
              grid_find(&f.g, "4 [2 3 0 1]", NULL) > 0, "80x24 legend keeps current, chord and the pins");
    app_key(&f.a, 'U', &f.v);
    CHECK(f.a.pins.n == 0 && !strcmp(f.a.msg, "unpinned 4 orders"), "U clears: %s", f.a.msg);
    free(f.v.selected.loss);
    free(f.v.selected.acc);
    f.v.selected = keep;
    fix_free(&f);
}

/* Pinned orders carry their pin's digit in the table's mark column (over the
 * plotted mark): in colour with the pinned curves' role, in ASCII without
 * colour the digit alone; the legend counts them. Each pinned order is found
 * with a two-expert filter that leaves it and one other row. */
static void test_pins_table(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    f.g.color = 1;
    app_key(&f.a, 'P', &f.v); /* 3 2 1 0 as 1 */
    ls_curve keep = f.v.selected;
    int o2[4] = {0, 2, 1, 3};
    fake_curve(&f.v.selected, 4, 25, o2, 0.4);
    app_key(&f.a, 'P', &f.v); /* 0 2 1 3 as 2, and plotted */
    CHECK(f.a.pins.n == 2, "two pins");
    const int pinned[2][4] = {{3, 2, 1, 0}, {0, 2, 1, 3}};
    for (int pass = 0; pass < 2; pass++) {
        if (pass) {
            fix_grid(&f, 80, 24, 0);
            f.g.color = 0;
        }
        for (int q = 0; q < 2; q++) {
            snprintf(f.a.orders.filter, sizeof f.a.orders.filter, "%d %d", pinned[q][0], pinned[q][1]);
            app_render(&f.a, &f.v, &f.g);
            orders_state *os = &f.a.orders;
            CHECK(os->nidx == 2, "the filter leaves two rows (%ld)", os->nidx);
            int p = !memcmp(row_ord(&f.v, os->idx[0]), pinned[q], sizeof(int) * 4) ? 0 : 1;
            orders_set_cursor(os, &f.v, 1 - p); /* the cursor on the other row */
            app_render(&f.a, &f.v, &f.g);
            dump(&f.g);
            const ui_rect *o = &f.a.layout.orders;
            const grid_cell *c = &f.g.cells[(o->y + 3 + p) * f.g.w + o->x + ORDERS_MARKS - 1];
            const grid_cell *other = &f.g.cells[(o->y + 3 + 1 - p) * f.g.w + o->x + ORDERS_MARKS - 1];
            CHECK(c->cp == (uint32_t)('1' + q), "%s: pin %d's digit in its row's mark column (got '%c')",
                  pass ? "ASCII" : "colour", q + 1, (int)c->cp);
            CHECK(pass || c->role == ROLE_CURVE_PIN(q), "colour: the digit has its pin's role (%d)", c->role);
            CHECK(!(other->cp >= '1' && other->cp <= '9'), "the unpinned row has no digit");
        }
        f.a.orders.filter[0] = 0;
        app_render(&f.a, &f.v, &f.g);
        CHECK(grid_find(&f.g, "1-2 pinned", NULL) >= 0, "%s: the legend counts the pins", pass ? "ASCII" : "colour");
    }
    /* unpinned: the plotted mark comes back */
    app_key(&f.a, 'U', &f.v);
    snprintf(f.a.orders.filter, sizeof f.a.orders.filter, "0 2");
    app_render(&f.a, &f.v, &f.g);
    int p = !memcmp(row_ord(&f.v, f.a.orders.idx[0]), o2, sizeof o2) ? 0 : 1;
    const ui_rect *o = &f.a.layout.orders;
    CHECK(f.g.cells[(o->y + 3 + p) * f.g.w + o->x + ORDERS_MARKS - 1].cp == '>', "U: the plotted mark again");
    free(keep.loss);
    free(keep.acc);
    fix_free(&f);
}

/* Error bars in the orders table: rows whose bootstrap interval overlaps the
 * best's are marked '~' (brute force over every row), the legend counts them;
 * without intervals nothing is marked. */
static void test_ci_marks(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 0);
    const double half = 0.03; /* barriers are 1/24 apart: only the second-best overlaps the best */
    for (long k = 0; k < f.v.ndone; k++)
        f.v.rows[k].bar_lo = f.v.rows[k].barrier - half, f.v.rows[k].bar_hi = f.v.rows[k].barrier + half;
    for (int pass = 0; pass < 2; pass++) {
        f.v.ci_units = pass ? 0 : 8;
        app_render(&f.a, &f.v, &f.g);
        const orders_state *os = &f.a.orders;
        long best = os->best_row, want = 0, got = 0;
        for (long k = 0; k < f.v.ndone; k++) {
            int overlap = !pass && k != best && fabs(f.v.rows[k].barrier - f.v.rows[best].barrier) <= 2 * half + 1e-12;
            want += overlap;
            got += orders_undistinguished(&f.v, k, best);
            CHECK(orders_undistinguished(&f.v, k, best) == overlap, "row %ld: not distinguished iff the intervals "
                  "overlap (%d)", k, overlap);
        }
        CHECK(got == want && want == (pass ? 0 : 1), "%ld rows not distinguished from the best (want %ld)", got, want);
        const ui_rect *o = &f.a.layout.orders;
        CHECK(f.g.cells[(o->y + 3) * f.g.w + o->x].cp == '*', "the best row is marked *");
        CHECK(f.g.cells[(o->y + 4) * f.g.w + o->x].cp == (uint32_t)(pass ? ' ' : '~'),
              "%s: the second-best row %s '~' (got '%c')", pass ? "no intervals" : "intervals", pass ? "lacks" : "has",
              (int)f.g.cells[(o->y + 4) * f.g.w + o->x].cp);
        CHECK(f.g.cells[(o->y + 5) * f.g.w + o->x].cp != '~', "the third row is distinguished");
        CHECK((grid_find(&f.g, "~ not distinguished from the best *: 1 order ", NULL) >= 0) == !pass,
              "%s: the legend %s", pass ? "no intervals" : "intervals", pass ? "is absent" : "counts one order");
    }
    /* a complete table the landscape gave no intervals says why, in the legend's place */
    f.v.ci_units = 0;
    f.v.ci_why = "more than 33554432 per-unit losses (orders x points x units) to resample";
    for (int done = 1; done >= 0; done--) {
        f.v.have_landscape = done;
        app_render(&f.a, &f.v, &f.g);
        dump(&f.g);
        const ui_rect *o = &f.a.layout.orders;
        CHECK((grid_find(&f.g, "no error bars (~): more than 33554432", NULL) >= 0) == done &&
                  (grid_find(&f.g, "(orders x points x units) to resample", NULL) >= 0) == done &&
                  f.g.cells[(o->y + 4) * f.g.w + o->x].cp != '~',
              "no intervals, %s: the line says why %s, no row marked", done ? "complete" : "incomplete",
              done ? "under the table, wrapped" : "only once complete");
    }
    f.v.ci_why = NULL;
    fix_free(&f);
}

static void test_state_export(void) {
    ui_fix f;
    fix_init(&f, 4, 100, 30, 1);
    f.a.info.a_path = "s/dense4/seed1.safetensors";
    f.a.info.b_path = "s/dense4/seed2.safetensors";
    snprintf(f.a.export_dir, sizeof f.a.export_dir, "."); /* chosen (test_ui_newcomer: the prompt for it) */
    CHECK(app_key(&f.a, 'x', &f.v) == FX_REDRAW && f.a.prompt == PROMPT_STATE, "x opens the prompt");
    CHECK(!strcmp(f.a.line.buf, "dense4-seed1-seed2.state-expert-wm.json"), "default name %s", f.a.line.buf);
    app_render(&f.a, &f.v, &f.g);
    CHECK(grid_find(&f.g, "save as (.json state, .csv table; Enter, Esc): dense4-seed1-seed2.state-expert-wm.json", NULL) ==
              f.g.h - 1, "the prompt on the message line");
    CHECK(app_key(&f.a, 'o', &f.v) == FX_REDRAW && f.a.req.order_stage == 1, "keys type into the prompt, not toggles");
    app_key(&f.a, K_BACKSPACE, &f.v);
    CHECK(!strcmp(f.a.line.buf, "dense4-seed1-seed2.state-expert-wm.json"), "backspace");
    app_key(&f.a, K_ESC, &f.v);
    CHECK(!f.a.prompt && !strcmp(f.a.msg, "not saved"), "Esc cancels");
    app_key(&f.a, 'x', &f.v);
    char dir[] = "/tmp/moescope-state-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "temp dir");
    char typed[600];
    snprintf(typed, sizeof typed, "%s/s.json", dir);
    line_edit_set(&f.a.line, typed);
    CHECK(app_key(&f.a, K_ENTER, &f.v) == FX_STATE && !f.a.prompt, "Enter saves");
    ms_err err;
    CHECK(state_write(&f.v, NULL, "a.safetensors", "b.safetensors", f.a.line.buf, &err) == 0, "state_write: %s", err.msg);
    FILE *fp = fopen(f.a.line.buf, "r");
    char *txt = calloc(1, 1 << 20);
    size_t nr = fp ? fread(txt, 1, (1 << 20) - 1, fp) : 0;
    if (fp) fclose(fp);
    cJSON *root = cJSON_Parse(txt);
    CHECK(root && nr > 0, "the state parses as JSON");
    cJSON *ls = cJSON_GetObjectItem(root, "landscape");
    cJSON *rows = cJSON_GetObjectItem(ls, "orders");
    CHECK(cJSON_GetArraySize(rows) == 24, "24 orders");
    int sorted = 1, costs = 1;
    double prev = -1;
    for (int i = 0; i < cJSON_GetArraySize(rows); i++) {
        cJSON *r = cJSON_GetArrayItem(rows, i);
        double b = cJSON_GetObjectItem(r, "barrier")->valuedouble;
        sorted &= b >= prev;
        prev = b;
        cJSON *o = cJSON_GetObjectItem(r, "order");
        double c = 0;
        for (int k = 0; k < 4; k++) c += f.v.cost[k * 4 + cJSON_GetArrayItem(o, k)->valueint];
        costs &= fabs(c - cJSON_GetObjectItem(r, "cost")->valuedouble) < 1e-12;
    }
    CHECK(sorted && costs, "orders by rank, each with its assignment cost");
    CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "curves"), "naive"), "loss")) == 25,
          "naive loss curve, 25 points");
    cJSON_Delete(root);
    free(txt);
    /* .csv: the table */
    char csv[600];
    snprintf(csv, sizeof csv, "%s/t.csv", dir);
    CHECK(state_write(&f.v, NULL, "a.safetensors", "b.safetensors", csv, &err) == 0, "state_write csv: %s", err.msg);
    fp = fopen(csv, "r");
    int lines = 0, header = 0;
    char line[512];
    while (fp && fgets(line, sizeof line, fp)) {
        if (line[0] == '#') continue;
        /* landscape --csv's columns (test_tui_newcomer compares the two files) */
        if (!header)
            header = !strcmp(line, "rank,order,barrier,acc_barrier,loss_auc,tied,tie_class,barrier_ci95_lo,barrier_ci95_hi\n");
        else lines++;
    }
    if (fp) fclose(fp);
    CHECK(header && lines == 24, "CSV: header and 24 rows (%d)", lines);
    remove(csv);
    remove(f.a.line.buf);
    rmdir(dir);
    fix_free(&f);
}

/* b: each two-slot swap of the current order, its barrier change, checked
 * against the rows by brute force; the best swap named */
static void test_swaps(void) {
    ui_fix f;
    fix_init(&f, 4, 80, 24, 1);
    int n = 4;
    memcpy(f.v.current_order, f.v.cost_order, sizeof(int) * 4);
    double d[16];
    CHECK(swap_deltas(&f.v, d) == 0, "the current order's row is there");
    double base = NAN;
    for (long k = 0; k < f.v.ndone; k++)
        if (!memcmp(row_ord(&f.v, k), f.v.current_order, sizeof(int) * 4)) base = f.v.rows[k].barrier;
    int ok = 1, bi = -1, bj = -1;
    double best = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (i == j) {
                ok &= d[i * n + j] == 0;
                continue;
            }
            /* the swapped order's row, found by brute force */
            for (long k = 0; k < f.v.ndone; k++) {
                const int *o = row_ord(&f.v, k);
                int same = 1;
                for (int s2 = 0; s2 < n; s2++)
                    same &= o[s2] == (s2 == i ? f.v.current_order[j] : s2 == j ? f.v.current_order[i] : f.v.current_order[s2]);
                if (same) ok &= fabs(d[i * n + j] - (f.v.rows[k].barrier - base)) < 1e-15;
            }
            if (j > i && d[i * n + j] < best) best = d[i * n + j], bi = i, bj = j;
        }
    CHECK(ok, "swap deltas = the swapped orders' barriers minus the current one's");
    CHECK(app_key(&f.a, 'b', &f.v) == FX_REDRAW && f.a.swaps, "b shows the swaps");
    app_render(&f.a, &f.v, &f.g);
    dump(&f.g);
    char want[64];
    snprintf(want, sizeof want, "best %d<->%d %+.3g", bi, bj, best);
    CHECK(bi >= 0 && count_rows_with(&f.g, &f.a.layout.heat, want) == 1, "the best swap named: %s", want);
    CHECK(count_rows_with(&f.g, &f.a.layout.heat, "s3") == 1, "every slot's row");
    app_key(&f.a, 'b', &f.v);
    app_render(&f.a, &f.v, &f.g);
    CHECK(count_rows_with(&f.g, &f.a.layout.heat, "total 4.5") == 1, "b again: the costs");
    fix_free(&f);
}

/* the footer's hints at every width: one row, ? and q always, more with more room */
static void test_footer_plan(void) {
    explore_request q;
    memset(&q, 0, sizeof q);
    q.order_stage = q.wm_stage = q.center = 1;
    footer_item it[FOOTER_MAX];
    int prev = 0, bad = 0;
    for (int w = UI_MIN_W; w <= 200; w++)
        for (int acc = 0; acc <= 1; acc++) {
            int n = footer_plan(w, &q, acc, it), has_q = 0, has_help = 0, has_v = 0;
            for (int i = 0; i < n; i++) {
                has_q += it[i].key == 'q', has_help += it[i].key == '?', has_v += it[i].key == 'v';
                if (it[i].key == 'o' && w >= 90 && strcmp(it[i].label, "order:")) bad++;
            }
            if (footer_width(it, n) > w || !has_q || !has_help || n < prev || (w >= 106 && (n != 11 || !has_v))) {
                bad++;
                printf("  footer at %d cols (acc %d): %d items, %d columns\n", w, acc, n, footer_width(it, n));
            }
            if (!acc) prev = n;
        }
    CHECK(!bad, "the footer fits one row at every width, ? and q kept, full wording from 90 (%d bad)", bad);
    /* a toggle never reflows it: the same items with every value at its longest or shortest */
    int n1 = footer_plan(80, &q, 0, it);
    q.order_stage = q.wm_stage = q.center = 0, q.method = COST_GATE;
    int n2 = footer_plan(80, &q, 1, it);
    CHECK(n1 == n2 && n1 == 9, "80 columns: 9 hints whatever the toggles (%d, %d)", n1, n2);
    CHECK(footer_plan(90, &q, 1, it) == 9 && footer_plan(100, &q, 1, it) == 10,
          "90 columns drop v and d, 100 only v");
}

int main(void) {
    test_footer_plan();
    test_units();
    test_sizes();
    test_too_small();
    test_keys();
    test_big();
    test_color_heatmap();
    test_theme_heat();
    test_spinner();
    test_help_small();
    test_diag_scroll();
    test_diag_view();
    test_worker();
    test_worker_activation();
    test_png_live_key();
    test_export_name();
    test_curves_rows();
    test_80x24_nothing_cut();
    test_method_mark_columns();
    test_scatter();
    test_wide();
    test_accuracy_range();
    test_huge_numbers();
    test_pins_table();
    test_state_export();
    test_swaps();
    test_ci_marks();
    test_pins();
    return test_summary("test_ui_layout");
}
