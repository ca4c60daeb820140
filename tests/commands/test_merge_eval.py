"""tests/commands/test_merge_eval.py - `merge --eval` reports the soup's loss and accuracy
beside A's and B's (the soup's equal `eval` of the written file, A's and B's
equal `eval` of the inputs), and `merge --alpha-sweep K` shows the naive and
aligned soups over alpha: the end points are A and B, and the barriers equal
the landscape's naive and expert-order barriers at K points. Also
`landscape --scatter-png`: a PNG with a panel per matching method."""
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

D4 = os.path.join(HERE, "..", "..", "sample-checkpoints", "dense4")
A, B, E = (os.path.join(D4, f) for f in ("seed1.safetensors", "seed3.safetensors", "eval.safetensors"))


def eval_loss(path):
    r = run("eval", path, "--eval", E)
    m = re.search(r"^loss\s+([0-9.]+)", r.stdout, re.M)
    a = re.search(r"^accuracy\s+([0-9.]+)", r.stdout, re.M)  # a fraction
    return (float(m.group(1)) if m else None, 100 * float(a.group(1)) if a else None)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "soup.safetensors")
        r = run("merge", A, B, "-o", out, "--eval", E, "--alpha-sweep", 5)
        check(r.returncode == 0, "merge --eval --alpha-sweep ran: %s" % r.stderr[-300:])
        if r.returncode == 0:
            lines = {m.group(1).strip(): (float(m.group(2)), float(m.group(3)))
                     for m in re.finditer(r"^  (.+?)\s+loss ([0-9.]+)\s+accuracy ([0-9.]+)%", r.stdout, re.M)}
            soup = [v for k, v in lines.items() if k.startswith("soup")]
            check(len(soup) == 1 and "A" in lines and "B" in lines and any(k.startswith("naive") for k in lines),
                  "A, B, soup and naive soup lines (%s)" % list(lines))
            for name, path in (("A", A), ("B", B)):
                got, want = lines.get(name), eval_loss(path)
                check(got is not None and want[0] is not None and abs(got[0] - want[0]) <= 1e-6,
                      "%s loss %s equals eval's %s" % (name, got, want))
            want = eval_loss(out)
            check(soup and want[0] is not None and abs(soup[0][0] - want[0]) <= 1e-6 and abs(soup[0][1] - want[1]) <= 0.01,
                  "soup loss %s equals eval of the written file %s" % (soup, want))
            rows = [tuple(float(x.rstrip("%")) for x in l.split()) for l in r.stdout.splitlines()
                    if re.match(r"^\s+[01]\.\d{4}\s", l)]
            check(len(rows) == 5 and rows[0][0] == 0 and rows[-1][0] == 1, "5 sweep rows from 0 to 1")
            if len(rows) == 5:
                check(abs(rows[0][1] - lines["A"][0]) <= 1e-6 and abs(rows[0][3] - lines["A"][0]) <= 1e-6,
                      "alpha 0: both soups are A")
                check(abs(rows[-1][1] - lines["B"][0]) <= 1e-6, "alpha 1: the naive soup is B")
                check(abs(rows[2][3] - soup[0][0]) <= 1e-6, "alpha 0.5: the aligned soup is the written soup")
            m = re.search(r"loss barrier: naive ([0-9.]+), aligned ([0-9.]+)", r.stdout)
            js = os.path.join(tmp, "l.json")
            rl = run("landscape", A, B, "--eval", E, "--points", 5, "-q", "--json", js)
            if m and rl.returncode == 0:
                L = json.load(open(js))
                check(abs(float(m.group(1)) - L["naive"]["barrier"]) <= 1e-6, "naive barrier = landscape's")
                check(abs(float(m.group(2)) - L["methods"]["expert"]["barrier"]) <= 1e-6,
                      "aligned barrier = landscape's expert-order barrier")
            else:
                check(False, "sweep barriers line and landscape")
        r = run("merge", A, B, "-o", out, "--alpha-sweep", 5)
        check(r.returncode == 2 and "--eval" in r.stderr, "--alpha-sweep without --eval: usage error")
        png = os.path.join(tmp, "s.png")
        r = run("landscape", A, B, "--eval", E, "--points", 5, "-q", "--scatter-png", png)
        ok = r.returncode == 0 and os.path.exists(png)
        check(ok, "landscape --scatter-png ran")
        if ok:
            data = open(png, "rb").read()
            w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
            check(data[:8] == b"\x89PNG\r\n\x1a\n" and (w, h) == (960, 1920), "scatter PNG 960 x 1920, a panel per method (%d x %d)" % (w, h))
    return testutil.summary("test_merge_eval")


if __name__ == "__main__":
    sys.exit(main())
