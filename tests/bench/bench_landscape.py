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
a per-order mix and head (floor_flops) at one core's FMA peak for the vector
form that ran (tests/bench/fma_peak.c, measured in the same run), against the
landscape process's CPU seconds (target: within 2x); where the CPU runs
AVX-512, also the AVX2 form with OpenBLAS's Haswell kernels against the AVX2
peak, as on an AVX2 machine. The one-core SGEMM rate is printed beside it
(numpy's BLAS on the kernels moescope runs, and choosing its own): what a
tuned GEMM reaches of that peak. moescope's prefix path
shares partial sums across orders, so it does less arithmetic than this
count."""
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
sys.path[:0] = [HERE] + [os.path.join(HERE, "..", d) for d in ("lib", "oracle")]
import benchlib  # noqa: E402
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


def run_moescope(files, reps=1, env=None):
    """(best process wall, its ranks time, its landscape time); the least CPU
    seconds of the runs (user + system, every thread) go to run_moescope.cpu."""
    best, out, run_moescope.cpu = None, "", None
    for _ in range(reps):
        t = time.perf_counter()
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        r = subprocess.run([MOESCOPE, "landscape", files[0], files[1], "--eval", files[2], "-q"],
                           capture_output=True, text=True, env=env or MOESCOPE_ENV)
        dt = time.perf_counter() - t
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if r.returncode:
            print("moescope failed:", r.stderr.strip())
            return None, None, None
        if best is None or dt < best:
            best, out = dt, r.stdout
        if run_moescope.cpu is None or cpu < run_moescope.cpu:
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
    best of 5, CPU time): (on the OpenBLAS kernels moescope runs, as its
    --version names them; with no OPENBLAS_* setting: the BLAS's own choice
    for this CPU)."""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    own = {k: v for k, v in env.items() if not k.startswith("OPENBLAS_") or k == "OPENBLAS_NUM_THREADS"}
    mine = dict(own, OPENBLAS_CORETYPE=benchlib.moescope_kernels(MOESCOPE_ENV)[1])
    rates = []
    for e in (mine, own):
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


# an AVX2 machine's kernels on this one: moescope's AVX2 form and OpenBLAS's Haswell ones
AVX2_ENV = dict(MOESCOPE_ENV, MOESCOPE_SIMD="avx2", OPENBLAS_CORETYPE="Haswell")


def topk8_floor(tmp):
    """A top-2 router (the kernel's selected form: the prefix path's precompute,
    each order's selected slots summed per sample; the per-order path before):
    40320 orders of a generated top-2-of-8 pair of dense8's shape, against the
    arithmetic a per-order evaluation needs (the k = 2 selected experts' mix and
    the head: 2 d (k + C) per order and sample) at the FMA peak of the form
    that ran; AVX-512 and, as on an AVX2 machine, AVX2. No target: with 16
    samples a register nearly every slot is some sample's choice, and the form
    sums the head products of each such slot (n C + n^2/2 per order and sample
    where this count has k d + C d)."""
    a, b, e = (os.path.join(tmp, "topk8_%s.safetensors" % s) for s in "abe")
    ta, meta = gen_ckpt.write_layer(a, seed=1, n=8, d=32, h=32, classes=10, router="topk", k=2)
    gen_ckpt.write_layer(b, seed=2, n=8, d=32, h=32, classes=10, router="topk", k=2)
    gen_ckpt.write_evalset(e, ta, meta, seed=3, N=360)
    fl = 40320 * 23 * 360 * 2 * 32 * (2 + 10) + 64 * 23 * 360 * 4 * 32 * 32
    peaks = benchlib.fma_peaks()
    forms = [("", MOESCOPE_ENV)] + ([(" (AVX2 form)", AVX2_ENV)] if "avx512" in peaks and "avx2" in peaks else [])
    for tag, env in forms:
        wall, _, eng = run_moescope([a, b, e], reps=2, env=env)
        if wall is None:
            continue
        simd, blas = benchlib.moescope_kernels(env)
        peak = peaks.get(benchlib.simd_key(simd))
        if not peak:
            continue
        floor_s, cpu = fl / 1e9 / peak, run_moescope.cpu
        print("  %-22s%s top-2 of 8, 40320 orders (the selected form): %.2f CPU s; its arithmetic %.0f GFLOP at "
              "the %s peak = %.2f CPU s: %.2fx" % ("topk8 (generated)", tag, cpu, fl / 1e9, simd, floor_s,
                                                  cpu / floor_s))
        benchlib.result("landscape top-2 of 8 all 40320 orders (selected form)" + tag, "%.2f CPU s" % cpu,
                        "%.0f GFLOP at %s's FMA peak %.0f GFLOP/s = %.2f s" % (fl / 1e9, simd, peak, floor_s),
                        "%.2fx" % (cpu / floor_s), "", None, "moescope %s, OpenBLAS %s" % (simd, blas))


def dense8_floor(files, label):
    """dense8's whole landscape against its arithmetic floor at this machine's
    FMA peak for the vector form that ran: the widest the CPU runs, and (where
    that is AVX-512) the AVX2 form, as on an AVX2 machine (AVX2 kernels in
    moescope and OpenBLAS). Best of 3 runs' CPU seconds each."""
    fl, peaks = floor_flops(files, 40320), benchlib.fma_peaks()
    r_mine, r_own = sgemm_rates()
    print("  %-22s one core: FMA peak %s GFLOP/s (tests/bench/fma_peak.c); SGEMM %.0f GFLOP/s "
          "on the OpenBLAS kernels moescope runs, %.0f with OpenBLAS's own choice"
          % ("", ", ".join("%s %.0f" % kv for kv in sorted(peaks.items())), r_mine, r_own))
    forms = [("", MOESCOPE_ENV)]
    if "avx512" in peaks and "avx2" in peaks:
        forms.append((" (AVX2 form)", AVX2_ENV))
    for tag, env in forms:
        wall, _, eng = run_moescope(files, reps=3, env=env)
        if wall is None:
            continue
        simd, blas = benchlib.moescope_kernels(env)
        peak = peaks.get(benchlib.simd_key(simd))
        if not peak:
            print("  %-22s no FMA peak measured for %s: no floor" % ("", simd))
            continue
        floor_s, cpu = fl / 1e9 / peak, run_moescope.cpu
        print("  %-22s%s arithmetic floor %.0f GFLOP at the %s peak %.0f GFLOP/s = %.2f CPU s; "
              "moescope %.2f CPU s (whole process, best of 3) = %.2fx the floor  target <= 2x: %s"
              % (label, tag, fl / 1e9, simd, peak, floor_s, cpu, cpu / floor_s, verdict(cpu <= 2 * floor_s)))
        benchlib.result("landscape dense8 all 40320 orders" + tag, "%.2f CPU s" % cpu,
                        "%.0f GFLOP at %s's FMA peak %.0f GFLOP/s = %.2f s" % (fl / 1e9, simd, peak, floor_s),
                        "%.2fx" % (cpu / floor_s), "<= 2x", cpu <= 2 * floor_s,
                        "moescope %s, OpenBLAS %s" % (simd, blas))


def main():
    print("bench_landscape: load average %s (the machine may be shared)" %
          " ".join(open("/proc/loadavg").read().split()[:3]))
    kern = benchlib.kernel_text(MOESCOPE_ENV) + "; numpy OpenBLAS " + benchlib.numpy_blas()
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
            benchlib.result("landscape %s 24 orders" % label, "%.3f s" % eng,
                            "numpy landscape %.2f s" % npt, "%.0fx faster" % (npt / eng), "< 0.1 s",
                            eng < 0.1, kern)
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
            benchlib.result("landscape dense8 40320 orders", "%.2f s (ranks %.2f s)" % (eng, ranks),
                            "numpy landscape %.0f s" % npt, "%.0fx faster" % (npt / eng),
                            "ranks < 5 s, all < 60 s", ranks < 5 and eng < 60, kern)
            dense8_floor(files, label)
        topk8_floor(tmp)


if __name__ == "__main__":
    main()
