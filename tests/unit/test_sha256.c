/* test_sha256.c - sha256.c on the FIPS 180-4 / NIST example vectors (empty,
 * "abc", the two-block 448-bit message, a million 'a'), and fed in every split
 * of messages around the 55/56/64-byte padding edges, with the x86 SHA
 * extensions and without, and a megabyte both ways. test_provenance.py checks
 * files against sha256sum. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "io/sha256.h"
#include "testlib.h"

static void hex_of(const void *msg, size_t len, char out[65]) {
    sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    sha256_update(&c, msg, len);
    sha256_final(&c, d);
    sha256_hex(d, out);
}

/* the vectors and splits with the SHA extensions, then without (when the
 * CPU has them; else twice the plain loop) */
static void vectors(void);

/* a megabyte of noise, in uneven pieces: the SHA extensions' digest equals the
 * plain loop's */
static void hw_equals_plain(void) {
    static unsigned char big[1 << 20];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof big; i++) x = x * 1103515245u + 12345u, big[i] = (unsigned char)(x >> 23);
    char d[2][65];
    for (int hw = 0; hw < 2; hw++) {
        sha256_hardware(hw);
        sha256_ctx c;
        uint8_t out[32];
        sha256_init(&c);
        for (size_t o = 0, k = 1; o < sizeof big; o += k, k = k * 3 % 8191 + 1)
            sha256_update(&c, big + o, o + k <= sizeof big ? k : sizeof big - o);
        sha256_final(&c, out);
        sha256_hex(out, d[hw]);
    }
    CHECK(!strcmp(d[0], d[1]), "1 MiB: SHA extensions %s vs plain %s", d[1], d[0]);
}

int main(void) {
    printf("SHA extensions: %s\n", sha256_hardware(-1) ? "used" : "not on this CPU");
    vectors();
    sha256_hardware(0);
    vectors();
    hw_equals_plain();
    sha256_hardware(1);
    return test_summary("test_sha256");
}

static void vectors(void) {
    char h[65];
    hex_of("", 0, h);
    CHECK(!strcmp(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty: %s", h);
    hex_of("abc", 3, h);
    CHECK(!strcmp(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc: %s", h);
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(m2, strlen(m2), h);
    CHECK(!strcmp(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits: %s", h);
    sha256_ctx c;
    uint8_t d[32];
    sha256_init(&c);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++) sha256_update(&c, a, sizeof a);
    sha256_final(&c, d);
    sha256_hex(d, h);
    CHECK(!strcmp(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"), "1e6 a: %s", h);
    // any split of the input gives the one-shot digest
    unsigned char msg[200];
    for (int i = 0; i < 200; i++) msg[i] = (unsigned char)(i * 37 + 11);
    int bad = 0;
    for (size_t len = 0; len <= 130; len++) {
        char whole[65];
        hex_of(msg, len, whole);
        for (size_t cut = 0; cut <= len; cut += (len < 70 ? 1 : 7)) {
            sha256_init(&c);
            sha256_update(&c, msg, cut);
            sha256_update(&c, msg + cut, len - cut);
            sha256_final(&c, d);
            sha256_hex(d, h);
            bad += strcmp(h, whole) != 0;
        }
    }
    CHECK(bad == 0, "split updates differ from one-shot %d times", bad);
}
