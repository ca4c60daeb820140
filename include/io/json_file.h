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

#endif
