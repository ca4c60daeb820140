/* fuzz_evalset.c - libFuzzer harness: evalset_load (src/io/evalset.c) on arbitrary bytes. */
#include "fuzz_common.h"

#include "io/evalset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    evalset e;
    ms_err err;
    if (evalset_load(&e, fuzz_file(data, size), &err) == 0) evalset_free(&e);
    return 0;
}
