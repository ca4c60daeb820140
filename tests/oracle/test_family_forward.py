"""tests/oracle/test_family_forward.py - moescope's router and expert math against the
numpy reference forwards of tests/oracle/family_ref.py, one case per family router.

Each case draws a random block in the family's Hugging Face names, computes its
output with family_ref.forward, then writes the same weights in moescope's
native layout (the mapping below, written here from the modelling code: gate /
up / down projections -> fc1 / fc3 / fc2, the router's parameters -> moescope.*
metadata and the optional router tensors) and checks that `moescope eval
--dump-outputs` on an inputs-only evaluation set reproduces the block's
output to 1e-4 relative. Then every family in its real layout (sharded, with
config.json; F32, BF16, and GPT-OSS's MXFP4), written by
tests/lib/family_fixtures.py, against the same reference."""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402
import testutil  # noqa: E402
from oracle import read_safetensors, write_safetensors  # noqa: E402
from testutil import check, run  # noqa: E402

N, D, H, HS = 64, 16, 8, 12


def rnd(rng, *shape, s=0.5):
    return (s * rng.standard_normal(shape)).astype(np.float32)


def swiglu_hf(rng, t, base, d, h):
    t[base + "gate_proj.weight"] = rnd(rng, h, d)
    t[base + "up_proj.weight"] = rnd(rng, h, d)
    t[base + "down_proj.weight"] = rnd(rng, d, h)


def make_family(family, n, rng, cfg):
    """A random block of `family` in HF names under prefix P."""
    t = {}
    P = {"switch": "encoder.block.1.layer.1.mlp.", "granitemoe": "model.layers.0.block_sparse_moe.",
         "mixtral": "model.layers.0.block_sparse_moe."}.get(family, "model.layers.0.mlp.")
    if family == "mixtral":
        t[P + "gate.weight"] = rnd(rng, n, D, s=1.0)
        for e in range(n):
            b = P + "experts.%d." % e
            t[b + "w1.weight"], t[b + "w3.weight"] = rnd(rng, H, D), rnd(rng, H, D)
            t[b + "w2.weight"] = rnd(rng, D, H)
    elif family in ("qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3"):
        t[P + "gate.weight"] = rnd(rng, n, D, s=1.0)
        if family == "deepseek_v3":
            t[P + "gate.e_score_correction_bias"] = rnd(rng, n, s=0.3)
        for e in range(n):
            swiglu_hf(rng, t, P + "experts.%d." % e, D, H)
        if family == "qwen2_moe":
            swiglu_hf(rng, t, P + "shared_expert.", D, HS)
            t[P + "shared_expert_gate.weight"] = rnd(rng, 1, D)
        if family in ("deepseek_v2", "deepseek_v3"):
            swiglu_hf(rng, t, P + "shared_experts.", D, HS)
    elif family == "switch":
        t[P + "router.classifier.weight"] = rnd(rng, n, D, s=1.0)
        if cfg.get("router_bias"):
            t[P + "router.classifier.bias"] = rnd(rng, n)
        for e in range(n):
            b = P + "experts.expert_%d." % e
            t[b + "wi.weight"], t[b + "wo.weight"] = rnd(rng, H, D), rnd(rng, D, H)
    elif family in ("granitemoe", "jetmoe"):
        t[P + "router.layer.weight"] = rnd(rng, n, D, s=1.0)
        t[P + "input_linear.weight"] = rnd(rng, n, 2 * H, D)
        t[P + "output_linear.weight"] = rnd(rng, n, D, H)
        if family == "jetmoe":
            t[P + "bias"] = rnd(rng, D)
    elif family == "gpt_oss":
        t[P + "router.weight"] = rnd(rng, n, D, s=1.0)
        t[P + "router.bias"] = rnd(rng, n)
        t[P + "experts.gate_up_proj"] = rnd(rng, n, D, 2 * H, s=1.5)  # large: the clamps act
        t[P + "experts.gate_up_proj_bias"] = rnd(rng, n, 2 * H)
        t[P + "experts.down_proj"] = rnd(rng, n, H, D)
        t[P + "experts.down_proj_bias"] = rnd(rng, n, D)
    return t, P


def to_native(family, t, cfg, P, n):
    """The same block in moescope's native names and metadata (layer 'moe')."""
    o, meta = {}, {"moescope.router": "topk", "moescope.residual": "0",
                   "moescope.activation": "silu_glu"}
    dflt = family_ref.DEFAULTS[family]
    get = lambda key: cfg.get(key, dflt.get(key))  # noqa: E731
    k = get("num_experts_per_tok") or 1

    def expert(i, w1, w3, w2, b1=None, b3=None, b2=None, kind="experts"):
        b = "moe.%s.%d." % (kind, i)
        o[b + "fc1.weight"], o[b + "fc2.weight"] = w1, w2
        if w3 is not None:
            o[b + "fc3.weight"] = w3
        for nm, v in (("fc1.bias", b1), ("fc3.bias", b3), ("fc2.bias", b2)):
            if v is not None:
                o[b + nm] = v

    def hf_glu(base, i, kind="experts"):
        expert(i, t[base + "gate_proj.weight"], t[base + "up_proj.weight"],
               t[base + "down_proj.weight"], kind=kind)

    if family == "mixtral":
        o["moe.gate.weight"] = t[P + "gate.weight"]
        for e in range(n):
            b = P + "experts.%d." % e
            expert(e, t[b + "w1.weight"], t[b + "w3.weight"], t[b + "w2.weight"])
    elif family in ("qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3"):
        o["moe.gate.weight"] = t[P + "gate.weight"]
        for e in range(n):
            hf_glu(P + "experts.%d." % e, e)
        if family == "qwen2_moe":
            hf_glu(P + "shared_expert.", 0, "shared")
            o["moe.shared.gate.weight"] = t[P + "shared_expert_gate.weight"][0]
        if family.startswith("deepseek"):
            hf_glu(P + "shared_experts.", 0, "shared")
        if family in ("qwen2_moe", "qwen3_moe", "olmoe") and not get("norm_topk_prob"):
            meta["moescope.renormalize"] = "0"
        if family == "deepseek_v2":
            meta["moescope.renormalize"] = "0"
            meta["moescope.routed_scale"] = repr(float(get("routed_scaling_factor")))
            if get("topk_method") == "group_limited_greedy":
                meta.update({"moescope.n_group": str(get("n_group")),
                             "moescope.topk_group": str(get("topk_group")),
                             "moescope.group_score": "max"})
        if family == "deepseek_v3":
            o["moe.gate.correction_bias"] = t[P + "gate.e_score_correction_bias"]
            meta.update({"moescope.score": "sigmoid", "moescope.renorm_eps": "1e-20",
                         "moescope.routed_scale": repr(float(get("routed_scaling_factor"))),
                         "moescope.n_group": str(get("n_group")),
                         "moescope.topk_group": str(get("topk_group")),
                         "moescope.group_score": "top2_sum"})
            if not get("norm_topk_prob"):
                meta["moescope.renormalize"] = "0"
    elif family == "switch":
        o["moe.gate.weight"] = t[P + "router.classifier.weight"]
        if P + "router.classifier.bias" in t:
            o["moe.gate.bias"] = t[P + "router.classifier.bias"]
        for e in range(n):
            b = P + "experts.expert_%d." % e
            expert(e, t[b + "wi.weight"], None, t[b + "wo.weight"])
        meta.update({"moescope.activation": "relu", "moescope.renormalize": "0"})
    elif family in ("granitemoe", "jetmoe"):
        o["moe.gate.weight"] = t[P + "router.layer.weight"]
        Win, Wout = t[P + "input_linear.weight"], t[P + "output_linear.weight"]
        for e in range(n):
            expert(e, Win[e][:H], Win[e][H:], Wout[e])
        if family == "jetmoe":
            o["moe.output.bias"] = t[P + "bias"]
    elif family == "gpt_oss":
        o["moe.gate.weight"], o["moe.gate.bias"] = t[P + "router.weight"], t[P + "router.bias"]
        GU, GUb = t[P + "experts.gate_up_proj"], t[P + "experts.gate_up_proj_bias"]
        Dn, Db = t[P + "experts.down_proj"], t[P + "experts.down_proj_bias"]
        for e in range(n):
            expert(e, GU[e][:, 0::2].T, GU[e][:, 1::2].T, Dn[e].T, GUb[e][0::2], GUb[e][1::2], Db[e])
        meta["moescope.activation"] = "gpt_oss_swiglu"
        meta["moescope.act_limit"] = repr(float(get("swiglu_limit")))
    if "moe.shared.0.fc1.weight" in o:
        meta["moescope.shared_hidden"] = str(o["moe.shared.0.fc1.weight"].shape[0])
    meta["moescope.top_k"] = str(k)
    return o, meta


CASES = [
    ("mixtral", 8, {"num_experts_per_tok": 2}),
    ("qwen2_moe", 8, {"num_experts_per_tok": 3, "norm_topk_prob": False}),
    ("qwen2_moe", 6, {"num_experts_per_tok": 2, "norm_topk_prob": True}),
    ("qwen3_moe", 8, {"num_experts_per_tok": 3, "norm_topk_prob": True}),
    ("olmoe", 8, {"num_experts_per_tok": 2}),
    ("deepseek_v2", 8, {"num_experts_per_tok": 3, "routed_scaling_factor": 1.5}),
    ("deepseek_v2", 8, {"num_experts_per_tok": 2, "topk_method": "group_limited_greedy",
                        "n_group": 4, "topk_group": 2, "routed_scaling_factor": 16.0}),
    ("deepseek_v3", 8, {"num_experts_per_tok": 3, "n_group": 4, "topk_group": 2}),
    ("deepseek_v3", 8, {"num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
                        "norm_topk_prob": False, "routed_scaling_factor": 1.0}),
    ("switch", 4, {}),
    ("switch", 5, {"router_bias": True}),
    ("granitemoe", 6, {"num_experts_per_tok": 2}),
    ("jetmoe", 8, {"num_experts_per_tok": 2}),
    ("gpt_oss", 8, {"num_experts_per_tok": 3, "swiglu_limit": 7.0}),
    ("gpt_oss", 4, {"num_experts_per_tok": 2, "swiglu_limit": 1.5}),
]


def run_case(tmp, idx, family, n, cfg):
    rng = np.random.default_rng(1000 + idx)
    t, P = make_family(family, n, rng, cfg)
    X = rng.standard_normal((N, D)).astype(np.float32)
    want = family_ref.forward(family, t, cfg, P, X)
    o, meta = to_native(family, t, cfg, P, n)
    ck, ev, out = (os.path.join(tmp, "%d.%s" % (idx, s)) for s in ("ckpt", "eval", "out"))
    write_safetensors(ck, o, meta)
    write_safetensors(ev, {"inputs": X})
    r = run("eval", ck, "--eval", ev, "--dump-outputs", out)
    name = "%s %s" % (family, cfg)
    check(r.returncode == 0, "%s: eval failed: %s" % (name, r.stderr.strip()))
    if r.returncode:
        return
    got = read_safetensors(out)[0]["outputs"]
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)
    check(got.shape == want.shape and err < 1e-4, "%s: outputs differ, rel err %g" % (name, err))
    check(np.abs(want).max() > 1e-3, "%s: the reference output is ~0 (a test that cannot fail)"
          % name)


def test_reference_sanity():
    """family_ref's own algebra: softmax->top-k->renormalise equals top-k of the
    logits -> softmax (mixtral vs granitemoe on the same weights)."""
    rng = np.random.default_rng(5)
    t, P = make_family("mixtral", 6, rng, {})
    X = rng.standard_normal((20, D))
    g = {"model.layers.0.block_sparse_moe.router.layer.weight": t[P + "gate.weight"]}
    Win = np.stack([np.concatenate([t[P + "experts.%d.w1.weight" % e],
                                    t[P + "experts.%d.w3.weight" % e]]) for e in range(6)])
    g[P + "input_linear.weight"] = Win
    g[P + "output_linear.weight"] = np.stack([t[P + "experts.%d.w2.weight" % e] for e in range(6)])
    a = family_ref.forward("mixtral", t, {"num_experts_per_tok": 2}, P, X)
    b = family_ref.forward("granitemoe", g, {"num_experts_per_tok": 2}, P, X)
    check(np.abs(a - b).max() < 1e-10, "reference: mixtral != granitemoe on the same weights")


def ref_tensors(fam, W, dtype):
    """The layer's tensors as the modelling code sees them (HF names, float32),
    decoded from exactly the bytes the fixture writer puts in the file; MXFP4
    blocks/scales become the BF16 layout's gate_up_proj [n, d, 2h] and
    down_proj [n, h, d] (the codes are stored [n, out, in])."""
    t = {}
    for name, dt, shape, raw in ff.hf_tensors(fam, W, dtype=dtype):
        if dt in ("F32", "BF16", "F16"):
            t[name] = ff.to_float(dt, shape, raw)
    if "_gu_mx" in W:
        P = ff.prefix_of(fam, 1) + ".experts."
        t[P + "gate_up_proj"] = ff.mx_decode(*W["_gu_mx"]).transpose(0, 2, 1)
        t[P + "down_proj"] = ff.mx_decode(*W["_dn_mx"]).transpose(0, 2, 1)
    return t


def symmetry_check(tag, fam, ck, cfg):
    """info names the router's symmetry group: no translation for sigmoid scores,
    the wreath product where the group limit binds (DeepSeek-V3's top-2 sums; a
    V2 limit ranked by group maxima with k <= topk_group never binds), top-1
    flagged."""
    js = ck + ".info.json"
    r = run("info", ck, "--json", js)
    check(r.returncode == 0, "%s: info failed: %s" % (tag, r.stderr.strip()))
    if r.returncode:
        return
    sym = json.load(open(js)).get("symmetry", {})
    k, kg = cfg.get("num_experts_per_tok", 1), cfg.get("topk_group", 0)
    binds = fam == "deepseek_v3" or (fam == "deepseek_v2" and k > kg)
    want = (fam != "deepseek_v3", cfg.get("n_group", 0) if binds else 0, fam == "switch")
    got = (sym.get("translation"), sym.get("groups"), sym.get("top1"))
    check(got == want, "%s: info's symmetry (translation, groups, top1) = %s, expected %s (%s)"
          % (tag, got, want, sym.get("group")))
    check(("wr" in sym.get("group", "")) == bool(want[1]), "%s: group name %s" % (tag, sym.get("group")))
    # cost reports the gate cost as centred only where centring is a symmetry
    r = run("cost", ck, ck, "--method", "gate", "--json", js)
    check(r.returncode == 0 and json.load(open(js)).get("centered") == want[0],
          "%s: cost says centred = %s" % (tag, r.returncode or json.load(open(js)).get("centered")))


def real_layout_case(tmp, fam, dtype, mx, seed):
    """A real family layout (sharded, config.json, written by the tests' own
    fixture writer): eval --dump-outputs against family_ref.forward."""
    tag = "%s/%s%s" % (fam, dtype, "/MXFP4" if mx else "")
    rng = np.random.default_rng(seed)
    W, cfg = ff.random_layer(fam, rng, dtype, mx=mx)
    d = W["gate"].shape[1]
    ck = os.path.join(tmp, tag.replace("/", "_"))
    ff.write_checkpoint(ck, fam, W, cfg, dtype, shards=2, rng=np.random.default_rng(3))
    X = rng.standard_normal((48, d)).astype(np.float32)
    want = family_ref.forward(fam, ref_tensors(fam, W, dtype), cfg, ff.prefix_of(fam, 1) + ".", X)
    symmetry_check(tag, fam, ck, cfg)
    ev, out = ck + ".eval", ck + ".out"
    write_safetensors(ev, {"inputs": X})
    r = run("eval", ck, "--eval", ev, "--dump-outputs", out)
    check(r.returncode == 0, "%s: eval failed: %s" % (tag, r.stderr.strip()))
    if r.returncode:
        return
    got = read_safetensors(out)[0]["outputs"]
    err = np.abs(got - want).max() / max(np.abs(want).max(), 1e-12)
    check(got.shape == want.shape and err < 1e-4,
          "%s: eval --dump-outputs vs the reference forward: rel err %g" % (tag, err))
    check(np.abs(want).max() > 1e-3, "%s: the reference output is ~0" % tag)


def main():
    test_reference_sanity()
    with tempfile.TemporaryDirectory() as tmp:
        for i, (family, n, cfg) in enumerate(CASES):
            run_case(tmp, i, family, n, cfg)
        for i, fam in enumerate(ff.FAMILIES):
            for dtype in ("F32", "BF16"):
                real_layout_case(tmp, fam, dtype, False, 50 + 2 * i + (dtype == "BF16"))
        real_layout_case(tmp, "gpt_oss", "BF16", True, 99)
    return testutil.summary("test_family_forward")


if __name__ == "__main__":
    sys.exit(main())
