/* geo_capture.h - the routing geometry's inputs for a checkpoint whose
 * network moescope does not run (a Hugging Face MoE, or any checkpoint with a
 * captured set): every MoE layer's gate from the checkpoint, every layer's
 * inputs from one capture file.
 *
 * The capture file (sample-checkpoints/capture_inputs.py --layers all) holds,
 * for the same N tokens in one pass, the tensor inputs.L [N, d] for each MoE
 * block L (the input of the block's MoE module: after the layer's norm, what
 * the router reads); a layer without a block index (moescope's own names) is
 * looked up as inputs.<prefix>. Every layer's tensor must be there, of the
 * layer's width, with one N for all (the same tokens). */
#ifndef MS_GEO_CAPTURE_H
#define MS_GEO_CAPTURE_H

#include "analysis/geometry.h"
#include "io/family.h"
#include "io/safetensors.h"

typedef struct {
    int L, N, d;
    moe_model *moe;          // (L) the gates (the routed experts not read)
    geo_layer_in *in;        // (L)
    const st_tensor **t;     // (L) each layer's capture tensor
    char **names;            // (L) the tensors' names
    st_file f;
    float *buf;              // (N, d) the layer last read
} geo_capture;

/* Open the checkpoint's MoE layers (o: the family and router overrides, may be
 * NULL) and find their tensors in the capture file. */
int geo_capture_open(geo_capture *c, const char *ckpt_path, const char *capture_path, const family_overrides *o,
                     ms_err *err);
/* geo_inputs_fn: layer l's inputs, read into c->buf */
const float *geo_capture_inputs(void *ctx, int l, ms_err *err);
void geo_capture_close(geo_capture *c);

#endif
