/* layer_load.h - loading A and B at another layer off the UI thread (no
 * curses). A real layer takes seconds to read (an OLMoE layer is 64 experts of
 * 2048 x 1024 x 3), so l / Enter starts a loader thread and the screen keeps
 * answering keys; the UI polls it and swaps the models in when it is done.
 *
 * One load is current at a time. Asking for another layer while one loads
 * replaces it: the old load is cancelled (the loaders stop within one expert's
 * read: progress_cancelled in moe_load) and reaped when it has stopped, so
 * nothing on the UI thread waits for a read. layer_switch_free cancels and
 * joins every load (quit never leaves a thread behind).
 *
 * For the tests: MOESCOPE_TEST_LOAD_GATE=FILE makes each load wait, with A
 * read and before B, until FILE exists (or the load is cancelled), so a test
 * can see the screen while a load is under way without any timing. */
#ifndef MS_UI_LAYER_LOAD_H
#define MS_UI_LAYER_LOAD_H

#include "explore/explore_worker.h"
#include "io/family.h"
#include "model/model.h"

enum { LL_NONE = 0, LL_RUNNING, LL_DONE, LL_FAILED };

typedef struct {
    int state;          /* LL_* of the current load */
    int index;          /* its layer's index in the list, -1 none */
    double frac;        /* 0..1 over both files (A the first half) */
    char phase[96];     /* what the loader reads now ("load model-00002-of-00002.safetensors") */
    char error[1024];   /* LL_FAILED: why, naming the file */
} layer_load_status;

/* What layer_switch_request did. */
enum {
    LS_STARTED = 1,     /* a load of the layer began */
    LS_REPLACED,        /* it began, and the load of another layer was cancelled */
    LS_ALREADY,         /* that layer is loading already */
    LS_CANCELLED,       /* the layer asked for is the one shown: the load was cancelled */
    LS_SHOWN,           /* the layer asked for is the one shown, nothing loads */
    LS_REFUSED          /* too many cancelled loads still stopping: try again */
};

#define LAYER_SWITCH_RETIRED 4

typedef struct layer_load layer_load;
typedef struct old_worker old_worker;

typedef struct {
    const char *pa, *pb;  /* the checkpoints (borrowed) */
    const family_overrides *fo; /* how to read them (borrowed; NULL: as they say) */
    layer_load *cur;      /* the load whose result is wanted, NULL none */
    layer_load *retired[LAYER_SWITCH_RETIRED]; /* cancelled, still stopping */
    int nretired;
    old_worker *old[LAYER_SWITCH_RETIRED];     /* replaced workers, stopping */
    int nold;
} layer_switch;

/* fo NULL; set it before the first request to read the checkpoints otherwise */
void layer_switch_init(layer_switch *s, const char *pa, const char *pb);
/* Load layer (index k in the list) of both checkpoints; shown is the index
 * of the layer on the screen. Returns LS_*. */
int layer_switch_request(layer_switch *s, const char *layer, int k, int shown);
/* The current load's state (LL_NONE when there is none); reaps stopped
 * retired loads. Never blocks on a read. */
void layer_switch_poll(layer_switch *s, layer_load_status *st);
/* After LL_DONE: move the loaded, checked pair into A and B (the caller then
 * owns them) and forget the load; after LL_FAILED: forget it. 0 when A and B
 * were filled; -1 (and nothing forgotten) while the load runs. */
int layer_switch_take(layer_switch *s, moe_model *A, moe_model *B);
/* The worker of the layer being replaced, with the models it borrows (heap
 * allocated, taken over): stopped and freed on a thread of its own, since
 * explore_stop waits for its threads to notice the cancel (a weight matching,
 * a block of the landscape), which the screen must not. Synchronous when no
 * thread can start. */
void layer_switch_retire_worker(layer_switch *s, explore_worker *g, moe_model *A, moe_model *B);
/* Cancel every load, wait for each load and retired worker to stop, free them. */
void layer_switch_free(layer_switch *s);
/* Loads and retired workers not yet reaped (current and retired), for the tests. */
int layer_switch_live(const layer_switch *s);

#endif
