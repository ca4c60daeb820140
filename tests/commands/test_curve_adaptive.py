"""tests/commands/test_curve_adaptive.py - `curve --adaptive` on a network: fewer
evaluations for the same barrier.

On the bundled GPT sample sample-checkpoints/gpt/topk4 (seeds 1 and 2), the coarse grid
(--points 9) refined by golden-section search in each curve's best grid bracket:
  - every refined barrier is at least its coarse grid's, and within the search's own
    stated spread (gap_spread) of the fine grid's (--points 25) barrier, or above it
    (the search finds the peak the fine grid steps over);
  - it used fewer evaluations than the fine grid (points < 25), reports t in the
    bracket of its grid's best point and a t bracket within the 0.005 asked;
  - --adaptive on a layer (no network) is refused as a usage error naming the option.
"""
import os
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_curve_adaptive_")
POOL = os.path.join(testutil.ROOT, "sample-checkpoints", "gpt", "topk4")


def table(out, first):
    """the rows of the table whose header starts with `first`: {curve: [numbers]}"""
    rows, on = {}, False
    for line in out.splitlines():
        w = line.split()
        if w and w[0] == "curve" and len(w) > 1 and w[1] == first:
            on = True
            continue
        if on and not w:
            break
        if on:
            rows[w[0]] = [float(x) for x in w[-len(w) + 1:] if x.replace(".", "", 1).replace("-", "", 1).isdigit()]
    return rows


def grid(out):
    """{curve: barrier} of the summary (the column after the order)"""
    res = {}
    for line in out.splitlines():
        w = line.split()
        if len(w) >= 4 and w[0] in ("naive", "skip_order", "expert"):
            try:
                res.setdefault(w[0], float(w[-3]))
            except ValueError:
                pass
    return res


def test_samples():
    a, b, e = os.path.join(POOL, "seed1"), os.path.join(POOL, "seed2"), os.path.join(POOL, "eval.safetensors")
    # the fine grid is the reference (data, not the code under test): the release build
    fine = run("curve", a, b, "--eval", e, "--points", 25, binary=testutil.MOESCOPE_REL)
    coarse = run("curve", a, b, "--eval", e, "--points", 9, "--adaptive")
    check(fine.returncode == 0 and coarse.returncode == 0, "curve runs: %s %s" % (fine.stderr, coarse.stderr))
    if fine.returncode or coarse.returncode:
        return
    gf, gc = grid(fine.stdout), grid(coarse.stdout)
    ad = table(coarse.stdout, "barrier")
    check(set(ad) == {"naive", "skip_order", "expert"}, "an adaptive row per curve: %s" % sorted(ad))
    for name, v in ad.items():
        bar, t, points, tb, spread = v
        check(bar >= gc[name] - 1e-12, "%s: refined %.9f >= its grid's %.9f" % (name, bar, gc[name]))
        check(bar >= gf[name] - spread - 1e-9,
              "%s: refined %.9f within its spread %.3g of the 25-point grid's %.9f" % (name, bar, spread, gf[name]))
        check(points < 25, "%s: %d evaluations, fewer than the 25-point grid's" % (name, points))
        check(0 < t < 1 and tb <= 0.005 + 1e-12, "%s: t %.4f inside, bracket %.4g <= 0.005" % (name, t, tb))


def test_layer_refused():
    d = os.path.join(testutil.ROOT, "sample-checkpoints", "dense4")
    r = run("curve", os.path.join(d, "seed1.safetensors"), os.path.join(d, "seed2.safetensors"), "--adaptive")
    check(r.returncode == 2 and "--adaptive" in r.stderr, "a layer: --adaptive refused (%d) %s"
          % (r.returncode, r.stderr.strip()))


sys.exit(testutil.run_tests("test_curve_adaptive", [test_samples, test_layer_refused], TMP))
