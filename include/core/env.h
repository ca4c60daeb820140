/* env.h - the environment variables moescope reads: each named once, with what
 * it does, in env.c's table (the manual's ENVIRONMENT section, assets/moescope.1,
 * is checked against it), and read once: the first env_get takes the values of
 * them all. */
#ifndef MS_ENV_H
#define MS_ENV_H

typedef enum {
    ENV_MAX_MEMORY,
    ENV_STREAM,
    ENV_LS_MEM_MB,
    ENV_PROGRESS,
    ENV_TIMING,
    ENV_LS_DEBUG,
    ENV_MPI_STATS,
    ENV_ASSETS,
    ENV_SOURCE_DATE_EPOCH,
    ENV_TERM,
    ENV_NO_COLOR,
    ENV_ESCDELAY,
    ENV_TUI_BENCH,
    ENV_SIMD,
    ENV_OPENBLAS_CORETYPE,
    ENV_OPENBLAS_OWN,
    ENV_OPENBLAS_FALLBACK,
    ENV_COUNT
} env_var;

/* v's value, NULL when unset or empty. */
const char *env_get(env_var v);
/* Its name ("MOESCOPE_STREAM") and what it does, in a sentence. */
const char *env_name(env_var v);
const char *env_what(env_var v);
/* Read them all again (and the test hooks, core/test_hooks.h): for a test that
 * sets one in its own process (setenv) before the code under test reads it. Not
 * while other threads read them. */
void env_refresh(void);

#endif
