"""tests/bench/bench_landscape.py - `moescope landscape` against a straightforward
numpy landscape (tests/oracle.py: align each order, evaluate 25 points), on the
sample checkpoints (or generated ones of the same shape when the samples are
missing). numpy is timed on a few orders and extrapolated to all n! orders.

the README's formulas targets: 4-expert samples, all 24 orders x 25 points < 0.1 s;
8-expert sample, exact ranks of both chosen orders < 5 s, all 40320 < 60 s
(2 cores). The targets apply to the landscape's own computation ("landscape"
below: secs_total, the time from landscape_compute's start to its last row,
as the command prints it); the whole process (loading, OpenBLAS start-up,
output) is reported next to it as "process". Prints times, ratios and
PASS/MISS."""
import itertools
import os
import re
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
sys.path.insert(0, os.path.join(ROOT, "tests"))
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
    best, out = None, ""
    for _ in range(reps):
        t = time.perf_counter()
        r = subprocess.run([MOESCOPE, "landscape", files[0], files[1], "--eval", files[2], "-q"],
                           capture_output=True, text=True, env=MOESCOPE_ENV)
        dt = time.perf_counter() - t
        if r.returncode:
            print("moescope failed:", r.stderr.strip())
            return None, None, None
        if best is None or dt < best:
            best, out = dt, r.stdout
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


if __name__ == "__main__":
    main()
