/* app.c - see app.h. */
#include "app.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "curves_view.h"
#include "export.h"
#include "analysis/diagnose.h"
#include "heatmap_view.h"
#include "help_view.h"
#include "model/symmetry.h"
#include "keys.h"
#include "layers_view.h"
#include "order_abbrev.h"
#include "scatter_view.h"
#include "swap_view.h"

void app_init(app_state *a, const ui_info *info, int T) {
    memset(a, 0, sizeof *a);
    a->info = *info;
    a->req.order_stage = 1;
    a->req.wm_stage = 1;
    a->req.center = 1;
    a->req.method = COST_EXPERT;
    a->req.T = T;
    orders_init(&a->orders);
}

void app_set_diag(app_state *a, char **lines, int n) {
    for (int i = 0; i < a->ndiag; i++) free(a->diag_lines[i]);
    free(a->diag_lines);
    a->diag_lines = lines;
    a->ndiag = n;
    a->diag_scroll = 0;
}

void app_set_geometry(app_state *a, char **lines, int n) {
    for (int i = 0; i < a->ngeo; i++) free(a->geo_lines[i]);
    free(a->geo_lines);
    a->geo_lines = lines;
    a->ngeo = n;
}

/* One line per finding, the flags (bad, warn) first, then info and ok, each
 * in the report's order, under a count. */
static void diag_build(app_state *a, const explore_snapshot *v) {
    const dg_list *l = &v->diag;
    char **lines = ms_malloc(sizeof(char *) * (size_t)(l->n + 1));
    int k = 0;
    char head[160];
    int flags = dg_count(l, DG_WARN);
    snprintf(head, sizeof head, "%d finding%s, %d flag%s (warn or bad) first%s", l->n, l->n == 1 ? "" : "s", flags,
             flags == 1 ? "" : "s", flags ? "" : ": the conditions of the theory hold");
    lines[k++] = ms_strdup(head);
    for (int sev = DG_BAD; sev >= DG_OK; sev--)
        for (int i = 0; i < l->n; i++) {
            const dg_finding *f = &l->items[i];
            if ((int)f->severity != sev) continue;
            char text[sizeof f->text];
            snprintf(text, sizeof text, "%s", f->text);
            /* what the diagnostics could not settle: in the explorer the
               orders pane has the ranks */
            if (f->next == DG_NEXT_LANDSCAPE) {
                cost_method m = v->diag_method;
                if (v->rank[m] > 0)
                    snprintf(text, sizeof text, "the %s order ranks %d of %ld by loss barrier (orders pane%s)",
                             cost_method_name(m), v->rank[m], v->norders,
                             v->have_landscape ? "" : ", table still filling in");
                else
                    snprintf(text, sizeof text, "the rank of the %s order appears in the orders pane and the "
                             "status line when the landscape has it", cost_method_name(m));
            }
            char buf[512];
            snprintf(buf, sizeof buf, "[%s] %s%s%s", dg_severity_name(f->severity), f->who, f->who[0] ? ": " : "",
                     text);
            lines[k++] = ms_strdup(buf);
        }
    int scroll = a->diag_scroll;
    app_set_diag(a, lines, k);
    a->diag_scroll = scroll; /* a rank arriving does not move the reader */
}

void app_sync_diag(app_state *a, const explore_snapshot *v) {
    if (v->diag_state == EXPLORE_DIAG_NONE) return;
    int mine = v->diag_method == a->req.method && v->diag_center == a->req.center;
    double sig = -1;
    if (mine && v->diag_state == EXPLORE_DIAG_READY) {
        cost_method m = v->diag_method;
        sig = (double)v->diag_epoch * 1e9 + v->rank[m] * 4.0 + v->have_landscape * 2.0 + 1.0;
    } else if (mine && v->diag_state == EXPLORE_DIAG_FAILED) {
        sig = (double)v->diag_epoch * 1e9;
    }
    if (sig == a->diag_sig && (sig < 0 ? a->ndiag == 0 : a->ndiag > 0)) return;
    a->diag_sig = sig;
    if (sig < 0) {
        app_set_diag(a, NULL, 0); /* computing (or for another method): the placeholder */
    } else if (v->diag_state == EXPLORE_DIAG_FAILED) {
        char **lines = ms_malloc(sizeof(char *));
        lines[0] = ms_strdup(v->diag_error[0] ? v->diag_error : "diagnostics failed");
        app_set_diag(a, lines, 1);
    } else {
        diag_build(a, v);
    }
}

void app_set_layers(app_state *a, char **names, int n, int current) {
    layer_list *l = &a->layers;
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    l->names = names;
    l->n = n;
    l->current = current;
    l->cursor = current >= 0 ? current : 0;
    l->top = 0;
    l->loading = -1;
}

void app_set_loading(app_state *a, int index, double frac, const char *phase) {
    layer_list *l = &a->layers;
    l->loading = index >= 0 && index < l->n ? index : -1;
    l->load_frac = frac;
    a->load_status[0] = 0;
    if (l->loading < 0) return;
    /* the percentage before the file being read ("load model-00002-of-00002.safetensors"):
       a short line cuts the file */
    const char *what = phase && !strncmp(phase, "load ", 5) ? phase + 5 : "";
    snprintf(a->load_status, sizeof a->load_status, "loading layer %.100s... %.0f%%%s%.60s%s", l->names[index],
             100 * frac, what[0] ? " (" : "", what, what[0] ? ")" : "");
}

void app_switched(app_state *a, const char *layer, const moe_config *cfg, int current, const char *no_eval) {
    snprintf(a->info.layer, sizeof a->info.layer, "%s", layer);
    a->info.cfg = *cfg;
    snprintf(a->info.no_eval, sizeof a->info.no_eval, "%s", no_eval);
    a->req.has_selected = 0;
    pins_clear(&a->pins); /* curves of the other layer */
    orders_free(&a->orders);
    orders_init(&a->orders);
    memset(&a->heat, 0, sizeof a->heat);
    app_set_diag(a, NULL, 0);
    a->diag_sig = -2; /* the new worker's first findings are new */
    a->show_diag = 0;
    a->layers.current = a->layers.cursor = current;
    app_set_loading(a, -1, 0, NULL);
    if (no_eval[0]) app_message(a, 1, "%s", no_eval);
    else if (a->info.objective[0]) /* a network's block: nothing read again, the worker starts anew */
        app_message(a, 0, "MoE block %s: its costs, curves and landscape start again", layer);
    else app_message(a, 0, "layer %s: A and B reloaded, the landscape restarts", layer);
}

void app_free(app_state *a) {
    orders_free(&a->orders);
    pins_clear(&a->pins);
    app_set_diag(a, NULL, 0);
    app_set_geometry(a, NULL, 0);
    app_set_layers(a, NULL, 0, -1);
}

void app_message(app_state *a, int is_error, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->msg, sizeof a->msg, fmt, ap);
    va_end(ap);
    a->msg_error = is_error;
}

/* columns an order takes in a status message (16 experts fit whole) */
#define MSG_ORDER_W 48

static void select_row(app_state *a, const explore_snapshot *v) {
    const ls_row *row = orders_selected(&a->orders, v);
    if (!row) {
        app_message(a, 1, "no order selected yet");
        return;
    }
    a->req.has_selected = 1;
    explore_row_order(v, row, a->req.selected);
    char o[64]; /* 64 or 256 experts: "3 0 12 ...", "id except 3 7" */
    order_abbrev(a->req.selected, v->n, MSG_ORDER_W, 0, o, sizeof o);
    app_message(a, 0, "plotting order %s", o);
}

/* P: the plotted order's curve as the worker computed it (with the stages of
 * the request it answered), so a pin never holds a curve of another setting. */
static void pin_plotted(app_state *a, const explore_snapshot *v) {
    if (!v || !v->have_selected) {
        app_message(a, 1, "nothing to pin: plot an order first (Enter on a row)");
        return;
    }
    char o[64];
    order_abbrev(v->selected.order, v->n, MSG_ORDER_W, 0, o, sizeof o);
    int wm = v->req.wm_stage, r = pins_toggle(&a->pins, &v->selected, wm);
    if (r == PIN_FULL) app_message(a, 1, "%d orders pinned already: P on a pinned order unpins it, U unpins all", PINS_MAX);
    else if (r == PIN_REMOVED) app_message(a, 0, "unpinned order %s", o);
    else app_message(a, 0, "pinned order %s as %c (weight matching %s)", o, pins_glyph(a->pins.n - 1), wm ? "on" : "off");
}

static int filter_key(app_state *a, int key) {
    orders_state *s = &a->orders;
    size_t len = strlen(s->filter);
    if (key == K_ESC) {
        s->filter[0] = 0;
        s->editing = 0;
    } else if (key == K_ENTER || key == '\n' || key == '\r') {
        s->editing = 0;
    } else if (key == K_BACKSPACE || key == 127 || key == 8) {
        if (len) s->filter[len - 1] = 0;
    } else if (((key >= '0' && key <= '9') || key == ' ' || key == ',') && len + 1 < sizeof s->filter) {
        s->filter[len] = (char)key;
        s->filter[len + 1] = 0;
    }
    s->cursor = s->top = 0;
    s->have_cursor_order = 0;
    return FX_REDRAW;
}

/* x's name prompt, offered with the pair's and the stages' name */
static void open_state_prompt(app_state *a) {
    char name[LINE_EDIT_CAP];
    export_pair_name(a->info.a_path ? a->info.a_path : a->info.a_name, a->info.b_path ? a->info.b_path : a->info.b_name,
                     &a->req, "state", "json", name, sizeof name);
    a->prompt = PROMPT_STATE;
    line_edit_set(&a->line, name);
}

/* The export directory's prompt (the first p, e or x; O), then the export then. */
static int open_dir_prompt(app_state *a, int then) {
    a->prompt = PROMPT_DIR;
    a->prompt_then = then;
    line_edit_set(&a->line, a->export_dir[0] ? a->export_dir : a->dir_default);
    return FX_REDRAW;
}

int app_export_dir(app_state *a, const char *dir, const char *why) {
    int then = a->prompt_then;
    a->prompt_then = 0;
    if (why && why[0]) {
        app_message(a, 1, "%s", why);
        return 0;
    }
    snprintf(a->export_dir, sizeof a->export_dir, "%s", dir);
    app_message(a, 0, "exports go to %s (O changes it)", dir);
    if (then == FX_STATE) {
        open_state_prompt(a);
        if (a->export_name[0]) line_edit_set(&a->line, a->export_name); // typed at the directory prompt
        a->export_name[0] = 0;
        return FX_REDRAW;
    }
    return then;
}

/* A prompt's keys: line editing (line_edit.h), Enter takes the line, Esc cancels. */
static int prompt_key(app_state *a, int key) {
    int dir = a->prompt == PROMPT_DIR;
    if (key == K_ESC) {
        a->prompt = PROMPT_NONE;
        app_message(a, 0, "%s", dir ? "export directory unchanged" : "not saved");
    } else if (key == K_ENTER || key == '\n' || key == '\r') {
        a->prompt = PROMPT_NONE;
        if (a->line.len) return dir ? FX_OUT_DIR : FX_STATE;
        app_message(a, 1, "%s", dir ? "no directory: nothing exported" : "no name: not saved");
    } else {
        line_edit_key(&a->line, key);
    }
    return FX_REDRAW;
}

static void move(app_state *a, const explore_snapshot *v, long delta) {
    orders_move(&a->orders, delta);
    orders_set_cursor(&a->orders, v, a->orders.cursor);
}

/* The layer list (l): move, Enter switches (FX_LAYER), any other key closes. */
static int layer_key(app_state *a, ui_action act, int key) {
    layer_list *l = &a->layers;
    int page = a->layout.overlay.h > 6 ? a->layout.overlay.h - 5 : 1;
    if (act == ACT_DOWN) l->cursor++;
    else if (act == ACT_UP) l->cursor--;
    else if (act == ACT_PGDN) l->cursor += page;
    else if (act == ACT_PGUP) l->cursor -= page;
    else if (act == ACT_TOP) l->cursor = 0;
    else if (act == ACT_BOTTOM) l->cursor = l->n - 1;
    else if (key == K_ENTER || key == '\n' || key == '\r') {
        l->open = 0;
        if (l->cursor == l->loading) {
            app_message(a, 0, "layer %s is loading already (%.0f%%): keys work meanwhile", l->names[l->cursor],
                        100 * l->load_frac);
            return FX_REDRAW;
        }
        if (l->cursor == l->current && l->loading < 0) {
            app_message(a, 0, "layer %s is the one shown", l->names[l->cursor]);
            return FX_REDRAW;
        }
        return FX_LAYER; /* a load, or (the shown layer) cancelling the one that runs */
    } else l->open = 0;
    if (l->cursor >= l->n) l->cursor = l->n - 1;
    if (l->cursor < 0) l->cursor = 0;
    return FX_REDRAW;
}

/* The cost matrix's keys while it has the cursor keys (Tab), and z / Z. */
static int heat_key(app_state *a, ui_action act) {
    heat_view *h = &a->heat;
    int n = a->info.cfg.n, page = a->layout.heat.h > 4 ? a->layout.heat.h - 4 : 1;
    switch (act) {
    case ACT_UP: heatmap_move(h, n, -1, 0); break;
    case ACT_DOWN: heatmap_move(h, n, 1, 0); break;
    case ACT_LEFT: heatmap_move(h, n, 0, -1); break;
    case ACT_RIGHT: heatmap_move(h, n, 0, 1); break;
    case ACT_PGUP: heatmap_move(h, n, -page, 0); break;
    case ACT_PGDN: heatmap_move(h, n, page, 0); break;
    case ACT_TOP: heatmap_move(h, n, -n, -n); break;
    case ACT_BOTTOM: heatmap_move(h, n, n, n); break;
    case ACT_ZOOM_OUT:
    case ACT_ZOOM_IN: {
        int fit = a->heat_fit > 0 ? a->heat_fit : 1, was = h->zoom > 1 ? h->zoom : 1;
        h->zoom = heatmap_zoom_step(was, fit, act == ACT_ZOOM_OUT ? 1 : -1);
        h->centre = 1;
        if (h->zoom == was)
            app_message(a, 0, "%s", act == ACT_ZOOM_IN ? "cost matrix: every cell shown (z zooms out)"
                                    : fit == 1 ? "cost matrix: all of it shows already"
                                               : "cost matrix: all of it shows (Z zooms back in)");
        else if (h->zoom > 1)
            app_message(a, 0, "cost matrix: each cell the mean of a %dx%d block%s%s", h->zoom, h->zoom,
                        h->zoom == fit ? ", the whole matrix" : "", h->focus ? "" : " (Tab: move in it)");
        else app_message(a, 0, "cost matrix: every cell");
        break;
    }
    default: return 0;
    }
    return FX_REDRAW;
}

/* j/k, PgUp/PgDn, g/G in an overlay of h rows: 1 when act scrolled it. The
 * renderers stop the scroll at the end of the text. */
static int overlay_scroll(ui_action act, int h, int *scroll) {
    int pg = h > 4 ? h - 3 : 1;
    if (act == ACT_DOWN) (*scroll)++;
    else if (act == ACT_UP) (*scroll)--;
    else if (act == ACT_PGDN) *scroll += pg;
    else if (act == ACT_PGUP) *scroll -= pg;
    else if (act == ACT_TOP) *scroll = 0;
    else if (act == ACT_BOTTOM) *scroll = INT_MAX / 2;
    else return 0;
    if (*scroll < 0) *scroll = 0;
    return 1;
}

/* The method after m in the table (cost_method.h) that can run: a data-driven one
 * when the worker has an evaluation set's inputs (v says, once it has the costs;
 * before, whether a set fits the layer), else the next data-free one. */
static cost_method app_next_method(const app_state *a, cost_method m, const explore_snapshot *v) {
    int set = a->info.N > 0 && !a->info.no_eval[0];
    for (int k = 1; k <= COST_NMETHODS; k++) {
        cost_method c = (cost_method)((m + k) % COST_NMETHODS);
        int have = v && v->have_methods ? v->method_have[c] : cost_method_available(c, set);
        if (have) return c;
    }
    return m;
}

int app_key(app_state *a, int key, const explore_snapshot *v) {
    orders_update(&a->orders, v); /* the index must describe v */
    ui_action act = keys_lookup(key);
    if (a->show_help || a->show_diag || a->show_geo) {
        /* the keys of less scroll an overlay; any other key, q too, only closes it */
        int *scroll = a->show_help ? &a->help_scroll : a->show_diag ? &a->diag_scroll : &a->geo_scroll;
        if (!overlay_scroll(act, a->layout.overlay.h, scroll)) a->show_help = a->show_diag = a->show_geo = 0;
        return FX_REDRAW;
    }
    if (a->layers.open) return layer_key(a, act, key);
    if (a->orders.editing) return filter_key(a, key);
    if (a->prompt) return prompt_key(a, key);
    if (key == K_ESC && a->orders.filter[0]) {
        a->orders.filter[0] = 0;
        return FX_REDRAW;
    }
    if (key == K_ESC && a->heat.focus) act = ACT_HEAT_FOCUS;
    if ((act == ACT_ZOOM_OUT || act == ACT_ZOOM_IN || a->heat.focus) && heat_key(a, act)) return FX_REDRAW;
    long page = a->orders.page > 1 ? a->orders.page - 1 : 1;
    switch (act) {
    case ACT_TOGGLE_ORDER:
        a->req.order_stage ^= 1;
        app_message(a, 0, "expert-order stage %s", a->req.order_stage ? "on" : "off");
        return FX_SUBMIT;
    case ACT_TOGGLE_WM:
        a->req.wm_stage ^= 1;
        /* skip-order is defined with weight matching (the order alone
           skipped): say that it does not follow the toggle */
        app_message(a, 0, "weight matching %s%s", a->req.wm_stage ? "on" : "off",
                    a->req.wm_stage ? "" : "; skip-order still uses it (it skips only the order)");

        return FX_SUBMIT;
    case ACT_TOGGLE_CENTER:
        a->req.center ^= 1;
        if (!moe_gate_centring_valid(&a->info.cfg)) // say why the toggle changes nothing
            app_message(a, 0, "gate centring %s - no effect: sigmoid scores have no translation "
                              "symmetry, so the gate cost never centres", a->req.center ? "on" : "off");
        else if (!cost_methods[a->req.method].centres)
            app_message(a, 0, "gate centring %s: no effect on the %s cost (m switches to the gate cost)",
                        a->req.center ? "on" : "off", cost_method_name(a->req.method));
        else app_message(a, 0, "gate centring %s", a->req.center ? "on" : "off");
        return FX_SUBMIT;
    case ACT_TOGGLE_METHOD:
        a->req.method = app_next_method(a, a->req.method, v);
        app_message(a, 0, "cost method %s", cost_method_name(a->req.method));
        return FX_SUBMIT;
    case ACT_TOGGLE_METRIC:
        a->metric_acc ^= 1;
        return FX_REDRAW;
    case ACT_PLOT_SELECTED:
        select_row(a, v);
        return a->req.has_selected ? FX_SUBMIT : FX_REDRAW;
    case ACT_FILTER:
        /* a new search each time, as in less and vim */
        a->orders.editing = 1;
        a->orders.filter[0] = 0;
        a->orders.cursor = a->orders.top = 0;
        a->orders.have_cursor_order = 0;
        return FX_REDRAW;
    case ACT_SORT:
    case ACT_SORT_REVERSE:
        if (act == ACT_SORT) {
            a->orders.sort = (a->orders.sort + 1) % SORT_COUNT;
            /* only the columns shown: no accuracy barrier without labels */
            if (a->orders.sort == SORT_ACC && v && v->kind != LS_CLASSIFY) a->orders.sort = SORT_AUC;
        } else {
            a->orders.desc ^= 1;
        }
        app_message(a, 0, "sorted by %s, %s", orders_sort_name(a->orders.sort),
                    a->orders.desc ? "descending" : "ascending");
        return FX_REDRAW;
    case ACT_PIN: pin_plotted(a, v); return FX_REDRAW;
    case ACT_UNPIN_ALL:
        if (a->pins.n) app_message(a, 0, "unpinned %d order%s", a->pins.n, a->pins.n == 1 ? "" : "s");
        else app_message(a, 0, "no pinned orders");
        pins_clear(&a->pins);
        return FX_REDRAW;
    /* the first export asks where exports go */
    case ACT_PNG: return a->export_dir[0] ? FX_PNG : open_dir_prompt(a, FX_PNG);
    case ACT_EXPORT: return a->export_dir[0] ? FX_EXPORT : open_dir_prompt(a, FX_EXPORT);
    case ACT_OUT_DIR: return open_dir_prompt(a, 0);
    case ACT_DIAG:
        a->show_diag = 1;
        a->diag_scroll = 0;
        return FX_DIAG | FX_REDRAW;
    case ACT_GEOMETRY:
        a->show_geo = 1;
        a->geo_scroll = 0;
        return FX_GEOMETRY | FX_REDRAW;
    case ACT_HELP:
        a->show_help = 1;
        a->help_scroll = 0;
        return FX_REDRAW;
    case ACT_QUIT: return FX_QUIT;
    case ACT_UP: move(a, v, -1); return FX_REDRAW;
    case ACT_DOWN: move(a, v, 1); return FX_REDRAW;
    case ACT_PGUP: move(a, v, -page); return FX_REDRAW;
    case ACT_PGDN: move(a, v, page); return FX_REDRAW;
    case ACT_TOP: move(a, v, LONG_MIN); return FX_REDRAW;
    case ACT_BOTTOM: move(a, v, LONG_MAX); return FX_REDRAW;
    case ACT_HEAT_PREV:
    case ACT_HEAT_NEXT: { /* the view moves (rows and columns), the cursor stays in it */
        int d = act == ACT_HEAT_NEXT ? 1 : -1;
        a->heat.row0 += d;
        a->heat.col0 += d;
        a->heat.follow = 0;
        return FX_REDRAW;
    }
    case ACT_HEAT_FOCUS:
        a->heat.focus ^= 1;
        a->heat.follow = 1;
        app_message(a, 0, "%s", a->heat.focus ? "arrows move in the cost matrix (z/Z zoom, Tab: back to the orders)"
                                               : "arrows move in the orders");
        return FX_REDRAW;
    case ACT_LAYER:
        if (a->layers.n < 2) {
            app_message(a, 0, "%s", a->layers.n == 1 ? "this checkpoint has one MoE layer"
                                                     : "no other layers found in this checkpoint");
            return FX_REDRAW;
        }
        a->layers.open = 1;
        a->layers.cursor = a->layers.current >= 0 ? a->layers.current : 0;
        return FX_REDRAW;
    case ACT_REDRAW: return FX_REDRAW;
    case ACT_STATE:
        /* the name is offered, in the export directory; any path may be typed */
        if (!a->export_dir[0]) return open_dir_prompt(a, FX_STATE);
        open_state_prompt(a);
        return FX_REDRAW;
    case ACT_SWAP:
        a->swaps ^= 1;
        app_message(a, 0, "%s", a->swaps ? "each two-slot swap of the current order: its barrier change (b: costs)"
                                          : "cost matrix");
        return FX_REDRAW;
    case ACT_SCATTER:
        a->scatter ^= 1;
        app_message(a, 0, "%s", a->scatter ? "scatter: each order's assignment cost against its barrier (v: curves)"
                                            : "curves");
        return FX_REDRAW;
    default: return 0;
    }
}

int app_mouse(app_state *a, int x, int y, int kind, const explore_snapshot *v) {
    orders_update(&a->orders, v);
    if ((a->show_help || a->show_diag || a->show_geo) && (kind == 2 || kind == 3)) { /* the wheel scrolls an overlay */
        int *scroll = a->show_help ? &a->help_scroll : a->show_diag ? &a->diag_scroll : &a->geo_scroll;
        *scroll += kind == 2 ? -3 : 3;
        if (*scroll < 0) *scroll = 0;
        return FX_REDRAW;
    }
    if (a->show_help || a->show_diag || a->show_geo || a->layers.open) {
        a->show_help = a->show_diag = a->show_geo = a->layers.open = 0;
        return FX_REDRAW;
    }
    if ((kind == 2 || kind == 3) && rect_contains(&a->layout.heat, x, y)) {
        a->heat.row0 += kind == 2 ? -3 : 3; /* the wheel scrolls the pane it is over */
        a->heat.follow = 0;
        return FX_REDRAW;
    }
    if (kind == 2 || kind == 3) {
        move(a, v, kind == 2 ? -3 : 3);
        return FX_REDRAW;
    }
    int key = footer_key_at(&a->hits, x, y), hr, hc;
    if (key) return app_key(a, key, v);
    if (!a->swaps && heatmap_hit(&a->layout.heat, a->info.cfg.n, &a->heat, a->grid_utf8, a->grid_color, x, y, &hr, &hc)) {
        a->heat.row = hr; /* a click on the matrix: the cursor there, the arrows to it */
        a->heat.col = hc;
        a->heat.follow = 1;
        if (!a->heat.focus) app_message(a, 0, "arrows move in the cost matrix (Tab: back to the orders)");
        a->heat.focus = 1;
        return FX_REDRAW;
    }
    if (rect_contains(&a->layout.orders, x, y)) {
        long pos = orders_pos_at(&a->orders, &a->layout.orders, y);
        if (pos >= 0) {
            orders_set_cursor(&a->orders, v, pos);
            select_row(a, v);
            return a->req.has_selected ? FX_SUBMIT : FX_REDRAW;
        }
        if (y == a->layout.orders.y + 2) { /* header: next sort column */
            return app_key(a, 's', v);
        }
    }
    return 0;
}

/* The router in a few words: "softmax top-2", "sigmoid top-8, 8 groups top 4",
 * "softmax dense"; brief drops the groups' "top". */
static void router_words(const moe_config *c, char *buf, size_t cap, int brief) {
    const char *sc = moe_score_name(c->score);
    if (c->router != ROUTER_TOPK) {
        snprintf(buf, cap, "%s dense", sc);
        return;
    }
    int len = snprintf(buf, cap, "%s top-%d", sc, c->k);
    if (c->n_group > 1 && len >= 0 && (size_t)len < cap) {
        if (brief) snprintf(buf + len, cap - (size_t)len, ", %d groups", c->n_group);
        else snprintf(buf + len, cap - (size_t)len, ", %d groups top %d", c->n_group, c->topk_group);
    }
}

/* "model.layers.3.mlp" -> "3" (the block index), else the prefix itself */
static const char *layer_short(const char *layer, char *buf, size_t cap) {
    const char *p = strstr(layer, "layers.");
    if (!p) p = strstr(layer, "block.");
    if (!p) p = strstr(layer, ".h."); // GPT-2's transformer.h.L.mlp
    if (!p) p = strstr(layer, ".layer."); // a ViT's vit.encoder.layer.L.moe
    if (p && p[0] == '.') p++;
    if (!p) return layer;
    p = strchr(p, '.') + 1;
    int len = 0;
    while (p[len] >= '0' && p[len] <= '9') len++;
    if (!len) return layer;
    snprintf(buf, cap, "%.*s", len, p);
    return buf;
}

#define TITLE_ENDS 3
/* Title row 2's end: the end points' losses (and accuracies), in TITLE_ENDS
 * wordings, longest first: a network's objective named whole, then short, then
 * the losses alone. */
static void title_ends(const ui_info *in, const explore_snapshot *v, char ends[][320]) {
    for (int e = 0; e < TITLE_ENDS; e++) ends[e][0] = 0;
    if (in->no_eval[0]) {
        for (int e = 0; e < TITLE_ENDS; e++)
            snprintf(ends[e], 320, in->e_name[0] ? (e ? " | no eval set" : " | no eval set for this layer") : "");
    } else if (v && v->have_naive && in->objective[0]) {
        snprintf(ends[0], 320, " | %.128s: A %.4f B %.4f | acc A %.3f B %.3f", in->objective, v->loss_a, v->loss_b,
                 v->acc_a, v->acc_b);
        // the objective without its parenthesis: "network loss, MoE block 0" (which block stays said)
        int nl = (int)strcspn(in->objective, "(");
        while (nl > 0 && in->objective[nl - 1] == ' ') nl--;
        snprintf(ends[1], 320, " | %.*s: A %.4f B %.4f | acc A %.3f B %.3f", nl < 128 ? nl : 128, in->objective,
                 v->loss_a, v->loss_b, v->acc_a, v->acc_b);
        snprintf(ends[2], 320, " | %.*s: A %.4f B %.4f", nl < 128 ? nl : 128, in->objective, v->loss_a, v->loss_b);
    } else if (v && v->have_naive) {
        if (v->kind == LS_CLASSIFY)
            snprintf(ends[0], 320, " | loss A %.4f B %.4f | acc A %.3f B %.3f", v->loss_a, v->loss_b, v->acc_a,
                     v->acc_b);
        else
            snprintf(ends[0], 320, " | %s loss A %.4g B %.4g", v->kind == LS_LAYER ? "layer-output" : "mse",
                     v->loss_a, v->loss_b);
        memcpy(ends[1], ends[0], 320);
        snprintf(ends[2], 320, " | loss A %.4g B %.4g", v->loss_a, v->loss_b);
    }
}

/* Title row 1: the checkpoints, layer and evaluation set; row 2: family,
 * dimensions, router (score, top-k, groups) and the end points' losses. */
static void render_title(grid *g, const ui_rect *r, const ui_info *in, const explore_snapshot *v) {
    grid_fill(g, r->x, r->y, r->w, r->h, ' ', ROLE_TITLE);
    /* the full wording when it fits, a compact one on narrow screens */
    char l1[1024], l2[512], ends[TITLE_ENDS][320], fam[40] = "", router[64], router_b[64], lbuf[32];
    const moe_config *c = &in->cfg;
    router_words(c, router, sizeof router, 0);
    router_words(c, router_b, sizeof router_b, 1);
    if (strcmp(moe_family(c), "native")) snprintf(fam, sizeof fam, " %s", moe_family(c));
    const char *lshort = layer_short(in->layer, lbuf, sizeof lbuf);
    title_ends(in, v, ends);
    /* names without ".safetensors" on the narrowest tiers */
    char an[256], bn[256], en[256];
    const char *ext = ".safetensors";
    const char *src[3] = {in->a_name, in->b_name, in->e_name};
    char *dst[3] = {an, bn, en};
    for (int i = 0; i < 3; i++) {
        size_t l = strlen(src[i]), el = strlen(ext);
        int cut = l > el && !strcmp(src[i] + l - el, ext) ? (int)(l - el) : (int)l;
        snprintf(dst[i], 256, "%.*s", cut, src[i]);
    }
    /* the evaluation set, or that there is none (the data-free parts) */
    char evf[300], evb[300], evc[300];
    char nf[80], ns[48];
    if (in->n_full[0]) snprintf(nf, sizeof nf, "%s", in->n_full), snprintf(ns, sizeof ns, "%s", in->n_short);
    else snprintf(nf, sizeof nf, "N=%d", in->N), snprintf(ns, sizeof ns, "N=%d", in->N);
    snprintf(evf, sizeof evf, in->e_name[0] ? "eval %s (%s)" : "no evaluation set", in->e_name, nf);
    snprintf(evb, sizeof evb, in->e_name[0] ? "eval %s %s" : "no eval set", in->e_name, ns);
    snprintf(evc, sizeof evc, in->e_name[0] ? "eval %s %s" : "no eval set", en, ns);
    /* each row its own longest wording that fits */
    for (int t = 0; t <= 3; t++) {
        if (!t)
            snprintf(l1, sizeof l1, " moescope  A %s  B %s  layer %s  %s", in->a_name, in->b_name, in->layer, evf);
        else if (t == 1)
            snprintf(l1, sizeof l1, " A %s B %s layer %s %s", in->a_name, in->b_name, in->layer, evb);
        else
            snprintf(l1, sizeof l1, " A %s B %s layer %s %s", an, bn, t == 3 ? lshort : in->layer, evc);
        if ((int)strlen(l1) <= r->w) break;
    }
    /* the losses outlast the dimensions: each wording of the ends with every
     * wording of the dimensions, the longest ends first */
    int fit = 0;
    for (int e = 0; e < TITLE_ENDS && !fit; e++)
        for (int t = 0; t <= 3 && !fit; t++) {
            const char *x = ends[e];
            if (!t)
                snprintf(l2, sizeof l2, "%s n=%d d=%d h=%d router %s shared %d %s%.319s", fam, c->n, c->d, c->h, router,
                         c->s, moe_act_name(c->act), x);
            else if (t == 1)
                snprintf(l2, sizeof l2, "%s n=%d d=%d h=%d %s s=%d %s%.319s", fam, c->n, c->d, c->h, router, c->s,
                         moe_act_name(c->act), x);
            else if (t == 2)
                snprintf(l2, sizeof l2, "%s n=%d d=%d h=%d %s s=%d%.319s", fam, c->n, c->d, c->h, router, c->s, x);
            else
                snprintf(l2, sizeof l2, "%s n=%d d=%d h=%d %s%.319s", fam, c->n, c->d, c->h, router_b, x);
            fit = (int)strlen(l2) <= r->w;
        }
    grid_text(g, r->x, r->y, r->w, ROLE_TITLE, l1);
    grid_text(g, r->x, r->y + 1, r->w, ROLE_TITLE, l2);
}

/* A pane holding only its title and a word-wrapped note. */
static void note_pane(grid *g, const ui_rect *r, const char *title, const char *text) {
    if (r->w < 4 || r->h < 2) return;
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_PANE_TITLE);
    grid_text(g, r->x + 1, r->y, r->w - 1, ROLE_PANE_TITLE, title);
    int w = r->w - 2, y = r->y + 2;
    const char *p = text;
    while (*p && y < r->y + r->h) {
        int take = (int)strlen(p);
        if (take > w) {
            take = w;
            while (take > 0 && p[take] != ' ') take--;
            if (!take) take = w;
        }
        char line[512];
        snprintf(line, sizeof line, "%.*s", take, p);
        grid_text(g, r->x + 1, y++, w, ROLE_DIM, line);
        p += take;
        while (*p == ' ') p++;
    }
}

/* A prompt on the message line: what it asks, then the line typed so far
 * with the cursor (a reversed cell), scrolled to keep the cursor in view. */
static void prompt_render(grid *g, const ui_rect *r, const app_state *a) {
    const char *ask = a->prompt == PROMPT_DIR
                          ? (r->w >= 90 ? "export directory for p, e and x (Enter, Esc): " : "export directory: ")
                          : (r->w >= 90 ? "save as (.json state, .csv table; Enter, Esc): " : "save as (.json, .csv): ");
    int room = r->w - 1; /* the screen's bottom-right cell is not drawn */
    grid_fill(g, r->x, r->y, r->w, 1, ' ', ROLE_NORMAL);
    int x = r->x + grid_text(g, r->x, r->y, room, ROLE_MESSAGE, ask);
    int from, cc, w = r->x + room - x;
    line_edit_view(&a->line, w, &from, &cc);
    grid_text(g, x, r->y, w, ROLE_NORMAL, a->line.buf + from);
    if (x + cc < r->x + room) grid_role(g, x + cc, r->y, 1, ROLE_CURSOR);
}

void app_render(app_state *a, const explore_snapshot *v, grid *g) {
    int n = v && v->n ? v->n : a->info.cfg.n;
    ui_layout *L = &a->layout;
    layout_compute(L, g->w, g->h, n);
    grid_clear(g);
    if (L->too_small) {
        char buf[128];
        snprintf(buf, sizeof buf, "terminal too small: %dx%d, need at least %dx%d", g->w, g->h, UI_MIN_W, UI_MIN_H);
        int len = (int)strlen(buf);
        int x = (g->w - len) / 2;
        if (x < 0) x = 0;
        grid_text(g, x, g->h / 2, g->w, ROLE_ERROR, buf);
        if (g->h / 2 + 1 < g->h) grid_text(g, x, g->h / 2 + 1, g->w, ROLE_DIM, "(resize, or q to quit)");
        a->hits.nhit = 0;
        return;
    }
    /* the half-block map needs half the rows: the curves get the rest */
    const moe_config *cf = &a->info.cfg;
    a->heat_fit = heatmap_zoom_fit(n, L->heat.w, L->heat.h, g->utf8, g->color,
                                   cf->n_group > 1 && n % cf->n_group == 0 ? n / cf->n_group : 1);
    a->grid_utf8 = g->utf8;
    a->grid_color = g->color;
    if (a->heat.zoom > a->heat_fit) a->heat.zoom = a->heat_fit; /* the screen grew */
    int hh = a->swaps ? (n + 3 < L->heat.h ? n + 3 : L->heat.h) /* title, header, n rows, the best swap */
                      : heatmap_height(n, a->heat.zoom, L->heat.w, L->heat.h, g->utf8, g->color);
    if (hh < L->heat.h) {
        L->curves.y -= L->heat.h - hh;
        L->curves.h += L->heat.h - hh;
        L->heat.h = hh;
    }
    render_title(g, &L->title, &a->info, v);
    for (int y = L->orders.y; y < L->orders.y + L->orders.h; y++)
        grid_put(g, L->sep_x, y, g->utf8 ? 0x2502 : '|', ROLE_BORDER);
    if (a->swaps && v) swap_render(g, &L->heat, v);
    else heatmap_render(g, &L->heat, v, &a->heat);
    orders_update(&a->orders, v);
    if (a->info.no_eval[0]) { /* data-free: say why there is nothing to evaluate */
        note_pane(g, &L->curves, "curves", a->info.no_eval);
        note_pane(g, &L->orders, "expert orders",
                  a->info.e_name[0]
                      ? "no landscape for this layer: the evaluation set belongs to another one (l lists the layers; "
                        "capture inputs for this one with sample-checkpoints/capture_inputs.py --layer). The cost "
                        "matrix, its assignment, the diagnostics (d) and the export (e) need no data."
                      : "no landscape without an evaluation set: every order's barrier is a loss on data (--eval E). "
                        "The cost matrix, its assignment, the diagnostics (d) and the export (e) need none.");
    } else {
        if (a->scatter) scatter_render(g, &L->curves, v, a->orders.best_row);
        else curves_render(g, &L->curves, v, &a->pins, a->metric_acc, a->info.objective[0] ? a->layers.n : 0);
        a->orders.now = a->now;
        a->orders.pins = &a->pins;
        orders_render(g, &L->orders, &a->orders, v);
    }
    /* the diagnostics' flags of the shown method, counted beside the footer,
       or at the end of the message line when the footer is full */
    int room = L->message.w - 1, nf = 0, frole = ROLE_MESSAGE;
    char fl[48] = "";
    if (v && v->diag_state == EXPLORE_DIAG_READY && v->diag_method == a->req.method && v->diag_center == a->req.center) {
        nf = dg_count(&v->diag, DG_WARN);
        if (dg_count(&v->diag, DG_BAD)) frole = ROLE_ERROR;
        snprintf(fl, sizeof fl, "%d flag%s: d", nf, nf == 1 ? "" : "s");
    }
    int fl_len = (int)strlen(fl);
    footer_render(g, &L->footer, &a->req, a->metric_acc, &a->hits);
    /* below 116 columns the row below the hints is free: the flags when they do not
       fit beside the hints, and the status when a long message has its line */
    int fx = a->hits.end_x + 2, spare = L->footer.h > 1;
    if (nf && fx + fl_len >= L->footer.x + L->footer.w && spare) {
        a->hits.end_y = L->footer.y + 1;
        a->hits.end_x = L->footer.x - 2;
        fx = L->footer.x;
        spare = 0;
    }
    if (nf && fx + fl_len < L->footer.x + L->footer.w) a->hits.end_x = fx + grid_text(g, fx, a->hits.end_y, fl_len, frole, fl);
    else if (nf) room -= fl_len + 2;
    /* the free row, or the free end of the row the flags or hints end on */
    ui_rect alt = {a->hits.end_x + 2, a->hits.end_y, L->footer.x + L->footer.w - 1 - (a->hits.end_x + 2), 1};
    if (spare) alt = (ui_rect){L->footer.x, L->footer.y + 1, L->footer.w - 1, 1};
    if (room < L->message.w - 1) alt.w = 0; /* the status stays on the message line, before the flags */
    if (a->prompt) prompt_render(g, &L->message, a);
    else message_render(g, &L->message, a->msg, a->msg_error, v, a->load_status, &alt, room);
    if (room < L->message.w - 1) grid_text(g, L->message.x + room + 2, L->message.y, fl_len, frole, fl);
    if (a->layers.open) layers_render(g, &L->overlay, &a->layers, a->info.eval_layer, a->info.objective[0] != 0);
    else if (a->show_help) a->help_scroll = help_render(g, &L->overlay, &a->info.cfg, a->help_scroll);
    else if (a->show_diag) {
        app_sync_diag(a, v);
        char *none[] = {g->utf8 ? "computing diagnostics\u2026" : "computing diagnostics..."};
        if (a->ndiag) a->diag_scroll = text_box_render(g, &L->overlay, "diagnostics (j/k PgUp/PgDn scroll, other keys close)",
                                             a->diag_lines, a->ndiag, a->diag_scroll);
        else text_box_render(g, &L->overlay, "diagnostics (any key closes)", none, 1, 0);
    } else if (a->show_geo) {
        char *wait[] = {g->utf8 ? "computing the routing geometry of A\u2026" : "computing the routing geometry of A..."};
        if (a->ngeo)
            a->geo_scroll = text_box_render(g, &L->overlay_wide, "routing geometry of A across depth (j/k PgUp/PgDn scroll, "
                                            "other keys close)", a->geo_lines, a->ngeo, a->geo_scroll);
        else text_box_render(g, &L->overlay_wide, "routing geometry (any key closes)", wait, 1, 0);
    }
}
