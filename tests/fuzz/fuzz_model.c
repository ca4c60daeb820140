/* fuzz_model.c - libFuzzer harness: moe_load (src/io/model_io.c) of layer "moe" on arbitrary bytes. */
#include "fuzz_common.h"

#include "io/model_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    moe_model m;
    ms_err err;
    if (moe_load(&m, fuzz_file(data, size), NULL, NULL, &err) == 0) moe_free(&m);
    return 0;
}
