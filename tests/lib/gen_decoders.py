"""tests/lib/gen_decoders.py - tiny random decoder language models of the Hugging Face MoE
families, written as transformers saves them (config.json with the family's own keys,
model.safetensors or K shards with model.safetensors.index.json), and an evaluation set
eval.safetensors of input_ids [N,T] I64 the model itself samples (tests/lib/decoder_ref.py's
forward), so the loss sits well below log V.

    python3 tests/lib/gen_decoders.py --family F --out DIR [--dtype f32|bf16] [--shards K]
        [--seed S] [--scramble] [--rope-scaling none|linear|dynamic|yarn|llama3|longrope|KIND]
        [--mxfp4] [--N N] [--T T]

Every model has three layers, at least one MoE layer and, where the family has them, a
dense one (Qwen2/3-MoE by mlp_only_layers, DeepSeek by first_k_dense_replace). The MoE
layers are the logical arrays of tests/lib/family_fixtures.py written in the family's
tensor names by its hf_tensors (PhiMoE's are Mixtral's). --scramble writes the same function: every MoE layer's
experts permuted (for group-limited routers whole groups and experts within groups), each
expert's hidden units permuted, the shared expert's too, and (F32 softmax routers) a
common vector added to every gate row; DIR/scramble.json holds each layer's order (slot i
holds the unscrambled expert order[i]). numpy only.
"""
import argparse
import json
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "oracle")]
import decoder_ref  # noqa: E402
import family_fixtures as ff  # noqa: E402

FAMILIES = decoder_ref.FAMILIES
ARCH = {"mixtral": "MixtralForCausalLM", "qwen2_moe": "Qwen2MoeForCausalLM",
        "qwen3_moe": "Qwen3MoeForCausalLM", "olmoe": "OlmoeForCausalLM",
        "granitemoe": "GraniteMoeForCausalLM", "deepseek_v2": "DeepseekV2ForCausalLM",
        "deepseek_v3": "DeepseekV3ForCausalLM", "gpt_oss": "GptOssForCausalLM",
        "phimoe": "PhimoeForCausalLM", "jetmoe": "JetMoeForCausalLM"}
# the rope_scaling kind a family's configs ship when none is asked for
DEFAULT_ROPE = {"deepseek_v3": "yarn", "gpt_oss": "yarn", "phimoe": "longrope"}
SOFTMAX_ROUTED = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "deepseek_v2", "gpt_oss", "jetmoe"}
D, H, KV, HD, V, L = 32, 4, 2, 8, 64, 3


def rope_scaling(kind, max_pos, hd=8):
    """A rope_scaling object as the families' config.json files ship them (hd: the
    rotated width, for longrope's per-frequency factors)."""
    orig = max_pos // 4
    if kind in (None, "none"):
        return None
    if kind in ("linear", "dynamic"):
        return {"type": kind, "factor": 2.0}
    if kind == "yarn":
        return {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": orig,
                "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}
    if kind == "llama3":
        return {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": orig}
    if kind == "longrope":
        return {"type": "longrope", "original_max_position_embeddings": orig,
                "short_factor": [1.0 + 0.1 * i for i in range(hd // 2)],
                "long_factor": [1.0 + 0.5 * i for i in range(hd // 2)]}
    return {"type": kind, "factor": 2.0}


def config(fam, rope):
    """The family's config.json: its real keys, tiny sizes."""
    c = {"architectures": [ARCH[fam]], "model_type": fam, "vocab_size": V, "hidden_size": D,
         "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": KV,
         "max_position_embeddings": 64, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
         "hidden_act": "silu", "tie_word_embeddings": False, "torch_dtype": "float32",
         "bos_token_id": 1, "eos_token_id": 2}
    if fam == "mixtral":
        c.update(intermediate_size=24, num_local_experts=4, num_experts_per_tok=2,
                 sliding_window=6, router_jitter_noise=0.0, rope_theta=1e6)
    elif fam in ("qwen2_moe", "qwen3_moe"):
        c.update(intermediate_size=40, moe_intermediate_size=16, num_experts=4,
                 num_experts_per_tok=2, decoder_sparse_step=1, mlp_only_layers=[1],
                 use_sliding_window=False, sliding_window=None, max_window_layers=L)
        if fam == "qwen2_moe":
            c.update(shared_expert_intermediate_size=24, norm_topk_prob=False, qkv_bias=True)
        else:
            c.update(head_dim=12, norm_topk_prob=True, attention_bias=False)
    elif fam == "olmoe":
        c.update(intermediate_size=16, num_experts=4, num_experts_per_tok=2,
                 norm_topk_prob=False, clip_qkv=None, rms_norm_eps=1e-5)
    elif fam == "granitemoe":
        c.update(intermediate_size=16, num_local_experts=4, num_experts_per_tok=2,
                 embedding_multiplier=2.0, attention_multiplier=0.25, residual_multiplier=0.5,
                 logits_scaling=4.0, tie_word_embeddings=True, attention_bias=False)
    elif fam in ("deepseek_v2", "deepseek_v3"):
        c.update(num_key_value_heads=H, intermediate_size=40, moe_intermediate_size=16,
                 n_routed_experts=8, num_experts_per_tok=2, first_k_dense_replace=1,
                 kv_lora_rank=12, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=6,
                 attention_bias=False)
        if fam == "deepseek_v2":
            c.update(q_lora_rank=None, n_shared_experts=2, n_group=2, topk_group=1,
                     topk_method="group_limited_greedy", routed_scaling_factor=1.5,
                     norm_topk_prob=False)
        else:
            c.update(q_lora_rank=16, n_shared_experts=1, n_group=4, topk_group=2,
                     topk_method="noaux_tc", scoring_func="sigmoid", norm_topk_prob=True,
                     routed_scaling_factor=2.5, rope_interleave=True)
    elif fam == "gpt_oss":
        c.update(head_dim=HD, intermediate_size=32, num_local_experts=4, num_experts_per_tok=2,
                 sliding_window=4, layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                 attention_bias=True, swiglu_limit=7.0, rope_theta=150000.0)
    elif fam == "phimoe":
        c.update(intermediate_size=24, num_local_experts=4, num_experts_per_tok=2, sliding_window=8,
                 router_jitter_noise=0.3, input_jitter_noise=0.0, attention_bias=True, lm_head_bias=True,
                 rms_norm_eps=1e-5, original_max_position_embeddings=16)
    elif fam == "jetmoe":  # configuration_jetmoe.py's keys: heads = kv heads x top-k, kv_channels wide
        del c["hidden_act"]
        c.update(kv_channels=6, num_attention_heads=KV * 2, intermediate_size=16, num_local_experts=4,
                 num_experts_per_tok=2, activation_function="silu", tie_word_embeddings=True,
                 rms_norm_eps=0.05, aux_loss_coef=0.01)  # the final norm's eps (the blocks': 1e-6)
    rope = DEFAULT_ROPE.get(fam) if rope is None else rope
    hd = c.get("qk_rope_head_dim") or c.get("head_dim") or c.get("kv_channels") or D // H
    c["rope_scaling"] = rope_scaling(rope, c["max_position_embeddings"], hd)
    if fam == "phimoe" and rope == "longrope":  # as Phi-3.5-MoE ships it
        c["rope_scaling"] = {"type": "longrope", "short_factor": [1.0, 1.1, 1.3, 1.6],
                             "long_factor": [1.0, 1.5, 2.5, 4.0], "short_mscale": 1.1, "long_mscale": 1.2}
    elif fam == "phimoe" and c["rope_scaling"]:  # PhiMoE scales cos, sin by these for any kind
        c["rope_scaling"].update(short_mscale=1.1, long_mscale=1.2)
    if fam == "gpt_oss" and rope == "yarn":  # as gpt-oss ships it: rope_type, truncate false
        c["rope_scaling"] = {"rope_type": "yarn", "factor": 8.0, "beta_fast": 32.0, "beta_slow": 1.0,
                             "original_max_position_embeddings": 16, "truncate": False}
    return c


class Maker:
    """Random tensors (name -> float32, already rounded to the file's dtype)."""

    def __init__(self, seed, dtype, mx=False):
        self.rng = np.random.default_rng(seed)
        self.dtype, self.mx = dtype, mx
        self.t = {}

    def rnd(self, x):
        return ff.bf16_round(x) if self.dtype == "BF16" else np.asarray(x, np.float32)

    def lin(self, name, nout, nin, gain=1.0, bias=False):
        self.t[name + ".weight"] = self.rnd(self.rng.standard_normal((nout, nin)) * gain / np.sqrt(nin))
        if bias:
            self.t[name + ".bias"] = self.rnd(self.rng.standard_normal(nout) * 0.3)

    def norm(self, name, n, bias=False):
        self.t[name + ".weight"] = self.rnd(1.0 + 0.2 * self.rng.standard_normal(n))
        if bias:
            self.vec(name + ".bias", (n,), 0.1)

    def vec(self, name, shape, std):
        self.t[name] = self.rnd(self.rng.standard_normal(shape) * std)


def attention(m, c, P):
    fam = c["model_type"]
    if fam == "jetmoe":  # k | v, and the mixture of attention experts (queries, output projections)
        hq, n = KV * c["kv_channels"], c["num_local_experts"]
        m.lin(P + "kv_proj", 2 * hq, D, 2.0)
        m.lin(P + "experts.router.layer", n, D, 3.0)
        m.vec(P + "experts.input_linear.weight", (n, hq, D), 2.0 / np.sqrt(D))
        m.vec(P + "experts.output_linear.weight", (n, D, hq), 1.0 / np.sqrt(hq))
        m.vec(P + "experts.bias", (D,), 0.3)
        return
    if fam.startswith("deepseek"):
        qk = c["qk_nope_head_dim"] + c["qk_rope_head_dim"]
        if c["q_lora_rank"]:
            m.lin(P + "q_a_proj", c["q_lora_rank"], D)
            m.norm(P + "q_a_layernorm", c["q_lora_rank"])
            m.lin(P + "q_b_proj", H * qk, c["q_lora_rank"], 2.0)
        else:
            m.lin(P + "q_proj", H * qk, D, 2.0)
        m.lin(P + "kv_a_proj_with_mqa", c["kv_lora_rank"] + c["qk_rope_head_dim"], D, 2.0)
        m.norm(P + "kv_a_layernorm", c["kv_lora_rank"])
        m.lin(P + "kv_b_proj", H * (c["qk_nope_head_dim"] + c["v_head_dim"]), c["kv_lora_rank"], 2.0)
        m.lin(P + "o_proj", D, H * c["v_head_dim"])
        return
    hd = c.get("head_dim") or D // H
    qkv_bias = c.get("qkv_bias", False) or c.get("attention_bias", False)
    m.lin(P + "q_proj", H * hd, D, 2.0, qkv_bias)
    m.lin(P + "k_proj", KV * hd, D, 2.0, qkv_bias)
    m.lin(P + "v_proj", KV * hd, D, 1.0, qkv_bias)
    m.lin(P + "o_proj", D, H * hd, 1.0, c.get("attention_bias", False))
    if fam == "qwen3_moe":
        m.norm(P + "q_norm", hd)
        m.norm(P + "k_norm", hd)
    elif fam == "olmoe":
        m.norm(P + "q_norm", H * hd)
        m.norm(P + "k_norm", KV * hd)
    elif fam == "gpt_oss":
        m.vec(P + "sinks", (H,), 1.0)


def moe_dims(c):
    """(n, h, shared width) of the family's MoE layers."""
    fam = c["model_type"]
    n = c.get("num_local_experts") or c.get("num_experts") or c.get("n_routed_experts")
    h = c.get("moe_intermediate_size") or c["intermediate_size"]
    hs = 0
    if fam == "qwen2_moe":
        hs = c["shared_expert_intermediate_size"]
    elif fam.startswith("deepseek"):
        hs = c["moe_intermediate_size"] * c["n_shared_experts"]
    return n, h, hs


def moe_layer(m, c):
    """Logical arrays of one MoE layer (family_fixtures' names), rounded to the dtype."""
    fam = c["model_type"]
    n, h, hs = moe_dims(c)
    r = lambda *s, g=1.0: m.rnd(m.rng.standard_normal(s) * g / np.sqrt(s[-1]))  # noqa: E731
    W = {"gate": r(n, D, g=3.0), "w1": r(n, h, D, g=1.5), "w3": r(n, h, D, g=1.5), "w2": r(n, D, h, g=1.5)}
    if fam == "gpt_oss":
        W["gate_b"] = m.rnd(m.rng.standard_normal(n) * 0.5)
        W["b1"], W["b3"] = m.rnd(m.rng.standard_normal((n, h)) * 0.3), m.rnd(m.rng.standard_normal((n, h)) * 0.3)
        W["b2"] = m.rnd(m.rng.standard_normal((n, D)) * 0.3)
        W["w1"] *= 2  # reach the clamps at 7 now and then
        if m.mx:  # MXFP4 experts: the codes are the truth, the logical arrays their values
            W["_gu_mx"], W["_dn_mx"] = ff.mx_random(m.rng, (n, 2 * h, D)), ff.mx_random(m.rng, (n, D, h))
            gu = ff.mx_decode(*W["_gu_mx"])
            W["w1"], W["w3"], W["w2"] = gu[:, 0::2].copy(), gu[:, 1::2].copy(), ff.mx_decode(*W["_dn_mx"])
    if fam == "deepseek_v3":
        W["corr"] = (m.rng.standard_normal(n) * 0.1).astype(np.float32)
    if fam == "jetmoe":
        W["out_b"] = m.rnd(m.rng.standard_normal(D) * 0.3)
    if hs:
        W["s1"], W["s3"], W["s2"] = r(hs, D, g=1.5), r(hs, D, g=1.5), r(D, hs, g=1.5)
    if fam == "qwen2_moe":
        W["sgate"] = r(1, D, g=2.0)
    return W


def scramble_layer(W, c, rng, dtype):
    """The same function: experts (whole groups for group-limited routers) and hidden
    units permuted, and for F32 softmax routers a common translation of the gate rows.
    Returns (W', order)."""
    fam = c["model_type"]
    n, h, hs = moe_dims(c)
    groups = 1
    if fam == "deepseek_v3" or c.get("topk_method") == "group_limited_greedy":
        groups = c["n_group"]
    order = ff.group_perm(rng, n, groups) if groups > 1 else rng.permutation(n)
    perms = [rng.permutation(h) for _ in range(n)] + ([rng.permutation(hs)] if hs else [])
    if "_gu_mx" in W:  # whole 32-unit blocks move, every code stays exact
        S = ff.scramble_mx(W, list(order), [rng.permutation(h // 32) for _ in range(n)])
    else:
        S = ff.scramble(W, list(order), perms)
    if dtype == "F32" and fam in SOFTMAX_ROUTED:
        S["gate"] = S["gate"] + rng.standard_normal(D).astype(np.float32)[None, :]
    return S, [int(e) for e in order]


def build(fam, seed, dtype, rope=None, scramble=False, mx=False):
    """(config, [(name, dtype, shape, bytes)], scramble orders or None)"""
    c = config(fam, rope)
    if dtype == "BF16":
        c["torch_dtype"] = "bfloat16"
    m = Maker(seed, dtype, mx and fam == "gpt_oss")
    m.vec("model.embed_tokens.weight", (V, D), 1.0)
    moe, orders = {}, {}
    srng = np.random.default_rng(seed + 7777)
    for i in range(L):
        P = "model.layers.%d." % i
        m.norm(P + "input_layernorm", D, fam == "phimoe")
        m.norm(P + "post_attention_layernorm", D, fam == "phimoe")
        attention(m, c, P + ("self_attention." if fam == "jetmoe" else "self_attn."))
        if decoder_ref.is_moe(c, i):
            moe[i] = moe_layer(m, c)
            if scramble:
                moe[i], orders[i] = scramble_layer(moe[i], c, srng, dtype)
        else:
            for nm, no, ni in (("gate_proj", c["intermediate_size"], D), ("up_proj", c["intermediate_size"], D),
                               ("down_proj", D, c["intermediate_size"])):
                m.lin(P + "mlp." + nm, no, ni, 1.5)
    m.norm("model.norm", D, fam == "phimoe")
    if not c["tie_word_embeddings"]:
        m.lin("lm_head", V, D, 4.0, c.get("lm_head_bias", False))
    out = [(k, dtype, v.shape, ff.encode(v, dtype)) for k, v in m.t.items()]
    for i, W in moe.items():
        out += ff.hf_tensors("mixtral" if fam == "phimoe" else fam, W, L=i, dtype=dtype)  # Mixtral's names
    out.sort(key=lambda e: e[0])
    return c, out, (orders if scramble else None)


def write_model(folder, c, tensors, shards=1):
    """config.json and model.safetensors, or shards with model.safetensors.index.json."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f, indent=2)
    if shards <= 1:
        ff.write_safetensors(os.path.join(folder, "model.safetensors"), tensors)
        return
    names = ["model-%05d-of-%05d.safetensors" % (i + 1, shards) for i in range(shards)]
    parts = np.array_split(np.arange(len(tensors)), shards)
    wm, total = {}, 0
    for nm, part in zip(names, parts):
        ts = [tensors[j] for j in part]
        ff.write_safetensors(os.path.join(folder, nm), ts)
        for t in ts:
            wm[t[0]] = nm
            total += len(t[3])
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)


def sample_ids(folder, seed, N, T):
    """Sequences the model itself samples (temperature 1) from a random first token."""
    c, t = decoder_ref.load(folder)
    try:
        decoder_ref.inv_freq(c, 2, T)
    except ValueError:  # a rope_scaling kind the oracle refuses (a refusal fixture)
        c = dict(c, rope_scaling=None)
    rng = np.random.default_rng(seed + 4242)
    ids = np.zeros((N, T), np.int64)
    ids[:, 0] = rng.integers(0, c["vocab_size"], N)
    for j in range(1, T):
        lg = decoder_ref.forward(c, t, ids[:, :j])[:, -1]
        p = np.exp(lg - lg.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        ids[:, j] = [rng.choice(len(q), p=q) for q in p]
    return ids


def write_eval(path, ids):
    ids = np.ascontiguousarray(ids, np.int64)
    ff.write_safetensors(path, [("input_ids", "I64", ids.shape, ids.tobytes())])


def generate(fam, out, dtype="F32", shards=1, seed=1, scramble=False, rope=None, N=4, T=12, mxfp4=False):
    """Write the model (and, unscrambled, sample its evaluation set) into out."""
    c, tensors, orders = build(fam, seed, dtype, rope, scramble, mxfp4)
    write_model(out, c, tensors, shards)
    if scramble:
        with open(os.path.join(out, "scramble.json"), "w") as f:
            json.dump({str(k): v for k, v in orders.items()}, f)
        c0, t0, _ = build(fam, seed, dtype, rope, False, mxfp4)
        tmp = out + ".plain"
        write_model(tmp, c0, t0)
        write_eval(os.path.join(out, "eval.safetensors"), sample_ids(tmp, seed, N, T))
        for nm in os.listdir(tmp):
            os.remove(os.path.join(tmp, nm))
        os.rmdir(tmp)
    else:
        write_eval(os.path.join(out, "eval.safetensors"), sample_ids(out, seed, N, T))
    return c


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--family", required=True, choices=FAMILIES)
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--shards", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scramble", action="store_true")
    ap.add_argument("--rope-scaling", default=None, help="none, linear, dynamic, yarn or any other kind")
    ap.add_argument("--mxfp4", action="store_true", help="gpt_oss: the experts as MXFP4 blocks and scales")
    ap.add_argument("--N", type=int, default=4)
    ap.add_argument("--T", type=int, default=12)
    a = ap.parse_args(argv)
    generate(a.family, a.out, a.dtype.upper(), a.shards, a.seed, a.scramble, a.rope_scaling, a.N, a.T, a.mxfp4)


if __name__ == "__main__":
    main()
