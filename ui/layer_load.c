/* layer_load.c - see layer_load.h. */
#include "layer_load.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ms_limits.h"
#include "core/test_hooks.h"
#include "core/progress.h"
#include "io/model_io.h"

struct layer_load {
    pthread_t th;
    int started;            /* th runs (join it) */
    atomic_int cancel;      /* progress_listen's flag: moe_load stops at the next expert */
    atomic_int finished;    /* the thread has published its outcome */
    char *pa, *pb, *layer;  /* owned */
    family_overrides fo;    /* how to read them (layer_switch.fo, copied) */
    int index;
    pthread_mutex_t mu;     /* guards what follows */
    int which;              /* 0 reading A, 1 reading B */
    int state;              /* LL_RUNNING, LL_DONE, LL_FAILED */
    double frac;
    char phase[96];
    char error[1024];
    moe_model A, B;         /* LL_DONE, until taken */
    int have;
};

/* progress.h's listener on the loader thread: moe_load's phases as a fraction of both files */
static void on_progress(void *ctx, const char *phase, double done, double total) {
    layer_load *l = ctx;
    double f = total > 0 ? done / total : 0;
    if (f < 0) f = 0;
    if (f > 1) f = 1;
    pthread_mutex_lock(&l->mu);
    if (phase[0]) snprintf(l->phase, sizeof l->phase, "%s", phase);
    l->frac = 0.5 * (l->which + f);
    pthread_mutex_unlock(&l->mu);
}

/* MOESCOPE_TEST_LOAD_GATE (layer_load.h): wait for the file or a cancel */
static int gate_stop(void *l) { return atomic_load(&((layer_load *)l)->cancel); }
static void test_gate(layer_load *l) { test_hook_hold(HOOK_LOAD_GATE, gate_stop, l); }

static void *load_main(void *arg) {
    layer_load *l = arg;
    ms_err err;
    err.msg[0] = 0;
    moe_model A, B;
    memset(&A, 0, sizeof A);
    memset(&B, 0, sizeof B);
    progress_listen(on_progress, l, &l->cancel);
    int rc = moe_load(&A, l->pa, l->layer, &l->fo, &err);
    if (!rc) {
        pthread_mutex_lock(&l->mu);
        l->which = 1;
        l->frac = 0.5;
        pthread_mutex_unlock(&l->mu);
        test_gate(l);
        rc = atomic_load(&l->cancel) ? ms_fail(&err, "cancelled") : moe_load(&B, l->pb, l->layer, &l->fo, &err);
        if (rc) moe_free(&A); /* moe_load frees its own model on failure */
    }
    if (!rc && (moe_check_compatible(&A, &B, &err) ||
                ms_limits_check(&A, &B, NULL, MS_USE_WM | MS_USE_COST | MS_USE_DIAG, &err))) {
        moe_free(&A);
        moe_free(&B);
        rc = -1;
    }
    progress_listen(NULL, NULL, NULL);
    pthread_mutex_lock(&l->mu);
    if (rc) {
        l->state = LL_FAILED;
        snprintf(l->error, sizeof l->error, "%s", err.msg[0] ? err.msg : "cannot load the layer");
    } else {
        l->A = A;
        l->B = B;
        l->have = 1;
        l->frac = 1;
        l->state = LL_DONE;
    }
    pthread_mutex_unlock(&l->mu);
    atomic_store(&l->finished, 1);
    return NULL;
}

static layer_load *load_start(const layer_switch *s, const char *layer, int index) {
    static const family_overrides none = FAMILY_OVERRIDES_NONE;
    const char *pa = s->pa, *pb = s->pb;
    layer_load *l = ms_calloc(1, sizeof *l);
    pthread_mutex_init(&l->mu, NULL);
    l->fo = s->fo ? *s->fo : none;
    l->pa = ms_strdup(pa);
    l->pb = ms_strdup(pb);
    l->layer = ms_strdup(layer);
    l->index = index;
    l->state = LL_RUNNING;
    if (pthread_create(&l->th, NULL, load_main, l)) {
        l->state = LL_FAILED;
        snprintf(l->error, sizeof l->error, "cannot start a thread to load layer %.200s", layer);
        atomic_store(&l->finished, 1);
    } else {
        l->started = 1;
    }
    return l;
}

static void load_free(layer_load *l) {
    if (!l) return;
    atomic_store(&l->cancel, 1);
    if (l->started) pthread_join(l->th, NULL);
    if (l->have) {
        moe_free(&l->A);
        moe_free(&l->B);
    }
    pthread_mutex_destroy(&l->mu);
    free(l->pa);
    free(l->pb);
    free(l->layer);
    free(l);
}

struct old_worker {
    pthread_t th;
    atomic_int done;
    explore_worker *g;
    moe_model *A, *B;
};

static void old_free_models(old_worker *w) {
    moe_free(w->A);
    moe_free(w->B);
    free(w->A);
    free(w->B);
}

static void *old_main(void *arg) {
    old_worker *w = arg;
    explore_stop(w->g);
    old_free_models(w);
    atomic_store(&w->done, 1);
    return NULL;
}

void layer_switch_retire_worker(layer_switch *s, explore_worker *g, moe_model *A, moe_model *B) {
    old_worker *w = ms_calloc(1, sizeof *w);
    w->g = g;
    w->A = A;
    w->B = B;
    if (s->nold == LAYER_SWITCH_RETIRED || pthread_create(&w->th, NULL, old_main, w)) {
        explore_stop(g); /* no room or no thread: here, as before */
        old_free_models(w);
        free(w);
        return;
    }
    s->old[s->nold++] = w;
}

/* join the retired workers that have stopped (done: all of them) */
static void reap_old(layer_switch *s, int all) {
    int k = 0;
    for (int i = 0; i < s->nold; i++) {
        old_worker *w = s->old[i];
        if (all || atomic_load(&w->done)) {
            pthread_join(w->th, NULL);
            free(w);
        } else {
            s->old[k++] = w;
        }
    }
    s->nold = k;
}

void layer_switch_init(layer_switch *s, const char *pa, const char *pb) {
    memset(s, 0, sizeof *s);
    s->pa = pa;
    s->pb = pb;
}

/* free the retired loads that have stopped (their join returns at once) */
static void reap(layer_switch *s) {
    int k = 0;
    for (int i = 0; i < s->nretired; i++) {
        if (atomic_load(&s->retired[i]->finished)) load_free(s->retired[i]);
        else s->retired[k++] = s->retired[i];
    }
    s->nretired = k;
}

/* cancel the current load and let it stop on its own; 0, or -1 when the retired are full */
static int retire(layer_switch *s) {
    if (s->nretired == LAYER_SWITCH_RETIRED) return -1;
    atomic_store(&s->cur->cancel, 1);
    s->retired[s->nretired++] = s->cur;
    s->cur = NULL;
    return 0;
}

int layer_switch_request(layer_switch *s, const char *layer, int k, int shown) {
    reap(s);
    if (s->cur && s->cur->index == k) return LS_ALREADY;
    if (k == shown) {
        if (!s->cur) return LS_SHOWN;
        return retire(s) ? LS_REFUSED : LS_CANCELLED;
    }
    int replacing = s->cur != NULL;
    if (replacing && retire(s)) return LS_REFUSED;
    s->cur = load_start(s, layer, k);
    return replacing ? LS_REPLACED : LS_STARTED;
}

void layer_switch_poll(layer_switch *s, layer_load_status *st) {
    reap(s);
    reap_old(s, 0);
    memset(st, 0, sizeof *st);
    st->index = -1;
    layer_load *l = s->cur;
    if (!l) return;
    pthread_mutex_lock(&l->mu);
    st->state = l->state;
    st->index = l->index;
    st->frac = l->frac;
    snprintf(st->phase, sizeof st->phase, "%s", l->phase);
    snprintf(st->error, sizeof st->error, "%s", l->error);
    pthread_mutex_unlock(&l->mu);
}

int layer_switch_take(layer_switch *s, moe_model *A, moe_model *B) {
    layer_load *l = s->cur;
    if (!l) return -1;
    int rc = -1;
    pthread_mutex_lock(&l->mu);
    if (l->state == LL_RUNNING) { /* not yet: the thread has not published */
        pthread_mutex_unlock(&l->mu);
        return -1;
    }
    if (l->have) {
        *A = l->A;
        *B = l->B;
        l->have = 0;
        rc = 0;
    }
    pthread_mutex_unlock(&l->mu);
    s->cur = NULL;
    load_free(l);
    return rc;
}

void layer_switch_free(layer_switch *s) {
    if (s->cur) atomic_store(&s->cur->cancel, 1);
    for (int i = 0; i < s->nretired; i++) atomic_store(&s->retired[i]->cancel, 1);
    load_free(s->cur);
    for (int i = 0; i < s->nretired; i++) load_free(s->retired[i]);
    s->cur = NULL;
    s->nretired = 0;
    reap_old(s, 1);
}

int layer_switch_live(const layer_switch *s) { return (s->cur != NULL) + s->nretired + s->nold; }
