"""tests/oracle/test_diagnose.py - `moescope diagnose --json` and `moescope info` against
the numpy oracle (tests/oracle/oracle.py diag_* functions): every number to 1e-4
relative, on top-k, dense, GELU and SiLU-GLU layers; plus the flags of a broken
checkpoint in `info` and in the CLI's exit codes. The "experts do not correspond"
verdict agrees with the landscape's spread of barriers, with its numbers, on samples
where the order matters (teacher4, mixtral4: the barriers over the 24 orders run
far apart) and on a pair where it cannot (B's experts and gate rows all one)."""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402


def close(a, b, what, rtol=1e-4, atol=1e-6):
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    ok = a.shape == b.shape and np.all(np.abs(a - b) <= rtol * np.maximum(np.abs(b), 1.0) + atol)
    check(ok, "%s: %s vs oracle %s" % (what, a, b))


def make_pair(work, name, seed, **kw):
    """A, B (seed, seed+1) sharing A's head, and an evaluation set."""
    ta, meta = gen_ckpt.make_layer(seed, **kw)
    tb, _ = gen_ckpt.make_layer(seed + 1, **kw)
    for key in ta:
        if key.startswith("head."):
            tb[key] = ta[key]
    ev = gen_ckpt.make_evalset(seed, ta, meta, N=150)
    pa, pb, pe = (os.path.join(work, "%s_%s.safetensors" % (name, s)) for s in "abe")
    oracle.write_safetensors(pa, ta, meta)
    oracle.write_safetensors(pb, tb, meta)
    oracle.write_safetensors(pe, ev)
    return pa, pb, pe


def compare_ckpt(js, L, X, who, tag):
    n = L["n"]
    D, rms = oracle.diag_expert_dist(L)
    e = js["experts"]
    close(np.array(e["dist"]).reshape(n, n), D, "%s %s expert distances" % (tag, who))
    close(e["rms"], rms, "%s %s expert rms" % (tag, who))
    iu = np.triu_indices(n, 1)
    close(e["min"], D[iu].min(), "%s %s expert min" % (tag, who))
    close(e["min_rel"], D[iu].min() / rms, "%s %s expert min_rel" % (tag, who))
    Do, orms = oracle.diag_output_dist(L, X)
    o = js["outputs"]
    close(np.array(o["dist"]).reshape(n, n), Do, "%s %s output distances" % (tag, who))
    close(o["rms"], orms, "%s %s output rms" % (tag, who))
    g = oracle.diag_gate(L)
    close(js["gate"]["scale"], g["scale"], "%s %s gate scale" % (tag, who))
    close(js["gate"]["row_min"], g["row_min"], "%s %s gate row min" % (tag, who))
    close(js["gate"]["diff_min"], g["diff_min"], "%s %s gate diff min" % (tag, who))
    if L["router"] == "topk":
        s, rank = oracle.diag_topk_sigma(L)
        close(js["topk"]["sigma"], s, "%s %s singular values" % (tag, who))
        check(js["topk"]["rank"] == rank, "%s %s rank %s vs %s" % (tag, who, js["topk"]["rank"], rank))
        close(js["topk"]["sigma_min"], s[-1], "%s %s sigma_min" % (tag, who))
    else:
        check(js["topk"] is None, "%s %s: dense has no topk section" % (tag, who))
    lm, lf = oracle.diag_routing(L, X)
    close(js["routing"]["load_mean"], lm, "%s %s load_mean" % (tag, who))
    close(js["routing"]["load_frac"], lf, "%s %s load_frac" % (tag, who))


def compare_pair(work, tag, pa, pb, pe):
    out = os.path.join(work, tag + ".json")
    r = run("diagnose", pa, pb, "--eval", pe, "--json", out)
    check(r.returncode == 0, "%s: diagnose exit %d: %s" % (tag, r.returncode, r.stderr))
    if r.returncode != 0:
        return
    js = json.load(open(out))
    check(js["format"] == "moescope.diagnose/1", tag + ": format")
    A, B = oracle.load_layer(pa), oracle.load_layer(pb)
    X = oracle.load_evalset(pe)["inputs"]
    compare_ckpt(js["checkpoints"]["A"], A, X, "A", tag)
    compare_ckpt(js["checkpoints"]["B"], B, X, "B", tag)
    p = js["pair"]
    check(p["heads_equal"] is True, tag + ": heads equal")
    for m, C in (("gate", oracle.gate_cost(A, B)), ("expert", oracle.expert_cost(A, B))):
        order, tot, second = oracle.diag_margin(C)
        jm = p["methods"][m]
        check(list(jm["order"]) == list(order), "%s %s order %s vs %s" % (tag, m, jm["order"], order))
        close(jm["total"], tot, "%s %s total" % (tag, m))
        close(jm["second"], second, "%s %s second" % (tag, m))
        close(jm["margin"], second - tot, "%s %s margin" % (tag, m), atol=1e-4 * tot)
        close(jm["cost_mean"], C.mean(), "%s %s cost mean" % (tag, m))
    res, rel = oracle.diag_slot_residuals(A, B, p["methods"]["expert"]["order"])
    close(p["slot_residual"], res, tag + ": slot residuals")
    close(p["slot_residual_rel"], rel, tag + ": slot residuals rel")
    check(p["worst_slot"] == int(np.argmax(rel)), tag + ": worst slot")
    ls = p["landscape"]
    check(ls is not None and ls["orders"] == 24 and 1 <= ls["rank"] <= 24
          and ls["best_barrier"] <= ls["barrier"] + 1e-12, tag + ": landscape rank %s" % ls)
    # every finding has the four fields, and the text is printed
    for f in js["findings"]:
        check(set(f) >= {"severity", "code", "who", "text", "number"} and f["text"] in r.stdout,
              tag + ": finding %s" % f)


def spread_verdict(work, tag, a, b, e):
    """diagnose's experts_unrelated finding against landscape --json's barriers."""
    dj, lj = os.path.join(work, tag + "_d.json"), os.path.join(work, tag + "_l.json")
    r = run("diagnose", a, b, "--eval", e, "--json", dj)
    r2 = run("landscape", a, b, "--eval", e, "-q", "--json", lj)
    check(r.returncode == 0 and r2.returncode == 0, "%s: diagnose and landscape run: %s %s" %
          (tag, r.stderr[-200:], r2.stderr[-200:]))
    if r.returncode or r2.returncode:
        return None
    L = json.load(open(lj))
    bars = [o["barrier"] for o in L["orders"]]
    lo, hi = min(bars), max(bars)
    matters = hi - lo > 0.1 * hi
    f = [x for x in json.load(open(dj))["findings"] if x["code"] == "experts_unrelated"]
    text = " ".join(x["text"] for x in f)
    check("hardly" not in text or not matters, "%s: says the order hardly matters, but the barriers run %.4g..%.4g: %s"
          % (tag, lo, hi, text))
    if f:
        check(("%.4g" % lo) in text and ("%.4g" % hi) in text, "%s: the verdict names the barriers' range "
              "%.4g..%.4g: %s" % (tag, lo, hi, text))
        check((f[0]["severity"] == "info") == matters and ("yet the order matters" in text) == matters,
              "%s: severity %s with the barriers %.4g..%.4g" % (tag, f[0]["severity"], lo, hi))
    return matters, f


def test_spread(work):
    S = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample-checkpoints")
    t4 = [os.path.join(S, "teacher4", x) for x in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors")]
    v = spread_verdict(work, "teacher4", *t4)
    check(v is not None and v[0], "teacher4: the order matters (the barriers spread)")
    m4 = os.path.join(S, "mixtral4")
    v = spread_verdict(work, "mixtral4", os.path.join(m4, "seed1"), os.path.join(m4, "seed2"),
                       os.path.join(m4, "eval.safetensors"))
    check(v is not None and v[0] and v[1], "mixtral4: the order matters, and the unrelated experts are put so")
    # B's experts all expert 0, its gate rows all row 0: every order gives one function
    d4 = os.path.join(S, "dense4")
    one = os.path.join(work, "one_expert.safetensors")
    gen_ckpt.write_one_expert(os.path.join(d4, "seed2.safetensors"), one)
    v = spread_verdict(work, "one expert", os.path.join(d4, "seed1.safetensors"), one,
                       os.path.join(d4, "eval.safetensors"))
    check(v is not None and not v[0] and v[1] and "hardly change the barrier" in v[1][0]["text"]
          and v[1][0]["severity"] == "warn", "one expert copied: the order hardly matters, said so: %s" %
          (v[1] if v else None))


def test_better_method(work):
    """dense4 seeds 1-2: the expert cost's order ranks 10 of 24, the gate cost's is the
    best; diagnose names the gate method, says to use it, and (activation matching missing it
    too) that the seeds split the function among their experts differently."""
    S = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "sample-checkpoints")
    d4 = os.path.join(S, "dense4")
    out = os.path.join(work, "better.json")
    r = run("diagnose", os.path.join(d4, "seed1.safetensors"), os.path.join(d4, "seed2.safetensors"),
            "--eval", os.path.join(d4, "eval.safetensors"), "--json", out)
    check(r.returncode == 0, "diagnose dense4 1-2: exit 0 (%s)" % r.stderr.strip()[-200:])
    js = json.load(open(out)) if r.returncode == 0 else {}
    f = [x for x in js.get("findings", []) if x.get("code") == "better_method"]
    check(len(f) == 1 and f[0]["number"] == 1 and "--method gate" in f[0]["text"],
          "dense4 1-2: the gate method named as better: %s" % f)
    # why, from the data-driven methods: activation matching misses the best order too (its
    # outputs do not match one to one), the routing finds it
    b = [x for x in js.get("findings", []) if x.get("code") == "best_method"]
    check(len(b) == 1 and "found by gate" in b[0]["text"] and "split the function" in b[0]["text"],
          "dense4 1-2: what the methods say: %s" % b)
    check("--method gate" in r.stdout, "dense4 1-2: the advice is printed")
    t4 = [os.path.join(S, "teacher4", x) for x in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors")]
    r = run("diagnose", t4[0], t4[1], "--eval", t4[2])
    check(r.returncode == 0 and "--method gate" not in r.stdout, "teacher4: no method advice where the order is best")


def main():
    with tempfile.TemporaryDirectory() as work:
        test_spread(work)
        test_better_method(work)
        pa, pb, pe = make_pair(work, "topk", 11, n=4, d=6, h=8, router="topk", k=2)
        compare_pair(work, "topk-relu", pa, pb, pe)
        pa, pb, pe = make_pair(work, "dense", 21, n=4, d=5, h=6, router="dense", act="gelu")
        compare_pair(work, "dense-gelu", pa, pb, pe)
        pa, pb, pe = make_pair(work, "glu", 31, n=4, d=6, h=4, router="topk", k=3, act="silu_glu")
        compare_pair(work, "topk3-glu", pa, pb, pe)

        # info: a healthy checkpoint has every condition holding
        r = run("info", pa)
        check(r.returncode == 0 and "genericity" in r.stdout and "every condition holds" in r.stdout,
              "info healthy: %s %s" % (r.stdout[-400:], r.stderr))
        # info: identical experts 1 and 3, top-k with n - 1 > d, top-1
        t, meta = gen_ckpt.make_layer(5, n=5, d=3, h=4, router="topk", k=1)
        for key in list(t):
            if key.startswith("moe.experts.1."):
                t[key.replace("experts.1.", "experts.3.")] = t[key].copy()
        bad = os.path.join(work, "bad.safetensors")
        oracle.write_safetensors(bad, t, meta)
        r = run("info", bad)
        check(r.returncode == 0, "info bad: exit %d %s" % (r.returncode, r.stderr))
        out = r.stdout
        check("[warn] experts 1 and 3 are nearly identical" in out, "info: identical experts\n" + out)
        check("[warn] top-1 routing" in out, "info: top-1 flagged")
        check("[warn] n - 1 = 4 > d = 3" in out, "info: n - 1 > d flagged")
        check("[warn] consecutive gate differences" in out and "rank 3 < n - 1 = 4" in out,
              "info: rank deficiency flagged")
        check("conditions flagged" in out, "info: summary line")
        # info --json carries the same findings
        ij = os.path.join(work, "info.json")
        r = run("info", bad, "--json", ij)
        check(r.returncode == 0, "info --json: exit %d %s" % (r.returncode, r.stderr))
        if r.returncode == 0:
            g = json.load(open(ij))["genericity"]
            warned = {f["code"] for f in g["findings"] if f["severity"] in ("warn", "bad")}
            check(g["flags"] == len([f for f in g["findings"] if f["severity"] in ("warn", "bad")])
                  and g["flags"] >= 3, "info --json: flags %r" % g["flags"])
            check("experts_distinct" in warned, "info --json: identical experts flagged: %r" % warned)

        # usage errors
        r = run("diagnose", pa)
        check(r.returncode == 2 and "two checkpoints" in r.stderr, "diagnose with one file")
        r = run("diagnose", pa, pb, "--method", "nope")
        check(r.returncode == 2 and "gate, expert, activation or router" in r.stderr, "diagnose --method nope")
        r = run("diagnose", pa, os.path.join(work, "missing.safetensors"))
        check(r.returncode == 1 and "missing.safetensors" in r.stderr, "diagnose missing file")
        # incompatible pair
        t2, meta2 = gen_ckpt.make_layer(6, n=3, d=6, h=8)
        other = os.path.join(work, "other.safetensors")
        oracle.write_safetensors(other, t2, meta2)
        r = run("diagnose", pa, other)
        check(r.returncode == 1 and r.stderr.strip() != "", "diagnose incompatible: %s" % r.stderr)
        # no evaluation set: still a report, the landscape line says why it is missing
        r = run("diagnose", pa, pb)
        check(r.returncode == 0 and "needs an evaluation set" in r.stdout, "diagnose without --eval")
    return testutil.summary("test_diagnose_py")


if __name__ == "__main__":
    sys.exit(main())
