/* rng.h - small deterministic random numbers (splitmix64 seeding xoshiro256**).
 * Same seed, same stream, on every machine: scramble, train and the sampled
 * landscape depend on it for reproducible files. */
#ifndef MS_RNG_H
#define MS_RNG_H

#include <stdint.h>

typedef struct {
    uint64_t s[4];
} rng_t;

void rng_seed(rng_t *r, uint64_t seed);
uint64_t rng_u64(rng_t *r);
/* uniform in [0, 1) with 53 random bits */
double rng_uniform(rng_t *r);
/* uniform integer in [0, n), unbiased */
uint64_t rng_below(rng_t *r, uint64_t n);
/* standard normal (Box-Muller, no cached state so streams stay simple) */
double rng_normal(rng_t *r);
/* perm[0..n) becomes a uniformly random permutation of 0..n-1 (Fisher-Yates) */
void rng_permutation(rng_t *r, int *perm, int n);

#endif
