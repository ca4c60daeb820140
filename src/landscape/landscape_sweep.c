/* landscape_sweep.c - the landscape's work on one chunk of points: the
 * precompute (pair outputs, gate scores, shared sums and the head at each t of
 * the chunk) and the sweep of the orders over it in blocks of LS_BLOCK, both
 * run as jobs on a pool of threads while the calling thread reports progress
 * and watches for a cancel. See landscape_int.h for the state. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/blas_threads.h"
#include "core/test_hooks.h"
#include "landscape_int.h"
#include "model/moe_kernels.h"


typedef struct {
    ls_job *job;
    int tid;
} ls_arg;

/* ---------------- progress, cancel ---------------- */

int ls_cancelled(lsx *x) {
    if (atomic_load_explicit(&x->pool.stop, memory_order_relaxed)) return 1;
    if (x->pb.o->cancel && atomic_load_explicit(x->pb.o->cancel, memory_order_relaxed)) {
        atomic_store_explicit(&x->pool.stop, 1, memory_order_relaxed);
        return 1;
    }
    return 0;
}

double ls_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double ls_cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* o->phase, at most every 20 ms */
void ls_phase(lsx *x, const char *what, long done, long total) {
    if (!x->pb.o->phase) return;
    double now = ls_now();
    if (x->pool.last_phase > 0 && now - x->pool.last_phase < 0.02) return;
    x->pool.last_phase = now;
    x->pb.o->phase(x->pb.o->ctx, what, done, total);
}

/* ---------------- precompute ---------------- */

/* out = (1-t) a + t b, rounded as moe_interpolate does */
static void vlerp(float *out, const float *a, const float *b, size_t cnt, double t) {
    float ta = (float)(1.0 - t), tb = (float)t;
    for (size_t q = 0; q < cnt; q++) out[q] = ta * a[q] + tb * b[q];
}

static void expert_lerp(moe_expert *out, const moe_expert *a, const moe_expert *b,
                        const moe_config *c, double t) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    vlerp(out->fc1_w, a->fc1_w, b->fc1_w, h * d, t);
    vlerp(out->fc1_b, a->fc1_b, b->fc1_b, h, t);
    vlerp(out->fc2_w, a->fc2_w, b->fc2_w, d * h, t);
    vlerp(out->fc2_b, a->fc2_b, b->fc2_b, d, t);
    if (moe_act_glu(c->act)) { // silu_glu, gpt_oss
        vlerp(out->fc3_w, a->fc3_w, b->fc3_w, h * d, t);
        vlerp(out->fc3_b, a->fc3_b, b->fc3_b, h, t);
    }
}

/* out = (1-t) a + t b', where b' is b with its hidden units permuted by P
 * (unit u of b' is unit P[u] of b, as moe_expert_permute_hidden): the same
 * float arithmetic as expert_lerp on a permuted copy, without the copy.
 * Without first_w, W1 and W3 are left alone (the first layers come from
 * per-expert products: pair_first_layers). */
static void expert_lerp_perm(moe_expert *out, const moe_expert *a, const moe_expert *b,
                             const int *P, const moe_config *c, double t, int first_w) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    float ta = (float)(1.0 - t), tb = (float)t;
    // W1 (h, d), W3 (h, d): row u from b's row P[u]; b1, b3 likewise
    for (size_t u = 0; u < h; u++) {
        size_t pu = (size_t)P[u];
        if (first_w) vlerp(out->fc1_w + u * d, a->fc1_w + u * d, b->fc1_w + pu * d, d, t);
        out->fc1_b[u] = ta * a->fc1_b[u] + tb * b->fc1_b[pu];
        if (moe_act_glu(c->act)) {
            if (first_w) vlerp(out->fc3_w + u * d, a->fc3_w + u * d, b->fc3_w + pu * d, d, t);
            out->fc3_b[u] = ta * a->fc3_b[u] + tb * b->fc3_b[pu];
        }
    }
    // W2 (d, h): column u from b's column P[u]
    for (size_t j = 0; j < d; j++) {
        float *o2 = out->fc2_w + j * h;
        const float *a2 = a->fc2_w + j * h, *b2 = b->fc2_w + j * h;
        for (size_t u = 0; u < h; u++) o2[u] = ta * a2[u] + tb * b2[P[u]];
    }
    vlerp(out->fc2_b, a->fc2_b, b->fc2_b, d, t);
}

/* dst (nb, width, LS_L) from src (N, width), zero padding; read in order */
void ls_to_lanes(float *dst, const float *src, int N, int width, int nb) {
    for (int b = 0; b < nb; b++) {
        float *db = dst + (size_t)b * width * LS_L; // (width, LS_L)
        for (int l = 0; l < LS_L; l++) {
            int r = b * LS_L + l;
            if (r < N) {
                const float *sr = src + (size_t)r * width;
                for (int q = 0; q < width; q++) db[(size_t)q * LS_L + l] = sr[q];
            } else {
                for (int q = 0; q < width; q++) db[(size_t)q * LS_L + l] = 0.0f;
            }
        }
    }
}

/* ---- the first layers once ----
 * A pair's expert at t is E(t) = (1-t) E_A + t E_B' (B' = B's expert with its
 * hidden units permuted by the pair's P), and its first layer is linear in the
 * weights: x W1(t)^T = (1-t) x W1A^T + t (x W1B^T)[P]. So X W1^T (and X W3^T)
 * are multiplied once per sample chunk for each of A's n slots and B's n
 * experts (2n GEMMs) and every pair at every t mixes them (N h adds) before
 * its activation and second layer: a third of the precompute's GEMM flops. */
int ls_first_once = -1;

int ls_first_applies(const lsx *x) {
    if (ls_first_once >= 0) return ls_first_once;
    return (long)x->pb.h * x->pb.d >= LS_FIRST_MIN;
}

/* an expert's weight: its floats (cols wide), or where a mapped layer keeps it */
static wref expert_weight(const float *w, wref mapped, int cols) {
    return w ? (wref){.p = w, .dt = WP_F32, .ld = (size_t)cols} : mapped;
}

/* F, F3 rows of item e (< n: A's slot e; else B's expert e - n) for the chunk's samples */
static void first_item(lsx *x, long item) {
    int n = x->pb.n, d = x->pb.d, h = x->pb.h, r0 = x->ck.b0 * LS_L;
    int N = x->pb.N - r0 < x->ck.nbn * LS_L ? x->pb.N - r0 : x->ck.nbn * LS_L;
    const float *X = x->pb.E->inputs + (size_t)r0 * d; // (N, d)
    const moe_expert *e = item < n ? &x->pb.A->experts[item] : &x->pb.B->experts[item - n];
    size_t off = (size_t)item * x->pl.Nc * h;
    // F (N, h) = X (N, d) W1^T, W1 is (h, d); F3 likewise with W3 (a mapped layer's
    // converted a panel at a time: the same dot products)
    wp_gemm_nt(N, h, d, X, d, expert_weight(e->fc1_w, e->w1, d), 0.0f, x->ck.F + off, h);
    if (x->ck.F3) wp_gemm_nt(N, h, d, X, d, expert_weight(e->fc3_w, e->w3, d), 0.0f, x->ck.F3 + off, h);
}

/* Y (N, d) of pair p at t: H = (1-t) F_A + t F_B[:, P] per panel, then the
 * activation with e's (interpolated) biases and e's second layer. */
static void pair_first_layers(lsx *x, ls_ws *w, const moe_expert *e, int i, int j, const int *P, double t,
                              int N, float *Y) {
    const moe_config *c = x->pb.cfg;
    int n = x->pb.n, h = x->pb.h;
    float ta = (float)(1.0 - t), tb = (float)t;
    size_t ca = (size_t)i * x->pl.Nc * h, cb = (size_t)(n + j) * x->pl.Nc * h;
    for (int r = 0; r < N; r += LS_PANEL) {
        int np = N - r < LS_PANEL ? N - r : LS_PANEL;
        for (int k = 0; k < 1 + (x->ck.F3 != NULL); k++) {
            const float *F = k ? x->ck.F3 : x->ck.F;
            float *H = k ? w->H3 : w->H; // (np, h)
            for (int rr = 0; rr < np; rr++) {
                const float *fa = F + ca + (size_t)(r + rr) * h, *fb = F + cb + (size_t)(r + rr) * h;
                float *hr = H + (size_t)rr * h;
                for (int u = 0; u < h; u++) hr[u] = ta * fa[u] + tb * fb[P[u]];
            }
        }
        moe_expert_finish(e, c, w->H, w->H3, np, Y + (size_t)r * c->d);
    }
}

/* Y (N, d) = E(X) for X (N, d), panel by panel */
static void expert_apply_panels(const moe_expert *e, const moe_config *c, const float *X, int N,
                                ls_ws *w, float *Y) {
    for (int r = 0; r < N; r += LS_PANEL) {
        int np = N - r < LS_PANEL ? N - r : LS_PANEL;
        moe_expert_forward(e, c, X + (size_t)r * c->d, np, w->H, w->H3, Y + (size_t)r * c->d);
    }
}

/* sig(v . x) per row of X (N, d) for v (d), dot products in double (the
 * evaluator's shared_gate) */
static void shared_gates(const float *v, const float *X, int N, int d, float *out) {
    for (int r = 0; r < N; r++) {
        double a = 0.0;
        for (int q = 0; q < d; q++) a += (double)v[q] * X[(size_t)r * d + q];
        out[r] = (float)(1.0 / (1.0 + exp(-a)));
    }
}

/* e = (1-t) a + t b, shared experts of config c, in floats carved from mem (esize):
 * with either mapped, its weights the mix of a and b's formed a panel at a time (the
 * same values: moe_interpolate's), so the products are the float path's */
static void shared_at(moe_expert *e, const moe_expert *a, const moe_expert *b, const moe_config *c, double t,
                      float *mem) {
    moe_expert_carve(e, c, mem);
    if (a->fc1_w && b->fc1_w) {
        expert_lerp(e, a, b, c, t);
        return;
    }
    size_t h = (size_t)c->h, d = (size_t)c->d;
    float ta = (float)(1.0 - t), tb = (float)t;
    vlerp(e->fc1_b, a->fc1_b, b->fc1_b, h, t);
    vlerp(e->fc2_b, a->fc2_b, b->fc2_b, d, t);
    wref b1 = expert_weight(b->fc1_w, b->w1, (int)d), b2 = expert_weight(b->fc2_w, b->w2, (int)h);
    wp_rows_f32(wp_mix(expert_weight(a->fc1_w, a->w1, (int)d), &b1, ta, tb), d, 0, h, e->fc1_w);
    wp_rows_f32(wp_mix(expert_weight(a->fc2_w, a->w2, (int)h), &b2, ta, tb), h, 0, d, e->fc2_w);
    if (moe_act_glu(c->act)) {
        vlerp(e->fc3_b, a->fc3_b, b->fc3_b, h, t);
        wref b3 = expert_weight(b->fc3_w, b->w3, (int)d);
        wp_rows_f32(wp_mix(expert_weight(a->fc3_w, a->w3, (int)d), &b3, ta, tb), d, 0, h, e->fc3_w);
    }
}

/* The order-independent part of the layer at t, per shared variant v:
 * sig(v_t . x) sum_j E^sh_j(x) (the gate only for a gated shared expert) + o_t
 * (an output bias), plus the residual (head) or minus the chord (layer); the
 * shared experts' gate vector and the output bias are interpolated, never
 * permuted. */
static void pre_base(lsx *x, ls_ws *w, int tc, double t, const float *X, int N, int r0) {
    const moe_config *c = x->pb.cfg;
    moe_config sc = moe_shared_config(c); // the shared experts' width hs
    int d = x->pb.d;
    float *sg = NULL; // (N) the shared gate at t
    if (c->shared_gated && c->s > 0) {
        float *v = w->hraw; // (d), free until the head below
        vlerp(v, x->pb.A->shared_gate_w, x->pb.B->shared_gate_w, (size_t)d, t);
        sg = w->Sx; // (N) of its (N, nn): the scores are in lanes already
        shared_gates(v, X, N, d, sg);
    }
    float *ob = NULL; // (d) the output bias at t
    if (c->has_out_bias) {
        ob = w->hraw + d;
        vlerp(ob, x->pb.A->out_b, x->pb.B->out_b, (size_t)d, t);
    }
    for (int v = 0; v < SH_COUNT; v++) {
        float *bs = w->Zb; // (N, d)
        memset(bs, 0, (size_t)N * d * sizeof(float));
        for (int j = 0; j < c->s; j++) {
            moe_expert e;
            shared_at(&e, &x->pb.A->shared[j], &x->pb.shB[v][j], &sc, t, w->E);
            expert_apply_panels(&e, &sc, X, N, w, w->Ye);
            if (sg) {
                for (int r = 0; r < N; r++)
                    for (int q = 0; q < d; q++) bs[(size_t)r * d + q] += sg[r] * w->Ye[(size_t)r * d + q];
            } else {
                for (size_t q = 0; q < (size_t)N * d; q++) bs[q] += w->Ye[q];
            }
        }
        if (ob)
            for (int r = 0; r < N; r++)
                for (int q = 0; q < d; q++) bs[(size_t)r * d + q] += ob[q];
        if (x->pb.kind == LS_LAYER) { // own chords: t D_B' = t (DBn + the kernel's routed part)
            const float *DA = x->pb.DA + (size_t)r0 * d;
            const float *DB = (x->pb.own_chord ? x->pb.DBn : x->pb.DB) + (size_t)r0 * d;
            for (size_t q = 0; q < (size_t)N * d; q++)
                bs[q] -= (float)((1.0 - t) * DA[q] + t * DB[q]);
        } else if (c->residual) {
            for (size_t q = 0; q < (size_t)N * d; q++) bs[q] += X[q];
        }
        ls_to_lanes(ls_base_at(x, tc, v), bs, N, d, x->ck.nbn);
    }
}

/* Precompute item `item` of the current chunk: item < ntc*npairs is one pair
 * output Y; the rest, one per t, the common parts: the gate scores S of every
 * (slot, B row), the shared sums (+ residual, or - chord in layer mode) per
 * variant, and the folded head H' (Cp, d) with H'[c][q] =
 * W[c][q] * gamma[q] (LayerNorm's scale folded in), then c' (Cp) = b +
 * W beta (its shift folded in); without a norm, W and b as they are. The
 * classes are padded with zero rows to Cp (the kernel's four-class passes). */
static void pre_item(lsx *x, int tid, long item) {
    ls_ws *w = &x->pool.ws[tid];
    const moe_config *c = x->pb.cfg;
    // the current sample chunk: rows [r0, r0+N) of the evaluation set
    int r0 = x->ck.b0 * LS_L, d = x->pb.d, n = x->pb.n;
    int N = x->pb.N - r0 < x->ck.nbn * LS_L ? x->pb.N - r0 : x->ck.nbn * LS_L;
    const float *X = x->pb.E->inputs + (size_t)r0 * d; // (N, d)
    long npi = (long)x->ck.ntc * x->pb.npairs;
    if (item >= npi + x->ck.ntc) { // own chords: B's expert j, or (j = n) B's gate logits
        int j = (int)(item - npi - x->ck.ntc);
        if (j < n) {
            expert_apply_panels(&x->pb.B->experts[j], c, X, N, w, w->Ye);
            ls_to_lanes(x->ck.Y1 + (size_t)j * x->pl.lane_d, w->Ye, N, d, x->ck.nbn);
        } else {
            for (int r = 0; r < N; r += LS_PANEL) // (N, n), panel by panel as the S above
                moe_gate_logits(x->pb.B, X + (size_t)r * d, N - r < LS_PANEL ? N - r : LS_PANEL,
                                w->Sx + (size_t)r * n);
            ls_to_lanes(x->ck.S1, w->Sx, N, n, x->ck.nbn);
        }
        return;
    }
    if (item < npi) {
        int tc = (int)(item / x->pb.npairs), p = (int)(item % x->pb.npairs);
        double t = ls_t(x->ck.tidx[tc], x->pb.T);
        int i = p < x->pb.nn ? p / n : p - x->pb.nn;
        moe_expert e, ta, tb;
        moe_expert_carve(&e, c, w->E);
        const int *P = x->pb.perm + (size_t)p * x->pb.h, first = x->pl.first_once;
        // a mapped layer's pair decoded first (its first layers, when once, are F's already)
        size_t es = moe_expert_size(c);
        const moe_expert *ea = moe_expert_floats(x->pb.A, i, &ta, w->EM);
        const moe_expert *eb = moe_expert_floats(x->pb.B, x->pb.pj[p], &tb, w->EM ? w->EM + es : NULL);
        expert_lerp_perm(&e, ea, eb, P, c, t, !first);
        if (first)
            pair_first_layers(x, w, &e, i, x->pb.pj[p], P, t, N, w->Ye);
        else
            expert_apply_panels(&e, c, X, N, w, w->Ye);
        ls_to_lanes(ls_Y_at(x, tc, p), w->Ye, N, d, x->ck.nbn);
        return;
    }
    int tc = (int)(item - npi);
    double t = ls_t(x->ck.tidx[tc], x->pb.T);
    float ta = (float)(1.0 - t), tb = (float)t;
    // gate scores of every (slot i, B row j): S (N, nn) = X (N, d) Wt^T + bt, Wt is (nn, d)
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            vlerp(w->Wt + (size_t)(i * n + j) * d, x->pb.rw[0] + (size_t)i * d,
                  x->pb.rw[1] + (size_t)j * d, (size_t)d, t);
            w->bt[i * n + j] = ta * x->pb.rb[0][i] + tb * x->pb.rb[1][j];
        }
    float *S = w->Sx; // (N, nn)
    for (int r = 0; r < N; r += LS_PANEL) {
        int np = N - r < LS_PANEL ? N - r : LS_PANEL;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, np, x->pb.nn, d, 1.0f, X + (size_t)r * d,
                    d, w->Wt, d, 0.0f, S + (size_t)r * x->pb.nn, x->pb.nn);
    }
    for (int r = 0; r < N; r++)
        for (int q = 0; q < x->pb.nn; q++) S[(size_t)r * x->pb.nn + q] += w->bt[q];
    ls_to_lanes(ls_S_at(x, tc), S, N, x->pb.nn, x->ck.nbn);
    if (x->ck.corr) { // selection biases of every (slot i, B row j), as the gate rows
        float *ct = x->ck.corr + (size_t)tc * x->pb.nn;
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++)
                ct[i * n + j] = ta * x->pb.A->corr_b[i] + tb * x->pb.B->corr_b[j];
    }
    pre_base(x, w, tc, t, X, N, r0);
    if (x->pb.kind != LS_LAYER) {
        int C = x->pb.C;
        float *hr = w->hraw; // gamma (d), beta (d), W (C, d), b (C) at t
        float *gm = hr, *bt = hr + d, *Hw = hr + 2 * d, *Hb = Hw + (size_t)C * d;
        if (c->has_norm) {
            vlerp(gm, x->pb.A->norm_w, x->pb.B->norm_w, (size_t)d, t);
            vlerp(bt, x->pb.A->norm_b, x->pb.B->norm_b, (size_t)d, t);
        } else {
            for (int q = 0; q < d; q++) gm[q] = 1.0f, bt[q] = 0.0f;
        }
        vlerp(Hw, x->pb.A->head_w, x->pb.B->head_w, (size_t)C * d, t);
        vlerp(Hb, x->pb.A->head_b, x->pb.B->head_b, (size_t)C, t);
        int Cp = x->pl.Cp;
        float *Hf = ls_head_at(x, tc); // (Cp, d)
        float *cp = Hf + (size_t)Cp * d; // (Cp)
        memset(Hf, 0, x->pl.head_floats * sizeof(float));
        for (int k = 0; k < C; k++) {
            double acc = Hb[k];
            for (int q = 0; q < d; q++) {
                Hf[(size_t)k * d + q] = Hw[(size_t)k * d + q] * gm[q];
                acc += (double)Hw[(size_t)k * d + q] * bt[q];
            }
            cp[k] = (float)acc;
        }
    }
}

/* ---------------- orders ---------------- */

/* loss and accuracy of an order from its sums */
void ls_order_value(const lsx *x, double lsum, long ok, double *loss, double *acc) {
    if (x->pb.kind == LS_LAYER) {
        *loss = lsum / ((double)x->pb.N * x->pb.d);
        *acc = NAN;
    } else if (x->pb.kind == LS_CLASSIFY) {
        *loss = lsum / x->pb.N;
        *acc = (double)ok / x->pb.N;
    } else {
        *loss = lsum / ((double)x->pb.N * x->pb.C);
        *acc = NAN;
    }
}

/* fold one value of an order into its running statistics; the expressions
 * are those of ls_curve_stats */
static void fold_one(lsx *x, long k, int tc, double loss, double acc) {
    int T = x->pb.T;
    double t = ls_t(x->ck.tidx[tc], T);
    double lb = x->rs.lb ? x->rs.lb[k] : x->pb.loss_b, ab = x->rs.ab ? x->rs.ab[k] : x->pb.acc_b;
    double e = loss - ((1.0 - t) * x->pb.loss_a + t * lb);
    if (isnan(e) || isnan(x->rs.bar[k])) x->rs.bar[k] = NAN;
    else if (e > x->rs.bar[k]) x->rs.bar[k] = e;
    x->rs.auc[k] += e / (double)(T - 1);
    if (x->pb.kind == LS_CLASSIFY) {
        double ea = (1.0 - t) * x->pb.acc_a + t * ab - acc;
        if (isnan(ea) || isnan(x->rs.accb[k])) x->rs.accb[k] = NAN;
        else if (ea > x->rs.accb[k]) x->rs.accb[k] = ea;
    }
}

void ls_emit_row(lsx *x, long k) {
    ls_row row;
    memset(&row, 0, sizeof row);
    row.id = k; // its order is L->orders' k-th
    row.barrier = x->rs.bar[k];
    row.acc_barrier = x->pb.kind == LS_CLASSIFY ? x->rs.accb[k] : NAN;
    row.auc = x->rs.auc[k];
    pthread_mutex_lock(&x->pool.mu);
    x->rs.L->rows[x->rs.filled++] = row;
    pthread_cond_signal(&x->pool.cv);
    pthread_mutex_unlock(&x->pool.mu);
}

/* where order k (the block's j-th) puts or finds its per-sample losses at
 * point m when they are streamed (ls_results.boot) */
static double *stream_row(const lsx *x, const ls_ws *w, long k, int j, int m) {
    const ls_results *rs = &x->rs;
    size_t N = (size_t)x->pb.N;
    if (rs->upos[m] >= 0) return rs->ustore + ((size_t)(k - rs->k0) * rs->une + rs->upos[m]) * N;
    if (rs->bpos[m] >= 0) return w->ublk + ((size_t)j * rs->nbl + rs->bpos[m]) * N;
    return (double *)rs->uend[m ? 1 : 0];
}

/* order k's (the block's j-th) losses at every point to the error bars */
static void stream_feed(lsx *x, ls_ws *w, long k, int j) {
    int slot = (int)(w - x->pool.ws), T = x->pb.T;
    const double **r = ls_boot_acc_rows(x->rs.boot, slot);
    for (int m = 0; m < T; m++) r[m] = stream_row(x, w, k, j, m);
    ls_boot_acc_feed(x->rs.boot, slot, k, r);
}

/* A block of orders, t-major, all active orders of the block at one t in one
 * kernel call (which walks the sample blocks once for all of them). Orders continue from where they stopped (x->rs.prog); with
 * a finite bmax (the ranks phase) an order stops as soon as its barrier
 * reaches bmax, since it can no longer rank above a chosen order. */
static void run_block(lsx *x, ls_ws *w, const long *ks, int cnt, int finish, double bmax, int units) {
    int n = x->pb.n;
    // (LS_BLOCK, LS_MAX_N) each, in the workspace (n = 256 would be 512 KiB of stack)
    int (*ord)[LS_MAX_N] = w->ord, (*pair)[LS_MAX_N] = w->pair;
    int (*lp)[LS_MAX_N] = w->lp, (*lc)[LS_MAX_N] = w->lc;
    char active[LS_BLOCK];
    int t0 = x->ck.ntc;
    // streamed error bars: the losses kept (units), and an order done already
    // run again for its losses alone (reboot)
    units = units && x->rs.upos;
    const unsigned char *again = units && x->rs.boot ? x->rs.reboot : NULL;
    for (int j = 0; j < cnt; j++) {
        long k = ks[j];
        active[j] = (!x->rs.done[k] || (again && again[k])) && x->rs.prog[k] < x->ck.ntc &&
                    !(x->rs.bar[k] >= bmax);
        if (!active[j]) continue;
        ls_order_of(x, k, ord[j]);
        for (int i = 0; i < n; i++) pair[j][i] = i * n + ord[j][i];
        if (x->rs.prog[k] < t0) t0 = x->rs.prog[k];
    }
    // t-major: all active orders of the block at one t in one kernel call,
    // which walks the samples once for all of them (see eval_orders_t)
    int idx[LS_BLOCK];
    double lsum[LS_BLOCK];
    long okc[LS_BLOCK];
    for (int tc = t0; tc < x->ck.ntc; tc++) {
        if (ls_cancelled(x)) return;
        int m = 0;
        for (int j = 0; j < cnt; j++)
            if (active[j] && x->rs.prog[ks[j]] == tc) idx[m++] = j;
        if (!m) continue;
        // the orders at this point in a row: the block as it is when all are
        // (the all-orders phase), else the active ones copied together
        const int (*op)[LS_MAX_N] = (const int(*)[LS_MAX_N])pair, (*oc)[LS_MAX_N] = (const int(*)[LS_MAX_N])ord;
        if (m < cnt) {
            for (int u = 0; u < m; u++) {
                memcpy(lp[u], pair[idx[u]], (size_t)n * sizeof(int));
                memcpy(lc[u], ord[idx[u]], (size_t)n * sizeof(int));
            }
            op = (const int(*)[LS_MAX_N])lp, oc = (const int(*)[LS_MAX_N])lc;
        }
        // sample chunks: carry each order's sums from the previous chunks
        for (int u = 0; u < m; u++) {
            long k = ks[idx[u]];
            lsum[u] = x->pl.nsc > 1 ? x->rs.acc_l[k] : 0.0;
            okc[u] = x->pl.nsc > 1 ? x->rs.acc_ok[k] : 0;
        }
        if (x->rs.units) { // each order's per-sample losses at this t, by sample
            for (int u = 0; u < m; u++)
                w->psbuf[u] = x->rs.units + ((size_t)(ks[idx[u]] - x->rs.units_k0) * x->pb.T + x->ck.tidx[tc]) * x->pb.N;
            w->ps = w->psbuf;
        } else if (units) {
            for (int u = 0; u < m; u++) w->psbuf[u] = stream_row(x, w, ks[idx[u]], idx[u], x->ck.tidx[tc]);
            w->ps = w->psbuf;
        }
        ls_eval_orders_t(x, w, m, op, oc, SH_MAIN, tc, lsum, okc);
        w->ps = NULL;
        if (!x->ck.sc_last) { // more samples to come: the values are not complete
            for (int u = 0; u < m; u++) {
                long k = ks[idx[u]];
                x->rs.acc_l[k] = lsum[u];
                x->rs.acc_ok[k] = okc[u];
            }
            continue;
        }
        for (int u = 0; u < m; u++) {
            int j = idx[u];
            long k = ks[j];
            double loss, acc;
            ls_order_value(x, lsum[u], okc[u], &loss, &acc);
            x->rs.prog[k] = tc + 1;
            if (again && again[k]) continue; // its row is out already
            if (x->ck.end_chunk) x->rs.lb[k] = loss, x->rs.ab[k] = acc;
            else fold_one(x, k, tc, loss, acc);
            if (!(x->rs.bar[k] < bmax)) active[j] = 0;
        }
    }
    if (!finish || !x->ck.sc_last) return;
    for (int j = 0; j < cnt; j++) {
        long k = ks[j];
        if (x->rs.prog[k] != x->ck.ntc) continue;
        if (again && again[k]) {
            if (!ls_cancelled(x)) stream_feed(x, w, k, j);
            x->rs.reboot[k] = 0;
            continue;
        }
        if (x->rs.done[k]) continue;
        x->rs.done[k] = 1;
        ls_emit_row(x, k);
        if (units && x->rs.boot && !ls_cancelled(x)) stream_feed(x, w, k, j);
    }
}

/* ---------------- the pool ---------------- */

/* MOESCOPE_TEST_LS_GATE (test_hooks.h): every block of orders but a job's
 * first waits for the file, or the cancel, so a test sees the landscape busy */
static int gate_stop(void *x) { return ls_cancelled(x); }
static void test_gate(lsx *x, long it) {
    if (it > 0) test_hook_hold(HOOK_LS_GATE, gate_stop, x);
}

static void *ls_worker(void *arg) {
    ls_arg *a = arg;
    ls_job *job = a->job;
    lsx *x = job->x;
    blas_single_enter(); // this pool's workers are the threads
    for (;;) {
        long s = __atomic_fetch_add(&job->next, job->grain, __ATOMIC_RELAXED);
        if (s >= job->nitems) break;
        long e = s + job->grain < job->nitems ? s + job->grain : job->nitems;
        for (long it = s; it < e; it++) {
            if (ls_cancelled(x)) goto out;
            if (job->kind == 2) {
                first_item(x, it);
            } else if (job->kind == 0) {
                // this process's pair items, then the per-t ones
                long npi = (long)x->ck.ntc * x->pb.npairs;
                pre_item(x, a->tid, it < job->pre_count ? job->pre_first + it
                                                        : npi + it - job->pre_count);
            } else {
                test_gate(x, it);
                // item = a block of orders: of the list, or of this process's [k0, k1)
                long ks[LS_BLOCK], k0 = job->list ? it * LS_BLOCK : x->rs.k0 + it * LS_BLOCK;
                long total = job->list ? job->nlist : x->rs.k1, cnt = 0;
                for (long k = k0; k < k0 + LS_BLOCK && k < total; k++)
                    ks[cnt++] = job->list ? job->list[k] : k;
                run_block(x, &x->pool.ws[a->tid], ks, (int)cnt, job->finish, job->bmax, job->units);
            }
            __atomic_fetch_add(&job->ndone, 1, __ATOMIC_RELAXED);
        }
    }
out:
    blas_single_leave();
    pthread_mutex_lock(&x->pool.mu);
    job->running--;
    pthread_cond_signal(&x->pool.cv);
    pthread_mutex_unlock(&x->pool.mu);
    return NULL;
}

void ls_report_progress(lsx *x) {
    pthread_mutex_lock(&x->pool.mu);
    long f = x->rs.filled;
    pthread_mutex_unlock(&x->pool.mu);
    if (f != x->rs.L->ndone || f == 0) {
        x->rs.L->ndone = f;
        const ls_partition *part = x->pb.o->part;
        long g = part ? part->rows_done(part, f) : f; // over all processes
        if (x->pb.o->progress && g >= 0) x->pb.o->progress(x->pb.o->ctx, g, x->rs.norders);
    }
}

/* Run the job on nthreads workers; the caller reports progress and watches
 * for a cancel. Returns -1 when cancelled. */
int ls_run_job(lsx *x, ls_job *job) {
    pthread_t th[LS_MAX_THREADS];
    ls_arg args[LS_MAX_THREADS];
    int created[LS_MAX_THREADS] = {0};
    job->running = x->pool.nthreads;
    job->next = 0;
    job->ndone = 0;
    if (job->what) ls_phase(x, job->what, 0, job->shown > 0 ? job->shown : job->ptotal);
    int started = 0;
    for (int i = 0; i < x->pool.nthreads; i++) {
        args[i].job = job;
        args[i].tid = i;
        if (pthread_create(&th[i], NULL, ls_worker, &args[i])) {
            pthread_mutex_lock(&x->pool.mu);
            job->running--;
            pthread_mutex_unlock(&x->pool.mu);
            continue;
        }
        created[i] = 1;
        started++;
    }
    if (!started) { // fall back to this thread
        job->running = 1;
        args[0].job = job;
        args[0].tid = 0;
        ls_worker(&args[0]);
    }
    pthread_mutex_lock(&x->pool.mu);
    while (job->running > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&x->pool.cv, &x->pool.mu, &ts);
        pthread_mutex_unlock(&x->pool.mu);
        ls_cancelled(x);
        if (job->kind == 1 && job->finish) ls_report_progress(x);
        if (job->what) {
            long dn = __atomic_load_n(&job->ndone, __ATOMIC_RELAXED) * job->unit;
            if (dn > job->ptotal) dn = job->ptotal;
            if (job->shown > 0) ls_phase(x, job->what, dn * job->shown / job->ptotal, job->shown);
            else ls_phase(x, job->what, dn, job->ptotal);
        }
        pthread_mutex_lock(&x->pool.mu);
    }
    pthread_mutex_unlock(&x->pool.mu);
    for (int i = 0; i < x->pool.nthreads; i++)
        if (created[i]) pthread_join(th[i], NULL);
    return ls_cancelled(x) ? -1 : 0;
}

/* Precompute sample chunk sc of the current points (nothing to do when it
 * is the one held). -1 when cancelled. */
int ls_load_samples(lsx *x, int sc) {
    if (x->ck.cur_sc == sc) return 0;
    x->ck.b0 = sc * x->pl.nbc;
    x->ck.nbn = x->pl.nb - x->ck.b0 < x->pl.nbc ? x->pl.nb - x->ck.b0 : x->pl.nbc;
    x->ck.sc_last = sc == x->pl.nsc - 1;
    // split over processes: each computes its share of the pair outputs (the bulk)
    // and every per-t item, then the pair outputs are exchanged; own chords add B's n
    // experts and its logits (t-independent, computed by every process)
    const ls_partition *part = x->pb.o->part;
    long npi = (long)x->ck.ntc * x->pb.npairs, lo = 0, hi = npi;
    if (part) ls_share(npi, part->rank, part->size, &lo, &hi);
    long rest = x->ck.ntc + (x->pb.own_chord ? x->pb.n + 1 : 0);
    // said in the points of the chunk: each point's every (slot, expert) pair of
    // interpolated experts on the samples and its gates (n^2 + n + 1 items a point)
    if (x->pl.nsc > 1)
        snprintf(x->ck.pre_what, sizeof x->ck.pre_what, "precomputing experts at points (samples %d/%d)",
                 sc + 1, x->pl.nsc);
    else snprintf(x->ck.pre_what, sizeof x->ck.pre_what, "precomputing experts at points");
    ls_job job = {.x = x, .nitems = hi - lo + rest, .grain = 1, .kind = 0,
                  .what = x->ck.pre_what, .unit = 1, .ptotal = hi - lo + rest, .shown = x->ck.ntc,
                  .pre_first = lo, .pre_count = hi - lo};
    // the first layers of A's slots and B's experts, for every pair (every process: 2n GEMMs)
    ls_job first = {.x = x, .nitems = 2L * x->pb.n, .grain = 1, .kind = 2,
                    .what = "precomputing experts' first layers", .unit = 1, .ptotal = 2L * x->pb.n};
    x->ck.cur_sc = -1;
    double t0 = ls_now(), c0 = ls_cpu_now();
    int rc = x->pl.first_once ? ls_run_job(x, &first) : 0;
    if (!rc) rc = ls_run_job(x, &job);
    x->rs.L->secs_step[LS_STEP_PRE] += ls_now() - t0;
    x->rs.L->cpu_step[LS_STEP_PRE] += ls_cpu_now() - c0;
    if (rc) return -1;
    // Y is (ntc, npairs, lane_d): pair item q is the q-th run of lane_d floats
    if (part && part->allgather(part, x->ck.Y, npi, x->pl.lane_d * sizeof(float), &x->rs.perr)) {
        x->rs.failed = 1;
        return -1;
    }
    if (x->pl.prefix) ls_prefix_prepare(x);
    x->ck.cur_sc = sc;
    return 0;
}

/* An orders job over every sample chunk in order (once when not chunked):
 * the orders' sums are carried across the chunks and complete at the last. */
int ls_sweep(lsx *x, ls_job *job) {
    if (x->pl.nsc > 1) {
        memset(x->rs.acc_l, 0, (size_t)x->rs.norders * sizeof(double));
        memset(x->rs.acc_ok, 0, (size_t)x->rs.norders * sizeof(long));
    }
    for (int sc = 0; sc < x->pl.nsc; sc++) {
        if (ls_load_samples(x, sc)) return -1;
        if (ls_run_job(x, job)) return -1;
    }
    return 0;
}
