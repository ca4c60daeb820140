"""tests/oracle/test_decoder_oracle.py - the Hugging Face MoE decoder families as networks,
against tests/lib/decoder_ref.py (a float64 numpy forward written from transformers'
modelling code) on tiny random models of tests/lib/gen_decoders.py.

  - the oracle itself: a scrambled model (experts, groups, hidden units, gate
    translation) has the same loss; the logits at position t do not depend on the tokens
    after t (one-token and full-length forwards agree); with every expert of a MoE layer
    equal, a renormalising router's block is that expert (the dense equivalent); the
    loss sits well below log V and routing spreads over the experts; an unknown
    rope_scaling kind and heads that do not divide are refused;
  - for each family in COVERED (the ones moescope evaluates as networks): `eval --json`
    loss within 1e-5 relative of the oracle's (BF16 files 1e-3), accuracy within one
    position, `--dump-outputs` logits within as much of the largest, F32 single-file and BF16 sharded; `scramble --layer all` computes the same
    loss and `align --layer all` puts it back; `landscape` of the scrambled pair finds a
    barrier ~0; a BF16 (and MXFP4) pair's curve, its MoE blocks mixed from the mapped
    files a panel at a time, equals the oracle's interpolated network; its landscape,
    the chosen block mapped too, equals the float path's (MOESCOPE_TEST_FLOATS), and so
    do align's, merge's, scramble's, diagnose's, study's and geometry's outputs and reports; rope_scaling kinds computed as the oracle does or refused by name
    (DeepSeek: linear and yarn computed); an unknown model_type, a missing tensor, an unknown rope_scaling kind,
    heads that do not divide, T > max_position_embeddings and token ids >= vocab_size
    refused naming the file and key;
  - every other family is refused by eval with exit status 1 naming its model_type (so
    this test changes when a family lands: add it to COVERED); Switch Transformers (an
    encoder-decoder) is refused with input_ids, saying why, and its layer still opens.
"""
import json
import math
import os
import re
import shutil
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import decoder_ref  # noqa: E402
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402
import gen_decoders  # noqa: E402
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_decoders_")
# the families moescope evaluates as networks (grows as they land)
COVERED = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss",
           "phimoe", "jetmoe"]
# (dtype, shards, generator options) per covered family: F32 in one file, BF16 over two
# shards; GPT-OSS also with MXFP4 experts
VARIANTS = [("F32", 1, {}), ("BF16", 2, {})]
EXTRA = {"gpt_oss": [("BF16", 2, {"mxfp4": True})]}


def p(*names):
    return os.path.join(TMP, *names)


def gen(fam, name, **kw):
    out = p(name)
    if not os.path.exists(out):
        gen_decoders.generate(fam, out, **kw)
    return out


# ---------------------------------------------------------------- the oracle itself

def test_oracle_scramble():
    """A scrambled model computes the same loss (the oracle sees the symmetry)."""
    cases = [(fam, dt, {}) for fam in gen_decoders.FAMILIES for dt in ("F32", "BF16")]
    for fam, dt, kw in cases + [("gpt_oss", "BF16", {"mxfp4": True})]:
        tag = "%s_%s%s" % (fam, dt, "_mx" if kw else "")
        a = gen(fam, tag, dtype=dt, **kw)
        s = gen(fam, tag + "_scr", dtype=dt, scramble=True, **kw)
        la, aa, ga = decoder_ref.evaluate(a)
        ls, as_, gs = decoder_ref.evaluate(s, os.path.join(a, "eval.safetensors"))
        tol = 1e-9 if dt == "BF16" else 1e-6  # F32: the translated gate rounds
        check(abs(la - ls) <= tol * la and aa == as_,
              "oracle %s %s: scrambled loss %.10g vs %.10g" % (fam, dt, ls, la))
        orders = json.load(open(os.path.join(s, "scramble.json")))
        check(any(o != sorted(o) for o in orders.values()), "oracle %s %s: the scramble moved experts" % (fam, dt))
        check(0.05 < la < 0.6 * math.log(64) and 0.2 < aa < 0.99,
              "oracle %s %s: loss %.4g, accuracy %.3g: far from log V and from 0" % (fam, dt, la, aa))


def test_oracle_causal():
    """Position t's logits: the same from the whole sequence and from its first t+1 tokens."""
    for fam in gen_decoders.FAMILIES:
        c, t = decoder_ref.load(gen(fam, "%s_F32" % fam))
        ids = decoder_ref.read_tensors(p("%s_F32" % fam, "eval.safetensors"))["input_ids"]
        full = decoder_ref.forward(c, t, ids)
        worst = 0.0
        for n in (1, 5, ids.shape[1] - 1):
            part = decoder_ref.forward(c, t, ids[:, :n])
            worst = max(worst, np.abs(part - full[:, :n]).max() / np.abs(full).max())
        check(worst < 1e-12, "oracle %s: prefixes of 1, 5, T-1 tokens agree with the full forward (%.3g)"
              % (fam, worst))


def expert0(c, t, P, X):
    """Expert 0 of the block at P as a dense MLP (the families' own layouts)."""
    fam = c["model_type"]
    if fam == "mixtral":
        b = P + "experts.0."
        return family_ref.linear(family_ref.silu(X @ t[b + "w1.weight"].T) * (X @ t[b + "w3.weight"].T),
                                 t[b + "w2.weight"])
    if fam == "granitemoe":
        Win, Wout = t[P + "input_linear.weight"][0], t[P + "output_linear.weight"][0]
        a = X @ Win.T
        h = Win.shape[0] // 2
        return (family_ref.silu(a[:, :h]) * a[:, h:]) @ Wout.T
    return family_ref.swiglu_mlp(t, P + "experts.0.", X)


def equal_experts(t):
    """The tensors with every expert a copy of expert 0 (per-expert names and packed)."""
    t = dict(t)
    for k in t:
        if ".experts." in k and ".experts.0." not in k and k.split(".experts.")[1][0].isdigit():
            pre, rest = k.split(".experts.")
            t[k] = t[pre + ".experts.0." + rest.split(".", 1)[1]]
        elif k.endswith(("input_linear.weight", "output_linear.weight")):
            t[k] = np.broadcast_to(t[k][:1], t[k].shape).copy()
    return t


def test_oracle_equal_experts():
    """Every expert equal: a router whose weights sum to 1 gives that expert's output,
    so the network equals its dense equivalent."""
    for fam, extra in (("mixtral", {}), ("qwen3_moe", {}), ("olmoe", {"norm_topk_prob": True}),
                       ("granitemoe", {})):
        c, t = decoder_ref.load(gen(fam, "%s_F32" % fam))
        c.update(extra)
        ids = decoder_ref.read_tensors(p("%s_F32" % fam, "eval.safetensors"))["input_ids"]
        t = equal_experts(t)
        moe = decoder_ref.forward(c, t, ids)
        dense = decoder_ref.forward(c, t, ids, moe=expert0)
        rel = np.abs(moe - dense).max() / np.abs(dense).max()
        check(rel < 1e-12, "oracle %s: equal experts = the dense network (%.3g)" % (fam, rel))


def test_oracle_routing():
    """The routing differs between tokens: in every MoE layer each expert is chosen (its
    removal changes the output) by some tokens of the evaluation set and not by all."""
    for fam in gen_decoders.FAMILIES:
        c, t = decoder_ref.load(gen(fam, "%s_F32" % fam))
        ids = decoder_ref.read_tensors(p("%s_F32" % fam, "eval.safetensors"))["input_ids"]
        used = {}

        def spy(c, t, P, X):
            tt = decoder_ref.block_tensors(t, P)
            base = family_ref.forward(fam, tt, c, P, X)
            for e in range(gen_decoders.moe_dims(c)[0]):
                y = family_ref.forward(fam, zero_expert(tt, P, e), c, P, X)
                used.setdefault(P, []).append(int((np.abs(y - base).max(-1) > 1e-12).sum()))
            return base
        decoder_ref.forward(c, t, ids, moe=spy)
        check(used and all(0 < k < ids.size for v in used.values() for k in v),
              "oracle %s: every expert chosen by some tokens, none by all (%s)" % (fam, used))


def zero_expert(tt, P, e):
    """The block's tensors with expert e's output weights zeroed."""
    tt = dict(tt)
    for k in list(tt):
        if k in (P + "experts.%d.w2.weight" % e, P + "experts.%d.down_proj.weight" % e):
            tt[k] = np.zeros_like(tt[k])
        elif k in (P + "output_linear.weight", P + "experts.down_proj", P + "experts.down_proj_bias"):
            tt[k] = tt[k].copy()
            tt[k][e] = 0
    return tt


def test_oracle_refusals():
    c, t = decoder_ref.load(gen("mixtral", "mixtral_F32"))
    ids = decoder_ref.read_tensors(p("mixtral_F32", "eval.safetensors"))["input_ids"]
    for what, change, needle in (("rope kind", {"rope_scaling": {"type": "fancy", "factor": 2.0}}, "fancy"),
                                 ("heads", {"num_key_value_heads": 3}, "num_key_value_heads"),
                                 ("model_type", {"model_type": "mixtral9"}, "mixtral9")):
        try:
            decoder_ref.forward(dict(c, **change), t, ids)
            check(False, "oracle refuses %s" % what)
        except (ValueError, KeyError) as e:
            check(needle in str(e), "oracle refuses %s: %s" % (what, e))


# ---------------------------------------------------------------- moescope

def eval_json(ck, ev, *extra):
    out = p("eval_%d.json" % abs(hash((ck, ev, extra))))
    r = run("eval", ck, "--eval", ev, "--json", out, *extra)
    check(r.returncode == 0, "eval %s: %s" % (ck, r.stderr.strip()))
    return json.load(open(out)) if r.returncode == 0 else None


def compare(name, ck, ev, dtype, logits=False):
    """eval --json's loss and accuracy against the oracle's; with logits, also
    eval --dump-outputs' logits (within tol of the largest)."""
    loss, acc, ref = decoder_ref.evaluate(ck, ev)
    j = eval_json(ck, ev)
    if not j:
        return None
    tol = 1e-3 if dtype == "BF16" else 1e-5
    ids = decoder_ref.read_tensors(ev)["input_ids"]
    npos = ids.shape[0] * (ids.shape[1] - 1)
    check(abs(j["loss"] - loss) <= tol * loss, "%s: loss %.9g vs the oracle's %.9g" % (name, j["loss"], loss))
    check(abs(j["accuracy"] - acc) <= 1.0 / npos + 1e-12, "%s: accuracy %.6g vs %.6g" % (name, j["accuracy"], acc))
    if logits:
        dump = p("dump_%d.safetensors" % abs(hash((ck, ev))))
        r = run("eval", ck, "--eval", ev, "--dump-outputs", dump)
        check(r.returncode == 0, "%s: --dump-outputs: %s" % (name, r.stderr.strip()))
        if r.returncode == 0:
            got = decoder_ref.read_tensors(dump)["logits"]
            rel = np.abs(got.reshape(ref.shape) - ref).max() / np.abs(ref).max() if got.size == ref.size else np.inf
            check(rel < tol, "%s: logits %s within %g of the oracle's (%.3g)" % (name, got.shape, tol, rel))
    return j


def test_covered():
    """Each covered family's variants against the oracle, and their scrambles; the
    landscape on the first (F32) variant's scrambled pair."""
    for fam in COVERED:
        for i, (dt, shards, kw) in enumerate(VARIANTS + EXTRA.get(fam, [])):
            name = "%s %s%s %d shard(s)" % (fam, dt, " MXFP4" if kw else "", shards)
            ck = gen(fam, "net_%s_%s_%d%s" % (fam, dt, shards, "_mx" if kw else ""), dtype=dt, shards=shards, **kw)
            ev = os.path.join(ck, "eval.safetensors")
            if compare(name, ck, ev, dt, logits=True):
                check_scramble(name, ck, ev, dt, landscape=i == 0)


def test_threads():
    """One evaluation on 1, 2 and 3 threads (five sequences of 64 tokens: one item of
    two row panels, so the threads share its attention panels, heads and head slices):
    the same loss bit for bit, and the oracle's; DeepSeek-V2's latent attention (its
    intermediates per row panel, rotated from the panel's positions), JetMoE's attention
    experts (each row panel's rows gathered per expert)."""
    for fam in ("deepseek_v2", "jetmoe"):
        ck = gen(fam, "threads_" + fam, N=5, T=64)
        ev = os.path.join(ck, "eval.safetensors")
        loss = decoder_ref.evaluate(ck, ev)[0]
        got = [eval_json(ck, ev, "--threads", str(t)) for t in (1, 2, 3)]
        if None in got:
            continue
        bits = [j["loss"].hex() for j in got]
        check(len(set(bits)) == 1, "%s, 5 x 64 tokens: the same loss bits on 1, 2, 3 threads: %s" % (fam, bits))
        check(abs(got[0]["loss"] - loss) <= 1e-5 * loss, "%s threaded: loss %.9g vs the oracle's %.9g"
              % (fam, got[0]["loss"], loss))


def check_scramble(name, ck, ev, dt, landscape):
    """scramble --layer all: the same loss; align --layer all: A's experts again (in
    A's dtype and sharding); landscape: the scramble's expert order at barrier ~0."""
    s, back = ck + ".scr", ck + ".back"
    r = run("scramble", ck, "-o", s, "--layer", "all", "--seed", 3)
    check(r.returncode == 0, "%s: scramble --layer all: %s" % (name, r.stderr.strip()))
    if r.returncode:
        return
    compare(name + ", scrambled by moescope", s, ev, dt)
    r = run("align", ck, s, "-o", back, "--layer", "all")
    check(r.returncode == 0, "%s: align --layer all: %s" % (name, r.stderr.strip()))
    if r.returncode == 0:
        compare(name + ", aligned back", back, ev, dt)
        check_aligned_back(name, ck, back)
    if not landscape:
        return
    out = p("ls_%d.json" % abs(hash(ck)))
    r = run("landscape", ck, s, "--eval", ev, "--points", 5, "--json", out, "-q")
    check(r.returncode == 0, "%s: landscape: %s" % (name, r.stderr.strip()))
    if r.returncode == 0:
        e = json.load(open(out))["methods"]["expert"]
        check(e["barrier"] < 1e-4, "%s: the scramble's landscape: expert barrier %g" % (name, e["barrier"]))


# kinds a family must compute (its shipped configs use them), not just refuse
# the kinds moescope computes (as transformers does) and the ones it refuses by name
ROPE_COMPUTED = {"linear", "dynamic", "yarn", "llama3", "longrope"}
ROPE_REFUSED = set()
ROPE_KINDS = sorted(ROPE_COMPUTED | ROPE_REFUSED)


def test_covered_rope():
    """rope_scaling kinds (linear, yarn and one more per family, in turn): each one
    moescope computes agrees with the oracle, each other one is refused naming
    config.json, rope_scaling and the kind."""
    for i, fam in enumerate(COVERED):
        for kind in sorted({"linear", "yarn", ROPE_KINDS[i % len(ROPE_KINDS)]}):
            ck = gen(fam, "rope_%s_%s" % (fam, kind), rope=kind)
            ev = os.path.join(ck, "eval.safetensors")
            if kind in ROPE_REFUSED:
                r = run("eval", ck, "--eval", ev)
                check(r.returncode == 1 and all(n in r.stderr for n in ("config.json", "rope_scaling", kind)),
                      "%s: rope_scaling %s refused naming config.json, the key and the kind: %s"
                      % (fam, kind, r.stderr.strip()))
            else:
                compare("%s rope_scaling %s" % (fam, kind), ck, ev, "F32")


def test_phimoe_long_rope():
    """PhiMoE past original_max_position_embeddings: longrope's long factors and
    long_mscale (the oracle's switch on T), not the short ones the other tests use."""
    ck = gen("phimoe", "phimoe_long")
    edit_config(ck, original_max_position_embeddings=8)  # T = 12 > 8
    compare("phimoe longrope, long factors", ck, os.path.join(ck, "eval.safetensors"), "F32", logits=True)


def test_qwen_sliding():
    """Qwen's use_sliding_window (T = 12, window 4): Qwen3-MoE windows every layer,
    Qwen2-MoE the even layers below max_window_layers, or those layer_types lists; each
    against the oracle, and differing from the full attention's loss; layer_types naming
    a sliding layer without use_sliding_window is refused naming the key."""
    cases = (("qwen3_moe", {}), ("qwen2_moe", {"max_window_layers": 1}),
             ("qwen2_moe", {"layer_types": ["full_attention", "sliding_attention", "sliding_attention"]}))
    for i, (fam, extra) in enumerate(cases):
        full = gen(fam, "%s_F32" % fam)
        ev = os.path.join(full, "eval.safetensors")
        ck = gen(fam, "sliding_%s_%d" % (fam, i))
        edit_config(ck, use_sliding_window=True, sliding_window=4, **extra)
        name = "%s use_sliding_window %s" % (fam, extra or "")
        j, j0 = compare(name, ck, ev, "F32", logits=True), eval_json(full, ev)
        if j and j0:
            check(abs(j["loss"] - j0["loss"]) > 1e-4, "%s: the window changes the loss (%.9g vs full %.9g)"
                  % (name, j["loss"], j0["loss"]))
    ck = gen("qwen2_moe", "sliding_unused")
    edit_config(ck, use_sliding_window=False, layer_types=["sliding_attention", "full_attention", "full_attention"])
    refused("qwen2_moe: a sliding layer_types entry without use_sliding_window", ck,
            os.path.join(ck, "eval.safetensors"), "config.json", "layer_types[0]", "use_sliding_window")


def test_fp8_refused():
    """DeepSeek-V3's FP8 release (quantization_config fp8, F8_E4M3 weights with
    weight_scale_inv blocks of 128 x 128) is refused, not misread: by config.json's key,
    and without it by the shard and the tensor, for a network and a layer alike."""
    ck = p("fp8_deepseek_v3")
    if not os.path.exists(ck):
        gen_decoders.generate("deepseek_v3", ck)
    path = os.path.join(ck, "model.safetensors")
    raw, meta = ff.read_safetensors(path)
    out = []
    for k, (dt, sh, b) in raw.items():
        if k.startswith("model.layers.1.mlp.experts.") and k.endswith("_proj.weight"):
            out.append((k, "F8_E4M3", sh, bytes(int(np.prod(sh)))))
            blocks = [-(-sh[0] // 128), -(-sh[1] // 128)]
            out.append((k + "_scale_inv", "F32", blocks, np.ones(blocks, np.float32).tobytes()))
        else:
            out.append((k, dt, sh, b))
    ff.write_safetensors(path, out, meta)
    ev = os.path.join(ck, "eval.safetensors")
    edit_config(ck, quantization_config={"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                         "weight_block_size": [128, 128]})
    refused("deepseek_v3 FP8: by config.json", ck, ev, "config.json", "quantization_config", "fp8")
    edit_config(ck, quantization_config=None)
    t = "model.layers.1.mlp.experts.0.gate_proj.weight"
    refused("deepseek_v3 FP8 without quantization_config", ck, ev, "model.safetensors", t, "F8_E4M3",
            t + "_scale_inv")
    r = run("info", ck, "--layer", 1)
    check(r.returncode == 1 and all(n in r.stderr for n in ("model.safetensors", "F8_E4M3", "_scale_inv")),
          "deepseek_v3 FP8: info --layer 1 refuses naming the file and the tensor: %s" % r.stderr.strip())


def moe_of_other_seed(a, other, out):
    """A copy of folder a whose MoE blocks' tensors (experts and router) are folder
    other's: two fine-tunes of one backbone, shard for shard."""
    if os.path.exists(out):
        return out
    shutil.copytree(a, out)
    for sh in sorted(f for f in os.listdir(a) if f.startswith("model") and f.endswith(".safetensors")):
        ra, meta = ff.read_safetensors(os.path.join(a, sh))
        ro = ff.read_safetensors(os.path.join(other, sh))[0]
        moe = lambda k: ".mlp.experts." in k or ".mlp.gate." in k  # noqa: E731
        ff.write_safetensors(os.path.join(out, sh), [(k,) + (ro[k] if moe(k) else ra[k]) for k in ra], meta)
    return out


def raw_tensors(folder):
    """{name: (dtype, shape, bytes, shard)} over a folder's shards"""
    out = {}
    for sh in sorted(f for f in os.listdir(folder) if f.startswith("model") and f.endswith(".safetensors")):
        for k, (dt, shape, b) in ff.read_safetensors(os.path.join(folder, sh))[0].items():
            out[k] = (dt, shape, b, sh)
    return out


def check_layout_kept(name, src, out, moe_src=None):
    """out has src's shards and every tensor's dtype and shard; every tensor outside the
    MoE blocks is src's byte for byte (moe_src: the MoE tensors' own source, their
    dtype)."""
    ts, to = raw_tensors(src), raw_tensors(out)
    check(set(ts) == set(to), "%s: the same tensor names as %s" % (name, src))
    moe = lambda k: ".mlp.experts." in k or ".mlp.gate." in k  # noqa: E731
    same = [k for k in ts if k in to and not moe(k)]
    check(same and all(ts[k] == to[k] for k in same), "%s: every non-MoE tensor byte-identical (%d)"
          % (name, len(same)))
    check(all(to[k][0] == ts[k][0] and to[k][3] == ts[k][3] for k in ts if k in to),
          "%s: every tensor keeps its dtype and its shard" % name)


def test_family_commands():
    """Every command on a decoder family's network of two MoE blocks (Qwen3-MoE, BF16,
    two shards; B: another seed's MoE blocks on A's backbone): info names the family
    and the blocks; cost and a landscape of block 2 (--samples: all 24 are fewer); curve's end points are
    eval's losses of A and B; diagnose; merge and align --layer all keep the input's
    shards and dtypes, every tensor outside the MoE blocks byte-identical; geometry
    takes the blocks' router inputs from its own forward (the same numbers as on a
    capture of the numpy forward's inputs) and its transport's unreplaced loss is the
    oracle's on the held-out sequence."""
    a = gen("qwen3_moe", "cmd_a", dtype="BF16", shards=2)
    b = moe_of_other_seed(a, gen("qwen3_moe", "cmd_other", dtype="BF16", shards=2, seed=2), p("cmd_b"))
    ev = os.path.join(a, "eval.safetensors")
    r = run("info", a)
    check(r.returncode == 0 and "network     qwen3_moe" in r.stdout and "MoE at 0, 2" in r.stdout,
          "info on a decoder network: %s" % (r.stdout[:300] + r.stderr))
    r = run("cost", a, b, "--layer", 2, "--json", p("cmd_cost.json"))
    check(r.returncode == 0, "cost --layer 2: %s" % r.stderr.strip())
    r = run("landscape", a, b, "--eval", ev, "--layer", 2, "--samples", 5, "--points", 3, "-q",
            "--json", p("cmd_ls.json"))
    check(r.returncode == 0, "a sampled landscape of block 2: %s" % r.stderr.strip())
    if r.returncode == 0:
        j = json.load(open(p("cmd_ls.json")))
        check("block 2" in j.get("objective", "") and j.get("norders") in (5, 24),
              "landscape: block 2's objective, its orders: %s %s" % (j.get("objective"), j.get("norders")))
    la, lb = eval_json(a, ev), eval_json(b, ev)
    r = run("curve", a, b, "--eval", ev, "--points", 3, "--json", p("cmd_curve.json"))
    check(r.returncode == 0, "curve: %s" % r.stderr.strip())
    if r.returncode == 0 and la and lb:
        naive = json.load(open(p("cmd_curve.json")))["curves"]["naive"]["loss"]
        check(abs(naive[0] - la["loss"]) < 1e-9 and abs(naive[-1] - lb["loss"]) < 1e-9,
              "curve's end points are eval's losses: %s vs %s, %s" % (naive, la["loss"], lb["loss"]))
    r = run("diagnose", a, b, "--eval", ev, "--points", 3, "--json", p("cmd_diag.json"))
    check(r.returncode == 0, "diagnose: %s" % r.stderr.strip())
    for cmd in ("merge", "align"):
        out = p("cmd_" + cmd)
        r = run(cmd, a, b, "--layer", "all", "-o", out)
        check(r.returncode == 0, "%s --layer all: %s" % (cmd, r.stderr.strip()))
        if r.returncode == 0:
            check_layout_kept(cmd + " --layer all", a if cmd == "merge" else b, out)
    geometry_from_own_forward(a, ev)


def geometry_from_own_forward(a, ev):
    c, t = decoder_ref.load(a)
    ids = decoder_ref.read_tensors(ev)["input_ids"]
    got = {}

    def hook(c_, t_, P, X):
        got[P] = X.astype(np.float32)
        return family_ref.forward(c_["model_type"], decoder_ref.block_tensors(t_, P), c_, P, X)
    decoder_ref.forward(c, t, ids, moe=hook)
    cap = p("cmd_capture.safetensors")
    blocks = sorted(got, key=lambda P: int(P.split(".")[2]))
    ff.write_safetensors(cap, [("inputs.%s" % P.split(".")[2], "F32", list(got[P].shape), got[P].tobytes())
                               for P in blocks], {"capture.layers": ",".join(P.split(".")[2] for P in blocks)})
    js = []
    for tag, e in (("network", ev), ("capture", cap)):
        out = p("cmd_geo_%s.json" % tag)
        r = run("geometry", a, "--eval", e, "--json", out, "--train-frac", "0.75")
        check(r.returncode == 0, "geometry (%s): %s" % (tag, r.stderr.strip()))
        js.append(json.load(open(out)) if r.returncode == 0 else None)
    if None in js:
        return
    net, capj = js
    check(net["run"]["mode"] == "network" and len(net["layers"]) == 2, "geometry: the network's two blocks")
    for key in ("variance_control", "variance_pca"):
        x = [L[key] for L in net["layers"]]
        y = [L[key] for L in capj["layers"]]
        check(np.allclose(x, y, rtol=1e-4, atol=1e-6), "geometry %s: own forward %s vs the oracle's inputs %s"
              % (key, x, y))
    tr = net.get("transport") or {}
    held = ids[tr.get("train_sequences", len(ids)):]
    if len(held):
        ref = decoder_ref.loss_accuracy(decoder_ref.forward(c, t, held), held)[0]
        check(abs(tr["loss"] - ref) <= 1e-4 * ref and "canonical" in tr,
              "geometry's transport: its loss %.9g vs the oracle's %.9g on the held-out sequences" % (tr["loss"], ref))


def check_aligned_back(name, a, back):
    """align undid the scramble: every expert tensor of every MoE layer is A's again
    (the gate rows may differ by the common translation the alignment leaves)."""
    ta, tb = decoder_ref.load(a)[1], decoder_ref.load(back)[1]
    keys = [k for k in ta if (".experts." in k or "_linear." in k or "shared_expert" in k)
            and "gate.weight" not in k]
    worst = max((np.abs(ta[k] - tb[k]).max() / max(np.abs(ta[k]).max(), 1e-30) for k in keys), default=np.inf)
    check(keys and worst < 1e-6, "%s: aligned back, %d expert tensors equal A's (worst %.3g)"
          % (name, len(keys), worst))


def rewrite_without(folder, tensor):
    """The folder's single model.safetensors without one tensor."""
    path = os.path.join(folder, "model.safetensors")
    raw, meta = ff.read_safetensors(path)
    ff.write_safetensors(path, [(k, dt, sh, b) for k, (dt, sh, b) in raw.items() if k != tensor], meta)


def edit_config(folder, **change):
    cp = os.path.join(folder, "config.json")
    c = json.load(open(cp))
    c.update(change)
    json.dump(c, open(cp, "w"))


def refused(what, ck, ev, *needles):
    r = run("eval", ck, "--eval", ev)
    check(r.returncode == 1 and all(n in r.stderr for n in needles),
          "%s: refused (exit 1) naming %s; got %d: %s" % (what, needles, r.returncode, r.stderr.strip()))


def test_refusals():
    for fam in COVERED:
        base = gen(fam, "%s_F32" % fam)
        ev = os.path.join(base, "eval.safetensors")

        def fresh(tag):
            return gen(fam, "bad_%s_%s" % (fam, tag))
        ck = fresh("type")
        edit_config(ck, model_type=fam + "_nine")
        refused("%s: unknown model_type" % fam, ck, ev, "config.json", "model_type", fam + "_nine")
        ck = fresh("tensor")
        name = ("model.layers.1.self_attention.kv_proj.weight" if fam == "jetmoe" else
                "model.layers.1.self_attn.%s.weight" % ("kv_b_proj" if fam.startswith("deepseek") else "k_proj"))
        rewrite_without(ck, name)
        refused("%s: missing tensor" % fam, ck, ev, ck, name)
        ck = fresh("rope")
        edit_config(ck, rope_scaling={"type": "fancy", "factor": 2.0})
        refused("%s: unknown rope_scaling kind" % fam, ck, ev, "config.json", "rope_scaling", "fancy")
        if not fam.startswith("deepseek"):  # MLA has no key/value heads to divide
            ck = fresh("heads")
            edit_config(ck, num_key_value_heads=3)
            refused("%s: heads that do not divide" % fam, ck, ev, "config.json", "num_key_value_heads")
        ck = fresh("positions")
        edit_config(ck, max_position_embeddings=8)
        refused("%s: T > max_position_embeddings" % fam, ck, ev, "max_position_embeddings", "8")
        ids = decoder_ref.read_tensors(ev)["input_ids"].copy()
        ids[1, 3] = gen_decoders.V
        bad = p("bad_ids_%s.safetensors" % fam)
        gen_decoders.write_eval(bad, ids)
        refused("%s: a token id >= vocab_size" % fam, base, bad, os.path.basename(bad), "vocab_size")


def equal_below_last(a, s):
    """A folder holding A's tensors but for its last block's MLP, which is S's."""
    out = s + "_last"
    if not os.path.exists(out):
        os.makedirs(out)
        last = "model.layers.%d.mlp." % (json.load(open(os.path.join(a, "config.json")))["num_hidden_layers"] - 1)
        ra, meta = ff.read_safetensors(os.path.join(a, "model.safetensors"))
        rs = ff.read_safetensors(os.path.join(s, "model.safetensors"))[0]
        ff.write_safetensors(os.path.join(out, "model.safetensors"),
                             [(k,) + tuple(rs[k] if k.startswith(last) else v) for k, v in ra.items()], meta)
        shutil.copy(os.path.join(a, "config.json"), out)
    return out


def test_mapped_mix():
    """A pair's curve with the MoE blocks mixed from their mapped files a panel at a
    time (BF16; GPT-OSS's MXFP4 blocks and scales): the naive curve's middle point is
    the oracle's loss of 0.5 A + 0.5 B on every tensor, the aligned curve's barrier ~0
    (B a scramble of A), through every MoE block but the chosen one as mixes; B equal
    to A below its last block, that block chosen: the frozen prefix runs through the
    MoE blocks before it, the same loss; JetMoE (its attention experts mapped too)."""
    cases = [("qwen3_moe", {}, None), ("gpt_oss", {"mxfp4": True}, None), ("qwen3_moe", {}, "last"),
             ("jetmoe", {}, None)]
    for fam, kw, which in cases:
        tag = "mix_%s%s" % (fam, "_mx" if kw else "")
        a = gen(fam, tag, dtype="BF16", **kw)
        b = gen(fam, tag + "_scr", dtype="BF16", scramble=True, **kw)
        layer = []
        if which:
            b = equal_below_last(a, b)
            tag += "_last"
            layer = ["--layer", json.load(open(os.path.join(a, "config.json")))["num_hidden_layers"] - 1]
        ev = os.path.join(a, "eval.safetensors")
        out = p(tag + "_curve.json")
        r = run("curve", a, b, "--eval", ev, "--points", 3, "--json", out, *layer)
        check(r.returncode == 0, "%s: curve of a mapped pair: %s" % (tag, r.stderr.strip()[-400:]))
        if r.returncode:
            continue
        cv = json.load(open(out))["curves"]
        c, ta = decoder_ref.load(a)
        tb = decoder_ref.load(b)[1]
        ids = decoder_ref.read_tensors(ev)["input_ids"].astype(np.int64)
        mid = {k: 0.5 * ta[k] + 0.5 * tb[k] for k in ta}
        want = decoder_ref.loss_accuracy(decoder_ref.forward(c, mid, ids), ids)[0]
        got = cv["naive"]["loss"][1]
        check(abs(got - want) <= 1e-5 * want, "%s: the naive midpoint, MoE blocks mixed per panel: loss %.9g vs "
              "the oracle's %.9g" % (tag, got, want))
        check(cv["expert"]["barrier"] < 1e-4, "%s: aligned per panel, the scramble's barrier ~0 (%g)"
              % (tag, cv["expert"]["barrier"]))


def test_jetmoe_backbone():
    """JetMoE's attention experts are the backbone, not an MoE block: B with another
    self_attention.experts.input_linear is refused naming it; with
    --interpolate-backbone (BF16, two shards: the packed experts mixed a panel at a
    time) the naive curve's midpoint is the oracle's network of 0.5 A + 0.5 B."""
    a = gen("jetmoe", "jet_bb_a", dtype="BF16", shards=2)
    b = p("jet_bb_b")
    name = "model.layers.1.self_attention.experts.input_linear.weight"
    if not os.path.exists(b):
        shutil.copytree(a, b)
        for sh in sorted(f for f in os.listdir(b) if f.startswith("model-")):
            raw, meta = ff.read_safetensors(os.path.join(b, sh))
            if name in raw:
                dt, shape, x = raw[name]
                w = ff.to_float(dt, shape, x) * -0.5  # exact in BF16
                raw[name] = (dt, shape, ff.encode(w, dt))
                ff.write_safetensors(os.path.join(b, sh), [(k,) + tuple(v) for k, v in raw.items()], meta)
    ev = os.path.join(a, "eval.safetensors")
    r = run("curve", a, b, "--eval", ev, "--points", 3)
    check(r.returncode == 1 and name in r.stderr, "jetmoe: another attention expert refused naming %s: %s"
          % (name, r.stderr.strip()[-300:]))
    c, ta = decoder_ref.load(a)
    tb = decoder_ref.load(b)[1]
    ids = decoder_ref.read_tensors(ev)["input_ids"].astype(np.int64)
    want = decoder_ref.loss_accuracy(decoder_ref.forward(c, {k: 0.5 * ta[k] + 0.5 * tb[k] for k in ta}, ids), ids)[0]
    for how, env in (("mapped", None), ("floats", {"MOESCOPE_TEST_FLOATS": "1"})):  # (a clone of the backbone)
        out = p("jet_bb_curve_%s.json" % how)
        r = run("curve", a, b, "--eval", ev, "--points", 3, "--interpolate-backbone", "--json", out, env=env)
        check(r.returncode == 0, "jetmoe --interpolate-backbone (%s): %s" % (how, r.stderr.strip()[-300:]))
        if r.returncode:
            continue
        cv = json.load(open(out))["curves"]
        got = [cv[m]["loss"][1] for m in ("naive", "expert")]
        check(all(abs(g - want) <= 1e-5 * want for g in got), "jetmoe (%s): the midpoints with the attention "
              "experts mixed (naive, aligned: B's MoE blocks are A's): loss %s vs the oracle's %.9g" % (how, got, want))


def json_numbers_equal(x, y, rtol):
    """The worst relative difference of two reports' numbers, their timings and
    provenance aside; None when their shapes or words differ."""
    if isinstance(x, dict):
        if set(x) != set(y):
            return None
        ws = [json_numbers_equal(x[k], y[k], rtol) for k in x if k not in ("provenance", "seconds")]
        return None if None in ws else max(ws, default=0.0)
    if isinstance(x, list):
        if len(x) != len(y):
            return None
        ws = [json_numbers_equal(u, v, rtol) for u, v in zip(x, y)]
        return None if None in ws else max(ws, default=0.0)
    if isinstance(x, float) or isinstance(y, float):
        if x is None or y is None:
            return None if x != y else 0.0
        if math.isnan(x) or math.isnan(y):
            return 0.0 if math.isnan(x) and math.isnan(y) else None
        return abs(x - y) / max(abs(x), 1e-12)
    return 0.0 if x == y else None


def test_mapped_landscape():
    """A landscape whose chosen block is mapped too (each order's B a view of its file,
    its interpolation a mix formed per panel, the layer-only proxy's pairs decoded one at
    a time) equals the float path's (MOESCOPE_TEST_FLOATS: every MoE block read into
    floats): BF16 over two shards, GPT-OSS's MXFP4 experts; and with --method activation
    and --screen; Qwen2-MoE's gated and DeepSeek's shared experts mapped in every block,
    the chosen one's too (aligned as views; mixed per panel, the chosen one's decoded)."""
    cases = [("qwen3_moe", {}, []), ("gpt_oss", {"mxfp4": True}, []),
             ("qwen3_moe", {}, ["--method", "activation", "--screen", 3]),
             ("qwen2_moe", {}, []), ("deepseek_v3", {}, [])]  # mapped shared experts (gated; not)
    for fam, kw, extra in cases:
        tag = "mix_%s%s" % (fam, "_mx" if kw else "")
        a = gen(fam, tag, dtype="BF16", **kw)
        b = gen(fam, tag + "_scr", dtype="BF16", scramble=True, **kw)
        ev = os.path.join(a, "eval.safetensors")
        js = []
        for floats in (False, True):
            out = p("%s_ls_%s%s.json" % (tag, "floats" if floats else "mapped", len(extra)))
            r = run("landscape", a, b, "--eval", ev, "--samples", 6, "--points", 5, "-q", "--json", out, *extra,
                    env={"MOESCOPE_TEST_FLOATS": "1"} if floats else None)
            check(r.returncode == 0, "%s %s: landscape (%s): %s" % (tag, extra, "floats" if floats else "mapped",
                                                                    r.stderr.strip()[-400:]))
            js.append(json.load(open(out)) if r.returncode == 0 else None)
        if None in js:
            continue
        w = json_numbers_equal(js[0], js[1], 1e-6)
        check(w is not None and w <= 1e-6 and ("--screen" in extra or js[0].get("proxy")),
              "%s %s: the mapped landscape (proxy included) is the float path's: worst relative difference %s"
              % (tag, extra, w))


def same_folders(x, y):
    """Do two checkpoint folders hold the same files, byte for byte?"""
    fx, fy = sorted(os.listdir(x)), sorted(os.listdir(y))
    return fx == fy and all(open(os.path.join(x, f), "rb").read() == open(os.path.join(y, f), "rb").read()
                            for f in fx)


def test_mapped_commands():
    """align, merge, scramble, diagnose, study and geometry with the MoE blocks mapped (each aligned B a view
    of its file, a soup a mix, every output slot decoded as it is written) give what the
    float path gives (MOESCOPE_STREAM=0 and MOESCOPE_TEST_FLOATS: every block read into
    floats): the same output files byte for byte, the same reports (BF16, two shards;
    B another seed's MoE blocks on A's backbone; GPT-OSS's MXFP4 experts)."""
    a = gen("qwen3_moe", "cmd_a", dtype="BF16", shards=2)
    b = moe_of_other_seed(a, gen("qwen3_moe", "cmd_other", dtype="BF16", shards=2, seed=2), p("cmd_b"))
    ev = os.path.join(a, "eval.safetensors")
    ga = gen("gpt_oss", "mix_gpt_oss_mx", dtype="BF16", mxfp4=True)
    gb = gen("gpt_oss", "mix_gpt_oss_mx_scr", dtype="BF16", scramble=True, mxfp4=True)
    floats = {"MOESCOPE_STREAM": "0", "MOESCOPE_TEST_FLOATS": "1"}
    ds = gen("deepseek_v3", "cmd_ds", dtype="BF16", shards=2)  # shared experts, selection biases
    dsb = gen("deepseek_v3", "cmd_ds_scr", dtype="BF16", shards=2, scramble=True)
    qa = gen("qwen2_moe", "mix_qwen2_moe", dtype="BF16")  # a gated shared expert
    qb = gen("qwen2_moe", "mix_qwen2_moe_scr", dtype="BF16", scramble=True)
    cases = [("align", [a, b], ["--layer", 2, "--eval", ev, "--method", "activation"]),
             ("merge", [a, b], ["--layer", 2, "--eval", ev, "--alpha-sweep", 3]),
             ("merge", [a, b], ["--layer", "all"]),
             ("align", [ga, gb], ["--layer", "all"]),
             ("merge", [ga, gb], ["--layer", 1, "--eval", os.path.join(ga, "eval.safetensors")]),
             ("scramble", [a], ["--layer", "all", "--translate"]),
             ("scramble", [ga], ["--layer", 1, "--seed", 7]),
             ("scramble", [ds], ["--layer", "all", "--translate"]),
             ("merge", [qa, qb], ["--layer", 2, "--eval", os.path.join(qa, "eval.safetensors")]),
             ("merge", [qa, qb], ["--layer", "all"]),
             ("align", [ds, dsb], ["--layer", "all"])]
    for k, (cmd, ins, extra) in enumerate(cases):
        outs, texts = [], []
        for env in (None, floats):
            out = p("mapped_cmd_%d_%s" % (k, "floats" if env else "mapped"))
            r = run(cmd, *ins, "-o", out, *extra, env=env)
            check(r.returncode == 0, "%s %s (%s): %s" % (cmd, extra, "floats" if env else "mapped", r.stderr.strip()))
            outs.append(out)
            texts.append(re.sub(r"layers-\w+", "layers-", (r.stdout + r.stderr).replace(out, "OUT")
                                .replace(os.path.basename(out), "OUT")))  # --layer all's steps' folders
        if all(os.path.isdir(o) for o in outs):  # (a scramble too: its views decoded as written)
            check(same_folders(*outs) and texts[0] == texts[1],
                  "%s %s: mapped, the float path's output byte for byte and its report" % (cmd, extra))
    # diagnose: the chosen block's experts decoded one or two at a time, its landscape's
    # orders views of B's file (an order of another seed's experts; a scramble of A), a
    # shared expert's too (Qwen2-MoE's gated one, DeepSeek's)
    for x, y, extra in ((a, b, ["--layer", 2, "--method", "activation"]), (ga, gb, ["--landscape"]),
                        (qa, qb, ["--layer", 2]), (ds, dsb, ["--layer", 1])):
        texts, js = [], []
        for env in (None, floats):
            out = p("mapped_diagnose_%s.json" % ("floats" if env else "mapped"))
            r = run("diagnose", x, y, "--eval", os.path.join(x, "eval.safetensors"), "--points", 3, "--json", out,
                    *extra, env=env)
            check(r.returncode == 0, "diagnose %s (%s): %s" % (extra, "floats" if env else "mapped",
                                                               r.stderr.strip()))
            texts.append(r.stdout + r.stderr if r.returncode == 0 else None)
            js.append(json.load(open(out)) if r.returncode == 0 else None)
        w = json_numbers_equal(js[0], js[1], 0) if None not in js else None  # (the provenance's date aside)
        check(texts[0] is not None and texts[0] == texts[1] and w == 0.0,
              "diagnose %s: mapped, the float path's report and JSON (worst relative difference %s)" % (extra, w))
    for cmd, args in (("study", [a, b, "--eval", ev, "--samples", 4, "--points", 3]),
                      ("geometry", [a, "--eval", ev, "--train-frac", 0.75]),
                      ("study", [qa, qb, "--eval", os.path.join(qa, "eval.safetensors"), "--samples", 4, "--points", 3]),
                      ("geometry", [ds, "--eval", os.path.join(ds, "eval.safetensors"), "--train-frac", 0.75])):
        js = []
        for env in (None, {"MOESCOPE_TEST_FLOATS": "1"}):
            out = p("mapped_%s_%s.json" % (cmd, "floats" if env else "mapped"))
            r = run(cmd, *args, "-q", "--json", out, env=env) if cmd == "study" else run(cmd, *args, "--json", out,
                                                                                             env=env)
            check(r.returncode == 0, "%s (%s): %s" % (cmd, "floats" if env else "mapped", r.stderr.strip()))
            js.append(json.load(open(out)) if r.returncode == 0 else None)
        if None not in js:
            w = json_numbers_equal(js[0], js[1], 0)
            check(w == 0.0, "%s: mapped, the float path's report (worst relative difference %s)" % (cmd, w))


def test_not_covered():
    """Families moescope does not evaluate yet: refused by name, never run as another."""
    for fam in gen_decoders.FAMILIES:
        if fam in COVERED:
            continue
        ck = gen(fam, "%s_F32" % fam)
        refused("%s (not a network family yet)" % fam, ck, os.path.join(ck, "eval.safetensors"), fam)
    # Switch Transformers: its layers open, but an encoder-decoder is no causal language model
    ck = p("switch_net")
    if not os.path.exists(ck):
        W, cfg = ff.random_layer("switch", np.random.default_rng(4))
        ff.write_checkpoint(ck, "switch", W, dict(cfg, model_type="switch_transformers",
                                                  architectures=["SwitchTransformersForConditionalGeneration"],
                                                  vocab_size=gen_decoders.V), shards=2)
        gen_decoders.write_eval(os.path.join(ck, "eval.safetensors"), np.zeros((2, 8), np.int64))
    refused("switch_transformers with input_ids, said why", ck, os.path.join(ck, "eval.safetensors"),
            "config.json", "'model_type' is \"switch_transformers\"", "encoder-decoder")
    r = run("info", ck)
    check(r.returncode == 0 and "switch" in r.stdout, "switch: its MoE layer opens as a layer: %s" % r.stderr.strip())
    ck = gen("mixtral", "unknown_type")
    edit_config(ck, model_type="llama4_moe_x")
    refused("an unknown model_type", ck, os.path.join(ck, "eval.safetensors"), "config.json", "llama4_moe_x")
    print("covered as networks: %s; refused: %s" % (", ".join(COVERED) or "none",
                                                  ", ".join(f for f in gen_decoders.FAMILIES if f not in COVERED)))


if __name__ == "__main__":
    sys.exit(testutil.run_tests("test_decoder_oracle",
                                [test_oracle_scramble, test_oracle_causal, test_oracle_equal_experts, test_oracle_routing,
                                 test_oracle_refusals, test_covered, test_threads, test_covered_rope,
                                 test_phimoe_long_rope, test_qwen_sliding, test_fp8_refused, test_family_commands,
                                 test_refusals, test_mapped_mix, test_jetmoe_backbone, test_mapped_landscape,
                                 test_mapped_commands,
                                 test_not_covered], TMP))
