/* align.c - Algorithm 1 applied to a model: B re-expressed in A's
 * basis. Step 1 picks the expert order pi by a linear assignment on a cost
 * matrix; step 2 weight-matches the hidden units of each slot. Both steps are
 * symmetries, so the result computes the same function as B. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "align/lap.h"
#include "core/progress.h"
#include "model/symmetry.h"
#include "align/weight_matching.h"

void align_opts_default(align_opts *o) {
    o->order_stage = 1;
    o->wm_stage = 1;
    o->method = COST_EXPERT;
    o->center = 1;
    o->order = NULL;
    o->any_order = 0;
    o->X = NULL;
    o->N = o->d = 0;
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

/* Row u of M (rows, cols) <- row P[u], in place along the cycles of P with one
 * row of scratch (tmp, cols floats; seen, rows bytes). */
static void rows_gather(float *M, int rows, int cols, const int *P, char *seen, float *tmp) {
    size_t rb = (size_t)cols * sizeof(float);
    memset(seen, 0, (size_t)rows);
    for (int s = 0; s < rows; s++) {
        if (seen[s]) continue;
        memcpy(tmp, M + (size_t)s * cols, rb);
        for (int u = s;;) {
            seen[u] = 1;
            int j = P[u];
            if (j == s) {
                memcpy(M + (size_t)u * cols, tmp, rb);
                break;
            }
            memcpy(M + (size_t)u * cols, M + (size_t)j * cols, rb);
            u = j;
        }
    }
}

/* Hidden permutation P applied to e in place: unit u becomes unit P[u] (rows of
 * fc1/fc3 and their biases, columns of fc2). scratch: max(d, h) floats + h bytes. */
static void expert_permute_hidden(moe_expert *e, const moe_config *c, const int *P, float *tmp,
                                  char *seen) {
    int h = c->h, d = c->d;
    rows_gather(e->fc1_w, h, d, P, seen, tmp); // W1 (h,d)
    rows_gather(e->fc1_b, h, 1, P, seen, tmp);
    if (moe_act_glu(c->act)) {
        rows_gather(e->fc3_w, h, d, P, seen, tmp);
        rows_gather(e->fc3_b, h, 1, P, seen, tmp);
    }
    for (int r = 0; r < d; r++) { // W2 (d,h): column u <- column P[u]
        float *row = e->fc2_w + (size_t)r * h;
        memcpy(tmp, row, (size_t)h * sizeof(float));
        for (int u = 0; u < h; u++) row[u] = tmp[P[u]];
    }
}

static void swap_floats(float *x, float *y, size_t len) {
    float buf[4096];
    for (size_t o = 0; o < len; o += 4096) {
        size_t k = len - o < 4096 ? len - o : 4096;
        memcpy(buf, x + o, k * sizeof(float));
        memcpy(x + o, y + o, k * sizeof(float));
        memcpy(y + o, buf, k * sizeof(float));
    }
}

/* Slot i of the count experts (each one run of per floats from its fc1_w) gets
 * expert order[i]: whole experts swapped along the cycles of the order, so no
 * second copy of the layer is made. */
static void experts_reorder(moe_expert *ex, int count, const int *order, size_t per) {
    char *seen = ms_calloc((size_t)count, 1);
    for (int s = 0; s < count; s++)
        for (int i = s; !seen[i];) {
            seen[i] = 1;
            int j = order[i];
            if (j == s) break;
            swap_floats(ex[i].fc1_w, ex[j].fc1_w, per);
            i = j;
        }
    free(seen);
}

/* B's gate rows (and selection biases) in expert order pi: they move with their experts. */
static void gate_reorder(moe_model *B, const int *pi) {
    const moe_config *c = &B->cfg;
    int n = c->n, d = c->d;
    float *w = ms_malloc((size_t)n * (d + 2) * sizeof(float)), *b = w + (size_t)n * d, *e = b + n;
    memcpy(w, B->gate_w, (size_t)n * d * sizeof(float));
    for (int i = 0; i < n; i++) {
        memcpy(B->gate_w + (size_t)i * d, w + (size_t)pi[i] * d, (size_t)d * sizeof(float));
        b[i] = B->gate_b[pi[i]];
        if (c->has_corr_bias) e[i] = B->corr_b[pi[i]];
    }
    memcpy(B->gate_b, b, (size_t)n * sizeof(float));
    if (c->has_corr_bias) memcpy(B->corr_b, e, (size_t)n * sizeof(float));
    free(w);
}

int align_match_hidden(const moe_expert *a, const moe_expert *b, const moe_config *c, cost_method m,
                       const float *X, int N, int *P, double *S, ms_err *err) {
    const cost_method_info *mi = &cost_methods[m];
    double *own = S ? NULL : ms_malloc((size_t)c->h * c->h * sizeof(double)); // (h, h)
    int rc = mi->match_hidden && X ? mi->match_hidden(a, b, c, X, N, P, S ? S : own, err)
                                   : wm_match_into(a, b, c, P, NULL, S ? S : own, err);
    free(own);
    return rc;
}

int align_method_reads_set(cost_method m) {
    return cost_methods[m].needs == COST_NEEDS_EVALSET || cost_methods[m].match_hidden;
}

/* The hidden permutation P (h) of b onto a under o (align_match_hidden). S is the
 * (h,h) workspace. */
static int match_pair(const moe_expert *a, const moe_expert *b, const moe_config *c, const align_opts *o, int *P,
                      double *S, ms_err *err) {
    return align_match_hidden(a, b, c, o->method, o->X, o->N, P, S, err);
}

/* Weight-match slot i of ex (already in order) against ref[i] and permute it in
 * place, or record the identity when the weight-matching stage is off. S is the
 * (h,h) workspace. */
static int match_experts(const moe_expert *ref, moe_expert *ex, int count, const int *order,
                         int *perms, const align_opts *o, const moe_config *c, double *S, const char *what,
                         ms_err *err) {
    int wm = o->wm_stage;
    int h = c->h, big = c->d > h ? c->d : h;
    float *tmp = ms_malloc((size_t)big * sizeof(float));
    char *seen = ms_malloc((size_t)h);
    int rc = 0;
    for (int i = 0; i < count && !rc; i++) {
        int *P = perms + (size_t)i * h;
        if (progress_cancelled()) { // a listener's cancel (progress.h)
            rc = ms_fail(err, "cancelled");
            break;
        }
        if (!wm) {
            identity(P, h);
            continue;
        }
        if (match_pair(&ref[i], &ex[i], c, o, P, S, err))
            rc = ms_prefix(err, "%s slot %d (B's expert %d)", what, i, order[i]);
        else
            expert_permute_hidden(&ex[i], c, P, tmp, seen);
        progress_add(1);
    }
    free(tmp);
    free(seen);
    return rc;
}

/* ord (s): B's shared experts' order, by the expert cost whenever the order
 * stage runs; one shared expert (DeepSeek-V3, Qwen) has only the one order, so
 * no cost (at DeepSeek-V3 size its cost alone is a TFLOP). */
static int shared_order(const moe_model *A, const moe_model *B, const align_opts *o, int *ord, ms_err *err) {
    int s = A->cfg.s;
    if (s <= 1 || !(o->order || o->order_stage)) {
        identity(ord, s);
        return 0;
    }
    double *Cs = ms_malloc((size_t)s * s * sizeof(double)); // (s,s)
    double tot;
    int rc = cost_matrix_shared(A, B, Cs, err);
    if (!rc) rc = order_by_cost(Cs, s, ord, &tot, err);
    free(Cs);
    return rc ? -1 : 0;
}

/* Step 1: the expert order (and the shared experts' order) into res. */
static int align_orders(const moe_model *A, const moe_model *B, const expert_source *sa,
                        const expert_source *sb, const align_opts *o, align_result *res,
                        ms_err *err) {
    const moe_config *c = &A->cfg;
    int n = c->n, s = c->s;
    if (o->order) {
        if (check_perm(o->order, n, err)) return -1;
        if (!o->any_order && !moe_order_in_group(c, o->order))
            return ms_fail(err, "the given expert order splits a group of %d experts: "
                                "group-limited routing keeps its function only under "
                                "group-preserving orders",
                           c->n / c->n_group);
        memcpy(res->order, o->order, (size_t)n * sizeof(int));
    } else if (o->order_stage) {
        double *C = ms_malloc((size_t)n * n * sizeof(double)); // (n,n)
        cost_input in = {.A = A, .B = B, .sa = sa, .sb = sb, .center = o->center, .X = o->X, .N = o->N, .d = o->d};
        int rc = cost_matrix_in(o->method, &in, C, err);
        if (!rc) rc = align_order(c, C, res->order, &res->cost_total, err);
        free(C);
        if (rc) return -1;
    } else {
        identity(res->order, n);
    }
    return s > 0 ? shared_order(A, B, o, res->shared_order, err) : 0;
}

/* (largest |a - b|, largest |a|) so far, taking in one pair of parameters */
static inline void take(double m[2], float a, float b) {
    double x = fabs((double)a), y = fabs((double)a - (double)b);
    if (x > m[1]) m[1] = x;
    if (y > m[0]) m[0] = y;
}

/* res's expert_diff and expert_scale take in expert a against expert b with its
 * hidden units moved by P (slot u of the aligned b is b's unit P[u]; NULL: as
 * they lie): the largest |a - aligned b| and the largest |a|. */
static void note_diff(align_result *res, const moe_expert *a, const moe_expert *b,
                      const moe_config *c, const int *P) {
    int h = c->h, d = c->d, glu = moe_act_glu(c->act);
    double m[2] = {res->expert_diff, res->expert_scale};
    for (int u = 0; u < h; u++) { // W1, W3 (h,d): row u of the aligned b is row P[u]
        size_t pu = (size_t)(P ? P[u] : u), ru = (size_t)u * d;
        for (int j = 0; j < d; j++) take(m, a->fc1_w[ru + j], b->fc1_w[pu * d + j]);
        for (int j = 0; j < d && glu; j++) take(m, a->fc3_w[ru + j], b->fc3_w[pu * d + j]);
        take(m, a->fc1_b[u], b->fc1_b[pu]);
        if (glu) take(m, a->fc3_b[u], b->fc3_b[pu]);
    }
    for (int r = 0; r < d; r++) { // W2 (d,h): column u of the aligned b is column P[u]
        const float *ar = a->fc2_w + (size_t)r * h, *br = b->fc2_w + (size_t)r * h;
        for (int u = 0; u < h; u++) take(m, ar[u], br[P ? P[u] : u]);
        take(m, a->fc2_b[r], b->fc2_b[r]);
    }
    res->expert_diff = m[0], res->expert_scale = m[1];
}

/* the shared experts, aligned where they lie in B, into res's difference */
static void note_shared(align_result *res, const moe_model *A, const moe_model *B) {
    moe_config sc = moe_shared_config(&A->cfg);
    for (int j = 0; j < A->cfg.s; j++) note_diff(res, &A->shared[j], &B->shared[j], &sc, NULL);
}

/* The result's arrays, sized for c. */
static void result_alloc(align_result *res, const moe_config *c) {
    moe_config sc = moe_shared_config(c);
    int n = c->n, s = c->s;
    res->order = ms_malloc((size_t)n * sizeof(int));
    res->hidden_perm = ms_malloc((size_t)n * c->h * sizeof(int));
    res->shared_order = ms_malloc((size_t)(s > 0 ? s : 1) * sizeof(int));
    res->shared_perm = ms_malloc((size_t)(s > 0 ? s : 1) * sc.h * sizeof(int));
    res->cost_total = 0.0;
    res->expert_diff = res->expert_scale = NAN;
}

/* Both paths' start: the result's arrays and Step 1 (the orders); on failure
 * res holds nothing. */
static int align_start(const moe_model *A, const moe_model *B, const expert_source *sa,
                       const expert_source *sb, const align_opts *o, align_result *res, ms_err *err) {
    memset(res, 0, sizeof *res);
    if (moe_check_compatible(A, B, err)) return -1;
    result_alloc(res, &A->cfg);
    if (align_orders(A, B, sa, sb, o, res, err)) {
        align_result_free(res);
        return -1;
    }
    return 0;
}

/* Step 2's workspace, one (hmax, hmax) matrix for every slot, and its progress
 * line; NULL without weight matching. */
static double *wm_begin(const align_opts *o, const moe_config *c) {
    moe_config sc = moe_shared_config(c);
    size_t hmax = (size_t)(sc.h > c->h ? sc.h : c->h);
    if (!o->wm_stage) return NULL;
    progress_begin("weight matching", c->n + c->s, "experts");
    return ms_malloc(hmax * hmax * sizeof(double)); // (h,h)
}

/* match_experts for mapped shared experts (B's not moved: align_models_mapped makes
 * slot j a view of B's shared expert shared_order[j] with shared_perm's hidden order):
 * each pair decoded in turn, matched, its difference noted */
static int match_shared_mapped(const moe_model *A, const moe_model *B, const align_opts *o, double *S,
                               align_result *res, ms_err *err) {
    moe_config sc = moe_shared_config(&A->cfg);
    int h = sc.h, rc = 0;
    size_t es = moe_expert_size(&sc);
    float *mem = o->wm_stage ? ms_malloc(2 * es * sizeof(float)) : NULL;
    for (int j = 0; j < A->cfg.s && !rc; j++) {
        int *P = res->shared_perm + (size_t)j * h;
        if (progress_cancelled()) {
            rc = ms_fail(err, "cancelled");
            break;
        }
        if (!o->wm_stage) {
            identity(P, h);
            continue;
        }
        moe_expert ta, tb;
        const moe_expert *a = moe_shared_floats(A, j, &ta, mem);
        const moe_expert *b = moe_shared_floats(B, res->shared_order[j], &tb, mem + es);
        if (match_pair(a, b, &sc, o, P, S, err))
            rc = ms_prefix(err, "shared expert slot %d (B's expert %d)", j, res->shared_order[j]);
        else
            note_diff(res, a, b, &sc, P);
        progress_add(1);
    }
    free(mem);
    return rc;
}

/* Both paths' end, rc what the routed experts' step gave: the shared experts
 * (already in their slots) weight-matched where they lie, their differences
 * noted, the record written into B's metadata; on failure res holds nothing. */
static int align_finish(const moe_model *A, moe_model *B, const align_opts *o, double *S, int rc,
                        align_result *res, ms_err *err) {
    moe_config sc = moe_shared_config(&A->cfg);
    int s = A->cfg.s, sh = moe_shared_mapped(B);
    if (!rc && s > 0)
        rc = sh ? match_shared_mapped(A, B, o, S, res, err)
                : match_experts(A->shared, B->shared, s, res->shared_order, res->shared_perm, o, &sc, S,
                                "shared expert", err);
    if (o->wm_stage) progress_end();
    free(S);
    if (rc) {
        align_result_free(res);
        return -1;
    }
    if (o->wm_stage && !sh) note_shared(res, A, B);
    record_meta(B, A, o, res);
    return 0;
}

int align_models_inplace(const moe_model *A, moe_model *B, const align_opts *o,
                         align_result *res, ms_err *err) {
    if (align_start(A, B, NULL, NULL, o, res, err)) return -1;
    const moe_config *c = &A->cfg;
    moe_config sc = moe_shared_config(c);
    int n = c->n, s = c->s;
    // step 2: B's experts moved into their slots, then weight-matched one slot at a
    // time with one (h,h) workspace, each permuted where it lies
    experts_reorder(B->experts, n, res->order, moe_expert_size(c));
    gate_reorder(B, res->order);
    if (s > 0) experts_reorder(B->shared, s, res->shared_order, moe_expert_size(&sc));
    double *S = wm_begin(o, c);
    int rc = match_experts(A->experts, B->experts, n, res->order, res->hidden_perm, o, c,
                           S, "expert", err);
    if (!rc && o->wm_stage) {
        res->expert_diff = res->expert_scale = 0;
        for (int i = 0; i < n; i++) note_diff(res, &A->experts[i], &B->experts[i], c, NULL);
    }
    return align_finish(A, B, o, S, rc, res, err);
}

int align_models_stream(const moe_model *A, const expert_source *sa, moe_model *B,
                        const expert_source *sb, const align_opts *o, align_result *res,
                        ms_err *err) {
    if (align_start(A, B, sa, sb, o, res, err)) return -1;
    const moe_config *c = &A->cfg;
    moe_config sc = moe_shared_config(c);
    int n = c->n, h = c->h, s = c->s;
    // B's gate rows and shared experts in memory, as align_models_inplace aligns them
    // (mapped shared experts: made views by align_models_mapped)
    gate_reorder(B, res->order);
    if (s > 0 && !moe_shared_mapped(B)) experts_reorder(B->shared, s, res->shared_order, moe_expert_size(&sc));
    // the routed experts: one slot at a time, A's expert and B's chosen one read,
    // matched, and only the hidden permutation kept (align_stream_slot applies it)
    size_t es = moe_expert_size(c);
    float *mem = ms_malloc(2 * es * sizeof(float));
    moe_expert ea, eb;
    moe_expert_carve(&ea, c, mem);
    moe_expert_carve(&eb, c, mem + es);
    double *S = wm_begin(o, c);
    int rc = 0;
    if (o->wm_stage) res->expert_diff = res->expert_scale = 0;
    for (int i = 0; i < n && !rc; i++) {
        int *P = res->hidden_perm + (size_t)i * h;
        if (!o->wm_stage) {
            identity(P, h);
            continue;
        }
        const moe_expert *pa = sa && sa->read ? &ea : &A->experts[i];
        const moe_expert *pb = sb && sb->read ? &eb : &B->experts[res->order[i]];
        if (pa == &ea) rc = sa->read(sa->ctx, i, EXPERT_ALL, &ea, err);
        if (!rc && pb == &eb) rc = sb->read(sb->ctx, res->order[i], EXPERT_ALL, &eb, err);
        if (!rc && match_pair(pa, pb, c, o, P, S, err))
            rc = ms_prefix(err, "expert slot %d (B's expert %d)", i, res->order[i]);
        else if (!rc) // both experts are in memory only now: compare them here
            note_diff(res, pa, pb, c, P);
        progress_add(1);
    }
    free(mem);
    if (!rc && !(sb && sb->read)) { // B held whole: its experts aligned where they lie
        experts_reorder(B->experts, n, res->order, es);
        float *tmp = ms_malloc((size_t)(c->d > h ? c->d : h) * sizeof(float));
        char *seen = ms_malloc((size_t)h);
        for (int i = 0; i < n && o->wm_stage; i++)
            expert_permute_hidden(&B->experts[i], c, res->hidden_perm + (size_t)i * h, tmp, seen);
        free(tmp);
        free(seen);
    }
    return align_finish(A, B, o, S, rc, res, err);
}

int align_stream_slot(const moe_config *c, const expert_source *sb, const align_result *res,
                      int e, moe_expert *dst, ms_err *err) {
    if (sb->read(sb->ctx, res->order[e], EXPERT_ALL, dst, err)) return -1;
    int big = c->d > c->h ? c->d : c->h;
    float *tmp = ms_malloc((size_t)big * sizeof(float));
    char *seen = ms_malloc((size_t)c->h);
    expert_permute_hidden(dst, c, res->hidden_perm + (size_t)e * c->h, tmp, seen);
    free(tmp);
    free(seen);
    return 0;
}

/* y: mapped expert x (config c) with its hidden units in order P (slot u is x's P[u]),
 * its weights views of x's, its biases moved */
static void expert_view(moe_expert *y, const moe_expert *x, const int *P, const moe_config *c) {
    int h = c->h, glu = moe_act_glu(c->act);
    for (int u = 0; u < h; u++) y->fc1_b[u] = x->fc1_b[P[u]];
    for (int u = 0; u < h && glu; u++) y->fc3_b[u] = x->fc3_b[P[u]];
    memcpy(y->fc2_b, x->fc2_b, (size_t)c->d * sizeof(float));
    y->w1 = wp_view(x->w1, P, NULL); // W1, W3 (h, d): rows; W2 (d, h): columns
    y->w3 = glu ? wp_view(x->w3, P, NULL) : x->w3;
    y->w2 = wp_view(x->w2, NULL, P);
}

int align_models_mapped(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                        align_result *res, ms_err *err) {
    memset(out, 0, sizeof *out);
    memset(res, 0, sizeof *res);
    if (!moe_is_mapped(A) || !moe_is_mapped(B)) return ms_fail(err, "align_models_mapped: a layer not mapped");
    expert_source sa = moe_mapped_source(A), sb = moe_mapped_source(B);
    moe_clone(out, B); // the floats (gate, shared experts unless mapped) aligned in it by the stream
    if (align_models_stream(A, &sa, out, &sb, o, res, err)) {
        moe_free(out);
        return -1;
    }
    const moe_config *c = &B->cfg;
    for (int i = 0; i < c->n; i++) // slot i: B's expert order[i], its hidden units moved by P
        expert_view(&out->experts[i], &B->experts[res->order[i]], res->hidden_perm + (size_t)i * c->h, c);
    moe_config sc = moe_shared_config(c);
    for (int j = 0; moe_shared_mapped(B) && j < c->s; j++) // slot j: B's shared_order[j] by shared_perm
        expert_view(&out->shared[j], &B->shared[res->shared_order[j]], res->shared_perm + (size_t)j * sc.h, &sc);
    return 0;
}

/* align_shared's step 2 for B's mapped shared experts: slot j (B's ord[j]) matched
 * against A's from both decoded in turn, then made a view of B's file in its hidden
 * order perm, or B's as it lies without weight matching (match_experts' messages) */
static int shared_views(const moe_model *A, const moe_model *B, const align_opts *o, const int *ord, int *perm,
                        double *S, moe_expert *out, ms_err *err) {
    moe_config sc = moe_shared_config(&A->cfg);
    int h = sc.h, rc = 0;
    size_t es = moe_expert_size(&sc);
    float *mem = o->wm_stage ? ms_malloc(2 * es * sizeof(float)) : NULL;
    for (int j = 0; j < A->cfg.s && !rc; j++) {
        int *P = perm + (size_t)j * h;
        if (progress_cancelled()) {
            rc = ms_fail(err, "cancelled");
            break;
        }
        if (!o->wm_stage) { // B's expert as it lies: its own mapping, no view
            identity(P, h);
            moe_expert_copy(&out[j], &B->shared[ord[j]], &sc);
            continue;
        }
        moe_expert ta, tb;
        const moe_expert *a = moe_shared_floats(A, j, &ta, mem);
        const moe_expert *b = moe_shared_floats(B, ord[j], &tb, mem + es);
        if (match_pair(a, b, &sc, o, P, S, err))
            rc = ms_prefix(err, "shared expert slot %d (B's expert %d)", j, ord[j]);
        else
            expert_view(&out[j], &B->shared[ord[j]], P, &sc);
        progress_add(1);
    }
    free(mem);
    return rc;
}

int align_shared(const moe_model *A, const moe_model *B, const align_opts *o, moe_expert *out, int *views,
                 ms_err *err) {
    const moe_config *c = &A->cfg;
    moe_config sc = moe_shared_config(c);
    int s = c->s, rc = 0, mapped = moe_shared_mapped(B);
    if (s <= 0) return 0;
    if (mapped && (!views || (s > 1 && (o->order || o->order_stage)))) // their cost reads floats
        return ms_fail(err, "align_shared: %d mapped shared experts, %s", s, views ? "to order" : "no views");
    int *ord = ms_malloc((size_t)s * (1 + (size_t)sc.h) * sizeof(int)), *perm = mapped ? views : ord + s;
    rc = shared_order(A, B, o, ord, err);
    for (int j = 0; j < s && !rc && !mapped; j++) moe_expert_copy(&out[j], &B->shared[ord[j]], &sc);
    double *S = !rc && o->wm_stage ? ms_malloc((size_t)sc.h * sc.h * sizeof(double)) : NULL;
    if (!rc)
        rc = mapped ? shared_views(A, B, o, ord, perm, S, out, err)
                    : match_experts(A->shared, out, s, ord, perm, o, &sc, S, "shared expert", err);
    free(S);
    free(ord);
    return rc;
}

int align_models(const moe_model *A, const moe_model *B, const align_opts *o, moe_model *out,
                 align_result *res, ms_err *err) {
    memset(res, 0, sizeof *res);
    memset(out, 0, sizeof *out);
    if (moe_check_compatible(A, B, err)) return -1;
    moe_clone(out, B);
    if (!align_models_inplace(A, out, o, res, err)) return 0;
    moe_free(out);
    return -1;
}
