"""tests/bench/bench_landscape.py - `moescope landscape` against a straightforward
numpy landscape (tests/oracle/oracle.py: align each order, evaluate 25 points), on the
sample checkpoints (or generated ones of the same shape when the samples are
missing). numpy is timed on a few orders and extrapolated to all n! orders.

The targets: 4-expert samples, all 24 orders x 25 points < 0.1 s;
8-expert sample, exact ranks of both chosen orders < 5 s, all 40320 < 60 s
(2 cores). The targets apply to the landscape's own computation ("landscape"
below: secs_total, the time from landscape_compute's start to its last row,
as the command prints it); the whole process (loading, OpenBLAS start-up,
output) is reported next to it as "process". Prints times, ratios and
PASS/MISS. For the 8-expert sample also its arithmetic floor: the flops of
a per-order mix and head (floor_flops) over one core's SGEMM rate measured in
the same run, against the landscape process's CPU seconds (target: within 2x).
The rate is the faster of two measurements, both printed: numpy's BLAS with
this environment's settings (a machine may pin OPENBLAS_CORETYPE, e.g. to
Haswell's 8-lane kernels on an AVX-512 CPU, which halves the rate and so would
halve the floor's bar) and the same BLAS choosing its own kernels; the floor
uses the faster, the machine's real rate. moescope's prefix path shares
partial sums across orders, so it does less arithmetic than this count."""
import itertools
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

# the numpy peer runs single-threaded (a fair, steady baseline on a shared
# machine); moescope gets the environment as it was
MOESCOPE_ENV = dict(os.environ)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402

MOESCOPE = os.environ.get("MOESCOPE", os.path.join(ROOT, "moescope"))


def sample(name, n, tmp):
    d = os.path.join(ROOT, "sample-checkpoints", name)
    files = [os.path.join(d, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors")]
    if all(os.path.exists(f) for f in files):
        return files, name
    # same shape as the samples: d = 32, h = 32, 10 classes, N = 360
    a, b, e = (os.path.join(tmp, "%s_%s.safetensors" % (name, s)) for s in "abe")
    ta, meta = gen_ckpt.write_layer(a, seed=1, n=n, d=32, h=32, classes=10)
    gen_ckpt.write_layer(b, seed=2, n=n, d=32, h=32, classes=10)
    gen_ckpt.write_evalset(e, ta, meta, seed=3, N=360)
    return [a, b, e], name + " (generated)"


def run_moescope(files, reps=1):
    """(best process wall, its ranks time, its landscape time); the best run's
    CPU seconds (user + system, every thread) go to run_moescope.cpu."""
    best, out = None, ""
    for _ in range(reps):
        t = time.perf_counter()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([MOESCOPE, "landscape", files[0], files[1], "--eval", files[2], "-q"],
                           capture_output=True, text=True, env=MOESCOPE_ENV)
        dt = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if r.returncode:
            print("moescope failed:", r.stderr.strip())
            return None, None, None
        if best is None or dt < best:
            best, out = dt, r.stdout
            run_moescope.cpu = cpu
    m = re.search(r"ranks known after ([0-9.]+) s, all orders after ([0-9.]+) s", out)
    return best, float(m.group(1)), float(m.group(2))


def numpy_per_order(files, orders, T=25):
    A, B, ev = oracle.load_layer(files[0]), oracle.load_layer(files[1]), oracle.load_evalset(files[2])
    oracle.landscape(A, B, ev, T=3, orders=orders[:1])  # warm up (scipy imports)
    t = time.perf_counter()
    oracle.landscape(A, B, ev, T=T, orders=orders)
    total = time.perf_counter() - t
    # landscape() also computes the 4 named curves: count them as orders
    return total / (len(orders) + 4)


SGEMM = r"""
import time
import numpy as np
a = np.random.default_rng(0).random((1024, 1024), dtype=np.float32)
b = a.T.copy()
a @ b
best = float("inf")
for _ in range(5):
    c0 = time.process_time()
    a @ b
    best = min(best, time.process_time() - c0)
print(2 * 1024 ** 3 / best / 1e9)
"""


def sgemm_rates():
    """GFLOP/s of one core's float32 GEMM (1024^3, numpy's BLAS, one thread,
    best of 5, CPU time): (with this environment's OPENBLAS_* settings, with
    none of them: the BLAS picks its kernels for this CPU)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    own = {k: v for k, v in env.items() if not k.startswith("OPENBLAS_") or k == "OPENBLAS_NUM_THREADS"}
    rates = []
    for e in (env, own):
        r = subprocess.run([sys.executable, "-c", SGEMM], capture_output=True, text=True, env=e)
        rates.append(float(r.stdout) if r.returncode == 0 else float("nan"))
    return rates


def floor_flops(files, orders, T=25):
    """The arithmetic of an exact landscape that mixes and applies the head per
    order: for every order at every interior point and every sample, the mix
    sum_i g_i Y_i (n*d multiply-adds) and the head (C*d); once per pair (n^2)
    and interior point, the interpolated expert's two products on every
    sample (2*d*h each). (Sharing partial sums across orders, as moescope's
    prefix path does, needs less: this is the bar the target is set against.)"""
    A, ev = oracle.load_layer(files[0]), oracle.load_evalset(files[2])
    n, d, C = A["n"], A["d"], A["C"]
    h = A["experts"][0]["w1"].shape[0]
    N, Ti = len(ev["inputs"]), T - 2
    return orders * Ti * N * 2 * d * (n + C) + n * n * Ti * N * 4 * d * h


def verdict(ok):
    return "PASS" if ok else "MISS"


def main():
    print("bench_landscape: load average %s (the machine may be shared)" %
          " ".join(open("/proc/loadavg").read().split()[:3]))
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("dense4", "topk4", "shared4"):
            files, label = sample(name, 4, tmp)
            wall, _, eng = run_moescope(files, reps=3)
            if wall is None:
                continue
            per = numpy_per_order(files, list(itertools.permutations(range(4)))[:4])
            npt = per * 24
            print("  %-22s 24 orders x 25 points: landscape %.3f s (process %.3f s), numpy %.2f s "
                  "(extrapolated from 4 orders), ratio %.0fx  target: landscape < 0.1 s: %s"
                  % (label, eng, wall, npt, npt / eng, verdict(eng < 0.1)))
        files, label = sample("dense8", 8, tmp)
        wall, ranks, eng = run_moescope(files)
        if wall is not None:
            per = numpy_per_order(files, list(itertools.permutations(range(8)))[:3])
            npt = per * 40320
            print("  %-22s 40320 orders x 25 points: landscape %.2f s (ranks after %.2f s; process "
                  "%.2f s), numpy %.0f s (extrapolated from 3 orders), ratio %.0fx"
                  % (label, eng, ranks, wall, npt, npt / eng))
            print("  %-22s landscape: exact ranks of both chosen orders < 5 s: %s; all orders < 60 s: %s"
                  % ("", verdict(ranks < 5), verdict(eng < 60)))
            fl, (r_env, r_own) = floor_flops(files, 40320), sgemm_rates()
            rate = max(r for r in (r_env, r_own) if r == r)
            cpu = run_moescope.cpu
            pinned = ", ".join("%s=%s" % (k, v) for k, v in sorted(os.environ.items())
                               if k.startswith("OPENBLAS_") and k != "OPENBLAS_NUM_THREADS")
            print("  %-22s SGEMM one core: %.0f GFLOP/s with this environment's BLAS settings (%s), "
                  "%.0f GFLOP/s with the BLAS's own choice; the floor uses %.0f"
                  % ("", r_env, pinned or "none set", r_own, rate))
            print("  %-22s arithmetic floor %.0f GFLOP at %.0f GFLOP/s = %.2f CPU s; moescope %.2f CPU s "
                  "(whole process) = %.2fx the floor  target <= 2x: %s"
                  % ("", fl / 1e9, rate, fl / 1e9 / rate, cpu, cpu / (fl / 1e9 / rate),
                     verdict(cpu <= 2 * fl / 1e9 / rate)))


if __name__ == "__main__":
    main()
