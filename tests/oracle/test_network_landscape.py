"""tests/oracle/test_network_landscape.py - barriers on a network's loss, against numpy.

For random GPT-2-layout networks with MoE blocks (tests/lib/gen_gpt2.py), two seeds
sharing their backbone:
  - `landscape --json`: the end points are gpt2_ref's losses; the barrier of several
    orders (the expert method's, the identity, the worst), of naive and skip-order, equals
    a numpy computation: B's block aligned by oracle.align (that order, weight matching),
    every MoE parameter interpolated, gpt2_ref.evaluate at each t; with two MoE blocks the
    other block aligned by the expert cost (naive / skip-order: every block so); the
    ranks follow from the orders' barriers; `curve --order` gives the same barriers;
  - the layer-only proxy: each order's proxy barrier is the numpy layer-only barrier at
    the block's inputs (ln_2 of block L's hidden states, computed here in numpy), its
    Spearman rho is scipy's, the network rank of its best order is right;
  - a scramble of block 0 (with a gate translation) is undone: the expert method finds
    the inverse, its barrier is ~0 and it ranks first; so is a scramble of every block
    (`scramble --layer all`), by each block's landscape and by `align --layer all`;
  - B with another backbone is refused naming the tensor; --interpolate-backbone runs,
    says so, and its end points are A's and B's own losses;
  - --threads 1 and 2 give the same barriers bit for bit.
"""
import json
import math
import os
import shutil
import sys
import tempfile

import numpy as np
from scipy.stats import spearmanr

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import gpt2_ref  # noqa: E402
from net_oracle import aligned, barrier, block_layer, net_curve  # noqa: E402
import oracle  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_netls_")
T = 5


def p(*names):
    return os.path.join(TMP, *names)


def order_key(o):
    return tuple(o)


def landscape(pool, *extra):
    out = p(pool, "ls%d.json" % abs(hash(extra)))
    r = run("landscape", p(pool, "seed1"), p(pool, "seed2"), "--eval", p(pool, "eval.safetensors"),
            "--points", T, "--json", out, "-q", *extra)
    check(r.returncode == 0, "%s: landscape %s: %s" % (pool, extra, r.stderr.strip()))
    return (json.load(open(out)), r) if r.returncode == 0 else (None, r)


def make_pool(pool, moe_layers, seeds=(1, 2), **kw):
    """seeds sharing a backbone: seed 2 nearly seed 1's function (its experts permuted,
    plus noise); the evaluation set is what seed 1 continues itself, so interpolating
    misaligned blocks costs loss (a barrier) and the right order is clear"""
    cfg = gen_gpt2.config(moe_layers=moe_layers, **kw)
    back = gen_gpt2.backbone(cfg, 9)
    moe = {"seed1": gen_gpt2.moe_blocks(cfg, 1)}
    if 2 in seeds:
        moe["seed2"] = gen_gpt2.perturbed_copy(cfg, moe["seed1"], 2)[0]
    ids = gen_gpt2.teacher_ids(cfg, {**back, **moe["seed1"]}, 2, N=8, T=10)
    gen_gpt2.write_pool(p(pool), cfg, back, moe, ids)
    return cfg


def block_inputs(ck, ids, L0):
    """ln_2 of the residual stream at block L0 (its attention done), numpy"""
    cfg, P = ck["config"], ck["tensors"]
    N, Tt = ids.shape
    d, nh = cfg["n_embd"], cfg["n_head"]
    hd, eps = d // nh, cfg.get("layer_norm_epsilon", 1e-5)
    h = P["transformer.wte.weight"][ids] + P["transformer.wpe.weight"][:Tt][None]
    causal = np.tril(np.ones((Tt, Tt), bool))
    for L in range(L0 + 1):
        pre = "transformer.h.%d." % L
        a = gpt2_ref._ln(h, P[pre + "ln_1.weight"], P[pre + "ln_1.bias"], eps)
        qkv = a @ P[pre + "attn.c_attn.weight"] + P[pre + "attn.c_attn.bias"]
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(N, Tt, nh, hd).transpose(0, 2, 1, 3) for i in range(3))
        s = np.where(causal, q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd), -np.inf)
        h = h + (gpt2_ref._softmax(s) @ v).transpose(0, 2, 1, 3).reshape(N, Tt, d) @ P[pre + "attn.c_proj.weight"] \
            + P[pre + "attn.c_proj.bias"]
        x = gpt2_ref._ln(h, P[pre + "ln_2.weight"], P[pre + "ln_2.bias"], eps)
        if L < L0:
            h = h + gpt2_ref._ffn(gpt2_ref._Params(P, None), pre + "mlp.", x.reshape(N * Tt, d),
                                  cfg["activation_function"]).reshape(N, Tt, d)
    return x.reshape(N * Tt, d)


def layer_barrier(A, Bp, X):
    DA, DB = oracle.layer_output(A, X)[0], oracle.layer_output(Bp, X)[0]
    vals = []
    for m in range(T):
        t = m / (T - 1)
        D = oracle.layer_output(oracle.interpolate(A, Bp, t), X)[0]
        vals.append(((D - ((1 - t) * DA + t * DB)) ** 2).mean())
    return max(vals)


def check_pool(pool, moe_layers, chosen=0):
    cfg = make_pool(pool, moe_layers, shared=1 if len(moe_layers) > 1 else 0)
    cka, ckb = gpt2_ref.load(p(pool, "seed1")), gpt2_ref.load(p(pool, "seed2"))
    ids = gpt2_ref.read_safetensors(p(pool, "eval.safetensors"))[0]["input_ids"]
    J, _ = landscape(pool, "--layer", moe_layers[chosen])
    if not J:
        return
    r = run("landscape", p(pool, "seed1"), p(pool, "seed2"), "--eval", p(pool, "eval.safetensors"), "--points", 3,
            "--layer", moe_layers[chosen])
    check(r.returncode == 0 and ("other MoE blocks interpolated" in r.stdout) == (len(moe_layers) > 1),
          "%s: the objective line names other MoE blocks only where there are some" % pool)
    la, lb = gpt2_ref.evaluate(cka, ids)["loss"], gpt2_ref.evaluate(ckb, ids)["loss"]
    check(abs(J["endpoints"]["loss_a"] - la) < 1e-5 * la and abs(J["endpoints"]["loss_b"] - lb) < 1e-5 * lb,
          "%s: end points %s vs numpy %g %g" % (pool, J["endpoints"], la, lb))
    A = {L: block_layer(cka["tensors"], L, cfg) for L in moe_layers}
    B = {L: block_layer(ckb["tensors"], L, cfg) for L in moe_layers}
    C = moe_layers[chosen]
    others = {L: aligned(A[L], B[L]) for L in moe_layers if L != C}
    tol = lambda v: 2e-5 * max(1.0, abs(la))  # noqa: E731
    by = {order_key(o["order"]): o for o in J["orders"]}
    orders = [J["methods"]["expert"]["order"], list(range(cfg["moe"]["num_experts"])), J["worst"]["order"]]
    for o in orders:
        tb = dict(others)
        tb[C] = aligned(A[C], B[C], order=o)
        want = barrier(net_curve(cka, tb, A, ids, T))
        got = by[order_key(o)]["barrier"]
        check(abs(got - max(0.0, want)) < tol(want), "%s: order %s barrier %.8g vs numpy %.8g" % (pool, o, got, want))
    for name, os_, wm in (("naive", False, False), ("skip_order", False, True)):
        tb = {L: aligned(A[L], B[L], order_stage=os_, wm=wm) for L in moe_layers}
        want = barrier(net_curve(cka, tb, A, ids, T))
        got = J[name]["barrier"]
        check(abs(got - max(0.0, want)) < tol(want), "%s: %s barrier %.8g vs numpy %.8g (every block %s)"
              % (pool, name, got, want, name))
    bars = [o["barrier"] for o in J["orders"]]
    check(bars == sorted(bars), "%s: orders sorted by barrier" % pool)
    tau = J["tau"]
    for m in ("gate", "expert"):
        b = J["methods"][m]["barrier"]
        check(J["methods"][m]["rank"] == 1 + sum(x < b - tau for x in bars), "%s: %s rank from the barriers" % (pool, m))
    # the curve command agrees with the landscape's rows
    wo = J["worst"]["order"]
    r = run("curve", p(pool, "seed1"), p(pool, "seed2"), "--eval", p(pool, "eval.safetensors"), "--points", T,
            "--layer", C, "--order", ",".join(map(str, wo)), "--csv", p(pool, "curve.csv"))
    check(r.returncode == 0, "%s: curve: %s" % (pool, r.stderr))
    if r.returncode == 0:
        line = [ln for ln in r.stdout.splitlines() if ln.startswith("order1 ")]
        check(line and abs(float(line[0].split()[-3]) - J["worst"]["barrier"]) < 1e-6,
              "%s: curve --order's barrier is the landscape's: %s vs %g" % (pool, line, J["worst"]["barrier"]))
    # the proxy
    px = J.get("proxy")
    check(px is not None and all("proxy_barrier" in o for o in J["orders"]), "%s: the proxy is reported" % pool)
    if px:
        prox = [o["proxy_barrier"] for o in J["orders"]]
        rho = spearmanr(prox, bars)[0]
        check(px["spearman"] is not None and abs(px["spearman"] - rho) < 1e-9,
              "%s: proxy Spearman %s vs scipy %g" % (pool, px["spearman"], rho))
        best = min(J["orders"], key=lambda o: (o["proxy_barrier"], o["order"]))
        check(px["best_order"] == best["order"], "%s: the proxy's best order" % pool)
        check(px["best_network_rank"] == 1 + sum(x < best["barrier"] - tau for x in bars),
              "%s: the network rank of the proxy's best order" % pool)
        if chosen == 0:
            X = block_inputs(cka, ids, C)
            for o in orders[:2]:
                want = layer_barrier(A[C], aligned(A[C], B[C], order=o), X)
                got = by[order_key(o)]["proxy_barrier"]
                check(abs(got - want) <= 1e-4 * max(want, 1e-6) + 1e-9,
                      "%s: order %s proxy barrier %.8g vs numpy %.8g" % (pool, o, got, want))


def test_scramble():
    cfg = make_pool("scr", [0], seeds=(1,))
    r = run("scramble", p("scr", "seed1"), "-o", p("scr", "seed2"), "--seed", 4, "--translate")
    check(r.returncode == 0, "scramble: %s" % r.stderr)
    J, _ = landscape("scr")
    if not J:
        return
    e = J["methods"]["expert"]
    check(e["barrier"] < 1e-5 and e["rank"] == 1, "scramble undone: expert barrier %g, rank %d" % (e["barrier"], e["rank"]))
    check(abs(J["endpoints"]["loss_a"] - J["endpoints"]["loss_b"]) < 1e-5, "a scramble computes A's loss")
    check(J["naive"]["barrier"] > 10 * max(e["barrier"], 1e-6), "naive is far from the scramble's undoing")
    del cfg


def test_scramble_every_block():
    """MoE at every block, each scrambled (--layer all): the same network; aligned back
    (--layer all) to A's tensors; each block's landscape undoes it, the others at their
    expert alignment"""
    make_pool("scrall", [0, 1, 2], seeds=(1,))
    a, s, back, ev = p("scrall", "seed1"), p("scrall", "seed2"), p("scrall", "back"), p("scrall", "eval.safetensors")
    r = run("scramble", a, "-o", s, "--layer", "all", "--seed", 11, "--translate")
    check(r.returncode == 0 and r.stdout.count("layer transformer.h.") == 3, "scramble --layer all: %s" % r.stderr)
    ids = gpt2_ref.read_safetensors(ev)[0]["input_ids"]
    la, ls = gpt2_ref.evaluate(gpt2_ref.load(a), ids), gpt2_ref.evaluate(gpt2_ref.load(s), ids)
    check(abs(la["loss"] - ls["loss"]) < 1e-6 * la["loss"] and la["accuracy"] == ls["accuracy"],
          "every block scrambled: the same network (numpy %.9g vs %.9g)" % (la["loss"], ls["loss"]))
    ta, ts = gen_gpt2.read_folder(a)[1], gen_gpt2.read_folder(s)[1]
    check(all(np.abs(ta[k] - ts[k]).max() > 0 for k in ta if k.endswith("mlp.gate.weight")),
          "every block's gate moved")
    r = run("align", a, s, "-o", back, "--layer", "all")
    check(r.returncode == 0, "align --layer all: %s" % r.stderr)
    if r.returncode == 0:
        tb = gen_gpt2.read_folder(back)[1]
        worst = max(np.abs(ta[k] - tb[k]).max() for k in ta if ".gate." not in k)
        check(worst < 1e-6, "aligned back, every block: experts equal A's (worst %g)" % worst)
        check(not [x for x in os.listdir(TMP + "/scrall") if ".tmp" in x], "no intermediate folders left")
    for L in (0, 2):
        J, _ = landscape("scrall", "--layer", L)
        if J:
            e = J["methods"]["expert"]
            check(e["barrier"] < 1e-5 and e["rank"] == 1,
                  "block %d of an all-scrambled pair: expert barrier %g rank %d" % (L, e["barrier"], e["rank"]))
            check(J["naive"]["barrier"] > 10 * max(e["barrier"], 1e-6), "block %d: naive (every block) far" % L)


def test_backbones_and_threads():
    cfg = make_pool("bb", [1])
    J1, _ = landscape("bb", "--threads", 1)
    J2, _ = landscape("bb", "--threads", 2)
    if J1 and J2:
        check([o["barrier"] for o in J1["orders"]] == [o["barrier"] for o in J2["orders"]],
              "the same barriers on 1 and 2 threads")
    # B's backbone changed in one tensor
    folder = p("bb", "seed2")
    back = gen_gpt2.backbone(cfg, 9)
    back["transformer.h.2.attn.c_proj.bias"] = back["transformer.h.2.attn.c_proj.bias"] + 0.5
    os.remove(os.path.join(folder, "model-00001-of-00002.safetensors"))
    gen_gpt2.write_folder(folder, cfg, back, gen_gpt2.moe_blocks(cfg, 2), backbone_rel=None)
    r = run("landscape", p("bb", "seed1"), folder, "--eval", p("bb", "eval.safetensors"), "--points", T, "-q")
    check(r.returncode == 1 and "transformer.h.2.attn.c_proj.bias" in r.stderr and
          "backbone" in r.stderr, "different backbones refused, naming the tensor: %s" % r.stderr.strip())
    J, r = landscape("bb", "--interpolate-backbone")
    if J:
        check("backbone interpolated" in J.get("objective", ""), "the report says the backbone is interpolated")
        check("interpolating them too" in r.stderr, "a note says so")
        ids = gpt2_ref.read_safetensors(p("bb", "eval.safetensors"))[0]["input_ids"]
        cka, ckb = gpt2_ref.load(p("bb", "seed1")), gpt2_ref.load(folder)
        lb = gpt2_ref.evaluate(ckb, ids)["loss"]
        check(abs(J["endpoints"]["loss_b"] - lb) < 1e-5 * lb, "end point B is B's own network")
        A = {1: block_layer(cka["tensors"], 1, cfg)}
        Bl = block_layer(ckb["tensors"], 1, cfg)
        o = J["methods"]["expert"]["order"]
        want = barrier(net_curve(cka, {1: aligned(A[1], Bl, order=o)}, A, ids, T,
                                 backbone_b={k: v for k, v in ckb["tensors"].items() if ".mlp.gate" not in k
                                             and not k.startswith("transformer.h.1.mlp.")}))
        got = J["methods"]["expert"]["barrier"]
        check(abs(got - max(want, 0)) < 2e-5 * lb, "backbone interpolated: barrier %.8g vs numpy %.8g" % (got, want))


def main():
    try:
        check_pool("one", [0])
        check_pool("two", [0, 2], chosen=1)
        check_pool("every", [0, 1, 2], chosen=0)
        test_scramble()
        test_scramble_every_block()
        test_backbones_and_threads()
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    return testutil.summary("test_network_landscape")


if __name__ == "__main__":
    sys.exit(main())
