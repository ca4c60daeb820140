/* wpanel.h - products with weights kept in their stored dtype.
 *
 * A weight matrix W (N, K), row-major with rows ld elements apart, stays where
 * it is (a checkpoint's mapped bytes: float32, float16 or bfloat16) and is never
 * copied whole into float32: wp_gemm_nt converts WP_PANEL_FLOATS at a time
 * (a panel of whole rows, 128 KiB) into a per-thread buffer and multiplies that
 * panel with OpenBLAS. Each output element is still one dot product over all K
 * in the BLAS's own order, so the panels change which columns are computed
 * together, not the sums (wp_gemm_nt_ref, the plain form: convert W whole, one
 * sgemm; tests/unit/test_wpanel.c holds them together).
 *
 * Dimension legend: M rows of X, K the shared width, N rows of W (outputs). */
#ifndef MS_WPANEL_H
#define MS_WPANEL_H

#include <stddef.h>
#include <stdint.h>

typedef enum { WP_F32 = 0, WP_F16, WP_BF16 } wp_dtype;

/* W (N, K) in dtype dt at p, row r at element r * ld (ld >= K); p NULL: none */
typedef struct {
    const void *p;
    wp_dtype dt;
    size_t ld;
} wref;

/* floats of a thread's panel buffer (what the memory limit counts per thread) */
#define WP_PANEL_FLOATS (32 * 1024)

/* the element size of dt in bytes */
size_t wp_dtype_size(wp_dtype dt);
/* W's rows r0 .. r0 + nr, the first K of each, into dst (nr, K) as float32 (exact) */
void wp_rows_f32(wref W, size_t K, size_t r0, size_t nr, float *dst);
/* W's row r0 + r, starting at element offset (a view of its sub-matrix) */
wref wp_offset(wref W, size_t elems);
/* Y (M, N; rows ldy apart) = X (M, K; rows ldx apart) W^T (+ beta Y), W (N, K):
 * a float32 W straight through sgemm, any other panel by panel. */
void wp_gemm_nt(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy);
/* The same, W converted whole first (the reference; allocates N K floats). */
void wp_gemm_nt_ref(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy);
/* Is every one of W's (N, K) values finite? 0 yes; else 1 and *at (r K + c) the first that is not. */
int wp_finite(wref W, size_t N, size_t K, size_t *at);

#endif
