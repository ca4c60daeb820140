/* landscape_lanes.h - the landscape kernel's body for one vector width. Not a
 * header of its own: landscape_kernel.c includes it once per form (see the
 * kernel's comments for the shapes and the reasons), with
 *   LK_VL    floats per register: 16 (AVX-512), 8 (AVX2), 4 (SSE)
 *   LK_SUF   the form's name suffix (avx512, avx2, plain)
 *   LK_TARGET  its target attribute (empty for the plain form)
 * and it defines that form's static functions LK(name) = name_SUF, every one
 * compiled for that target (its intrinsics need it). A sample
 * block of LS_L lanes runs as LS_L / LK_VL pieces of LK_VL lanes, so every
 * vector is a register of the form (GCC splits wider generic vectors, and
 * lowers their integer compares lane by lane); every lane gets the same
 * operations in every form, and every sum over lanes is made once per block,
 * outside (landscape_kernel.c), in lane order. */

#define LK_JOIN2(a, b) a##_##b
#define LK_JOIN(a, b) LK_JOIN2(a, b)
#define LK(name) LK_JOIN(name, LK_SUF)

typedef float LK(vf) __attribute__((vector_size(LK_VL * 4), aligned(4), may_alias));
typedef int32_t LK(vi) __attribute__((vector_size(LK_VL * 4), aligned(4), may_alias));
typedef double LK(vd) __attribute__((vector_size(LK_VL * 8), aligned(8), may_alias));
typedef int64_t LK(vl) __attribute__((vector_size(LK_VL * 8), aligned(8), may_alias));
#define VF LK(vf)
#define VI LK(vi)
#define VD LK(vd)
#define VL LK(vl)
#define SEL(m, a, b) ((VF)(((m) & (VI)(a)) | (~(m) & (VI)(b))))
/* lane vector i of a lane-major array p (already at the piece's first lane) */
#define AT(p, i) (*(const VF *)((p) + (size_t)(i) * LS_L))
#define ATW(p, i) (*(VF *)((p) + (size_t)(i) * LS_L))
#define LKI static inline __attribute__((always_inline)) LK_TARGET
#define LK_FORM LK_TARGET __attribute__((LS_OPT))
/* SEL(x < lo, lo, x) and SEL(x > hi, hi, x) in one instruction: MAXPS (a, b)
 * is a > b ? a : b and MINPS a < b ? a : b, b when either is NaN, so x's NaN
 * stays, as with the selects */
#if LK_VL == 16
#define CLAMP_LO(lo, x) ((VF)_mm512_max_ps((__m512)(lo), (__m512)(x)))
#define CLAMP_HI(hi, x) ((VF)_mm512_min_ps((__m512)(hi), (__m512)(x)))
#elif LK_VL == 8
#define CLAMP_LO(lo, x) ((VF)_mm256_max_ps((__m256)(lo), (__m256)(x)))
#define CLAMP_HI(hi, x) ((VF)_mm256_min_ps((__m256)(hi), (__m256)(x)))
#else
#define CLAMP_LO(lo, x) ((VF)_mm_max_ps((__m128)(lo), (__m128)(x)))
#define CLAMP_HI(hi, x) ((VF)_mm_min_ps((__m128)(hi), (__m128)(x)))
#endif
/* some bit of m is set (in one test, not lane by lane) */
LKI int LK(any)(VI m) {
#if LK_VL == 16
    return _mm512_test_epi32_mask((__m512i)m, (__m512i)m) != 0;
#elif LK_VL == 8
    return !_mm256_testz_si256((__m256i)m, (__m256i)m);
#else // SSE2: a lane not 0
    return _mm_movemask_epi8(_mm_cmpeq_epi32((__m128i)m, _mm_setzero_si128())) != 0xFFFF;
#endif
}

#if LK_VL == 16
#define EXPC(out, x) VEXP_STEPS(VF, out, x, VEXP_ROUND16, VEXP_SCALE16)
#else
#define EXP_SCALE(p, k) VEXP_SCALE_BITS(VI, p, k)
#define EXPC(out, x) VEXP_STEPS(VF, out, x, VEXP_ROUND_ADD, EXP_SCALE)
#endif

/* e^x per lane, branch-free (Cephes' polynomial, core/vexp.h) */
#define EXP(out, xin)                                                                    \
    do {                                                                                 \
        VF x_ = (xin);                                                                   \
        const VF lo_ = (VF){0} - 87.0f, hi_ = (VF){0} + 88.0f;                           \
        x_ = CLAMP_LO(lo_, x_);                                                          \
        x_ = CLAMP_HI(hi_, x_);                                                          \
        EXPC(out, x_);                                                   \
    } while (0)

/* e^x for x <= 0 (or NaN): EXP's value without the upper clamp */
#define EXP_NEG(out, xin)                                                                \
    do {                                                                                 \
        VF x_ = (xin);                                                                   \
        const VF lo_ = (VF){0} - 87.0f;                                                  \
        x_ = CLAMP_LO(lo_, x_);                                                          \
        EXPC(out, x_);                                                   \
    } while (0)

/* 2^x for x <= 0 (or NaN) per lane: x clamped at -125 (2^x and every step
 * stay normal floats), k = round(x) (to nearest even, as EXPC), f = x - k
 * exact in [-1/2, 1/2], 2^f = 1 + f P(f) by Cephes' exp2f polynomial (within
 * 0.7 float ulp of 2^x: 7.9e-8 relative over [-125, 0]), times 2^k exactly;
 * the same steps in every form, so AVX-512 and AVX2 agree bit for bit */
#if LK_VL == 16
#define EXP2_ROUND VEXP_ROUND16
#define EXP2_SCALE VEXP_SCALE16
#else
#define EXP2_ROUND VEXP_ROUND_ADD
#define EXP2_SCALE EXP_SCALE
#endif
#define EXP2_NEG(out, xin)                                                               \
    do {                                                                                 \
        const VF x_ = CLAMP_LO((VF){0} - 125.0f, (xin));                                 \
        const VF k_ = EXP2_ROUND(x_), f_ = x_ - k_;                                      \
        VF p_ = (VF){0} + ls_exp2_poly[0];                                               \
        for (int i_ = 1; i_ < 7; i_++) p_ = p_ * f_ + ls_exp2_poly[i_];                  \
        (out) = EXP2_SCALE(p_, k_);                                                      \
    } while (0)

/* sel[i] (lane mask) = expert i is among the k largest of q (n) in that lane,
 * ranked by MOE_RANKS_BEFORE (larger first, ties to the smaller index: the
 * rule of moe_topk); *top = the largest per lane. */
LKI void LK(topk)(const VF *q, int n, int k, VI *sel, VF *top) {
    *top = q[0];
    for (int i = 0; i < n; i++) sel[i] = (VI){0};
    for (int r = 0; r < k; r++) {
        VF bv = q[0];
        VI bi = (VI){0} - 1;
        for (int i = 0; i < n; i++) {
            // the first unselected expert, then any that ranks before the best so far
            const VI iv = (VI){0} + i;
            VI cand = ~sel[i] & (MOE_RANKS_BEFORE(q[i], iv, bv, bi) | (bi < 0));
            bv = SEL(cand, q[i], bv);
            bi = (cand & iv) | (~cand & bi);
        }
        for (int i = 0; i < n; i++) sel[i] |= bi == i;
        if (r == 0) *top = bv;
    }
}

/* p (n) = softmax over all n, per lane */
LKI void LK(softmax)(const VF *s, int n, VF *p) {
    VF mx = s[0], sum = (VF){0};
    for (int i = 1; i < n; i++) mx = SEL(s[i] > mx, s[i], mx);
    for (int i = 0; i < n; i++) {
        EXP_NEG(p[i], s[i] - mx);
        sum += p[i];
    }
    VF inv = 1.0f / sum;
    for (int i = 0; i < n; i++) p[i] *= inv;
}

/* Group-limited selection per lane (evaluator.c's groups_mask): rank the
 * n_group groups of q by their largest entry or the sum of their two largest,
 * keep topk_group of them, q = 0 on the others. */
LKI void LK(groups)(const moe_config *c, int n, VF *q) {
    int G = c->n_group, m = n / G;
    VF gs[LS_MAX_N];
    VI gsel[LS_MAX_N];
    for (int a = 0; a < G; a++) {
        const VF *qa = q + a * m;
        VF b1 = qa[0], b2 = (VF){0} - INFINITY;
        for (int i = 1; i < m; i++) {
            VI gt = qa[i] > b1;
            b2 = SEL(gt, b1, SEL(qa[i] > b2, qa[i], b2));
            b1 = SEL(gt, qa[i], b1);
        }
        gs[a] = b1;
        if (c->group_score == GROUP_TOP2_SUM && m >= 2) gs[a] = b1 + b2;
    }
    VF top;
    LK(topk)(gs, G, c->topk_group, gsel, &top);
    for (int a = 0; a < G; a++)
        for (int i = 0; i < m; i++) q[a * m + i] = (VF)(gsel[a] & (VI)q[a * m + i]);
}

/* Gate weights g (n) from the logits s (n) per lane under any router of
 * moe_config (moe_route's rules: evaluator.c route_one): softmax or sigmoid
 * scores p, selection scores q = p + e (e: the slots' selection biases, or
 * NULL), groups, top-k on q, weights p renormalised or not, times the routed
 * scale. The softmax top-k without bias or groups selects on the logits, as
 * moe_route does. */
LKI void LK(route_general)(const moe_config *c, int n, const float *e, const VF *s, VF *g) {
    const int k = c->k, grouped = c->n_group > 1 && c->topk_group < c->n_group;
    const int sig = c->score == SCORE_SIGMOID, renorm = c->renorm == RENORM_YES;
    const float scale = c->scale != 0.0f ? c->scale : 1.0f;
    if (n < 1) return; /* never; tells the compiler every q[0] below is set */
    if (c->score == SCORE_SPARSEMIXER) { // lane by lane: moe_route's very numbers
        for (int l = 0; l < LK_VL; l++) {
            float sl[LS_MAX_N], gl[LS_MAX_N];
            for (int i = 0; i < n; i++) sl[i] = s[i][l];
            moe_sparsemixer(sl, n, c->jitter_eps, gl);
            for (int i = 0; i < n; i++) g[i][l] = gl[i] * scale;
        }
        return;
    }
    VF p[LS_MAX_N];
    VI sel[LS_MAX_N];
    if (sig) {
        for (int i = 0; i < n; i++) {
            VF ex;
            EXP(ex, (VF){0} - s[i]);
            p[i] = 1.0f / (1.0f + ex);
        }
    }
    if (c->router != ROUTER_TOPK || (k >= n && !grouped)) {
        // dense: every expert with its score (sigmoid + renormalisation: over all)
        if (!sig) LK(softmax)(s, n, p);
        VF mul = (VF){0} + scale;
        if (c->router == ROUTER_TOPK && renorm && sig) {
            VF sum = (VF){0} + c->renorm_eps;
            for (int i = 0; i < n; i++) sum += p[i];
            mul = scale / sum;
        }
        for (int i = 0; i < n; i++) g[i] = p[i] * mul;
        return;
    }
    if (!sig && !e && !grouped) {
        // softmax is monotone: select on the logits; the sum runs over the
        // selected (renormalised) or over all n (mx, the top one, is the max of all)
        VF mx, sum = (VF){0}, ex[LS_MAX_N];
        LK(topk)(s, n, k, sel, &mx);
        for (int i = 0; i < n; i++) {
            EXP_NEG(ex[i], s[i] - mx);
            if (renorm) sum += (VF)(sel[i] & (VI)ex[i]);
            else sum += ex[i];
        }
        if (renorm) sum += c->renorm_eps;
        VF mul = scale / sum;
        for (int i = 0; i < n; i++) g[i] = (VF)(sel[i] & (VI)(ex[i] * mul));
        return;
    }
    if (!sig) LK(softmax)(s, n, p);
    VF q[LS_MAX_N];
    for (int i = 0; i < n; i++) q[i] = p[i];
    if (e)
        for (int i = 0; i < n; i++) q[i] += e[i];
    if (grouped) LK(groups)(c, n, q);
    VF top;
    LK(topk)(q, n, k, sel, &top);
    VF mul = (VF){0} + scale;
    if (renorm) {
        VF sum = (VF){0} + c->renorm_eps;
        for (int i = 0; i < n; i++) sum += (VF)(sel[i] & (VI)p[i]);
        mul = scale / sum;
    }
    for (int i = 0; i < n; i++) g[i] = (VF)(sel[i] & (VI)(p[i] * mul));
}

/* Gate weights g (n) of an order's slots at the piece Sb of a block of the
 * scores (nn, LS_L): slot i holds B's row cj[i] (its logit, and at t its
 * selection bias corr). */
LKI void LK(route_order)(const lsx *x, const float *Sb, const int *cj, const float *corr, VF *g) {
    const moe_config *c = x->pb.cfg;
    const int n = x->pb.n;
    VF s[LS_MAX_N];
    s[0] = AT(Sb, cj[0]); // n >= 1
    for (int i = 1; i < n; i++) s[i] = AT(Sb, i * n + cj[i]);
    if (x->pb.general) {
        float e[LS_MAX_N];
        if (corr)
            for (int i = 0; i < n; i++) e[i] = corr[i * n + cj[i]];
        LK(route_general)(c, n, corr ? e : NULL, s, g);
    } else if (c->router == ROUTER_TOPK && c->k < n) {
        // softmax over the top-k logits (moe_route's renormalised top-k)
        VI sel[LS_MAX_N];
        VF mx, sum = (VF){0};
        LK(topk)(s, n, c->k, sel, &mx);
        for (int i = 0; i < n; i++) {
            VF e;
            EXP_NEG(e, s[i] - mx);
            g[i] = (VF)(sel[i] & (VI)e);
            sum += g[i];
        }
        VF inv = 1.0f / sum;
        for (int i = 0; i < n; i++) g[i] *= inv;
    } else {
        LK(softmax)(s, n, g);
    }
}

/* Own chords (layer mode, ls_problem.own_chord): z (d) -= t sum_i g1_i
 * E^B_col(i)(x), with g1 B's routing after the order's reordering (slot i
 * holds B's row col[i]: its logit and selection bias), so z becomes D_t(x) -
 * (1-t) D_A(x) - t D_B'(x); *z2 = the lane sums of z^2. Sample block b, its
 * lanes from off. */
LKI void LK(own_chord_end)(const lsx *x, const moe_config *c, const int *col, int b, int off,
                                 float tt, VF *z, VF *z2) {
    const int n = x->pb.n, d = x->pb.d;
    const float *S1b = x->ck.S1 + (size_t)b * n * LS_L + off; // (n, LS_L)
    VF s1[LS_MAX_N], g1[LS_MAX_N];
    float e1[LS_MAX_N];
    const float *y1[LS_MAX_N];
    for (int i = 0; i < n; i++) {
        s1[i] = AT(S1b, col[i]);
        if (x->pb.B->corr_b) e1[i] = x->pb.B->corr_b[col[i]];
        y1[i] = x->ck.Y1 + (size_t)col[i] * x->pl.lane_d + (size_t)b * d * LS_L + off;
    }
    LK(route_general)(c, n, x->pb.B->corr_b ? e1 : NULL, s1, g1);
    for (int i = 0; i < n; i++) g1[i] *= -tt;
    VF acc = (VF){0};
    for (int q = 0; q < d; q++) {
        VF a = z[q];
        for (int i = 0; i < n; i++) a += g1[i] * AT(y1[i], q);
        z[q] = a;
        acc += a * a;
    }
    *z2 = acc;
}

/* The mix of one piece: z (d) = base + sum_i g_i Y_i in slot order (bb: the
 * piece's base; Yb + pj[i] ystride: its Y of slot i's pair), its lane sums *zs
 * and, in layer mode, those of z^2 (*z2). With sparse (a top-k router) only
 * over the slots with a weight in some lane of the piece: the others are
 * exactly 0 in every lane (64 experts, top-8: a third of the slots; 256: three
 * quarters), and a zero term adds nothing, so skipping them changes no bit
 * (and, as the evaluator, never reads an unselected expert's output); a piece
 * of 8 lanes skips more than a block of 16. Eight q at a time: eight
 * independent FMA chains (one per q), each summing base + g_0 Y_0 + g_1 Y_1 + ... */
LKI void LK(mix)(const float *bb, const float *Yb, size_t ystride, const int *pj, const VF *g,
                       int n, int sparse, int d, int layer, VF *z, VF *zs, VF *z2) {
    const float *y_[LS_MAX_N];
    VF g_[LS_MAX_N], s = (VF){0}, s2 = (VF){0};
    int na = 0;
    for (int i = 0; i < n; i++) {
        if (sparse && !LK(any)((VI)g[i])) continue;
        g_[na] = g[i];
        y_[na++] = Yb + (size_t)pj[i] * ystride;
    }
    int q = 0;
    for (; q + 8 <= d; q += 8) {
        const float *bq = bb + (size_t)q * LS_L;
        VF a0 = AT(bq, 0), a1 = AT(bq, 1), a2 = AT(bq, 2), a3 = AT(bq, 3);
        VF a4 = AT(bq, 4), a5 = AT(bq, 5), a6 = AT(bq, 6), a7 = AT(bq, 7);
        for (int i = 0; i < na; i++) {
            const VF gi = g_[i];
            const float *y = y_[i] + (size_t)q * LS_L;
            a0 += gi * AT(y, 0), a1 += gi * AT(y, 1), a2 += gi * AT(y, 2), a3 += gi * AT(y, 3);
            a4 += gi * AT(y, 4), a5 += gi * AT(y, 5), a6 += gi * AT(y, 6), a7 += gi * AT(y, 7);
        }
        z[q] = a0, z[q + 1] = a1, z[q + 2] = a2, z[q + 3] = a3;
        z[q + 4] = a4, z[q + 5] = a5, z[q + 6] = a6, z[q + 7] = a7;
        s += ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
        if (layer)
            s2 += ((a0 * a0 + a1 * a1) + (a2 * a2 + a3 * a3)) + ((a4 * a4 + a5 * a5) + (a6 * a6 + a7 * a7));
    }
    for (; q < d; q++) {
        VF a = AT(bb, q);
        for (int i = 0; i < na; i++) a += g_[i] * AT(y_[i], q);
        z[q] = a;
        s += a;
        s2 += a * a;
    }
    *zs = s, *z2 = s2;
}

/* *sc = LayerNorm's 1/sigma per lane for z (d) with lane sums zs; z is centred in
 * place (biased variance, eps 1e-5, two passes as moe_forward; four chains
 * for the variance). */
LKI void LK(layernorm)(VF *z, int d, VF zs, VF *scp) {
    VF mu = zs / (float)d, v0 = (VF){0}, v1 = v0, v2 = v0, v3 = v0;
    int q = 0;
    for (; q + 4 <= d; q += 4) {
        VF c0 = z[q] - mu, c1 = z[q + 1] - mu, c2 = z[q + 2] - mu, c3 = z[q + 3] - mu;
        z[q] = c0, z[q + 1] = c1, z[q + 2] = c2, z[q + 3] = c3;
        v0 += c0 * c0, v1 += c1 * c1, v2 += c2 * c2, v3 += c3 * c3;
    }
    for (; q < d; q++) {
        VF c0 = z[q] - mu;
        z[q] = c0;
        v0 += c0 * c0;
    }
    VF var = ((v0 + v1) + (v2 + v3)) / (float)d + 1e-5f;
    // 1/sqrt(var) per lane: GCC leaves 1.0f/sqrtf on lanes scalar, so the
    // bit-trick first guess (3.4e-2) and three Newton steps (-> ~1e-7,
    // float's own rounding), all lane-parallel
    VF hv = 0.5f * var;
    VF sc = (VF)(0x5f375a86 - ((VI)var >> 1));
    sc = sc * (1.5f - hv * sc * sc);
    sc = sc * (1.5f - hv * sc * sc);
    *scp = sc * (1.5f - hv * sc * sc);
}

/* logits lg (Cp) = sc (H' z) + c' for the folded head H' (Cp, d), read as
 * scalars and broadcast: four classes at a time, each in two chains (even and
 * odd q) summed at the end, so eight independent chains */
LKI void LK(head)(const float *H, int Cp, int d, const VF *z, VF sc, const float *cp, VF *lg) {
    for (int k = 0; k < Cp; k += 4) {
        const float *h0 = H + (size_t)k * d, *h1 = h0 + d, *h2 = h1 + d, *h3 = h2 + d;
        VF a0 = (VF){0}, a1 = a0, a2 = a0, a3 = a0, e0 = a0, e1 = a0, e2 = a0, e3 = a0;
        int q = 0;
        for (; q + 2 <= d; q += 2) {
            const VF zq = z[q], zr = z[q + 1];
            a0 += h0[q] * zq, a1 += h1[q] * zq, a2 += h2[q] * zq, a3 += h3[q] * zq;
            e0 += h0[q + 1] * zr, e1 += h1[q + 1] * zr, e2 += h2[q + 1] * zr, e3 += h3[q + 1] * zr;
        }
        if (q < d) {
            const VF zq = z[q];
            a0 += h0[q] * zq, a1 += h1[q] * zq, a2 += h2[q] * zq, a3 += h3[q] * zq;
        }
        lg[k] = (a0 + e0) * sc + cp[k];
        lg[k + 1] = (a1 + e1) * sc + cp[k + 1];
        lg[k + 2] = (a2 + e2) * sc + cp[k + 2];
        lg[k + 3] = (a3 + e3) * sc + cp[k + 3];
    }
}

/* One piece's loss terms per lane from its logits lg (C), into the block's
 * lane arrays at the piece's lanes (dl, se, good: landscape_kernel.c's
 * block_loss): classification: max - logit_y, the softmax sum and whether the
 * argmax is the label (ties to the smaller index, as moe_eval); regression:
 * the squared error over C. y, tg: the piece's labels (LS_L apart: tg). */
LKI void LK(loss_piece)(const lsx *x, const VF *lg, const int32_t *y, const float *tg,
                              float *dl, float *se, int32_t *good) {
    const int C = x->pb.C;
    if (x->pb.kind == LS_CLASSIFY) {
        const VI yv = *(const VI *)y;
        VF best = lg[0], ly = (VF){0};
        VI am = (VI){0};
        for (int u = 0; u < C; u++) {
            VI gt = lg[u] > best;
            best = SEL(gt, lg[u], best);
            am = (gt & ((VI){0} + u)) | (~gt & am);
            ly = SEL(yv == u, lg[u], ly);
        }
        VF s = (VF){0};
        for (int u = 0; u < C; u++) {
            VF e;
            EXP_NEG(e, lg[u] - best);
            s += e;
        }
        *(VF *)dl = best - ly;
        *(VF *)se = s;
        *(VI *)good = (VI){0} - (am == yv);
    } else {
        VF s2 = (VF){0};
        for (int u = 0; u < C; u++) {
            VF e = lg[u] - AT(tg, u);
            s2 += e * e;
        }
        *(VF *)dl = s2;
    }
}

/* ls_eval_orders_t's per-order path (same arguments) */
LK_FORM static void LK(orders)(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                               const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    const moe_config *c = x->pb.cfg;
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int sparse = x->pb.general || (c->router == ROUTER_TOPK && c->k < n);
    const float *corr = x->ck.corr ? ls_corr_at(x, tc) : NULL; // (nn) selection biases at t
    const int layer = x->pb.kind == LS_LAYER;
    const float *S = ls_S_at(x, tc);          // (nb, nn, L)
    const float *bs = ls_base_at(x, tc, v);   // (nb, d, L)
    const float *H = layer ? NULL : ls_head_at(x, tc); // (Cp, d)
    const int Cp = x->pl.Cp;
    const float *cp = layer ? NULL : H + (size_t)Cp * d; // (Cp)
    VF *z = (VF *)w->z;   // (d): a piece's block output, then centred
    VF *lg = (VF *)w->lg; // (Cp): its logits
    const size_t ystride = x->pl.lane_d;
    const float *Y0 = ls_Y_at(x, tc, 0);
    // layer mode, each order's own chord end: z -= t D_B'(x), its routed part here
    const int own = layer && x->pb.own_chord;
    const float tt = own ? (float)ls_t(x->ck.tidx[tc], x->pb.T) : 0.0f;
    _Alignas(64) float dl[LS_L], se[LS_L];
    _Alignas(64) int32_t good[LS_L];
    for (int b = 0; b < nb; b++) { // b: block in the chunk, b0 + b in the set
        const int gb = b0 + b;
        const int nv = N - gb * LS_L < LS_L ? N - gb * LS_L : LS_L; // valid lanes
        for (int j = 0; j < m; j++) {
            for (int off = 0; off < LS_L; off += LK_VL) {
                VF g[LS_MAX_N], zs, z2;
                LK(route_order)(x, S + (size_t)b * nn * LS_L + off, col[j], corr, g); // moe_route's rules
                LK(mix)(bs + (size_t)b * d * LS_L + off, Y0 + (size_t)b * d * LS_L + off, ystride, pair[j],
                        g, n, sparse, d, layer, z, &zs, &z2);
                if (own) LK(own_chord_end)(x, c, col[j], b, off, tt, z, &z2);
                if (layer) {
                    *(VF *)(dl + off) = z2;
                    continue;
                }
                VF sc = (VF){0} + 1.0f;
                if (c->has_norm) LK(layernorm)(z, d, zs, &sc);
                LK(head)(H, Cp, d, z, sc, cp, lg);
                LK(loss_piece)(x, lg, x->pb.lablanes ? x->pb.lablanes + (size_t)gb * LS_L + off : NULL,
                               x->pb.tglanes ? x->pb.tglanes + (size_t)gb * x->pb.C * LS_L + off : NULL,
                               dl + off, se + off, good + off);
            }
            block_loss(x, nv, dl, se, good, &lsum[j], &ok[j]);
            if (w->ps) unit_loss(x, gb, 0, nv, dl, se, 0, w->ps[j]);
        }
    }
}

/* src (d) centred over d in place (when norm); out (Cp) = H' (Cp, d) src;
 * then, with add (a pair's output: add the main variant's centred base, hadd
 * its H' base), src += add and out += hadd. src, out, add, hadd: a piece's
 * lanes of lane-major arrays. */
LKI void LK(centre_head)(const float *H, int Cp, int d, int norm, float *src, float *out,
                         const float *add, const float *hadd) {
    if (norm) {
        VF mu = (VF){0};
        for (int q = 0; q < d; q++) mu += AT(src, q);
        mu /= (float)d;
        for (int q = 0; q < d; q++) ATW(src, q) -= mu;
    }
    for (int k = 0; k < Cp; k++) {
        const float *h = H + (size_t)k * d;
        VF a = (VF){0};
        for (int q = 0; q < d; q++) a += h[q] * AT(src, q);
        if (add) a += AT(hadd, k);
        ATW(out, k) = a;
    }
    if (add)
        for (int q = 0; q < d; q++) ATW(src, q) += AT(add, q);
}

/* The Gram products of one piece of sample block b at tc, from the pairs'
 * final Y' (the main variant's centred base inside): first D (n^2), |Y'_p|^2
 * for each pair p = s n + e (slot s, B's row e); then for each pair in slot
 * order its products with every pair of a later slot, (s', e') for s' > s in
 * that order: the row of (s, e), n (n-1-s) entries (gram_row), which the
 * level adding that pair reads whole. Each is one chain over q in order. */
LKI void LK(gram)(const lsx *x, int tc, int b, int off) {
    const int n = x->pb.n, d = x->pb.d;
    const size_t yo = (size_t)b * d * LS_L + off, ystride = x->pl.lane_d;
    float *g = ls_G_at(x, tc) + (size_t)b * x->pl.gsize * LS_L + off;
    for (int p = 0; p < n * n; p++) {
        const float *yp = ls_Y_at(x, tc, p) + yo;
        VF a = (VF){0};
        for (int q = 0; q < d; q++) a += AT(yp, q) * AT(yp, q);
        ATW(g, p) = a;
    }
    float *row = g + (size_t)n * n * LS_L;
    for (int s = 0; s + 1 < n; s++)
        for (int e = 0; e < n; e++) {
            const float *yp = ls_Y_at(x, tc, s * n + e) + yo;
            for (int s2 = s + 1; s2 < n; s2++, row += (size_t)n * LS_L) {
                const float *y2 = ls_Y_at(x, tc, s2 * n) + yo; // its n pairs ystride apart
                VF acc[LS_PREFIX_MAX_N];
                for (int e2 = 0; e2 < n; e2++) acc[e2] = (VF){0};
                for (int q = 0; q < d; q++) {
                    const VF yq = AT(yp, q);
                    for (int e2 = 0; e2 < n; e2++) acc[e2] += yq * AT(y2 + e2 * ystride, q);
                }
                for (int e2 = 0; e2 < n; e2++) ATW(row, e2) = acc[e2];
            }
        }
}

/* ls_prefix_prepare: the chunk's E, HY, G and pfx_ok at every t of the chunk;
 * where the path holds, the shared variants' bases are centred in place
 * (HY: H' base), and each pair's Y becomes its centred output plus the main
 * variant's centred base (HY: H' of that), the terms the path sums, and G
 * their Gram products (single-threaded: tens of ms next to the orders'
 * sweep). */
LK_FORM static void LK(prepare)(lsx *x) {
    const int n = x->pb.n, nn = x->pb.nn, d = x->pb.d, nb = x->ck.nbn, Cp = x->pl.Cp;
    const int norm = x->pb.cfg->has_norm, np = x->pb.npairs;
    for (int tc = 0; tc < x->ck.ntc; tc++) {
        int ok = 1;
        for (int b = 0; b < nb && ok; b++)
            for (int off = 0; off < LS_L; off += LK_VL) {
                const float *s = ls_S_at(x, tc) + (size_t)b * nn * LS_L + off;
                float *e = ls_E_at(x, tc) + (size_t)b * nn * LS_L + off;
                // mref per lane, and lo: no order's largest logit is below it
                VF mref = AT(s, 0), lo = AT(s, 0);
                for (int p = 1; p < nn; p++) mref = SEL(AT(s, p) > mref, AT(s, p), mref);
                for (int i = 0; i < n; i++) {
                    VF mn = AT(s, i * n);
                    for (int c = 1; c < n; c++) mn = SEL(AT(s, i * n + c) < mn, AT(s, i * n + c), mn);
                    lo = SEL(mn > lo, mn, lo);
                }
                VI fine = (mref - lo) <= LS_PREFIX_RANGE; // false for NaN too
                for (int l = 0; l < LK_VL; l++) ok &= fine[l] != 0;
                for (int p = 0; p < nn; p++) EXP_NEG(ATW(e, p), AT(s, p) - mref);
            }
        x->ck.pfx_ok[tc] = (unsigned char)ok;
        if (!ok) continue; // Y and base stay as they are for the per-order path
        const float *H = ls_head_at(x, tc);
        const float *bm = ls_base_at(x, tc, SH_MAIN), *hm = ls_HY_at(x, tc, np + SH_MAIN);
        for (int p = np; p < np + SH_COUNT; p++) { // the variants first: the pairs add the main one
            float *src = ls_base_at(x, tc, p - np);
            for (int b = 0; b < nb; b++)
                for (int off = 0; off < LS_L; off += LK_VL)
                    LK(centre_head)(H, Cp, d, norm, src + (size_t)b * d * LS_L + off,
                                    ls_HY_at(x, tc, p) + (size_t)b * Cp * LS_L + off, NULL, NULL);
        }
        for (int p = 0; p < np; p++) {
            float *src = ls_Y_at(x, tc, p);
            for (int b = 0; b < nb; b++)
                for (int off = 0; off < LS_L; off += LK_VL) {
                    const size_t o = (size_t)b * d * LS_L + off, oh = (size_t)b * Cp * LS_L + off;
                    LK(centre_head)(H, Cp, d, norm, src + o, ls_HY_at(x, tc, p) + oh, bm + o, hm + oh);
                }
        }
        if (x->pl.gram)
            for (int b = 0; b < nb; b++)
                for (int off = 0; off < LS_L; off += LK_VL) LK(gram)(x, tc, b, off);
    }
}

/* a <- a + v (floats into doubles) */
LKI void LK(add_d)(double *a, VF v) { *(VD *)a += __builtin_convertvector(v, VD); }

/* a <- a * v; with renorm, a's binary exponent is moved to ex (a in [1, 2));
 * at the end of each panel of 4 blocks is enough (a <= C^4 before it) */
LKI void LK(mul_d)(double *a, int64_t *ex, VF v, int renorm) {
    VD p = *(VD *)a * __builtin_convertvector(v, VD);
    if (renorm) { // p > 0: its bits as an integer are its exponent and mantissa
        VL bits = (VL)p;
        *(VL *)ex += (bits >> 52) - 1023;
        p = (VD)((bits & 0x000FFFFFFFFFFFFFLL) | 0x3FF0000000000000LL);
    }
    *(VD *)a = p;
}

/* Phase 1 of an order's last slots (top..n-1: one or two; lt, the level of
 * the slots before them) at one piece, the direct form: with zS = z S = lt +
 * e0 Y'0 + e1 Y'1 (Y' a pair's centred output plus the main variant's centred
 * base: zS is the sum of e_i Y'_i, z born centred), hl (C) = H' zS, the
 * logits before the 1/S and LayerNorm's scale, and hl[Cp] = w = |zS|^2 / d +
 * eps S^2 (S^2 without a norm): LayerNorm's 1/sigma over S is 1/sqrt(w)
 * (sigma^2 = |z|^2 / d + eps), so the logits are hl / sqrt(w) + c', with no
 * division. rd = 1/d. dv (d), hdv (Cp) (another variant than the main one;
 * else NULL): its base and H' base less the main one's, S times which z S
 * gains. y0, y1 (d) and h0, h1 (Cp): a piece's lanes of lane-major arrays. A
 * level: H'U (Cp), S, Q, U (d). */
LKI void LK(leaf)(const lsx *x, const VF *lt, VF e0, VF e1, const float *y0, const float *y1,
                  const float *h0, const float *h1, const VF *dv, const VF *hdv, int two, float rd,
                  VF *hl) {
    const int d = x->pb.d, C = x->pb.C, Cp = x->pl.Cp;
    const VF *lu = lt + Cp + 2;
    VF s = lt[Cp] + e0;
    if (two) s += e1;
    VF w = s * s;
    if (x->pb.cfg->has_norm) {
        // four chains (q = 0, 1, 2, 3 mod 4)
        VF v0 = (VF){0}, v1 = v0, v2 = v0, v3 = v0, Q = v0;
        int q = 0;
        if (!dv && two) {
            for (; q + 4 <= d; q += 4) {
                VF u0 = lu[q] + e0 * AT(y0, q) + e1 * AT(y1, q);
                VF u1 = lu[q + 1] + e0 * AT(y0, q + 1) + e1 * AT(y1, q + 1);
                VF u2 = lu[q + 2] + e0 * AT(y0, q + 2) + e1 * AT(y1, q + 2);
                VF u3 = lu[q + 3] + e0 * AT(y0, q + 3) + e1 * AT(y1, q + 3);
                v0 += u0 * u0, v1 += u1 * u1, v2 += u2 * u2, v3 += u3 * u3;
            }
            Q = (v0 + v1) + (v2 + v3);
        }
        for (; q < d; q++) {
            VF u = lu[q] + e0 * AT(y0, q);
            if (two) u += e1 * AT(y1, q);
            if (dv) u += s * dv[q];
            Q += u * u;
        }
        w = Q * rd + 1e-5f * w;
    }
    for (int c = 0; c < C; c++) {
        VF hu = lt[c] + e0 * AT(h0, c);
        if (two) hu += e1 * AT(h1, c);
        if (hdv) hu += s * hdv[c];
        hl[c] = hu;
    }
    hl[Cp] = w;
}

/* The Gram form of the same (the main variant, LayerNorm or not): |zS|^2 =
 * sum_ij e_i e_j <Y'_i, Y'_j> from the Gram products instead of d
 * coordinates. A level of k slots holds, besides H'U and S, Q = |U|^2 and R,
 * the products <U, Y'_p> with the pairs p of the slots k..n-1 (R[(s - k) n +
 * e], kept for the B rows e the later slots can still hold); the leaf adds
 * the last two slots' pairs, a (slot n-2) and b (n-1):
 *   Q' = Q + e0 (2 R[a] + e0 D_a) + e1 (2 (R[n + b] + e0 G_ab) + e1 D_b),
 * a few lane operations instead of 3d (and no d-wide level below it). Q is the
 * same sum of squares, its terms grouped by pairs; float rounding leaves a
 * tiny negative Q where z is 0 to rounding: clamped to 0 (a NaN stays NaN).
 * Gb: the piece's block of G (ls_prefix_gsize), a, b: the last slots' rows. */
LKI void LK(leaf_gram)(const lsx *x, const VF *lt, VF e0, VF e1, int a, int b, const float *Gb,
                       const float *h0, const float *h1, int two, float rd, VF *hl) {
    const int n = x->pb.n, C = x->pb.C, Cp = x->pl.Cp;
    VF s = lt[Cp] + e0;
    if (two) s += e1;
    VF w = s * s;
    if (x->pb.cfg->has_norm) {
        const VF *R = lt + Cp + 2;
        const int s0 = two ? n - 2 : n - 1;
        VF Q = lt[Cp + 1] + e0 * (2.0f * R[a] + e0 * AT(Gb, s0 * n + a));
        if (two) {
            const VF r = R[n + b] + e0 * AT(Gb, n * n + gram_row(n, n - 2, a) + b);
            Q += e1 * (2.0f * r + e1 * AT(Gb, (n - 1) * n + b));
        }
        Q = SEL(Q < 0.0f, (VF){0}, Q);
        w = Q * rd + 1e-5f * w;
    }
    for (int c = 0; c < C; c++) {
        VF hu = lt[c] + e0 * AT(h0, c);
        if (two) hu += e1 * AT(h1, c);
        hl[c] = hu;
    }
    hl[Cp] = w;
}

/* Phase 2 of no orders (1 or PFX_FIN, side by side so that their dependency
 * chains, the argmax and the softmax sum over the classes, overlap) at one
 * piece (lanes from off): the scale sc = 1/sqrt(w) from hl[Cp] = w (leaf:
 * LayerNorm's 1/sigma over S; bit-trick guess and three Newton steps: 3.4e-2,
 * 1.75e-3, 4.6e-6, 3e-11, below float's rounding), the logits lg (C) = hl sc + c',
 * and the loss terms into each order's acc (ties of the argmax to the smaller
 * class, as moe_eval; the softmax sum in class order; padding lanes add 0 and
 * multiply by 1). Classification takes the logits in base 2 (sc and c' times
 * log2 e, cl2 = c' log2 e): the softmax terms are then 2^(l - max), a third
 * fewer operations than e^x's (no product by log2 e, no two-part ln 2; half
 * of this phase's time is these exponentials), and the loss term max - l_y
 * comes in bits (fold_acc multiplies by ln 2). hl: the orders' phase 1, HS
 * apart; lg (PFX_FIN, C). */
LKI void LK(finish)(const lsx *x, const VF *hl, int HS, const int no, const float *cp, int gb,
                          int off, int renorm, VI valid, VF *lg, pfx_acc *acc, double *const *ps) {
    const int C = x->pb.C, Cp = x->pl.Cp, classify = x->pb.kind == LS_CLASSIFY;
    const float unit = classify ? 1.44269504088896341f : 1.0f; // log2 e: base-2 logits
    VF sc[PFX_FIN], dl[PFX_FIN], se[PFX_FIN];
    VI good[PFX_FIN];
    for (int o = 0; o < no; o++) {
        const VF w = hl[o * HS + Cp], hw = 0.5f * w;
        VF r = (VF)(0x5f375a86 - ((VI)w >> 1));
        r = r * (1.5f - hw * r * r);
        r = r * (1.5f - hw * r * r);
        sc[o] = r * (1.5f - hw * r * r) * unit;
        se[o] = (VF){0} + 1.0f, good[o] = (VI){0};
    }
    for (int u = 0; u < C; u++)
        for (int o = 0; o < no; o++) lg[o * C + u] = hl[o * HS + u] * sc[o] + cp[u];
    if (classify) {
        const VI y = *(const VI *)(x->pb.lablanes + (size_t)gb * LS_L + off);
        VF best[PFX_FIN], ly[PFX_FIN];
        VI am[PFX_FIN];
        for (int o = 0; o < no; o++) best[o] = lg[o * C], ly[o] = (VF){0}, am[o] = (VI){0};
        for (int u = 0; u < C; u++) {
            const VI is = y == u;
            for (int o = 0; o < no; o++) {
                const VF l = lg[o * C + u];
                const VI gt = l > best[o];
                best[o] = SEL(gt, l, best[o]);
                am[o] = (gt & ((VI){0} + u)) | (~gt & am[o]);
                ly[o] = SEL(is, l, ly[o]);
            }
        }
        for (int o = 0; o < no; o++) se[o] = (VF){0};
        for (int u = 0; u < C; u++)
            for (int o = 0; o < no; o++) {
                VF ex;
                EXP2_NEG(ex, lg[o * C + u] - best[o]);
                se[o] += ex;
            }
        for (int o = 0; o < no; o++) dl[o] = best[o] - ly[o], good[o] = am[o] == y;
    } else {
        const float *tg = x->pb.tglanes + (size_t)gb * C * LS_L + off;
        for (int o = 0; o < no; o++) dl[o] = (VF){0};
        for (int u = 0; u < C; u++)
            for (int o = 0; o < no; o++) {
                VF e = lg[o * C + u] - AT(tg, u);
                dl[o] += e * e;
            }
    }
    if (ps) { // the valid lanes' per-sample losses (a piece: lanes off.. of the block)
        const int nv = x->pb.N - gb * LS_L - off < LK_VL ? x->pb.N - gb * LS_L - off : LK_VL;
        for (int o = 0; o < no; o++)
            unit_loss(x, gb, off, off + nv, (const float *)&dl[o], (const float *)&se[o], classify,
                      ps[o]);
    }
    for (int o = 0; o < no; o++) {
        LK(add_d)(acc[o].dl + off, (VF)(valid & (VI)dl[o]));
        if (classify) {
            LK(mul_d)(acc[o].pr + off, acc[o].ex + off, SEL(valid, se[o], (VF){0} + 1.0f), renorm);
            *(VI *)(acc[o].good + off) -= valid & good[o];
        }
    }
}

/* At the end of a batch (PFX_BATCH orders, or the last order m - 1; the caller
 * tests it), after order j's phase 1: the batch's phase 2, PFX_FIN orders at a
 * time (the rest one by one); hls: the batch's phase 1, HS apart; acc: every
 * order's sums; ps: where each order's per-sample losses go (NULL: not
 * kept). A macro, not a function: inlined through one more function,
 * GCC fused the logits' products into their adds in one form and not the
 * other (AVX-512 and AVX2 then differed in the last bits) */
#define BATCH_FINISH(x, hls, HS, j, cp, gb, off, fold, valid, lg, acc, ps)                                 \
    do {                                                                                                  \
        const int j0_ = (j) - (j) % PFX_BATCH;                                                            \
        int u_ = j0_;                                                                                     \
        for (; u_ + PFX_FIN - 1 <= (j); u_ += PFX_FIN)                                                    \
            LK(finish)(x, (hls) + (size_t)(u_ - j0_) * (HS), HS, PFX_FIN, cp, gb, off, fold, valid, lg,  \
                       &(acc)[u_], (ps) ? (ps) + u_ : NULL);                                              \
        for (; u_ <= (j); u_++)                                                                           \
            LK(finish)(x, (hls) + (size_t)(u_ - j0_) * (HS), HS, 1, cp, gb, off, fold, valid, lg,        \
                       &(acc)[u_], (ps) ? (ps) + u_ : NULL);                                              \
    } while (0)

/* the folded head's shift c' (Cp) for finish: in base 2 for classification
 * (times log2 e, into cl), as it is otherwise */
LKI const float *LK(shift_for)(const lsx *x, const float *cp, float *cl) {
    if (x->pb.kind != LS_CLASSIFY) return cp;
    for (int c = 0; c < x->pl.Cp; c++) cl[c] = cp[c] * 1.44269504088896341f;
    return cl;
}

/* ls_eval_orders_t's work by the prefix path (same arguments; m <= LS_BLOCK).
 * Its levels in the Gram form wherever the orders are the main variant's on
 * the landscape's pairs (every order of the sweep; a named curve on others
 * takes the direct form), or when there is no LayerNorm (no variance: no U). */
LK_FORM static void LK(prefix)(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                               const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int C = x->pb.C, Cp = x->pl.Cp, W = pfx_w(x), HS = PFX_HS(Cp);
    const int top = n >= 2 ? n - 2 : 0;      // levels 0..top kept; the last slots go into z
    const float rd = 1.0f / (float)d;
    const float *E = ls_E_at(x, tc);
    const float *cp = ls_head_at(x, tc) + (size_t)Cp * d; // (Cp)
    const float *Y0 = ls_Y_at(x, tc, 0), *HY0 = ls_HY_at(x, tc, 0);
    // another variant than the main one: its base and H' base less the main one's
    const float *bv = ls_base_at(x, tc, v), *bm = ls_base_at(x, tc, SH_MAIN);
    const float *hv = ls_HY_at(x, tc, x->pb.npairs + v), *hm = ls_HY_at(x, tc, x->pb.npairs + SH_MAIN);
    VF *dv = v != SH_MAIN ? (VF *)w->z : NULL, *hdv = v != SH_MAIN ? (VF *)w->lg : NULL; // (d), (Cp)
    const size_t ystride = x->pl.lane_d, hstride = x->pl.Nc * (size_t)Cp;
    pfx_ws pw;
    prefix_carve(x, w, m, pair, col, &pw);
    cp = LK(shift_for)(x, cp, pw.cl); // base-2 logits (finish)
    const int norm = x->pb.cfg->has_norm, gram = norm && x->pl.gram && !dv && !pw.high;
    const int lean = gram || !norm;            // no U in the levels
    const int gleaf = gram || (!norm && !hdv); // the leaf of the Gram form
    if (!norm) dv = NULL;                      // without a norm only H' dv counts
    const float *G0 = gram ? ls_G_at(x, tc) : NULL;
    VF *lev = (VF *)pw.lev, *hls = (VF *)pw.hls, *lg = (VF *)pw.lg;
    const int *ords = pw.ords, os = 1 + 2 * n;
    const int panel = LS_PANEL / LS_L; // blocks per panel
    for (int b = 0; b < nb; b++) {
        const int gb = b0 + b, fold = gb % panel == panel - 1 || gb == x->pl.nb - 1;
        if (b + 1 < nb) prefix_fetch(x, &pw, Y0, HY0, G0, b + 1);
        // the block in pieces of LK_VL lanes, each over all m orders
        for (int off = 0; off < LS_L; off += LK_VL) {
            const VI valid = *(const VI *)(ls_lane_iota + off) < N - gb * LS_L; // lanes holding samples
            const float *Eb = E + (size_t)b * nn * LS_L + off;
            if (hdv) {
                const size_t o = (size_t)b * d * LS_L + off, oh = (size_t)b * Cp * LS_L + off;
                if (dv)
                    for (int q = 0; q < d; q++) dv[q] = AT(bv + o, q) - AT(bm + o, q);
                for (int c = 0; c < Cp; c++) hdv[c] = AT(hv + oh, c) - AT(hm + oh, c);
            }
            const float *Yb = Y0 + (size_t)b * d * LS_L + off, *HYb = HY0 + (size_t)b * Cp * LS_L + off;
            const float *Gb = gram ? G0 + (size_t)b * x->pl.gsize * LS_L + off : NULL;
            for (int j = 0; j < m; j++) {
                // levels shared with the previous order stay (at the piece's first order none)
                const int *o = ords + (size_t)j * os, *op = o + 1, *oc = o + 1 + n;
                for (int k = j ? o[0] : 0; k < top; k++) { // level k+1 = level k + e_k (H'Y'_k, 1, ...)
                    const VF ek = AT(Eb, k * n + oc[k]);
                    const float *hy = HYb + op[k] * hstride;
                    const VF *src = lev + (size_t)k * W;
                    VF *dst = lev + (size_t)(k + 1) * W;
                    for (int c = 0; c < C; c++) dst[c] = src[c] + ek * AT(hy, c);
                    dst[Cp] = src[Cp] + ek;
                    if (gram) { // Q and R (see leaf_gram): R's slot k leaves, the rest gains e_k G's row
                        // (only the B rows left to the later slots: this order's, oc[k+1..n-1])
                        const int e = op[k] - k * n;
                        const float *gr = Gb + (size_t)(n * n + gram_row(n, k, e)) * LS_L;
                        const VF *sr = src + Cp + 2 + n;
                        VF *dr = dst + Cp + 2;
                        dst[Cp + 1] = src[Cp + 1] + ek * (2.0f * src[Cp + 2 + e] + ek * AT(Gb, op[k]));
                        for (int r = 0; r < n - 1 - k; r++, sr += n, dr += n, gr += (size_t)n * LS_L)
                            for (int i = k + 1; i < n; i++) dr[oc[i]] = sr[oc[i]] + ek * AT(gr, oc[i]);
                    } else if (!lean) {
                        const float *y = Yb + op[k] * ystride;
                        for (int q = 0; q < d; q++) dst[Cp + 2 + q] = src[Cp + 2 + q] + ek * AT(y, q);
                    }
                }
                const int i0 = top, i1 = n - 1, two = i1 > i0; // i0 == i1 only when n == 1
                const VF e0 = AT(Eb, i0 * n + oc[i0]), e1 = two ? AT(Eb, i1 * n + oc[i1]) : (VF){0};
                VF *hl = hls + (size_t)(j % PFX_BATCH) * HS;
                if (gleaf)
                    LK(leaf_gram)(x, lev + (size_t)top * W, e0, e1, op[i0] - i0 * n, op[i1] - i1 * n, Gb,
                                  HYb + op[i0] * hstride, HYb + op[i1] * hstride, two, rd, hl);
                else
                    LK(leaf)(x, lev + (size_t)top * W, e0, e1, Yb + op[i0] * ystride, Yb + op[i1] * ystride,
                             HYb + op[i0] * hstride, HYb + op[i1] * hstride, dv, hdv, two, rd, hl);
                if (j % PFX_BATCH == PFX_BATCH - 1 || j == m - 1) // the end of a batch
                    BATCH_FINISH(x, hls, HS, j, cp, gb, off, fold, valid, lg, pw.acc, w->ps);
            }
        }
        if (fold) fold_acc(x, pw.acc, m, lsum, ok);
    }
}

/* ls_eval_orders_t's work by the selected form (landscape_kernel.c; same
 * arguments; m <= LS_BLOCK) */
LK_FORM static void LK(selected)(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                                 const int (*col)[LS_MAX_N], int v, int tc, double *lsum, long *ok) {
    const int N = x->pb.N, d = x->pb.d, n = x->pb.n, nn = x->pb.nn, nb = x->ck.nbn, b0 = x->ck.b0;
    const int C = x->pb.C, Cp = x->pl.Cp, HS = PFX_HS(Cp), k = x->pb.cfg->k, norm = x->pb.cfg->has_norm;
    const float rd = 1.0f / (float)d;
    pfx_ws pw;
    prefix_carve(x, w, m, pair, col, &pw);
    // the variance from G, or (another variant, pairs outside G) from the
    // selected outputs Y' over d, S times the variant's difference dv added
    const int gram = norm && x->pl.gram && v == SH_MAIN && !pw.high, direct = norm && !gram;
    const float *S = ls_S_at(x, tc), *E = ls_E_at(x, tc), *HY0 = ls_HY_at(x, tc, 0);
    const float *G0 = gram ? ls_G_at(x, tc) : NULL, *Y0 = ls_Y_at(x, tc, 0);
    const float *bv = ls_base_at(x, tc, v), *bm = ls_base_at(x, tc, SH_MAIN);
    const float *hv = ls_HY_at(x, tc, x->pb.npairs + v), *hm = ls_HY_at(x, tc, x->pb.npairs + SH_MAIN);
    VF *dv = v != SH_MAIN && norm ? (VF *)w->z : NULL, *hdv = v != SH_MAIN ? (VF *)w->lg : NULL; // (d), (Cp)
    const size_t ystride = x->pl.lane_d;
    const float *cp = ls_head_at(x, tc) + (size_t)Cp * d; // (Cp)
    cp = LK(shift_for)(x, cp, pw.cl); // base-2 logits (finish)
    const size_t hstride = x->pl.Nc * (size_t)Cp;
    VF *hls = (VF *)pw.hls, *lg = (VF *)pw.lg;
    const int *ords = pw.ords, os = 1 + 2 * n;
    const int panel = LS_PANEL / LS_L; // blocks per panel
    int grow[LS_PREFIX_MAX_N * LS_PREFIX_MAX_N]; // pair p = s n + e: gram_row(s, e) - (s + 1) n
    for (int p = 0; p < nn; p++) grow[p] = gram_row(n, p / n, p % n) - (p / n + 1) * n;
    for (int b = 0; b < nb; b++) {
        const int gb = b0 + b, fold = gb % panel == panel - 1 || gb == x->pl.nb - 1;
        if (b + 1 < nb) prefix_fetch(x, &pw, direct ? Y0 : NULL, HY0, G0, b + 1);
        for (int off = 0; off < LS_L; off += LK_VL) {
            const VI valid = *(const VI *)(ls_lane_iota + off) < N - gb * LS_L; // lanes holding samples
            const float *Sb = S + (size_t)b * nn * LS_L + off, *Eb = E + (size_t)b * nn * LS_L + off;
            const float *HYb = HY0 + (size_t)b * Cp * LS_L + off, *Yb = Y0 + (size_t)b * d * LS_L + off;
            const float *Gb = gram ? G0 + (size_t)b * x->pl.gsize * LS_L + off : NULL;
            if (hdv) {
                const size_t o = (size_t)b * d * LS_L + off, oh = (size_t)b * Cp * LS_L + off;
                if (dv)
                    for (int q = 0; q < d; q++) dv[q] = AT(bv + o, q) - AT(bm + o, q);
                for (int c = 0; c < Cp; c++) hdv[c] = AT(hv + oh, c) - AT(hm + oh, c);
            }
            for (int j = 0; j < m; j++) {
                const int *op = ords + (size_t)j * os + 1, *oc = op + n;
                VF s[LS_PREFIX_MAX_N], top;
                VI sel[LS_PREFIX_MAX_N];
                s[0] = AT(Sb, oc[0]); // n >= 1
                for (int i = 1; i < n; i++) s[i] = AT(Sb, i * n + oc[i]);
                LK(topk)(s, n, k, sel, &top); // moe_route's rules
                // the slots some lane selects: their weights, pairs and H'Y'
                int pa[LS_PREFIX_MAX_N], na = 0;
                VF wa[LS_PREFIX_MAX_N];
                const float *hy[LS_PREFIX_MAX_N];
                for (int i = 0; i < n; i++) {
                    if (!LK(any)(sel[i])) continue;
                    wa[na] = (VF)(sel[i] & (VI)AT(Eb, i * n + oc[i]));
                    hy[na] = HYb + op[i] * hstride, pa[na++] = op[i];
                }
                VF *hl = hls + (size_t)(j % PFX_BATCH) * HS, sum = (VF){0};
                for (int a = 0; a < na; a++) sum += wa[a];
                for (int c = 0; c < C; c++) { // H'zS in slot order, a class at a time in a register
                    VF acc = (VF){0};
                    for (int a = 0; a < na; a++) acc += wa[a] * AT(hy[a], c);
                    hl[c] = acc;
                }
                if (hdv)
                    for (int c = 0; c < C; c++) hl[c] += sum * hdv[c];
                VF wv = sum * sum;
                if (direct) { // |zS|^2 over d
                    VF Q = (VF){0};
                    for (int q = 0; q < d; q++) {
                        VF u = (VF){0};
                        for (int a = 0; a < na; a++) u += wa[a] * AT(Yb + pa[a] * ystride, q);
                        if (dv) u += sum * dv[q];
                        Q += u * u;
                    }
                    wv = Q * rd + 1e-5f * wv;
                } else if (gram) { // |zS|^2 from D and G (the rows of slot i, then slot j's block)
                    VF Q = (VF){0};
                    for (int a = 0; a < na; a++) {
                        // pair p = s n + e's row less its slots before s + 1: its entry
                        // for a pair q of a later slot at q
                        const float *gr = Gb + (size_t)(n * n + grow[pa[a]]) * LS_L;
                        VF r = (VF){0};
                        for (int a2 = a + 1; a2 < na; a2++) r += wa[a2] * AT(gr, pa[a2]);
                        Q += wa[a] * (wa[a] * AT(Gb, pa[a]) + 2.0f * r);
                    }
                    Q = SEL(Q < 0.0f, (VF){0}, Q);
                    wv = Q * rd + 1e-5f * wv;
                }
                hl[Cp] = wv;
                if (j % PFX_BATCH == PFX_BATCH - 1 || j == m - 1) // the end of a batch
                    BATCH_FINISH(x, hls, HS, j, cp, gb, off, fold, valid, lg, pw.acc, w->ps);
            }
        }
        if (fold) fold_acc(x, pw.acc, m, lsum, ok);
    }
}

/* this form's row (ls_form_for) */
static const struct ls_form LK(form) = {.simd = LK_SIMD, .prepare = LK(prepare), .orders = LK(orders),
                                        .prefix = LK(prefix), .selected = LK(selected)};

#undef VF
#undef VI
#undef VD
#undef VL
#undef SEL
#undef AT
#undef ATW
#undef EXP
#undef EXP_NEG
#undef EXPC
#undef BATCH_FINISH
#undef EXP2_NEG
#undef EXP2_ROUND
#undef EXP2_SCALE
#undef CLAMP_LO
#undef CLAMP_HI
#undef EXP_SCALE
#undef LKI
#undef LK_FORM
#undef LK
#undef LK_JOIN
#undef LK_JOIN2
