"""tests/golden/test_golden.py - regression guard: the numbers moescope prints for the
bundled sample pairs are the stored ones, on any x86-64 CPU and BLAS kernel.

The stored results (tests/golden/) were produced by the release build; this test
reruns the same commands on the release build (MOESCOPE_REL: the numbers are the
question here; the sanitizers see these commands on the same samples in the
commands' own tests) and compares every number of the stored file with the fresh
one:

  * `landscape --json` for every pair of the 4-expert samples (dense4, topk4,
    shared4), one of them also with --no-wm, and one dense8 pair on 5 points
    (40320 orders; stored gzipped);
  * `curve --csv` (the evaluator's path, as printed) for the same pairs, with
    two extra orders;
  * `eval --json` of every sample checkpoint and `diagnose --json` of one pair
    per sample set.

How close is "the same". The evaluator works in float32 (losses summed in
double); BLAS kernels (SSE3, AVX2, AVX-512) sum a product in different orders,
so a loss moves by a few float32 roundings between them (measured: 3e-7
relative at most over OpenBLAS's Prescott, Sandybridge, Haswell, SkylakeX
kernels). A number f matches the stored g when

    |f - g| <= RTOL * (|g| + scale),   RTOL = 1e-5

where scale is what the number's own error scales with: for a loss, a barrier,
an AUC (differences of losses: their error is the losses' error, not a fraction
of their own size) the largest loss of the report; for L-hat the same carried
through its ratio; for an assignment's margin the assignment totals; for any
other number the largest stored value of that key. Discrete results are exact
except where the stored numbers show a near-tie that such an error could tip:

  * an accuracy is a count of samples out of N: it may move by one sample
    (1/N), an accuracy barrier by two, a routed fraction by one;
  * a rank, tie class size or AUC rank must lie within the bounds the stored
    barriers allow when each moves by the tolerance;
  * an assignment (an expert order) may differ only for one whose stored cost
    is within the tolerance of the stored optimum; a best or worst order only
    for one whose stored barrier is within it of the best's or worst's; the
    closest pair of experts and the worst slot likewise;
  * the landscape's list of orders is compared order by order (a near-tie may
    swap two neighbours), and the fresh list must be sorted by barrier.

Bit-for-bit results are checked elsewhere only where they are invariants on one
machine (thread counts, chunk sizes, lane widths).

Keys that name files or record provenance or time are not compared, nor keys
the stored file does not have (a report may gain keys). Each stored file says
which CPU and BLAS kernel made it ("made_by"; a CSV's "# made_by:" line). A
deliberate change of a number regenerates the files with

    MOESCOPE=./moescope python3 tests/golden/test_golden.py --update

(release build) in the same commit, saying why the numbers moved."""
import csv
import gzip
import json
import math
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
GOLD = HERE
SAMPLES = "sample-checkpoints"
RTOL = 1e-5

# keys that depend on where files live, on the machine or on the clock
IGNORED = {"a", "b", "eval", "checkpoint", "path", "findings", "text", "provenance", "version",
           "secs_ranks", "secs_total", "seconds", "time", "elapsed", "made_by"}
ACC_KEYS = {"acc", "accuracy", "acc_a", "acc_b"}           # k/N: one sample may flip
LOSS_KEYS = {"loss", "barrier", "loss_auc", "loss_a", "loss_b", "tau", "best_barrier"}
ORDER_KEYS = {"order", "best_order", "second_order"}


def ckpt(s, i):
    return "%s/%s/seed%d.safetensors" % (SAMPLES, s, i)


def evalset(s):
    return "%s/%s/eval.safetensors" % (SAMPLES, s)


def cases():
    """(golden file name, moescope arguments with {out} for the output path)."""
    out = []
    pairs = [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    for s in ("dense4", "topk4", "shared4"):
        for i, j in pairs:
            a, b, e = ckpt(s, i), ckpt(s, j), evalset(s)
            out.append(("landscape_%s_%d%d.json" % (s, i, j),
                        ["landscape", a, b, "--eval", e, "-q", "--json", "{out}"]))
            out.append(("curve_%s_%d%d.csv" % (s, i, j),
                        ["curve", a, b, "--eval", e, "--order", "3,1,0,2", "--order", "1,0,3,2",
                         "--csv", "{out}"]))
        a, b, e = ckpt(s, 1), ckpt(s, 2), evalset(s)
        out.append(("landscape_%s_12_nowm.json" % s,
                    ["landscape", a, b, "--eval", e, "-q", "--no-wm", "--json", "{out}"]))
        out.append(("diagnose_%s_12.json" % s,
                    ["diagnose", a, b, "--eval", e, "--json", "{out}"]))
    for s in ("dense4", "topk4", "shared4", "dense8"):
        for i in (1, 2, 3, 4):
            out.append(("eval_%s_%d.json" % (s, i),
                        ["eval", ckpt(s, i), "--eval", evalset(s), "--json", "{out}"]))
    a, b, e = ckpt("dense8", 1), ckpt("dense8", 2), evalset("dense8")
    out.append(("landscape_dense8_12_T5.json.gz",
                ["landscape", a, b, "--eval", e, "-q", "--points", "5", "--json", "{out}"]))
    out.append(("curve_dense8_12.csv",
                ["curve", a, b, "--eval", e, "--order", "7,6,5,4,3,2,1,0", "--csv", "{out}"]))
    return out


def load(path):
    """The parsed content: JSON (maybe gzipped), or a CSV as a list of rows."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        if ".json" in path:
            return json.load(f)
        # "# " lines say how the file was made (machine, clock): not compared
        return [row for row in csv.reader(line for line in f if not line.startswith("#"))]


def strip(v):
    """v without the ignored keys (what the stored file keeps)."""
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in IGNORED}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def is_num(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def key_maxima(v, out, key=None):
    """out[key] = the largest |number| stored under that key anywhere in v."""
    if isinstance(v, dict):
        for k, x in v.items():
            key_maxima(x, out, k)
    elif isinstance(v, list):
        for x in v:
            key_maxima(x, out, key)
    elif is_num(v) and key is not None and not math.isnan(v):
        out[key] = max(out.get(key, 0.0), abs(float(v)))


class Ctx:
    """What a file's tolerances derive from: its kind, the evaluation set's size N,
    the report's loss scale, the stored landscape's orders (barrier, AUC) and cost
    matrices (for a diagnose file: the landscape of the same pair)."""

    def __init__(self, name, gold, nsamples, land=None):
        self.kind = name.split("_")[0]
        self.n = nsamples
        self.gold = gold
        self.maxima = {}
        key_maxima(gold, self.maxima)
        land = gold if self.kind == "landscape" else land
        self.land = land
        lm = {}
        if land:
            key_maxima(land, lm)
        if self.kind == "curve":
            self.loss_scale = max(abs(float(x)) for r in gold[1:] for h, x in zip(gold[0], r) if h.endswith("_loss"))
        elif self.kind == "eval":
            self.loss_scale = abs(gold["loss"])
        else:
            self.loss_scale = max(lm.get("loss", 0.0), lm.get("loss_a", 0.0), lm.get("loss_b", 0.0))
        # the largest error a barrier may carry, on either side of a comparison
        self.e_barrier = 2 * RTOL * (self.loss_scale + lm.get("barrier", 0.0))
        self.orders = {}
        if land:
            for o in land.get("orders", []):
                self.orders[tuple(o["order"])] = (o["barrier"], o["loss_auc"])

    def tol(self, key, g, parent):
        """The allowed |fresh - stored| for the number g stored under key."""
        if key in ACC_KEYS:
            return 1.0 / self.n + 1e-12
        if key in ("acc_barrier",):
            return 2.0 / self.n + 1e-12
        if key in ("fraction_routed", "load_frac"):
            return 1.0 / self.n + 1e-12
        if self.kind in ("landscape", "curve", "eval") and key in LOSS_KEYS:
            scale = self.loss_scale
        elif self.kind == "diagnose" and key in ("barrier", "best_barrier"):
            scale = self.loss_scale
        elif key == "l_hat":
            top = self.gold
            denom = top["naive"]["barrier"] - top["best"]["barrier"]
            scale = self.loss_scale * (200 + 2 * abs(g)) / denom if denom > 0 else 0.0
        elif key in ("margin", "margin_rel") and parent is not None:
            scale = max(abs(parent.get("total", 0.0)), abs(parent.get("second", 0.0)))
            if key == "margin_rel":
                scale /= parent.get("cost_mean", 1.0) or 1.0
        elif key == "mean_gate" or key == "load_mean":
            scale = 1.0  # a mean of gate weights, each at most 1
        else:
            scale = self.maxima.get(key, abs(g))
        return RTOL * (abs(g) + scale)


def barrier_of(ctx, order):
    x = ctx.orders.get(tuple(order))
    return None if x is None else x[0]


def rank_bounds(ctx, b, tau):
    """(rank_lo, rank_hi, tied_lo, tied_hi, auc_near) for a chosen barrier b, with
    every stored barrier allowed to move by ctx.e_barrier."""
    e = ctx.e_barrier
    bs = [x[0] for x in ctx.orders.values() if x[0] is not None]
    if b in bs:
        bs.remove(b)  # the chosen order itself: its barrier moves with b
    lo = 1 + sum(1 for x in bs if x < b - tau - e)
    hi = 1 + sum(1 for x in bs if x < b - tau + e)
    tlo = 1 + sum(1 for x in bs if abs(x - b) <= tau - e)
    thi = 1 + sum(1 for x in bs if abs(x - b) <= tau + e)
    return lo, hi, tlo, thi


def ranks_ok(ctx, key, g, f, parent, where, out):
    """rank / tied / rank_auc: exact, or within what a near-tie allows."""
    if f == g:
        return
    b = parent.get("barrier")
    tau = ctx.land.get("tau", 0.0) if ctx.land else 0.0
    if not ctx.orders or not is_num(b):
        out.append("%s: %r, stored %r" % (where, f, g))
        return
    lo, hi, tlo, thi = rank_bounds(ctx, b, tau)
    if key == "rank":
        ok = lo <= f <= hi
    elif key == "tied":
        ok = tlo <= f <= thi
    else:  # rank_auc: somewhere in the chosen order's possible tie class
        ok = lo <= f <= hi + thi - 1 and (lo != hi or tlo != thi or thi > 1)
    if not ok:
        out.append("%s: %r, stored %r (a near-tie allows rank %d..%d, tied %d..%d)" %
                   (where, f, g, lo, hi, tlo, thi))


def assignment_cost(matrix, order):
    n = len(order)
    flat = matrix if not isinstance(matrix[0], list) else [x for r in matrix for x in r]
    return sum(flat[i * n + order[i]] for i in range(n))


def cost_matrix_for(ctx, path):
    """The stored cost matrix of the method a path's order belongs to, or None."""
    meth = next((p for p in path if p in ("gate", "expert", "activation", "router")), None)
    if not meth or not ctx.land:
        return None
    return ctx.land.get("methods", {}).get(meth, {}).get("cost_matrix")


def order_ok(ctx, key, g, f, path, parent, where, out):
    """An expert order (a list of ints): exact, or an equally good one in a near-tie."""
    if f == g:
        return
    if not (isinstance(f, list) and len(f) == len(g) and sorted(f) == sorted(g)):
        out.append("%s: %r, stored %r" % (where, f, g))
        return
    e = ctx.e_barrier
    why = None
    if "best" in path or key == "best_order":
        bf, bg = barrier_of(ctx, f), barrier_of(ctx, g)
        why = bf is not None and bg is not None and bf <= bg + e
    elif "worst" in path:
        bf, bg = barrier_of(ctx, f), barrier_of(ctx, g)
        why = bf is not None and bg is not None and bf >= bg - e
    else:
        C = cost_matrix_for(ctx, path)
        if C is not None:
            cg, cf = assignment_cost(C, g), assignment_cost(C, f)
            why = abs(cf - cg) <= RTOL * (abs(cg) + 1.0)
    if not why:
        out.append("%s: %r, stored %r (no near-tie in the stored numbers)" % (where, f, g))


def argmin_ok(vals, g, f, sign, tol):
    """index f is as good as the stored g (within tol) in vals (minimum if sign 1)."""
    return 0 <= f < len(vals) and sign * (vals[f] - vals[g]) <= tol


def orders_list_ok(ctx, g, f, where, out):
    """The landscape's orders: the same set, each within tolerance, the fresh list sorted."""
    if not isinstance(f, list) or len(f) != len(g):
        out.append("%s: expected a list of %d" % (where, len(g)))
        return
    fresh = {tuple(o.get("order", [])): o for o in f}
    if set(fresh) != set(tuple(o["order"]) for o in g):
        out.append("%s: not the same orders" % where)
        return
    for o in g:
        diff(o, fresh[tuple(o["order"])], "%s[%s]" % (where, ",".join(map(str, o["order"]))), ctx, out,
             ["orders"])
        if len(out) >= 5:
            return
    bs = [o["barrier"] for o in f]
    if any(not (x <= y) for x, y in zip(bs, bs[1:]) if not (math.isnan(x) or math.isnan(y))):
        out.append("%s: the fresh orders are not sorted by barrier" % where)


def diff(g, f, where, ctx, out, path=(), parent=None, key=None):
    """Append to out the places where fresh f differs from golden g."""
    if len(out) >= 5:
        return
    if isinstance(g, dict):
        if not isinstance(f, dict):
            out.append("%s: expected an object" % where)
            return
        for k, x in g.items():
            if k in IGNORED:
                continue
            if k not in f:
                out.append("%s.%s: missing" % (where, k))
            else:
                diff(x, f[k], "%s.%s" % (where, k), ctx, out, list(path) + [k], g, k)
        consistent(ctx, g, f, where, out)
    elif key in ORDER_KEYS and isinstance(g, list):
        order_ok(ctx, key, g, f, path, parent, where, out)
    elif key == "orders" and isinstance(g, list):
        orders_list_ok(ctx, g, f, where, out)
    elif key == "pair" and parent is not None and "dist" in parent:
        pass  # the closest pair: consistent() checks it against the stored distances
    elif isinstance(g, list):
        if not isinstance(f, list) or len(f) != len(g):
            out.append("%s: expected a list of %d" % (where, len(g)))
            return
        for i, (x, y) in enumerate(zip(g, f)):
            diff(x, y, "%s[%d]" % (where, i), ctx, out, path, parent, key)
    elif key in ("rank", "tied", "rank_auc") and is_num(g):
        ranks_ok(ctx, key, g, f, parent, where, out)
    elif is_num(g):
        # ints and floats both: 0 printed as 0 parses as int either way
        if not is_num(f):
            out.append("%s: %r, stored %r" % (where, f, g))
        elif isinstance(g, int) and isinstance(f, int) and key not in ACC_KEYS:
            # counts and indices; a continuous value printed as an integer (0) matches itself
            if f != g and not near_tie_index(ctx, key, g, f, parent):
                out.append("%s: %r, stored %r" % (where, f, g))
        elif math.isnan(g) or math.isnan(f):
            if not (math.isnan(g) and math.isnan(f)):
                out.append("%s: %r, stored %r" % (where, f, g))
        elif abs(f - g) > ctx.tol(key, g, parent):
            out.append("%s: %r, stored %r (tolerance %.3g)" % (where, f, g, ctx.tol(key, g, parent)))
    elif key in ("methods_agree", "tie"):
        pass  # derived from orders and barriers: consistent() checks them against the fresh ones
    elif g != f:
        out.append("%s: %r, stored %r" % (where, f, g))


def near_tie_index(ctx, key, g, f, parent):
    """An index (a worst slot, the closest pair's experts) that may differ in a near-tie."""
    if key == "worst_slot" and parent and "slot_residual" in parent:
        v = parent["slot_residual"]
        return argmin_ok(v, g, f, -1, RTOL * (max(v) + abs(v[g])))
    return False


def consistent(ctx, g, f, where, out):
    """Fields derived from others: the closest pair (argmin of dist), the
    diagnose's methods_agree and tie: each follows from the fresh numbers."""
    if "pair" in g and "dist" in g and isinstance(g["pair"], list) and g["pair"] != f.get("pair"):
        n = int(round(math.sqrt(len(g["dist"]))))
        i, j = g["pair"]
        fi, fj = f.get("pair", [0, 0])
        d = g["dist"]
        if not abs(d[fi * n + fj] - d[i * n + j]) <= RTOL * (max(d) + d[i * n + j]):
            out.append("%s.pair: %r, stored %r (no near-tie)" % (where, f.get("pair"), g["pair"]))
    if "methods_agree" in g and "methods" in f:
        fm = f["methods"]
        same = fm.get("gate", {}).get("order") == fm.get("expert", {}).get("order")
        if f.get("methods_agree") != same:
            out.append("%s.methods_agree: %r, but the orders say %r" % (where, f.get("methods_agree"), same))
    if "tie" in g and "barrier" in g and g["tie"] != f.get("tie"):
        # tie: chosen - best <= 1e-6 * max(1, loss); a flip needs the stored gap at that bound
        gap = g["barrier"] - g["best_barrier"]
        bound = 1e-6 * max(1.0, ctx.loss_scale)
        if abs(gap - bound) > 2 * ctx.e_barrier:
            out.append("%s.tie: %r, stored %r (gap %.3g, not near %.3g)" % (where, f.get("tie"), g["tie"], gap, bound))


def diff_csv(g, f, name, ctx, out):
    """A curve CSV: the same header, rows within tolerance (losses, accuracies)."""
    if not f or f[0] != g[0] or len(f) != len(g):
        out.append("%s: header or row count differs" % name)
        return
    for r, (rg, rf) in enumerate(zip(g[1:], f[1:]), 1):
        if len(rg) != len(rf):
            out.append("%s[%d]: %d fields, stored %d" % (name, r, len(rf), len(rg)))
            continue
        for h, x, y in zip(g[0], rg, rf):
            x, y = float(x), float(y)
            key = "t" if h == "t" else ("acc" if h.endswith("_acc") else "loss")
            t = 1e-9 if key == "t" else ctx.tol(key, x, None)
            if abs(x - y) > t:
                out.append("%s[%d].%s: %r, stored %r (tolerance %.3g)" % (name, r, h, y, x, t))
        if len(out) >= 5:
            return


def machine():
    """The machine this binary runs on, as `moescope --version` says: its BLAS
    (with the kernels OpenBLAS chose) and CPU lines."""
    r = testutil.run("--version")
    rec = {}
    for line in r.stdout.splitlines()[1:]:
        k, _, v = line.partition(": ")
        rec[k.strip()] = v.strip()
    return rec


def save(name, data, made_by):
    path = os.path.join(GOLD, name)
    if ".json" in name:
        rec = strip(data)
        rec["made_by"] = made_by
        text = json.dumps(rec, indent=1) + "\n"
    if name.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(text.encode())
    elif ".json" in name:
        with open(path, "w") as f:
            f.write(text)
    else:
        with open(path, "w", newline="") as f:
            f.write("# made_by: %s\n" % json.dumps(made_by))
            csv.writer(f, lineterminator="\n").writerows(data)


def samples_of(set_name):
    """N of a sample set's evaluation set (its stored eval report says)."""
    return load(os.path.join(GOLD, "eval_%s_1.json" % set_name))["samples"]


def compare(name, fresh, gold):
    """The differences of a fresh report from the stored one (at most 5)."""
    found = []
    set_name = name.split("_")[1]
    land = None
    if name.startswith("diagnose_"):
        land = load(os.path.join(GOLD, "landscape_%s_12.json" % set_name))
    ctx = Ctx(name, gold, samples_of(set_name), land)
    if name.endswith(".csv"):
        diff_csv(gold, fresh, name, ctx, found)
    else:
        diff(gold, fresh, name, ctx, found)
    return found


def jitter(v, rel, salt=[0]):
    """v with every float moved by about rel (alternating signs): another kernel."""
    if isinstance(v, dict):
        return {k: jitter(x, rel) if k not in ("order", "t") else x for k, x in v.items()}
    if isinstance(v, list):
        return [jitter(x, rel) for x in v]
    if isinstance(v, float):
        salt[0] += 1
        return v * (1 + rel * (1 if salt[0] % 2 else -0.7))
    return v


def self_test():
    """The comparison can fail: a stored landscape against copies with one
    deliberate change each, and passes a copy moved as another kernel moves it."""
    name = "landscape_dense4_12.json"
    gold = load(os.path.join(GOLD, name))
    check(not compare(name, jitter(gold, 3e-7), gold), "self-test: float noise of 3e-7 relative passes")
    bad = []
    f = json.loads(json.dumps(gold))
    f["naive"]["loss"][5] *= 1 + 1e-4
    bad.append(("a loss 1e-4 off", f))
    f = json.loads(json.dumps(gold))
    f["endpoints"]["acc_a"] += 2.0 / 360
    bad.append(("an accuracy two samples off", f))
    f = json.loads(json.dumps(gold))
    f["methods"]["expert"]["rank"] += 1
    bad.append(("a rank one off, no near-tie", f))
    f = json.loads(json.dumps(gold))
    f["methods"]["gate"]["order"] = list(reversed(f["methods"]["gate"]["order"]))
    bad.append(("a worse assignment", f))
    f = json.loads(json.dumps(gold))
    f["orders"][7]["barrier"] += 1e-3
    bad.append(("one order's barrier 1e-3 off", f))
    f = json.loads(json.dumps(gold))
    f["orders"][3], f["orders"][20] = f["orders"][20], f["orders"][3]
    bad.append(("the orders out of sort", f))
    f = json.loads(json.dumps(gold))
    f["methods"]["expert"]["l_hat"] *= 1.001
    bad.append(("L-hat 1e-3 off", f))
    for what, f in bad:
        check(compare(name, f, gold), "self-test: %s is found" % what)


def main():
    update = "--update" in sys.argv
    os.chdir(ROOT)  # the commands name the samples by relative paths
    if update:
        os.makedirs(GOLD, exist_ok=True)
    here = machine()
    print("test_golden: this machine: %s" % json.dumps(here))
    if not update:
        self_test()
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in cases():
            out = os.path.join(tmp, name.replace(".gz", ""))
            r = testutil.run(*[out if a == "{out}" else a for a in args], binary=testutil.MOESCOPE_REL)
            ok = r.returncode == 0 and os.path.exists(out)
            check(ok, "%s: %s exits 0 (%s)" % (name, args[0], r.stderr.strip()[-300:]))
            if not ok:
                continue
            fresh = load(out)
            if update:
                save(name, fresh, here)
                continue
            gpath = os.path.join(GOLD, name)
            check(os.path.exists(gpath), "%s: stored result exists" % name)
            if not os.path.exists(gpath):
                continue
            found = compare(name, fresh, load(gpath))
            check(not found, "%s: every number as stored (%s)" % (name, "; ".join(found)))
    if update:
        print("wrote %d files to %s" % (len(cases()), GOLD))
    return testutil.summary("test_golden")


if __name__ == "__main__":
    sys.exit(main())
