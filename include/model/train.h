/* train.h - the trainer behind `moescope train` and sample-checkpoints/.
 *
 * The model is the one of model.h: frozen features x (d) -> block z = [x +] D(x)
 * -> LayerNorm -> linear head -> softmax cross-entropy. The block is either a
 * dense feed-forward layer (an MoE with n = 1, the "pretrained" model, trained
 * together with LayerNorm and head) or an MoE layer trained alone while the
 * head stays frozen. Float32 compute with single-threaded OpenBLAS GEMMs, so
 * the same seed gives the same bytes.
 *
 * Legend: B batch, N samples, P pixels (64), the rest as in model.h. */
#ifndef MS_TRAIN_H
#define MS_TRAIN_H

#include <stdint.h>

#include "model/model.h"

/* MoE-layer inputs with labels (classification, cross-entropy) or targets
 * (regression, mean squared error): exactly one of y and t is set. */
typedef struct {
    int N, d, C;
    float *x;    // (N, d)
    int32_t *y;  // (N), labels in [0, C); NULL for regression
    float *t;    // (N, C), regression targets; NULL for classification
} train_set;

void train_set_free(train_set *s);

/* Split N samples, x (N,d) with labels y (N) or targets t (N,C) (one of the
 * two), into train and test: sample i is a test sample when i % 5 == 0. */
void train_split(int N, int d, int C, const float *x, const int32_t *y, const float *t,
                 train_set *train, train_set *test);
/* The frozen embedding: x = scale * tanh(R p) with R (d, P) ~ N(0, 1/P)*3 drawn
 * from embed_seed. pixels (N, P) -> x (N, d). */
void train_embed(const float *pixels, int N, int P, int d, uint64_t embed_seed, double scale,
                 float *x);

/* Random initialisation from seed: gate, experts and shared experts; also
 * LayerNorm (gamma 1, beta 0) and head when with_head. */
void train_init(moe_model *m, uint64_t seed, int with_head);

/* Scratch space for one batch of up to Bmax samples. */
typedef struct train_ws train_ws;
train_ws *train_ws_new(const moe_config *c, int Bmax);
void train_ws_free(train_ws *w);
/* The coefficient a of the load-balancing loss added to every batch's loss
 * (default 0: none). Switch Transformer's form, as Mixtral trains with it:
 *   L_aux = a * n * sum_i f_i P_i,
 * f_i the fraction of the batch's (sample, slot) selections that went to
 * expert i (top-k, or the top-1 for dense routing; a constant for the
 * gradient), P_i the mean over the batch of the full softmax of the scores. */
void train_ws_set_aux(train_ws *w, double a);

/* One batch: X (B,d) with labels y (B) or targets T (B,C) (one of the two). */
typedef struct {
    const float *X;
    const int32_t *y;
    const float *T;
    int B;
} train_batch;

/* Mean loss of m on the batch (cross-entropy over labels, or squared error
 * over targets averaged over B*C), plus the load-balancing term; gradients of
 * that total are written to g (allocated like m; every parameter overwritten).
 * Head and LayerNorm gradients are computed only when with_head (else left
 * zero). logits (B,C) go to `logits` if not NULL. */
double train_loss_grad(const moe_model *m, const train_batch *bt, moe_model *g, int with_head,
                       train_ws *w, float *logits);
/* Forward only: logits (B,C) and the same total loss as above. */
double train_forward(const moe_model *m, const train_batch *bt, train_ws *w, float *logits);
/* Mean loss (without the load-balancing term) and accuracy over a whole set
 * (in batches); accuracy is -1 for regression. */
void train_evaluate(const moe_model *m, const train_set *s, train_ws *w, double *loss,
                    double *acc);

/* Adam (beta1 0.9, beta2 0.999, eps 1e-8) over the MoE parameters, and over
 * LayerNorm + head too when with_head. */
typedef struct {
    float *m1, *m2; /* first and second moments, laid out like model->mem */
    size_t n;
    long t;
} adam_state;
void adam_init(adam_state *a, const moe_model *m);
void adam_free(adam_state *a);
void adam_step(adam_state *a, moe_model *m, const moe_model *g, double lr, int with_head);

typedef struct {
    int epochs, batch;
    double lr;
    uint64_t seed;   /* data order */
    int with_head;   /* train LayerNorm + head as well (the pretrained model) */
    int progress;    /* a progress line on stderr */
    int cosine;      /* lr * (1 + cos(pi * step / steps)) / 2 instead of a constant lr */
    double aux;      /* load-balancing coefficient (train_ws_set_aux), 0 = none */
} train_opts;

typedef struct {
    double train_loss; /* the last epoch's mean batch loss (with the aux term) */
    double test_loss;  /* on te; NaN without te */
    double test_acc;   /* on te; -1 without te or for regression */
} train_result;

/* Mini-batch Adam on tr; te (may be NULL) is reported in the progress line.
 * Final figures go to *res (may be NULL). */
int train_run(moe_model *m, const train_set *tr, const train_set *te, const train_opts *o,
              train_result *res, ms_err *err);

/* The teacher-student setting: a random "teacher" MoE layer (gate rows
 * scaled so routing is sharp, second-layer weights scaled so the experts
 * matter) with a frozen LayerNorm + linear head; students of the same shape
 * learn its head outputs from Gaussian inputs. Students trained from
 * different seeds recover the teacher's experts, each in its own order, so
 * their experts correspond by construction. */
typedef struct {
    uint64_t seed;
    double gate_scale;  /* gate rows ~ N(0, 1/d) * gate_scale (e.g. 2 sqrt(d)) */
    double out_scale;   /* second-layer weights * out_scale (e.g. 3) */
} teacher_opts;
/* Initialise m (allocated with head and LayerNorm) as a teacher. */
void train_init_teacher(moe_model *m, const teacher_opts *o);
/* N samples x ~ N(0, I) from data_seed, targets = the teacher's head outputs
 * (B,C); split like the digits (i % 5 == 0 is the test set). */
void train_teacher_data(const moe_model *teacher, int N, uint64_t data_seed, train_set *train,
                        train_set *test);

#endif
