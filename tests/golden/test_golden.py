"""tests/golden/test_golden.py - regression guard: the numbers moescope prints for the
bundled sample pairs are the stored ones, bit for bit.

The stored results (tests/golden/) were produced by the release build; this test
reruns the same commands and compares every number of the stored file with the
fresh one exactly (floats parsed from their printed form, which cJSON prints
with enough digits to round-trip, so equal text means equal bits):

  * `landscape --json` for every pair of the 4-expert samples (dense4, topk4,
    shared4), one of them also with --no-wm, and one dense8 pair on 5 points
    (40320 orders; stored gzipped);
  * `curve --csv` (the evaluator's path, as printed) for the same pairs, with
    two extra orders;
  * `eval --json` of every sample checkpoint and `diagnose --json` of one pair
    per sample set.

Keys that name files or record provenance or time are not compared, nor keys
the stored file does not have (a report may gain keys). A deliberate change of
a number regenerates the files with

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

# keys that depend on where files live, on the machine or on the clock
IGNORED = {"a", "b", "eval", "checkpoint", "path", "findings", "text", "provenance", "version",
           "secs_ranks", "secs_total", "seconds", "time", "elapsed"}


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


def diff(g, f, where, out):
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
                diff(x, f[k], "%s.%s" % (where, k), out)
    elif isinstance(g, list):
        if not isinstance(f, list) or len(f) != len(g):
            out.append("%s: expected a list of %d" % (where, len(g)))
            return
        for i, (x, y) in enumerate(zip(g, f)):
            diff(x, y, "%s[%d]" % (where, i), out)
    elif isinstance(g, (int, float)) and not isinstance(g, bool):
        # ints and floats both: 0 printed as 0 parses as int either way
        ok = (isinstance(f, (int, float)) and not isinstance(f, bool) and
              (g == f or (isinstance(g, float) and isinstance(f, float) and
                          math.isnan(g) and math.isnan(f))))
        if not ok:
            out.append("%s: %r, stored %r" % (where, f, g))
    elif g != f:
        out.append("%s: %r, stored %r" % (where, f, g))


def save(name, data):
    path = os.path.join(GOLD, name)
    text = json.dumps(strip(data), indent=1) + "\n" if ".json" in name else None
    if name.endswith(".gz"):
        with gzip.GzipFile(path, "wb", mtime=0) as f:
            f.write(text.encode())
    elif text is not None:
        with open(path, "w") as f:
            f.write(text)
    else:
        with open(path, "w", newline="") as f:
            csv.writer(f, lineterminator="\n").writerows(data)


def main():
    update = "--update" in sys.argv
    os.chdir(ROOT)  # the commands name the samples by relative paths
    if update:
        os.makedirs(GOLD, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name, args in cases():
            out = os.path.join(tmp, name.replace(".gz", ""))
            r = testutil.run(*[out if a == "{out}" else a for a in args])
            ok = r.returncode == 0 and os.path.exists(out)
            check(ok, "%s: %s exits 0 (%s)" % (name, args[0], r.stderr.strip()[-300:]))
            if not ok:
                continue
            fresh = load(out)
            if update:
                save(name, fresh)
                continue
            gpath = os.path.join(GOLD, name)
            check(os.path.exists(gpath), "%s: stored result exists" % name)
            if not os.path.exists(gpath):
                continue
            found = []
            diff(load(gpath), fresh, name, found)
            check(not found, "%s: every number as stored (%s)" % (name, "; ".join(found)))
    if update:
        print("wrote %d files to %s" % (len(cases()), GOLD))
    return testutil.summary("test_golden")


if __name__ == "__main__":
    sys.exit(main())
