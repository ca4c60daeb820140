/* progress.h - one progress line on stderr, and cancellation by Ctrl-C.
 *
 * A command announces each long phase (loading a layer, Gram matrices, weight
 * matching, writing a checkpoint, the orders of a landscape) with a total and a
 * unit, then reports how far it got. When stderr is a terminal the line
 *
 *   weight matching  3/8 slots  37%  0.21 slots/s  ETA 0:24
 *
 * is redrawn at most ten times a second; otherwise nothing is printed. Only
 * the command-line subcommands draw it (progress_install_cancel turns it on):
 * the explorer and the lesson own the terminal, and a library caller gets
 * nothing on its stderr. The line
 * appears only once a command has run for a quarter of a second (quick commands
 * stay quiet); MOESCOPE_PROGRESS=0 turns it off, =1 shows it at once (still
 * only on a terminal). Updates may come from any thread.
 *
 * Cancellation: progress_install_cancel() makes SIGINT, SIGTERM and SIGHUP end
 * the process with status 130 after removing every temporary file and
 * directory an output was being built in (cancel_register): an interrupted
 * command leaves no partial output behind, and a file it replaces stays as it
 * was. The handler only calls async-signal-safe functions (unlink, rmdir,
 * getdents64, write, _exit).
 *
 * For tests: MOESCOPE_TEST_STALL=PREFIX makes the phase whose name starts with
 * PREFIX wait for a signal when it begins (a cancel then lands mid-command,
 * with its temporaries in place, without any timing); SIGUSR1 resumes it (an
 * input changed meanwhile is then read). */
#ifndef MS_PROGRESS_H
#define MS_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>

/* Start a phase ("load B", "Gram matrices") of total units (0: unknown). Ends
 * the previous phase. unit: "MiB", "experts", ... */
void progress_begin(const char *phase, double total, const char *unit);
/* The same, but the rate and the ETA count from since (timing_now()): a phase
 * that resumes after others interrupted it (a study's orders, pair after pair). */
void progress_begin_since(const char *phase, double total, const char *unit, double since);
/* Text shown before every phase's name until changed ("layer 3/24": a command
 * that repeats its phases for each layer); NULL or "" for none. */
void progress_context(const char *text);
/* Is phase the one on the line now (begun and not ended)? */
int progress_is(const char *phase);
/* Units done so far in the phase / add k to them. */
void progress_set(double done);
void progress_add(double k);
/* End the phase: the line is erased. */
void progress_end(void);
/* Would a line be drawn at all (stderr is a terminal, not turned off)? */
int progress_enabled(void);
/* No line for the rest of the process, whatever the phase (a command's -q). */
void progress_silence(void);

/* A thread's own listener, for threads that own no terminal (the explorer's):
 * the progress calls made on that thread go to fn(ctx, phase, done, total) -
 * at each phase's begin ("" at its end) and at most every 50 ms in between -
 * instead of the line, and progress_cancelled() on that thread is nonzero once
 * *cancel is: the long loops that report progress (cost matrices, weight
 * matching) poll it and return "cancelled". fn NULL: back to the line. */
typedef void (*progress_listener)(void *ctx, const char *phase, double done, double total);
void progress_listen(progress_listener fn, void *ctx, atomic_int *cancel);
int progress_cancelled(void);
/* That flag itself (NULL when the thread has none): a library call that hands
 * its work to threads of its own passes it on to them (net_eval.c). */
atomic_int *progress_cancel_flag(void);
/* A count below the phase, for the thread's listener only (the phase and the
 * command line's line are left alone): fn(ctx, what, done, total), e.g. the
 * rows of the network evaluation in flight; sent when done is 0 or total, else
 * at most every 50 ms. Without a listener it moves the line only when the line's
 * phase is named what (a command that began that phase to show, say, the rows of
 * its network evaluation); else nothing. */
void progress_inner(const char *what, double done, double total);

/* Seconds spent per named part ("wm lap"; every progress phase is one), summed
 * and printed on stderr as "timing: WHAT SECONDS" lines at exit when the
 * environment variable MOESCOPE_TIMING is set: the benchmarks read them. */
void timing_add(const char *what, double seconds);
double timing_now(void); /* a monotonic clock, seconds */

/* The command line's setup: the handlers described above, and the progress
 * line on (the subcommands call it; the explorer never does). */
void progress_install_cancel(void);
/* Remove path (a file, or with is_dir a directory and the files in it) if the
 * process is cancelled before cancel_unregister(slot). Returns the slot, or -1
 * when the table is full or the path too long (then nothing is removed). */
int cancel_register(const char *path, int is_dir);
void cancel_unregister(int slot);
/* A fatal signal's ending (async-signal-safe): remove every registered path, end
 * the progress line, write parts[0..nparts) to stderr, _exit(status). */
void cancel_exit_now(const char *const *parts, int nparts, int status);

#endif
