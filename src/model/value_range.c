/* value_range.c - the largest values of a layer and the bounds they must keep
 * (value_range.h). */
#include "model/value_range.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"

static const char *file_of(const moe_model *m) { return m->path ? m->path : "(model)"; }
static const char *layer_of(const moe_model *m) { return m->layer ? m->layer : "moe"; }

/* 1 when best (at element at) is larger than what x had (x then says where: tensor
 * fmt with the layer L and index i filled in) */
static int note(range_max *x, double best, size_t at, const char *file, const char *fmt, const char *L, int i) {
    if (!(best > x->v)) return 0;
    x->v = best;
    x->at = at;
    x->expert = 0;
    snprintf(x->file, sizeof x->file, "%s", file);
    snprintf(x->tensor, sizeof x->tensor, fmt, L, i);
    return 1;
}

/* note() of p[0..k)'s largest |value| */
static int scan(range_max *x, const float *p, size_t k, const char *file, const char *fmt,
                const char *L, int i) {
    if (!p) return 0;
    double best = 0;
    size_t at = 0;
    for (size_t q = 0; q < k; q++)
        if (fabs(p[q]) > best) best = fabs(p[q]), at = q;
    return note(x, best, at, file, fmt, L, i);
}

/* the same of a weight (rows, cols) where a mapped layer keeps it, a row at a time */
static int scan_mapped(range_max *x, wref w, size_t rows, size_t cols, const char *file, const char *fmt,
                       const char *L, int i) {
    if (!w.p) return 0;
    float *row = ms_malloc((cols ? cols : 1) * sizeof(float)); // (cols)
    double best = 0;
    size_t at = 0;
    for (size_t r = 0; r < rows; r++) {
        wp_rows_f32(w, cols, r, 1, row);
        for (size_t q = 0; q < cols; q++)
            if (fabs(row[q]) > best) best = fabs(row[q]), at = r * cols + q;
    }
    free(row);
    return note(x, best, at, file, fmt, L, i);
}

/* one part (sfx "fc1.weight") of expert j of kind "experts" or "shared" into acc: its
 * rows x cols floats at p, or where a mapped layer keeps them (w) */
static void scan_part_w(range_max *acc, const float *p, wref w, size_t rows, size_t cols, const moe_model *m,
                        const char *kind, int j, const char *sfx) {
    char fmt[64];
    snprintf(fmt, sizeof fmt, "%%.100s.%s.%%d.%s", kind, sfx);
    int larger = p ? scan(acc, p, rows * cols, file_of(m), fmt, layer_of(m), j)
                   : scan_mapped(acc, w, rows, cols, file_of(m), fmt, layer_of(m), j);
    if (!larger) return;
    acc->expert = 1, acc->shared = kind[0] == 's', acc->e = j;
    snprintf(acc->part, sizeof acc->part, "%s", sfx);
}

/* one part (sfx "fc1.weight") of expert j of kind "experts" or "shared" into acc */
static void scan_part(range_max *acc, const float *p, size_t k, const moe_model *m, const char *kind,
                      int j, const char *sfx) {
    scan_part_w(acc, p, (wref){0}, k, 1, m, kind, j, sfx);
}

/* expert j's tensors into the fc1/fc3 and fc2 maxima */
static void scan_expert(range_max *W1, range_max *W2, const moe_model *m, const char *kind, int j,
                        const moe_expert *e) {
    moe_config sc = moe_shared_config(&m->cfg); // a shared expert's width is hs
    const moe_config *c = kind[0] == 's' ? &sc : &m->cfg;
    size_t h = (size_t)c->h, d = (size_t)c->d;
    scan_part_w(W1, e->fc1_w, e->w1, h, d, m, kind, j, "fc1.weight");
    scan_part(W1, e->fc1_b, h, m, kind, j, "fc1.bias");
    scan_part_w(W1, e->fc3_w, e->w3, h, d, m, kind, j, "fc3.weight");
    scan_part(W1, e->fc3_b, e->fc3_b ? h : 0, m, kind, j, "fc3.bias");
    scan_part_w(W2, e->fc2_w, e->w2, d, h, m, kind, j, "fc2.weight");
    scan_part(W2, e->fc2_b, (size_t)c->d, m, kind, j, "fc2.bias");
}

void range_held(value_range *r, const moe_model *m, const evalset *E) {
    const moe_config *c = &m->cfg;
    const char *f = file_of(m), *L = layer_of(m);
    memset(r, 0, sizeof *r);
    r->X.v = 1;
    scan(&r->G, m->gate_w, (size_t)c->n * c->d, f, "%.100s.gate.weight%.0d", L, 0);
    scan(&r->G, m->gate_b, (size_t)c->n, f, "%.100s.gate.bias%.0d", L, 0);
    for (int i = 0; i < c->n && m->experts; i++) scan_expert(&r->W1, &r->W2, m, "experts", i, &m->experts[i]);
    for (int j = 0; j < c->s; j++) scan_expert(&r->SW1, &r->SW2, m, "shared", j, &m->shared[j]);
    // the router's selection bias and the shared experts' gate are scores too; the
    // output bias is added to the experts' sum as their fc2 biases are
    scan(&r->G, m->corr_b, m->corr_b ? (size_t)c->n : 0, f, "%.100s.gate.correction_bias%.0d", L, 0);
    scan(&r->G, m->shared_gate_w, m->shared_gate_w ? (size_t)c->d : 0, f, "%.100s.shared.gate.weight%.0d", L, 0);
    scan(&r->W2, m->out_b, m->out_b ? (size_t)c->d : 0, f, "%.100s.output.bias%.0d", L, 0);
    if (c->has_norm) {
        scan(&r->Ng, m->norm_w, (size_t)c->d, f, "head.norm.weight%.0s%.0d", "", 0);
        scan(&r->Nb, m->norm_b, (size_t)c->d, f, "head.norm.bias%.0s%.0d", "", 0);
    }
    if (c->has_head) {
        scan(&r->Hw, m->head_w, (size_t)c->C * c->d, f, "head.out.weight%.0s%.0d", "", 0);
        scan(&r->Hb, m->head_b, (size_t)c->C, f, "head.out.bias%.0s%.0d", "", 0);
    }
    if (E) {
        r->X.v = 0;
        scan(&r->X, E->inputs, (size_t)E->N * E->d, E->path ? E->path : "(eval)", "inputs%.0s%.0d",
             "", 0);
        if (r->X.v < 1) r->X.v = 1;
    }
}

void range_expert(value_range *r, const moe_model *m, int i, const moe_expert *e) {
    scan_expert(&r->W1, &r->W2, m, "experts", i, e);
}

/* the larger of the routed and shared maxima; the routed one on a tie (it was
 * scanned first when the layer is held whole) */
static range_max larger(const range_max *routed, const range_max *shared) {
    return shared->v > routed->v ? *shared : *routed;
}

/* The magnitudes moescope computes with, bounded from the largest parameters
 * (X: the largest input, 1 without an evaluation set): gate scores
 * d X |G| + |g|; hidden units d X |W1| + |b1| (times the fc3 branch for
 * silu_glu); expert outputs s (h |H| |W2| + |b2|) + X (s the routed scale); the head's logits
 * d |Wh| z + |bh| (z: sqrt(d) |gamma| + |beta| after a LayerNorm), all below 1e30 (sums of
 * their squares must fit a double, and sums of them a float); the expert cost's
 * Gram entries (h + 1) |W|^2 below 1e36 (float32 ends at 3.4e38). Otherwise the
 * input whose values are largest is the culprit. */
double range_bounds(const value_range *r, const moe_model *m, double *mix, double *gram) {
    const moe_config *c = &m->cfg;
    range_max W1 = larger(&r->W1, &r->SW1), W2 = larger(&r->W2, &r->SW2);
    double d = c->d, h = c->h, X = r->X.v;
    double hid = d * X * W1.v + W1.v, hid2 = c->act == ACT_SILU_GLU ? hid * hid : hid;
    double scale = c->scale > 1 ? c->scale : 1; // the routed scale multiplies the experts' sum
    double hs = c->s ? (double)c->hs : 0; // the shared experts' width, each added whole
    *mix = scale * (h * hid2 * W2.v + W2.v) + c->s * (hs * hid2 * W2.v + W2.v);
    double out = *mix + X;
    // the head: a LayerNorm's outputs are at most sqrt(d) |gamma| + |beta|
    double z = c->has_norm ? sqrt(d) * r->Ng.v + r->Nb.v : out;
    double logit = c->has_head ? d * r->Hw.v * z + r->Hb.v : 0;
    *gram = (fmax(h, hs) + 1) * fmax(W1.v * W1.v, W2.v * W2.v);
    return fmax(fmax(d * X * r->G.v + r->G.v, hid2), fmax(out, logit));
}

int range_judge(const value_range *r, const moe_model *m, range_finding *f) {
    range_max W1 = larger(&r->W1, &r->SW1), W2 = larger(&r->W2, &r->SW2);
    memset(f, 0, sizeof *f);
    double mix, gram, act = range_bounds(r, m, &mix, &gram);
    if (act <= RANGE_ACT_MAX && gram <= RANGE_GRAM_MAX) return 0;
    f->magnitude = act > RANGE_ACT_MAX ? act : gram;
    f->limit = act > RANGE_ACT_MAX ? RANGE_ACT_MAX : RANGE_GRAM_MAX;
    // blame the largest contributor
    const range_max *cand[8] = {&r->G, &W1, &W2, &r->X, &r->Ng, &r->Nb, &r->Hw, &r->Hb};
    for (int k = 0; k < 8; k++)
        if (cand[k]->tensor[0] && cand[k]->v > f->culprit.v) f->culprit = *cand[k];
    return 1;
}

int range_fail(const range_finding *f, const moe_model *m, const char *where, long long at,
               ms_err *err) {
    const moe_config *c = &m->cfg;
    const range_max *x = &f->culprit;
    char held[700];
    if (where)
        snprintf(held, sizeof held, "%s holds values up to %.3g (element %lld)", where, x->v, at);
    else if (x->tensor[0])
        snprintf(held, sizeof held, "%s: tensor '%s' holds values up to %.3g (element %zu)",
                 x->file, x->tensor, x->v, x->at);
    else
        snprintf(held, sizeof held, "%s", file_of(m));
    return ms_fail(err, "%s: with n = %d, d = %d, h = %d the layer's arithmetic would overflow "
                        "float32 (magnitudes up to %.3g; moescope needs them below %.0e)",
                   held, c->n, c->d, c->h, f->magnitude, f->limit);
}
