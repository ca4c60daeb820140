"""tests/oracle/test_vit.py - moescope's ViT networks (Hugging Face's ViT layout with MoE
blocks) against the independent numpy float64 forward tests/oracle/vit_ref.py, on random
networks (tests/lib/gen_vit.py), and their refusals.

  - `eval --json` loss within 1e-5 relative of vit_ref's, accuracy equal (up to one
    image), `--dump-outputs` logits [N, classes] within 1e-5 of the largest: MoE at the
    first, the last and every block; top-k, dense; gelu, relu, gelu_new experts; shared
    experts; 1 and 3 channels, patch sizes 2 and 4; without qkv biases; sharded
    (backbone a symlinked shard) and single-file folders;
  - the same loss for 1 and 2 threads, bit for bit;
  - a scramble of one MoE block (experts, hidden units, gate translation) computes the
    same network, and its landscape undoes it: the expert alignment's barrier ~0, rank 1,
    and the naive barrier is numpy's (every MoE tensor interpolated, vit_ref's loss);
  - the committed samples (sample-checkpoints/vit/, trained with PyTorch): every pool's
    seeds load, share their backbone file, and evaluate to vit_ref's loss and accuracy;
  - clear errors naming the file and the tensor: a wrong image size, channel count,
    a patch size the image does not divide or the projection disagrees with, a missing
    tensor, labels missing or out of range, a GPT-2's evaluation set on a ViT.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import gen_vit  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
import vit_ref  # noqa: E402
from testutil import check, expect_error, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_vit_")
T = 5

VARIANTS = [
    ("moe first, top-2 gelu", dict(moe_layers=[0]), {}),
    ("moe last, dense relu, shared, 3 channels", dict(moe_layers=[1], router="dense", k=4, shared=1, act="relu",
                                                      channels=3), {}),
    ("moe at every block, top-1 gelu_new, 8 experts, patch 4", dict(moe_layers=[0, 1, 2], layers=3, n=8, k=1,
                                                                   h=6, act="gelu_new", patch=4), {}),
    ("single file, 2 shared, no qkv bias, relu MLPs", dict(moe_layers=[0], shared=2, qkv_bias=False,
                                                          net_act="relu"), dict(single=True)),
    ("no MoE block (a dense ViT), 12 x 12 images", dict(moe_layers=[], image=12, ff=24), {}),
]


def p(*names):
    return os.path.join(TMP, *names)


def make(name, cfgkw, extra=None, seeds=(1,), N=20, teacher=False):
    extra = extra or {}
    cfg = gen_vit.config(**cfgkw)
    back = gen_vit.backbone(cfg, 3)
    moe = {"seed%d" % s: gen_vit.moe_blocks(cfg, s) for s in seeds}
    first = moe["seed%d" % seeds[0]]
    px, labels = gen_vit.images(cfg, 4, N, {**back, **first} if teacher else None)
    gen_vit.write_pool(p(name), cfg, back, moe, px, labels, single=extra.get("single", False))
    return cfg


def eval_json(ckpt, ev, *extra):
    return testutil.eval_json(p("eval_%d.json" % abs(hash((ckpt, ev, extra)))), ckpt, ev, *extra)


def read_eval(ev):
    t = oracle.read_safetensors(ev)[0]
    return t["pixel_values"].astype(np.float64), t["labels"]


def test_oracle():
    for i, (name, kw, extra) in enumerate(VARIANTS):
        pool = "v%d" % i
        make(pool, kw, extra)
        ck, ev = p(pool, "seed1"), p(pool, "eval.safetensors")
        px, labels = read_eval(ev)
        ref = vit_ref.evaluate(vit_ref.load(ck), px, labels)
        j = eval_json(ck, ev)
        if not j:
            continue
        check(abs(j["loss"] - ref["loss"]) <= 1e-5 * abs(ref["loss"]),
              "%s: loss %.9g vs numpy %.9g" % (name, j["loss"], ref["loss"]))
        check(abs(j["accuracy"] - ref["accuracy"]) <= 1.0 / len(labels) + 1e-12,
              "%s: accuracy %.6g vs numpy %.6g" % (name, j["accuracy"], ref["accuracy"]))
        Pt = (kw.get("image", 8) // kw.get("patch", 2)) ** 2 + 1
        check(j["positions"] == len(labels) and j["images"] == len(labels) and j["tokens_per_sequence"] == Pt
              and j["architecture"] == "vit", "%s: images, tokens and architecture in the JSON" % name)
        testutil.check_network_outputs(name, j, len(kw["moe_layers"]), ck, ev, p(pool, "logits.safetensors"),
                                       lambda: vit_ref.logits(vit_ref.load(ck), px))
        j1, j2 = eval_json(ck, ev, "--threads", 1), eval_json(ck, ev, "--threads", 2)
        check(j1 and j2 and j1["loss"] == j2["loss"] == j["loss"], "%s: same loss on 1 and 2 threads" % name)


def naive_barrier_ref(a, b, px, labels):
    """numpy: every MoE tensor interpolated straight (no alignment), vit_ref's loss at T points"""
    A, B = vit_ref.load(a), vit_ref.load(b)
    names = vit_ref.moe_names(A)
    loss = []
    for m in range(T):
        t = m / (T - 1)
        params = {k: (1 - t) * A["tensors"][k].astype(np.float64) + t * B["tensors"][k] for k in names}
        loss.append(vit_ref.evaluate(A, px, labels, params)["loss"])
    return max(loss[m] - ((1 - m / (T - 1)) * loss[0] + m / (T - 1) * loss[-1]) for m in range(T))


def test_scramble():
    make("sc", dict(moe_layers=[0, 1], shared=1), teacher=True)
    ck, ev = p("sc", "seed1"), p("sc", "eval.safetensors")
    base = eval_json(ck, ev)
    s = p("sc", "seed2")
    r = run("scramble", ck, "-o", s, "--layer", 0, "--seed", 5, "--translate")
    check(r.returncode == 0, "scramble block 0: %s" % r.stderr)
    j = eval_json(s, ev)
    if base and j:
        check(abs(j["loss"] - base["loss"]) <= 1e-6 * abs(base["loss"]) and j["accuracy"] == base["accuracy"],
              "block 0 scrambled: the same network loss (%.9g vs %.9g)" % (j["loss"], base["loss"]))
    ta, ts = gen_gpt2.read_folder(ck)[1], gen_gpt2.read_folder(s)[1]
    check(np.abs(ta["vit.encoder.layer.0.moe.gate.weight"] - ts["vit.encoder.layer.0.moe.gate.weight"]).max() > 0,
          "the scramble moved block 0's gate")
    out = p("sc", "ls.json")
    r = run("landscape", ck, s, "--eval", ev, "--points", T, "--json", out, "-q")
    check(r.returncode == 0, "landscape on the scramble: %s" % r.stderr)
    if r.returncode:
        return
    J = json.load(open(out))
    e = J["methods"]["expert"]
    check(e["barrier"] < 1e-5 and e["rank"] == 1, "scramble undone: expert barrier %g, rank %d"
          % (e["barrier"], e["rank"]))
    px, labels = read_eval(ev)
    want = naive_barrier_ref(ck, s, px, labels)
    check(abs(J["naive"]["barrier"] - want) <= 1e-5 * max(1.0, abs(want)) and want > 10 * max(e["barrier"], 1e-6),
          "naive barrier %.9g is numpy's %.9g, far above the alignment's" % (J["naive"]["barrier"], want))
    check("network loss" in J.get("objective", json.dumps(J)), "the landscape is on the network loss")


def edit_pool(name, edit_cfg=None, drop=None, ev=None, back_edit=None):
    cfg = make(name, dict(moe_layers=[0]))
    folder = p(name, "seed1")
    if edit_cfg:
        edit_cfg(cfg)
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    if drop or back_edit:
        back = gen_vit.backbone(gen_vit.config(moe_layers=[0]), 3)
        back = {k: v for k, v in back.items() if k != drop}
        if back_edit:
            back_edit(back)
        gen_gpt2.write_folder(folder, cfg, back, gen_vit.moe_blocks(cfg, 1), single=True)
        os.remove(os.path.join(folder, "model.safetensors.index.json"))
    if ev is not None:
        oracle.write_safetensors(p(name, "eval.safetensors"), ev)
    return folder, p(name, "eval.safetensors")


def test_errors():
    px = np.zeros((3, 1, 8, 8), np.float32)
    lab = np.zeros(3, np.int64)
    ck, ev = edit_pool("size", ev={"pixel_values": np.zeros((3, 1, 6, 6), np.float32), "labels": lab})
    expect_error("a wrong image size", ("eval", ck, "--eval", ev), ev, "pixel_values", "6 x 6", "image_size = 8")
    ck, ev = edit_pool("chan", ev={"pixel_values": np.zeros((3, 3, 8, 8), np.float32), "labels": lab})
    expect_error("a wrong channel count", ("eval", ck, "--eval", ev), ev, "pixel_values", "3 channel",
                 "num_channels = 1")
    ck, ev = edit_pool("ndiv", edit_cfg=lambda c: c.update(patch_size=3))
    expect_error("a patch size the image does not divide", ("eval", ck, "--eval", ev), "config.json",
                 "image_size = 8", "patch_size = 3")
    ck, ev = edit_pool("patch", edit_cfg=lambda c: c.update(patch_size=4))
    expect_error("a patch size the tensors disagree with", ("eval", ck, "--eval", ev), ck,
                 "vit.embeddings.patch_embeddings.projection.weight", "expected [16, 1, 4, 4]")
    ck, ev = edit_pool("miss", drop="vit.encoder.layer.1.layernorm_after.bias")
    expect_error("a missing block tensor", ("eval", ck, "--eval", ev), ck, "vit.encoder.layer.1.layernorm_after.bias")
    ck, ev = edit_pool("misscls", drop="vit.embeddings.cls_token")
    expect_error("a missing CLS token", ("eval", ck, "--eval", ev), ck, "vit.embeddings.cls_token")
    ck, ev = edit_pool("nolab", ev={"pixel_values": px})
    expect_error("labels missing", ("eval", ck, "--eval", ev), ev, "labels")
    ck, ev = edit_pool("biglab", ev={"pixel_values": px, "labels": np.array([0, 5, 1], np.int64)})
    expect_error("a label out of range", ("eval", ck, "--eval", ev), ev, "labels", "5 classes")
    ck, ev = edit_pool("neglab", ev={"pixel_values": px, "labels": np.array([0, -1, 1], np.int64)})
    expect_error("a negative label", ("eval", ck, "--eval", ev), ev, "labels")
    ck, ev = edit_pool("ids", ev={"input_ids": np.zeros((2, 5), np.int64)})
    expect_error("a GPT-2's evaluation set on a ViT", ("eval", ck, "--eval", ev), ev, "input_ids", "pixel_values")
    ck, ev = edit_pool("listed", edit_cfg=lambda c: c["moe"].update(layers=[0, 1]))
    expect_error("a moe.layers entry without its tensors", ("eval", ck, "--eval", ev), ck,
                 "vit.encoder.layer.1.moe.gate.weight", "moe.layers")
    ck, ev = edit_pool("nlab", edit_cfg=lambda c: c.update(num_labels=7))
    expect_error("num_labels against id2label", ("eval", ck, "--eval", ev), "config.json", "num_labels")
    ck, ev = edit_pool("eps", edit_cfg=lambda c: c.update(layer_norm_eps="small"))
    expect_error("a non-numeric epsilon", ("eval", ck, "--eval", ev), "config.json", "layer_norm_eps")
    ck, ev = edit_pool("act", edit_cfg=lambda c: c.update(hidden_act="swish"))
    expect_error("an unknown hidden_act", ("eval", ck, "--eval", ev), "config.json", "hidden_act")


def test_samples():
    root = os.path.join(testutil.ROOT, "sample-checkpoints", "vit")
    pools = ("dense4", "topk4", "shared4", "topk4_last")
    check(all(os.path.isdir(os.path.join(root, q, "seed4")) for q in pools), "the ViT samples are committed")
    for q in pools:
        ev = os.path.join(root, q, "eval.safetensors")
        px, labels = read_eval(ev)
        for s in (1, 4):
            ck = os.path.join(root, q, "seed%d" % s)
            j = eval_json(ck, ev)
            ref = vit_ref.evaluate(vit_ref.load(ck), px, labels)
            check(j and abs(j["loss"] - ref["loss"]) <= 1e-5 * ref["loss"] and
                  abs(j["accuracy"] - ref["accuracy"]) <= 1.0 / len(labels) and j["accuracy"] > 0.9,
                  "sample %s seed%d: loss %s vs numpy %.6f" % (q, s, j and j["loss"], ref["loss"]))
            check(os.path.samefile(os.path.join(ck, "model-00001-of-00002.safetensors"),
                                   os.path.join(root, "backbone_block%d.safetensors" % (1 if q.endswith("last") else 0))),
                  "sample %s seed%d: the backbone shard is the shared file" % (q, s))


if __name__ == "__main__":
    sys.exit(testutil.run_tests("test_vit", (test_oracle, test_scramble, test_errors, test_samples), TMP))
