/* sha256.c - SHA-256 as FIPS 180-4 states it: 64-byte blocks, the message
 * padded with 0x80, zeros and its bit length (big-endian). */
#include "io/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t ror(uint32_t x, int r) { return (x >> r) | (x << (32 - r)); }

static void block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
    }
    h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

// (clang 14 has no "sha" for __builtin_cpu_supports: it builds the portable path, e.g. for make fuzz)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>

/* The same blocks with the x86 SHA extensions (about 5x the plain loop: a
 * checkpoint folder of gigabytes is hashed for every report). State lanes
 * ABEF / CDGH as sha256rnds2 wants them; four rounds per group of the message
 * schedule, W[i..i+3] = msg2(msg1(W[i-16..], W[i-12..]) + W[i-7..], W[i-4..]). */
__attribute__((target("sha,sse4.1"))) static void blocks_shani(uint32_t h[8], const uint8_t *p,
                                                               size_t nblocks) {
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1); // CDAB
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); // EFGH
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                        // ABEF
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                             // CDGH
    for (; nblocks > 0; nblocks--, p += 64) {
        __m128i abef = s0, cdgh = s1, m[4];
        for (int g = 0; g < 16; g++) {
            __m128i *w = &m[g & 3];
            if (g < 4)
                *w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * g)), swap);
            else
                *w = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(*w, m[(g + 1) & 3]),
                                  _mm_alignr_epi8(m[(g + 3) & 3], m[(g + 2) & 3], 4)),
                    m[(g + 3) & 3]);
            __m128i x = _mm_add_epi32(*w, _mm_loadu_si128((const __m128i *)&K[4 * g]));
            s1 = _mm_sha256rnds2_epu32(s1, s0, x);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(x, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);     // FEBA
    s1 = _mm_shuffle_epi32(s1, 0xB1);    // DCHG
    s0 = _mm_blend_epi16(t, s1, 0xF0);   // DCBA
    s1 = _mm_alignr_epi8(s1, t, 8);      // HGFE
    _mm_storeu_si128((__m128i *)&h[0], s0);
    _mm_storeu_si128((__m128i *)&h[4], s1);
}

static int hw_ok(void) {
    static int ok = -1;
    if (ok < 0) ok = __builtin_cpu_supports("sha") && __builtin_cpu_supports("sse4.1");
    return ok;
}
#else
static void blocks_shani(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    (void)h, (void)p, (void)nblocks;
}
static int hw_ok(void) { return 0; }
#endif

static int use_hw = 1;

int sha256_hardware(int on) {
    if (on >= 0) use_hw = on;
    return use_hw && hw_ok();
}

/* nblocks whole blocks of p */
static void blocks(uint32_t h[8], const uint8_t *p, size_t nblocks) {
    if (use_hw && hw_ok()) {
        blocks_shani(h, p, nblocks);
        return;
    }
    for (; nblocks > 0; nblocks--, p += 64) block(h, p);
}

void sha256_init(sha256_ctx *c) {
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, h0, sizeof h0);
    c->len = 0;
    c->nbuf = 0;
}

void sha256_update(sha256_ctx *c, const void *data, size_t len) {
    const uint8_t *p = data;
    c->len += len;
    if (c->nbuf) {
        size_t take = 64 - c->nbuf < len ? 64 - c->nbuf : len;
        memcpy(c->buf + c->nbuf, p, take);
        c->nbuf += take, p += take, len -= take;
        if (c->nbuf < 64) return;
        blocks(c->h, c->buf, 1);
        c->nbuf = 0;
    }
    blocks(c->h, p, len / 64);
    p += len / 64 * 64, len %= 64;
    memcpy(c->buf, p, len);
    c->nbuf = len;
}

void sha256_final(sha256_ctx *c, uint8_t out[32]) {
    uint64_t bits = c->len * 8;
    uint8_t pad[72] = {0x80};
    size_t npad = (c->nbuf < 56 ? 56 : 120) - c->nbuf;
    for (int i = 0; i < 8; i++) pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
    sha256_update(c, pad, npad + 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
}

void sha256_hex(const uint8_t dig[32], char out[65]) {
    static const char hx[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        out[2 * i] = hx[dig[i] >> 4];
        out[2 * i + 1] = hx[dig[i] & 15];
    }
    out[64] = '\0';
}

int sha256_file(const char *path, uint8_t out[32], long long *size, ms_err *err) {
    return sha256_file_progress(path, out, size, NULL, err);
}

int sha256_file_progress(const char *path, uint8_t out[32], long long *size, void (*on_read)(size_t),
                         ms_err *err) {
    // a regular file only, read up to the size it had when opened: a FIFO would block,
    // /dev/zero (or a file that grows) would never end
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) return ms_fail(err, "%s: cannot open for its SHA-256: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
        close(fd);
        return ms_fail(err, "%s: not a regular file; its SHA-256 is not taken", path);
    }
    sha256_ctx c;
    sha256_init(&c);
    static __thread uint8_t buf[1 << 16];
    uint64_t left = (uint64_t)sb.st_size;
    int bad = 0;
    while (left > 0) {
        ssize_t got = read(fd, buf, left < sizeof buf ? (size_t)left : sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) { // an error, or the file shrank
            bad = 1;
            break;
        }
        sha256_update(&c, buf, (size_t)got);
        left -= (uint64_t)got;
        if (on_read) on_read((size_t)got);
    }
    close(fd);
    if (bad) return ms_fail(err, "%s: read error while computing its SHA-256", path);
    if (size) *size = (long long)c.len;
    sha256_final(&c, out);
    return 0;
}
