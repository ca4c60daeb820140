"""tests/oracle/test_decoder_networks.py - the Hugging Face MoE decoders as networks:
moescope's next-token loss against a short numpy float64 forward written here from
transformers' modeling_<family>.py (RMSNorm; q/k/v projections with Qwen2-MoE's biases;
OLMoE's q/k RMSNorms over the whole projection and clip_qkv, Qwen3-MoE's per head;
rotate_half rotary embeddings; grouped-query heads repeated by interleaving; Mixtral's
sliding window; Granite's embedding, residual and attention multipliers and logits
scaling, tied head; Qwen's mlp_only_layers and decoder_sparse_step dense blocks; the MoE
blocks by tests/oracle/family_ref.py), on tiny random models of mixtral, qwen2_moe,
qwen3_moe, olmoe and granitemoe (three blocks each):
  - `eval --json` loss within 1e-5 relative of numpy's;
  - a scramble of every MoE block computes the same loss, and the aligned curve's
    barrier is ~0;
  - rope_scaling yarn (Qwen, GPT-OSS untruncated, DeepSeek's mscales), llama3, linear
    and dynamic against numpy's transformation of the frequencies;
  - refusals naming the file and the key: an unknown model_type, a rope_scaling kind
    not implemented (longrope), key/value heads that do not divide the heads, a missing tensor,
    token ids >= vocab_size, T > max_position_embeddings.
"""
import json
import os
import sys
import tempfile

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import family_ref  # noqa: E402
import testutil  # noqa: E402
from family_fixtures import write_safetensors  # noqa: E402
from testutil import check, expect_error, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_decoders_")
FAMILIES = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "granitemoe", "deepseek_v2", "deepseek_v3", "gpt_oss"]
MLA = dict(kv_lora_rank=6, qk_nope_head_dim=4, qk_rope_head_dim=4, v_head_dim=5)


def gen(fam, out, seed=0, extra=None, seq=9):
    rng = np.random.default_rng(seed)
    d, nh, nkv, hd, V, P, NL, n, h, ff = 16, 4, 2, 6, 23, 32, 3, 4, 8, 12
    if fam == "olmoe": hd = d // nh
    cfg = dict(model_type=fam, hidden_size=d, num_attention_heads=nh, num_key_value_heads=nkv,
               head_dim=hd, vocab_size=V, max_position_embeddings=P, num_hidden_layers=NL,
               intermediate_size=ff, rms_norm_eps=1e-6, rope_theta=10000.0, hidden_act="silu",
               num_experts_per_tok=2, tie_word_embeddings=False)
    if fam == "olmoe": del cfg["head_dim"]
    if fam in ("mixtral", "granitemoe", "gpt_oss"): cfg["num_local_experts"] = n
    else: cfg["num_experts"] = n; cfg["moe_intermediate_size"] = h
    if fam == "qwen2_moe": cfg.update(shared_expert_intermediate_size=10, mlp_only_layers=[1], norm_topk_prob=False)
    if fam == "qwen3_moe": cfg.update(decoder_sparse_step=2, norm_topk_prob=True)
    if fam == "granitemoe": cfg.update(embedding_multiplier=1.7, residual_multiplier=0.6, attention_multiplier=0.3,
                                       logits_scaling=2.5, tie_word_embeddings=True)
    if fam == "mixtral": cfg.update(sliding_window=5)
    if fam == "olmoe": cfg.update(clip_qkv=1.2)
    if fam.startswith("deepseek"):
        del cfg["num_experts"], cfg["head_dim"]
        cfg.update(MLA, n_routed_experts=n, n_shared_experts=2, first_k_dense_replace=1,
                   q_lora_rank=None if fam == "deepseek_v2" else 7)
    if fam == "deepseek_v3": cfg.update(n_group=2, topk_group=1, norm_topk_prob=True, routed_scaling_factor=2.5)
    if fam == "deepseek_v2": cfg.update(routed_scaling_factor=1.5)
    if fam == "gpt_oss":
        cfg.update(sliding_window=4, attention_bias=True, swiglu_limit=7.0, rms_norm_eps=1e-5,
                   layer_types=["sliding_attention", "full_attention", "sliding_attention"])
    cfg.update(extra or {})
    T = {}
    def add(name, *shape, s=0.3, mean=0.0):
        T[name] = (mean + s * rng.standard_normal(shape)).astype(np.float32)
    add("model.embed_tokens.weight", V, d, s=1.0)
    for L in range(NL):
        p = f"model.layers.{L}."
        add(p + "input_layernorm.weight", d, s=0.1, mean=1)
        add(p + "post_attention_layernorm.weight", d, s=0.1, mean=1)
        if fam.startswith("deepseek"):
            mla_tensors(cfg, add, p)
        else:
            add(p + "self_attn.q_proj.weight", nh * hd, d, s=0.5)
            add(p + "self_attn.k_proj.weight", nkv * hd, d, s=0.5)
            add(p + "self_attn.v_proj.weight", nkv * hd, d)
            add(p + "self_attn.o_proj.weight", d, nh * hd)
        if fam in ("qwen2_moe", "gpt_oss"):
            add(p + "self_attn.q_proj.bias", nh * hd); add(p + "self_attn.k_proj.bias", nkv * hd); add(p + "self_attn.v_proj.bias", nkv * hd)
        if fam == "gpt_oss":
            add(p + "self_attn.o_proj.bias", d); add(p + "self_attn.sinks", nh, s=1.0)
        if fam == "qwen3_moe":
            add(p + "self_attn.q_norm.weight", hd, s=0.1, mean=1); add(p + "self_attn.k_norm.weight", hd, s=0.1, mean=1)
        if fam == "olmoe":
            add(p + "self_attn.q_norm.weight", nh * hd, s=0.1, mean=1); add(p + "self_attn.k_norm.weight", nkv * hd, s=0.1, mean=1)
        sparse = moe_layer(cfg, L)
        if not sparse:
            add(p + "mlp.gate_proj.weight", ff, d); add(p + "mlp.up_proj.weight", ff, d); add(p + "mlp.down_proj.weight", d, ff)
            continue
        if fam == "mixtral":
            m = p + "block_sparse_moe."
            add(m + "gate.weight", n, d)
            for e in range(n):
                add(m + f"experts.{e}.w1.weight", h, d); add(m + f"experts.{e}.w3.weight", h, d); add(m + f"experts.{e}.w2.weight", d, h)
        elif fam == "gpt_oss":
            m = p + "mlp."
            add(m + "router.weight", n, d); add(m + "router.bias", n, s=0.1)
            add(m + "experts.gate_up_proj", n, d, 2 * h); add(m + "experts.gate_up_proj_bias", n, 2 * h, s=0.1)
            add(m + "experts.down_proj", n, h, d); add(m + "experts.down_proj_bias", n, d, s=0.1)
        elif fam == "granitemoe":
            m = p + "block_sparse_moe."
            add(m + "router.layer.weight", n, d)
            add(m + "input_linear.weight", n, 2 * h, d); add(m + "output_linear.weight", n, d, h)
        else:
            m = p + "mlp."
            add(m + "gate.weight", n, d)
            for e in range(n):
                add(m + f"experts.{e}.gate_proj.weight", h, d); add(m + f"experts.{e}.up_proj.weight", h, d); add(m + f"experts.{e}.down_proj.weight", d, h)
            if fam == "deepseek_v3":
                add(m + "gate.e_score_correction_bias", n, s=0.1)
            if fam.startswith("deepseek"):
                hs = h * cfg["n_shared_experts"]
                add(m + "shared_experts.gate_proj.weight", hs, d); add(m + "shared_experts.up_proj.weight", hs, d)
                add(m + "shared_experts.down_proj.weight", d, hs)
            if fam == "qwen2_moe":
                hs = cfg["shared_expert_intermediate_size"]
                add(m + "shared_expert.gate_proj.weight", hs, d); add(m + "shared_expert.up_proj.weight", hs, d)
                add(m + "shared_expert.down_proj.weight", d, hs); add(m + "shared_expert_gate.weight", 1, d)
    add("model.norm.weight", d, s=0.1, mean=1)
    if not cfg["tie_word_embeddings"]: add("lm_head.weight", V, d)
    os.makedirs(out, exist_ok=True)
    json.dump(cfg, open(f"{out}/config.json", "w"))
    write_safetensors(f"{out}/model.safetensors", [(k, "F32", v.shape, v.tobytes()) for k, v in T.items()])
    ids = rng.integers(0, V, size=(3, seq)).astype(np.int64)
    write_safetensors(f"{out}/eval.safetensors", [("input_ids", "I64", ids.shape, ids.tobytes())])
    return cfg, T, ids

def mla_tensors(cfg, add, p):
    """DeepSeek's latent attention: q_a/q_b (or q_proj), kv_a_proj_with_mqa, kv_b, o"""
    d, nh, ql = cfg["hidden_size"], cfg["num_attention_heads"], cfg["q_lora_rank"]
    kl, nope, rope, vd = (cfg[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if ql:
        add(p + "self_attn.q_a_proj.weight", ql, d, s=0.5)
        add(p + "self_attn.q_a_layernorm.weight", ql, s=0.1, mean=1)
        add(p + "self_attn.q_b_proj.weight", nh * (nope + rope), ql, s=0.5)
    else:
        add(p + "self_attn.q_proj.weight", nh * (nope + rope), d, s=0.5)
    add(p + "self_attn.kv_a_proj_with_mqa.weight", kl + rope, d, s=0.5)
    add(p + "self_attn.kv_a_layernorm.weight", kl, s=0.1, mean=1)
    add(p + "self_attn.kv_b_proj.weight", nh * (nope + vd), kl, s=0.5)
    add(p + "self_attn.o_proj.weight", d, nh * vd)


def mla_qkv(cfg, t, p, hN, pos):
    """q (nh, T, nope + rope), k (same), v (nh, T, vd) of DeepSeek's attention"""
    Tn, nh, ql = hN.shape[0], cfg["num_attention_heads"], cfg["q_lora_rank"]
    kl, nope, rope, vd = (cfg[k] for k in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"))
    if ql:
        q = rms(hN @ t[p + "self_attn.q_a_proj.weight"].T, t[p + "self_attn.q_a_layernorm.weight"], 1e-6)
        q = q @ t[p + "self_attn.q_b_proj.weight"].T
    else:
        q = hN @ t[p + "self_attn.q_proj.weight"].T
    q = q.reshape(Tn, nh, nope + rope).transpose(1, 0, 2)
    ckv = hN @ t[p + "self_attn.kv_a_proj_with_mqa.weight"].T
    kv = rms(ckv[:, :kl], t[p + "self_attn.kv_a_layernorm.weight"], 1e-6) @ t[p + "self_attn.kv_b_proj.weight"].T
    kv = kv.reshape(Tn, nh, nope + vd).transpose(1, 0, 2)
    qr, kr = q[..., nope:], ckv[None, :, kl:]
    inv, af = inv_freq(cfg, rope)
    ang = np.outer(pos, inv)
    if cfg["model_type"] == "deepseek_v2":  # view_as_complex: adjacent pairs times af e^{i ang}
        z = lambda x: (x[..., 0::2] + 1j * x[..., 1::2]) * af * np.exp(1j * ang)  # noqa: E731
        unz = lambda c: np.stack([c.real, c.imag], -1).reshape(*c.shape[:-1], -1)  # noqa: E731
        qr, kr = unz(z(qr)), unz(z(kr))
    else:  # apply_rotary_pos_emb_interleave: [evens, odds], then rotate_half
        perm = np.concatenate([np.arange(0, rope, 2), np.arange(1, rope, 2)])
        qr, kr = af * rope_half(qr[..., perm], ang), af * rope_half(kr[..., perm], ang)
    k = np.concatenate([kv[..., :nope], np.broadcast_to(kr, (nh, Tn, rope))], -1)
    return np.concatenate([q[..., :nope], qr], -1), k, kv[..., nope:]


def mla_scale(cfg, qk_head):
    """DeepseekV3Attention.scaling: qk_head^-0.5, times yarn's mscale(factor, mscale_all_dim)^2"""
    import math
    s, rs = qk_head ** -0.5, cfg.get("rope_scaling") or {}
    if cfg["model_type"] == "deepseek_v3" and rs.get("rope_type", "default") != "default" and rs.get("mscale_all_dim"):
        m = 0.1 * rs["mscale_all_dim"] * math.log(rs["factor"]) + 1.0 if rs["factor"] > 1 else 1.0
        s *= m * m
    return s


def rope_half(x, ang):
    emb = np.concatenate([ang, ang], -1)
    h = x.shape[-1] // 2
    return x * np.cos(emb) + np.concatenate([-x[..., h:], x[..., :h]], -1) * np.sin(emb)


def moe_layer(cfg, L):
    if cfg["model_type"].startswith("deepseek"):
        return L >= cfg["first_k_dense_replace"]
    if cfg["model_type"] in ("qwen2_moe", "qwen3_moe"):
        return L not in cfg.get("mlp_only_layers", []) and (L + 1) % cfg.get("decoder_sparse_step", 1) == 0
    return True

def rms(x, w, eps):
    return w * (x / np.sqrt((x * x).mean(-1, keepdims=True) + eps))

def inv_freq(cfg, dim):
    """transformers' ROPE_INIT_FUNCTIONS (modeling_rope_utils.py): (inv_freq, attention factor)"""
    import math
    base = cfg.get("rope_theta", 10000.0)
    inv = 1.0 / base ** (np.arange(0, dim, 2) / dim)
    rs = cfg.get("rope_scaling") or {}
    kind = rs.get("rope_type", rs.get("type", "default"))
    if kind in ("default", "dynamic"):
        return inv, 1.0
    if kind == "linear":
        return inv / rs["factor"], 1.0
    if kind == "llama3":
        f, lo, hi, orig = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"], rs["original_max_position_embeddings"]
        wl = 2 * math.pi / inv
        out = np.where(wl > orig / lo, inv / f, inv)
        smooth = (orig / wl - lo) / (hi - lo)
        mid = ~(wl < orig / hi) & ~(wl > orig / lo)
        return np.where(mid, (1 - smooth) * out / f + smooth * out, out), 1.0
    assert kind == "yarn"
    f = rs["factor"]
    orig = rs.get("original_max_position_embeddings") or cfg["max_position_embeddings"]
    ms = lambda s, m=1: 1.0 if s <= 1 else 0.1 * m * math.log(s) + 1.0  # noqa: E731
    af = rs.get("attention_factor")
    if af is None:
        af = ms(f, rs["mscale"]) / ms(f, rs["mscale_all_dim"]) if rs.get("mscale") and rs.get("mscale_all_dim") else ms(f)
    fast, slow = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1
    cd = lambda r: dim * math.log(orig / (r * 2 * math.pi)) / (2 * math.log(base))  # noqa: E731
    lo, hi = cd(fast), cd(slow)
    if rs.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    ext = 1 - np.clip((np.arange(dim // 2) - lo) / (hi - lo), 0, 1)
    return (inv / f) * (1 - ext) + inv * ext, af


def rope(x, pos, cfg, rot):
    inv, af = inv_freq(cfg, rot)
    f = np.outer(pos, inv); emb = np.concatenate([f, f], -1)
    cos, sin = af * np.cos(emb), af * np.sin(emb)
    xr, xp = x[..., :rot], x[..., rot:]
    rh = np.concatenate([-xr[..., rot // 2:], xr[..., :rot // 2]], -1)
    return np.concatenate([xr * cos + rh * sin, xp], -1)

def attention(q, k, v, pos, W, scale, sinks=None):
    """(T, heads vd): causal softmax(q k^T scale) v per head, a window W when set; GPT-OSS's
    sink logit per head joins each row's softmax and is dropped"""
    S = q @ k.transpose(0, 2, 1) * scale
    mask = np.tril(np.ones((len(pos), len(pos)), bool))
    if W:
        mask &= (pos[:, None] - pos[None, :]) < W
    S = np.where(mask, S, -np.inf)
    if sinks is not None:
        S = np.concatenate([S, np.broadcast_to(sinks[:, None, None], (S.shape[0], S.shape[1], 1))], -1)
    S = np.exp(S - S.max(-1, keepdims=True))
    S /= S.sum(-1, keepdims=True)
    if sinks is not None:
        S = S[..., :-1]
    return (S @ v).transpose(1, 0, 2).reshape(len(pos), -1)


def mlp_step(cfg, t, p, L, x, eps, rm):
    """x + rm mlp(post_attention_layernorm x): the family's MoE block or a dense SiLU-GLU"""
    fam = cfg["model_type"]
    hN = rms(x, t[p + "post_attention_layernorm.weight"], eps)
    if moe_layer(cfg, L):
        pre = p + ("block_sparse_moe." if fam in ("mixtral", "granitemoe") else "mlp.")  # noqa
        y = family_ref.forward(fam, t, cfg, pre, hN)
    else:
        g = hN @ t[p + "mlp.gate_proj.weight"].T
        u = hN @ t[p + "mlp.up_proj.weight"].T
        y = (g / (1 + np.exp(-g)) * u) @ t[p + "mlp.down_proj.weight"].T
    return x + rm * y


def forward(cfg, T, ids):
    fam = cfg["model_type"]; t = {k: v.astype(np.float64) for k, v in T.items()}
    d, nh, nkv = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = cfg.get("head_dim", d // nh); eps = cfg["rms_norm_eps"]
    em, rm = cfg.get("embedding_multiplier", 1.0), cfg.get("residual_multiplier", 1.0)
    scale = cfg.get("attention_multiplier", 1 / np.sqrt(hd))
    W = cfg.get("sliding_window") if fam == "mixtral" else None
    losses = []
    for s in range(ids.shape[0]):
        x = t["model.embed_tokens.weight"][ids[s]] * em; Tn = x.shape[0]; pos = np.arange(Tn)
        for L in range(cfg["num_hidden_layers"]):
            p = f"model.layers.{L}."
            hN = rms(x, t[p + "input_layernorm.weight"], eps)
            if fam.startswith("deepseek"):
                q, k, v = mla_qkv(cfg, t, p, hN, pos)
                x = x + attention(q, k, v, pos, None, mla_scale(cfg, q.shape[-1])) @ t[p + "self_attn.o_proj.weight"].T
                x = mlp_step(cfg, t, p, L, x, eps, 1.0)
                continue
            q = hN @ t[p + "self_attn.q_proj.weight"].T; k = hN @ t[p + "self_attn.k_proj.weight"].T; v = hN @ t[p + "self_attn.v_proj.weight"].T
            if fam in ("qwen2_moe", "gpt_oss"):
                q += t[p + "self_attn.q_proj.bias"]; k += t[p + "self_attn.k_proj.bias"]; v += t[p + "self_attn.v_proj.bias"]
            if fam == "gpt_oss":
                W = cfg["sliding_window"] if cfg["layer_types"][L] == "sliding_attention" else None
            if fam == "olmoe":
                q = rms(q, t[p + "self_attn.q_norm.weight"], eps); k = rms(k, t[p + "self_attn.k_norm.weight"], eps)
                c = cfg.get("clip_qkv")
                if c: q, k, v = np.clip(q, -c, c), np.clip(k, -c, c), np.clip(v, -c, c)
            q = q.reshape(Tn, nh, hd).transpose(1, 0, 2); k = k.reshape(Tn, nkv, hd).transpose(1, 0, 2); v = v.reshape(Tn, nkv, hd).transpose(1, 0, 2)
            if fam == "qwen3_moe":
                q = rms(q, t[p + "self_attn.q_norm.weight"], eps); k = rms(k, t[p + "self_attn.k_norm.weight"], eps)
            q = rope(q, pos, cfg, hd); k = rope(k, pos, cfg, hd)
            rep = nh // nkv; k = np.repeat(k, rep, 0); v = np.repeat(v, rep, 0)
            o = attention(q, k, v, pos, W, scale, t.get(p + "self_attn.sinks")) @ t[p + "self_attn.o_proj.weight"].T
            x = x + rm * (o + t.get(p + "self_attn.o_proj.bias", 0.0))
            x = mlp_step(cfg, t, p, L, x, eps, rm)
        x = rms(x, t["model.norm.weight"], eps)
        lm = t["lm_head.weight"] if "lm_head.weight" in t else t["model.embed_tokens.weight"]
        lg = x @ lm.T / cfg.get("logits_scaling", 1.0)
        lse = np.log(np.exp(lg - lg.max(-1, keepdims=True)).sum(-1)) + lg.max(-1)
        losses += list(lse[:-1] - lg[np.arange(Tn - 1), ids[s, 1:]])
    return float(np.mean(losses))


def loss_of(ck, ev, name):
    out = os.path.join(TMP, name + ".json")
    j = testutil.eval_json(out, ck, ev)
    return j["loss"] if j else None


def test_families():
    for fam in FAMILIES:
        out = os.path.join(TMP, fam)
        cfg, T, ids = gen(fam, out)
        ev = os.path.join(out, "eval.safetensors")
        want, got = forward(cfg, T, ids), loss_of(out, ev, fam)
        check(got is not None and abs(got - want) < 1e-5 * abs(want),
              "%s: loss %s within 1e-5 of numpy's %.8f" % (fam, got, want))
        sc = os.path.join(TMP, fam + "_scrambled")
        r = run("scramble", out, "-o", sc, "--layer", "all", "--seed", "7")
        check(r.returncode == 0, "%s: scramble --layer all: %s" % (fam, r.stderr.strip()))
        got_s = loss_of(sc, ev, fam + "_s")
        check(got_s is not None and abs(got_s - want) < 1e-5 * abs(want),
              "%s: the scrambled network's loss %s is the same" % (fam, got_s))
        r = run("curve", out, sc, "--eval", ev, "--points", "5")
        check(r.returncode == 0, "%s: curve: %s" % (fam, r.stderr.strip()))
        # the curves' table: name, order, barrier, ...; the aligned one is the method's
        rows = [ln.split() for ln in r.stdout.splitlines() if ln.startswith(("gate ", "expert "))]
        check(rows and all(abs(float(w[-3])) < 1e-5 for w in rows),
              "%s: the aligned curve's barrier ~0: %s" % (fam, rows))


SCALED = [
    ("qwen3_moe", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8}}),
    ("gpt_oss", {"rope_scaling": {"rope_type": "yarn", "factor": 8.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                  "truncate": False, "original_max_position_embeddings": 16}}),
    ("deepseek_v3", {"rope_scaling": {"rope_type": "yarn", "factor": 40.0, "mscale": 1.0, "mscale_all_dim": 1.0,
                                      "original_max_position_embeddings": 4}}),
    ("deepseek_v2", {"rope_scaling": {"type": "yarn", "factor": 4.0, "mscale": 0.707, "mscale_all_dim": 0.5}}),
    ("mixtral", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 16}}),
    ("olmoe", {"rope_scaling": {"type": "linear", "factor": 2.0}}),
    ("granitemoe", {"rope_scaling": {"type": "dynamic", "factor": 2.0}}),
]


def test_rope_scaling():
    """rope_scaling kinds the shipped configs use, against numpy's ROPE_INIT_FUNCTIONS"""
    for fam, edit in SCALED:
        name = fam + "_" + edit["rope_scaling"].get("rope_type", edit["rope_scaling"].get("type"))
        out = os.path.join(TMP, name)
        cfg, T, ids = gen(fam, out, extra=edit, seq=12)
        want, got = forward(cfg, T, ids), loss_of(out, os.path.join(out, "eval.safetensors"), name)
        check(got is not None and abs(got - want) < 1e-5 * abs(want),
              "%s: loss %s within 1e-5 of numpy's %.8f" % (name, got, want))


def edited(fam, name, edit=None, drop=None, T=9):
    """a copy of fam's tiny model with config.json edited (edit: dict) or a tensor dropped"""
    out = os.path.join(TMP, name)
    cfg, T_, ids = gen(fam, out, extra=edit, seq=T)
    if drop:
        write_safetensors(os.path.join(out, "model.safetensors"),
                          [(k, "F32", v.shape, v.tobytes()) for k, v in T_.items() if k != drop])
    return out, os.path.join(out, "eval.safetensors")


def test_refusals():
    ck, ev = edited("mixtral", "unknown_type", {"model_type": "dbrx"})
    expect_error("unknown model_type", ["eval", ck, "--eval", ev], "model_type", "dbrx", "config.json")
    ck, ev = edited("qwen3_moe", "longrope", {"rope_scaling": {"rope_type": "longrope", "factor": 4.0}})
    expect_error("rope_scaling longrope", ["eval", ck, "--eval", ev], "config.json", "rope_scaling.rope_type",
                 "longrope")
    ck, ev = edited("olmoe", "kv_heads", {"num_key_value_heads": 3})
    expect_error("kv heads", ["eval", ck, "--eval", ev], "config.json", "num_key_value_heads")
    ck, ev = edited("mixtral", "missing", drop="model.layers.1.self_attn.k_proj.weight")
    expect_error("missing tensor", ["eval", ck, "--eval", ev], "model.layers.1.self_attn.k_proj.weight", "missing")
    ck, ev = edited("qwen2_moe", "long", {"max_position_embeddings": 8}, T=9)
    expect_error("T > max_position_embeddings", ["eval", ck, "--eval", ev], ev, "max_position_embeddings = 8")
    ck, ev = edited("granitemoe", "vocab", {"vocab_size": 23})
    ids = np.full((1, 4), 23, np.int64)
    bad = os.path.join(TMP, "bad_ids.safetensors")
    write_safetensors(bad, [("input_ids", "I64", ids.shape, ids.tobytes())])
    expect_error("id >= vocab_size", ["eval", ck, "--eval", bad], bad, "vocab_size = 23")


if __name__ == "__main__":
    sys.exit(testutil.run_tests("test_decoder_networks", [test_families, test_rope_scaling, test_refusals], TMP))
