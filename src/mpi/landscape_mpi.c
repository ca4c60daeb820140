/* landscape_mpi.c - the ls_partition hooks (landscape.h) on MPI: every process
 * of the communicator computes its share of the pairs and of the order blocks;
 *   allgather    the pairs' results (hidden permutations, pair outputs Y) to
 *                every process: MPI_Allgatherv in place, one item = one pair
 *                (counts stay small integers however large the items);
 *   gather_rows  the finished rows to rank 0: MPI_Gatherv in place;
 *   gather       the per-sample losses of this process's items (the error bars),
 *                or what its orders gave the streamed error bars (their intervals,
 *                the counts below each method),
 *                to rank 0 likewise;
 *   rows_done    progress: the other processes send their row counts to rank 0
 *                (a small non-blocking message at most every 0.2 s), rank 0
 *                adds them to its own, so its bar covers every process.
 * The hooks run on the thread that called landscape_compute (MPI_THREAD_FUNNELED).
 *
 * MOESCOPE_MPI_STATS=1: each rank prints the bytes it sent, its time in the
 * exchanges and a network's evaluations it made at the end (tests/bench/bench_mpi.py).
 *
 * The progress messages end with a final one per process, sent just before
 * the gather, so rank 0 has drained every message of this landscape before the
 * next one starts (a study runs many). */
#include "core/env.h"
#include "core/test_hooks.h"
#include "mpi/landscape_mpi.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define TAG_ROWS 7101 /* progress: long[2] = {rows done, final} */

typedef struct {
    MPI_Comm comm;
    int rank, size;
    long *heard;        // (size) rank 0: the latest count from each process
    char *final;        // (size) rank 0: that process sent its final count
    long sbuf[2];       // the pending progress message (others)
    MPI_Request req;    // MPI_REQUEST_NULL when none is in flight
    double last_send;
    int exchanges;      // allgather calls so far (the test hook below)
    /* MOESCOPE_MPI_STATS: what this rank sent (its share of each exchange times the
     * P - 1 ranks that need it) and the time it spent in the exchanges, waits included */
    long long sent_pairs, sent_rows, sent_units;
    double t_mpi;
    long evals;         // a network's evaluations this rank made (ls_partition.evals)
} lsm_state;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* counts and displacements, in items, of ls_share's split of total */
static int lsm_counts(const lsm_state *st, long total, int *cnt, int *dsp, ms_err *err) {
    if (total > INT_MAX) return ms_fail(err, "MPI exchange of %ld items: more than %d", total, INT_MAX);
    for (int r = 0; r < st->size; r++) {
        long lo, hi;
        ls_share(total, r, st->size, &lo, &hi);
        cnt[r] = (int)(hi - lo);
        dsp[r] = (int)lo;
    }
    return 0;
}

static int lsm_mpi_fail(int rc, const char *what, ms_err *err) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    return ms_fail(err, "%s: %s", what, msg);
}

static int lsm_allgather(const ls_partition *p, void *buf, long total, size_t item_bytes,
                         ms_err *err) {
    lsm_state *st = p->ctx;
    // test hook: MOESCOPE_MPI_TEST_KILL=R kills rank R at its second exchange (the first
    // pair outputs, mid-run) as the kernel's out-of-memory killer would
    const char *kill_at = test_hook_get(HOOK_MPI_KILL);
    if (++st->exchanges == 2 && kill_at && atoi(kill_at) == st->rank) raise(SIGKILL);
    if (item_bytes > INT_MAX) return ms_fail(err, "MPI exchange: an item of %zu bytes", item_bytes);
    int *cnt = ms_malloc(2 * (size_t)st->size * sizeof(int)), *dsp = cnt + st->size;
    int rc = lsm_counts(st, total, cnt, dsp, err);
    if (!rc) {
        MPI_Datatype item;
        MPI_Type_contiguous((int)item_bytes, MPI_BYTE, &item);
        MPI_Type_commit(&item);
        double t0 = now_s();
        int mr = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, dsp, item, st->comm);
        st->t_mpi += now_s() - t0;
        st->sent_pairs += (long long)cnt[st->rank] * (long long)item_bytes * (st->size - 1);
        MPI_Type_free(&item);
        if (mr != MPI_SUCCESS) rc = lsm_mpi_fail(mr, "MPI_Allgatherv of the pairs", err);
    }
    free(cnt);
    return rc;
}

/* rank 0: take every progress message waiting */
static void lsm_drain(lsm_state *st) {
    for (;;) {
        int flag = 0;
        MPI_Status s;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_ROWS, st->comm, &flag, &s);
        if (!flag) return;
        long m[2];
        MPI_Recv(m, 2, MPI_LONG, s.MPI_SOURCE, TAG_ROWS, st->comm, MPI_STATUS_IGNORE);
        st->heard[s.MPI_SOURCE] = m[0];
        if (m[1]) st->final[s.MPI_SOURCE] = 1;
    }
}

static long lsm_sum(const lsm_state *st) {
    long s = 0;
    for (int r = 0; r < st->size; r++) s += st->heard[r];
    return s;
}

static long lsm_rows_done(const ls_partition *p, long local) {
    lsm_state *st = p->ctx;
    if (st->rank == 0) {
        lsm_drain(st);
        st->heard[0] = local;
        return lsm_sum(st);
    }
    double t = now_s();
    if (t - st->last_send < 0.2) return -1;
    int done = 1;
    if (st->req != MPI_REQUEST_NULL) MPI_Test(&st->req, &done, MPI_STATUS_IGNORE);
    if (!done) return -1; // the last one is still in flight: skip this count
    st->sbuf[0] = local, st->sbuf[1] = 0;
    MPI_Isend(st->sbuf, 2, MPI_LONG, 0, TAG_ROWS, st->comm, &st->req);
    st->last_send = t;
    return -1;
}

/* Rank 0 listens for the final counts of every process (showing the sum) before
 * the gather, so no message of this landscape is left over. */
static void lsm_finish_progress(lsm_state *st, long local, void (*progress)(void *, long, long),
                                void *ctx, long total) {
    if (st->rank) {
        MPI_Wait(&st->req, MPI_STATUS_IGNORE);
        long m[2] = {local, 1};
        MPI_Send(m, 2, MPI_LONG, 0, TAG_ROWS, st->comm);
        st->last_send = 0;
        return;
    }
    st->heard[0] = local;
    st->final[0] = 1;
    for (;;) {
        lsm_drain(st);
        int all = 1;
        for (int r = 0; r < st->size; r++) all &= st->final[r];
        if (progress) progress(ctx, lsm_sum(st), total);
        if (all) break;
        struct timespec ts = {0, 20 * 1000000L};
        nanosleep(&ts, NULL);
    }
    memset(st->heard, 0, (size_t)st->size * sizeof(long));
    memset(st->final, 0, (size_t)st->size);
}

static int lsm_gather_rows(const ls_partition *p, ls_row *rows, long nlocal, long total,
                           void (*progress)(void *, long, long), void *ctx, ms_err *err) {
    lsm_state *st = p->ctx;
    double t0 = now_s();
    lsm_finish_progress(st, nlocal, progress, ctx, total);
    int *cnt = ms_malloc(2 * (size_t)st->size * sizeof(int)), *dsp = cnt + st->size;
    int mine = (int)nlocal, rc = 0;
    MPI_Gather(&mine, 1, MPI_INT, cnt, 1, MPI_INT, 0, st->comm);
    if (st->rank == 0) {
        long sum = 0;
        for (int r = 0; r < st->size; r++) {
            dsp[r] = (int)sum;
            sum += cnt[r];
        }
        if (sum != total) rc = ms_fail(err, "MPI: the ranks finished %ld of %ld orders", sum, total);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, st->comm); // all go on to the gather, or none
    if (!rc) {
        MPI_Datatype row;
        MPI_Type_contiguous((int)sizeof(ls_row), MPI_BYTE, &row);
        MPI_Type_commit(&row);
        int mr = st->rank == 0
                     ? MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rows, cnt, dsp, row, 0, st->comm)
                     : MPI_Gatherv(rows, mine, row, NULL, NULL, NULL, row, 0, st->comm);
        MPI_Type_free(&row);
        if (st->rank) st->sent_rows += (long long)mine * (long long)sizeof(ls_row);
        if (mr != MPI_SUCCESS) rc = lsm_mpi_fail(mr, "MPI_Gatherv of the orders", err);
    } else if (st->rank) {
        ms_fail(err, "MPI: rank 0 found orders missing");
    }
    free(cnt);
    st->t_mpi += now_s() - t0;
    return rc ? -1 : 0;
}

/* rank 0 learns each process's [lo, lo + n) and checks they tile [0, total) in rank
 * order; then MPI_Gatherv into buf in place. One item is one order's (or one value's)
 * per-sample losses: counts stay small integers. */
static int lsm_gather(const ls_partition *p, void *buf, long lo, long nlocal, long total, size_t item_bytes,
                      ms_err *err) {
    lsm_state *st = p->ctx;
    double t0 = now_s();
    if (item_bytes > INT_MAX || total > INT_MAX)
        return ms_fail(err, "MPI gather of %ld items of %zu bytes: beyond MPI's int counts", total, item_bytes);
    int *cnt = ms_malloc(2 * (size_t)st->size * sizeof(int)), *dsp = cnt + st->size;
    long mine[2] = {lo, nlocal}, *all = ms_malloc(2 * (size_t)st->size * sizeof(long));
    MPI_Gather(mine, 2, MPI_LONG, all, 2, MPI_LONG, 0, st->comm);
    int rc = 0;
    if (st->rank == 0) {
        long next = 0;
        for (int r = 0; r < st->size && !rc; r++) {
            if (all[2 * r] != next || all[2 * r + 1] < 0)
                rc = ms_fail(err, "MPI: rank %d's per-sample losses start at item %ld, not %ld", r, all[2 * r], next);
            dsp[r] = (int)all[2 * r], cnt[r] = (int)all[2 * r + 1];
            next += all[2 * r + 1];
        }
        if (!rc && next != total) rc = ms_fail(err, "MPI: the ranks hold %ld of %ld items' per-sample losses", next, total);
    }
    MPI_Bcast(&rc, 1, MPI_INT, 0, st->comm); // all go on to the gather, or none
    if (!rc) {
        MPI_Datatype item;
        MPI_Type_contiguous((int)item_bytes, MPI_BYTE, &item);
        MPI_Type_commit(&item);
        int mr = st->rank == 0
                     ? MPI_Gatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, cnt, dsp, item, 0, st->comm)
                     : MPI_Gatherv(buf, (int)nlocal, item, NULL, NULL, NULL, item, 0, st->comm);
        MPI_Type_free(&item);
        if (st->rank) st->sent_units += (long long)nlocal * (long long)item_bytes;
        if (mr != MPI_SUCCESS) rc = lsm_mpi_fail(mr, "MPI_Gatherv of the per-sample losses", err);
    } else if (st->rank) {
        ms_fail(err, "MPI: rank 0 found per-sample losses missing");
    }
    free(cnt);
    free(all);
    st->t_mpi += now_s() - t0;
    return rc ? -1 : 0;
}

void landscape_mpi_init(ls_partition *p, MPI_Comm comm) {
    lsm_state *st = ms_calloc(1, sizeof *st);
    st->comm = comm;
    MPI_Comm_rank(comm, &st->rank);
    MPI_Comm_size(comm, &st->size);
    st->heard = ms_calloc((size_t)st->size, sizeof(long));
    st->final = ms_calloc((size_t)st->size, 1);
    st->req = MPI_REQUEST_NULL;
    memset(p, 0, sizeof *p);
    p->rank = st->rank;
    p->size = st->size;
    p->allgather = lsm_allgather;
    p->gather_rows = lsm_gather_rows;
    p->rows_done = lsm_rows_done;
    p->gather = lsm_gather;
    p->evals = &st->evals;
    p->ctx = st;
}

void landscape_mpi_free(ls_partition *p) {
    lsm_state *st = p->ctx;
    if (!st) return;
    if (st->req != MPI_REQUEST_NULL) MPI_Wait(&st->req, MPI_STATUS_IGNORE);
    if (env_get(ENV_MPI_STATS)) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        double cpu = (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
                     (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
        fprintf(stderr, "moescope-mpi rank %d of %d: sent %lld bytes (pair results %lld, rows %lld, "
                        "per-sample losses %lld); "
                        "%.3f s in MPI exchanges; %ld network evaluations; cpu %.3f s\n",
                st->rank, st->size, st->sent_pairs + st->sent_rows + st->sent_units, st->sent_pairs, st->sent_rows,
                st->sent_units,
                st->t_mpi, st->evals, cpu);
    }
    free(st->heard);
    free(st->final);
    free(st);
    p->ctx = NULL;
}
