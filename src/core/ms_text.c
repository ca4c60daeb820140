/* ms_text.c - terminal-safe text (ms_text.h). */
#include "core/ms_text.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/ms_alloc.h"

/* Length of the valid, printable UTF-8 character at p (1..4), or 0 when the byte
 * at p must be escaped: a control character, DEL, a C1 control, a bidirectional
 * override (U+202A..U+202E, U+2066..U+2069: they reorder what follows on the
 * line), or a byte that does not start a valid sequence (overlong forms,
 * surrogates and values past U+10FFFF are not valid). */
static int char_len(const unsigned char *p) {
    unsigned c = p[0];
    if (c < 0x80) return c >= 0x20 && c != 0x7f;
    int n = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    if (!n) return 0;
    uint32_t cp = c & (0x7fu >> n);
    for (int i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3fu);
    }
    static const uint32_t min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    if (cp <= 0x9f || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069)) return 0;
    return n;
}

size_t ms_escape(char *out, size_t cap, const char *s) {
    size_t need = 0, at = 0; // at: bytes written to out (whole characters only)
    int full = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        char e[8];
        int n = char_len(p);
        const char *piece = (const char *)p;
        size_t len = (size_t)n;
        if (!n) {
            if (*p == '\n') memcpy(e, "\\n", 3);
            else if (*p == '\r') memcpy(e, "\\r", 3);
            else if (*p == '\t') memcpy(e, "\\t", 3);
            else snprintf(e, sizeof e, "\\x%02X", *p);
            piece = e;
            len = strlen(e);
            n = 1;
        }
        if (!full && cap && at + len < cap) {
            memcpy(out + at, piece, len);
            at += len;
        } else {
            full = 1;
        }
        need += len;
        p += n;
    }
    if (cap) out[at] = 0;
    return need;
}

char *ms_escaped(const char *s) {
    size_t n = ms_escape(NULL, 0, s);
    char *out = ms_malloc(n + 1);
    ms_escape(out, n + 1, s);
    return out;
}

int ms_text_unsafe(const char *s) {
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        int n = char_len(p);
        if (!n) return 1;
        p += n;
    }
    return 0;
}

/* k moved back to the start of the UTF-8 character it falls in */
static size_t char_start(const char *s, size_t k) {
    while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80) k--;
    return k;
}

void ms_text_fit(char *s, size_t cap) {
    enum { MIN_RUN = 32, KEEP = 24 };
    size_t len = strlen(s);
    while (cap > 4 && len + 1 > cap) {
        size_t best = 0, bl = 0; // the longest run without a space
        for (size_t i = 0; i < len;) {
            size_t j = i;
            while (j < len && s[j] != ' ') j++;
            if (j - i > bl) best = i, bl = j - i;
            i = j + 1;
        }
        if (bl < MIN_RUN) { // nothing left to cut in the middle: cut the end
            size_t k = char_start(s, cap - 4);
            memcpy(s + k, "...", 4);
            return;
        }
        size_t over = len + 1 - cap;
        size_t keep = bl > over + 3 + KEEP ? bl - over - 3 : KEEP;
        size_t head = char_start(s, best + keep / 2) - best;
        size_t tail = best + bl - (keep - keep / 2); // where the kept end of the run starts
        while (tail < best + bl && ((unsigned char)s[tail] & 0xc0) == 0x80) tail++;
        memmove(s + best + head + 3, s + tail, len - tail + 1);
        memcpy(s + best + head, "...", 3);
        len = strlen(s);
    }
}
