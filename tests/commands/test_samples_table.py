#!/usr/bin/env python3
"""test_samples_table.py - sample-checkpoints/README.md's per-pair tables are
what `moescope study` measures now. For each set, a fresh

    moescope study SET/seed1.safetensors ... SET/seed4.safetensors --eval SET/eval.safetensors --json F

and every cell of the set's README table (every pair, the mean row) and of
the summary table compared at the printed precision. By default the 4-expert
sets (a second each); `--all` adds teacher8 and dense8 (40320 orders per
pair: minutes of CPU). Every set of make_samples.sh must have its table with
all 6 pairs of its 4 seeds (no seed left out)."""
import itertools
import json
import math
import os
import re
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
S = os.path.join(ROOT, "sample-checkpoints")
FAST = ["teacher4", "dense4", "topk4", "shared4"]
SLOW = ["teacher8", "dense8"]
PAIRS = ["%d–%d" % p for p in itertools.combinations([1, 2, 3, 4], 2)]


def readme_block():
    text = open(os.path.join(S, "README.md"), encoding="utf-8").read()
    m = re.search(r"<!-- study tables begin -->(.*?)<!-- study tables end -->", text, re.S)
    check(m is not None, "README has the study tables block")
    return m.group(1) if m else ""


def table_rows(block, name):
    """{'1–2': [cells], ..., 'mean': [cells]} of the set's table; header cells under ''."""
    m = re.search(r"`%s/` \(n = (\d+), (\d+) orders\):\n\n(.*?)(?:\n\n|\n?$)" % name, block, re.S)
    check(m is not None, "README has a table for %s" % name)
    if not m:
        return {}
    lines = m.group(3).strip().splitlines()
    rows = {"": [c.strip() for c in lines[0].strip("|").split("|")]}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def summary_rows(block):
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 6 and cells[0] in FAST + SLOW:
            rows[cells[0]] = cells[1:]
    return rows


def study(name, work):
    out = os.path.join(work, name + ".json")
    seeds = [os.path.join(S, name, "seed%d.safetensors" % s) for s in (1, 2, 3, 4)]
    # 6 pairs of full landscapes about the numbers alone: the release build (the
    # sanitizers see the same code in test_study)
    r = run("study", *seeds, "--eval", os.path.join(S, name, "eval.safetensors"), "--points", 25,
            "-q", "--json", out, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "study %s: %s" % (name, r.stderr.strip()[-300:]))
    return json.load(open(out)) if r.returncode == 0 else None


def expected_cells(J):
    """The table's cells from the study JSON, each at the README's precision."""
    N = math.factorial(J["n"])
    cls = J["pairs"][0]["endpoints"]["acc_a"] is not None
    pct = lambda v: "%.1f%%" % (100 * v)  # noqa: E731
    rows = {}
    for p in J["pairs"]:
        a, b = (os.path.basename(x)[4:-12] for x in (p["a"], p["b"]))
        e, g, ep = p["methods"]["expert"], p["methods"]["gate"], p["endpoints"]
        rows["%s–%s" % (a, b)] = (["%.4f" % ep["loss_a"], "%.4f" % ep["loss_b"]]
                                  + ([pct(ep["acc_a"]), pct(ep["acc_b"])] if cls else [])
                                  + ["%.4f" % p["naive"]["barrier"], "%.4f" % p["skip_order"]["barrier"],
                                     "%.4f (%d/%d)" % (e["barrier"], e["rank"], N),
                                     "%.4f (%d/%d)" % (g["barrier"], g["rank"], N),
                                     "%.4f" % p["best"]["barrier"], "%.4f" % p["worst"]["barrier"],
                                     "%d" % p["zero_tied"]])
    # the mean row: means over the pairs, computed here from the pairs
    cols = list(zip(*[[p["endpoints"]["loss_a"], p["endpoints"]["loss_b"],
                       p["endpoints"]["acc_a"] or 0, p["endpoints"]["acc_b"] or 0,
                       p["naive"]["barrier"], p["skip_order"]["barrier"],
                       p["methods"]["expert"]["barrier"], p["methods"]["expert"]["rank"],
                       p["methods"]["gate"]["barrier"], p["methods"]["gate"]["rank"],
                       p["best"]["barrier"], p["worst"]["barrier"], p["zero_tied"]] for p in J["pairs"]]))
    m = [sum(c) / len(c) for c in cols]
    rows["mean"] = (["%.4f" % m[0], "%.4f" % m[1]] + ([pct(m[2]), pct(m[3])] if cls else [])
                    + ["%.4f" % m[4], "%.4f" % m[5], "%.4f (%.2f)" % (m[6], m[7]),
                       "%.4f (%.2f)" % (m[8], m[9]), "%.4f" % m[10], "%.4f" % m[11], "%.2f" % m[12]])
    # the summary row: ratios of the mean barriers, mean rank, orders tied at 0
    zeros, total = sum(p["zero_tied"] for p in J["pairs"]), N * len(J["pairs"])
    summary = ["%.1f" % (m[5] / m[6]), "%.1f" % (m[4] / m[6]),
               "%.2f of %d (best %.3g%%)" % (m[7], N, 100 * m[7] / N), "%d of %d" % (zeros, total)]
    met = m[5] >= 5 * m[6] and m[4] >= 10 * m[6] and m[7] <= 0.1 * N and zeros < 0.01 * total
    return rows, summary, met


def compare(name, block, work):
    want = table_rows(block, name)
    check(sorted(k for k in want if k not in ("", "mean")) == sorted(PAIRS) and "mean" in want,
          "%s: a row for every pair of seeds 1-4 and the mean" % name)
    J = study(name, work)
    if not J or not want:
        return
    got, summary, met = expected_cells(J)
    for pair, cells in got.items():
        check(want.get(pair) == cells, "%s %s: README %s vs study %s" % (name, pair, want.get(pair), cells))
    srow = summary_rows(block).get(name)
    check(srow is not None and srow[:4] == summary, "%s summary: README %s vs study %s" % (name, srow, summary))
    if srow:
        check(srow[4].startswith("all met") == met, "%s: targets column '%s' (met: %s)" % (name, srow[4], met))


def main():
    block = readme_block()
    sets = re.findall(r"^teacher_set ([a-z0-9]+) |^variant ([a-z0-9]+) ",
                      open(os.path.join(S, "make_samples.sh")).read(), re.M)
    sets = sorted(a or b for a, b in sets)
    check(sets == sorted(FAST + SLOW), "the sets of make_samples.sh (%s)" % sets)
    for name in sets:
        check(bool(table_rows(block, name)) and name in summary_rows(block), "%s has a table and a summary row" % name)
    with tempfile.TemporaryDirectory() as work:
        for name in FAST + (SLOW if "--all" in sys.argv else []):
            compare(name, block, work)
    return testutil.summary("test_samples_table")


if __name__ == "__main__":
    sys.exit(main())
