/* net_unused.h - a network checkpoint must hold only what the network reads.
 *
 * A tensor no part of the network reads is a model other than the one computed: a
 * dense block that also holds a gate and experts (config.json's moe.layers leaves it
 * out), experts.9.* beside experts 0-3, a ViT's q/k/v biases with qkv_bias false.
 * Checked once the network is read (st_was_read marks what the readers took); the
 * buffers frameworks save beside the weights (GPT-2's attn.bias masks) are no
 * parameters and pass. */
#ifndef MS_NET_UNUSED_H
#define MS_NET_UNUSED_H

#include "io/checkpoint.h"
#include "network/net_config.h"

/* -1 naming the first tensor of c nothing read (and how many more) */
int net_check_unused(ckpt *c, const net_config *nc, ms_err *err);

#endif
