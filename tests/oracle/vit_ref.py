#!/usr/bin/env python3
"""vit_ref.py - an independent numpy (float64) forward of a ViT-layout network with MoE
blocks (Hugging Face's ViTForImageClassification), the oracle for moescope's ViT
evaluator. numpy only, sharing no code with moescope or sample-checkpoints/; what it
has in common with a GPT-2 (safetensors reading, LayerNorm, activations, the router,
the MoE sum) is gpt2_ref's.

The network (Hugging Face ViT names; torch Linear weights are [out, in]: y = x W^T + b):
    patches: image [C, H, W] cut into P = (H/p)^2 patches of [C, p, p], row-major
    h = [cls_token; patches @ projection.weight.reshape(d, C p p)^T + bias] + position_embeddings
    per block L:  h += attention.output.dense(attn(layernorm_before(h)))
                      bidirectional, softmax(q k^T / sqrt(d/heads)) v, q/k/v torch Linear
                  h += mlp(layernorm_after(h))    intermediate.dense -> act -> output.dense,
                                                  or the MoE layer vit.encoder.layer.L.moe
    logits = vit.layernorm(h[:, 0]) @ classifier.weight^T + classifier.bias     [N, classes]
MoE block: as gpt2_ref's, experts fc1 [h, d] / fc2 [d, h] (Linear), expert_activation
defaulting to hidden_act. LayerNorm eps = layer_norm_eps (1e-12). hidden_act: gelu (erf).
Loss: mean class cross-entropy over the N images; accuracy: top-1 (ties to the smaller).

API
    ckpt = gpt2_ref.load(path)
    logits(ckpt, pixels, params=None)          [N, classes]; params override tensors
    evaluate(ckpt, pixels, labels, params=None) -> {"loss", "accuracy"}
    moe_names(ckpt)                            names of every MoE tensor
CLI
    python3 vit_ref.py CKPT EVAL      prints {"loss": ..., "accuracy": ...} as JSON
"""
import json
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_ref  # noqa: E402
from gpt2_ref import _Params, _act, _ln, _softmax, load, read_safetensors  # noqa: E402,F401


def moe_names(ckpt):
    m = ckpt["config"].get("moe") or {}
    pre = tuple("vit.encoder.layer.%d.moe." % L for L in m.get("layers", []))
    return sorted(k for k in ckpt["tensors"] if k.startswith(pre))


def _linear(P, pre, x):
    y = x @ P(pre + "weight").T
    return y + P(pre + "bias") if P.has(pre + "bias") else y


def _expert(P, pre, x, act):
    return _linear(P, pre + "fc2.", _act(act, _linear(P, pre + "fc1.", x)))


def embed(cfg, P, pixels):
    """[N, P + 1, d]: the CLS token, the projected patches, plus the positions"""
    N, C, H, W = pixels.shape
    p, d = cfg["patch_size"], cfg["hidden_size"]
    if C != cfg.get("num_channels", 3) or H != cfg["image_size"] or W != cfg["image_size"]:
        raise ValueError("pixel_values [%d, %d, %d, %d] do not fit the config" % (N, C, H, W))
    s = H // p
    patches = pixels.reshape(N, C, s, p, s, p).transpose(0, 2, 4, 1, 3, 5).reshape(N, s * s, C * p * p)
    pre = "vit.embeddings."
    e = patches @ P(pre + "patch_embeddings.projection.weight").reshape(d, C * p * p).T \
        + P(pre + "patch_embeddings.projection.bias")
    cls = np.broadcast_to(P(pre + "cls_token").reshape(1, 1, d), (N, 1, d))
    return np.concatenate([cls, e], 1) + P(pre + "position_embeddings").reshape(1, s * s + 1, d)


def logits(ckpt, pixels, params=None):
    cfg = ckpt["config"]
    P = _Params(ckpt["tensors"], params)
    d, nh = cfg["hidden_size"], cfg["num_attention_heads"]
    eps, act = cfg.get("layer_norm_eps", 1e-12), cfg.get("hidden_act", "gelu")
    m = dict(cfg.get("moe") or {})
    m.setdefault("expert_activation", act)
    h = embed(cfg, P, np.asarray(pixels, np.float64))
    N, T, hd = h.shape[0], h.shape[1], d // nh
    for L in range(cfg["num_hidden_layers"]):
        pre = "vit.encoder.layer.%d." % L
        a = _ln(h, P(pre + "layernorm_before.weight"), P(pre + "layernorm_before.bias"), eps)
        q, k, v = (_linear(P, pre + "attention.attention.%s." % w, a).reshape(N, T, nh, hd).transpose(0, 2, 1, 3)
                   for w in ("query", "key", "value"))
        o = (_softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)) @ v).transpose(0, 2, 1, 3).reshape(N, T, d)
        h = h + _linear(P, pre + "attention.output.dense.", o)
        x = _ln(h, P(pre + "layernorm_after.weight"), P(pre + "layernorm_after.bias"), eps).reshape(N * T, d)
        if L in set(m.get("layers", [])):
            y = gpt2_ref._moe(P, pre + "moe.", x, m, ffn=_expert)
        else:
            y = _linear(P, pre + "output.dense.", _act(act, _linear(P, pre + "intermediate.dense.", x)))
        h = h + y.reshape(N, T, d)
    z = _ln(h[:, 0], P("vit.layernorm.weight"), P("vit.layernorm.bias"), eps)
    return _linear(P, "classifier.", z)


def evaluate(ckpt, pixels, labels, params=None, batch=64):
    """Mean class cross-entropy (log-sum-exp) and top-1 accuracy, in double."""
    labels = np.asarray(labels, np.int64)
    nll, hit = 0.0, 0
    for i in range(0, len(labels), batch):
        z, y = logits(ckpt, pixels[i:i + batch], params), labels[i:i + batch]
        zmax = z.max(-1)
        lse = zmax + np.log(np.exp(z - zmax[:, None]).sum(-1))
        nll += float((lse - z[np.arange(len(y)), y]).sum())
        hit += int((z.argmax(-1) == y).sum())
    return {"loss": nll / len(labels), "accuracy": hit / len(labels)}


def main(argv):
    if len(argv) != 3:
        print("usage: vit_ref.py CKPT EVAL", file=sys.stderr)
        return 2
    ev = read_safetensors(argv[2])[0]
    print(json.dumps(evaluate(load(argv[1]), ev["pixel_values"], ev["labels"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
