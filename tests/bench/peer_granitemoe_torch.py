"""tests/bench/peer_granitemoe_torch.py - PyTorch's CPU forward of a granitemoe
checkpoint (a port of transformers' modeling_granitemoe.py, inference only): the
peer of tests/bench/bench_decoder.py. Weights read from the BF16 shards into
float32 (CPUs without BF16 arithmetic compute in float32 either way), routed
tokens gathered per expert as transformers' GraniteMoeParallelExperts does.

  peer_granitemoe_torch.py CKPT_DIR EVAL THREADS REPS
(run by benchlib.run_on_cores: THREADS cores, its pools that size; here THREADS
intra-op threads, one inter-op) prints PEER_THREADS (benchlib.torch_threads) and
"PEER_DECODER_SECONDS best CPU cpu LOSS loss" (the loss: mean next-token
cross-entropy, as moescope eval reports it)."""
import json
import os
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402


def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        raw = np.frombuffer(data, np.uint16 if h["dtype"] == "BF16" else np.int64, (b - a) // (2 if h["dtype"] == "BF16" else 8), a)
        if h["dtype"] == "BF16":
            t = torch.from_numpy((raw.astype(np.uint32) << 16).view(np.float32).reshape(h["shape"]).copy())
        else:
            t = torch.from_numpy(raw.reshape(h["shape"]).copy())
        out[name] = t
    return out


def load(folder):
    c = json.load(open(os.path.join(folder, "config.json")))
    idx = json.load(open(os.path.join(folder, "model.safetensors.index.json")))
    t = {}
    for fn in sorted(set(idx["weight_map"].values())):
        t.update(read_safetensors(os.path.join(folder, fn)))
    return c, t


def rms(x, w, eps):
    return w * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], -1) * sin


def forward(c, t, ids):
    N, T = ids.shape
    d, nh, nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
    hd, k, eps = d // nh, c["num_experts_per_tok"], c["rms_norm_eps"]
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
    fr = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    emb = torch.cat([fr, fr], -1)
    cos, sin = emb.cos(), emb.sin()
    x = t["model.embed_tokens.weight"][ids] * c["embedding_multiplier"]
    mask = torch.full((T, T), float("-inf")).triu(1)
    for i in range(c["num_hidden_layers"]):
        P = "model.layers.%d." % i
        y = rms(x, t[P + "input_layernorm.weight"], eps)
        q = (y @ t[P + "self_attn.q_proj.weight"].T).view(N, T, nh, hd).transpose(1, 2)
        kk = (y @ t[P + "self_attn.k_proj.weight"].T).view(N, T, nkv, hd).transpose(1, 2)
        v = (y @ t[P + "self_attn.v_proj.weight"].T).view(N, T, nkv, hd).transpose(1, 2)
        q, kk = rope(q, cos, sin), rope(kk, cos, sin)
        kk, v = kk.repeat_interleave(nh // nkv, 1), v.repeat_interleave(nh // nkv, 1)
        s = (q @ kk.transpose(-1, -2)) * c["attention_multiplier"] + mask
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(N, T, nh * hd)
        x = x + (o @ t[P + "self_attn.o_proj.weight"].T) * c["residual_multiplier"]
        y = rms(x, t[P + "post_attention_layernorm.weight"], eps).reshape(N * T, d)
        logits = y @ t[P + "block_sparse_moe.router.layer.weight"].T
        top, sel = logits.topk(k, -1)
        gates = top.softmax(-1)
        out = torch.zeros_like(y)
        W1, W2 = t[P + "block_sparse_moe.input_linear.weight"], t[P + "block_sparse_moe.output_linear.weight"]
        for e in range(W1.shape[0]):
            rows, slot = (sel == e).nonzero(as_tuple=True)
            if rows.numel() == 0:
                continue
            hcat = y[rows] @ W1[e].T
            g, u = hcat.chunk(2, -1)
            out.index_add_(0, rows, ((F.silu(g) * u) @ W2[e].T) * gates[rows, slot, None])
        x = x + out.view(N, T, d) * c["residual_multiplier"]
    x = rms(x, t["model.norm.weight"], eps)
    lg = (x @ t["model.embed_tokens.weight"].T) / c["logits_scaling"]
    return F.cross_entropy(lg[:, :-1].reshape(-1, lg.shape[-1]), ids[:, 1:].reshape(-1)).item()


def main():
    folder, ev, threads, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    benchlib.torch_threads(torch, threads)  # before any parallel work
    c, t = load(folder)
    ids = read_safetensors(ev)["input_ids"]
    best, cpu, loss = float("inf"), float("inf"), None
    with torch.inference_mode():
        for _ in range(reps):
            w0, c0 = time.time(), time.process_time()
            loss = forward(c, t, ids)
            best, cpu = min(best, time.time() - w0), min(cpu, time.process_time() - c0)
    print("PEER_DECODER_SECONDS %.6f CPU %.6f LOSS %.9f" % (best, cpu, loss))


if __name__ == "__main__":
    main()
