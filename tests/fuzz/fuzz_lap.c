/* fuzz_lap.c - libFuzzer harness: the lap command's cost loader and solver (cmd_lap on a
 * file holding the fuzzer's bytes; its output goes nowhere, see run.sh -close_fd_mask). */
#include "fuzz_common.h"

#include "cli/cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *argv[] = {"lap", (char *)fuzz_file(data, size), NULL};
    cmd_lap(2, argv);
    return 0;
}
