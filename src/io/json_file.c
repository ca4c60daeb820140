/* json_file.c - the JSON writer shared by info, eval, cost and diagnose. */
#include "io/json_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"

int json_file_write(cJSON *root, const char *path, ms_err *err) {
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) return ms_fail(err, "%s: cannot format the JSON", path);
    size_t len = strlen(text);
    char *buf = ms_malloc(len + 2);
    memcpy(buf, text, len);
    buf[len] = '\n'; // the file ends with a newline
    cJSON_free(text);
    int rc = af_write_all(path, buf, len + 1, err);
    free(buf);
    return rc;
}

cJSON *json_number(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

cJSON *json_numbers(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; v && i < n; i++) cJSON_AddItemToArray(a, json_number(v[i]));
    return a;
}
