/* sha256.h - SHA-256 (FIPS 180-4) of memory and of files, for the inputs'
 * fingerprints in reports. Small and dependency-free. */
#ifndef MS_SHA256_H
#define MS_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "core/ms_error.h"

typedef struct {
    uint32_t h[8];
    uint64_t len;      /* bytes so far */
    uint8_t buf[64];
    size_t nbuf;
} sha256_ctx;

void sha256_init(sha256_ctx *c);
void sha256_update(sha256_ctx *c, const void *data, size_t len);
void sha256_final(sha256_ctx *c, uint8_t out[32]);
/* The x86 SHA extensions are used when the CPU has them; on = 0 turns them
 * off, 1 back on, -1 asks. Returns whether they are in use (tests compare). */
int sha256_hardware(int on);
/* out: 64 lowercase hex digits and a NUL */
void sha256_hex(const uint8_t dig[32], char out[65]);
/* The digest of a whole file and its size in bytes; -1 with a message naming
 * the file when it cannot be read. Only a regular file is read (opened without
 * blocking: a FIFO or a device is refused, never read), and only the bytes it
 * held when opened. */
int sha256_file(const char *path, uint8_t out[32], long long *size, ms_err *err);
/* The same, calling on_read(bytes) after each block read (a progress line). */
int sha256_file_progress(const char *path, uint8_t out[32], long long *size, void (*on_read)(size_t),
                         ms_err *err);

#endif
