/* landscape.c - the fast, exact landscape of every expert order (SPEC §5).
 *
 * Work that does not depend on the whole order is done once:
 *   - a pair (slot i, B's expert j) has one weight matching and, for each
 *     interior t, one output of the interpolated expert Y_ij^t (N,d): n^2
 *     pairs, not n!*n experts;
 *   - the gate score of slot i holding B's gate row j at t, S_ij^t (N), for
 *     all n^2 (i,j) in one GEMM per t;
 *   - the shared experts' sum (aligned once, common to all orders), the
 *     residual, the chord (layer-only mode) and the interpolated head per t.
 * An order pi at t then costs only routing, the mix sum_i g_i Y_{i,pi(i)}^t,
 * LayerNorm, the head and the loss: one fused, lane-parallel pass over the
 * samples (eval_orders_t), run for a block of orders at a time so the pair
 * outputs it reads stay in cache.
 *
 * Ranks early: every order is first evaluated at the middle t (usually where
 * the barrier is), which bounds its barrier from below. The chosen orders'
 * curves are finished next, then only the orders whose bound lies below a
 * chosen barrier, and the ranks, L-hat and best barrier are final (on_ranks);
 * the remaining orders are finished afterwards for the full table.
 *
 * Threads: the calling thread coordinates (progress, cancel) while nthreads
 * workers split the items; OpenBLAS runs single-threaded inside them. Y is
 * held for all interior t at once when it fits the memory budget
 * (MOESCOPE_LS_MEM_MB, default 1024); otherwise the t range is processed in
 * chunks (the ranks then come at the end), and when even one t does not fit,
 * each t is processed in chunks of samples, every order's loss sum carried
 * from one chunk to the next. Results do not depend on the chunking or the
 * thread count: every (order, t) value is computed by the same calls on the
 * same data, its per-block sums added in the same order. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "evaluator.h"
#include "landscape.h"
#include "lap.h"
#include "moe_kernels.h"
#include "rank.h"
#include "rng.h"
#include "symmetry.h"

void openblas_set_num_threads(int num_threads);

enum { SH_MAIN = 0, SH_NAIVE = 1, SH_SKIP = 2, SH_COUNT = 3 };
enum { NM_NAIVE = 0, NM_SKIP = 1, NM_GATE = 2, NM_EXPERT = 3, NM_COUNT = 4 };

/* per-thread workspace */
typedef struct {
    float *E;      // (esize) one interpolated expert
    float *H;      // (N, h) hidden
    float *H3;     // (N, h) GLU linear branch
    float *Ye;     // (N, d) one expert's output
    float *Wt;     // (n*n, d) interpolated gate rows for all (i,j)
    float *bt;     // (n*n)
    float *sc;     // (N, n) scores of one order
    float *G;      // (N, n) gate weights of one order
    float *Zb;     // (N, d) the shared experts' sum (precompute)
    float *Sx;     // (N, nn) gate scores (precompute)
    float *hraw;   // (2d + C*d + C) the head at one t (precompute)
    float *z;      // (d, LS_L) kernel: block output
    float *lg;     // (C, LS_L) kernel: logits
} ls_ws;

typedef struct {
    const moe_model *A, *B;
    const evalset *E;
    const moe_config *cfg;
    int n, d, h, N, C, T, nn; /* nn = n*n */
    int nb;          /* sample blocks of LS_L (the kernel's lanes) */
    /* sample chunks (only when one t's pair outputs exceed the budget):
     * blocks [b0, b0+nbn) of at most nbc are held; nsc chunks, cur_sc is the
     * one precomputed (-1: none); sc_last: the current one is the last, so
     * the orders' values are complete */
    int nbc, b0, nbn, nsc, cur_sc, sc_last;
    double *acc_l;   // (norders) loss sums over the chunks so far (nsc > 1)
    long *acc_ok;    // (norders) correct counts likewise
    int32_t *lab8;   // (nb*LS_L) labels, -1 in the padding
    float *tg8;      // (nb, C, LS_L) regression targets
    ls_kind kind;
    size_t esize;
    const ls_opts *o;
    /* shared experts of B per variant (aligned as each named alignment does) */
    const moe_expert *shB[SH_COUNT];
    float *shmem;      // (SH_COUNT, s, esize) their parameters
    moe_expert *shx;   // (SH_COUNT, s)
    /* pairs: p < nn is (i = p/n, j = p%n) with the landscape's WM setting;
     * p = nn + i is (i, i) with the other setting (for naive / skip_order) */
    int npairs;
    /* only the hidden permutations are kept, not permuted copies of B's
     * experts ((n^2+n) copies would be GBs at GPT-2 size): the interpolated
     * expert of a pair is gathered from B's expert on the fly (cheap next to
     * its GEMMs) */
    int *perm;       // (npairs, h) pair p's unit u is B's unit perm[p*h+u]
    int *pj;         // (npairs) B's expert of pair p
    /* chord pieces, layer mode: D_A, D_B (N, d) */
    float *DA, *DB;
    /* the current chunk of interior t indices (1..T-2) */
    int *tidx, ntc, cap_t;
    float *S;        // (cap_t, nb, nn, LS_L)
    float *Y;        // (cap_t, npairs, nb, d, LS_L)
    size_t Ybytes;
    float *base;     // (cap_t, SH_COUNT, nb, d, LS_L)
    float *head;     // (cap_t, head_floats) interpolated head per t, broadcast
    double loss_a, loss_b, acc_a, acc_b;
    /* each order's L(1), Acc(1) (norders each) when B's top-k ties at the k-th
     * score on some input: the reordered B then routes those inputs to other
     * experts than B (ties go to the smaller slot), so L(1) depends on the
     * order; NULL otherwise (every order's L(1) is B's loss) */
    double *lb, *ab;
    int end_chunk;   /* the current chunk is t = 1, filling lb and ab */
    /* orders */
    long norders;
    int exhaustive;
    unsigned char *sampled; // (norders, n) sampled orders
    /* per-order state over the t done so far */
    double *bar, *accb, *auc;
    unsigned char *done;
    int *prog;       /* t of the current chunk done, in chunk order */
    /* threads */
    int nthreads;
    ls_ws *ws;
    volatile int stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    landscape *L;
    long filled;    /* rows written (under mu) */
    double last_phase; /* when o->phase was last called (0: never) */
} lsx;

static int ls_cancelled(lsx *x) {
    if (__atomic_load_n(&x->stop, __ATOMIC_RELAXED)) return 1;
    if (x->o->cancel && __atomic_load_n(x->o->cancel, __ATOMIC_RELAXED)) {
        __atomic_store_n(&x->stop, 1, __ATOMIC_RELAXED);
        return 1;
    }
    return 0;
}

static double ls_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* o->phase, at most every 20 ms (force: also report the end of a phase
 * if anything of it was reported) */
static void ls_phase(lsx *x, const char *what, long done, long total) {
    if (!x->o->phase) return;
    double now = ls_now();
    if (x->last_phase > 0 && now - x->last_phase < 0.02) return;
    x->last_phase = now;
    x->o->phase(x->o->ctx, what, done, total);
}

/* The pair outputs Y are tens of MB written once: with 4 KiB pages the page
 * faults cost more than the GEMMs that fill them (notably in VMs), so they
 * live in an anonymous mapping with transparent huge pages requested. */
static void *big_alloc(size_t bytes) {
    size_t len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        fprintf(stderr, "moescope: out of memory mapping %zu bytes at %s:%d\n", bytes, __FILE__,
                __LINE__);
        exit(3);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, len, MADV_HUGEPAGE);
#endif
    return p;
}

static void big_free(void *p, size_t bytes) {
    if (!p) return;
    size_t len = (bytes + (2u << 20) - 1) & ~(size_t)((2u << 20) - 1);
    munmap(p, len);
}

/* ---------------- orders ---------------- */

static double factorial(int n) {
    double f = 1.0;
    for (int i = 2; i <= n; i++) f *= i;
    return f;
}

/* k-th permutation of 0..n-1 in lexicographic order. */
static void perm_unrank(long k, int n, int *p) {
    int avail[LS_MAX_N];
    for (int i = 0; i < n; i++) avail[i] = i;
    long f = (long)factorial(n - 1);
    for (int i = 0; i < n; i++) {
        long q = f ? k / f : 0;
        if (f) k %= f;
        p[i] = avail[q];
        for (int j = (int)q; j < n - 1 - i; j++) avail[j] = avail[j + 1];
        if (n - 1 - i > 0) f /= n - 1 - i;
    }
}

static long perm_rank(const int *p, int n) {
    long k = 0;
    for (int i = 0; i < n; i++) {
        int smaller = 0;
        for (int j = i + 1; j < n; j++) smaller += p[j] < p[i];
        k = k * (n - i) + smaller;
    }
    return k;
}

static void order_of(const lsx *x, long k, int *p) {
    if (x->exhaustive) {
        perm_unrank(k, x->n, p);
    } else {
        for (int i = 0; i < x->n; i++) p[i] = x->sampled[(size_t)k * x->n + i];
    }
}

/* index of order p among the rows' orders, -1 if not there */
static long order_index(const lsx *x, const int *p) {
    if (x->exhaustive) return perm_rank(p, x->n);
    for (long k = 0; k < x->norders; k++) {
        int i = 0;
        while (i < x->n && x->sampled[(size_t)k * x->n + i] == p[i]) i++;
        if (i == x->n) return k;
    }
    return -1;
}

static uint64_t perm_key(const int *p, int n) {
    uint64_t k = 0;
    for (int i = 0; i < n; i++) k = (k << 4) | (uint64_t)p[i];
    return k;
}

/* nsample distinct uniformly random orders (n >= 10, so n! >> nsample). */
static void sample_orders(lsx *x, long nsample, uint64_t seed) {
    int n = x->n;
    x->sampled = ms_malloc((size_t)nsample * n);
    size_t cap = 1;
    while (cap < (size_t)nsample * 2) cap <<= 1;
    uint64_t *set = ms_calloc(cap, sizeof(uint64_t)); // keys + 1 (0 = empty)
    rng_t r;
    rng_seed(&r, seed);
    int p[LS_MAX_N];
    long got = 0;
    while (got < nsample) {
        rng_permutation(&r, p, n);
        uint64_t key = perm_key(p, n) + 1, hsh = key * 0x9E3779B97F4A7C15ull;
        size_t at = (size_t)(hsh >> 20) & (cap - 1);
        int dup = 0;
        while (set[at]) {
            if (set[at] == key) {
                dup = 1;
                break;
            }
            at = (at + 1) & (cap - 1);
        }
        if (dup) continue;
        set[at] = key;
        for (int i = 0; i < n; i++) x->sampled[(size_t)got * n + i] = (unsigned char)p[i];
        got++;
    }
    free(set);
}

/* ---------------- experts ---------------- */

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
    if (c->act == ACT_SILU_GLU) {
        vlerp(out->fc3_w, a->fc3_w, b->fc3_w, h * d, t);
        vlerp(out->fc3_b, a->fc3_b, b->fc3_b, h, t);
    }
}

/* out = (1-t) a + t b', where b' is b with its hidden units permuted by P
 * (unit u of b' is unit P[u] of b, as moe_expert_permute_hidden): the same
 * float arithmetic as expert_lerp on a permuted copy, without the copy. */
static void expert_lerp_perm(moe_expert *out, const moe_expert *a, const moe_expert *b,
                             const int *P, const moe_config *c, double t) {
    size_t h = (size_t)c->h, d = (size_t)c->d;
    float ta = (float)(1.0 - t), tb = (float)t;
    // W1 (h, d), W3 (h, d): row u from b's row P[u]; b1, b3 likewise
    for (size_t u = 0; u < h; u++) {
        size_t pu = (size_t)P[u];
        vlerp(out->fc1_w + u * d, a->fc1_w + u * d, b->fc1_w + pu * d, d, t);
        out->fc1_b[u] = ta * a->fc1_b[u] + tb * b->fc1_b[pu];
        if (c->act == ACT_SILU_GLU) {
            vlerp(out->fc3_w + u * d, a->fc3_w + u * d, b->fc3_w + pu * d, d, t);
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

/* ---------------- chunk precompute ---------------- */

/* Everything the per-order kernel reads is stored "lane-major": samples in
 * blocks of LS_L, and within a block a value for every sample side by side,
 * e.g. Y of one pair at one t is (nb, d, LS_L). The kernel then computes
 * LS_L samples at once with plain vector arithmetic (one sample per lane) and
 * never reduces across a vector. The last block is padded with zeros and its
 * padding lanes are left out of every sum. */
#define LS_L 8

/* per t: the head pre-broadcast, H8 (Cp, d, LS_L) with H8[c][q][:] =
 * W[c][q] * gamma[q] (LayerNorm's scale folded in), then c' (Cp) = b +
 * W beta (its shift folded in); without a norm, W and b as they are. The
 * classes are padded with zero rows to Cp, a multiple of 4 (the kernel's
 * four-class passes). */
static int ls_cpad(const lsx *x) { return (x->C + 3) / 4 * 4; }
static size_t head_floats(const lsx *x) {
    if (x->kind == LS_LAYER) return 0;
    return (size_t)ls_cpad(x) * x->d * LS_L + (size_t)ls_cpad(x);
}

/* lane arrays hold the current sample chunk (all blocks unless chunked) */
static size_t lane_floats(const lsx *x, int width) { return (size_t)x->nbc * width * LS_L; }

static float *Y_at(const lsx *x, int tc, int p) { // (nb, d, LS_L)
    return x->Y + ((size_t)tc * x->npairs + p) * lane_floats(x, x->d);
}
static float *base_at(const lsx *x, int tc, int v) { // (nb, d, LS_L)
    return x->base + ((size_t)tc * SH_COUNT + v) * lane_floats(x, x->d);
}
static float *S_at(const lsx *x, int tc) { // (nb, nn, LS_L)
    return x->S + (size_t)tc * lane_floats(x, x->nn);
}

/* dst (nb, width, LS_L) from src (N, width), zero padding; read in order */
static void to_lanes(float *dst, const float *src, int N, int width, int nb) {
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

/* Sample-dependent GEMMs run on panels of LS_PANEL rows at fixed offsets in
 * the evaluation set, so a sample's numbers are the same whether its chunk
 * holds all samples or a few panels (OpenBLAS's result for a row may depend
 * on the row count of the call). Sample chunks are whole panels. */
#define LS_PANEL 64

/* Y (N, d) = E(X) for X (N, d), panel by panel */
static void expert_apply_panels(const moe_expert *e, const moe_config *c, const float *X, int N,
                                ls_ws *w, float *Y) {
    for (int r = 0; r < N; r += LS_PANEL) {
        int np = N - r < LS_PANEL ? N - r : LS_PANEL;
        moe_expert_forward(e, c, X + (size_t)r * c->d, np, w->H, w->H3, Y + (size_t)r * c->d);
    }
}

/* item < ntc*npairs: one pair output; the rest: per-t common parts */
static void pre_item(lsx *x, int tid, long item) {
    ls_ws *w = &x->ws[tid];
    const moe_config *c = x->cfg;
    // the current sample chunk: rows [r0, r0+N) of the evaluation set
    int r0 = x->b0 * LS_L, d = x->d, n = x->n;
    int N = x->N - r0 < x->nbn * LS_L ? x->N - r0 : x->nbn * LS_L;
    const float *X = x->E->inputs + (size_t)r0 * d; // (N, d)
    long npi = (long)x->ntc * x->npairs;
    if (item < npi) {
        int tc = (int)(item / x->npairs), p = (int)(item % x->npairs);
        double t = ls_t(x->tidx[tc], x->T);
        int i = p < x->nn ? p / n : p - x->nn;
        moe_expert e;
        moe_expert_carve(&e, c, w->E);
        expert_lerp_perm(&e, &x->A->experts[i], &x->B->experts[x->pj[p]],
                         x->perm + (size_t)p * x->h, c, t);
        expert_apply_panels(&e, c, X, N, w, w->Ye);
        to_lanes(Y_at(x, tc, p), w->Ye, N, d, x->nbn);
        return;
    }
    int tc = (int)(item - npi);
    double t = ls_t(x->tidx[tc], x->T);
    float ta = (float)(1.0 - t), tb = (float)t;
    // gate scores of every (slot i, B row j): S (N, nn) = X (N, d) Wt^T + bt, Wt is (nn, d)
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            vlerp(w->Wt + (size_t)(i * n + j) * d, x->A->gate_w + (size_t)i * d,
                  x->B->gate_w + (size_t)j * d, (size_t)d, t);
            w->bt[i * n + j] = ta * x->A->gate_b[i] + tb * x->B->gate_b[j];
        }
    float *S = w->Sx; // (N, nn)
    for (int r = 0; r < N; r += LS_PANEL) {
        int np = N - r < LS_PANEL ? N - r : LS_PANEL;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, np, x->nn, d, 1.0f, X + (size_t)r * d,
                    d, w->Wt, d, 0.0f, S + (size_t)r * x->nn, x->nn);
    }
    for (int r = 0; r < N; r++)
        for (int q = 0; q < x->nn; q++) S[(size_t)r * x->nn + q] += w->bt[q];
    to_lanes(S_at(x, tc), S, N, x->nn, x->nbn);
    // shared experts' sum per variant, plus the residual (head) or minus the chord (layer)
    for (int v = 0; v < SH_COUNT; v++) {
        float *bs = w->Zb; // (N, d)
        memset(bs, 0, (size_t)N * d * sizeof(float));
        for (int j = 0; j < c->s; j++) {
            moe_expert e;
            moe_expert_carve(&e, c, w->E);
            expert_lerp(&e, &x->A->shared[j], &x->shB[v][j], c, t);
            expert_apply_panels(&e, c, X, N, w, w->Ye);
            for (size_t q = 0; q < (size_t)N * d; q++) bs[q] += w->Ye[q];
        }
        if (x->kind == LS_LAYER) {
            const float *DA = x->DA + (size_t)r0 * d, *DB = x->DB + (size_t)r0 * d;
            for (size_t q = 0; q < (size_t)N * d; q++)
                bs[q] -= (float)((1.0 - t) * DA[q] + t * DB[q]);
        } else if (c->residual) {
            for (size_t q = 0; q < (size_t)N * d; q++) bs[q] += X[q];
        }
        to_lanes(base_at(x, tc, v), bs, N, d, x->nbn);
    }
    if (x->kind != LS_LAYER) {
        int C = x->C;
        float *hr = w->hraw; // gamma (d), beta (d), W (C, d), b (C) at t
        float *gm = hr, *bt = hr + d, *Hw = hr + 2 * d, *Hb = Hw + (size_t)C * d;
        if (c->has_norm) {
            vlerp(gm, x->A->norm_w, x->B->norm_w, (size_t)d, t);
            vlerp(bt, x->A->norm_b, x->B->norm_b, (size_t)d, t);
        } else {
            for (int q = 0; q < d; q++) gm[q] = 1.0f, bt[q] = 0.0f;
        }
        vlerp(Hw, x->A->head_w, x->B->head_w, (size_t)C * d, t);
        vlerp(Hb, x->A->head_b, x->B->head_b, (size_t)C, t);
        int Cp = ls_cpad(x);
        float *H8 = x->head + (size_t)tc * head_floats(x); // (Cp, d, LS_L)
        float *cp = H8 + (size_t)Cp * d * LS_L;             // (Cp)
        memset(H8, 0, head_floats(x) * sizeof(float));
        for (int k = 0; k < C; k++) {
            double acc = Hb[k];
            for (int q = 0; q < d; q++) {
                float hq = Hw[(size_t)k * d + q] * gm[q];
                for (int l = 0; l < LS_L; l++) H8[((size_t)k * d + q) * LS_L + l] = hq;
                acc += (double)Hw[(size_t)k * d + q] * bt[q];
            }
            cp[k] = (float)acc;
        }
    }
}

/* ---------------- one order on the chunk ---------------- */

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

/* Loss sums of m orders at the chunk's t index tc, over the held samples,
 * added to lsum[j] and ok[j] (the caller zeroes them, or carries the sums of
 * the previous sample chunks).
 * pair[j][i]: pair index of order j's slot i; col[j][i]: B's gate row in it;
 * v: shared variant. lsum[j]: summed per-sample loss (classification: CE;
 * regression: squared error over C; layer: squared norm over d); ok[j]:
 * correct argmaxes (ties to the smaller index, as moe_eval). */
LS_HOT static void eval_orders_t(const lsx *x, ls_ws *w, int m, const int (*pair)[LS_MAX_N],
                                 const int (*col)[LS_MAX_N], int v, int tc, double *lsum,
                                 long *ok) {
    const moe_config *c = x->cfg;
    const int N = x->N, d = x->d, n = x->n, C = x->C, nn = x->nn, nb = x->nbn, b0 = x->b0;
    const int topk = c->router == ROUTER_TOPK && c->k < n, kk = c->k;
    const int layer = x->kind == LS_LAYER, classify = x->kind == LS_CLASSIFY;
    const float *S = S_at(x, tc);          // (nb, nn, L)
    const float *bs = base_at(x, tc, v);   // (nb, d, L)
    const float *H8 = layer ? NULL : x->head + (size_t)tc * head_floats(x); // (C, d, L)
    const int Cp = ls_cpad(x);
    const float *cp = layer ? NULL : H8 + (size_t)Cp * d * LS_L;           // (Cp)
    v8f *z = (v8f *)w->z;   // (d) lanes: the block output, then centred
    v8f *lg = (v8f *)w->lg; // (C) lanes: logits
    const size_t ystride = lane_floats(x, d);
    const float *Y0 = Y_at(x, tc, 0);
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
            v8f mx = s[0], sum = (v8f){0};
            if (topk) {
                v8i sel[LS_MAX_N];
                for (int i = 0; i < n; i++) sel[i] = (v8i){0};
                for (int r = 0; r < kk; r++) {
                    v8f bv = s[0];
                    v8i bi = (v8i){0} - 1;
                    for (int i = 0; i < n; i++) {
                        // the first unselected expert, then any that ranks before
                        // the best so far (moe_kernels.h: ties to the smaller slot)
                        const v8i iv = (v8i){0} + i;
                        v8i cand = ~sel[i] & (MOE_RANKS_BEFORE(s[i], iv, bv, bi) | (bi < 0));
                        bv = V8_SEL(cand, s[i], bv);
                        bi = (cand & ((v8i){0} + i)) | (~cand & bi);
                    }
                    for (int i = 0; i < n; i++) sel[i] |= bi == i;
                    if (r == 0) mx = bv;
                }
                for (int i = 0; i < n; i++) {
                    v8f e;
                    V8_EXP(e, s[i] - mx);
                    g[i] = (v8f)(sel[i] & (v8i)e);
                    sum += g[i];
                }
            } else {
                for (int i = 1; i < n; i++) mx = V8_SEL(s[i] > mx, s[i], mx);
                for (int i = 0; i < n; i++) {
                    V8_EXP(g[i], s[i] - mx);
                    sum += g[i];
                }
            }
            v8f inv = 1.0f / sum;
            for (int i = 0; i < n; i++) g[i] *= inv;
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
                v8i y = *(const v8i *)(x->lab8 + (size_t)gb * LS_L);
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
                const v8f *tg = (const v8f *)(x->tg8 + (size_t)gb * C * LS_L);
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

/* loss and accuracy of an order from its sums */
static void order_value(const lsx *x, double lsum, long ok, double *loss, double *acc) {
    if (x->kind == LS_LAYER) {
        *loss = lsum / ((double)x->N * x->d);
        *acc = NAN;
    } else if (x->kind == LS_CLASSIFY) {
        *loss = lsum / x->N;
        *acc = (double)ok / x->N;
    } else {
        *loss = lsum / ((double)x->N * x->C);
        *acc = NAN;
    }
}

/* one order (the named curves): the same kernel with m = 1, adding the held
 * samples' sums to *ls and *ok */
static void eval_order_t(lsx *x, ls_ws *w, const int *pair, const int *col, int v, int tc,
                         double *ls, long *ok) {
    int p1[1][LS_MAX_N], c1[1][LS_MAX_N];
    memcpy(p1[0], pair, sizeof p1[0]);
    memcpy(c1[0], col, sizeof c1[0]);
    eval_orders_t(x, w, 1, (const int(*)[LS_MAX_N])p1, (const int(*)[LS_MAX_N])c1, v, tc, ls, ok);
}

/* fold one value of an order into its running statistics; the expressions
 * are those of ls_curve_stats */
static void fold_one(lsx *x, long k, int tc, double loss, double acc) {
    int T = x->T;
    double t = ls_t(x->tidx[tc], T);
    double lb = x->lb ? x->lb[k] : x->loss_b, ab = x->ab ? x->ab[k] : x->acc_b;
    double e = loss - ((1.0 - t) * x->loss_a + t * lb);
    if (isnan(e) || isnan(x->bar[k])) x->bar[k] = NAN;
    else if (e > x->bar[k]) x->bar[k] = e;
    x->auc[k] += e / (double)(T - 1);
    if (x->kind == LS_CLASSIFY) {
        double ea = (1.0 - t) * x->acc_a + t * ab - acc;
        if (isnan(ea) || isnan(x->accb[k])) x->accb[k] = NAN;
        else if (ea > x->accb[k]) x->accb[k] = ea;
    }
}

static void emit_row(lsx *x, long k, const int *p) {
    ls_row row;
    memset(&row, 0, sizeof row);
    for (int i = 0; i < x->n; i++) row.order[i] = p[i];
    row.barrier = x->bar[k];
    row.acc_barrier = x->kind == LS_CLASSIFY ? x->accb[k] : NAN;
    row.auc = x->auc[k];
    pthread_mutex_lock(&x->mu);
    x->L->rows[x->filled++] = row;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
}

/* ---------------- the parallel loop ---------------- */

typedef struct {
    lsx *x;
    long nitems, next, grain;
    int kind;            /* 0 precompute, 1 orders */
    const long *list;    /* kind 1: order indices (NULL: all), */
    long nlist;
    double bmax;         /* kind 1: stop an order once its barrier reaches this */
    int finish;          /* kind 1: emit rows (the last chunk) */
    int running;
    int tid;
    long ndone;          /* items finished (atomic) */
    const char *what;    /* phase name for o->phase, NULL: none */
    long unit;           /* o->phase counts items * unit, at most ptotal */
    long ptotal;
} ls_job;

typedef struct {
    ls_job *job;
    int tid;
} ls_arg;

/* Orders per work item. Consecutive orders in lexicographic order share
 * their leading slots, so a block of 128 (n = 8: one or two 3-slot prefixes)
 * reads only ~30 of the 64 pairs; per sample block that is ~30 KiB of Y,
 * which stays in L1/L2 while all 128 orders use it (measured on dense8:
 * 32 -> 128 orders per block took all orders from 8.4 s to 6.6-7.1 s). */
#define LS_BLOCK 128

/* A block of orders, t-major, all active orders of the block at one t in one
 * kernel call (which walks the sample blocks once for all of them). Orders continue from where they stopped (x->prog); with
 * a finite bmax (the ranks phase) an order stops as soon as its barrier
 * reaches bmax, since it can no longer rank above a chosen order. */
static void run_block(lsx *x, ls_ws *w, const long *ks, int cnt, int finish, double bmax) {
    int n = x->n;
    int ord[LS_BLOCK][LS_MAX_N], pair[LS_BLOCK][LS_MAX_N];
    char active[LS_BLOCK];
    int t0 = x->ntc;
    for (int j = 0; j < cnt; j++) {
        long k = ks[j];
        active[j] = !x->done[k] && x->prog[k] < x->ntc && !(x->bar[k] >= bmax);
        if (!active[j]) continue;
        order_of(x, k, ord[j]);
        for (int i = 0; i < n; i++) pair[j][i] = i * n + ord[j][i];
        if (x->prog[k] < t0) t0 = x->prog[k];
    }
    // t-major: all active orders of the block at one t in one kernel call,
    // which walks the samples once for all of them (see eval_orders_t)
    int lp[LS_BLOCK][LS_MAX_N], lc[LS_BLOCK][LS_MAX_N], idx[LS_BLOCK];
    double lsum[LS_BLOCK];
    long okc[LS_BLOCK];
    for (int tc = t0; tc < x->ntc; tc++) {
        if (ls_cancelled(x)) return;
        int m = 0;
        for (int j = 0; j < cnt; j++) {
            if (!active[j] || x->prog[ks[j]] != tc) continue;
            memcpy(lp[m], pair[j], sizeof lp[m]);
            memcpy(lc[m], ord[j], sizeof lc[m]);
            idx[m++] = j;
        }
        if (!m) continue;
        // sample chunks: carry each order's sums from the previous chunks
        for (int u = 0; u < m; u++) {
            long k = ks[idx[u]];
            lsum[u] = x->nsc > 1 ? x->acc_l[k] : 0.0;
            okc[u] = x->nsc > 1 ? x->acc_ok[k] : 0;
        }
        eval_orders_t(x, w, m, (const int(*)[LS_MAX_N])lp, (const int(*)[LS_MAX_N])lc, SH_MAIN, tc,
                      lsum, okc);
        if (!x->sc_last) { // more samples to come: the values are not complete
            for (int u = 0; u < m; u++) {
                long k = ks[idx[u]];
                x->acc_l[k] = lsum[u];
                x->acc_ok[k] = okc[u];
            }
            continue;
        }
        for (int u = 0; u < m; u++) {
            int j = idx[u];
            long k = ks[j];
            double loss, acc;
            order_value(x, lsum[u], okc[u], &loss, &acc);
            if (x->end_chunk) x->lb[k] = loss, x->ab[k] = acc;
            else fold_one(x, k, tc, loss, acc);
            x->prog[k] = tc + 1;
            if (!(x->bar[k] < bmax)) active[j] = 0;
        }
    }
    if (!finish || !x->sc_last) return;
    for (int j = 0; j < cnt; j++) {
        long k = ks[j];
        if (x->done[k] || x->prog[k] != x->ntc) continue;
        x->done[k] = 1;
        emit_row(x, k, ord[j]);
    }
}

static void *ls_worker(void *arg) {
    ls_arg *a = arg;
    ls_job *job = a->job;
    lsx *x = job->x;
    openblas_set_num_threads(1);
    for (;;) {
        long s = __atomic_fetch_add(&job->next, job->grain, __ATOMIC_RELAXED);
        if (s >= job->nitems) break;
        long e = s + job->grain < job->nitems ? s + job->grain : job->nitems;
        for (long it = s; it < e; it++) {
            if (ls_cancelled(x)) goto out;
            if (job->kind == 0) {
                pre_item(x, a->tid, it);
            } else {
                // item = a block of orders
                long ks[LS_BLOCK], k0 = it * LS_BLOCK, cnt = 0;
                long total = job->list ? job->nlist : x->norders;
                for (long k = k0; k < k0 + LS_BLOCK && k < total; k++)
                    ks[cnt++] = job->list ? job->list[k] : k;
                run_block(x, &x->ws[a->tid], ks, (int)cnt, job->finish, job->bmax);
            }
            __atomic_fetch_add(&job->ndone, 1, __ATOMIC_RELAXED);
        }
    }
out:
    pthread_mutex_lock(&x->mu);
    job->running--;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

static void report_progress(lsx *x) {
    pthread_mutex_lock(&x->mu);
    long f = x->filled;
    pthread_mutex_unlock(&x->mu);
    if (f != x->L->ndone || f == 0) {
        x->L->ndone = f;
        if (x->o->progress) x->o->progress(x->o->ctx, f, x->norders);
    }
}

/* Run the job on nthreads workers; the caller reports progress and watches
 * for a cancel. Returns -1 when cancelled. */
static int run_job(lsx *x, ls_job *job) {
    pthread_t th[16];
    ls_arg args[16];
    int created[16] = {0};
    job->running = x->nthreads;
    job->next = 0;
    job->ndone = 0;
    if (job->what) ls_phase(x, job->what, 0, job->ptotal);
    int started = 0;
    for (int i = 0; i < x->nthreads; i++) {
        args[i].job = job;
        args[i].tid = i;
        if (pthread_create(&th[i], NULL, ls_worker, &args[i])) {
            pthread_mutex_lock(&x->mu);
            job->running--;
            pthread_mutex_unlock(&x->mu);
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
    pthread_mutex_lock(&x->mu);
    while (job->running > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 20 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&x->cv, &x->mu, &ts);
        pthread_mutex_unlock(&x->mu);
        ls_cancelled(x);
        if (job->kind == 1 && job->finish) report_progress(x);
        if (job->what) {
            long dn = __atomic_load_n(&job->ndone, __ATOMIC_RELAXED) * job->unit;
            ls_phase(x, job->what, dn < job->ptotal ? dn : job->ptotal, job->ptotal);
        }
        pthread_mutex_lock(&x->mu);
    }
    pthread_mutex_unlock(&x->mu);
    for (int i = 0; i < x->nthreads; i++)
        if (created[i]) pthread_join(th[i], NULL);
    return ls_cancelled(x) ? -1 : 0;
}

/* ---------------- setup and teardown ---------------- */

void ls_opts_default(ls_opts *o) {
    memset(o, 0, sizeof *o);
    o->T = 25;
    o->wm = 1;
    o->center = 1;
    o->nsample = 20000;
    o->exhaustive_max = LS_EXHAUSTIVE_MAX;
    o->seed = 1;
}

void landscape_free(landscape *L) {
    if (!L) return;
    free(L->t);
    ls_curve_free(&L->naive);
    ls_curve_free(&L->skip_order);
    ls_curve_free(&L->methods[0]);
    ls_curve_free(&L->methods[1]);
    free(L->cost[0]);
    free(L->cost[1]);
    free(L->rows);
    memset(L, 0, sizeof *L);
}

static void ws_alloc(lsx *x, ls_ws *w) {
    // rows of one sample chunk (all samples unless chunked)
    size_t N = (size_t)(x->N < x->nbc * LS_L ? x->N : x->nbc * LS_L);
    size_t d = (size_t)x->d, h = (size_t)x->h, n = (size_t)x->n;
    w->E = ms_malloc(x->esize * sizeof(float));
    w->H = ms_malloc(N * h * sizeof(float));
    w->H3 = moe_act_glu(x->cfg->act) ? ms_malloc(N * h * sizeof(float)) : NULL;
    w->Ye = ms_malloc(N * d * sizeof(float));
    w->Wt = ms_malloc(n * n * d * sizeof(float));
    w->bt = ms_malloc(n * n * sizeof(float));
    w->sc = ms_malloc(N * n * sizeof(float));
    w->G = ms_malloc(N * n * sizeof(float));
    size_t C = (size_t)(x->C > 0 ? x->C : 1);
    w->Zb = ms_malloc(N * d * sizeof(float));
    w->Sx = ms_malloc(N * n * n * sizeof(float));
    w->hraw = ms_malloc((2 * d + C * d + C) * sizeof(float));
    w->z = ms_malloc(d * LS_L * sizeof(float));
    w->lg = ms_malloc((C + 3) / 4 * 4 * LS_L * sizeof(float));
}

static void ws_free(ls_ws *w) {
    free(w->E);
    free(w->H);
    free(w->H3);
    free(w->Ye);
    free(w->Wt);
    free(w->bt);
    free(w->sc);
    free(w->G);
    free(w->Zb);
    free(w->Sx);
    free(w->hraw);
    free(w->z);
    free(w->lg);
}

static int row_cmp(const void *pa, const void *pb) {
    const ls_row *a = pa, *b = pb;
    int na = isnan(a->barrier), nb = isnan(b->barrier);
    if (na != nb) return na - nb; // NaN last
    if (!na && a->barrier != b->barrier) return a->barrier < b->barrier ? -1 : 1;
    for (int i = 0; i < LS_MAX_N; i++)
        if (a->order[i] != b->order[i]) return a->order[i] < b->order[i] ? -1 : 1;
    return 0;
}

/* loss and accuracy of model m on E (layer mode: 0) */
static void endpoint(const lsx *x, const moe_model *m, double *loss, double *acc) {
    *loss = 0.0;
    *acc = NAN;
    if (x->kind == LS_LAYER) return;
    int N = x->N, d = x->d, C = x->C;
    float *Z = ms_malloc((size_t)N * d * sizeof(float));      // (N, d)
    float *lg = ms_malloc((size_t)N * C * sizeof(float));     // (N, C)
    moe_forward(m, x->E->inputs, N, Z, NULL);
    moe_head(m, Z, N, lg);
    double ls = 0.0;
    long ok = 0;
    ls_loss_logits(x->E, 0, lg, N, C, &ls, &ok);
    *loss = x->kind == LS_CLASSIFY ? ls / N : ls / ((double)N * C);
    if (x->kind == LS_CLASSIFY) *acc = (double)ok / N;
    free(Z);
    free(lg);
}

/* Does B's top-k selection tie at the k-th score on some evaluation input?
 * Then allocate x->lb, x->ab for every order's own L(1). Headless layers
 * cannot take it: their chord's end, D_B'(x), would differ per order. */
static int end_ties(lsx *x, const moe_model *B, ms_err *err) {
    const moe_config *c = &B->cfg;
    if (c->router != ROUTER_TOPK || c->k >= c->n) return 0;
    int n = c->n, N = x->N, first = -1;
    long cnt = 0;
    enum { CH = 256 };
    float *S = ms_malloc((size_t)CH * n * sizeof(float)); // (CH, n)
    for (int r0 = 0; r0 < N; r0 += CH) {
        int m = N - r0 < CH ? N - r0 : CH;
        moe_gate_logits(B, x->E->inputs + (size_t)r0 * x->d, m, S);
        for (int r = 0; r < m; r++)
            if (moe_topk_boundary_tie(S + (size_t)r * n, n, c->k)) {
                if (first < 0) first = r0 + r;
                cnt++;
            }
    }
    free(S);
    if (!cnt) return 0;
    if (x->kind == LS_LAYER)
        return ms_fail(err, "%s: %ld evaluation inputs (the first is sample %d) tie at B's top-%d "
                            "gate score, so each reordering of B routes them differently; without "
                            "a head the landscape cannot compute that (its chord would differ per "
                            "order): use `curve --order` for single orders",
                       B->path ? B->path : "B", cnt, first, c->k);
    x->lb = ms_malloc((size_t)x->norders * sizeof(double));
    x->ab = ms_malloc((size_t)x->norders * sizeof(double));
    return 0;
}

static void wilson(double phat, double nobs, double *lo, double *hi) {
    const double z = 1.959963984540054;
    double den = 1.0 + z * z / nobs;
    double ctr = (phat + z * z / (2.0 * nobs)) / den;
    double half = z * sqrt(phat * (1.0 - phat) / nobs + z * z / (4.0 * nobs * nobs)) / den;
    *lo = phat <= 0 || ctr - half < 0 ? 0 : ctr - half;
    *hi = phat >= 1 || ctr + half > 1 ? 1 : ctr + half;
}

/* ranks (rank.h: tolerance tau, tie class, AUC tie-break), L-hat and the
 * best barrier from the rows done so far; valid when every order not done has
 * a lower bound above both chosen barriers + tau */
static void compute_ranks(lsx *x) {
    landscape *L = x->L;
    rank_view v = {.count = x->filled, .width = x->n, .barrier = &L->rows[0].barrier,
                   .auc = &L->rows[0].auc, .order = L->rows[0].order, .stride = sizeof(ls_row)};
    double best = INFINITY;
    for (long k = 0; k < x->filled; k++)
        if (L->rows[k].barrier < best) best = L->rows[k].barrier;
    if (!x->exhaustive)
        for (int m = 0; m < 2; m++)
            if (L->methods[m].barrier < best) best = L->methods[m].barrier;
    L->best_barrier = best;
    L->tau = rank_tau(L->naive.barrier);
    for (int m = 0; m < 2; m++) {
        const ls_curve *c = &L->methods[m];
        rank_info ri;
        rank_chosen(&v, c->barrier, c->auc, c->order, L->tau, &ri);
        L->rank[m] = (int)ri.rank;
        L->tied[m] = (int)ri.tied;
        L->rank_auc[m] = (int)ri.rank_auc;
        L->l_hat[m] = rank_l_hat(c->barrier, best, L->naive.barrier);
        long less = ri.rank - 1;
        if (!x->exhaustive) {
            double ph = (double)less / (double)x->norders;
            L->rank_est[m] = 1.0 + ph * L->n_fact;
            wilson(ph, (double)x->norders, &L->pct_lo[m], &L->pct_hi[m]);
            L->pct_lo[m] *= 100.0;
            L->pct_hi[m] *= 100.0;
        } else {
            L->rank_est[m] = L->rank[m];
            L->pct_lo[m] = L->pct_hi[m] = 100.0 * (double)less / (double)x->norders;
        }
    }
    L->ranks_ready = 1;
}

/* MOESCOPE_LS_DEBUG=1: phase times on stderr (for the benchmarks) */
static void ls_debug(double t0, const char *what, long count) {
    static int on = -1;
    if (on < 0) on = getenv("MOESCOPE_LS_DEBUG") != NULL;
    if (on) fprintf(stderr, "landscape: %8.4f s  %s (%ld)\n", ls_now() - t0, what, count);
}

/* Precompute sample chunk sc of the current points (nothing to do when it
 * is the one held). -1 when cancelled. */
static int ls_load_samples(lsx *x, int sc) {
    if (x->cur_sc == sc) return 0;
    x->b0 = sc * x->nbc;
    x->nbn = x->nb - x->b0 < x->nbc ? x->nb - x->b0 : x->nbc;
    x->sc_last = sc == x->nsc - 1;
    ls_job job = {.x = x, .nitems = (long)x->ntc * (x->npairs + 1), .grain = 1, .kind = 0,
                  .what = "precomputing pairs", .unit = 1,
                  .ptotal = (long)x->ntc * (x->npairs + 1)};
    x->cur_sc = -1;
    if (run_job(x, &job)) return -1;
    x->cur_sc = sc;
    return 0;
}

/* An orders job over every sample chunk in order (once when not chunked):
 * the orders' sums are carried across the chunks and complete at the last. */
static int ls_sweep(lsx *x, ls_job *job) {
    if (x->nsc > 1) {
        memset(x->acc_l, 0, (size_t)x->norders * sizeof(double));
        memset(x->acc_ok, 0, (size_t)x->norders * sizeof(long));
    }
    for (int sc = 0; sc < x->nsc; sc++) {
        if (ls_load_samples(x, sc)) return -1;
        if (run_job(x, job)) return -1;
    }
    return 0;
}

static size_t budget_bytes(void) {
    const char *s = getenv("MOESCOPE_LS_MEM_MB");
    double mb = s ? atof(s) : 1024.0;
    if (!(mb > 0)) mb = 1024.0;
    return (size_t)(mb * 1024.0 * 1024.0);
}

int landscape_compute(const moe_model *A, const moe_model *B, const evalset *E,
                      const ls_opts *o, landscape *L, ms_err *err) {
    double t0 = ls_now();
    memset(L, 0, sizeof *L);
    ls_opts od;
    if (!o) {
        ls_opts_default(&od);
        o = &od;
    }
    if (moe_check_compatible(A, B, err)) return -1;
    const moe_config *c = &A->cfg;
    if (c->n > LS_MAX_N)
        return ms_fail(err, "%s: %d experts; the landscape handles at most %d",
                       A->path ? A->path : "A", c->n, LS_MAX_N);
    if (o->T < 3) return ms_fail(err, "landscape: need at least 3 interpolation points, got %d", o->T);
    if (c->has_head) {
        if (evalset_check(E, A, err)) return -1;
    } else if (E->d != c->d) {
        return ms_fail(err, "%s: inputs have width %d but the layer has d = %d",
                       E->path ? E->path : "evaluation set", E->d, c->d);
    }

    lsx X;
    memset(&X, 0, sizeof X);
    lsx *x = &X;
    int rc = -1, nal = 0;
    int *rest = NULL;
    long *cand = NULL;
    double *nls = NULL;
    long *nok = NULL;
    moe_model Bal[NM_COUNT];
    align_result Ral[NM_COUNT];
    memset(Bal, 0, sizeof Bal);
    memset(Ral, 0, sizeof Ral);
    ls_curve *named[NM_COUNT] = {&L->naive, &L->skip_order, &L->methods[0], &L->methods[1]};
    int npair[NM_COUNT][LS_MAX_N], ncol[NM_COUNT][LS_MAX_N], nsh[NM_COUNT];
    x->A = A;
    x->B = B;
    x->E = E;
    x->cfg = c;
    x->o = o;
    x->L = L;
    x->n = c->n;
    x->d = c->d;
    x->h = c->h;
    x->N = E->N;
    x->C = c->has_head ? c->C : 0;
    x->T = o->T;
    x->nn = c->n * c->n;
    x->kind = ls_kind_of(A, E);
    x->esize = moe_expert_size(c);
    int n = x->n, T = x->T, N = x->N, d = x->d;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);

    L->n = n;
    L->T = T;
    L->kind = x->kind;
    L->t = ms_malloc((size_t)T * sizeof(double));
    for (int m = 0; m < T; m++) L->t[m] = ls_t(m, T);
    L->n_fact = factorial(n);
    L->best = L->worst = -1;

    // named alignments through align_models (the same code path as `align` and `curve`)
    for (int a = 0; a < NM_COUNT; a++) {
        align_opts ao;
        align_opts_default(&ao);
        ao.center = o->center;
        if (a == NM_NAIVE) ao.order_stage = 0, ao.wm_stage = 0;
        if (a == NM_SKIP) ao.order_stage = 0, ao.wm_stage = 1;
        if (a == NM_GATE) ao.method = COST_GATE, ao.wm_stage = o->wm;
        if (a == NM_EXPERT) ao.method = COST_EXPERT, ao.wm_stage = o->wm;
        if (align_models(A, B, &ao, &Bal[a], &Ral[a], err)) goto fail;
        nal++;
    }
    for (int m = 0; m < 2; m++) {
        L->cost[m] = ms_malloc((size_t)n * n * sizeof(double));
        if (cost_matrix(A, B, m == 0 ? COST_GATE : COST_EXPERT, o->center, L->cost[m], err))
            goto fail;
        L->cost_total[m] = Ral[NM_GATE + m].cost_total;
    }
    // keep only the aligned shared experts of the three variants and free
    // the aligned copies of B (four times B's size; the orders are in Ral)
    if (c->s > 0) {
        const moe_model *shsrc[SH_COUNT] = {&Bal[NM_EXPERT], &Bal[NM_NAIVE], &Bal[NM_SKIP]};
        x->shmem = ms_malloc((size_t)SH_COUNT * c->s * x->esize * sizeof(float));
        x->shx = ms_malloc((size_t)SH_COUNT * c->s * sizeof(moe_expert));
        for (int v = 0; v < SH_COUNT; v++)
            for (int j = 0; j < c->s; j++) {
                int q = v * c->s + j;
                moe_expert_carve(&x->shx[q], c, x->shmem + (size_t)q * x->esize);
                moe_expert_copy(&x->shx[q], &shsrc[v]->shared[j], c);
            }
        for (int v = 0; v < SH_COUNT; v++) x->shB[v] = x->shx + (size_t)v * c->s;
    }
    for (int a = 0; a < NM_COUNT; a++) moe_free(&Bal[a]);

    ls_debug(t0, "named alignments", NM_COUNT);
    // orders
    x->exhaustive = n <= (o->exhaustive_max > 0 ? o->exhaustive_max : LS_EXHAUSTIVE_MAX);
    if (x->exhaustive) {
        x->norders = (long)L->n_fact;
    } else {
        x->norders = o->nsample > 0 ? o->nsample : 20000;
        sample_orders(x, x->norders, o->seed);
    }
    L->exhaustive = x->exhaustive;
    L->norders = x->norders;
    L->rows = ms_calloc((size_t)x->norders, sizeof(ls_row));
    x->bar = ms_malloc((size_t)x->norders * sizeof(double));
    x->accb = ms_malloc((size_t)x->norders * sizeof(double));
    x->auc = ms_calloc((size_t)x->norders, sizeof(double));
    x->done = ms_calloc((size_t)x->norders, 1);
    x->prog = ms_calloc((size_t)x->norders, sizeof(int));
    for (long k = 0; k < x->norders; k++) x->bar[k] = x->accb[k] = 0.0; // the end points

    // threads
    x->nthreads = o->nthreads > 0 ? o->nthreads : (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (x->nthreads < 1) x->nthreads = 1;
    if (x->nthreads > 8) x->nthreads = 8;

    // pairs: weight matching once per (slot i, B's expert j)
    x->npairs = x->nn + n;
    x->perm = ms_malloc((size_t)x->npairs * x->h * sizeof(int));
    x->pj = ms_malloc((size_t)x->npairs * sizeof(int));
    for (int p = 0; p < x->npairs; p++) {
        int i = p < x->nn ? p / n : p - x->nn, j = p < x->nn ? p % n : i;
        int wm = p < x->nn ? o->wm : !o->wm;
        int *P = x->perm + (size_t)p * x->h; // (h)
        x->pj[p] = j;
        if (wm) {
            if (wm_match(&A->experts[i], &B->experts[j], c, P, NULL, err)) {
                ms_prefix(err, "weight matching slot %d with B's expert %d", i, j);
                goto fail;
            }
        } else {
            for (int u = 0; u < x->h; u++) P[u] = u;
        }
        ls_phase(x, "weight-matching pairs", p + 1, x->npairs);
        if (ls_cancelled(x)) goto cancelled;
    }

    ls_debug(t0, "pairs weight-matched", x->npairs);
    // end points: L(0) is A's loss, L(1) B's: every aligned B' computes B's function,
    // unless B's top-k ties at the k-th score (end_ties: then each order's own L(1))
    if (x->kind == LS_LAYER) {
        x->DA = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
        x->DB = ms_malloc((size_t)N * d * sizeof(float)); // (N, d)
        moe_forward(A, E->inputs, N, x->DA, NULL);
        moe_forward(B, E->inputs, N, x->DB, NULL);
        if (c->residual)
            for (size_t q = 0; q < (size_t)N * d; q++) {
                x->DA[q] -= E->inputs[q];
                x->DB[q] -= E->inputs[q];
            }
    }
    endpoint(x, A, &x->loss_a, &x->acc_a);
    endpoint(x, B, &x->loss_b, &x->acc_b);
    if (end_ties(x, B, err)) goto fail;
    L->loss_a = x->loss_a;
    L->loss_b = x->loss_b;
    L->acc_a = x->acc_a;
    L->acc_b = x->acc_b;

    // named curves
    for (int a = 0; a < NM_COUNT; a++) {
        ls_curve *cv = named[a];
        cv->n = n;
        cv->T = T;
        cv->loss = ms_malloc((size_t)T * sizeof(double));
        cv->acc = x->kind == LS_CLASSIFY ? ms_malloc((size_t)T * sizeof(double)) : NULL;
        cv->loss[0] = x->loss_a;
        cv->loss[T - 1] = x->loss_b;
        if (cv->acc) {
            cv->acc[0] = x->acc_a;
            cv->acc[T - 1] = x->acc_b;
        }
        for (int i = 0; i < n; i++) {
            int pi = Ral[a].order[i];
            cv->order[i] = pi;
            ncol[a][i] = pi;
            // the landscape's pairs have WM = o->wm; the extra diagonal the other
            int wm = a == NM_NAIVE ? 0 : a == NM_SKIP ? 1 : o->wm;
            npair[a][i] = wm == o->wm ? i * n + pi : x->nn + i;
        }
        nsh[a] = a == NM_NAIVE ? SH_NAIVE : a == NM_SKIP ? SH_SKIP : SH_MAIN;
    }

    // chunks over the interior t: the middle first (lower bounds), then the rest
    // lane-major layout: samples padded to blocks of LS_L
    x->nb = (N + LS_L - 1) / LS_L;
    size_t Np = (size_t)x->nb * LS_L;
    if (x->kind == LS_CLASSIFY) {
        x->lab8 = ms_malloc(Np * sizeof(int32_t));
        for (size_t r = 0; r < Np; r++) x->lab8[r] = r < (size_t)N ? (int32_t)E->labels[r] : -1;
    } else if (x->kind == LS_REGRESS) {
        x->tg8 = ms_malloc(Np * x->C * sizeof(float));
        to_lanes(x->tg8, E->targets, N, x->C, x->nb);
    }
    // memory: one t's lane arrays per sample block (Y of every pair, S, the
    // shared variants) plus its head; as many t as the budget holds, and
    // when not even one t fits, one t in chunks of samples
    size_t per_block = (size_t)LS_L * ((size_t)x->npairs * d + x->nn + SH_COUNT * d) * sizeof(float);
    size_t per_head = head_floats(x) * sizeof(float);
    size_t per_t = (size_t)x->nb * per_block + per_head;
    size_t budget = budget_bytes();
    int nint = T - 2;
    x->nbc = x->nb;
    if (per_t <= budget) {
        x->cap_t = (int)(budget / per_t);
    } else {
        x->cap_t = 1;
        size_t avail = budget > per_head ? budget - per_head : 0;
        // whole panels (see LS_PANEL); at least one, even over the budget
        const long pblk = LS_PANEL / LS_L;
        long fit = (long)(avail / per_block) / pblk * pblk;
        x->nbc = fit < pblk ? (int)pblk : fit < x->nb ? (int)fit : x->nb;
        if (x->nbc > x->nb) x->nbc = x->nb;
    }
    if (x->cap_t < 1) x->cap_t = 1;
    if (x->cap_t > nint - 1) x->cap_t = nint - 1 > 0 ? nint - 1 : 1;
    x->nsc = (x->nb + x->nbc - 1) / x->nbc;
    x->cur_sc = -1;
    x->sc_last = 1;
    if (x->nsc > 1) {
        x->acc_l = ms_malloc((size_t)x->norders * sizeof(double));
        x->acc_ok = ms_malloc((size_t)x->norders * sizeof(long));
    }
    size_t Nc = (size_t)x->nbc * LS_L; // rows held
    x->tidx = ms_malloc((size_t)nint * sizeof(int));
    x->S = ms_malloc((size_t)x->cap_t * Nc * x->nn * sizeof(float));
    x->Ybytes = (size_t)x->cap_t * x->npairs * Nc * d * sizeof(float);
    x->Y = big_alloc(x->Ybytes);
    x->base = ms_malloc((size_t)x->cap_t * SH_COUNT * Nc * d * sizeof(float));
    x->head = ms_malloc((size_t)x->cap_t * (head_floats(x) ? head_floats(x) : 1) * sizeof(float));
    x->ws = ms_calloc((size_t)x->nthreads, sizeof(ls_ws));
    for (int i = 0; i < x->nthreads; i++) ws_alloc(x, &x->ws[i]);
    if (x->nsc > 1) ls_debug(t0, "sample chunks (blocks of 8 each)", x->nbc);
    // named curves' sums per point of the chunk
    nls = ms_calloc((size_t)NM_COUNT * x->cap_t, sizeof(double)); // (NM_COUNT, cap_t)
    nok = ms_calloc((size_t)NM_COUNT * x->cap_t, sizeof(long));   // (NM_COUNT, cap_t)

    int mid = (T - 1) / 2 > 0 ? (T - 1) / 2 : 1; // t = 0.5 for odd T
    // the other t nearest the middle first: they are the likeliest maxima,
    // so the ranks phase can stop most orders after a few points
    rest = ms_malloc((size_t)nint * sizeof(int));
    int nrest = 0;
    for (int dist = 1; dist < T; dist++)
        for (int sg = -1; sg <= 1; sg += 2) {
            int m = mid + sg * dist;
            if (m >= 1 && m <= T - 2) rest[nrest++] = m;
        }
    int nchunks = 1 + (nrest + x->cap_t - 1) / x->cap_t;
    long nblocks = (x->norders + LS_BLOCK - 1) / LS_BLOCK;
    // with ties in B's routing, a first chunk of t = 1 alone: every order's L(1)
    for (int ch = x->lb ? -1 : 0; ch < nchunks; ch++) {
        int last = ch == nchunks - 1;
        x->end_chunk = ch < 0;
        if (ch < 0) {
            x->tidx[0] = T - 1;
            x->ntc = 1;
        } else if (ch == 0) {
            x->tidx[0] = mid;
            x->ntc = 1;
        } else {
            int s = (ch - 1) * x->cap_t;
            x->ntc = nrest - s < x->cap_t ? nrest - s : x->cap_t;
            memcpy(x->tidx, rest + s, (size_t)x->ntc * sizeof(int));
        }
        memset(x->prog, 0, (size_t)x->norders * sizeof(int));
        x->cur_sc = -1; // new points: nothing precomputed
        if (x->nsc > 1) {
            memset(x->acc_l, 0, (size_t)x->norders * sizeof(double));
            memset(x->acc_ok, 0, (size_t)x->norders * sizeof(long));
        }
        // named curves on this chunk (4 orders: the calling thread does them),
        // and before the last chunk every order, sample chunk by sample chunk
        memset(nls, 0, (size_t)NM_COUNT * x->cap_t * sizeof(double));
        memset(nok, 0, (size_t)NM_COUNT * x->cap_t * sizeof(long));
        for (int sc = 0; sc < x->nsc; sc++) {
            if (ls_load_samples(x, sc)) goto cancelled_rest;
            for (int a = 0; a < NM_COUNT; a++)
                for (int tc = 0; tc < x->ntc; tc++) {
                    if (ls_cancelled(x)) goto cancelled_rest;
                    eval_order_t(x, &x->ws[0], npair[a], ncol[a], nsh[a], tc, &nls[a * x->cap_t + tc], &nok[a * x->cap_t + tc]);
                }
            if (!last) {
                ls_job oj = {.x = x, .nitems = nblocks, .grain = 1, .kind = 1, .bmax = INFINITY,
                             .what = ch < 0    ? "end point (ties in B's routing)"
                                     : ch == 0 ? "middle point"
                                               : "orders on a chunk of points",
                             .unit = LS_BLOCK, .ptotal = x->norders};
                if (run_job(x, &oj)) goto cancelled_rest;
            }
        }
        for (int a = 0; a < NM_COUNT; a++)
            for (int tc = 0; tc < x->ntc; tc++) {
                double lv, av;
                order_value(x, nls[a * x->cap_t + tc], nok[a * x->cap_t + tc], &lv, &av);
                named[a]->loss[x->tidx[tc]] = lv;
                if (named[a]->acc) named[a]->acc[x->tidx[tc]] = av;
            }
        ls_debug(t0, "named curves on the chunk", NM_COUNT);
        if (!last) {
            ls_debug(t0, "every order on the chunk", x->norders);
            continue;
        }
        // the last chunk: named curves are complete
        for (int a = 0; a < NM_COUNT; a++) ls_curve_stats(named[a]);
        // the chosen orders' rows are their curves (same arithmetic, bit for bit)
        for (int a = NM_SKIP; a < NM_COUNT; a++) {
            if (a == NM_SKIP && !o->wm) continue;
            long k = order_index(x, named[a]->order);
            if (k < 0 || x->done[k]) continue;
            x->bar[k] = named[a]->barrier;
            x->accb[k] = x->kind == LS_CLASSIFY ? named[a]->acc_barrier : 0.0;
            x->auc[k] = named[a]->auc;
            x->prog[k] = x->ntc;
            x->done[k] = 1;
            emit_row(x, k, named[a]->order);
        }
        report_progress(x);
        // branch and bound: only orders whose lower bound is below a chosen
        // barrier can change a rank or the best barrier; each stops as soon
        // as its bound reaches the larger chosen barrier
        // (+ tau: the chosen orders' tie classes need every tied order's AUC)
        double bmax = fmax(L->methods[0].barrier, L->methods[1].barrier);
        bmax = nextafter(bmax + rank_tau(L->naive.barrier), INFINITY);
        if (isnan(L->methods[0].barrier) || isnan(L->methods[1].barrier)) bmax = INFINITY;
        long ncand = 0;
        cand = ms_malloc((size_t)x->norders * sizeof(long));
        for (long k = 0; k < x->norders; k++)
            if (!x->done[k] && x->bar[k] < bmax) cand[ncand++] = k;
        ls_job cj = {.x = x, .nitems = (ncand + LS_BLOCK - 1) / LS_BLOCK, .grain = 1, .kind = 1,
                     .list = cand, .nlist = ncand, .finish = 1, .bmax = bmax};
        if (ls_sweep(x, &cj)) goto cancelled_rest;
        compute_ranks(x);
        L->secs_ranks = ls_now() - t0;
        ls_debug(t0, "ranks (candidate orders)", ncand);
        report_progress(x);
        if (o->on_ranks) o->on_ranks(o->ctx, L);
        ls_job rj = {.x = x, .nitems = nblocks, .grain = 1, .kind = 1, .finish = 1,
                     .bmax = INFINITY};
        if (ls_sweep(x, &rj)) goto cancelled_rest;
    }
    ls_debug(t0, "all orders", x->norders);
    report_progress(x);
    if (x->filled != x->norders) {
        ms_fail(err, "landscape: internal error, %ld of %ld orders done", x->filled, x->norders);
        goto fail_rest;
    }
    // final: sort, ranks from the complete table (equal to the early ones)
    compute_ranks(x);
    qsort(L->rows, (size_t)x->norders, sizeof(ls_row), row_cmp);
    L->best = 0;
    L->worst = 0;
    for (long k = 0; k < x->norders; k++)
        if (!isnan(L->rows[k].barrier)) L->worst = (int)k;
    L->ndone = x->norders;
    L->secs_total = ls_now() - t0;
    rc = 0;
    goto done;

cancelled_rest:
cancelled:
    ms_fail(err, "cancelled");
fail_rest:
fail:
    rc = -1;
done:
    free(cand);
    if (x->ws)
        for (int i = 0; i < x->nthreads; i++) ws_free(&x->ws[i]);
    free(x->ws);
    free(x->tidx);
    free(x->S);
    big_free(x->Y, x->Ybytes);
    free(x->base);
    free(x->head);
    free(x->perm);
    free(x->pj);
    free(x->DA);
    free(x->DB);
    free(x->lab8);
    free(x->tg8);
    free(x->sampled);
    free(x->bar);
    free(x->accb);
    free(x->auc);
    free(x->done);
    free(x->prog);
    free(x->acc_l);
    free(x->acc_ok);
    free(x->lb);
    free(x->ab);
    free(x->shmem);
    free(x->shx);
    free(nls);
    free(nok);
    for (int a = 0; a < nal; a++) {
        moe_free(&Bal[a]);
        align_result_free(&Ral[a]);
    }
    if (nal < NM_COUNT) align_result_free(&Ral[nal]);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(rest);
    if (rc) landscape_free(L);
    return rc;
}
