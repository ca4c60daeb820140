/* ms_alloc.c - checked allocation and the name messages give the process
 * (ms_alloc.h). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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

/* A large block (a network's backbone, a frozen prefix: hundreds of MiB) in huge
 * pages where the kernel offers them on request: 512 times fewer page faults to
 * fill it, and its free (the explorer's q) or the process's exit returns it in
 * milliseconds instead of a tenth of a second per 500 MiB. */
#define HUGE_MIN ((size_t)32 << 20)
#define HUGE_PAGE ((uintptr_t)2 << 20)
static void advise_huge(void *p, size_t size) {
#ifdef MADV_HUGEPAGE
    if (size < HUGE_MIN) return;
    uintptr_t a = ((uintptr_t)p + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1), e = ((uintptr_t)p + size) & ~(HUGE_PAGE - 1);
    if (e > a) (void)madvise((void *)a, e - a, MADV_HUGEPAGE); // advice: refused, nothing changes
#else
    (void)p, (void)size;
#endif
}

void *ms_malloc_check(size_t size, const char *file, int line) {
    void *p = malloc(size ? size : 1);
    if (!p) die_oom(size, file, line);
    advise_huge(p, size);
    return p;
}

void *ms_calloc_check(size_t count, size_t size, const char *file, int line) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) die_oom(count * size, file, line);
    advise_huge(p, count * size);
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
