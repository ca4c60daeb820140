"""tests/lib/family_fixtures.py - checkpoints in the real families' names and layouts,
written independently of moescope (its own safetensors writer, BF16 rounding and
MXFP4 packing), following the Hugging Face modelling code:

  mixtral      model.layers.L.block_sparse_moe.{gate.weight, experts.e.w1/w3/w2.weight}
  qwen2_moe    model.layers.L.mlp.{gate.weight, experts.e.gate_proj/up_proj/down_proj.weight,
               shared_expert.*_proj.weight, shared_expert_gate.weight}
  qwen3_moe, olmoe   as qwen2_moe without the shared expert
  deepseek_v2  ... plus shared_experts.*_proj.weight; deepseek_v3 also gate.e_score_correction_bias (F32)
  switch       encoder.block.L.layer.1.mlp.{router.classifier.weight, experts.expert_e.wi/wo.weight}
  granitemoe   model.layers.L.block_sparse_moe.{router.layer.weight, input_linear.weight [n,2h,d]
               (gate rows first), output_linear.weight [n,d,h]}
  jetmoe       model.layers.L.mlp.{same, bias [d]}
  gpt_oss      model.layers.L.mlp.{router.weight, router.bias, experts.gate_up_proj [n,d,2h]
               (gate = even columns), gate_up_proj_bias, down_proj [n,h,d], down_proj_bias}
               or MXFP4 experts.{gate_up_proj,down_proj}_{blocks,scales}

A layer is held as a dict of logical arrays (torch Linear orientation):
  gate [n,d], gate_b [n], corr [n], w1 (gate) [n,h,d], w3 (up) [n,h,d], w2 (down) [n,d,h],
  b1 [n,h], b3 [n,h], b2 [n,d], s1/s3 [hs,d], s2 [d,hs], sgate [1,d], out_b [d]
"""
import json
import os
import struct

import numpy as np

FAMILIES = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3",
            "switch", "granitemoe", "jetmoe", "gpt_oss"]
MODEL_TYPE = {"switch": "switch_transformers"}

FP4 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)


# ---------------------------------------------------------------- formats

def bf16_bits(x):
    """float32 -> bfloat16 bits, round to nearest even."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_round(x):
    return (bf16_bits(x).astype(np.uint32) << 16).view(np.float32)


def mx_decode(blocks, scales):
    """blocks U8 [..., G, 16], scales U8 [..., G] -> float32 [..., G*32]."""
    lo = FP4[blocks & 15]
    hi = FP4[blocks >> 4]
    v = np.stack([lo, hi], axis=-1).reshape(*blocks.shape[:-1], 32)
    v = v * np.ldexp(np.float32(1), scales.astype(np.int32) - 127)[..., None]
    return v.reshape(*blocks.shape[:-2], blocks.shape[-2] * 32).astype(np.float32)


def mx_random(rng, shape_out_in):
    """Random MXFP4 codes for a [..., out, in] tensor: (blocks, scales)."""
    *lead, inn = shape_out_in
    blocks = rng.integers(0, 256, size=(*lead, inn // 32, 16), dtype=np.uint8)
    scales = rng.integers(121, 125, size=(*lead, inn // 32), dtype=np.uint8)
    return blocks, scales


def write_safetensors(path, tensors, meta=None):
    """tensors: list of (name, dtype string, shape, bytes). Our own writer: the
    header is JSON padded with spaces to a multiple of 8."""
    header = {"__metadata__": dict(meta or {"format": "pt"})}
    off = 0
    for name, dt, shape, b in tensors:
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for t in tensors:
            f.write(t[3])


def read_safetensors(path):
    """name -> (dtype, shape, raw bytes); and the metadata."""
    with open(path, "rb") as f:
        raw = f.read()
    (hl,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hl])
    meta = header.pop("__metadata__", {})
    data = raw[8 + hl:]
    out = {}
    for k, v in header.items():
        b, e = v["data_offsets"]
        out[k] = (v["dtype"], tuple(v["shape"]), data[b:e])
    return out, meta


def to_float(dtype, shape, raw):
    if dtype == "F32":
        return np.frombuffer(raw, np.float32).reshape(shape)
    if dtype == "BF16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)
    if dtype == "F16":
        return np.frombuffer(raw, np.float16).astype(np.float32).reshape(shape)
    raise ValueError(dtype)


def encode(x, dtype):
    x = np.ascontiguousarray(x, np.float32)
    if dtype == "F32":
        return x.tobytes()
    if dtype == "BF16":
        return bf16_bits(x).tobytes()
    if dtype == "F16":
        return x.astype("<f2").tobytes()
    raise ValueError(dtype)


# ---------------------------------------------------------------- layers

def dims_for(fam):
    """(n, d, h, hs, extra config) small but real-shaped."""
    cfg = {}
    n, d, h, hs = 4, 64, 32, 0
    if fam == "qwen2_moe":
        hs = 64
        cfg = {"num_experts_per_tok": 2, "norm_topk_prob": False, "shared_expert_intermediate_size": hs}
    elif fam in ("qwen3_moe", "olmoe"):
        cfg = {"num_experts_per_tok": 2, "norm_topk_prob": fam == "qwen3_moe"}
    elif fam == "deepseek_v2":
        n, hs = 8, 64
        # groups ranked by their best expert: with topk_group >= k that is plain top-k, so
        # keep one group of two to make the grouping matter
        cfg = {"num_experts_per_tok": 2, "n_group": 2, "topk_group": 1,
               "topk_method": "group_limited_greedy", "routed_scaling_factor": 1.5,
               "n_shared_experts": 2, "moe_intermediate_size": h}
    elif fam == "deepseek_v3":
        n, hs = 8, 32
        cfg = {"num_experts_per_tok": 2, "n_group": 4, "topk_group": 2, "norm_topk_prob": True,
               "routed_scaling_factor": 2.5, "n_shared_experts": 1, "moe_intermediate_size": h}
    elif fam == "switch":
        cfg = {"num_experts": n, "expert_capacity": 1 << 20}
    elif fam == "phimoe":  # sparsemixer: two experts by construction
        cfg = {"num_experts_per_tok": 2, "router_jitter_noise": 0.01}
    elif fam == "gpt_oss":
        h = 64  # two 32-wide MXFP4 blocks along down_proj's input
        cfg = {"num_experts_per_tok": 2, "num_local_experts": n, "swiglu_limit": 7.0}
    else:
        cfg = {"num_experts_per_tok": 2}
    cfg.setdefault("num_local_experts", n)
    cfg["hidden_size"] = d
    cfg["model_type"] = MODEL_TYPE.get(fam, fam)
    return n, d, h, hs, cfg


def random_layer(fam, rng, dtype="F32", mx=False):
    """Logical arrays of one layer, values exactly representable in dtype."""
    n, d, h, hs, cfg = dims_for(fam)
    sc = 1 / np.sqrt(d)
    r = lambda *s: (rng.standard_normal(s) * sc).astype(np.float32)  # noqa: E731
    W = {"gate": r(n, d) * 4}
    if fam == "switch":
        W["w1"], W["w2"] = r(n, h, d), r(n, d, h)
    else:
        W["w1"], W["w3"], W["w2"] = r(n, h, d), r(n, h, d), r(n, d, h)
    if fam == "gpt_oss":
        W["gate_b"], W["b1"], W["b3"], W["b2"] = r(n), r(n, h), r(n, h), r(n, d)
        if mx:
            W["_gu_mx"] = mx_random(rng, (n, 2 * h, d))
            W["_dn_mx"] = mx_random(rng, (n, d, h))
            gu = mx_decode(*W["_gu_mx"])
            W["w1"], W["w3"] = gu[:, 0::2, :].copy(), gu[:, 1::2, :].copy()
            W["w2"] = mx_decode(*W["_dn_mx"])
    if fam == "deepseek_v3":
        W["corr"] = (rng.standard_normal(n) * 0.1).astype(np.float32)
    if hs:
        W["s1"], W["s3"], W["s2"] = r(hs, d), r(hs, d), r(d, hs)
    if fam == "qwen2_moe":
        W["sgate"] = r(1, d)
    if fam == "jetmoe":
        W["out_b"] = r(d)
    if dtype in ("BF16", "F16"):
        rnd = bf16_round if dtype == "BF16" else (lambda a: a.astype(np.float16).astype(np.float32))
        for k in list(W):
            if not k.startswith("_") and k != "corr":
                W[k] = rnd(W[k])
    return W, cfg


# families whose experts transformers >= 5 packs (experts.gate_up_proj [n,2h,d], gate rows
# first, experts.down_proj [n,d,h]); its Mixtral block is named "mlp" with "mlp.gate"
PACKABLE = ["mixtral", "qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3"]


def prefix_of(fam, L, packed=False):
    if fam == "mixtral" and packed:
        return "model.layers.%d.mlp" % L
    if fam in ("mixtral", "granitemoe", "phimoe"):
        return "model.layers.%d.block_sparse_moe" % L
    if fam == "switch":
        return "encoder.block.%d.layer.1.mlp" % L
    return "model.layers.%d.mlp" % L


def hf_tensors(fam, W, L=1, dtype="F32", packed=False):
    """The layer as (name, dtype, shape, bytes) in the family's layout (packed: as
    transformers >= 5 holds the experts, for the PACKABLE families)."""
    P = prefix_of(fam, L, packed) + "."
    out = []

    def add(name, x, dt=dtype):
        x = np.ascontiguousarray(x, np.float32)
        out.append((P + name, dt, x.shape, encode(x, dt)))

    n = W["gate"].shape[0]
    if packed or fam in ("qwen2_moe", "qwen3_moe", "olmoe", "deepseek_v2", "deepseek_v3"):
        add("gate.weight", W["gate"])
        if fam == "deepseek_v3":
            add("gate.e_score_correction_bias", W["corr"], "F32")  # F32 even in a BF16 file
        if packed:  # transformers >= 5
            add("experts.gate_up_proj", np.concatenate([W["w1"], W["w3"]], axis=1))
            add("experts.down_proj", W["w2"])
        for e in range(0 if packed else n):
            add("experts.%d.gate_proj.weight" % e, W["w1"][e])
            add("experts.%d.up_proj.weight" % e, W["w3"][e])
            add("experts.%d.down_proj.weight" % e, W["w2"][e])
        sh = "shared_expert" if fam == "qwen2_moe" else "shared_experts"
        if "s1" in W:
            add(sh + ".gate_proj.weight", W["s1"])
            add(sh + ".up_proj.weight", W["s3"])
            add(sh + ".down_proj.weight", W["s2"])
        if fam == "qwen2_moe":
            add("shared_expert_gate.weight", W["sgate"])
    elif fam in ("mixtral", "phimoe"):
        add("gate.weight", W["gate"])
        for e in range(n):
            add("experts.%d.w1.weight" % e, W["w1"][e])
            add("experts.%d.w2.weight" % e, W["w2"][e])
            add("experts.%d.w3.weight" % e, W["w3"][e])
    elif fam == "switch":
        add("router.classifier.weight", W["gate"])
        for e in range(n):
            add("experts.expert_%d.wi.weight" % e, W["w1"][e])
            add("experts.expert_%d.wo.weight" % e, W["w2"][e])
    elif fam in ("granitemoe", "jetmoe"):
        add("router.layer.weight", W["gate"])
        add("input_linear.weight", np.concatenate([W["w1"], W["w3"]], axis=1))
        add("output_linear.weight", W["w2"])
        if fam == "jetmoe":
            add("bias", W["out_b"])
    elif fam == "gpt_oss":
        add("router.weight", W["gate"])
        add("router.bias", W["gate_b"])
        if "_gu_mx" in W:
            for base, (bl, scl) in (("gate_up_proj", W["_gu_mx"]), ("down_proj", W["_dn_mx"])):
                out.append((P + "experts.%s_blocks" % base, "U8", bl.shape, bl.tobytes()))
                out.append((P + "experts.%s_scales" % base, "U8", scl.shape, scl.tobytes()))
        else:
            gu = np.empty((n, W["w1"].shape[2], 2 * W["w1"].shape[1]), np.float32)
            gu[:, :, 0::2] = W["w1"].transpose(0, 2, 1)
            gu[:, :, 1::2] = W["w3"].transpose(0, 2, 1)
            add("experts.gate_up_proj", gu)
            add("experts.down_proj", W["w2"].transpose(0, 2, 1))
        bb = np.empty((n, 2 * W["b1"].shape[1]), np.float32)
        bb[:, 0::2], bb[:, 1::2] = W["b1"], W["b3"]
        add("experts.gate_up_proj_bias", bb)
        add("experts.down_proj_bias", W["b2"])
    return out


def other_tensors(rng, d, dtype="F32"):
    """Tensors of the rest of a model, passed through untouched."""
    out = []
    for name, shape in (("model.embed_tokens.weight", (16, d)),
                        ("model.layers.1.input_layernorm.weight", (d,)),
                        ("model.layers.0.self_attn.q_proj.weight", (d, d)),
                        ("model.norm.weight", (d,))):
        x = rng.standard_normal(shape).astype(np.float32)
        out.append((name, dtype, shape, encode(x, dtype)))
    return out


def write_checkpoint(target, fam, W, cfg, dtype="F32", shards=1, rng=None, others=True,
                     packed=False):
    """shards = 1: one file (target = path). shards >= 2: a directory target with
    model-0000i-of-0000k.safetensors, model.safetensors.index.json and config.json;
    the layer is split over the first two shards, the rest of the model in the last."""
    rng = rng or np.random.default_rng(0)
    layer = hf_tensors(fam, W, dtype=dtype, packed=packed)
    rest = other_tensors(rng, W["gate"].shape[1], dtype) if others else []
    if shards == 1:
        write_safetensors(target, layer + rest)
        return
    os.makedirs(target, exist_ok=True)
    half = (len(layer) + 1) // 2
    parts = [layer[:half], layer[half:]] + [[] for _ in range(shards - 2)]
    parts[-1] = parts[-1] + rest
    names = ["model-%05d-of-%05d.safetensors" % (i + 1, shards) for i in range(shards)]
    wm = {}
    total = 0
    for nm, part in zip(names, parts):
        write_safetensors(os.path.join(target, nm), part)
        for t in part:
            wm[t[0]] = nm
            total += len(t[3])
    with open(os.path.join(target, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    with open(os.path.join(target, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


# ---------------------------------------------------------------- symmetries

def scramble(W, pi, perms):
    """Slot i of the result holds expert pi[i]; expert e's hidden units reordered
    by perms[e] (applied after the expert move: perms index the new slots); the
    shared expert's hidden units by perms[-1] when present."""
    S = {}
    for k, v in W.items():
        if k.startswith("_"):
            continue
        S[k] = v.copy()
    n = len(pi)
    for k in ("gate", "gate_b", "corr", "w1", "w3", "w2", "b1", "b3", "b2"):
        if k in S:
            S[k] = S[k][pi].copy()
    for e in range(n):
        p = perms[e]
        for k in ("w1", "w3", "b1", "b3"):
            if k in S:
                S[k][e] = S[k][e][p]
        S["w2"][e] = S["w2"][e][:, p]
    if "s1" in S and len(perms) > n:
        p = perms[n]
        S["s1"], S["s3"], S["s2"] = S["s1"][p], S["s3"][p], S["s2"][:, p]
    return S


def group_perm(rng, n, groups):
    """A random element of S_m wr S_g: whole groups permuted, experts within each."""
    m = n // groups
    gp = rng.permutation(groups)
    return np.concatenate([g * m + rng.permutation(m) for g in gp])


def scramble_mx(W, pi, block_perms):
    """The MXFP4 codes of scramble(W, pi, perms) for hidden permutations that
    move whole 32-unit blocks: block_perms[e] orders expert e's h/32 blocks.
    gate_up rows 2j, 2j+1 are hidden unit j's gate and up; down_proj's blocks run
    along the hidden units, so whole-block moves keep every code exact."""
    gb, gs = W["_gu_mx"]
    db, ds = W["_dn_mx"]
    gb, gs, db, ds = gb[pi].copy(), gs[pi].copy(), db[pi].copy(), ds[pi].copy()
    perms = []
    for e, bp in enumerate(block_perms):
        p = np.concatenate([32 * b + np.arange(32) for b in bp])
        perms.append(p)
        rows = np.stack([2 * p, 2 * p + 1], axis=1).reshape(-1)
        gb[e], gs[e] = gb[e][rows], gs[e][rows]
        db[e], ds[e] = db[e][:, bp], ds[e][:, bp]
    S = scramble(W, pi, perms)
    S["_gu_mx"], S["_dn_mx"] = (gb, gs), (db, ds)
    return S


def weight_match(WA, WB, pi):
    """Step 2 of the alignment for expert order pi, independently of moescope:
    for slot i (A's expert i against B's expert pi[i]) the hidden permutation P
    maximising sum_u S[u, P(u)], S = W1a W1b^T + b1a b1b^T + W2a^T W2b + W3a W3b^T +
    b3a b3b^T (scipy's assignment). Returns perms for scramble(WB, pi, perms): one
    per slot, then the shared expert's (matched with B's) when there is one."""
    from scipy.optimize import linear_sum_assignment

    def match(a1, a3, a2, ab1, ab3, b1, b3, b2, bb1, bb3):
        S = a1 @ b1.T + a2.T @ b2
        if a3 is not None:
            S = S + a3 @ b3.T
        if ab1 is not None:
            S = S + np.outer(ab1, bb1) + np.outer(ab3, bb3)
        rows, cols = linear_sum_assignment(np.asarray(S, np.float64), maximize=True)
        return cols[np.argsort(rows)]

    def get(W, key, e):
        return W[key][e].astype(np.float64) if key in W else None

    perms = []
    for i, j in enumerate(pi):
        perms.append(match(get(WA, "w1", i), get(WA, "w3", i), get(WA, "w2", i), get(WA, "b1", i),
                           get(WA, "b3", i), get(WB, "w1", j), get(WB, "w3", j), get(WB, "w2", j),
                           get(WB, "b1", j), get(WB, "b3", j)))
    if "s1" in WA:
        f = lambda W, k: W[k].astype(np.float64)  # noqa: E731
        perms.append(match(f(WA, "s1"), f(WA, "s3"), f(WA, "s2"), None, None,
                           f(WB, "s1"), f(WB, "s3"), f(WB, "s2"), None, None))
    return perms


def tensors_f64(fam, W):
    """The block's tensors as name -> float64 array, in the family's layout."""
    return {name: to_float(dt, shape, raw).astype(np.float64) for name, dt, shape, raw in hf_tensors(fam, W)}


def order_barrier_ref(fam, WA, WB, order, cfg, X, T):
    """numpy's barrier and loss AUC of the layer-output curve from A to B reordered
    by `order` (slot i holds B's expert order[i], weight-matched), and the tolerance
    a float32 implementation is held to: 1e-5 + 1e-4 * the curve's largest loss."""
    import family_ref
    Bp = scramble(WB, list(order), weight_match(WA, WB, list(order)))
    loss = family_ref.layer_curve(fam, tensors_f64(fam, WA), tensors_f64(fam, Bp), cfg,
                                  prefix_of(fam, 1) + ".", X, T)
    bar, auc = family_ref.barrier(loss)
    return bar, auc, 1e-5 + 1e-4 * abs(loss).max()
