/* tui.c - the ncurses front end: load the inputs (errors reported like the
 * command line, before the screen opens), start the worker, then loop:
 * poll explore_poll, render the app into a grid, blit the grid, wait up to
 * 30 ms for a key. Terminal restored on every exit path (normal, error,
 * SIGINT/SIGTERM, exit()). */
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
#include "atomic_file.h"
#include "cli.h"
#include "explore_worker.h"
#include "export.h"
#include "keys.h"
#include "ms_limits.h"
#include "theme.h"
#include "tui.h"

static const char *TUI_USAGE =
    "moescope A.safetensors B.safetensors [--eval E] [--layer L] [--points T] [--ascii] [--png-live FILE] "
    "[--theme FILE]";

static volatile sig_atomic_t got_signal;
static int screen_open;

static void restore_terminal(void) {
    if (screen_open) {
        screen_open = 0;
        endwin();
    }
}

static void on_signal(int sig) { got_signal = sig; }

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
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

static void style_init(screen_style *s, int color) {
    memset(s, 0, sizeof *s);
    theme_init(&s->th, color);
    const char *tf = getenv("MOESCOPE_THEME");
    if (tf && tf[0]) {
        ms_err err;
        if (theme_load(&s->th, tf, &err)) fprintf(stderr, "moescope: %s\n", err.msg);
    }
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
    default: return ch;
    }
}

/* ---- side effects of keys ---- */

typedef struct {
    const moe_model *A, *B;
    const evalset *E;
    const char *paths[3];
    const char *png_live;
} tui_ctx;

static void do_png(app_state *a, const explore_snapshot *v, const tui_ctx *c) {
    ms_err err;
    if (af_check_not_input("curves.png", c->paths, c->E ? 3 : 2, &err) ||
        (v->have_landscape && af_check_not_input("landscape.png", c->paths, c->E ? 3 : 2, &err))) {
        app_message(a, 1, "%s", err.msg);
        return;
    }
    if (export_curves_png(v, a->metric_acc, "curves.png", &err)) {
        app_message(a, 1, "%s", err.msg);
        return;
    }
    if (v->have_landscape) {
        if (export_landscape_png(v, "landscape.png", &err)) app_message(a, 1, "saved curves.png; %s", err.msg);
        else app_message(a, 0, "saved curves.png and landscape.png");
    } else {
        app_message(a, 0, "saved curves.png (landscape.png when the landscape is complete)");
    }
}

static void do_export(app_state *a, const tui_ctx *c) {
    char path[512];
    export_aligned_name(c->paths[1], path, sizeof path);
    ms_err err;
    if (export_aligned(c->A, c->B, c->paths, c->E ? 3 : 2, &a->req, path, &err)) app_message(a, 1, "%s", err.msg);
    else app_message(a, 0, "saved %s (B aligned: order %s, weight matching %s)", path,
                     a->req.order_stage ? cost_method_name(a->req.method) : "identity", a->req.wm_stage ? "on" : "off");
}

/* a signature of what the curves PNG shows, to rewrite it only on change */
static double curves_signature(const explore_snapshot *v, int metric_acc) {
    double s = metric_acc * 7.0 + v->have_naive + 2 * v->have_skip + 4 * v->have_current + 8 * v->have_selected;
    if (v->have_current) s += v->current.barrier * 1e3 + v->current.order[0] * 13 + v->current.order[v->n - 1] * 17;
    if (v->have_selected)
        for (int i = 0; i < v->n; i++) s += v->selected.order[i] * (i + 1) * 31.0;
    s += v->req.wm_stage * 101 + v->req.order_stage * 211 + v->req.method * 307;
    return s;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

/* ---- main ---- */

int tui_main(int argc, char **argv) {
    static const struct option opts[] = {
        {"eval", required_argument, 0, 'e'}, {"layer", required_argument, 0, 'l'},
        {"points", required_argument, 0, 'T'}, {"ascii", no_argument, 0, 'a'},
        {"png-live", required_argument, 0, 'P'}, {"theme", required_argument, 0, 't'},
        {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    const char *e_path = NULL, *layer = NULL, *png_live = NULL, *theme_path = NULL;
    int T = 25, ascii = 0;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "e:l:T:aP:t:h", opts, NULL)) != -1) {
        switch (ch) {
        case 'e': e_path = optarg; break;
        case 'l': layer = optarg; break;
        case 'T': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 2 || v > 10001) return cli_usage_error(TUI_USAGE, "--points needs an integer >= 2, got '%s'", optarg);
            T = (int)v;
            break;
        }
        case 'a': ascii = 1; break;
        case 'P': png_live = optarg; break;
        case 't': theme_path = optarg; break;
        case 'h':
            printf("usage: %s\n\nThe interactive explorer. Keys: ? on the screen.\n", TUI_USAGE);
            return 0;
        default: return cli_option_error(TUI_USAGE, "moescope", ch, argc, argv);
        }
    }
    if (argc - optind != 2) return cli_usage_error(TUI_USAGE, "expected two checkpoints A and B");
    const char *pa = argv[optind], *pb = argv[optind + 1];
    char e_guess[4096];
    if (!e_path) {
        /* eval.safetensors beside A */
        const char *slash = strrchr(pa, '/');
        int dl = slash ? (int)(slash - pa) + 1 : 0;
        snprintf(e_guess, sizeof e_guess, "%.*seval.safetensors", dl, pa);
        struct stat st;
        if (stat(e_guess, &st) == 0) e_path = e_guess;
    }

    /* load and check everything before the screen opens */
    ms_err err;
    moe_model A, B;
    evalset E;
    memset(&E, 0, sizeof E);
    if (moe_load(&A, pa, layer, &err)) return cli_error("%s", err.msg);
    if (moe_load(&B, pb, layer, &err)) {
        moe_free(&A);
        return cli_error("%s", err.msg);
    }
    int rc = 0;
    if (moe_check_compatible(&A, &B, &err)) rc = cli_error("%s", err.msg);
    else if (!e_path)
        rc = cli_error("no evaluation set: pass --eval E (a safetensors file with 'inputs' [N, %d] and 'labels' or "
                       "'targets'), or put eval.safetensors beside %s", A.cfg.d, pa);
    else if (evalset_load(&E, e_path, &err)) rc = cli_error("%s", err.msg);
    else if (A.cfg.has_head && evalset_check(&E, &A, &err)) rc = cli_error("%s", err.msg);
    else if (ms_limits_check(&A, &B, &E, MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG, &err))
        rc = cli_error("%s", err.msg);
    else if (!A.cfg.has_head && E.d != A.cfg.d)
        rc = cli_error("%s: inputs have width %d but the layer has d = %d", e_path, E.d, A.cfg.d);
    else if (A.cfg.n > LS_MAX_N)
        rc = cli_error("%s: %d experts; the explorer handles at most %d (use 'moescope landscape')", pa, A.cfg.n, LS_MAX_N);
    if (!rc && png_live) {
        /* --png-live is rewritten again and again: never over an input */
        const char *ins[3] = {pa, pb, e_path};
        if (af_check_not_input(png_live, ins, 3, &err)) rc = cli_error("--png-live %s", err.msg);
    }
    if (!rc && theme_path) {
        /* checked here so a bad theme is reported before the screen opens */
        theme tmp;
        theme_init(&tmp, 1);
        if (theme_load(&tmp, theme_path, &err)) rc = cli_error("%s", err.msg);
        else setenv("MOESCOPE_THEME", theme_path, 1);
    }
    explore_worker *g = NULL;
    if (!rc && !(g = explore_start(&A, &B, &E, &err))) rc = cli_error("%s", err.msg);
    if (rc) {
        evalset_free(&E);
        moe_free(&A);
        moe_free(&B);
        return rc;
    }

    ui_info info;
    memset(&info, 0, sizeof info);
    snprintf(info.a_name, sizeof info.a_name, "%s", base_name(pa));
    snprintf(info.b_name, sizeof info.b_name, "%s", base_name(pb));
    snprintf(info.e_name, sizeof info.e_name, "%.255s", base_name(e_path));
    snprintf(info.layer, sizeof info.layer, "%s", A.layer ? A.layer : (layer ? layer : "moe"));
    info.cfg = A.cfg;
    info.N = E.N;
    app_state app;
    app_init(&app, &info, T);
    if (A.cfg.router == ROUTER_TOPK && A.cfg.k == 1)
        app_message(&app, 0, "top-1 routing: outside the theory (scores can be rescaled)");
    tui_ctx ctx = {&A, &B, &E, {pa, pb, e_path}, png_live};
    explore_submit(g, &app.req);

    /* the terminal */
    setlocale(LC_ALL, "");
    int utf8 = !ascii && !strcmp(nl_langinfo(CODESET), "UTF-8");
    if (!getenv("ESCDELAY")) set_escdelay(25);
    atexit(restore_terminal);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    if (!initscr()) {
        explore_stop(g);
        app_free(&app);
        evalset_free(&E);
        moe_free(&A);
        moe_free(&B);
        return cli_error("cannot open the terminal");
    }
    screen_open = 1;
    cbreak();
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(30);
    mousemask(BUTTON1_CLICKED | BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
    mouseinterval(0);
    screen_style st;
    style_init(&st, theme_env_color(has_colors()));

    explore_snapshot v;
    memset(&v, 0, sizeof v);
    grid gr;
    int W, H;
    getmaxyx(stdscr, H, W);
    grid_init(&gr, W, H, utf8);
    gr.color = st.color;
    int dirty = 1, quit = 0;
    double spin_t = 0;
    double live_sig = -1;
    const char *bench = getenv("MOESCOPE_TUI_BENCH"); /* key-to-redraw latency log */
    FILE *bench_fp = bench && bench[0] ? fopen(bench, "a") : NULL;
    double key_t = -1;
    while (!quit && !got_signal) {
        if (explore_poll(g, &v)) {
            dirty = 1;
            if (png_live && v.have_naive) {
                double sig = curves_signature(&v, app.metric_acc);
                if (sig != live_sig) {
                    if (export_curves_png(&v, app.metric_acc, png_live, &err)) app_message(&app, 1, "%s", err.msg);
                    live_sig = sig;
                }
            }
        }
        if (dirty) {
            getmaxyx(stdscr, H, W);
            if (W != gr.w || H != gr.h) {
                grid_free(&gr);
                grid_init(&gr, W, H, utf8);
                gr.color = st.color;
                clear();
            }
            app.now = explore_clock();
            app_render(&app, &v, &gr);
            blit(&gr, &st);
            refresh();
            dirty = 0;
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
        int fx = 0;
        if (c == KEY_MOUSE) {
            MEVENT me;
            if (getmouse(&me) == OK) {
                int kind = me.bstate & BUTTON4_PRESSED ? 2 : me.bstate & BUTTON5_PRESSED ? 3
                         : me.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED) ? 1 : 0;
                if (kind) fx = app_mouse(&app, me.x, me.y, kind, &v);
            }
        } else if (app.layout.too_small && c != 'q') {
            continue;
        } else {
            fx = app_key(&app, translate_key(c), &v);
        }
        if (fx & FX_SUBMIT) explore_submit(g, &app.req);
        if (fx & FX_PNG) do_png(&app, &v, &ctx);
        if (fx & FX_EXPORT) do_export(&app, &ctx);
        if (fx & FX_DIAG) explore_request_diag(g, app.req.method, app.req.center);
        if (fx & FX_QUIT) quit = 1;
        if (png_live && v.have_naive && curves_signature(&v, app.metric_acc) != live_sig) {
            if (export_curves_png(&v, app.metric_acc, png_live, &err)) app_message(&app, 1, "%s", err.msg);
            live_sig = curves_signature(&v, app.metric_acc);
        }
    }
    restore_terminal();
    style_free(&st);
    if (bench_fp) fclose(bench_fp);
    explore_stop(g);
    explore_snapshot_free(&v);
    grid_free(&gr);
    app_free(&app);
    evalset_free(&E);
    moe_free(&A);
    moe_free(&B);
    if (got_signal) {
        fprintf(stderr, "moescope: interrupted\n");
        return 128 + got_signal;
    }
    return 0;
}
