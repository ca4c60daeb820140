/* landscape_kernel.c - the fused per-order kernel of the landscape: for a
 * block of orders at one point t, the routing, the mix of the pair outputs,
 * LayerNorm, the head and the loss of 8 samples per vector lane.
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
#include "moe_kernels.h"

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
 * Built for AVX2+FMA with a plain fallback (picked at load time). No
 * associative-math: nothing here needs it, and exp's rounding trick must
 * not be reassociated. */
#define LS_HOT                                                                           \
    __attribute__((target_clones("arch=x86-64-v3", "default"),                           \
                   optimize("O3", "no-math-errno", "no-trapping-math")))

typedef float v8f __attribute__((vector_size(LS_L * 4), aligned(4), may_alias));
typedef int32_t v8i __attribute__((vector_size(LS_L * 4), aligned(4), may_alias));

#define V8_SEL(m, a, b) ((v8f)(((m) & (v8i)(a)) | (~(m) & (v8i)(b))))

/* e^x per lane (Cephes' expf polynomial, ~1 ulp), branch-free */
#define V8_EXP(out, xin)                                                                 \
    do {                                                                                 \
        v8f x_ = (xin);                                                                  \
        const v8f lo_ = (v8f){0} - 87.0f, hi_ = (v8f){0} + 88.0f;                        \
        x_ = V8_SEL(x_ < lo_, lo_, x_);                                                  \
        x_ = V8_SEL(x_ > hi_, hi_, x_);                                                  \
        v8f k_ = x_ * 1.44269504088896341f;                                              \
        k_ = (k_ + 12582912.0f) - 12582912.0f; /* round to nearest */                    \
        v8f r_ = x_ - k_ * 0.693359375f + k_ * 2.12194440e-4f;                           \
        v8f p_ = (v8f){0} + 1.9875691500e-4f;                                            \
        p_ = p_ * r_ + 1.3981999507e-3f;                                                 \
        p_ = p_ * r_ + 8.3334519073e-3f;                                                 \
        p_ = p_ * r_ + 4.1665795894e-2f;                                                 \
        p_ = p_ * r_ + 1.6666665459e-1f;                                                 \
        p_ = p_ * r_ + 5.0000001201e-1f;                                                 \
        p_ = p_ * r_ * r_ + r_ + 1.0f;                                                   \
        v8i e_ = (__builtin_convertvector(k_, v8i) + 127) << 23;                         \
        (out) = p_ * (v8f)e_;                                                            \
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
    const moe_config *c = x->pb.cfg;
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, C = x->pb.C, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int topk = c->router == ROUTER_TOPK && c->k < n, kk = c->k, general = x->pb.general;
    const float *corr = x->ck.corr ? ls_corr_at(x, tc) : NULL; // (nn) selection biases at t
    const int layer = x->pb.kind == LS_LAYER, classify = x->pb.kind == LS_CLASSIFY;
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
            // the mix: z = base + sum_i g_i Y_i, and its lane sums
            const v8f *yb[LS_MAX_N];
            for (int i = 0; i < n; i++)
                yb[i] = (const v8f *)(Y0 + (size_t)pair[j][i] * ystride + (size_t)b * d * LS_L);
            // eight q at a time: eight independent FMA chains (one per q),
            // each summing base + g_0 Y_0 + g_1 Y_1 + ... in slot order
            v8f zs = (v8f){0}, z2 = (v8f){0};
            int q = 0;
            for (; q + 8 <= d; q += 8) {
                v8f a0 = bb[q], a1 = bb[q + 1], a2 = bb[q + 2], a3 = bb[q + 3];
                v8f a4 = bb[q + 4], a5 = bb[q + 5], a6 = bb[q + 6], a7 = bb[q + 7];
                for (int i = 0; i < n; i++) {
                    const v8f gi = g[i], *y = yb[i] + q;
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
                for (int i = 0; i < n; i++) a += g[i] * yb[i][q];
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
            if (c->has_norm) {
                // LayerNorm over d (biased variance, eps 1e-5), two passes as
                // moe_forward; four chains for the variance
                v8f mu = zs / (float)d, v0 = (v8f){0}, v1 = v0, v2 = v0, v3 = v0;
                for (q = 0; q + 4 <= d; q += 4) {
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
                // 1/sqrt(var) per lane: GCC leaves 1.0f/sqrtf on lanes scalar
                // (8 sqrt + 8 div, ~8% of the kernel), so the bit-trick first
                // guess (3.4e-3) and three Newton steps (-> ~1e-7, float's own
                // rounding), all lane-parallel
                v8f hv = 0.5f * var;
                sc = (v8f)(0x5f375a86 - ((v8i)var >> 1));
                sc = sc * (1.5f - hv * sc * sc);
                sc = sc * (1.5f - hv * sc * sc);
                sc = sc * (1.5f - hv * sc * sc);
            }
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
            if (classify) {
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
                // sum of (max - logit_y) + log(se) per sample: one log per
                // block (se is in [1, C], so the product cannot overflow)
                v8f dl = best - ly;
                double prod = 1.0;
                long good = 0;
                for (int l = 0; l < nv; l++) {
                    ls += dl[l];
                    prod *= se[l];
                    good += am[l] == y[l];
                }
                lsum[j] += ls + log(prod);
                ok[j] += good;
            } else {
                const v8f *tg = (const v8f *)(x->pb.tg8 + (size_t)gb * C * LS_L);
                v8f s2 = (v8f){0};
                for (int u = 0; u < C; u++) {
                    v8f e = lg[u] - tg[u];
                    s2 += e * e;
                }
                for (int l = 0; l < nv; l++) ls += s2[l];
                lsum[j] += ls;
            }
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
