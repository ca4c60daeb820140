/* env.c - every environment variable moescope reads (env.h), in one table;
 * and the test suite's switches (test_hooks.h), in another. */
#include "core/env.h"
#include "core/test_hooks.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static const struct {
    const char *name, *what;
} vars[ENV_COUNT] = {
    [ENV_MAX_MEMORY] = {"MOESCOPE_MAX_MEMORY",
                        "lowers the memory limit below the machine's: a positive number of bytes, "
                        "optionally with a suffix K, M, G or T (or KB, KiB, ...: all powers of "
                        "1024), as 512M; anything else is refused at the start (exit 2)"},
    [ENV_STREAM] = {"MOESCOPE_STREAM",
                    "cost and align: 1 reads any family layout's routed experts one at a time from the "
                    "files, 0 never: align and merge then hold both layers in float32 (default: "
                    "streamed when the two layers would take more than a quarter of the memory limit, "
                    "else align and merge leave them mapped in their dtype)"},
    [ENV_LS_MEM_MB] = {"MOESCOPE_LS_MEM_MB",
                       "landscape: the megabytes of pair outputs held at once (default 1024)"},
    [ENV_PROGRESS] = {"MOESCOPE_PROGRESS",
                      "the progress line on stderr: 0 off, 1 at once (default: on a terminal, after a "
                      "quarter of a second)"},
    [ENV_TIMING] = {"MOESCOPE_TIMING", "1: the seconds of every phase on stderr at exit (landscape: its split, as -v; "
                                       "the explorer: its first screen, the UI thread's CPU to it, and q's steps)"},
    [ENV_LS_DEBUG] = {"MOESCOPE_LS_DEBUG", "set: the landscape's phase times on stderr as they end"},
    [ENV_MPI_STATS] = {"MOESCOPE_MPI_STATS",
                       "set: each moescope-mpi process prints the bytes it sent, its seconds in MPI "
                       "exchanges, the network evaluations it made and its CPU time"},
    [ENV_ASSETS] = {"MOESCOPE_ASSETS",
                    "the folder holding fonts/ for figures, looked at first (then beside the binary "
                    "and the install prefix)"},
    [ENV_SOURCE_DATE_EPOCH] = {"SOURCE_DATE_EPOCH",
                               "the date reports record, in seconds since 1970 (reproducible "
                               "reports; default: now)"},
    [ENV_TERM] = {"TERM",
                  "the terminal type: the explorer and the lesson's screen refuse one that cannot "
                  "move the cursor (unset, unknown to terminfo, dumb), saying what to do instead"},
    [ENV_NO_COLOR] = {"NO_COLOR", "set: the explorer draws without colour (no-color.org)"},
    [ENV_ESCDELAY] = {"ESCDELAY",
                      "curses' wait after Esc, in milliseconds (the explorer's default: 25)"},
    [ENV_TUI_BENCH] = {"MOESCOPE_TUI_BENCH",
                       "a file: the explorer appends each key's time to its redraw (the benchmarks)"},
    [ENV_SIMD] = {"MOESCOPE_SIMD",
                  "the vector instructions of moescope's own kernels: avx512, avx2 or plain "
                  "(default: the widest this CPU runs; a wider one than it runs is not used)"},
    [ENV_OPENBLAS_CORETYPE] = {"OPENBLAS_CORETYPE",
                               "OpenBLAS's kernel set (Haswell, SkylakeX, ...): when set, moescope "
                               "keeps it; when unset and OpenBLAS falls back to its SSE3 Prescott "
                               "kernels on a CPU with AVX2 or AVX-512, moescope runs itself again "
                               "with the kernels the CPU has"},
    [ENV_OPENBLAS_OWN] = {"MOESCOPE_OPENBLAS_OWN",
                          "1: keep OpenBLAS's own kernel choice, even its Prescott fallback"},
    [ENV_OPENBLAS_FALLBACK] = {"MOESCOPE_OPENBLAS_FALLBACK",
                               "set by moescope for the run it starts again: the kernels OpenBLAS "
                               "had taken (--version says so)"},
};

/* the test suite's switches (core/test_hooks.h): read here, listed to no user */
static const char *const hooks[HOOK_COUNT] = {
    [HOOK_STALL] = "MOESCOPE_TEST_STALL",
    [HOOK_LOAD_GATE] = "MOESCOPE_TEST_LOAD_GATE",
    [HOOK_EVAL_GATE] = "MOESCOPE_TEST_EVAL_GATE",
    [HOOK_LS_GATE] = "MOESCOPE_TEST_LS_GATE",
    [HOOK_SLICE_FLOPS] = "MOESCOPE_TEST_SLICE_FLOPS",
    [HOOK_MPI_KILL] = "MOESCOPE_MPI_TEST_KILL",
    [HOOK_FLOATS] = "MOESCOPE_TEST_FLOATS",
    [HOOK_BOOT_BOUND] = "MOESCOPE_TEST_BOOT_BOUND",
    [HOOK_BOOT_STREAM] = "MOESCOPE_TEST_BOOT_STREAM",
};

static const char *values[ENV_COUNT], *hook_values[HOOK_COUNT];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static const char *value_of(const char *name) {
    const char *s = getenv(name);
    return s && *s ? s : NULL;
}

void env_refresh(void) {
    for (int v = 0; v < ENV_COUNT; v++) values[v] = value_of(vars[v].name);
    for (int h = 0; h < HOOK_COUNT; h++) hook_values[h] = value_of(hooks[h]);
}

const char *env_get(env_var v) {
    pthread_once(&once, env_refresh);
    return v >= 0 && v < ENV_COUNT ? values[v] : NULL;
}

const char *test_hook_get(test_hook h) {
    pthread_once(&once, env_refresh);
    return h >= 0 && h < HOOK_COUNT ? hook_values[h] : NULL;
}

void test_hook_hold(test_hook h, int (*stop)(void *ctx), void *ctx) {
    const char *gate = test_hook_get(h);
    if (!gate) return;
    struct timespec ts = {0, 10 * 1000 * 1000};
    while (access(gate, F_OK) != 0 && !stop(ctx)) nanosleep(&ts, NULL);
}

const char *test_hook_name(test_hook h) { return h >= 0 && h < HOOK_COUNT ? hooks[h] : "?"; }

const char *env_name(env_var v) { return v >= 0 && v < ENV_COUNT ? vars[v].name : "?"; }
const char *env_what(env_var v) { return v >= 0 && v < ENV_COUNT ? vars[v].what : "?"; }
