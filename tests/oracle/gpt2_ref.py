#!/usr/bin/env python3
"""gpt2_ref.py - an independent numpy (float64) forward of a GPT-2-layout network
with MoE blocks, the oracle for moescope's network evaluator. numpy only: it reads
the safetensors files itself and shares no code with moescope or with
sample-checkpoints/ (whose models are PyTorch).

Checked once against the PyTorch model that made sample-checkpoints/gpt/ (every
pool, seed1, the pool's eval set): logits agree to 1e-5 relative (max |diff| /
max |logit|), and loss to 1e-6; see sample-checkpoints/README.md, GPT section.

The network (Hugging Face GPT-2 names; Conv1D weights are [in, out]):
    h = wte[ids] + wpe[0..T-1]
    per block L:  h += c_proj(attn(ln_1(h)))     causal, softmax(q k^T / sqrt(d/n_head))
                  h += mlp(ln_2(h))              dense MLP or MoE (config "moe")
    logits = ln_f(h) @ wte^T (tied) or lm_head.weight^T (+ lm_head.bias)
MoE block: D(x) = sum_s E_s(x) + sum_i g_i(x) E_i(x), E(x) = c_proj(act(c_fc x)),
scores s = gate.weight x + gate.bias; router "dense": g = softmax(s); "topk": the
k largest scores (ties to the smaller index), softmax over those, 0 elsewhere.
Activations: relu, gelu (erf form), gelu_new (tanh form, GPT-2's default).
LayerNorm: biased variance, eps = layer_norm_epsilon (1e-5).
Loss: mean next-token cross-entropy over N*(T-1) positions (labels = input_ids
shifted by one, as HF); accuracy: next-token top-1 (argmax, ties to the smaller id).

API
    ckpt = load(path)                 a checkpoint folder (config.json + model.safetensors
                                      or a sharded index) -> {"config", "tensors"}
    read_safetensors(path)            -> ({name: ndarray}, metadata); F32/F16/BF16/F64/I32/I64
    logits(ckpt, ids, params=None, hook=None)
                                      [N, T, V]; params: {name: array} overriding tensors
                                      (e.g. interpolated, aligned MoE parameters); hook(i, x)
                                      sees MoE block i's input x [N T, d] (ln_2 h) and returns
                                      the input the block computes on
    evaluate(ckpt, ids, params=None, hook=None)  -> {"loss", "accuracy"}
    moe_names(ckpt)                   names of every MoE tensor (the interpolated ones)
CLI
    python3 gpt2_ref.py CKPT EVAL      prints {"loss": ..., "accuracy": ...} as JSON
"""
import json
import math
import os
import struct
import sys

import numpy as np

_DT = {"F64": np.float64, "F32": np.float32, "F16": np.float16, "I64": np.int64, "I32": np.int32,
       "I16": np.int16, "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """8-byte little-endian header length, JSON header, raw little-endian data."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        raise ValueError("%s: truncated" % path)
    (n,) = struct.unpack("<Q", raw[:8])
    if 8 + n > len(raw):
        raise ValueError("%s: header length beyond the file" % path)
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {}) or {}
    data = raw[8 + n:]
    out = {}
    for name, v in header.items():
        a, b = v["data_offsets"]
        if not 0 <= a <= b <= len(data):
            raise ValueError("%s: tensor %s: offsets outside the data" % (path, name))
        buf = data[a:b]
        if v["dtype"] == "BF16":  # the high half of a float32
            arr = (np.frombuffer(buf, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            arr = np.frombuffer(buf, np.dtype(_DT[v["dtype"]]).newbyteorder("<"))
        if arr.size != int(np.prod(v["shape"], dtype=np.int64)):
            raise ValueError("%s: tensor %s: shape %s disagrees with its bytes" % (path, name, v["shape"]))
        out[name] = arr.reshape(v["shape"])
    return out, meta


def load(path):
    cfg = json.load(open(os.path.join(path, "config.json")))
    index = os.path.join(path, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(index):
        wmap = json.load(open(index))["weight_map"]
        for shard in sorted(set(wmap.values())):
            t, _ = read_safetensors(os.path.join(path, shard))
            tensors.update(t)
        missing = [k for k in wmap if k not in tensors]
        if missing:
            raise ValueError("%s: tensor %s listed in the index but in no shard" % (path, missing[0]))
    else:
        tensors, _ = read_safetensors(os.path.join(path, "model.safetensors"))
    return {"config": cfg, "tensors": tensors}


def moe_names(ckpt):
    m = ckpt["config"].get("moe") or {}
    pre = tuple("transformer.h.%d.mlp." % L for L in m.get("layers", []))
    return sorted(k for k in ckpt["tensors"] if k.startswith(pre))


# ------------------------------------------------------------------ pieces
_erf = np.vectorize(math.erf, otypes=[np.float64])


def _act(name, x):
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "gelu":
        return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError("unknown activation %r" % name)


def _ln(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def _softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def _ffn(P, pre, x, act):
    return _act(act, x @ P(pre + "c_fc.weight") + P(pre + "c_fc.bias")) @ P(pre + "c_proj.weight") \
        + P(pre + "c_proj.bias")


def route(s, router, k):
    """Gate weights g [M, n] from scores s [M, n]."""
    if router == "dense":
        return _softmax(s)
    if router != "topk":
        raise ValueError("unknown router %r" % router)
    n = s.shape[1]
    # the k largest; a stable sort of -s keeps the smaller index first among equals
    top = np.argsort(-s, axis=1, kind="stable")[:, :k]
    mask = np.zeros(s.shape, bool)
    np.put_along_axis(mask, top, True, axis=1)
    z = np.where(mask, s, -np.inf)
    g = np.exp(z - z.max(1, keepdims=True))
    assert n >= k
    return g / g.sum(1, keepdims=True)


def _moe(P, pre, x, m, ffn=None):
    """D(x) of the MoE layer at pre; ffn(P, expert prefix, x, act) an expert (GPT-2's Conv1D
    c_fc/c_proj by default; vit_ref passes its Linear fc1/fc2)."""
    ffn = ffn or _ffn
    n, k = m["num_experts"], m.get("top_k", m["num_experts"])
    gb = P(pre + "gate.bias") if P.has(pre + "gate.bias") else 0.0
    g = route(x @ P(pre + "gate.weight").T + gb, m.get("router", "topk"), k)
    act = m.get("expert_activation", "relu")
    out = np.zeros_like(x)
    for j in range(m.get("num_shared_experts", 0)):
        out += ffn(P, pre + "shared_experts.%d." % j, x, act)
    for i in range(n):
        sel = g[:, i] > 0  # an expert only matters where it is routed
        if sel.any():
            out[sel] += g[sel, i:i + 1] * ffn(P, pre + "experts.%d." % i, x[sel], act)
    return out


class _Params:
    def __init__(self, tensors, over):
        self.t, self.o = tensors, over or {}

    def has(self, k):
        return k in self.o or k in self.t

    def __call__(self, k):
        if k in self.o:
            return np.asarray(self.o[k], np.float64)
        if k not in self.t:
            raise KeyError("missing tensor %s" % k)
        return np.asarray(self.t[k], np.float64)


def logits(ckpt, ids, params=None, hook=None):
    cfg = ckpt["config"]
    P = _Params(ckpt["tensors"], params)
    ids = np.asarray(ids, np.int64)
    N, T = ids.shape
    V, d, nh = cfg["vocab_size"], cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    if ids.min() < 0 or ids.max() >= V:
        raise ValueError("input_ids outside 0..vocab_size-1")
    if T > cfg["n_positions"]:
        raise ValueError("T = %d > n_positions = %d" % (T, cfg["n_positions"]))
    m = cfg.get("moe") or {}
    moe_layers = sorted(set(m.get("layers", [])))
    hd = d // nh
    h = P("transformer.wte.weight")[ids] + P("transformer.wpe.weight")[:T][None]
    causal = np.tril(np.ones((T, T), bool))
    for L in range(cfg["n_layer"]):
        pre = "transformer.h.%d." % L
        a = _ln(h, P(pre + "ln_1.weight"), P(pre + "ln_1.bias"), eps)
        qkv = a @ P(pre + "attn.c_attn.weight") + P(pre + "attn.c_attn.bias")
        q, k, v = (qkv[..., i * d:(i + 1) * d].reshape(N, T, nh, hd).transpose(0, 2, 1, 3) for i in range(3))
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        s = np.where(causal, s, -np.inf)
        o = (_softmax(s) @ v).transpose(0, 2, 1, 3).reshape(N, T, d)
        h = h + o @ P(pre + "attn.c_proj.weight") + P(pre + "attn.c_proj.bias")
        x = _ln(h, P(pre + "ln_2.weight"), P(pre + "ln_2.bias"), eps).reshape(N * T, d)
        if L in moe_layers:
            if hook is not None:
                x = hook(moe_layers.index(L), x)
            y = _moe(P, pre + "mlp.", x, m)
        else:
            y = _ffn(P, pre + "mlp.", x, cfg.get("activation_function", "gelu_new"))
        h = h + y.reshape(N, T, d)
    h = _ln(h, P("transformer.ln_f.weight"), P("transformer.ln_f.bias"), eps)
    tied = cfg.get("tie_word_embeddings", True)
    head = P("transformer.wte.weight") if tied or not P.has("lm_head.weight") else P("lm_head.weight")
    out = h @ head.T
    if P.has("lm_head.bias"):
        out = out + P("lm_head.bias")
    return out


def evaluate(ckpt, ids, params=None, batch=16, hook=None):
    """Mean next-token cross-entropy (log-sum-exp) and top-1 accuracy, in double."""
    ids = np.asarray(ids, np.int64)
    nll, hit, cnt = 0.0, 0, 0
    for i in range(0, len(ids), batch):
        x = ids[i:i + batch]
        z = logits(ckpt, x, params, hook)[:, :-1]
        y = x[:, 1:]
        zmax = z.max(-1, keepdims=True)
        lse = (zmax[..., 0] + np.log(np.exp(z - zmax).sum(-1)))
        nll += float((lse - np.take_along_axis(z, y[..., None], -1)[..., 0]).sum())
        hit += int((z.argmax(-1) == y).sum())
        cnt += y.size
    return {"loss": nll / cnt, "accuracy": hit / cnt}


def main(argv):
    if len(argv) != 3:
        print("usage: gpt2_ref.py CKPT EVAL", file=sys.stderr)
        return 2
    ckpt = load(argv[1])
    ids = read_safetensors(argv[2])[0]["input_ids"]
    print(json.dumps(evaluate(ckpt, ids)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
