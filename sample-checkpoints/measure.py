#!/usr/bin/env python3
"""measure.py - the per-pair tables of sample-checkpoints/README.md, every set,
every seed pair, as measured by `moescope study`.

For each set it runs

    moescope study SET/seed1.safetensors ... SET/seed4.safetensors \\
        --eval SET/eval.safetensors --points 25 --json F

and writes one table per set (a row per pair i < j and the mean over the
pairs) and a summary table (ratios of the mean barriers, the expert method's
mean rank, the orders tied at barrier 0, and the targets: skip-order >= 5x
and naive >= 10x the full alignment's barrier, the expert method's mean rank
in the best 10% of orders, fewer than 1% of orders tied at 0). "full" is the
expert cost method's order + weight matching. tests/commands/test_samples_table.py
checks the README against a fresh study.

With --gpt, the GPT network pools instead (gpt/topk4 ... gpt/every4): for each

    moescope study gpt/POOL --points 11 --no-proxy --json F     (topk8: --samples 100)

a table per pool (every pair: end-point losses, naive, skip-order, the expert and
gate methods' barriers and ranks, best, worst, L-hat, full / naive) and a summary
beside the paper's numbers (its Tables 10, 3 and 2), between the README's
"gpt study tables" markers.

With --qwen3moe, the Qwen3-MoE pool (qwen3moe/, the same columns):

    moescope study qwen3moe --points 11 --no-proxy --json F

between the README's "qwen3moe study table" markers.

usage: measure.py [--update-readme] [--json-dir DIR] [--baseline] [--gpt | --qwen3moe] [set ...]
  --json-dir DIR   keep (or, with --from-json, read) each set's study JSON there
  --from-json      format the tables from DIR's JSON instead of running study
  --baseline       also print the frozen features + head alone (MoE switched off)
  --gpt            the GPT network pools
  --qwen3moe       the Qwen3-MoE pool"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SETS = ["teacher4", "teacher8", "dense4", "topk4", "shared4", "dense8"]
SEEDS = [1, 2, 3, 4]
T = 25
BEGIN, END = "<!-- study tables begin -->", "<!-- study tables end -->"
GPT_SETS = ["topk4", "dense4", "shared4", "topk8", "every4", "paper4"]  # paper4 once made
GPT_T = 11
GPT_SAMPLES = 100  # orders sampled per pair when n! > 720 (each order is 11 network evaluations)
GPT_BEGIN, GPT_END = "<!-- gpt study tables begin -->", "<!-- gpt study tables end -->"
QWEN_BEGIN, QWEN_END = "<!-- qwen3moe study table begin -->", "<!-- qwen3moe study table end -->"


def run_study(moescope, name, out):
    d = os.path.join(HERE, name)
    seeds = [os.path.join(name, "seed%d.safetensors" % s) for s in SEEDS]
    subprocess.run([moescope, "study", *seeds, "--eval", os.path.join(name, "eval.safetensors"),
                    "--points", str(T), "--json", out, "-q"], check=True, cwd=HERE)
    assert os.path.isdir(d)
    return json.load(open(out))


def run_gpt_study(moescope, name, out):
    pool = name if name == "qwen3moe" else os.path.join("gpt", name)
    cfg = json.load(open(os.path.join(HERE, pool, "seed1", "config.json")))
    n = cfg["moe"]["num_experts"] if "moe" in cfg else cfg["num_experts"]
    extra = ["--samples", str(GPT_SAMPLES)] if n > 6 else []
    subprocess.run([moescope, "study", pool, "--points", str(GPT_T), "--no-proxy", "--json", out, "-q", *extra],
                   check=True, cwd=HERE)
    return json.load(open(out))


def seed_of(path):
    return os.path.basename(path).replace("seed", "").replace(".safetensors", "")


def fmt_rank(b, rank, N):
    return "%.4f (%d/%d)" % (b, rank, N)


def set_table(name, S):
    """Markdown: the pairs of set `name` from its study JSON S, then the mean row."""
    P, N = S["pairs"], int(math.factorial(S["n"]))
    cls = P[0]["endpoints"]["acc_a"] is not None
    head = ["seeds", "loss A", "loss B"] + (["acc A", "acc B"] if cls else []) + \
        ["naive", "skip-order", "expert (rank)", "gate (rank)", "best", "worst", "orders at 0"]
    lines = ["`%s/` (n = %d, %d orders):" % (name, S["n"], N), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in P:
        e, g = p["methods"]["expert"], p["methods"]["gate"]
        cells = ["%s–%s" % (seed_of(p["a"]), seed_of(p["b"])), "%.4f" % p["endpoints"]["loss_a"],
                 "%.4f" % p["endpoints"]["loss_b"]]
        if cls:
            cells += ["%.1f%%" % (100 * p["endpoints"]["acc_a"]), "%.1f%%" % (100 * p["endpoints"]["acc_b"])]
        cells += ["%.4f" % p["naive"]["barrier"], "%.4f" % p["skip_order"]["barrier"],
                  fmt_rank(e["barrier"], e["rank"], N), fmt_rank(g["barrier"], g["rank"], N),
                  "%.4f" % p["best"]["barrier"], "%.4f" % p["worst"]["barrier"], "%d" % p["zero_tied"]]
        lines.append("| " + " | ".join(cells) + " |")
    m = lambda k: S["summary"][k]["mean"]  # noqa: E731
    cells = ["mean", "%.4f" % m("endpoints.loss_a"), "%.4f" % m("endpoints.loss_b")]
    if cls:
        cells += ["%.1f%%" % (100 * m("endpoints.acc_a")), "%.1f%%" % (100 * m("endpoints.acc_b"))]
    cells += ["%.4f" % m("naive.barrier"), "%.4f" % m("skip_order.barrier"),
              "%.4f (%.2f)" % (m("methods.expert.barrier"), m("methods.expert.rank")),
              "%.4f (%.2f)" % (m("methods.gate.barrier"), m("methods.gate.rank")),
              "%.4f" % m("best.barrier"), "%.4f" % m("worst.barrier"), "%.2f" % m("zero_tied")]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def targets(S):
    """(skip/full, naive/full, mean rank, rank share, zeros, all orders, missed targets)."""
    N = math.factorial(S["n"])
    sk, nv = S["ratios"]["skip_order/expert"], S["ratios"]["naive/expert"]
    rank = S["summary"]["methods.expert.rank"]["mean"]
    zeros = sum(p["zero_tied"] for p in S["pairs"])
    total = N * len(S["pairs"])
    missed = []
    if not (sk is not None and sk >= 5):
        missed.append("skip-order / full < 5")
    if not (nv is not None and nv >= 10):
        missed.append("naive / full < 10")
    if rank > 0.1 * N:
        missed.append("rank not in the best 10%")
    if zeros >= 0.01 * total:
        missed.append("≥ 1% of orders tied at 0")
    return sk, nv, rank, 100.0 * rank / N, zeros, total, missed


def gpt_table(name, S):
    """Markdown: every pair of GPT pool `name` from its study JSON S, then the mean row."""
    P = S["pairs"]
    N = P[0]["orders_in_set"]
    head = ["seeds", "loss A", "loss B", "naive", "skip-order", "full (rank)", "gate (rank)", "best", "worst",
            "L̂ (full)", "full / naive"]
    sampled = "" if S["exhaustive"] else ", %d sampled per pair (ranks among them)" % P[0]["orders_ranked"]
    lines = ["`%s/` (n = %d, %d orders%s):" % (pool_path(name), S["n"], N, sampled), "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in P:
        e, g = p["methods"]["expert"], p["methods"]["gate"]
        nr = p["orders_ranked"]
        lines.append("| " + " | ".join([
            "%s–%s" % (seed_of(p["a"]), seed_of(p["b"])), "%.4f" % p["endpoints"]["loss_a"],
            "%.4f" % p["endpoints"]["loss_b"], "%.4f" % p["naive"]["barrier"], "%.4f" % p["skip_order"]["barrier"],
            fmt_rank(e["barrier"], e["rank"], nr), fmt_rank(g["barrier"], g["rank"], nr),
            "%.4f" % p["best"]["barrier"], "%.4f" % p["worst"]["barrier"],
            "-" if e["l_hat"] is None else "%.2f" % e["l_hat"],
            "%.1f%%" % (100 * e["barrier"] / p["naive"]["barrier"])]) + " |")
    m = lambda k: S["summary"][k]["mean"]  # noqa: E731
    lines.append("| " + " | ".join([
        "mean", "%.4f" % m("endpoints.loss_a"), "%.4f" % m("endpoints.loss_b"), "%.4f" % m("naive.barrier"),
        "%.4f" % m("skip_order.barrier"), "%.4f (%.2f)" % (m("methods.expert.barrier"), m("methods.expert.rank")),
        "%.4f (%.2f)" % (m("methods.gate.barrier"), m("methods.gate.rank")), "%.4f" % m("best.barrier"),
        "%.4f" % m("worst.barrier"), "%.2f" % m("methods.expert.l_hat"),
        "%.1f%%" % (100 * m("methods.expert.barrier") / m("naive.barrier"))]) + " |")
    return "\n".join(lines)


def pool_path(name):
    return name if name == "qwen3moe" else "gpt/" + name


def gpt_summary(studies):
    """One row per pool beside the paper's: skip-order / full and the barrier ranges
    (its Table 10), full / naive (Table 3), the expert method's ranks and L-hat (Table 2)."""
    lines = ["| pool | full barrier | skip-order barrier | skip-order / full | full / naive | full's rank | "
             "L̂ (full) |", "|---|---|---|---|---|---|---|"]
    for name, S in studies:
        P = S["pairs"]
        full = [p["methods"]["expert"]["barrier"] for p in P]
        skip = [p["skip_order"]["barrier"] for p in P]
        share = [100 * p["methods"]["expert"]["barrier"] / p["naive"]["barrier"] for p in P]
        ranks = [p["methods"]["expert"]["rank"] for p in P]
        lh = [p["methods"]["expert"]["l_hat"] for p in P if p["methods"]["expert"]["l_hat"] is not None]
        sk = S["ratios"]["skip_order/expert"]
        lines.append("| %s | %.4f–%.4f | %.4f–%.4f | %s | %.1f–%.1f%% | %d–%d of %d | %.2f–%.2f |" % (
            pool_path(name), min(full), max(full), min(skip), max(skip), ratio(sk), min(share), max(share), min(ranks),
            max(ranks), P[0]["orders_ranked"], min(lh) if lh else 0, max(lh) if lh else 0))
    lines.append("| the paper (GPT-2) | 0.0044–0.0066 | 0.14–0.86 | — | ≈ 4–11% | 2–5 of 24 | 0.07–3.42 |")
    return "\n".join(lines)


def ratio(v):
    return "∞" if v is None else "%.1f" % v


def summary_table(studies):
    lines = ["| set | skip-order / full | naive / full | expert method's mean rank | orders tied at 0 | targets |",
             "|---|---|---|---|---|---|"]
    for name, S in studies:
        sk, nv, rank, share, zeros, total, missed = targets(S)
        lines.append("| %s | %s | %s | %.2f of %d (best %.3g%%) | %d of %d | %s |" % (
            name, ratio(sk), ratio(nv), rank, math.factorial(S["n"]), share, zeros, total,
            "all met" if not missed else "missed: " + "; ".join(missed)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--update-readme", action="store_true")
    ap.add_argument("--json-dir")
    ap.add_argument("--from-json", action="store_true")
    ap.add_argument("--baseline", action="store_true")
    ap.add_argument("--gpt", action="store_true")
    ap.add_argument("--qwen3moe", action="store_true")
    ap.add_argument("sets", nargs="*")
    args = ap.parse_args()
    # the GPT pools that are made (make_gpt.py POOL adds one)
    every = [g for g in GPT_SETS if os.path.isdir(os.path.join(HERE, "gpt", g))] if args.gpt else SETS
    if args.qwen3moe:
        args.gpt, every = True, ["qwen3moe"]
    args.sets = args.sets or every
    moescope = os.path.abspath(os.environ.get("MOESCOPE", os.path.join(HERE, "..", "moescope")))
    studies = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.sets:
            out = os.path.join(args.json_dir or tmp, "%s.study.json" % name)
            if args.from_json:
                S = json.load(open(out))
            else:
                print("measure: study %s ..." % name, file=sys.stderr)
                S = (run_gpt_study if args.gpt else run_study)(moescope, name, out)
            studies.append((name, S))
    if args.gpt:
        body = "\n\n".join(gpt_table(n, S) for n, S in studies) + "\n\n" + gpt_summary(studies)
    else:
        body = "\n\n".join(set_table(n, S) for n, S in studies) + "\n\n" + summary_table(studies)
    print(body)
    if args.baseline:
        print("MoE switched off (D = 0): test accuracy %.1f%%, loss %.2f" % no_moe_baseline())
    if args.update_readme:
        if [n for n, _ in studies] != every:
            sys.exit("measure: --update-readme needs every set (%s)" % " ".join(every))
        path = os.path.join(HERE, "README.md")
        text = open(path).read()
        b, e = (QWEN_BEGIN, QWEN_END) if args.qwen3moe else (GPT_BEGIN, GPT_END) if args.gpt else (BEGIN, END)
        i, j = text.index(b) + len(b), text.index(e)
        text = text[:i] + "\n" + body + "\n" + text[j:]
        tmp = path + ".tmp"
        open(tmp, "w").write(text)
        os.replace(tmp, path)
    return 0


def no_moe_baseline(variant="dense4"):
    """Loss and accuracy of the frozen features + head alone (D = 0: every expert's
    output layer zeroed), the README's evidence that the MoE carries the task."""
    import numpy as np
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    import oracle
    L = oracle.load_layer(os.path.join(HERE, variant, "seed1.safetensors"))
    for e in L["experts"] + L["shared"]:
        e["w2"] = np.zeros_like(e["w2"])
        e["b2"] = np.zeros_like(e["b2"])
    r = oracle.eval(L, oracle.load_evalset(os.path.join(HERE, variant, "eval.safetensors")))
    return 100 * r["accuracy"], r["loss"]


if __name__ == "__main__":
    sys.exit(main())
