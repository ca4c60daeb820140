"""tests/oracle/bootstrap_oracle.py - the error bars' bootstrap (include/landscape/bootstrap.h)
replayed in numpy from per-unit losses: the same resample indices (splitmix64 draws of
a fixed seed), the barrier of each resampled mean curve, the percentile interval
(numpy.percentile's linear default) widened to hold the estimate."""
import numpy as np

RESAMPLES, LEVEL, SEED = 1000, 0.95, 20260402
GAMMA = np.uint64(0x9e3779b97f4a7c15)


def draws(seed, count):
    """splitmix64 outputs for states seed + (k + 1) * gamma, k = 0 .. count-1"""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (np.arange(count, dtype=np.uint64) + np.uint64(1)) * GAMMA
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xbf58476d1ce4e5b9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94d049bb133111eb)
        return z ^ (z >> np.uint64(31))


def counts(S, R=RESAMPLES, seed=SEED):
    """(R, S): how often resample r takes unit s"""
    idx = (draws(seed, R * S) % np.uint64(S)).astype(np.int64).reshape(R, S)
    c = np.zeros((R, S))
    for r in range(R):
        c[r] = np.bincount(idx[r], minlength=S)
    return c


def barriers(unit_loss, C):
    """unit_loss (T, S) -> the barrier in each resample (R)"""
    U = np.asarray(unit_loss, float)
    T, S = U.shape
    means = C @ U.T / S  # (R, T)
    t = np.linspace(0, 1, T)
    chord = (1 - t)[None] * means[:, :1] + t[None] * means[:, -1:]
    return (means - chord).max(1)


def interval(vals, est):
    lo, hi = np.percentile(vals, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    return min(lo, est), max(hi, est)
