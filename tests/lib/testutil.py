"""tests/lib/testutil.py - the harness the python tests share: the binary under test,
the pass/fail counters, running the binary and the summary line.

Import it after putting tests/lib and tests/oracle on sys.path (the tests run as
`$PYTHON tests/KIND/test_x.py` from the repo root):

    sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
    from testutil import check, run  # noqa: E402
    ...
    sys.exit(testutil.summary("test_x"))
"""
import json
import os
import shutil
import struct
import subprocess
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)          # tests/
ROOT = os.path.dirname(TESTS)          # the repository
# $MOESCOPE (set by tests/run.sh), else the release binary at the repo root
MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", os.path.join(ROOT, "moescope")))
# its release build ($MOESCOPE_REL, which make check builds too), for the data-heavy
# parts whose code the sanitizers see elsewhere on smaller inputs; else $MOESCOPE
MOESCOPE_REL = os.path.abspath(os.environ.get("MOESCOPE_REL") or MOESCOPE)

passed = failed = 0


def check(cond, what):
    """Count one check; print what failed."""
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args, env=None, binary=None):
    """Run moescope with args (each str()'d); stdout and stderr captured as text.
    env: extra environment variables on top of ours; binary: MOESCOPE_REL, say."""
    e = None
    if env:
        e = dict(os.environ)
        e.update(env)
    return subprocess.run([binary or MOESCOPE] + [str(a) for a in args], capture_output=True, text=True,
                          env=e)


def expect_error(what, args, *needles):
    """moescope args exits 1 with every needle in its stderr"""
    r = run(*args)
    ok = r.returncode == 1 and all(str(n) in r.stderr for n in needles)
    check(ok, "%s: exit 1 naming %s; got %d: %s" % (what, needles, r.returncode, r.stderr.strip()))


def eval_json(out, ckpt, ev, *extra):
    """`eval ckpt --eval ev --json out` (checked); its JSON, or None"""
    r = run("eval", ckpt, "--eval", ev, "--json", out, *extra)
    check(r.returncode == 0, "eval %s: %s" % (ckpt, r.stderr.strip()))
    if r.returncode:
        return None
    with open(out) as f:
        return json.load(f)


def check_network_outputs(name, j, nblocks, ck, ev, dump, want):
    """A network's `eval --json` j: every one of its nblocks MoE blocks' load (mean gates
    summing to 1); `eval --dump-outputs dump`: logits within 1e-5 (of the largest) of
    want() (numpy's, computed only when the dump was written)."""
    import numpy as np
    import oracle
    check(len(j["blocks"]) == nblocks and all(abs(sum(e["mean_gate"] for e in b["load"]) - 1) < 1e-5
                                              for b in j["blocks"]),
          "%s: every MoE block's load, mean gates summing to 1" % name)
    r = run("eval", ck, "--eval", ev, "--dump-outputs", dump)
    check(r.returncode == 0, "%s: --dump-outputs: %s" % (name, r.stderr))
    if r.returncode == 0:
        got, ref = oracle.read_safetensors(dump)[0]["logits"], want()
        rel = np.abs(got - ref).max() / np.abs(ref).max()
        check(got.shape == ref.shape and rel < 1e-5, "%s: logits %s within 1e-5 of numpy (%.3g)"
              % (name, got.shape, rel))


def run_tests(name, tests, tmp):
    """Run each test function, remove tmp whatever happens; the summary's exit status."""
    try:
        for t in tests:
            t()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return summary(name)


def skip_part(what):
    """A part this machine cannot run: "SKIP: what" (tests/run.sh counts it)."""
    print("SKIP: %s" % what)


def skip_all(name, why):
    """The whole test cannot run here: "name: skipped (why)"; the exit status (0)."""
    print("%s: skipped (%s)" % (name, why))
    return 0


def summary(name):
    """Print "name: N passed, N failed" (tests/run.sh adds these up); the exit status."""
    print("%s: %d passed, %d failed" % (name, passed, failed))
    return 1 if failed else 0


def png_info(path):
    """(width, height, {text key: value}, decoded pixel bytes) of a PNG file"""
    b = open(path, "rb").read()
    assert b[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, text, w, h = 8, b"", {}, 0, 0
    while pos < len(b):
        n, = struct.unpack(">I", b[pos:pos + 4])
        typ, data = b[pos + 4:pos + 8], b[pos + 8:pos + 8 + n]
        if typ == b"IHDR":
            w, h = struct.unpack(">II", data[:8])
        elif typ == b"tEXt":
            k, v = data.split(b"\0", 1)
            text[k.decode("latin-1")] = v.decode("latin-1")
        elif typ == b"IDAT":
            idat += data
        pos += 12 + n
    return w, h, text, zlib.decompress(idat)
