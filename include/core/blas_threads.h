/* blas_threads.h - the BLAS thread count: one number for the whole process.
 *
 * OpenBLAS keeps its thread count in a global, so setting it changes it for
 * every thread of the process - also for one inside a section that asked for
 * another count. moescope runs such sections on several threads at once (the
 * TUI's workers: a landscape, the cost matrices, the diagnostics), so a
 * section that saved the count, set it and restored it could undo another
 * section's setting while that one was still running (a worker pool would then
 * share its cores with BLAS's spinning threads, or a big GEMM would run on one
 * thread). Every section therefore goes through here, and the count is
 * decided from who is inside what, never saved and restored:
 *
 *   - a thread whose innermost section is single (it runs its own threads, or
 *     its products are too small to split) holds the count at 1;
 *   - else, while some thread's innermost section is wide (one big product at
 *     a time on k threads), the largest such k;
 *   - else the default (the count at the first call, or blas_threads_default).
 *
 * Sections nest per thread and must be left on the thread that entered them.
 * The count is set only when it changes: setting it restarts OpenBLAS's
 * stopped thread pool (cli_blas_quiet), whose threads then spin. */
#ifndef MS_BLAS_THREADS_H
#define MS_BLAS_THREADS_H
#include <stdatomic.h>

void blas_single_enter(void);
void blas_single_leave(void);
void blas_wide_enter(int k);
void blas_wide_leave(void);
/* the count outside every section (e.g. 1 for reproducible sums), set now */
void blas_threads_default(int k);
/* the count in force (tests) */
int blas_threads_now(void);

/* fn(ctx, i, slot) for every i in [0, count), on up to k threads (the calling one
 * among them, slot 0..k-1 says which: per-thread buffers), each taking the next i,
 * inside a single section: every product runs whole on the thread that asks, so
 * no BLAS threads spin waiting for each other (what a busy machine punishes) and
 * each item computes the same bits on whichever thread. Items must be independent.
 * Once *cancel (NULL: never) is nonzero no item starts. k: blas_par_threads. */
typedef void (*blas_par_fn)(void *ctx, int i, int slot);
void blas_par_for(int count, int k, blas_par_fn fn, void *ctx, const atomic_int *cancel);
/* the threads for count items: the BLAS count in force (at most BLAS_PAR_MAX) */
#define BLAS_PAR_MAX 8
int blas_par_threads(int count);

#endif
