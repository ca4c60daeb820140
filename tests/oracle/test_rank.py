"""tests/oracle/test_rank.py - ranks with the tie tolerance (rank, tied, rank_auc, tau,
L-hat) in `landscape --json` and `--csv` against the numpy oracle's definitions
(oracle.rank_info, tie_classes, rank_tau, l_hat) applied to the same barriers,
on every pair of the n = 4 sample sets; the constructed case of many orders at
0 with the chosen one 1e-9 above; Spearman's rho against scipy."""
import csv
import itertools
import json
import math
import os
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

SAMPLES = os.path.join(HERE, "..", "..", "sample-checkpoints")


def rows_of(J):
    return [(tuple(r["order"]), r["barrier"], r["acc_barrier"], r["loss_auc"]) for r in J["orders"]]


def num(v):
    return float("nan") if v is None else v


def check_pair(tmp, tag, a, b, e):
    js, cs = os.path.join(tmp, tag + ".json"), os.path.join(tmp, tag + ".csv")
    r = run("landscape", a, b, "--eval", e, "--points", 9, "-q", "--json", js, "--csv", cs)
    check(r.returncode == 0, "%s: landscape ran (%s)" % (tag, r.stderr.strip()[-300:]))
    if r.returncode:
        return
    J = json.load(open(js))
    rows = rows_of(J)
    # JSON numbers carry 15 significant digits, so tau is compared to 1e-13 and
    # the report's own tau is used below
    tau = oracle.rank_tau(num(J["naive"]["barrier"]))
    check(abs(J["tau"] - tau) <= 1e-13 * tau, "%s: tau %r vs oracle %r" % (tag, J["tau"], tau))
    tau = J["tau"]
    best = min(r[1] for r in rows)
    for m in ("gate", "expert"):
        j = J["methods"][m]
        o = oracle.rank_info(rows, num(j["barrier"]), num(j["loss_auc"]), j["order"], tau)
        got = {k: j[k] for k in ("rank", "tied", "rank_auc")}
        check(got == o, "%s: %s %s vs oracle %s" % (tag, m, got, o))
        check(j["rank"] <= j["rank_auc"] <= j["rank"] + j["tied"] - 1, "%s: %s rank_auc bounds" % (tag, m))
        lh = oracle.l_hat(j["barrier"], best, J["naive"]["barrier"])
        check((lh is None and j["l_hat"] is None) or (lh is not None and j["l_hat"] is not None
                                                      and abs(lh - j["l_hat"]) <= 1e-9 * max(1, abs(lh))),
              "%s: %s l_hat %s vs %s" % (tag, m, j["l_hat"], lh))
    # CSV: every row's rank, tied and tie class by the same definitions
    with open(cs) as f:
        lines = [l for l in f if not l.startswith("#")]
    R = list(csv.DictReader(lines))
    B = np.array([float(x["barrier"]) for x in R])
    cls = oracle.tie_classes(list(B), tau)
    bad = 0
    for i, x in enumerate(R):
        bad += int(x["rank"]) != 1 + int(np.sum(B < B[i] - tau))
        bad += int(x["tied"]) != int(np.sum(np.abs(B - B[i]) <= tau))
        bad += int(x["tie_class"]) != cls[i]
    check(len(R) == len(rows) and bad == 0, "%s: CSV rank/tied/tie_class (%d wrong)" % (tag, bad))


def test_samples(tmp):
    for s in ("dense4", "shared4", "topk4"):
        d = os.path.join(SAMPLES, s)
        e = os.path.join(d, "eval.safetensors")
        if not os.path.exists(e):
            check(False, "sample set %s missing" % s)
            continue
        for i, j in itertools.combinations(range(1, 5), 2):
            a, b = (os.path.join(d, "seed%d.safetensors" % k) for k in (i, j))
            check_pair(tmp, "%s_%d%d" % (s, i, j), a, b, e)


def test_reports(tmp):
    """landscape text and diagnose JSON carry the same rank, tied and rank_auc."""
    d = os.path.join(SAMPLES, "dense4")
    a, b, e = (os.path.join(d, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
    js, dj = os.path.join(tmp, "r.json"), os.path.join(tmp, "d.json")
    r = run("landscape", a, b, "--eval", e, "--json", js)
    r2 = run("diagnose", a, b, "--eval", e, "--json", dj, "--method", "gate")
    check(r.returncode == 0 and r2.returncode == 0, "landscape and diagnose ran")
    if r.returncode or r2.returncode:
        return
    J, D = json.load(open(js)), json.load(open(dj))
    g = J["methods"]["gate"]
    check(g["tied"] > 1 and g["rank"] == 1, "dense4 1-2: the gate order ties with others at 0")
    want = "gate: rank %d (tied: %d at" % (g["rank"], g["tied"])
    check(want in r.stdout and ("by AUC %d)" % g["rank_auc"]) in r.stdout, "landscape text: %r" % want)
    l = D["pair"]["landscape"]
    check((l["rank"], l["tied"], l["rank_auc"]) == (g["rank"], g["tied"], g["rank_auc"]),
          "diagnose JSON ranks %s vs landscape %s" % (l, g))


def test_constructed():
    """The same data as test_rank.c's constructed case: 15 orders at 0 with AUC
    0.02 - 0.001 i, the chosen one at 1e-9 with AUC 0.0135, the rest far above."""
    orders = list(itertools.permutations(range(4)))
    rows = []
    for i, p in enumerate(orders):
        if i < 15:
            rows.append((p, 0.0, None, 0.02 - 0.001 * i))
        elif i == 15:
            rows.append((p, 1e-9, None, 0.02 - 0.001 * 6.5))
        else:
            rows.append((p, 0.05 + 0.01 * i, None, 0.1))
    tau = oracle.rank_tau(0.3)
    o = oracle.rank_info(rows, 1e-9, 0.02 - 0.001 * 6.5, orders[15], tau)
    check(o == {"rank": 1, "tied": 16, "rank_auc": 9}, "constructed: oracle gives %s" % o)
    # not among the rows (a sampled landscape): counted once more
    o = oracle.rank_info(rows[:15] + rows[16:], 1e-9, 0.02 - 0.001 * 6.5, orders[15], tau)
    check(o == {"rank": 1, "tied": 16, "rank_auc": 9}, "constructed, chosen not sampled: %s" % o)


def test_spearman():
    try:
        from scipy.stats import spearmanr
    except ImportError:
        check(False, "scipy missing")
        return
    rng = np.random.default_rng(5)
    worst = 0.0
    for _ in range(50):
        n = int(rng.integers(3, 60))
        x = rng.integers(0, 5, n).astype(float)
        y = x + rng.integers(0, 3, n)
        s = oracle.spearman(x, y)
        ref = spearmanr(x, y).statistic
        if s is None:
            check(math.isnan(ref), "spearman: constant input is undefined in both")
            continue
        worst = max(worst, abs(s - ref))
    check(worst < 1e-12, "oracle.spearman agrees with scipy (worst %.3g)" % worst)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_samples(tmp)
        test_reports(tmp)
        test_constructed()
        test_spearman()
    return testutil.summary("test_rank_py")


if __name__ == "__main__":
    sys.exit(main())
