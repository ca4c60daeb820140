"""tests/oracle/test_study.py - `moescope study` against `moescope landscape` on each
pair (the same numbers), its mean +- sample std against numpy over the pairs,
Spearman's rho of cost vs barrier against scipy.stats.spearmanr on the
landscape's own orders and cost matrices, the identity rank against the
oracle's rank definition, the CSV rows, the LaTeX table's structure (column
count, booktabs rules), the PNG's size and pixels, a sampled pool (n = 10)
with intervals, and argument errors."""
import csv
import json
import math
import os
import re
import sys
import tempfile
import zlib

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

D4 = os.path.join(HERE, "..", "..", "sample-checkpoints", "dense4")
T = 9
CURVE_KEYS = ("barrier", "acc_barrier", "loss_auc")
METHOD_KEYS = CURVE_KEYS + ("cost", "rank", "tied", "rank_auc", "l_hat")


def same(a, b):
    return a == b or (a is None and b is None)


def study_outputs(tmp):
    paths = {k: os.path.join(tmp, "study." + k) for k in ("json", "csv", "tex", "png")}
    r = run("study", D4, "--points", T, "--json", paths["json"], "--csv", paths["csv"],
            "--latex", paths["tex"], "--png", paths["png"])
    check(r.returncode == 0, "study ran: %s" % r.stderr[-400:])
    return (r, paths) if r.returncode == 0 else (None, None)


def check_against_landscape(tmp, S):
    check(S["format"] == "moescope.study/1" and len(S["pairs"]) == 6, "study: format and 6 pairs of dense4")
    seeds = [os.path.basename(p) for p in S["checkpoints"]]
    check(seeds == ["seed%d.safetensors" % i for i in range(1, 5)], "study: the directory's checkpoints, sorted, "
          "without the evaluation set (%s)" % seeds)
    for k, p in enumerate(S["pairs"]):
        tag = "pair %s/%s" % (os.path.basename(p["a"]), os.path.basename(p["b"]))
        js = os.path.join(tmp, "l%d.json" % k)
        r = run("landscape", p["a"], p["b"], "--eval", os.path.join(D4, "eval.safetensors"), "--points", T,
                "-q", "--json", js)
        check(r.returncode == 0, "%s: landscape ran" % tag)
        if r.returncode:
            continue
        L = json.load(open(js))
        bad = [key + "." + c for key in ("naive", "skip_order") for c in CURVE_KEYS if not same(p[key][c], L[key][c])]
        for m in ("gate", "expert"):
            bad += ["%s.%s" % (m, c) for c in METHOD_KEYS if not same(p["methods"][m][c], L["methods"][m][c])]
            bad += ["%s.order" % m] if p["methods"][m]["order"] != L["methods"][m]["order"] else []
        for key in ("best", "worst"):
            bad += [key] if p[key]["barrier"] != L[key]["barrier"] or p[key]["order"] != L[key]["order"] else []
        # the end points come from one evaluation per checkpoint, shared by its pairs
        bad += ["endpoints." + c for c in L["endpoints"] if not same(p["endpoints"][c], L["endpoints"][c])]
        zero = sum(1 for o in L["orders"] if o["barrier"] <= L["tau"])
        bad += ["zero_tied"] if p["zero_tied"] != zero else []
        check(not bad, "%s: study equals landscape (differs: %s)" % (tag, bad))
        rows = [(tuple(r["order"]), r["barrier"], r["acc_barrier"], r["loss_auc"]) for r in L["orders"]]
        ident = [r for r in rows if r[0] == tuple(range(L["n"]))][0]
        want = oracle.rank_info(rows, ident[1], ident[3], ident[0], L["tau"])["rank"]
        check(p["identity_rank"] == want, "%s: identity rank %s vs %s" % (tag, p["identity_rank"], want))
        # Spearman of sum_i C[i][pi(i)] against the barrier, by scipy
        from scipy.stats import spearmanr
        for m in ("gate", "expert"):
            C = np.array(L["methods"][m]["cost_matrix"])
            cost = [sum(C[i][o[i]] for i in range(len(o))) for o, _, _, _ in rows]
            chosen = L["methods"][m]["order"]
            check(abs(sum(C[i][chosen[i]] for i in range(len(chosen))) - L["methods"][m]["cost"]) <= 1e-9 * max(1, abs(L["methods"][m]["cost"])),
                  "%s: %s order cost is sum_i C[i][pi(i)]" % (tag, m))
            ref = spearmanr(cost, [r[1] for r in rows]).statistic
            got = p["methods"][m]["spearman"]
            check(got is not None and abs(got - ref) <= 1e-9, "%s: %s Spearman %s vs scipy %s" % (tag, m, got, ref))
            o = oracle.spearman(cost, [r[1] for r in rows])
            check(o is not None and abs(o - ref) <= 1e-9, "%s: %s oracle Spearman agrees with scipy" % (tag, m))


def check_once(S):
    """Each checkpoint is evaluated once; every pair's end point is its checkpoint's."""
    check(S["provenance"].get("endpoint_evaluations") == len(S["checkpoints"]),
          "provenance: one end-point evaluation per checkpoint (%s)" % S["provenance"].get("endpoint_evaluations"))
    seen = {}
    for p in S["pairs"]:
        for side in "ab":
            v = (p["endpoints"]["loss_" + side], p["endpoints"]["acc_" + side])
            seen.setdefault(p[side], set()).add(v)
    check(all(len(v) == 1 for v in seen.values()) and len(seen) == 4,
          "each checkpoint has one loss/accuracy across its pairs")
    means = [S["summary"][k]["mean"] for k in ("naive.barrier", "skip_order.barrier",
                                                   "methods.gate.barrier", "methods.expert.barrier")]
    want = {"naive/gate": means[0] / means[2], "naive/expert": means[0] / means[3],
            "skip_order/gate": means[1] / means[2], "skip_order/expert": means[1] / means[3]}
    check(all(abs(S["ratios"][k] - v) <= 1e-12 * v for k, v in want.items()), "ratios of the mean barriers")


def test_teacher_dir(tmp):
    """A directory holding a teacher: the pool is the seeds, the teacher is
    listed as left out, and a regression set has no accuracy numbers."""
    src = os.path.join(HERE, "..", "..", "sample-checkpoints", "teacher4")
    d = os.path.join(tmp, "teacher_set")
    os.mkdir(d)
    for f in ("seed1", "seed2", "seed3", "teacher", "eval"):
        with open(os.path.join(src, f + ".safetensors"), "rb") as fi, \
                open(os.path.join(d, f + ".safetensors"), "wb") as fo:
            fo.write(fi.read())
    js = os.path.join(tmp, "teacher.json")
    r = run("study", d, "--points", 5, "--json", js)
    check(r.returncode == 0, "study of a directory with a teacher ran: %s" % r.stderr[-300:])
    if r.returncode:
        return
    S = json.load(open(js))
    names = [os.path.basename(p) for p in S["checkpoints"]]
    check(names == ["seed1.safetensors", "seed2.safetensors", "seed3.safetensors"],
          "teacher left out of the pool (%s)" % names)
    check([os.path.basename(x["path"]) for x in S["left_out"]] == ["teacher.safetensors"]
          and "teacher" in S["left_out"][0]["why"], "left_out names the teacher and why")
    check("left out: " in r.stdout and "teacher.safetensors" in r.stdout, "text says what was left out")
    check("n/a (regression)" in r.stdout and "nan" not in r.stdout, "regression: accuracy n/a, no nan printed")
    check(S["pairs"][0]["endpoints"]["acc_a"] is None, "regression: accuracy null in JSON")
    # named explicitly, a teacher is taken as given
    r = run("study", os.path.join(d, "seed1.safetensors"), os.path.join(d, "teacher.safetensors"),
            "--eval", os.path.join(d, "eval.safetensors"), "--points", 5, "-q", "--json", js)
    check(r.returncode == 0 and len(json.load(open(js))["checkpoints"]) == 2, "explicit files are taken as given")
    # an evaluation set that does not fit the checkpoints: named, no crash
    r = run("study", D4, "--eval", os.path.join(d, "eval.safetensors"), "-q")
    check(r.returncode == 1 and "eval.safetensors" in r.stderr, "mismatched evaluation set: a clear error (%s)"
          % r.stderr.strip()[-200:])


def test_family_dirs(tmp):
    """Checkpoints in a model family's layout are directories (shards, index,
    config.json): given one by one or as the pool's directory, each is one
    checkpoint; a single pair prints no undefined std."""
    mx = os.path.join(HERE, "..", "..", "sample-checkpoints", "mixtral4")
    e = os.path.join(mx, "eval.safetensors")
    js, lj = os.path.join(tmp, "mx.json"), os.path.join(tmp, "mxl.json")
    r = run("study", mx, "--points", 5, "--json", js)
    check(r.returncode == 0, "study of mixtral4/ ran: %s" % r.stderr[-300:])
    if r.returncode:
        return
    S = json.load(open(js))
    check([os.path.basename(p) for p in S["checkpoints"]] == ["seed1", "seed2"] and len(S["pairs"]) == 1,
          "mixtral4/: its two checkpoint directories (%s)" % S["checkpoints"])
    check("nan" not in r.stdout and "n/a (layer only)" in r.stdout, "one layer-only pair: no nan printed")
    r = run("study", os.path.join(mx, "seed1"), os.path.join(mx, "seed2"), "--eval", e, "--points", 5, "-q",
            "--json", js)
    r2 = run("landscape", os.path.join(mx, "seed1"), os.path.join(mx, "seed2"), "--eval", e, "--points", 5,
             "--json", lj)
    check(r.returncode == 0 and r2.returncode == 0, "checkpoint directories given one by one")
    if r.returncode == 0 and r2.returncode == 0:
        p, L = json.load(open(js))["pairs"][0], json.load(open(lj))
        check(p["methods"]["expert"]["barrier"] == L["methods"]["expert"]["barrier"]
              and p["naive"]["barrier"] == L["naive"]["barrier"], "family directories: study equals landscape")


def get(pair, path):
    v = pair
    for k in path.split("."):
        v = v[k]
    return v


def check_summary(S):
    bad = []
    for path, s in S["summary"].items():
        vals = [get(p, path) for p in S["pairs"]]
        vals = np.array([v for v in vals if v is not None and math.isfinite(v)], dtype=np.float64)
        mean = float(vals.mean()) if len(vals) else None
        std = float(vals.std(ddof=1)) if len(vals) > 1 else None
        ok = s["n"] == len(vals) and (mean is None) == (s["mean"] is None) and (std is None) == (s["std"] is None)
        ok = ok and (mean is None or abs(s["mean"] - mean) <= 1e-12 * max(1, abs(mean)))
        ok = ok and (std is None or abs(s["std"] - std) <= 1e-12 * max(1, abs(std)))
        if not ok:
            bad.append(path)
    want = {"naive.barrier", "skip_order.acc_barrier", "methods.expert.rank", "methods.gate.tied",
            "methods.expert.rank_auc", "methods.gate.l_hat", "methods.expert.spearman", "best.barrier",
            "worst.barrier", "identity_rank"}
    check(want <= set(S["summary"]), "summary keys %s" % sorted(want - set(S["summary"])))
    check(not bad, "summary mean/std/n agree with numpy (ddof=1) except %s" % bad)


METHODS = ("gate", "expert", "activation", "router")
CURVES = [("naive", lambda p: p["naive"]), ("skip_order", lambda p: p["skip_order"])] + \
    [("methods." + m, (lambda m: lambda p: p["methods"][m])(m)) for m in METHODS]


def check_csv(paths, S):
    lines = [l for l in open(paths["csv"]) if not l.startswith("#")]
    R = list(csv.DictReader(lines))
    check([r["row"] for r in R] == ["pair"] * 6 + ["mean", "std"], "CSV: 6 pair rows, mean, std")
    if len(R) == 8:
        e = S["pairs"][0]["methods"]["expert"]["barrier"]
        check(abs(float(R[0]["methods.expert.barrier"]) - e) <= 1e-8 * max(abs(e), 1e-12),
              "CSV: first pair's expert barrier equals the JSON's")
        m = S["summary"]["naive.barrier"]["mean"]
        check(abs(float(R[6]["naive.barrier"]) - m) <= 1e-8 * abs(m), "CSV: mean row")
    # each pair's bootstrap intervals: every curve's barrier and every method's rank
    bad = []
    for row, p in zip(R, S["pairs"]):
        for path, get in CURVES:
            want = get(p)["barrier_ci95"]
            got = [float(row[path + ".barrier_ci95_" + e]) for e in ("lo", "hi")]
            if not (all(abs(g - w) <= 1e-8 * max(1.0, abs(w)) for g, w in zip(got, want))
                    and got[0] <= get(p)["barrier"] <= got[1]):
                bad.append((path, got, want))
        for m in METHODS:
            want = p["methods"][m]["rank_ci95"]
            got = [float(row["methods.%s.rank_ci95_%s" % (m, e)]) for e in ("lo", "hi")]
            if (not all(abs(g - w) <= 1e-8 * abs(w) for g, w in zip(got, want))
                    or not got[0] <= p["methods"][m]["rank"] <= got[1]):
                bad.append((m, got, want))
    check(len(R) == 8 and not bad, "CSV: each pair's intervals are the JSON's and hold their estimates: %s" % bad[:3])
    check(len(R) == 8 and all(R[k]["methods.router.rank_ci95_lo"] == "" for k in (6, 7)),
          "CSV: the intervals are per pair (empty in the mean and std rows)")


def tex_visible(cell):
    """the characters a LaTeX cell prints: commands, braces and $ dropped, -- one dash"""
    cell = re.sub(r"\\[a-zA-Z]+\*?", "x", cell.replace("\\ ", " ").replace("--", "-"))
    return re.sub(r"[{}$^\\]", "", cell).strip()


def tex_rows(tex, spec):
    body = tex[spec.end():tex.index("\\end{tabular}", spec.end())]
    return body, [l for l in body.splitlines() if l.rstrip().endswith("\\\\")]


def check_latex(paths, S):
    """booktabs tables, each narrow enough for one column of a two-column paper
    (at most 8 columns, rows of at most 56 printed characters besides the column
    gaps; the 14-column table of before was 150): two of every column once
    (header, 6 pairs, mean and std rows), one per data-driven method, and each
    pair's intervals"""
    tex = open(paths["tex"]).read()
    specs = list(re.finditer(r"\\begin\{tabular\}\{([lrc]+)\}", tex))
    check(len(specs) == 5, "LaTeX: five tabulars, the two of before, activation, router, intervals (%d)" % len(specs))
    heads = []
    for spec in specs:
        ncol = len(spec.group(1))
        check(ncol <= 8, "LaTeX: %d columns fit a paper column" % ncol)
        body, rows = tex_rows(tex, spec)
        counts = {l.count("&") + 1 - l.count("\\&") for l in rows}
        check(counts == {ncol}, "LaTeX: every row has %d cells (%s)" % (ncol, counts))
        # a column is as wide as its widest cell
        cells = [[tex_visible(c) for c in l.rstrip()[:-2].split("&")] for l in rows]
        width = sum(max(len(r[c]) for r in cells) for c in range(ncol))
        check(width <= 56, "LaTeX: %d printed characters a row fit a paper column" % width)
        check(body.index("\\toprule") < body.index("\\midrule") < body.index("\\bottomrule"),
              "LaTeX: rules in order")
        if spec is specs[-1]:
            continue
        check(len(rows) == 1 + 6 + 2, "LaTeX: header, 6 pairs, mean and std rows (%d rows)" % len(rows))
        check(body.count("\\toprule") == 1 and body.count("\\midrule") == 2 and body.count("\\bottomrule") == 1,
              "LaTeX: booktabs rules toprule, 2 midrule, bottomrule")
        check(body.index("\\midrule") < body.rindex("\\midrule") < body.index("\\bottomrule"), "LaTeX: midrules")
        check(rows[-2].startswith("Mean") and rows[-1].startswith("Std"), "LaTeX: mean and std rows last")
        check(all(re.match(r"^seed[0-9]--seed[0-9] ", r) for r in rows[1:7]), "LaTeX: pairs named seedI--seedJ")
        heads += [tex_visible(c) for c in rows[0].rstrip()[:-2].split("&")][1:]
    check(len(heads) == len(set(heads)) == 24, "LaTeX: the 24 columns, each once: %r" % heads)
    check("\\hline" not in tex, "LaTeX: booktabs, no \\hline")
    # the intervals: a row per pair and alignment, each interval the JSON's to 4 decimals
    if len(specs) == 5:
        _, rows = tex_rows(tex, specs[-1])
        cells = [[c.strip() for c in l.rstrip()[:-2].split("&")] for l in rows[1:]]
        check(len(cells) == 6 * 6, "LaTeX intervals: 6 alignments of 6 pairs (%d rows)" % len(cells))
        names = ["Naive", "Skip", "Gate", "Expert", "Act.", "Router"]  # cost_methods[]'s titles
        bad = []
        for k, p in enumerate(S["pairs"]):
            for i, (path, get) in enumerate(CURVES):
                c = cells[6 * k + i] if 6 * k + i < len(cells) else [""] * 6
                lo, hi = get(p)["barrier_ci95"]
                want = [names[i], "%.4f" % get(p)["barrier"], "[%.4f, %.4f]" % (lo, hi)]
                if i >= 2:
                    rk = get(p)["rank_ci95"]
                    want += ["%d" % get(p)["rank"], "[%.0f, %.0f]" % tuple(rk)]
                else:
                    want += ["", ""]
                if c[1:] != want or (i == 0) != c[0].startswith("seed"):
                    bad.append((c, want))
        check(not bad, "LaTeX intervals: each cell the JSON's: %s" % bad[:2])

def png_pixels(path):
    """(width, height, rows of RGB bytes) of an 8-bit RGB PNG."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    i, idat, w, h = 8, b"", 0, 0
    while i < len(data):
        n = int.from_bytes(data[i:i + 4], "big")
        typ, body = data[i + 4:i + 8], data[i + 8:i + 8 + n]
        if typ == b"IHDR":
            w, h = int.from_bytes(body[0:4], "big"), int.from_bytes(body[4:8], "big")
            assert body[8] == 8 and body[9] == 2, "8-bit RGB"
        elif typ == b"IDAT":
            idat += body
        i += 12 + n
    raw = zlib.decompress(idat)
    stride, rows, prev = w * 3, [], bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - 3] if x >= 3 else 0
            b, c = prev[x], prev[x - 3] if x >= 3 else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, rows


def check_png(paths):
    w, h, rows = png_pixels(paths["png"])
    check((w, h) == (960, 840), "PNG: 960 x 840 (%d x %d)" % (w, h))
    if (w, h) != (960, 840):
        return
    px = lambda x, y: rows[y][3 * x:3 * x + 3]  # noqa: E731
    check(px(0, 0) == b"\xff\xff\xff" and px(w - 1, h - 1) == b"\xff\xff\xff", "PNG: white corners")

    def count(rgb, y0, y1):
        c = bytes.fromhex(rgb)
        return sum(row[x:x + 3] == c for row in rows[y0:y1] for x in range(0, 3 * w, 3))
    # bars (top 540 rows): naive (vermillion) bars are the tallest, expert (blue) present
    check(count("d55e00", 0, 540) > 2000, "PNG: naive bars in the top panel")
    check(count("0072b2", 0, 540) > 50, "PNG: expert bars in the top panel")
    check(count("d55e00", 540, 840) == 0, "PNG: no naive colour in the rank strip")
    check(count("cc79a7", 540, 840) > 50 and count("0072b2", 540, 840) > 50, "PNG: both methods in the rank strip")


def test_sampled(tmp):
    paths = []
    for s in (1, 2, 3):
        p = os.path.join(tmp, "n10_%d.safetensors" % s)
        t, meta = gen_ckpt.write_layer(p, seed=s, n=10, d=6, h=4)
        paths.append(p)
        if s == 1:
            e = os.path.join(tmp, "n10_eval.safetensors")
            gen_ckpt.write_evalset(e, t, meta, seed=9, N=40)
    js = os.path.join(tmp, "n10.json")
    r = run("study", *paths, "--eval", e, "--points", 3, "--samples", 60, "--seed", 2, "-q", "--json", js)
    check(r.returncode == 0, "sampled study ran: %s" % r.stderr[-300:])
    if r.returncode:
        return
    S = json.load(open(js))
    check(len(S["pairs"]) == 3 and S["exhaustive"] is False, "sampled: 3 pairs, not exhaustive")
    for p in S["pairs"]:
        for m in ("gate", "expert"):
            lo, hi = p["methods"][m]["rank_percentile_ci95"]
            check(0 <= lo <= p["methods"][m]["rank_percentile"] <= hi <= 100, "sampled: %s interval holds the estimate" % m)


def test_sampled_zero_share(tmp):
    """A sampled pool (n = 10): the orders tied at 0 are counted over the sample,
    "of S sampled", and stand for the whole set of 10! orders as an estimate
    with scipy's 95% Wilson interval; the pool mixes a scramble (few ties) with
    an unrelated seed (all tied) so the share is neither 0 nor 1."""
    from scipy.stats import binomtest
    S_N, NSET = 200, math.factorial(10)
    paths = [os.path.join(tmp, "z_%s.safetensors" % k) for k in ("a", "scr", "b")]
    t, meta = gen_ckpt.write_layer(paths[0], seed=1, n=10, d=8, h=8, router="topk", k=2)
    e = os.path.join(tmp, "z_eval.safetensors")
    gen_ckpt.write_evalset(e, t, meta, seed=9, N=60)
    gen_ckpt.write_layer(paths[2], seed=2, n=10, d=8, h=8, router="topk", k=2)
    r = run("scramble", paths[0], "-o", paths[1], "--seed", 5)
    check(r.returncode == 0, "zero share: scramble ran")
    js, cs = os.path.join(tmp, "z.json"), os.path.join(tmp, "z.csv")
    args = ("--eval", e, "--points", 5, "--samples", S_N, "--seed", 2)
    r = run("study", *paths, *args, "--json", js, "--csv", cs)
    check(r.returncode == 0, "zero share: study ran: %s" % r.stderr[-300:])
    if r.returncode:
        return
    S = json.load(open(js))
    zs = []
    for k, p in enumerate(S["pairs"]):
        lj = os.path.join(tmp, "zl%d.json" % k)
        r2 = run("landscape", p["a"], p["b"], *args, "-q", "--json", lj)
        L = json.load(open(lj))
        z = sum(1 for o in L["orders"] if o["barrier"] <= L["tau"])
        zs.append(z)
        lo, hi = binomtest(z, S_N).proportion_ci(0.95, "wilson")
        got = p.get("zero_tied_percent_ci95") or [None, None]
        check(r2.returncode == 0 and p["zero_tied"] == z and p.get("orders_ranked") == S_N == len(L["orders"])
              and p.get("orders_in_set") == NSET, "zero share: pair %d counts %s of %s sampled (landscape: %d of %d)"
              % (k, p["zero_tied"], p.get("orders_ranked"), z, len(L["orders"])))
        check(abs(p.get("zero_tied_percent", -1) - 100.0 * z / S_N) <= 1e-9
              and abs(p.get("zero_tied_estimate", -1) - z / S_N * NSET) <= 1e-6 * NSET,
              "zero share: pair %d percent %s and estimate %s of 10!" % (k, p.get("zero_tied_percent"),
                                                                       p.get("zero_tied_estimate")))
        check(None not in got and abs(got[0] - 100 * lo) <= 1e-9 and abs(got[1] - 100 * hi) <= 1e-9,
              "zero share: pair %d interval %s vs scipy's Wilson %s" % (k, got, (100 * lo, 100 * hi)))
        for m in ("gate", "expert"):
            q = p["methods"][m]
            want = 1 + (q["rank"] - 1) / S_N * NSET
            check(abs(q.get("rank_estimate", -1) - want) <= 1e-9 * want, "pair %d %s: rank %s of %d sampled "
                  "estimates %s of 10! (got %s)" % (k, m, q["rank"], S_N, want, q.get("rank_estimate")))
    z, n = sum(zs), S_N * len(zs)
    check(0 < z < n, "zero share: the pool has tied and untied orders (%d of %d)" % (z, n))
    m = re.search(r"tied at barrier 0 \(B <= tau\): (\d+) of (\d+) sampled over the pairs \(([\d.]+)%\)"
                  r".*of all (\d+) orders \(95% CI ([\d.]+)%\.\.([\d.]+)%", r.stdout)
    lo, hi = binomtest(z, n).proportion_ci(0.95, "wilson")
    check(m is not None and (int(m.group(1)), int(m.group(2)), int(m.group(4))) == (z, n, NSET)
          and abs(float(m.group(3)) - 100 * z / n) < 0.006 and abs(float(m.group(5)) - 100 * lo) < 0.006
          and abs(float(m.group(6)) - 100 * hi) < 0.006,
          "zero share: text counts over the sample, estimate with its interval (%s)"
          % [x for x in r.stdout.splitlines() if "tied at barrier 0" in x])
    check("%d sampled of %d orders per pair" % (S_N, NSET) in r.stdout
          and "are among the %d sampled orders" % S_N in r.stdout, "zero share: header says the sample size")
    R = list(csv.DictReader([x for x in open(cs) if not x.startswith("#")]))
    check([float(x["zero_tied_percent"]) for x in R[:3]] == [100.0 * v / S_N for v in zs]
          and all(float(x["zero_tied_percent_lo"]) <= float(x["zero_tied_percent"]) <= float(x["zero_tied_percent_hi"])
                  for x in R[:3]), "zero share: CSV percent and its interval")


def test_errors(tmp):
    r = run("study", os.path.join(D4, "seed1.safetensors"), "--eval", os.path.join(D4, "eval.safetensors"))
    check(r.returncode == 2 and "two checkpoints" in r.stderr, "one checkpoint: usage error")
    r = run("study", os.path.join(tmp, "missing.safetensors"), os.path.join(D4, "seed1.safetensors"),
            "--eval", os.path.join(D4, "eval.safetensors"))
    check(r.returncode == 1 and "missing.safetensors" in r.stderr, "missing file: named")
    empty = os.path.join(tmp, "empty")
    os.mkdir(empty)
    r = run("study", empty, "--eval", os.path.join(D4, "eval.safetensors"))
    check(r.returncode == 1 and "no checkpoints" in r.stderr, "empty directory: named")
    r = run("study", D4, "--json", os.path.join(D4, "seed2.safetensors"))
    check(r.returncode == 1, "refuses to write over an input")
    r = run("study", D4, "--json", os.path.join(tmp, "x"), "--csv", os.path.join(tmp, "x"))
    check(r.returncode == 2, "two outputs naming one file: usage error")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        r, paths = study_outputs(tmp)
        if r is not None:
            S = json.load(open(paths["json"]))
            check("mean" in r.stdout and "seed1 / seed2" in r.stdout, "text table with pairs and mean")
            check_against_landscape(tmp, S)
            check_once(S)
            check_summary(S)
            check_csv(paths, S)
            check_latex(paths, S)
            check_png(paths)
        test_sampled(tmp)
        test_sampled_zero_share(tmp)
        test_teacher_dir(tmp)
        test_family_dirs(tmp)
        test_errors(tmp)
    return testutil.summary("test_study")


if __name__ == "__main__":
    sys.exit(main())
