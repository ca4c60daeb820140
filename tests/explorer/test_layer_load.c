/* test_layer_load.c - the explorer's layer switch off the UI thread
 * (ui/layer_load.h), on small checkpoints written here: a load ends with the
 * pair moe_load gives (bit for bit), a layer missing in B fails naming B's
 * file and hands nothing over, a second request while one loads replaces it,
 * the shown layer cancels it, cancelled loads stop and are reaped even while
 * MOESCOPE_TEST_LOAD_GATE holds them, and layer_switch_free joins a load under
 * way, and a replaced worker stops on a thread of its own. Every wait polls the state (with a generous deadline as a hang guard);
 * nothing is timed. And moe_load and the diagnostics stop at a listener's
 * cancel (progress.h). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analysis/diagnose.h"
#include "core/env.h"
#include "layer_load.h"
#include "core/progress.h"
#include "io/model_io.h"
#include "testlib.h"

static void make_model(moe_model *m, const char *layer, unsigned seed) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = 4, c.d = 8, c.h = 6, c.k = 2;
    c.router = ROUTER_TOPK;
    c.act = ACT_RELU;
    moe_alloc(m, &c);
    srand(seed);
    for (size_t i = 0; i < m->nparams; i++) m->mem[i] = (float)rand() / RAND_MAX - 0.5f;
    m->layer = ms_strdup(layer);
}

static void write_model(const char *path, const char *layer, unsigned seed) {
    moe_model m;
    ms_err err;
    make_model(&m, layer, seed);
    CHECK(moe_save(&m, path, &err) == 0, "write %s: %s", path, err.msg);
    moe_free(&m);
}

static double clock_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nap(void) {
    struct timespec ts = {0, 2 * 1000 * 1000};
    nanosleep(&ts, NULL);
}

/* poll until the current load is no longer running (hang guard: 300 s) */
static void wait_end(layer_switch *s, layer_load_status *st) {
    double end = clock_s() + 300;
    do {
        layer_switch_poll(s, st);
        if (st->state != LL_RUNNING) return;
        nap();
    } while (clock_s() < end);
}

static int same_model(const moe_model *a, const moe_model *b) {
    return a->nparams == b->nparams && !memcmp(a->mem, b->mem, a->nparams * sizeof(float)) &&
           a->cfg.n == b->cfg.n && a->cfg.d == b->cfg.d && a->cfg.h == b->cfg.h;
}

static void test_load_and_fail(const char *pa, const char *pb, const char *pother) {
    layer_switch s;
    layer_load_status st;
    layer_switch_init(&s, pa, pb);
    layer_switch_poll(&s, &st);
    CHECK(st.state == LL_NONE && st.index == -1 && !layer_switch_live(&s), "idle at first");
    CHECK(layer_switch_request(&s, "moe", 1, 1) == LS_SHOWN, "the shown layer, nothing loading: nothing to do");
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_STARTED && layer_switch_live(&s) == 1, "a load starts");
    wait_end(&s, &st);
    CHECK(st.state == LL_DONE && st.index == 1 && st.frac == 1, "done (state %d, frac %g)", st.state, st.frac);
    moe_model A2, B2, A, B;
    ms_err err;
    CHECK(layer_switch_take(&s, &A2, &B2) == 0 && !layer_switch_live(&s), "taken");
    CHECK(!moe_load(&A, pa, "moe", NULL, &err) && !moe_load(&B, pb, "moe", NULL, &err), "moe_load: %s", err.msg);
    CHECK(same_model(&A2, &A) && same_model(&B2, &B), "the loaded pair is moe_load's, bit for bit");
    moe_free(&A), moe_free(&B), moe_free(&A2), moe_free(&B2);
    layer_switch_poll(&s, &st);
    CHECK(st.state == LL_NONE, "nothing current after the take");
    layer_switch_free(&s);

    /* B lacks the layer: an error naming B, the models stay the caller's */
    layer_switch_init(&s, pa, pother);
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_STARTED, "a load of a layer B lacks");
    wait_end(&s, &st);
    CHECK(st.state == LL_FAILED && strstr(st.error, pother), "failed naming B: %s", st.error);
    memset(&A2, 0, sizeof A2);
    CHECK(layer_switch_take(&s, &A2, &B2) == -1 && A2.mem == NULL && !layer_switch_live(&s),
          "a failed load hands nothing over and is forgotten");
    layer_switch_free(&s);
}

/* with the gate closed a load holds after A: requests meanwhile */
static void test_replace_cancel(const char *dir, const char *pa, const char *pb) {
    char gate[600];
    snprintf(gate, sizeof gate, "%s/gate", dir);
    setenv("MOESCOPE_TEST_LOAD_GATE", gate, 1);
    env_refresh();
    layer_switch s;
    layer_load_status st;
    layer_switch_init(&s, pa, pb);
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_STARTED, "load 1");
    double end = clock_s() + 300;
    do layer_switch_poll(&s, &st), nap();
    while (st.frac < 0.5 && st.state == LL_RUNNING && clock_s() < end);
    CHECK(st.state == LL_RUNNING && st.frac == 0.5 && st.index == 1, "held at the gate after A: %d %g", st.state, st.frac);
    CHECK(strstr(st.phase, "load ") == st.phase, "the phase names the file read: %s", st.phase);
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_ALREADY, "the same layer again: already loading");
    CHECK(layer_switch_request(&s, "moe", 2, 0) == LS_REPLACED && layer_switch_live(&s) == 2, "another: replaces");
    layer_switch_poll(&s, &st);
    CHECK(st.index == 2, "the current load is the new one (%d)", st.index);
    CHECK(layer_switch_request(&s, "moe", 0, 0) == LS_CANCELLED, "the shown layer: cancels");
    layer_switch_poll(&s, &st);
    CHECK(st.state == LL_NONE, "nothing current after the cancel");
    end = clock_s() + 300;
    while (layer_switch_live(&s) && clock_s() < end) layer_switch_poll(&s, &st), nap();
    CHECK(!layer_switch_live(&s), "cancelled loads stop at the closed gate and are reaped");
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_STARTED, "load 1 again");
    FILE *f = fopen(gate, "w");
    CHECK(f != NULL, "open the gate");
    if (f) fclose(f);
    wait_end(&s, &st);
    moe_model A2, B2;
    CHECK(st.state == LL_DONE && layer_switch_take(&s, &A2, &B2) == 0, "the gate open: done");
    moe_free(&A2), moe_free(&B2);
    /* quit while loads run: free cancels and joins them (ASan: nothing leaks) */
    unlink(gate);
    CHECK(layer_switch_request(&s, "moe", 1, 0) == LS_STARTED, "a load to quit under");
    CHECK(layer_switch_request(&s, "moe", 2, 0) == LS_REPLACED, "and a retired one");
    layer_switch_free(&s);
    CHECK(!layer_switch_live(&s), "free: nothing left");
    unsetenv("MOESCOPE_TEST_LOAD_GATE");
    env_refresh();
}

/* a worker running on a pair, its models on the heap as the explorer holds them */
static explore_worker *busy_worker(const char *pa, const char *pb, moe_model **A, moe_model **B) {
    ms_err err;
    *A = ms_calloc(1, sizeof(moe_model));
    *B = ms_calloc(1, sizeof(moe_model));
    CHECK(!moe_load(*A, pa, "moe", NULL, &err) && !moe_load(*B, pb, "moe", NULL, &err), "load: %s", err.msg);
    explore_worker *g = explore_start(*A, *B, NULL, &err);
    CHECK(g != NULL, "worker: %s", err.msg);
    explore_request q;
    memset(&q, 0, sizeof q);
    q.order_stage = q.wm_stage = q.center = 1;
    q.method = COST_EXPERT;
    q.T = 5;
    explore_submit(g, &q);
    explore_request_diag(g, COST_EXPERT, 1);
    return g;
}

/* a replaced worker stops and frees its models on a thread; free joins it */
static void test_retire_worker(const char *pa, const char *pb) {
    layer_switch s;
    layer_switch_init(&s, pa, pb);
    moe_model *A, *B;
    explore_worker *g = busy_worker(pa, pb, &A, &B);
    layer_switch_retire_worker(&s, g, A, B);
    CHECK(layer_switch_live(&s) == 1, "the retired worker counts until reaped");
    layer_load_status st;
    double end = clock_s() + 300;
    while (layer_switch_live(&s) && clock_s() < end) layer_switch_poll(&s, &st), nap();
    CHECK(!layer_switch_live(&s) && st.state == LL_NONE, "the retired worker stopped and was reaped");
    g = busy_worker(pa, pb, &A, &B);
    layer_switch_retire_worker(&s, g, A, B);
    layer_switch_free(&s); /* quit right away: joined (ASan: its models freed) */
    CHECK(!layer_switch_live(&s), "free joins a retired worker");
}

static int calls;
static void count(void *ctx, const char *phase, double done, double total) { calls++; }

/* moe_load stops at a listener's cancel instead of reading on */
static void test_moe_load_cancel(const char *pa) {
    atomic_int cancel = 1;
    progress_listen(count, NULL, &cancel);
    moe_model m;
    ms_err err;
    int rc = moe_load(&m, pa, "moe", NULL, &err);
    progress_listen(NULL, NULL, NULL);
    CHECK(rc == -1 && strstr(err.msg, "cancelled") && strstr(err.msg, pa), "cancelled load: %d %s", rc, err.msg);
    CHECK(calls > 0, "the listener heard the load begin");
}

/* the diagnostics stop at a listener's cancel too (explore_stop sets it):
 * the expert distances are n(n-1)/2 weight matchings */
static void test_diag_cancel(const char *pa, const char *pb) {
    moe_model A, B;
    ms_err err;
    CHECK(!moe_load(&A, pa, "moe", NULL, &err) && !moe_load(&B, pb, "moe", NULL, &err), "load: %s", err.msg);
    diag_opts o;
    diag_opts_default(&o);
    o.landscape = 0;
    dg_list l;
    memset(&l, 0, sizeof l);
    CHECK(diag_findings(&A, &B, NULL, &o, &l, &err) == 0, "diagnostics uncancelled: %s", err.msg);
    dg_list_free(&l);
    atomic_int cancel = 1;
    progress_listen(count, NULL, &cancel);
    memset(&l, 0, sizeof l);
    int rc = diag_findings(&A, &B, NULL, &o, &l, &err);
    progress_listen(NULL, NULL, NULL);
    CHECK(rc == -1 && strstr(err.msg, "cancelled"), "cancelled diagnostics: %d %s", rc, err.msg);
    dg_list_free(&l);
    moe_free(&A);
    moe_free(&B);
}

int main(void) {
    char dir[] = "/tmp/moescope-layerload-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL: temp dir\n");
        return 1;
    }
    char pa[600], pb[600], po[600];
    snprintf(pa, sizeof pa, "%s/a.safetensors", dir);
    snprintf(pb, sizeof pb, "%s/b.safetensors", dir);
    snprintf(po, sizeof po, "%s/other.safetensors", dir);
    write_model(pa, "moe", 1);
    write_model(pb, "moe", 2);
    write_model(po, "other", 3);
    test_load_and_fail(pa, pb, po);
    test_replace_cancel(dir, pa, pb);
    test_retire_worker(pa, pb);
    test_moe_load_cancel(pa);
    test_diag_cancel(pa, pb);
    unlink(pa), unlink(pb), unlink(po);
    rmdir(dir);
    return test_summary("test_layer_load");
}
