/* progress.c - the progress line and the cancel handler (see progress.h). */
#define _GNU_SOURCE // getdents64
#include "core/env.h"
#include "core/test_hooks.h"
#include "core/progress.h"

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the line ---- */

static int cli_mode; /* progress_install_cancel ran: a subcommand, stderr is ours */

static struct {
    pthread_mutex_t mu;
    int init, enabled, immediate;
    char phase[64], unit[16];
    char context[48]; /* progress_context: "layer 3/24", before the phase */
    double total, done;
    double t_first, t_phase, t_drawn; /* first phase of the process, this phase, last draw */
} P = {.mu = PTHREAD_MUTEX_INITIALIZER};

static volatile sig_atomic_t line_shown; /* a line is on the terminal (the handler ends it) */
static void erase_locked(void);

/* this thread's listener (progress_listen), if any */
static __thread struct {
    progress_listener fn;
    void *ctx;
    atomic_int *cancel;
    char phase[64];
    double total, done, t_sent;
    double t_inner; /* progress_inner's last send */
} TL;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void init_locked(void) {
    if (P.init) return;
    P.init = 1;
    const char *env = env_get(ENV_PROGRESS);
    // only a subcommand draws: the explorer and the lesson own the terminal
    P.enabled = cli_mode && isatty(STDERR_FILENO) && !(env && !strcmp(env, "0"));
    P.immediate = env && !strcmp(env, "1");
    P.t_first = now_s();
}

int progress_enabled(void) {
    pthread_mutex_lock(&P.mu);
    init_locked();
    int e = P.enabled;
    pthread_mutex_unlock(&P.mu);
    return e;
}

void progress_silence(void) {
    pthread_mutex_lock(&P.mu);
    init_locked();
    erase_locked();
    P.enabled = 0;
    pthread_mutex_unlock(&P.mu);
}

/* "1:02:03" or "2:03" */
static void fmt_time(char *buf, size_t cap, double s) {
    if (!(s >= 0) || s > 359999) {
        snprintf(buf, cap, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else snprintf(buf, cap, "%ld:%02ld", t / 60, t % 60);
}

/* counts as they are; other values with 3 significant digits, whole from 100 up */
static const char *fmt_num(char *buf, size_t cap, double v) {
    snprintf(buf, cap, v >= 100 || v == floor(v) ? "%.0f" : v >= 10 ? "%.1f" : "%.2f", v);
    return buf;
}

static void draw_locked(double t) {
    char line[320], eta[24], a[32], b[32], r[32], ph[120];
    snprintf(ph, sizeof ph, "%s%s%s", P.context, P.context[0] ? ": " : "", P.phase);
    double el = t - P.t_phase, rate = el > 0 ? P.done / el : 0;
    int len;
    if (P.total > 0) {
        double left = rate > 0 ? (P.total - P.done) / rate : -1;
        fmt_time(eta, sizeof eta, left);
        len = snprintf(line, sizeof line, "\r%s  %s/%s %s  %3.0f%%  %s %s/s  ETA %s\033[K",
                       ph, fmt_num(a, sizeof a, P.done), fmt_num(b, sizeof b, P.total), P.unit,
                       100.0 * P.done / P.total, fmt_num(r, sizeof r, rate), P.unit, eta);
    } else {
        fmt_time(eta, sizeof eta, el);
        len = snprintf(line, sizeof line, "\r%s  %s %s  %s %s/s  %s elapsed\033[K", ph,
                       fmt_num(a, sizeof a, P.done), P.unit, fmt_num(r, sizeof r, rate), P.unit, eta);
    }
    if (len > (int)sizeof line - 1) len = (int)sizeof line - 1;
    if (write(STDERR_FILENO, line, (size_t)len) < 0) return;
    line_shown = 1;
    P.t_drawn = t;
}

/* Redraw when due: not in the first quarter second of the process (unless
 * MOESCOPE_PROGRESS=1), then at most every 0.1 s. */
static void maybe_draw_locked(int force) {
    if (!P.enabled || !P.phase[0]) return;
    double t = now_s();
    if (!P.immediate && t - P.t_first < 0.25) return;
    if (!force && line_shown && t - P.t_drawn < 0.1) return;
    draw_locked(t);
}

static void erase_locked(void) {
    if (line_shown && write(STDERR_FILENO, "\r\033[K", 4) < 0) { /* nothing to do */
    }
    line_shown = 0;
}

void progress_listen(progress_listener fn, void *ctx, atomic_int *cancel) {
    memset(&TL, 0, sizeof TL);
    TL.fn = fn;
    TL.ctx = ctx;
    TL.cancel = cancel;
}

int progress_cancelled(void) { return TL.cancel && atomic_load_explicit(TL.cancel, memory_order_relaxed); }

atomic_int *progress_cancel_flag(void) { return TL.cancel; }

void progress_inner(const char *what, double done, double total) {
    if (!TL.fn) { // the line, when its phase is this count (a command's network evaluation)
        pthread_mutex_lock(&P.mu);
        if (P.phase[0] && !strcmp(P.phase, what)) {
            // drawn at once when the total becomes known or the count completes:
            // a quick evaluation would otherwise show only its begin's "0 rows"
            int force = (P.total <= 0 && total > 0) || (total > 0 && done >= total);
            P.done = done, P.total = total;
            maybe_draw_locked(force);
        }
        pthread_mutex_unlock(&P.mu);
        return;
    }
    double t = now_s();
    if (done > 0 && done < total && t - TL.t_inner < 0.05) return;
    TL.t_inner = t;
    TL.fn(TL.ctx, what, done, total);
}

/* the listener's update: forced at a phase's begin and end, else every 50 ms */
static void tl_send(int force) {
    double t = now_s();
    if (!force && t - TL.t_sent < 0.05) return;
    TL.t_sent = t;
    TL.fn(TL.ctx, TL.phase, TL.done, TL.total);
}

/* The tests' stall point: wait here until SIGUSR1 resumes the phase (after the
 * test changed an input) or another signal ends the process. Polled: SIGUSR1 may
 * be delivered to any thread. */
static volatile sig_atomic_t stall_resumed;
static void on_resume(int sig) { (void)sig, stall_resumed = 1; }

static void stall_here(const char *phase) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_resume;
    sigemptyset(&sa.sa_mask);
    stall_resumed = 0;
    sigaction(SIGUSR1, &sa, NULL);
    // said on stderr once SIGUSR1 is caught, so a test knows it may send it
    fprintf(stderr, "moescope: test stall: phase '%s' waits for SIGUSR1\n", phase);
    struct timespec ts = {0, 10 * 1000 * 1000};
    while (!stall_resumed) nanosleep(&ts, NULL);
}

static void begin_at(const char *phase, double total, const char *unit, double since);

void progress_begin(const char *phase, double total, const char *unit) {
    begin_at(phase, total, unit, -1);
}

void progress_begin_since(const char *phase, double total, const char *unit, double since) {
    begin_at(phase, total, unit, since);
}

void progress_context(const char *text) {
    pthread_mutex_lock(&P.mu);
    snprintf(P.context, sizeof P.context, "%s", text ? text : "");
    pthread_mutex_unlock(&P.mu);
}

int progress_is(const char *phase) {
    if (TL.fn) return !strcmp(TL.phase, phase);
    pthread_mutex_lock(&P.mu);
    int is = P.phase[0] && !strcmp(P.phase, phase);
    pthread_mutex_unlock(&P.mu);
    return is;
}

static void begin_at(const char *phase, double total, const char *unit, double since) {
    // the tests' stall point, so a cancel (or a change to an input) lands mid-phase
    const char *stall = test_hook_get(HOOK_STALL);
    if (stall && *stall && phase && !strncmp(phase, stall, strlen(stall))) stall_here(phase);
    if (TL.fn) {
        snprintf(TL.phase, sizeof TL.phase, "%s", phase ? phase : "");
        TL.total = total;
        TL.done = 0;
        tl_send(1);
        return;
    }
    pthread_mutex_lock(&P.mu);
    init_locked();
    snprintf(P.phase, sizeof P.phase, "%s", phase ? phase : "");
    snprintf(P.unit, sizeof P.unit, "%s", unit ? unit : "");
    P.total = total;
    P.done = 0;
    P.t_phase = since >= 0 ? since : now_s();
    maybe_draw_locked(1);
    pthread_mutex_unlock(&P.mu);
}

void progress_set(double done) {
    if (TL.fn) {
        TL.done = done;
        tl_send(0);
        return;
    }
    pthread_mutex_lock(&P.mu);
    P.done = done;
    maybe_draw_locked(0);
    pthread_mutex_unlock(&P.mu);
}

void progress_add(double k) {
    if (TL.fn) {
        TL.done += k;
        tl_send(0);
        return;
    }
    pthread_mutex_lock(&P.mu);
    P.done += k;
    maybe_draw_locked(0);
    pthread_mutex_unlock(&P.mu);
}

void progress_end(void) {
    if (TL.fn) {
        TL.phase[0] = 0;
        tl_send(1);
        return;
    }
    pthread_mutex_lock(&P.mu);
    erase_locked();
    char phase[64];
    snprintf(phase, sizeof phase, "%s", P.phase);
    double el = now_s() - P.t_phase;
    P.phase[0] = 0;
    pthread_mutex_unlock(&P.mu);
    if (phase[0]) timing_add(phase, el);
}

/* ---- timing (MOESCOPE_TIMING) ---- */

enum { NTIMES = 32 };
static struct {
    char what[64];
    double s;
} times[NTIMES];
static int ntimes;
static pthread_mutex_t times_mu = PTHREAD_MUTEX_INITIALIZER;

double timing_now(void) { return now_s(); }

static void timing_report(void) {
    for (int i = 0; i < ntimes; i++) fprintf(stderr, "timing: %s %.3f\n", times[i].what, times[i].s);
}

void timing_add(const char *what, double seconds) {
    static int on = -1;
    if (on < 0) {
        const char *env = env_get(ENV_TIMING);
        on = env && strcmp(env, "0");
        if (on) atexit(timing_report);
    }
    if (!on) return;
    pthread_mutex_lock(&times_mu);
    int i = 0;
    while (i < ntimes && strcmp(times[i].what, what)) i++;
    if (i == ntimes && ntimes < NTIMES) snprintf(times[ntimes++].what, sizeof times[0].what, "%s", what);
    if (i < ntimes) times[i].s += seconds;
    pthread_mutex_unlock(&times_mu);
}

/* ---- cancellation ---- */

enum { NSLOTS = 64, SLOT_FREE = 0, SLOT_BUSY, SLOT_FILE, SLOT_DIR };
static struct {
    atomic_int state;
    char path[4096];
} slots[NSLOTS];

int cancel_register(const char *path, int is_dir) {
    size_t len = strlen(path);
    if (len >= sizeof slots[0].path) return -1;
    for (int i = 0; i < NSLOTS; i++) {
        int expect = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expect, SLOT_BUSY)) continue;
        memcpy(slots[i].path, path, len + 1);
        atomic_store(&slots[i].state, is_dir ? SLOT_DIR : SLOT_FILE); // published complete
        return i;
    }
    return -1;
}

void cancel_unregister(int slot) {
    if (slot >= 0 && slot < NSLOTS) atomic_store(&slots[slot].state, SLOT_FREE);
}

/* The files directly inside dir, then dir (async-signal-safe calls only). */
/* dir (relative to the directory at) and what it holds, depth levels of directories
 * down (a run's directory of steps holds a step's folder of shards): getdents64,
 * unlinkat and close only. A symlink is unlinked, never followed. */
static void remove_dir_at(int at, const char *dir, int depth) {
    int fd = openat(at, dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096] __attribute__((aligned(8)));
        ssize_t got;
        while ((got = getdents64(fd, buf, sizeof buf)) > 0) {
            for (ssize_t off = 0; off < got;) {
                struct dirent64 *e = (struct dirent64 *)(void *)(buf + off);
                off += e->d_reclen;
                if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
                if (unlinkat(fd, e->d_name, 0) && depth > 0) remove_dir_at(fd, e->d_name, depth - 1);
            }
        }
        close(fd);
    }
    unlinkat(at, dir, AT_REMOVEDIR);
}

static void remove_dir_now(const char *dir) { remove_dir_at(AT_FDCWD, dir, 1); }

void cancel_exit_now(const char *const *parts, int nparts, int status) {
    for (int pass = 0; pass < 2; pass++) // files first: some live in a registered directory
        for (int i = 0; i < NSLOTS; i++) {
            int s = atomic_load(&slots[i].state);
            if (pass == 0 && s == SLOT_FILE) unlink(slots[i].path);
            if (pass == 1 && s == SLOT_DIR) remove_dir_now(slots[i].path);
        }
    if (line_shown && write(STDERR_FILENO, "\r\033[K", 4) < 0) _exit(status);
    for (int i = 0; i < nparts; i++)
        if (write(STDERR_FILENO, parts[i], strlen(parts[i])) < 0) break;
    _exit(status);
}

static void on_cancel(int sig) {
    static const char *const msg[] = {"moescope: interrupted; unfinished outputs removed\n"};
    cancel_exit_now(msg, 1, 128 + sig);
}

void progress_install_cancel(void) {
    cli_mode = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_cancel;
    sigfillset(&sa.sa_mask); // one handler at a time, never re-entered
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}
