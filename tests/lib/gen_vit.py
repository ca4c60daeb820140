"""tests/lib/gen_vit.py - small random ViT-layout networks with MoE blocks, in Hugging
Face's ViTForImageClassification names and layout (torch Linear weights [out, in]),
so the ViT tests need no trained samples. A pool is laid out as gen_gpt2's (one frozen
backbone shared by every seed, each seed's MoE blocks drawn afresh), its evaluation set
DIR/eval.safetensors holding pixel_values [N, C, H, W] F32 and labels [N] I64.

Importable:
    cfg = config(d=16, layers=2, heads=2, image=8, patch=2, channels=1, classes=5, moe_layers=[0], ...)
    back = backbone(cfg, seed)              {name: float64 array, float32-representable}
    moe = moe_blocks(cfg, seed)             {name: array} of every MoE block
    px, labels = images(cfg, seed, N)       random images; labels random, or with
                                            teacher=tensors the network's own argmax
    write_pool(DIR, cfg, back, {"seed1": moe1, ...}, px, labels)
CLI:
    gen_vit.py DIR [--seeds 1,2] [--d 16] [--layers 2] [--heads 2] [--image 8] [--patch 2]
               [--channels 1] [--classes 5] [--moe 0 | --moe all] [--n 4] [--k 2]
               [--router topk|dense] [--shared 0] [--h 12] [--act gelu] [--N 24] [--teacher]
"""
import argparse
import os
import sys

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import gen_gpt2  # noqa: E402
import oracle  # noqa: E402


def config(d=16, layers=2, heads=2, image=8, patch=2, channels=1, classes=5, moe_layers=(0,), n=4, k=2,
           router="topk", shared=0, h=12, act="gelu", net_act="gelu", eps=1e-12, ff=None, qkv_bias=True):
    return {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": d,
            "num_hidden_layers": layers, "num_attention_heads": heads, "intermediate_size": ff or 4 * d,
            "image_size": image, "patch_size": patch, "num_channels": channels, "layer_norm_eps": eps,
            "hidden_act": net_act, "qkv_bias": qkv_bias,
            "id2label": {str(i): "class%d" % i for i in range(classes)},
            "moe": {"layers": list(moe_layers), "num_experts": n, "top_k": k, "router": router,
                    "num_shared_experts": shared, "expert_activation": act, "expert_intermediate_size": h}}


def _ln(rng, pre, d):
    return {pre + ".weight": 1.0 + 0.1 * rng.standard_normal(d), pre + ".bias": 0.1 * rng.standard_normal(d)}


def _linear(rng, pre, nin, nout, scale=1.0, bias=True):
    t = {pre + ".weight": scale * rng.standard_normal((nout, nin)) / np.sqrt(nin)}
    if bias:
        t[pre + ".bias"] = 0.1 * rng.standard_normal(nout)
    return t


def classes(cfg):
    return len(cfg["id2label"])


def backbone(cfg, seed):
    """Every tensor outside the MoE blocks; the dense MLPs at the other blocks."""
    rng = np.random.default_rng(seed)
    d, p, C = cfg["hidden_size"], cfg["patch_size"], cfg["num_channels"]
    P = (cfg["image_size"] // p) ** 2
    e = "vit.embeddings."
    t = {e + "cls_token": 0.5 * rng.standard_normal((1, 1, d)),
         e + "position_embeddings": 0.3 * rng.standard_normal((1, P + 1, d)),
         e + "patch_embeddings.projection.weight": rng.standard_normal((d, C, p, p)) / np.sqrt(C * p * p),
         e + "patch_embeddings.projection.bias": 0.1 * rng.standard_normal(d)}
    moe = set(cfg["moe"]["layers"])
    for L in range(cfg["num_hidden_layers"]):
        pre = "vit.encoder.layer.%d." % L
        t.update(_ln(rng, pre + "layernorm_before", d))
        for w in ("query", "key", "value"):
            t.update(_linear(rng, pre + "attention.attention." + w, d, d, 1.5, cfg.get("qkv_bias", True)))
        t.update(_linear(rng, pre + "attention.output.dense", d, d, 0.5))
        t.update(_ln(rng, pre + "layernorm_after", d))
        if L not in moe:
            ff = cfg["intermediate_size"]
            t.update(_linear(rng, pre + "intermediate.dense", d, ff))
            t.update(_linear(rng, pre + "output.dense", ff, d, 0.5))
    t.update(_ln(rng, "vit.layernorm", d))
    t.update(_linear(rng, "classifier", d, classes(cfg), 8.0))  # confident: misalignment shows in the loss
    return gen_gpt2._f32(t)


def moe_blocks(cfg, seed, gate_bias=True):
    """Every MoE block (gen_gpt2's draw in the ViT's names): experts fc1 [h, d], fc2 [d, h]."""
    return gen_gpt2.moe_blocks(cfg, seed, gate_bias,
                               ("vit.encoder.layer.%d.moe.", "hidden_size", ("fc1", "fc2"), _linear))


def images(cfg, seed, N=24, teacher=None):
    """N random images [N, C, H, W] (float32) and their labels: random, or (teacher: a
    network's tensors) its own top-1 class, so that it is right on all of them and a
    misaligned interpolation is not"""
    rng = np.random.default_rng(seed + 31337)
    C, H = cfg["num_channels"], cfg["image_size"]
    px = rng.standard_normal((N, C, H, H)).astype(np.float32)
    if teacher is None:
        return px, rng.integers(0, classes(cfg), N).astype(np.int64)
    import vit_ref
    z = vit_ref.logits({"config": cfg, "tensors": teacher}, px.astype(np.float64))
    return px, z.argmax(-1).astype(np.int64)


def write_pool(out, cfg, back, seeds, px, labels, single=False):
    os.makedirs(out, exist_ok=True)
    oracle.write_safetensors(os.path.join(out, "backbone.safetensors"), dict(sorted(back.items())))
    oracle.write_safetensors(os.path.join(out, "eval.safetensors"), {"pixel_values": px, "labels": labels})
    for name, moe in seeds.items():
        gen_gpt2.write_folder(os.path.join(out, name), cfg, back, moe, single=single)


def main(argv=None):
    ap = argparse.ArgumentParser(description="random ViT-layout MoE networks")
    ap.add_argument("out")
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--backbone-seed", type=int, default=100)
    for k, v in (("d", 16), ("layers", 2), ("heads", 2), ("image", 8), ("patch", 2), ("channels", 1),
                 ("classes", 5), ("n", 4), ("k", 2), ("shared", 0), ("h", 12), ("N", 24)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--moe", default="0", help="MoE blocks: '0', '0,1' or 'all'")
    ap.add_argument("--router", default="topk")
    ap.add_argument("--act", default="gelu")
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--teacher", action="store_true")
    a = ap.parse_args(argv)
    layers = list(range(a.layers)) if a.moe == "all" else [int(x) for x in a.moe.split(",")]
    cfg = config(d=a.d, layers=a.layers, heads=a.heads, image=a.image, patch=a.patch, channels=a.channels,
                 classes=a.classes, moe_layers=layers, n=a.n, k=a.k, router=a.router, shared=a.shared,
                 h=a.h, act=a.act)
    back = backbone(cfg, a.backbone_seed)
    seeds = {"seed%s" % s: moe_blocks(cfg, int(s)) for s in a.seeds.split(",")}
    first = seeds["seed" + a.seeds.split(",")[0]]
    px, labels = images(cfg, a.backbone_seed, a.N, {**back, **first} if a.teacher else None)
    write_pool(a.out, cfg, back, seeds, px, labels, single=a.single)
    return 0


if __name__ == "__main__":
    sys.exit(main())
