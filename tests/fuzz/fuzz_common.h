/* fuzz_common.h - hand the fuzzer's bytes to a loader as a file: one memfd, rewritten
 * per input, opened by path through /proc/self/fd (the loaders take paths and mmap). */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static int fuzz_fd = -1;
static char fuzz_path[64];

/* The path of a file holding exactly data[0..size). */
static inline const char *fuzz_file(const uint8_t *data, size_t size) {
    if (fuzz_fd < 0) {
        fuzz_fd = memfd_create("fuzz.safetensors", MFD_CLOEXEC);
        if (fuzz_fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(fuzz_path, sizeof fuzz_path, "/proc/self/fd/%d", fuzz_fd);
    }
    if (ftruncate(fuzz_fd, 0) != 0 || (size && pwrite(fuzz_fd, data, size, 0) != (ssize_t)size)) {
        perror("memfd write");
        abort();
    }
    return fuzz_path;
}

#endif
