/* lesson_screen.c - the interactive lesson: a worker thread computes the steps
 * (in the order the user is likely to want them), the screen shows one at a
 * time and stays responsive meanwhile; `x` hands the terminal to the explorer
 * on the step's pair (a child moescope, as `less` runs an editor) and takes it
 * back when the explorer quits. */
#include "lesson_screen.h"

#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lesson_view.h"
#include "terminal.h"

typedef struct {
    lesson *L;
    pthread_t thread;
    pthread_mutex_t mu;
    lesson_step steps[LESSON_STEPS];
    int ready[LESSON_STEPS];       /* 1 computed, -1 failed */
    char error[LESSON_STEPS][1100];
    int want, quit;                /* the step on screen; stop the worker */
} lesson_ctx;

static volatile sig_atomic_t got_signal;
static void on_signal(int sig) { got_signal = sig; }

/* The first step not computed yet, from the one on screen onwards. */
static int next_job(lesson_ctx *c) {
    for (int k = 0; k < LESSON_STEPS; k++) {
        int i = (c->want + k) % LESSON_STEPS;
        if (!c->ready[i]) return i;
    }
    return -1;
}

static void *worker(void *arg) {
    lesson_ctx *c = arg;
    lesson_step *s = malloc(sizeof *s);
    for (;;) {
        pthread_mutex_lock(&c->mu);
        int i = c->quit ? -1 : next_job(c);
        pthread_mutex_unlock(&c->mu);
        if (i < 0) break;
        ms_err err;
        int rc = lesson_step_compute(c->L, i, s, &err);
        pthread_mutex_lock(&c->mu);
        if (rc) snprintf(c->error[i], sizeof c->error[i], "%s", err.msg);
        else c->steps[i] = *s;
        c->ready[i] = rc ? -1 : 1;
        pthread_mutex_unlock(&c->mu);
    }
    free(s);
    return NULL;
}

static int role_attr(int role) {
    switch (role) {
    case ROLE_TITLE: return A_BOLD | A_REVERSE;
    case ROLE_KEY: case ROLE_MARK: case ROLE_PANE_TITLE: case ROLE_MESSAGE: return A_BOLD;
    case ROLE_ERROR: return A_BOLD | A_UNDERLINE;
    case ROLE_DIM: return A_DIM;
    default: return A_NORMAL;
    }
}

static void blit(const grid *g) {
    char buf[8];
    for (int y = 0; y < g->h; y++)
        for (int x = 0; x < g->w; x++) {
            const grid_cell *cell = &g->cells[(size_t)y * g->w + x];
            if (y == g->h - 1 && x == g->w - 1) break; // the last cell would scroll
            buf[utf8_encode(cell->cp ? cell->cp : ' ', buf)] = '\0';
            attrset(role_attr(cell->role));
            mvaddstr(y, x, buf);
        }
    attrset(A_NORMAL);
}

/* The explorer on the step's pair, in a child process that owns the terminal. */
static void explore(const lesson_step *s, const char *eval) {
    def_prog_mode();
    endwin();
    pid_t pid = fork();
    if (pid == 0) {
        execl("/proc/self/exe", "moescope", s->explore_a, s->explore_b, "--eval", eval,
              (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        while (waitpid(pid, NULL, 0) < 0 && got_signal == 0) {}
    reset_prog_mode();
    clearok(curscr, TRUE);
    refresh();
}

/* Draw the step on screen; 1 if it was computed (explorable). */
static int draw(lesson_ctx *c, grid *g, int utf8) {
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    if (g->w != cols || g->h != rows) {
        grid_free(g);
        grid_init(g, cols, rows, utf8);
    }
    pthread_mutex_lock(&c->mu);
    int i = c->want, r = c->ready[i];
    lesson_step s;
    if (r == 1) s = c->steps[i];
    char status[1200] = "";
    if (r < 0) snprintf(status, sizeof status, "step %d failed: %s", i + 1, c->error[i]);
    else snprintf(status, sizeof status, "the lesson's files: %s (kept)", lesson_dir(c->L));
    pthread_mutex_unlock(&c->mu);
    lesson_render(g, r == 1 ? &s : NULL, i, status[0] ? status : NULL);
    blit(g);
    refresh();
    return r == 1;
}

/* One key: 0 go on, 1 quit. */
static int on_key(lesson_ctx *c, int ch, int shown, const char *eval) {
    pthread_mutex_lock(&c->mu);
    int i = c->want;
    switch (ch) {
    case 'n': case ' ': case KEY_RIGHT: case '\n': case KEY_ENTER: case KEY_NPAGE:
        c->want = i + 1 < LESSON_STEPS ? i + 1 : i; break;
    case 'b': case KEY_LEFT: case KEY_BACKSPACE: case 127: case KEY_PPAGE:
        c->want = i > 0 ? i - 1 : 0; break;
    case 'g': case KEY_HOME: c->want = 0; break;
    case 'G': case KEY_END: c->want = LESSON_STEPS - 1; break;
    case 'q': case 27: pthread_mutex_unlock(&c->mu); return 1;
    }
    lesson_step s = c->steps[i];
    pthread_mutex_unlock(&c->mu);
    if (ch == 'x' && shown) explore(&s, eval);
    return 0;
}

int lesson_screen(const lesson_args *a) {
    ms_err err;
    char why[200];
    if (!terminal_usable(why, sizeof why)) {
        fprintf(stderr, "moescope: the lesson's screen needs a full-screen terminal, and %s. Run it in "
                        "a terminal emulator (e.g. TERM=xterm-256color), or print the lesson: "
                        "moescope lesson --print\n", why);
        return 1;
    }
    lesson_ctx *c = calloc(1, sizeof *c);
    c->L = lesson_open(a->a, a->b, a->e, cli_overrides(), a->dir, cli_program(), &err);
    if (!c->L) {
        fprintf(stderr, "moescope: %s\n", err.msg);
        free(c);
        return 1;
    }
    c->want = a->start;
    pthread_mutex_init(&c->mu, NULL);
    pthread_create(&c->thread, NULL, worker, c);
    setlocale(LC_ALL, "");
    int utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    initscr();
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    timeout(50); // redraw as steps finish while waiting for keys
    grid g;
    grid_init(&g, 1, 1, utf8);
    while (!got_signal) {
        int shown = draw(c, &g, utf8);
        int ch = getch();
        if (ch != ERR && on_key(c, ch, shown, a->e)) break;
    }
    endwin();
    grid_free(&g);
    pthread_mutex_lock(&c->mu);
    c->quit = 1;
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->thread, NULL);
    pthread_mutex_destroy(&c->mu);
    lesson_close(c->L);
    free(c);
    return got_signal ? 128 + got_signal : 0;
}
