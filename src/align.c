/* align.c - Algorithm 1 applied to a model: B re-expressed in A's
 * basis. Step 1 picks the expert order pi by a linear assignment on a cost
 * matrix; step 2 weight-matches the hidden units of each slot. Both steps are
 * symmetries, so the result computes the same function as B. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align.h"
#include "lap.h"
#include "symmetry.h"
#include "weight_matching.h"

void align_opts_default(align_opts *o) {
    o->order_stage = 1;
    o->wm_stage = 1;
    o->method = COST_EXPERT;
    o->center = 1;
    o->order = NULL;
    o->any_order = 0;
}

void align_result_free(align_result *r) {
    if (!r) return;
    free(r->order);
    free(r->hidden_perm);
    free(r->shared_order);
    free(r->shared_perm);
    memset(r, 0, sizeof *r);
}

static void identity(int *p, int n) {
    for (int i = 0; i < n; i++) p[i] = i;
}

static int check_perm(const int *p, int n, ms_err *err) {
    char *seen = ms_calloc((size_t)n, 1);
    int ok = 1;
    for (int i = 0; i < n && ok; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]])
            ok = 0;
        else
            seen[p[i]] = 1;
    }
    free(seen);
    return ok ? 0 : ms_fail(err, "the given expert order is not a permutation of 0..%d", n - 1);
}

/* Order of ns experts by lap_solve on an (ns,ns) cost. */
static int order_by_cost(const double *C, int ns, int *order, double *total, ms_err *err) {
    if (lap_solve(C, ns, ns, 0, order, total, err)) return ms_prefix(err, "expert order");
    return 0;
}

/* sub (m,m) = C's block of slot group a against B's group b */
static void group_block(const double *C, int n, int m, int a, int b, double *sub) {
    for (int i = 0; i < m; i++)
        for (int j = 0; j < m; j++)
            sub[(size_t)i * m + j] = C[(size_t)(a * m + i) * n + (size_t)(b * m + j)];
}

int align_order_grouped(const double *C, int n, int G, int *order, double *total, ms_err *err) {
    int m = n / G;
    double *sub = ms_malloc((size_t)m * m * sizeof(double));  // (m,m) one pair of groups
    double *T = ms_malloc((size_t)G * G * sizeof(double));    // (G,G) inner totals
    int *inner = ms_malloc((size_t)G * G * m * sizeof(int)); // (G,G,m) inner assignments
    int *outer = ms_malloc((size_t)G * sizeof(int));
    int rc = 0;
    for (int a = 0; a < G && !rc; a++)
        for (int b = 0; b < G && !rc; b++) {
            group_block(C, n, m, a, b, sub);
            rc = lap_solve(sub, m, m, 0, inner + ((size_t)a * G + b) * m, &T[(size_t)a * G + b], err);
        }
    if (!rc) rc = lap_solve(T, G, G, 0, outer, total, err);
    if (!rc)
        for (int a = 0; a < G; a++) {
            const int *in = inner + ((size_t)a * G + outer[a]) * m;
            for (int i = 0; i < m; i++) order[a * m + i] = outer[a] * m + in[i];
        }
    free(sub);
    free(T);
    free(inner);
    free(outer);
    return rc ? ms_prefix(err, "expert order (groups)") : 0;
}

/* The best group-preserving order other than best (an optimal one): it keeps
 * best's group map and takes the second-best inner assignment of one pair of
 * groups, or it takes the second-best group map with optimal inner
 * assignments; whichever costs less. */
static int second_grouped(const double *C, int n, int G, const int *best, int *second,
                          double *total, ms_err *err) {
    int m = n / G, rc = 0;
    double *sub = ms_malloc((size_t)m * m * sizeof(double)); // (m,m)
    double *T = ms_malloc((size_t)G * G * sizeof(double));   // (G,G) optimal inner totals
    int *in = ms_malloc((size_t)(G + 2) * m * sizeof(int)), *in2 = in + m, *ord = in2 + m;
    int *outer = ms_malloc((size_t)G * 2 * sizeof(int)), *outer2 = outer + G;
    int *tmp = ms_malloc((size_t)n * sizeof(int));
    double btot = 0.0, cand = INFINITY;
    for (int i = 0; i < n; i++) btot += C[(size_t)i * n + best[i]];
    for (int a = 0; a < G; a++) outer[a] = best[a * m] / m;
    // (1) one pair of groups re-assigned inside: best + that pair's inner margin
    for (int a = 0; a < G && m >= 2 && !rc; a++) {
        int b = outer[a];
        double cur = 0.0, s2;
        group_block(C, n, m, a, b, sub);
        for (int i = 0; i < m; i++) {
            in[i] = best[a * m + i] - b * m;
            cur += sub[(size_t)i * m + in[i]];
        }
        rc = lap_second_best(sub, m, 0, in, in2, &s2, err);
        if (!rc && btot - cur + s2 < cand) {
            cand = btot - cur + s2;
            memcpy(second, best, (size_t)n * sizeof(int));
            for (int i = 0; i < m; i++) second[a * m + i] = b * m + in2[i];
        }
    }
    // (2) another map of the groups, each pair optimal inside
    if (G >= 2 && !rc) {
        for (int a = 0; a < G && !rc; a++)
            for (int b = 0; b < G && !rc; b++) {
                group_block(C, n, m, a, b, sub);
                rc = lap_solve(sub, m, m, 0, ord, &T[(size_t)a * G + b], err);
            }
        double t2;
        if (!rc) rc = lap_second_best(T, G, 0, outer, outer2, &t2, err);
        if (!rc && t2 < cand) {
            cand = 0.0;
            for (int a = 0; a < G && !rc; a++) {
                group_block(C, n, m, a, outer2[a], sub);
                double ta;
                rc = lap_solve(sub, m, m, 0, ord, &ta, err);
                for (int i = 0; i < m; i++) tmp[a * m + i] = outer2[a] * m + ord[i];
            }
            for (int i = 0; i < n; i++) cand += C[(size_t)i * n + tmp[i]];
            memcpy(second, tmp, (size_t)n * sizeof(int));
        }
    }
    if (!rc && cand == INFINITY) rc = ms_fail(err, "no other group-preserving order");
    *total = cand;
    free(sub);
    free(T);
    free(in);
    free(outer);
    free(tmp);
    return rc;
}

int align_second_best(const moe_config *c, const double *C, const int *best, int *second,
                      double *total, ms_err *err) {
    int G = moe_groups_active(c);
    if (G > 1) return second_grouped(C, c->n, G, best, second, total, err);
    return lap_second_best(C, c->n, 0, best, second, total, err);
}

int align_order(const moe_config *c, const double *C, int *order, double *total, ms_err *err) {
    if (moe_groups_active(c)) return align_order_grouped(C, c->n, c->n_group, order, total, err);
    return order_by_cost(C, c->n, order, total, err);
}

static void record_meta(moe_model *out, const moe_model *A, const align_opts *o,
                        const align_result *res) {
    int n = out->cfg.n;
    const char *method = o->order ? "given" : o->order_stage ? cost_method_name(o->method)
                                                             : "identity";
    char *ord = moe_order_string(res->order, n);
    char num[64];
    moe_meta_set(out, "moescope.align.method", method);
    moe_meta_set(out, "moescope.align.order", ord);
    moe_meta_set(out, "moescope.align.centered", o->center ? "1" : "0");
    moe_meta_set(out, "moescope.align.weight_matching", o->wm_stage ? "1" : "0");
    snprintf(num, sizeof num, "%.17g", res->cost_total);
    moe_meta_set(out, "moescope.align.cost_total", num);
    moe_meta_set(out, "moescope.align.reference", A->path ? A->path : "");
    if (out->cfg.s > 0) {
        char *sord = moe_order_string(res->shared_order, out->cfg.s);
        moe_meta_set(out, "moescope.align.shared_order", sord);
        free(sord);
    }
    free(ord);
}

/* dst = src with hidden permutation P applied (unit u of dst is unit P[u] of
 * src: rows of fc1/fc3 and their biases, columns of fc2), out of place, so the
 * aligned model is written in one pass without an intermediate copy of B. */
static void expert_copy_permuted(moe_expert *dst, const moe_expert *src, const moe_config *c,
                                 const int *P) {
    int h = c->h, d = c->d;
    size_t rowb = (size_t)d * sizeof(float);
    for (int u = 0; u < h; u++) {
        // W1 (h,d), b1 (h)
        memcpy(dst->fc1_w + (size_t)u * d, src->fc1_w + (size_t)P[u] * d, rowb);
        dst->fc1_b[u] = src->fc1_b[P[u]];
        if (moe_act_glu(c->act)) {
            memcpy(dst->fc3_w + (size_t)u * d, src->fc3_w + (size_t)P[u] * d, rowb);
            dst->fc3_b[u] = src->fc3_b[P[u]];
        }
    }
    // W2 (d,h): column u <- column P[u]
    for (int r = 0; r < d; r++) {
        const float *s = src->fc2_w + (size_t)r * h;
        float *t = dst->fc2_w + (size_t)r * h;
        for (int u = 0; u < h; u++) t[u] = s[P[u]];
    }
    memcpy(dst->fc2_b, src->fc2_b, rowb);
}

/* out gets B's architecture, metadata, gate rows in expert order pi, and B's
 * head; the experts are filled slot by slot by the caller. */
static void alloc_like(moe_model *out, const moe_model *B, const int *pi) {
    const moe_config *c = &B->cfg;
    int n = c->n, d = c->d;
    moe_alloc(out, c);
    out->path = B->path ? ms_strdup(B->path) : NULL;
    out->layer = B->layer ? ms_strdup(B->layer) : NULL;
    moe_meta_copy(out, B);
    for (int i = 0; i < n; i++) { // slot i <- gate row pi[i] (it moves with its expert)
        memcpy(out->gate_w + (size_t)i * d, B->gate_w + (size_t)pi[i] * d,
               (size_t)d * sizeof(float));
        out->gate_b[i] = B->gate_b[pi[i]];
        if (c->has_corr_bias) out->corr_b[i] = B->corr_b[pi[i]]; // a selection bias is part of the row
    }
    // parts that belong to no expert slot: the shared expert's gate, the output bias
    if (c->shared_gated) memcpy(out->shared_gate_w, B->shared_gate_w, (size_t)d * sizeof(float));
    if (c->has_out_bias) memcpy(out->out_b, B->out_b, (size_t)d * sizeof(float));
    if (c->has_norm) {
        memcpy(out->norm_w, B->norm_w, (size_t)d * sizeof(float));
        memcpy(out->norm_b, B->norm_b, (size_t)d * sizeof(float));
    }
    if (c->has_head) {
        memcpy(out->head_w, B->head_w, (size_t)c->C * d * sizeof(float));
        memcpy(out->head_b, B->head_b, (size_t)c->C * sizeof(float));
    }
}

/* Fill out's experts ea-matched: slot i <- src[order[i]] with weight matching
 * against ref[i] when wm is on. S is the (h,h) workspace. */
static int fill_experts(const moe_expert *ref, const moe_expert *src, moe_expert *dst, int count,
                        const int *order, int *perms, int wm, const moe_config *c, double *S,
                        const char *what, ms_err *err) {
    int h = c->h;
    for (int i = 0; i < count; i++) {
        int *P = perms + (size_t)i * h;
        const moe_expert *e = &src[order[i]];
        if (wm) {
            if (wm_match_into(&ref[i], e, c, P, NULL, S, err))
                return ms_prefix(err, "%s slot %d (B's expert %d)", what, i, order[i]);
        } else {
            identity(P, h);
        }
        expert_copy_permuted(&dst[i], e, c, P);
    }
    return 0;
}

int align_models(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                 align_result *res, ms_err *err) {
    memset(res, 0, sizeof *res);
    memset(out, 0, sizeof *out);
    if (moe_check_compatible(A, B, err)) return -1;
    const moe_config *c = &A->cfg;
    moe_config sc = moe_shared_config(c);
    int n = c->n, h = c->h, s = c->s, hmax = sc.h > h ? sc.h : h;
    res->order = ms_malloc((size_t)n * sizeof(int));
    res->hidden_perm = ms_malloc((size_t)n * h * sizeof(int));
    res->shared_order = ms_malloc((size_t)(s > 0 ? s : 1) * sizeof(int));
    res->shared_perm = ms_malloc((size_t)(s > 0 ? s : 1) * sc.h * sizeof(int));
    res->cost_total = 0.0;

    // step 1: expert order pi
    if (o->order) {
        if (check_perm(o->order, n, err)) goto fail;
        if (!o->any_order && !moe_order_in_group(c, o->order)) {
            ms_fail(err, "the given expert order splits a group of %d experts: group-limited "
                         "routing keeps its function only under group-preserving orders",
                    c->n / c->n_group);
            goto fail;
        }
        memcpy(res->order, o->order, (size_t)n * sizeof(int));
    } else if (o->order_stage) {
        double *C = ms_malloc((size_t)n * n * sizeof(double)); // (n,n)
        int rc = cost_matrix(A, B, o->method, o->center, C, err);
        if (!rc) rc = align_order(c, C, res->order, &res->cost_total, err);
        free(C);
        if (rc) goto fail;
    } else {
        identity(res->order, n);
    }
    // shared experts: ordered by the expert cost whenever the order stage runs
    if (s > 0) {
        if (o->order || o->order_stage) {
            double *Cs = ms_malloc((size_t)s * s * sizeof(double)); // (s,s)
            double tot;
            int rc = cost_matrix_shared(A, B, Cs, err);
            if (!rc) rc = order_by_cost(Cs, s, res->shared_order, &tot, err);
            free(Cs);
            if (rc) goto fail;
        } else {
            identity(res->shared_order, s);
        }
    }

    // step 2: weight matching, one slot at a time with one (h,h) workspace,
    // each expert written straight into its slot of out
    alloc_like(out, B, res->order);
    double *S = o->wm_stage ? ms_malloc((size_t)hmax * hmax * sizeof(double)) : NULL; // (h,h)
    int rc = fill_experts(A->experts, B->experts, out->experts, n, res->order, res->hidden_perm,
                          o->wm_stage, c, S, "expert", err);
    if (!rc && s > 0)
        rc = fill_experts(A->shared, B->shared, out->shared, s, res->shared_order,
                          res->shared_perm, o->wm_stage, &sc, S, "shared expert", err);
    free(S);
    if (rc) goto fail;
    record_meta(out, A, o, res);
    return 0;

fail:
    moe_free(out);
    align_result_free(res);
    return -1;
}
