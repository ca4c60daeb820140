/* test_decoder_ops.c - the decoders' pieces (network/transformer.c) against
 * plain reference loops written here, and a decoder network's fast path against
 * its own plain forward (net_logits_ref):
 *   - RMSNorm: w x / sqrt(mean(x^2) + eps) in double, on strided rows;
 *   - rotary embeddings: each pair (i, i + rot/2) turned as one complex number
 *     by p theta^(-2i/rot) / linear; dimensions from rot on untouched;
 *   - grouped-query attention: kv head j / rep serves query head j (interleaved,
 *     not tiled), causal, with and without a sliding window and GPT-OSS's sink
 *     logits, over more rows than one of the kernel's blocks, against a double
 *     softmax per query;
 *   - a Qwen3-MoE-layout decoder (a dense block, then MoE; per-head q/k norms,
 *     head_dim != d / heads, 2 key/value heads) written here: logits within 1e-5
 *     of net_logits_ref, the same bits from the cached prefix and on 3 threads;
 *   - the same decoder in BF16 with its experts left in the file's mapping
 *     (net_load_mapped): the logits of the whole float32 conversion (net_load);
 *   - a JetMoE decoder (attention experts, tiled kv heads, its two eps): the fast
 *     path against net_logits_ref, the same bits from the prefix on 3 threads, BF16
 *     mapped against the whole conversion. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/rng.h"
#include "io/safetensors.h"
#include "network/net_eval.h"
#include "network/net_forward.h"
#include "network/transformer.h"
#include "testlib.h"

static float *rnd(rng_t *r, size_t n, double scale, double mean) {
    float *p = malloc(n * sizeof(float));
    for (size_t q = 0; q < n; q++) p[q] = (float)(mean + scale * rng_normal(r));
    return p;
}

static void test_rmsnorm(void) {
    rng_t r;
    rng_seed(&r, 1);
    int M = 5, d = 7, ld = 11;
    float *X = rnd(&r, (size_t)M * ld, 2.0, 0.3), *w = rnd(&r, (size_t)d, 0.2, 1.0);
    float *Y = malloc((size_t)M * ld * sizeof(float));
    memcpy(Y, X, (size_t)M * ld * sizeof(float));
    tf_rmsnorm_forward(X, M, d, ld, w, 1e-5, Y);
    double worst = 0;
    for (int i = 0; i < M; i++) {
        double ss = 0;
        for (int j = 0; j < d; j++) ss += (double)X[i * ld + j] * X[i * ld + j];
        for (int j = 0; j < d; j++)
            worst = fmax(worst, fabs(Y[i * ld + j] - w[j] * X[i * ld + j] / sqrt(ss / d + 1e-5)));
        for (int j = d; j < ld; j++) worst = fmax(worst, fabs(Y[i * ld + j] - X[i * ld + j]));
    }
    CHECK(worst < 1e-5, "RMSNorm on strided rows: max error %.3g", worst);
    free(X), free(w), free(Y);
}

static void test_rope(void) {
    rng_t r;
    rng_seed(&r, 2);
    int T = 6, M = 12, nr = 3, hd = 10, rot = 8, ld = 37; // two sequences, 3 heads, 2 dims left alone
    double theta = 500.0, lin = 2.0;
    float *X = rnd(&r, (size_t)M * ld, 1.0, 0), *Y = malloc((size_t)M * ld * sizeof(float));
    float *cs = malloc((size_t)T * rot * sizeof(float));
    memcpy(Y, X, (size_t)M * ld * sizeof(float));
    double inv[4];
    for (int i = 0; i < rot / 2; i++) inv[i] = pow(theta, -2.0 * i / rot) / lin;
    tf_rope_table(T, rot, inv, 1.0, cs);
    tf_rope_forward(Y, M, 0, ld, T, nr, hd, rot, cs, 0);
    double worst = 0;
    for (int m = 0; m < M; m++)
        for (int j = 0; j < nr; j++) {
            const float *x = X + m * ld + j * hd, *y = Y + m * ld + j * hd;
            for (int i = 0; i < rot / 2; i++) { // (a + ib) e^{i ang}
                double ang = (m % T) / lin * pow(theta, -2.0 * i / rot), a = x[i], b = x[i + rot / 2];
                worst = fmax(worst, fabs(y[i] - (a * cos(ang) - b * sin(ang))));
                worst = fmax(worst, fabs(y[i + rot / 2] - (b * cos(ang) + a * sin(ang))));
            }
            for (int i = rot; i < hd; i++) worst = fmax(worst, fabs(y[i] - x[i]));
        }
    CHECK(worst < 1e-5, "rotary embedding as complex rotations, partial and scaled: max error %.3g", worst);
    free(X), free(Y), free(cs);
}

/* O (T, nh hd) by a double softmax per query: kv head j / rep (tiled: j % nkv), window */
static void attn_naive(const float *QKV, int T, const tf_attn_shape *a, int tiled, double *O) {
    int hd = a->hd, q = a->nh * hd, ld = q + 2 * a->nkv * hd, rep = a->nh / a->nkv;
    double *s = malloc((size_t)T * sizeof(double));
    for (int i = 0; i < T; i++)
        for (int j = 0; j < a->nh; j++) {
            int g = tiled ? j % a->nkv : j / rep, lo = a->window > 0 && i - a->window + 1 > 0 ? i - a->window + 1 : 0;
            double mx = a->sinks ? a->sinks[j] : -INFINITY, se = 0;
            for (int t = lo; t <= i; t++) {
                double dot = 0;
                for (int u = 0; u < hd; u++) dot += (double)QKV[i * ld + j * hd + u] * QKV[t * ld + q + g * hd + u];
                s[t] = dot * a->scale;
                mx = fmax(mx, s[t]);
            }
            if (a->sinks) se = exp(a->sinks[j] - mx); // in the denominator only
            for (int t = lo; t <= i; t++) se += (s[t] = exp(s[t] - mx));
            for (int u = 0; u < hd; u++) {
                double acc = 0;
                for (int t = lo; t <= i; t++) acc += s[t] / se * QKV[t * ld + q + (a->nkv + g) * hd + u];
                O[i * q + j * hd + u] = acc;
            }
        }
    free(s);
}

static void test_gqa(void) {
    rng_t r;
    rng_seed(&r, 3);
    int T = 45; // more than one 32-row block
    float sinks[6] = {0.5f, -1.0f, 2.0f, 0.0f, 1.5f, -0.3f};
    for (int variant = 0; variant < 3; variant++) { // full; a window; a window and sinks
        int window = variant ? 7 : 0;
        tf_attn_shape a = {6, 2, 5, 0.37f, 1, window, 0, variant == 2 ? sinks : NULL, 0};
        int q = a.nh * a.hd, ld = q + 2 * a.nkv * a.hd;
        float *QKV = rnd(&r, (size_t)T * ld, 1.0, 0), *S = malloc((size_t)T * T * sizeof(float));
        float *O = malloc((size_t)T * q * sizeof(float));
        double *R = malloc((size_t)T * q * sizeof(double)), worst = 0;
        tf_attention_gqa(QKV, T, &a, S, O);
        attn_naive(QKV, T, &a, 0, R);
        for (int i = 0; i < T * q; i++) worst = fmax(worst, fabs(O[i] - R[i]));
        CHECK(worst < 1e-5, "grouped-query attention, window %d%s: max error %.3g", window,
              a.sinks ? ", sinks" : "", worst);
        attn_naive(QKV, T, &a, 1, R); // tiling the kv heads differs: the check can tell
        worst = 0;
        for (int i = 0; i < T * q; i++) worst = fmax(worst, fabs(O[i] - R[i]));
        CHECK(worst > 1e-2, "tiled kv heads differ from interleaved ones (%.3g)", worst);
        a.tiled = 1; // JetMoE's: query head j reads kv head j % nkv
        tf_attention_gqa(QKV, T, &a, S, O);
        worst = 0;
        for (int i = 0; i < T * q; i++) worst = fmax(worst, fabs(O[i] - R[i]));
        CHECK(worst < 1e-5, "tiled kv heads, window %d: max error %.3g", window, worst);
        free(QKV), free(S), free(O), free(R);
    }
}

/* ---- a Qwen3-MoE-layout decoder ---- */

enum { D = 12, NH = 4, NKV = 2, HD = 4, V = 19, NL = 3, FF = 10, NE = 4, H = 6 };

typedef struct {
    st_writer *w;
    rng_t r;
    float *keep[256];
    int nk;
    int bf16; /* the tensors as BF16 (rounded to nearest even) */
} sink;

/* a tensor of shape {a, b, c} (its first nd) named fmt of L, e, random values */
static void put3(sink *s, const char *fmt, int L, int e, int nd, int64_t a, int64_t b, int64_t c, double sc,
                 double mean) {
    char nm[128];
    snprintf(nm, sizeof nm, fmt, L, e);
    int64_t sh[3] = {a, b, c};
    size_t n = (size_t)a * (nd > 1 ? b : 1) * (nd > 2 ? c : 1);
    float *v = s->keep[s->nk++] = rnd(&s->r, n, sc, mean);
    if (!s->bf16) {
        st_writer_add_f32(s->w, nm, nd, sh, v);
        return;
    }
    uint16_t *h = (uint16_t *)(void *)v; // in place: the first half of v's bytes
    for (size_t q = 0; q < n; q++) {
        uint32_t bits;
        memcpy(&bits, &v[q], 4);
        h[q] = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
    }
    st_writer_add_raw(s->w, nm, "BF16", nd, sh, h, n * 2);
}

static void put(sink *s, const char *fmt, int L, int e, int nd, int64_t a, int64_t b, double sc, double mean) {
    put3(s, fmt, L, e, nd, a, b, 0, sc, mean);
}

/* s's tensors to dir/model.safetensors and config (a JSON object) to
 * dir/config.json; s freed. 0, or -1 (a failed write is a failed check) */
static int sink_finish(sink *s, const char *dir, const char *config) {
    char path[600];
    ms_err err;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int rc = st_writer_write(s->w, path, &err);
    CHECK(rc == 0, "write %s: %s", path, err.msg);
    st_writer_free(s->w);
    for (int i = 0; i < s->nk; i++) free(s->keep[i]);
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "%s\n", config);
    fclose(f);
    return rc;
}

static int write_decoder_seed(const char *dir, int bf16, uint64_t seed) {
    sink s = {.w = st_writer_new(), .bf16 = bf16};
    rng_seed(&s.r, seed);
    put(&s, "model.embed_tokens.weight", 0, 0, 2, V, D, 1.0, 0);
    for (int L = 0; L < NL; L++) {
        put(&s, "model.layers.%d.input_layernorm.weight", L, 0, 1, D, 0, 0.1, 1);
        put(&s, "model.layers.%d.post_attention_layernorm.weight", L, 0, 1, D, 0, 0.1, 1);
        put(&s, "model.layers.%d.self_attn.q_proj.weight", L, 0, 2, NH * HD, D, 0.5, 0);
        put(&s, "model.layers.%d.self_attn.k_proj.weight", L, 0, 2, NKV * HD, D, 0.5, 0);
        put(&s, "model.layers.%d.self_attn.v_proj.weight", L, 0, 2, NKV * HD, D, 0.5, 0);
        put(&s, "model.layers.%d.self_attn.o_proj.weight", L, 0, 2, D, NH * HD, 0.5, 0);
        put(&s, "model.layers.%d.self_attn.q_norm.weight", L, 0, 1, HD, 0, 0.1, 1);
        put(&s, "model.layers.%d.self_attn.k_norm.weight", L, 0, 1, HD, 0, 0.1, 1);
        if (L == 0) { // mlp_only_layers [0]
            put(&s, "model.layers.%d.mlp.gate_proj.weight", L, 0, 2, FF, D, 0.4, 0);
            put(&s, "model.layers.%d.mlp.up_proj.weight", L, 0, 2, FF, D, 0.4, 0);
            put(&s, "model.layers.%d.mlp.down_proj.weight", L, 0, 2, D, FF, 0.4, 0);
            continue;
        }
        put(&s, "model.layers.%d.mlp.gate.weight", L, 0, 2, NE, D, 0.7, 0);
        for (int e = 0; e < NE; e++) {
            put(&s, "model.layers.%d.mlp.experts.%d.gate_proj.weight", L, e, 2, H, D, 0.4, 0);
            put(&s, "model.layers.%d.mlp.experts.%d.up_proj.weight", L, e, 2, H, D, 0.4, 0);
            put(&s, "model.layers.%d.mlp.experts.%d.down_proj.weight", L, e, 2, D, H, 0.4, 0);
        }
    }
    put(&s, "model.norm.weight", 0, 0, 1, D, 0, 0.1, 1);
    put(&s, "lm_head.weight", 0, 0, 2, V, D, 0.5, 0);
    char config[1024];
    snprintf(config, sizeof config,
             "{\"model_type\": \"qwen3_moe\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
             "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
             "\"intermediate_size\": %d, \"moe_intermediate_size\": %d, \"num_experts\": %d, "
             "\"num_experts_per_tok\": 2, \"norm_topk_prob\": true, \"vocab_size\": %d, "
             "\"max_position_embeddings\": 64, \"rope_theta\": 1000.0, \"rms_norm_eps\": 1e-6, "
             "\"mlp_only_layers\": [0]}",
             D, NL, NH, NKV, HD, FF, H, NE, V);
    return sink_finish(&s, dir, config);
}

static int write_decoder(const char *dir, int bf16) { return write_decoder_seed(dir, bf16, 4); }

static void test_decoder(const char *tmp) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/qwen3", tmp);
    if (mkdir(dir, 0755) || write_decoder(dir, 0)) {
        CHECK(0, "write the decoder into %s", dir);
        return;
    }
    net_model m;
    ms_err err;
    if (net_load(&m, dir, NULL, &err)) {
        CHECK(0, "net_load: %s", err.msg);
        return;
    }
    CHECK(m.cfg.nmoe == 2 && m.cfg.moe_layers[0] == 1 && m.cfg.hd == HD && m.cfg.nkv == NKV,
          "the decoder's shape from config.json (MoE at 1, 2; head_dim %d)", m.cfg.hd);
    net_evalset E = {.path = "test", .N = 4, .T = 37};
    size_t rows = (size_t)E.N * E.T;
    E.ids = malloc(rows * sizeof(int32_t));
    rng_t r;
    rng_seed(&r, 5);
    for (size_t q = 0; q < rows; q++) E.ids[q] = (int32_t)rng_below(&r, V);
    float *ref = malloc(rows * V * sizeof(float)), *lg = malloc(rows * V * sizeof(float));
    float *lg2 = malloc(rows * V * sizeof(float));
    net_logits_ref(&m, NULL, &E, ref);
    net_run run = {.logits = lg};
    net_par p1 = {.threads = 1}, p3 = {.threads = 3};
    net_eval_result a, b;
    CHECK(net_evaluate(&m, &E, NULL, &run, &p1, &a, &err) == 0, "evaluate: %s", err.msg);
    double worst = 0, big = 1e-30;
    for (size_t q = 0; q < rows * V; q++) worst = fmax(worst, fabs(lg[q] - ref[q])), big = fmax(big, fabs(ref[q]));
    CHECK(worst / big < 1e-5, "decoder logits within 1e-5 of the plain forward (%.3g)", worst / big);
    net_prefix pre;
    CHECK(net_prefix_compute(&m, &E, &p3, &pre, &err) == 0, "prefix: %s", err.msg);
    CHECK(pre.L0 == 1, "the prefix ends at the first MoE block (%d)", pre.L0);
    run.logits = lg2;
    CHECK(net_evaluate(&m, &E, &pre, &run, &p3, &b, &err) == 0, "evaluate: %s", err.msg);
    CHECK(a.loss == b.loss && !memcmp(lg, lg2, rows * V * sizeof(float)),
          "the same bits from the prefix on 3 threads (%.17g %.17g)", a.loss, b.loss);
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    net_prefix_free(&pre);
    free(ref), free(lg), free(lg2), free(E.ids);
    net_free(&m);
}

/* an evaluation set of N sequences of T random token ids below V */
static net_evalset random_set(int N, int T, uint64_t seed) {
    net_evalset E = {.path = "test", .N = N, .T = T};
    size_t rows = (size_t)N * T;
    E.ids = malloc(rows * sizeof(int32_t));
    rng_t r;
    rng_seed(&r, seed);
    for (size_t q = 0; q < rows; q++) E.ids[q] = (int32_t)rng_below(&r, V);
    return E;
}

/* The same decoder in BF16: its experts evaluated where the file maps them, panel by
 * panel (net_load_mapped), against the weights converted whole (net_load) */
static void test_mapped(const char *tmp) {
    char dir[300];
    snprintf(dir, sizeof dir, "%s/qwen3_bf16", tmp);
    if (mkdir(dir, 0755) || write_decoder(dir, 1)) {
        CHECK(0, "write the BF16 decoder into %s", dir);
        return;
    }
    net_model f, m;
    ms_err err;
    if (net_load(&f, dir, NULL, &err) || net_load_mapped(&m, dir, NULL, &err)) {
        CHECK(0, "load: %s", err.msg);
        return;
    }
    CHECK(m.map && moe_is_mapped(&m.moe[0]) && moe_is_mapped(&m.moe[1]) && !moe_is_mapped(&f.moe[0]),
          "net_load_mapped keeps the experts mapped, net_load in floats");
    CHECK(m.moe[0].nparams < f.moe[0].nparams, "the mapped layer holds fewer floats (%zu < %zu)", m.moe[0].nparams,
          f.moe[0].nparams);
    const net_block *b0 = &m.blocks[0];
    CHECK(m.mapped_bb && b0->wqkv.n == 3 && b0->wqkv.part[0].dt == WP_BF16 && b0->wo.part[0].dt == WP_BF16 &&
              b0->wfc.n == 2 && b0->wfcp.part[0].dt == WP_BF16 && m.wemb.part[0].dt == WP_BF16 &&
              m.whead.part[0].dt == WP_BF16 && !b0->attn_w && f.blocks[0].wqkv.part[0].dt == WP_F32,
          "the backbone's matrices stay mapped in BF16 (net_load's in floats)");
    CHECK(m.nmem < f.nmem / 20 && m.nparams == f.nparams && f.nmem == f.nparams,
          "the mapped backbone holds its norms' floats alone (%zu of %zu)", m.nmem, m.nparams);
    net_evalset E = random_set(3, 29, 6);
    size_t rows = (size_t)E.N * E.T;
    float *la = malloc(rows * V * sizeof(float)), *lb = malloc(rows * V * sizeof(float));
    net_run ra = {.logits = la}, rb = {.logits = lb};
    net_par p2 = {.threads = 2};
    net_eval_result a, b;
    CHECK(net_evaluate(&f, &E, NULL, &ra, &p2, &a, &err) == 0, "evaluate: %s", err.msg);
    CHECK(net_evaluate(&m, &E, NULL, &rb, &p2, &b, &err) == 0, "evaluate mapped: %s", err.msg);
    double worst = 0, big = 1e-30;
    for (size_t q = 0; q < rows * V; q++) worst = fmax(worst, fabs(la[q] - lb[q])), big = fmax(big, fabs(la[q]));
    CHECK(worst / big < 1e-6 && fabs(a.loss - b.loss) < 1e-6 * a.loss,
          "mapped BF16 weights: logits within 1e-6 of the whole conversion's (%.3g), loss %.9g vs %.9g", worst / big,
          b.loss, a.loss);
    const moe_model *fb[2] = {&f.moe[0], &f.moe[1]}; // the plain forward reads experts in floats
    net_logits_ref(&m, fb, &E, lb);
    worst = 0;
    for (size_t q = 0; q < rows * V; q++) worst = fmax(worst, fabs(la[q] - lb[q]));
    CHECK(worst / big < 1e-5, "the plain forward of the mapped backbone: within 1e-5 (%.3g)", worst / big);
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    free(la), free(lb), free(E.ids);
    net_free(&f);
    net_free(&m);
}

/* Two BF16 decoders whose backbones differ, interpolated at t: the mapped matrices
 * mixed a panel at a time (net_backbone_interpolate) against every float of the
 * backbone interpolated (the floats' network, its matrices in its own floats) */
static void test_interp(const char *tmp) {
    char da[300], db[300];
    snprintf(da, sizeof da, "%s/qwen3_bf16", tmp); // test_mapped's
    snprintf(db, sizeof db, "%s/qwen3_bf16_b", tmp);
    if (mkdir(db, 0755) || write_decoder_seed(db, 1, 9)) {
        CHECK(0, "write the second BF16 decoder into %s", db);
        return;
    }
    net_model fa, fb, ma, mb, F, M;
    ms_err err;
    if (net_load(&fa, da, NULL, &err) || net_load(&fb, db, NULL, &err) || net_load_mapped(&ma, da, NULL, &err) ||
        net_load_mapped(&mb, db, NULL, &err)) {
        CHECK(0, "load: %s", err.msg);
        return;
    }
    double t = 0.3;
    float ta = (float)(1.0 - t), tb = (float)t;
    net_clone(&F, &fa); // every float, the matrices' too, as the floats' path formed them
    for (size_t q = 0; q < F.nmem; q++) F.mem[q] = ta * fa.mem[q] + tb * fb.mem[q];
    net_clone(&M, &ma);
    net_backbone_interpolate(&M, &ma, &mb, t);
    CHECK(M.blocks[0].wqkv.part[0].b == &mb.blocks[0].wqkv.part[0] && M.whead.part[0].b == &mb.whead.part[0],
          "the interpolated matrices are mixes of A's and B's mapped ones");
    net_evalset E = random_set(2, 23, 7);
    size_t rows = (size_t)E.N * E.T;
    float *la = malloc(rows * V * sizeof(float)), *lb = malloc(rows * V * sizeof(float));
    net_run ra = {.logits = la}, rb = {.logits = lb};
    net_par p2 = {.threads = 2};
    net_eval_result a, b;
    CHECK(net_evaluate(&F, &E, NULL, &ra, &p2, &a, &err) == 0, "evaluate: %s", err.msg);
    CHECK(net_evaluate(&M, &E, NULL, &rb, &p2, &b, &err) == 0, "evaluate mixed: %s", err.msg);
    double worst = 0, big = 1e-30;
    for (size_t q = 0; q < rows * V; q++) worst = fmax(worst, fabs(la[q] - lb[q])), big = fmax(big, fabs(la[q]));
    CHECK(worst / big < 1e-6 && fabs(a.loss - b.loss) < 1e-6 * a.loss,
          "interpolated backbone mixed per panel: logits within 1e-6 of the floats' (%.3g), loss %.9g vs %.9g",
          worst / big, b.loss, a.loss);
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    free(la), free(lb), free(E.ids);
    net_free(&F);
    net_free(&M);
    net_free(&fa);
    net_free(&fb);
    net_free(&ma);
    net_free(&mb);
}

/* ---- a JetMoE decoder: its attention a mixture of experts ---- */

enum { JA = 4, JHQ = NKV * HD }; /* attention experts; a slot's query width (kv_channels = HD) */

/* its tensors (every block MoE, the head tied) and config.json, rms_norm_eps 0.05 (the
 * final norm's; the blocks' own 1e-6) */
static int write_jetmoe(const char *dir, int bf16) {
    sink s = {.w = st_writer_new(), .bf16 = bf16};
    rng_seed(&s.r, 11);
    put(&s, "model.embed_tokens.weight", 0, 0, 2, V, D, 1.0, 0);
    for (int L = 0; L < NL; L++) {
        put(&s, "model.layers.%d.input_layernorm.weight", L, 0, 1, D, 0, 0.1, 1);
        put(&s, "model.layers.%d.post_attention_layernorm.weight", L, 0, 1, D, 0, 0.1, 1);
        put(&s, "model.layers.%d.self_attention.kv_proj.weight", L, 0, 2, 2 * JHQ, D, 0.5, 0);
        put(&s, "model.layers.%d.self_attention.experts.router.layer.weight", L, 0, 2, JA, D, 0.8, 0);
        put3(&s, "model.layers.%d.self_attention.experts.input_linear.weight", L, 0, 3, JA, JHQ, D, 0.5, 0);
        put3(&s, "model.layers.%d.self_attention.experts.output_linear.weight", L, 0, 3, JA, D, JHQ, 0.5, 0);
        put(&s, "model.layers.%d.self_attention.experts.bias", L, 0, 1, D, 0, 0.2, 0);
        put(&s, "model.layers.%d.mlp.router.layer.weight", L, 0, 2, NE, D, 0.7, 0);
        put3(&s, "model.layers.%d.mlp.input_linear.weight", L, 0, 3, NE, 2 * H, D, 0.4, 0);
        put3(&s, "model.layers.%d.mlp.output_linear.weight", L, 0, 3, NE, D, H, 0.4, 0);
        put(&s, "model.layers.%d.mlp.bias", L, 0, 1, D, 0, 0.2, 0);
    }
    put(&s, "model.norm.weight", 0, 0, 1, D, 0, 0.1, 1);
    char config[1024];
    snprintf(config, sizeof config,
             "{\"model_type\": \"jetmoe\", \"hidden_size\": %d, \"num_hidden_layers\": %d, "
             "\"num_key_value_heads\": %d, \"kv_channels\": %d, \"num_local_experts\": %d, "
             "\"num_experts_per_tok\": 2, \"intermediate_size\": %d, \"vocab_size\": %d, "
             "\"max_position_embeddings\": 64, \"rope_theta\": 1000.0, \"rms_norm_eps\": 0.05}",
             D, NL, NKV, HD, JA, H, V);
    return sink_finish(&s, dir, config);
}

/* max |x - y| / max |y| over n */
static double rel_worst(const float *x, const float *y, size_t n) {
    double worst = 0, big = 1e-30;
    for (size_t q = 0; q < n; q++) worst = fmax(worst, fabs(x[q] - y[q])), big = fmax(big, fabs(y[q]));
    return worst / big;
}

/* JetMoE's fast path (each row panel's tokens gathered per attention expert, the kv
 * heads tiled) against its plain forward, the same bits from the prefix on 3
 * threads; in BF16 its matrices (the packed experts too) left mapped against the
 * whole conversion */
static void test_jetmoe(const char *tmp) {
    char dir[300], dbf[300];
    snprintf(dir, sizeof dir, "%s/jetmoe", tmp);
    snprintf(dbf, sizeof dbf, "%s/jetmoe_bf16", tmp);
    if (mkdir(dir, 0755) || write_jetmoe(dir, 0) || mkdir(dbf, 0755) || write_jetmoe(dbf, 1)) {
        CHECK(0, "write the JetMoE decoders into %s", tmp);
        return;
    }
    net_model m, f, mm;
    ms_err err;
    if (net_load(&m, dir, NULL, &err) || net_load(&f, dbf, NULL, &err) || net_load_mapped(&mm, dbf, NULL, &err)) {
        CHECK(0, "load: %s", err.msg);
        return;
    }
    CHECK(m.cfg.nhead == 2 * NKV && m.cfg.kv_tiled && m.cfg.moa_n == JA && m.cfg.block_eps == 1e-6 &&
              m.cfg.eps == 0.05 && m.cfg.tied && m.cfg.nmoe == NL,
          "JetMoE's shape: heads = kv heads x top-k, tiled, block eps 1e-6, tied head");
    CHECK(mm.blocks[1].wmq.part[0].dt == WP_BF16 && mm.blocks[1].wmq.rows[0] == JA * JHQ &&
              mm.blocks[1].wo.rows[0] == JA * D && mm.blocks[1].wo.part[0].ld == JHQ,
          "the packed attention experts mapped in BF16, their experts' rows one under another");
    net_evalset E = random_set(4, 37, 8);
    size_t rows = (size_t)E.N * E.T, nl = rows * V;
    float *ref = malloc(nl * sizeof(float)), *lg = malloc(nl * sizeof(float)), *lg2 = malloc(nl * sizeof(float));
    net_logits_ref(&m, NULL, &E, ref);
    net_run run = {.logits = lg};
    net_par p1 = {.threads = 1}, p3 = {.threads = 3};
    net_eval_result a, b;
    CHECK(net_evaluate(&m, &E, NULL, &run, &p1, &a, &err) == 0, "evaluate: %s", err.msg);
    CHECK(rel_worst(lg, ref, nl) < 1e-5, "JetMoE logits within 1e-5 of the plain forward (%.3g)",
          rel_worst(lg, ref, nl));
    net_prefix pre;
    CHECK(net_prefix_compute(&m, &E, &p3, &pre, &err) == 0, "prefix: %s", err.msg);
    run.logits = lg2;
    CHECK(net_evaluate(&m, &E, &pre, &run, &p3, &b, &err) == 0, "evaluate: %s", err.msg);
    CHECK(a.loss == b.loss && !memcmp(lg, lg2, nl * sizeof(float)), "JetMoE: the same bits from the prefix on 3 "
          "threads (%.17g %.17g)", a.loss, b.loss);
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    net_prefix_free(&pre);
    run.logits = lg;
    CHECK(net_evaluate(&f, &E, NULL, &run, &p3, &a, &err) == 0, "evaluate BF16: %s", err.msg);
    run.logits = lg2;
    CHECK(net_evaluate(&mm, &E, NULL, &run, &p3, &b, &err) == 0, "evaluate mapped: %s", err.msg);
    CHECK(rel_worst(lg2, lg, nl) < 1e-6, "JetMoE mapped BF16: logits within 1e-6 of the whole conversion's (%.3g)",
          rel_worst(lg2, lg, nl));
    const moe_model *fm[NL];
    for (int i = 0; i < NL; i++) fm[i] = &f.moe[i]; // the plain forward reads experts in floats
    net_logits_ref(&mm, fm, &E, ref);
    CHECK(rel_worst(ref, lg, nl) < 1e-5, "the plain forward of the mapped JetMoE: within 1e-5 (%.3g)",
          rel_worst(ref, lg, nl));
    net_eval_result_free(&a);
    net_eval_result_free(&b);
    free(ref), free(lg), free(lg2), free(E.ids);
    net_free(&m);
    net_free(&f);
    net_free(&mm);
}

int main(void) {
    char tmp[] = "/tmp/test_decoder_ops.XXXXXX";
    if (!mkdtemp(tmp)) return 1;
    test_rmsnorm();
    test_rope();
    test_gqa();
    test_decoder(tmp);
    test_mapped(tmp);
    test_interp(tmp);
    test_jetmoe(tmp);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmp);
    if (system(cmd)) return 1;
    return test_summary("test_decoder_ops");
}
