"""tests/commands/test_geometry_cmd.py - `moescope geometry` as a user runs it: the report's
parts, its outputs, and every refusal with a clear message and exit code 1 (2 for usage).

  - a planted system in a capture (moescope's own layer names, inputs.<prefix>): each
    layer's states are one known linear map of the previous layer's in its own random
    subspace and gauge, with noise outside the subspaces: canonical R^2 ~ 1 with the
    layer-specific R^2 equal (eta_share ~ 1) and the raw gauge far below;
  - a router with two equal gate rows: rank n - 2 reported ([warn], the JSON names the
    rows), the common rank drops and the rest still runs; n - 1 > d: [info];
  - refusals: a network with one MoE block, a dense network, a capture missing a
    layer, token sets that differ, a width that differs, a one-layer capture
    (`inputs`), token ids for a checkpoint that is no network, too few tokens, --eval
    missing, an output over an input, bad option values;
  - a network of one sequence is split by tokens and says there is no transport test;
    a ViT's images are split whole, each its patches and CLS token;
  - the figures: the angle heat map and the R^2 per step, PNG (size, title, legend,
    provenance in its text chunks) and SVG (a cell per pair holding the JSON's mean
    angle; every series); the CSV has one row per step; `moescope --help` lists the
    command.
"""
import csv
import json
import os
import shutil
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_ckpt  # noqa: E402
import gen_gpt2  # noqa: E402
import gen_vit  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, png_info, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_geocmd_")
SVG = "{http://www.w3.org/2000/svg}"


def p(*names):
    return os.path.join(TMP, *names)


def native_layers(path, gates, n, d, seed=1):
    """a file of len(gates) native layers layer0.., their gates replaced by gates[l]"""
    t, meta = {}, None
    for l, W in enumerate(gates):
        tl, meta = gen_ckpt.make_layer(seed + l, n=n, d=d, h=4, router="topk", k=2, head=False, prefix="layer%d" % l)
        tl["layer%d.gate.weight" % l] = np.asarray(W, np.float32).astype(np.float64)
        t.update(tl)
    oracle.write_safetensors(path, t, meta)


def orth(g, rows, cols):
    return np.linalg.qr(g.standard_normal((rows, cols)))[0]


def planted(L=4, n=6, d=16, N=3000, eps=0.02, seed=3):
    """gates and inputs of a planted system (see the module docstring)"""
    g = np.random.default_rng(seed)
    r = n - 1
    E = orth(g, r, r)
    A = E @ np.diag(np.linspace(0.6, 0.95, r)) @ E.T
    z = g.standard_normal((N, r))
    gates, X = [], []
    for l in range(L):
        if l:
            z = z @ A + eps * g.standard_normal((N, r))
        U, G = orth(g, d, r), orth(g, r, r)
        noise = 2.0 * g.standard_normal((N, d))
        noise -= noise @ U @ U.T
        X.append((z @ G) @ U.T + noise + 0.5)
        M = g.standard_normal((n, r))
        M -= M.mean(0)
        gates.append(M @ U.T + g.standard_normal(d))
    return gates, X


def geometry(*args):
    return run("geometry", *args)


def test_planted():
    gates, X = planted()
    ck, cap, js, cs = p("planted.safetensors"), p("planted_cap.safetensors"), p("planted.json"), p("planted.csv")
    native_layers(ck, gates, 6, 16)
    oracle.write_safetensors(cap, {"inputs.layer%d" % l: x.astype(np.float32) for l, x in enumerate(X)})
    r = geometry(ck, "--eval", cap, "--json", js, "--csv", cs)
    check(r.returncode == 0, "planted: %s" % r.stderr)
    if r.returncode:
        return
    j = json.load(open(js))
    c = j["transitions"]["canonical"]
    check(c["shared"] > 0.99 and abs(c["shared"] - c["specific"]) < 2e-3 and 0.995 < j["eta_share"] < 1.005,
          "planted: shared %.5f specific %.5f eta %.5f" % (c["shared"], c["specific"], j["eta_share"]))
    check(j["transitions"]["raw"]["shared"] < c["shared"] - 0.2, "planted: raw gauge %.3f" % j["transitions"]["raw"]["shared"])
    check(j["rank"] == 5 and all(y["logit_error"] < 1e-10 for y in j["layers"]), "planted: rank 5, exact logits")
    check(all(y["recall"]["states"] > 0.999 for y in j["layers"]), "planted: states keep the choices")
    for part in ("routers (W~", "principal angles", "canonical gauge (GPA", "transitions y_{l+1} ~ y_l A",
                 "expert choices recalled"):
        check(part in r.stdout, "planted report: '%s'\n%s" % (part, r.stdout))
    check("\ntransport: " not in r.stdout, "a capture has no transport test")
    # the figures: PNG and SVG
    figs = {k: p("planted_%s" % k) for k in ("angles.png", "r2.png", "angles.svg", "r2.svg")}
    r = geometry(ck, "--eval", cap, "--angles-png", figs["angles.png"], "--r2-png", figs["r2.png"], "--size", "800x500")
    check(r.returncode == 0, "figures: %s" % r.stderr)
    if r.returncode == 0:
        w, h, text, _ = png_info(figs["angles.png"])
        check((w, h) == (800, 500) and "principal angle" in text.get("Title", "") and "moescope" in text.get("Software", ""),
              "angles PNG: %dx%d %s" % (w, h, text))
        w, h, text, _ = png_info(figs["r2.png"])
        check("shared, canonical gauge (GPA)" in text.get("Legend", "") and "R\u00b2" in text.get("Title", "")
              and "R^2" not in text.get("Title", "") and "y(l+1) = y(l)" in text.get("Legend", ""),
              "R^2 PNG: typeset R\u00b2 and y(l+1), not raw R^2 and y_{l+1}: %s" % text)
    r = geometry(ck, "--eval", cap, "--angles-png", figs["angles.svg"], "--r2-png", figs["r2.svg"])
    check(r.returncode == 0, "SVG figures: %s" % r.stderr)
    if r.returncode == 0:
        root = ET.parse(figs["angles.svg"]).getroot()
        cells = [float(e.get("data-value")) for e in root.iter(SVG + "rect") if e.get("class") == "cell"]
        check(np.allclose(cells, np.asarray(j["angles"]["mean_deg"]).ravel(), atol=1e-6),
              "angles SVG: one cell per pair, the JSON's means: %s" % cells)
        labels = [g.get("data-label") for g in ET.parse(figs["r2.svg"]).getroot().iter(SVG + "g")
                  if g.get("class") == "series"]
        check(len(labels) == 7 and "layer-specific" in labels, "R^2 SVG series: %s" % labels)
    refused([ck, "--eval", cap, "--json", p("same.x"), "--csv", p("same.x")], ["same"], "two outputs in one file", code=2)
    rows = list(csv.reader(l for l in open(cs) if not l.startswith("#")))
    check(len(rows) == 4 and rows[0][:4] == ["from", "to", "from_layer", "to_layer"] and "canonical_shared" in rows[0],
          "CSV: a header and one row per step: %s" % rows[:1])


def test_ranks():
    g = np.random.default_rng(4)
    X = [g.standard_normal((400, 8)).astype(np.float32) for _ in range(3)]
    gates = [g.standard_normal((5, 8)) for _ in range(3)]
    gates[1][3] = gates[1][0]
    ck, cap, js = p("dup.safetensors"), p("dup_cap.safetensors"), p("dup.json")
    native_layers(ck, gates, 5, 8)
    oracle.write_safetensors(cap, {"inputs.layer%d" % l: x for l, x in enumerate(X)})
    r = geometry(ck, "--eval", cap, "--json", js)
    check(r.returncode == 0 and "[warn] layer1: rank 3 < 4: gate rows 0 and 3 are equal after centring" in r.stdout
          and "the states keep its first 3 of 4 directions" in r.stdout, "duplicate rows reported:\n%s%s" % (r.stdout, r.stderr))
    if r.returncode == 0:
        j = json.load(open(js))
        check(j["rank"] == 3 and j["layers"][1]["duplicate_rows"] == [0, 3] and j["layers"][0]["duplicate_rows"] is None,
              "duplicate rows in the JSON")
    wide = [g.standard_normal((8, 4)) for _ in range(3)]
    native_layers(p("wide.safetensors"), wide, 8, 4)
    oracle.write_safetensors(p("wide_cap.safetensors"),
                             {"inputs.layer%d" % l: g.standard_normal((300, 4)).astype(np.float32) for l in range(3)})
    r = geometry(p("wide.safetensors"), "--eval", p("wide_cap.safetensors"))
    check(r.returncode == 0 and "n - 1 = 7 > d = 4: the width bounds the rank" in r.stdout, "n - 1 > d:\n" + r.stdout)


def refused(args, want, what, code=1):
    r = geometry(*args)
    ok = r.returncode == code and all(w in r.stderr for w in want)
    check(ok, "%s: exit %d, %s" % (what, r.returncode, r.stderr.strip()))


def test_refusals():
    # networks: one MoE block, none
    for name, layers in (("one", [1]), ("none", [])):
        cfg = gen_gpt2.config(layers=3, moe_layers=layers)
        gen_gpt2.write_pool(p(name), cfg, gen_gpt2.backbone(cfg, 1), {"seed1": gen_gpt2.moe_blocks(cfg, 1)},
                            gen_gpt2.eval_ids(cfg, 2, 6, 12))
    refused([p("one", "seed1"), "--eval", p("one", "eval.safetensors")], ["one MoE block only", "two or more"],
            "a network with one MoE block")
    refused([p("none", "seed1"), "--eval", p("none", "eval.safetensors")], ["no MoE block"], "a dense network")
    # captures
    g = np.random.default_rng(5)
    gates = [g.standard_normal((4, 6)) for _ in range(3)]
    ck = p("three.safetensors")
    native_layers(ck, gates, 4, 6)
    X = {"inputs.layer%d" % l: g.standard_normal((100, 6)).astype(np.float32) for l in range(3)}
    cases = [
        ("missing", {k: v for k, v in X.items() if k != "inputs.layer1"}, ["no captured inputs for MoE layer layer1",
                                                                           "inputs.layer1", "--layers all"]),
        ("tokens", {**X, "inputs.layer2": X["inputs.layer2"][:90]}, ["mismatched token sets", "inputs.layer2",
                                                                      "90", "100"]),
        ("width", {**X, "inputs.layer1": g.standard_normal((100, 5)).astype(np.float32)}, ["width 5", "d = 6"]),
        ("one", {"inputs": X["inputs.layer0"]}, ["one layer's inputs", "inputs.L"]),
        ("few", {k: v[:5] for k, v in X.items()}, ["5 tokens", "training"]),
    ]
    for name, t, want in cases:
        oracle.write_safetensors(p("cap_%s.safetensors" % name), t)
        refused([ck, "--eval", p("cap_%s.safetensors" % name)], want, "capture: %s" % name)
    refused([ck, "--eval", p("one", "eval.safetensors")], ["input_ids", "not a network checkpoint"],
            "token ids for a checkpoint that is no network")
    # usage
    oracle.write_safetensors(p("cap_ok.safetensors"), X)
    refused([ck], ["needs --eval"], "no --eval", code=2)
    refused([ck, ck, "--eval", p("cap_ok.safetensors")], ["unexpected argument"], "two checkpoints", code=2)
    refused([ck, "--eval", p("cap_ok.safetensors"), "--train-frac", "1.5"], ["--train-frac"], "--train-frac 1.5", code=2)
    refused([ck, "--eval", p("cap_ok.safetensors"), "--threads", "0"], ["--threads"], "--threads 0", code=2)
    refused([ck, "--eval", p("cap_ok.safetensors"), "--json", p("cap_ok.safetensors")], ["cap_ok.safetensors"],
            "--json over the capture")
    r = geometry(ck, "--eval", p("cap_ok.safetensors"))
    check(r.returncode == 0, "the same capture, whole: %s" % r.stderr)


def test_one_sequence():
    cfg = gen_gpt2.config(layers=3, moe_layers=[0, 1, 2], positions=64)
    gen_gpt2.write_pool(p("seq"), cfg, gen_gpt2.backbone(cfg, 1), {"seed1": gen_gpt2.moe_blocks(cfg, 1)},
                        gen_gpt2.eval_ids(cfg, 2, 1, 64))
    js = p("seq.json")
    r = geometry(p("seq", "seed1"), "--eval", p("seq", "eval.safetensors"), "--json", js)
    check(r.returncode == 0 and "one sequence: its first 51 tokens train" in r.stdout and
          "no transport test" in r.stdout, "one sequence:\n%s%s" % (r.stdout, r.stderr))
    if r.returncode == 0:
        check(json.load(open(js))["train"] == 51 and "transport" not in json.load(open(js)), "one sequence: the split")


def test_vit():
    """a ViT with an MoE at every block: its images' tokens (patches and the CLS), split by images"""
    cfg = gen_vit.config(layers=3, moe_layers=[0, 1, 2])
    back = gen_vit.backbone(cfg, 1)
    moe = gen_vit.moe_blocks(cfg, 1)
    px, labels = gen_vit.images(cfg, 2, 40)
    gen_vit.write_pool(p("vit"), cfg, back, {"seed1": moe}, px, labels)
    js = p("vit.json")
    r = geometry(p("vit", "seed1"), "--eval", p("vit", "eval.safetensors"), "--json", js)
    check(r.returncode == 0 and "40 images of 17 tokens, the first 32 images train" in r.stdout,
          "ViT:\n%s%s" % (r.stdout[:400], r.stderr))
    if r.returncode == 0:
        j = json.load(open(js))
        check(j["tokens"] == 40 * 17 and j["train"] == 32 * 17 and j["transport"]["heldout_sequences"] == 8
              and len(j["transport"]["canonical"]["steps"]) == 2, "ViT: tokens, split, transport")


def main():
    test_planted()
    test_vit()
    test_ranks()
    test_refusals()
    test_one_sequence()
    r = run("--help")
    check("geometry" in r.stdout, "moescope --help lists geometry")
    r = geometry("--help")
    check(r.returncode == 0 and "--train-frac" in r.stdout and "control subspace" in r.stdout, "geometry --help")
    shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_geometry_cmd")


if __name__ == "__main__":
    sys.exit(main())
