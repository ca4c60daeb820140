#!/usr/bin/env python3
"""test_samples_table.py - sample-checkpoints/README.md's teacher-student table is
what `moescope landscape` measures now: every row of teacher4 (and with --all,
teacher8) recomputed from the committed files and compared at the printed
precision, the mean row included."""
import itertools
import json
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
S = os.path.join(ROOT, "sample-checkpoints")
WORK = tempfile.mkdtemp(prefix="moescope-table-")


def readme_rows(name):
    """The rows of the set's table: {'1–2': [cells], ..., 'mean': [cells]}."""
    text = open(os.path.join(S, "README.md"), encoding="utf-8").read()
    m = re.search(r"`%s/` \(n = \d+, \d+ orders\):\n\n(.*?)\n\n" % name, text, re.S)
    check(m is not None, f"README has no table for {name}")
    rows = {}
    for line in (m.group(1).splitlines() if m else [])[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = cells[1:]
    return rows


def measured(name):
    d = os.path.join(S, name)
    out, rows = os.path.join(WORK, "ls.json"), {}
    for a, b in itertools.combinations([1, 2, 3, 4], 2):
        r = run("landscape", f"{d}/seed{a}.safetensors", f"{d}/seed{b}.safetensors", "--eval",
                f"{d}/eval.safetensors", "--json", out)
        check(r.returncode == 0, f"landscape {name} {a}-{b}: {r.stderr.strip()}")
        if r.returncode:
            return None
        J = json.load(open(out))
        N, e, g = len(J["orders"]), J["methods"]["expert"], J["methods"]["gate"]
        rows[f"{a}–{b}"] = [J["endpoints"]["loss_a"], J["endpoints"]["loss_b"], J["naive"]["barrier"],
                            J["skip_order"]["barrier"], e["barrier"], e["rank"], g["barrier"], g["rank"],
                            J["best"]["barrier"], sum(1 for o in J["orders"] if o["barrier"] <= 0), N]
    return rows


def fmt(v):
    la, lb, nv, sk, eb, er, gb, gr, best, zero, N = v
    return [f"{la:.4f}", f"{lb:.4f}", f"{nv:.4f}", f"{sk:.4f}", f"{eb:.4f} ({er}/{N})",
            f"{gb:.4f} ({gr}/{N})", f"{best:.4f}", f"{zero}"]


def compare(name):
    want, got = readme_rows(name), measured(name)
    if not got or not want:
        return
    for pair, v in got.items():
        check(want.get(pair) == fmt(v), f"{name} {pair}: README {want.get(pair)} vs measured {fmt(v)}")
    cols = list(zip(*got.values()))
    mean = lambda k: sum(cols[k]) / len(cols[k])  # noqa: E731
    row = [f"{mean(0):.4f}", f"{mean(1):.4f}", f"{mean(2):.4f}", f"{mean(3):.4f}",
           f"{mean(4):.4f} ({mean(5):.2f})", f"{mean(6):.4f} ({mean(7):.2f})", f"{mean(8):.4f}",
           f"{sum(cols[9])}"]
    check(want.get("mean") == row, f"{name} mean: README {want.get('mean')} vs measured {row}")


compare("teacher4")
if "--all" in sys.argv:
    compare("teacher8")
sys.exit(testutil.summary("test_samples_table"))
