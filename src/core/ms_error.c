/* ms_error.c - error messages (the checked allocation is ms_alloc.c).
 *
 * A message is formatted whole (any length), escaped for the terminal (names
 * and keys come from files: ms_text.h) and then fitted into e->msg by cutting
 * the middle of long paths and names, so the reason at its end survives a path
 * of a thousand characters. */
#include "core/ms_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_text.h"

/* fmt with ap, malloc'd (ms_malloc) */
static char *format(const char *fmt, va_list ap) {
    char small[2048];
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    char *out;
    if (n < 0) {
        out = ms_strdup("(unprintable message)");
    } else if ((size_t)n < sizeof small) {
        out = ms_strdup(small);
    } else {
        out = ms_malloc((size_t)n + 1);
        vsnprintf(out, (size_t)n + 1, fmt, ap2);
    }
    va_end(ap2);
    return out;
}

/* raw escaped and fitted into e->msg */
static void set_msg(ms_err *e, const char *raw) {
    char *esc = ms_escaped(raw);
    ms_text_fit(esc, sizeof e->msg);
    snprintf(e->msg, sizeof e->msg, "%s", esc);
    free(esc);
}

int ms_fail(ms_err *e, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    char *raw = format(fmt, ap); // formatted apart from e->msg, which may be an argument
    va_end(ap);
    set_msg(e, raw);
    free(raw);
    return -1;
}

int ms_prefix(ms_err *e, const char *fmt, ...) {
    if (!e) return -1;
    va_list ap;
    va_start(ap, fmt);
    char *pre = format(fmt, ap);
    va_end(ap);
    size_t a = strlen(pre), b = strlen(e->msg);
    char *raw = ms_malloc(a + b + 3);
    memcpy(raw, pre, a);
    memcpy(raw + a, ": ", 2);
    memcpy(raw + a + 2, e->msg, b + 1);
    set_msg(e, raw);
    free(raw);
    free(pre);
    return -1;
}
