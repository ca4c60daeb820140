"""tests/oracle/test_lap_scipy.py - `moescope lap` against scipy.optimize.linear_sum_assignment.

Random cost matrices (uniform floats, integer ties 0..3, integers in [0, 100),
low rank, -A B^T weight matching, negative, square and rectangular both ways,
up to n = 2000, minimise and maximise, F64/F32/F16
files) are written as safetensors, solved with `moescope lap --json`, and
checked: the total equals scipy's to 1e-9 relative, the assignment is valid
(injective; every row assigned when rows <= columns, else every column) and its
cost is the reported total; stdout lists the same assignment. Then the errors:
NaN/inf in the cost (message names the file and the cell), missing tensor,
wrong rank, usage errors (exit 2), --help, refusing to write over the input.
"""
import json
import os
import re
import sys
import tempfile

import numpy as np
from scipy.optimize import linear_sum_assignment

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402


def solve_case(tmp, name, c, maximize, dtype=np.float64):
    """c (nr, nc) float64; the file stores it as dtype and scipy sees the
    values the file holds (read back through the oracle)."""
    path = os.path.join(tmp, "cost.safetensors")
    jpath = os.path.join(tmp, "out.json")
    oracle.write_safetensors(path, {"cost": c}, dtype=dtype)
    c = oracle.read_safetensors(path)[0]["cost"]  # (nr, nc) as stored
    nr, nc = c.shape
    args = ["lap", path, "--json", jpath] + (["--maximize"] if maximize else [])
    p = run(*args)
    if p.returncode != 0:
        check(False, f"{name}: exit {p.returncode}: {p.stderr.strip()}")
        return
    with open(jpath) as f:
        out = json.load(f)
    a = np.array(out["assignment"], dtype=np.int64)
    total = out["total"]
    r, k = linear_sum_assignment(c, maximize=maximize)
    want = float(c[r, k].sum())
    check(abs(total - want) <= 1e-9 * max(1.0, abs(want)),
          f"{name}: total {total!r} vs scipy {want!r}")
    assigned = a[a >= 0]
    ok = (a.shape == (nr,) and np.all(a < nc) and np.all(a >= -1)
          and len(np.unique(assigned)) == len(assigned) and len(assigned) == min(nr, nc))
    check(ok, f"{name}: invalid assignment")
    if ok:
        rows = np.nonzero(a >= 0)[0]
        got = float(c[rows, a[rows]].sum())
        check(abs(got - total) <= 1e-9 * max(1.0, abs(total)),
              f"{name}: assignment costs {got!r}, reported {total!r}")
    # stdout: "i -> j" (or "i -> -") per row, then "total: x"
    lines = p.stdout.strip().splitlines()
    listed = [(-1 if m.group(2) == "-" else int(m.group(2)))
              for m in (re.match(r"^(\d+) -> (\d+|-)$", s) for s in lines[:-1]) if m]
    check(listed == list(a) and re.match(r"^total: \S+$", lines[-1]) is not None
          and abs(float(lines[-1].split()[1]) - total) <= 1e-12 * max(1.0, abs(total)),
          f"{name}: stdout does not match the JSON")


def main():
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        cases = []
        for n in (1, 2, 5, 40, 300, 2000):
            cases.append((f"uniform {n}x{n}", rng.random((n, n)), False))
        cases.append(("uniform 1000x1000 max", rng.random((1000, 1000)), True))
        for nr, nc in ((100, 250), (250, 100), (1, 30), (30, 1), (7, 500), (600, 300)):
            cases.append((f"uniform {nr}x{nc}", rng.random((nr, nc)), False))
            cases.append((f"uniform {nr}x{nc} max", rng.random((nr, nc)), True))
        for nr, nc in ((8, 8), (60, 60), (400, 400), (200, 300), (300, 200)):
            for mx in (False, True):
                cases.append((f"ties 0..3 {nr}x{nc} max={mx}",
                              rng.integers(0, 4, (nr, nc)).astype(np.float64), mx))
        cases.append(("constant 50x50", np.full((50, 50), 3.0), False))
        cases.append(("negative normal 500", 1e3 * rng.standard_normal((500, 500)), False))
        cases.append(("negative normal 500 max", 1e3 * rng.standard_normal((500, 500)), True))
        # weight-matching-like similarity (SPEC 4, step 2), maximise
        h, d = 256, 64
        w1a, w1b = rng.standard_normal((h, d)), rng.standard_normal((h, d))  # (h, d)
        w2a, w2b = rng.standard_normal((d, h)), rng.standard_normal((d, h))  # (d, h)
        cases.append(("weight matching 256", w1a @ w1b.T + w2a.T @ w2b, True))
        # the benchmark's families (tests/bench/bench_lap.py) at n <= 2000:
        # integer costs in [0, 100) (dozens of ties per row), low rank (near
        # ties everywhere), -A B^T weight matching, each square and
        # rectangular both ways; the rectangular ones exercise lap's
        # transposed read of tall matrices as well
        def intc(nr, nc):
            return rng.integers(0, 100, (nr, nc)).astype(np.float64)

        def lowrank(nr, nc):
            return rng.random((nr, 4)) @ rng.random((nc, 4)).T

        def wm(nr, nc):
            return -(rng.standard_normal((nr, 768)) @ rng.standard_normal((nc, 768)).T)

        for fam, make, shapes in (("int [0,100)", intc, ((2000, 2000), (1000, 2000), (2000, 1000))),
                                  ("low-rank", lowrank, ((700, 700), (400, 800), (800, 400))),
                                  ("-A B^T", wm, ((1000, 1000), (500, 1000), (1000, 500)))):
            for nr, nc in shapes:
                for mx in (False, True):
                    cases.append((f"{fam} {nr}x{nc} max={mx}", make(nr, nc), mx))
        for name, c, mx in cases:
            solve_case(tmp, name, c, mx)
        solve_case(tmp, "F32 file 150", rng.random((150, 150)), False, dtype=np.float32)
        solve_case(tmp, "F16 file 90x120", rng.random((90, 120)), True, dtype=np.float16)

        # ---- errors
        path = os.path.join(tmp, "bad.safetensors")
        c = rng.random((4, 5))
        for bad, label in ((np.nan, "NaN"), (np.inf, "inf"), (-np.inf, "-inf")):
            c2 = c.copy()
            c2[2, 3] = bad
            oracle.write_safetensors(path, {"cost": c2}, dtype=np.float64)
            p = run("lap", path)
            check(p.returncode == 1 and "bad.safetensors" in p.stderr and "cost" in p.stderr
                  and re.search(r"\[2, ?3\]", p.stderr) is not None,
                  f"{label} cost: exit {p.returncode}, message {p.stderr.strip()!r}")
        oracle.write_safetensors(path, {"weights": c}, dtype=np.float64)
        p = run("lap", path)
        check(p.returncode == 1 and "'cost'" in p.stderr, f"missing tensor: {p.stderr.strip()!r}")
        oracle.write_safetensors(path, {"cost": rng.random((2, 3, 4))}, dtype=np.float64)
        p = run("lap", path)
        check(p.returncode == 1 and "2-D" in p.stderr, f"3-D cost: {p.stderr.strip()!r}")
        p = run("lap", os.path.join(tmp, "absent.safetensors"))
        check(p.returncode == 1 and "absent.safetensors" in p.stderr, "absent file")
        good = os.path.join(tmp, "good.safetensors")
        oracle.write_safetensors(good, {"cost": c}, dtype=np.float64)
        before = open(good, "rb").read()
        p = run("lap", good, "--json", good)
        check(p.returncode != 0 and open(good, "rb").read() == before,
              "--json over the input must be refused and leave it intact")
        for args in (["lap"], ["lap", good, "--bogus"], ["lap", good, "--json"],
                     ["lap", good, good]):
            p = run(*args)
            check(p.returncode == 2 and "usage" in p.stderr, f"usage error {args[1:]}: exit "
                  f"{p.returncode}")
        p = run("lap", "--help")
        check(p.returncode == 0 and "--maximize" in p.stdout, "--help")
        # 0-size: nothing to assign
        oracle.write_safetensors(path, {"cost": np.zeros((0, 4))}, dtype=np.float64)
        jp = os.path.join(tmp, "zero.json")
        p = run("lap", path, "--json", jp)
        ok = p.returncode == 0 and json.load(open(jp)) == {"assignment": [], "total": 0}
        check(ok, f"0x4 cost: exit {p.returncode} {p.stderr.strip()!r}")

    return testutil.summary("test_lap_scipy")


if __name__ == "__main__":
    sys.exit(main())
