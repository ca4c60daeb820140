/* study.c - landscapes of every pair of a pool and their summary (study.h);
 * the reports are in study_report.c. */
#include "analysis/study.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "align/cost_matrix.h"
#include "landscape/landscape_orders.h"
#include "landscape/rank.h"

#define F(path, member) {path, offsetof(st_pair, member)}
#define METHOD_FIELDS(i, name)                                                                  \
    F("methods." name ".barrier", m[i].c.barrier), F("methods." name ".acc_barrier", m[i].c.acc_barrier), \
    F("methods." name ".loss_auc", m[i].c.loss_auc), F("methods." name ".cost", m[i].cost),           \
    F("methods." name ".rank", m[i].rank), F("methods." name ".tied", m[i].tied),                     \
    F("methods." name ".rank_auc", m[i].rank_auc), F("methods." name ".l_hat", m[i].l_hat),           \
    F("methods." name ".l_hat_median", m[i].l_hat_median),                                            \
    F("methods." name ".rank_percentile", m[i].rank_percentile),                                      \
    F("methods." name ".rank_estimate", m[i].rank_est),                                               \
    F("methods." name ".spearman", m[i].spearman)

static const st_field FIELDS[] = {
    F("endpoints.loss_a", loss_a),          F("endpoints.loss_b", loss_b),
    F("endpoints.acc_a", acc_a),            F("endpoints.acc_b", acc_b),
    F("naive.barrier", naive.barrier),      F("naive.acc_barrier", naive.acc_barrier),
    F("naive.loss_auc", naive.loss_auc),    F("skip_order.barrier", skip.barrier),
    F("skip_order.acc_barrier", skip.acc_barrier), F("skip_order.loss_auc", skip.loss_auc),
    // one per row of cost_methods[] (cost_method.h)
    METHOD_FIELDS(0, "gate"),               METHOD_FIELDS(1, "expert"),
    METHOD_FIELDS(2, "activation"),         METHOD_FIELDS(3, "router"),
    F("best.barrier", best),                F("worst.barrier", worst),
    F("identity_rank", identity_rank),      F("orders_ranked", nranked),
    F("zero_tied", zero_tied),              F("zero_tied_percent", zero_pct),
    F("zero_tied_estimate", zero_est),
    F("proxy.spearman", proxy_spearman),    F("proxy.best_network_rank", proxy_rank),
};

const st_field *study_fields(int *n) {
    *n = (int)(sizeof FIELDS / sizeof FIELDS[0]);
    return FIELDS;
}

st_stat study_stat(const double *v, int n) {
    st_stat s = {NAN, NAN, 0};
    double sum = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            sum += v[i];
            s.n++;
        }
    if (!s.n) return s;
    s.mean = sum / s.n;
    if (s.n < 2) return s;
    double ss = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) ss += (v[i] - s.mean) * (v[i] - s.mean);
    s.std = sqrt(ss / (s.n - 1));
    return s;
}

static st_curve curve_of(const ls_curve *c) {
    return (st_curve){c->barrier, c->acc_barrier, c->auc, c->seq ? c->bar_lo : NAN, c->seq ? c->bar_hi : NAN};
}

/* Spearman's rho between sum_i C[i][pi(i)] and the barrier over the rows */
static double cost_barrier_rho(const landscape *L, const double *C) {
    long nr = L->ndone;
    if (!C || nr < 2) return NAN;
    double *x = ms_malloc((size_t)nr * 2 * sizeof(double)); // (2, nr): cost, barrier
    for (long k = 0; k < nr; k++) {
        x[k] = ls_order_cost(C, L->orders, L->n, L->rows[k].id);
        x[nr + k] = L->rows[k].barrier;
    }
    double r = rank_spearman(x, x + nr, nr);
    free(x);
    return r;
}

/* the share of orders tied at 0: over the orders ranked, and, for a sample, as an
 * estimate for the whole set with its 95% Wilson interval */
static void zero_share(st_pair *p, long nranked) {
    p->nranked = (double)nranked;
    double ph = nranked > 0 ? p->zero_tied / (double)nranked : NAN;
    p->zero_pct = p->zero_lo = p->zero_hi = 100.0 * ph;
    if (!p->exhaustive && nranked > 0) {
        rank_wilson95(ph, (double)nranked, &p->zero_lo, &p->zero_hi);
        p->zero_lo *= 100.0, p->zero_hi *= 100.0;
    }
    p->zero_est = p->exhaustive ? p->zero_tied : ph > 0 ? ph * p->norders : ph;
    if (!isfinite(p->zero_est)) p->zero_est = NAN;
}

void study_pair_from(st_pair *p, const landscape *L, int ia, int ib) {
    int n = L->n;
    memset(p, 0, sizeof *p);
    p->ia = ia, p->ib = ib, p->n = n;
    p->exhaustive = L->exhaustive;
    p->norders = L->exhaustive ? (double)L->norders : L->n_fact;
    p->norders_log10 = L->exhaustive ? log10((double)L->norders) : L->n_fact_log10;
    p->loss_a = L->loss_a, p->loss_b = L->loss_b;
    p->acc_a = L->acc_a, p->acc_b = L->acc_b;
    p->naive = curve_of(&L->naive);
    p->skip = curve_of(&L->skip_order);
    p->tau = L->tau;
    for (int m = 0; m < COST_NMETHODS; m++) {
        st_method *s = &p->m[m];
        s->c = curve_of(&L->methods[m]);
        memcpy(s->order, L->methods[m].order, sizeof s->order);
        s->cost = L->cost_total[m];
        s->rank = L->rank[m];
        s->tied = L->tied[m];
        s->rank_auc = L->rank_auc[m];
        s->l_hat = L->l_hat[m];
        s->l_hat_median = L->l_hat_median[m];
        s->rank_percentile = 100.0 * (L->rank[m] - 1) / (double)L->norders;
        s->rank_est = isfinite(L->rank_est[m]) ? L->rank_est[m] : NAN;
        s->pct_lo = L->pct_lo[m];
        s->pct_hi = L->pct_hi[m];
        s->spearman = cost_barrier_rho(L, L->cost[m]);
        s->rank_lo = L->boot_resamples ? L->rank_lo[m] : NAN;
        s->rank_hi = L->boot_resamples ? L->rank_hi[m] : NAN;
    }
    p->nseq = L->methods[0].seq ? L->methods[0].nseq : 0;
    p->unit = L->boot_unit ? L->boot_unit : "samples";
    p->boot_why = L->boot_resamples ? NULL : L->boot_why ? L->boot_why : "no per-unit losses of the orders";
    const ls_row *b = &L->rows[L->best], *w = &L->rows[L->worst];
    p->best = b->barrier;
    p->worst = w->barrier;
    ls_order_get(L->orders, n, b->id, p->best_order);
    ls_order_get(L->orders, n, w->id, p->worst_order);
    // the identity order's row (every exhaustive landscape has it); a
    // sample may not, and then the skip-order curve is that order's curve
    double idb = p->skip.barrier;
    int ident[LS_MAX_N];
    for (int i = 0; i < n; i++) ident[i] = i;
    long ik = ls_rows_find(L->rows, L->ndone, L->orders, n, ident);
    if (ik >= 0) idb = L->rows[ik].barrier;
    rank_view v = {.count = L->ndone, .width = n, .barrier = &L->rows[0].barrier,
                   .stride = sizeof(ls_row)};
    p->identity_rank = (double)rank_of(&v, idb, L->tau);
    long z = 0; // barriers are clipped at 0, so "tied at 0" is B <= tau
    for (long k = 0; k < L->ndone; k++) z += L->rows[k].barrier <= L->tau;
    p->zero_tied = (double)z;
    zero_share(p, L->ndone);
    p->proxy_spearman = L->has_proxy ? L->proxy_spearman : NAN;
    p->proxy_rank = L->has_proxy ? (double)L->proxy_best_rank : NAN;
}


static void study_summarise(study *S) {
    int nf;
    const st_field *fs = study_fields(&nf);
    S->summary = ms_calloc((size_t)nf, sizeof(st_stat));
    double *v = ms_malloc((size_t)(S->npairs > 0 ? S->npairs : 1) * sizeof(double));
    for (int f = 0; f < nf; f++) {
        for (int k = 0; k < S->npairs; k++) v[k] = st_get(&S->pairs[k], &fs[f]);
        S->summary[f] = study_stat(v, S->npairs);
    }
    free(v);
}

/* what the pairs' landscapes are computed on */
typedef struct {
    const evalset *E, *Es;          /* the set, and the screening's subset (layers) */
    const study_objective *so;      /* NULL: the layers' own loss on E */
    const ls_screen_opts *scr;      /* NULL: no screening */
} st_on;

/* the screened pair's subset numbers (the survivors' landscape is R->full) */
static void pair_screen_from(st_pair *p, const ls_screen *R) {
    p->scr_units = R->units, p->scr_of_units = R->total_units;
    p->scr_orders = (double)R->sub.norders, p->scr_full = (double)R->full.norders;
    p->scr_with_ci = (double)R->with_ci;
    p->scr_undist = (double)R->undistinguished, p->scr_undist_out = (double)R->undistinguished_out;
    for (int m = 0; m < COST_NMETHODS; m++) { // the method's order on the whole set, ranked on the subset
        p->scr_rank[m] = NAN;
        for (long i = 0; i < R->nrows; i++)
            if (ls_order_is(R->rows[i].order, R->sub.n, 0, R->full.methods[m].order)) p->scr_rank[m] = (double)R->rows[i].sub_rank;
    }
    // the survivors are no uniform sample: nothing is extrapolated from them
    p->norders = R->sub.exhaustive ? (double)R->sub.norders : R->sub.n_fact;
    p->norders_log10 = R->sub.exhaustive ? log10((double)R->sub.norders) : R->sub.n_fact_log10;
    for (int m = 0; m < COST_NMETHODS; m++) p->m[m].rank_est = p->m[m].pct_lo = p->m[m].pct_hi = NAN;
    p->zero_lo = p->zero_hi = p->zero_est = NAN;
}

/* Pair (i, j) with po's objective or end points set: its landscape (a layer's
 * with its intervals), or screened, every order on the subset and the
 * survivors into R (R->full the pair's landscape); *Lp: the one to report.
 * Nothing to free when it fails. */
static int pair_landscape(const moe_model *a, const moe_model *b, const st_on *on, int i, int j,
                          const ls_opts *po, landscape *L, ls_screen *R, landscape **Lp, ms_err *err) {
    const ls_opts *o = po;
    int reports = !o->part || !o->part->rank, rc;
    *Lp = L;
    if (!on->scr) {
        ls_opts lo = *po;
        lo.keep_units = !on->so; // the intervals from the sweep's per-sample losses (gathered on rank 0)
        lo.stream_units = 1;     // ... beyond a small table resampled as the rows come, as landscape's
        rc = landscape_compute(a, b, on->E, &lo, L, err);
        if (!rc && !on->so && reports) rc = ls_layer_intervals(a, b, on->E, o->wm, L, o->cancel, err);
        if (rc) landscape_free(L); // a failed landscape_compute left L empty
        return rc;
    }
    ls_opts sub = *po;
    sub.end_a = sub.end_b = NULL; // the subset's own end points
    if (on->so && on->so->make_sub(on->so->ctx, i, j, &sub.objective, err)) return -1;
    if (landscape_screen(a, b, on->Es, on->E, &sub, po, on->scr, R, err)) return -1; // R freed
    R->sub.objective = NULL; // the subset objective's string: freed with it
    rc = on->so ? 0 : ls_layer_intervals(a, b, on->E, o->wm, &R->full, o->cancel, err);
    if (rc) ls_screen_free(R);
    *Lp = &R->full;
    return rc;
}

/* every pair (i < j): its landscape on E (the end points lent), or on so's
 * objective for the pair; screened with on->scr */
static int study_pairs(const moe_model *models, const char *const *paths, int npool, const st_on *on,
                       const ls_opts *o, void (*progress)(int done, int total), study *S, ms_err *err) {
    const study_objective *so = on->so;
    const evalset *E = on->E;
    memset(S, 0, sizeof *S);
    S->npool = npool;
    S->paths = paths;
    S->T = o->T;
    S->kind = so ? LS_CLASSIFY : npool ? (int)ls_kind_of(&models[0], E) : 0;
    S->screen_keep = on->scr ? on->scr->keep : 0;
    int total = npool * (npool - 1) / 2, rc = 0;
    S->pairs = ms_calloc((size_t)(total > 0 ? total : 1), sizeof(st_pair));
    // each checkpoint's end-point evaluation once, lent to all its pairs (an
    // objective holds its own)
    ls_endpoint *ends = ms_calloc((size_t)(npool > 0 ? npool : 1), sizeof(ls_endpoint));
    for (int i = 0; i < npool && !rc && !so; i++)
        if (ls_endpoint_eval(&models[i], E, &ends[i], err)) rc = ms_prefix(err, "%s", paths[i]);
    S->nevals = npool;
    ls_opts po = *o;
    for (int i = 0; i < npool && !rc; i++)
        for (int j = i + 1; j < npool && !rc; j++) {
            landscape L, *Lp;
            ls_screen R;
            if (so) {
                if (so->make(so->ctx, i, j, &po.objective, err)) {
                    rc = ms_prefix(err, "pair %s, %s", paths[i], paths[j]);
                    break;
                }
            } else {
                po.end_a = &ends[i], po.end_b = &ends[j];
            }
            int bad = pair_landscape(&models[i], &models[j], on, i, j, &po, &L, &R, &Lp, err);
            if (!bad && so && so->proxy && !on->scr) bad = so->proxy(so->ctx, i, j, Lp, err);
            // L.objective is the objective's own string: kept before done() frees it
            if (!bad && Lp->objective) snprintf(S->objective, sizeof S->objective, "%s", Lp->objective);
            if (!bad) Lp->objective = NULL;
            if (so) so->done(so->ctx);
            if (bad) {
                ms_prefix(err, "pair %s, %s", paths[i], paths[j]);
                rc = -1;
                break;
            }
            // split over processes, only rank 0 holds the table
            if (!o->part || !o->part->rank) {
                st_pair *p = &S->pairs[S->npairs++];
                study_pair_from(p, Lp, i, j);
                if (on->scr) pair_screen_from(p, &R), S->scr_unit = R.unit;
            }
            if (on->scr) ls_screen_free(&R);
            else landscape_free(&L);
            if (progress) progress(S->npairs, total);
        }
    for (int i = 0; i < npool; i++) ls_endpoint_free(&ends[i]);
    free(ends);
    if (rc) {
        study_free(S);
        return -1;
    }
    study_summarise(S);
    return 0;
}

int study_run(const moe_model *models, const char *const *paths, int npool, const evalset *E,
              const ls_opts *o, const ls_screen_opts *scr, void (*progress)(int done, int total), study *S,
              ms_err *err) {
    st_on on = {.E = E, .scr = scr && scr->keep > 0 ? scr : NULL};
    evalset Es;
    memset(&Es, 0, sizeof Es);
    if (on.scr) evalset_subset(E, ls_screen_units(E->N, scr), &Es), on.Es = &Es;
    int rc = study_pairs(models, paths, npool, &on, o, progress, S, err);
    if (on.scr) evalset_free(&Es);
    return rc;
}

int study_run_obj(const moe_model *models, const char *const *paths, int npool,
                  const study_objective *so, const ls_opts *o, const ls_screen_opts *scr,
                  void (*progress)(int done, int total), study *S, ms_err *err) {
    st_on on = {.so = so, .scr = scr && scr->keep > 0 ? scr : NULL};
    return study_pairs(models, paths, npool, &on, o, progress, S, err);
}

void study_free(study *S) {
    free(S->pairs);
    free(S->summary);
    memset(S, 0, sizeof *S);
}
