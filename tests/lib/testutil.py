"""tests/lib/testutil.py - the harness the python tests share: the binary under test,
the pass/fail counters, running the binary and the summary line.

Import it after putting tests/lib and tests/oracle on sys.path (the tests run as
`$PYTHON tests/KIND/test_x.py` from the repo root):

    sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
    from testutil import check, run  # noqa: E402
    ...
    sys.exit(testutil.summary("test_x"))
"""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)          # tests/
ROOT = os.path.dirname(TESTS)          # the repository
# $MOESCOPE (set by tests/run.sh), else the release binary at the repo root
MOESCOPE = os.path.abspath(os.environ.get("MOESCOPE", os.path.join(ROOT, "moescope")))

passed = failed = 0


def check(cond, what):
    """Count one check; print what failed."""
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args, env=None):
    """Run moescope with args (each str()'d); stdout and stderr captured as text.
    env: extra environment variables on top of ours."""
    e = None
    if env:
        e = dict(os.environ)
        e.update(env)
    return subprocess.run([MOESCOPE] + [str(a) for a in args], capture_output=True, text=True,
                          env=e)


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
