/* app.h - the TUI's state and behaviour without curses: keys and clicks change
 * the state (and say what the caller must do: submit a request, write a PNG,
 * quit...), app_render draws everything into a grid. ui/tui.c only does the
 * terminal I/O around it. */
#ifndef MS_UI_APP_H
#define MS_UI_APP_H

#include "explore/explore_worker.h"
#include "footer_view.h"
#include "grid.h"
#include "heatmap_view.h"
#include "layers_view.h"
#include "layout.h"
#include "line_edit.h"
#include "orders_view.h"
#include "pins.h"

typedef struct {
    char a_name[256], b_name[256], e_name[256], layer[160];
    const char *a_path, *b_path; /* as given (borrowed): default names of saved files */
    moe_config cfg;
    int N; /* evaluation samples */
    char n_full[64], n_short[32]; /* a network's set: "64 sequences, 8256 tokens", "64 seq"
                                   * (its blocks see tokens: the routing load's count); "" a layer's */
    /* not "": the evaluation set does not fit this layer (why, in words); the
     * worker then has no set and the screen shows the data-free parts */
    char no_eval[200];
    char eval_layer[160]; /* the layer prefix the evaluation set was made for, "" unknown */
    char objective[128];  /* a network's: what the loss is ("network loss, MoE block 0"), "" for a layer */
} ui_info;

typedef struct {
    ui_info info;
    explore_request req;          /* the toggles as the user set them */
    int metric_acc;              /* plot accuracy instead of loss */
    int prompt;                  /* PROMPT_*: a line typed on the message line */
    line_edit line;              /* what is typed (line_edit.h: the keys of readline) */
    int prompt_then;             /* PROMPT_DIR: the export it was asked for (FX_PNG, FX_EXPORT,
                                  * FX_STATE: x's name prompt next), 0 for O */
    char export_dir[LINE_EDIT_CAP];  /* where p, e and x write; "" until chosen (--out-dir,
                                      * or the prompt at the first export) */
    char export_name[LINE_EDIT_CAP]; /* a file name typed at that prompt ("exports/d8.csv"):
                                      * the name of the export that asked, once */
    char dir_default[LINE_EDIT_CAP]; /* what that prompt offers (tui.c: the current
                                      * directory when writable, else home) */
    int scatter;                 /* the scatter view in the curves pane's place */
    int swaps;                   /* the two-slot swaps in the cost matrix's place */
    int show_help, show_diag, diag_scroll;
    int help_scroll;             /* the help's first row shown (it scrolls when taller than its box) */
    char **diag_lines;           /* owned; app_render builds them from the view's
                                  * diagnostics (or app_set_diag sets them) */
    int ndiag;
    double diag_sig;             /* what diag_lines were built from (app_sync_diag) */
    int show_geo, geo_scroll;    /* r: the routing geometry's report (explore_geometry.h) */
    char **geo_lines;            /* owned; NULL while it computes */
    int ngeo;
    char msg[256];
    int msg_error;
    orders_state orders;
    pin_set pins;                /* curves kept with P, overlaid (owned) */
    heat_view heat;              /* the cost matrix's cursor, scroll and zoom */
    int heat_fit;                /* zoom at which the whole matrix fits (last render) */
    int grid_utf8, grid_color;   /* the last render's grid (mouse hits on the matrix) */
    layer_list layers;
    char load_status[200];       /* "loading layer L... 40%" on the status line while it loads */
    footer_hits hits;
    ui_layout layout;
    double now;                  /* explore_clock() of this frame (spinners), 0 in tests */
} app_state;

enum { FX_SUBMIT = 1, FX_QUIT = 2, FX_PNG = 4, FX_EXPORT = 8, FX_DIAG = 16, FX_REDRAW = 32, FX_STATE = 64,
       FX_LAYER = 128, /* switch to a->layers.names[a->layers.cursor] (or, while another
                          layer loads, cancel that load when it is the shown one) */
       FX_GEOMETRY = 256, /* the routing geometry is shown: start computing it (once) */
       FX_OUT_DIR = 512 /* a->line.buf is the export directory typed: the caller checks it
                           (app_export_dir) */ };
enum { PROMPT_NONE = 0, PROMPT_STATE = 1, PROMPT_DIR = 2 };

void app_init(app_state *a, const ui_info *info, int T);
void app_free(app_state *a);
/* A key (character or K_*); returns FX_* flags. */
int app_key(app_state *a, int key, const explore_snapshot *v);
/* Mouse: kind 1 = click, 2 = wheel up, 3 = wheel down, at cell (x, y). */
int app_mouse(app_state *a, int x, int y, int kind, const explore_snapshot *v);
/* Draw the whole screen into g (g->w x g->h). */
void app_render(app_state *a, const explore_snapshot *v, grid *g);
void app_message(app_state *a, int is_error, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void app_set_diag(app_state *a, char **lines, int n); /* takes ownership */
/* The routing geometry's report (or why there is none), takes ownership;
 * NULL: computing. */
void app_set_geometry(app_state *a, char **lines, int n);
/* The export directory is dir (checked: it exists and is writable, or why is
 * the reason it is not): returns the FX_* of the export that asked for it
 * (x: its name prompt opens, FX_REDRAW), 0 when none did or dir was refused. */
int app_export_dir(app_state *a, const char *dir, const char *why);
/* A and B now show layer (index current in the list), cfg its configuration;
 * no_eval "" or why the evaluation set does not fit it. The view starts
 * afresh (selection, table, matrix cursor, diagnostics). */
void app_switched(app_state *a, const char *layer, const moe_config *cfg, int current, const char *no_eval);
/* A layer load runs off the UI thread (tui.c, layer_load.h): index its layer
 * in the list (-1: none runs), frac how far (0..1 over A and B), phase what it
 * reads ("" unknown). The status line shows it while it runs; the keys keep
 * working (Enter on the loading layer says so, on the shown one cancels it). */
void app_set_loading(app_state *a, int index, double frac, const char *phase);
/* The layers l lists (takes ownership of names), current the one shown. */
void app_set_layers(app_state *a, char **names, int n, int current);
/* The diagnostics pane's lines from the worker's findings (v->diag) when they
 * are those of a->req's method and centring (flags first; the rank finding
 * points at the orders pane); cleared while they are computing (the pane
 * then says "computing diagnostics"). Called by app_render; a view that never
 * asked for diagnostics leaves the lines alone. */
void app_sync_diag(app_state *a, const explore_snapshot *v);

#endif
