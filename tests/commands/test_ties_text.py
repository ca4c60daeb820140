"""tests/commands/test_ties_text.py - what the text reports say about ties, pairs and
L-hat:

  * landscape: the rank column shows the tie class of every method whose tied count
    is above 1 ("1/24 (3 tied)"), and of the best and worst rows; the worst order of
    a set whose 24 orders all tie is rank 1 (24 tied), never "24";
  * study: the text and LaTeX tables give the tie class of both methods (columns
    "tied g" and "tied e", as the JSON has them); pair labels are whole (two long
    names that agree in their first 24 characters stay apart), and two checkpoints
    with the same file name in different folders are named by their paths;
  * L-hat against the median order (l_hat_median): B with its experts relabelled (a
    pure permutation: the same function, the same set of barriers) moves L-hat,
    which divides by the identity order's barrier, but not l_hat_median; the text of
    landscape and study print it."""
import json
import os
import re
import shutil
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
D4 = os.path.join(ROOT, "sample-checkpoints", "dense4")
D8 = os.path.join(ROOT, "sample-checkpoints", "dense8")
TMP = tempfile.mkdtemp(prefix="moescope_ties_text_")


def p(*x):
    return os.path.join(TMP, *x)


def relabel(src, dst, perm):
    """src with its experts renumbered: slot perm.index(i) holds expert i (gate rows too)."""
    t, meta = oracle.read_safetensors(src)
    out = {}
    for k, v in t.items():
        if k.startswith("moe.experts."):
            i, rest = int(k.split(".")[2]), k.split(".", 3)[3]
            out["moe.experts.%d.%s" % (perm.index(i), rest)] = v
        else:
            out[k] = v
    out["moe.gate.weight"] = t["moe.gate.weight"][perm]
    if "moe.gate.bias" in t:
        out["moe.gate.bias"] = t["moe.gate.bias"][perm]
    oracle.write_safetensors(dst, out, meta)


def row(text, name):
    return next((ln for ln in text.splitlines() if ln.startswith(name + " ")), "")


def test_landscape():
    a, b, e = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
    r = run("landscape", a, b, "--eval", e, "--json", p("l.json"))
    check(r.returncode == 0, "landscape: %s" % r.stderr)
    J = json.load(open(p("l.json")))
    for m in ("gate", "expert"):
        tied, rank = J["methods"][m]["tied"], J["methods"][m]["rank"]
        want = "%d/24 (%d tied)" % (rank, tied) if tied > 1 else "%d/24" % rank
        check(want in row(r.stdout, m), "landscape %s row shows '%s': %s" % (m, want, row(r.stdout, m)))
    bars = sorted(o["barrier"] for o in J["orders"])
    nbest = sum(1 for x in bars if abs(x - bars[0]) <= J["tau"])
    check(("1 (%d tied)" % nbest if nbest > 1 else " 1 ") in row(r.stdout, "best"), "best row: %s" % row(r.stdout, "best"))
    # every order the same function: all 24 tie, and the worst is rank 1 of them
    gen_ckpt.write_one_expert(b, p("one.safetensors"))
    r = run("landscape", a, p("one.safetensors"), "--eval", e, "--json", p("l1.json"))
    check(r.returncode == 0, "landscape (all tied): %s" % r.stderr)
    J1 = json.load(open(p("l1.json")))
    bs = [o["barrier"] for o in J1["orders"]]
    check(max(bs) - min(bs) <= J1["tau"], "all 24 barriers tie: %g..%g" % (min(bs), max(bs)))
    w = row(r.stdout, "worst")
    check("1 (24 tied)" in w and not re.search(r"\b24\s+-\s*$", w), "worst of an all-tied set: %s" % w)


def test_study():
    # long names that agree in their first 24 characters, and two seed1 in two folders
    names = ["wine-quality-red-classifier-seed-%d.safetensors" % i for i in (1, 2)]
    shutil.copy(os.path.join(D8, "seed1.safetensors"), p(names[0]))
    shutil.copy(os.path.join(D8, "seed4.safetensors"), p(names[1]))
    os.makedirs(p("x"))
    os.makedirs(p("y"))
    shutil.copy(os.path.join(D8, "seed2.safetensors"), p("x", "seed1.safetensors"))
    shutil.copy(os.path.join(D8, "seed3.safetensors"), p("y", "seed1.safetensors"))
    pool = [p(names[0]), p(names[1]), p("x", "seed1.safetensors"), p("y", "seed1.safetensors")]
    r = run("study", *pool, "--eval", os.path.join(D8, "eval.safetensors"), "--points", 3, "--json", p("s.json"),
            "--latex", p("s.tex"))
    check(r.returncode == 0, "study: %s" % r.stderr[-300:])
    if r.returncode:
        return
    J = json.load(open(p("s.json")))
    lines = r.stdout.splitlines()
    # the second table: the ranks (the first holds the barriers)
    ranks_at = next((i for i, ln in enumerate(lines) if ln.startswith("ranks (")), len(lines) - 2)
    head = lines[ranks_at + 1]
    cols = head.split()
    check("tied g" in head and "tied e" in head, "study text: a tied column for each method: %s" % head)
    want_labels = {(os.path.basename(pr["a"]).replace(".safetensors", ""), os.path.basename(pr["b"]).replace(
        ".safetensors", "")) for pr in J["pairs"]}
    full = names[0].replace(".safetensors", "") + " / " + names[1].replace(".safetensors", "")
    check(any(ln.startswith(full + " ") for ln in lines), "the long pair's label whole: %s" % full)
    check(any(ln.startswith(p("x", "seed1.safetensors") + " / " + p("y", "seed1.safetensors")) for ln in lines),
          "two seed1 in two folders: named by their paths")
    check(len(J["pairs"]) == 6 and len(want_labels) == 4, "six pairs")
    # the tied columns are the JSON's, pair by pair (the labels are whole, so split from the right)
    check(cols[1:5] == ["rank", "g", "tied", "g"], "study text: ranks table columns %s" % cols)
    k = 0
    for ln in lines[ranks_at + 2:]:
        if not ln.strip():  # the ranks table ends; the intervals' table has pair rows too
            break
        if not ln.startswith(("wine", p("x"))):
            continue
        vals = ln.split()[-9:]
        pr = J["pairs"][k]
        k += 1
        check(float(vals[1]) == pr["methods"]["gate"]["tied"] and float(vals[3]) == pr["methods"]["expert"]["tied"],
              "study text row %d: tied g %s, tied e %s; JSON %s, %s" % (k, vals[1], vals[3],
                                                                     pr["methods"]["gate"]["tied"],
                                                                     pr["methods"]["expert"]["tied"]))
    check(k == 6, "six pair rows read: %d" % k)
    tex = open(p("s.tex")).read()
    check("Ties g" in tex and "Ties e" in tex, "LaTeX: a tied column for each method")
    check("wine-quality-red-classifier-seed-1--wine-quality-red-classifier-seed-2" in tex, "LaTeX: whole labels")
    check(all("l_hat_median" in pr["methods"][m] for pr in J["pairs"] for m in ("gate", "expert")),
          "study JSON: l_hat_median for both methods")
    check("L-hat against the median order" in r.stdout, "study text: the median L-hat line")


def test_l_hat_median():
    a, b, e = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
    relabel(b, p("relab.safetensors"), [2, 0, 3, 1])
    out = []
    for bb in (b, p("relab.safetensors")):
        r = run("landscape", a, bb, "--eval", e, "-q", "--json", p("m.json"))
        check(r.returncode == 0, "landscape: %s" % r.stderr)
        out.append(json.load(open(p("m.json"))))
    x, y = (o["methods"]["expert"] for o in out)
    check(abs(x["barrier"] - y["barrier"]) <= 1e-5 * max(out[0]["endpoints"]["loss_a"], 1),
          "the relabelled B: the same expert barrier %g vs %g" % (x["barrier"], y["barrier"]))
    check(abs(x["l_hat"] - y["l_hat"]) > 1, "L-hat moves with the labelling: %g vs %g" % (x["l_hat"], y["l_hat"]))
    if "l_hat_median" not in x or "l_hat_median" not in y or "median_barrier" not in out[0]:
        check(False, "landscape JSON: l_hat_median and median_barrier")
        return
    check(abs(x["l_hat_median"] - y["l_hat_median"]) <= 1e-3 * abs(x["l_hat_median"]),
          "l_hat_median does not: %g vs %g" % (x["l_hat_median"], y["l_hat_median"]))
    bars = sorted(o["barrier"] for o in out[0]["orders"])
    med = 0.5 * (bars[11] + bars[12])
    check(abs(out[0]["median_barrier"] - med) <= 1e-12 + 1e-9 * med, "median_barrier %g, the orders' %g" %
          (out[0]["median_barrier"], med))
    want = 100 * (x["barrier"] - bars[0]) / (med - bars[0])
    check(abs(x["l_hat_median"] - want) <= 1e-6 * abs(want), "l_hat_median %g = 100 (B - best) / (median - best) %g"
          % (x["l_hat_median"], want))


def main():
    try:
        test_landscape()
        test_study()
        test_l_hat_median()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_ties_text")


if __name__ == "__main__":
    sys.exit(main())
