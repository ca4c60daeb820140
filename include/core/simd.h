/* simd.h - the vector instruction sets moescope's own hot loops are built for
 * (the landscape's fused kernel, the evaluator's activations), and which one
 * runs. Each loop is compiled once per set; the widest the CPU runs is
 * chosen at start-up, unless MOESCOPE_SIMD (or a caller: the tests) asks for
 * a narrower one. The AVX2 and AVX-512 forms do the same arithmetic on every
 * value (FMA both), so their results agree bit for bit; the plain form has no
 * FMA and agrees to float rounding. */
#ifndef MS_SIMD_H
#define MS_SIMD_H

typedef enum {
    MS_SIMD_AUTO = 0,   /* the widest this CPU runs (or MOESCOPE_SIMD's) */
    MS_SIMD_PLAIN = 1,  /* x86-64-v2: SSE4.2, no FMA */
    MS_SIMD_AVX2 = 2,   /* x86-64-v3: AVX2 + FMA, 8 floats per register */
    MS_SIMD_AVX512 = 3, /* x86-64-v4: AVX-512 F/VL/BW/DQ, 16 floats per register */
} ms_simd;

/* the widest set this CPU (and its operating system) runs */
ms_simd ms_simd_cpu(void);
/* the set to run: want, or for MS_SIMD_AUTO the one MOESCOPE_SIMD names, else
 * the CPU's; never wider than the CPU's */
ms_simd ms_simd_pick(ms_simd want);
/* "AVX-512", "AVX2+FMA", "plain (SSE4.2)" */
const char *ms_simd_name(ms_simd s);
/* MOESCOPE_SIMD's value as a set (avx512, avx2, plain; case-insensitive),
 * MS_SIMD_AUTO when unset, -1 when it names none */
int ms_simd_parse(const char *s);

#endif
