"""gptlib.py - the pieces make_gpt.py and make_qwen3moe.py share: safetensors in and
out (stlib), the learning-rate schedule and the cache of trained states, the fortunes
corpus, and a GPT-2-layout PyTorch model whose
state_dict() names and layouts are Hugging Face's (Conv1D weights [in, out]), with
MoE blocks (dense or top-k router, optional shared experts).

PyTorch is needed only here, at sample-making time (Debian's python3-torch);
tests use the committed files and tests/oracle/gpt2_ref.py (numpy only)."""
import json
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import stlib

FORTUNES = "/usr/share/games/fortunes"

# ---------------------------------------------------------------- safetensors
def st_write(path, tensors, metadata=None):
    """Write {name: ndarray} as safetensors: sorted keys, metadata values as strings
    (stlib; the same arrays give the same bytes)."""
    meta = {k: str(v) for k, v in sorted(metadata.items())} if metadata else None
    stlib.st_write(path, stlib.arrays(tensors), meta, sort_keys=True)


st_read = stlib.st_read


def read_folder(folder):
    """A checkpoint folder (sharded via model.safetensors.index.json, or one
    model.safetensors): (config dict, {name: ndarray})."""
    cfg = json.load(open(os.path.join(folder, "config.json")))
    idx = os.path.join(folder, "model.safetensors.index.json")
    tensors = {}
    if os.path.exists(idx):
        for shard in sorted(set(json.load(open(idx))["weight_map"].values())):
            tensors.update(st_read(os.path.join(folder, shard))[0])
    else:
        tensors.update(st_read(os.path.join(folder, "model.safetensors"))[0])
    return cfg, tensors


# ---------------------------------------------------------------- training
def lr_at(step, steps, lr):
    """Linear warm-up over 5% of the steps, then cosine decay to 0."""
    warm = max(1, steps // 20)
    if step < warm:
        return lr * (step + 1) / warm
    return lr * 0.5 * (1 + math.cos(math.pi * (step - warm) / max(1, steps - warm)))


def cached(work, key, make):
    """A torch state kept in the work folder between runs (a remake resumes, tuning
    the students reuses the teachers); same recipe -> same key -> same state."""
    path = os.path.join(work, key + ".pt")
    if os.path.exists(path):
        return torch.load(path)
    state = make()
    os.makedirs(work, exist_ok=True)
    torch.save(state, path + ".tmp")
    os.replace(path + ".tmp", path)
    return state


# ---------------------------------------------------------------- corpus
def fortune_files():
    """Every topic file of Debian's `fortunes` package (not the .dat/.u8 indexes)."""
    return sorted(f for f in os.listdir(FORTUNES)
                  if "." not in f and os.path.isfile(os.path.join(FORTUNES, f)))


def corpus():
    """(train bytes, test bytes): each file's fortunes (separated by lines '%'),
    fortune i of a file held out when i % 10 == 0. Each kept fortune ends in '%\\n'."""
    train, test = [], []
    for name in fortune_files():
        text = open(os.path.join(FORTUNES, name), "rb").read()
        for i, f in enumerate(text.split(b"\n%\n")):
            f = f.strip(b"\n")
            if f:
                (test if i % 10 == 0 else train).append(f + b"\n%\n")
    return np.frombuffer(b"".join(train), np.uint8), np.frombuffer(b"".join(test), np.uint8)


def eval_windows(test, N=64, T=129):
    """N windows of T bytes at evenly spaced offsets of the held-out text."""
    step = (len(test) - T) // N
    return np.stack([test[i * step:i * step + T] for i in range(N)]).astype(np.int32)


# ---------------------------------------------------------------- model
class Conv1D(nn.Module):
    """GPT-2's Conv1D: y = x @ W + b with W [in, out]."""

    def __init__(self, nin, nout, std=0.02):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nin, nout) * std)
        self.bias = nn.Parameter(torch.zeros(nout))

    def forward(self, x):
        return x @ self.weight + self.bias


def act_fn(name):
    if name == "relu":
        return F.relu
    if name == "gelu":
        return lambda x: F.gelu(x)
    if name == "gelu_new":
        return lambda x: 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    raise ValueError(name)


class MLP(nn.Module):
    def __init__(self, d, h, act):
        super().__init__()
        self.c_fc, self.c_proj, self.act = Conv1D(d, h), Conv1D(h, d), act_fn(act)

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class MoE(nn.Module):
    """D(x) = sum_shared E_s(x) + sum_i g_i(x) E_i(x). Every expert is computed on
    every token (n <= 8, tiny experts: simpler and as fast as dispatching)."""

    def __init__(self, d, h, n, k, router, shared, act, gate_bias=True):
        super().__init__()
        self.n, self.k, self.router = n, k, router
        self.gate = nn.Linear(d, n, bias=gate_bias)
        self.experts = nn.ModuleList(MLP(d, h, act) for _ in range(n))
        if shared:
            self.shared_experts = nn.ModuleList(MLP(d, h, act) for _ in range(shared))
        self.aux = None

    def gates(self, x):
        s = self.gate(x)
        p = torch.softmax(s, -1)
        if self.router == "dense":
            return s, p, p
        top = torch.topk(s, self.k, dim=-1).indices
        mask = torch.zeros_like(s).scatter_(-1, top, 1.0)
        g = torch.softmax(s.masked_fill(mask == 0, float("-inf")), -1)
        return s, p, g

    def forward(self, x):
        s, p, g = self.gates(x)
        if self.router == "topk":
            # Switch-style load balancing: n * sum_i f_i P_i (f = share of routed slots)
            f = (g > 0).float().reshape(-1, self.n).mean(0) / self.k
            self.aux = self.n * (f * p.reshape(-1, self.n).mean(0)).sum()
        else:
            self.aux = torch.zeros(())
        if self.router == "dense":
            y = torch.stack([e(x) for e in self.experts], -2)  # [..., n, d]
            out = (g.unsqueeze(-1) * y).sum(-2)
        else:  # each expert only on the tokens routed to it (k/n of the work)
            shape = x.shape
            xf, gf = x.reshape(-1, shape[-1]), g.reshape(-1, self.n)
            out = torch.zeros_like(xf)
            for i, e in enumerate(self.experts):
                idx = torch.nonzero(gf[:, i] > 0).squeeze(1)
                if len(idx):
                    out = out.index_add(0, idx, gf[idx, i:i + 1] * e(xf[idx]))
            out = out.reshape(shape)
        for e in getattr(self, "shared_experts", []):
            out = out + e(x)
        return out


class Attn(nn.Module):
    def __init__(self, d, nh):
        super().__init__()
        self.nh = nh
        self.c_attn, self.c_proj = Conv1D(d, 3 * d), Conv1D(d, d)

    def forward(self, x):
        B, T, d = x.shape
        q, k, v = self.c_attn(x).split(d, -1)
        sh = lambda t: t.view(B, T, self.nh, d // self.nh).transpose(1, 2)
        q, k, v = sh(q), sh(k), sh(v)
        a = (q @ k.transpose(-1, -2)) / math.sqrt(d // self.nh)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        a = a.masked_fill(~mask, float("-inf")).softmax(-1)
        return self.c_proj((a @ v).transpose(1, 2).reshape(B, T, d))


class Block(nn.Module):
    def __init__(self, cfg, L):
        super().__init__()
        d = cfg["n_embd"]
        self.ln_1 = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])
        self.attn = Attn(d, cfg["n_head"])
        self.ln_2 = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])
        m = cfg.get("moe")
        if m and L in m["layers"]:
            self.mlp = MoE(d, m["expert_hidden"], m["num_experts"], m["top_k"], m["router"],
                           m["num_shared_experts"], m["expert_activation"], m.get("gate_bias", True))
        else:
            self.mlp = MLP(d, 4 * d, cfg["activation_function"])

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d = cfg["n_embd"]
        self.transformer = nn.Module()
        self.transformer.wte = nn.Embedding(cfg["vocab_size"], d)
        self.transformer.wpe = nn.Embedding(cfg["n_positions"], d)
        self.transformer.h = nn.ModuleList(Block(cfg, L) for L in range(cfg["n_layer"]))
        self.transformer.ln_f = nn.LayerNorm(d, eps=cfg["layer_norm_epsilon"])
        for name, p in self.named_parameters():  # GPT-2's init
            if name.endswith("wte.weight") or name.endswith("wpe.weight"):
                nn.init.normal_(p, std=0.02)
            if name.endswith("c_proj.weight"):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg["n_layer"]))

    def moe_blocks(self):
        return [b.mlp for b in self.transformer.h if isinstance(b.mlp, MoE)]

    def embed(self, ids):
        t = self.transformer
        return t.wte(ids) + t.wpe(torch.arange(ids.shape[1]))

    def forward(self, ids, start=0, h=None):
        """Logits; with start > 0, h is the residual stream entering block `start`."""
        t = self.transformer
        if h is None:
            h = self.embed(ids)
        for b in t.h[start:]:
            h = b(h)
        return t.ln_f(h) @ t.wte.weight.T


def lm_loss(logits, ids):
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1).long())


def is_moe_tensor(name, cfg):
    m = cfg.get("moe")
    return bool(m) and any(name.startswith("transformer.h.%d.mlp." % L) for L in m["layers"])


def hf_config(cfg):
    """config.json: the GPT-2 keys plus the "moe" object (expert width as
    "expert_intermediate_size")."""
    out = {k: cfg[k] for k in ("model_type", "n_embd", "n_layer", "n_head", "n_positions",
                               "vocab_size", "layer_norm_epsilon", "activation_function",
                               "tie_word_embeddings")}
    out["architectures"] = ["GPT2LMHeadModel"]
    m = cfg.get("moe")
    if m:
        out["moe"] = {"layers": m["layers"], "num_experts": m["num_experts"], "top_k": m["top_k"],
                      "router": m["router"], "num_shared_experts": m["num_shared_experts"],
                      "expert_activation": m["expert_activation"],
                      "expert_intermediate_size": m["expert_hidden"]}
    return out


def cfg_from_hf(hf):
    cfg = dict(hf)
    if "moe" in hf:
        cfg["moe"] = dict(hf["moe"], expert_hidden=hf["moe"]["expert_intermediate_size"])
    return cfg


def model_from_folder(folder):
    cfg, tensors = read_folder(folder)
    cfg = cfg_from_hf(cfg)
    if "moe" in cfg:
        cfg["moe"]["gate_bias"] = any(k.endswith("mlp.gate.bias") for k in tensors)
    model = GPT(cfg)
    sd = {k: torch.from_numpy(v.astype(np.float32)) for k, v in tensors.items()}
    model.load_state_dict(sd, strict=True)
    return model, tensors
