/* landscape_kernel.c - the fused per-order kernel of the landscape: for a
 * block of orders at one point t, the routing, the mix of the pair outputs,
 * LayerNorm, the head and the loss of 16 samples per vector lane. Two paths:
 * the per-order path (every router; the reference) and, for a softmax over
 * all experts with a head, the prefix path, which shares partial sums across
 * orders with the same leading slots (see "the prefix path" below). Both are
 * written once, in landscape_lanes.h, and compiled here three times: for
 * AVX-512 (16 floats a register), AVX2+FMA (8) and plain SSE (4); the widest
 * the CPU runs is used (core/simd.h: ls_plan.simd).
 *
 * Why its functions are long: it is the hot loop of the whole tool (every
 * order at every t), and splitting it into calls would put the per-lane
 * values (scores, gate weights, the block output z and the logits, all held
 * in registers or L1) behind function boundaries and memory round trips the
 * compiler cannot remove across the target forms; each stage below is
 * commented instead. The plain reference for every number it makes is the
 * evaluator (moe_forward + moe_head + the loss), which the tests compare it
 * with. */
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/simd.h"
#include "core/vexp.h"
#include "landscape_int.h"
#include "model/moe_kernels.h"

/* The per-order kernel's shape, and why:
 *   - one sample per vector lane (LS_L = 16 samples side by side, the
 *     lane-major layout of the precompute): routing, the mix, LayerNorm, the
 *     head and log-sum-exp are all lane-parallel arithmetic, with no
 *     horizontal reduction and no gather; 16 lanes are one AVX-512 register
 *     (two AVX2 ones, four SSE ones);
 *   - fused: per block of 16 samples, z (d, 16) and the logits (C, 16) live
 *     in L1 and the loss is folded in at once; no (N, d) round trip through
 *     memory and no sgemm call (OpenBLAS's per-call overhead is larger than
 *     a 360x10x32 product);
 *   - the head's LayerNorm scale and shift are folded into the head (H', c'),
 *     so LayerNorm is only centring and one 1/sigma per lane; H' is stored
 *     once per t, (Cp, d), and broadcast to the lanes as it is read;
 *   - several orders per sample block (the caller's order block, usually
 *     neighbours in lexicographic order sharing most slots): a block's Y
 *     slices (pairs x 2 KiB) stay in L1/L2 while every order of the block
 *     uses them, instead of streaming 46 KiB per pair per order from L3;
 *   - the loss sum per order runs over the sample blocks in a fixed order,
 *     so an order's value does not depend on which orders share its call
 *     (threads, chunking and the named curves give identical numbers).
 * The three forms run the same source on a block in pieces of a register's
 * width; every lane gets the same operations in each, in the same order,
 * and every sum over lanes is made once per block in lane order
 * (block_loss, fold_acc), so AVX-512 and AVX2 (FMA both) agree bit for bit;
 * the plain form rounds each product apart. The AVX-512 form has the 16
 * lanes in one register, so per sample it issues half the AVX2 form's
 * instructions (a Xeon of family 6, model 207: FMA peaks of 170 and 91
 * GFLOP/s per core).
 * No associative-math: nothing here needs it, and exp's rounding trick must
 * not be reassociated. */
#define LS_OPT optimize("O3", "no-math-errno", "no-trapping-math")
#define LS_INLINE static inline __attribute__((always_inline))

/* Cephes' exp2f: 2^f = 1 + f P(f) on [-1/2, 1/2], as Horner's coefficients
 * from f^6's (landscape_lanes.h's EXP2_NEG) */
static const float ls_exp2_poly[7] = {1.535336188319500e-4f, 1.339887440266574e-3f, 9.618437357674640e-3f,
                                      5.550332471162809e-2f, 2.402264791363012e-1f, 6.931472028550421e-1f,
                                      1.0f};

/* 0, 1, ..., LS_L - 1: a piece's lane numbers from its first */
static const _Alignas(64) int32_t ls_lane_iota[LS_L] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

/* An order's loss over one sample block (nv valid lanes) from its lanes'
 * terms (landscape_lanes.h's loss_piece), added to *lsum and *ok in lane
 * order, whatever the form: classification: the sum of (max - logit_y) and
 * one log of the product of the softmax sums (each in [1, C], so the product
 * of 16 cannot overflow); regression: the squared errors; layer: |z|^2. */
/* The per-sample losses of a sample block (block gb, nv valid lanes) into ps
 * (indexed by sample) from the loss terms the sums fold: classification:
 * dl + log se (dl in bits when bits: the prefix path's base-2 logits);
 * regression: dl / C; layer: dl / d (curve.c's per-sample values). Only when
 * kept: the sums above do not read them. */
static void unit_loss(const lsx *x, int gb, int l0, int nv, const float *dl, const float *se, int bits,
                      double *ps) {
    double *o = ps + (size_t)gb * LS_L;
    if (x->pb.kind == LS_CLASSIFY) {
        const double u = bits ? 0.69314718055994530942 : 1.0;
        for (int l = l0; l < nv; l++) o[l] = (double)dl[l - l0] * u + log((double)se[l - l0]);
    } else {
        const double r = 1.0 / (x->pb.kind == LS_LAYER ? x->pb.d : x->pb.C);
        for (int l = l0; l < nv; l++) o[l] = (double)dl[l - l0] * r;
    }
}

static void block_loss(const lsx *x, int nv, const float *dl, const float *se, const int32_t *good,
                       double *lsum, long *ok) {
    double ls = 0.0;
    for (int l = 0; l < nv; l++) ls += dl[l];
    if (x->pb.kind == LS_CLASSIFY) {
        double prod = 1.0;
        long g = 0;
        for (int l = 0; l < nv; l++) prod *= se[l], g += good[l];
        ls += log(prod);
        *ok += g;
    }
    *lsum += ls;
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
 * Y and base centred over d once per chunk, z is born centred; and since the
 * weights sum to 1, z S = sum_i e_i Y'_i with Y' = Y + base, each pair's
 * output with the base added once per chunk (the main variant's: another
 * variant's orders add S times the difference). The head is linear: H'z =
 * (sum_i e_i H'Y'_i) / S with H' the folded head, so with H'Y' precomputed per
 * pair the head costs Cp per slot term instead of Cp*d per order. Only
 * LayerNorm's variance needs more: |z S|^2 = |sum_i e_i Y'_i|^2 (the direct
 * form: three FMAs per coordinate of every order, and d-wide levels), or, the
 * Gram form, sum_ij e_i e_j <Y'_i, Y'_j> from the pair outputs' Gram products
 * G (n^2 (n(n-1)/2 + 1) per sample and t, made once per chunk), shared across
 * orders through the levels like U: a few lane operations per order instead
 * of ~4d (dense8, d = 32: the sweep's CPU time from 4.4 to about 3 s; the
 * d-wide sums, their loads from L2 and their stores had been half of it). G
 * costs memory about Y's size (n^2 vs d per pair), and the direct form stays
 * for the orders G does not cover (a named curve of another variant or on
 * pairs without weight matching). And no division: LayerNorm's 1/sigma
 * over S is 1/sqrt(|zS|^2 / d + eps S^2), one Newton-refined square root per
 * order for both. Per sample
 * block, phase 1 (the levels and the last slots' sums) runs for a batch of
 * orders, then phase 2 (LayerNorm's scale, the logits, the loss) for the
 * batch, two orders side by side: their chains (the argmax and the softmax
 * sum over the classes) then overlap in the core instead of waiting on each
 * other (two at a time took dense8's sweep from 1.7-2.1 to 1.15-1.24 CPU s
 * at 8 points; four, no faster).
 * The per-order path is the reference; the two differ by float rounding only
 * (the same sums regrouped, the squares grouped by pairs; see
 * tests/unit/test_landscape_api.c: within 2e-6 relative, measured ~1.4e-7). */

/* ---------------- the selected form ----------------
 * A softmax top-k router (renormalised: the selected weights sum to 1) takes
 * the prefix path's precompute too, at every t where it holds, but not its
 * levels (which slots an order selects depends on all of them): per order
 * and sample, the routing on the logits as the per-order path (the k largest,
 * ties to the smaller slot), the weights w_i = e_i = exp(s_i - mref) on the
 * selected slots (their ratios are the softmax's), and then from the pairs'
 * products the head and the variance: H'zS = sum_i w_i H'Y'_i (C per slot
 * instead of the d-wide mix and the Cp x d head), |zS|^2 = sum_i w_i (w_i D_i
 * + 2 sum_{j > i} w_j G_ij), and phase 2 as the prefix path's. With 16
 * samples a register nearly every slot is some sample's choice, so each order
 * sums over about n slots where the arithmetic needs k; still n C + n^2/2 in
 * place of n d + Cp d. A slot no sample of a piece selects is skipped (as the
 * per-order mix: a zero term adds nothing). Another variant than the main
 * one, or pairs outside G (a named curve's), sum the selected Y' over d for
 * the variance instead (the prefix path's direct form). */

/* the largest n served (the workspace keeps a level per slot) */
#define LS_PREFIX_MAX_N 12
/* mref - (the least an order's largest logit can be) must stay below this, so
 * that every order's S >= e^-30 and S^2 >= e^-60 (LayerNorm's scale comes from
 * |zS|^2 / d + eps S^2) stay normal floats far from underflow; a t where some
 * sample exceeds it takes the per-order path */
#define LS_PREFIX_RANGE 30.0f

/* orders whose phase 1 runs before their phase 2 runs */
#define PFX_BATCH 16
/* orders whose phase 2 runs side by side */
#define PFX_FIN 2
/* a phase 1's stride in lane vectors (LS_L floats): H'U, unnormalised (Cp),
 * and w, whose 1/sqrt scales it into the logits */
#define PFX_HS(Cp) ((Cp) + 1)

/* A level's stride in lane vectors: H'U (Cp), S, Q, then U (d: the direct
 * form) or R (n^2: the Gram form; see "the Gram form" below) */
static int pfx_w(const lsx *x) {
    const int n = x->pb.n, d = x->pb.d, wide = x->pl.gram && n * n > d ? n * n : d;
    return x->pl.Cp + 2 + wide;
}

/* the offset in G's rows (after D) of the row of pair (slot s, B's row e):
 * the rows of the slots before s, n (n-1-s0) entries each for n rows, then e
 * rows of slot s */
static inline int gram_row(int n, int s, int e) {
    return n * n * (s * (n - 1) - s * (s - 1) / 2) + e * n * (n - 1 - s);
}

size_t ls_prefix_gsize(const lsx *x) {
    const size_t n = (size_t)x->pb.n, g = n * n * (n * (n - 1) / 2 + 1);
    // G costs g d multiply-adds per sample and t (on one thread); each order
    // saves ~4d there (its d-wide sums): worth it from g / 4 orders (dense8:
    // 464 of 40320; 12 experts: 2412)
    return x->pb.cfg->has_norm && 4 * (size_t)x->rs.norders >= g ? g : 0;
}

/* An order's running loss over the sample blocks of one panel, per lane:
 * the summed (max - logit_y) or squared errors, the product of the softmax
 * sums (one log per panel instead of one per block; its binary exponent kept
 * apart so it cannot overflow) and the correct argmaxes. */
typedef struct {
    double dl[LS_L], pr[LS_L];
    int64_t ex[LS_L];
    int32_t good[LS_L];
} pfx_acc;

/* The prefix path's workspace (ls_ws.lev, 64-byte aligned), carved: levels
 * (top + 1, W) lane vectors, level k summing the slots < k; a batch of
 * orders' phase 1 (PFX_BATCH, HS); PFX_FIN orders' logits (PFX_FIN, Cp); the
 * orders' sums (m); the orders compacted (m, 1 + 2n): the levels each shares
 * with the one before, its pairs and B's rows (read at every block: rows of
 * LS_MAX_N would spread them over MBs). used: the pairs the orders use.
 * Levels hold sum_{i<k} e_i Y'_i (d), its H' (Cp) and S. */
typedef struct {
    float *lev, *hls, *lg;
    pfx_acc *acc;
    int *ords;
    float *cl; // (Cp) the folded head's shift c' in base 2 (classification: times log2 e)
    int used[LS_PREFIX_MAX_N * (LS_PREFIX_MAX_N + 1)], nused;
    int high; // some order uses a pair past the nn of the landscape (a named curve's)
} pfx_ws;

size_t ls_prefix_ws_bytes(const lsx *x) { // as prefix_carve carves it
    int n = x->pb.n, Cp = x->pl.Cp;
    size_t vecs = (size_t)(n > 1 ? n - 1 : 1) * pfx_w(x) + PFX_BATCH * PFX_HS(Cp) + PFX_FIN * Cp;
    return vecs * LS_L * sizeof(float) + (size_t)LS_BLOCK * sizeof(pfx_acc) +
           (size_t)LS_BLOCK * (1 + 2 * n) * sizeof(int) + (size_t)Cp * sizeof(float);
}

/* the sums of an order restart */
static inline void acc_clear(pfx_acc *a) {
    memset(a, 0, sizeof *a);
    for (int l = 0; l < LS_L; l++) a->pr[l] = 1.0;
}

void ls_prefix_ws_clear(const lsx *x, ls_ws *w) {
    const int n = x->pb.n, Cp = x->pl.Cp, top = n >= 2 ? n - 2 : 0;
    const size_t vecs = (size_t)(top + 1) * pfx_w(x) + PFX_BATCH * PFX_HS(Cp) + PFX_FIN * Cp;
    pfx_acc *acc = (pfx_acc *)(w->lev + vecs * LS_L);
    for (int j = 0; j < LS_BLOCK; j++) acc_clear(&acc[j]);
}

/* the router is a top-k of fewer than n (the selected form, below, where the
 * prefix path's precompute holds) */
static int pfx_topk(const lsx *x) { return x->pb.cfg->router == ROUTER_TOPK && x->pb.cfg->k < x->pb.n; }

int ls_prefix_applies(const lsx *x) {
    int on = x->pb.tune.prefix; // 0: where it applies and pays (below); -1 never; 1 wherever it applies
    // a softmax over all n, or over the top k (renormalised; !general), with a head
    if (on < 0 || x->pb.kind == LS_LAYER || x->pb.general || x->pb.n > LS_PREFIX_MAX_N) return 0;
    // its precompute (H'Y: Cp*d per pair, sample and t, on one thread) pays
    // back what an order saves (~(n + Cp)*d) once there are a few n^2 orders:
    // not at n = 4 (24 orders, 16 pairs)
    return on > 0 || x->rs.norders >= 4L * x->pb.nn;
}

/* the workspace of m orders carved, their compact rows filled, level 0
 * zeroed; the sums are clear (ls_prefix_ws_clear, then fold_acc at the end of
 * every call: its last block ends a panel) */
static void prefix_carve(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                         const int (*col)[LS_MAX_N], pfx_ws *pw) {
    const int n = x->pb.n, Cp = x->pl.Cp, W = pfx_w(x), HS = PFX_HS(Cp);
    const int top = n >= 2 ? n - 2 : 0;
    pw->lev = w->lev;
    pw->hls = pw->lev + (size_t)(top + 1) * W * LS_L;
    pw->lg = pw->hls + (size_t)PFX_BATCH * HS * LS_L;
    pw->acc = (pfx_acc *)(pw->lg + (size_t)PFX_FIN * Cp * LS_L);
    pw->ords = (int *)(pw->acc + LS_BLOCK);
    const int os = 1 + 2 * n;
    pw->cl = (float *)(pw->ords + (size_t)LS_BLOCK * os);
    for (int j = 0; j < m; j++) {
        int *o = pw->ords + (size_t)j * os, k = 0;
        if (j > 0)
            while (k < top && pair[j][k] == pair[j - 1][k] && col[j][k] == col[j - 1][k]) k++;
        o[0] = k;
        for (int i = 0; i < n; i++) o[1 + i] = pair[j][i], o[1 + n + i] = col[j][i];
    }
    memset(pw->lev, 0, (size_t)W * LS_L * sizeof(float));
    unsigned char seen[LS_PREFIX_MAX_N * (LS_PREFIX_MAX_N + 1)] = {0};
    pw->nused = 0, pw->high = 0;
    for (int j = 0; j < m; j++)
        for (int i = 0; i < n; i++) {
            if (!seen[pair[j][i]]) seen[pair[j][i]] = 1, pw->used[pw->nused++] = pair[j][i];
            pw->high |= pair[j][i] >= x->pb.nn;
        }
}

/* sample block b's slices the orders read fetched (to L2) while the block
 * before runs (one t's slices of all pairs outgrow L2): of the pairs they
 * use, H'Y' and, in the direct form, Y' (Y0; NULL: none); in the Gram form
 * the block's G */
static inline void prefix_fetch(const lsx *x, const pfx_ws *pw, const float *Y0, const float *HY0,
                                const float *G0, int b) {
    const int d = x->pb.d, Cp = x->pl.Cp;
    const size_t ystride = x->pl.lane_d, hstride = x->pl.Nc * (size_t)Cp;
    const size_t yn = (size_t)b * d * LS_L, hn = (size_t)b * Cp * LS_L;
    for (int u = 0; u < pw->nused; u++) {
        const char *py = Y0 ? (const char *)(Y0 + pw->used[u] * ystride + yn) : NULL;
        const char *ph = (const char *)(HY0 + pw->used[u] * hstride + hn);
        if (!G0 && Y0)
            for (size_t o = 0; o < (size_t)d * LS_L * sizeof(float); o += 64) __builtin_prefetch(py + o, 0, 2);
        for (size_t o = 0; o < (size_t)Cp * LS_L * sizeof(float); o += 64) __builtin_prefetch(ph + o, 0, 2);
    }
    if (G0) {
        const size_t gs = x->pl.gsize * LS_L * sizeof(float);
        const char *pg = (const char *)(G0 + (size_t)b * x->pl.gsize * LS_L);
        for (size_t o = 0; o < gs; o += 64) __builtin_prefetch(pg + o, 0, 2);
    }
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
        // classification: the loss terms came in bits (base-2 logits, see finish)
        if (x->pb.kind == LS_CLASSIFY) s = (s + (double)e) * 0.69314718055994530942 + log(p);
        lsum[j] += s;
        ok[j] += good;
        acc_clear(&acc[j]);
    }
}

/* ---------------- the three forms ---------------- */

#define LK_VL 16
#define LK_SUF avx512
#define LK_SIMD MS_SIMD_AVX512
#define LK_TARGET __attribute__((target("arch=x86-64-v4")))
#include "landscape_lanes.h"
#undef LK_VL
#undef LK_SUF
#undef LK_SIMD
#undef LK_TARGET

#define LK_VL 8
#define LK_SUF avx2
#define LK_SIMD MS_SIMD_AVX2
#define LK_TARGET __attribute__((target("arch=x86-64-v3")))
#include "landscape_lanes.h"
#undef LK_VL
#undef LK_SUF
#undef LK_SIMD
#undef LK_TARGET

#define LK_VL 4
#define LK_SUF plain
#define LK_SIMD MS_SIMD_PLAIN
#define LK_TARGET
#include "landscape_lanes.h"
#undef LK_VL
#undef LK_SUF
#undef LK_SIMD
#undef LK_TARGET

const struct ls_form *ls_form_for(ms_simd s) {
    static const struct ls_form *const forms[] = {[MS_SIMD_PLAIN] = &form_plain, [MS_SIMD_AVX2] = &form_avx2,
                                                  [MS_SIMD_AVX512] = &form_avx512};
    return forms[ms_simd_pick(s)];
}

void ls_prefix_prepare(lsx *x) { x->pl.form->prepare(x); }

/* Loss sums of m orders at the chunk's t index tc, over the held samples,
 * added to lsum[j] and ok[j] (the caller zeroes them, or carries the sums of
 * the previous sample chunks).
 * pair[j][i]: pair index of order j's slot i; col[j][i]: B's gate row in it;
 * v: shared variant. lsum[j]: summed per-sample loss (classification: CE;
 * regression: squared error over C; layer: squared norm over d); ok[j]:
 * correct argmaxes (ties to the smaller index, as moe_eval). */
void ls_eval_orders_t(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                      const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    const struct ls_form *f = x->pl.form;
    if (!(x->ck.pfx_ok && x->ck.pfx_ok[tc])) {
        f->orders(x, w, m, pair, col, v, tc, lsum, ok);
        return;
    }
    // the prefix path's workspace holds LS_BLOCK orders' sums: more come in
    // turns (an order's value does not depend on which orders share its call)
    ls_orders_fn *run = pfx_topk(x) ? f->selected : f->prefix;
    double **ps = w->ps;
    for (int j0 = 0; j0 < m; j0 += LS_BLOCK) {
        int mj = m - j0 < LS_BLOCK ? m - j0 : LS_BLOCK;
        w->ps = ps ? ps + j0 : NULL;
        run(x, w, mj, pair + j0, col + j0, v, tc, lsum + j0, ok + j0);
    }
    w->ps = ps;
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
