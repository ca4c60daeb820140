"""tests/oracle/test_geometry.py - the routing geometry (src/analysis/geometry.c) against
the independent numpy/scipy version tests/oracle/geometry_ref.py, on random layers:
top-2 and dense routers, a router with duplicate rows (rank n - 2: the common rank
drops), more experts than the width allows (n - 1 > d).

Compared: ranks and singular values, the logit check, the variance shares, every
principal angle (scipy.linalg.subspace_angles), GPA's residual (scipy's
orthogonal_procrustes), the held-out R^2 of the shared, specific and identity
transitions in the canonical, raw, PCA and CCA coordinates, eta_share, and the
recalls (states, PCA, transported). Both read the same float32 gates and inputs and
compute in double, so the numbers agree to 1e-7 (R^2, residual; angles 1e-6
degrees); a recall to two tokens of the held-out set (the router's float32 logits
may order a near-tie differently). The random gauge is moescope's own stream: its
specific R^2 must equal the raw gauge's (a per-layer rotation cannot change it).

Runs the library through the C test program: $TESTBIN/unit/test_geometry --run IN OUT.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import geometry_ref  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_geometry_")


def close(a, b, tol, what):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ok = a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol))
    check(ok, "%s: %s vs numpy %s (tol %g)" % (what, a, b, tol))


def make_case(seed, L, n, d, N, k, dup=None):
    """random layers whose inputs follow each other (x_{l+1} = x_l M_l + noise, unequal
    variances so every principal direction is well defined)"""
    g = np.random.default_rng(seed)
    scale = 1.0 + 0.35 * np.arange(d)
    X = g.standard_normal((N, d)) * scale
    layers = []
    for l in range(L):
        if l:
            M = np.eye(d) + 0.3 * g.standard_normal((d, d)) / np.sqrt(d)
            X = X @ M + 0.3 * g.standard_normal((N, d)) * scale
        W = g.standard_normal((n, d)) / np.sqrt(d)
        if dup is not None and l == dup:
            W[n - 1] = W[1]
        layers.append({"W": W.astype(np.float32), "b": (0.2 * g.standard_normal(n)).astype(np.float32),
                       "X": X.astype(np.float32), "k": k})
    return layers


def run_case(name, layers, ntrain, k):
    path, out = os.path.join(TMP, name + ".safetensors"), os.path.join(TMP, name + ".json")
    t = {}
    for l, lay in enumerate(layers):
        t["gate.%d" % l], t["bias.%d" % l], t["inputs.%d" % l] = lay["W"], lay["b"], lay["X"]
    oracle.write_safetensors(path, t, {"layers": str(len(layers)), "ntrain": str(ntrain), "k": str(k),
                                       "seed": "1"})
    exe = os.path.join(os.environ.get("TESTBIN", os.path.join(testutil.ROOT, "build", "rel", "tests")), "unit",
                       "test_geometry")
    p = subprocess.run([exe, "--run", path, out], capture_output=True, text=True)
    check(p.returncode == 0, "%s: test_geometry --run: %s" % (name, p.stdout.strip()))
    return json.load(open(out)) if p.returncode == 0 else None


def compare(name, j, ref, layers, ntrain):
    held = len(layers[0]["X"]) - ntrain
    check(j["rank"] == ref["r"], "%s: common rank %s vs %s" % (name, j["rank"], ref["r"]))
    for l, (a, b) in enumerate(zip(j["layers"], ref["layers"])):
        tag = "%s layer %d" % (name, l)
        check(a["rank"] == b["rank"], "%s: rank %d vs %d" % (tag, a["rank"], b["rank"]))
        sv = np.asarray(b["sv"])
        close(np.asarray(a["singular_values"]) / sv[0], sv / sv[0], 1e-9, tag + " singular values")
        check(a["logit_error"] < 1e-10 and b["logit_error"] < 1e-10,
              "%s: centred logits from the states (%.3g, numpy %.3g)" % (tag, a["logit_error"], b["logit_error"]))
        close(a["variance_control"], b["variance_control"], 1e-9, tag + " variance in the control subspace")
        close(a["variance_pca"], b["variance_pca"], 1e-9, tag + " variance in the top PCs")
        for key in ("states", "pca", "shared", "specific"):
            if key in b["recall"]:
                close(a["recall"][key], b["recall"][key], 2.0 / held + 1e-12, "%s recall from %s" % (tag, key))
        for key in ("states", "pca"):  # q = 1 .. r: the first q coordinates
            close(a["recall"]["by_rank"][key], b["recall"]["by_rank"][key], 2.0 / held + 1e-12,
                  "%s recall from %s by readout rank" % (tag, key))
        check(abs(a["recall"]["by_rank"]["states"][-1] - a["recall"]["states"]) < 1e-12,
              "%s: at rank r the by-rank recall is the states' own" % tag)
    L = len(layers)
    close(j["angles"]["mean_deg"], ref["mean_deg"], 1e-6, name + " mean angles")
    close(j["angles"]["overlap"], ref["overlap"], 1e-9, name + " overlaps")
    for p in j["angles"]["pairs"]:
        close(p["angles_deg"], ref["angles_deg"][(p["a"], p["b"])], 1e-6,
              "%s angles %d-%d" % (name, p["a"], p["b"]))
    check(len(j["angles"]["pairs"]) == L * (L - 1) // 2, name + ": every pair of layers")
    close(j["gpa"]["residual"], ref["gpa"]["residual"], 1e-9, name + " GPA residual")
    close(j["gpa"]["residual_identity"], ref["gpa"]["residual_identity"], 1e-9, name + " identity-gauge residual")
    check(j["gpa"]["converged"], name + ": GPA converged")
    check(j["gpa"]["start"] == ref["gpa"]["start"], "%s: GPA's start %s vs %s" % (name, j["gpa"]["start"],
                                                                                   ref["gpa"]["start"]))
    close(j["gpa"]["residual_other_start"], ref["gpa"]["residual_other_start"], 1e-9, name + " the other start")
    for m, fr in ref["transitions"].items():
        fj = j["transitions"][m]
        for key in ("shared", "specific", "identity", "eta"):
            close(fj[key], fr[key], 1e-7, "%s %s %s R^2" % (name, m, key))
        for s, (a, b) in enumerate(zip(fj["steps"], fr["steps"])):
            close([a["shared"], a["specific"], a["identity"]], [b["shared"], b["specific"], b["identity"]], 1e-7,
                  "%s %s step %d" % (name, m, s))
    close(j["transitions"]["random"]["specific"], j["transitions"]["raw"]["specific"], 1e-9,
          name + " random gauge: the specific R^2 is the raw one's")
    close(j["eta_share"], ref["transitions"]["canonical"]["eta"], 1e-7, name + " eta_share")


CASES = [
    ("top2", dict(seed=1, L=3, n=6, d=10, N=600, k=2), 480),
    ("dense", dict(seed=2, L=4, n=5, d=9, N=500, k=1), 400),
    ("duplicate rows", dict(seed=3, L=3, n=6, d=10, N=500, k=2, dup=1), 400),
    ("n-1 > d", dict(seed=4, L=3, n=8, d=4, N=500, k=2), 400),
]

for name, kw, ntr in CASES:
    layers = make_case(**kw)
    k_file = kw["k"] if kw["k"] > 1 else kw["n"]  # k = n: a dense router
    j = run_case(name.replace(" ", "_").replace(">", "gt"), layers, ntr, k_file)
    if j:
        compare(name, j, geometry_ref.geometry(layers, ntr), layers, ntr)
        if name == "duplicate rows":
            check(j["layers"][1]["duplicate_rows"] == [1, 5] and j["layers"][1]["rank"] == 4 and j["rank"] == 4,
                  "duplicate rows named, rank n - 2: %s" % j["layers"][1])
        if name == "n-1 > d":
            check(all(y["rank"] == 4 and y["rank_generic"] == 4 for y in j["layers"]), "n - 1 > d: rank d")

shutil.rmtree(TMP, ignore_errors=True)
sys.exit(testutil.summary("test_geometry_py"))
