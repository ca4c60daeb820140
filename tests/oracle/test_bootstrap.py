"""tests/oracle/test_bootstrap.py - the error bars (bootstrap intervals over the
evaluation set's units) against numpy (bootstrap_oracle.py replays the resampling).

  - a network's landscape (a small random GPT-2 pair, tests/lib/gen_gpt2.py): the JSON's
    per-sequence losses ("unit_loss") average to each curve's loss, the end points' are
    numpy's loss of each sequence alone (gpt2_ref), and every order's barrier_ci95 and
    each method's rank_ci95 are the numpy replay's; every interval holds its estimate;
    the text output gives each method's rank interval;
  - an evaluation set of one sequence repeated: every interval has width ~0;
  - `curve --json` on a layer (sample-checkpoints/dense4): per-sample losses average to
    the loss, barrier_ci95 is the replay's, and the text prints the intervals;
  - a layer's landscape (dense4, 24 orders): every order's per-sample losses average
    to its table loss's barrier, every order's barrier_ci95 and each method's
    rank_ci95 are the numpy replay's and hold their estimates, the text gives the
    rank intervals; each sample four times over: the same barriers, intervals half as wide;
  - `study` of three dense4 seeds: each pair's named intervals are curve's, each
    method's rank interval is the pair's landscape's, and the barriers' mean +- std
    over the pairs are numpy's.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import bootstrap_oracle as bo  # noqa: E402
import oracle  # noqa: E402
import gen_gpt2  # noqa: E402
import gpt2_ref  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_boot_")
T = 5


def make_pool(name, repeat=False):
    cfg = gen_gpt2.config()
    back = gen_gpt2.backbone(cfg, 9)
    moe1 = gen_gpt2.moe_blocks(cfg, 1)
    moe2 = gen_gpt2.perturbed_copy(cfg, moe1, 2)[0]
    ids = gen_gpt2.teacher_ids(cfg, {**back, **moe1}, 2, N=8, T=10)
    if repeat:
        ids = np.repeat(ids[:1], 6, axis=0)
    out = os.path.join(TMP, name)
    gen_gpt2.write_pool(out, cfg, back, {"seed1": moe1, "seed2": moe2}, ids)
    return out, ids


def landscape(pool):
    js = os.path.join(pool, "ls.json")
    r = run("landscape", os.path.join(pool, "seed1"), os.path.join(pool, "seed2"), "--eval",
            os.path.join(pool, "eval.safetensors"), "--points", T, "--json", js, "--no-proxy")
    check(r.returncode == 0, "landscape runs: %s" % r.stderr.strip())
    return (json.load(open(js)), r.stdout) if r.returncode == 0 else (None, "")


def close(a, b, tol=1e-9):
    return abs(a - b) <= tol * max(1.0, abs(b))


def check_curve(name, c, C):
    U = np.array(c["unit_loss"])
    check(np.allclose(U.mean(1), c["loss"], rtol=1e-12, atol=1e-12), "%s: unit losses average to the loss" % name)
    lo, hi = bo.interval(bo.barriers(U, C), c["barrier"])
    got = c["barrier_ci95"]
    check(close(got[0], lo) and close(got[1], hi), "%s: barrier_ci95 %s vs numpy [%.9g, %.9g]" % (name, got, lo, hi))
    check(got[0] <= c["barrier"] <= got[1], "%s: the interval holds the barrier" % name)


def test_network():
    pool, ids = make_pool("net")
    J, out = landscape(pool)
    if not J:
        return
    b = J["bootstrap"]
    check(b.get("units") == "sequences" and b.get("count") == len(ids) and b.get("resamples") == bo.RESAMPLES
          and b.get("level") == bo.LEVEL and b.get("seed") == bo.SEED and b.get("unit_loss_per_order"),
          "the resampling is described: %s" % b)
    C = bo.counts(len(ids))
    ck = gpt2_ref.load(os.path.join(pool, "seed1"))
    U = np.array(J["naive"]["unit_loss"])
    own = [gpt2_ref.evaluate(ck, ids[i:i + 1])["loss"] for i in range(len(ids))]
    check(np.allclose(U[0], own, rtol=1e-5), "A's per-sequence losses are numpy's: %s vs %s" % (U[0], own))
    for name in ("naive", "skip_order"):
        check_curve(name, J[name], C)
    rows = J["orders"]
    bars = {tuple(o["order"]): bo.barriers(o["unit_loss"], C) for o in rows}
    for o in rows:
        lo, hi = bo.interval(bars[tuple(o["order"])], o["barrier"])
        check(close(o["barrier_ci95"][0], lo) and close(o["barrier_ci95"][1], hi),
              "order %s: barrier_ci95 %s vs numpy [%.9g, %.9g]" % (o["order"], o["barrier_ci95"], lo, hi))
    allb = np.array(list(bars.values()))  # (orders, R)
    for m in ("gate", "expert"):
        M = J["methods"][m]
        check_curve(m, M, C)
        mb = bo.barriers(M["unit_loss"], C)
        ranks = 1 + (allb < (mb - J["tau"])[None]).sum(0)
        lo, hi = bo.interval(ranks.astype(float), M["rank"])
        check(M["rank_ci95"] == [lo, hi], "%s: rank_ci95 %s vs numpy [%g, %g]" % (m, M["rank_ci95"], lo, hi))
        check("rank %d [%.0f, %.0f] of %d orders" % (M["rank"], lo, hi, len(rows)) in out,
              "%s: the text gives the rank interval" % m)
    check("error bars: 95% bootstrap intervals over the evaluation set's 8 sequences" in out,
          "the text names the error bars' units")


def test_identical_units():
    pool, _ = make_pool("same", repeat=True)
    J, _ = landscape(pool)
    if not J:
        return
    widths = [o["barrier_ci95"][1] - o["barrier_ci95"][0] for o in J["orders"]]
    widths += [J[k]["barrier_ci95"][1] - J[k]["barrier_ci95"][0] for k in ("naive", "skip_order")]
    check(max(widths) < 1e-6, "one sequence repeated: every interval ~0 wide (max %.3g)" % max(widths))
    for m in ("gate", "expert"):
        M = J["methods"][m]
        check(M["rank_ci95"] == [M["rank"], M["rank"]], "%s: rank interval a point: %s" % (m, M["rank_ci95"]))


def test_layer_curve():
    d = os.path.join(testutil.ROOT, "sample-checkpoints", "dense4")
    js = os.path.join(TMP, "curve.json")
    r = run("curve", os.path.join(d, "seed1.safetensors"), os.path.join(d, "seed2.safetensors"), "--points", 7,
            "--json", js)
    check(r.returncode == 0, "curve runs: %s" % r.stderr.strip())
    if r.returncode:
        return
    J = json.load(open(js))
    S = J["bootstrap"]["count"]
    check(J["bootstrap"]["units"] == "samples" and S > 1, "layer units are samples: %s" % J["bootstrap"])
    C = bo.counts(S)
    for name, c in J["curves"].items():
        check_curve(name, c, C)
        lo, hi = c["barrier_ci95"]
        check(any(ln.split()[:1] == [name] and abs(float(ln.split()[1]) - lo) < 1e-8 for ln in r.stdout.splitlines()),
              "%s: the text prints the interval" % name)


DENSE4 = os.path.join(testutil.ROOT, "sample-checkpoints", "dense4")


def layer_landscape(ev, tag):
    js = os.path.join(TMP, "layer_%s.json" % tag)
    r = run("landscape", os.path.join(DENSE4, "seed1.safetensors"), os.path.join(DENSE4, "seed2.safetensors"),
            "--eval", ev, "--points", T, "--json", js, "--csv", js + ".csv", binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "layer landscape (%s) runs: %s" % (tag, r.stderr.strip()))
    return (json.load(open(js)), r.stdout) if r.returncode == 0 else (None, "")


def order_widths(J):
    return np.array([o["barrier_ci95"][1] - o["barrier_ci95"][0] for o in J["orders"]])


def test_layer_landscape():
    """a layer's orders and ranks get intervals as a network's do, from every
    order's per-sample losses (the fused kernel keeps them)"""
    J, out = layer_landscape(os.path.join(DENSE4, "eval.safetensors"), "all")
    if not J:
        return
    b = J["bootstrap"]
    S = b.get("count")
    check(b.get("units") == "samples" and b.get("unit_loss_per_order") and S == 360,
          "the layer's resampling is described, per-order losses kept: %s" % b)
    C = bo.counts(S)
    rows = J["orders"]
    check(len(rows) == 24 and all("barrier_ci95" in o and "unit_loss" in o for o in rows),
          "every order of the 24 has its interval and per-sample losses")
    bars, bad = {}, []
    for o in rows:
        U = np.array(o["unit_loss"])
        # the plain evaluator's per-sample losses give the fused kernel's barrier (float32 sums)
        mean = U.mean(1)
        t = np.linspace(0, 1, T)
        est = (mean - ((1 - t) * mean[0] + t * mean[-1])).max()
        if abs(est - o["barrier"]) > 1e-4 * max(1.0, abs(o["barrier"])):
            bad.append(("estimate", o["order"], est, o["barrier"]))
        bars[tuple(o["order"])] = bo.barriers(U, C)
        lo, hi = bo.interval(bars[tuple(o["order"])], o["barrier"])
        if not (close(o["barrier_ci95"][0], lo) and close(o["barrier_ci95"][1], hi)):
            bad.append(("interval", o["order"], o["barrier_ci95"], (lo, hi)))
        if not o["barrier_ci95"][0] <= o["barrier"] <= o["barrier_ci95"][1]:
            bad.append(("holds", o["order"]))
    check(not bad, "every order: its losses give its barrier, its interval is numpy's and holds it: %s" % bad[:3])
    allb = np.array(list(bars.values()))
    for m in J["methods"]:
        M = J["methods"][m]
        mb = bo.barriers(M["unit_loss"], C)
        ranks = 1 + (allb < (mb - J["tau"])[None]).sum(0)
        lo, hi = bo.interval(ranks.astype(float), M["rank"])
        check(M["rank_ci95"] == [lo, hi], "%s: rank_ci95 %s vs numpy [%g, %g]" % (m, M["rank_ci95"], lo, hi))
        check(lo <= M["rank"] <= hi and 1 <= lo and hi <= 24, "%s: the rank interval holds the rank" % m)
        check("rank %d [%.0f, %.0f] of 24 orders" % (M["rank"], lo, hi) in out, "%s: the text gives it" % m)
    check(any(w > 0 for w in order_widths(J)), "the intervals have width")
    # the CSV: each order's interval in two columns, the JSON's
    import csv
    R = list(csv.DictReader(x for x in open(os.path.join(TMP, "layer_all.json.csv")) if not x.startswith("#")))
    ci = {tuple(o["order"]): o["barrier_ci95"] for o in rows}
    check(len(R) == 24 and all(close(float(x["barrier_ci95_" + e]), ci[tuple(int(v) for v in x["order"].split())][k], 1e-8)
                               for x in R for k, e in enumerate(("lo", "hi"))),
          "the CSV's barrier_ci95_lo, _hi are the JSON's")
    # each sample four times: the same estimates, four times the rows, intervals about
    # half as wide (1 / sqrt(N))
    ev, meta = oracle.read_safetensors(os.path.join(DENSE4, "eval.safetensors"))
    rep = os.path.join(TMP, "eval_x4.safetensors")
    oracle.write_safetensors(rep, {k: np.concatenate([v] * 4) for k, v in ev.items()}, meta)
    Q, _ = layer_landscape(rep, "x4")
    if Q:
        same = all(abs(a["barrier"] - b["barrier"]) <= 1e-4 * max(1.0, a["barrier"])
                   for a, b in zip(J["orders"], Q["orders"]))
        ratio = np.median(order_widths(Q) / np.maximum(order_widths(J), 1e-12))
        check(Q["bootstrap"]["count"] == 4 * S and same and 0.35 < ratio < 0.65,
              "four times the rows, the same barriers: intervals %.2f times as wide" % ratio)


def test_layer_study():
    """a layer pool's study: each pair's named barriers with their intervals (those of
    `curve --json` for the pair, to float32 rounding: the study's come from the fused
    kernel), mean +- std over the pairs as numpy's"""
    d = os.path.join(testutil.ROOT, "sample-checkpoints", "dense4")
    seeds = [os.path.join(d, "seed%d.safetensors" % i) for i in (1, 2, 3)]
    js = os.path.join(TMP, "study.json")
    r = run("study", *seeds, "--points", 7, "--json", js)
    check(r.returncode == 0, "study runs: %s" % r.stderr.strip())
    if r.returncode:
        return
    J = json.load(open(js))
    check(J["bootstrap"].get("units") == "samples", "the study names its units: %s" % J["bootstrap"])
    cj = os.path.join(TMP, "pair.json")
    run("curve", seeds[0], seeds[1], "--points", 7, "--json", cj)
    C = json.load(open(cj))["curves"]
    P = J["pairs"][0]
    # the study's from the landscape's fused kernel, curve's the plain evaluation: float32 apart
    for name, key in (("naive", "naive"), ("skip_order", "skip_order")):
        check(all(close(a, b, 1e-6) for a, b in zip(P[key]["barrier_ci95"], C[name]["barrier_ci95"])),
              "pair 1-2 %s: the study's interval %s is curve's %s" % (name, P[key]["barrier_ci95"],
                                                                     C[name]["barrier_ci95"]))
    for p in J["pairs"]:
        for key in ("naive", "skip_order"):
            lo, hi = p[key]["barrier_ci95"]
            check(lo <= p[key]["barrier"] <= hi, "%s: the interval holds the barrier" % key)
    for key, col in (("naive", "naive"), ("methods.expert", "expert")):
        v = [p["naive"]["barrier"] if key == "naive" else p["methods"]["expert"]["barrier"] for p in J["pairs"]]
        want = "%s %.4f +- %.4f" % (col, np.mean(v), np.std(v, ddof=1))
        check(want in r.stdout, "mean +- std as the paper prints it: %r" % want)
    check("95% bootstrap intervals over the evaluation set's" in r.stdout, "the per-pair intervals are printed")


def test_work_bound():
    """past 2^25 per-sample losses (9! orders x 6 points x 16 samples) the orders get no
    intervals by default (seconds, not minutes), the named curves keep theirs, and the
    text says why and names --all-error-bars; at 3 points (half of it) every order has one"""
    t, ev = os.path.join(TMP, "teacher9.safetensors"), os.path.join(TMP, "eval9.safetensors")
    rel = testutil.MOESCOPE_REL
    r = run("train", "--make-teacher", "-o", t, "--embed-dim", "4", "--classes", "4", "--n", "9", "--h", "4",
            "--samples", "80", "--seed", "3", "--quiet", binary=rel)
    ab = []
    for s in (1, 2):
        p = os.path.join(TMP, "student9_%d.safetensors" % s)
        r2 = run("train", "--head", t, "-o", p, "--seed", s, "--n", "9", "--h", "4", "--epochs", "20", "--quiet",
                 "--eval-out", ev, binary=rel)
        ab.append(p)
        r = r if r.returncode else r2
    check(r.returncode == 0, "n = 9 pair trained: %s" % r.stderr.strip()[-300:])
    if r.returncode:
        return
    for T, over in ((6, True), (3, False)):
        r = run("landscape", ab[0], ab[1], "--eval", ev, "--points", T, "--exhaustive", "-q", binary=rel)
        check(r.returncode == 0, "%d points: runs: %s" % (T, r.stderr.strip()[-300:]))
        no = "no rank intervals: more than 33554432 per-unit losses" in r.stdout
        check(no == over and ("--all-error-bars" in r.stdout) == over,
              "%d points: %s" % (T, "the text says why, naming --all-error-bars" if over else "rank intervals"))
        check((" of 362880 orders" in r.stdout) != over,
              "%d points: the methods' rank intervals among 362880 orders %s" % (T, "absent" if over else "given"))
        check("naive       barrier" in r.stdout, "%d points: the named curves keep their intervals" % T)


def peak_rss_mb(*args):
    """(the completed process, its peak resident memory in MB): a python of its own,
    whose only child it is, reads it"""
    import subprocess
    code = ("import resource, subprocess, sys\n"
            "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
            "sys.stdout.write(r.stdout); sys.stderr.write(r.stderr)\n"
            "sys.stderr.write('\\nPEAK_KB %d\\n' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
            "sys.exit(r.returncode)")
    r = subprocess.run([sys.executable, "-c", code] + [str(a) for a in args], capture_output=True, text=True)
    kb = [int(x.split()[1]) for x in r.stderr.splitlines() if x.startswith("PEAK_KB ")]
    return r, (kb[-1] / 1024.0 if kb else float("inf"))


def test_study_stream():
    """study streams each order's losses into its error bars as landscape does: dense8's
    40320 orders at 3 points on 200 of its samples (24 M losses, a 194 MB table before)
    give each method's rank interval, landscape's, the named curves' intervals the numpy
    replay's of curve's per-sample losses, in less memory than the table; on all 360
    samples (43.5 M, past 2^25) the text and the JSON say why there are none, and
    --all-error-bars gives them"""
    d8 = os.path.join(testutil.ROOT, "sample-checkpoints", "dense8")
    a, b = (os.path.join(d8, "seed%d.safetensors" % s) for s in (1, 2))
    ev, meta = oracle.read_safetensors(os.path.join(d8, "eval.safetensors"))
    e200 = os.path.join(TMP, "dense8_200.safetensors")
    oracle.write_safetensors(e200, {k: v[:200] for k, v in ev.items()}, meta)
    rel = testutil.MOESCOPE_REL
    js, lj, cj = (os.path.join(TMP, f) for f in ("st8.json", "ls8.json", "cv8.json"))
    r, peak = peak_rss_mb(rel, "study", a, b, "--eval", e200, "--points", 3, "--json", js, "-q")
    check(r.returncode == 0, "study on 200 samples runs: %s" % r.stderr.strip()[-300:])
    r2 = run("landscape", a, b, "--eval", e200, "--points", 3, "--json", lj, "-q", binary=rel)
    r3 = run("curve", a, b, "--eval", e200, "--points", 3, "--json", cj, binary=rel)
    check(r2.returncode == 0 and r3.returncode == 0, "landscape and curve run: %s" % (r2.stderr + r3.stderr)[-300:])
    if r.returncode or r2.returncode or r3.returncode:
        return
    table_mb = 40320 * 3 * 200 * 8 / 1048576.0
    check(peak < table_mb, "study's peak memory %.0f MB, below the %.0f MB table it held before" % (peak, table_mb))
    J, L, Cv = json.load(open(js)), json.load(open(lj)), json.load(open(cj))["curves"]
    check(J["bootstrap"].get("count") == 200 and "orders_and_ranks" not in J["bootstrap"],
          "the study's intervals over the 200 samples: %s" % J["bootstrap"])
    P = J["pairs"][0]
    for m in L["methods"]:
        got, want = P["methods"][m].get("rank_ci95"), L["methods"][m].get("rank_ci95")
        check(got is not None and got == want, "%s: the study's rank_ci95 %s is landscape's %s" % (m, got, want))
    C = bo.counts(200)
    for name, key in (("naive", "naive"), ("skip_order", "skip_order")):
        lo, hi = bo.interval(bo.barriers(np.array(Cv[name]["unit_loss"]), C), Cv[name]["barrier"])
        got = P[key]["barrier_ci95"]
        check(close(got[0], lo, 1e-6) and close(got[1], hi, 1e-6),
              "%s: the study's interval %s is numpy's [%.9g, %.9g] from curve's losses" % (name, got, lo, hi))
    # all 360 samples: past the bound by default, every rank interval with --all-error-bars
    for extra in ((), ("--all-error-bars",)):
        r = run("study", a, b, "--points", 3, "--json", js, *extra, binary=rel)
        check(r.returncode == 0, "%s: runs: %s" % (extra, r.stderr.strip()[-300:]))
        if r.returncode:
            continue
        J = json.load(open(js))
        why = J["bootstrap"].get("orders_and_ranks", "")
        ranks = [J["pairs"][0]["methods"][m].get("rank_ci95") for m in J["pairs"][0]["methods"]]
        if extra:
            check(not why and all(x and x[0] <= p["rank"] <= x[1] for x, p in
                                  zip(ranks, J["pairs"][0]["methods"].values())),
                  "--all-error-bars: every method's rank interval, holding its rank: %s" % ranks)
        else:
            check("more than 33554432 per-unit losses" in why and "--all-error-bars" in why and
                  not any(ranks), "past 2^25: no rank intervals, the JSON says why: %r" % why)
            check("(no rank intervals for 1 of 1 pair: more than 33554432 per-unit losses" in r.stdout,
                  "past 2^25: the text says why")


sys.exit(testutil.run_tests("test_bootstrap", [test_network, test_identical_units, test_layer_curve,
                                               test_layer_landscape, test_layer_study, test_work_bound,
                                               test_study_stream],
                            TMP))
