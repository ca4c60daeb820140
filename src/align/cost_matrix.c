/* cost_matrix.c - the data-free expert costs of Algorithm 1 step 1.
 *
 * gate:   C_ij = sqrt(|Wbar^A_i - Wbar^B_j|^2 + (bbar^A_i - bbar^B_j)^2
 *                   [+ (e^A_i - e^B_j)^2]), the gate rows centred over the
 *         experts (a gate translation cancels) for softmax routers only; e is a
 *         selection-only bias (DeepSeek-V3), part of the row, never centred.
 * expert: C_ij = sqrt(|G1^A_i - G1^B_j|_F^2 + |G2^A_i - G2^B_j|_F^2) with
 *         G1 = At^T At, At = [W1 | b1 (| W3 | b3)]  (h, D1), D1 = d+1 or 2d+2
 *         G2 = Bt Bt^T,  Bt = [W2 | b2]             (d, h+1)
 *         Both Grams are invariant to hidden-unit permutations.
 *
 * How the distances are computed without holding 2n Gram matrices: below. */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/blas_threads.h"
#include "align/cost_matrix.h"
#include "core/progress.h"
#include "model/symmetry.h"

double cost_of_order(const double *C, const int *order, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += C[(size_t)i * n + order[i]];
    return s;
}

static const char *path_or(const moe_model *m, const char *dflt) {
    return m->path ? m->path : dflt;
}

/* Shapes the costs need; moe_check_compatible checks the rest (head, router). */
int cost_check_shapes(const moe_model *A, const moe_model *B, ms_err *err) {
    const moe_config *a = &A->cfg, *b = &B->cfg;
    if (a->n != b->n || a->d != b->d || a->h != b->h || a->s != b->s || a->act != b->act)
        return ms_fail(err,
                       "%s (n=%d d=%d h=%d s=%d %s) and %s (n=%d d=%d h=%d s=%d %s): "
                       "different architectures, cannot compare experts",
                       path_or(A, "A"), a->n, a->d, a->h, a->s, moe_act_name(a->act),
                       path_or(B, "B"), b->n, b->d, b->h, b->s, moe_act_name(b->act));
    return 0;
}

/* ---- gate cost ---- */

// mean (d) and mean bias of the n gate rows, in double
static void gate_mean(const moe_model *m, double *mw, double *mb) {
    int n = m->cfg.n, d = m->cfg.d;
    for (int k = 0; k < d; k++) mw[k] = 0.0;
    *mb = 0.0;
    for (int i = 0; i < n; i++) {
        const float *w = m->gate_w + (size_t)i * d; // (d)
        for (int k = 0; k < d; k++) mw[k] += w[k];
        *mb += m->gate_b[i];
    }
    for (int k = 0; k < d; k++) mw[k] /= n;
    *mb /= n;
}

static void gate_cost(const moe_model *A, const moe_model *B, int center, double *C) {
    int n = A->cfg.n, d = A->cfg.d;
    double *ma = ms_calloc((size_t)d, sizeof(double)); // (d)
    double *mb = ms_calloc((size_t)d, sizeof(double)); // (d)
    double mba = 0.0, mbb = 0.0;
    if (center) {
        gate_mean(A, ma, &mba);
        gate_mean(B, mb, &mbb);
    }
    // shift (d) = mean_A - mean_B, so Wbar^A_i - Wbar^B_j = W^A_i - W^B_j - shift
    for (int k = 0; k < d; k++) ma[k] -= mb[k];
    double shift_b = mba - mbb;
    for (int i = 0; i < n; i++) {
        const float *wa = A->gate_w + (size_t)i * d; // (d)
        for (int j = 0; j < n; j++) {
            const float *wb = B->gate_w + (size_t)j * d; // (d)
            double acc = 0.0;
            for (int k = 0; k < d; k++) {
                double t = (double)wa[k] - (double)wb[k] - ma[k];
                acc += t * t;
            }
            double tb = (double)A->gate_b[i] - (double)B->gate_b[j] - shift_b;
            // a selection-only bias belongs to the gate row (never centred)
            double tc = A->corr_b && B->corr_b ? (double)A->corr_b[i] - (double)B->corr_b[j] : 0.0;
            C[(size_t)i * n + j] = sqrt(acc + tb * tb + tc * tc);
        }
    }
    free(ma);
    free(mb);
}

/* ---- expert cost ----
 *
 * |G^a - G^b|_F^2 is computed on whichever side of the Gram products is cheaper:
 *
 * d side: G1 = At^T At splits into the blocks of At = [W1 | b1 | W3 | b3]: the
 *   d x d terms W1^T W1, W3^T W3 (symmetric) and W1^T W3 (twice), the d-vectors
 *   W1^T b1, W1^T b3, W3^T b1, W3^T b3 (twice each) and the scalars b.b; G2 =
 *   W2 W2^T + b2 b2^T is one symmetric d x d term. Each d x d term is formed a
 *   block of rows at a time for every expert (at most cost_tuning.block_bytes),
 *   weighted (sqrt 2 for an entry that stands for two), and the distances follow
 *   from |x - y|^2 = |x|^2 + |y|^2 - 2 x.y with the inner products of all pairs
 *   by one double GEMM per block: memory stays bounded for any n and d, and the
 *   n^2 distances cost a GEMM, not n^2 passes over d x d matrices.
 * h side: |X^T X - Y^T Y|^2 = |X X^T|^2 + |Y Y^T|^2 - 2 |X Y^T|^2, with the h x h
 *   products At_a At_b^T = W1a W1b^T + b1a b1b^T (+ W3, b3) and (h+1) x (h+1)
 *   Bt_a^T Bt_b per pair (in double): cheaper when h is small against d/n.
 * The sides agree up to rounding (the expansion in double loses about 1e-16 of
 * |G|^2); experts that are bit for bit equal get exactly 0. */

#define COST_BLOCK_BYTES (256.0 * 1048576.0)

/* t with its defaults filled in (t NULL: all of them) */
static cost_tuning tuning_of(const cost_tuning *t) {
    cost_tuning r = t ? *t : (cost_tuning){0};
    if (!(r.block_bytes > 0)) r.block_bytes = COST_BLOCK_BYTES;
    return r;
}

static int is_glu(const moe_config *c) { return moe_act_glu(c->act); }

static double sumsq(const double *x, size_t k) {
    double t = 0.0;
    for (size_t i = 0; i < k; i++) t += x[i] * x[i];
    return t;
}

/* The experts of A then B, as one list: held (ea, eb), or read one at a time
 * from their files (sa, sb: a layer too large to hold), the last one read kept. */
typedef struct {
    const moe_expert *ea, *eb;
    int na, nb;
    const expert_source *sa, *sb; /* read set: streamed */
    const moe_config *c;
    float *buf;                   /* one streamed expert, carved into cur */
    moe_expert cur;
    int cur_x;                    /* the expert in buf, -1: none */
    unsigned cur_parts;           /* its parts read (EXPERT_W1 ...) */
    uint64_t *hash;               /* (na+nb, 3) of each streamed expert's parts, 0: not yet */
    int views;                    /* streamed experts read where their mapped layers keep them (pool_views) */
    int failed;                   /* a read failed: err says why */
    ms_err *err;
    const cost_tuning *t;         /* the side and block size (defaults filled in) */
} pool;

static int streamed(const pool *p, int x) {
    const expert_source *s = x < p->na ? p->sa : p->sb;
    return s && s->read;
}

/* Weight matrix q (0 fc1, 1 fc2, 2 fc3) of expert e as the products read it: its
 * floats, else where a mapped layer keeps it in float32 (*tr: stored transposed,
 * GPT-2's Conv1D; pool_views checked it is whole and contiguous) */
static const float *wmat(const moe_expert *e, int q, int *tr) {
    const float *f = q == 0 ? e->fc1_w : q == 1 ? e->fc2_w : e->fc3_w;
    const wref *w = q == 0 ? &e->w1 : q == 1 ? &e->w2 : &e->w3;
    *tr = f ? 0 : w->tr;
    return f ? f : (const float *)w->p;
}

/* Can the products read weight w (rows, cols) where it lies: float32, a plain
 * matrix stored as it is or transposed, rows (or columns) one after another? */
static int view_ok(const wref *w, size_t rows, size_t cols) {
    if (!w->p || w->dt != WP_F32 || w->rows || w->cols || w->b) return 0;
    return w->tr ? w->rs <= 1 && w->ld == rows : w->ld == cols;
}

/* a hash of some floats (never 0), to find the candidates for exactly equal experts */
static uint64_t floats_hash(uint64_t hsh, const float *x, size_t k) {
    const unsigned char *p = (const unsigned char *)x;
    size_t bytes = k * sizeof(float), q = 0;
    uint64_t w;
    for (; q + 8 <= bytes; q += 8) {
        memcpy(&w, p + q, 8);
        hsh = (hsh ^ w) * 1099511628211ULL;
    }
    for (; q < bytes; q++) hsh = (hsh ^ p[q]) * 1099511628211ULL;
    return hsh;
}

/* (as stored: the views of one pool share their layout, pool_views) */
static uint64_t part_hash(const moe_expert *e, const moe_config *c, int part) {
    size_t hd = (size_t)c->h * c->d, h = (size_t)c->h, d = (size_t)c->d;
    uint64_t hsh = 1469598103934665603ULL;
    int tr;
    const float *W = wmat(e, part, &tr);
    if (part == 0) hsh = floats_hash(floats_hash(hsh, W, hd), e->fc1_b, h);
    if (part == 1) hsh = floats_hash(floats_hash(hsh, W, hd), e->fc2_b, d);
    if (part == 2 && W) hsh = floats_hash(floats_hash(hsh, W, hd), e->fc3_b, h);
    return hsh ? hsh : 1;
}

/* Expert x with at least the parts named (EXPERT_W1 ...), read into the pool's
 * buffer when streamed (garbage after a failed read: p->failed is set and the
 * caller's result is thrown away); the d side reads only the parts a term needs. */
static const moe_expert *pool_get(pool *p, int x, unsigned parts) {
    if (!streamed(p, x)) return x < p->na ? &p->ea[x] : &p->eb[x - p->na];
    if (p->cur_x == x && (p->cur_parts & parts) == parts) return &p->cur;
    if (!p->buf) {
        p->buf = ms_malloc(moe_expert_size(p->c) * sizeof(float));
        moe_expert_carve(&p->cur, p->c, p->buf);
    }
    const expert_source *s = x < p->na ? p->sa : p->sb;
    p->cur_x = -1;
    if (!p->failed && s->read(s->ctx, x < p->na ? x : x - p->na, parts, &p->cur, p->err)) p->failed = 1;
    if (p->failed) return &p->cur;
    p->cur_x = x, p->cur_parts = parts;
    for (int q = 0; q < 3; q++)
        if ((parts >> q & 1) && !p->hash[3 * x + q]) p->hash[3 * x + q] = part_hash(&p->cur, p->c, q);
    return &p->cur;
}

static const moe_expert *pool_at(pool *p, int x) { return pool_get(p, x, EXPERT_ALL); }

/* streamed expert x of a pool of views: its mapped layer's own (weights where they lie) */
static const moe_expert *pool_view(const pool *p, int x) {
    const expert_source *s = x < p->na ? p->sa : p->sb;
    return &((const moe_model *)s->ctx)->experts[x < p->na ? x : x - p->na];
}

/* Expert x with the parts named for the products: a view where the pool has them
 * (no hashes: pool_equal compares views where they lie), else pool_get */
static const moe_expert *pool_parts(pool *p, int x, unsigned parts) {
    return streamed(p, x) && p->views ? pool_view(p, x) : pool_get(p, x, parts);
}

/* 1 when every streamed expert is a mapped layer's (moe_mapped_read) whose weights
 * the products can read where they lie (view_ok), all in one layout: no expert is
 * copied, and the views' bytes compare as their floats do */
static int pool_views(const pool *p) {
    int tr[3] = {-1, -1, -1}, any = 0;
    size_t h = (size_t)p->c->h, d = (size_t)p->c->d;
    for (int x = 0; x < p->na + p->nb; x++) {
        if (!streamed(p, x)) continue;
        const expert_source *s = x < p->na ? p->sa : p->sb;
        if (s->read != moe_mapped_read) return 0;
        const moe_expert *e = pool_view(p, x);
        const wref *w[3] = {&e->w1, &e->w2, &e->w3};
        for (int q = 0; q < (is_glu(p->c) ? 3 : 2); q++) {
            if (!view_ok(w[q], q == 1 ? d : h, q == 1 ? h : d) || (tr[q] >= 0 && tr[q] != w[q]->tr)) return 0;
            tr[q] = w[q]->tr;
        }
        any = 1;
    }
    return any;
}

/* Are experts a_i and b_j bit for bit equal (a streamed pair: their parts'
 * hashes, then their floats)? */
static int pool_equal(pool *p, int i, int j) {
    size_t per = moe_expert_size(p->c);
    int x = p->na + j;
    if (!streamed(p, i) && !streamed(p, x)) return !memcmp(p->ea[i].fc1_w, p->eb[j].fc1_w, per * sizeof(float));
    for (int q = 0; q < 3; q++) {
        uint64_t ha = streamed(p, i) ? p->hash[3 * i + q] : 0, hb = streamed(p, x) ? p->hash[3 * x + q] : 0;
        if (ha && hb && ha != hb) return 0;
    }
    if (p->views && streamed(p, i) && streamed(p, x)) { // one layout: their stored floats
        const moe_expert *a = pool_view(p, i), *b = pool_view(p, x);
        size_t hd = (size_t)p->c->h * p->c->d, h = (size_t)p->c->h, d = (size_t)p->c->d;
        for (int q = 0; q < (is_glu(p->c) ? 3 : 2); q++) {
            int ta, tb;
            if (memcmp(wmat(a, q, &ta), wmat(b, q, &tb), hd * sizeof(float))) return 0;
        }
        return !memcmp(a->fc1_b, b->fc1_b, h * sizeof(float)) && !memcmp(a->fc2_b, b->fc2_b, d * sizeof(float)) &&
               (!is_glu(p->c) || !memcmp(a->fc3_b, b->fc3_b, h * sizeof(float)));
    }
    float *keep = ms_malloc(per * sizeof(float));
    memcpy(keep, pool_at(p, i)->fc1_w, per * sizeof(float));
    int eq = !memcmp(keep, pool_at(p, x)->fc1_w, per * sizeof(float));
    free(keep);
    return eq && !p->failed;
}

/* d-side terms: 0 W1^T W1, 1 W2 W2^T + b2 b2^T, 2 W3^T W3, 3 W1^T W3 (glu only). */
static int term_count(const moe_config *c) { return is_glu(c) ? 4 : 2; }
static int term_sym(int t) { return t != 3; }

/* Rows [r0, r0+m) of X^T X, columns [r0, d), into F (m, w = d - r0), X (h, d) stored
 * as it is (xt 0) or transposed (xt 1, (d, h)): on and above the diagonal only, its
 * square (m, m) by one SYRK (the triangle's flops, at the GEMM's rate), the rest by
 * a GEMM; F's entries below the diagonal are left as they were (weigh_block skips
 * them). */
static void gram_rows(const float *X, int xt, int h, int d, int r0, int m, float *F) {
    int w = d - r0;
    if (xt) {
        const float *R = X + (size_t)r0 * h; // rows [r0, d) of the stored (d, h)
        cblas_ssyrk(CblasRowMajor, CblasUpper, CblasNoTrans, m, h, 1.0f, R, h, 0.0f, F, w);
        if (w > m)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, w - m, h, 1.0f, R, h, R + (size_t)m * h, h, 0.0f,
                        F + m, w);
        return;
    }
    cblas_ssyrk(CblasRowMajor, CblasUpper, CblasTrans, m, h, 1.0f, X + r0, d, 0.0f, F, w);
    if (w > m)
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, w - m, h, 1.0f, X + r0, d, X + r0 + m, d, 0.0f,
                    F + m, w);
}

/* Rows [r0, r0+m) of term t of expert e, columns [c0, d): F (m, w = d - c0); a
 * symmetric term (c0 = r0) on and above its diagonal (gram_rows). The weights
 * are read where they lie, in either layout (wmat). */
static void term_block(const moe_expert *e, const moe_config *c, int t, int r0, int m, int c0, float *F) {
    int d = c->d, h = c->h, w = d - c0, tx, ty;
    if (t == 3) { // W1^T W3 (h,d)^T (h,d): whole rows; a transposed one's columns are its stored rows
        const float *X = wmat(e, 0, &tx), *Y = wmat(e, 2, &ty);
        cblas_sgemm(CblasRowMajor, tx ? CblasNoTrans : CblasTrans, ty ? CblasTrans : CblasNoTrans, m, w, h, 1.0f,
                    tx ? X + (size_t)r0 * h : X + r0, tx ? h : d, ty ? Y + (size_t)c0 * h : Y + c0, ty ? h : d, 0.0f,
                    F, w);
        return;
    }
    const float *X = wmat(e, t == 1 ? 1 : t == 2 ? 2 : 0, &tx);
    if (t != 1) {
        gram_rows(X, tx, h, d, r0, m, F);
        return;
    }
    gram_rows(X, !tx, h, d, r0, m, F); // W2 W2^T = X^T X with X = W2^T (h, d): stored transposed when W2 is not
    const float *b = e->fc2_b + r0;    // + b2 b2^T
    for (int i = 0; i < m; i++) cblas_saxpy(w - i, b[i], b + i, 1, F + (size_t)i * w + i, 1);
}

/* The vectors and scalars of G1 (everything but its d x d terms), weighted. */
static void small_terms(const moe_expert *e, const moe_config *c, double *v, float *tmp) {
    int d = c->d, h = c->h, glu = is_glu(c);
    int np = glu ? 2 : 1, k = 0, tr[2] = {0, 0};
    const float *W[2] = {wmat(e, 0, &tr[0]), glu ? wmat(e, 2, &tr[1]) : NULL}, *b[2] = {e->fc1_b, e->fc3_b};
    for (int p = 0; p < np; p++)
        for (int q = 0; q < np; q++) { // W_p^T b_q (d), stands for two entries of G1
            if (tr[p]) cblas_sgemv(CblasRowMajor, CblasNoTrans, d, h, 1.0f, W[p], h, b[q], 1, 0.0f, tmp, 1);
            else cblas_sgemv(CblasRowMajor, CblasTrans, h, d, 1.0f, W[p], d, b[q], 1, 0.0f, tmp, 1);
            for (int j = 0; j < d; j++) v[k++] = M_SQRT2 * tmp[j];
        }
    for (int p = 0; p < np; p++)
        for (int q = p; q < np; q++) {
            double t = 0.0;
            for (int u = 0; u < h; u++) t += (double)b[p][u] * b[q][u];
            v[k++] = (p == q ? 1.0 : M_SQRT2) * t;
        }
}

static int small_len(const moe_config *c) { return is_glu(c) ? 4 * c->d + 3 : c->d + 1; }

/* Entries of rows [r0, r0+m) of term t a block holds: a symmetric term's on and
 * above the diagonal (row r0+i from column r0+i on), the others' whole rows. */
static size_t block_len(const moe_config *c, int t, int r0, int m) {
    size_t w = (size_t)(c->d - r0), k = (size_t)m;
    return term_sym(t) ? k * w - k * (k - 1) / 2 : k * (size_t)c->d;
}

/* The largest first block of any term (the one V is sized for), m rows. */
static size_t first_len(const moe_config *c, int m) { return block_len(c, is_glu(c) ? 3 : 0, 0, m); }

/* Rows of a d x d term formed at once for nx experts: their blocks (in double)
 * and one expert's in float32 fit t->block_bytes, and at most a quarter of the
 * inputs' own size (a small layer gets a small block; a GPT-2-sized one, h = 4d,
 * its whole triangles: one SYRK an expert). The diagonal's squares are SYRKs, so
 * the flops are the triangle's whatever the height; fewer, taller blocks run at
 * a better rate (a short GEMM re-packs its wide operand for every call). */
static double block_cap(const moe_config *c, int nx, const cost_tuning *t) {
    double input = 4.0 * nx * (double)moe_expert_size(c), cap = t->block_bytes;
    if (t->side == 0 && cap > input / 4) cap = input / 4 > 4e6 ? input / 4 : 4e6;
    return cap;
}

static int block_rows(const moe_config *c, int nx, const cost_tuning *t) {
    double cap = block_cap(c, nx, t);
    int lo = 1, hi = c->d; // the largest m whose block fits (1 when none does)
    while (lo < hi) {
        int m = lo + (hi - lo + 1) / 2;
        if (8.0 * nx * (double)first_len(c, m) + 4.0 * m * c->d <= cap) lo = m;
        else hi = m - 1;
    }
    return lo;
}

/* Blocks of block_rows rows held at once when experts are read from their files
 * (dside_dist2_read): as many of the first (largest) as the same cap holds. */
static int group_blocks(const moe_config *c, int nx, const cost_tuning *t) {
    int rb = block_rows(c, nx, t), nblk = (c->d + rb - 1) / rb;
    int G = (int)(block_cap(c, nx, t) / (8.0 * nx * (double)first_len(c, rb)));
    return G < 1 ? 1 : G > nblk ? nblk : G;
}

/* The pool's two sides are one set of experts held in memory (a checkpoint against
 * itself: the diagnostics' distances): the second side's terms are the first's. */
static int pool_self(const pool *P) {
    return P->ea == P->eb && P->na == P->nb && !streamed(P, 0) && !streamed(P, P->na);
}

/* One block of a d-side term for every expert: V's row x (the weighted block) and
 * norm[x] for expert x. */
typedef struct {
    pool *P;
    const moe_config *c;
    int t, r0, m, c0, w;
    size_t L;    /* block_len */
    double *V, *norm;
    float **F;   /* (threads) one expert's block (rb, d) each */
} dside_job;

/* v (block_len) = term t's block F (m, w) weighted, a symmetric term's entries on
 * and above the diagonal only (1 on it, sqrt 2 above: an entry that stands for
 * two); returns |v|^2 */
static double weigh_block(int t, int m, int w, const float *F, double *v) {
    size_t k = 0;
    for (int i = 0; i < m; i++) {
        const float *f = F + (size_t)i * w;
        int j = 0;
        if (term_sym(t)) v[k++] = f[i], j = i + 1;
        for (; j < w; j++) v[k++] = M_SQRT2 * f[j];
    }
    return sumsq(v, k);
}

static const unsigned term_need[4] = {EXPERT_W1, EXPERT_W2, EXPERT_W3, EXPERT_W1 | EXPERT_W3};

static void dside_expert(void *ctx, int x, int slot) {
    const dside_job *J = ctx;
    int t = J->t, m = J->m, w = J->w;
    double *v = J->V + (size_t)x * J->L;
    float *F = J->F[slot];
    term_block(pool_parts(J->P, x, term_need[t]), J->c, t, J->r0, m, J->c0, F);
    J->norm[x] += weigh_block(t, m, w, F, v);
}

/* ---- d side of experts read from their files (streamed, or a mapped layer's
 * decoded): each expert's parts read once per group of blocks, not once per block.
 * A group is as many blocks as fit the budget (cost_tuning.block_bytes) for every
 * expert at once; block b of the group is an (nx, L_b) matrix of V, and the
 * products, the weights, the norms' sums and the distances' GEMMs come in the
 * same order as block by block: the same bits. A mapped layer's reads are pure,
 * so its experts are read and formed on blas_par_for's threads, one expert a
 * thread, each into its own buffer. */
typedef struct {
    pool *P;
    const moe_config *c;
    int t, b0, b1, rb;  /* term, blocks [b0, b1) of rb rows */
    double *V, *norm;
    float **F, **buf;   /* (threads) a block (rb, d), an expert's floats */
    ms_err *errs;       /* (threads) */
    atomic_int failed;
} dgroup_job;

static int block_width(const moe_config *c, int t, int r0) { return term_sym(t) ? c->d - r0 : c->d; }

static void dgroup_expert(void *ctx, int x, int slot) {
    dgroup_job *J = ctx;
    pool *P = J->P;
    const moe_config *c = J->c;
    int t = J->t, nx = P->na + P->nb;
    const moe_expert *e;
    moe_expert cur = {0}; // no weight views: a reader checks the floats it was given
    if (streamed(P, x) && P->views) {
        e = pool_parts(P, x, term_need[t]);
    } else if (streamed(P, x)) {
        const expert_source *src = x < P->na ? P->sa : P->sb;
        moe_expert_carve(&cur, c, J->buf[slot]);
        if (src->read(src->ctx, x < P->na ? x : x - P->na, term_need[t], &cur, &J->errs[slot])) {
            atomic_store(&J->failed, slot + 1);
            return;
        }
        for (int q = 0; q < 3; q++) // only this item writes expert x's hashes
            if ((term_need[t] >> q & 1) && !P->hash[3 * x + q]) P->hash[3 * x + q] = part_hash(&cur, c, q);
        e = &cur;
    } else {
        e = x < P->na ? &P->ea[x] : &P->eb[x - P->na];
    }
    size_t off = 0;
    for (int b = J->b0; b < J->b1; b++) {
        int r0 = b * J->rb, m = c->d - r0 < J->rb ? c->d - r0 : J->rb, c0 = term_sym(t) ? r0 : 0;
        int w = block_width(c, t, r0);
        size_t L = block_len(c, t, r0, m);
        term_block(e, c, t, r0, m, c0, J->F[slot]);
        J->norm[x] += weigh_block(t, m, w, J->F[slot], J->V + off + (size_t)x * L);
        off += (size_t)nx * L;
    }
}

static int pool_par_reads(const pool *P) {
    return (!P->sa || !P->sa->read || P->sa->read == moe_mapped_read) &&
           (!P->sb || !P->sb->read || P->sb->read == moe_mapped_read);
}

static void dside_dist2_read(pool *P, const moe_config *c, double *dist2) {
    int d = c->d, nx = P->na + P->nb, rb = block_rows(c, nx, P->t), nblk = (d + rb - 1) / rb;
    int G = group_blocks(c, nx, P->t);
    int nt = pool_par_reads(P) ? blas_par_threads(nx) : 1;
    double *V = ms_malloc((size_t)G * nx * first_len(c, rb) * sizeof(double)); // G blocks of (nx, L)
    float *F[BLAS_PAR_MAX], *buf[BLAS_PAR_MAX];
    ms_err errs[BLAS_PAR_MAX];
    for (int k = 0; k < nt; k++) {
        F[k] = ms_malloc((size_t)rb * d * sizeof(float));                 // (rb, d)
        buf[k] = ms_malloc(moe_expert_size(c) * sizeof(float));           // one expert
    }
    double *norm = ms_calloc((size_t)nx, sizeof(double));
    const atomic_int *cancel = progress_cancel_flag();
    if (nt > 1) blas_single_enter(); // every product below runs whole on one thread
    for (int t = 0; t < term_count(c) && !progress_cancelled() && !P->failed; t++)
        for (int b0 = 0; b0 < nblk && !progress_cancelled() && !P->failed; b0 += G) {
            dgroup_job J = {.P = P, .c = c, .t = t, .b0 = b0, .b1 = b0 + G < nblk ? b0 + G : nblk, .rb = rb,
                            .V = V, .norm = norm, .F = F, .buf = buf, .errs = errs};
            atomic_init(&J.failed, 0);
            if (nt > 1) blas_par_for(nx, nt, dgroup_expert, &J, cancel);
            else
                for (int x = 0; x < nx && !progress_cancelled() && !atomic_load(&J.failed); x++) dgroup_expert(&J, x, 0);
            int f = atomic_load(&J.failed);
            if (f) {
                *P->err = errs[f - 1];
                P->failed = 1;
            }
            if (f || progress_cancelled()) break; // the caller discards dist2
            size_t off = 0;
            for (int b = J.b0; b < J.b1; b++) {
                int r0 = b * rb, m = d - r0 < rb ? d - r0 : rb;
                size_t L = block_len(c, t, r0, m);
                progress_add(2.0 * c->h * (double)L / 1e9 * nx);
                // dist2 (na, nb) -= 2 Va (na, L) Vb^T (L, nb), one thread (as dside_dist2)
                blas_single_enter();
                cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P->na, P->nb, (int)L, -2.0, V + off, (int)L,
                            V + off + (size_t)P->na * L, (int)L, 1.0, dist2, P->nb);
                blas_single_leave();
                off += (size_t)nx * L;
            }
        }
    if (nt > 1) blas_single_leave();
    for (int i = 0; i < P->na; i++)
        for (int j = 0; j < P->nb; j++) dist2[(size_t)i * P->nb + j] += norm[i] + norm[P->na + j];
    free(V);
    for (int k = 0; k < nt; k++) free(F[k]), free(buf[k]);
    free(norm);
}

/* d side: dist2 (na, nb) += the distances of every term. Held experts are formed
 * on blas_par_for's threads, one expert a thread (the same products, the same
 * bits, as one after another); streamed ones share the pool's one buffer: in turn. */
static void dside_dist2(pool *P, const moe_config *c, double *dist2) {
    if (streamed(P, 0) || streamed(P, P->na + P->nb - 1)) {
        dside_dist2_read(P, c, dist2);
        return;
    }
    int d = c->d, nx = P->na + P->nb, rb = block_rows(c, nx, P->t);
    int self = pool_self(P), formed = self ? P->na : nx; // experts whose blocks are formed
    int nt = streamed(P, 0) || streamed(P, nx - 1) ? 1 : blas_par_threads(formed);
    double *V = ms_malloc((size_t)nx * first_len(c, rb) * sizeof(double)); // (nx, L) one block of terms
    float *F[BLAS_PAR_MAX];
    for (int k = 0; k < nt; k++) F[k] = ms_malloc((size_t)rb * d * sizeof(float)); // (rb, d) one expert's block
    double *norm = ms_calloc((size_t)nx, sizeof(double));
    const atomic_int *cancel = progress_cancel_flag(); // the explorer's q: between experts
    if (nt > 1) blas_single_enter(); // every product below runs whole on one thread
    for (int t = 0; t < term_count(c) && !progress_cancelled(); t++)
        for (int r0 = 0; r0 < d && !progress_cancelled(); r0 += rb) {
            int m = d - r0 < rb ? d - r0 : rb, c0 = term_sym(t) ? r0 : 0, w = d - c0;
            size_t L = block_len(c, t, r0, m);
            dside_job J = {P, c, t, r0, m, c0, w, L, V, norm, F};
            if (nt > 1) blas_par_for(formed, nt, dside_expert, &J, cancel);
            else
                for (int x = 0; x < formed && !progress_cancelled(); x++) dside_expert(&J, x, 0);
            if (progress_cancelled()) break; // the caller discards dist2
            for (int x = formed; x < nx; x++) { // the same expert's block, formed already
                double *v = V + (size_t)x * L;
                memcpy(v, V + (size_t)(x - P->na) * L, L * sizeof(double));
                norm[x] += sumsq(v, L);
            }
            progress_add(2.0 * c->h * (double)L / 1e9 * formed);
            // dist2 (na, nb) -= 2 Va (na, L) Vb^T (L, nb): a skinny product whose threads
            // would only wait for each other (badly so on a busy machine): one thread
            blas_single_enter();
            cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, P->na, P->nb, (int)L, -2.0, V, (int)L,
                        V + (size_t)P->na * L, (int)L, 1.0, dist2, P->nb);
            blas_single_leave();
        }
    if (nt > 1) blas_single_leave();
    for (int i = 0; i < P->na; i++)
        for (int j = 0; j < P->nb; j++) dist2[(size_t)i * P->nb + j] += norm[i] + norm[P->na + j];
    free(V);
    for (int k = 0; k < nt; k++) free(F[k]);
    free(norm);
}

/* One expert in double, carved from mem (3hd + 2h + d doubles). */
typedef struct {
    double *w1, *b1, *w3, *b3, *w2, *b2;
} dexpert;

static void dexpert_fill(dexpert *x, const moe_expert *e, const moe_config *c, double *mem) {
    size_t hd = (size_t)c->h * c->d, h = (size_t)c->h, d = (size_t)c->d;
    x->w1 = mem, x->b1 = mem + hd, x->w2 = mem + hd + h, x->b2 = x->w2 + hd;
    x->w3 = x->b2 + d, x->b3 = x->w3 + hd;
    for (size_t i = 0; i < hd; i++) x->w1[i] = e->fc1_w[i], x->w2[i] = e->fc2_w[i];
    for (size_t i = 0; i < h; i++) x->b1[i] = e->fc1_b[i];
    for (size_t i = 0; i < d; i++) x->b2[i] = e->fc2_b[i];
    if (!is_glu(c)) return;
    for (size_t i = 0; i < hd; i++) x->w3[i] = e->fc3_w[i];
    for (size_t i = 0; i < h; i++) x->b3[i] = e->fc3_b[i];
}

/* |At_x At_y^T|_F^2 + |Bt_x^T Bt_y|_F^2 through S ((h+1)^2 doubles). */
static double hside_cross(const dexpert *x, const dexpert *y, const moe_config *c, double *S) {
    int h = c->h, d = c->d;
    // S (h,h) = W1x W1y^T + b1x b1y^T [+ W3x W3y^T + b3x b3y^T]
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, h, d, 1.0, x->w1, d, y->w1, d, 0.0, S, h);
    cblas_dger(CblasRowMajor, h, h, 1.0, x->b1, 1, y->b1, 1, S, h);
    if (is_glu(c)) {
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, h, h, d, 1.0, x->w3, d, y->w3, d, 1.0, S, h);
        cblas_dger(CblasRowMajor, h, h, 1.0, x->b3, 1, y->b3, 1, S, h);
    }
    double t = sumsq(S, (size_t)h * h);
    // Bt_x^T Bt_y ((h+1),(h+1)): W2x^T W2y, W2x^T b2y, b2x^T W2y, b2x.b2y
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, h, h, d, 1.0, x->w2, h, y->w2, h, 0.0, S, h);
    t += sumsq(S, (size_t)h * h);
    cblas_dgemv(CblasRowMajor, CblasTrans, d, h, 1.0, x->w2, h, y->b2, 1, 0.0, S, 1);
    t += sumsq(S, (size_t)h);
    cblas_dgemv(CblasRowMajor, CblasTrans, d, h, 1.0, y->w2, h, x->b2, 1, 0.0, S, 1);
    t += sumsq(S, (size_t)h);
    double bb = cblas_ddot(d, x->b2, 1, y->b2, 1);
    return t + bb * bb;
}

/* h side: dist2 (na, nb) = every distance. */
static void hside_dist2(pool *P, const moe_config *c, double *dist2) {
    size_t per = 3 * (size_t)c->h * c->d + 2 * (size_t)c->h + (size_t)c->d;
    double *ma = ms_malloc(per * sizeof(double)), *mb = ms_malloc(per * sizeof(double));
    double *S = ms_malloc((size_t)(c->h + 1) * (c->h + 1) * sizeof(double));
    double *self = ms_malloc((size_t)(P->na + P->nb) * sizeof(double));
    double unit = (is_glu(c) ? 6.0 : 4.0) * c->h * (double)c->h * c->d / 1e9;
    dexpert xa, xb;
    for (int x = 0; x < P->na + P->nb; x++) {
        dexpert_fill(&xa, pool_at(P, x), c, ma);
        self[x] = hside_cross(&xa, &xa, c, S);
        progress_add(unit);
    }
    for (int i = 0; i < P->na && !progress_cancelled(); i++) {
        dexpert_fill(&xa, pool_at(P, i), c, ma);
        for (int j = 0; j < P->nb; j++) {
            dexpert_fill(&xb, pool_at(P, P->na + j), c, mb);
            double t = hside_cross(&xa, &xb, c, S);
            dist2[(size_t)i * P->nb + j] = self[i] + self[P->na + j] - 2.0 * t;
            progress_add(unit);
        }
    }
    free(ma);
    free(mb);
    free(S);
    free(self);
}

/* Flops (double counted twice) of each side, for the choice and the progress line. */
static double dside_flops(const moe_config *c, int na, int nb) {
    double d = c->d, h = c->h, L = is_glu(c) ? 2.5 * d * d : d * d;
    return (na + nb) * (is_glu(c) ? 5.0 : 2.0) * h * d * d + 4.0 * na * nb * L;
}
static double hside_flops(const moe_config *c, int na, int nb) {
    double d = c->d, h = c->h;
    return 2.0 * ((double)na * nb + na + nb) * (is_glu(c) ? 6.0 : 4.0) * h * h * d;
}

static int pick_hside(const moe_config *c, int na, int nb, const cost_tuning *t) {
    return t->side == 2 || (t->side == 0 && hside_flops(c, na, nb) < dside_flops(c, na, nb));
}

static double expert_flops(const moe_config *c, int na, int nb, const cost_tuning *t) {
    return pick_hside(c, na, nb, t) ? hside_flops(c, na, nb) : dside_flops(c, na, nb);
}

/* Seconds the expert cost would take: its flops at 100 GFLOP/s and, for streamed
 * experts, the floats decoded at 2 GB/s (the d side reads the parts a term needs,
 * 5/12 of an expert on average, once per group of blocks of Gram rows; the h side reads B's
 * expert once per pair). */
double cost_expert_flops(const moe_config *c, int na, int nb) {
    cost_tuning t = tuning_of(NULL);
    return expert_flops(c, na, nb, &t);
}

static double expert_seconds(const moe_config *c, int na, int nb, int streamed,
                             const cost_tuning *t, double *passes) {
    double es = 4.0 * (double)moe_expert_size(c), reads = 0;
    *passes = 0;
    if (streamed && pick_hside(c, na, nb, t)) {
        reads = ((double)na * nb + na + nb) * es;
    } else if (streamed) {
        int rb = block_rows(c, na + nb, t), G = group_blocks(c, na + nb, t), nblk = (c->d + rb - 1) / rb;
        *passes = term_count(c) * (double)((nblk + G - 1) / G);
        reads = *passes * (na + nb) * es * 5.0 / 12.0;
    }
    return expert_flops(c, na, nb, t) / 1e11 + reads / 2e9;
}

static int expert_offered(const moe_config *c, int na, int nb, int streamed, const cost_tuning *t,
                          char *why, size_t cap) {
    double passes, secs = expert_seconds(c, na, nb, streamed, t, &passes);
    if (secs <= COST_EXPERT_MAX_SECONDS) return 1;
    int len = snprintf(why, cap, "the exact expert cost of %d x %d experts (d = %d, h = %d) needs "
                       "%.2g flops on the d side of the Gram products, %.2g on the h side",
                       na, nb, c->d, c->h, dside_flops(c, na, nb), hside_flops(c, na, nb));
    if (passes > 0 && len > 0 && (size_t)len < cap)
        len += snprintf(why + len, cap - (size_t)len,
                        ", and the d side's Gram blocks (at most %.0f MiB) hold %d rows, so the "
                        "experts read from the files would be decoded %.0f times over",
                        t->block_bytes / 1048576.0, block_rows(c, na + nb, t), passes);
    if (len > 0 && (size_t)len < cap)
        snprintf(why + len, cap - (size_t)len,
                 ": about %.0f hours (at 100 GFLOP/s, decoding at 2 GB/s), so it is not offered at "
                 "this size; the gate cost (--method gate) orders the experts by their gate rows",
                 secs / 3600.0);
    return 0;
}

int cost_expert_offered(const moe_config *c, int na, int nb, int streamed, char *why, size_t cap) {
    cost_tuning t = tuning_of(NULL);
    return expert_offered(c, na, nb, streamed, &t, why, cap);
}

double cost_expert_bytes(const moe_config *c, int na, int nb) {
    cost_tuning t = tuning_of(NULL);
    double nx = na + nb, d = c->d, h = c->h;
    if (pick_hside(c, na, nb, &t))
        return 8.0 * (2 * (3 * h * d + 2 * h + d) + (h + 1) * (h + 1) + nx);
    int rb = block_rows(c, na + nb, &t);
    double G = group_blocks(c, na + nb, &t);
    return 8.0 * nx * (double)first_len(c, rb) * G + 4.0 * rb * d + 8.0 * (nx * small_len(c) + nx);
}

/* C (na, nb) expert cost between the experts ea[0..na) and eb[0..nb), or those
 * of the sources sa / sb where they read (streamed: the same numbers, bit for
 * bit, with one expert in memory at a time; the d side reads each expert once
 * per group of blocks of Gram rows and term). */
static int expert_cost(const moe_expert *ea, int na, const moe_expert *eb, int nb,
                       const expert_source *sa, const expert_source *sb, const moe_config *c,
                       const cost_tuning *t, double *C, ms_err *err) {
    pool P = {.ea = ea, .eb = eb, .na = na, .nb = nb, .sa = sa, .sb = sb, .c = c, .cur_x = -1,
              .err = err, .t = t};
    P.hash = ms_calloc((size_t)(na + nb) * 3, sizeof(uint64_t));
    int hside = pick_hside(c, na, nb, t);
    P.views = !hside && pool_views(&P);
    double gemm = (na + nb) * (is_glu(c) ? 5.0 : 2.0) * c->h * (double)c->d * c->d; // sgemm flops
    progress_begin("expert cost", (hside ? hside_flops(c, na, nb) / 2 : gemm) / 1e9, "GFlop");
    if (hside) {
        hside_dist2(&P, c, C);
    } else {
        for (size_t k = 0; k < (size_t)na * nb; k++) C[k] = 0.0;
        dside_dist2(&P, c, C);
        // the vectors and scalars of G1, directly
        int S = small_len(c);
        double *v = ms_malloc((size_t)(na + nb) * S * sizeof(double));
        float *tmp = ms_malloc((size_t)c->d * sizeof(float));
        blas_single_enter(); // matrix-vector products: memory-bound, one thread
        for (int x = 0; x < na + nb; x++)
            small_terms(pool_parts(&P, x, EXPERT_W1 | EXPERT_W3), c, v + (size_t)x * S, tmp);
        blas_single_leave();
        for (int i = 0; i < na; i++)
            for (int j = 0; j < nb; j++) {
                const double *p = v + (size_t)i * S, *q = v + (size_t)(na + j) * S;
                double s2 = 0.0;
                for (int k = 0; k < S; k++) s2 += (p[k] - q[k]) * (p[k] - q[k]);
                C[(size_t)i * nb + j] += s2;
            }
        free(v);
        free(tmp);
    }
    progress_end();
    for (int i = 0; i < na; i++)
        for (int j = 0; j < nb; j++) {
            double *x = &C[(size_t)i * nb + j];
            // equal experts (an expert compared with itself) cost exactly 0
            if (!P.failed && pool_equal(&P, i, j)) *x = 0.0;
            *x = *x > 0 ? sqrt(*x) : 0.0;
        }
    free(P.buf);
    free(P.hash);
    return P.failed ? -1 : 0;
}

int cost_gate(const cost_input *in, double *C, ms_err *err) {
    // centring removes a common translation: meaningful only where it is a
    // symmetry (softmax scores); a sigmoid router's gate rows are compared as they are
    gate_cost(in->A, in->B, in->center && moe_gate_centring_valid(&in->A->cfg), C);
    return 0;
}

int cost_expert(const cost_input *in, double *C, ms_err *err) {
    const moe_model *A = in->A, *B = in->B;
    const expert_source *sa = in->sa, *sb = in->sb;
    cost_tuning t = tuning_of(in->tuning);
    char why[600];
    if (!expert_offered(&A->cfg, A->cfg.n, B->cfg.n, (sa && sa->read) || (sb && sb->read), &t, why,
                        sizeof why))
        return ms_fail(err, "%s and %s: %s", path_or(A, "A"), path_or(B, "B"), why);
    if (expert_cost(A->experts, A->cfg.n, B->experts, B->cfg.n, sa, sb, &A->cfg, &t, C, err)) return -1;
    if (progress_cancelled()) return ms_fail(err, "cancelled"); // a listener's cancel (progress.h)
    return 0;
}

int cost_matrix_shared(const moe_model *A, const moe_model *B, double *C, ms_err *err) {
    if (cost_check_shapes(A, B, err)) return -1;
    moe_config sc = moe_shared_config(&A->cfg); // shared experts have their own width
    cost_tuning t = tuning_of(NULL);
    if (A->cfg.s > 0) return expert_cost(A->shared, A->cfg.s, B->shared, B->cfg.s, NULL, NULL, &sc, &t, C, err);
    return 0;
}
