"""tests/bench/bench_eval.py - evaluator throughput (samples/s): `moescope eval`
against a numpy float32 forward of the same layer (tests/bench/peer_eval.py),
side by side, on an otherwise idle machine and with one core kept busy.

moescope runs with its default settings (one worker per CPU, BLAS
single-threaded inside them); its time is measured in-process with
`eval --repeat 2` (evaluation passes only, loading excluded, wall clock),
best of 3 processes.
The peer is numpy (its BLAS uses every core), best of a few whole-set
evaluations, wall clock. Both losses are printed; they agree to float32
rounding. "busy": a spinning process holds one core during both
measurements (a workstation doing something else). The load average is
printed, since other users of the machine count as busy cores too.

Three pairings of kernels, each a kind of machine (the target, >= 2x with one
core busy, holds for each):
  - as shipped: both as OpenBLAS and moescope choose on this CPU (OpenBLAS
    0.3.21 does not know some newer CPUs and falls back to its SSE3 kernels;
    moescope then picks the AVX-512 or AVX2 ones itself, numpy does not);
  - AVX-512: numpy also on OpenBLAS's AVX-512 (SkylakeX) kernels, as on a
    machine OpenBLAS recognises (where the CPU runs AVX-512);
  - AVX2: both on AVX2 kernels (OpenBLAS's Haswell, moescope's AVX2 form), as
    on an AVX2 machine (where the CPU runs AVX2).
PEER_CORETYPE=X adds X for numpy's side as another pairing."""
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE] + [os.path.join(HERE, "..", d) for d in ("lib", "oracle")]
import benchlib  # noqa: E402
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
CLEAN = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MOESCOPE_SIMD")}


def pairings():
    """(name, moescope's environment, numpy's environment) per kind of machine"""
    peaks = benchlib.fma_peaks()
    out = [("as shipped", dict(CLEAN), dict(CLEAN))]
    if "avx512" in peaks:
        out.append(("AVX-512", dict(CLEAN), dict(CLEAN, OPENBLAS_CORETYPE="SkylakeX")))
    if "avx2" in peaks:
        out.append(("AVX2", dict(CLEAN, MOESCOPE_SIMD="avx2", OPENBLAS_CORETYPE="Haswell"),
                    dict(CLEAN, OPENBLAS_CORETYPE="Haswell")))
    if os.environ.get("PEER_CORETYPE"):
        out.append(("numpy " + os.environ["PEER_CORETYPE"], dict(CLEAN),
                    dict(CLEAN, OPENBLAS_CORETYPE=os.environ["PEER_CORETYPE"])))
    return out


def c_rate(ck, ev, reps, env):
    """Best of reps processes, each timing two passes (eval reports their mean)."""
    best, loss = float("inf"), None
    for _ in range(reps):
        r = subprocess.run([MOESCOPE, "eval", ck, "--eval", ev, "--repeat", "2"],
                           capture_output=True, text=True, env=env)
        if r.returncode:
            raise SystemExit("moescope eval failed: " + r.stderr)
        best = min(best, float(re.search(r"([0-9.]+) s per run", r.stderr).group(1)))
        loss = float(re.search(r"^loss\s+(\S+)", r.stdout, re.M).group(1))
    return N / best, loss


def np_rate(ck, ev, reps, env):
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
    pairs = pairings()
    for name, menv, nenv in pairs:
        print("  %-10s moescope: %s; numpy: OpenBLAS %s" % (name, benchlib.kernel_text(menv), benchlib.numpy_blas(nenv)))
    print("%-26s %-10s %-6s %10s %12s %7s   %s" % ("layer", "kernels", "cores", "moescope", "numpy f32",
                                                   "ratio", "loss (moescope, numpy)"))
    with tempfile.TemporaryDirectory() as tmp:
        for i, (case, kw) in enumerate(CASES):
            t, meta = gen_ckpt.make_layer(seed=1 + i, d=D, h=H, classes=10, **kw)
            ev = gen_ckpt.make_evalset(seed=1 + i, layer_tensors=t, meta=meta, N=N)
            ck = os.path.join(tmp, "c.safetensors")
            evp = os.path.join(tmp, "e.safetensors")
            oracle.write_safetensors(ck, t, meta)
            oracle.write_safetensors(evp, ev)
            for name, menv, nenv in pairs:
                kern = "%s; numpy OpenBLAS %s" % (benchlib.kernel_text(menv), benchlib.numpy_blas(nenv))
                for mode in ("idle", "busy"):
                    if mode == "busy":
                        with Busy():
                            rc, lc = c_rate(ck, evp, 3, menv)
                            rn, ln = np_rate(ck, evp, 3, nenv)
                    else:
                        rc, lc = c_rate(ck, evp, 3, menv)
                        rn, ln = np_rate(ck, evp, 3, nenv)
                    print("%-26s %-10s %-6s %10.0f %12.0f %6.1fx   %.6f %.6f" % (
                        case, name, "1 busy" if mode == "busy" else "idle", rc, rn, rc / rn, lc, ln))
                    benchlib.result("evaluator %s, %s, %s" % (case, name, "one core busy" if mode == "busy" else "idle"),
                                    "%.0f samples/s" % rc, "numpy float32 %.0f samples/s" % rn, "%.2fx" % (rc / rn),
                                    ">= 2x" if mode == "busy" else "", rc >= 2 * rn if mode == "busy" else None,
                                    kern)
    print("load average at the end: %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
