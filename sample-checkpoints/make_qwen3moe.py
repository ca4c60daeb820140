#!/usr/bin/env python3
"""make_qwen3moe.py - sample-checkpoints/qwen3moe/: a pool of four seeds in Hugging Face's
Qwen3-MoE layout (Qwen3MoeForCausalLM: config.json with model_type "qwen3_moe", the
tensor names transformers saves), trained here with PyTorch on the fortunes bytes.

The paper's recipe, no teacher: a small Qwen3-MoE (two layers: layer 0 dense by
mlp_only_layers, layer 1's MLP an MoE of 4 SwiGLU experts, top-2 with renormalised
weights) is pretrained whole (the base); then for each seed s its MoE is drawn afresh
(torch seed 7000 + 100 s) and only the MoE trained on the next-token loss, every other
weight the base's, frozen.
Recipe and numbers: sample-checkpoints/README.md, "The Qwen3-MoE pool".

usage: /usr/bin/python3 make_qwen3moe.py [--out DIR] [--work DIR]

Same PyTorch build, same files (one thread, fixed seeds). Needs Debian's python3-torch
and fortunes. The forward below follows transformers' modeling_qwen3_moe.py; the tests
check the committed files against tests/lib/decoder_ref.py (numpy)."""
import argparse
import json
import os
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gptlib as G  # noqa: E402  (the corpus, the evaluation windows, safetensors)

torch.set_num_threads(1)  # shared machine, and one thread keeps runs reproducible

CONFIG = {  # config.json: Qwen3-MoE's own keys, tiny sizes, bytes as tokens
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "vocab_size": 256, "hidden_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
    "intermediate_size": 256, "moe_intermediate_size": 64, "num_experts": 4,
    "num_experts_per_tok": 2, "norm_topk_prob": True, "decoder_sparse_step": 1,
    "mlp_only_layers": [0], "max_position_embeddings": 256, "rope_theta": 10000.0,
    "rope_scaling": None, "rms_norm_eps": 1e-6, "hidden_act": "silu",
    "attention_bias": False, "attention_dropout": 0.0, "use_sliding_window": False,
    "sliding_window": None, "max_window_layers": 2, "tie_word_embeddings": False,
    "initializer_range": 0.02, "output_router_logits": False,
    "router_aux_loss_coef": 0.01, "torch_dtype": "float32", "use_cache": True}
MOE_LAYER = 1
EVAL_WINDOWS = 32  # of 129 bytes: 4,096 next-token positions
SEEDS = [1, 2, 3, 4]
RECIPE = dict(pre_steps=300, pre_lr=3e-3,   # the base: every weight trained
              lm_steps=300, lm_lr=3e-3,      # each seed: only its fresh MoE trained, on
              lm_windows=1024,               # these training windows (the frozen prefix kept)
              batch=16, T=129, aux=0.01, seed_base=7000)
WHAT = ("the paper's recipe: a fresh MoE (torch seed %d + 100 s) in the base model's frozen "
        "backbone, trained on the next-token (LM) loss alone, no teacher")


# ---------------------------------------------------------------- the model
class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight, self.eps = nn.Parameter(torch.ones(n)), eps

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def lin(nin, nout):
    m = nn.Linear(nin, nout, bias=False)
    nn.init.normal_(m.weight, std=CONFIG["initializer_range"])
    return m


class SwiGLU(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.gate_proj, self.up_proj, self.down_proj = lin(d, h), lin(d, h), lin(h, d)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class MoE(nn.Module):
    """Qwen3MoeSparseMoeBlock: softmax over the gate's logits, top-k, renormalised."""

    def __init__(self, c):
        super().__init__()
        self.n, self.k = c["num_experts"], c["num_experts_per_tok"]
        self.gate = lin(c["hidden_size"], self.n)
        self.experts = nn.ModuleList(SwiGLU(c["hidden_size"], c["moe_intermediate_size"]) for _ in range(self.n))
        self.aux = None

    def forward(self, x):
        shape = x.shape
        xf = x.reshape(-1, shape[-1])
        p = torch.softmax(self.gate(xf), -1)
        w, top = torch.topk(p, self.k, -1)
        w = w / w.sum(-1, keepdim=True)
        mask = F.one_hot(top, self.n).float()  # [tokens, k, n]
        # transformers' load_balancing_loss_func: n * sum_e (share of slots) (mean prob)
        self.aux = self.n * (mask.mean(0).sum(0) / self.k * p.mean(0)).sum()
        g = (mask * w.unsqueeze(-1)).sum(1)  # [tokens, n]
        out = torch.zeros_like(xf)
        for e, ex in enumerate(self.experts):
            idx = torch.nonzero(g[:, e] > 0).squeeze(1)
            if len(idx):
                out = out.index_add(0, idx, g[idx, e:e + 1] * ex(xf[idx]))
        return out.reshape(shape)


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat([-x[..., h:], x[..., :h]], -1)


class Attention(nn.Module):
    """Qwen3MoeAttention: GQA, q/k RMSNorm per head before RoPE, no biases."""

    def __init__(self, c):
        super().__init__()
        d, self.nh, self.kv, self.hd = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        self.q_proj, self.k_proj = lin(d, self.nh * self.hd), lin(d, self.kv * self.hd)
        self.v_proj, self.o_proj = lin(d, self.kv * self.hd), lin(self.nh * self.hd, d)
        self.q_norm, self.k_norm = RMSNorm(self.hd, c["rms_norm_eps"]), RMSNorm(self.hd, c["rms_norm_eps"])
        f = 1.0 / c["rope_theta"] ** (torch.arange(0, self.hd, 2, dtype=torch.float32) / self.hd)
        self.register_buffer("inv_freq", f, persistent=False)

    def forward(self, x):
        B, T, _ = x.shape
        q = self.q_norm(self.q_proj(x).view(B, T, self.nh, self.hd)).transpose(1, 2)
        k = self.k_norm(self.k_proj(x).view(B, T, self.kv, self.hd)).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        fr = torch.arange(T, dtype=torch.float32)[:, None] * self.inv_freq[None, :]
        emb = torch.cat([fr, fr], -1)
        cos, sin = emb.cos(), emb.sin()
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.nh // self.kv
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = (q @ k.transpose(-1, -2)) * self.hd ** -0.5
        a = a.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
        return self.o_proj((a @ v).transpose(1, 2).reshape(B, T, -1))


class Layer(nn.Module):
    def __init__(self, c, i):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        dense = i in c["mlp_only_layers"]
        self.mlp = SwiGLU(c["hidden_size"], c["intermediate_size"]) if dense else MoE(c)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class Qwen3Moe(nn.Module):
    """state_dict() names are Qwen3MoeForCausalLM's."""

    def __init__(self, c):
        super().__init__()
        self.model = nn.Module()
        self.model.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        nn.init.normal_(self.model.embed_tokens.weight, std=c["initializer_range"])
        self.model.layers = nn.ModuleList(Layer(c, i) for i in range(c["num_hidden_layers"]))
        self.model.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = lin(c["hidden_size"], c["vocab_size"])

    def moe(self):
        return self.model.layers[MOE_LAYER].mlp

    def forward(self, ids):
        h = self.model.embed_tokens(ids)
        for layer in self.model.layers:
            h = layer(h)
        return self.lm_head(self.model.norm(h))

    @torch.no_grad()
    def prefix(self, ids):
        """The residual stream entering the MoE (after its layer's attention): frozen."""
        h = self.model.embed_tokens(ids)
        for layer in self.model.layers[:MOE_LAYER]:
            h = layer(h)
        layer = self.model.layers[MOE_LAYER]
        return h + layer.self_attn(layer.input_layernorm(h))

    def from_prefix(self, h):
        layer = self.model.layers[MOE_LAYER]
        h = h + layer.mlp(layer.post_attention_layernorm(h))
        for later in self.model.layers[MOE_LAYER + 1:]:
            h = later(h)
        return self.lm_head(self.model.norm(h))


def is_moe_tensor(name):
    return name.startswith("model.layers.%d.mlp." % MOE_LAYER)


# ---------------------------------------------------------------- training

def windows(data, off, T):
    return torch.stack([torch.from_numpy(data[o:o + T].astype(np.int64)) for o in off])


def train_lm(model, params, data, steps, lr, r, seed, tag, pool=None):
    """Next-token cross-entropy + aux x load balancing; AdamW (0.9, 0.95), no weight
    decay, gradient clipping at 1; the seed sets the order of the mini-batches: random
    windows of the training text, or (pool = (ids, prefixes)) of a fixed set of them
    whose frozen prefix is computed once."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    t0, run = time.time(), None
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = G.lr_at(step, steps, lr)
        if pool is None:
            ids = windows(data, torch.randint(0, len(data) - r["T"], (r["batch"],), generator=gen).tolist(), r["T"])
            logits = model(ids)
        else:
            pick = torch.randint(0, len(pool[0]), (r["batch"],), generator=gen)
            ids, logits = pool[0][pick], model.from_prefix(pool[1][pick])
        loss = G.lm_loss(logits, ids)
        opt.zero_grad(set_to_none=True)
        (loss + r["aux"] * model.moe().aux).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if step % 100 == 0 or step == steps - 1:
            print("%s step %d loss %.4f (%.0f s)" % (tag, step, run, time.time() - t0), flush=True)


@torch.no_grad()
def evaluate(model, ids):
    logits = model(ids)
    acc = (logits[:, :-1].argmax(-1) == ids[:, 1:]).float().mean().item()
    return G.lm_loss(logits, ids).item(), acc


# ---------------------------------------------------------------- files
def write_seed(d, back, moe, meta):
    """A Hugging Face folder: shard 1 a link to ../backbone.safetensors, shard 2 the MoE."""
    os.makedirs(d, exist_ok=True)
    s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
    if os.path.lexists(os.path.join(d, s1)):
        os.remove(os.path.join(d, s1))
    os.symlink("../backbone.safetensors", os.path.join(d, s1))
    G.st_write(os.path.join(d, s2), moe, meta)
    wmap = dict({k: s1 for k in back}, **{k: s2 for k in moe})
    size = sum(v.nbytes for v in back.values()) + sum(v.nbytes for v in moe.values())
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": dict(sorted(wmap.items()))}, f, indent=2)
        f.write("\n")
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
        f.write("\n")


def numpy_sd(model):
    return {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}


def make(out, work):
    r = RECIPE
    key = "-".join("%s%s" % (k, r[k]) for k in sorted(r))
    train_b, test_b = G.corpus()
    ev = G.eval_windows(test_b, N=EVAL_WINDOWS).astype(np.int64)
    ev_t = torch.from_numpy(ev)

    def pretrain():
        torch.manual_seed(0)
        m = Qwen3Moe(CONFIG)
        train_lm(m, list(m.parameters()), train_b, r["pre_steps"], r["pre_lr"], r, 0, "base")
        return m.state_dict()
    model = Qwen3Moe(CONFIG)
    model.load_state_dict(G.cached(work, "base-" + key, pretrain))
    bl, ba = evaluate(model, ev_t)
    print("base: test loss %.4f acc %.4f" % (bl, ba), flush=True)
    for p in model.parameters():
        p.requires_grad_(False)
    back = {k: v for k, v in numpy_sd(model).items() if not is_moe_tensor(k)}
    os.makedirs(out, exist_ok=True)
    G.st_write(os.path.join(out, "eval.safetensors"), {"input_ids": ev},
               {"data": "fortunes, held-out fortunes (i % 10 == 0)", "windows": "%d x 129 bytes, evenly spaced" % EVAL_WINDOWS})
    G.st_write(os.path.join(out, "backbone.safetensors"), back,
               {"role": "the frozen backbone every seed shares (every tensor but layer 1's MoE)",
                "recipe_settings": json.dumps(r, sort_keys=True), "base_test_loss": "%.6f" % bl})
    gen = torch.Generator().manual_seed(123)
    ids = windows(train_b, torch.randint(0, len(train_b) - r["T"], (r["lm_windows"],), generator=gen).tolist(), r["T"])
    pool = (ids, torch.cat([model.prefix(ids[i:i + 64]) for i in range(0, len(ids), 64)]))
    for s in SEEDS:
        sid = r["seed_base"] + 100 * s
        torch.manual_seed(sid)
        model.model.layers[MOE_LAYER].mlp = MoE(CONFIG)
        params = list(model.moe().parameters())

        def student():
            train_lm(model, params, train_b, r["lm_steps"], r["lm_lr"], r, sid, "seed%d" % s, pool)
            return model.moe().state_dict()
        model.moe().load_state_dict(G.cached(work, "seed%d-%s" % (s, key), student))
        loss, acc = evaluate(model, ev_t)
        print("seed%d: test loss %.4f acc %.4f" % (s, loss, acc), flush=True)
        moe = {k: v for k, v in numpy_sd(model).items() if is_moe_tensor(k)}
        write_seed(os.path.join(out, "seed%d" % s), back, moe, {
            "recipe": WHAT % r["seed_base"], "recipe_settings": json.dumps(r, sort_keys=True),
            "seed": s, "test_loss": "%.6f" % loss, "test_acc": "%.6f" % acc, "base_test_loss": "%.6f" % bl})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "qwen3moe"))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "make_qwen3moe-work"),
                    help="cache of the trained states between runs")
    a = ap.parse_args()
    t0 = time.time()
    make(a.out, a.work)
    print("qwen3moe done in %.0f s" % (time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
