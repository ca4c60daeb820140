"""tests/bench/bench_study.py - `moescope study` over the 6 pairs of the dense4
sample (target: under 1 s for the whole process, 2 cores) against its peer,
the script a researcher would otherwise write: one `moescope landscape`
process per pair. Prints times, the ratio and PASS/MISS."""
import itertools
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE]
import benchlib  # noqa: E402
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MOESCOPE = os.environ.get("MOESCOPE", os.path.join(ROOT, "moescope"))
D4 = os.path.join(ROOT, "sample-checkpoints", "dense4")


def best_of(cmds, reps=3):
    best = None
    for _ in range(reps):
        t = time.perf_counter()
        for c in cmds:
            r = subprocess.run(c, capture_output=True, text=True)
            if r.returncode:
                print("failed:", " ".join(c), r.stderr.strip()[-300:])
                return None
        dt = time.perf_counter() - t
        best = dt if best is None or dt < best else best
    return best


def main():
    if not os.path.exists(os.path.join(D4, "eval.safetensors")):
        print("bench_study: no dense4 sample (make samples)")
        return 0
    e = os.path.join(D4, "eval.safetensors")
    seeds = [os.path.join(D4, "seed%d.safetensors" % i) for i in range(1, 5)]
    t_study = best_of([[MOESCOPE, "study", D4, "-q"]])
    t_peer = best_of([[MOESCOPE, "landscape", a, b, "--eval", e, "-q"]
                      for a, b in itertools.combinations(seeds, 2)])
    if t_study is None or t_peer is None:
        return 1
    print("study dense4 (6 pairs, 24 orders x 25 points each): %.3f s   [%s: target < 1 s]"
          % (t_study, "PASS" if t_study < 1.0 else "MISS"))
    print("  peer: 6 landscape processes %.3f s; ratio study/peer %.2f" % (t_peer, t_study / t_peer))
    benchlib.result("study dense4, 6 pairs", "%.3f s" % t_study, "6 landscape processes %.3f s" % t_peer,
                    "%.2fx their time" % (t_study / t_peer), "< 1 s", t_study < 1.0, benchlib.kernel_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
