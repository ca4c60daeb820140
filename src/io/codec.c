/* codec.c - BF16/F16 writers and the MXFP4 codec (see codec.h). */
#include "io/codec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_error.h"

uint16_t codec_f32_to_f16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);
    if (a >= 0x477ff000u) return sign | 0x7c00u; // rounds past 65504: infinity
    if (a < 0x38800000u) {
        // subnormal half: value = m * 2^-24; round a's real value to that grid
        float f;
        memcpy(&f, &a, 4);
        float q = rintf(f * 16777216.0f); // 2^24; rintf rounds ties to even
        return sign | (uint16_t)q;
    }
    uint32_t e = (a >> 23) - 127 + 15, m = a & 0x7fffffu;
    uint32_t h = (e << 10) | (m >> 13);
    uint32_t rest = m & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) h++; // carries into the exponent correctly
    return sign | (uint16_t)h;
}

const float codec_fp4_values[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                    -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

int mxfp4_decode(const uint8_t *blocks, const uint8_t *scales, size_t nblocks, float *out) {
    for (size_t b = 0; b < nblocks; b++) {
        float s = ldexpf(1.0f, (int)scales[b] - 127);
        const uint8_t *q = blocks + 16 * b;
        float *o = out + MX_BLOCK * b;
        for (int j = 0; j < 16; j++) {
            o[2 * j] = codec_fp4_values[q[j] & 15] * s;
            o[2 * j + 1] = codec_fp4_values[q[j] >> 4] * s;
        }
        for (int j = 0; j < MX_BLOCK; j++)
            if (!isfinite(o[j])) return -1;
    }
    return 0;
}

/* Nearest FP4 code of x (already divided by the scale); ties to the even code. */
static uint8_t fp4_nearest(float x) {
    float a = fabsf(x);
    uint8_t best = 0;
    float bd = INFINITY;
    for (uint8_t c = 0; c < 8; c++) {
        float dd = fabsf(a - codec_fp4_values[c]);
        if (dd < bd || (dd == bd && !(c & 1))) {
            bd = dd;
            best = c;
        }
    }
    return (uint8_t)(best | (signbit(x) && best ? 8 : 0));
}

static double encode_with(const float *v, int s, uint8_t *codes16) {
    double e = 0;
    float inv = ldexpf(1.0f, 127 - s), sc = ldexpf(1.0f, s - 127);
    for (int j = 0; j < 16; j++) {
        uint8_t lo = fp4_nearest(v[2 * j] * inv), hi = fp4_nearest(v[2 * j + 1] * inv);
        codes16[j] = (uint8_t)(lo | hi << 4);
        double d0 = v[2 * j] - codec_fp4_values[lo] * sc, d1 = v[2 * j + 1] - codec_fp4_values[hi] * sc;
        e += d0 * d0 + d1 * d1;
    }
    return e;
}

double mxfp4_encode_block(const float *v, uint8_t *codes16, uint8_t *scale) {
    float amax = 0;
    for (int j = 0; j < MX_BLOCK; j++) amax = fmaxf(amax, fabsf(v[j]));
    if (amax == 0) {
        memset(codes16, 0, 16);
        *scale = 127;
        return 0;
    }
    // the largest FP4 magnitude is 6 = 1.5 * 2^2: scale 2^(floor(log2 amax) - 2) keeps
    // amax below 8 (it may clip to 6); one step up never clips. Keep the better.
    int s0 = ilogbf(amax) - 2 + 127;
    double best = INFINITY;
    for (int s = s0; s <= s0 + 1; s++) {
        if (s < 0 || s > 254) continue;
        uint8_t c[16];
        double e = encode_with(v, s, c);
        if (e < best) {
            best = e;
            memcpy(codes16, c, 16);
            *scale = (uint8_t)s;
        }
    }
    return best;
}

/* ---- reuse of exact source blocks ---- */

struct mx_reuse {
    const uint8_t *blocks, *scales;
    const float *dec;
    size_t nblocks, cap; /* cap: table size, a power of two */
    int64_t *slot;       /* block number + 1, 0 = empty */
};

static uint64_t block_hash(const float *v) {
    uint64_t h = 1469598103934665603ull;
    const unsigned char *p = (const unsigned char *)v;
    for (size_t i = 0; i < MX_BLOCK * sizeof(float); i++) h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

mx_reuse *mx_reuse_new(const uint8_t *blocks, const uint8_t *scales, const float *dec,
                       size_t nblocks) {
    mx_reuse *r = ms_calloc(1, sizeof *r);
    r->blocks = blocks;
    r->scales = scales;
    r->dec = dec;
    r->nblocks = nblocks;
    r->cap = 16;
    while (r->cap < 2 * nblocks) r->cap *= 2;
    r->slot = ms_calloc(r->cap, sizeof(int64_t));
    for (size_t b = 0; b < nblocks; b++) {
        size_t i = block_hash(dec + MX_BLOCK * b) & (r->cap - 1);
        while (r->slot[i]) i = (i + 1) & (r->cap - 1);
        r->slot[i] = (int64_t)b + 1;
    }
    return r;
}

void mx_reuse_free(mx_reuse *r) {
    if (!r) return;
    free(r->slot);
    free(r);
}

/* A source block with exactly these values (bit for bit), or -1. */
static int64_t reuse_find(const mx_reuse *r, const float *v) {
    size_t i = block_hash(v) & (r->cap - 1);
    for (; r->slot[i]; i = (i + 1) & (r->cap - 1)) {
        int64_t b = r->slot[i] - 1;
        if (!memcmp(r->dec + MX_BLOCK * b, v, MX_BLOCK * sizeof(float))) return b;
    }
    return -1;
}

void mx_encode(const mx_reuse *r, const float *vals, size_t nblocks, uint8_t *blocks,
               uint8_t *scales, size_t *nrequant, double *sq_err, double *sq_ref) {
    for (size_t b = 0; b < nblocks; b++) {
        const float *v = vals + MX_BLOCK * b;
        int64_t src = r ? reuse_find(r, v) : -1;
        if (src >= 0) {
            memcpy(blocks + 16 * b, r->blocks + 16 * src, 16);
            scales[b] = r->scales[src];
            continue;
        }
        *sq_err += mxfp4_encode_block(v, blocks + 16 * b, &scales[b]);
        for (int j = 0; j < MX_BLOCK; j++) *sq_ref += (double)v[j] * v[j];
        (*nrequant)++;
    }
}
