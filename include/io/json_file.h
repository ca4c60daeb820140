/* json_file.h - write a cJSON document to a file, atomically (atomic_file.h). */
#ifndef MS_JSON_FILE_H
#define MS_JSON_FILE_H

#include <cJSON.h>

#include "core/ms_error.h"

/* Print root formatted (cJSON_Print) with a final newline to path, atomically;
 * root is deleted either way. 0, or -1 with a message naming path. */
int json_file_write(cJSON *root, const char *path, ms_err *err);

/* A number, or null when it is not finite (JSON has no NaN or infinity). */
cJSON *json_number(double v);
/* An array of n of them (empty when v is NULL). */
cJSON *json_numbers(const double *v, int n);
/* [lo, hi], each a number or null: an interval */
cJSON *json_pair(double lo, double hi);

/* root printed (formatted or not) with a final newline, as valid UTF-8 (cJSON
 * passes bytes through: a file name that is not UTF-8 would make the JSON
 * invalid; each byte of an invalid sequence becomes U+FFFD). root is deleted;
 * NULL when it cannot be printed. The caller frees it; *len its length. */
char *json_print(cJSON *root, int formatted, size_t *len);

/* The length (1..4) of the valid UTF-8 sequence at s, 0 when the bytes there
 * are not one (a stray continuation byte, an overlong form, a surrogate, a
 * sequence cut short). s is NUL-terminated. */
int utf8_seq_len(const unsigned char *s);

#endif
