/* fma_peak.c - one core's peak float32 multiply-add rate per vector instruction
 * set: ten independent FMA chains in registers (more than the FMA latency
 * times the units, so the units never wait), timed in CPU seconds (other
 * programs on the machine do not count), best of R runs. Prints
 *   FMA_PEAK avx512 GFLOP/s     (where the CPU runs AVX-512)
 *   FMA_PEAK avx2 GFLOP/s       (where it runs AVX2 + FMA)
 * The arithmetic floors of `make bench` divide a computation's flops by it.
 *   fma_peak [R] */
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9)

/* flops of `iters` rounds of ten FMAs on W lanes, over its CPU seconds */
__attribute__((target("avx512f"))) static double run512(long iters) {
    __m512 m = _mm512_set1_ps(0.9999999f), c = _mm512_set1_ps(1e-7f);
#define DECL(i) __m512 a##i = _mm512_set1_ps((float)(i));
    CHAINS(DECL)
    double t = cpu_now();
    for (long k = 0; k < iters; k++) {
#define STEP(i) a##i = _mm512_fmadd_ps(a##i, m, c);
        CHAINS(STEP)
    }
    t = cpu_now() - t;
    __m512 s = a0;
#define SUM(i) s = _mm512_add_ps(s, a##i);
    CHAINS(SUM)
    volatile float sink = _mm512_reduce_add_ps(s);
    (void)sink;
    return 2.0 * 16 * 10 * iters / t / 1e9;
}

__attribute__((target("avx2,fma"))) static double run256(long iters) {
    __m256 m = _mm256_set1_ps(0.9999999f), c = _mm256_set1_ps(1e-7f);
#define DECL8(i) __m256 a##i = _mm256_set1_ps((float)(i));
    CHAINS(DECL8)
    double t = cpu_now();
    for (long k = 0; k < iters; k++) {
#define STEP8(i) a##i = _mm256_fmadd_ps(a##i, m, c);
        CHAINS(STEP8)
    }
    t = cpu_now() - t;
    __m256 s = a0;
#define SUM8(i) s = _mm256_add_ps(s, a##i);
    CHAINS(SUM8)
    float v[8];
    _mm256_storeu_ps(v, s);
    volatile float sink = v[0] + v[7];
    (void)sink;
    return 2.0 * 8 * 10 * iters / t / 1e9;
}

int main(int argc, char **argv) {
    int R = argc > 1 ? atoi(argv[1]) : 5;
    const long iters = 20000000; // ~0.1 s a run
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) {
        double best = 0;
        for (int r = 0; r < R; r++) {
            double g = run512(iters);
            best = g > best ? g : best;
        }
        printf("FMA_PEAK avx512 %.1f\n", best);
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        double best = 0;
        for (int r = 0; r < R; r++) {
            double g = run256(iters);
            best = g > best ? g : best;
        }
        printf("FMA_PEAK avx2 %.1f\n", best);
    }
    return 0;
}
