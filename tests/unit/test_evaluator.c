/* test_evaluator.c - the batched forward pass against the plain-loop reference
 * on random models of every variant, routing rules, the symmetry actions
 * (same function, moved parameters), save/load round trips and the model
 * helpers (clone, interpolate, compatibility, heads). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/evaluator.h"
#include "model/model.h"
#include "model/moe_kernels.h"
#include "core/rng.h"
#include "io/evalset.h"
#include "io/model_io.h"
#include "model/symmetry.h"
#include "testlib.h"

static void fill_random(moe_model *m, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < m->nparams; i++) m->mem[i] = (float)(0.4 * rng_normal(&r));
    if (m->norm_w)
        for (int j = 0; j < m->cfg.d; j++) m->norm_w[j] = 1.0f + 0.1f * (float)rng_normal(&r);
}

static void make_model(moe_model *m, int n, int d, int h, moe_router router, int k, moe_act act,
                       int s, int C, int norm, int residual, uint64_t seed) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = n; c.d = d; c.h = h; c.k = k; c.s = s; c.C = C;
    c.router = router; c.act = act; c.residual = residual;
    c.has_gate_bias = c.has_expert_bias = 1;
    c.has_head = C > 0;
    c.has_norm = C > 0 && norm;
    moe_alloc(m, &c);
    fill_random(m, seed);
    m->layer = ms_strdup("moe");
}

static float *random_inputs(int B, int d, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    float *X = ms_malloc((size_t)B * d * sizeof(float));
    for (size_t i = 0; i < (size_t)B * d; i++) X[i] = (float)rng_normal(&r);
    return X;
}

static double max_abs_diff(const float *a, const float *b, size_t len) {
    double mx = 0;
    for (size_t i = 0; i < len; i++) {
        double df = fabs((double)a[i] - b[i]);
        if (df > mx) mx = df;
    }
    return mx;
}

static double param_diff(const moe_model *a, const moe_model *b) {
    return max_abs_diff(a->mem, b->mem, a->nparams);
}

typedef struct {
    const char *name;
    int n, d, h;
    moe_router router;
    int k;
    moe_act act;
    int s, C, norm, residual;
} variant;

static const variant VARIANTS[] = {
    {"dense relu", 4, 8, 16, ROUTER_DENSE, 2, ACT_RELU, 0, 3, 1, 1},
    {"dense gelu", 5, 12, 10, ROUTER_DENSE, 2, ACT_GELU, 0, 4, 0, 1},
    {"dense silu_glu shared", 4, 8, 16, ROUTER_DENSE, 2, ACT_SILU_GLU, 2, 3, 1, 0},
    {"top-1 relu", 4, 8, 16, ROUTER_TOPK, 1, ACT_RELU, 0, 3, 1, 1},
    {"top-2 gelu", 8, 16, 24, ROUTER_TOPK, 2, ACT_GELU, 1, 0, 0, 1},
    {"top-3 silu_glu", 6, 8, 8, ROUTER_TOPK, 3, ACT_SILU_GLU, 0, 5, 1, 1},
    {"top-n relu headless", 3, 7, 9, ROUTER_TOPK, 3, ACT_RELU, 0, 0, 0, 0},
};
#define NVARIANTS ((int)(sizeof VARIANTS / sizeof VARIANTS[0]))

static void test_forward_vs_ref(void) {
    for (int v = 0; v < NVARIANTS; v++) {
        const variant *V = &VARIANTS[v];
        moe_model m;
        make_model(&m, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm,
                   V->residual, 100 + v);
        int Bs[3] = {1, 37, 600}; // 600 crosses the 256-row chunks
        for (int bi = 0; bi < 3; bi++) {
            int B = Bs[bi];
            float *X = random_inputs(B, V->d, 7 + bi);
            float *Z1 = ms_malloc((size_t)B * V->d * sizeof(float));
            float *Z2 = ms_malloc((size_t)B * V->d * sizeof(float));
            float *G1 = ms_malloc((size_t)B * V->n * sizeof(float));
            float *G2 = ms_malloc((size_t)B * V->n * sizeof(float));
            moe_forward(&m, X, B, Z1, G1);
            moe_forward_ref(&m, X, B, Z2, G2);
            double dz = max_abs_diff(Z1, Z2, (size_t)B * V->d);
            double dg = max_abs_diff(G1, G2, (size_t)B * V->n);
            CHECK(dz < 1e-4, "%s B=%d: forward vs ref max |dZ| = %g", V->name, B, dz);
            CHECK(dg < 1e-5, "%s B=%d: forward vs ref max |dG| = %g", V->name, B, dg);
            // gate rows sum to 1, and top-k has exactly k non-zeros
            int bad = 0;
            for (int b = 0; b < B; b++) {
                double sum = 0;
                int nz = 0;
                for (int i = 0; i < V->n; i++) {
                    sum += G1[(size_t)b * V->n + i];
                    nz += G1[(size_t)b * V->n + i] > 0;
                }
                if (fabs(sum - 1) > 1e-5) bad++;
                if (V->router == ROUTER_TOPK && nz != V->k) bad++;
            }
            CHECK(bad == 0, "%s B=%d: %d rows with a bad gate", V->name, B, bad);
            // the forward pass must not depend on how the batch is cut
            if (B == 600) {
                float *Z3 = ms_malloc((size_t)B * V->d * sizeof(float));
                moe_forward(&m, X, 100, Z3, NULL);
                moe_forward(&m, X + 100 * V->d, B - 100, Z3 + 100 * V->d, NULL);
                CHECK(max_abs_diff(Z1, Z3, (size_t)B * V->d) < 1e-5, "%s: batch split changes Z",
                      V->name);
                // moe_forward_until: not stopped, moe_forward's bits; stopped, before its experts
                atomic_int stop = 0;
                moe_forward_until(&m, X, B, Z3, NULL, &stop);
                CHECK(!memcmp(Z1, Z3, (size_t)B * V->d * sizeof(float)), "%s: moe_forward_until not stopped "
                      "gives moe_forward's bits", V->name);
                atomic_store(&stop, 1);
                moe_forward_until(&m, X, B, Z3, NULL, &stop);
                CHECK(memcmp(Z1, Z3, (size_t)B * V->d * sizeof(float)), "%s: stopped, it leaves its experts out",
                      V->name);
                free(Z3);
            }
            free(X); free(Z1); free(Z2); free(G1); free(G2);
        }
        moe_free(&m);
    }
}

static void test_route(void) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = 4;
    c.router = ROUTER_TOPK;
    c.k = 2;
    float s[4] = {1.0f, 3.0f, 1.0f, 1.0f}, g[4];
    moe_route(&c, s, 1, g);
    // top-2: expert 1 and, of the three tied at 1.0, the smallest index 0
    CHECK(g[1] > 0 && g[0] > 0 && g[2] == 0 && g[3] == 0, "ties to the smaller index: %g %g %g %g",
          g[0], g[1], g[2], g[3]);
    CHECK_CLOSE(g[1], exp(3.0) / (exp(3.0) + exp(1.0)), 1e-6, "top-2 softmax");
    float s2[4] = {2.0f, 2.0f, 2.0f, 2.0f};
    moe_route(&c, s2, 1, g);
    CHECK(g[0] == 0.5f && g[1] == 0.5f && g[2] == 0 && g[3] == 0, "all tied: first two");
    c.k = 1;
    moe_route(&c, s2, 1, g);
    CHECK(g[0] == 1.0f && g[1] == 0, "top-1 all tied: expert 0");
    // dense: stable for huge scores
    c.router = ROUTER_DENSE;
    float s3[4] = {1000.0f, 999.0f, -1000.0f, 0.0f};
    moe_route(&c, s3, 1, g);
    CHECK(isfinite(g[0]) && fabs(g[0] + g[1] + g[2] + g[3] - 1) < 1e-6, "dense softmax stable");
    CHECK_CLOSE(g[0], 1.0 / (1.0 + exp(-1.0)), 1e-6, "dense softmax value");
    // top-k with k = n equals dense
    float g2[4];
    c.router = ROUTER_TOPK;
    c.k = 4;
    float s4[4] = {0.3f, -1.0f, 2.0f, 0.5f};
    moe_route(&c, s4, 1, g);
    c.router = ROUTER_DENSE;
    moe_route(&c, s4, 1, g2);
    CHECK(max_abs_diff(g, g2, 4) < 1e-7, "top-n == dense");
}

static void test_symmetries(void) {
    for (int v = 0; v < NVARIANTS; v++) {
        const variant *V = &VARIANTS[v];
        moe_model m, p;
        make_model(&m, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm,
                   V->residual, 300 + v);
        int B = 300;
        float *X = random_inputs(B, V->d, 11);
        float *Z0 = ms_malloc((size_t)B * V->d * sizeof(float));
        float *Z1 = ms_malloc((size_t)B * V->d * sizeof(float));
        float *G0 = ms_malloc((size_t)B * V->n * sizeof(float));
        float *G1 = ms_malloc((size_t)B * V->n * sizeof(float));
        moe_forward(&m, X, B, Z0, G0);
        for (int translate = 0; translate <= 1; translate++) {
            moe_clone(&p, &m);
            int *pi = ms_malloc((size_t)V->n * sizeof(int));
            moe_scramble(&p, 42 + translate, translate, pi);
            moe_forward(&p, X, B, Z1, G1);
            double dz = max_abs_diff(Z0, Z1, (size_t)B * V->d);
            CHECK(dz < 1e-4, "%s scramble(translate=%d): same function, max |dZ| = %g", V->name,
                  translate, dz);
            CHECK(param_diff(&m, &p) > 1e-3, "%s scramble: parameters moved", V->name);
            // gate column i of the scrambled model is the original's column pi[i]
            double dg = 0;
            for (int b = 0; b < B; b++)
                for (int i = 0; i < V->n; i++) {
                    double df = fabs(G1[(size_t)b * V->n + i] - G0[(size_t)b * V->n + pi[i]]);
                    if (df > dg) dg = df;
                }
            CHECK(dg < 1e-5, "%s scramble: G columns follow pi (max diff %g)", V->name, dg);
            // the metadata order string is pi
            char want[256] = "";
            size_t len = 0;
            for (int i = 0; i < V->n; i++)
                len += (size_t)snprintf(want + len, sizeof want - len, i ? " %d" : "%d", pi[i]);
            const char *got = moe_meta_get(&p, "moescope.scramble.order");
            CHECK(got && !strcmp(got, want), "%s: scramble.order '%s' vs '%s'", V->name,
                  got ? got : "(none)", want);
            const char *tr = moe_meta_get(&p, "moescope.scramble.translate");
            CHECK(tr && tr[0] == (translate ? '1' : '0'), "%s: scramble.translate", V->name);
            // undo the expert order with the inverse: gate rows match up to a translation
            int *inv = ms_malloc((size_t)V->n * sizeof(int));
            for (int i = 0; i < V->n; i++) inv[pi[i]] = i;
            moe_permute_experts(&p, inv);
            double dt = 0;
            for (int i = 1; i < V->n; i++)
                for (int j = 0; j < V->d; j++) {
                    double a = p.gate_w[i * V->d + j] - m.gate_w[i * V->d + j];
                    double b0 = p.gate_w[j] - m.gate_w[j];
                    if (fabs(a - b0) > dt) dt = fabs(a - b0);
                }
            CHECK(dt < 1e-5, "%s: inverse order gives back the gate up to a common shift (%g)",
                  V->name, dt);
            free(inv);
            free(pi);
            moe_free(&p);
        }
        // each action alone
        moe_clone(&p, &m);
        int P[64];
        for (int u = 0; u < V->h; u++) P[u] = (u * 5 + 3) % V->h;
        int ok = 1;
        for (int u = 0; u < V->h && ok; u++)
            for (int w = u + 1; w < V->h; w++)
                if (P[u] == P[w]) ok = 0;
        if (!ok)
            for (int u = 0; u < V->h; u++) P[u] = V->h - 1 - u;
        moe_expert_permute_hidden(&p.experts[0], &p.cfg, P);
        CHECK(p.experts[0].fc1_w[0] == m.experts[0].fc1_w[(size_t)P[0] * V->d], "%s: fc1 row 0 <- row P[0]",
              V->name);
        CHECK(p.experts[0].fc2_w[1] == m.experts[0].fc2_w[P[1]], "%s: fc2 column 1 <- column P[1]",
              V->name);
        float *cW = ms_malloc((size_t)V->d * sizeof(float));
        for (int j = 0; j < V->d; j++) cW[j] = 0.5f * (float)(j % 3) - 0.25f;
        moe_translate_gate(&p, cW, 0.75f);
        if (V->s >= 2) {
            int sp[2] = {1, 0};
            moe_permute_shared(&p, sp);
            CHECK(p.shared[0].fc1_b[0] == m.shared[1].fc1_b[0], "%s: shared order", V->name);
        }
        moe_forward(&p, X, B, Z1, NULL);
        double dz = max_abs_diff(Z0, Z1, (size_t)B * V->d);
        CHECK(dz < 1e-4, "%s: hidden perm + translate + shared perm keep Z (%g)", V->name, dz);
        free(cW);
        moe_free(&p);
        free(X); free(Z0); free(Z1); free(G0); free(G1);
        moe_free(&m);
    }
}

static void test_save_load(void) {
    char dir[] = "/tmp/test_evaluator_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256], path2[256];
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    snprintf(path2, sizeof path2, "%s/b.safetensors", dir);
    for (int v = 0; v < NVARIANTS; v++) {
        const variant *V = &VARIANTS[v];
        moe_model m, r;
        make_model(&m, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm,
                   V->residual, 500 + v);
        moe_meta_set(&m, "seed", "17");
        moe_meta_set(&m, "dataset", "toy");
        moe_meta_set(&m, "seed", "18"); // replaces
        ms_err err;
        int rc = moe_save(&m, path, &err);
        CHECK(rc == 0, "%s: save: %s", V->name, rc ? err.msg : "");
        if (rc) { moe_free(&m); continue; }
        rc = moe_load(&r, path, NULL, NULL, &err);
        CHECK(rc == 0, "%s: load: %s", V->name, rc ? err.msg : "");
        if (rc) { moe_free(&m); continue; }
        CHECK(r.cfg.n == m.cfg.n && r.cfg.d == m.cfg.d && r.cfg.h == m.cfg.h && r.cfg.C == m.cfg.C,
              "%s: shape round trip", V->name);
        CHECK(r.cfg.router == m.cfg.router && r.cfg.act == m.cfg.act && r.cfg.s == m.cfg.s &&
                  r.cfg.residual == m.cfg.residual && r.cfg.has_norm == m.cfg.has_norm &&
                  r.cfg.has_head == m.cfg.has_head && (m.cfg.router == ROUTER_DENSE || r.cfg.k == m.cfg.k),
              "%s: config fields round trip", V->name);
        CHECK(r.nparams == m.nparams && memcmp(r.mem, m.mem, m.nparams * sizeof(float)) == 0,
              "%s: parameters round trip bit-exactly", V->name);
        const char *sd = moe_meta_get(&r, "seed");
        CHECK(sd && !strcmp(sd, "18"), "%s: metadata kept", V->name);
        CHECK(moe_meta_get(&r, "moescope.router") == NULL, "%s: moescope.* keys parsed, not kept",
              V->name);
        CHECK(moe_check_compatible(&m, &r, &err) == 0, "%s: compatible with itself", V->name);
        CHECK(moe_heads_equal(&m, &r) == 1, "%s: heads equal", V->name);
        // clone and interpolate
        moe_model c, o;
        moe_clone(&c, &r);
        CHECK(param_diff(&c, &r) == 0 && c.nmeta == r.nmeta && !strcmp(c.path, r.path),
              "%s: clone", V->name);
        fill_random(&c, 900 + v);
        moe_clone(&o, &r);
        moe_interpolate(&o, &r, &c, 0.0);
        CHECK(param_diff(&o, &r) == 0, "%s: interpolate t=0", V->name);
        moe_interpolate(&o, &r, &c, 1.0);
        CHECK(param_diff(&o, &c) == 0, "%s: interpolate t=1", V->name);
        moe_interpolate(&o, &r, &c, 0.25);
        CHECK(fabs(o.gate_w[1] - (0.75 * r.gate_w[1] + 0.25 * c.gate_w[1])) < 1e-6,
              "%s: interpolate t=0.25", V->name);
        if (V->C) CHECK(moe_heads_equal(&r, &c) == 0, "%s: heads differ after refill", V->name);
        moe_free(&c);
        moe_free(&o);
        moe_free(&r);
        moe_free(&m);
    }
    // incompatible models: the message names both files and the field
    moe_model a, b;
    make_model(&a, 4, 8, 16, ROUTER_DENSE, 2, ACT_RELU, 0, 3, 1, 1, 1);
    make_model(&b, 8, 8, 16, ROUTER_DENSE, 2, ACT_RELU, 0, 3, 1, 1, 2);
    a.path = ms_strdup("a.safetensors");
    b.path = ms_strdup("b.safetensors");
    ms_err err;
    CHECK(moe_check_compatible(&a, &b, &err) == -1 &&
              strstr(err.msg, "a.safetensors and b.safetensors differ: n = 4 vs 8"),
          "incompatible n: %s", err.msg);
    moe_free(&b);
    make_model(&b, 4, 8, 16, ROUTER_TOPK, 2, ACT_RELU, 0, 3, 1, 1, 2);
    b.path = ms_strdup("b.safetensors");
    CHECK(moe_check_compatible(&a, &b, &err) == -1 && strstr(err.msg, "router"),
          "incompatible router: %s", err.msg);
    moe_free(&b);
    moe_free(&a);
    // headless: moe_eval refuses, moe_eval_layer works
    make_model(&a, 3, 4, 5, ROUTER_DENSE, 2, ACT_RELU, 0, 0, 0, 1, 3);
    evalset e;
    memset(&e, 0, sizeof e);
    e.N = 10;
    e.d = 4;
    e.C = 2;
    e.inputs = random_inputs(10, 4, 5);
    e.labels = ms_calloc(10, sizeof(int32_t));
    moe_eval_result r;
    CHECK(moe_eval(&a, &e, &r, &err) == -1 && strstr(err.msg, "no head"), "headless eval: %s",
          err.msg);
    moe_eval_result_free(&r);
    CHECK(moe_eval_layer(&a, &e, &r, &err) == 0 && r.loss > 0 && r.accuracy == -1,
          "layer-only eval");
    double sum = 0;
    for (int i = 0; i < 3; i++) sum += r.load_mean[i];
    CHECK_CLOSE(sum, 1.0, 1e-6, "load_mean sums to 1");
    moe_eval_result_free(&r);
    moe_free(&a);
    // moe_eval_check: width and label range
    make_model(&a, 3, 4, 5, ROUTER_DENSE, 2, ACT_RELU, 0, 2, 0, 1, 3);
    e.path = ms_strdup("eval.safetensors");
    CHECK(moe_eval_check(&a, &e, &err) == 0, "labels 0 fit C = 2");
    e.labels[3] = 2;
    CHECK(moe_eval_check(&a, &e, &err) == -1 && strstr(err.msg, "out of range"), "label 2 >= C: %s",
          err.msg);
    e.labels[3] = 1;
    e.d = 5;
    CHECK(moe_eval_check(&a, &e, &err) == -1 &&
              strstr(err.msg, "eval.safetensors: inputs have width 5 but the layer has d = 4"),
          "width: %s", err.msg);
    moe_free(&a);
    evalset_free(&e);
    unlink(path);
    unlink(path2);
    rmdir(dir);
}

/* Routers of the real families (see moe_config): the batched forward against
 * the reference, a few routing rules by hand, and the native file round trip
 * of every router field and tensor (same outputs after save + load). */
typedef struct {
    const char *name;
    int n, k, s, hs;
    moe_score score;
    moe_renorm renorm;
    float scale, eps;
    int n_group, topk_group;
    moe_group_score gsc;
    int corr, shared_gated, out_bias;
    moe_act act;
    float limit;
} router_variant;

static const router_variant RVARIANTS[] = {
    {"softmax top-3 raw (qwen3 norm off)", 8, 3, 0, 0, SCORE_SOFTMAX, RENORM_NO, 1, 0, 0, 0, 0, 0, 0, 0, ACT_SILU_GLU, 0},
    {"qwen2 gated shared", 8, 2, 1, 12, SCORE_SOFTMAX, RENORM_NO, 1, 0, 0, 0, 0, 0, 1, 0, ACT_SILU_GLU, 0},
    {"deepseek_v2 groups max x16", 8, 2, 1, 12, SCORE_SOFTMAX, RENORM_NO, 16, 0, 4, 2, GROUP_MAX, 0, 0, 0, ACT_SILU_GLU, 0},
    {"deepseek_v3 sigmoid bias top2-sum", 8, 3, 1, 6, SCORE_SIGMOID, RENORM_YES, 2.5f, 1e-20f, 4, 2, GROUP_TOP2_SUM, 1, 0, 0, ACT_SILU_GLU, 0},
    {"sigmoid raw dense-k", 6, 6, 0, 0, SCORE_SIGMOID, RENORM_NO, 1, 0, 0, 0, 0, 1, 0, 0, ACT_SILU_GLU, 0},
    {"switch top-1 raw relu", 4, 1, 0, 0, SCORE_SOFTMAX, RENORM_NO, 1, 0, 0, 0, 0, 0, 0, 0, ACT_RELU, 0},
    {"jetmoe output bias", 8, 2, 0, 0, SCORE_SOFTMAX, RENORM_YES, 1, 0, 0, 0, 0, 0, 0, 1, ACT_SILU_GLU, 0},
    {"gpt_oss clamped swiglu", 8, 2, 0, 0, SCORE_SOFTMAX, RENORM_YES, 1, 0, 0, 0, 0, 0, 0, 0, ACT_GPT_OSS, 1.5f},
};
#define NRVARIANTS ((int)(sizeof RVARIANTS / sizeof RVARIANTS[0]))

static void make_router_model(moe_model *m, const router_variant *V, uint64_t seed) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = V->n; c.d = 10; c.h = 7; c.k = V->k; c.s = V->s; c.hs = V->hs;
    c.router = ROUTER_TOPK; c.act = V->act; c.act_limit = V->limit;
    c.score = V->score; c.renorm = V->renorm; c.scale = V->scale; c.renorm_eps = V->eps;
    c.n_group = V->n_group; c.topk_group = V->topk_group; c.group_score = V->gsc;
    c.has_corr_bias = V->corr; c.shared_gated = V->shared_gated; c.has_out_bias = V->out_bias;
    c.has_gate_bias = c.has_expert_bias = 1;
    moe_alloc(m, &c);
    fill_random(m, seed);
    for (size_t i = 0; i < (size_t)c.n * c.d; i++) m->gate_w[i] *= 3.0f; // decisive routing
    // a positive selection bias keeps every selection score > 0, so the groups'
    // zero mask never outranks a kept expert (test_route_rules shows when it does)
    if (m->corr_b)
        for (int i = 0; i < c.n; i++) m->corr_b[i] = fabsf(m->corr_b[i]);
    m->layer = ms_strdup("moe");
}

static void test_router_variants(void) {
    char dir[] = "/tmp/test_evaluator_rXXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/r.safetensors", dir);
    int B = 300;
    for (int v = 0; v < NRVARIANTS; v++) {
        const router_variant *V = &RVARIANTS[v];
        moe_model m, r;
        make_router_model(&m, V, 40 + v);
        float *X = random_inputs(B, 10, 3 + v);
        float *Z1 = ms_malloc((size_t)B * 10 * sizeof(float)), *Z2 = ms_malloc((size_t)B * 10 * sizeof(float));
        float *G1 = ms_malloc((size_t)B * V->n * sizeof(float)), *G2 = ms_malloc((size_t)B * V->n * sizeof(float));
        moe_forward(&m, X, B, Z1, G1);
        moe_forward_ref(&m, X, B, Z2, G2);
        CHECK(max_abs_diff(Z1, Z2, (size_t)B * 10) < 1e-4, "%s: forward vs ref", V->name);
        CHECK(max_abs_diff(G1, G2, (size_t)B * V->n) < 1e-5, "%s: the same gates", V->name);
        int bad = 0;
        for (int b = 0; b < B; b++) {
            int nz = 0, outside = 0;
            double sum = 0;
            for (int i = 0; i < V->n; i++) {
                float g = G1[(size_t)b * V->n + i];
                nz += g > 0;
                sum += g;
                // group-limited: every chosen expert lies in one of topk_group groups
                if (g > 0 && V->n_group > 1) outside |= 1 << (i / (V->n / V->n_group));
            }
            if (nz != V->k) bad++;
            if (V->n_group > 1 && __builtin_popcount((unsigned)outside) > V->topk_group) bad++;
            if (V->renorm == RENORM_YES && fabs(sum - V->scale) > 1e-5 * V->scale) bad++;
        }
        CHECK(bad == 0, "%s: %d rows break the routing rules", V->name, bad);
        ms_err err;
        int rc = moe_save(&m, path, &err);
        CHECK(rc == 0, "%s: save: %s", V->name, rc ? err.msg : "");
        rc = rc ? rc : moe_load(&r, path, NULL, NULL, &err);
        CHECK(rc == 0, "%s: load: %s", V->name, rc ? err.msg : "");
        if (rc == 0) {
            CHECK(moe_check_compatible(&m, &r, &err) == 0, "%s: round trip keeps the router: %s",
                  V->name, err.msg);
            CHECK(r.nparams == m.nparams && !memcmp(r.mem, m.mem, m.nparams * sizeof(float)),
                  "%s: parameters round trip", V->name);
            moe_forward(&r, X, B, Z2, NULL);
            CHECK(max_abs_diff(Z1, Z2, (size_t)B * 10) == 0, "%s: same outputs after reload", V->name);
            moe_free(&r);
        }
        free(X); free(Z1); free(Z2); free(G1); free(G2);
        moe_free(&m);
    }
    unlink(path);
    rmdir(dir);
}

static void test_route_rules(void) {
    // DeepSeek-V3: weights from the unbiased sigmoid, selection by score + bias;
    // dropped groups are masked with 0, so a kept expert with a negative biased
    // score loses to a masked one (as the reference code does)
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = 4; c.k = 2; c.router = ROUTER_TOPK; c.score = SCORE_SIGMOID;
    float s[4] = {0.0f, 1.0f, 2.0f, -1.0f}, corr[4] = {0.0f, 0.0f, -5.0f, 3.0f}, g[4];
    moe_route_full(&c, corr, s, 1, g);
    double p1 = 1 / (1 + exp(-1.0)), p3 = 1 / (1 + exp(1.0));
    CHECK(g[0] == 0 && g[2] == 0 && fabs(g[1] - p1 / (p1 + p3)) < 1e-6 &&
              fabs(g[3] - p3 / (p1 + p3)) < 1e-6,
          "selection bias chooses, sigmoid weighs: %g %g %g %g", g[0], g[1], g[2], g[3]);
    c.n_group = 2; c.topk_group = 1; c.group_score = GROUP_MAX; c.k = 2;
    float corr2[4] = {-2.0f, -2.0f, 0.0f, 0.0f}; // group 0's q < 0, group 1 wins
    float s2[4] = {3.0f, 2.0f, -1.0f, -2.0f};
    moe_route_full(&c, corr2, s2, 1, g);
    CHECK(g[2] > 0 && g[3] > 0 && g[0] == 0 && g[1] == 0, "groups: only the kept group routes");
    c.n_group = 2; c.topk_group = 1; c.k = 2;
    float corr3[4] = {0.0f, -3.0f, 0.0f, 0.0f}; // expert 1 biased below the 0 mask of group 1
    float s3[4] = {3.0f, 0.0f, -3.0f, -3.0f};
    moe_route_full(&c, corr3, s3, 1, g);
    CHECK(g[0] > 0 && g[1] == 0 && g[2] > 0 && g[3] == 0,
          "a masked expert (0) beats a kept one with a negative biased score: %g %g %g %g", g[0],
          g[1], g[2], g[3]);
    // Switch: top-1 keeps its probability, scale multiplies
    moe_config w;
    memset(&w, 0, sizeof w);
    w.n = 3; w.k = 1; w.router = ROUTER_TOPK; w.renorm = RENORM_NO; w.scale = 2.0f;
    float s4[3] = {1.0f, 0.0f, 0.0f};
    moe_route(&w, s4, 1, g);
    CHECK(fabs(g[0] - 2.0 * exp(1.0) / (exp(1.0) + 2.0)) < 1e-6 && g[1] == 0 && g[2] == 0,
          "top-1 scaled by its probability (x scale 2): %g", g[0]);
}

static int results_identical(const moe_eval_result *a, const moe_eval_result *b, int n) {
    return memcmp(&a->loss, &b->loss, sizeof(double)) == 0 &&
           memcmp(&a->accuracy, &b->accuracy, sizeof(double)) == 0 &&
           memcmp(a->load_mean, b->load_mean, (size_t)n * sizeof(double)) == 0 &&
           memcmp(a->load_frac, b->load_frac, (size_t)n * sizeof(double)) == 0;
}

/* moe_eval / moe_eval_layer give the same bits for every thread count: one
 * thread is the reference, then 2, 3, 8 (more threads than the 3 or 4 items
 * of work) and the default. Every variant (top-k gathers rows per expert),
 * a bench-sized layer (full BLAS tiles), regression targets and a headless
 * layer. */
static void test_eval_split(void) {
    static const moe_par splits[] = {{2}, {3}, {8}, {0}};
    variant big = {"bench-sized dense relu", 8, 64, 128, ROUTER_DENSE, 2, ACT_RELU, 0, 10, 1, 1};
    for (int v = 0; v <= NVARIANTS + 1; v++) {
        const variant *V = v < NVARIANTS ? &VARIANTS[v] : &big;
        int regression = v == NVARIANTS + 1, N = v >= NVARIANTS ? 4001 : 3001;
        moe_model m;
        make_model(&m, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm,
                   V->residual, 900 + (uint64_t)v);
        evalset e;
        memset(&e, 0, sizeof e);
        e.N = N;
        e.d = V->d;
        e.C = V->C;
        e.inputs = random_inputs(N, V->d, 77 + (uint64_t)v);
        if (V->C && regression) {
            e.targets = random_inputs(N, V->C, 99);
        } else if (V->C) {
            e.labels = ms_malloc((size_t)N * sizeof(int32_t));
            for (int b = 0; b < N; b++) e.labels[b] = (b * 7 + 3) % V->C;
        }
        ms_err err;
        moe_eval_result ref, r;
        moe_par one = {1};
        int rc = V->C ? moe_eval_par(&m, &e, &one, &ref, &err)
                      : moe_eval_layer_par(&m, &e, &one, &ref, &err);
        CHECK(rc == 0 && isfinite(ref.loss), "%s: reference eval", V->name);
        for (size_t q = 0; q < sizeof splits / sizeof splits[0]; q++) {
            rc = V->C ? moe_eval_par(&m, &e, &splits[q], &r, &err)
                      : moe_eval_layer_par(&m, &e, &splits[q], &r, &err);
            CHECK(rc == 0 && results_identical(&ref, &r, V->n),
                  "%s%s: %d threads: loss %.17g vs %.17g (one thread)", V->name,
                  regression ? " (regression)" : "", splits[q].threads, r.loss, ref.loss);
            moe_eval_result_free(&r);
        }
        moe_eval_result_free(&ref);
        evalset_free(&e);
        moe_free(&m);
    }
}

/* Claim C3 in float32: a softmax router reads its gate centred over the
 * experts, so a translation of every gate row and bias, 20x their size,
 * changes no bit of the routing nor of the output. The gates are on a grid of
 * 2^-8 and the translation on one of 1/4, so the translated weights are stored
 * exactly (what remains otherwise is their rounding, no more); the inputs are
 * random floats, so raw-gate logits would round differently (and did: G moved
 * by ~1e-6). Also through moe_interpolate_routed (the curves' and landscapes'
 * mix), and a sigmoid router keeps its gate as it is (no such symmetry). */
static void test_translation_exact(void) {
    static const int vs[] = {0, 3, 4}; // dense relu, top-1 relu, top-2 gelu
    for (int q = 0; q < 3; q++) {
        const variant *V = &VARIANTS[vs[q]];
        moe_model m, p, o, M1, M2;
        make_model(&m, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm, V->residual, 31 + q);
        make_model(&o, V->n, V->d, V->h, V->router, V->k, V->act, V->s, V->C, V->norm, V->residual, 41 + q);
        for (size_t i = 0; i < (size_t)V->n * V->d + V->n; i++) // gate_w then gate_b, as carved
            m.gate_w[i] = roundf(m.gate_w[i] * 256.0f) / 256.0f;
        moe_clone(&p, &m);
        float *cW = ms_malloc((size_t)V->d * sizeof(float));
        for (int j = 0; j < V->d; j++) cW[j] = 0.25f * (float)(20 * ((j % 7) - 3) + 1);
        moe_translate_gate(&p, cW, 12.5f);
        int B = 96;
        float *X = random_inputs(B, V->d, 5 + q);
        size_t zl = (size_t)B * V->d, gl = (size_t)B * V->n;
        float *Z0 = ms_malloc(zl * sizeof(float)), *Z1 = ms_malloc(zl * sizeof(float));
        float *G0 = ms_malloc(gl * sizeof(float)), *G1 = ms_malloc(gl * sizeof(float));
        moe_forward(&m, X, B, Z0, G0);
        moe_forward(&p, X, B, Z1, G1);
        CHECK(!memcmp(G0, G1, gl * sizeof(float)) && !memcmp(Z0, Z1, zl * sizeof(float)),
              "%s: a 20x gate translation leaves every gate weight and output bit (max |dG| %g)", V->name,
              max_abs_diff(G0, G1, gl));
        moe_forward_ref(&m, X, B, Z0, G0);
        moe_forward_ref(&p, X, B, Z1, G1);
        CHECK(!memcmp(G0, G1, gl * sizeof(float)), "%s: the reference routes alike (max |dG| %g)", V->name,
              max_abs_diff(G0, G1, gl));
        moe_clone(&M1, &o);
        moe_clone(&M2, &o);
        moe_interpolate_routed(&M1, &o, &m, 0.5);
        moe_interpolate_routed(&M2, &o, &p, 0.5);
        moe_forward(&M1, X, B, Z0, G0);
        moe_forward(&M2, X, B, Z1, G1);
        CHECK(!memcmp(G0, G1, gl * sizeof(float)), "%s: the midpoint with a translated B routes alike (max |dG| %g)",
              V->name, max_abs_diff(G0, G1, gl));
        m.cfg.score = SCORE_SIGMOID; // no translation symmetry: the gate as stored
        float *W = ms_malloc(((size_t)V->n * V->d + V->n) * sizeof(float));
        moe_gate_routing(&m, W, W + (size_t)V->n * V->d);
        CHECK(!memcmp(W, m.gate_w, (size_t)V->n * V->d * sizeof(float)) &&
                  !memcmp(W + (size_t)V->n * V->d, m.gate_b, (size_t)V->n * sizeof(float)),
              "%s: a sigmoid router reads its gate uncentred", V->name);
        free(W); free(cW); free(X); free(Z0); free(Z1); free(G0); free(G1);
        moe_free(&m); moe_free(&p); moe_free(&o); moe_free(&M1); moe_free(&M2);
    }
}

int main(void) {
    test_route();
    test_route_rules();
    test_router_variants();
    test_eval_split();
    test_forward_vs_ref();
    test_symmetries();
    test_translation_exact();
    test_save_load();
    return test_summary("test_evaluator");
}
