/* bootstrap.h - confidence intervals of barriers and ranks over the evaluation
 * set's units (a network's sequences or images, a layer's samples or rows).
 *
 * A curve's loss at every point is the mean of per-unit losses, so resampling
 * the S units with replacement and taking the means again gives the curve (and
 * its barrier, and every order's rank) a resampled set would have produced,
 * from the same evaluations: nothing is evaluated again.
 *
 *   resamples  R = LS_BOOT_RESAMPLES, the level 95 %, seed LS_BOOT_SEED
 *   draw k     splitmix64 output for the state seed + (k + 1) * 0x9e3779b97f4a7c15
 *              (mod 2^64): z ^= z >> 30, z *= 0xbf58476d1ce4e5b9, z ^= z >> 27,
 *              z *= 0x94d049bb133111eb, z ^= z >> 31
 *   resample r takes units (draw (r S + i)) mod S, i = 0 .. S-1 (the modulo's
 *              bias is below S / 2^64)
 *   barrier_r  max_m [Lr(t_m) - ((1 - t_m) Lr(0) + t_m Lr(1))], Lr(t_m) the
 *              mean over resample r's units of their losses at t_m
 *   interval   the 2.5 and 97.5 percentiles of the R values, linearly
 *              interpolated between order statistics (numpy.percentile's
 *              default): position p (R - 1) of the sorted values
 * A numpy script replays it exactly (tests/oracle/bootstrap_oracle.py). */
#ifndef MS_BOOTSTRAP_H
#define MS_BOOTSTRAP_H

#include <stdint.h>

#define LS_BOOT_RESAMPLES 1000
#define LS_BOOT_LEVEL 0.95
#define LS_BOOT_SEED 20260402u

/* R resamples of S units: wt[s R + r] is how often resample r took unit s (a
 * count, exact in a float), stored unit-major so that one unit's weights in
 * every resample are adjacent: the means of a row under all R resamples then
 * run along the resamples, R at a time */
typedef struct {
    int S, R;
    uint64_t seed;
    float *wt; // (S, R)
} ls_boot;

uint64_t ls_boot_draw(uint64_t seed, uint64_t k);
void ls_boot_init(ls_boot *b, int S, int R, uint64_t seed);
void ls_boot_free(ls_boot *b);
/* out (nr, r1 - r0): row j's mean under resamples r0 .. r1-1,
 * out[j (r1 - r0) + r - r0] = (sum over units i = 0, 1, .. S-1 in that order of
 * wt[i R + r] x[j][i]) / S, for nr rows x[j] of S per-unit losses. The sum's
 * order is fixed, so a row's means are the same bits however rows and
 * resamples are grouped or threads share them. */
void ls_boot_means(const ls_boot *b, const double *const *x, int nr, int r0, int r1, double *out);
/* resamples per block so that T rows of means take at most LS_BOOT_BLOCK_MB
 * (all R when they fit; a multiple of 8) */
#define LS_BOOT_BLOCK_MB 16
int ls_boot_block(const ls_boot *b, int T);
/* vals (n): the barrier in each of n resamples of a curve whose means at point m
 * are mp[m] (n), as ls_curve_stats: t_m = m / (T - 1), a NaN anywhere makes it NaN */
void ls_boot_barriers(const double *const *mp, int T, int n, double *vals);
/* vals (R): the barrier in every resample of the curve whose per-unit losses are seq (T, S) */
void ls_boot_curve_barriers(const ls_boot *b, const double *seq, int T, double *vals);
/* [lo, hi], the central `level` percentile interval of vals[0..R) (reordered
 * in place: two selections, not a sort); NaN values make it NaN */
void ls_boot_interval(double *vals, int R, double level, double *lo, double *hi);
/* The barrier interval of one curve, per-unit losses seq (T, S) */
void ls_boot_curve(const ls_boot *b, const double *seq, int T, double *lo, double *hi);

#endif
