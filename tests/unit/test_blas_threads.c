/* test_blas_threads.c - the process's BLAS thread count under sections entered
 * from several threads at once (blas_threads.h): a thread inside a single
 * section always finds OpenBLAS at 1 thread, whatever the others enter and
 * leave (a save-and-restore of the count fails this: one thread restores 3
 * while another is still inside its single section); a wide section gets its
 * count only while no thread is in a single one; nesting on one thread; the
 * default comes back when every section is left. */
#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>

#include "core/blas_threads.h"
#include "testlib.h"

static void test_one_thread(void) {
    blas_threads_default(3);
    CHECK(blas_threads_now() == 3 && openblas_get_num_threads() == 3, "default 3: %d", blas_threads_now());
    blas_single_enter();
    CHECK(openblas_get_num_threads() == 1, "single: %d", openblas_get_num_threads());
    blas_wide_enter(2); // nested: the innermost section decides
    CHECK(openblas_get_num_threads() == 2, "wide inside single: %d", openblas_get_num_threads());
    blas_single_enter();
    CHECK(openblas_get_num_threads() == 1, "single inside wide: %d", openblas_get_num_threads());
    blas_single_leave();
    CHECK(openblas_get_num_threads() == 2, "back in wide: %d", openblas_get_num_threads());
    blas_wide_leave();
    CHECK(openblas_get_num_threads() == 1, "back in single: %d", openblas_get_num_threads());
    blas_single_leave();
    CHECK(openblas_get_num_threads() == 3, "default again: %d", openblas_get_num_threads());
    blas_single_leave(); // unbalanced: ignored
    CHECK(openblas_get_num_threads() == 3, "an extra leave changes nothing");
}

/* another thread holds a single section while this one is wide */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
} handoff;

static void wait_stage(handoff *h, int s) {
    pthread_mutex_lock(&h->mu);
    while (h->stage < s) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void set_stage(handoff *h, int s) {
    pthread_mutex_lock(&h->mu);
    h->stage = s;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void *holder(void *arg) {
    handoff *h = arg;
    blas_single_enter();
    set_stage(h, 1);
    wait_stage(h, 2);
    blas_single_leave();
    set_stage(h, 3);
    return NULL;
}

static void test_two_threads(void) {
    handoff h = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, holder, &h) == 0, "thread");
    wait_stage(&h, 1);
    blas_wide_enter(2);
    CHECK(openblas_get_num_threads() == 1, "wide while another thread is single: 1 (%d)",
          openblas_get_num_threads());
    set_stage(&h, 2);
    wait_stage(&h, 3);
    CHECK(openblas_get_num_threads() == 2, "wide once the other left: 2 (%d)", openblas_get_num_threads());
    blas_wide_leave();
    pthread_join(t, NULL);
    CHECK(openblas_get_num_threads() == 3, "default after both: %d", openblas_get_num_threads());
}

/* many threads entering and leaving at random: every look from inside a single
 * section sees 1 */
static long bad_looks;
static pthread_mutex_t bad_mu = PTHREAD_MUTEX_INITIALIZER;

static void *churn(void *arg) {
    uint64_t s = 0x9e3779b97f4a7c15ULL * (uint64_t)(uintptr_t)arg + 1;
    long bad = 0;
    for (int it = 0; it < 1000; it++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        if (s % 3 == 0) {
            blas_wide_enter(2 + (int)(s % 2));
            blas_wide_leave();
            continue;
        }
        blas_single_enter();
        for (int k = 0; k < 8; k++) {
            bad += openblas_get_num_threads() != 1;
            sched_yield(); // let the others enter and leave meanwhile
        }
        if (s % 5 == 0) { // nested: a wide section and back
            blas_wide_enter(2);
            blas_wide_leave();
            bad += openblas_get_num_threads() != 1;
        }
        blas_single_leave();
    }
    pthread_mutex_lock(&bad_mu);
    bad_looks += bad;
    pthread_mutex_unlock(&bad_mu);
    return NULL;
}

static void test_churn(void) {
    pthread_t t[4];
    int made = 0;
    for (int i = 0; i < 4; i++) made += pthread_create(&t[made], NULL, churn, (void *)(uintptr_t)(i + 1)) == 0;
    for (int i = 0; i < made; i++) pthread_join(t[i], NULL);
    CHECK(made == 4, "4 threads");
    CHECK(bad_looks == 0, "inside a single section BLAS ran on more than 1 thread %ld times", bad_looks);
    CHECK(openblas_get_num_threads() == 3 && blas_threads_now() == 3, "default after the churn: %d",
          openblas_get_num_threads());
}

/* blas_par_for: every item once, on slots below k, BLAS at 1 thread inside, the
 * count back after; a cancel set before the start runs nothing */
typedef struct {
    atomic_int runs[64];
    atomic_int bad_slot, bad_count;
    int k;
} par_seen;

static void par_item(void *ctx, int i, int slot) {
    par_seen *s = ctx;
    atomic_fetch_add(&s->runs[i], 1);
    if (slot < 0 || slot >= s->k) atomic_fetch_add(&s->bad_slot, 1);
    if (openblas_get_num_threads() != 1) atomic_fetch_add(&s->bad_count, 1);
}

static void test_par_for(void) {
    blas_threads_default(3);
    CHECK(blas_par_threads(64) == 3 && blas_par_threads(2) == 2 && blas_par_threads(0) == 1,
          "threads for 64, 2, 0 items: %d %d %d", blas_par_threads(64), blas_par_threads(2), blas_par_threads(0));
    for (int k = 1; k <= 4; k++) {
        static par_seen s;
        memset(&s, 0, sizeof s);
        s.k = k;
        blas_par_for(64, k, par_item, &s, NULL);
        int once = 1;
        for (int i = 0; i < 64; i++) once &= atomic_load(&s.runs[i]) == 1;
        CHECK(once, "k %d: every item exactly once", k);
        CHECK(!atomic_load(&s.bad_slot) && !atomic_load(&s.bad_count), "k %d: slots %d, BLAS counts %d wrong", k,
              atomic_load(&s.bad_slot), atomic_load(&s.bad_count));
        CHECK(openblas_get_num_threads() == 3, "k %d: the count back to 3: %d", k, openblas_get_num_threads());
    }
    static par_seen s;
    memset(&s, 0, sizeof s);
    s.k = 2;
    atomic_int stop = 1;
    blas_par_for(64, 2, par_item, &s, &stop);
    int none = 1;
    for (int i = 0; i < 64; i++) none &= atomic_load(&s.runs[i]) == 0;
    CHECK(none, "cancelled before the start: no item runs");
}

int main(void) {
    test_one_thread();
    test_two_threads();
    test_churn();
    test_par_for();
    return test_summary("test_blas_threads");
}
