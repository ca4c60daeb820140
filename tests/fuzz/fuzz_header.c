/* fuzz_header.c - libFuzzer harness over header size x metadata count: the input's
 * first bytes choose how many metadata keys (up to 2^17, across the 100000 cap),
 * their length and shared prefix, how much padding the header has (up to 4 MiB),
 * whether a NUL (raw or \u0000) is planted and where, and how many expert tensors
 * (up to 2^14) the file names; the header is built from them around a tiny valid
 * layer. st_open must accept it exactly when it is within the limits and NUL-free,
 * and then every tensor and key must be found (the sorted indexes), in time that
 * libFuzzer's -timeout bounds. */
#include "fuzz_common.h"

#include <string.h>

#include "io/safetensors.h"

typedef struct {
    char *s;
    size_t len, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->s = realloc(b->s, b->cap);
        if (!b->s) abort();
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
}
static void puts_(buf *b, const char *s) { put(b, s, strlen(s)); }

static uint32_t take(const uint8_t **p, size_t *n, int bytes) {
    uint32_t v = 0;
    for (int i = 0; i < bytes; i++) {
        v = v << 8 | (*n ? **p : 0);
        if (*n) (*p)++, (*n)--;
    }
    return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *p = data;
    size_t n = size;
    uint32_t nmeta = take(&p, &n, 3) % (1u << 17), keylen = 1 + take(&p, &n, 1) % 64;
    uint32_t pad = take(&p, &n, 3) % (4u << 20), nexp = take(&p, &n, 2) % (1u << 14);
    uint32_t nul = take(&p, &n, 1), nulat = take(&p, &n, 3);
    char prefix[65];
    size_t pl = n < keylen ? n : keylen;
    for (size_t i = 0; i < pl; i++) prefix[i] = (char)('a' + p[i] % 26);
    prefix[pl] = 0;

    // the layer: gate [1, 1], experts 0.. nexp-1 fc1 [1, 1] (only 0 is real, the rest
    // name the same zero-size range is not allowed, so each gets 4 bytes)
    buf h = {0};
    char tmp[160];
    puts_(&h, "{\"moe.gate.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[0,4]}");
    for (uint32_t i = 0; i < nexp; i++) {
        snprintf(tmp, sizeof tmp,
                 ",\"moe.experts.%u.fc1.weight\":{\"dtype\":\"F32\",\"shape\":[1,1],"
                 "\"data_offsets\":[%u,%u]}", i, 4 + 4 * i, 8 + 4 * i);
        puts_(&h, tmp);
    }
    size_t meta_at = h.len;
    if (nmeta) {
        puts_(&h, ",\"__metadata__\":{");
        for (uint32_t i = 0; i < nmeta; i++) {
            snprintf(tmp, sizeof tmp, "%s\"%s%u\":\"v\"", i ? "," : "", prefix, i);
            puts_(&h, tmp);
        }
        puts_(&h, "}");
    }
    puts_(&h, "}");
    int planted = 0;
    if (nul % 4 == 1 && h.len > meta_at + 20) { // a raw NUL inside the metadata
        h.s[meta_at + 19 + nulat % (h.len - meta_at - 20)] = 0;
        planted = 1;
    } else if (nul % 4 == 2 && nmeta) { // an escaped one in the first key
        char *q = strstr(h.s + meta_at, "\":\"v\"");
        if (q) {
            size_t at = (size_t)(q - h.s);
            put(&h, "", 0);
            memmove(h.s + at + 6, h.s + at, h.len - at);
            memcpy(h.s + at, "\\u0000", 6);
            h.len += 6;
            planted = 1;
        }
    }
    for (uint32_t i = 0; i < pad; i++) put(&h, " ", 1);
    size_t dbytes = 4 + 4 * (size_t)nexp;
    size_t total = 8 + h.len + dbytes;
    uint8_t *file = calloc(1, total);
    if (!file) abort();
    uint64_t hl = h.len;
    memcpy(file, &hl, 8);
    memcpy(file + 8, h.s, h.len);
    free(h.s);

    st_file f;
    ms_err err;
    int ok = st_open(&f, fuzz_file(file, total), &err) == 0;
    free(file);
    int within = nmeta <= ST_MAX_METADATA && hl <= ST_MAX_HEADER && !planted;
    if (ok != within) {
        fprintf(stderr, "nmeta %u nexp %u pad %u planted %d: st_open %s (%s)\n", nmeta, nexp, pad,
                planted, ok ? "accepted" : "refused", ok ? "" : err.msg);
        abort();
    }
    if (!ok) return 0;
    if (f.nmeta != (int)nmeta || f.ntensors != (int)nexp + 1) abort();
    for (int i = 0; i < f.ntensors; i++)
        if (st_find(&f, f.tensors[i].name) != &f.tensors[i]) abort();
    for (int i = 0; i < f.nmeta; i++)
        if (st_meta(&f, f.meta_keys[i]) != f.meta_vals[i]) abort();
    if (st_find(&f, "moe.experts.x.fc1.weight") || st_meta(&f, "absent key")) abort();
    st_close(&f);
    return 0;
}
