"""tests/bench/peer_align.py - the numpy/scipy peer of bench_align.c:
align a random layer of the same size (same distribution) the way
tests/oracle/oracle.py does it, in float32 GEMMs + scipy.optimize.linear_sum_assignment.

    peer_align.py [n d h]    prints PEER_ALIGN_SECONDS <s>
(Not a test: run by bench_align.sh, which prints the ratio.)"""
import sys
import time

import numpy as np
from scipy.optimize import linear_sum_assignment


def layer(rng, n, d, h):
    u = lambda *s: rng.uniform(-0.05, 0.05, size=s).astype(np.float32)  # noqa: E731
    return [dict(w1=u(h, d), b1=u(h), w2=u(d, h), b2=u(d)) for _ in range(n)]


def grams(e):
    At = np.hstack([e["w1"], e["b1"][:, None]])
    Bt = np.hstack([e["w2"], e["b2"][:, None]])
    return At.T @ At, Bt @ Bt.T


def align(A, B):
    ga, gb = [grams(e) for e in A], [grams(e) for e in B]
    n = len(A)
    C = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            C[i, j] = np.sqrt(((ga[i][0] - gb[j][0]).astype(np.float64) ** 2).sum()
                              + ((ga[i][1] - gb[j][1]).astype(np.float64) ** 2).sum())
    _, order = linear_sum_assignment(C)
    perms = []
    for i in range(n):
        a, b = A[i], B[order[i]]
        S = a["w1"] @ b["w1"].T + np.outer(a["b1"], b["b1"]) + a["w2"].T @ b["w2"]
        _, P = linear_sum_assignment(S.astype(np.float64), maximize=True)
        perms.append(P)
    return order, perms


def main():
    n, d, h = (int(x) for x in sys.argv[1:4]) if len(sys.argv) > 3 else (8, 768, 3072)
    rng = np.random.default_rng(1)
    A, B = layer(rng, n, d, h), layer(rng, n, d, h)
    t0 = time.perf_counter()
    align(A, B)
    t = time.perf_counter() - t0
    print("numpy/scipy peer: align n=%d d=%d h=%d in %.3f s" % (n, d, h, t))
    print("PEER_ALIGN_SECONDS %.6f" % t)


if __name__ == "__main__":
    main()
