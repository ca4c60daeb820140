/* test_text.c - terminal-safe text (src/core/ms_text.c) and error messages that
 * keep their reason (src/core/ms_error.c): control characters, C1 controls and
 * invalid UTF-8 escaped, valid UTF-8 kept, escaping idempotent; a message with a
 * path of thousands of characters cut in the path's middle, never at its end. */
#include <stdlib.h>
#include <string.h>

#include "core/ms_error.h"
#include "core/ms_text.h"
#include "testlib.h"

static void check_escape(const char *in, const char *want) {
    char *got = ms_escaped(in);
    CHECK(!strcmp(got, want), "escape: got '%s', want '%s'", got, want);
    CHECK(!ms_text_unsafe(got), "escape of '%s' is still unsafe", want);
    char *again = ms_escaped(got);
    CHECK(!strcmp(again, got), "escape not idempotent: '%s' -> '%s'", got, again);
    free(again);
    free(got);
}

static void test_escape(void) {
    check_escape("moe.gate.weight", "moe.gate.weight");
    check_escape("\033]0;owned\007title", "\\x1B]0;owned\\x07title");   // OSC window title
    check_escape("a\033[2Jb", "a\\x1B[2Jb");                            // clear screen
    check_escape("x\r\nmoescope: fake", "x\\r\\nmoescope: fake");       // forged line
    check_escape("tab\there", "tab\\there");
    check_escape("del\177", "del\\x7F");
    check_escape("\xc2\x9b" "31m", "\\xC2\\x9B31m");                    // C1 CSI in UTF-8
    check_escape("\x9b" "31m", "\\x9B31m");                             // bare C1 byte
    check_escape("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
    check_escape("\xff\xfe", "\\xFF\\xFE");                             // never valid
    check_escape("\xc0\xaf", "\\xC0\\xAF");                             // overlong '/'
    check_escape("\xed\xa0\x80", "\\xED\\xA0\\x80");                    // surrogate
    check_escape("\xf4\x90\x80\x80", "\\xF4\\x90\\x80\\x80");           // past U+10FFFF
    check_escape("\xe2\x80\xae" "evil", "\\xE2\\x80\\xAEevil");         // RTL override
    check_escape("cut\xe2\x86", "cut\\xE2\\x86");                        // truncated sequence
    CHECK(ms_text_unsafe("a\033b") && !ms_text_unsafe("caf\xc3\xa9"), "ms_text_unsafe");
    // a bounded escape stops at a whole piece and says how much it needed
    char small[6];
    size_t need = ms_escape(small, sizeof small, "ab\033cd");
    CHECK(need == 8 && !strcmp(small, "ab"), "bounded escape: need %zu, got '%s'", need, small);
}

static void test_messages(void) {
    ms_err e;
    ms_fail(&e, "tensor '%s': bad", "x\033[2J\r\ny");
    CHECK(!strcmp(e.msg, "tensor 'x\\x1B[2J\\r\\ny': bad"), "ms_fail escapes: %s", e.msg);
    ms_prefix(&e, "%s", "f\033.safetensors");
    CHECK(!strcmp(e.msg, "f\\x1B.safetensors: tensor 'x\\x1B[2J\\r\\ny': bad"), "ms_prefix: %s", e.msg);
    // a message quoting itself (e->msg as an argument) is formatted apart from it
    ms_fail(&e, "again: %s", e.msg);
    CHECK(!strncmp(e.msg, "again: f\\x1B", 12), "self-quoting message: %s", e.msg);

    // a 3000-character path, twice: the reason at the end stays whole
    char *path = malloc(3001);
    for (int i = 0; i < 3000; i++) path[i] = i % 50 == 0 ? '/' : 'a' + i % 26;
    path[3000] = 0;
    ms_fail(&e, "%s: directory '%s' does not exist", path, path);
    size_t n = strlen(e.msg);
    CHECK(n < sizeof e.msg, "fits: %zu", n);
    const char *tail = "' does not exist";
    CHECK(n > strlen(tail) && !strcmp(e.msg + n - strlen(tail), tail), "reason kept: ...%s",
          e.msg + (n > 60 ? n - 60 : 0));
    CHECK(!strncmp(e.msg, path, 20), "the path's start kept");
    CHECK(strstr(e.msg, "...") != NULL, "the cut marked");
    CHECK(strstr(e.msg, path + 2980) != NULL, "the path's end kept");
    // and through ms_prefix
    ms_fail(&e, "no space left on device");
    ms_prefix(&e, "%s: write failed", path);
    n = strlen(e.msg);
    CHECK(n < sizeof e.msg && strstr(e.msg, ": write failed: no space left on device"),
          "prefix of a long path keeps the reason: %s", e.msg + (n > 80 ? n - 80 : 0));
    free(path);

    // UTF-8 is cut on character boundaries
    char *u = malloc(4 * 600 + 40);
    strcpy(u, "name ");
    for (int i = 0; i < 600; i++) strcat(u, "\xe2\x86\x92");
    strcat(u, " is wrong");
    ms_fail(&e, "%s", u);
    CHECK(!ms_text_unsafe(e.msg), "cut UTF-8 stays valid");
    n = strlen(e.msg);
    CHECK(n > 9 && !strcmp(e.msg + n - 9, " is wrong"), "UTF-8 run cut in the middle: %s", e.msg + n - 20);
    free(u);

    // no long run: the end is cut, marked
    char *words = malloc(3000);
    words[0] = 0;
    for (int i = 0; i < 500; i++) strcat(words, "word ");
    ms_fail(&e, "%s", words);
    n = strlen(e.msg);
    CHECK(n < sizeof e.msg && !strcmp(e.msg + n - 3, "..."), "end cut: %s", e.msg + n - 10);
    free(words);
}

int main(void) {
    test_escape();
    test_messages();
    return test_summary("test_text");
}
