/* test_train.c - the trainer: gradients against central finite differences for
 * every variant (dense / top-k routing, shared experts, relu / gelu / silu_glu,
 * with and without residual, LayerNorm + head), the forward against the
 * library's evaluator, a frozen head that stays bit-identical, training that
 * lowers the loss, and reproducibility. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/evaluator.h"
#include "core/rng.h"
#include "io/digits.h"
#include "testlib.h"
#include "model/train.h"

typedef struct {
    const char *name;
    moe_router router;
    int k, s;
    moe_act act;
    int residual;
} variant;

static const variant VARIANTS[] = {
    {"dense relu", ROUTER_DENSE, 0, 0, ACT_RELU, 1},
    {"dense gelu", ROUTER_DENSE, 0, 0, ACT_GELU, 1},
    {"dense silu_glu", ROUTER_DENSE, 0, 0, ACT_SILU_GLU, 1},
    {"top2 relu", ROUTER_TOPK, 2, 0, ACT_RELU, 1},
    {"top2 gelu shared", ROUTER_TOPK, 2, 1, ACT_GELU, 1},
    {"top1 silu_glu shared2", ROUTER_TOPK, 1, 2, ACT_SILU_GLU, 1},
    {"dense relu shared no-residual", ROUTER_DENSE, 0, 1, ACT_RELU, 0},
    {"top2 silu_glu no-residual", ROUTER_TOPK, 2, 0, ACT_SILU_GLU, 0},
};
#define NVAR (int)(sizeof VARIANTS / sizeof VARIANTS[0])

static void make_model(moe_model *m, const variant *v, int n, int d, int h, int C,
                       uint64_t seed) {
    moe_config c;
    memset(&c, 0, sizeof c);
    c.n = n, c.d = d, c.h = h, c.k = v->router == ROUTER_TOPK ? v->k : 2, c.s = v->s, c.C = C;
    c.router = v->router;
    c.act = v->act;
    c.residual = v->residual;
    c.has_gate_bias = c.has_expert_bias = c.has_norm = c.has_head = 1;
    moe_alloc(m, &c);
    train_init(m, seed, 1);
    // make every parameter generic (non-zero biases, gamma != 1, a sizeable
    // gate) so that no gradient is trivially zero
    rng_t r;
    rng_seed(&r, seed + 100);
    for (size_t i = 0; i < m->nparams; i++) m->mem[i] += (float)(0.3 * rng_normal(&r));
}

static void make_data(float *X, int32_t *y, int B, int d, int C, uint64_t seed) {
    rng_t r;
    rng_seed(&r, seed);
    for (int i = 0; i < B * d; i++) X[i] = (float)rng_normal(&r);
    for (int b = 0; b < B; b++) y[b] = (int32_t)rng_below(&r, (uint64_t)C);
}

/* Which part of the model a parameter offset falls in (for messages). */
static const char *part_of(const moe_model *m, size_t off) {
    const float *p = m->mem + off;
    if (m->head_w && p >= m->head_w) return "head";
    if (m->norm_w && p >= m->norm_w) return "layernorm";
    if (m->cfg.s && p >= m->shared[0].fc1_w) return "shared";
    if (p >= m->experts[0].fc1_w) return "experts";
    return "gate";
}

/* regress: squared error against random targets instead of cross-entropy;
 * aux: the load-balancing coefficient. */
static void test_gradients(const variant *v, int regress, double aux) {
    int n = 4, d = 6, h = 5, C = 3, B = 7;
    moe_model m, g;
    make_model(&m, v, n, d, h, C, 42);
    moe_alloc(&g, &m.cfg);
    float X[7 * 6], T[7 * 3];
    int32_t y[7];
    make_data(X, y, B, d, C, 7);
    for (int i = 0; i < B * C; i++) T[i] = (float)(0.1 * (i % 7) - 0.3);
    train_batch bt = {X, regress ? NULL : y, regress ? T : NULL, B};
    train_ws *w = train_ws_new(&m.cfg, B);
    train_ws_set_aux(w, aux);
    double loss = train_loss_grad(&m, &bt, &g, 1, w, NULL);
    CHECK(isfinite(loss) && loss > 0, "%s: loss %g", v->name, loss);
    if (aux > 0) { // the load-balancing term is part of the loss
        train_ws *w0 = train_ws_new(&m.cfg, B);
        double l0 = train_forward(&m, &bt, w0, NULL);
        CHECK(loss > l0 + 1e-3 * aux, "%s: aux %g adds nothing (%g vs %g)", v->name, aux, loss,
              l0);
        train_ws_free(w0);
    }
    // central differences on every parameter; relative error per part
    const char *parts[] = {"gate", "experts", "shared", "layernorm", "head"};
    double num[5] = {0}, den[5] = {0};
    double worst = 0;
    size_t worst_i = 0;
    const float eps = 1e-2f;
    for (size_t i = 0; i < m.nparams; i++) {
        float save = m.mem[i];
        m.mem[i] = save + eps;
        double lp = train_forward(&m, &bt, w, NULL);
        m.mem[i] = save - eps;
        double lm = train_forward(&m, &bt, w, NULL);
        m.mem[i] = save;
        double fd = (lp - lm) / (2.0 * ((double)(save + eps) - (double)save));
        double an = g.mem[i];
        const char *pt = part_of(&m, i);
        int k = 0;
        while (strcmp(parts[k], pt)) k++;
        num[k] += (fd - an) * (fd - an);
        den[k] += fd * fd + an * an;
        double e = fabs(fd - an) / (fabs(fd) + fabs(an) + 1e-3);
        if (e > worst) worst = e, worst_i = i;
    }
    for (int k = 0; k < 5; k++) {
        if (k == 2 && v->s == 0) continue;
        double rel = sqrt(num[k] / (den[k] + 1e-30));
        // top-1 has g = 1 for the chosen expert: the gate gets no gradient
        if (!(k == 0 && v->router == ROUTER_TOPK && v->k == 1))
            CHECK(den[k] > 1e-12, "%s: %s gradient is all zero", v->name, parts[k]);
        CHECK(rel < 1e-2, "%s: %s gradient relative error %.3g", v->name, parts[k], rel);
    }
    // single coordinates may sit near a relu kink or a top-k switch; only a
    // gross mismatch counts
    CHECK(worst < 0.2, "%s: worst coordinate %zu (%s) error %.3g", v->name, worst_i,
          part_of(&m, worst_i), worst);
    // the MoE-only mode leaves head and LayerNorm gradients at zero, and the
    // MoE gradients unchanged
    moe_model g2;
    moe_alloc(&g2, &m.cfg);
    train_loss_grad(&m, &bt, &g2, 0, w, NULL);
    size_t head_off = (size_t)(m.norm_w - m.mem);
    int same = !memcmp(g.mem, g2.mem, head_off * sizeof(float));
    int zero = 1;
    for (size_t i = head_off; i < m.nparams; i++) zero &= g2.mem[i] == 0.0f;
    CHECK(same, "%s: MoE gradients differ between the two modes", v->name);
    CHECK(zero, "%s: head gradients not zero in MoE-only mode", v->name);
    moe_free(&g2);
    train_ws_free(w);
    moe_free(&g);
    moe_free(&m);
}

/* The trainer's forward must give the evaluator's logits. */
static void test_forward_matches_evaluator(const variant *v) {
    int n = 4, d = 8, h = 6, C = 5, B = 33;
    moe_model m;
    make_model(&m, v, n, d, h, C, 3);
    float *X = ms_malloc((size_t)B * d * sizeof(float));
    int32_t *y = ms_malloc((size_t)B * sizeof(int32_t));
    make_data(X, y, B, d, C, 11);
    float *lt = ms_malloc((size_t)B * C * sizeof(float));
    float *le = ms_malloc((size_t)B * C * sizeof(float));
    float *Z = ms_malloc((size_t)B * d * sizeof(float));
    train_ws *w = train_ws_new(&m.cfg, B);
    train_batch bt = {X, y, NULL, B};
    train_forward(&m, &bt, w, lt);
    moe_forward(&m, X, B, Z, NULL);
    moe_head(&m, Z, B, le);
    double maxd = 0;
    for (int i = 0; i < B * C; i++) maxd = fmax(maxd, fabs((double)lt[i] - le[i]));
    CHECK(maxd < 1e-4, "%s: trainer and evaluator logits differ by %g", v->name, maxd);
    train_ws_free(w);
    free(Z);
    free(le);
    free(lt);
    free(y);
    free(X);
    moe_free(&m);
}

/* Gaussian blobs, one per class, in d dims: learnable, not trivially so. */
static void blobs(train_set *s, int N, int d, int C, uint64_t seed) {
    rng_t r;
    rng_seed(&r, 1234); /* the same class centres for train and test */
    float *mu = ms_malloc((size_t)C * d * sizeof(float));
    for (int i = 0; i < C * d; i++) mu[i] = (float)rng_normal(&r);
    rng_seed(&r, seed);
    s->N = N, s->d = d, s->C = C;
    s->t = NULL;
    s->x = ms_malloc((size_t)N * d * sizeof(float));
    s->y = ms_malloc((size_t)N * sizeof(int32_t));
    for (int i = 0; i < N; i++) {
        int c = (int)rng_below(&r, (uint64_t)C);
        s->y[i] = c;
        for (int j = 0; j < d; j++)
            s->x[(size_t)i * d + j] = mu[c * d + j] + (float)(0.8 * rng_normal(&r));
    }
    free(mu);
}

static void test_training(void) {
    train_set tr, te;
    blobs(&tr, 400, 8, 4, 1);
    blobs(&te, 200, 8, 4, 2);
    const variant *v = &VARIANTS[4]; /* top-2, gelu, one shared expert */
    moe_model m;
    make_model(&m, v, 4, 8, 8, 4, 5);
    train_init(&m, 5, 1);
    moe_model head0;
    moe_clone(&head0, &m);
    train_ws *w = train_ws_new(&m.cfg, 64);
    double l0, a0, l1, a1;
    train_evaluate(&m, &tr, w, &l0, &a0);
    // MoE only, head frozen
    train_opts o = {.epochs = 15, .batch = 32, .lr = 3e-3, .seed = 9, .with_head = 0};
    train_result res;
    CHECK(train_run(&m, &tr, &te, &o, &res, NULL) == 0, "train_run failed");
    train_evaluate(&m, &tr, w, &l1, &a1);
    CHECK(l1 < 0.5 * l0, "training did not lower the loss: %g -> %g", l0, l1);
    CHECK(a1 > a0 && a1 > 0.8, "train accuracy %g -> %g", a0, a1);
    CHECK(res.test_acc > 0.8, "test accuracy %g", res.test_acc);
    size_t off = (size_t)(m.norm_w - m.mem);
    CHECK(!memcmp(m.mem + off, head0.mem + off, (m.nparams - off) * sizeof(float)),
          "the frozen head changed");
    CHECK(memcmp(m.mem, head0.mem, off * sizeof(float)), "the MoE did not change");
    // the same seed again: bit-identical parameters
    moe_model m2;
    make_model(&m2, v, 4, 8, 8, 4, 5);
    train_init(&m2, 5, 1);
    CHECK(train_run(&m2, &tr, &te, &o, NULL, NULL) == 0, "train_run failed");
    CHECK(!memcmp(m.mem, m2.mem, m.nparams * sizeof(float)), "same seed, different parameters");
    // another data-order seed: different parameters
    moe_model m3;
    make_model(&m3, v, 4, 8, 8, 4, 5);
    train_init(&m3, 5, 1);
    o.seed = 10;
    CHECK(train_run(&m3, &tr, &te, &o, NULL, NULL) == 0, "train_run failed");
    CHECK(memcmp(m.mem, m3.mem, m.nparams * sizeof(float)), "the data-order seed is ignored");
    // the pretrain mode (head trained too) lowers the loss as well
    moe_model p;
    variant dv = {"dense relu", ROUTER_DENSE, 0, 0, ACT_RELU, 1};
    make_model(&p, &dv, 1, 8, 8, 4, 6);
    train_init(&p, 6, 1);
    train_evaluate(&p, &tr, w, &l0, &a0);
    train_opts op = {.epochs = 15, .batch = 32, .lr = 3e-3, .seed = 1, .with_head = 1};
    CHECK(train_run(&p, &tr, NULL, &op, NULL, NULL) == 0, "train_run (pretrain) failed");
    train_evaluate(&p, &tr, w, &l1, &a1);
    CHECK(l1 < 0.5 * l0 && a1 > 0.8, "pretrain: loss %g -> %g, acc %g", l0, l1, a1);
    // bad options are refused
    ms_err err;
    train_opts bad = o;
    bad.batch = 0;
    CHECK(train_run(&m3, &tr, NULL, &bad, NULL, &err) == -1, "batch 0 accepted");
    moe_free(&p);
    moe_free(&m3);
    moe_free(&m2);
    train_ws_free(w);
    moe_free(&head0);
    moe_free(&m);
    train_set_free(&tr);
    train_set_free(&te);
}

/* The digits file: split sizes and the embedding's determinism. */
static void test_digits(void) {
    const char *path = "sample-checkpoints/digits.safetensors";
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        CHECK(0, "%s is missing (it is committed)", path);
        return;
    }
    fclose(fp);
    train_set tr, te, tr2, te2;
    ms_err err;
    CHECK(digits_load(path, 32, 0, 1.0, &tr, &te, &err) == 0, "%s", err.msg);
    CHECK(tr.N == 1437 && te.N == 360 && tr.C == 10, "split %d/%d, %d classes", tr.N, te.N,
          tr.C);
    CHECK(digits_load(path, 32, 0, 1.0, &tr2, &te2, &err) == 0, "%s", err.msg);
    CHECK(!memcmp(te.x, te2.x, (size_t)te.N * 32 * sizeof(float)), "embedding not deterministic");
    CHECK(digits_load("no/such/file", 32, 0, 1.0, &tr2, &te2, &err) == -1 &&
              strstr(err.msg, "no/such/file"),
          "missing file: '%s'", err.msg);
    train_set_free(&tr2);
    train_set_free(&te2);
    train_set_free(&tr);
    train_set_free(&te);
}

int main(void) {
    openblas_set_num_threads(1);
    for (int i = 0; i < NVAR; i++) {
        test_gradients(&VARIANTS[i], 0, 0.0);
        test_gradients(&VARIANTS[i], 1, 0.0);
        test_gradients(&VARIANTS[i], i % 2, 0.5);
        test_forward_matches_evaluator(&VARIANTS[i]);
    }
    test_training();
    test_digits();
    return test_summary("test_train");
}
