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

/* R resamples of S units: count[r S + s] is how often resample r took unit s */
typedef struct {
    int S, R;
    uint64_t seed;
    uint32_t *count; // (R, S)
} ls_boot;

uint64_t ls_boot_draw(uint64_t seed, uint64_t k);
void ls_boot_init(ls_boot *b, int S, int R, uint64_t seed);
void ls_boot_free(ls_boot *b);
/* means (T) of the per-unit losses seq (T, S) under resample r */
void ls_boot_means(const ls_boot *b, const double *seq, int T, int r, double *means);
/* the barrier of a curve of T points whose losses are means (T) */
double ls_boot_barrier_of(const double *means, int T);
/* [lo, hi], the central `level` percentile interval of vals[0..R) (sorted in
 * place); NaN values make it NaN */
void ls_boot_interval(double *vals, int R, double level, double *lo, double *hi);
/* The barrier interval of one curve, per-unit losses seq (T, S) */
void ls_boot_curve(const ls_boot *b, const double *seq, int T, double *lo, double *hi);

#endif
