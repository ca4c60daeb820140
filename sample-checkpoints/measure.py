#!/usr/bin/env python3
"""measure.py - the table of sample-checkpoints/README.md.

For every seed pair of the 4-expert variants: test accuracy of both endpoints,
the naive barrier (identity order, no weight matching), the barrier after full
alignment (expert order by the `expert` cost + weight matching), the best and
worst barrier over the 24 expert orders (each with weight matching), and the
targets of issue 4 (endpoints >= 90%, naive >= 3x full, worst >= 2x best).

Engines: `native` runs `$MOESCOPE landscape --json` (the default when the
binary has the command); `numpy` uses tests/oracle.py (forward + align) and
does the interpolation itself (T = 25 points; the barrier is the largest rise of the loss above the chord);
`both` runs the two and reports how far apart they are.

usage: measure.py [--engine native|numpy|both] [--update-readme] [variant ...]
Exit status 1 if a target is missed."""
import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))
import oracle  # noqa: E402

VARIANTS = ["dense4", "topk4", "shared4"]
SEEDS = [1, 2, 3, 4]
T = 25


# ------------------------------------------------------------------ numpy engine

def lerp(a, b, t):
    """(1-t) a + t b over a layer dict (arrays, lists of expert dicts)."""
    if isinstance(a, dict):
        return {k: lerp(a[k], b[k], t) if k in b else a[k] for k in a}
    if isinstance(a, list):
        return [lerp(x, y, t) for x, y in zip(a, b)]
    if isinstance(a, np.ndarray) and a.dtype.kind == "f":
        return (1 - t) * a + t * b
    return a


def curve(A, Bp, ev):
    loss, acc = [], []
    for m in range(T):
        r = oracle.eval(lerp(A, Bp, m / (T - 1)), ev)
        loss.append(r["loss"])
        acc.append(r["accuracy"])
    return np.array(loss), np.array(acc)


def barrier(loss):
    t = np.arange(T) / (T - 1)
    return float(np.max(loss - ((1 - t) * loss[0] + t * loss[-1])))


def measure_numpy(a, b, e):
    A, B, ev = oracle.load_layer(a), oracle.load_layer(b), oracle.load_evalset(e)
    naive_loss, acc = curve(A, B, ev)
    full = oracle.align(A, B, method="expert")
    full_loss, _ = curve(A, full["layer"], ev)
    orders = []
    for pi in itertools.permutations(range(A["n"])):
        Bp = oracle.align(A, B, order=list(pi))["layer"]
        orders.append((barrier(curve(A, Bp, ev)[0]), list(pi)))
    orders.sort()
    return {"acc_a": acc[0], "acc_b": acc[-1], "naive": barrier(naive_loss),
            "full": barrier(full_loss), "full_order": [int(x) for x in full["order"]],
            "rank": 1 + sum(1 for o in orders if o[0] < barrier(full_loss) - 1e-12),
            "best": orders[0][0], "worst": orders[-1][0]}


def no_moe_baseline(variant="dense4"):
    """Loss and accuracy of the frozen features + head alone (D = 0: every expert's
    output layer zeroed), the README's evidence that the MoE carries the task."""
    L = oracle.load_layer(os.path.join(HERE, variant, "seed1.safetensors"))
    for e in L["experts"] + L["shared"]:
        e["w2"] = np.zeros_like(e["w2"])
        e["b2"] = np.zeros_like(e["b2"])
    r = oracle.eval(L, oracle.load_evalset(os.path.join(HERE, variant, "eval.safetensors")))
    return r["loss"], r["accuracy"]


# ----------------------------------------------------------------- native engine

def measure_native(moescope, a, b, e):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "l.json")
        subprocess.run([moescope, "landscape", a, b, "--eval", e, "--points", str(T),
                        "--json", out], check=True, stdout=subprocess.DEVNULL)
        j = json.load(open(out))
    ex = j["methods"]["expert"]
    bars = [o["barrier"] for o in j["orders"]]
    return {"acc_a": j["endpoints"]["acc_a"], "acc_b": j["endpoints"]["acc_b"],
            "naive": j["naive"]["barrier"], "full": ex["barrier"], "full_order": ex["order"],
            "rank": ex["rank"], "best": min(bars), "worst": max(bars)}


def native_available(moescope):
    if not moescope or not os.access(moescope, os.X_OK):
        return False
    r = subprocess.run([moescope, "landscape", "--help"], capture_output=True)
    return r.returncode == 0


# ------------------------------------------------------------------------- table

def ratio(x, y):
    return "∞" if y <= 1e-9 else "%.1f" % (x / y)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", choices=["auto", "native", "numpy", "both"], default="auto")
    ap.add_argument("--update-readme", action="store_true")
    ap.add_argument("variants", nargs="*", default=VARIANTS)
    args = ap.parse_args()
    moescope = os.environ.get("MOESCOPE", os.path.join(HERE, "..", "moescope"))
    engine = args.engine
    if engine == "auto":
        engine = "native" if native_available(moescope) else "numpy"

    rows, ok, maxdiff = [], True, 0.0
    for v in args.variants:
        e = os.path.join(HERE, v, "eval.safetensors")
        for s1, s2 in itertools.combinations(SEEDS, 2):
            a = os.path.join(HERE, v, "seed%d.safetensors" % s1)
            b = os.path.join(HERE, v, "seed%d.safetensors" % s2)
            r = measure_numpy(a, b, e) if engine == "numpy" else measure_native(moescope, a, b, e)
            if engine == "both":
                q = measure_numpy(a, b, e)
                for k in ("acc_a", "acc_b", "naive", "full", "best", "worst"):
                    maxdiff = max(maxdiff, abs(q[k] - r[k]))
            met = (min(r["acc_a"], r["acc_b"]) >= 0.90 and r["naive"] >= 3 * r["full"]
                   and r["worst"] >= 2 * r["best"])
            ok &= met
            rows.append("| %s | %d–%d | %.1f%% | %.1f%% | %.4f | %.4f | %s (%d/24) | %.4f | %.4f "
                        "| %s | %s | %s |" % (
                            v, s1, s2, 100 * r["acc_a"], 100 * r["acc_b"], r["naive"], r["full"],
                            " ".join(map(str, r["full_order"])), r["rank"], r["best"],
                            r["worst"], ratio(r["naive"], r["full"]),
                            ratio(r["worst"], r["best"]), "yes" if met else "**no**"))
    head = ["| variant | seeds | acc A | acc B | naive | full | expert order (rank) | best "
            "| worst | naive/full | worst/best | targets |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    table = "\n".join(head + rows)
    engine_note = {"native": "`moescope landscape --json`",
                   "numpy": "the numpy oracle (tests/oracle.py)",
                   "both": "`moescope landscape --json`, cross-checked with the numpy oracle"}[engine]
    note = "Measured by %s, %d points, on each variant's eval.safetensors." % (engine_note, T)
    if engine == "both":
        note += " Largest difference native vs numpy: %.2g." % maxdiff
    print(table)
    print()
    print(note)
    print("targets:", "all met" if ok else "MISSED")
    bl, ba = no_moe_baseline()
    print("MoE switched off (D = 0): test accuracy %.1f%%, loss %.2f" % (100 * ba, bl))
    if args.update_readme:
        path = os.path.join(HERE, "README.md")
        text = open(path).read()
        begin, end = "<!-- table begin -->", "<!-- table end -->"
        i, j = text.index(begin) + len(begin), text.index(end)
        text = text[:i] + "\n" + table + "\n\n" + note + "\n" + text[j:]
        open(path, "w").write(text)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
