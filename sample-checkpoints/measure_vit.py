#!/usr/bin/env python3
"""measure_vit.py - the ViT samples' study table: `moescope study` on each pool of vit/
(25 points, all 24 orders of the MoE block, its 6 pairs of seeds), one row per pool with
the pairs' means and ranges, in the terms of the paper's Tables 2 (the data-free order's
rank among the 24 orders, L-hat) and 3 (the aligned barrier as a share of the naive one).

usage: MOESCOPE=./moescope python3 sample-checkpoints/measure_vit.py [--update-readme] [--root DIR]
(--update-readme: the table between README.md's <!-- vit table begin/end --> markers)
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
POOLS = [("dense4", "first (0)", "dense, n = 4"), ("topk4", "first (0)", "top-2, n = 4"),
         ("shared4", "first (0)", "top-2 + 1 shared, n = 4"), ("topk4_last", "last (1)", "top-2, n = 4")]


def study(moescope, root, pool):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "study.json")
        subprocess.run([moescope, "study", os.path.join(root, pool), "--points", "25", "--json", out],
                       check=True, stdout=subprocess.DEVNULL)
        with open(out) as f:
            return json.load(f)


def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return (fmt % lo) if fmt % lo == fmt % hi else "%s–%s" % (fmt % lo, fmt % hi)


def row(pool, where, router, S):
    P = S["pairs"]
    mean = lambda key: S["summary"][key]["mean"]  # noqa: E731
    acc = [p["endpoints"][k] for p in P for k in ("acc_a", "acc_b")]
    ranks = [p["methods"]["expert"]["rank"] for p in P]
    granks = [p["methods"]["gate"]["rank"] for p in P]
    lhat = [p["methods"]["expert"]["l_hat"] for p in P if p["methods"]["expert"]["l_hat"] is not None]
    share = 100 * mean("methods.expert.barrier") / mean("naive.barrier") if mean("naive.barrier") > 0 else float("nan")
    return ("| `%s/` | %s | %s | %s | %.4f | %.4f | %.4f | %.2f (%s) | %.2f (%s) | %s | %.1f%% | %.2f |"
            % (pool, where, router, span([100 * a for a in acc], "%.1f%%"), mean("naive.barrier"),
               mean("skip_order.barrier"), mean("methods.expert.barrier"), sum(ranks) / len(ranks),
               span(ranks, "%d"), sum(granks) / len(granks), span(granks, "%d"),
               span(lhat, "%.2f") if lhat else "n/a", share, mean("proxy.spearman")))


def table(moescope, root):
    head = ("| pool | MoE block | router | test accuracy (4 seeds) | naive | skip-order | expert (full) | "
            "expert rank of 24: mean (range) | gate rank | L̂ (expert, %) | full / naive | proxy ρ |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|")
    return "\n".join([head] + [row(p, w, r, study(moescope, root, p)) for p, w, r in POOLS])


def main(argv):
    moescope = os.environ.get("MOESCOPE", os.path.join(HERE, "..", "moescope"))
    root = argv[argv.index("--root") + 1] if "--root" in argv else os.path.join(HERE, "vit")
    t = table(moescope, root)
    print(t)
    if "--update-readme" in argv:
        path = os.path.join(HERE, "README.md")
        with open(path) as f:
            s = f.read()
        a, b = "<!-- vit table begin -->\n", "<!-- vit table end -->"
        i, j = s.index(a) + len(a), s.index(b)
        with open(path + ".tmp", "w") as f:
            f.write(s[:i] + t + "\n" + s[j:])
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
