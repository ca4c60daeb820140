/* landscape_kernel.c - the fused per-order kernel of the landscape: for a
 * block of orders at one point t, the routing, the mix of the pair outputs,
 * LayerNorm, the head and the loss of 8 samples per vector lane. Two forms:
 * the per-order path (every router; the reference) and, for a softmax over
 * all experts with a head, the prefix path, which shares partial sums across
 * orders with the same leading slots (see "the prefix path" below).
 *
 * Why its function is long: it is the hot loop of the whole tool (every order
 * at every t), and splitting it into calls would put the per-lane values
 * (scores, gate weights, the block output z and the logits, all held in
 * registers or L1) behind function boundaries and memory round trips the
 * compiler cannot remove across target clones; each stage below is commented
 * instead. The plain reference for every number it makes is the evaluator
 * (moe_forward + moe_head + the loss), which the tests compare it with. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "landscape_int.h"
#include "model/moe_kernels.h"

/* The per-order kernel is the hot loop of the whole tool (every order at
 * every t). Its shape, and why:
 *   - one sample per vector lane (LS_L = 8 samples side by side, the
 *     lane-major layout of the precompute): routing, the mix, LayerNorm, the
 *     head and log-sum-exp are all lane-parallel arithmetic, with no
 *     horizontal reduction and no gather;
 *   - fused: per block of 8 samples, z (d, 8) and the logits (C, 8) live in
 *     L1 and the loss is folded in at once; no (N, d) round trip through
 *     memory and no sgemm call (OpenBLAS's per-call overhead is larger than
 *     a 360x10x32 product);
 *   - the head's LayerNorm scale and shift are folded into the broadcast
 *     head (H8, c'), so LayerNorm is only centring and one 1/sigma per lane;
 *   - several orders per sample block (the caller's order block, usually
 *     neighbours in lexicographic order sharing most slots): a block's Y
 *     slices (pairs x 1 KiB) stay in L1/L2 while every order of the block
 *     uses them, instead of streaming 46 KiB per pair per order from L3;
 *   - the loss sum per order runs over the sample blocks in a fixed order,
 *     so an order's value does not depend on which orders share its call
 *     (threads, chunking and the named curves give identical numbers).
 * Built for AVX2+FMA with a plain fallback (picked at load time; the prefix
 * path also for AVX-512). No associative-math: nothing here needs it, and
 * exp's rounding trick must not be reassociated. */
#define LS_HOT                                                                           \
    __attribute__((target_clones("arch=x86-64-v3", "default"),                           \
                   optimize("O3", "no-math-errno", "no-trapping-math")))

typedef float v8f __attribute__((vector_size(LS_L * 4), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(LS_L * 4), aligned(4), may_alias));

#define V8_SEL(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))

/* Cephes' expf polynomial (~1 ulp) on a vector x already clamped to
 * [-87, 88], for a float vector type VF and its int type VI: the 8- and
 * 16-lane forms share it, so they agree bit for bit */
#define VEXP_CLAMPED(VF, VI, out, x)                                                     \
    do {                                                                                 \
        VF k_ = (x) * 1.44269504088896341f;                                              \
        k_ = (k_ + 12582912.0f) - 12582912.0f; /* round to nearest */                    \
        VF r_ = (x) - k_ * 0.693359375f + k_ * 2.12194440e-4f;                           \
        VF p_ = (VF){0} + 1.9875691500e-4f;                                              \
        p_ = p_ * r_ + 1.3981999507e-3f;                                                 \
        p_ = p_ * r_ + 8.3334519073e-3f;                                                 \
        p_ = p_ * r_ + 4.1665795894e-2f;                                                 \
        p_ = p_ * r_ + 1.6666665459e-1f;                                                 \
        p_ = p_ * r_ + 5.0000001201e-1f;                                                 \
        p_ = p_ * r_ * r_ + r_ + 1.0f;                                                   \
        VI e_ = (__builtin_convertvector(k_, VI) + 127) << 23;                           \
        (out) = p_ * (VF)e_;                                                             \
    } while (0)

/* e^x per lane, branch-free */
#define V8_EXP(out, xin)                                                                 \
    do {                                                                                 \
        v8f x_ = (xin);                                                                  \
        const v8f lo_ = (v8f){0} - 87.0f, hi_ = (v8f){0} + 88.0f;                        \
        x_ = V8_SEL(x_ < lo_, lo_, x_);                                                  \
        x_ = V8_SEL(x_ > hi_, hi_, x_);                                                  \
        VEXP_CLAMPED(v8f, v8i, out, x_);                                                 \
    } while (0)

#define LS_INLINE static inline __attribute__((always_inline))

/* sel[i] (lane mask) = expert i is among the k largest of q (n) in that lane,
 * ranked by MOE_RANKS_BEFORE (larger first, ties to the smaller index: the
 * rule of moe_topk); *top = the largest per lane. */
LS_INLINE void topk_lanes(const v8f *q, int n, int k, v8i *sel, v8f *top) {
    *top = q[0];
    for (int i = 0; i < n; i++) sel[i] = (v8i){0};
    for (int r = 0; r < k; r++) {
        v8f bv = q[0];
        v8i bi = (v8i){0} - 1;
        for (int i = 0; i < n; i++) {
            // the first unselected expert, then any that ranks before the best so far
            const v8i iv = (v8i){0} + i;
            v8i cand = ~sel[i] & (MOE_RANKS_BEFORE(q[i], iv, bv, bi) | (bi < 0));
            bv = V8_SEL(cand, q[i], bv);
            bi = (cand & iv) | (~cand & bi);
        }
        for (int i = 0; i < n; i++) sel[i] |= bi == i;
        if (r == 0) *top = bv;
    }
}

/* p (n) = softmax over all n, per lane */
LS_INLINE void softmax_lanes(const v8f *s, int n, v8f *p) {
    v8f mx = s[0], sum = (v8f){0};
    for (int i = 1; i < n; i++) mx = V8_SEL(s[i] > mx, s[i], mx);
    for (int i = 0; i < n; i++) {
        V8_EXP(p[i], s[i] - mx);
        sum += p[i];
    }
    v8f inv = 1.0f / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

/* Group-limited selection per lane (evaluator.c's groups_mask): rank the
 * n_group groups of q by their largest entry or the sum of their two largest,
 * keep topk_group of them, q = 0 on the others. */
LS_INLINE void groups_lanes(const moe_config *c, int n, v8f *q) {
    int G = c->n_group, m = n / G;
    v8f gs[LS_MAX_N];
    v8i gsel[LS_MAX_N];
    for (int a = 0; a < G; a++) {
        const v8f *qa = q + a * m;
        v8f b1 = qa[0], b2 = (v8f){0} - INFINITY;
        for (int i = 1; i < m; i++) {
            v8i gt = qa[i] > b1;
            b2 = V8_SEL(gt, b1, V8_SEL(qa[i] > b2, qa[i], b2));
            b1 = V8_SEL(gt, qa[i], b1);
        }
        gs[a] = b1;
        if (c->group_score == GROUP_TOP2_SUM && m >= 2) gs[a] = b1 + b2;
    }
    v8f top;
    topk_lanes(gs, G, c->topk_group, gsel, &top);
    for (int a = 0; a < G; a++)
        for (int i = 0; i < m; i++) q[a * m + i] = (v8f)(gsel[a] & (v8i)q[a * m + i]);
}

/* Gate weights g (n) from the logits s (n) per lane under any router of
 * moe_config (moe_route's rules: evaluator.c route_one): softmax or sigmoid
 * scores p, selection scores q = p + e (e: the slots' selection biases, or
 * NULL), groups, top-k on q, weights p renormalised or not, times the routed
 * scale. The softmax top-k without bias or groups selects on the logits, as
 * moe_route does. */
LS_INLINE void route_general(const moe_config *c, int n, const float *e, const v8f *s, v8f *g) {
    const int k = c->k, grouped = c->n_group > 1 && c->topk_group < c->n_group;
    const int sig = c->score == SCORE_SIGMOID, renorm = c->renorm == RENORM_YES;
    const float scale = c->scale != 0.0f ? c->scale : 1.0f;
    if (n < 1) return; /* never; tells the compiler every q[0] below is set */
    v8f p[LS_MAX_N];
    v8i sel[LS_MAX_N];
    if (sig) {
        for (int i = 0; i < n; i++) {
            v8f ex;
            V8_EXP(ex, (v8f){0} - s[i]);
            p[i] = 1.0f / (1.0f + ex);
        }
    }
    if (c->router != ROUTER_TOPK || (k >= n && !grouped)) {
        // dense: every expert with its score (sigmoid + renormalisation: over all)
        if (!sig) softmax_lanes(s, n, p);
        v8f mul = (v8f){0} + scale;
        if (c->router == ROUTER_TOPK && renorm && sig) {
            v8f sum = (v8f){0} + c->renorm_eps;
            for (int i = 0; i < n; i++) sum += p[i];
            mul = scale / sum;
        }
        for (int i = 0; i < n; i++) g[i] = p[i] * mul;
        return;
    }
    if (!sig && !e && !grouped) {
        // softmax is monotone: select on the logits; the sum runs over the
        // selected (renormalised) or over all n (mx, the top one, is the max of all)
        v8f mx, sum = (v8f){0}, ex[LS_MAX_N];
        topk_lanes(s, n, k, sel, &mx);
        for (int i = 0; i < n; i++) {
            V8_EXP(ex[i], s[i] - mx);
            if (renorm) sum += (v8f)(sel[i] & (v8i)ex[i]);
            else sum += ex[i];
        }
        if (renorm) sum += c->renorm_eps;
        v8f mul = scale / sum;
        for (int i = 0; i < n; i++) g[i] = (v8f)(sel[i] & (v8i)(ex[i] * mul));
        return;
    }
    if (!sig) softmax_lanes(s, n, p);
    v8f q[LS_MAX_N];
    for (int i = 0; i < n; i++) q[i] = p[i];
    if (e)
        for (int i = 0; i < n; i++) q[i] += e[i];
    if (grouped) groups_lanes(c, n, q);
    v8f top;
    topk_lanes(q, n, k, sel, &top);
    v8f mul = (v8f){0} + scale;
    if (renorm) {
        v8f sum = (v8f){0} + c->renorm_eps;
        for (int i = 0; i < n; i++) sum += (v8f)(sel[i] & (v8i)p[i]);
        mul = scale / sum;
    }
    for (int i = 0; i < n; i++) g[i] = (v8f)(sel[i] & (v8i)(p[i] * mul));
}

/* Own chords (layer mode, ls_problem.own_chord): z (d) -= t sum_i g1_i
 * E^B_col(i)(x), with g1 B's routing after the order's reordering (slot i
 * holds B's row col[i]: its logit and selection bias), so z becomes D_t(x) -
 * (1-t) D_A(x) - t D_B'(x); *z2 = the lane sums of z^2. Sample block b. */
LS_INLINE void own_chord_end(const lsx *x, const moe_config *c, const int *col, int b, float tt,
                             v8f *z, v8f *z2) {
    const int n = x->pb.n, d = x->pb.d;
    const float *S1b = x->ck.S1 + (size_t)b * n * LS_L; // (n, LS_L)
    v8f s1[LS_MAX_N], g1[LS_MAX_N];
    float e1[LS_MAX_N];
    const v8f *y1[LS_MAX_N];
    for (int i = 0; i < n; i++) {
        s1[i] = *(const v8f *)(S1b + (size_t)col[i] * LS_L);
        if (x->pb.B->corr_b) e1[i] = x->pb.B->corr_b[col[i]];
        y1[i] = (const v8f *)(x->ck.Y1 + (size_t)col[i] * x->pl.lane_d + (size_t)b * d * LS_L);
    }
    route_general(c, n, x->pb.B->corr_b ? e1 : NULL, s1, g1);
    for (int i = 0; i < n; i++) g1[i] *= -tt;
    v8f acc = (v8f){0};
    for (int q = 0; q < d; q++) {
        v8f a = z[q];
        for (int i = 0; i < n; i++) a += g1[i] * y1[i][q];
        z[q] = a;
        acc += a * a;
    }
    *z2 = acc;
}

/* *sc = LayerNorm's 1/sigma per lane for z (d) with lane sums zs; z is centred in
 * place (biased variance, eps 1e-5, two passes as moe_forward; four chains
 * for the variance). */
LS_INLINE void layernorm_lanes(v8f *z, int d, const v8f *zs, v8f *scp) {
    v8f mu = *zs / (float)d, v0 = (v8f){0}, v1 = v0, v2 = v0, v3 = v0;
    int q = 0;
    for (; q + 4 <= d; q += 4) {
        v8f c0 = z[q] - mu, c1 = z[q + 1] - mu, c2 = z[q + 2] - mu, c3 = z[q + 3] - mu;
        z[q] = c0, z[q + 1] = c1, z[q + 2] = c2, z[q + 3] = c3;
        v0 += c0 * c0, v1 += c1 * c1, v2 += c2 * c2, v3 += c3 * c3;
    }
    for (; q < d; q++) {
        v8f c0 = z[q] - mu;
        z[q] = c0;
        v0 += c0 * c0;
    }
    v8f var = ((v0 + v1) + (v2 + v3)) / (float)d + 1e-5f;
    // 1/sqrt(var) per lane: GCC leaves 1.0f/sqrtf on lanes scalar (8 sqrt +
    // 8 div, ~8% of the kernel), so the bit-trick first guess (3.4e-3) and
    // three Newton steps (-> ~1e-7, float's own rounding), all lane-parallel
    v8f hv = 0.5f * var;
    v8f sc = (v8f)(0x5f375a86 - ((v8i)var >> 1));
    sc = sc * (1.5f - hv * sc * sc);
    sc = sc * (1.5f - hv * sc * sc);
    *scp = sc * (1.5f - hv * sc * sc);
}

/* The loss of the logits lg (C) of sample block gb (nv valid lanes) added to
 * *lsum (classification: cross-entropy, and the correct argmaxes to *ok, ties
 * to the smaller index as moe_eval; regression: squared error over C). */
LS_INLINE void loss_lanes(const lsx *x, const v8f *lg, int gb, int nv, double *lsum, long *ok) {
    const int C = x->pb.C;
    double ls = 0.0;
    if (x->pb.kind == LS_CLASSIFY) {
        v8i y = *(const v8i *)(x->pb.lab8 + (size_t)gb * LS_L);
        v8f best = lg[0], ly = (v8f){0};
        v8i am = (v8i){0};
        for (int u = 0; u < C; u++) {
            v8i gt = lg[u] > best;
            best = V8_SEL(gt, lg[u], best);
            am = (gt & ((v8i){0} + u)) | (~gt & am);
            ly = V8_SEL(y == u, lg[u], ly);
        }
        v8f se = (v8f){0};
        for (int u = 0; u < C; u++) {
            v8f e;
            V8_EXP(e, lg[u] - best);
            se += e;
        }
        // sum of (max - logit_y) + log(se) per sample: one log per block (se
        // is in [1, C], so the product cannot overflow)
        v8f dl = best - ly;
        double prod = 1.0;
        long good = 0;
        for (int l = 0; l < nv; l++) {
            ls += dl[l];
            prod *= se[l];
            good += am[l] == y[l];
        }
        *lsum += ls + log(prod);
        *ok += good;
    } else {
        const v8f *tg = (const v8f *)(x->pb.tg8 + (size_t)gb * C * LS_L);
        v8f s2 = (v8f){0};
        for (int u = 0; u < C; u++) {
            v8f e = lg[u] - tg[u];
            s2 += e * e;
        }
        for (int l = 0; l < nv; l++) ls += s2[l];
        *lsum += ls;
    }
}

/* ---------------- the prefix path ----------------
 * For a softmax over all n experts with a head (dense routing, classification
 * or regression), an order's block output is z = base + U/S with
 *   U = sum_i e_i Y_pair(i),  S = sum_i e_i,  e_i = exp(s_i - mref),
 * mref the sample's largest logit over every (slot, B row): the same softmax,
 * normalised once at the end instead of per slot. U and S are sums over the
 * slots in slot order, so orders with the same leading slots (neighbours in
 * lexicographic order) share their partial sums ("levels"): over a block of
 * orders the sums cost ~e = 2.7 slot terms per order instead of n.
 * LayerNorm's centring commutes with the mix (the weights sum to 1), so with
 * Y and base centred over d once per chunk, z is born centred; and the head is
 * linear: H'z = H' base + (sum_i e_i H'Y_i) / S with H' the folded head, so with
 * H'Y precomputed per pair the head costs Cp per slot term instead of Cp*d per
 * order. Only LayerNorm's variance needs z itself (d per order).
 * The per-order path (ls_eval_orders_t's own loop) is the reference; the two
 * differ by float rounding only (the same sums regrouped; see
 * tests/unit/test_landscape_api.c). Where the CPU has AVX-512 the d loops run on
 * 16 floats (two q per vector) and the loss on two orders per vector; the
 * 8-float form (AVX2+FMA, or plain) does the same arithmetic per lane, so the
 * numbers are the same either way. */

/* the largest n served (the workspace keeps a level per slot) */
#define LS_PREFIX_MAX_N 12
/* mref - (the least an order's largest logit can be) must stay below this, so
 * that every order's S >= e^-64 stays a normal float far from underflow; a t
 * where some sample exceeds it takes the per-order path */
#define LS_PREFIX_RANGE 64.0f

/* orders whose phase 1 (the mix) runs before their phase 2 (the loss) runs:
 * each phase's iterations are then independent, and their long dependency
 * chains overlap in the core instead of waiting on each other */
#define PFX_BATCH 16
/* strides in the workspace, in 8-float vectors, even so that every 16-float
 * access is 64-byte aligned: a level (U (d), H'U (Cp), S) and a phase 1 */
#define PFX_W(d, Cp) (((d) + (Cp) + 2) & ~1)
#define PFX_HS(Cp) (((Cp) + 2) & ~1)

typedef float v16f __attribute__((vector_size(64), aligned(4), may_alias));
typedef double v4d __attribute__((vector_size(32), aligned(8), may_alias));
typedef int64_t v4l __attribute__((vector_size(32), aligned(8), may_alias));
typedef float v4f __attribute__((vector_size(16), aligned(4), may_alias));
typedef int32_t v16i __attribute__((vector_size(64), aligned(4), may_alias));
#define V16_DUP(a) __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7)
#define V16_LO(a) __builtin_shufflevector(a, a, 0, 1, 2, 3, 4, 5, 6, 7)
#define V16_HI(a) __builtin_shufflevector(a, a, 8, 9, 10, 11, 12, 13, 14, 15)

/* e^x on 16 lanes, x <= 0 (the loss's exponents) */
#define V16_EXP_NEG(out, xin)                                                            \
    do {                                                                                 \
        v16f x_ = (xin);                                                                 \
        const v16f lo_ = (v16f){0} - 87.0f;                                              \
        const v16i m_ = x_ < lo_;                                                        \
        x_ = (v16f)((m_ & (v16i)lo_) | (~m_ & (v16i)x_));                                \
        VEXP_CLAMPED(v16f, v16i, out, x_);                                               \
    } while (0)

/* An order's running loss over the sample blocks of one panel, per lane:
 * the summed (max - logit_y) or squared errors, the product of the softmax
 * sums (one log per panel instead of one per block; its binary exponent kept
 * apart so it cannot overflow) and the correct argmaxes. */
typedef struct {
    double dl[LS_L], pr[LS_L];
    int64_t ex[LS_L];
    int32_t good[LS_L];
} pfx_acc;

size_t ls_prefix_ws_bytes(const lsx *x) { // as prefix_body carves it
    int n = x->pb.n, Cp = x->pl.Cp;
    size_t floats = (size_t)(n > 1 ? n - 1 : 1) * PFX_W(x->pb.d, Cp) + PFX_BATCH * PFX_HS(Cp) + 2 * Cp;
    return floats * LS_L * sizeof(float) + (size_t)LS_BLOCK * sizeof(pfx_acc) +
           (size_t)LS_BLOCK * (1 + 2 * n) * sizeof(int);
}

int ls_prefix_applies(const lsx *x) {
    const moe_config *c = x->pb.cfg;
    int on = x->pb.o->prefix; // 0: where it applies and pays (below); -1 never; 1 wherever it applies
    if (on < 0 || x->pb.kind == LS_LAYER || x->pb.general || x->pb.n > LS_PREFIX_MAX_N ||
        (c->router == ROUTER_TOPK && c->k < x->pb.n))
        return 0;
    // its precompute (H'Y: Cp*d per pair, sample and t, on one thread) pays
    // back what an order saves (~(n + Cp)*d) once there are a few n^2 orders:
    // not at n = 4 (24 orders, 16 pairs)
    return on > 0 || x->rs.norders >= 4L * x->pb.nn;
}

/* src (d) centred over d in place (when norm); out (Cp) = H8 (Cp, d) src */
LS_INLINE void centre_head(const v8f *H8, int Cp, int d, int norm, v8f *src, v8f *out) {
    if (norm) {
        v8f mu = (v8f){0};
        for (int q = 0; q < d; q++) mu += src[q];
        mu /= (float)d;
        for (int q = 0; q < d; q++) src[q] -= mu;
    }
    for (int k = 0; k < Cp; k++) {
        const v8f *h = H8 + (size_t)k * d;
        v8f a = (v8f){0};
        for (int q = 0; q < d; q++) a += h[q] * src[q];
        out[k] = a;
    }
}

/* The chunk's E, HY and pfx_ok at every t of the chunk; where the path holds,
 * Y and base are centred in place (single-threaded: a few ms next to the
 * orders' sweep). */
LS_HOT void ls_prefix_prepare(lsx *x) {
    x->pl.prefix_wide = !x->pb.o->prefix_narrow && ls_prefix_wide_cpu();
    const int n = x->pb.n, nn = x->pb.nn, d = x->pb.d, nb = x->ck.nbn, Cp = x->pl.Cp;
    const int norm = x->pb.cfg->has_norm, np = x->pb.npairs;
    for (int tc = 0; tc < x->ck.ntc; tc++) {
        int ok = 1;
        for (int b = 0; b < nb && ok; b++) {
            const v8f *s = (const v8f *)(ls_S_at(x, tc) + (size_t)b * nn * LS_L);
            v8f *e = (v8f *)(ls_E_at(x, tc) + (size_t)b * nn * LS_L);
            // mref per lane, and lo: no order's largest logit is below it
            v8f mref = s[0], lo = s[0];
            for (int p = 1; p < nn; p++) mref = V8_SEL(s[p] > mref, s[p], mref);
            for (int i = 0; i < n; i++) {
                v8f mn = s[i * n];
                for (int c = 1; c < n; c++) mn = V8_SEL(s[i * n + c] < mn, s[i * n + c], mn);
                lo = V8_SEL(mn > lo, mn, lo);
            }
            v8i fine = (mref - lo) <= LS_PREFIX_RANGE; // false for NaN too
            for (int l = 0; l < LS_L; l++) ok &= fine[l] != 0;
            for (int p = 0; p < nn; p++) V8_EXP(e[p], s[p] - mref);
        }
        x->ck.pfx_ok[tc] = (unsigned char)ok;
        if (!ok) continue; // Y and base stay as they are for the per-order path
        const v8f *H8 = (const v8f *)ls_head_at(x, tc);
        for (int p = 0; p < np + SH_COUNT; p++) {
            float *src = p < np ? ls_Y_at(x, tc, p) : ls_base_at(x, tc, p - np);
            for (int b = 0; b < nb; b++)
                centre_head(H8, Cp, d, norm, (v8f *)(src + (size_t)b * d * LS_L),
                            (v8f *)(ls_HY_at(x, tc, p) + (size_t)b * Cp * LS_L));
        }
    }
}

/* a <- a + v (8 floats into 8 doubles) */
LS_INLINE void add_d(double *a, v8f v) {
    v4f lo = __builtin_shufflevector(v, v, 0, 1, 2, 3);
    v4f hi = __builtin_shufflevector(v, v, 4, 5, 6, 7);
    *(v4d *)a += __builtin_convertvector(lo, v4d);
    *(v4d *)(a + 4) += __builtin_convertvector(hi, v4d);
}

/* a <- a * v; with renorm, a's binary exponent is moved to ex (a in [1, 2));
 * at the end of each panel of 8 blocks is enough (a <= C^8 before it) */
LS_INLINE void mul_d(double *a, int64_t *ex, v8f v, int renorm) {
    v4f lo = __builtin_shufflevector(v, v, 0, 1, 2, 3);
    v4f hi = __builtin_shufflevector(v, v, 4, 5, 6, 7);
    for (int h = 0; h < 2; h++) {
        v4d p = *(v4d *)(a + 4 * h) * __builtin_convertvector(h ? hi : lo, v4d);
        if (renorm) {
            v4l bits = (v4l)p;
            *(v4l *)(ex + 4 * h) += (bits >> 52) - 1023;
            p = (v4d)((bits & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
        }
        *(v4d *)(a + 4 * h) = p;
    }
}

/* one block's loss terms of an order into its acc: dl (max - logit_y, or the
 * squared errors), se (the softmax sum, 1 without), good (-1 where correct) */
LS_INLINE void acc_add(pfx_acc *acc, v8f dl, v8f se, v8i good, int classify, int renorm) {
    add_d(acc->dl, dl);
    if (classify) {
        mul_d(acc->pr, acc->ex, se, renorm);
        *(v8i *)acc->good -= good;
    }
}

/* Phase 1 of an order's last slots (top..n-1: one or two; lt, the level of
 * the slots before them) at one sample block: hl (Cp) = H'base + H'U/S, the
 * logits before LayerNorm's scale, and hl[Cp] = z's variance + eps (z = base +
 * U/S, born centred; 1 without a norm). w16: 16-float vectors. */
LS_INLINE void prefix_leaf(const lsx *x, const v8f *lt, const v8f *bb, const v8f *hb, const v8f e0,
                           const v8f e1, const v8f *y0, const v8f *y1, const v8f *h0, const v8f *h1,
                           int two, v8f *hl, const int w16) {
    const int d = x->pb.d, Cp = x->pl.Cp;
    v8f s = lt[d + Cp] + e0;
    if (two) s += e1;
    const v8f inv = 1.0f / s;
    v8f var = (v8f){0} + 1.0f;
    if (x->pb.cfg->has_norm) {
        // four chains (q = 0, 1, 2, 3 mod 4): two q per 16-float vector, or
        // one per 8-float one
        int q = 0;
        if (w16) {
            const v16f e0w = V16_DUP(e0), e1w = V16_DUP(e1), invw = V16_DUP(inv);
            v16f va = (v16f){0}, vb = va;
            for (; q + 4 <= d; q += 4) {
                v16f u0 = *(const v16f *)(lt + q) + e0w * *(const v16f *)(y0 + q);
                v16f u1 = *(const v16f *)(lt + q + 2) + e0w * *(const v16f *)(y0 + q + 2);
                if (two) {
                    u0 += e1w * *(const v16f *)(y1 + q);
                    u1 += e1w * *(const v16f *)(y1 + q + 2);
                }
                v16f z0 = *(const v16f *)(bb + q) + u0 * invw;
                v16f z1 = *(const v16f *)(bb + q + 2) + u1 * invw;
                va += z0 * z0, vb += z1 * z1;
            }
            var = (V16_LO(va) + V16_HI(va)) + (V16_LO(vb) + V16_HI(vb));
        } else {
            v8f v0 = (v8f){0}, v1 = v0, v2 = v0, v3 = v0;
            for (; q + 4 <= d; q += 4) {
                v8f u0 = lt[q] + e0 * y0[q], u1 = lt[q + 1] + e0 * y0[q + 1];
                v8f u2 = lt[q + 2] + e0 * y0[q + 2], u3 = lt[q + 3] + e0 * y0[q + 3];
                if (two)
                    u0 += e1 * y1[q], u1 += e1 * y1[q + 1], u2 += e1 * y1[q + 2], u3 += e1 * y1[q + 3];
                v8f z0 = bb[q] + u0 * inv, z1 = bb[q + 1] + u1 * inv;
                v8f z2 = bb[q + 2] + u2 * inv, z3 = bb[q + 3] + u3 * inv;
                v0 += z0 * z0, v1 += z1 * z1, v2 += z2 * z2, v3 += z3 * z3;
            }
            var = (v0 + v1) + (v2 + v3);
        }
        for (; q < d; q++) {
            v8f u = lt[q] + e0 * y0[q];
            if (two) u += e1 * y1[q];
            v8f zq = bb[q] + u * inv;
            var += zq * zq;
        }
        var = var / (float)d + 1e-5f;
    }
    int c = 0;
    if (w16) { // two classes per vector (Cp is even)
        const v16f e0w = V16_DUP(e0), e1w = V16_DUP(e1), invw = V16_DUP(inv);
        for (; c + 2 <= Cp; c += 2) {
            v16f hu = *(const v16f *)(lt + d + c) + e0w * *(const v16f *)(h0 + c);
            if (two) hu += e1w * *(const v16f *)(h1 + c);
            *(v16f *)(hl + c) = *(const v16f *)(hb + c) + hu * invw;
        }
    }
    for (; c < Cp; c++) {
        v8f hu = lt[d + c] + e0 * h0[c];
        if (two) hu += e1 * h1[c];
        hl[c] = hb[c] + hu * inv;
    }
    hl[Cp] = var;
}

/* Phase 2 on VEC (8 or 16 lanes; 16: two orders side by side): LayerNorm's
 * 1/sigma from the variance var (bit-trick guess and three Newton steps, as
 * layernorm_lanes), the logits lg (C) = hlc sc + c' (hlc: class u_'s phase-1
 * value, an expression in u_), and the loss terms of acc_add (ties of the
 * argmax to the smaller class, as moe_eval; the softmax sum in class order).
 * y: the labels (classification), tg: the targets (regression). */
#define PFX_FINISH(VEC, VI, EXP, var, hlc, cp, y, tg, C, norm, classify, lg, dl, se, good)   \
    do {                                                                                 \
        VEC sc_ = (VEC){0} + 1.0f;                                                       \
        if (norm) {                                                                      \
            VEC hv_ = 0.5f * (var);                                                      \
            sc_ = (VEC)(0x5f375a86 - ((VI)(var) >> 1));                                  \
            sc_ = sc_ * (1.5f - hv_ * sc_ * sc_);                                        \
            sc_ = sc_ * (1.5f - hv_ * sc_ * sc_);                                        \
            sc_ = sc_ * (1.5f - hv_ * sc_ * sc_);                                        \
        }                                                                                \
        for (int u_ = 0; u_ < (C); u_++) (lg)[u_] = (hlc) * sc_ + (cp)[u_];             \
        if (classify) {                                                                  \
            VEC best_ = (lg)[0], ly_ = (VEC){0};                                         \
            VI am_ = (VI){0};                                                            \
            for (int u_ = 0; u_ < (C); u_++) {                                           \
                VI gt_ = (lg)[u_] > best_, is_ = (y) == u_;                              \
                best_ = (VEC)((gt_ & (VI)(lg)[u_]) | (~gt_ & (VI)best_));                \
                am_ = (gt_ & ((VI){0} + u_)) | (~gt_ & am_);                             \
                ly_ = (VEC)((is_ & (VI)(lg)[u_]) | (~is_ & (VI)ly_));                    \
            }                                                                            \
            VEC se_ = (VEC){0};                                                          \
            for (int u_ = 0; u_ < (C); u_++) {                                           \
                VEC ex_;                                                                 \
                EXP(ex_, (lg)[u_] - best_);                                              \
                se_ += ex_;                                                              \
            }                                                                            \
            (dl) = best_ - ly_, (se) = se_, (good) = am_ == (y);                         \
        } else {                                                                         \
            VEC s2_ = (VEC){0};                                                          \
            for (int u_ = 0; u_ < (C); u_++) {                                           \
                VEC e_ = (lg)[u_] - (tg)[u_];                                            \
                s2_ += e_ * e_;                                                          \
            }                                                                            \
            (dl) = s2_, (se) = (VEC){0} + 1.0f, (good) = (VI){0};                        \
        }                                                                                \
    } while (0)

/* phase 2 of one order on 8 lanes; hl: its phase 1 (Cp + 1) */
LS_INLINE void prefix_finish8(const lsx *x, const v8f *hl, const float *cp, int gb, int renorm,
                              v8i valid, v8f *lg, pfx_acc *acc) {
    const int C = x->pb.C, Cp = x->pl.Cp, classify = x->pb.kind == LS_CLASSIFY;
    const v8i y = classify ? *(const v8i *)(x->pb.lab8 + (size_t)gb * LS_L) : (v8i){0};
    const v8f *tg = classify ? NULL : (const v8f *)(x->pb.tg8 + (size_t)gb * C * LS_L);
    v8f dl, se;
    v8i good;
    PFX_FINISH(v8f, v8i, V8_EXP, hl[Cp], hl[u_], cp, y, tg, C, x->pb.cfg->has_norm, classify, lg,
               dl, se, good);
    // padding lanes add 0 and multiply by 1
    acc_add(acc, (v8f)(valid & (v8i)dl), V8_SEL(valid, se, (v8f){0} + 1.0f), valid & good, classify,
            renorm);
}

/* phase 2 of two orders (a, b) on 16 lanes: prefix_finish8's numbers for each;
 * accb NULL: a alone */
LS_INLINE void prefix_finish16(const lsx *x, const v8f *hla, const v8f *hlb, const float *cp,
                               int gb, int renorm, v8i valid, v16f *lg, pfx_acc *acca,
                               pfx_acc *accb) {
    const int C = x->pb.C, Cp = x->pl.Cp, classify = x->pb.kind == LS_CLASSIFY;
    const v8i y8 = classify ? *(const v8i *)(x->pb.lab8 + (size_t)gb * LS_L) : (v8i){0};
    const v16i y = __builtin_shufflevector(y8, y8, 0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7);
    v16f tg[classify ? 1 : C];
    if (!classify) {
        const v8f *t8 = (const v8f *)(x->pb.tg8 + (size_t)gb * C * LS_L);
        for (int u = 0; u < C; u++) tg[u] = V16_DUP(t8[u]);
    }
    const v16f var = __builtin_shufflevector(hla[Cp], hlb[Cp], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                             12, 13, 14, 15);
    v16f dl, se;
    v16i good;
    PFX_FINISH(v16f, v16i, V16_EXP_NEG, var,
               __builtin_shufflevector(hla[u_], hlb[u_], 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                                       14, 15),
               cp, y, tg, C, x->pb.cfg->has_norm, classify, lg, dl, se, good);
    const v8f one = (v8f){0} + 1.0f;
    acc_add(acca, (v8f)(valid & (v8i)V16_LO(dl)), V8_SEL(valid, V16_LO(se), one),
            valid & V16_LO(good), classify, renorm);
    if (accb)
        acc_add(accb, (v8f)(valid & (v8i)V16_HI(dl)), V8_SEL(valid, V16_HI(se), one),
                valid & V16_HI(good), classify, renorm);
}

/* each order's sums (m) over its lanes into lsum and ok, one log for the
 * product of all; the sums restart. Called at the end of every panel of
 * samples (LS_PANEL), so an order's value does not depend on how the
 * samples are chunked (chunks are whole panels). */
static void fold_acc(const lsx *x, pfx_acc *acc, int m, double *lsum, long *ok) {
    for (int j = 0; j < m; j++) {
        double s = 0.0, p = 1.0;
        int64_t e = 0;
        long good = 0;
        for (int l = 0; l < LS_L; l++) {
            s += acc[j].dl[l];
            p *= acc[j].pr[l];
            e += acc[j].ex[l];
            good += acc[j].good[l];
        }
        if (x->pb.kind == LS_CLASSIFY) s += log(p) + (double)e * 0.69314718055994530942;
        lsum[j] += s;
        ok[j] += good;
    }
    memset(acc, 0, (size_t)m * sizeof *acc);
    for (int j = 0; j < m; j++)
        for (int l = 0; l < LS_L; l++) acc[j].pr[l] = 1.0;
}

/* ls_eval_orders_t's work by the prefix path (same arguments; m <= LS_BLOCK) */
LS_INLINE void prefix_body(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                           const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok,
                           const int w16) {
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int Cp = x->pl.Cp, W = PFX_W(d, Cp), HS = PFX_HS(Cp);
    const int top = n >= 2 ? n - 2 : 0;      // levels 0..top kept; the last slots go into z
    const float *E = ls_E_at(x, tc), *bs = ls_base_at(x, tc, v);
    const float *cp = ls_head_at(x, tc) + (size_t)Cp * d * LS_L; // (Cp)
    const float *Y0 = ls_Y_at(x, tc, 0), *HY0 = ls_HY_at(x, tc, 0);
    const float *HB = ls_HY_at(x, tc, x->pb.npairs + v);
    const size_t ystride = x->pl.lane_d, hstride = x->pl.Nc * (size_t)Cp;
    // the workspace (64-byte aligned): levels (top + 1, W), level k summing
    // the slots < k; a batch of orders' phase 1 (PFX_BATCH, HS); the logits
    // (Cp, 16); the orders' sums (m); the orders compacted (m, 1 + 2n): the
    // levels each shares with the one before, its pairs and B's rows (read
    // at every block: rows of LS_MAX_N would spread them over MBs)
    v8f *lev = (v8f *)w->lev, *hls = lev + (size_t)(top + 1) * W;
    v16f *lg = (v16f *)(hls + PFX_BATCH * HS);
    pfx_acc *acc = (pfx_acc *)(lg + Cp);
    int *ords = (int *)(acc + LS_BLOCK);
    const int os = 1 + 2 * n;
    for (int j = 0; j < m; j++) {
        int *o = ords + (size_t)j * os, k = 0;
        if (j > 0)
            while (k < top && pair[j][k] == pair[j - 1][k] && col[j][k] == col[j - 1][k]) k++;
        o[0] = k;
        for (int i = 0; i < n; i++) o[1 + i] = pair[j][i], o[1 + n + i] = col[j][i];
    }
    memset(acc, 0, (size_t)m * sizeof *acc);
    for (int j = 0; j < m; j++)
        for (int l = 0; l < LS_L; l++) acc[j].pr[l] = 1.0;
    for (int q = 0; q < W; q++) lev[q] = (v8f){0};
    const int panel = LS_PANEL / LS_L; // blocks per panel
    // the pairs the orders use: their next block's slices are fetched (to L2)
    // while this block runs, since one t's slices of all pairs outgrow L2
    int used[LS_PREFIX_MAX_N * (LS_PREFIX_MAX_N + 1)], nused = 0;
    unsigned char seen[LS_PREFIX_MAX_N * (LS_PREFIX_MAX_N + 1)] = {0};
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++)
            if (!seen[pair[j][i]]) seen[pair[j][i]] = 1, used[nused++] = pair[j][i];
    for (int b = 0; b < nb; b++) {
        const int gb = b0 + b, fold = gb % panel == panel - 1 || gb == x->pl.nb - 1;
        if (b + 1 < nb) {
            const size_t yn = (size_t)(b + 1) * d * LS_L, hn = (size_t)(b + 1) * Cp * LS_L;
            for (int u = 0; u < nused; u++) {
                const char *py = (const char *)(Y0 + used[u] * ystride + yn);
                const char *ph = (const char *)(HY0 + used[u] * hstride + hn);
                for (size_t o = 0; o < (size_t)d * LS_L * sizeof(float); o += 64)
                    __builtin_prefetch(py + o, 0, 2);
                for (size_t o = 0; o < (size_t)Cp * LS_L * sizeof(float); o += 64)
                    __builtin_prefetch(ph + o, 0, 2);
            }
        }
        const v8i valid = (v8i){0, 1, 2, 3, 4, 5, 6, 7} < N - gb * LS_L; // lanes holding samples
        const v8f *Eb = (const v8f *)(E + (size_t)b * nn * LS_L);
        const v8f *bb = (const v8f *)(bs + (size_t)b * d * LS_L);
        const v8f *hb = (const v8f *)(HB + (size_t)b * Cp * LS_L);
        const size_t yo = (size_t)b * d * LS_L, ho = (size_t)b * Cp * LS_L;
        for (int j = 0; j < m; j++) {
            // levels shared with the previous order stay (at b's first order none)
            const int *o = ords + (size_t)j * os, *op = o + 1, *oc = o + 1 + n;
            for (int k = j ? o[0] : 0; k < top; k++) { // level k+1 = level k + e_k (Y_k, H'Y_k, 1)
                const v8f ek = Eb[k * n + oc[k]];
                const v8f *y = (const v8f *)(Y0 + op[k] * ystride + yo);
                const v8f *hy = (const v8f *)(HY0 + op[k] * hstride + ho);
                const v8f *src = lev + (size_t)k * W;
                v8f *dst = lev + (size_t)(k + 1) * W;
                int q = 0, c = 0;
                if (w16) { // two q (two classes) per vector
                    const v16f ew = V16_DUP(ek);
                    for (; q + 2 <= d; q += 2)
                        *(v16f *)(dst + q) = *(const v16f *)(src + q) + ew * *(const v16f *)(y + q);
                    for (; c + 2 <= Cp; c += 2)
                        *(v16f *)(dst + d + c) =
                            *(const v16f *)(src + d + c) + ew * *(const v16f *)(hy + c);
                }
                for (; q < d; q++) dst[q] = src[q] + ek * y[q];
                for (; c < Cp; c++) dst[d + c] = src[d + c] + ek * hy[c];
                dst[d + Cp] = src[d + Cp] + ek;
            }
            const int i0 = top, i1 = n - 1, two = i1 > i0; // i0 == i1 only when n == 1
            const v8f e0 = Eb[i0 * n + oc[i0]], e1 = two ? Eb[i1 * n + oc[i1]] : (v8f){0};
            v8f *hl = hls + (size_t)(j % PFX_BATCH) * HS;
            prefix_leaf(x, lev + (size_t)top * W, bb, hb, e0, e1,
                        (const v8f *)(Y0 + op[i0] * ystride + yo),
                        (const v8f *)(Y0 + op[i1] * ystride + yo),
                        (const v8f *)(HY0 + op[i0] * hstride + ho),
                        (const v8f *)(HY0 + op[i1] * hstride + ho), two, hl, w16);
            if (j % PFX_BATCH != PFX_BATCH - 1 && j != m - 1) continue;
            // phase 2 of the batch: on 16 lanes two orders at once (an odd last one alone)
            const int j0 = j - j % PFX_BATCH;
            for (int u = j0; u <= j; u += 1 + w16) {
                const v8f *ha = hls + (size_t)(u - j0) * HS;
                if (!w16)
                    prefix_finish8(x, ha, cp, gb, fold, valid, (v8f *)lg, &acc[u]);
                else if (u < j)
                    prefix_finish16(x, ha, ha + HS, cp, gb, fold, valid, lg, &acc[u],
                                    &acc[u + 1]);
                else
                    prefix_finish16(x, ha, ha, cp, gb, fold, valid, lg, &acc[u], NULL);
            }
        }
        if (fold) fold_acc(x, acc, m, lsum, ok);
    }
}

/* the prefix path on 16-float vectors (AVX-512), and on 8-float ones (AVX2+FMA,
 * or plain): the same numbers */
__attribute__((target("arch=x86-64-v4"), optimize("O3", "no-math-errno", "no-trapping-math")))
static void eval_prefix16(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                          const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    prefix_body(x, w, m, pair, col, v, tc, lsum, ok, 1);
}
LS_HOT static void eval_prefix8(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                                const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    prefix_body(x, w, m, pair, col, v, tc, lsum, ok, 0);
}

int ls_prefix_wide_cpu(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq");
}

static void eval_prefix(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                        const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    // the workspace holds LS_BLOCK orders' sums: more come in turns (an
    // order's value does not depend on which orders share its call)
    for (int j0 = 0; j0 < m; j0 += LS_BLOCK) {
        int mj = m - j0 < LS_BLOCK ? m - j0 : LS_BLOCK;
        if (x->pl.prefix_wide)
            eval_prefix16(x, w, mj, pair + j0, col + j0, v, tc, lsum + j0, ok + j0);
        else
            eval_prefix8(x, w, mj, pair + j0, col + j0, v, tc, lsum + j0, ok + j0);
    }
}

/* Loss sums of m orders at the chunk's t index tc, over the held samples,
 * added to lsum[j] and ok[j] (the caller zeroes them, or carries the sums of
 * the previous sample chunks).
 * pair[j][i]: pair index of order j's slot i; col[j][i]: B's gate row in it;
 * v: shared variant. lsum[j]: summed per-sample loss (classification: CE;
 * regression: squared error over C; layer: squared norm over d); ok[j]:
 * correct argmaxes (ties to the smaller index, as moe_eval). */
LS_HOT void ls_eval_orders_t(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                                 const int (*col)[LS_MAX_N], int v, int tc, double *lsum,
                                 long *ok) {
    if (x->ck.pfx_ok && x->ck.pfx_ok[tc]) {
        eval_prefix(x, w, m, pair, col, v, tc, lsum, ok);
        return;
    }
    const moe_config *c = x->pb.cfg;
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int topk = c->router == ROUTER_TOPK && c->k < n, kk = c->k, general = x->pb.general;
    const float *corr = x->ck.corr ? ls_corr_at(x, tc) : NULL; // (nn) selection biases at t
    const int layer = x->pb.kind == LS_LAYER;
    const float *S = ls_S_at(x, tc);          // (nb, nn, L)
    const float *bs = ls_base_at(x, tc, v);   // (nb, d, L)
    const float *H8 = layer ? NULL : ls_head_at(x, tc); // (C, d, L)
    const int Cp = x->pl.Cp;
    const float *cp = layer ? NULL : H8 + (size_t)Cp * d * LS_L;           // (Cp)
    v8f *z = (v8f *)w->z;   // (d) lanes: the block output, then centred
    v8f *lg = (v8f *)w->lg; // (C) lanes: logits
    const size_t ystride = x->pl.lane_d;
    const float *Y0 = ls_Y_at(x, tc, 0);
    // layer mode, each order's own chord end: z -= t D_B'(x), its routed part here
    const int own = layer && x->pb.own_chord;
    const float tt = own ? (float)ls_t(x->ck.tidx[tc], x->pb.T) : 0.0f;
    for (int b = 0; b < nb; b++) { // b: block in the chunk, b0 + b in the set
        const int gb = b0 + b;
        const int nv = N - gb * LS_L < LS_L ? N - gb * LS_L : LS_L; // valid lanes
        const float *Sb = S + (size_t)b * nn * LS_L;
        const v8f *bb = (const v8f *)(bs + (size_t)b * d * LS_L);
        for (int j = 0; j < m; j++) {
            // routing (moe_route's rules) per lane
            v8f s[LS_MAX_N], g[LS_MAX_N];
            s[0] = *(const v8f *)(Sb + (size_t)col[j][0] * LS_L); // n >= 1
            for (int i = 1; i < n; i++) s[i] = *(const v8f *)(Sb + (size_t)(i * n + col[j][i]) * LS_L);
            if (general) {
                // the slots' selection biases at t for this order: slot i holds B's row col[j][i]
                float e[LS_MAX_N];
                if (corr)
                    for (int i = 0; i < n; i++) e[i] = corr[i * n + col[j][i]];
                route_general(c, n, corr ? e : NULL, s, g);
            } else if (topk) {
                // softmax over the top-k logits (moe_route's renormalised top-k)
                v8i sel[LS_MAX_N];
                v8f mx, sum = (v8f){0};
                topk_lanes(s, n, kk, sel, &mx);
                for (int i = 0; i < n; i++) {
                    v8f e;
                    V8_EXP(e, s[i] - mx);
                    g[i] = (v8f)(sel[i] & (v8i)e);
                    sum += g[i];
                }
                v8f inv = 1.0f / sum;
                for (int i = 0; i < n; i++) g[i] *= inv;
            } else {
                v8f mx = s[0], sum = (v8f){0};
                for (int i = 1; i < n; i++) mx = V8_SEL(s[i] > mx, s[i], mx);
                for (int i = 0; i < n; i++) {
                    V8_EXP(g[i], s[i] - mx);
                    sum += g[i];
                }
                v8f inv = 1.0f / sum;
                for (int i = 0; i < n; i++) g[i] *= inv;
            }
            // the mix: z = base + sum_i g_i Y_i, and its lane sums, over the
            // slots with a weight in some lane: a top-k router leaves the others
            // at exactly 0 in every lane (64 experts, top-8: a third of the
            // slots; 256: three quarters), and a zero term adds nothing, so
            // skipping them changes no bit (and, as the evaluator, never reads
            // an unselected expert's output)
            const v8f *yb[LS_MAX_N];
            v8f ga[LS_MAX_N];
            int na = 0;
            for (int i = 0; i < n; i++) {
                if (topk || general) {
                    const v8i gz = (v8i)g[i];
                    int any = 0;
                    for (int l = 0; l < LS_L; l++) any |= gz[l];
                    if (!any) continue;
                }
                ga[na] = g[i];
                yb[na++] = (const v8f *)(Y0 + (size_t)pair[j][i] * ystride + (size_t)b * d * LS_L);
            }
            // eight q at a time: eight independent FMA chains (one per q),
            // each summing base + g_0 Y_0 + g_1 Y_1 + ... in slot order
            v8f zs = (v8f){0}, z2 = (v8f){0};
            int q = 0;
            for (; q + 8 <= d; q += 8) {
                v8f a0 = bb[q], a1 = bb[q + 1], a2 = bb[q + 2], a3 = bb[q + 3];
                v8f a4 = bb[q + 4], a5 = bb[q + 5], a6 = bb[q + 6], a7 = bb[q + 7];
                for (int i = 0; i < na; i++) {
                    const v8f gi = ga[i], *y = yb[i] + q;
                    a0 += gi * y[0], a1 += gi * y[1], a2 += gi * y[2], a3 += gi * y[3];
                    a4 += gi * y[4], a5 += gi * y[5], a6 += gi * y[6], a7 += gi * y[7];
                }
                z[q] = a0, z[q + 1] = a1, z[q + 2] = a2, z[q + 3] = a3;
                z[q + 4] = a4, z[q + 5] = a5, z[q + 6] = a6, z[q + 7] = a7;
                zs += ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
                if (layer)
                    z2 += ((a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3)) +
                          ((a4 * a4 + a5 * a5) + (a6 * a6 + a7 * a7));
            }
            for (; q < d; q++) {
                v8f a = bb[q];
                for (int i = 0; i < na; i++) a += ga[i] * yb[i][q];
                z[q] = a;
                zs += a;
                z2 += a * a;
            }
            double ls = 0.0;
            if (own) own_chord_end(x, c, col[j], b, tt, z, &z2);
            if (layer) {
                for (int l = 0; l < nv; l++) ls += z2[l];
                lsum[j] += ls;
                continue;
            }
            v8f sc = (v8f){0} + 1.0f;
            if (c->has_norm) layernorm_lanes(z, d, &zs, &sc);
            // logits (Cp, L) = sc * (H8 z) + c': four classes (C is padded
            // to Cp, a multiple of 4) times two q parities = eight chains
            for (int k = 0; k < Cp; k += 4) {
                const v8f *h0 = (const v8f *)(H8 + (size_t)k * d * LS_L);
                const v8f *h1 = h0 + d, *h2 = h1 + d, *h3 = h2 + d;
                v8f a0 = (v8f){0}, a1 = a0, a2 = a0, a3 = a0, e0 = a0, e1 = a0, e2 = a0, e3 = a0;
                for (q = 0; q + 2 <= d; q += 2) {
                    v8f zq = z[q], zr = z[q + 1];
                    a0 += h0[q] * zq, a1 += h1[q] * zq, a2 += h2[q] * zq, a3 += h3[q] * zq;
                    e0 += h0[q + 1] * zr, e1 += h1[q + 1] * zr, e2 += h2[q + 1] * zr,
                        e3 += h3[q + 1] * zr;
                }
                if (q < d) {
                    v8f zq = z[q];
                    a0 += h0[q] * zq, a1 += h1[q] * zq, a2 += h2[q] * zq, a3 += h3[q] * zq;
                }
                lg[k] = (a0 + e0) * sc + cp[k];
                lg[k + 1] = (a1 + e1) * sc + cp[k + 1];
                lg[k + 2] = (a2 + e2) * sc + cp[k + 2];
                lg[k + 3] = (a3 + e3) * sc + cp[k + 3];
            }
            loss_lanes(x, lg, gb, nv, &lsum[j], &ok[j]);
        }
    }
}

/* one order (the named curves): the same kernel with m = 1, adding the held
 * samples' sums to *ls and *ok */
void ls_eval_order_t(const lsx *x, ls_ws *w, const int *pair, const int *col, int v, int tc,
                         double *ls, long *ok) {
    int p1[1][LS_MAX_N], c1[1][LS_MAX_N];
    memcpy(p1[0], pair, sizeof p1[0]);
    memcpy(c1[0], col, sizeof c1[0]);
    ls_eval_orders_t(x, w, 1, (const int(*)[LS_MAX_N])p1, (const int(*)[LS_MAX_N])c1, v, tc, ls, ok);
}
