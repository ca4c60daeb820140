/* cli_number.c - integers from the command line, parsed whole and range-checked
 * (cli.h): every option's number and the family options' (cli_family.c). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "cli/cli.h"

/* Digits only after an optional sign: strtoll alone would take " 7", "7 " is
 * refused by *end, but a value past the range would come back clamped (ERANGE)
 * and a caller's (int) cast would wrap 4294967299 to 3. */
int cli_parse_int(const char *s, long long lo, long long hi, long long *out) {
    if (!s || !*s || isspace((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

int cli_parse_u64(const char *s, unsigned long long *out) {
    // strtoull takes "-1" as 2^64 - 1: a seed is digits only
    if (!s || !isdigit((unsigned char)*s)) return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return -1;
    *out = v;
    return 0;
}
