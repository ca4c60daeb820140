/* landscape_table.c - the landscape's table, whichever driver fills it (the
 * fast one of landscape.c, the objective's of landscape_obj.c): the options'
 * defaults, the orders planned, the ranks of the chosen orders among the rows,
 * the rows sorted, found and freed. */
#define _GNU_SOURCE /* qsort_r */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_error.h"
#include "landscape/rank.h"
#include "landscape_int.h"
#include "model/symmetry.h"

void ls_opts_default(ls_opts *o) {
    memset(o, 0, sizeof *o);
    o->T = 25;
    o->wm = 1;
    o->center = 1;
    o->hidden = COST_EXPERT;
    o->nsample = LS_SAMPLES;
    o->exhaustive_max = LS_EXHAUSTIVE_MAX;
    o->seed = 1;
}

long ls_orders_planned(const moe_config *c, const ls_opts *o, int *exhaustive, int *groups) {
    int emax = o->exhaustive_max > 0 ? o->exhaustive_max : LS_EXHAUSTIVE_MAX;
    long nsample = o->nsample > 0 ? o->nsample : LS_SAMPLES;
    int G = o->all_orders ? 0 : moe_groups_active(c);
    double total = G > 1 ? ls_wreath_count(G, c->n / G) : ls_factorial(c->n);
    if (groups) *groups = G > 1 ? G : 0;
    if (o->given) return *exhaustive = 0, o->ngiven;
    // exhaustive up to emax! orders, or when a sample would be half the set
    *exhaustive = total <= ls_factorial(emax) || total < 2.0 * (double)nsample;
    return *exhaustive ? (long)total : nsample;
}

void ls_orders_fill(uint8_t *dst, int n, int groups, long norders, int exhaustive, const ls_opts *o) {
    if (o->given) memcpy(dst, o->given, (size_t)norders * n);
    else if (exhaustive) ls_orders_all(dst, n, groups, norders);
    else ls_orders_sample(dst, n, groups, norders, o->seed);
}

int ls_check_orders(const moe_config *c, const ls_opts *o, const char *path, ms_err *err) {
    if (o->given) return 0;
    int exhaustive;
    ls_orders_planned(c, o, &exhaustive, NULL);
    if (o->exhaustive_max > LS_EXHAUSTIVE_MAX && !exhaustive) // asked for every order
        return ms_fail(err, "%s: n = %d experts have more than %.0f orders; --exhaustive goes up to "
                            "%d experts, above that the orders are sampled (--samples)",
                       path ? path : "A", c->n, ls_factorial(o->exhaustive_max), o->exhaustive_max);
    return 0;
}

double ls_methods_bound(const landscape *L) {
    double bmax = -INFINITY;
    for (int m = 0; m < COST_NMETHODS; m++) {
        if (isnan(L->methods[m].barrier)) return INFINITY;
        bmax = fmax(bmax, L->methods[m].barrier);
    }
    return nextafter(bmax + rank_tau(L->naive.barrier), INFINITY);
}

void ls_ranks(landscape *L, long filled, int exhaustive, long norders) {
    rank_view v = {.count = filled, .width = L->n, .barrier = &L->rows[0].barrier,
                   .auc = &L->rows[0].auc, .orders8 = L->orders, .id = &L->rows[0].id,
                   .stride = sizeof(ls_row)};
    double best = INFINITY;
    for (long k = 0; k < filled; k++)
        if (L->rows[k].barrier < best) best = L->rows[k].barrier;
    if (!exhaustive)
        for (int m = 0; m < COST_NMETHODS; m++)
            if (L->methods[m].barrier < best) best = L->methods[m].barrier;
    L->best_barrier = best;
    L->tau = rank_tau(L->naive.barrier);
    for (int m = 0; m < COST_NMETHODS; m++) {
        const ls_curve *c = &L->methods[m];
        rank_info ri;
        rank_chosen(&v, c->barrier, c->auc, c->order, L->tau, &ri);
        L->rank[m] = (int)ri.rank;
        L->tied[m] = (int)ri.tied;
        L->rank_auc[m] = (int)ri.rank_auc;
        L->l_hat[m] = rank_l_hat(c->barrier, best, L->naive.barrier);
        long less = ri.rank - 1;
        if (!exhaustive) {
            double ph = (double)less / (double)norders;
            L->rank_est[m] = ph > 0 ? 1.0 + ph * L->n_fact : 1.0; // n_fact may be inf
            rank_wilson95(ph, (double)norders, &L->pct_lo[m], &L->pct_hi[m]);
            L->pct_lo[m] *= 100.0;
            L->pct_hi[m] *= 100.0;
        } else {
            L->rank_est[m] = L->rank[m];
            L->pct_lo[m] = L->pct_hi[m] = 100.0 * (double)less / (double)norders;
        }
    }
    L->ranks_ready = 1;
}

/* by barrier (NaN last), then lexicographically by order; ctx is the landscape */
static int row_cmp(const void *pa, const void *pb, void *ctx) {
    const ls_row *a = pa, *b = pb;
    const landscape *L = ctx;
    int na = isnan(a->barrier), nb = isnan(b->barrier);
    if (na != nb) return na - nb; // NaN last
    if (!na && a->barrier != b->barrier) return a->barrier < b->barrier ? -1 : 1;
    const uint8_t *oa = L->orders + (size_t)a->id * L->n, *ob = L->orders + (size_t)b->id * L->n;
    return memcmp(oa, ob, (size_t)L->n);
}

void ls_sort_rows(landscape *L) {
    qsort_r(L->rows, (size_t)L->norders, sizeof(ls_row), row_cmp, L);
    L->best = 0;
    L->worst = 0;
    for (long k = 0; k < L->norders; k++)
        if (!isnan(L->rows[k].barrier)) L->worst = (int)k;
    L->ndone = L->norders;
    // the median of the finite barriers (NaN sort last), and L-hat against it
    long nf = L->worst + 1;
    L->median_barrier = nf % 2 ? L->rows[nf / 2].barrier
                               : 0.5 * (L->rows[nf / 2 - 1].barrier + L->rows[nf / 2].barrier);
    for (int m = 0; m < COST_NMETHODS; m++)
        L->l_hat_median[m] = rank_l_hat(L->methods[m].barrier, L->best_barrier, L->median_barrier);
}

long ls_rows_find(const ls_row *rows, long count, const uint8_t *orders, int n, const int *p) {
    if (!rows || !orders || !p) return -1;
    for (long k = 0; k < count; k++)
        if (ls_order_is(orders, n, rows[k].id, p)) return k;
    return -1;
}

void landscape_free(landscape *L) {
    if (!L) return;
    free(L->t);
    ls_curve_free(&L->naive);
    ls_curve_free(&L->skip_order);
    for (int m = 0; m < COST_NMETHODS; m++) {
        ls_curve_free(&L->methods[m]);
        free(L->cost[m]);
    }
    free(L->rows);
    free(L->orders);
    free(L->proxy_barrier);
    free(L->unit_loss);
    free(L->order_units);
    memset(L, 0, sizeof *L);
}
