/* ms_alloc.c - checked allocation and the name messages give the process
 * (ms_alloc.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ms_alloc.h"

/* how messages name this process; one of several MPI processes names its rank */
static char proc_name[64] = "moescope";

void ms_set_process_name(const char *name) { snprintf(proc_name, sizeof proc_name, "%s", name); }
const char *ms_process_name(void) { return proc_name; }

static void die_oom(size_t size, const char *file, int line) {
    fprintf(stderr, "%s: out of memory allocating %zu bytes at %s:%d\n", proc_name, size, file,
            line);
    exit(3);
}

void *ms_malloc_check(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) die_oom(size, file, line);
    return p;
}

void *ms_calloc_check(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die_oom(count * size, file, line);
    return p;
}

void *ms_realloc_check(void *p, size_t size, const char *file, int line) {
    void *q = realloc(p, size ? size : 1);
    if (!q) die_oom(size, file, line);
    return q;
}

char *ms_strdup_check(const char *s, const char *file, int line) {
    size_t n = strlen(s) + 1;
    char *p = ms_malloc_check(n, file, line);
    memcpy(p, s, n);
    return p;
}
