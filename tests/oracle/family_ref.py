"""tests/oracle/family_ref.py - numpy reference forwards of the MoE block of each model
family, written from the Hugging Face transformers modelling code
(modeling_mixtral.py, modeling_qwen2_moe.py, modeling_qwen3_moe.py,
modeling_olmoe.py, modeling_deepseek_v2.py, modeling_deepseek_v3.py,
modeling_switch_transformers.py, modeling_granitemoe.py, modeling_jetmoe.py,
modeling_gpt_oss.py, modular_phimoe.py), independently of moescope.

    forward(family, tensors, config, prefix, X) -> (N, d) float64

tensors: dict of HF tensor names -> float32 arrays (BF16/MXFP4 already decoded
by the caller), config: the checkpoint's config.json as a dict (missing keys
take the family's defaults from its configuration_*.py), prefix: the block's
prefix with its trailing dot (e.g. "model.layers.0.mlp."), X: (N, d) hidden
states entering the block. The result is the block's output exactly as the
module returns it: no residual, no norm.

Everything is computed in float64; top-k ties go to the smaller index (torch
leaves that order unspecified). Switch's expert capacity is not modelled: in
the current code the token-priority cumsum runs over a singleton axis of the
flattened [tokens, 1, n] one-hot, so no token is dropped (and dropped tokens
would get a zero output anyway).
"""
import numpy as np

# the family's defaults for the router keys (configuration_<family>.py)
DEFAULTS = {
    "mixtral": {"num_experts_per_tok": 2},
    "qwen2_moe": {"num_experts_per_tok": 4, "norm_topk_prob": False},
    "qwen3_moe": {"num_experts_per_tok": 8, "norm_topk_prob": False},
    "olmoe": {"num_experts_per_tok": 8, "norm_topk_prob": False},
    "deepseek_v2": {"num_experts_per_tok": None, "routed_scaling_factor": 1.0,
                    "topk_method": "greedy", "n_group": None, "topk_group": None},
    "deepseek_v3": {"num_experts_per_tok": 8, "routed_scaling_factor": 2.5, "n_group": 8,
                    "topk_group": 4, "norm_topk_prob": True},
    "switch": {},
    "granitemoe": {"num_experts_per_tok": 2},
    "jetmoe": {"num_experts_per_tok": 2},
    "gpt_oss": {"num_experts_per_tok": 4, "swiglu_limit": 7.0},
}


def _cfg(family, config, key):
    if key in config and config[key] is not None:
        return config[key]
    return DEFAULTS[family].get(key)


def topk(v, k):
    """Indices of the k largest entries of each row of v (N, n), largest first;
    ties to the smaller index (a stable sort of -v)."""
    return np.argsort(-v, axis=-1, kind="stable")[:, :k]


def softmax(s):
    s = s - s.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def silu(x):
    return x * sigmoid(x)


def linear(x, w, b=None):
    """torch.nn.functional.linear: x (N, in) . w (out, in)^T + b."""
    y = x @ np.asarray(w, np.float64).T
    return y if b is None else y + np.asarray(b, np.float64)


def swiglu_mlp(t, base, x):
    """LlamaMLP-style expert: down(silu(gate(x)) * up(x))."""
    g = linear(x, t[base + "gate_proj.weight"])
    u = linear(x, t[base + "up_proj.weight"])
    return linear(silu(g) * u, t[base + "down_proj.weight"])


def _combine(n, X, idx, w, expert):
    """sum over the selected experts of weight * expert(e, x), per row."""
    out = np.zeros_like(X)
    for e in range(n):
        rows, slot = np.nonzero(idx == e)
        if len(rows):
            out[rows] += w[rows, slot][:, None] * expert(e, X[rows])
    return out


def _softmax_topk(logits, k, renorm):
    """softmax (over all) -> top-k -> optional renormalisation."""
    p = softmax(logits)
    idx = topk(p, k)
    w = np.take_along_axis(p, idx, axis=-1)
    if renorm:
        w = w / w.sum(axis=-1, keepdims=True)
    return idx, w


def _logits_topk_softmax(logits, k):
    """top-k of the logits -> softmax over the selected logits."""
    idx = topk(logits, k)
    return idx, softmax(np.take_along_axis(logits, idx, axis=-1))


def mixtral(t, c, p, X):
    gw = t[p + "gate.weight"]
    n = gw.shape[0]
    idx, w = _softmax_topk(linear(X, gw), _cfg("mixtral", c, "num_experts_per_tok"), True)

    def expert(e, x):
        b = p + "experts.%d." % e
        h = silu(linear(x, t[b + "w1.weight"])) * linear(x, t[b + "w3.weight"])
        return linear(h, t[b + "w2.weight"])
    return _combine(n, X, idx, w, expert)


def _qwen_like(fam, t, c, p, X):
    gw = t[p + "gate.weight"]
    n = gw.shape[0]
    idx, w = _softmax_topk(linear(X, gw), _cfg(fam, c, "num_experts_per_tok"),
                           bool(_cfg(fam, c, "norm_topk_prob")))
    out = _combine(n, X, idx, w, lambda e, x: swiglu_mlp(t, p + "experts.%d." % e, x))
    if fam == "qwen2_moe" and p + "shared_expert.gate_proj.weight" in t:
        sg = sigmoid(linear(X, t[p + "shared_expert_gate.weight"]))  # (N, 1)
        out = out + sg * swiglu_mlp(t, p + "shared_expert.", X)
    return out


def deepseek_v2(t, c, p, X):
    gw = t[p + "gate.weight"]
    n = gw.shape[0]
    k = _cfg("deepseek_v2", c, "num_experts_per_tok")
    scores = softmax(linear(X, gw))
    if _cfg("deepseek_v2", c, "topk_method") == "group_limited_greedy":
        G, kg = _cfg("deepseek_v2", c, "n_group"), _cfg("deepseek_v2", c, "topk_group")
        gs = scores.reshape(len(X), G, n // G).max(axis=-1)
        keep = np.zeros_like(gs)
        np.put_along_axis(keep, topk(gs, kg), 1.0, axis=-1)
        mask = np.repeat(keep, n // G, axis=-1)
        tmp = np.where(mask > 0, scores, 0.0)
    else:
        tmp = scores
    idx = topk(tmp, k)
    w = np.take_along_axis(tmp, idx, axis=-1) * _cfg("deepseek_v2", c, "routed_scaling_factor")
    out = _combine(n, X, idx, w, lambda e, x: swiglu_mlp(t, p + "experts.%d." % e, x))
    if p + "shared_experts.gate_proj.weight" in t:
        out = out + swiglu_mlp(t, p + "shared_experts.", X)
    return out


def deepseek_v3(t, c, p, X):
    gw = t[p + "gate.weight"]
    n = gw.shape[0]
    k = _cfg("deepseek_v3", c, "num_experts_per_tok")
    G, kg = _cfg("deepseek_v3", c, "n_group"), _cfg("deepseek_v3", c, "topk_group")
    scores = sigmoid(linear(X, gw))
    choice = scores + t[p + "gate.e_score_correction_bias"][None, :]
    grouped = choice.reshape(len(X), G, n // G)
    gs = -np.sort(-grouped, axis=-1)[:, :, :2].sum(axis=-1)  # sum of each group's top 2
    keep = np.zeros_like(gs)
    np.put_along_axis(keep, topk(gs, kg), 1.0, axis=-1)
    choice = np.where(np.repeat(keep, n // G, axis=-1) > 0, choice, 0.0)
    idx = topk(choice, k)
    w = np.take_along_axis(scores, idx, axis=-1)
    if _cfg("deepseek_v3", c, "norm_topk_prob"):
        w = w / (w.sum(axis=-1, keepdims=True) + 1e-20)
    w = w * _cfg("deepseek_v3", c, "routed_scaling_factor")
    out = _combine(n, X, idx, w, lambda e, x: swiglu_mlp(t, p + "experts.%d." % e, x))
    if p + "shared_experts.gate_proj.weight" in t:
        out = out + swiglu_mlp(t, p + "shared_experts.", X)
    return out


def _sparsemixer_pick(scores, masked, eps):
    """One step of PhiMoE's sparsemixer at inference: the arg-max of `masked`; logits
    whose gap below it, relative to max(|logit|, that max), exceeds 2 eps are dropped;
    the weight is the pick's softmax probability over the rest."""
    idx = masked.argmax(-1)
    top = np.take_along_axis(masked, idx[:, None], -1)
    factor = np.maximum(np.abs(scores), top)
    kept = np.where((top - scores) / factor > 2 * eps, -np.inf, masked)
    return idx, np.take_along_axis(softmax(kept), idx[:, None], -1)[:, 0]


def phimoe(t, c, p, X):
    """PhiMoE: Mixtral's tensors, routed by sparsemixer (always two experts: the
    second picked with the first masked out)."""
    gw = t[p + "gate.weight"]
    n = gw.shape[0]
    eps = float(c.get("router_jitter_noise", 0.01))
    s = linear(X, gw)
    i1, w1 = _sparsemixer_pick(s, s, eps)
    s2 = s.copy()
    s2[np.arange(len(s)), i1] = -np.inf
    i2, w2 = _sparsemixer_pick(s, s2, eps)
    idx, w = np.stack([i1, i2], 1), np.stack([w1, w2], 1)

    def expert(e, x):
        b = p + "experts.%d." % e
        return linear(silu(linear(x, t[b + "w1.weight"])) * linear(x, t[b + "w3.weight"]), t[b + "w2.weight"])
    return _combine(n, X, idx, w, expert)


def switch(t, c, p, X):
    cw = t[p + "router.classifier.weight"]
    n = cw.shape[0]
    probs = softmax(linear(X, cw, t.get(p + "router.classifier.bias")))
    idx = topk(probs, 1)  # argmax
    w = np.take_along_axis(probs, idx, axis=-1)  # the top probability, not renormalised

    def expert(e, x):
        b = p + "experts.expert_%d." % e
        return linear(np.maximum(linear(x, t[b + "wi.weight"]), 0.0), t[b + "wo.weight"])
    return _combine(n, X, idx, w, expert)


def _packed_glu(fam, t, c, p, X):
    """GraniteMoe / JetMoe: input_linear [n, 2h, d] (gate half first),
    output_linear [n, d, h]; top-k of the logits, softmax over them."""
    rw = t[p + "router.layer.weight"]
    n = rw.shape[0]
    idx, w = _logits_topk_softmax(linear(X, rw), _cfg(fam, c, "num_experts_per_tok"))
    Win, Wout = t[p + "input_linear.weight"], t[p + "output_linear.weight"]
    h = Win.shape[1] // 2

    def expert(e, x):
        a = linear(x, Win[e])
        return linear(silu(a[:, :h]) * a[:, h:], Wout[e])
    out = _combine(n, X, idx, w, expert)
    if fam == "jetmoe" and p + "bias" in t:
        out = out + t[p + "bias"][None, :]
    return out


def gpt_oss(t, c, p, X):
    rw = t[p + "router.weight"]
    n = rw.shape[0]
    idx, w = _logits_topk_softmax(linear(X, rw, t[p + "router.bias"]),
                                  _cfg("gpt_oss", c, "num_experts_per_tok"))
    L = float(_cfg("gpt_oss", c, "swiglu_limit"))
    GU, GUb = t[p + "experts.gate_up_proj"], t[p + "experts.gate_up_proj_bias"]  # [n,d,2h], [n,2h]
    D, Db = t[p + "experts.down_proj"], t[p + "experts.down_proj_bias"]  # [n,h,d], [n,d]

    def expert(e, x):
        gu = x @ np.asarray(GU[e], np.float64) + GUb[e]
        g, u = gu[:, ::2], gu[:, 1::2]
        g = np.minimum(g, L)
        u = np.clip(u, -L, L)
        glu = g * sigmoid(g * 1.702)
        return ((u + 1.0) * glu) @ np.asarray(D[e], np.float64) + Db[e]
    return _combine(n, X, idx, w, expert)


FAMILIES = {
    "mixtral": mixtral,
    "qwen2_moe": lambda t, c, p, X: _qwen_like("qwen2_moe", t, c, p, X),
    "qwen3_moe": lambda t, c, p, X: _qwen_like("qwen3_moe", t, c, p, X),
    "olmoe": lambda t, c, p, X: _qwen_like("olmoe", t, c, p, X),
    "deepseek_v2": deepseek_v2,
    "deepseek_v3": deepseek_v3,
    "switch": switch,
    "granitemoe": lambda t, c, p, X: _packed_glu("granitemoe", t, c, p, X),
    "jetmoe": lambda t, c, p, X: _packed_glu("jetmoe", t, c, p, X),
    "gpt_oss": gpt_oss,
    "phimoe": phimoe,
}


def forward(family, tensors, config, prefix, X):
    """The MoE block's output (N, d) for inputs X (N, d), as the family's module
    returns it."""
    if family not in FAMILIES:
        raise ValueError("family_ref: unknown family %r (known: %s)"
                         % (family, ", ".join(sorted(FAMILIES))))
    t = {k: np.asarray(v, np.float64) for k, v in tensors.items()}
    return FAMILIES[family](t, config or {}, prefix, np.asarray(X, np.float64))


# ---------------------------------------------------------------- curves

def interpolate(TA, TB, t):
    """theta(t) = (1-t) theta_A + t theta_B on every tensor of the block, in the
    family's own layout (router biases, the shared expert's gate and an output
    bias included): TA, TB name -> array, the same names."""
    return {k: (1.0 - t) * np.asarray(TA[k], np.float64) + t * np.asarray(TB[k], np.float64)
            for k in TA}


def layer_curve(family, TA, TB, config, prefix, X, T):
    """The layer-output loss at t_m = m/(T-1) on the line from A to B (B already
    reordered): mean over N*d of (D_t(x) - ((1-t) D_A(x) + t D_B(x)))^2, with
    D the block's output (the curve of a layer without a head)."""
    DA = forward(family, TA, config, prefix, X)
    DB = forward(family, TB, config, prefix, X)
    out = []
    for m in range(T):
        t = m / (T - 1)
        D = forward(family, interpolate(TA, TB, t), config, prefix, X)
        out.append(float(((D - ((1 - t) * DA + t * DB)) ** 2).mean()))
    return np.array(out)


def barrier(loss):
    """max_m [L(t_m) - ((1-t_m) L(0) + t_m L(1))], and the loss AUC (trapezoid mean)."""
    T = len(loss)
    t = np.arange(T) / (T - 1)
    ex = loss - ((1 - t) * loss[0] + t * loss[-1])
    return float(ex.max()), float(((ex[1:] + ex[:-1]) / 2).sum() / (T - 1))
