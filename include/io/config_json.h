/* config_json.h - validated values of a config.json object (a Hugging Face
 * model's hyper-parameters). Every reader names the file and the key's path in
 * its message ("ckpt/config.json: key 'moe.top_k' = 2.5 is not an integer in
 * 1..4"), and returns 1 when the key was there, 0 when the default was taken,
 * -1 (err set) when the value is unusable. */
#ifndef MS_CONFIG_JSON_H
#define MS_CONFIG_JSON_H

#include <cJSON.h>

#include "core/ms_error.h"

typedef struct {
    const char *file;  /* config.json's path, for messages */
    const char *scope; /* the key path of obj: "" at the top, "moe." inside "moe" */
    const cJSON *obj;  /* the object read (NULL: every key absent) */
} cfg_obj;

/* an integer in lo..hi (a number with no fractional part) */
int cfg_int(const cfg_obj *o, const char *key, long lo, long hi, long def, long *out, ms_err *err);
/* a finite number in lo..hi */
int cfg_num(const cfg_obj *o, const char *key, double lo, double hi, double def, double *out,
            ms_err *err);
/* a finite number in (0, hi]: zero and negatives refused */
int cfg_pos(const cfg_obj *o, const char *key, double hi, double def, double *out, ms_err *err);
/* true or false */
int cfg_bool(const cfg_obj *o, const char *key, int def, int *out, ms_err *err);
/* one of the strings names[0..count): its index into *out */
int cfg_choice(const cfg_obj *o, const char *key, const char *const *names, int count, int def,
               int *out, ms_err *err);
/* an array of distinct integers in lo..hi, at most cap of them: *n of them into out */
int cfg_int_list(const cfg_obj *o, const char *key, long lo, long hi, int cap, int *out, int *n,
                 ms_err *err);
/* the object under key (sub->obj NULL when absent); -1 when key holds something
 * else. scope: the sub-object's key path for messages ("moe."), kept by pointer */
int cfg_sub(const cfg_obj *o, const char *key, const char *scope, cfg_obj *sub, ms_err *err);

/* -1 when an object anywhere in root holds one key twice: "FILE: key 'moe.top_k' is
 * given twice". cJSON keeps the first, Python and Hugging Face the last: the same file
 * would be two different models. Every config.json and index read goes through it. */
int cfg_unique_keys(const cJSON *root, const char *file, ms_err *err);

#endif
