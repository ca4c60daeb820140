/* blas_threads.c - the process's BLAS thread count, decided under one lock from
 * every thread's innermost section (blas_threads.h says why). */
#include "core/blas_threads.h"

#include <cblas.h>
#include <pthread.h>

#define BT_NEST 16  /* sections deeper than this on one thread keep the 16th's wish */
#define BT_MAX_K 64 /* wide sections ask for at most this many threads */

static struct {
    pthread_mutex_t mu;
    int now;                /* the count set, -1 before the first call */
    int dflt;               /* outside every section; 0: the count found at the first call */
    long singles;           /* threads whose innermost section is single */
    long wides[BT_MAX_K + 1]; /* [k]: threads whose innermost section is wide on k */
} B = {.mu = PTHREAD_MUTEX_INITIALIZER, .now = -1};

static __thread int t_depth;
static __thread int t_mode[BT_NEST]; /* 0 single, k > 0 wide on k threads */

static void count_mode(int mode, long delta) {
    if (mode == 0) B.singles += delta;
    else B.wides[mode] += delta;
}

/* set the count the sections ask for, if it is not the one in force (B.mu held) */
static void apply(void) {
    if (B.now < 0) B.now = openblas_get_num_threads();
    if (B.dflt <= 0) B.dflt = B.now;
    int want = B.dflt;
    if (B.singles > 0) {
        want = 1;
    } else {
        for (int k = BT_MAX_K; k >= 1; k--)
            if (B.wides[k] > 0) {
                want = k;
                break;
            }
    }
    if (want != B.now) {
        openblas_set_num_threads(want);
        B.now = want;
    }
}

static void enter(int mode) {
    pthread_mutex_lock(&B.mu);
    if (t_depth < BT_NEST) {
        if (t_depth) count_mode(t_mode[t_depth - 1], -1);
        t_mode[t_depth] = mode;
        count_mode(mode, 1);
    }
    t_depth++;
    apply();
    pthread_mutex_unlock(&B.mu);
}

static void leave(void) {
    pthread_mutex_lock(&B.mu);
    if (t_depth > 0) {
        t_depth--;
        if (t_depth < BT_NEST) {
            count_mode(t_mode[t_depth], -1);
            if (t_depth) count_mode(t_mode[t_depth - 1], 1);
        }
        apply();
    }
    pthread_mutex_unlock(&B.mu);
}

void blas_single_enter(void) { enter(0); }
void blas_single_leave(void) { leave(); }

void blas_wide_enter(int k) { enter(k < 1 ? 1 : k > BT_MAX_K ? BT_MAX_K : k); }
void blas_wide_leave(void) { leave(); }

void blas_threads_default(int k) {
    pthread_mutex_lock(&B.mu);
    B.dflt = k < 1 ? 1 : k;
    apply();
    pthread_mutex_unlock(&B.mu);
}

int blas_threads_now(void) {
    pthread_mutex_lock(&B.mu);
    if (B.now < 0) B.now = openblas_get_num_threads();
    int k = B.now;
    pthread_mutex_unlock(&B.mu);
    return k;
}

int blas_par_threads(int count) {
    int k = blas_threads_now();
    if (k > BLAS_PAR_MAX) k = BLAS_PAR_MAX;
    if (k > count) k = count;
    return k < 1 ? 1 : k;
}

typedef struct {
    blas_par_fn fn;
    void *ctx;
    const atomic_int *cancel;
    int count;
    atomic_int next;
} par_job;

typedef struct {
    par_job *j;
    int slot;
} par_thread;

static void *par_worker(void *arg) {
    par_thread *me = arg;
    par_job *j = me->j;
    blas_single_enter();
    for (;;) {
        if (j->cancel && atomic_load(j->cancel)) break;
        int i = atomic_fetch_add(&j->next, 1);
        if (i >= j->count) break;
        j->fn(j->ctx, i, me->slot);
    }
    blas_single_leave();
    return NULL;
}

void blas_par_for(int count, int k, blas_par_fn fn, void *ctx, const atomic_int *cancel) {
    par_job j = {.fn = fn, .ctx = ctx, .cancel = cancel, .count = count};
    atomic_init(&j.next, 0);
    k = k < 1 ? 1 : k > BLAS_PAR_MAX ? BLAS_PAR_MAX : k;
    if (k > count) k = count;
    pthread_t th[BLAS_PAR_MAX];
    par_thread me[BLAS_PAR_MAX];
    int started = 0;
    for (int t = 0; t < k; t++) me[t] = (par_thread){&j, t};
    for (int t = 1; t < k; t++) // a thread that fails to start leaves its items to the others
        if (pthread_create(&th[started], NULL, par_worker, &me[t]) == 0) started++;
    par_worker(&me[0]);
    for (int t = 0; t < started; t++) pthread_join(th[t], NULL);
}
