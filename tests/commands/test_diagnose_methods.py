"""tests/commands/test_diagnose_methods.py - diagnose names which of all the
matching methods finds the best order when the data-free costs disagree, and
what that says.

On sample-checkpoints/gpt/dense4 seeds 1 and 2 the gate and expert costs
disagree: the expert cost's order ranks 16 of 24 on the network's loss, the
gate cost's is the best. The data-driven methods say why: activation matching
(the experts' outputs on the block's inputs) finds the best order too, so the
experts correspond one to one as functions and the expert cost (their weights)
is fooled. The JSON's findings must rank every method, name the ones that find
the best order (not the expert cost) and say so; a layer pair whose costs agree
gets the ranking but no best_method finding. Run on the release build (a
network landscape: 24 orders x 3 points of network evaluations).
"""
import json
import os
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
GPT = os.path.join(ROOT, "sample-checkpoints", "gpt", "dense4")
LAYER = os.path.join(ROOT, "sample-checkpoints", "teacher4")


def findings(tmp, a, b, *extra):
    js = os.path.join(tmp, "d.json")
    p = testutil.run("diagnose", a, b, "--json", js, *extra, binary=testutil.MOESCOPE_REL)
    check(p.returncode == 0, "diagnose %s %s: %s" % (a, b, p.stderr[-300:]))
    if p.returncode:
        return None, p
    with open(js) as f:
        return json.load(f), p


def test_dense4(tmp):
    j, p = findings(tmp, os.path.join(GPT, "seed1"), os.path.join(GPT, "seed2"), "--points", 3)
    if not j:
        return
    by = {f["code"]: f for f in j["findings"]}
    ranked, best = by.get("methods_ranked"), by.get("best_method")
    check(ranked and all(m + " rank" in ranked["text"] for m in ("gate", "expert", "activation", "router")),
          "every method ranked: %s" % (ranked or {}).get("text"))
    check(best is not None, "a best_method finding (the costs disagree): %s" % sorted(by))
    if best:
        named = best["text"].split("found by ")[1].split(" (")[0].split(", ")
        check("expert" not in named and "gate" in named and "activation" in named,
              "the methods named: %s" % best["text"])
        check("--method gate" in best["text"] and "expert cost is fooled" in best["text"],
              "what it says: %s" % best["text"])
        check(best["text"] in p.stdout, "printed as well")


def test_layer_agree(tmp):
    a, b = (os.path.join(LAYER, "seed%d.safetensors" % i) for i in (1, 2))
    j, _ = findings(tmp, a, b, "--points", 3)
    if not j:
        return
    codes = [f["code"] for f in j["findings"]]
    check("methods_ranked" in codes, "the ranking on a layer: %s" % codes)
    agree = j["pair"]["methods_agree"]
    check(("best_method" in codes) == (not agree), "best_method only where the costs disagree (%s)" % agree)
    check(all(j["pair"]["methods"][m] is not None for m in ("activation", "router")),
          "the data-driven methods with the evaluation set")


def main():
    tmp = tempfile.mkdtemp(prefix="ms_diagm_")
    return testutil.run_tests("test_diagnose_methods", [lambda: test_dense4(tmp), lambda: test_layer_agree(tmp)], tmp)


if __name__ == "__main__":
    sys.exit(main())
