/* train.h - the trainer behind `moescope train` (SPEC §7) and sample-checkpoints/.
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

#include "model.h"

/* Labelled MoE-layer inputs. */
typedef struct {
    int N, d, C;
    float *x;    // (N, d)
    int32_t *y;  // (N), labels in [0, C)
} train_set;

void train_set_free(train_set *s);

/* The UCI digits file of sample-checkpoints/: `pixels` (N, P) F32 in [0,1],
 * `labels` (N) I64. Splits it (sample i goes to the test set when i % 5 == 0)
 * and embeds the pixels into d features with the frozen random embedding. */
int train_load_digits(const char *path, int d, uint64_t embed_seed, double embed_scale,
                      train_set *train, train_set *test, ms_err *err);
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

/* Mean cross-entropy of m on (X (B,d), y (B)); gradients of that mean are
 * written to g (allocated like m; every parameter overwritten). Head and
 * LayerNorm gradients are computed only when with_head (else left zero).
 * logits (B,C) go to `logits` if not NULL. */
double train_loss_grad(const moe_model *m, const float *X, const int32_t *y, int B,
                       moe_model *g, int with_head, train_ws *w, float *logits);
/* Forward only: logits (B,C) and the mean loss (same arithmetic as above). */
double train_forward(const moe_model *m, const float *X, const int32_t *y, int B, train_ws *w,
                     float *logits);
/* Mean loss and accuracy over a whole set (in batches). */
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
} train_opts;

/* Mini-batch Adam on tr; te (may be NULL) is reported in the progress line.
 * The final train loss and test accuracy go to *final_loss / *test_acc. */
int train_run(moe_model *m, const train_set *tr, const train_set *te, const train_opts *o,
              double *final_loss, double *test_acc, ms_err *err);

#endif
