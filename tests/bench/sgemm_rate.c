/* sgemm_rate.c - the machine's single-precision GEMM rate: a plain cblas_sgemm
 * of C (M,N) = A (M,K) B (K,N)^T, best of R runs; prints "SGEMM_GFLOPS x".
 *   sgemm_rate M N K [R [cpu]]
 * cpu: timed in the process's CPU time (with OPENBLAS_NUM_THREADS=1, one core's
 * rate however loaded the machine: tests/bench/benchlib.py's gemm_rate) */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int cpu_time;

static double now(void) {
    struct timespec ts;
    clock_gettime(cpu_time ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 4) return fprintf(stderr, "usage: sgemm_rate M N K [R]\n"), 2;
    long M = atol(argv[1]), N = atol(argv[2]), K = atol(argv[3]);
    int R = argc > 4 ? atoi(argv[4]) : 3;
    cpu_time = argc > 5 && !strcmp(argv[5], "cpu");
    float *A = malloc(sizeof(float) * M * K), *B = malloc(sizeof(float) * N * K), *C = malloc(sizeof(float) * M * N);
    if (!A || !B || !C) return fprintf(stderr, "sgemm_rate: out of memory\n"), 1;
    for (long i = 0; i < M * K; i++) A[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    for (long i = 0; i < N * K; i++) B[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
    double best = 1e30;
    for (int r = 0; r < R; r++) {
        double t = now();
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)M, (int)N, (int)K, 1.0f, A, (int)K, B,
                    (int)K, 0.0f, C, (int)N);
        t = now() - t;
        if (t < best) best = t;
    }
    printf("SGEMM_GFLOPS %.2f\n", 2.0 * M * N * K / best / 1e9);
    free(A), free(B), free(C);
    return 0;
}
