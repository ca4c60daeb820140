/* state_export.c - see state_export.h. */
#include "state_export.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "align/cost_matrix.h"
#include "io/json_file.h"
#include "orders_view.h"
#include "io/provenance.h"
#include "landscape/landscape_orders.h"
#include "landscape/rank.h"
#include "model/symmetry.h"

static cJSON *jnum(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

static cJSON *jarr(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; v && i < n; i++) cJSON_AddItemToArray(a, jnum(v[i]));
    return a;
}

static cJSON *jorder(const int *o, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(o[i]));
    return a;
}

static cJSON *jcurve(const ls_curve *c, int n, int T) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "order", jorder(c->order, n));
    cJSON_AddItemToObject(o, "barrier", jnum(c->barrier));
    cJSON_AddItemToObject(o, "acc_barrier", jnum(c->acc_barrier));
    cJSON_AddItemToObject(o, "loss_auc", jnum(c->auc));
    cJSON_AddItemToObject(o, "loss", jarr(c->loss, T));
    cJSON_AddItemToObject(o, "acc", c->acc ? jarr(c->acc, T) : cJSON_CreateNull());
    return o;
}

/* the orders done so far, by rank (orders_update ranks them with ties) */
static cJSON *jrows(const explore_snapshot *v, const orders_state *o) {
    cJSON *a = cJSON_CreateArray();
    for (long i = 0; i < o->nidx; i++) {
        long ri = o->idx[i];
        const ls_row *r = &v->rows[ri];
        int ro[LS_MAX_N];
        explore_row_order(v, r, ro);
        cJSON *e = cJSON_CreateObject();
        cJSON_AddItemToObject(e, "rank", cJSON_CreateNumber((double)o->rank[ri]));
        cJSON_AddItemToObject(e, "tied", cJSON_CreateNumber((double)o->tied[ri]));
        cJSON_AddItemToObject(e, "order", jorder(ro, v->n));
        cJSON_AddItemToObject(e, "barrier", jnum(r->barrier));
        cJSON_AddItemToObject(e, "acc_barrier", jnum(r->acc_barrier));
        cJSON_AddItemToObject(e, "loss_auc", jnum(r->auc));
        cJSON_AddItemToObject(e, "cost", v->cost ? jnum(cost_of_order(v->cost, ro, v->n)) : cJSON_CreateNull());
        if (orders_sampled(v)) { // a row of the sample, or evaluated beside it, and which
            char how[64];
            orders_row_found(v, ri, how, sizeof how);
            cJSON_AddStringToObject(e, "found", how);
        }
        cJSON_AddItemToArray(a, e);
    }
    return a;
}

/* the pinned curves, each with the weight-matching setting it was computed under */
static cJSON *jpins(const pin_set *pins, int T) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; pins && i < pins->n; i++) {
        cJSON *c = jcurve(&pins->p[i].c, pins->p[i].c.n, T);
        cJSON_AddBoolToObject(c, "wm_stage", pins->p[i].wm);
        cJSON_AddItemToArray(a, c);
    }
    return a;
}

static cJSON *state_json(const explore_snapshot *v, const pin_set *pins, const orders_state *o, const char *a_path,
                         const char *b_path) {
    int n = v->n, T = v->T;
    const explore_request *q = &v->req;
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", "moescope.tui_state/1");
    cJSON_AddItemToObject(root, "provenance", prov_json());
    cJSON_AddStringToObject(root, "a", a_path);
    cJSON_AddStringToObject(root, "b", b_path);
    cJSON_AddNumberToObject(root, "n", n);
    cJSON *tg = cJSON_AddObjectToObject(root, "toggles");
    cJSON_AddBoolToObject(tg, "order_stage", q->order_stage);
    cJSON_AddBoolToObject(tg, "wm_stage", q->wm_stage);
    cJSON_AddBoolToObject(tg, "center", q->center);
    cJSON_AddStringToObject(tg, "method", cost_method_name(q->method));
    cJSON *cost = cJSON_AddObjectToObject(root, "cost");
    if (v->cost) {
        cJSON *m = cJSON_AddArrayToObject(cost, "matrix");
        for (int i = 0; i < n; i++) cJSON_AddItemToArray(m, jarr(v->cost + (size_t)i * n, n));
        cJSON_AddItemToObject(cost, "assignment", jorder(v->cost_order, n));
        cJSON_AddItemToObject(cost, "total", jnum(v->cost_total));
    }
    cJSON_AddItemToObject(root, "t", jarr(v->t, T));
    cJSON *cv = cJSON_AddObjectToObject(root, "curves");
    if (v->have_naive) cJSON_AddItemToObject(cv, "naive", jcurve(&v->naive, n, T));
    if (v->have_skip) cJSON_AddItemToObject(cv, "skip_order", jcurve(&v->skip_order, n, T));
    if (v->have_current) cJSON_AddItemToObject(cv, "current", jcurve(&v->current, n, T));
    if (v->have_selected) cJSON_AddItemToObject(cv, "selected", jcurve(&v->selected, n, T));
    cJSON_AddItemToObject(cv, "pinned", jpins(pins, T));
    cJSON *ls = cJSON_AddObjectToObject(root, "landscape");
    cJSON_AddBoolToObject(ls, "complete", v->have_landscape);
    cJSON_AddBoolToObject(ls, "exhaustive", v->exhaustive);
    cJSON_AddNumberToObject(ls, "norders", (double)v->norders);
    cJSON_AddNumberToObject(ls, "ndone", (double)v->ndone);
    if (orders_sampled(v)) { // the sample's size and the rows evaluated beside it
        cJSON_AddNumberToObject(ls, "nsampled", (double)v->nsampled);
        cJSON_AddItemToObject(ls, "orders_in_set", jnum(v->orders_in_set));
        cJSON_AddNumberToObject(ls, "beside_sample", (double)v->nextra);
    }
    for (int m = 0; m < COST_NMETHODS; m++) {
        cJSON *mo = cJSON_AddObjectToObject(ls, cost_method_name((cost_method)m));
        if (v->have_methods) cJSON_AddItemToObject(mo, "order", jorder(v->method_order[m], n));
        cJSON_AddItemToObject(mo, "rank", v->rank[m] > 0 ? cJSON_CreateNumber(v->rank[m]) : cJSON_CreateNull());
        cJSON_AddItemToObject(mo, "tied", v->tied[m] > 0 ? cJSON_CreateNumber(v->tied[m]) : cJSON_CreateNull());
        cJSON_AddItemToObject(mo, "rank_auc", v->rank_auc[m] > 0 ? cJSON_CreateNumber(v->rank_auc[m]) : cJSON_CreateNull());
        cJSON_AddItemToObject(mo, "l_hat", jnum(v->l_hat[m]));
    }
    cJSON_AddItemToObject(ls, "orders", jrows(v, o));
    return root;
}

/* The table as landscape --csv writes it (ls_csv_row): the same columns, by
 * barrier, with the same ranks, ties and tie classes (rank.h's tolerance);
 * each order's cost is in the JSON state. A sampled table says so in a
 * comment line and adds a column "found": "sampled", or how a row beside the
 * sample came ("the expert method", "the identity"), ranked with the sample. */
static int state_csv(const explore_snapshot *v, const orders_state *o, const char *path, ms_err *err) {
    atomic_file af;
    if (af_open(&af, path, err)) return -1;
    char *prov = prov_text("# ");
    fputs(prov, af.fp);
    free(prov);
    int sampled = orders_sampled(v);
    if (sampled) {
        char all[48];
        ls_count_format(all, sizeof all, v->orders_in_set_log10);
        fprintf(af.fp, "# orders: a uniform sample of %ld of %s, and %ld evaluated beside it (the methods' "
                       "orders, the identity: column found), ranked with it\n",
                v->nsampled, all, v->nextra);
        fputs("rank,order,barrier,acc_barrier,loss_auc,tied,tie_class,barrier_ci95_lo,barrier_ci95_hi,found\n", af.fp);
    } else {
        ls_csv_header(af.fp, 0);
    }
    long nr = o->nidx > 0 ? o->nidx : 1;
    double *sb = ms_malloc((size_t)nr * sizeof(double));
    long *rk = ms_malloc((size_t)nr * 3 * sizeof(long)); // (3, nidx): rank, tied, class
    for (long i = 0; i < o->nidx; i++) sb[i] = v->rows[o->idx[i]].barrier;
    rank_view rv = rank_view_arrays(sb, NULL, NULL, v->n, o->nidx);
    if (o->nidx > 0) rank_table(&rv, rank_tau(v->have_naive ? v->naive.barrier : NAN), rk, rk + nr, rk + 2 * nr);
    for (long i = 0; i < o->nidx; i++) {
        int ro[LS_MAX_N];
        explore_row_order(v, &v->rows[o->idx[i]], ro);
        char how[64];
        if (sampled) orders_row_found(v, o->idx[i], how, sizeof how);
        ls_csv_row(af.fp, rk[i], ro, v->n, &v->rows[o->idx[i]], rk[nr + i], rk[2 * nr + i], NULL,
                   v->ci_units > 0 && o->idx[i] < v->ndone, sampled ? how : NULL);
    }
    free(sb);
    free(rk);
    return af_commit(&af, err);
}

int state_write(const explore_snapshot *v, const pin_set *pins, const char *a_path, const char *b_path,
                const char *path, ms_err *err) {
    prov_date_now(); /* dated when saved, not when the explorer started */
    orders_state o; /* the table by rank, as the orders pane ranks it */
    orders_init(&o);
    orders_update(&o, v);
    size_t len = strlen(path);
    int rc;
    if (len > 4 && !strcmp(path + len - 4, ".csv")) rc = state_csv(v, &o, path, err);
    else rc = json_file_write(state_json(v, pins, &o, a_path, b_path), path, err);
    orders_free(&o);
    return rc;
}
