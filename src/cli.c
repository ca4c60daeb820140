/* cli.c - helpers shared by the subcommands. */
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cli_usage_error(const char *usage, const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "moescope: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nusage: %s\n", usage);
    return 2;
}

int cli_error(const char *fmt, ...) {
    va_list ap;
    fprintf(stderr, "moescope: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 1;
}

int cli_parse_order(const char *s, int *order, int n) {
    int seen[256] = {0};
    if (n <= 0 || n > 256) return -1;
    int count = 0;
    const char *p = s;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v >= n || seen[v] || count >= n) return -1;
        seen[v] = 1;
        order[count++] = (int)v;
        p = end;
    }
    return count == n ? 0 : -1;
}

static int progress_shown;

void cli_progress(const char *what, long done, long total) {
    if (!isatty(STDERR_FILENO) || total <= 0) return;
    int width = 30, fill = (int)((double)done / (double)total * width);
    fprintf(stderr, "\r%s [", what);
    for (int i = 0; i < width; i++) fputc(i < fill ? '#' : '.', stderr);
    fprintf(stderr, "] %ld/%ld", done, total);
    fflush(stderr);
    progress_shown = 1;
}

void cli_progress_end(void) {
    if (progress_shown) fputc('\n', stderr);
    progress_shown = 0;
}
