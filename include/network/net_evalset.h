/* net_evalset.h - a network's evaluation set: token ids (GPT-2) or images and
 * their labels (ViT), loaded and checked against the network (legend in
 * net_model.h); the loss's shape on it. */
#ifndef MS_NET_EVALSET_H
#define MS_NET_EVALSET_H

#include <stdint.h>

#include "network/net_model.h"

typedef struct {
    char *path;
    int N, T;         /* T: tokens per sequence of input_ids; 0 for images (net_tokens) */
    int32_t *ids;     // (N, T) GPT-2: input_ids
    int C, H, W;      /* images: channels, height, width */
    float *pixels;    // (N, C, H, W) ViT: pixel_values
    int32_t *labels;  // (N) ViT: labels, the classes
} net_evalset;

/* A safetensors file of input_ids [N, T] (I32 or I64; a GPT-2's), or of
 * pixel_values [N, C, H, W] (float) and labels [N] (I32 or I64; a ViT's). */
int net_evalset_load(net_evalset *e, const char *path, ms_err *err);
/* The same from a file the caller opened (and closes). */
int net_evalset_load_file(net_evalset *e, const st_file *f, ms_err *err);
/* does path hold a tensor input_ids or pixel_values (a network's evaluation set)? */
int net_evalset_is(const char *path);
int net_evalset_file_is(const st_file *f);
/* E fits m (errors name the file, the tensor and the first offending value):
 * GPT-2: token ids, T <= n_positions, every id < vocab_size; ViT: images of
 * num_channels channels, image_size high and wide, every label < the classes */
int net_evalset_check(const net_evalset *e, const net_model *m, ms_err *err);
/* The same but the magnitudes of m's values (net_range.h): for a network
 * loaded without its backbone's values (net_load_ckpt_later), whose reader
 * calls net_evalset_check once they are in. */
int net_evalset_check_shape(const net_evalset *e, const net_model *m, ms_err *err);
void net_evalset_free(net_evalset *e);
/* out: m of E's sequences (or images and their labels), spread evenly as a
 * layer's subset is (evalset_pick); m in 1..N */
void net_evalset_subset(const net_evalset *E, int m, net_evalset *out);
/* tokens per sequence of E on m: GPT-2's T, a ViT's P + 1 (its patches and CLS) */
int net_tokens(const net_model *m, const net_evalset *E);
/* the positions the loss averages over: GPT-2's N (T - 1) next tokens, a ViT's N images */
long net_positions(const net_model *m, const net_evalset *E);
/* the loss's kind, for reports: "next-token" (GPT-2), "class" (ViT) */
const char *net_loss_kind(const net_model *m);
/* rows of logits per sequence: T (GPT-2, every position), 1 (ViT, the CLS token) */
int net_logit_rows(const net_model *m, int T);

#endif
