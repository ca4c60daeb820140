/* wpanel.h - products with weights kept in their stored dtype.
 *
 * A weight matrix W (N, K), row-major with rows ld elements apart, stays where
 * it is (a checkpoint's mapped bytes: float32, float16 or bfloat16) and is never
 * copied whole into float32: wp_gemm_nt converts WP_PANEL_FLOATS at a time
 * (a panel of whole rows, 512 KiB) into a per-thread buffer and multiplies that
 * panel with OpenBLAS. Each output element is still one dot product over all K,
 * but OpenBLAS picks its blocking by the product's width, so a panel's sums may
 * round otherwise than the whole matrix's: equal to float rounding (a BF16
 * decoder's loss to about 1e-8 relative), bit for bit only where one panel holds
 * all of W (wp_gemm_nt_ref, the plain form: convert W whole, one sgemm;
 * tests/unit/test_wpanel.c holds them together).
 *
 * Dimension legend: M rows of X, K the shared width, N rows of W (outputs). */
#ifndef MS_WPANEL_H
#define MS_WPANEL_H

#include <stddef.h>
#include <stdint.h>

typedef enum { WP_F32 = 0, WP_F16, WP_BF16, WP_MXFP4 } wp_dtype;

/* W (N, K) in dtype dt at p, row r at element r * ld (ld >= K); p NULL: none.
 *
 * WP_MXFP4 (OCP microscaling, GPT-OSS's experts): p holds the _blocks, element e
 * in byte e / 2 (the low nibble the even element) as an FP4 (E2M1) code, sc the
 * _scales, one byte per 32 elements (element e's at e / 32): value = fp4 x
 * 2^(scale - 127). ld and every view's offset are multiples of 32.
 *
 * A view may read another order: rows (N) non-NULL says row r is stored row
 * rows[r], cols (K) that column c is stored column cols[c] (an aligned expert's
 * hidden units, without a copy). And a mix: b non-NULL makes the matrix
 *   W = ta * (this view) + tb * (*b)        element by element in float32
 * (b itself a view, not a mix): the interpolation (1 - t) A + t P(B) of two
 * checkpoints' weights, formed a panel at a time inside the product, never whole
 * (ta, tb rounded to float as moe_interpolate rounds them, so the values are
 * moe_interpolate's bit for bit).
 *
 * tr: W is stored transposed, [K, N] as torch's x @ W layouts keep it (GPT-OSS's
 * BF16 experts): element (r, c) at c * ld + r * rs (rs 0: 1; 2 reads every other
 * stored column, GPT-OSS's interleaved gate | up). The products then convert
 * panels of whole stored rows' runs (a panel (K, rows) multiplied untransposed). */
typedef struct wref {
    const void *p;
    wp_dtype dt;
    size_t ld;
    const uint8_t *sc;      /* WP_MXFP4's scales */
    const int *rows, *cols; /* NULL: as stored */
    const struct wref *b;   /* NULL: not a mix */
    float ta, tb;
    int tr;                 /* stored [K, N] (see above) */
    size_t rs;              /* tr: the stored columns between two rows (0: 1) */
} wref;

/* floats of a thread's panel buffer (what the memory limit counts per thread) */
#define WP_PANEL_FLOATS (128 * 1024)

/* the element size of dt in bytes (WP_MXFP4: 0, half a byte and its scale's share) */
size_t wp_dtype_size(wp_dtype dt);
/* W's rows r0 .. r0 + nr, the first K of each, into dst (nr, K) as float32 (exact) */
void wp_rows_f32(wref W, size_t K, size_t r0, size_t nr, float *dst);
/* W (stored, not a view nor a mix) from element elems on (a view of its sub-matrix) */
wref wp_offset(wref W, size_t elems);
/* W's view with rows and cols (either NULL: as they are): see wref */
wref wp_view(wref W, const int *rows, const int *cols);
/* ta a + tb b (a and b views, b must outlive the result's use) */
wref wp_mix(wref a, const wref *b, float ta, float tb);
/* Is W stored as it is multiplied (float32 [N, K], no view, no mix: sgemm reads it)? */
int wp_is_plain_f32(wref W);
/* Y (M, N; rows ldy apart) = X (M, K; rows ldx apart) W^T (+ beta Y), W (N, K):
 * a plain float32 W straight through sgemm, any other (a dtype, a view, a mix)
 * panel by panel. */
void wp_gemm_nt(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy);
/* The same, W converted whole first (the reference; allocates N K floats). */
void wp_gemm_nt_ref(int M, int N, int K, const float *X, int ldx, wref W, float beta, float *Y, int ldy);
/* Do stored matrices a and b (N, K) (not views nor mixes) hold the same bytes in one dtype? 1 yes */
int wp_same(wref a, wref b, size_t N, size_t K);
/* Is every one of W's (N, K) values finite? 0 yes; else 1 and *at (r K + c) the first that is not
 * (MXFP4: a scale that makes its values overflow float32). */
int wp_finite(wref W, size_t N, size_t K, size_t *at);

#endif
