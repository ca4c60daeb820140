/* config_json.c - validated config.json values (config_json.h). */
#include "io/config_json.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const cJSON *item(const cfg_obj *o, const char *key) {
    return o->obj ? cJSON_GetObjectItemCaseSensitive(o->obj, key) : NULL;
}

/* the value as JSON text for a message (at most 60 characters) */
static void value_text(const cJSON *v, char *buf, size_t cap) {
    char *s = cJSON_PrintUnformatted(v);
    snprintf(buf, cap, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    cJSON_free(s);
}

static int bad(const cfg_obj *o, const char *key, const cJSON *v, const char *want, ms_err *err) {
    char vb[80];
    value_text(v, vb, sizeof vb);
    return ms_fail(err, "%s: key '%s%s' = %s is not %s", o->file, o->scope, key, vb, want);
}

int cfg_int(const cfg_obj *o, const char *key, long lo, long hi, long def, long *out, ms_err *err) {
    const cJSON *v = item(o, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi) {
        char want[96];
        snprintf(want, sizeof want, "an integer in %ld..%ld", lo, hi);
        return bad(o, key, v, want, err);
    }
    *out = (long)x;
    return 1;
}

int cfg_num(const cfg_obj *o, const char *key, double lo, double hi, double def, double *out,
            ms_err *err) {
    const cJSON *v = item(o, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(x) || x < lo || x > hi) {
        char want[96];
        snprintf(want, sizeof want, "a number in %g..%g", lo, hi);
        return bad(o, key, v, want, err);
    }
    *out = x;
    return 1;
}

int cfg_pos(const cfg_obj *o, const char *key, double hi, double def, double *out, ms_err *err) {
    const cJSON *v = item(o, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    double x = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    if (!isfinite(x) || !(x > 0) || x > hi) {
        char want[96];
        snprintf(want, sizeof want, "a positive number of at most %g", hi);
        return bad(o, key, v, want, err);
    }
    *out = x;
    return 1;
}

int cfg_bool(const cfg_obj *o, const char *key, int def, int *out, ms_err *err) {
    const cJSON *v = item(o, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsBool(v)) return bad(o, key, v, "true or false", err);
    *out = cJSON_IsTrue(v) ? 1 : 0;
    return 1;
}

int cfg_choice(const cfg_obj *o, const char *key, const char *const *names, int count, int def,
               int *out, ms_err *err) {
    const cJSON *v = item(o, key);
    *out = def;
    if (!v || cJSON_IsNull(v)) return 0;
    for (int i = 0; cJSON_IsString(v) && i < count; i++)
        if (!strcmp(v->valuestring, names[i])) {
            *out = i;
            return 1;
        }
    char want[256] = "one of";
    size_t k = strlen(want);
    for (int i = 0; i < count && k < sizeof want - 40; i++)
        k += (size_t)snprintf(want + k, sizeof want - k, "%s \"%s\"", i ? "," : "", names[i]);
    return bad(o, key, v, want, err);
}

int cfg_int_list(const cfg_obj *o, const char *key, long lo, long hi, int cap, int *out, int *n,
                 ms_err *err) {
    const cJSON *v = item(o, key);
    *n = 0;
    if (!v || cJSON_IsNull(v)) return 0;
    char want[128];
    snprintf(want, sizeof want, "a list of distinct integers in %ld..%ld", lo, hi);
    if (!cJSON_IsArray(v)) return bad(o, key, v, want, err);
    const cJSON *e;
    cJSON_ArrayForEach(e, v) {
        double x = cJSON_IsNumber(e) ? e->valuedouble : NAN;
        if (!isfinite(x) || x != floor(x) || x < (double)lo || x > (double)hi || *n >= cap)
            return bad(o, key, v, want, err);
        for (int i = 0; i < *n; i++)
            if (out[i] == (int)x) return bad(o, key, v, want, err);
        out[(*n)++] = (int)x;
    }
    return 1;
}

int cfg_sub(const cfg_obj *o, const char *key, const char *scope, cfg_obj *sub, ms_err *err) {
    const cJSON *v = item(o, key);
    sub->file = o->file;
    sub->obj = NULL;
    sub->scope = scope;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsObject(v)) return bad(o, key, v, "an object", err);
    sub->obj = v;
    return 1;
}

static int cmp_key(const void *a, const void *b) {
    return strcmp((*(const cJSON *const *)a)->string, (*(const cJSON *const *)b)->string);
}

/* The duplicate key of o's own members (sorted pointers, neighbours compared), or NULL. */
static const char *duplicate_member(const cJSON *o) {
    size_t n = 0, k = 0;
    for (const cJSON *c = o->child; c; c = c->next) n++;
    if (n < 2) return NULL;
    const cJSON **v = ms_malloc(n * sizeof *v);
    for (const cJSON *c = o->child; c; c = c->next) v[k++] = c;
    qsort(v, n, sizeof *v, cmp_key);
    const char *dup = NULL;
    for (size_t i = 1; i < n && !dup; i++)
        if (!strcmp(v[i - 1]->string, v[i]->string)) dup = v[i]->string;
    free(v);
    return dup;
}

/* path: the key path of j ("moe." inside "moe", "layers[2]." in an array's object) */
static int unique_under(const cJSON *j, char *path, size_t len, size_t cap, const char *file,
                        ms_err *err) {
    const char *dup = cJSON_IsObject(j) ? duplicate_member(j) : NULL;
    if (dup) return ms_fail(err, "%s: key '%.*s%s' is given twice (JSON readers differ on which "
                                 "one counts: say it once)", file, (int)len, path, dup);
    int i = 0;
    for (const cJSON *c = j->child; c; c = c->next, i++) {
        if (!cJSON_IsObject(c) && !cJSON_IsArray(c)) continue;
        size_t base = len - (!c->string && len > 0); // "layers." -> "layers[2]."
        int w = c->string ? snprintf(path + base, cap - base, "%s.", c->string)
                          : snprintf(path + base, cap - base, "[%d].", i);
        size_t sub = base + (size_t)(w > 0 ? w : 0);
        if (sub >= cap) sub = cap - 1; // a deep path is cut in the message, still checked
        if (unique_under(c, path, sub, cap, file, err)) return -1;
        if (base < len) path[base] = '.';
        path[len] = 0;
    }
    return 0;
}

int cfg_unique_keys(const cJSON *root, const char *file, ms_err *err) {
    char path[256] = "";
    return unique_under(root, path, 0, sizeof path, file, err);
}
