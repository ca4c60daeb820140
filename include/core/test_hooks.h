/* test_hooks.h - switches for the test suite alone, kept out of the
 * environment users see (core/env.h, whose table the manual's ENVIRONMENT
 * section is): each holds or breaks a run at a point a test must reach. Read
 * with the environment (env.c: once, again at env_refresh); the names start
 * with MOESCOPE_TEST_ or MOESCOPE_MPI_TEST_ (tests/codebase/test_env.py). */
#ifndef MS_TEST_HOOKS_H
#define MS_TEST_HOOKS_H

typedef enum {
    /* a phase name: its start says so on stderr and waits, so a cancel lands
     * mid-phase (SIGUSR1 resumes it, to read an input changed meanwhile) */
    HOOK_STALL,
    /* a file: the explorer's layer loads wait, with A read, until it exists */
    HOOK_LOAD_GATE,
    /* a file: every part of a network evaluation but its first waits until it
     * exists (or the evaluation is cancelled) */
    HOOK_EVAL_GATE,
    /* a file: every block of a layer landscape's orders but the first waits
     * until it exists (or the landscape is cancelled) */
    HOOK_LS_GATE,
    /* a number: the flops of a network evaluation's products between two cancel
     * checks (net_forward.c; small, so that a small test network splits them) */
    HOOK_SLICE_FLOPS,
    /* a rank: that moescope-mpi process kills itself at its second exchange */
    HOOK_MPI_KILL,
    /* set: a network's MoE blocks read into floats whole, never mapped (the
     * reference the mapped paths are compared with) */
    HOOK_FLOATS,
    /* a number: the per-unit losses a landscape resamples for its error bars
     * without --all-error-bars (2^25), lowered so small sets reach past it */
    HOOK_BOOT_BOUND,
    /* set: a layer landscape's error bars streamed as each order's losses come
     * wherever the stream applies, however few (never a table) */
    HOOK_BOOT_STREAM,
    HOOK_COUNT
} test_hook;

/* h's value, NULL when unset or empty */
const char *test_hook_get(test_hook h);
/* a gate hook (HOOK_*_GATE): wait until h's file exists, or stop(ctx) says
 * the work was cancelled; at once when h is unset */
void test_hook_hold(test_hook h, int (*stop)(void *ctx), void *ctx);
/* its variable's name */
const char *test_hook_name(test_hook h);

#endif
