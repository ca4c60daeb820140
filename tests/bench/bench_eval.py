"""tests/bench/bench_eval.py - evaluator throughput (samples/s): `moescope eval`
against the numpy oracle (tests/oracle.py, float64, same files), side by side.

The C time is measured in-process with `eval --repeat R`, which times only the
evaluation passes (loading excluded) and reports them on stderr; the numpy time
is the best of a few oracle.eval calls on the same arrays."""
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402

MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", "./moescope"))
N, D, H = 20000, 64, 128
CASES = [
    ("4 experts dense relu", dict(n=4, router="dense", act="relu")),
    ("8 experts dense relu", dict(n=8, router="dense", act="relu")),
    ("8 experts top-2 gelu", dict(n=8, router="topk", k=2, act="gelu")),
    ("8 experts top-2 silu_glu", dict(n=8, router="topk", k=2, act="silu_glu")),
]


def c_rate(ck, ev, repeat):
    r = subprocess.run([MOESCOPE, "eval", ck, "--eval", ev, "--repeat", str(repeat)],
                       capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("moescope eval failed: " + r.stderr)
    m = re.search(r"([0-9.]+) s per run", r.stderr)
    return N / float(m.group(1))


def np_rate(L, evo, reps=3):
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        oracle.eval(L, evo)
        best = min(best, time.perf_counter() - t0)
    return N / best


def main():
    print("bench_eval: N = %d samples, d = %d, h = %d (samples/s, higher is better)" % (N, D, H))
    print("%-28s %14s %14s %8s" % ("layer", "moescope", "numpy", "ratio"))
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, kw) in enumerate(CASES):
            t, meta = gen_ckpt.make_layer(seed=1 + i, d=D, h=H, classes=10, **kw)
            ev = gen_ckpt.make_evalset(seed=1 + i, layer_tensors=t, meta=meta, N=N)
            ck = os.path.join(tmp, "c.safetensors")
            evp = os.path.join(tmp, "e.safetensors")
            oracle.write_safetensors(ck, t, meta)
            oracle.write_safetensors(evp, ev)
            rc = c_rate(ck, evp, 5)
            rn = np_rate(oracle.load_layer(ck), oracle.load_evalset(evp))
            print("%-28s %14.0f %14.0f %7.1fx" % (name, rc, rn, rc / rn))


if __name__ == "__main__":
    main()
