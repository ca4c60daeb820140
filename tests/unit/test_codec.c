/* test_codec.c - BF16 / F16 writers and the MXFP4 codec.
 *
 * BF16 and F16: every one of the 65536 codes survives decode -> encode (a pure
 * permutation stays bit-exact); random floats round to the nearest code, ties to
 * the even one, checked by brute force against the two neighbouring codes.
 * MXFP4: decode against the table by hand; encoding a decoded block gives the
 * same values back; the encoder's error is no worse than either neighbouring
 * scale's; whole-block reuse gives back the source bytes exactly. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/codec.h"
#include "io/safetensors.h"
#include "testlib.h"

static uint64_t rs = 88172645463325252ull;
static uint64_t rnd(void) {
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static float f16_val(uint16_t h) { return st_half_to_float(h); }
static float bf16_val(uint16_t h) { return st_bf16_to_float(h); }

/* Nearest code to x among the codes around the truncated one, ties to even. */
static void check_nearest(float x, uint16_t got, float (*val)(uint16_t), uint16_t lo,
                          const char *what) {
    double best = INFINITY;
    uint16_t want = lo;
    for (int k = -1; k <= 2; k++) {
        uint16_t c = (uint16_t)(lo + k);
        float v = val(c);
        if (isnan(v)) continue;
        if (signbit(v) != signbit(x) && v != 0) continue;
        double e = fabs((double)v - (double)x);
        if (e < best || (e == best && !(c & 1))) {
            best = e;
            want = c;
        }
    }
    CHECK(got == want, "%s(%.9g) = 0x%04x, nearest even is 0x%04x", what, x, got, want);
}

static void test_half_formats(void) {
    int bad_bf = 0, bad_h = 0;
    for (uint32_t c = 0; c < 65536; c++) {
        float b = bf16_val((uint16_t)c), h = f16_val((uint16_t)c);
        if (!isnan(b) && codec_f32_to_bf16(b) != c) bad_bf++;
        if (!isnan(h) && codec_f32_to_f16(h) != c) bad_h++;
        if (isnan(b)) CHECK(isnan(bf16_val(codec_f32_to_bf16(b))), "bf16 NaN stays NaN");
    }
    CHECK(bad_bf == 0, "%d bf16 codes change on decode -> encode", bad_bf);
    CHECK(bad_h == 0, "%d f16 codes change on decode -> encode", bad_h);
    for (int i = 0; i < 20000; i++) {
        uint32_t u = (uint32_t)rnd();
        float x;
        memcpy(&x, &u, 4);
        if (!isfinite(x)) continue;
        check_nearest(x, codec_f32_to_bf16(x), bf16_val, (uint16_t)(u >> 16), "bf16");
        float y = x * 1e-30f * (float)(rnd() % 1000); // into half's range, subnormals too
        if (fabsf(y) < 65504.0f) {
            uint16_t got = codec_f32_to_f16(y);
            check_nearest(y, got, f16_val, (uint16_t)(got - 1), "f16");
        }
    }
    uint32_t tie = 0x3f808000u; // 1 + 2^-8: exactly between two bf16 codes, the even one is 0x3f80
    float t;
    memcpy(&t, &tie, 4);
    CHECK(codec_f32_to_bf16(t) == 0x3f80, "bf16 tie to even: 0x%04x", codec_f32_to_bf16(t));
    CHECK(codec_f32_to_f16(70000.0f) == 0x7c00, "f16 overflow to infinity");
    CHECK(codec_f32_to_f16(65504.0f) == 0x7bff, "f16 max");
}

static void test_mxfp4(void) {
    uint8_t blk[16], sc = 127 + 3;
    for (int j = 0; j < 16; j++) blk[j] = (uint8_t)(j | (15 - j) << 4);
    float out[32];
    CHECK(mxfp4_decode(blk, &sc, 1, out) == 0, "decode");
    int bad = 0;
    for (int j = 0; j < 16; j++) {
        bad += out[2 * j] != codec_fp4_values[j] * 8.0f;
        bad += out[2 * j + 1] != codec_fp4_values[15 - j] * 8.0f;
    }
    CHECK(bad == 0, "decode: low nibble is the even element, times 2^(s-127): %d wrong", bad);
    uint8_t big = 255;
    CHECK(mxfp4_decode(blk, &big, 1, out) == -1, "scale 255 overflows float32: refused");

    // encode(decode(block)) gives the same values; error never above the neighbours'
    for (int t = 0; t < 2000; t++) {
        uint8_t b[16], s = (uint8_t)(100 + rnd() % 50), b2[16], s2;
        for (int j = 0; j < 16; j++) b[j] = (uint8_t)rnd();
        float v[32], w[32];
        mxfp4_decode(b, &s, 1, v);
        double e = mxfp4_encode_block(v, b2, &s2);
        mxfp4_decode(b2, &s2, 1, w);
        int diff = 0;
        for (int j = 0; j < 32; j++) diff += v[j] != w[j]; // values (-0 == +0), not bits
        CHECK(e == 0 && diff == 0, "round trip of block %d: error %g, %d values differ", t, e, diff);
        float r[32];
        for (int j = 0; j < 32; j++) r[j] = (float)((double)(int64_t)rnd() / 9.2e18);
        double er = mxfp4_encode_block(r, b2, &s2);
        mxfp4_decode(b2, &s2, 1, w);
        double chk = 0;
        for (int j = 0; j < 32; j++) chk += (double)(r[j] - w[j]) * (r[j] - w[j]);
        CHECK(fabs(chk - er) <= 1e-12 + 1e-6 * chk, "reported error %g vs %g", er, chk);
        double amax = 0;
        for (int j = 0; j < 32; j++) amax = fmax(amax, fabs(r[j]));
        CHECK(sqrt(chk / 32) <= 0.25 * amax, "error %g too large for amax %g", sqrt(chk / 32), amax);
    }

    // reuse: blocks of a source, shuffled, come back byte for byte
    enum { NB = 64 };
    uint8_t sb[NB * 16], ss[NB], ob[NB * 16], os[NB];
    for (int i = 0; i < NB * 16; i++) sb[i] = (uint8_t)rnd();
    for (int i = 0; i < NB; i++) ss[i] = (uint8_t)(110 + rnd() % 20);
    float *dec = malloc(NB * 32 * sizeof(float)), *vals = malloc(NB * 32 * sizeof(float));
    mxfp4_decode(sb, ss, NB, dec);
    int perm[NB];
    for (int i = 0; i < NB; i++) perm[i] = (i * 37 + 5) % NB;
    for (int i = 0; i < NB; i++) memcpy(vals + 32 * i, dec + 32 * perm[i], 32 * sizeof(float));
    vals[32 * 7 + 3] += 0.001f; // one block changed: requantised
    mx_reuse *r = mx_reuse_new(sb, ss, dec, NB);
    size_t nreq = 0;
    double se = 0, sr = 0;
    mx_encode(r, vals, NB, ob, os, &nreq, &se, &sr);
    mx_reuse_free(r);
    int same = 0;
    for (int i = 0; i < NB; i++)
        same += !memcmp(ob + 16 * i, sb + 16 * perm[i], 16) && os[i] == ss[perm[i]];
    CHECK(same == NB - 1, "reused %d of %d blocks byte for byte", same, NB - 1);
    CHECK(nreq == 1 && sr > 0, "requantised %zu block(s)", nreq);
    free(dec);
    free(vals);
}

int main(void) {
    test_half_formats();
    test_mxfp4();
    return test_summary("test_codec");
}
