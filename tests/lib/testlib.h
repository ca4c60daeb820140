/* testlib.h - a tiny test harness: CHECK records a pass or a failure with its
 * file:line, and test_summary prints "N passed, N failed" (read by tests/run.sh)
 * and returns the exit code. */
#ifndef MS_TESTLIB_H
#define MS_TESTLIB_H

#include <math.h>
#include <stdio.h>

static int tl_passed, tl_failed;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (cond) {                                                       \
            tl_passed++;                                                  \
        } else {                                                          \
            tl_failed++;                                                  \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                   \
            printf(__VA_ARGS__);                                          \
            printf("\n");                                                 \
        }                                                                 \
    } while (0)

/* |a-b| <= tol * max(1, |b|) */
#define CHECK_CLOSE(a, b, tol, what)                                              \
    do {                                                                          \
        double tl_a = (a), tl_b = (b);                                            \
        CHECK(fabs(tl_a - tl_b) <= (tol) * (fabs(tl_b) > 1 ? fabs(tl_b) : 1.0),  \
              "%s: %.9g vs %.9g", (what), tl_a, tl_b);                            \
    } while (0)

static inline int test_summary(const char *name) {
    printf("%s: %d passed, %d failed\n", name, tl_passed, tl_failed);
    return tl_failed ? 1 : 0;
}

/* Poll the explorer's worker until cond holds for the snapshot v, at most iters
 * polls 1 ms apart (a hang guard, not a timing test; needs explore_worker.h, time.h). */
#define EXPLORE_WAIT(g, v, iters, cond)                                                        \
    do {                                                                                       \
        for (long it_ = 0; it_ < (iters); it_++) {                                             \
            explore_poll((g), (v));                                                            \
            if (cond) break;                                                                   \
            struct timespec ts_ = {0, 1000000};                                                \
            nanosleep(&ts_, NULL);                                                             \
        }                                                                                      \
    } while (0)

#endif
