/* json_file.c - the JSON writer shared by info, eval, cost and diagnose. */
#include "io/json_file.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/atomic_file.h"

int utf8_seq_len(const unsigned char *s) {
    unsigned c = s[0];
    int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (n <= 1) return n;
    unsigned cp = c & (0x7F >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xC0) != 0x80) return 0; // also the NUL of a cut sequence
        cp = cp << 6 | (s[i] & 0x3F);
    }
    static const unsigned least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < least[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}

char *json_print(cJSON *root, int formatted, size_t *len) {
    char *text = formatted ? cJSON_Print(root) : cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return NULL;
    size_t n = strlen(text), bad = 0;
    for (size_t i = 0; i < n;) {
        int k = utf8_seq_len((const unsigned char *)text + i);
        bad += !k;
        i += k ? (size_t)k : 1;
    }
    char *buf = ms_malloc(n + 2 * bad + 2), *o = buf;
    for (size_t i = 0; i < n;) {
        int k = utf8_seq_len((const unsigned char *)text + i);
        if (k) memcpy(o, text + i, (size_t)k), o += k, i += (size_t)k;
        else memcpy(o, "\xEF\xBF\xBD", 3), o += 3, i++; // U+FFFD
    }
    *o++ = '\n'; // the file ends with a newline
    *o = 0;
    cJSON_free(text);
    *len = (size_t)(o - buf);
    return buf;
}

int json_file_write(cJSON *root, const char *path, ms_err *err) {
    size_t len;
    char *buf = json_print(root, 1, &len);
    if (!buf) return ms_fail(err, "%s: cannot format the JSON", path);
    int rc = af_write_all(path, buf, len, err);
    free(buf);
    return rc;
}

cJSON *json_number(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

cJSON *json_numbers(const double *v, int n) {
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; v && i < n; i++) cJSON_AddItemToArray(a, json_number(v[i]));
    return a;
}

cJSON *json_pair(double lo, double hi) {
    const double v[2] = {lo, hi};
    return json_numbers(v, 2);
}
