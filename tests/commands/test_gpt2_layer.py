"""tests/commands/test_gpt2_layer.py - the gpt2 family: the MoE blocks of a GPT-2-layout
network (tests/lib/gen_gpt2.py, numpy-written) as layers of the existing machinery.

  - `info --json` lists every MoE block (family gpt2, block index, n, d, h, k, shared) and
    the network's architecture (which blocks are MoE, parameter counts);
  - the layer computes what its Conv1D tensors say: `eval --dump-outputs` on block
    inputs equals a numpy MoE of x @ c_fc.weight (weights [in, out]), for relu, gelu,
    gelu_new, top-k and dense routers, with and without shared experts and gate bias;
  - `scramble` of a block (experts, hidden units, gate translation) is undone by
    `align` (cost total ~ 0, the inverse order); the output directory holds every
    tensor outside the block byte for byte (the backbone shard a hard link of the
    backbone, never a dangling link to '../backbone.safetensors');
  - `--layer` picks a block by index; a bad "moe" object in config.json, or one that
    disagrees with the tensors, is refused naming config.json and the key.
"""
import json
import os
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_gpt2_layer_")


def p(*names):
    return os.path.join(TMP, *names)


def raw_tensors(folder):
    """name -> (dtype, shape, bytes) over a folder's shards"""
    import family_fixtures as ff
    out = {}
    idx = os.path.join(folder, "model.safetensors.index.json")
    shards = sorted(set(json.load(open(idx))["weight_map"].values())) if os.path.exists(idx) else ["model.safetensors"]
    for s in shards:
        out.update(ff.read_safetensors(os.path.join(folder, s))[0])
    return out


def np_moe(t, pre, m, X):
    """the MoE block from its GPT-2 tensors (Conv1D: y = x W + b), float64"""
    def act(a):
        name = m["expert_activation"]
        if name == "relu":
            return np.maximum(a, 0)
        return oracle.gelu(a) if name == "gelu" else oracle.gelu_new(a)

    def ffn(q):
        return act(X @ t[q + "c_fc.weight"] + t.get(q + "c_fc.bias", 0.0)) @ t[q + "c_proj.weight"] \
            + t.get(q + "c_proj.bias", 0.0)
    S = X @ t[pre + "gate.weight"].T + t.get(pre + "gate.bias", 0.0)
    L = {"router": m["router"], "k": m["top_k"]}
    G = oracle.route(L, S)
    out = sum((ffn(pre + "shared_experts.%d." % s) for s in range(m["num_shared_experts"])), np.zeros_like(X))
    for e in range(m["num_experts"]):
        out = out + G[:, e:e + 1] * ffn(pre + "experts.%d." % e)
    return out


def layer_outputs(pool, router, act, shared, gate_bias, moe_layers=(0, 2)):
    cfg = gen_gpt2.config(moe_layers=moe_layers, router=router, k=4 if router == "dense" else 2,
                          shared=shared, act=act)
    back = gen_gpt2.backbone(cfg, 5)
    moe = gen_gpt2.moe_blocks(cfg, 11, gate_bias=gate_bias)
    gen_gpt2.write_pool(p(pool), cfg, back, {"seed1": moe}, gen_gpt2.eval_ids(cfg, 1))
    rng = np.random.default_rng(3)
    X = rng.standard_normal((50, cfg["n_embd"])).astype(np.float32).astype(np.float64)
    oracle.write_safetensors(p(pool, "inputs.safetensors"), {"inputs": X})
    what = "%s %s shared %d gate bias %d" % (router, act, shared, gate_bias)
    for L in moe_layers:
        r = run("eval", p(pool, "seed1"), "--eval", p(pool, "inputs.safetensors"), "--layer", L,
                "--dump-outputs", p(pool, "out%d.safetensors" % L))
        check(r.returncode == 0, "%s: eval block %d: %s" % (what, L, r.stderr))
        if r.returncode:
            continue
        got = oracle.read_safetensors(p(pool, "out%d.safetensors" % L))[0]["outputs"]
        want = np_moe(moe, "transformer.h.%d.mlp." % L, cfg["moe"], X)
        err = np.abs(got - want).max() / max(1e-9, np.abs(want).max())
        check(err < 2e-5, "%s: block %d output differs from numpy by %.3g relative" % (what, L, err))


def test_forward():
    for i, (router, act, shared, gb) in enumerate([("topk", "relu", 0, True), ("dense", "gelu", 1, True),
                                                     ("topk", "gelu_new", 2, False), ("dense", "gelu_new", 0, False)]):
        layer_outputs("fw%d" % i, router, act, shared, gb)


def test_info():
    cfg = gen_gpt2.config(layers=3, moe_layers=[0, 2], shared=1)
    gen_gpt2.write_pool(p("info"), cfg, gen_gpt2.backbone(cfg, 1), {"seed1": gen_gpt2.moe_blocks(cfg, 1)},
                        gen_gpt2.eval_ids(cfg, 1))
    r = run("info", p("info", "seed1"), "--layer", "2", "--json", p("info.json"))
    check(r.returncode == 0, "info: %s" % r.stderr)
    if r.returncode:
        return
    j = json.load(open(p("info.json")))
    check(j["layer"] == "transformer.h.2.mlp", "info --layer 2 picks block 2: %s" % j["layer"])
    ls = j.get("moe_layers", [])
    check([(x["family"], x["block"]) for x in ls] == [("gpt2", 0), ("gpt2", 2)], "info lists blocks 0 and 2: %s" % ls)
    check(all(x.get("n") == 4 and x.get("d") == 16 and x.get("h") == 12 and x.get("shared") == 1 for x in ls),
          "info: n, d, h, shared of every block: %s" % ls)
    net = j.get("network", {})
    check([b["moe"] for b in net.get("blocks", [])] == [True, False, True], "info: which blocks are MoE: %s" % net)
    check(net.get("n_layer") == 3 and net.get("n_embd") == 16 and net.get("moe_parameters", 0) > 0 and
          net.get("backbone_parameters", 0) > 0, "info: the network's sizes and parameter counts: %s" % net)
    check("network     gpt2: 3 blocks" in r.stdout and "0 MoE" in r.stdout and "1 dense" in r.stdout,
          "info prints the architecture: %s" % r.stdout[:300])


def test_scramble_align():
    cfg = gen_gpt2.config(layers=3, moe_layers=[0, 1], shared=1)
    gen_gpt2.write_pool(p("sc"), cfg, gen_gpt2.backbone(cfg, 2), {"seed1": gen_gpt2.moe_blocks(cfg, 4)},
                        gen_gpt2.eval_ids(cfg, 1))
    a, s, b = p("sc", "seed1"), p("sc", "scr"), p("sc", "back")
    r = run("scramble", a, "-o", s, "--seed", 9, "--translate", "--layer", 1)
    check(r.returncode == 0, "scramble: %s" % r.stderr)
    r = run("cost", a, s, "--layer", 1, "--json", p("sc", "cost.json"))
    check(r.returncode == 0, "cost: %s" % r.stderr)
    if r.returncode == 0:
        c = json.load(open(p("sc", "cost.json")))
        check(c["total"] < 1e-4, "cost of the scramble's inverse is ~0: %g" % c["total"])
    r = run("align", a, s, "-o", b, "--layer", 1)
    check(r.returncode == 0, "align: %s" % r.stderr)
    if r.returncode:
        return
    ta, ts, tb = raw_tensors(a), raw_tensors(s), raw_tensors(b)
    check(sorted(ta) == sorted(ts) == sorted(tb), "same tensor names in, scrambled and aligned")
    block = "transformer.h.1.mlp."
    others = [k for k in ta if not k.startswith(block)]
    check(all(ta[k] == ts[k] == tb[k] for k in others), "every tensor outside block 1 is byte-identical")
    moved = [k for k in ta if k.startswith(block) and ta[k] != ts[k]]
    check(len(moved) > 10, "the scramble moved block 1's tensors (%d)" % len(moved))
    fa, fb = gen_gpt2.read_folder(a)[1], gen_gpt2.read_folder(b)[1]
    worst = max(np.abs(fa[k] - fb[k]).max() for k in fa if k.startswith(block) and ".gate." not in k)
    check(worst < 1e-5, "aligned experts equal the original's: worst %g" % worst)
    for d in (s, b):
        link = os.path.join(d, "model-00001-of-00002.safetensors")
        check(os.path.exists(link) and not os.path.islink(link) and
              os.stat(link).st_ino == os.stat(p("sc", "backbone.safetensors")).st_ino,
              "%s: the backbone shard is a hard link of the backbone" % d)
    check(json.load(open(os.path.join(b, "config.json"))) == cfg, "config.json carried over")


def bad_config(name, edit, want):
    cfg = gen_gpt2.config()
    gen_gpt2.write_pool(p(name), cfg, gen_gpt2.backbone(cfg, 1), {"seed1": gen_gpt2.moe_blocks(cfg, 1)},
                        gen_gpt2.eval_ids(cfg, 1))
    edit(cfg)
    json.dump(cfg, open(p(name, "seed1", "config.json"), "w"))
    r = run("info", p(name, "seed1"))
    check(r.returncode == 1 and "config.json" in r.stderr and want in r.stderr,
          "%s: refused naming config.json and %r: rc %d %s" % (name, want, r.returncode, r.stderr.strip()))


def test_bad_configs():
    bad_config("badk", lambda c: c["moe"].update(top_k=2.5), "moe.top_k")
    bad_config("bigk", lambda c: c["moe"].update(top_k=9), "moe.top_k")
    bad_config("router", lambda c: c["moe"].update(router="sparse"), "moe.router")
    bad_config("act", lambda c: c["moe"].update(expert_activation="swish"), "moe.expert_activation")
    bad_config("nexp", lambda c: c["moe"].update(num_experts=6), "moe.num_experts")
    bad_config("nshared", lambda c: c["moe"].update(num_shared_experts=2), "moe.num_shared_experts")
    bad_config("width", lambda c: c["moe"].update(expert_intermediate_size=7), "moe.expert_intermediate_size")
    bad_config("moeobj", lambda c: c.update(moe=[0]), "'moe'")


def main():
    try:
        test_info()
        test_forward()
        test_scramble_align()
        test_bad_configs()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_gpt2_layer")


if __name__ == "__main__":
    sys.exit(main())
