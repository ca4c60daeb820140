/* simd.c - which vector instruction set runs (simd.h). */
#include "core/simd.h"

#include <strings.h>

#include "core/env.h"

ms_simd ms_simd_cpu(void) {
    __builtin_cpu_init();
    // libgcc's tests include the OS's support (XGETBV: the wide registers are saved)
    if (__builtin_cpu_supports("x86-64-v4")) return MS_SIMD_AVX512;
    if (__builtin_cpu_supports("x86-64-v3")) return MS_SIMD_AVX2;
    return MS_SIMD_PLAIN;
}

int ms_simd_parse(const char *s) {
    if (!s || !*s) return MS_SIMD_AUTO;
    if (!strcasecmp(s, "avx512") || !strcasecmp(s, "avx-512")) return MS_SIMD_AVX512;
    if (!strcasecmp(s, "avx2")) return MS_SIMD_AVX2;
    if (!strcasecmp(s, "plain")) return MS_SIMD_PLAIN;
    return -1;
}

ms_simd ms_simd_pick(ms_simd want) {
    ms_simd cpu = ms_simd_cpu();
    if (want == MS_SIMD_AUTO) {
        int e = ms_simd_parse(env_get(ENV_SIMD)); // an unknown name: the CPU's (cli warns)
        want = e > 0 ? (ms_simd)e : cpu;
    }
    return want < cpu ? want : cpu;
}

const char *ms_simd_name(ms_simd s) {
    switch (s) {
    case MS_SIMD_AVX512: return "AVX-512";
    case MS_SIMD_AVX2: return "AVX2+FMA";
    case MS_SIMD_PLAIN: return "plain (SSE4.2)";
    default: return "auto";
    }
}
