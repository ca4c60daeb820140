/* test_net_forward.c - the network evaluator (src/network/) against its plain
 * reference (net_logits_ref: one token at a time, double sums), on networks
 * written here as checkpoints (config.json + model.safetensors) and read back
 * with net_load:
 *   - logits within 1e-5 (relative to the largest) of the reference, for MoE
 *     blocks in the middle, at the first block, at every other block; tied and
 *     untied heads with a bias; gelu_new and gelu; top-k and dense routers;
 *   - the loss is the mean next-token cross-entropy of those logits;
 *   - starting from the cached prefix changes no bit, nor does the thread count;
 *   - each MoE block's mean gate weights sum to 1 per token;
 *   - the same for ViTs (patches, CLS, bidirectional attention, Linear weights,
 *     the class loss on the CLS token): MoE first or last, 1 or 3 channels,
 *     with and without qkv biases;
 *   - a network loaded without its backbone's values (net_load_ckpt_later, the
 *     explorer's first screen) and given them later (net_load_backbone) holds the
 *     same floats at the same places as net_load's, and a cancel before that read
 *     leaves it without them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/env.h"
#include "core/progress.h"
#include "core/rng.h"
#include "io/safetensors.h"
#include "network/net_eval.h"
#include "network/net_forward.h"
#include "testlib.h"

typedef struct {
    const char *name;
    int layers, d, heads, V, P, n, k, h, shared;
    int moe[4], nmoe;
    const char *router, *act, *net_act;
    int tied, lm_bias;
} variant;

static const variant VARIANTS[] = {
    {"moe in the middle, top-2 relu", 3, 16, 2, 20, 12, 4, 2, 8, 0, {1}, 1, "topk", "relu", "gelu_new", 1, 0},
    {"moe first, dense gelu_new, shared", 2, 12, 3, 17, 10, 3, 3, 6, 1, {0}, 1, "dense", "gelu_new", "gelu", 1, 0},
    {"every other block, untied + bias", 3, 8, 2, 11, 9, 4, 2, 5, 2, {0, 2}, 2, "topk", "gelu", "gelu_new", 0, 1},
};

static float *rnd(rng_t *r, size_t n, double scale, double mean) {
    float *p = malloc(n * sizeof(float));
    for (size_t q = 0; q < n; q++) p[q] = (float)(mean + scale * rng_normal(r));
    return p;
}

/* every tensor of the network v into dir/model.safetensors, its config.json beside */
static void write_network(const variant *v, const char *dir, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    st_writer *w = st_writer_new();
    float *keep[512];
    int nk = 0;
    char name[128];
    int64_t d = v->d;
#define ADD(nm, nd, a, b, scale, mean)                                             \
    do {                                                                           \
        int64_t sh_[2] = {(a), (b)};                                               \
        keep[nk] = rnd(&r, (size_t)(a) * ((nd) > 1 ? (b) : 1), (scale), (mean));   \
        st_writer_add_f32(w, (nm), (nd), sh_, keep[nk]);                           \
        nk++;                                                                      \
    } while (0)
    ADD("transformer.wte.weight", 2, v->V, d, 0.5, 0);
    ADD("transformer.wpe.weight", 2, v->P, d, 0.3, 0);
    for (int L = 0; L < v->layers; L++) {
        int moe = 0;
        for (int i = 0; i < v->nmoe; i++) moe |= v->moe[i] == L;
        const char *ln[4] = {"ln_1.weight", "ln_1.bias", "ln_2.weight", "ln_2.bias"};
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof name, "transformer.h.%d.%s", L, ln[i]);
            ADD(name, 1, d, 0, 0.1, i % 2 ? 0.0 : 1.0);
        }
        snprintf(name, sizeof name, "transformer.h.%d.attn.c_attn.weight", L);
        ADD(name, 2, d, 3 * d, 1.5 / sqrt((double)d), 0);
        snprintf(name, sizeof name, "transformer.h.%d.attn.c_attn.bias", L);
        ADD(name, 1, 3 * d, 0, 0.1, 0);
        snprintf(name, sizeof name, "transformer.h.%d.attn.c_proj.weight", L);
        ADD(name, 2, d, d, 0.5 / sqrt((double)d), 0);
        snprintf(name, sizeof name, "transformer.h.%d.attn.c_proj.bias", L);
        ADD(name, 1, d, 0, 0.1, 0);
        if (!moe) {
            snprintf(name, sizeof name, "transformer.h.%d.mlp.c_fc.weight", L);
            ADD(name, 2, d, 4 * d, 1.0 / sqrt((double)d), 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.c_fc.bias", L);
            ADD(name, 1, 4 * d, 0, 0.1, 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.c_proj.weight", L);
            ADD(name, 2, 4 * d, d, 0.5 / sqrt(4.0 * d), 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.c_proj.bias", L);
            ADD(name, 1, d, 0, 0.1, 0);
            continue;
        }
        snprintf(name, sizeof name, "transformer.h.%d.mlp.gate.weight", L);
        ADD(name, 2, v->n, d, 2.0 / sqrt((double)d), 0);
        snprintf(name, sizeof name, "transformer.h.%d.mlp.gate.bias", L);
        ADD(name, 1, v->n, 0, 0.3, 0);
        for (int e = 0; e < v->n + v->shared; e++) {
            const char *kind = e < v->n ? "experts" : "shared_experts";
            int idx = e < v->n ? e : e - v->n;
            snprintf(name, sizeof name, "transformer.h.%d.mlp.%s.%d.c_fc.weight", L, kind, idx);
            ADD(name, 2, d, v->h, 1.5 / sqrt((double)d), 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.%s.%d.c_fc.bias", L, kind, idx);
            ADD(name, 1, v->h, 0, 0.1, 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.%s.%d.c_proj.weight", L, kind, idx);
            ADD(name, 2, v->h, d, 0.7 / sqrt((double)v->h), 0);
            snprintf(name, sizeof name, "transformer.h.%d.mlp.%s.%d.c_proj.bias", L, kind, idx);
            ADD(name, 1, d, 0, 0.1, 0);
        }
    }
    ADD("transformer.ln_f.weight", 1, d, 0, 0.1, 1.0);
    ADD("transformer.ln_f.bias", 1, d, 0, 0.1, 0);
    if (!v->tied) ADD("lm_head.weight", 2, v->V, d, 1.0 / sqrt((double)d), 0);
    if (v->lm_bias) ADD("lm_head.bias", 1, v->V, 0, 0.1, 0);
#undef ADD
    char path[600];
    ms_err err;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(st_writer_write(w, path, &err) == 0, "write %s: %s", path, err.msg);
    st_writer_free(w);
    for (int i = 0; i < nk; i++) free(keep[i]);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"model_type\": \"gpt2\", \"n_embd\": %d, \"n_layer\": %d, \"n_head\": %d, "
               "\"n_positions\": %d, \"vocab_size\": %d, \"activation_function\": \"%s\", "
               "\"tie_word_embeddings\": %s, \"moe\": {\"layers\": [",
            v->d, v->layers, v->heads, v->P, v->V, v->net_act, v->tied ? "true" : "false");
    for (int i = 0; i < v->nmoe; i++) fprintf(f, "%s%d", i ? ", " : "", v->moe[i]);
    fprintf(f, "], \"num_experts\": %d, \"top_k\": %d, \"router\": \"%s\", \"num_shared_experts\": %d, "
               "\"expert_activation\": \"%s\"}}\n",
            v->n, v->k, v->router, v->shared, v->act);
    fclose(f);
}

/* ---- ViTs ---- */

typedef struct {
    const char *name;
    int layers, d, heads, image, patch, chans, classes, n, k, h, qkv_bias;
    int moe; /* the MoE block */
} vit_variant;

static const vit_variant VIT_VARIANTS[] = {
    {"vit: moe first, 8x8 one channel, 2x2 patches", 2, 16, 2, 8, 2, 1, 5, 4, 2, 8, 1, 0},
    {"vit: moe last, 12x12 three channels, 4x4 patches, no qkv bias", 3, 12, 3, 12, 4, 3, 7, 3, 1, 6, 0, 2},
};

typedef struct {
    st_writer *w;
    rng_t r;
    float *keep[512];
    int nk;
} tensor_sink;

/* a random tensor name of shape sh (nd dims) into the sink */
static void put(tensor_sink *t, const char *name, int nd, const int64_t *sh, double scale, double mean) {
    size_t cnt = 1;
    for (int i = 0; i < nd; i++) cnt *= (size_t)sh[i];
    t->keep[t->nk] = rnd(&t->r, cnt, scale, mean);
    st_writer_add_f32(t->w, name, nd, sh, t->keep[t->nk++]);
}

/* "vit.encoder.layer.L.<sfx>" a Linear [out, in] (+ bias [out]) */
static void put_linear(tensor_sink *t, int L, const char *sfx, int64_t out, int64_t in, int bias) {
    char nm[128];
    int64_t sh[2] = {out, in};
    snprintf(nm, sizeof nm, "vit.encoder.layer.%d.%s.weight", L, sfx);
    put(t, nm, 2, sh, 1.0 / sqrt((double)in), 0);
    snprintf(nm, sizeof nm, "vit.encoder.layer.%d.%s.bias", L, sfx);
    if (bias) put(t, nm, 1, sh, 0.1, 0);
}

static void write_vit(const vit_variant *v, const char *dir, uint64_t seed) {
    tensor_sink t = {.w = st_writer_new()};
    rng_seed(&t.r, seed);
    int64_t d = v->d, P = (v->image / v->patch) * (v->image / v->patch);
    int64_t pw[4] = {d, v->chans, v->patch, v->patch}, cls[3] = {1, 1, d}, pos[3] = {1, P + 1, d};
    int64_t dd[1] = {d}, head[2] = {v->classes, d};
    put(&t, "vit.embeddings.patch_embeddings.projection.weight", 4, pw, 0.5, 0);
    put(&t, "vit.embeddings.patch_embeddings.projection.bias", 1, dd, 0.1, 0);
    put(&t, "vit.embeddings.cls_token", 3, cls, 0.5, 0);
    put(&t, "vit.embeddings.position_embeddings", 3, pos, 0.3, 0);
    char nm[128];
    for (int L = 0; L < v->layers; L++) {
        const char *ln[4] = {"layernorm_before.weight", "layernorm_before.bias", "layernorm_after.weight",
                             "layernorm_after.bias"};
        for (int i = 0; i < 4; i++) {
            snprintf(nm, sizeof nm, "vit.encoder.layer.%d.%s", L, ln[i]);
            put(&t, nm, 1, dd, 0.1, i % 2 ? 0.0 : 1.0);
        }
        put_linear(&t, L, "attention.attention.query", d, d, v->qkv_bias);
        put_linear(&t, L, "attention.attention.key", d, d, v->qkv_bias);
        put_linear(&t, L, "attention.attention.value", d, d, v->qkv_bias);
        put_linear(&t, L, "attention.output.dense", d, d, 1);
        if (L != v->moe) {
            put_linear(&t, L, "intermediate.dense", 4 * d, d, 1);
            put_linear(&t, L, "output.dense", d, 4 * d, 1);
            continue;
        }
        int64_t g[2] = {v->n, d};
        snprintf(nm, sizeof nm, "vit.encoder.layer.%d.moe.gate.weight", L);
        put(&t, nm, 2, g, 2.0 / sqrt((double)d), 0);
        for (int e = 0; e < v->n; e++) {
            char sfx[64];
            snprintf(sfx, sizeof sfx, "moe.experts.%d.fc1", e);
            put_linear(&t, L, sfx, v->h, d, 1);
            snprintf(sfx, sizeof sfx, "moe.experts.%d.fc2", e);
            put_linear(&t, L, sfx, d, v->h, 1);
        }
    }
    put(&t, "vit.layernorm.weight", 1, dd, 0.1, 1.0);
    put(&t, "vit.layernorm.bias", 1, dd, 0.1, 0);
    put(&t, "classifier.weight", 2, head, 2.0 / sqrt((double)d), 0);
    put(&t, "classifier.bias", 1, head, 0.1, 0);
    char path[600];
    ms_err err;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK(st_writer_write(t.w, path, &err) == 0, "write %s: %s", path, err.msg);
    st_writer_free(t.w);
    for (int i = 0; i < t.nk; i++) free(t.keep[i]);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    fprintf(f, "{\"model_type\": \"vit\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
               "\"num_attention_heads\": %d, \"image_size\": %d, \"patch_size\": %d, \"num_channels\": %d, "
               "\"qkv_bias\": %s, \"moe\": {\"layers\": [%d], \"num_experts\": %d, \"top_k\": %d}}\n",
            v->d, v->layers, v->heads, v->image, v->patch, v->chans, v->qkv_bias ? "true" : "false", v->moe,
            v->n, v->k);
    fclose(f);
}

static double max_rel(const float *a, const float *b, size_t n) {
    double worst = 0, big = 1e-30;
    for (size_t q = 0; q < n; q++) {
        worst = fmax(worst, fabs((double)a[q] - b[q]));
        big = fmax(big, fabs((double)b[q]));
    }
    return worst / big;
}

/* dir = tmp/stemIDX, made */
static void fresh_dir(char *dir, size_t cap, const char *tmp, const char *stem, int idx) {
    snprintf(dir, cap, "%s/%s%d", tmp, stem, idx);
    CHECK(mkdir(dir, 0755) == 0, "mkdir %s", dir);
}

/* a network written by write(v, dir, seed) into a fresh dir (tmp/stemIDX), loaded */
static int make_net(net_model *m, void (*write)(const void *, const char *, uint64_t), const void *v,
                    const char *what, const char *tmp, const char *stem, int idx, uint64_t seed) {
    char dir[256];
    fresh_dir(dir, sizeof dir, tmp, stem, idx);
    write(v, dir, seed);
    ms_err err;
    if (!net_load(m, dir, NULL, &err)) return 0;
    CHECK(0, "%s: net_load: %s", what, err.msg);
    return -1;
}

static void write_gpt2_any(const void *v, const char *dir, uint64_t seed) { write_network(v, dir, seed); }
static void write_vit_any(const void *v, const char *dir, uint64_t seed) { write_vit(v, dir, seed); }

static void test_variant(const variant *v, const char *tmp, int idx) {
    net_model m;
    ms_err err;
    if (make_net(&m, write_gpt2_any, v, v->name, tmp, "net", idx, 100 + idx)) return;
    net_evalset E = {.path = "test", .N = 5, .T = v->P - 2};
    size_t rows = (size_t)E.N * E.T;
    E.ids = malloc(rows * sizeof(int32_t));
    rng_t r;
    rng_seed(&r, 7 + idx);
    for (size_t q = 0; q < rows; q++) E.ids[q] = (int32_t)rng_below(&r, (uint64_t)v->V);
    float *ref = malloc(rows * v->V * sizeof(float)), *lg = malloc(rows * v->V * sizeof(float));
    float *lg2 = malloc(rows * v->V * sizeof(float)), *lg3 = malloc(rows * v->V * sizeof(float));
    net_logits_ref(&m, NULL, &E, ref);
    net_run run = {.logits = lg, .want_load = 1};
    net_par p1 = {.threads = 1}, p3 = {.threads = 3};
    net_eval_result a, b, c;
    CHECK(net_evaluate(&m, &E, NULL, &run, &p1, &a, &err) == 0, "%s: evaluate: %s", v->name, err.msg);
    double rel = max_rel(lg, ref, rows * v->V);
    CHECK(rel < 1e-5, "%s: logits within 1e-5 of the reference (%.3g)", v->name, rel);
    // the loss from the reference logits, in double
    double ls = 0;
    long ok = 0;
    for (int s = 0; s < E.N; s++)
        for (int p = 0; p + 1 < E.T; p++) {
            const float *lr = ref + ((size_t)s * E.T + p) * v->V;
            int y = E.ids[(size_t)s * E.T + p + 1], am = 0;
            double mx = -INFINITY, se = 0;
            for (int q = 0; q < v->V; q++) {
                if (lr[q] > mx) mx = lr[q], am = q;
            }
            for (int q = 0; q < v->V; q++) se += exp(lr[q] - mx);
            ls += mx + log(se) - lr[y];
            ok += am == y;
        }
    long pos = (long)E.N * (E.T - 1);
    CHECK(a.positions == pos, "%s: N (T - 1) positions", v->name);
    CHECK_CLOSE(a.loss, ls / pos, 1e-5, "loss = mean next-token cross-entropy");
    CHECK(fabs(a.accuracy - (double)ok / pos) <= 1.0 / pos + 1e-12, "%s: accuracy %g vs %g", v->name,
          a.accuracy, (double)ok / pos);
    // the prefix path and the thread count change no bit
    net_prefix pre;
    CHECK(net_prefix_compute(&m, &E, &p3, &pre, &err) == 0, "%s: prefix: %s", v->name, err.msg);
    run.logits = lg2;
    CHECK(net_evaluate(&m, &E, &pre, &run, &p3, &b, &err) == 0, "%s: evaluate: %s", v->name, err.msg);
    run.logits = lg3;
    CHECK(net_evaluate(&m, &E, &pre, &run, &p1, &c, &err) == 0, "%s: evaluate: %s", v->name, err.msg);
    CHECK(a.loss == b.loss && b.loss == c.loss && a.accuracy == b.accuracy, "%s: same loss bit for bit "
          "from the prefix and on 1 or 3 threads (%.17g %.17g %.17g)", v->name, a.loss, b.loss, c.loss);
    CHECK(!memcmp(lg, lg2, rows * v->V * sizeof(float)) && !memcmp(lg, lg3, rows * v->V * sizeof(float)),
          "%s: same logits bit for bit", v->name);
    for (int i = 0; i < a.nmoe; i++) {
        double sum = 0;
        for (int e = 0; e < a.n; e++) sum += a.load_mean[i * a.n + e];
        CHECK(fabs(sum - 1.0) < 1e-5, "%s: block %d's mean gates sum to 1 (%.9g)", v->name, i, sum);
    }
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    net_eval_result_free(&c);
    net_prefix_free(&pre);
    free(ref);
    free(lg);
    free(lg2);
    free(lg3);
    free(E.ids);
    net_free(&m);
}

static void test_vit_variant(const vit_variant *v, const char *tmp, int idx) {
    net_model m;
    ms_err err;
    if (make_net(&m, write_vit_any, v, v->name, tmp, "vit", idx, 200 + idx)) return;
    CHECK(m.cfg.vocab == v->classes && net_backbone_params(&m) > 0, "%s: classes from classifier.weight", v->name);
    int C = v->classes;
    net_evalset E = {.path = "test", .N = 37, .C = v->chans, .H = v->image, .W = v->image};
    size_t npx = (size_t)E.N * v->chans * v->image * v->image;
    rng_t r;
    rng_seed(&r, 9 + idx);
    E.pixels = rnd(&r, npx, 1.0, 0.0);
    E.labels = malloc((size_t)E.N * sizeof(int32_t));
    for (int q = 0; q < E.N; q++) E.labels[q] = (int32_t)rng_below(&r, (uint64_t)C);
    CHECK(net_evalset_check(&E, &m, &err) == 0, "%s: check: %s", v->name, err.msg);
    float *ref = malloc((size_t)E.N * C * sizeof(float)), *lg = malloc((size_t)E.N * C * sizeof(float));
    float *lg2 = malloc((size_t)E.N * C * sizeof(float));
    net_logits_ref(&m, NULL, &E, ref);
    net_run run = {.logits = lg};
    net_par p1 = {.threads = 1}, p2 = {.threads = 2};
    net_eval_result a, b;
    CHECK(net_evaluate(&m, &E, NULL, &run, &p1, &a, &err) == 0, "%s: evaluate: %s", v->name, err.msg);
    double rel = max_rel(lg, ref, (size_t)E.N * C);
    CHECK(rel < 1e-5, "%s: logits within 1e-5 of the reference (%.3g)", v->name, rel);
    double ls = 0;
    long ok = 0;
    for (int s = 0; s < E.N; s++) {
        const float *lr = ref + (size_t)s * C;
        double mx = -INFINITY, se = 0;
        int am = 0;
        for (int q = 0; q < C; q++)
            if (lr[q] > mx) mx = lr[q], am = q;
        for (int q = 0; q < C; q++) se += exp(lr[q] - mx);
        ls += mx + log(se) - lr[E.labels[s]];
        ok += am == E.labels[s];
    }
    CHECK(a.positions == E.N, "%s: one position per image", v->name);
    CHECK_CLOSE(a.loss, ls / E.N, 1e-5, "vit loss = mean class cross-entropy");
    CHECK(fabs(a.accuracy - (double)ok / E.N) <= 1.0 / E.N + 1e-12, "%s: accuracy %g vs %g", v->name,
          a.accuracy, (double)ok / E.N);
    net_prefix pre;
    CHECK(net_prefix_compute(&m, &E, &p2, &pre, &err) == 0, "%s: prefix: %s", v->name, err.msg);
    run.logits = lg2;
    CHECK(net_evaluate(&m, &E, &pre, &run, &p2, &b, &err) == 0, "%s: evaluate: %s", v->name, err.msg);
    CHECK(a.loss == b.loss && !memcmp(lg, lg2, (size_t)E.N * C * sizeof(float)),
          "%s: the same bits from the prefix on 2 threads", v->name);
    E.H = v->image + v->patch;
    CHECK(net_evalset_check(&E, &m, &err) < 0 && strstr(err.msg, "image_size"), "%s: a wrong image size "
          "is refused: %s", v->name, err.msg);
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    net_prefix_free(&pre);
    free(ref);
    free(lg);
    free(lg2);
    free(E.pixels);
    free(E.labels);
    net_free(&m);
}

/* Sequences longer than an MLP panel (NET_PANEL_ROWS), fewer than the threads:
 * the threads without an item take pieces of the others' steps (MLP and
 * attention panels, heads, the head's column slices: a vocabulary wider than
 * NET_HEAD_COLS has several); the same bits on 1, 2 and 3 threads, and the
 * reference's logits. A cancel set before the evaluation stops it with
 * "cancelled". */
static void long_case(const net_model *m, const variant *v, int N, int T) {
    ms_err err;
    net_evalset E = {.path = "test", .N = N, .T = T};
    size_t rows = (size_t)E.N * E.T, nl = rows * v->V;
    E.ids = malloc(rows * sizeof(int32_t));
    rng_t r;
    rng_seed(&r, 40 + N);
    for (size_t q = 0; q < rows; q++) E.ids[q] = (int32_t)rng_below(&r, (uint64_t)v->V);
    float *ref = malloc(nl * sizeof(float)), *lg[3];
    net_logits_ref(m, NULL, &E, ref);
    net_eval_result res[3];
    for (int t = 0; t < 3; t++) {
        lg[t] = malloc(nl * sizeof(float));
        net_run run = {.logits = lg[t], .want_load = 1};
        net_par par = {.threads = t + 1};
        CHECK(net_evaluate(m, &E, NULL, &run, &par, &res[t], &err) == 0, "N=%d: evaluate: %s", N, err.msg);
    }
    double rel = max_rel(lg[0], ref, nl);
    CHECK(rel < 1e-5, "V=%d, N=%d x T=%d: logits within 1e-5 of the reference (%.3g)", v->V, N, E.T, rel);
    CHECK(res[0].loss == res[1].loss && res[1].loss == res[2].loss && !memcmp(lg[0], lg[1], nl * sizeof(float)) &&
              !memcmp(lg[0], lg[2], nl * sizeof(float)) &&
              !memcmp(res[0].load_mean, res[2].load_mean, (size_t)res[0].nmoe * res[0].n * sizeof(double)),
          "V=%d, N=%d x T=%d: the same loss, logits and loads bit for bit on 1, 2, 3 threads (%.17g %.17g %.17g)",
          v->V, N, E.T, res[0].loss, res[1].loss, res[2].loss);
    // a cancel that never comes: every product in slices between its checks (a budget of
    // 20 kflop splits even this small network's), the same bits as whole
    setenv("MOESCOPE_TEST_SLICE_FLOPS", "20000", 1);
    env_refresh();
    atomic_int never = 0;
    float *sl = malloc(nl * sizeof(float));
    for (int t = 0; t < 3; t += 2) {
        net_run run = {.logits = sl, .want_load = 1};
        net_par par = {.threads = t + 1, .cancel = &never};
        net_eval_result rs;
        CHECK(net_evaluate(m, &E, NULL, &run, &par, &rs, &err) == 0, "N=%d: evaluate in slices: %s", N, err.msg);
        CHECK(rs.loss == res[0].loss && !memcmp(sl, lg[0], nl * sizeof(float)),
              "V=%d, N=%d x T=%d, %d threads: the products in cancellable slices give the same bits (%.17g %.17g)",
              v->V, N, E.T, t + 1, rs.loss, res[0].loss);
        net_eval_result_free(&rs);
    }
    free(sl);
    unsetenv("MOESCOPE_TEST_SLICE_FLOPS");
    env_refresh();
    atomic_int stop = 1;
    net_par pc = {.threads = 3, .cancel = &stop};
    net_eval_result rc;
    CHECK(net_evaluate(m, &E, NULL, NULL, &pc, &rc, &err) < 0 && strstr(err.msg, "cancelled"),
          "N=%d: a cancel stops it: %s", N, err.msg);
    for (int t = 0; t < 3; t++) {
        net_eval_result_free(&res[t]);
        free(lg[t]);
    }
    free(ref);
    free(E.ids);
}

static void test_long(const char *tmp) {
    static const variant v = {"long sequences, moe first and last", 2, 8, 2, 11, 700, 4, 2, 5, 0, {0, 1}, 2,
                              "topk", "relu", "gelu_new", 1, 0};
    static const variant wide = {"a vocabulary of three column slices", 2, 8, 2, 2 * NET_HEAD_COLS + 500, 300, 4, 2,
                                 5, 0, {1}, 1, "topk", "relu", "gelu_new", 0, 1};
    net_model m;
    if (make_net(&m, write_gpt2_any, &v, v.name, tmp, "long", 0, 300)) return;
    long_case(&m, &v, 1, 700);
    long_case(&m, &v, 2, 600);
    net_free(&m);
    if (make_net(&m, write_gpt2_any, &wide, wide.name, tmp, "wide", 0, 301)) return;
    long_case(&m, &wide, 1, 300);
    net_free(&m);
}

static void no_listen(void *ctx, const char *phase, double done, double total) {
    (void)ctx, (void)phase, (void)done, (void)total;
}

/* the backbone pointer p of a (NULL or into a->mem) is at the offset of b's q */
static int same_at(const net_model *a, const float *p, const net_model *b, const float *q) {
    return (!p && !q) || (p && q && p - a->mem == q - b->mem);
}

/* dir's network read in two steps equals net_load's, float for float */
static void test_later(const char *dir) {
    net_model a, b;
    ms_err err;
    ckpt c;
    if (net_load(&a, dir, NULL, &err) || ckpt_open(&c, dir, &err)) {
        CHECK(0, "%s: %s", dir, err.msg);
        return;
    }
    int rc = net_load_ckpt_later(&b, &c, dir, NULL, &err);
    ckpt_close(&c);
    CHECK(rc == 0, "%s: loaded without the backbone's values: %s", dir, rc ? err.msg : "");
    if (rc) {
        net_free(&a);
        return;
    }
    CHECK(!b.mem && !b.wte && !b.lnf_w && !b.blocks[0].ln1_w && b.nparams == a.nparams && b.cfg.nmoe == a.cfg.nmoe,
          "%s: no values yet, the same count", dir);
    atomic_int stop = 1;
    progress_listen(no_listen, NULL, &stop);
    CHECK(net_load_backbone(&b, &err) != 0 && !b.mem && !b.wte && !b.lm_w, "%s: a cancelled read leaves none", dir);
    progress_listen(NULL, NULL, NULL);
    CHECK(net_load_backbone(&b, &err) == 0, "%s: the values read: %s", dir, err.msg);
    int same = b.mem && !memcmp(a.mem, b.mem, a.nparams * sizeof(float)) && same_at(&a, a.wte, &b, b.wte) &&
               same_at(&a, a.wpe, &b, b.wpe) && same_at(&a, a.lm_w, &b, b.lm_w) && same_at(&a, a.lm_b, &b, b.lm_b) &&
               same_at(&a, a.lnf_w, &b, b.lnf_w) && same_at(&a, a.cls, &b, b.cls);
    for (int L = 0; L < a.cfg.nlayer; L++) {
        const net_block *x = &a.blocks[L], *y = &b.blocks[L];
        same = same && same_at(&a, x->ln1_w, &b, y->ln1_w) && same_at(&a, x->attn_w, &b, y->attn_w) &&
               same_at(&a, x->proj_b, &b, y->proj_b) && same_at(&a, x->fc_w, &b, y->fc_w) &&
               same_at(&a, x->fcp_b, &b, y->fcp_b);
    }
    CHECK(same, "%s: the same floats at the same places as net_load's", dir);
    net_free(&b);
    // net_load_lazy: no MoE block's weights read (mapped, or a shell), each filled in place
    // with net_load's floats, its config and name the ones the shell had
    rc = net_load_lazy(&b, dir, NULL, &err);
    CHECK(rc == 0, "%s: loaded lazily: %s", dir, rc ? err.msg : "");
    for (int i = 0; !rc && i < a.cfg.nmoe; i++) {
        const char *layer = b.moe[i].layer;
        CHECK(net_block_pending(&b, i) || moe_is_mapped(&b.moe[i]), "%s: block %d not read", dir, i);
        CHECK(net_block_fill(&b, i, &err) == 0, "%s: block %d filled: %s", dir, i, err.msg);
        CHECK(!net_block_pending(&b, i) && !moe_is_mapped(&b.moe[i]) && b.moe[i].layer == layer &&
                  b.moe[i].nparams == a.moe[i].nparams && b.moe[i].cfg.n == a.moe[i].cfg.n && b.moe[i].cfg.h == a.moe[i].cfg.h && b.moe[i].cfg.k == a.moe[i].cfg.k &&
                  b.moe[i].cfg.has_expert_bias == a.moe[i].cfg.has_expert_bias &&
                  !memcmp(b.moe[i].mem, a.moe[i].mem, a.moe[i].nparams * sizeof(float)),
              "%s: block %d in floats, net_load's bit for bit, its name kept", dir, i);
        CHECK(net_block_fill(&b, i, &err) == 0 && b.moe[i].layer == layer, "%s: block %d: filling again leaves it",
              dir, i);
    }
    if (!rc) net_free(&b);
    net_free(&a);
}

int main(void) {
    char tmp[] = "/tmp/test_net_forward.XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    for (size_t i = 0; i < sizeof VARIANTS / sizeof VARIANTS[0]; i++) test_variant(&VARIANTS[i], tmp, (int)i);
    for (size_t i = 0; i < sizeof VIT_VARIANTS / sizeof VIT_VARIANTS[0]; i++)
        test_vit_variant(&VIT_VARIANTS[i], tmp, (int)i);
    test_long(tmp);
    char dir[300];
    for (size_t i = 0; i < sizeof VARIANTS / sizeof VARIANTS[0]; i++) {
        snprintf(dir, sizeof dir, "%s/net%d", tmp, (int)i);
        test_later(dir);
    }
    snprintf(dir, sizeof dir, "%s/vit0", tmp);
    test_later(dir);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) return 1;
    return test_summary("test_net_forward");
}
