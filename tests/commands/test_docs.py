"""tests/commands/test_docs.py - what a newcomer reads works as written: every path in
the commands of sample-checkpoints/README.md exists from the repository root
(where the README says to run them); `moescope --help` lists every option of
the TUI's own usage; `eval` shows no "fraction routed" for dense routing
(every token reaches every expert) and shows it for top-k; a file that is not
safetensors is named as such."""
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
SAMPLES = os.path.join(ROOT, "sample-checkpoints")


def main():
    readme = open(os.path.join(SAMPLES, "README.md")).read()
    check("From the repository root" in readme, "the README says where to run its commands")
    cmds = [l.strip() for l in readme.splitlines() if l.startswith("    ./moescope ")]
    check(len(cmds) >= 5, "README commands found: %d" % len(cmds))
    for c in cmds:
        for tok in c.split("#")[0].split()[1:]:
            if "/" in tok:
                check(os.path.exists(os.path.join(ROOT, tok)), "%s: %s exists from the repository root" % (c, tok))

    # the TUI's options in the top-level help
    top = run("--help").stdout
    d4 = os.path.join(SAMPLES, "dense4")
    tui = run(os.path.join(d4, "seed1.safetensors"), os.path.join(d4, "seed2.safetensors"), "--help").stdout
    opts = set(re.findall(r"--[a-z][a-z-]+", tui)) - {"--help"}
    check(len(opts) >= 5, "TUI options found: %r" % sorted(opts))
    for o in sorted(opts):
        check(o in top, "moescope --help lists the TUI option %s" % o)

    # eval: fraction routed only where routing selects
    if os.path.exists(os.path.join(d4, "seed1.safetensors")):
        r = run("eval", os.path.join(d4, "seed1.safetensors"), "--eval", os.path.join(d4, "eval.safetensors"))
        check(r.returncode == 0 and "mean gate" in r.stdout and "fraction routed" not in r.stdout,
              "eval, dense routing: no fraction routed\n" + r.stdout)
        t4 = os.path.join(SAMPLES, "topk4")
        r = run("eval", os.path.join(t4, "seed1.safetensors"), "--eval", os.path.join(t4, "eval.safetensors"))
        check(r.returncode == 0 and "fraction routed" in r.stdout, "eval, top-k: fraction routed\n" + r.stdout)

    # not a safetensors file
    work = tempfile.mkdtemp()
    bad = os.path.join(work, "notes.safetensors")
    with open(bad, "w") as f:
        f.write("these are my notes, not a checkpoint\n")
    r = run("info", bad)
    check(r.returncode == 1 and "notes.safetensors: not a safetensors file" in r.stderr, "info on text: %s" % r.stderr)


main()
sys.exit(testutil.summary("test_docs"))
