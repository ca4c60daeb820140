/* symmetry.c - the symmetry actions of an MoE layer. Each one changes the parameters and
 * leaves the function D(x) unchanged (up to float rounding). */
#include "model/symmetry.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_text.h"
#include "core/rng.h"

/* A scratch model-free copy of `count` experts: one buffer, carved. */
typedef struct {
    float *mem;
    moe_expert *e;
} expert_stash;

static void stash_make(expert_stash *st, const moe_expert *src, int count, const moe_config *c) {
    size_t es = moe_expert_size(c);
    st->mem = ms_malloc((count ? (size_t)count : 1) * es * sizeof(float));
    st->e = ms_malloc((count ? (size_t)count : 1) * sizeof(moe_expert));
    float *p = st->mem;
    for (int i = 0; i < count; i++) {
        p = moe_expert_carve(&st->e[i], c, p);
        moe_expert_copy(&st->e[i], &src[i], c);
    }
}

static void stash_free(expert_stash *st) {
    free(st->mem);
    free(st->e);
}

/* the gate rows and biases (and selection biases): row i <- row pi[i] */
static void gate_permute(moe_model *m, const int *pi) {
    int n = m->cfg.n, d = m->cfg.d;
    float *gw = ms_malloc((size_t)n * d * sizeof(float)); // (n, d)
    float *gb = ms_malloc((size_t)n * sizeof(float));     // (n)
    float *gc = ms_malloc((size_t)n * sizeof(float));     // (n) selection bias
    memcpy(gw, m->gate_w, (size_t)n * d * sizeof(float));
    memcpy(gb, m->gate_b, (size_t)n * sizeof(float));
    if (m->corr_b) memcpy(gc, m->corr_b, (size_t)n * sizeof(float));
    for (int i = 0; i < n; i++) {
        memcpy(m->gate_w + (size_t)i * d, gw + (size_t)pi[i] * d, (size_t)d * sizeof(float));
        m->gate_b[i] = gb[pi[i]];
        if (m->corr_b) m->corr_b[i] = gc[pi[i]];
    }
    free(gc);
    free(gw);
    free(gb);
}

void moe_permute_experts(moe_model *m, const int *pi) {
    const moe_config *c = &m->cfg;
    expert_stash st;
    stash_make(&st, m->experts, c->n, c);
    // slot i <- expert pi[i] together with its gate row (and selection bias)
    for (int i = 0; i < c->n; i++) moe_expert_copy(&m->experts[i], &st.e[pi[i]], c);
    gate_permute(m, pi);
    stash_free(&st);
}

void moe_permute_shared(moe_model *m, const int *pi) {
    moe_config sc = moe_shared_config(&m->cfg);
    if (sc.s == 0) return;
    expert_stash st;
    stash_make(&st, m->shared, sc.s, &sc);
    for (int j = 0; j < sc.s; j++) moe_expert_copy(&m->shared[j], &st.e[pi[j]], &sc);
    stash_free(&st);
}

void moe_translate_gate(moe_model *m, const float *cW, float cb) {
    int n = m->cfg.n, d = m->cfg.d;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < d; j++) m->gate_w[(size_t)i * d + j] += cW[j];
        m->gate_b[i] += cb;
    }
}

void moe_expert_permute_hidden(moe_expert *e, const moe_config *c, const int *P) {
    int h = c->h, d = c->d;
    size_t big = (size_t)h * d;
    float *tmp = ms_malloc(big * sizeof(float));
    float *tb = ms_malloc((size_t)h * sizeof(float));
    // W1 (h, d): row u <- row P[u]; b1 likewise
    memcpy(tmp, e->fc1_w, big * sizeof(float));
    memcpy(tb, e->fc1_b, (size_t)h * sizeof(float));
    for (int u = 0; u < h; u++) {
        memcpy(e->fc1_w + (size_t)u * d, tmp + (size_t)P[u] * d, (size_t)d * sizeof(float));
        e->fc1_b[u] = tb[P[u]];
    }
    if (moe_act_glu(c->act)) {
        memcpy(tmp, e->fc3_w, big * sizeof(float));
        memcpy(tb, e->fc3_b, (size_t)h * sizeof(float));
        for (int u = 0; u < h; u++) {
            memcpy(e->fc3_w + (size_t)u * d, tmp + (size_t)P[u] * d, (size_t)d * sizeof(float));
            e->fc3_b[u] = tb[P[u]];
        }
    }
    // W2 (d, h): column u <- column P[u]
    memcpy(tmp, e->fc2_w, big * sizeof(float));
    for (int j = 0; j < d; j++)
        for (int u = 0; u < h; u++)
            e->fc2_w[(size_t)j * h + u] = tmp[(size_t)j * h + P[u]];
    free(tmp);
    free(tb);
}

size_t moe_order_format(char *buf, size_t cap, const int *p, int n) {
    size_t len = 0;
    if (cap) buf[0] = '\0';
    for (int i = 0; i < n; i++) {
        char one[16];
        int w = snprintf(one, sizeof one, i ? " %d" : "%d", p[i]);
        if (len + (size_t)w < cap) memcpy(buf + len, one, (size_t)w + 1);
        else if (len < cap) buf[len] = '\0'; // truncated at a whole number
        len += (size_t)w;
    }
    return len;
}

char *moe_order_string(const int *p, int n) {
    size_t cap = (size_t)n * 12 + 1;
    char *s = ms_malloc(cap);
    moe_order_format(s, cap, p, n);
    return s;
}

static uint64_t fnv_bytes(uint64_t hsh, const void *p, size_t nbytes) {
    const unsigned char *b = p;
    for (size_t i = 0; i < nbytes; i++) {
        hsh ^= b[i];
        hsh *= 1099511628211ULL;
    }
    return hsh;
}

uint64_t moe_fingerprint(const moe_model *m) {
    uint64_t hsh = 1469598103934665603ULL;
    int rm = moe_is_mapped(m), sm = moe_shared_mapped(m);
    if (!rm && !sm) return fnv_bytes(hsh, m->mem, m->nparams * sizeof(float));
    // a mapped layer: the same bytes as its floats would hold (moe_alloc's layout), each
    // mapped expert decoded in turn, so a record matches whichever way A was read
    const moe_config *c = &m->cfg;
    moe_config sc = moe_shared_config(c);
    moe_layout l;
    moe_layout_of(c, &l);
    size_t before = l.gate + l.corr, es = moe_expert_size(c), ss = moe_expert_size(&sc);
    size_t glu = moe_act_glu(c->act) ? 2 : 1;
    size_t routed = rm ? (size_t)c->n * (glu * (size_t)c->h + (size_t)c->d) : l.experts;
    size_t shared = sm ? (size_t)c->s * (glu * (size_t)sc.h + (size_t)c->d) : l.shared;
    float *buf = ms_malloc((es > ss ? es : ss) * sizeof(float));
    hsh = fnv_bytes(hsh, m->mem, before * sizeof(float));
    for (int e = 0; e < c->n && rm; e++) {
        moe_expert tmp;
        moe_expert_floats(m, e, &tmp, buf); // carved in buf in moe_alloc's order
        hsh = fnv_bytes(hsh, buf, es * sizeof(float));
    }
    if (!rm) hsh = fnv_bytes(hsh, m->mem + before, routed * sizeof(float));
    for (int j = 0; j < c->s && sm; j++) {
        moe_expert tmp;
        moe_shared_floats(m, j, &tmp, buf);
        hsh = fnv_bytes(hsh, buf, ss * sizeof(float));
    }
    if (!sm) hsh = fnv_bytes(hsh, m->mem + before + routed, shared * sizeof(float));
    free(buf);
    size_t done = before + routed + shared;
    return fnv_bytes(hsh, m->mem + done, (m->nparams - done) * sizeof(float));
}

/* Step 1 of moe_scramble: pi (n) uniform in S_n, or in the wreath product
 * S_m wr S_g of a group-limited router. */
static void scramble_order(const moe_config *c, rng_t *r, int *pi) {
    int n = c->n, G = moe_groups_active(c);
    if (G <= 1) {
        rng_permutation(r, pi, n);
        return;
    }
    int m = n / G;
    int *rho = ms_malloc((size_t)G * sizeof(int)), *tau = ms_malloc((size_t)m * sizeof(int));
    rng_permutation(r, rho, G);
    for (int a = 0; a < G; a++) {
        rng_permutation(r, tau, m);
        for (int i = 0; i < m; i++) pi[a * m + i] = rho[a] * m + tau[i];
    }
    free(rho);
    free(tau);
}

void moe_scramble(moe_model *m, uint64_t seed, double translate, int *order_out) {
    moe_scramble_orders(m, seed, translate, order_out, NULL);
}

/* A mapped layer's routed experts moved (slot i <- expert pi[i], its hidden units by
 * hidden + i h) as views of the same mapping: the biases copied, the weights read
 * in the new order where they lie. */
static void permute_mapped(moe_model *m, const int *pi, const int *hidden) {
    const moe_config *c = &m->cfg;
    int n = c->n, h = c->h, d = c->d, glu = moe_act_glu(c->act);
    size_t per = (size_t)(glu ? 2 : 1) * h + d; // an expert's biases (carve_biases: contiguous)
    moe_expert *old = ms_malloc((size_t)n * sizeof(moe_expert));
    float *ob = ms_malloc((size_t)n * per * sizeof(float));
    memcpy(old, m->experts, (size_t)n * sizeof(moe_expert));
    memcpy(ob, m->experts[0].fc1_b, (size_t)n * per * sizeof(float));
    for (int i = 0; i < n; i++) {
        const moe_expert *x = &old[pi[i]];
        const float *b1 = ob + (size_t)pi[i] * per, *b2 = b1 + h, *b3 = b2 + d;
        moe_expert *y = &m->experts[i];
        const int *P = hidden + (size_t)i * h;
        for (int u = 0; u < h; u++) y->fc1_b[u] = b1[P[u]];
        for (int u = 0; u < h && glu; u++) y->fc3_b[u] = b3[P[u]];
        memcpy(y->fc2_b, b2, (size_t)d * sizeof(float));
        y->w1 = wp_view(x->w1, P, NULL); // W1, W3 (h, d): rows; W2 (d, h): columns
        y->w3 = glu ? wp_view(x->w3, P, NULL) : x->w3;
        y->w2 = wp_view(x->w2, NULL, P);
    }
    free(old);
    free(ob);
}

void moe_scramble_orders(moe_model *m, uint64_t seed, double translate, int *order_out,
                         int *shared_out) {
    moe_scramble_mapped(m, seed, translate, order_out, shared_out, NULL);
}

void moe_scramble_mapped(moe_model *m, uint64_t seed, double translate, int *order_out, int *shared_out,
                         int *hidden) {
    const moe_config *c = &m->cfg;
    moe_config sc = moe_shared_config(c);
    int n = c->n, d = c->d, h = c->h, s = c->s;
    char source[32];
    snprintf(source, sizeof source, "%016llx", (unsigned long long)moe_fingerprint(m));
    rng_t r;
    rng_seed(&r, seed);
    int *pi = ms_malloc((size_t)n * sizeof(int));
    int *P = ms_malloc((size_t)(sc.h > h ? sc.h : h) * sizeof(int));
    // 1. expert order (applied: slot i <- expert pi[i])
    scramble_order(c, &r, pi);
    int mapped = moe_is_mapped(m);
    if (!mapped) {
        moe_permute_experts(m, pi);
    } else { // the gate rows (and selection biases) here, the experts as views below
        gate_permute(m, pi);
    }
    // 2. a hidden permutation inside every expert
    for (int i = 0; i < n; i++) {
        rng_permutation(&r, mapped ? hidden + (size_t)i * h : P, h);
        if (!mapped) moe_expert_permute_hidden(&m->experts[i], c, P);
    }
    if (mapped) permute_mapped(m, pi, hidden);
    // 3. shared experts: their order, then hidden permutations
    char *shared_str = NULL;
    if (s > 0) {
        int *sp = ms_malloc((size_t)s * sizeof(int));
        rng_permutation(&r, sp, s);
        moe_permute_shared(m, sp);
        for (int j = 0; j < s; j++) {
            rng_permutation(&r, P, sc.h);
            moe_expert_permute_hidden(&m->shared[j], &sc, P);
        }
        shared_str = moe_order_string(sp, s);
        if (shared_out) memcpy(shared_out, sp, (size_t)s * sizeof(int));
        free(sp);
    }
    // 4. gate translation: translate times the scale of the gate rows (RMS of
    // the entries)
    // ... only where it is a symmetry: a sigmoid router has no translation
    if (translate > 0 && !moe_gate_centring_valid(c)) translate = 0;
    if (translate > 0) {
        double ss = 0.0;
        for (size_t q = 0; q < (size_t)n * d; q++) ss += (double)m->gate_w[q] * m->gate_w[q];
        double scale = sqrt(ss / ((double)n * d));
        if (!(scale > 0)) scale = 1.0;
        scale *= translate;
        float *cW = ms_malloc((size_t)d * sizeof(float));
        for (int j = 0; j < d; j++) cW[j] = (float)(rng_normal(&r) * scale);
        float cb = (float)(rng_normal(&r) * scale);
        moe_translate_gate(m, cW, cb);
        free(cW);
    }
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)seed);
    moe_meta_set(m, "moescope.scramble.seed", buf);
    moe_meta_set(m, "moescope.scramble.source", source);
    char *os = moe_order_string(pi, n);
    moe_meta_set(m, "moescope.scramble.order", os);
    free(os);
    if (shared_str) {
        moe_meta_set(m, "moescope.scramble.shared_order", shared_str);
        free(shared_str);
    }
    snprintf(buf, sizeof buf, "%.17g", translate);
    moe_meta_set(m, "moescope.scramble.translate", buf);
    if (order_out) memcpy(order_out, pi, (size_t)n * sizeof(int));
    free(pi);
    free(P);
}

/* pi from "2 0 3 1": 0 unless it is a permutation of 0..n-1. */
static int parse_order(const char *str, int n, int *pi) {
    int *seen = ms_calloc((size_t)n, sizeof(int)), cnt = 0, ok = 1;
    const char *p = str;
    while (ok && *p) {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (v < 0 || v >= n || cnt >= n || seen[v]) ok = 0;
        else seen[v] = 1, pi[cnt++] = (int)v;
        p = end;
    }
    free(seen);
    return ok && cnt == n;
}

int moe_scramble_check(const moe_model *A, const moe_model *B, const int *order, char *msg,
                       size_t size) {
    const char *src = moe_meta_get(B, "moescope.scramble.source");
    const char *ord = moe_meta_get(B, "moescope.scramble.order");
    char fp[32] = "";
    // A's fingerprint reads every weight (2% of a real-sized align): only for a record
    if (src && ord) snprintf(fp, sizeof fp, "%016llx", (unsigned long long)moe_fingerprint(A));
    int n = A->cfg.n;
    int *pi = ms_malloc((size_t)n * sizeof(int));
    if (!src || !ord || strcmp(src, fp) || B->cfg.n != n || !parse_order(ord, n, pi)) {
        snprintf(msg, size, "B carries no scramble record of A");
        free(pi);
        return 0;
    }
    int inverse = 1;
    for (int i = 0; i < n; i++) inverse &= order[pi[i]] == i;
    // the seed is the file's text: escaped for the terminal the message is printed on
    const char *raw_seed = moe_meta_get(B, "moescope.scramble.seed");
    char *seed = ms_escaped(raw_seed ? raw_seed : "?");
    if (inverse)
        snprintf(msg, size,
                 "B is a scramble of A (seed %s): the scramble put A's expert pi[i] in slot i "
                 "(pi = %s); the order found is its inverse, so every expert is back in its "
                 "own slot",
                 seed, ord);
    else
        snprintf(msg, size,
                 "B is a scramble of A (seed %s, pi = %s), but the order found is NOT its "
                 "inverse: the alignment did not undo the scramble",
                 seed, ord);
    free(seed);
    free(pi);
    return inverse ? 1 : 2;
}

void moe_gate_shift(const moe_model *A, const moe_model *Bp, double *shift, double *resid,
                    double *rows) {
    int n = A->cfg.n, d = A->cfg.d;
    double *c = ms_calloc((size_t)d + 1, sizeof(double)); // (d+1): [c_W | c_b]
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < d; j++)
            c[j] += ((double)Bp->gate_w[(size_t)i * d + j] - A->gate_w[(size_t)i * d + j]) / n;
        c[d] += ((double)Bp->gate_b[i] - A->gate_b[i]) / n;
    }
    double cn = 0, rs = 0, an = 0;
    for (int j = 0; j <= d; j++) cn += c[j] * c[j];
    for (int i = 0; i < n; i++) {
        for (int j = 0; j <= d; j++) {
            double a = j < d ? A->gate_w[(size_t)i * d + j] : A->gate_b[i];
            double b = j < d ? Bp->gate_w[(size_t)i * d + j] : Bp->gate_b[i];
            rs += (b - a - c[j]) * (b - a - c[j]);
            an += a * a;
        }
    }
    *shift = sqrt(cn);
    *resid = sqrt(rs / n);
    *rows = sqrt(an / n);
    free(c);
}

/* ---- which group ---- */

int moe_gate_centring_valid(const moe_config *c) { return c->score == SCORE_SOFTMAX; }

int moe_groups_active(const moe_config *c) {
    if (c->router != ROUTER_TOPK || c->n_group <= 1 || c->topk_group >= c->n_group) return 0;
    // ranked by their maxima, the kept groups always hold the k best experts
    // when k <= topk_group: the limit never binds and every permutation is a symmetry
    if (c->group_score == GROUP_MAX && c->k <= c->topk_group) return 0;
    return c->n_group;
}

int moe_order_in_group(const moe_config *c, const int *pi) {
    int G = moe_groups_active(c);
    if (G <= 1) return 1;
    int m = c->n / G;
    // every slot group a must take all of its experts from one group of B
    for (int a = 0; a < G; a++) {
        int gb = pi[a * m] / m;
        for (int i = 1; i < m; i++)
            if (pi[a * m + i] / m != gb) return 0;
    }
    return 1; // pi is a permutation, so the group map is one too
}

void moe_symmetry_group(const moe_config *c, moe_symmetry *g) {
    memset(g, 0, sizeof *g);
    int n = c->n, G = moe_groups_active(c) ? c->n_group : 1, m = n / G;
    int sig = c->score == SCORE_SIGMOID, topk = c->router == ROUTER_TOPK && c->k < n;
    g->translation = c->score == SCORE_SOFTMAX;
    g->groups = G > 1 ? G : 0;
    g->group_size = G > 1 ? m : n;
    g->top1 = topk && c->k == 1;
    const char *t = g->translation ? " x translations" : "";
    if (G > 1)
        snprintf(g->name, sizeof g->name, "S_%d wr S_%d%s (group-preserving permutations)", m, G, t);
    else
        snprintf(g->name, sizeof g->name, "S_%d%s", n, t);
    size_t len = 0, cap = sizeof g->why;
#define WHY(...) len += (size_t)snprintf(g->why + len, len < cap ? cap - len : 0, __VA_ARGS__)
    WHY("Reordering the experts together with their gate rows%s reorders the sum, so the "
        "function is unchanged; so does permuting the hidden units inside any expert. ",
        c->has_corr_bias ? " and selection biases" : "");
    if (sig)
        WHY("Sigmoid scores each expert on its own: adding the same vector to every gate row "
            "changes sigmoid(s), so there is no translation symmetry and the gate cost is not "
            "centred. ");
    else if (c->score == SCORE_SPARSEMIXER)
        WHY("Sparsemixer masks the logits by their gap relative to max(|s|, the top logit): adding "
            "the same vector to every gate row changes which are masked, so there is no "
            "translation symmetry and the gate cost is not centred. ");
    else
        WHY("Softmax only sees differences of scores: adding the same vector to every gate row "
            "(a common translation) changes nothing, so the gate cost may centre the rows. ");
    if (G == 1 && c->router == ROUTER_TOPK && c->n_group > 1)
        WHY("The group limit (%d of %d groups, ranked by their best expert) never binds for "
            "top-%d: the kept groups always hold the %d best experts, so every permutation is "
            "a symmetry. ", c->topk_group, c->n_group, c->k, c->k);
    if (G > 1)
        WHY("Group-limited routing ranks %d groups of %d experts and keeps %d: a permutation "
            "that splits a group changes the group scores and the routing, so only permutations "
            "mapping whole groups onto groups keep the function ((%d!)^%d * %d! expert orders); "
            "the order is found by a two-level assignment. ",
            G, m, c->topk_group, m, G, G);
    if (g->top1)
        WHY(c->renorm == RENORM_YES
                ? "Top-1 (flagged, outside the theory): the weight is always 1, so any positive "
                  "scaling of the scores is an extra symmetry. "
                : "Top-1 scaled by its probability (flagged, outside the theory): routing by one "
                  "expert is discontinuous in the scores and interpolation rarely stays on it. ");
    if (c->shared_gated)
        WHY("The sigmoid-gated shared expert is its own fixed part: weight-matched with B's, its "
            "gate vector interpolated, never permuted.");
#undef WHY
    for (len = strlen(g->why); len > 0 && g->why[len - 1] == ' ';) g->why[--len] = '\0';
}
