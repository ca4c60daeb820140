#!/usr/bin/env python3
"""test_teaching.py - what the samples and the teaching commands must show.

1. The teacher-student samples show the paper's effect on every seed pair:
   skip-order (identity + weight matching) far above the full alignment,
   naive further still, the expert method's order in the best 10%, (almost)
   no orders tied at barrier 0.
2. Gate centring: a scramble of seed 2 with a large gate translation, against
   seed 1: the uncentred gate cost picks another order than the centred one,
   and the centred order has the lower barrier.
3. A pure scramble of A, however large its translation, is undone by either
   gate cost (the matched rows differ by exactly the shift c, and by
   convexity no other order can do better), and `align` says that the order
   found is the scramble's inverse, and what is left of the gate (a shift of
   the size the numpy check measures, nothing per row)."""
import itertools
import json
import os
import re
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
S = os.path.join(ROOT, "sample-checkpoints")
WORK = tempfile.mkdtemp(prefix="moescope-teaching-")


def landscape(d, a, b):
    out = os.path.join(WORK, "ls.json")
    # six full landscapes about the numbers alone: the release build (the sanitizers see
    # the same code in test_landscape and below)
    r = run("landscape", f"{d}/seed{a}.safetensors", f"{d}/seed{b}.safetensors", "--eval",
            f"{d}/eval.safetensors", "--json", out, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, f"landscape {d} {a}-{b}: {r.stderr.strip()}")
    return json.load(open(out)) if r.returncode == 0 else None


def test_teacher4():
    d = os.path.join(S, "teacher4")
    rows = []
    for a, b in itertools.combinations([1, 2, 3, 4], 2):
        J = landscape(d, a, b)
        if J is None:
            return
        zero = sum(1 for o in J["orders"] if o["barrier"] <= 0)
        rows.append((J["naive"]["barrier"], J["skip_order"]["barrier"],
                     J["methods"]["expert"]["barrier"], J["methods"]["expert"]["rank"],
                     zero, len(J["orders"])))
    naive, skip, full, rank, zero, total = (np.array(c, dtype=float) for c in zip(*rows))
    check(skip.mean() >= 5 * full.mean(), f"teacher4: skip {skip.mean():.4g} < 5x full {full.mean():.4g}")
    check(naive.mean() >= 10 * full.mean(), f"teacher4: naive {naive.mean():.4g} < 10x full {full.mean():.4g}")
    check(rank.mean() <= 0.1 * total[0], f"teacher4: expert mean rank {rank.mean()} not in the best 10%")
    check(zero.sum() < 0.01 * total.sum(), f"teacher4: {zero.sum()} orders tied at 0")


def order_of(args):
    out = os.path.join(WORK, "cost.json")
    r = run("cost", *args, "--method", "gate", "--json", out)
    check(r.returncode == 0, f"cost {args}: {r.stderr.strip()}")
    return json.load(open(out))["order"] if r.returncode == 0 else None


def test_centring_matters():
    d = os.path.join(S, "topk4")
    A, B = f"{d}/seed1.safetensors", f"{d}/seed2.safetensors"
    scr = os.path.join(WORK, "scr2.safetensors")
    r = run("scramble", B, "-o", scr, "--seed", 2, "--translate-scale", 10)
    check(r.returncode == 0 and "10 x the rows' RMS" in r.stdout, f"scramble --translate-scale: {r.stdout}{r.stderr}")
    unc = order_of([A, scr, "--no-center"])
    cen = order_of([A, scr])
    if unc is None or cen is None:
        return
    check(unc != cen, f"the translation did not fool the uncentred cost: {unc}")
    r = run("curve", A, scr, "--eval", f"{d}/eval.safetensors", "--order", ",".join(map(str, unc)),
            "--order", ",".join(map(str, cen)))
    check(r.returncode == 0, f"curve: {r.stderr.strip()}")
    bars = {}
    for line in r.stdout.splitlines():
        parts = line.split()  # name, the n entries of the order, barrier, ...
        # the curve table's rows; the intervals' table below has rows of these names too
        if parts and parts[0] in ("order1", "order2") and parts[0] not in bars and len(parts) > 1 + len(unc):
            bars[parts[0]] = float(parts[1 + len(unc)])
    check(len(bars) == 2 and bars["order2"] < bars["order1"],
          f"the centred order is not better: {bars}")


def test_pure_scramble():
    d = os.path.join(S, "teacher4")
    A = f"{d}/seed1.safetensors"
    scr = os.path.join(WORK, "scr1.safetensors")
    r = run("scramble", A, "-o", scr, "--seed", 7, "--translate-scale", 50)
    check(r.returncode == 0, f"scramble: {r.stderr.strip()}")
    meta = oracle.read_safetensors(scr)[1]
    pi = [int(v) for v in meta["moescope.scramble.order"].split()]
    inv = [0] * len(pi)
    for i, p in enumerate(pi):
        inv[p] = i
    check(pi != list(range(len(pi))), "scramble seed 7 gave the identity order")
    for extra in ([], ["--no-center"]):
        check(order_of([A, scr, *extra]) == inv, f"gate cost {extra} did not recover pi^-1 = {inv}")
    out = os.path.join(WORK, "aligned.safetensors")
    r = run("align", A, scr, "-o", out)
    check(r.returncode == 0 and "is its inverse" in r.stdout and "B is a scramble of A (seed 7)" in r.stdout,
          f"align does not say it undid the scramble: {r.stdout}")
    m = re.search(r"common shift of norm ([0-9.e+-]+).*and by ([0-9.e+-]+) per row", r.stdout)
    check(m is not None, f"align does not explain the gate shift: {r.stdout}")
    if m and r.returncode == 0:
        a = oracle.read_safetensors(A)[0]
        b = oracle.read_safetensors(out)[0]
        rows = lambda t: np.concatenate([t["moe.gate.weight"], t["moe.gate.bias"][:, None]], 1).astype(np.float64)  # noqa: E731
        diff = rows(b) - rows(a)
        c = diff.mean(0)
        check(abs(float(m.group(1)) - np.linalg.norm(c)) <= 1e-3 * np.linalg.norm(c),
              f"shift {m.group(1)} vs numpy {np.linalg.norm(c)}")
        check(float(m.group(2)) < 1e-4 * np.linalg.norm(c), f"per-row residue {m.group(2)}")
    dj = os.path.join(WORK, "diag.json")
    r = run("diagnose", A, scr, "--eval", f"{d}/eval.safetensors", "--json", dj)
    check(r.returncode == 0 and "B is a scramble of A (seed 7)" in r.stdout and "is its inverse" in r.stdout,
          f"diagnose does not say it undid the scramble: {r.stdout}")
    if r.returncode == 0:
        fs = [f for f in json.load(open(dj)).get("findings", []) if f.get("code") == "scramble_record"]
        check(len(fs) == 1 and fs[0]["severity"] == "ok", f"diagnose JSON scramble_record: {fs}")
    r = run("align", A, scr, "-o", out, "--no-order")
    check(r.returncode == 0 and "NOT its inverse" in r.stdout, f"--no-order: {r.stdout}")
    r = run("align", A, f"{d}/seed2.safetensors", "-o", out)
    check(r.returncode == 0 and "scramble" not in r.stdout, f"a plain pair claims a scramble: {r.stdout}")


test_teacher4()
test_centring_matters()
test_pure_scramble()
sys.exit(testutil.summary("test_teaching"))
