/* landscape_tuning.h - how the landscape's kernel runs, for the tests and the
 * benchmarks alone (no command offers it): its path and its vector form, which
 * change the speed and the last float bits, never what is computed. */
#ifndef MS_LANDSCAPE_TUNING_H
#define MS_LANDSCAPE_TUNING_H

#include "core/simd.h"
#include "landscape/landscape.h"

typedef struct {
    /* the shared-prefix path of the fused kernel (landscape_kernel.c): 0 where
     * it applies and pays, -1 never, 1 wherever it applies (the numbers differ
     * by float rounding only) */
    int prefix;
    /* the kernel's vector form, MS_SIMD_AUTO for the widest this CPU runs
     * (core/simd.h: AVX-512 and AVX2 give the same bits, plain the same numbers
     * to float rounding) */
    ms_simd simd;
} ls_tuning;

/* landscape_compute as t says (NULL, or zeroed: as landscape_compute runs). */
int landscape_compute_tuned(const moe_model *A, const moe_model *B, const evalset *E, const ls_opts *o,
                            const ls_tuning *t, landscape *L, ms_err *err);

#endif
