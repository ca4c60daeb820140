/* ms_alloc.h - checked allocation: out of memory is not recoverable here, so
 * ms_malloc and its kin report file:line and end the process (exit status 3),
 * llm.c style; and the name messages give the process. A header of its own:
 * the message escaper (ms_text.c) allocates, and error reporting (ms_error.c)
 * escapes, so allocation sits below both. */
#ifndef MS_ALLOC_H
#define MS_ALLOC_H

#include <stddef.h>

/* How messages name this process: "moescope" unless set (moescope-mpi names the
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
