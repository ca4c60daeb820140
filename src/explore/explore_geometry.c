/* explore_geometry.c - the routing geometry on a thread of its own, for the
 * explorer (explore_geometry.h). */
#include "explore/explore_geometry.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/geo_capture.h"
#include "analysis/geo_network.h"
#include "analysis/geo_report.h"
#include "core/progress.h"

struct explore_geometry {
    const net_model *m;        /* a network's, else NULL */
    const net_evalset *E;
    char *ckpt, *capture;      /* a capture's */
    family_overrides over;
    pthread_t th;
    atomic_int cancel;
    pthread_mutex_t mu;
    int state;                 /* EXPLORE_GEO_* */
    char *text;                /* the report (READY) or the reason (FAILED) */
};

/* the report of G into a new string */
static char *report(const geometry *G) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ms_strdup("out of memory formatting the report");
    geometry_print(f, G, NULL);
    fprintf(f, "\n(the transport test: moescope geometry CKPT --eval E)\n");
    fclose(f);
    return buf;
}

/* the thread's progress goes nowhere (the explorer shows "computing"); its
 * listener carries the cancel, which geometry_compute polls between layers */
static void quiet(void *ctx, const char *phase, double done, double total) {}

static void *run(void *arg) {
    explore_geometry *g = arg;
    progress_listen(quiet, NULL, &g->cancel);
    ms_err err;
    geo_opts o;
    geo_opts_default(&o);
    geometry G;
    int rc;
    if (g->m) {
        net_par par = {.cancel = &g->cancel};
        rc = geometry_network(g->m, g->E, 0.8, &o, &par, &G, &err);
    } else {
        geo_capture c;
        rc = geo_capture_open(&c, g->ckpt, g->capture, &g->over, &err);
        if (!rc) {
            o.N = c.N, o.ntrain = (int)(0.8 * c.N + 0.5);
            rc = geometry_compute(c.in, c.L, geo_capture_inputs, &c, &o, &G, &err);
            geo_capture_close(&c);
        }
    }
    char *text = rc ? ms_strdup(err.msg) : report(&G);
    if (!rc) geometry_free(&G);
    pthread_mutex_lock(&g->mu);
    g->text = text;
    g->state = rc ? EXPLORE_GEO_FAILED : EXPLORE_GEO_READY;
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

static explore_geometry *start(explore_geometry *g) {
    g->state = EXPLORE_GEO_COMPUTING;
    pthread_mutex_init(&g->mu, NULL);
    atomic_init(&g->cancel, 0);
    if (pthread_create(&g->th, NULL, run, g)) {
        g->state = EXPLORE_GEO_FAILED;
        g->text = ms_strdup("cannot start a thread for the routing geometry");
        g->th = pthread_self(); // nothing to join
    }
    return g;
}

explore_geometry *explore_geometry_network(const net_model *m, const net_evalset *E) {
    explore_geometry *g = ms_calloc(1, sizeof *g);
    g->m = m, g->E = E;
    return start(g);
}

explore_geometry *explore_geometry_capture(const char *ckpt_path, const char *capture, const family_overrides *o) {
    explore_geometry *g = ms_calloc(1, sizeof *g);
    g->ckpt = ms_strdup(ckpt_path);
    g->capture = ms_strdup(capture);
    g->over = o ? *o : (family_overrides)FAMILY_OVERRIDES_NONE;
    return start(g);
}

int explore_geometry_poll(explore_geometry *g, char ***lines, int *n) {
    *lines = NULL, *n = 0;
    pthread_mutex_lock(&g->mu);
    int st = g->state;
    if (st != EXPLORE_GEO_COMPUTING) { // the text split into lines
        const char *p = g->text;
        while (*p) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) : strlen(p);
            *lines = ms_realloc(*lines, (size_t)(*n + 1) * sizeof(char *));
            char *l = ms_malloc(len + 1);
            memcpy(l, p, len);
            l[len] = 0;
            (*lines)[(*n)++] = l;
            p += len + (e != NULL);
        }
    }
    pthread_mutex_unlock(&g->mu);
    return st;
}

void explore_geometry_stop(explore_geometry *g) {
    if (!g) return;
    atomic_store(&g->cancel, 1);
    if (!pthread_equal(g->th, pthread_self())) pthread_join(g->th, NULL);
    pthread_mutex_destroy(&g->mu);
    free(g->text);
    free(g->ckpt);
    free(g->capture);
    free(g);
}
