"""tests/hostile/test_names.py - file names that are hostile to report formats: a
comma, a double quote, a line break, an ESC and bytes that are not UTF-8, in the
checkpoints' and the evaluation set's names. Every report stays well-formed:

  * the study CSV is RFC 4180 (such a field quoted, quotes doubled): Python's csv
    reads each pair row back with the names whole and the header's column count;
    the "# " provenance lines stay comment lines (one line per input);
  * every JSON report (landscape, study, diagnose, cost, eval, info) is valid
    UTF-8 and parses (a byte that is not UTF-8 becomes U+FFFD);
  * SVG figures (landscape, curve, study) parse as XML (control characters and
    stray bytes become U+FFFD);
  * the landscape CSV's comment lines stay comment lines;
  * geometry (on a capture of a native file's two layers whose prefixes hold a comma,
    a quote, a line break, an ESC and bidi and C1 characters, the files under hostile
    names): its CSV reads back with the layer names whole in their columns, its JSON
    is valid UTF-8, its SVG figures parse."""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
D4 = os.path.join(ROOT, "sample-checkpoints", "dense4")
TMP = tempfile.mkdtemp(prefix="moescope_names_")

# as bytes: os functions take bytes paths, so the names need not decode
NAMES = [b'a,"comma".safetensors', b"b\nline\x1b[2Jesc.safetensors", b"c\xff\xfe.safetensors"]
EVAL = b"e,val\x1b\xc3(.safetensors"


def bpath(name):
    return os.path.join(os.fsencode(TMP), name)


def args(*xs):
    """command-line arguments: bytes names as the OS gives them (surrogate-escaped str)"""
    return [os.fsdecode(x) if isinstance(x, bytes) else x for x in xs]


def run_b(*xs):
    """moescope on these names; its output (which prints them) decoded leniently"""
    r = subprocess.run([testutil.MOESCOPE] + [str(x) for x in args(*xs)], capture_output=True)
    return subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode("utf-8", "replace"),
                                       r.stderr.decode("utf-8", "replace"))


def valid_json(path, tag):
    raw = open(path, "rb").read()
    try:
        json.loads(raw.decode("utf-8"))
        ok = True
    except (UnicodeDecodeError, ValueError) as e:
        ok, raw = False, str(e)
    check(ok, "%s: valid UTF-8 JSON (%s)" % (tag, raw if not ok else ""))


def valid_xml(path, tag):
    try:
        ET.parse(path)
        ok, why = True, ""
    except ET.ParseError as e:
        ok, why = False, str(e)
    check(ok, "%s: well-formed XML (%s)" % (tag, why))


def comments_intact(path, first_field, tag):
    """The lines before the header are "# " lines; the header follows them."""
    lines = open(path, "rb").read().split(b"\n")
    k = 0
    while k < len(lines) and lines[k].startswith(b"#"):
        k += 1
    check(k > 0 and lines[k].startswith(first_field), "%s: a provenance line broke out of its comment: %r" %
          (tag, lines[k][:60] if k < len(lines) else None))


def geometry(out):
    import numpy as np
    import gen_ckpt
    import oracle
    prefs = ['x,"q"\r\n\x1b]0;owned\x07', "b\u00e9,\u202e\x01\u0085y"]
    t = {}
    for l, pf in enumerate(prefs):
        tl, meta = gen_ckpt.make_layer(1 + l, n=4, d=8, h=4, router="topk", k=2, head=False, prefix=pf)
        t.update(tl)
    ck, cap = bpath(b"g,eo\x1b[2J\xff.safetensors"), bpath(b"c\nap.safetensors")
    oracle.write_safetensors(os.fsdecode(ck), t, meta)
    x = np.random.default_rng(0).standard_normal((400, 8))
    oracle.write_safetensors(os.fsdecode(cap), {"inputs." + pf: x + l for l, pf in enumerate(prefs)})
    r = run_b("geometry", ck, "--eval", cap, "--csv", out("g.csv"), "--json", out("g.json"), "--angles-png",
              out("a.svg"), "--r2-png", out("r.svg"))
    check(r.returncode == 0, "geometry runs on hostile names: %s" % r.stderr[-300:])
    if r.returncode != 0:
        return
    text = open(out("g.csv"), "rb").read().decode("utf-8", "surrogateescape")
    body = "".join(line for line in io.StringIO(text, newline="") if not line.startswith("#"))
    rows = list(csv.reader(io.StringIO(body, newline="")))
    check(len(rows) == 2 and len(rows[1]) == len(rows[0]), "geometry CSV: a header and one step of its %d fields: %s"
          % (len(rows[0]) if rows else 0, [len(x) for x in rows]))
    if len(rows) == 2:
        check(rows[1][2:4] == prefs, "geometry CSV: the layer names read back whole: %r" % rows[1][2:4])
    comments_intact(out("g.csv"), b"from,", "geometry --csv")
    valid_json(out("g.json"), "geometry --json")
    if os.path.exists(out("g.json")):
        names = [y["name"] for y in json.load(open(out("g.json"), encoding="utf-8"))["layers"]]
        check(names == prefs, "geometry JSON: the layer names as the file has them: %r" % names)
    valid_xml(out("a.svg"), "geometry --angles-png .svg")
    valid_xml(out("r.svg"), "geometry --r2-png .svg")


def main():
    try:
        for name, seed in zip(NAMES, ("seed1", "seed2", "seed3")):
            shutil.copy(os.path.join(D4, seed + ".safetensors"), bpath(name))
        shutil.copy(os.path.join(D4, "eval.safetensors"), bpath(EVAL))
        a, b, c, e = (bpath(n) for n in NAMES + [EVAL])
        out = lambda f: os.path.join(TMP, f)  # noqa: E731
        # the study: CSV, JSON, SVG
        r = run_b("study", a, b, c, "--eval", e, "--points", 5, "-q", "--csv", out("s.csv"), "--json", out("s.json"),
                  "--png", out("s.svg"))
        check(r.returncode == 0, "study runs on hostile names: %s" % r.stderr[-300:])
        if r.returncode == 0:
            text = open(out("s.csv"), "rb").read().decode("utf-8", "surrogateescape")
            body = "".join(line for line in io.StringIO(text, newline="") if not line.startswith("#"))
            rows = list(csv.reader(io.StringIO(body, newline="")))
            header = rows[0]
            pairs = [x for x in rows if x and x[0] == "pair"]
            check(len(pairs) == 3, "study CSV: three pair rows, got %d" % len(pairs))
            check(all(len(x) == len(header) for x in rows[1:]), "study CSV: every row has the header's %d fields"
                  % len(header))
            names = {os.fsdecode(bpath(n)) for n in NAMES}
            check(all(x[1] in names and x[2] in names for x in pairs), "study CSV: names read back whole: %s" %
                  [x[1:3] for x in pairs])
            valid_json(out("s.json"), "study --json")
            valid_xml(out("s.svg"), "study --png .svg")
        # the landscape: JSON, CSV, SVG
        r = run_b("landscape", a, b, "--eval", e, "--points", 5, "-q", "--json", out("l.json"), "--csv", out("l.csv"),
                  "--png", out("l.svg"))
        check(r.returncode == 0, "landscape runs: %s" % r.stderr[-300:])
        if r.returncode == 0:
            valid_json(out("l.json"), "landscape --json")
            valid_xml(out("l.svg"), "landscape --png .svg")
            comments_intact(out("l.csv"), b"rank,", "landscape --csv")
        r = run_b("curve", c, b, "--eval", e, "--points", 5, "--png", out("c.svg"), "--csv", out("c.csv"))
        check(r.returncode == 0, "curve runs: %s" % r.stderr[-300:])
        if r.returncode == 0:
            valid_xml(out("c.svg"), "curve --png .svg")
            comments_intact(out("c.csv"), b"t,", "curve --csv")
        for tag, cmd in (("diagnose", ["diagnose", a, c, "--eval", e]), ("cost", ["cost", b, c]),
                         ("eval", ["eval", c, "--eval", e]), ("info", ["info", b])):
            r = run_b(*(cmd + ["--json", out(tag + ".json")]))
            check(r.returncode == 0, "%s runs: %s" % (tag, r.stderr[-300:]))
            if r.returncode == 0:
                valid_json(out(tag + ".json"), tag + " --json")
        geometry(out)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_names")


if __name__ == "__main__":
    sys.exit(main())
