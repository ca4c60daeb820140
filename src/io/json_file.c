/* json_file.c - the JSON writer shared by info, eval, cost and diagnose. */
#include "io/json_file.h"

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
