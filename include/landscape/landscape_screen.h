/* landscape_screen.h - screening: many orders for the price of few.
 *
 * Every order is first evaluated on a subset of the evaluation set (m of its
 * N units - a network's sequences or images, a layer's samples - spread
 * evenly: evalset_pick), then only the survivors on the whole set: the best
 * K on the subset, both methods' orders and the identity (the skip-order, or
 * with --no-wm the naive) always. The survivors' barriers are exactly what a
 * plain landscape gives them (the same evaluations); the other orders have
 * their subset barrier only. How far the subset can be trusted is said by the
 * bootstrap intervals of the subset barriers (bootstrap.h): orders whose
 * interval overlaps the subset's best are not distinguished from it, and any
 * of those screened out is counted. A network's subset landscape gives every
 * order its interval; a layer's (the fused kernel keeps no per-sample losses)
 * the best 2K on the subset and the survivors, computed again the plain way. */
#ifndef MS_LANDSCAPE_SCREEN_H
#define MS_LANDSCAPE_SCREEN_H

#include "landscape/landscape.h"

typedef struct {
    int keep;  /* K, the best orders on the subset kept; 0: no screening */
    int units; /* the subset's units; 0: a quarter of the set's (at least 2) */
} ls_screen_opts;

/* the subset's size for a set of N units: so->units (at most N), else the default */
int ls_screen_units(int N, const ls_screen_opts *so);

/* One order of the screening's table: its subset barrier (and interval, NaN
 * when none) and, when it survived, its barrier on the whole set. */
typedef struct {
    const uint8_t *order;    /* (n) into sub's or full's orders */
    double sub_bar, sub_lo, sub_hi;
    long sub_rank;           /* 1 + the subset's orders with a lower subset barrier */
    long full_id;            /* its id among full's orders, -1: screened only */
    double bar, bar_lo, bar_hi; /* whole set (NaN when screened only) */
    int undistinguished;     /* 1: its subset interval overlaps the subset best's;
                                0: it does not; -1: no interval */
} ls_screen_row;

typedef struct {
    int keep, units, total_units;
    const char *unit;        /* "sequences", "images", "samples" */
    landscape sub;           /* every order on the subset */
    landscape full;          /* the survivors on the whole set */
    ls_screen_row *rows;     // (nrows): the survivors by whole-set barrier, then the others by subset barrier
    long nrows;
    long with_ci;            /* rows with a subset interval */
    long undistinguished;    /* rows whose subset interval overlaps the subset best's */
    long undistinguished_out;/* of them, screened out */
} ls_screen;

/* The screening of A and B: sub_o ranges over the orders on the subset (a
 * layer: E_sub, a network: sub_o->objective on the subset), full_o (the same
 * options but its objective, or E) over the survivors. 0, or -1 with err set
 * (cancelled as landscape_compute is). Not split over processes. */
int landscape_screen(const moe_model *A, const moe_model *B, const evalset *E_sub, const evalset *E,
                     const ls_opts *sub_o, const ls_opts *full_o, const ls_screen_opts *so, ls_screen *S,
                     ms_err *err);
void ls_screen_free(ls_screen *S);

/* The screening in the landscape JSON's "screening" object and a CSV of every
 * order: subset_rank, order, subset_barrier, subset_lo, subset_hi, barrier,
 * barrier_lo, barrier_hi, evaluated ("whole set" or "subset"), undistinguished */
struct cJSON *ls_screen_json(const ls_screen *S);
int ls_screen_write_csv(const ls_screen *S, const char *path, ms_err *err);

#endif
