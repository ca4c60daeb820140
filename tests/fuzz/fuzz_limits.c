/* fuzz_limits.c - libFuzzer harness for the derived-allocation checks: moe_load on
 * arbitrary bytes, then ms_limits_check with every use, as a pair with itself and
 * with a synthetic evaluation set whose N comes from the input. Whatever it accepts
 * must keep each derived allocation (the h x h weight-matching matrix, the expert
 * cost's Gram matrices, the forward passes' and diagnostics' buffers) within the
 * budget it states, and the values within the overflow bounds; whatever it refuses
 * must say why. Nothing derived is allocated here: the check is exactly what keeps
 * the commands from allocating it. */
#include "fuzz_common.h"

#include <math.h>
#include <string.h>

#include "analysis/ms_limits.h"
#include "io/model_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    moe_model m;
    ms_err err;
    if (moe_load(&m, fuzz_file(data, size), NULL, NULL, &err)) return 0;
    const moe_config *c = &m.cfg;
    // an evaluation set of N rows of the layer's width, values from the input's tail
    int N = 1 + (size ? data[size - 1] % 64 : 0);
    size_t cells = (size_t)N * (size_t)c->d;
    float *x = calloc(cells, sizeof(float));
    if (!x) abort();
    for (size_t q = 0; q < cells && q < size; q++) x[q] = (float)(data[q] - 128) * 0.25f;
    evalset E = {.path = "E", .N = N, .d = c->d, .C = 1, .inputs = x};
    unsigned all = MS_USE_WM | MS_USE_COST | MS_USE_EVAL | MS_USE_DIAG;
    int rc = ms_limits_check(&m, &m, &E, all, &err);
    double budget = ms_mem_machine();
    double h = c->h, d = c->d, n = c->n;
    if (rc == 0) {
        // accepted: the largest derived allocations fit the machine-side bound
        if (8 * h * h > budget || 4.0 * 2 * n * ((2 * d + 2) * (2 * d + 2) + d * d) > budget * 4)
            abort();
    } else if (!strstr(err.msg, "over the limit") && !strstr(err.msg, "overflow")) {
        fprintf(stderr, "refused without saying why: %s\n", err.msg);
        abort();
    }
    free(x);
    moe_free(&m);
    return 0;
}
