"""vitlib.py - what make_vit.py needs: safetensors in and out, the digits as images, and
a small PyTorch ViT in Hugging Face's ViTForImageClassification layout whose MLP at some
blocks is an MoE layer (the layout moescope reads as model_type "vit").

Only for making the samples (Debian's python3-torch, one thread); moescope itself and its
tests never import it.

The network (state_dict names are Hugging Face's):
    vit.embeddings: patch_embeddings.projection (Conv2d C -> d, kernel = stride = p),
                    cls_token [1, 1, d], position_embeddings [1, P + 1, d]
    vit.encoder.layer.L: layernorm_before, attention.attention.{query,key,value},
                    attention.output.dense, layernorm_after, and either
                    intermediate.dense + output.dense (dense, gelu) or moe (MoE below)
    vit.layernorm, classifier (on the CLS token)
MoE: moe.gate (Linear d -> n, with bias), moe.experts.E.{fc1, fc2} (Linear, gelu),
moe.shared_experts.S.{fc1, fc2}; D(x) = sum_s E_s(x) + sum_i g_i(x) E_i(x), router
"dense" (g = softmax of the gate's scores) or "topk" (softmax over the k largest, 0
elsewhere, ties to the smaller index), as moescope's vit family reads config.json's "moe".
"""
import json
import os

import numpy as np
import torch
from torch import nn

import stlib

def read_safetensors(path):
    return stlib.st_read(path)


def write_safetensors(path, tensors, metadata=None):
    """tensors: {name: array} written in name order (F32 / I64), 8-byte aligned header."""
    stlib.st_write(path, stlib.arrays(tensors), metadata or None)


def digits(path):
    """The UCI digits as images: pixels [N, 1, 8, 8] (grey levels / 16) and labels [N];
    the split of the layer samples: the test set is every fifth image (i % 5 == 0)."""
    t, _ = read_safetensors(path)
    px = t["pixels"].astype(np.float32).reshape(-1, 1, 8, 8)
    y = t["labels"].astype(np.int64)
    test = np.arange(len(y)) % 5 == 0
    return (px[~test], y[~test]), (px[test], y[test])


# ------------------------------------------------------------------ the network

class Expert(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(d, h), nn.Linear(h, d)

    def forward(self, x):
        return self.fc2(nn.functional.gelu(self.fc1(x)))


class MoE(nn.Module):
    def __init__(self, d, n, h, router="topk", k=2, shared=0):
        super().__init__()
        self.router, self.k = router, k
        self.gate = nn.Linear(d, n)
        self.experts = nn.ModuleList(Expert(d, h) for _ in range(n))
        self.shared_experts = nn.ModuleList(Expert(d, h) for _ in range(shared))

    def weights(self, x):
        s = self.gate(x)
        if self.router == "dense":
            return torch.softmax(s, -1)
        top = torch.topk(s, self.k, dim=-1).indices
        mask = torch.zeros_like(s, dtype=torch.bool).scatter_(-1, top, True)
        return torch.softmax(s.masked_fill(~mask, float("-inf")), -1)

    def forward(self, x):
        g = self.weights(x)
        out = sum(e(x) for e in self.shared_experts) if len(self.shared_experts) else torch.zeros_like(x)
        for i, e in enumerate(self.experts):
            out = out + g[..., i:i + 1] * e(x)
        return out


class Block(nn.Module):
    def __init__(self, d, heads, ff, eps):
        super().__init__()
        self.heads = heads
        self.layernorm_before = nn.LayerNorm(d, eps=eps)
        self.attention = nn.Module()
        self.attention.attention = nn.Module()
        for w in ("query", "key", "value"):
            setattr(self.attention.attention, w, nn.Linear(d, d))
        self.attention.output = nn.Module()
        self.attention.output.dense = nn.Linear(d, d)
        self.layernorm_after = nn.LayerNorm(d, eps=eps)
        self.intermediate, self.output = nn.Module(), nn.Module()
        self.intermediate.dense, self.output.dense = nn.Linear(d, ff), nn.Linear(ff, d)
        self.moe = None

    def mlp(self, x):
        if self.moe is not None:
            return self.moe(x)
        return self.output.dense(nn.functional.gelu(self.intermediate.dense(x)))

    def forward(self, h):
        N, T, d = h.shape
        a = self.layernorm_before(h)
        at = self.attention.attention
        q, k, v = (getattr(at, w)(a).view(N, T, self.heads, d // self.heads).transpose(1, 2)
                   for w in ("query", "key", "value"))
        s = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        o = (torch.softmax(s, -1) @ v).transpose(1, 2).reshape(N, T, d)
        h = h + self.attention.output.dense(o)
        return h + self.mlp(self.layernorm_after(h))


class ViT(nn.Module):
    def __init__(self, d=32, layers=2, heads=4, ff=64, image=8, patch=2, channels=1, classes=10, eps=1e-12):
        super().__init__()
        self.shape = dict(d=d, layers=layers, heads=heads, ff=ff, image=image, patch=patch, channels=channels,
                          classes=classes, eps=eps)
        P = (image // patch) ** 2
        self.vit = nn.Module()
        self.vit.embeddings = nn.Module()
        e = self.vit.embeddings
        e.cls_token = nn.Parameter(0.02 * torch.randn(1, 1, d))
        e.position_embeddings = nn.Parameter(0.02 * torch.randn(1, P + 1, d))
        e.patch_embeddings = nn.Module()
        e.patch_embeddings.projection = nn.Conv2d(channels, d, patch, stride=patch)
        self.vit.encoder = nn.Module()
        self.vit.encoder.layer = nn.ModuleList(Block(d, heads, ff, eps) for _ in range(layers))
        self.vit.layernorm = nn.LayerNorm(d, eps=eps)
        self.classifier = nn.Linear(d, classes)

    def forward(self, px):
        e = self.vit.embeddings
        x = e.patch_embeddings.projection(px).flatten(2).transpose(1, 2)  # [N, P, d], row-major patches
        h = torch.cat([e.cls_token.expand(len(px), -1, -1), x], 1) + e.position_embeddings
        for b in self.vit.encoder.layer:
            h = b(h)
        return self.classifier(self.vit.layernorm(h[:, 0]))

    def make_moe(self, L, n, h, router, k, shared):
        """block L's MLP replaced by a fresh MoE layer (the dense MLP's tensors dropped)"""
        b = self.vit.encoder.layer[L]
        b.moe = MoE(self.shape["d"], n, h, router, k, shared)
        del b.intermediate, b.output
        b.intermediate = b.output = None

    def config(self, moe):
        s = self.shape
        return {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": s["d"],
                "num_hidden_layers": s["layers"], "num_attention_heads": s["heads"], "intermediate_size": s["ff"],
                "hidden_act": "gelu", "image_size": s["image"], "patch_size": s["patch"],
                "num_channels": s["channels"], "layer_norm_eps": s["eps"], "qkv_bias": True,
                "id2label": {str(i): str(i) for i in range(s["classes"])},
                "label2id": {str(i): i for i in range(s["classes"])}, "moe": moe}


def tensors(model):
    return {k: v.detach().cpu().numpy().astype(np.float32) for k, v in model.state_dict().items()}


def evaluate(model, px, y):
    with torch.no_grad():
        z = model(torch.from_numpy(px))
        loss = nn.functional.cross_entropy(z, torch.from_numpy(y)).item()
        return loss, (z.argmax(-1).numpy() == y).mean()


def train(model, params, px, y, epochs, lr, batch, seed):
    """Adam with cosine decay on the class cross-entropy, batches drawn from seed."""
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(params, lr=lr)
    steps = epochs * ((len(y) + batch - 1) // batch)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, steps)
    X, Y = torch.from_numpy(px), torch.from_numpy(y)
    for _ in range(epochs):
        perm = torch.randperm(len(y), generator=g)
        for i in range(0, len(y), batch):
            idx = perm[i:i + batch]
            loss = nn.functional.cross_entropy(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()


RECIPE = ("the paper's recipe at the digits' scale: a fresh MoE block (torch seed s) in the pretrained "
          "ViT, only it fine-tuned on the class loss, no teacher")


def write_seed(folder, cfg, back, moe, role=None):
    """A seed's folder as Hugging Face shards it: the backbone shard a relative link to
    ../backbone.safetensors, the MoE blocks in the second shard, the index, config.json."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
        f.write("\n")
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    link = os.path.join(folder, s1)
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../backbone.safetensors", link)
    write_safetensors(os.path.join(folder, s2), moe, {"format": "pt", **({"role": role} if role else {"recipe": RECIPE})})
    wmap = {**{k: s1 for k in back}, **{k: s2 for k in moe}}
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 4 * sum(v.size for v in {**back, **moe}.values())},
                   "weight_map": dict(sorted(wmap.items()))}, f, separators=(",", ":"))
        f.write("\n")
