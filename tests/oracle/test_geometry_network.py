"""tests/oracle/test_geometry_network.py - `moescope geometry` on network checkpoints
(GPT-2 layout, every block MoE: tests/lib/gen_gpt2.py) against numpy: each MoE block's
inputs from the float64 forward tests/oracle/gpt2_ref.py (a hook at every block),
the geometry from tests/oracle/geometry_ref.py (numpy.linalg, scipy), the transport
test's held-out loss from gpt2_ref with the control components replaced.

  - network mode: ranks and singular values (the gates: to 1e-9), angles (1e-6
    degrees), and what the float32 forward's inputs move (its inputs agree with
    numpy's to about 1e-6 of their size): variance shares 1e-6, GPA residual and
    every R^2 1e-5, recalls to three tokens of the held-out set, transport dNLL
    (canonical, raw, specific, mean; per step and rolled out) 1e-5 of the loss
    (measured: 1e-7 and below);
  - capture mode on the same checkpoint: a capture file of numpy's inputs (inputs.L,
    float32) read through the gpt2 family: the same numbers as geometry_ref on those
    inputs to 1e-7, and as the network mode within 1e-5;
  - the translation: a vector added to every gate row of every block changes no
    reported invariant (canonical, PCA and CCA R^2, angles, ranks, recalls);
  - --train-frac moves the split by whole sequences; --seed changes only the random
    gauge.
"""
import copy
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import geometry_ref  # noqa: E402
import gpt2_ref  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_geonet_")
N, T = 40, 16


def close(a, b, tol, what):
    a = np.asarray(a, np.float64)
    b = np.asarray(b, np.float64)
    ok = a.shape == b.shape and bool(np.all(np.abs(a - b) <= tol))
    check(ok, "%s: %s vs %s (tol %g, worst %.3g)" % (what, a, b, tol, np.abs(a - b).max() if a.shape == b.shape else -1))


def geometry_json(ckpt, ev, *extra):
    out = os.path.join(TMP, "g%d.json" % abs(hash((ckpt, ev, extra))))
    r = run("geometry", ckpt, "--eval", ev, "--json", out, *extra)
    check(r.returncode == 0, "geometry %s %s: %s" % (ckpt, extra, r.stderr.strip()))
    return json.load(open(out)) if r.returncode == 0 else None


def block_inputs(ck, ids):
    """every MoE block's input (ln_2 h) [N T, d] from the float64 forward"""
    got = {}

    def hook(i, x):
        got.setdefault(i, []).append(x)
        return x
    gpt2_ref.logits(ck, ids, hook=hook)
    return [np.concatenate(got[i]) for i in sorted(got)]


def ref_layers(ck, X):
    m = ck["config"]["moe"]
    out = []
    for i, L in enumerate(m["layers"]):
        pre = "transformer.h.%d.mlp.gate." % L
        W = ck["tensors"][pre + "weight"]
        b = ck["tensors"].get(pre + "bias", np.zeros(len(W)))
        k = m["top_k"] if m.get("router", "topk") == "topk" and m["top_k"] < m["num_experts"] else 1
        out.append({"W": W, "b": b, "X": X[i], "k": k})
    return out


def compare(tag, j, ref, held, tol_r2, tol_var):
    check(j["rank"] == ref["r"], "%s: rank %s vs %s" % (tag, j["rank"], ref["r"]))
    for l, (a, b) in enumerate(zip(j["layers"], ref["layers"])):
        sv = np.asarray(b["sv"])
        close(np.asarray(a["singular_values"]) / sv[0], sv / sv[0], 1e-9, "%s layer %d singular values" % (tag, l))
        close([a["variance_control"], a["variance_pca"]], [b["variance_control"], b["variance_pca"]], tol_var,
              "%s layer %d variance shares" % (tag, l))
        for key in b["recall"]:
            if key != "by_rank":
                close(a["recall"][key], b["recall"][key], 3.0 / held + 1e-12, "%s layer %d recall %s" % (tag, l, key))
        for key in ("states", "pca"):  # readout rank q = 1 .. r
            close(a["recall"]["by_rank"][key], b["recall"]["by_rank"][key], 3.0 / held + 1e-12,
                  "%s layer %d recall %s by readout rank" % (tag, l, key))
    close(j["angles"]["mean_deg"], ref["mean_deg"], 1e-6, tag + " mean angles")
    close(j["gpa"]["residual"], ref["gpa"]["residual"], tol_r2, tag + " GPA residual")
    check(j["gpa"]["start"] == ref["gpa"]["start"], "%s: GPA start %s vs %s" % (tag, j["gpa"]["start"], ref["gpa"]["start"]))
    for m, fr in ref["transitions"].items():
        fj = j["transitions"][m]
        close([fj[k] for k in ("shared", "specific", "identity")], [fr[k] for k in ("shared", "specific", "identity")],
              tol_r2, "%s %s R^2" % (tag, m))
        close([s["shared"] for s in fj["steps"]], [s["shared"] for s in fr["steps"]], tol_r2, "%s %s steps" % (tag, m))


def transport_ref(ck, ids, ts, ref):
    held = ids[ts:]
    base = gpt2_ref.evaluate(ck, held)["loss"]
    L = len(ref["layers"])
    out = {}
    for method in ("canonical", "raw", "specific", "mean"):
        K = geometry_ref.transport_maps(ref, method)
        steps = [gpt2_ref.evaluate(ck, held, hook=geometry_ref.transport_hook(ref, K, i))["loss"] - base
                 for i in range(1, L)]
        allv = gpt2_ref.evaluate(ck, held, hook=geometry_ref.transport_hook(ref, K, None))["loss"] - base
        out[method] = (steps, allv)
    return base, out


def main():
    cfg = gen_gpt2.config(d=16, layers=4, heads=2, vocab=24, positions=16, moe_layers=[0, 1, 2, 3], n=4, k=2, h=12,
                          act="gelu_new")
    back = gen_gpt2.backbone(cfg, 3)
    moe = gen_gpt2.moe_blocks(cfg, 1)
    ids = gen_gpt2.teacher_ids(cfg, {**back, **moe}, 5, N, T)
    pool = os.path.join(TMP, "net")
    gen_gpt2.write_pool(pool, cfg, back, {"seed1": moe}, ids)
    ckp, ev = os.path.join(pool, "seed1"), os.path.join(pool, "eval.safetensors")
    ck = gpt2_ref.load(ckp)
    ids = gpt2_ref.read_safetensors(ev)[0]["input_ids"]
    X = block_inputs(ck, ids)
    ts = 32  # 0.8 of 40 sequences
    ntr, held = ts * T, (N - ts) * T

    j = geometry_json(ckp, ev)
    ref = geometry_ref.geometry(ref_layers(ck, X), ntr)
    if j:
        check(j["tokens"] == N * T and j["train"] == ntr and j["run"]["mode"] == "network"
              and j["run"]["train_sequences"] == ts, "network: tokens and split %s" % j["run"])
        compare("network", j, ref, held, 1e-5, 1e-6)
        base, tr = transport_ref(ck, ids, ts, ref)
        close(j["transport"]["loss"], base, 1e-5 * base, "transport: the held-out loss")
        for method, (steps, allv) in tr.items():
            close(j["transport"][method]["steps"], steps, 1e-5 * base, "transport %s per step" % method)
            close(j["transport"][method]["all"], allv, 1e-5 * base, "transport %s rolled out" % method)
        check(all(np.isfinite(j["transport"]["random"]["steps"])), "transport: the random gauge's dNLL")

    # capture mode: numpy's inputs (float32) as inputs.L, through the gpt2 family
    cap = os.path.join(TMP, "capture.safetensors")
    X32 = [x.astype(np.float32) for x in X]
    oracle.write_safetensors(cap, {"inputs.%d" % L: X32[i] for i, L in enumerate(cfg["moe"]["layers"])},
                             {"capture.layers": "0,1,2,3"})
    jc = geometry_json(ckp, cap)
    if jc:
        check(jc["run"]["mode"] == "capture" and jc["train"] == round(0.8 * N * T), "capture: the split by tokens")
    jc = geometry_json(ckp, cap, "--train-frac", str(ntr / (N * T)))
    if jc:
        ref32 = geometry_ref.geometry(ref_layers(ck, X32), ntr)
        compare("capture", jc, ref32, held, 1e-7, 1e-9)
        if j:
            close([jc["transitions"][m]["shared"] for m in ("canonical", "raw", "pca", "cca")],
                  [j["transitions"][m]["shared"] for m in ("canonical", "raw", "pca", "cca")], 1e-5,
                  "capture of the same inputs = the network mode")
            check("transport" not in jc, "capture: no transport test (no network to run)")

    # one vector added to every gate row of every block: nothing reported changes
    moe2 = copy.deepcopy(moe)
    g = np.random.default_rng(9)
    for L in cfg["moe"]["layers"]:
        key = "transformer.h.%d.mlp.gate.weight" % L
        moe2[key] = np.asarray(moe2[key] + 3.0 * g.standard_normal(16), np.float32).astype(np.float64)
    gen_gpt2.write_pool(os.path.join(TMP, "shifted"), cfg, back, {"seed1": moe2}, ids)
    j2 = geometry_json(os.path.join(TMP, "shifted", "seed1"), os.path.join(TMP, "shifted", "eval.safetensors"),
                       "--no-transport")
    if j and j2:
        close(j2["angles"]["mean_deg"], j["angles"]["mean_deg"], 1e-4, "shifted gates: angles")
        for m in ("canonical", "pca", "cca"):
            close([j2["transitions"][m][k] for k in ("shared", "specific")],
                  [j["transitions"][m][k] for k in ("shared", "specific")], 1e-4, "shifted gates: %s R^2" % m)
        close([y["recall"]["states"] for y in j2["layers"]], [y["recall"]["states"] for y in j["layers"]], 1e-9,
              "shifted gates: recalls")
        check([y["rank"] for y in j2["layers"]] == [y["rank"] for y in j["layers"]], "shifted gates: ranks")
        check("transport" not in j2, "--no-transport")

    # --train-frac in whole sequences; --seed moves the random gauge only
    j3 = geometry_json(ckp, ev, "--train-frac", "0.5", "--seed", "7", "--no-transport")
    if j3 and j:
        check(j3["train"] == 20 * T and j3["run"]["train_sequences"] == 20, "--train-frac 0.5: 20 sequences")
        j4 = geometry_json(ckp, ev, "--seed", "7", "--no-transport")
        if j4:
            close(j4["transitions"]["canonical"]["shared"], j["transitions"]["canonical"]["shared"], 0,
                  "--seed: the canonical gauge unchanged")
            check(j4["transitions"]["random"]["shared"] != j["transitions"]["random"]["shared"],
                  "--seed: another random gauge")
    shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_geometry_network")


if __name__ == "__main__":
    sys.exit(main())
