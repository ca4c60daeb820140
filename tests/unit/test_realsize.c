/* test_realsize.c - the memory paths of real-sized layers, at small sizes:
 * - the expert cost on both sides of the Gram products (d x d Grams in row
 *   blocks of any size, h x h products per pair) against a plain double
 *   reference, and against each other: the h side works in double (1e-9 of the
 *   reference) while the d side forms its Gram blocks in float32 GEMMs (1e-6,
 *   which bounds the sides' disagreement and the row blocks' too: a block of
 *   another height may take another path through the BLAS kernel, as
 *   OpenBLAS's AVX-512 and SSE3 ones do, and round its float32 sums
 *   differently); the side the cost model picks is the cheaper one, and equal
 *   experts cost exactly 0;
 * - align in place equals an out-of-place gather of B by the returned order
 *   and hidden permutations, and align_models, bit for bit;
 * - streamed experts (read one at a time, only the parts asked for) give the
 *   same expert costs and alignments as held ones, bit for bit;
 * - the memory budget counts the inputs themselves. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "align/cost_matrix.h"
#include "core/blas_threads.h"
#include "analysis/ms_limits.h"
#include "core/env.h"
#include "core/rng.h"
#include "testlib.h"

static void random_model(moe_model *m, int n, int d, int h, moe_act act, uint64_t seed) {
    moe_config c = {0};
    c.n = n, c.d = d, c.h = h, c.k = 2, c.router = ROUTER_TOPK, c.act = act;
    c.has_gate_bias = 1, c.has_expert_bias = 1;
    moe_alloc(m, &c);
    rng_t r;
    rng_seed(&r, seed);
    for (size_t q = 0; q < m->nparams; q++) m->mem[q] = (float)(rng_normal(&r) / sqrt((double)d));
}

/* |G1a - G1b|^2 + |G2a - G2b|^2 with At = [W1 b1 W3 b3] (h, D1), Bt = [W2 b2] (d, h+1). */
static double ref_dist2(const moe_expert *a, const moe_expert *b, const moe_config *c) {
    int d = c->d, h = c->h, glu = moe_act_glu(c->act), D1 = glu ? 2 * d + 2 : d + 1;
    double *X = malloc(sizeof(double) * h * D1), *Y = malloc(sizeof(double) * h * D1);
    const moe_expert *e[2] = {a, b};
    double *M[2] = {X, Y};
    for (int k = 0; k < 2; k++)
        for (int u = 0; u < h; u++) {
            double *row = M[k] + (size_t)u * D1;
            for (int j = 0; j < d; j++) row[j] = e[k]->fc1_w[u * d + j];
            row[d] = e[k]->fc1_b[u];
            for (int j = 0; glu && j < d; j++) row[d + 1 + j] = e[k]->fc3_w[u * d + j];
            if (glu) row[2 * d + 1] = e[k]->fc3_b[u];
        }
    double s = 0;
    for (int p = 0; p < D1; p++)
        for (int q = 0; q < D1; q++) {
            double ga = 0, gb = 0;
            for (int u = 0; u < h; u++) {
                ga += X[u * D1 + p] * X[u * D1 + q];
                gb += Y[u * D1 + p] * Y[u * D1 + q];
            }
            s += (ga - gb) * (ga - gb);
        }
    for (int p = 0; p < d; p++)
        for (int q = 0; q < d; q++) {
            double ga = (double)a->fc2_b[p] * a->fc2_b[q], gb = (double)b->fc2_b[p] * b->fc2_b[q];
            for (int u = 0; u < h; u++) {
                ga += (double)a->fc2_w[p * h + u] * a->fc2_w[q * h + u];
                gb += (double)b->fc2_w[p * h + u] * b->fc2_w[q * h + u];
            }
            s += (ga - gb) * (ga - gb);
        }
    free(X);
    free(Y);
    return s;
}

static double max_abs(const double *x, int k) {
    double m = 0;
    for (int i = 0; i < k; i++) m = fmax(m, fabs(x[i]));
    return m;
}

static double max_diff(const double *x, const double *y, int k) {
    double m = 0;
    for (int i = 0; i < k; i++) m = fmax(m, fabs(x[i] - y[i]));
    return m;
}

static void cost_with(int side, double block, const moe_model *A, const moe_model *B, double *C) {
    ms_err err;
    cost_tuning t = {side, block};
    CHECK(cost_matrix_tuned(A, NULL, B, NULL, COST_EXPERT, 1, &t, C, &err) == 0, "cost: %s", err.msg);
}

static void test_cost_sides(void) {
    const struct {
        int n, d, h;
        moe_act act;
    } S[] = {{3, 7, 5, ACT_SILU_GLU}, {4, 6, 9, ACT_RELU}, {2, 12, 3, ACT_SILU_GLU}, {5, 5, 5, ACT_GELU}};
    for (size_t k = 0; k < sizeof S / sizeof S[0]; k++) {
        moe_model A, B;
        int n = S[k].n, d = S[k].d;
        random_model(&A, n, d, S[k].h, S[k].act, 10 + k);
        random_model(&B, n, d, S[k].h, S[k].act, 20 + k);
        double *ref = malloc(sizeof(double) * n * n), *one = malloc(sizeof(double) * n * n);
        double *blk = malloc(sizeof(double) * n * n), *hs = malloc(sizeof(double) * n * n);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < n; j++) ref[i * n + j] = sqrt(ref_dist2(&A.experts[i], &B.experts[j], &A.cfg));
        cost_with(1, 1e9, &A, &B, one); // every d x d term in one block
        double scale = max_abs(ref, n * n);
        CHECK(max_diff(one, ref, n * n) <= 1e-6 * scale, "spec %zu: d side vs reference %g", k,
              max_diff(one, ref, n * n) / scale);
        // one row per block, then a few rows: the blocks a large layer is streamed in
        // (float32 Gram blocks: another block height may round differently)
        double rowb[2] = {1.0, 8.0 * 2 * n * d * 3};
        for (int b = 0; b < 2; b++) {
            cost_with(1, rowb[b], &A, &B, blk);
            CHECK(max_diff(blk, one, n * n) <= 1e-6 * scale, "spec %zu: blocks of %g bytes vs one block %g",
                  k, rowb[b], max_diff(blk, one, n * n) / scale);
        }
        cost_with(2, 0, &A, &B, hs);
        CHECK(max_diff(hs, one, n * n) <= 1e-6 * scale, "spec %zu: h side vs d side %g", k,
              max_diff(hs, one, n * n) / scale);
        CHECK(max_diff(hs, ref, n * n) <= 1e-9 * scale, "spec %zu: h side vs reference", k);
        // equal experts cost exactly 0 (an expert against itself)
        cost_with(0, 0, &A, &A, blk);
        for (int i = 0; i < n; i++) CHECK(blk[i * n + i] == 0.0, "spec %zu: C[%d][%d] = %g", k, i, i, blk[i * n + i]);
        free(ref), free(one), free(blk), free(hs);
        moe_free(&A);
        moe_free(&B);
    }
    // the cost model: h << d / n takes the h side (exactly its numbers), h >> d the d side
    const int shapes[2][3] = {{2, 64, 3}, {2, 4, 40}};
    for (int k = 0; k < 2; k++) {
        moe_model A, B;
        random_model(&A, shapes[k][0], shapes[k][1], shapes[k][2], ACT_SILU_GLU, 7);
        random_model(&B, shapes[k][0], shapes[k][1], shapes[k][2], ACT_SILU_GLU, 8);
        double a[4], f[4];
        cost_with(0, 0, &A, &B, a);
        cost_with(k == 0 ? 2 : 1, 0, &A, &B, f);
        CHECK(!memcmp(a, f, sizeof a), "shape %d: the picked side is the %s side", k, k == 0 ? "h" : "d");
        moe_free(&A);
        moe_free(&B);
    }
}

/* dst expert i = src expert order[i] with unit u = unit P_i[u], out of place. */
static void gather_reference(moe_model *dst, const moe_model *src, const align_result *r) {
    const moe_config *c = &src->cfg;
    int n = c->n, d = c->d, h = c->h;
    moe_clone(dst, src);
    for (int i = 0; i < n; i++) {
        const moe_expert *s = &src->experts[r->order[i]];
        moe_expert *t = &dst->experts[i];
        const int *P = r->hidden_perm + (size_t)i * h;
        for (int u = 0; u < h; u++) {
            memcpy(t->fc1_w + u * d, s->fc1_w + P[u] * d, sizeof(float) * d);
            memcpy(t->fc3_w + u * d, s->fc3_w + P[u] * d, sizeof(float) * d);
            t->fc1_b[u] = s->fc1_b[P[u]];
            t->fc3_b[u] = s->fc3_b[P[u]];
            for (int j = 0; j < d; j++) t->fc2_w[j * h + u] = s->fc2_w[j * h + P[u]];
        }
        memcpy(t->fc2_b, s->fc2_b, sizeof(float) * d);
        memcpy(dst->gate_w + i * d, src->gate_w + r->order[i] * d, sizeof(float) * d);
        dst->gate_b[i] = src->gate_b[r->order[i]];
    }
}

static void test_align_inplace(void) {
    for (int seed = 0; seed < 4; seed++) {
        moe_model A, B, Bin, ref, out;
        random_model(&A, 5, 6, 7, ACT_SILU_GLU, 100 + seed);
        random_model(&B, 5, 6, 7, ACT_SILU_GLU, 200 + seed);
        moe_clone(&Bin, &B);
        align_opts o;
        align_opts_default(&o);
        align_result r, r2;
        ms_err err;
        CHECK(align_models_inplace(&A, &Bin, &o, &r, &err) == 0, "in place: %s", err.msg);
        gather_reference(&ref, &B, &r);
        CHECK(!memcmp(Bin.mem, ref.mem, B.nparams * sizeof(float)), "seed %d: in place == gather", seed);
        CHECK(align_models(&A, &B, &o, &out, &r2, &err) == 0, "align_models: %s", err.msg);
        CHECK(!memcmp(Bin.mem, out.mem, B.nparams * sizeof(float)), "seed %d: in place == align_models", seed);
        int moved = 0;
        for (int i = 0; i < 5; i++) moved |= r.order[i] != i;
        for (int q = 0; q < 5 * 7; q++) moved |= r.hidden_perm[q] != q % 7;
        CHECK(moved, "seed %d: the alignment moved something (else the check is empty)", seed);
        align_result_free(&r);
        align_result_free(&r2);
        moe_free(&A), moe_free(&B), moe_free(&Bin), moe_free(&ref), moe_free(&out);
    }
}

/* An expert_source over a held model that copies only the parts asked for and
 * scribbles over the rest, so a reader that used a part it did not ask for is
 * caught; reads counts the calls. */
typedef struct {
    const moe_model *m;
    int reads;
} held_source;

static int held_read(void *ctx, int e, unsigned parts, moe_expert *dst, ms_err *err) {
    (void)err;
    held_source *s = ctx;
    const moe_config *c = &s->m->cfg;
    const moe_expert *x = &s->m->experts[e];
    size_t hd = (size_t)c->h * c->d;
    float *arr[3][2] = {{dst->fc1_w, dst->fc1_b}, {dst->fc2_w, dst->fc2_b}, {dst->fc3_w, dst->fc3_b}};
    const float *src[3][2] = {{x->fc1_w, x->fc1_b}, {x->fc2_w, x->fc2_b}, {x->fc3_w, x->fc3_b}};
    size_t len[3][2] = {{hd, (size_t)c->h}, {hd, (size_t)c->d}, {hd, (size_t)c->h}};
    for (int q = 0; q < 3; q++)
        for (int k = 0; k < 2 && arr[q][k]; k++)
            for (size_t i = 0; i < len[q][k]; i++) arr[q][k][i] = parts >> q & 1 ? src[q][k][i] : NAN;
    s->reads++;
    return 0;
}

/* Streamed costs and alignments equal the held ones bit for bit: both sides of
 * the expert cost (with blocks of one row and the default), equal experts' exact
 * zeros, and align_models_stream + align_stream_slot against align_models_inplace. */
static void test_streamed_equal(void) {
    const struct {
        int n, d, h;
        moe_act act;
    } S[] = {{3, 7, 5, ACT_SILU_GLU}, {4, 6, 9, ACT_RELU}, {5, 6, 7, ACT_SILU_GLU}};
    for (size_t k = 0; k < sizeof S / sizeof S[0]; k++) {
        moe_model A, B;
        int n = S[k].n;
        random_model(&A, n, S[k].d, S[k].h, S[k].act, 30 + k);
        random_model(&B, n, S[k].d, S[k].h, S[k].act, 40 + k);
        held_source ha = {&A, 0}, hb = {&B, 0}, hself = {&A, 0};
        expert_source sa = {held_read, &ha}, sb = {held_read, &hb}, sself = {held_read, &hself};
        double *C0 = malloc(sizeof(double) * n * n), *C1 = malloc(sizeof(double) * n * n);
        ms_err err;
        const double blocks[3][2] = {{1, 0}, {1, 1.0}, {2, 0}}; // side, block bytes
        for (int v = 0; v < 3; v++) {
            cost_tuning t = {(int)blocks[v][0], blocks[v][1]};
            CHECK(cost_matrix_tuned(&A, NULL, &B, NULL, COST_EXPERT, 1, &t, C0, &err) == 0, "held cost: %s", err.msg);
            CHECK(cost_matrix_tuned(&A, &sa, &B, &sb, COST_EXPERT, 1, &t, C1, &err) == 0, "streamed: %s", err.msg);
            CHECK(!memcmp(C0, C1, sizeof(double) * n * n), "spec %zu variant %d: streamed cost == held", k, v);
            // A against itself, A held and streamed: the diagonal's exact zeros found
            CHECK(cost_matrix_tuned(&A, NULL, &A, &sself, COST_EXPERT, 1, &t, C1, &err) == 0, "self: %s", err.msg);
            for (int i = 0; i < n; i++) CHECK(C1[i * n + i] == 0.0, "spec %zu: streamed C[%d][%d] = %g", k, i, i, C1[i * n + i]);
        }
        CHECK(ha.reads > 0 && hb.reads > 0, "spec %zu: the sources were read", k);
        // align: B's experts held (in place) vs streamed from a copy of B
        moe_model Bin, Bsh;
        moe_clone(&Bin, &B);
        moe_clone(&Bsh, &B);
        align_opts o;
        align_opts_default(&o);
        align_result r0, r1;
        CHECK(align_models_inplace(&A, &Bin, &o, &r0, &err) == 0, "in place: %s", err.msg);
        CHECK(align_models_stream(&A, &sa, &Bsh, &sb, &o, &r1, &err) == 0, "stream: %s", err.msg);
        CHECK(!memcmp(r0.order, r1.order, sizeof(int) * n) &&
                  !memcmp(r0.hidden_perm, r1.hidden_perm, sizeof(int) * n * S[k].h),
              "spec %zu: same order and hidden permutations", k);
        CHECK(!memcmp(Bin.gate_w, Bsh.gate_w, sizeof(float) * n * S[k].d), "spec %zu: gate rows", k);
        float *mem = malloc(sizeof(float) * moe_expert_size(&B.cfg));
        moe_expert slot;
        moe_expert_carve(&slot, &B.cfg, mem);
        for (int e = 0; e < n; e++) {
            CHECK(align_stream_slot(&B.cfg, &sb, &r1, e, &slot, &err) == 0, "slot: %s", err.msg);
            CHECK(!memcmp(mem, Bin.experts[e].fc1_w, sizeof(float) * moe_expert_size(&B.cfg)),
                  "spec %zu: slot %d streamed == in place", k, e);
        }
        free(mem);
        align_result_free(&r0);
        align_result_free(&r1);
        free(C0), free(C1);
        moe_free(&A), moe_free(&B), moe_free(&Bin), moe_free(&Bsh);
    }
}

static void test_budget_counts_inputs(void) {
    moe_model A, B;
    random_model(&A, 4, 16, 16, ACT_SILU_GLU, 1);
    random_model(&B, 4, 16, 16, ACT_SILU_GLU, 2);
    double inputs = 4.0 * (A.nparams + B.nparams);
    ms_err err;
    char lim[64];
    // the inputs alone do not fit: refused, naming what the inputs take
    snprintf(lim, sizeof lim, "%.0f", inputs * 0.9);
    setenv("MOESCOPE_MAX_MEMORY", lim, 1);
    env_refresh();
    CHECK(ms_limits_check(&A, &B, NULL, MS_USE_WM | MS_USE_COST, &err) != 0 &&
              strstr(err.msg, "on top of the") && strstr(err.msg, "the inputs take as float32"),
          "inputs over the machine: %s", err.msg);
    // room for the inputs and what they derive: accepted
    snprintf(lim, sizeof lim, "%.0f", inputs * 3);
    setenv("MOESCOPE_MAX_MEMORY", lim, 1);
    env_refresh();
    CHECK(ms_limits_check(&A, &B, NULL, MS_USE_WM | MS_USE_COST, &err) == 0, "fits: %s", err.msg);
    unsetenv("MOESCOPE_MAX_MEMORY");
    env_refresh();
    moe_free(&A);
    moe_free(&B);
}

/* The exact expert cost is offered at Mixtral and OLMoE sizes, not at DeepSeek-V3's
 * (2.4e16 flops), and cost_matrix then refuses with the reason instead of running for days. */
static void test_expert_cost_offered(void) {
    moe_config c = {0};
    c.act = ACT_SILU_GLU;
    char why[600] = "";
    const int sizes[3][4] = {{8, 4096, 14336, 1}, {64, 2048, 1024, 0}, {256, 7168, 2048, 1}}; // + streamed
    for (int k = 0; k < 3; k++) {
        c.n = sizes[k][0], c.d = sizes[k][1], c.h = sizes[k][2];
        int ok = cost_expert_offered(&c, c.n, c.n, sizes[k][3], why, sizeof why);
        CHECK(ok == (k < 2), "size %d: offered %d (%.3g flops)", k, ok, cost_expert_flops(&c, c.n, c.n));
    }
    CHECK(strstr(why, "not offered") && strstr(why, "--method gate") && strstr(why, "2.4e+16"),
          "the reason: %s", why);
    double f = cost_expert_flops(&c, c.n, c.n); // the d side's
    CHECK(f > 2e14 && f < 4e14, "DeepSeek-V3-sized expert cost %.3g flops on the d side", f);
}

/* m's experts as a mapped layer's: weights as float32 views of m's own (wref),
 * fc*_w NULL; *ex is the experts array to free */
static moe_model mapped_view(const moe_model *m, moe_expert **ex) {
    moe_model v = *m;
    const moe_config *c = &m->cfg;
    *ex = calloc((size_t)c->n, sizeof(moe_expert));
    for (int e = 0; e < c->n; e++) {
        moe_expert *x = &(*ex)[e];
        const moe_expert *y = &m->experts[e];
        *x = *y;
        x->w1 = (wref){.p = y->fc1_w, .dt = WP_F32, .ld = (size_t)c->d};
        x->w2 = (wref){.p = y->fc2_w, .dt = WP_F32, .ld = (size_t)c->h};
        x->w3 = (wref){.p = y->fc3_w, .dt = WP_F32, .ld = (size_t)c->d};
        x->fc1_w = x->fc2_w = x->fc3_w = NULL;
    }
    v.experts = *ex;
    return v;
}

/* A mapped layer's expert cost (its experts read and formed on threads of their
 * own, in groups of blocks) equals the held one bit for bit at 1 and 2 threads,
 * with one block a group and every block in one. */
static void test_mapped_cost_threads(void) {
    int n = 4, d = 96, h = 160;
    moe_model A, B;
    random_model(&A, n, d, h, ACT_SILU_GLU, 77);
    random_model(&B, n, d, h, ACT_SILU_GLU, 78);
    moe_expert *ea, *eb;
    moe_model Am = mapped_view(&A, &ea), Bm = mapped_view(&B, &eb);
    CHECK(moe_is_mapped(&Am) && moe_is_mapped(&Bm), "the views are mapped layers");
    expert_source sa = moe_mapped_source(&Am), sb = moe_mapped_source(&Bm);
    double C0[16], C1[16];
    ms_err err;
    const double bytes[2] = {1.0, 0}; // one block of one row a group; the default
    for (int v = 0; v < 2; v++) {
        cost_tuning t = {1, bytes[v]};
        CHECK(cost_matrix_tuned(&A, NULL, &B, NULL, COST_EXPERT, 1, &t, C0, &err) == 0, "held: %s", err.msg);
        for (int k = 1; k <= 2; k++) {
            blas_threads_default(k);
            CHECK(cost_matrix_tuned(&Am, &sa, &Bm, &sb, COST_EXPERT, 1, &t, C1, &err) == 0, "mapped: %s", err.msg);
            CHECK(!memcmp(C0, C1, sizeof C0), "variant %d, %d threads: mapped cost == held", v, k);
        }
        blas_threads_default(1);
    }
    free(ea), free(eb);
    moe_free(&A), moe_free(&B);
}

/* m's experts as a Conv1D layer's mapped views: each weight stored transposed
 * ([in, out], wref.tr) in *store, the biases m's own; *ex the experts array */
static moe_model conv1d_view(const moe_model *m, moe_expert **ex, float **store) {
    moe_model v = *m;
    const moe_config *c = &m->cfg;
    size_t h = (size_t)c->h, d = (size_t)c->d, hd = h * d;
    int glu = moe_act_glu(c->act);
    *ex = calloc((size_t)c->n, sizeof(moe_expert));
    *store = malloc(sizeof(float) * hd * 3 * (size_t)c->n);
    for (int e = 0; e < c->n; e++) {
        moe_expert *x = &(*ex)[e];
        const moe_expert *y = &m->experts[e];
        float *t1 = *store + 3 * hd * (size_t)e, *t2 = t1 + hd, *t3 = t2 + hd;
        for (size_t u = 0; u < h; u++)
            for (size_t k = 0; k < d; k++) {
                t1[k * h + u] = y->fc1_w[u * d + k]; // W1 (h, d) stored (d, h)
                t2[u * d + k] = y->fc2_w[k * h + u]; // W2 (d, h) stored (h, d)
                if (glu) t3[k * h + u] = y->fc3_w[u * d + k];
            }
        *x = *y;
        x->w1 = (wref){.p = t1, .dt = WP_F32, .ld = h, .tr = 1};
        x->w2 = (wref){.p = t2, .dt = WP_F32, .ld = d, .tr = 1};
        x->w3 = glu ? (wref){.p = t3, .dt = WP_F32, .ld = h, .tr = 1} : (wref){0};
        x->fc1_w = x->fc2_w = x->fc3_w = NULL;
    }
    v.experts = *ex;
    return v;
}

/* The expert cost read where a Conv1D layer's mapped weights lie (transposed, no
 * copy: the explorer's first screen) equals the held one (the Grams' products in
 * the other layout: float32 rounding at most), at 1 and 2 threads, in one block and
 * in blocks of a row; equal experts cost exactly 0 there too. */
static void test_conv1d_view_cost(void) {
    const struct {
        int n, d, h;
        moe_act act;
    } S[] = {{4, 24, 40, ACT_RELU}, {3, 17, 9, ACT_SILU_GLU}};
    for (size_t k = 0; k < sizeof S / sizeof S[0]; k++) {
        int n = S[k].n;
        moe_model A, B;
        random_model(&A, n, S[k].d, S[k].h, S[k].act, 90 + k);
        random_model(&B, n, S[k].d, S[k].h, S[k].act, 95 + k);
        moe_expert *ea, *eb;
        float *ta, *tb;
        moe_model Av = conv1d_view(&A, &ea, &ta), Bv = conv1d_view(&B, &eb, &tb);
        expert_source sa = moe_mapped_source(&Av), sb = moe_mapped_source(&Bv);
        double *C0 = malloc(sizeof(double) * n * n), *C1 = malloc(sizeof(double) * n * n);
        ms_err err;
        const double bytes[2] = {1.0, 0};
        for (int v = 0; v < 2; v++) {
            cost_tuning t = {1, bytes[v]};
            CHECK(cost_matrix_tuned(&A, NULL, &B, NULL, COST_EXPERT, 1, &t, C0, &err) == 0, "held: %s", err.msg);
            double scale = max_abs(C0, n * n);
            for (int th = 1; th <= 2; th++) {
                blas_threads_default(th);
                CHECK(cost_matrix_tuned(&Av, &sa, &Bv, &sb, COST_EXPERT, 1, &t, C1, &err) == 0, "view: %s", err.msg);
                CHECK(max_diff(C0, C1, n * n) <= 1e-6 * scale, "spec %zu variant %d, %d threads: view cost %g off",
                      k, v, th, max_diff(C0, C1, n * n) / scale);
            }
            blas_threads_default(1);
            CHECK(cost_matrix_tuned(&Av, &sa, &Av, &sa, COST_EXPERT, 1, &t, C1, &err) == 0, "self: %s", err.msg);
            for (int i = 0; i < n; i++) CHECK(C1[i * n + i] == 0.0, "spec %zu: view C[%d][%d] = %g", k, i, i, C1[i * n + i]);
        }
        free(C0), free(C1), free(ea), free(eb), free(ta), free(tb);
        moe_free(&A), moe_free(&B);
    }
}

int main(void) {
    test_mapped_cost_threads();
    test_conv1d_view_cost();
    test_cost_sides();
    test_align_inplace();
    test_streamed_equal();
    test_expert_cost_offered();
    test_budget_counts_inputs();
    return test_summary("test_realsize");
}
