/* landscape_report.c - the landscape (and a screening, landscape_screen.h) as JSON
 * (the documented keys, cJSON) and CSV, and curves
 * as CSV. Every file is written atomically (atomic_file.h); non-finite
 * numbers become JSON null (CSV: "nan"). */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"
#include "io/json_file.h"
#include "landscape/landscape.h"
#include "io/provenance.h"
#include "landscape/bootstrap.h"
#include "landscape/landscape_screen.h"
#include "landscape/rank.h"
#include "model/symmetry.h"

/* order id of orders (norders, n) */
static cJSON *jorder8(const uint8_t *orders, int n, long id) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber(orders[(size_t)id * n + i]));
    return a;
}

/* v's cnt numbers, null when there are none */
static cJSON *jarr(const double *v, int cnt) { return v ? json_numbers(v, cnt) : cJSON_CreateNull(); }

cJSON *ls_json_bootstrap(int nseq, int resamples, const char *unit, const char *why) {
    cJSON *b = cJSON_CreateObject();
    if (resamples <= 0) {
        cJSON_AddStringToObject(b, "none", why ? why : "no per-unit losses");
        return b;
    }
    cJSON_AddStringToObject(b, "units", unit ? unit : "samples");
    cJSON_AddNumberToObject(b, "count", nseq);
    cJSON_AddNumberToObject(b, "resamples", resamples);
    cJSON_AddNumberToObject(b, "level", LS_BOOT_LEVEL);
    cJSON_AddNumberToObject(b, "seed", LS_BOOT_SEED);
    cJSON_AddStringToObject(b, "interval", "percentile, widened to hold the estimate");
    return b;
}

/* (T, S) per-unit losses as T arrays */
static cJSON *junits(const double *seq, int T, int S) {
    cJSON *a = cJSON_CreateArray();
    for (int m = 0; m < T; m++) cJSON_AddItemToArray(a, jarr(seq + (size_t)m * S, S));
    return a;
}

cJSON *ls_json_curve(const ls_curve *c, int n, int units) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddItemToObject(o, "order", cJSON_CreateIntArray(c->order, n));
    cJSON_AddItemToObject(o, "barrier", json_number(c->barrier));
    if (c->seq) cJSON_AddItemToObject(o, "barrier_ci95", json_pair(c->bar_lo, c->bar_hi));
    cJSON_AddItemToObject(o, "acc_barrier", json_number(c->acc_barrier));
    cJSON_AddItemToObject(o, "loss_auc", json_number(c->auc));
    cJSON_AddItemToObject(o, "loss", jarr(c->loss, c->T));
    cJSON_AddItemToObject(o, "acc", jarr(c->acc, c->T));
    if (units && c->seq) cJSON_AddItemToObject(o, "unit_loss", junits(c->seq, c->T, c->nseq));
    return o;
}

static const char *kind_name(ls_kind k) {
    return k == LS_CLASSIFY ? "classification" : k == LS_REGRESS ? "regression" : "layer";
}

static int write_text(const char *path, const char *text, size_t len, const char *what, ms_err *err) {
    if (af_write_all(path, text, len, err)) return ms_prefix(err, "writing the %s", what);
    return 0;
}

int landscape_write_json(const landscape *L, const char *a_path, const char *b_path,
                         const char *e_path, const char *layer, const char *path, ms_err *err) {
    return landscape_write_json_with(L, a_path, b_path, e_path, layer, NULL, path, err);
}

int landscape_write_json_with(const landscape *L, const char *a_path, const char *b_path, const char *e_path,
                              const char *layer, struct cJSON *screening, const char *path, ms_err *err) {
    int n = L->n;
    cJSON *root = cJSON_CreateObject();
    if (screening) cJSON_AddItemToObject(root, "screening", screening);
    cJSON_AddStringToObject(root, "format", "moescope.landscape/1");
    cJSON_AddStringToObject(root, "a", a_path ? a_path : "");
    cJSON_AddStringToObject(root, "b", b_path ? b_path : "");
    cJSON_AddStringToObject(root, "eval", e_path ? e_path : "");
    cJSON_AddStringToObject(root, "layer", layer ? layer : "moe");
    cJSON_AddNumberToObject(root, "n", n);
    cJSON_AddNumberToObject(root, "points", L->T);
    cJSON_AddItemToObject(root, "t", jarr(L->t, L->T));
    cJSON_AddStringToObject(root, "kind", kind_name(L->kind));
    cJSON_AddBoolToObject(root, "exhaustive", L->exhaustive);
    cJSON_AddNumberToObject(root, "norders", (double)L->norders);
    if (!L->exhaustive) cJSON_AddNumberToObject(root, "nsampled", (double)L->norders);
    // the set ranked over: all n! orders, or a group-limited router's group-preserving ones
    cJSON_AddStringToObject(root, "order_set", L->groups ? "group" : "all");
    cJSON_AddItemToObject(root, "orders_in_set", json_number(L->n_fact)); // null past a double
    cJSON_AddItemToObject(root, "orders_in_set_log10", json_number(L->n_fact_log10));
    if (L->groups) {
        cJSON_AddNumberToObject(root, "groups", L->groups);
        cJSON_AddNumberToObject(root, "group_size", L->group_size);
    }
    // how every pair's hidden units were matched (align_match_hidden, --method's)
    cJSON_AddStringToObject(root, "hidden_matching", cost_method_name(L->hidden));
    cJSON *ep = cJSON_CreateObject();
    cJSON_AddItemToObject(ep, "loss_a", json_number(L->loss_a));
    cJSON_AddItemToObject(ep, "loss_b", json_number(L->loss_b));
    cJSON_AddItemToObject(ep, "acc_a", json_number(L->acc_a));
    cJSON_AddItemToObject(ep, "acc_b", json_number(L->acc_b));
    cJSON_AddItemToObject(root, "endpoints", ep);
    cJSON_AddItemToObject(root, "naive", ls_json_curve(&L->naive, n, 1));
    cJSON_AddItemToObject(root, "skip_order", ls_json_curve(&L->skip_order, n, 1));
    cJSON *methods = cJSON_CreateObject();
    for (int m = 0; m < COST_NMETHODS; m++) {
        cJSON *o = ls_json_curve(&L->methods[m], n, 1);
        cJSON_AddItemToObject(o, "cost", json_number(L->cost_total[m]));
        cJSON_AddNumberToObject(o, "rank", L->rank[m]);
        cJSON_AddNumberToObject(o, "tied", L->tied[m]);
        cJSON_AddNumberToObject(o, "rank_auc", L->rank_auc[m]);
        cJSON_AddItemToObject(o, "l_hat", json_number(L->l_hat[m]));
        cJSON_AddItemToObject(o, "l_hat_median", json_number(L->l_hat_median[m]));
        if (L->cost[m]) {
            cJSON *cm = cJSON_CreateArray();
            for (int i = 0; i < n; i++) cJSON_AddItemToArray(cm, jarr(L->cost[m] + (size_t)i * n, n));
            cJSON_AddItemToObject(o, "cost_matrix", cm);
        }
        if (!L->exhaustive) {
            cJSON_AddItemToObject(o, "rank_estimate", json_number(L->rank_est[m]));
            cJSON *ci = cJSON_CreateArray();
            cJSON_AddItemToArray(ci, json_number(L->pct_lo[m]));
            cJSON_AddItemToArray(ci, json_number(L->pct_hi[m]));
            cJSON_AddItemToObject(o, "rank_percentile_ci95", ci);
        }
        if (L->boot_resamples) {
            cJSON_AddItemToObject(o, "barrier_ci95", json_pair(L->methods[m].bar_lo, L->methods[m].bar_hi));
            cJSON_AddItemToObject(o, "rank_ci95", json_pair(L->rank_lo[m], L->rank_hi[m]));
        }
        cJSON_AddItemToObject(methods, cost_method_name((cost_method)m), o);
    }
    cJSON_AddItemToObject(root, "methods", methods);
    // the error bars' resampling (bootstrap.h); "none" with the reason when not computed
    const char *why = L->boot_why ? L->boot_why : "the layer's fused kernel keeps no per-sample losses";
    cJSON *boot = ls_json_bootstrap(L->nseq, L->nseq ? LS_BOOT_RESAMPLES : 0, L->boot_unit, why);
    int units = L->unit_loss && (double)L->ndone * L->T * L->nseq <= (double)LS_JSON_UNITS_MAX;
    if (L->boot_resamples) cJSON_AddBoolToObject(boot, "unit_loss_per_order", units);
    else if (L->nseq) cJSON_AddStringToObject(boot, "orders_and_ranks", why); // the named curves alone
    cJSON_AddItemToObject(root, "bootstrap", boot);
    cJSON_AddItemToObject(root, "tau", json_number(L->tau));
    cJSON_AddItemToObject(root, "median_barrier", json_number(L->median_barrier));
    cJSON *best = cJSON_CreateObject(), *worst = cJSON_CreateObject();
    if (L->best >= 0 && L->norders > 0) {
        cJSON_AddItemToObject(best, "order", jorder8(L->orders, n, L->rows[L->best].id));
        cJSON_AddItemToObject(best, "barrier", json_number(L->rows[L->best].barrier));
        cJSON_AddItemToObject(worst, "order", jorder8(L->orders, n, L->rows[L->worst].id));
        cJSON_AddItemToObject(worst, "barrier", json_number(L->rows[L->worst].barrier));
    }
    cJSON_AddItemToObject(root, "best", best);
    cJSON_AddItemToObject(root, "worst", worst);
    cJSON *orders = cJSON_CreateArray();
    for (long k = 0; k < L->ndone; k++) {
        const ls_row *r = &L->rows[k];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToObject(o, "order", jorder8(L->orders, n, r->id));
        cJSON_AddItemToObject(o, "barrier", json_number(r->barrier));
        if (L->boot_resamples) cJSON_AddItemToObject(o, "barrier_ci95", json_pair(r->bar_lo, r->bar_hi));
        if (units) cJSON_AddItemToObject(o, "unit_loss", junits(L->unit_loss + (size_t)r->id * L->T * L->nseq, L->T, L->nseq));
        cJSON_AddItemToObject(o, "acc_barrier", json_number(r->acc_barrier));
        cJSON_AddItemToObject(o, "loss_auc", json_number(r->auc));
        if (L->has_proxy) cJSON_AddItemToObject(o, "proxy_barrier", json_number(L->proxy_barrier[r->id]));
        cJSON_AddItemToArray(orders, o);
    }
    cJSON_AddItemToObject(root, "orders", orders);
    if (L->objective) cJSON_AddStringToObject(root, "objective", L->objective);
    if (L->has_proxy) { // the layer-only barrier at the block's own inputs, beside the network's
        cJSON *px = cJSON_CreateObject();
        cJSON_AddStringToObject(px, "what", "layer-only barrier at the block's own inputs");
        cJSON_AddItemToObject(px, "spearman", json_number(L->proxy_spearman));
        cJSON_AddItemToObject(px, "best_order", jorder8(L->orders, n, L->proxy_best_id));
        cJSON_AddItemToObject(px, "best_proxy_barrier", json_number(L->proxy_barrier[L->proxy_best_id]));
        cJSON_AddNumberToObject(px, "best_network_rank", (double)L->proxy_best_rank);
        cJSON_AddNumberToObject(px, "seconds", L->proxy_secs);
        cJSON_AddItemToObject(root, "proxy", px);
    }
    // where the wall time went: loading (when the caller measured it), each step, in all
    cJSON *prov = prov_json(), *secs = cJSON_CreateObject();
    if (L->secs_load > 0) cJSON_AddNumberToObject(secs, "load", L->secs_load);
    for (int s = 0; s < LS_STEPS; s++) cJSON_AddNumberToObject(secs, ls_step_name(s, 1), L->secs_step[s]);
    cJSON_AddNumberToObject(secs, "total", L->secs_total);
    cJSON_AddItemToObject(prov, "seconds", secs);
    cJSON *cpu = cJSON_CreateObject(); // CPU seconds, every thread: the cost on a shared machine
    for (int s = 0; s < LS_STEPS; s++) cJSON_AddNumberToObject(cpu, ls_step_name(s, 1), L->cpu_step[s]);
    cJSON_AddItemToObject(prov, "cpu_seconds", cpu);
    cJSON_AddItemToObject(root, "provenance", prov);
    size_t len;
    char *buf = json_print(root, 0, &len);
    if (!buf) return ms_fail(err, "%s: could not format the JSON report", path);
    int rc = write_text(path, buf, len, "JSON report", err);
    free(buf);
    return rc;
}

static void csv_num(FILE *f, double v) {
    if (isnan(v)) fputs("nan", f);
    else fprintf(f, "%.9g", v);
}

/* how the file was made, as "# key: value" lines before the header */
static void csv_provenance(FILE *f) {
    char *p = prov_text("# ");
    fputs(p, f);
    free(p);
}

cJSON *ls_screen_json(const ls_screen *S) {
    cJSON *o = cJSON_CreateObject();
    long nfull = S->full.norders;
    cJSON_AddNumberToObject(o, "units", S->units);
    cJSON_AddNumberToObject(o, "of_units", S->total_units);
    cJSON_AddStringToObject(o, "unit", S->unit ? S->unit : "samples");
    cJSON_AddStringToObject(o, "subset", "units floor(u N / m), u = 0 .. m-1");
    cJSON_AddNumberToObject(o, "keep", S->keep);
    cJSON_AddNumberToObject(o, "evaluated_fully", (double)nfull);
    cJSON_AddNumberToObject(o, "screened_only", (double)(S->nrows - nfull));
    cJSON_AddNumberToObject(o, "with_subset_interval", (double)S->with_ci);
    cJSON_AddNumberToObject(o, "undistinguished_from_best", (double)S->undistinguished);
    cJSON_AddNumberToObject(o, "undistinguished_screened_out", (double)S->undistinguished_out);
    cJSON *rows = cJSON_CreateArray();
    for (long i = 0; i < S->nrows; i++) {
        const ls_screen_row *w = &S->rows[i];
        cJSON *r = cJSON_CreateObject();
        cJSON_AddItemToObject(r, "order", jorder8(w->order, S->sub.n, 0));
        cJSON_AddStringToObject(r, "evaluated", w->full_id >= 0 ? "whole set" : "subset");
        cJSON_AddItemToObject(r, "subset_barrier", json_number(w->sub_bar));
        cJSON_AddItemToObject(r, "subset_ci95", isnan(w->sub_lo) ? cJSON_CreateNull() : json_pair(w->sub_lo, w->sub_hi));
        cJSON_AddNumberToObject(r, "subset_rank", (double)w->sub_rank);
        cJSON_AddItemToObject(r, "barrier", json_number(w->bar));
        if (w->full_id >= 0 && S->full.boot_resamples) cJSON_AddItemToObject(r, "barrier_ci95", json_pair(w->bar_lo, w->bar_hi));
        if (w->undistinguished >= 0) cJSON_AddBoolToObject(r, "undistinguished_from_best", w->undistinguished);
        cJSON_AddItemToArray(rows, r);
    }
    cJSON_AddItemToObject(o, "orders", rows);
    return o;
}

int ls_screen_write_csv(const ls_screen *S, const char *path, ms_err *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ms_fail(err, "%s: out of memory formatting the CSV", path);
    csv_provenance(f);
    fputs("subset_rank,order,subset_barrier,subset_lo,subset_hi,barrier,barrier_lo,barrier_hi,evaluated,"
          "undistinguished\n",
          f);
    for (long i = 0; i < S->nrows; i++) {
        const ls_screen_row *w = &S->rows[i];
        int p[LS_MAX_N];
        char ord[LS_MAX_N * 4 + 1];
        ls_order_get(w->order, S->sub.n, 0, p);
        moe_order_format(ord, sizeof ord, p, S->sub.n);
        fprintf(f, "%ld,%s", w->sub_rank, ord);
        const double v[6] = {w->sub_bar, w->sub_lo, w->sub_hi, w->bar, w->bar_lo, w->bar_hi};
        for (int k = 0; k < 6; k++) fputc(',', f), csv_num(f, v[k]);
        fprintf(f, ",%s,%s\n", w->full_id >= 0 ? "whole set" : "subset",
                w->undistinguished < 0 ? "" : w->undistinguished ? "yes" : "no");
    }
    fclose(f);
    int rc = write_text(path, buf, len, "CSV report", err);
    free(buf);
    return rc;
}


void ls_csv_header(FILE *f, int has_proxy) {
    fputs(has_proxy ? "rank,order,barrier,acc_barrier,loss_auc,tied,tie_class,proxy_barrier"
                    : "rank,order,barrier,acc_barrier,loss_auc,tied,tie_class",
          f);
    fputs(",barrier_ci95_lo,barrier_ci95_hi\n", f);
}

void ls_csv_row(FILE *f, long rank, const int *order, int n, const ls_row *r, long tied, long cls,
                const double *proxy, int ci, const char *last) {
    char ord[LS_MAX_N * 4 + 1];
    moe_order_format(ord, sizeof ord, order, n);
    fprintf(f, "%ld,%s,", rank, ord);
    csv_num(f, r->barrier);
    fputc(',', f);
    csv_num(f, r->acc_barrier);
    fputc(',', f);
    csv_num(f, r->auc);
    fprintf(f, ",%ld,%ld", tied, cls);
    if (proxy) fputc(',', f), csv_num(f, *proxy);
    fputc(',', f);
    csv_num(f, ci ? r->bar_lo : NAN);
    fputc(',', f);
    csv_num(f, ci ? r->bar_hi : NAN);
    if (last) fprintf(f, ",%s", last);
    fputc('\n', f);
}

int landscape_write_csv(const landscape *L, const char *path, ms_err *err) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ms_fail(err, "%s: out of memory formatting the CSV", path);
    // rank and tied with the tolerance tau (rank.h); tie_class numbers the
    // classes of barriers within tau from 0 (rows are sorted by barrier)
    csv_provenance(f);
    ls_csv_header(f, L->has_proxy);
    long nr = L->ndone > 0 ? L->ndone : 1;
    long *rk = ms_malloc((size_t)nr * 3 * sizeof(long)); // (3, ndone): rank, tied, class
    if (L->ndone > 0) {
        rank_view v = {.count = L->ndone, .width = L->n, .barrier = &L->rows[0].barrier,
                       .stride = sizeof(ls_row)};
        rank_table(&v, L->tau, rk, rk + nr, rk + 2 * nr);
    }
    for (long k = 0; k < L->ndone; k++) {
        const ls_row *r = &L->rows[k];
        int p[LS_MAX_N];
        ls_order_get(L->orders, L->n, r->id, p);
        ls_csv_row(f, rk[k], p, L->n, r, rk[nr + k], rk[2 * nr + k], L->has_proxy ? &L->proxy_barrier[r->id] : NULL,
                   L->boot_resamples > 0, NULL);
    }
    free(rk);
    fclose(f);
    int rc = write_text(path, buf, len, "CSV report", err);
    free(buf);
    return rc;
}

int curves_write_csv(const ls_curve *curves, const char *const *names, int nc, const char *path,
                     ms_err *err) {
    if (nc <= 0) return ms_fail(err, "%s: no curves to write", path);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ms_fail(err, "%s: out of memory formatting the CSV", path);
    csv_provenance(f);
    fputs("t", f);
    for (int c = 0; c < nc; c++) {
        fprintf(f, ",%s_loss", names[c]);
        if (curves[c].acc) fprintf(f, ",%s_acc", names[c]);
    }
    fputc('\n', f);
    int T = curves[0].T;
    for (int m = 0; m < T; m++) {
        fprintf(f, "%.9g", ls_t(m, T));
        for (int c = 0; c < nc; c++) {
            fputc(',', f);
            csv_num(f, curves[c].loss[m]);
            if (curves[c].acc) {
                fputc(',', f);
                csv_num(f, curves[c].acc[m]);
            }
        }
        fputc('\n', f);
    }
    fclose(f);
    int rc = write_text(path, buf, len, "CSV", err);
    free(buf);
    return rc;
}
