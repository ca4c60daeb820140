/* codec.h - the number formats real checkpoints store: writing BF16 and F16
 * (round to nearest, ties to even), and GPT-OSS's MXFP4.
 *
 * MXFP4 (OCP microscaling, as GPT-OSS stores its experts): values come in
 * blocks of 32 along a row's input dimension. A block is 16 bytes of 4-bit
 * E2M1 codes (the low nibble of byte j is element 2j, the high nibble element
 * 2j+1) and one U8 scale s; element = FP4[code] * 2^(s - 127), with
 *   FP4 = {0, .5, 1, 1.5, 2, 3, 4, 6, -0, -.5, -1, -1.5, -2, -3, -4, -6}.
 * Tensors: `<name>_blocks` U8 [..., out, in/32, 16], `<name>_scales` U8
 * [..., out, in/32]. */
#ifndef MS_CODEC_H
#define MS_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* float -> bfloat16 / IEEE half, round to nearest even (NaN stays NaN, overflow
 * to infinity). Exact for a value that came from that format. BF16 inline: a
 * real checkpoint's writer calls it once per weight. */
static inline uint16_t codec_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x7fffffu)) return (uint16_t)((u >> 16) | 0x40u);
    // round to nearest even on the 16 bits dropped
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}
uint16_t codec_f32_to_f16(float x);

#define MX_BLOCK 32

extern const float codec_fp4_values[16];

/* Decode nblocks blocks (16 code bytes + one scale each) into 32*nblocks
 * floats. Returns -1 if a value is not a finite float (a scale near 255). */
int mxfp4_decode(const uint8_t *blocks, const uint8_t *scales, size_t nblocks, float *out);
/* Encode 32 floats as one block: the scale (of the two candidates around the
 * largest magnitude) and the codes with the least squared error. Returns that
 * squared error. */
double mxfp4_encode_block(const float *v, uint8_t *codes16, uint8_t *scale);

/* Re-encoding MXFP4 after a permutation: blocks whose 32 values equal a block
 * of the source (an expert moved whole, a row moved whole) keep the source's
 * exact bytes; only the others are requantised. */
typedef struct mx_reuse mx_reuse;
/* Index the source's blocks (decoded values dec, 32 per block). */
mx_reuse *mx_reuse_new(const uint8_t *blocks, const uint8_t *scales, const float *dec,
                       size_t nblocks);
void mx_reuse_free(mx_reuse *r);
/* Encode vals (32*nblocks floats) into blocks/scales, reusing source blocks
 * where the values match exactly. *nrequant counts blocks quantised afresh,
 * *sq_err and *sq_ref sum the squared error they add and the squared values. */
void mx_encode(const mx_reuse *r, const float *vals, size_t nblocks, uint8_t *blocks,
               uint8_t *scales, size_t *nrequant, double *sq_err, double *sq_ref);

#endif
