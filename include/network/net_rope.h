/* net_rope.h - a decoder's rotary embedding as transformers' ROPE_INIT_FUNCTIONS
 * computes it (modeling_rope_utils.py): the inverse frequencies of the rot/2
 * pairs and the attention factor that multiplies cos and sin, from config.json's
 * rope_theta and rope_scaling (or rope_parameters):
 *   none / "default"  inv_freq_i = theta^(-2i/rot)
 *   "dynamic"         the same for T <= max_position_embeddings (the only T
 *                     moescope evaluates: NTK rescaling starts beyond it)
 *   "linear"          inv_freq_i / factor
 *   "llama3"          Llama 3.1's: low frequencies / factor, high ones kept, a
 *                     smooth blend between (low_freq_factor, high_freq_factor,
 *                     original_max_position_embeddings)
 *   "yarn"            YaRN: interpolated / extrapolated frequencies blended by a
 *                     ramp over the dims between beta_fast and beta_slow rotations
 *                     (truncated to whole dims unless truncate: false), attention
 *                     factor 0.1 mscale ln(factor) + 1 (or mscale / mscale_all_dim's
 *                     ratio, or attention_factor)
 *   "longrope"        Phi-3's: inv_freq_i / short_factor_i for sequences of at most
 *                     original_max_position_embeddings tokens, / long_factor_i
 *                     beyond; attention factor attention_factor, else
 *                     sqrt(1 + ln(factor) / ln(original)) (factor: max_position_embeddings
 *                     / original); PhiMoE's: short_mscale / long_mscale instead
 * and any other kind is refused by name. */
#ifndef MS_NET_ROPE_H
#define MS_NET_ROPE_H

#include "io/config_json.h"
#include "network/net_config.h"

/* nc's theta, rope kind, inv_freq and rope_af (nc->rot and nc->npos set). */
int net_rope_read(const cfg_obj *top, net_config *nc, ms_err *err);
/* The frequencies and attention factor of sequences of T tokens. */
void net_rope_at(const net_config *c, int T, const double **inv_freq, double *af);

#endif
