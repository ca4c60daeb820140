"""tests/commands/test_screen.py - `landscape --screen K`: every order on a subset of the
evaluation set, the survivors again on the whole set.

On the bundled samples teacher4 (a layer, 24 orders) and gpt/topk4 (a network, 24
orders of MoE block 0):
  - every order evaluated on the whole set has exactly the barrier a plain landscape
    gives it (the same evaluations); the survivors are the best K on the subset, every
    method's order (a data-driven one's as it picks on the whole set) and the identity
    (skip-order), and the true best (the plain run's) is among them;
  - the subset is rows floor(u N / m): every order's subset barrier equals a plain
    landscape's on that subset written by numpy (the layer);
  - brute force: K >= the orders evaluates every order, and the table is the plain one;
  - the counts the JSON states (undistinguished from the subset's best, of them screened
    out) are those of its own rows' intervals; the CSV has every order once;
  - --screen-units without --screen, and --screen 0, are usage errors.

`study --screen K` on gpt/topk4's pair is its `landscape --screen K`; on three dense4 seeds: each pair is `landscape --screen K`'s (the
same survivors, methods' orders, barriers, ranks and counts), each method's barrier is
the plain study's exactly and its rank interval holds its rank, every method's order is
evaluated fully, each method's subset rank is its order's rank on the subset, the CSV's
screening columns are the JSON's, and the text says it all within 120 columns.
"""
import csv
import json
import os
import sys
import tempfile

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_screen_")
SAMPLES = os.path.join(testutil.ROOT, "sample-checkpoints")


def p(name):
    return os.path.join(TMP, name)


def landscape(name, args, binary=None):
    """landscape ARGS --json p(name).json --csv p(name).csv -q: (json, csv rows), or (None, None)"""
    r = run("landscape", *args, "--json", p(name + ".json"), "--csv", p(name + ".csv"), "-q", binary=binary)
    check(r.returncode == 0, "%s: %s" % (name, r.stderr.strip()))
    if r.returncode:
        return None, None
    with open(p(name + ".csv")) as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    with open(p(name + ".json")) as f:
        return json.load(f), rows


def barriers(j):
    """{order tuple: barrier} of a landscape JSON's orders"""
    return {tuple(o["order"]): o["barrier"] for o in j["orders"]}


def check_screen(name, j, plain, keep, norders, n):
    """the screening j against the plain landscape's barriers"""
    sc = j["screening"]
    full = barriers(j)
    check(all(full[o] == plain[o] for o in full), "%s: whole-set barriers = the plain landscape's, exactly" % name)
    rows = sc["orders"]
    sub = sorted((r for r in rows), key=lambda r: r["subset_barrier"])
    want = {tuple(r["order"]) for r in sub[:keep]}
    want |= {tuple(j["methods"][m]["order"]) for m in j["methods"]} | {tuple(range(n))}
    # besides: the data-driven methods' orders on the subset (they read its inputs)
    check(want <= set(full) and len(set(full) - want) <= 2,
          "%s: the survivors are the best %d on the subset, every method's order (on the whole set) and the "
          "identity: %s" % (name, keep, sorted(full)))
    best = min(plain, key=plain.get)
    check(best in full, "%s: the true best %s is among the survivors" % (name, best))
    check(len(rows) == norders and len({tuple(r["order"]) for r in rows}) == norders,
          "%s: every order once in the screening's table" % name)
    check(sc["evaluated_fully"] == len(full) and sc["screened_only"] == norders - len(full),
          "%s: evaluated fully / screened only counted" % name)
    check(all((r["evaluated"] == "whole set") == (tuple(r["order"]) in full) for r in rows),
          "%s: each row says how it was evaluated" % name)
    ci = [r for r in rows if r["subset_ci95"] is not None]
    top = min(rows, key=lambda r: r["subset_barrier"])
    und = [r for r in ci if r["subset_ci95"][0] <= top["subset_ci95"][1]]
    check(sc["with_subset_interval"] == len(ci) and sc["undistinguished_from_best"] == len(und)
          and sc["undistinguished_screened_out"] == sum(r["evaluated"] == "subset" for r in und),
          "%s: the undistinguished counts are the rows' own: %s" % (name, {k: sc[k] for k in sc if k != "orders"}))
    check(all(r["subset_ci95"][0] <= r["subset_barrier"] <= r["subset_ci95"][1] for r in ci),
          "%s: each subset interval holds its barrier" % name)


def test_layer():
    d = os.path.join(SAMPLES, "teacher4")
    a, b, ev = (os.path.join(d, f) for f in ("seed1.safetensors", "seed2.safetensors", "eval.safetensors"))
    base = (a, b, "--eval", ev, "--points", 9)
    plain_j, _ = landscape("layer_plain", base, binary=testutil.MOESCOPE_REL)  # the references: release
    j, rows = landscape("layer_screen", base + ("--screen", 3))
    if not plain_j or not j:
        return
    plain = barriers(plain_j)
    check_screen("layer", j, plain, 3, 24, 4)
    sc = j["screening"]
    check(sc["units"] == 1000 and sc["of_units"] == 4000 and sc["unit"] == "samples",
          "the subset: a quarter of the 4000 samples: %s" % {k: sc[k] for k in ("units", "of_units", "unit")})
    check(len(rows) == 24 and sum(r["evaluated"] == "whole set" for r in rows) == len(j["orders"]),
          "the CSV: every order, the survivors marked")
    # the subset by numpy: rows floor(u N / m), as a file of its own
    t, meta = oracle.read_safetensors(ev)
    N, m = t["inputs"].shape[0], 1000
    pick = [u * N // m for u in range(m)]
    oracle.write_safetensors(p("subset.safetensors"), {k: v[pick] for k, v in t.items()}, meta)
    sub_j, _ = landscape("layer_subset", (a, b, "--eval", p("subset.safetensors"), "--points", 9),
                         binary=testutil.MOESCOPE_REL)
    if sub_j:
        sub = barriers(sub_j)
        check(all(abs(r["subset_barrier"] - sub[tuple(r["order"])]) <= 1e-12 * max(1.0, sub[tuple(r["order"])])
                  for r in sc["orders"]),
              "every subset barrier = a plain landscape's on numpy's subset")
    # brute force: keep every order
    j, _ = landscape("layer_all", base + ("--screen", 24, "--screen-units", 500))
    if j:
        check(barriers(j) == plain and j["screening"]["screened_only"] == 0,
              "--screen 24: every order on the whole set, the plain table")
        check(j["screening"]["units"] == 500, "--screen-units 500: a subset of 500")


def test_network():
    d = os.path.join(SAMPLES, "gpt", "topk4")
    base = (os.path.join(d, "seed1"), os.path.join(d, "seed2"), "--points", 3, "--no-proxy")
    plain_j, _ = landscape("net_plain", base, binary=testutil.MOESCOPE_REL)
    j, _ = landscape("net_screen", base + ("--screen", 2, "--screen-units", 8), binary=testutil.MOESCOPE_REL)
    if not plain_j or not j:
        return
    check_screen("network", j, barriers(plain_j), 2, 24, 4)
    sc = j["screening"]
    check(sc["units"] == 8 and sc["of_units"] == 64 and sc["unit"] == "sequences",
          "the subset: 8 of the 64 sequences: %s" % {k: sc[k] for k in ("units", "of_units", "unit")})
    check(sc["with_subset_interval"] == 24, "a network's subset: every order has its interval")
    # study --screen on the same pair: the pair is landscape --screen's
    sj = p("net_study.json")
    r = run("study", base[0], base[1], "--points", 3, "--no-proxy", "--screen", 2, "--screen-units", 8, "-q",
            "--json", sj, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0, "network study --screen: %s" % r.stderr.strip()[-300:])
    if r.returncode == 0:
        pr = json.load(open(sj))["pairs"][0]
        check(all(pr["methods"][m][k] == j["methods"][m][k] for m in j["methods"] for k in ("order", "barrier", "rank"))
              and all(pr["screening"][k] == sc[k] for k in ("units", "of_units", "unit", "evaluated_fully",
                                                            "undistinguished_from_best", "undistinguished_screened_out")),
              "network study --screen: the pair is landscape --screen's (methods, counts): %s" % pr["screening"])


def test_usage():
    d = os.path.join(SAMPLES, "teacher4")
    a, b = os.path.join(d, "seed1.safetensors"), os.path.join(d, "seed2.safetensors")
    for extra, why in ((("--screen-units", 8), "--screen-units needs --screen"), (("--screen", 0), "--screen")):
        r = run("landscape", a, b, *extra)
        check(r.returncode == 2 and why in r.stderr, "%s: usage error naming it: %d %s" % (extra, r.returncode, r.stderr))


def test_study():
    d = os.path.join(SAMPLES, "dense4")
    seeds = [os.path.join(d, "seed%d.safetensors" % i) for i in (1, 2, 3)]
    ev = os.path.join(d, "eval.safetensors")
    base = (*seeds, "--eval", ev, "--points", 5)
    js, cs, pj = p("study.json"), p("study.csv"), p("study_plain.json")
    r = run("study", *base, "--screen", 3, "--json", js, "--csv", cs, binary=testutil.MOESCOPE_REL)
    rp = run("study", *base, "-q", "--json", pj, binary=testutil.MOESCOPE_REL)
    check(r.returncode == 0 and rp.returncode == 0, "study --screen 3 runs: %s" % r.stderr.strip()[-300:])
    if r.returncode or rp.returncode:
        return
    S, P = json.load(open(js)), json.load(open(pj))
    methods = list(S["pairs"][0]["methods"])
    check(len(methods) == 4 and len(S["pairs"]) == 3, "three pairs, four methods: %s" % methods)
    for k, (pr, plain) in enumerate(zip(S["pairs"], P["pairs"])):
        tag = "pair %d" % k
        j, _ = landscape("study_pair%d" % k, (pr["a"], pr["b"], "--eval", ev, "--points", 5, "--screen", 3),
                         binary=testutil.MOESCOPE_REL)
        if not j:
            continue
        sc, lsc = pr["screening"], j["screening"]
        check(all(sc[key] == lsc[key] for key in ("units", "of_units", "unit", "keep", "evaluated_fully",
                                                  "with_subset_interval", "undistinguished_from_best",
                                                  "undistinguished_screened_out")),
              "%s: the counts are landscape --screen's: %s" % (tag, sc))
        full = barriers(j)
        for m in methods:
            M, L = pr["methods"][m], j["methods"][m]
            check(M["order"] == L["order"] and M["barrier"] == L["barrier"] and M["rank"] == L["rank"],
                  "%s %s: order, barrier and rank as landscape --screen's" % (tag, m))
            check(M["barrier"] == plain["methods"][m]["barrier"], "%s %s: the barrier is the plain study's exactly"
                  % (tag, m))
            check(tuple(M["order"]) in full and M["rank"] <= sc["evaluated_fully"],
                  "%s %s: its order is evaluated fully, ranked among the survivors" % (tag, m))
            lo, hi = M["rank_ci95"]
            check(lo <= M["rank"] <= hi <= sc["evaluated_fully"], "%s %s: its rank interval %s holds it" % (tag, m, [lo, hi]))
            sub = {tuple(o["order"]): o["subset_barrier"] for o in lsc["orders"]}
            below = sum(b < sub[tuple(M["order"])] - j["tau"] for b in sub.values())
            check(1 <= sc["subset_rank"][m] <= 24 and abs(sc["subset_rank"][m] - (1 + below)) <= 1,
                  "%s %s: subset rank %s, its order's on the subset %d" % (tag, m, sc["subset_rank"][m], 1 + below))
    rows = [x for x in csv.DictReader(line for line in open(cs) if not line.startswith("#"))]
    check([x["row"] for x in rows] == ["pair"] * 3 + ["mean", "std"] and all(
        float(x["screening.evaluated_fully"]) == pr["screening"]["evaluated_fully"]
        and all(float(x["screening.subset_rank." + m]) == pr["screening"]["subset_rank"][m] for m in methods)
        for x, pr in zip(rows, S["pairs"])), "the CSV's screening columns are the JSON's")
    check("screening, per pair" in r.stdout and "screened (--screen 3)" in r.stdout,
          "the text says the pairs were screened")
    wide = [ln for ln in r.stdout.splitlines() if len(ln) > 120]
    check(not wide, "study --screen: lines within 120 columns: %s" % wide[:2])
    r = run("study", *seeds, "--eval", ev, "--screen-units", 8)
    check(r.returncode == 2 and "--screen-units needs --screen" in r.stderr, "study: --screen-units alone is a usage error")


test_usage()
test_study()
test_layer()
test_network()
sys.exit(testutil.summary("test_screen"))
