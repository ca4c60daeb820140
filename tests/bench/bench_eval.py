"""tests/bench/bench_eval.py - evaluator throughput (samples/s): `moescope eval`
against a numpy float32 forward of the same layer (tests/bench/peer_eval.py),
side by side, on an otherwise idle machine and with one core kept busy.

moescope runs with its default settings (one worker per CPU, BLAS
single-threaded inside them); its time is measured in-process with
`eval --repeat 2` (evaluation passes only, loading excluded, wall clock),
best of 3 processes.
The peer is numpy as shipped (OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed
from its environment if this machine sets them; its BLAS uses every core;
PEER_CORETYPE=SkylakeX gives it OpenBLAS's AVX-512 kernels where OpenBLAS does
not recognise the CPU and falls back to SSE3 ones, as 0.3.21 does on newer Xeons),
best of a few whole-set evaluations, wall clock. Both losses are printed; they
agree to float32 rounding. "busy": a spinning process holds one core during
both measurements (a workstation doing something else). The load average
is printed, since other users of the machine count as busy cores too."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402

MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", "./moescope"))
PYTHON = os.environ.get("PYTHON", sys.executable)
N, D, H = 20000, 64, 128
CASES = [
    ("4 experts dense relu", dict(n=4, router="dense", act="relu")),
    ("8 experts dense relu", dict(n=8, router="dense", act="relu")),
    ("8 experts top-2 gelu", dict(n=8, router="topk", k=2, act="gelu")),
    ("8 experts top-2 silu_glu", dict(n=8, router="topk", k=2, act="silu_glu")),
]


def c_rate(ck, ev, reps):
    """Best of reps processes, each timing two passes (eval reports their mean)."""
    best, loss = float("inf"), None
    for _ in range(reps):
        r = subprocess.run([MOESCOPE, "eval", ck, "--eval", ev, "--repeat", "2"],
                           capture_output=True, text=True)
        if r.returncode:
            raise SystemExit("moescope eval failed: " + r.stderr)
        best = min(best, float(re.search(r"([0-9.]+) s per run", r.stderr).group(1)))
        loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    return N / best, loss


def np_rate(ck, ev, reps):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    if os.environ.get("PEER_CORETYPE"):
        env["OPENBLAS_CORETYPE"] = os.environ["PEER_CORETYPE"]
    r = subprocess.run([PYTHON, os.path.join(HERE, "peer_eval.py"), ck, ev, str(reps)],
                       capture_output=True, text=True, env=env)
    if r.returncode:
        raise SystemExit("peer_eval.py failed: " + r.stderr)
    m = re.search(r"PEER_EVAL_SECONDS (\S+) LOSS (\S+)", r.stdout)
    return N / float(m.group(1)), float(m.group(2))


class Busy:
    """One process spinning on a core while the block runs."""

    def __enter__(self):
        self.p = subprocess.Popen([PYTHON, "-c", "while True: pass"])
        return self

    def __exit__(self, *exc):
        self.p.kill()
        self.p.wait()


def main():
    print("bench_eval: N = %d samples, d = %d, h = %d; samples/s (higher is better); "
          "load average %.2f %.2f %.2f" % ((N, D, H) + os.getloadavg()))
    kern = lambda env: subprocess.run([PYTHON, "-c", "import numpy, threadpoolctl; print([x.get('architecture') "  # noqa: E731
                                       "for x in threadpoolctl.threadpool_info()])"],
                                      capture_output=True, text=True, env=env).stdout.strip()
    penv = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    if os.environ.get("PEER_CORETYPE"):
        penv["OPENBLAS_CORETYPE"] = os.environ["PEER_CORETYPE"]
    mine = subprocess.run([MOESCOPE, "--version"], capture_output=True, text=True).stdout.split("\n")
    print("BLAS kernels: moescope %s; numpy %s" % (
        next((x[6:] for x in mine if x.startswith("blas: ")), "?"), kern(penv) or "?"))
    print("%-26s %-6s %10s %12s %7s   %s" % ("layer", "cores", "moescope", "numpy f32",
                                             "ratio", "loss (moescope, numpy)"))
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, kw) in enumerate(CASES):
            t, meta = gen_ckpt.make_layer(seed=1 + i, d=D, h=H, classes=10, **kw)
            ev = gen_ckpt.make_evalset(seed=1 + i, layer_tensors=t, meta=meta, N=N)
            ck = os.path.join(tmp, "c.safetensors")
            evp = os.path.join(tmp, "e.safetensors")
            oracle.write_safetensors(ck, t, meta)
            oracle.write_safetensors(evp, ev)
            for mode in ("idle", "busy"):
                if mode == "busy":
                    with Busy():
                        rc, lc = c_rate(ck, evp, 3)
                        rn, ln = np_rate(ck, evp, 3)
                else:
                    rc, lc = c_rate(ck, evp, 3)
                    rn, ln = np_rate(ck, evp, 3)
                print("%-26s %-6s %10.0f %12.0f %6.1fx   %.6f %.6f" % (
                    name, "1 busy" if mode == "busy" else "idle", rc, rn, rc / rn, lc, ln))
                sys.stdout.flush()
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
