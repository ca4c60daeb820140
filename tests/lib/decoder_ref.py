"""tests/lib/decoder_ref.py - an independent float64 numpy forward of the Hugging Face MoE
decoder families, written from transformers' modelling code
(src/transformers/models/<family>/modeling_<family>.py and modular_<family>.py,
modeling_rope_utils.py, masking_utils.py), not from moescope's.

    python3 tests/lib/decoder_ref.py DIR [--eval E] [--logits OUT.npy]

prints the mean next-token cross-entropy over N*(T-1) positions and the top-1 accuracy
of the checkpoint folder DIR (config.json + model.safetensors or shards) on E's
input_ids [N,T] (default DIR/eval.safetensors).

The details each family's code fixes (and this follows):
  - RMSNorm w * x / sqrt(mean(x^2) + eps) (MLA's inner q_a/kv_a norms: eps 1e-6);
  - grouped-query attention: kv head j serves query heads j*rep .. j*rep+rep-1
    (repeat_kv = repeat_interleave); causal; scale head_dim^-0.5 (Granite:
    attention_multiplier; DeepSeek: (nope+rope)^-0.5, V3 times yarn's mscale^2);
  - RoPE as rotate_half (dim i pairs with i + r/2); DeepSeek-V3 with rope_interleave
    first takes the even then the odd dims; DeepSeek-V2 rotates adjacent pairs as
    complex numbers; rope_scaling none/default, linear, dynamic (at T <= max positions
    the plain frequencies), yarn (beta_fast/slow, truncate, mscale/mscale_all_dim),
    llama3, longrope (short factors at T <= original); any other kind refused;
  - Qwen3-MoE q/k RMSNorm per head before RoPE; OLMoE over the whole q/k projection
    (then clip_qkv); Qwen2-MoE q/k/v biases; GPT-OSS biases everywhere, a sink logit
    per head joining each row's softmax, and sliding layers (layer_types) where query i
    sees keys i - window < j <= i; Mixtral a window on every layer when sliding_window;
    Qwen only with use_sliding_window: Qwen3-MoE every layer, Qwen2-MoE the layers
    layer_types names (absent: even layers below max_window_layers, its config's rule);
  - the MoE blocks are tests/oracle/family_ref.py's (routers, shared experts and gates);
    dense layers by Qwen's mlp_only_layers/decoder_sparse_step and DeepSeek's
    first_k_dense_replace;
  - Granite: embeddings x embedding_multiplier, both branches x residual_multiplier,
    logits / logits_scaling; a tied head is the embedding;
  - JetMoE (modeling_jetmoe.py): the blocks' RMSNorms eps 1e-6 (JetMoeRMSNorm's default),
    the final norm's rms_norm_eps; attention = JetMoeMoA: top num_experts_per_tok of the
    router's logits, softmax over them; slot s's queries (num_key_value_heads heads of
    kv_channels) from its expert's input_linear; k | v = kv_proj chunked; rotary on q,
    k; k, v repeated by tiling (key_states.repeat(1, top_k, 1, 1): query head s*nkv + j
    reads kv head j); scale kv_channels^-0.5; each slot through its expert's
    output_linear times its gate, summed, plus experts.bias; tied head by default.
"""
import argparse
import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(os.path.dirname(HERE), "oracle")]
import family_fixtures as ff  # noqa: E402
import family_ref  # noqa: E402

FAMILIES = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "deepseek_v2",
            "deepseek_v3", "gpt_oss", "phimoe", "jetmoe"]


# ---------------------------------------------------------------- files

def read_tensors(path):
    """name -> float64 array of one safetensors file (F32/BF16/F16/F64, I32/I64 as ints,
    U8 kept as uint8 for MXFP4 blocks/scales)."""
    raw, _ = ff.read_safetensors(path)
    out = {}
    for k, (dt, shape, b) in raw.items():
        if dt in ("F32", "BF16", "F16"):
            out[k] = ff.to_float(dt, shape, b).astype(np.float64)
        elif dt == "F64":
            out[k] = np.frombuffer(b, np.float64).reshape(shape)
        elif dt in ("I64", "I32", "U8"):
            out[k] = np.frombuffer(b, {"I64": np.int64, "I32": np.int32, "U8": np.uint8}[dt]).reshape(shape)
        else:
            raise ValueError("%s: tensor %s: dtype %s not read" % (path, k, dt))
    return out


def load(folder):
    """(config, name -> array) of a checkpoint folder; MXFP4 experts decoded."""
    with open(os.path.join(folder, "config.json")) as f:
        c = json.load(f)
    idx = os.path.join(folder, "model.safetensors.index.json")
    t = {}
    if os.path.exists(idx):
        with open(idx) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                t.update(read_tensors(os.path.join(folder, shard)))
    else:
        t = read_tensors(os.path.join(folder, "model.safetensors"))
    for k in [k for k in t if k.endswith("_blocks")]:
        base = k[:-len("_blocks")]
        w = ff.mx_decode(t.pop(k), t.pop(base + "_scales")).astype(np.float64)  # [n, out, in]
        t[base] = w.transpose(0, 2, 1).copy()  # the BF16 layout [n, in, out]
    return c, t


# ---------------------------------------------------------------- pieces

def rms_norm(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))


def norm(c, t, name, x):
    """The decoder's norms: RMSNorm, PhiMoE's LayerNorm with bias (eps rms_norm_eps;
    JetMoE's block norms JetMoeRMSNorm(hidden_size): eps 1e-6)."""
    eps = c["rms_norm_eps"]
    if c["model_type"] == "jetmoe" and name != "model.norm":
        eps = 1e-6
    if c["model_type"] != "phimoe":
        return rms_norm(x, t[name + ".weight"], eps)
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * t[name + ".weight"] + t[name + ".bias"]


def linear(t, name, x):
    y = x @ t[name + ".weight"].T
    b = t.get(name + ".bias")
    return y if b is None else y + b


def rope_params(c):
    """(kind, params dict) from rope_scaling (legacy) or rope_parameters (v5)."""
    p = c.get("rope_scaling") or c.get("rope_parameters") or {}
    kind = p.get("rope_type", p.get("type")) or "default"
    return kind, p


def inv_freq(c, dim, T):
    """The rotary frequencies (dim/2,) and the attention factor for cos/sin."""
    kind, p = rope_params(c)
    base = float(p.get("rope_theta", c.get("rope_theta", 10000.0)))
    f = 1.0 / base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    maxpos = c.get("max_position_embeddings")
    if kind == "default":
        return f, 1.0
    if kind == "linear":
        return f / p["factor"], 1.0
    if kind == "dynamic":
        if T > maxpos:
            raise ValueError("dynamic rope past max_position_embeddings is not modelled")
        return f, 1.0
    if kind == "yarn":
        return yarn(c, p, base, dim)
    if kind == "llama3":
        factor, lo, hi = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
        old = p["original_max_position_embeddings"]
        wl = 2 * math.pi / f
        g = np.where(wl > old / lo, f / factor, f)
        s = (old / wl - lo) / (hi - lo)
        mid = ~(wl < old / hi) & ~(wl > old / lo)
        return np.where(mid, (1 - s) * g / factor + s * g, g), 1.0
    if kind == "longrope":
        orig = p.get("original_max_position_embeddings") or c.get("original_max_position_embeddings")
        factor = p.get("factor") or maxpos / orig
        att = p.get("attention_factor")
        if att is None:
            att = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(orig))
        ext = np.asarray(p["long_factor"] if T > orig else p["short_factor"], np.float64)
        return f / ext, att
    raise ValueError("rope_scaling kind %r not implemented" % kind)


def yarn_mscale(scale, m=1.0):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def yarn(c, p, base, dim):
    factor = p.get("factor")
    orig = p.get("original_max_position_embeddings") or c["max_position_embeddings"]
    if factor is None:
        factor = c["max_position_embeddings"] / orig
    att, ms, msa = p.get("attention_factor"), p.get("mscale"), p.get("mscale_all_dim")
    if att is None:
        att = yarn_mscale(factor, ms) / yarn_mscale(factor, msa) if ms and msa else yarn_mscale(factor)
    bf, bs = p.get("beta_fast") or 32, p.get("beta_slow") or 1

    def corr_dim(rot):
        return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
    lo, hi = corr_dim(bf), corr_dim(bs)
    if p.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(dim // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
    pos = base ** (np.arange(0, dim, 2, dtype=np.float64) / dim)
    extra = 1 - ramp
    return (1 / (factor * pos)) * (1 - extra) + (1 / pos) * extra, float(att)


def cos_sin(c, dim, T):
    """cos, sin [T, dim] for rotate_half (frequencies repeated), times the factor."""
    f, att = inv_freq(c, dim, T)
    kind, p = rope_params(c)
    if c["model_type"] == "phimoe" and kind != "default":  # PhimoeRotaryEmbedding's mscale
        orig = p.get("original_max_position_embeddings") or c["original_max_position_embeddings"]
        att = p["long_mscale"] if T > orig else p["short_mscale"]
    fr = np.arange(T, dtype=np.float64)[:, None] * f[None, :]
    emb = np.concatenate([fr, fr], -1)
    return np.cos(emb) * att, np.sin(emb) * att


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], -1)


def rope(x, cs):
    """x [..., T, r]: transformers' apply_rotary_pos_emb."""
    cos, sin = cs
    return x * cos + rotate_half(x) * sin


def rope_complex(x, c, T):
    """DeepSeek-V2: adjacent pairs (x[2i], x[2i+1]) as complex numbers times e^(i pos f)."""
    f, att = inv_freq(c, x.shape[-1], T)
    ang = np.arange(T, dtype=np.float64)[:, None] * f[None, :]
    re, im = x[..., 0::2], x[..., 1::2]
    cs, sn = np.cos(ang) * att, np.sin(ang) * att
    out = np.empty_like(x)
    out[..., 0::2] = re * cs - im * sn
    out[..., 1::2] = re * sn + im * cs
    return out


def attend(q, k, v, scale, window=None, sinks=None):
    """q [N,H,T,e], k [N,KV,T,e], v [N,KV,T,ev] -> [N,T,H*ev]; kv heads repeated by
    interleaving; causal, optionally a sliding window and per-head sink logits."""
    Hq, KVh = q.shape[1], k.shape[1]
    if Hq % KVh:
        raise ValueError("num_attention_heads %d not a multiple of num_key_value_heads %d" % (Hq, KVh))
    k, v = np.repeat(k, Hq // KVh, axis=1), np.repeat(v, Hq // KVh, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) * scale
    T = q.shape[2]
    i, j = np.arange(T)[:, None], np.arange(T)[None, :]
    visible = j <= i
    if window:
        visible &= j > i - window
    s = np.where(visible, s, -np.inf)
    if sinks is not None:
        sk = np.broadcast_to(sinks[None, :, None, None], s.shape[:3] + (1,))
        s = np.concatenate([s, sk], -1)
    s = s - s.max(-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(-1, keepdims=True)
    if sinks is not None:
        p = p[..., :-1]
    o = p @ v
    N = q.shape[0]
    return o.transpose(0, 2, 1, 3).reshape(N, T, -1)


def heads(x, n, e):
    """[N,T,n*e] -> [N,n,T,e]"""
    N, T = x.shape[:2]
    return x.reshape(N, T, n, e).transpose(0, 2, 1, 3)


def window_of(c, i):
    fam = c["model_type"]
    if fam == "gpt_oss":
        types = c.get("layer_types") or ["sliding_attention" if (j + 1) % 2 else "full_attention"
                                         for j in range(c["num_hidden_layers"])]
        return c["sliding_window"] if types[i] == "sliding_attention" else None
    if fam == "qwen3_moe":  # Qwen3MoeConfig: sliding_window if use_sliding_window else None
        return c.get("sliding_window", 4096) if c.get("use_sliding_window") else None
    if fam == "qwen2_moe":  # Qwen2MoeConfig.__post_init__, then the layer's layer_types entry
        use = c.get("use_sliding_window", False)
        types = c.get("layer_types") or ["sliding_attention" if (j + 1) % 2 and j < c.get("max_window_layers", 28)
                                         and use else "full_attention" for j in range(c["num_hidden_layers"])]
        if types[i] != "sliding_attention":
            return None
        if not use:
            raise ValueError("layer_types names a sliding layer but use_sliding_window is false (window 0)")
        return c.get("sliding_window", 4096)
    if fam in ("mixtral", "phimoe"):
        return c.get("sliding_window")
    return None


def self_attention(c, t, P, x, i):
    """The attention branch of layer i (prefix P = model.layers.i.self_attn.)."""
    fam = c["model_type"]
    N, T, d = x.shape
    if fam.startswith("deepseek"):
        return mla(c, t, P, x)
    if fam == "jetmoe":
        return moa(c, t, P, x)
    nh, kvh = c["num_attention_heads"], c.get("num_key_value_heads") or c["num_attention_heads"]
    if d % nh and not c.get("head_dim"):
        raise ValueError("hidden_size %d not a multiple of num_attention_heads %d" % (d, nh))
    if nh % kvh:
        raise ValueError("config.json: num_attention_heads %d is not a multiple of num_key_value_heads %d"
                         % (nh, kvh))
    hd = c.get("head_dim") or d // nh
    q, k, v = linear(t, P + "q_proj", x), linear(t, P + "k_proj", x), linear(t, P + "v_proj", x)
    eps = c["rms_norm_eps"]
    if fam == "olmoe":
        q, k = rms_norm(q, t[P + "q_norm.weight"], eps), rms_norm(k, t[P + "k_norm.weight"], eps)
        if c.get("clip_qkv") is not None:
            q, k, v = (np.clip(a, -c["clip_qkv"], c["clip_qkv"]) for a in (q, k, v))
    q, k, v = heads(q, nh, hd), heads(k, kvh, hd), heads(v, kvh, hd)
    if fam == "qwen3_moe":
        q, k = rms_norm(q, t[P + "q_norm.weight"], eps), rms_norm(k, t[P + "k_norm.weight"], eps)
    cs = cos_sin(c, hd, T)
    q, k = rope(q, cs), rope(k, cs)
    scale = c["attention_multiplier"] if fam == "granitemoe" else hd ** -0.5
    o = attend(q, k, v, scale, window_of(c, i), t.get(P + "sinks"))
    return linear(t, P + "o_proj", o)


def moa(c, t, P, x):
    """JetMoE's attention (P = model.layers.i.self_attention.): JetMoeAttention with
    JetMoeMoA's map and reduce."""
    N, T, d = x.shape
    nkv, hd = c.get("num_key_value_heads", 16), c.get("kv_channels", 128)
    k, n = c.get("num_experts_per_tok", 2), c.get("num_local_experts", 8)
    nh, hq = nkv * k, nkv * hd
    if c.get("num_attention_heads", nh) != nh:
        raise ValueError("config.json: num_attention_heads %d is not num_key_value_heads %d x num_experts_per_tok %d"
                         % (c["num_attention_heads"], nkv, k))
    X = x.reshape(N * T, d)
    idx, w = family_ref._logits_topk_softmax(X @ t[P + "experts.router.layer.weight"].T, k)
    Win, Wout = t[P + "experts.input_linear.weight"], t[P + "experts.output_linear.weight"]
    q = np.stack([np.einsum("rd,rhd->rh", X, Win[idx[:, s]]) for s in range(k)], 1)  # [NT, k, hq]
    kv = X @ t[P + "kv_proj.weight"].T
    q = heads(q.reshape(N, T, k * hq), nh, hd)  # head s*nkv + j: slot s's j-th
    kk, v = heads(kv[:, :hq].reshape(N, T, hq), nkv, hd), heads(kv[:, hq:].reshape(N, T, hq), nkv, hd)
    cs = cos_sin(c, hd, T)
    q, kk = rope(q, cs), rope(kk, cs)
    kk, v = np.tile(kk, (1, k, 1, 1)), np.tile(v, (1, k, 1, 1))  # repeat, not repeat_interleave
    o = attend(q, kk, v, hd ** -0.5).reshape(N * T, k, hq)
    out = sum(w[:, s, None] * np.einsum("rh,rdh->rd", o[:, s], Wout[idx[:, s]]) for s in range(k))
    return (out + t[P + "experts.bias"]).reshape(N, T, d)


def mla(c, t, P, x):
    """DeepSeek multi-head latent attention."""
    N, T, d = x.shape
    nh, nope, rp, vd = c["num_attention_heads"], c["qk_nope_head_dim"], c["qk_rope_head_dim"], c["v_head_dim"]
    if c.get("q_lora_rank"):
        q = linear(t, P + "q_b_proj", rms_norm(linear(t, P + "q_a_proj", x), t[P + "q_a_layernorm.weight"], 1e-6))
    else:
        q = linear(t, P + "q_proj", x)
    q = heads(q, nh, nope + rp)
    q_pass, q_rot = q[..., :nope], q[..., nope:]
    ckv = linear(t, P + "kv_a_proj_with_mqa", x)
    k_pass, k_rot = ckv[..., :c["kv_lora_rank"]], ckv[..., c["kv_lora_rank"]:]
    kv = heads(linear(t, P + "kv_b_proj", rms_norm(k_pass, t[P + "kv_a_layernorm.weight"], 1e-6)), nh, nope + vd)
    k_pass, v = kv[..., :nope], kv[..., nope:]
    k_rot = k_rot[:, None]  # [N,1,T,rp]: one rope key shared by all heads
    scale = (nope + rp) ** -0.5
    if c["model_type"] == "deepseek_v3":
        if c.get("rope_interleave", True):
            perm = np.concatenate([np.arange(0, rp, 2), np.arange(1, rp, 2)])
            q_rot, k_rot = q_rot[..., perm], k_rot[..., perm]
        cs = cos_sin(c, rp, T)
        q_rot, k_rot = rope(q_rot, cs), rope(k_rot, cs)
        kind, p = rope_params(c)
        if kind != "default" and p.get("mscale_all_dim"):
            m = yarn_mscale(p["factor"], p["mscale_all_dim"])
            scale *= m * m
    else:
        q_rot, k_rot = rope_complex(q_rot, c, T), rope_complex(k_rot, c, T)
    k_rot = np.broadcast_to(k_rot, k_pass.shape[:-1] + (rp,))
    qs = np.concatenate([q_pass, q_rot], -1)
    ks = np.concatenate([k_pass, k_rot], -1)
    return linear(t, P + "o_proj", attend(qs, ks, v, scale))


def is_moe(c, i):
    fam = c["model_type"]
    if fam in ("qwen2_moe", "qwen3_moe"):
        return (i not in (c.get("mlp_only_layers") or []) and (c.get("num_experts") or 0) > 0
                and (i + 1) % c.get("decoder_sparse_step", 1) == 0)
    if fam in ("deepseek_v2", "deepseek_v3"):
        return i >= c.get("first_k_dense_replace", 0)
    return True


def moe_prefix(c, i):
    bsm = c["model_type"] in ("mixtral", "granitemoe", "phimoe")
    return "model.layers.%d.%s." % (i, "block_sparse_moe" if bsm else "mlp")


def ffn(c, t, i, x, moe=None):
    """The feed-forward branch of layer i on x [N,T,d]; moe(c, t, prefix, X) replaces
    family_ref's block when given (the self-checks)."""
    N, T, d = x.shape
    X = x.reshape(N * T, d)
    if is_moe(c, i):
        P = moe_prefix(c, i)
        y = moe(c, t, P, X) if moe else family_ref.forward(c["model_type"], block_tensors(t, P), c, P, X)
    else:
        y = family_ref.swiglu_mlp(t, "model.layers.%d.mlp." % i, X)
    return y.reshape(N, T, d)


def block_tensors(t, P):
    return {k: v for k, v in t.items() if k.startswith(P)}


def check_config(c, ids):
    fam = c.get("model_type")
    if fam not in FAMILIES:
        raise ValueError("config.json: model_type %r is not a decoder family (known: %s)" % (fam, ", ".join(FAMILIES)))
    if ids.max() >= c["vocab_size"] or ids.min() < 0:
        raise ValueError("input_ids: a token id outside 0..vocab_size-1 (%d)" % c["vocab_size"])
    if ids.shape[1] > c["max_position_embeddings"]:
        raise ValueError("input_ids: T %d > max_position_embeddings" % ids.shape[1])
    inv_freq(c, 2, ids.shape[1])  # refuses an unknown rope_scaling kind


def forward(c, t, ids, moe=None):
    """logits [N,T,V] of input_ids [N,T]."""
    check_config(c, ids)
    fam = c["model_type"]
    gran = fam == "granitemoe"
    E = t["model.embed_tokens.weight"]
    h = E[ids]
    if gran:
        h = h * c["embedding_multiplier"]
    rm = c["residual_multiplier"] if gran else 1.0
    for i in range(c["num_hidden_layers"]):
        P = "model.layers.%d." % i
        att = P + ("self_attention." if fam == "jetmoe" else "self_attn.")
        h = h + rm * self_attention(c, t, att, norm(c, t, P + "input_layernorm", h), i)
        h = h + rm * ffn(c, t, i, norm(c, t, P + "post_attention_layernorm", h), moe)
    h = norm(c, t, "model.norm", h)
    tied = c.get("tie_word_embeddings", fam == "jetmoe")  # JetMoeConfig's default: true
    W = E if tied else t["lm_head.weight"]
    logits = h @ W.T
    if t.get("lm_head.bias") is not None and not tied:
        logits = logits + t["lm_head.bias"]
    return logits / c["logits_scaling"] if gran else logits


def loss_accuracy(logits, ids):
    """Mean next-token cross-entropy and top-1 accuracy over N*(T-1) positions."""
    lg = logits[:, :-1]
    y = ids[:, 1:]
    m = lg.max(-1, keepdims=True)
    lse = (m[..., 0] + np.log(np.exp(lg - m).sum(-1)))
    nll = lse - np.take_along_axis(lg, y[..., None], -1)[..., 0]
    return float(nll.mean()), float((lg.argmax(-1) == y).mean())


def evaluate(folder, evalset=None):
    """(loss, accuracy, logits) of a checkpoint folder on its evaluation set."""
    c, t = load(folder)
    ids = read_tensors(evalset or os.path.join(folder, "eval.safetensors"))["input_ids"].astype(np.int64)
    logits = forward(c, t, ids)
    return loss_accuracy(logits, ids) + (logits,)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--eval")
    ap.add_argument("--logits")
    a = ap.parse_args(argv)
    try:
        loss, acc, logits = evaluate(a.dir, a.eval)
    except (ValueError, KeyError, OSError) as e:
        sys.exit("decoder_ref: %s: %s" % (a.dir, e))
    print("loss %.10f" % loss)
    print("accuracy %.10f" % acc)
    if a.logits:
        np.save(a.logits, logits)


if __name__ == "__main__":
    main()
