/* ms_error.h - error reporting and checked allocation for moescope.
 *
 * Library functions return 0 on success and -1 on failure, filling an ms_err
 * with a message meant for the user ("file.safetensors: tensor 'moe.gate.weight':
 * shape [4, 8] needs 128 bytes, has 64"). The caller must check the return.
 * Allocation failure is not recoverable here: ms_malloc reports file:line and
 * exits, llm.c style. */
#ifndef MS_ERROR_H
#define MS_ERROR_H

#include <stddef.h>

typedef struct {
    char msg[1024];
} ms_err;

/* Set e->msg from a printf format (e may be NULL) and return -1. */
int ms_fail(ms_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix an existing message: "prefix: old message". Returns -1. */
int ms_prefix(ms_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* How error messages name this process: "moescope" unless set (moescope-mpi names the
 * rank, so a message from one of many processes says which). */
void ms_set_process_name(const char *name);
const char *ms_process_name(void);

void *ms_malloc_check(size_t size, const char *file, int line);
void *ms_calloc_check(size_t count, size_t size, const char *file, int line);
void *ms_realloc_check(void *p, size_t size, const char *file, int line);
char *ms_strdup_check(const char *s, const char *file, int line);
#define ms_malloc(n) ms_malloc_check((n), __FILE__, __LINE__)
#define ms_calloc(c, n) ms_calloc_check((c), (n), __FILE__, __LINE__)
#define ms_realloc(p, n) ms_realloc_check((p), (n), __FILE__, __LINE__)
#define ms_strdup(s) ms_strdup_check((s), __FILE__, __LINE__)

#endif
