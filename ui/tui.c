/* tui.c - the ncurses front end, in three steps: parse the command line,
 * load and check the inputs (errors reported like the command line, before
 * the screen opens; no terminal is refused), then loop: poll explore_poll,
 * render the app into a grid, blit the grid, wait up to 30 ms for a key.
 * Everything slow (curves, landscape, diagnostics, the aligned export, a
 * network's backbone values) runs on the worker. One teardown restores the terminal on every exit path
 * (normal, error, SIGINT/SIGTERM/SIGHUP, exit()). */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "app.h"
#include "io/atomic_file.h"
#include "cli/cli.h"
#include "explore/explore_geometry.h"
#include "explore/explore_worker.h"
#include "export.h"
#include "io/family.h"
#include "io/safetensors.h"
#include "state_export.h"
#include "keys.h"
#include "layer_load.h"
#include "network/net_landscape.h"
#include "analysis/ms_limits.h"
#include "core/env.h"
#include "core/progress.h"
#include "io/model_io.h"
#include "io/provenance.h"
#include "terminal.h"
#include "theme.h"
#include "tui.h"

static const char *TUI_USAGE =
    "moescope A.safetensors B.safetensors [--eval E] [--layer L] [--points T] [--ascii] [--png-live FILE] "
    "[--theme FILE] [--out-dir DIR] [--interpolate-backbone] [--all-error-bars]";

static volatile sig_atomic_t got_signal;
static int screen_open;

static void restore_terminal(void) {
    if (screen_open) {
        screen_open = 0;
        endwin();
    }
}

static void on_signal(int sig) { got_signal = sig; }

/* MOESCOPE_TIMING (progress.h): the start's and the quit's latencies, from
 * tui_main's start and from the quit key (the benchmarks' sense of both) */
static double t_start = -1, t_quit = -1, t_matrix = -1; /* t_matrix: the start, until the cost matrix
                                                             with its assignment is drawn */

static double thread_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double process_cpu_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void quit_timing(const char *what) {
    if (t_quit >= 0) timing_add(what, timing_now() - t_quit);
}

/* ---- curses output ---- */

/* Colours by meaning: a role's colours come from the theme; heat cells name a
 * step of the theme's heat scale. Each (fg, bg) combination gets a colour pair
 * the first time it is drawn (half blocks need a pair per pair of steps). */
typedef struct {
    theme th;
    int color, ncolors;
    int fg[ROLE_COUNT], bg[ROLE_COUNT];
    attr_t attr[ROLE_COUNT];
    short *pairs;       // (257 * 257): pair of (fg + 1, bg + 1); 0 unset, -1 none left
    int next_pair, max_pair;
} screen_style;

/* theme_path: --theme, checked before the screen opened (NULL: the default) */
static void style_init(screen_style *s, int color, const char *theme_path) {
    memset(s, 0, sizeof *s);
    theme_init(&s->th, color);
    ms_err err;
    if (theme_path) theme_load(&s->th, theme_path, &err);
    if (color) {
        start_color();
        use_default_colors();
    }
    s->color = color;
    s->ncolors = color ? COLORS : 0;
    s->pairs = ms_calloc(257 * 257, sizeof(short));
    s->next_pair = 1;
    s->max_pair = COLOR_PAIRS - 1 < 32767 ? COLOR_PAIRS - 1 : 32767;
    for (int r = 0; r < ROLE_COUNT; r++) {
        const theme_style *t = &s->th.style[r];
        attr_t a = A_NORMAL;
        if (t->attr & TA_BOLD) a |= A_BOLD;
        if (t->attr & TA_REVERSE) a |= A_REVERSE;
        if (t->attr & TA_UNDERLINE) a |= A_UNDERLINE;
        if (t->attr & TA_DIM) a |= A_DIM;
        s->attr[r] = a;
        int fg = t->fg, bg = t->bg;
        if (s->ncolors >= 256) {
            if (t->fg256 >= 0) fg = t->fg256;
            if (t->bg256 >= 0) bg = t->bg256;
        }
        s->fg[r] = color ? fg : -1;
        s->bg[r] = color ? bg : -1;
    }
}

static void style_free(screen_style *s) {
    free(s->pairs);
    s->pairs = NULL;
}

static short pair_for(screen_style *s, int fg, int bg) {
    if (!s->color || (fg < 0 && bg < 0) || fg >= s->ncolors || bg >= s->ncolors) return 0;
    short *p = &s->pairs[(fg + 1) * 257 + (bg + 1)];
    if (*p) return *p > 0 ? *p : 0;
    if (s->next_pair > s->max_pair || init_pair((short)s->next_pair, (short)fg, (short)bg) == ERR) {
        *p = -1; /* out of pairs: default colours (the glyphs still carry it) */
        return 0;
    }
    *p = (short)s->next_pair++;
    return *p;
}

static void blit(const grid *g, screen_style *st) {
    for (int y = 0; y < g->h; y++) {
        for (int x = 0; x < g->w; x++) {
            const grid_cell *c = &g->cells[y * g->w + x];
            /* the bottom-right cell scrolls some terminals: leave it */
            if (y == g->h - 1 && x == g->w - 1) break;
            int fg = st->fg[c->role], bg = st->bg[c->role], hf, hb;
            if (c->bg_heat) {
                /* on a heat colour the text takes the scale's contrasting colour */
                theme_heat(&st->th, c->bg_heat - 1, st->ncolors, &hb, &hf);
                bg = hb;
                fg = hf;
            }
            if (c->fg_heat) {
                theme_heat(&st->th, c->fg_heat - 1, st->ncolors, &hb, &hf);
                fg = hb;
            }
            wchar_t wc[2] = {(wchar_t)(g->utf8 || c->cp < 128 ? c->cp : '?'), 0};
            cchar_t cc;
            setcchar(&cc, wc, st->attr[c->role], pair_for(st, fg, bg), NULL);
            mvadd_wch(y, x, &cc);
        }
    }
}

static int translate_key(int ch) {
    switch (ch) {
    case KEY_UP: return K_UP;
    case KEY_DOWN: return K_DOWN;
    case KEY_LEFT: return K_LEFT;
    case KEY_RIGHT: return K_RIGHT;
    case KEY_PPAGE: return K_PGUP;
    case KEY_NPAGE: return K_PGDN;
    case KEY_HOME: return K_HOME;
    case KEY_END: return K_END;
    case KEY_ENTER: case '\n': case '\r': return K_ENTER;
    case 27: return K_ESC;
    case KEY_BACKSPACE: case 127: case 8: return K_BACKSPACE;
    case KEY_DC: return K_DELETE;
    default: return ch;
    }
}

/* ---- the command line and the inputs (before the screen opens) ---- */

typedef struct {
    const char *pa, *pb, *e_path, *layer, *png_live, *theme_path;
    const char *out_dir;        /* --out-dir: where p, e and x write (else asked at the first) */
    int T, ascii, interp_backbone, all_error_bars;
    char e_guess[4096];
} tui_args;

/* -1 to go on, else the exit code (help printed, or a usage error). */
static int parse_args(int argc, char **argv, tui_args *a) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'}, {"layer", required_argument, 0, 'l'},
        {"points", required_argument, 0, 'T'}, {"ascii", no_argument, 0, 'a'},
        {"png-live", required_argument, 0, 'P'}, {"theme", required_argument, 0, 't'},
        {"interpolate-backbone", no_argument, 0, 'I'}, {"help", no_argument, 0, 'h'},
        {"out-dir", required_argument, 0, 'O'}, {"all-error-bars", no_argument, 0, 'B'}, {0, 0, 0, 0}};
    memset(a, 0, sizeof *a);
    a->T = 25;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "e:l:T:aP:t:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': a->e_path = optarg; break;
        case 'l': a->layer = optarg; break;
        case 'T':
            if (cli_points_option(TUI_USAGE, "moescope", optarg, &a->T)) return 2;
            break;
        case 'a': a->ascii = 1; break;
        case 'P': a->png_live = optarg; break;
        case 'O': a->out_dir = optarg; break;
        case 't': a->theme_path = optarg; break;
        case 'I': a->interp_backbone = 1; break;
        case 'B': a->all_error_bars = 1; break;
        case 'h':
            printf("usage: %s\n\nThe interactive explorer. Keys: ? on the screen (l: the checkpoint's MoE layers;\n"
                   "Tab, z, Z: move in and zoom out of the cost matrix). An evaluation set is used only at its\n"
                   "layer (its capture.layer metadata, else the layer it was opened with); other layers show\n"
                   "the cost matrix, assignment and diagnostics without curves.\n"
                   "p, e and x write into one export directory: --out-dir DIR, else asked at the first of\n"
                   "them (the current directory offered when it can be written); O changes it. It is never\n"
                   "a checkpoint folder given as input, nor inside one.\n"
                   "A network (moescope's GPT-2 or ViT layout with MoE blocks, or a Hugging Face MoE decoder\n"
                   "of any family `moescope --help` lists; the evaluation set holding input_ids, or a ViT's\n"
                   "pixel_values and labels): the\n"
                   "curves and the landscape are the network's loss; l switches the MoE block; the other\n"
                   "blocks are interpolated at the same t (aligned by the expert cost);\n"
                   "--interpolate-backbone lets A and B differ outside the MoE blocks.\n"
                   "The orders carry error bars (~: not distinguished from the best) up to 2^25\n"
                   "per-unit losses (orders x points x units), as landscape's; --all-error-bars\n"
                   "goes to 2^29 (dense8 at 25 points: minutes of resampling before the table is done).\n",
                   TUI_USAGE);
            return 0;
        default: return cli_option_error(TUI_USAGE, "moescope", ch, argc, argv);
        }
    }
    if (argc - optind != 2) return cli_usage_error(TUI_USAGE, "expected two checkpoints A and B");
    a->pa = argv[optind];
    a->pb = argv[optind + 1];
    /* the commands' rule: eval.safetensors beside A, else none (the data-free parts) */
    if (!a->e_path) a->e_path = cli_default_eval(a->pa, a->e_guess, sizeof a->e_guess);
    return -1;
}

typedef struct {
    /* heap: a replaced worker borrows the old pair while it stops (layer_load.h); a
       network's point at its shown block in net (its own, never copied nor freed here) */
    moe_model *A, *B;
    evalset E;
    /* the MoE layers of A's checkpoint (prefixes, block indices) and the shown one */
    char **layers;
    int *blocks;
    int nlayers, current;
    /* the layer the evaluation set belongs to: its capture.layer metadata (a
       block index, as capture_inputs.py writes it), else the layer it was
       opened with; "" while unknown */
    char eval_capture[64], eval_layer[160];
    /* a network (its evaluation set holds input_ids or pixel_values): A and B whole, their
       set, the objective of the shown MoE block (its curves and landscape are the
       network's loss) and E the block's own inputs (the diagnostics'); every MoE
       block has data, so l never leaves the curves behind. NULL for a layer. */
    subject_net *net;  /* in subj */
    subject *subj;     /* what was loaded: a network's stays here, a layer's moved to A, B and E */
    net_objective *obj;
} tui_inputs;

static void inputs_free(tui_inputs *in) {
    net_objective_free(in->obj);
    in->obj = NULL;
    if (in->net) in->A = in->B = NULL; // the network's own blocks: freed with it
    if (in->subj) subject_free(in->subj);
    free(in->subj);
    in->subj = NULL;
    in->net = NULL;
    for (int i = 0; i < in->nlayers; i++) free(in->layers[i]);
    free(in->layers);
    free(in->blocks);
    in->layers = NULL;
    in->blocks = NULL;
    in->nlayers = 0;
    evalset_free(&in->E);
    moe_free(in->A);
    moe_free(in->B);
    free(in->A);
    free(in->B);
    in->A = in->B = NULL;
}

/* The MoE layers of the checkpoint at path (a real family's, else moescope's
 * own "L.gate.weight" prefixes), with their block indices (-1 unknown). */
static void list_layers(const char *path, tui_inputs *in) {
    ms_err err;
    ckpt c;
    family_layer *ls = NULL;
    int nl = 0;
    if (!ckpt_open(&c, path, &err)) {
        if (!family_find_layers(&c, cli_overrides()->family, &ls, &nl, &err)) {
            in->layers = ms_malloc(sizeof(char *) * (size_t)(nl ? nl : 1));
            in->blocks = ms_malloc(sizeof(int) * (size_t)(nl ? nl : 1));
            for (int i = 0; i < nl; i++) {
                in->layers[i] = ms_strdup(ls[i].prefix);
                in->blocks[i] = ls[i].block;
            }
            in->nlayers = nl;
            family_layers_free(ls, nl);
        }
        ckpt_close(&c);
    }
    if (!in->nlayers && !moe_list_layers(path, &in->layers, &in->nlayers, &err)) {
        in->blocks = ms_malloc(sizeof(int) * (size_t)(in->nlayers ? in->nlayers : 1));
        for (int i = 0; i < in->nlayers; i++) in->blocks[i] = -1;
    }
    in->current = -1;
    for (int i = 0; i < in->nlayers; i++)
        if (in->A->layer && !strcmp(in->layers[i], in->A->layer)) in->current = i;
}

/* Does the evaluation set fit layer i? Empty why: yes; else why not, in words. */
static void eval_fits(const tui_inputs *in, int i, const char *e_path, char *why, size_t cap) {
    why[0] = 0;
    if (in->net) return; // a network's token set serves every MoE block
    if (!e_path) {
        snprintf(why, cap, "no evaluation set (--eval E, or eval.safetensors beside A): the cost matrix, the "
                 "assignment, the diagnostics and the export need none");
        return;
    }
    const char *slash = strrchr(e_path, '/'), *name = slash ? slash + 1 : e_path;
    if (in->eval_capture[0]) {
        char blk[32] = "";
        if (i >= 0 && in->blocks[i] >= 0) snprintf(blk, sizeof blk, "%d", in->blocks[i]);
        if (strcmp(blk, in->eval_capture) && (i < 0 || strcmp(in->layers[i], in->eval_capture)))
            snprintf(why, cap, "%.100s was captured at layer %.20s, not this one: no curves or landscape", name,
                     in->eval_capture);
    } else if (i >= 0 && in->eval_layer[0] && strcmp(in->layers[i], in->eval_layer)) {
        snprintf(why, cap, "%.100s was given for layer %.60s (it names no capture.layer), not this one: no curves",
                 name, in->eval_layer);
    }
}

/* A network's MoE block k (an index into moe_layers): the objective of its
 * network loss, not yet prepared (the worker computes its frozen prefix and end
 * points, explore_start_net: the screen does not wait for them), and A's and
 * B's block as the worker's layers (the network's own, not read yet: the worker
 * reads their weights, the screen shows their shape at once). 0, or -1 with err
 * set (nothing replaced). */
static int net_block_setup(tui_inputs *in, int k, net_objective **obj, moe_model **A, moe_model **B, ms_err *err) {
    subject_net *n = in->net;
    net_obj_opts o = {.chosen = k, .interp_backbone = n->interp_backbone, .values_later = 1};
    align_opts_default(&o.other);
    if (net_objective_create(&n->A, &n->B, &n->E, &o, obj, err)) return -1;
    *A = &n->A.moe[k];
    *B = &n->B.moe[k];
    return 0;
}

/* The worker of the shown network block. */
static explore_worker *net_worker_start(tui_inputs *in, ms_err *err) {
    subject_net *n = in->net; // equal backbones (not interpolated): one copy of their values
    // not compared yet (values_later): the worker compares them, unless an earlier one did
    // (B's pointers into A's values: net_share_backbone)
    int same = n->interp_backbone ? 0 : n->backbone_later && !net_has_backbone(&n->B) ? EXPLORE_SAME_COMPARE : 1;
    return explore_start_net(in->A, in->B, in->obj, &n->A, &n->B, same, &n->E, n->block, err);
}

/* Everything checked before the screen opens, each problem reported like the
 * command line. 0, or the exit code with nothing left to free. */
static int load_inputs(const tui_args *a, tui_inputs *in) {
    ms_err err;
    memset(in, 0, sizeof *in);
    in->A = ms_calloc(1, sizeof(moe_model));
    in->B = ms_calloc(1, sizeof(moe_model));
    /* a terminal that cannot draw the screen: said before anything loads */
    char tw[200];
    if (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && !terminal_usable(tw, sizeof tw)) {
        inputs_free(in);
        return cli_error("the explorer needs a full-screen terminal, and %s. Run it in a terminal "
                         "emulator (xterm, GNOME Terminal, tmux; e.g. TERM=xterm-256color), or use the "
                         "commands, which print text: moescope landscape A B --eval E, moescope curve "
                         "A B --eval E (moescope --help lists them)",
                         tw);
    }
    const char *ins[3] = {a->pa, a->pb, a->e_path};
    /* --png-live is rewritten again and again: checked before anything loads */
    const out_spec live[1] = {{a->png_live, "--png-live", OUT_FILE}};
    int rc = cli_check_outputs("explorer", "moescope A B [--eval E] [--png-live FILE]", live, 1, ins,
                               a->e_path ? 3 : 2);
    if (rc) {
        inputs_free(in);
        return rc;
    }
    /* without an evaluation set a network's checkpoint shows its MoE layers as layers */
    subject_spec sp = {.kind = a->e_path ? SUBJECT_DETECT : SUBJECT_LAYER, .pa = a->pa, .pb = a->pb,
                       .e_path = a->e_path, .layer = a->layer, .interp_backbone = a->interp_backbone,
                       .uses = MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG,
                       .ignore_capture = 1,  // a set of another layer: that layer without curves
                       .values_later = 1,    // a network's backbones: read by the worker, the screen first
                       .blocks_later = 1};   // and its MoE blocks' weights (the shown one's first)
    in->subj = ms_calloc(1, sizeof(subject));
    if ((rc = cli_subject_load(in->subj, &sp, "", TUI_USAGE))) {
        inputs_free(in);
        return rc;
    }
    if (in->subj->kind == SUBJECT_NETWORK) {
        in->net = &in->subj->net;
        free(in->A);
        free(in->B);
        in->A = in->B = NULL;
        if (net_block_setup(in, in->net->block, &in->obj, &in->A, &in->B, &err)) {
            rc = cli_error("%s", err.msg);
            inputs_free(in);
            return rc;
        }
    } else { // the layers are the explorer's own from here (a worker may swap them)
        *in->A = in->subj->A, *in->B = in->subj->B, in->E = in->subj->E;
        memset(&in->subj->A, 0, sizeof(moe_model)), memset(&in->subj->B, 0, sizeof(moe_model));
        memset(&in->subj->E, 0, sizeof(evalset));
    }
    const moe_model *A = in->A;
    if (A->cfg.n > LS_MAX_N)
        rc = cli_error("%s: %d experts; the explorer handles at most %d (use 'moescope landscape')", a->pa, A->cfg.n,
                       LS_MAX_N);
    // a network's block values: checked by the worker once it has read them
    if (!rc && in->net && ms_limits_memory(A, in->B, NULL, MS_USE_WM | MS_USE_COST | MS_USE_DIAG, &err))
        rc = cli_error("%s", err.msg);
    if (!rc && a->png_live && outputs_check_one(a->png_live, "--png-live", OUT_FILE, ins, 3, &err))
        rc = cli_error("%s", err.msg); // the default evaluation set, known only now
    if (!rc && a->theme_path) {
        theme tmp;
        theme_init(&tmp, 1);
        if (theme_load(&tmp, a->theme_path, &err)) rc = cli_error("%s", err.msg);
    }
    /* without a terminal on both ends curses would wait forever */
    if (!rc && (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)))
        rc = cli_error("the explorer needs a terminal on its input and output; for scripts use the "
                       "subcommands (moescope --help)");
    if (rc) {
        inputs_free(in);
        return rc;
    }
    /* the figures and the saved state record their inputs (provenance.h) */
    for (int i = 0; i < 3; i++) prov_add_input(ins[i]);
    list_layers(a->pa, in);
    st_file f;
    if (a->e_path && !st_open(&f, a->e_path, &err)) {
        const char *cl = st_meta(&f, "capture.layer");
        if (cl) snprintf(in->eval_capture, sizeof in->eval_capture, "%.63s", cl);
        st_close(&f);
    }
    if (in->current >= 0 && !in->eval_capture[0])
        snprintf(in->eval_layer, sizeof in->eval_layer, "%s", in->layers[in->current]);
    for (int i = 0; i < in->nlayers && in->eval_capture[0]; i++) {
        char why[256];
        eval_fits(in, i, a->e_path, why, sizeof why);
        if (!why[0]) snprintf(in->eval_layer, sizeof in->eval_layer, "%s", in->layers[i]);
    }
    return 0;
}

/* ---- side effects of keys and results ---- */

typedef struct {
    explore_worker *g;          /* replaced when l switches the layer */
    tui_inputs *in;
    const tui_args *args;
    char fatal[256];            /* the worker could not restart: why */
    const char *paths[3];
    const char *png_live;
    curves_key live_last;
    int live_written;
    unsigned long export_epoch; /* the export outcome last reported */
    int flags_shown[COST_NMETHODS][2]; /* [method][centring]: its flags were on the status line */
    /* `p` promised the landscape figure of these stages when it completes */
    int landscape_pending;
    explore_request landscape_req;
    layer_switch sw;            /* l: the layer loading off the UI thread */
    explore_geometry *geo;      /* r: the routing geometry, started the first time it is shown */
    int geo_done;               /* its report is the app's */
    int geo_waiting;            /* asked for on a network whose backbones are still being read */
} tui_ctx;

/* name in the export directory (an absolute name as it is) */
static void in_export_dir(const app_state *a, const char *name, char *out, size_t cap) {
    if (name[0] == '/' || !a->export_dir[0] || !strcmp(a->export_dir, ".")) snprintf(out, cap, "%s", name);
    else snprintf(out, cap, "%s/%s", a->export_dir, name);
}

/* The landscape figure under a free name (never over a file or an input);
 * the name written in out. */
static int write_landscape(const app_state *a, const explore_snapshot *v, const tui_ctx *c, char *out, int cap,
                           ms_err *err) {
    char name[512], want[1100];
    export_plot_name(c->paths[0], c->paths[1], &v->req, 1, 0, name, sizeof name);
    in_export_dir(a, name, want, sizeof want);
    if (af_free_name(want, out, (size_t)cap)) return ms_fail(err, "%s: every numbered name is taken", want);
    if (outputs_check_one(out, NULL, OUT_FILE, c->paths, 3, err)) return -1;
    return export_landscape_png(v, c->paths[0], c->paths[1], out, err);
}

/* `p`: the curves now, named by the pair and the stages, never over a file;
 * the landscape now when it is complete, else when it completes. */
/* the name typed at the directory prompt, once, if it ends in ext; else dflt */
static const char *typed_name(app_state *a, const char *ext, const char *dflt) {
    static char name[LINE_EDIT_CAP];
    size_t l = strlen(a->export_name), el = strlen(ext);
    int ok = l > el && !strcmp(a->export_name + l - el, ext);
    snprintf(name, sizeof name, "%s", ok ? a->export_name : dflt);
    a->export_name[0] = 0;
    return name;
}

static void do_png(app_state *a, const explore_snapshot *v, tui_ctx *c) {
    ms_err err;
    char name[512], want[1100], cur[1100], land[1100];
    if (a->info.no_eval[0] && !v->have_naive) {
        app_message(a, 1, "no figures without curves (%s); e exports B aligned, x saves the state",
                    a->info.e_name[0] ? "the evaluation set belongs to another layer" : "no evaluation set");
        return;
    }
    export_plot_name(c->paths[0], c->paths[1], &v->req, 0, a->metric_acc, name, sizeof name);
    in_export_dir(a, typed_name(a, ".png", name), want, sizeof want);
    if (af_free_name(want, cur, sizeof cur)) {
        app_message(a, 1, "%s: every numbered name is taken", want);
        return;
    }
    if (outputs_check_one(cur, NULL, OUT_FILE, c->paths, 3, &err) || export_curves_png(v, &a->pins, a->metric_acc, a->info.objective, c->paths[0], c->paths[1], cur, &err)) {
        app_message(a, 1, "%s", err.msg);
        return;
    }
    c->landscape_pending = 0;
    if (v->have_landscape) {
        if (write_landscape(a, v, c, land, sizeof land, &err)) app_message(a, 1, "saved %s; %s", cur, err.msg);
        else app_message(a, 0, "saved %s and %s", cur, land);
    } else {
        c->landscape_pending = 1;
        c->landscape_req = v->req;
        app_message(a, 0, "saved %s (the landscape figure when the table is complete)", cur);
    }
}

/* x: the state at the name typed, numbered when taken, never over an input. */
static void do_state(app_state *a, const explore_snapshot *v, const tui_ctx *c) {
    ms_err err;
    char want[1100], out[1100];
    in_export_dir(a, a->line.buf, want, sizeof want);
    if (af_free_name(want, out, sizeof out)) {
        app_message(a, 1, "%s: every numbered name is taken", want);
        return;
    }
    if (outputs_check_one(out, NULL, OUT_FILE, c->paths, 3, &err) || state_write(v, &a->pins, c->paths[0], c->paths[1], out, &err))
        app_message(a, 1, "%s", err.msg);
    else
        app_message(a, 0, "saved %s (%ld of %ld orders%s)", out, v->ndone, v->norders,
                    v->have_landscape ? "" : ": the table is still filling in");
}

/* The promised landscape figure, once the landscape of those stages is complete. */
static void pending_landscape(tui_ctx *c, app_state *a, const explore_snapshot *v) {
    if (!c->landscape_pending || !v->have_landscape || v->req.wm_stage != c->landscape_req.wm_stage) return;
    c->landscape_pending = 0;
    ms_err err;
    char land[512];
    if (write_landscape(a, v, c, land, sizeof land, &err)) app_message(a, 1, "%s", err.msg);
    else app_message(a, 0, "saved %s (the landscape is complete)", land);
}

/* The diagnostics' flags (warn, bad) on the message line, once for each
 * method and centring when their findings arrive: the count, d, and the
 * first flag's words; never over the answer to a key (the footer keeps a
 * count of them meanwhile, app_render). */
static void diag_flags(tui_ctx *c, app_state *a, const explore_snapshot *v) {
    if (v->diag_state != EXPLORE_DIAG_READY) return;
    if (v->diag_method != a->req.method || v->diag_center != a->req.center) return;
    int *shown = &c->flags_shown[v->diag_method][v->diag_center ? 1 : 0];
    if (*shown) return;
    *shown = 1;
    if (a->msg[0] && strncmp(a->msg, "top-1 routing", 13)) return;
    int nflag = dg_count(&v->diag, DG_WARN), bad = dg_count(&v->diag, DG_BAD);
    if (!nflag) return;
    const dg_finding *first = NULL;
    for (int sev = DG_BAD; sev >= DG_WARN && !first; sev--)
        for (int i = 0; i < v->diag.n && !first; i++)
            if ((int)v->diag.items[i].severity == sev) first = &v->diag.items[i];
    app_message(a, bad > 0, "%d flag%s (d): [%s] %s", nflag, nflag == 1 ? "" : "s", dg_severity_name(first->severity),
                first->text);
    /* cut to leave the worker's status its place on the line */
    int keep = COLS - 44 > 30 ? COLS - 44 : 30;
    if ((int)strlen(a->msg) > keep) snprintf(a->msg + keep - 3, sizeof a->msg - (size_t)(keep - 3), "...");
}

/* --png-live: rewrite the figure whenever what it shows changed, and only then. */
static void live_png(tui_ctx *c, app_state *a, const explore_snapshot *v) {
    if (!c->png_live || !v->have_naive) return;
    curves_key k;
    curves_key_of(v, &a->pins, a->metric_acc, &k);
    if (c->live_written && curves_key_equal(&k, &c->live_last)) return;
    ms_err err;
    if (export_curves_png(v, &a->pins, a->metric_acc, a->info.objective, c->paths[0], c->paths[1], c->png_live, &err))
        app_message(a, 1, "%s", err.msg);
    c->live_last = k;
    c->live_written = 1;
}

/* The export the worker finished since the last call, as a message. */
static void export_outcome(tui_ctx *c, app_state *a, const explore_snapshot *v) {
    if (v->export_epoch == c->export_epoch) return;
    c->export_epoch = v->export_epoch;
    const explore_request *q = &v->export_req;
    if (v->export_state == EXPLORE_EXPORT_RUNNING) app_message(a, 0, "exporting %s ...", v->export_path);
    else if (v->export_state == EXPLORE_EXPORT_FAILED) app_message(a, 1, "%s", v->export_error);
    else if (v->export_state == EXPLORE_EXPORT_DONE)
    {
        /* the name records the stages; the wording says them when it fits */
        app_message(a, 0, "saved %s (B aligned: order %s, weight matching %s)", v->export_path,
                    q->order_stage ? cost_method_name(q->method) : "identity", q->wm_stage ? "on" : "off");
        if (strlen(a->msg) > 78) app_message(a, 0, "saved %s (B aligned to A)", v->export_path);
    }
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---- the terminal ---- */

typedef struct {
    screen_style st;
    grid gr;
    int utf8;
} tui_screen;

/* Signals, curses modes, colours and the grid; -1 when curses cannot start. */
static int screen_start(tui_screen *s, const tui_args *a) {
    setlocale(LC_ALL, "");
    s->utf8 = !a->ascii && !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (!env_get(ENV_ESCDELAY)) set_escdelay(25);
    atexit(restore_terminal);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (!initscr()) return -1;
    screen_open = 1;
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(30);
    /* releases are in the mask so that a click's release is consumed as an
       event instead of leaving getch waiting for the rest of a click */
    mousemask(BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    style_init(&s->st, theme_env_color(has_colors()), a->theme_path);
    int W, H;
    getmaxyx(stdscr, H, W);
    grid_init(&s->gr, W, H, s->utf8);
    s->gr.color = s->st.color;
    return 0;
}

static void screen_end(tui_screen *s) {
    restore_terminal();
    style_free(&s->st);
    grid_free(&s->gr);
}

static void screen_draw(tui_screen *s, app_state *app, const explore_snapshot *v) {
    int W, H;
    getmaxyx(stdscr, H, W);
    if (W != s->gr.w || H != s->gr.h) {
        grid_free(&s->gr);
        grid_init(&s->gr, W, H, s->utf8);
        s->gr.color = s->st.color;
        clear();
    }
    app->now = explore_clock();
    app_render(app, v, &s->gr);
    blit(&s->gr, &s->st);
    refresh();
}

/* The loaded layer k (A2, B2, checked by the loader) in place of the shown
 * one: the worker is stopped (its computation cancelled), the models swapped
 * and a new worker started, with the evaluation set only when it belongs to
 * that layer (else the data-free parts, and the status line says why). The
 * view starts afresh. */
/* A network's MoE block k in place of the shown one: its objective made here
 * (the new worker prepares it), the old worker stopped first (it borrows the
 * old objective; a preparation or evaluation in flight stops within a panel of
 * rows). 0, or -1 with the reason on the status line and the shown block kept. */
static int switch_network(tui_ctx *c, app_state *app, int k) {
    tui_inputs *in = c->in;
    int b = -1;
    for (int i = 0; i < in->net->A.cfg.nmoe; i++)
        if (!strcmp(in->net->A.moe[i].layer, in->layers[k])) b = i;
    net_objective *obj = NULL;
    moe_model *A, *B;
    ms_err err;
    if (b < 0) {
        app_message(app, 1, "block %s: not an MoE block of the network", in->layers[k]);
        return -1;
    }
    // the old worker first: its preparation may be reading the other blocks' weights in place
    explore_stop(c->g);
    c->g = NULL;
    if (net_block_setup(in, b, &obj, &A, &B, &err)) { // the shown block kept, its worker started again
        app_message(app, 1, "block %s: %s", in->layers[k], err.msg);
        c->g = net_worker_start(in, &err);
        explore_set_all_error_bars(c->g, c->args->all_error_bars);
        if (!c->g) snprintf(c->fatal, sizeof c->fatal, "%.255s", err.msg);
        return -1;
    }
    net_objective_free(in->obj);
    // nothing read here: the new worker reads the block (a mapped one into floats of its own)
    in->A = A, in->B = B, in->obj = obj, in->net->block = b;
    c->g = net_worker_start(in, &err);
    explore_set_all_error_bars(c->g, c->args->all_error_bars);
    if (!c->g) snprintf(c->fatal, sizeof c->fatal, "%.255s", err.msg);
    return c->g ? 0 : -1;
}

static void switch_to(tui_ctx *c, app_state *app, explore_snapshot *v, int k, moe_model *A2, moe_model *B2) {
    tui_inputs *in = c->in;
    const char *name = in->layers[k];
    char why[200];
    if (in->net) { // the network's own blocks: nothing read (layer_request)
        if (switch_network(c, app, k)) return;
        in->current = k;
        explore_snapshot_free(v);
        memset(v, 0, sizeof *v);
        app_switched(app, name, &in->A->cfg, k, "");
        snprintf(app->info.objective, sizeof app->info.objective, "%s", net_objective_view(in->obj)->what);
        memset(c->flags_shown, 0, sizeof c->flags_shown);
        c->landscape_pending = 0;
        c->live_written = 0;
        explore_submit(c->g, &app->req);
        explore_request_diag(c->g, app->req.method, app->req.center);
        return;
    }
    eval_fits(in, k, c->args->e_path, why, sizeof why);
    if (!why[0] && c->args->e_path && in->E.d != A2->cfg.d)
        snprintf(why, sizeof why, "the evaluation set has width %d, layer %.60s has d = %d: no curves here", in->E.d,
                 name, A2->cfg.d);
    /* the old worker borrows the old models: both go to a thread that stops
       and frees them, so the screen does not wait for the worker's threads */
    layer_switch_retire_worker(&c->sw, c->g, in->A, in->B);
    c->g = NULL;
    in->A = ms_malloc(sizeof(moe_model));
    in->B = ms_malloc(sizeof(moe_model));
    *in->A = *A2;
    *in->B = *B2;
    in->current = k;
    explore_snapshot_free(v);
    memset(v, 0, sizeof *v);
    ms_err err;
    c->g = explore_start(in->A, in->B, why[0] ? NULL : &in->E, &err);
    explore_set_all_error_bars(c->g, c->args->all_error_bars);
    if (!c->g) { /* not after the loader's checks; the loop ends and tui_main says why */
        snprintf(c->fatal, sizeof c->fatal, "%.255s", err.msg);
        return;
    }
    app_switched(app, name, &in->A->cfg, k, why);
    memset(c->flags_shown, 0, sizeof c->flags_shown);
    c->landscape_pending = 0;
    c->live_written = 0;
    explore_submit(c->g, &app->req);
    explore_request_diag(c->g, app->req.method, app->req.center);
}

/* l, Enter: load A and B at the layer under the list's cursor off the UI
 * thread (layer_load.h); the old layer stays on the screen, and answers keys,
 * until the new one is loaded and checked (layer_poll swaps it in). */
static void layer_request(tui_ctx *c, app_state *app, explore_snapshot *v) {
    tui_inputs *in = c->in;
    int k = app->layers.cursor, was = app->layers.loading;
    if (k < 0 || k >= in->nlayers) return;
    const char *name = in->layers[k];
    if (in->net) { // a network's blocks are its own, in memory: no loader
        if (k == in->current) app_message(app, 0, "block %s is the one shown", name);
        else switch_to(c, app, v, k, NULL, NULL);
        return;
    }
    switch (layer_switch_request(&c->sw, name, k, in->current)) {
    case LS_STARTED: app_message(app, 0, "loading layer %s (l, Enter on the shown layer: cancel)", name); break;
    case LS_REPLACED:
        app_message(app, 0, "loading layer %s instead of %s", name, was >= 0 ? in->layers[was] : "the other");
        break;
    case LS_ALREADY: app_message(app, 0, "layer %s is loading already", name); break;
    case LS_CANCELLED:
        app_message(app, 0, "loading %s cancelled: layer %s stays", was >= 0 ? in->layers[was] : "the layer", name);
        app_set_loading(app, -1, 0, NULL);
        return;
    case LS_SHOWN: app_message(app, 0, "layer %s is the one shown", name); return;
    default: app_message(app, 1, "earlier loads are still stopping: try again in a moment"); return;
    }
    app_set_loading(app, k, 0, NULL);
}

/* The running load's progress on the screen, and its end: the new layer
 * swapped in, or the old one kept with the reason. 1 when the screen changed. */
static int layer_poll(tui_ctx *c, app_state *app, explore_snapshot *v) {
    if (!layer_switch_live(&c->sw)) return 0;
    layer_load_status st;
    layer_switch_poll(&c->sw, &st);
    if (st.state == LL_RUNNING) {
        char was[sizeof app->load_status];
        memcpy(was, app->load_status, sizeof was);
        app_set_loading(app, st.index, st.frac, st.phase);
        return strcmp(was, app->load_status) != 0;
    }
    if (st.state == LL_NONE) return 0;
    moe_model A2, B2;
    int k = st.index;
    if (layer_switch_take(&c->sw, &A2, &B2)) { /* LL_FAILED: forgotten */
        /* the reason first, its checkpoint named as the title names it: the line is short */
        char reason[sizeof st.error];
        const char *paths[2] = {c->args->pa, c->args->pb}, *names[2] = {app->info.a_name, app->info.b_name};
        snprintf(reason, sizeof reason, "%s", st.error);
        for (int i = 0; i < 2; i++) {
            size_t pl = strlen(paths[i]);
            if (!strncmp(reason, paths[i], pl) && reason[pl] == ':') {
                snprintf(reason, sizeof reason, "%s%s", names[i], st.error + pl);
                break;
            }
        }
        app_set_loading(app, -1, 0, NULL);
        app_message(app, 1, "layer %s not loaded: %s (layer %s stays)", c->in->layers[k], reason,
                    c->in->current >= 0 ? c->in->layers[c->in->current] : "shown");
        return 1;
    }
    switch_to(c, app, v, k, &A2, &B2);
    return 1;
}

/* One key or mouse event: FX_* flags (0 when it changes nothing). */
static int input_event(int c, app_state *app, const explore_snapshot *v) {
    if (c == KEY_MOUSE) {
        MEVENT me;
        if (getmouse(&me) != OK) return 0;
        int kind = me.bstate & BUTTON4_PRESSED ? 2 : me.bstate & BUTTON5_PRESSED ? 3 : me.bstate & BUTTON1_PRESSED ? 1 : 0;
        return kind ? app_mouse(app, me.x, me.y, kind, v) : 0;
    }
    if (app->layout.too_small && c != 'q') return 0;
    return app_key(app, translate_key(c), v);
}

/* r: the routing geometry of A, computed once: a network's MoE blocks on its
 * evaluation set, else A's MoE layers on the --eval file as a capture of every
 * layer's inputs (inputs.L; otherwise the report says why there is none) */
static void geometry_start(tui_ctx *ctx, app_state *app, const explore_snapshot *v) {
    if (ctx->geo || ctx->geo_done) return;
    const tui_inputs *in = ctx->in;
    ctx->geo_waiting = in->net && !v->net_values; // the worker reads them: started once they are in
    if (ctx->geo_waiting) return;
    if (in->net) {
        ctx->geo = explore_geometry_network(&in->net->A, &in->net->E);
    } else if (ctx->paths[2]) {
        ctx->geo = explore_geometry_capture(ctx->paths[0], ctx->paths[2], cli_overrides());
    } else {
        char **l = ms_malloc(sizeof(char *));
        l[0] = ms_strdup("no evaluation set: the routing geometry needs a network's input_ids or a capture of "
                         "every MoE layer's inputs (--eval)");
        app_set_geometry(app, l, 1);
        ctx->geo_done = 1;
    }
}

/* its report, once ready */
static int geometry_poll(tui_ctx *ctx, app_state *app) {
    if (!ctx->geo || ctx->geo_done) return 0;
    char **lines;
    int n;
    if (explore_geometry_poll(ctx->geo, &lines, &n) == EXPLORE_GEO_COMPUTING) return 0;
    app_set_geometry(app, lines, n);
    ctx->geo_done = 1;
    return 1;
}

/* The directory typed at the prompt: made when missing, refused when it
 * cannot be written; the FX_* of the export that asked for it. */
static int out_dir_chosen(app_state *app, const tui_ctx *c) {
    char typed[LINE_EDIT_CAP], dir[LINE_EDIT_CAP], why[600];
    // a file name where the directory is asked: its folder, and the name for the export
    if (!export_split_file(app->line.buf, typed, sizeof typed, app->export_name, sizeof app->export_name)) {
        snprintf(typed, sizeof typed, "%s", app->line.buf);
        app->export_name[0] = 0;
    }
    export_dir_ready(typed, c->paths, c->paths[2] ? 3 : 2, dir, sizeof dir, why, sizeof why);
    if (why[0]) app->export_name[0] = 0;
    return app_export_dir(app, dir, why);
}


/* ---- the loop ---- */

static void run_loop(app_state *app, tui_screen *scr, tui_ctx *ctx) {
    explore_snapshot v;
    memset(&v, 0, sizeof v);
    int dirty = 1, quit = 0;
    double spin_t = 0;
    const char *bench = env_get(ENV_TUI_BENCH); /* key-to-redraw latency log */
    FILE *bench_fp = bench ? fopen(bench, "a") : NULL;
    double key_t = -1;
    while (!quit && !got_signal && ctx->g) {
        if (layer_poll(ctx, app, &v)) dirty = 1;
        if (geometry_poll(ctx, app)) dirty = 1;
        if (!ctx->g) break;
        explore_worker *g = ctx->g;
        if (explore_poll(g, &v)) {
            dirty = 1;
            export_outcome(ctx, app, &v);
            live_png(ctx, app, &v);
            pending_landscape(ctx, app, &v);
            diag_flags(ctx, app, &v);
            if (ctx->geo_waiting) geometry_start(ctx, app, &v);
        }
        if (dirty) {
            screen_draw(scr, app, &v);
            dirty = 0;
            if (t_start >= 0) { // the first screen: its latency, and the CPU the UI thread spent
                timing_add("explorer first screen", timing_now() - t_start);
                timing_add("explorer first screen, UI thread CPU", thread_cpu_s());
                t_start = -1;
            }
            if (t_matrix >= 0 && v.have_methods) {
                timing_add("explorer cost matrix and assignment", timing_now() - t_matrix);
                // every thread's CPU to it (the block's read, the expert cost): what a load does not stretch
                timing_add("explorer cost matrix and assignment, process CPU", process_cpu_s());
                t_matrix = -1;
            }
            if (bench_fp && key_t >= 0) {
                fprintf(bench_fp, "%.3f\n", now_ms() - key_t);
                fflush(bench_fp);
                key_t = -1;
            }
        }
        int c = getch();
        if (c == ERR) {
            /* the spinner of a landscape that has no rows yet turns */
            if (v.busy && v.phase[0] && v.ndone == 0 && explore_clock() - spin_t > 0.1) {
                spin_t = explore_clock();
                dirty = 1;
            }
            continue;
        }
        if (bench_fp) key_t = now_ms();
        dirty = 1;
        if (c == KEY_RESIZE) continue;
        int fx = input_event(c, app, &v);
        if (fx & FX_SUBMIT) {
            explore_submit(g, &app->req);
            explore_request_diag(g, app->req.method, app->req.center); /* its flags reach the status line */
        }
        if (fx & FX_OUT_DIR) fx |= out_dir_chosen(app, ctx); /* then the export that asked for it */
        if (fx & FX_PNG) do_png(app, &v, ctx);
        if (fx & FX_STATE) do_state(app, &v, ctx);
        if (fx & FX_EXPORT) {
            char name[512], path[1100];
            export_aligned_name(ctx->paths[1], &app->req, name, sizeof name);
            in_export_dir(app, typed_name(app, ".safetensors", name), path, sizeof path);
            explore_export(g, &app->req, path);
        }
        if (fx & FX_DIAG) explore_request_diag(g, app->req.method, app->req.center);
        if (fx & FX_LAYER) layer_request(ctx, app, &v);
        if (fx & FX_GEOMETRY) geometry_start(ctx, app, &v);
        if (fx & FX_QUIT) quit = 1, t_quit = timing_now();
        live_png(ctx, app, &v); /* a toggle of the metric changes the figure at once */
    }
    if (bench_fp) fclose(bench_fp);
    explore_snapshot_free(&v);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* "x/sample-checkpoints/dense4/seed1.safetensors" -> "dense4/seed1.safetensors":
 * the folder tells dense4/seed1 from topk4/seed1 */
static void folder_name(const char *p, char *out, size_t cap) {
    const char *b = base_name(p), *d = b > p + 1 ? b - 1 : p;
    while (d > p && d[-1] != '/') d--;
    if (b > p + 1 && !(b - d == 2 && d[0] == '.')) snprintf(out, cap, "%.*s%s", (int)(b - d), d, b);
    else snprintf(out, cap, "%s", b);
}

static void app_setup(app_state *app, const tui_args *a, const tui_inputs *in) {
    ui_info info;
    memset(&info, 0, sizeof info);
    folder_name(a->pa, info.a_name, sizeof info.a_name);
    folder_name(a->pb, info.b_name, sizeof info.b_name);
    snprintf(info.e_name, sizeof info.e_name, "%.255s", a->e_path ? base_name(a->e_path) : "");
    snprintf(info.layer, sizeof info.layer, "%s", in->A->layer ? in->A->layer : (a->layer ? a->layer : "moe"));
    info.a_path = a->pa;
    info.b_path = a->pb;
    info.cfg = in->A->cfg;
    info.N = in->E.N;
    snprintf(info.eval_layer, sizeof info.eval_layer, "%s", in->eval_layer);
    if (in->obj) {
        snprintf(info.objective, sizeof info.objective, "%s", net_objective_view(in->obj)->what);
        info.N = (int)net_positions(&in->net->A, &in->net->E); // next-token positions, or images
        // the blocks route tokens: the routing load counts them, the title says both
        int vit = net_arch_of(in->net->A.cfg.arch)->target == NET_TARGET_CLASS;
        long tokens = (long)in->net->E.N * net_tokens(&in->net->A, &in->net->E);
        snprintf(info.n_full, sizeof info.n_full, "%d %s, %ld tokens", in->net->E.N, vit ? "images" : "sequences",
                 tokens);
        snprintf(info.n_short, sizeof info.n_short, "%d %s", in->net->E.N, vit ? "img" : "seq");
    }
    eval_fits(in, in->current, a->e_path, info.no_eval, sizeof info.no_eval);
    app_init(app, &info, a->T);
    char **names = ms_malloc(sizeof(char *) * (size_t)(in->nlayers ? in->nlayers : 1));
    for (int i = 0; i < in->nlayers; i++) names[i] = ms_strdup(in->layers[i]);
    app_set_layers(app, names, in->nlayers, in->current);
    if (info.no_eval[0]) app_message(app, 1, "%s", info.no_eval);
    if (in->A->cfg.router == ROUTER_TOPK && in->A->cfg.k == 1)
        app_message(app, 0, "top-1 routing: outside the theory (scores can be rescaled)");
}

/* parse -> load -> worker -> screen -> loop, and one teardown for every exit. */
int tui_main(int argc, char **argv) {
    t_start = t_matrix = timing_now();
    tui_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0) return rc;
    char out_dir[LINE_EDIT_CAP] = "", why_dir[600];
    const char *ins[3] = {a.pa, a.pb, a.e_path};
    if (a.out_dir && export_dir_ready(a.out_dir, ins, a.e_path ? 3 : 2, out_dir, sizeof out_dir, why_dir,
                                      sizeof why_dir))
        return cli_error("--out-dir %s", why_dir);
    tui_inputs in;
    if ((rc = load_inputs(&a, &in))) return rc;
    ms_err err;
    char why[256];
    eval_fits(&in, in.current, a.e_path, why, sizeof why);
    explore_worker *g = in.net ? net_worker_start(&in, &err) : explore_start(in.A, in.B, why[0] ? NULL : &in.E, &err);
    explore_set_all_error_bars(g, a.all_error_bars);
    app_state app;
    tui_screen scr;
    int have_app = 0, have_screen = 0;
    if (!g) {
        rc = cli_error("%s", err.msg);
    } else {
        app_setup(&app, &a, &in);
        snprintf(app.export_dir, sizeof app.export_dir, "%s", out_dir); /* "": asked at the first export */
        export_dir_default(app.dir_default, sizeof app.dir_default);
        have_app = 1;
        explore_submit(g, &app.req);
        explore_request_diag(g, app.req.method, app.req.center);
        if (screen_start(&scr, &a)) {
            rc = cli_error("cannot open the terminal");
        } else {
            have_screen = 1;
            tui_ctx ctx;
            memset(&ctx, 0, sizeof ctx);
            ctx.g = g;
            ctx.in = &in;
            ctx.args = &a;
            ctx.paths[0] = a.pa;
            ctx.paths[1] = a.pb;
            ctx.paths[2] = a.e_path;
            ctx.png_live = a.png_live;
            layer_switch_init(&ctx.sw, a.pa, a.pb);
            ctx.sw.fo = cli_overrides();
            run_loop(&app, &scr, &ctx);
            // the terminal first: the threads below stop within a panel of rows, the memory after
            explore_cancel(ctx.g);
            screen_end(&scr);
            have_screen = 0;
            quit_timing("explorer q: terminal restored");
            layer_switch_free(&ctx.sw); /* a load under way is cancelled and joined */
            explore_geometry_stop(ctx.geo);
            g = ctx.g;
            if (ctx.fatal[0]) rc = cli_error("%s", ctx.fatal);
        }
    }
    if (have_screen) screen_end(&scr);
    explore_stop(g);
    quit_timing("explorer q: workers stopped");
    if (have_app) app_free(&app);
    inputs_free(&in);
    quit_timing("explorer q: memory freed");
    if (!rc && got_signal) {
        fprintf(stderr, "moescope: interrupted\n");
        return 128 + got_signal;
    }
    return rc;
}
