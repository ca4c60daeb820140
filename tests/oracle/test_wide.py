"""tests/oracle/test_wide.py - the landscape at real expert counts: an OLMoE-like layer
(n = 64, top-8 softmax, no renormalisation) and a DeepSeek-V3-like one (n = 256 in
8 groups, 4 kept, sigmoid scores, a selection bias, top-8, routed scale, a shared
expert), written by tests/lib/gen_wide.py in their Hugging Face layouts (BF16) with
tiny widths, against an independent numpy computation:

  * the orders are a sample (no n! anything): distinct permutations of the right
    set (DeepSeek: group-preserving, whole groups onto groups), as many as asked;
    "orders_in_set" is 64! or (32!)^8 8!, the count formatted "about 10^...";
  * the rank is 1 + #{sampled orders more than tau below}, the percentile's 95 %
    CI is the Wilson interval of (rank - 1) / samples, the rank estimate is
    1 + percentile * orders_in_set;
  * a few sampled orders' barriers and AUCs equal tests/oracle/family_ref.py's (B
    reordered and weight-matched by scipy, the family's forward in float64) and
    `curve --order`'s;
  * B a scrambled copy of A (an expert permutation, group-preserving for
    DeepSeek, and hidden-unit permutations): both methods' order undoes it, its
    barrier is 0, its rank 1, and the percentile's CI starts at 0.
"""
import json
import math
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402
import gen_wide  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_wide_")
T = 3
N = 32
SAMPLES = {"olmoe": 40, "deepseek_v3": 24}


def landscape(base, tag, samples, *extra):
    out = os.path.join(TMP, tag + ".json")
    r = run("landscape", os.path.join(base, "a"), os.path.join(base, "b"), "--eval",
            os.path.join(base, "eval.safetensors"), "--points", T, "--samples", samples,
            "--json", out, "-q", *extra)
    check(r.returncode == 0, "%s: landscape failed: %s" % (tag, r.stderr.strip()[-400:]))
    if r.returncode:
        return None, r.stdout
    with open(out) as f:
        return json.load(f), r.stdout


def wilson(p, n):
    z = 1.959963984540054
    den = 1 + z * z / n
    ctr = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    lo = 0.0 if p <= 0 or ctr - half < 0 else ctr - half
    hi = 1.0 if p >= 1 or ctr + half > 1 else ctr + half
    return 100 * lo, 100 * hi


def log10_set(fam):
    if fam == "olmoe":
        return math.lgamma(65) / math.log(10)
    return (8 * math.lgamma(33) + math.lgamma(9)) / math.log(10)


def check_sample(fam, J, out, n):
    S = SAMPLES[fam]
    orders = [tuple(r["order"]) for r in J["orders"]]
    check(not J["exhaustive"] and J["nsampled"] == S and len(orders) == S,
          "%s: %d sampled orders expected, got %s" % (fam, S, len(orders)))
    check(len(set(orders)) == len(orders), "%s: sampled orders repeat" % fam)
    check(all(sorted(o) == list(range(n)) for o in orders), "%s: a row is not a permutation" % fam)
    if fam == "deepseek_v3":
        check(J["order_set"] == "group" and J["groups"] == 8 and J["group_size"] == 32,
              "deepseek_v3: the group-preserving orders: %s" % J["order_set"])
        check(all(len({o[a * 32 + i] // 32 for i in range(32)}) == 1 for o in orders for a in range(8)),
              "deepseek_v3: a sampled order splits a group")
    else:
        check(J["order_set"] == "all", "olmoe: all orders")
    lg = log10_set(fam)
    check(abs(math.log10(J["orders_in_set"]) - lg) < 1e-9,
          "%s: orders_in_set %.6g, want 10^%.6f" % (fam, J["orders_in_set"], lg))
    check("about 10^%d" % math.floor(lg) in out, "%s: the count as about 10^%d" % (fam, math.floor(lg)))
    bars = np.array([r["barrier"] for r in J["orders"]])
    for m in ("gate", "expert"):
        M = J["methods"][m]
        rank = 1 + int((bars < M["barrier"] - J["tau"]).sum())
        check(M["rank"] == rank, "%s %s: rank %d, by count %d" % (fam, m, M["rank"], rank))
        p = (rank - 1) / S
        lo, hi = wilson(p, S)
        ci = M["rank_percentile_ci95"]
        check(abs(ci[0] - lo) < 1e-9 and abs(ci[1] - hi) < 1e-9,
              "%s %s: CI %s, Wilson (%.6f, %.6f)" % (fam, m, ci, lo, hi))
        est = 1 + p * J["orders_in_set"]
        check(abs(M["rank_estimate"] - est) <= 1e-9 * est,
              "%s %s: rank estimate %.6g, want %.6g" % (fam, m, M["rank_estimate"], est))


def check_numpy(fam, base, J, WA, WB, X, cfg, rng):
    """a few orders' barriers and AUCs against numpy and against `curve --order`"""
    rows = {tuple(r["order"]): r for r in J["orders"]}
    keys = sorted(rows)
    pick = [tuple(J["best"]["order"]), tuple(J["worst"]["order"]), keys[rng.integers(len(keys))]]
    for o in pick:
        bar, auc, tol = ff.order_barrier_ref(fam, WA, WB, o, cfg, X, T)
        r = rows[o]
        check(abs(r["barrier"] - bar) <= tol and abs(r["loss_auc"] - auc) <= tol,
              "%s: order %s...: barrier %.8g / AUC %.8g, numpy %.8g / %.8g" %
              (fam, o[:6], r["barrier"], r["loss_auc"], bar, auc))
    csv_out = os.path.join(TMP, fam + "_curve.csv")
    r = run("curve", os.path.join(base, "a"), os.path.join(base, "b"), "--eval",
            os.path.join(base, "eval.safetensors"), "--points", T, "--csv", csv_out,
            "--order", ",".join(map(str, pick[2])))
    check(r.returncode == 0, "%s: curve --order failed: %s" % (fam, r.stderr.strip()[-300:]))
    if r.returncode == 0:
        with open(csv_out) as f:
            lines = [ln.strip().split(",") for ln in f if not ln.startswith("#")]
        col = lines[0].index("order1_loss")
        loss = np.array([float(ln[col]) for ln in lines[1:]])
        bar = family_ref.barrier(loss)[0]
        check(abs(rows[pick[2]]["barrier"] - bar) <= 2e-6 + 1e-5 * abs(bar),
              "%s: landscape %.8g vs curve --order %.8g" % (fam, rows[pick[2]]["barrier"], bar))


def one_family(fam, seed):
    base, WA, WB, X, cfg, _ = gen_wide.write_pair(os.path.join(TMP, "rand"), fam, N=N, seed=seed)
    n = WA["gate"].shape[0]
    J, out = landscape(base, fam, SAMPLES[fam])
    if J is None:
        return
    check_sample(fam, J, out, n)
    check_numpy(fam, base, J, WA, WB, X, cfg, np.random.default_rng(seed))


def scrambled(fam, seed):
    base, WA, WB, X, cfg, pi = gen_wide.write_pair(os.path.join(TMP, "scr"), fam, N=N, seed=seed,
                                                   scramble=True)
    J, out = landscape(base, fam + "_scrambled", 16)
    if J is None:
        return
    undo = [int(v) for v in np.argsort(pi)]  # B's slot undo[i] holds A's expert i
    for m in ("gate", "expert"):
        M = J["methods"][m]
        check(M["order"] == undo, "%s scrambled: the %s order does not undo the scramble" % (fam, m))
        check(M["barrier"] is not None and abs(M["barrier"]) <= 1e-6,
              "%s scrambled: %s barrier %s, want 0" % (fam, m, M["barrier"]))
        check(M["rank"] == 1 and M["rank_estimate"] == 1 and M["rank_percentile_ci95"][0] == 0,
              "%s scrambled: %s rank %s, estimate %s, CI %s" %
              (fam, m, M["rank"], M["rank_estimate"], M["rank_percentile_ci95"]))
    # the best and worst rows are the sample's; the exact alignment lies below its best
    best_sampled = min(o["barrier"] for o in J["orders"])
    check(best_sampled > 1e-6 and "best, worst: of the 16 sampled orders; a chosen order lies below "
          "the sample's best" in out, "%s scrambled: the text says best/worst are the sample's: %r" %
          (fam, [l for l in out.splitlines() if l.startswith("best")]))


def main():
    for fam, seed in (("olmoe", 11), ("deepseek_v3", 12)):
        one_family(fam, seed)
        scrambled(fam, seed + 10)
    return testutil.summary("test_wide")


if __name__ == "__main__":
    sys.exit(main())
