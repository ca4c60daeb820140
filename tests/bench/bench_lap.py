#!/usr/bin/env python3
"""bench_lap.py - moescope's linear assignment solver against
scipy.optimize.linear_sum_assignment, on the same matrices, in one run.

Cases: dense uniform float64 n = 1000, 2000, 3000, 5000 (minimise), and a
weight-matching-like matrix S = W1a W1b^T + W2a^T W2b with h = 3072, d = 768,
random normal weights (h x h, maximise) as in SPEC section 4, step 2.

What is timed (best of R runs, each side single-threaded):
  scipy:    linear_sum_assignment(C) (its own input checks included).
  moescope: `moescope lap F --time --repeat R` reports lap_solve alone (input
            validation and the solve; no file I/O, no printing).
Both wall-clock and CPU time (time.process_time / CLOCK_PROCESS_CPUTIME_ID)
are measured; the table's ratio is on CPU time, which stays meaningful when
other jobs share the cores, and the wall-clock ratio is printed beside it.
Totals are compared to 1e-9 relative. Env: MOESCOPE (binary), LAP_SIZES
(e.g. "1000 2000" to shorten), LAP_REPEAT (default 3).
"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.optimize import linear_sum_assignment

MOESCOPE = os.environ.get("MOESCOPE", "./moescope")


def write_safetensors(path, tensors):
    """Minimal safetensors writer: {name: float64 ndarray}."""
    header, blobs, off = {}, [], 0
    for name, a in tensors.items():
        a = np.ascontiguousarray(a, dtype="<f8")
        b = a.tobytes()
        header[name] = {"dtype": "F64", "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def time_scipy(c, maximize, repeat):
    best, best_cpu, res = float("inf"), float("inf"), None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        r, col = linear_sum_assignment(c, maximize=maximize)
        best_cpu = min(best_cpu, time.process_time() - c0)
        best = min(best, time.perf_counter() - t0)
        res = (r, col)
    r, col = res
    return best, best_cpu, float(c[r, col].sum())


def time_moescope(path, maximize, repeat):
    cmd = [MOESCOPE, "lap", path, "--time", "--repeat", str(repeat)]
    if maximize:
        cmd.append("--maximize")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    total = float(re.search(r"^total: (\S+)", out, re.M).group(1))
    best = float(re.search(r"solve_seconds: best (\S+)", out).group(1))
    best_cpu = float(re.search(r"cpu_best (\S+)", out).group(1))
    return best, best_cpu, total


def main():
    sizes = [int(s) for s in os.environ.get("LAP_SIZES", "1000 2000 3000 5000").split()]
    repeat = int(os.environ.get("LAP_REPEAT", "3"))
    rng = np.random.default_rng(2024)
    cases = [(f"uniform {n}", n, False, lambda n=n: rng.random((n, n))) for n in sizes]

    def wm():
        h, d = 3072, 768
        w1a, w1b = rng.standard_normal((h, d)), rng.standard_normal((h, d))  # (h, d)
        w2a, w2b = rng.standard_normal((d, h)), rng.standard_normal((d, h))  # (d, h)
        return w1a @ w1b.T + w2a.T @ w2b  # (h, h)

    if os.environ.get("LAP_SKIP_WM") != "1":
        cases.append(("weight-match 3072", 3072, True, wm))

    print(f"bench_lap: scipy.optimize.linear_sum_assignment vs moescope lap_solve, "
          f"best of {repeat}, CPU seconds")
    print(f"{'case':<20} {'n':>6} {'scipy s':>9} {'moescope s':>11} {'ratio':>7}  totals equal"
          f"   (wall: scipy s, moescope s, ratio)")
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        for name, n, maximize, make in cases:
            c = make()
            path = os.path.join(tmp, "cost.safetensors")
            write_safetensors(path, {"cost": c})
            ws, ts, tot_s = time_scipy(c, maximize, repeat)
            wm_, tm, tot_m = time_moescope(path, maximize, repeat)
            eq = abs(tot_s - tot_m) <= 1e-9 * max(1.0, abs(tot_s))
            ok &= eq
            print(f"{name:<20} {n:>6} {ts:>9.4f} {tm:>11.4f} {ts / tm:>6.2f}x  {'yes' if eq else 'NO ':<12}"
                  f"   ({ws:.4f}, {wm_:.4f}, {ws / wm_:.2f}x)"
                  f"{'' if eq else f' totals {tot_s!r} vs {tot_m!r}'}")
            sys.stdout.flush()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
