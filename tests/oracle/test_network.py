"""tests/oracle/test_network.py - moescope's network evaluator against the independent
numpy float64 forward tests/oracle/gpt2_ref.py, on random GPT-2-layout networks with MoE
blocks (tests/lib/gen_gpt2.py), and its refusals.

  - `eval --json` loss within 1e-5 relative of gpt2_ref's, accuracy equal (up to one
    position), `--dump-outputs` logits within 1e-5 of the largest: MoE at the first, a
    middle and every block; top-k, dense; relu, gelu, gelu_new experts; shared experts;
    gelu and gelu_new dense MLPs; tied and untied heads with lm_head.bias; I32 and I64
    ids; sharded (backbone a symlinked shard) and single-file folders;
  - the same loss for 1 and 2 threads, bit for bit;
  - a scramble of one MoE block (experts, hidden units, gate translation) records its seed,
    order and translation in the block's metadata, and computes the
    same network loss and logits;
  - clear errors naming the file and the tensor: a missing block tensor, input_ids >=
    vocab_size, T > n_positions, a moe.layers entry without its tensors, a block with MoE
    tensors not in moe.layers, a width that disagrees with n_embd.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import gpt2_ref  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_network_")

VARIANTS = [
    ("moe first, top-2 relu", dict(moe_layers=[0]), {}),
    ("moe in the middle, dense gelu, shared", dict(moe_layers=[1], router="dense", k=4, shared=1, act="gelu"), {}),
    ("moe at every block, top-2 gelu_new, untied + bias",
     dict(moe_layers=[0, 1, 2], act="gelu_new", tied=False, net_act="gelu"), dict(lm_bias=True)),
    ("moe last, top-1, 8 experts, I32 ids", dict(moe_layers=[2], n=8, k=1, h=6), dict(i32=True)),
    ("single file, 2 shared, no gate bias", dict(moe_layers=[0, 2], shared=2), dict(single=True, gate_bias=False)),
    ("no MoE block (a dense GPT-2), n_inner 24", dict(moe_layers=[], n_inner=24), {}),
]


def p(*names):
    return os.path.join(TMP, *names)


def make(name, cfgkw, extra, seeds=(1,), N=6, T=12):
    cfg = gen_gpt2.config(**cfgkw)
    back = gen_gpt2.backbone(cfg, 3, lm_bias=extra.get("lm_bias", False))
    moe = {"seed%d" % s: gen_gpt2.moe_blocks(cfg, s, gate_bias=extra.get("gate_bias", True)) for s in seeds}
    gen_gpt2.write_pool(p(name), cfg, back, moe, gen_gpt2.eval_ids(cfg, 4, N, T),
                        single=extra.get("single", False), i32=extra.get("i32", False))
    return cfg


def eval_json(ckpt, ev, *extra):
    out = p("eval_%d.json" % abs(hash((ckpt, ev, extra))))
    r = run("eval", ckpt, "--eval", ev, "--json", out, *extra)
    check(r.returncode == 0, "eval %s: %s" % (ckpt, r.stderr.strip()))
    return json.load(open(out)) if r.returncode == 0 else None


def test_oracle():
    for i, (name, kw, extra) in enumerate(VARIANTS):
        pool = "v%d" % i
        make(pool, kw, extra)
        ck, ev = p(pool, "seed1"), p(pool, "eval.safetensors")
        ids = gpt2_ref.read_safetensors(ev)[0]["input_ids"]
        ref = gpt2_ref.evaluate(gpt2_ref.load(ck), ids)
        j = eval_json(ck, ev)
        if not j:
            continue
        check(abs(j["loss"] - ref["loss"]) <= 1e-5 * abs(ref["loss"]),
              "%s: loss %.9g vs numpy %.9g" % (name, j["loss"], ref["loss"]))
        npos = ids.shape[0] * (ids.shape[1] - 1)
        check(abs(j["accuracy"] - ref["accuracy"]) <= 1.0 / npos + 1e-12,
              "%s: accuracy %.6g vs numpy %.6g" % (name, j["accuracy"], ref["accuracy"]))
        check(j["positions"] == npos and j["mode"] == "network", "%s: positions and mode in the JSON" % name)
        testutil.check_network_outputs(name, j, len(kw["moe_layers"]), ck, ev, p(pool, "logits.safetensors"),
                                       lambda: gpt2_ref.logits(gpt2_ref.load(ck), ids))
        j1 = eval_json(ck, ev, "--threads", 1)
        j2 = eval_json(ck, ev, "--threads", 2)
        check(j1 and j2 and j1["loss"] == j2["loss"] == j["loss"], "%s: same loss on 1 and 2 threads" % name)


def test_scramble():
    make("sc", dict(moe_layers=[0, 2], shared=1), {})
    ck, ev = p("sc", "seed1"), p("sc", "eval.safetensors")
    base = eval_json(ck, ev)
    for L in (0, 2):
        s = p("sc", "scr%d" % L)
        r = run("scramble", ck, "-o", s, "--layer", L, "--seed", 5 + L, "--translate")
        check(r.returncode == 0, "scramble block %d: %s" % (L, r.stderr))
        # the record --help and the manual promise: seed, order, translation, in the
        # metadata of the file holding the block (info shows it)
        r = run("info", s, "--layer", L, "--json", s + ".json")
        meta = json.load(open(s + ".json")).get("metadata", {}) if r.returncode == 0 else {}
        order = meta.get("moescope.scramble.order", "").split()
        check(meta.get("moescope.scramble.seed") == str(5 + L) and meta.get("moescope.scramble.translate") == "1"
              and sorted(order) == [str(i) for i in range(len(order))] and len(order) > 1
              and "moescope.scramble.source" in meta, "block %d scrambled: metadata records the scramble: %s" % (L, meta))
        j = eval_json(s, ev)
        if base and j:
            check(abs(j["loss"] - base["loss"]) <= 1e-6 * abs(base["loss"]),
                  "block %d scrambled: the same network loss (%.9g vs %.9g)" % (L, j["loss"], base["loss"]))
            check(j["accuracy"] == base["accuracy"], "block %d scrambled: the same accuracy" % L)


def expect_error(what, args, *needles):
    r = run(*args)
    ok = r.returncode == 1 and all(n in r.stderr for n in needles)
    check(ok, "%s: exit 1 naming %s; got %d: %s" % (what, needles, r.returncode, r.stderr.strip()))


def edit_pool(name, edit_cfg=None, drop=None, ids=None):
    cfg = make(name, dict(moe_layers=[0]), {})
    folder = p(name, "seed1")
    if edit_cfg:
        edit_cfg(cfg)
        json.dump(cfg, open(os.path.join(folder, "config.json"), "w"))
    if drop:
        back = {k: v for k, v in gen_gpt2.backbone(cfg, 3).items() if k != drop}
        gen_gpt2.write_folder(folder, cfg, back, gen_gpt2.moe_blocks(cfg, 1), single=True)
        os.remove(os.path.join(folder, "model.safetensors.index.json"))
    if ids is not None:
        oracle.write_safetensors(p(name, "eval.safetensors"), {"input_ids": ids})
    return folder, p(name, "eval.safetensors")


def test_errors():
    ck, ev = edit_pool("miss", drop="transformer.h.1.ln_2.bias")
    expect_error("a missing block tensor", ("eval", ck, "--eval", ev), ck, "transformer.h.1.ln_2.bias")
    ck, ev = edit_pool("vocab", ids=np.full((2, 5), 24, np.int64))
    expect_error("input_ids >= vocab_size", ("eval", ck, "--eval", ev), ev, "input_ids", "vocab_size")
    ck, ev = edit_pool("long", ids=np.zeros((2, 17), np.int64))
    expect_error("T > n_positions", ("eval", ck, "--eval", ev), ev, "input_ids", "n_positions")
    ck, ev = edit_pool("neg", ids=np.full((2, 5), -1, np.int64))
    expect_error("a negative id", ("eval", ck, "--eval", ev), ev, "input_ids")
    ck, ev = edit_pool("flat", ids=np.zeros((7,), np.int64))
    expect_error("1-D input_ids", ("eval", ck, "--eval", ev), ev, "input_ids")
    ck, ev = edit_pool("listed", edit_cfg=lambda c: c["moe"].update(layers=[0, 1]))
    expect_error("a moe.layers entry without its tensors", ("eval", ck, "--eval", ev), ck,
                 "transformer.h.1.mlp.gate.weight", "moe.layers")
    ck, ev = edit_pool("unlisted", edit_cfg=lambda c: c["moe"].update(layers=[]))
    expect_error("an MoE block not in moe.layers", ("eval", ck, "--eval", ev), ck,
                 "transformer.h.0.mlp.c_fc.weight", "moe.layers")
    ck, ev = edit_pool("width", edit_cfg=lambda c: c.update(n_embd=8, n_head=2))
    expect_error("n_embd disagrees with the tensors", ("eval", ck, "--eval", ev), "transformer.wte.weight", "[24, 16]")
    ck, ev = edit_pool("heads", edit_cfg=lambda c: c.update(n_head=3))
    expect_error("n_embd not a multiple of n_head", ("eval", ck, "--eval", ev), "config.json", "n_head")
    ck, ev = edit_pool("eps", edit_cfg=lambda c: c.update(layer_norm_epsilon="small"))
    expect_error("a non-numeric epsilon", ("eval", ck, "--eval", ev), "config.json", "layer_norm_epsilon")
    ck, ev = edit_pool("nlayer", edit_cfg=lambda c: c.update(n_layer=2.5))
    expect_error("a fractional n_layer", ("eval", ck, "--eval", ev), "config.json", "n_layer")
    # a layer checkpoint with a token evaluation set
    lay = p("layer.safetensors")
    import gen_ckpt
    gen_ckpt.write_layer(lay, seed=1)
    expect_error("input_ids for a bare layer", ("eval", lay, "--eval", ev), lay, "gpt2")


def main():
    try:
        test_oracle()
        test_scramble()
        test_errors()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_network")


if __name__ == "__main__":
    sys.exit(main())
