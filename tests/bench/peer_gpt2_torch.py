"""tests/bench/peer_gpt2_torch.py - the benchmark peer of moescope's network evaluator:
PyTorch's CPU forward (float32, inference mode) of the same GPT-2-layout network with
MoE blocks, read from the checkpoint folder, and its mean next-token loss.

Written as such a model is in PyTorch: nn.functional ops, attention by
scaled_dot_product_attention when this PyTorch has it (else the masked softmax), each
MoE block's router by top-k and softmax, every expert applied to the tokens routed to it
(index_select / index_add_), shared experts to all.

usage: peer_gpt2_torch.py CKPT EVAL THREADS REPS (run by benchlib.run_on_cores: THREADS
cores, its pools that size; here THREADS intra-op threads, one inter-op)
prints  PEER_THREADS (benchlib.torch_threads) and PEER_NET_SECONDS <best seconds per evaluation> CPU <its CPU seconds> LOSS <loss>
Needs python3-torch (a benchmark peer only: neither moescope nor its tests need it)."""
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE] + [os.path.join(HERE, "..", d) for d in ("lib", "oracle")]
import benchlib  # noqa: E402
import gpt2_ref  # noqa: E402


def build(ck):
    cfg = ck["config"]
    P = {k: torch.from_numpy(v.astype("float32")) for k, v in ck["tensors"].items()}
    return cfg, P


def ffn(P, pre, x, act):
    a = torch.addmm(P[pre + "c_fc.bias"], x, P[pre + "c_fc.weight"])
    if act == "relu":
        a = F.relu(a)
    elif act == "gelu":
        a = F.gelu(a)
    else:
        a = F.gelu(a, approximate="tanh")
    return torch.addmm(P[pre + "c_proj.bias"], a, P[pre + "c_proj.weight"])


def moe(P, pre, x, m):
    n = m["num_experts"]
    s = x @ P[pre + "gate.weight"].T
    if pre + "gate.bias" in P:
        s = s + P[pre + "gate.bias"]
    act = m.get("expert_activation", "relu")
    if m.get("router", "topk") == "dense":
        g = torch.softmax(s, -1)
        out = sum(g[:, e:e + 1] * ffn(P, pre + "experts.%d." % e, x, act) for e in range(n))
    else:
        k = m["top_k"]
        top, idx = torch.topk(s, k, dim=-1)
        w = torch.softmax(top, -1)
        out = torch.zeros_like(x)
        for e in range(n):
            rows, slot = torch.nonzero(idx == e, as_tuple=True)
            if rows.numel():
                y = ffn(P, pre + "experts.%d." % e, x.index_select(0, rows), act)
                out.index_add_(0, rows, y * w[rows, slot].unsqueeze(1))
    for j in range(m.get("num_shared_experts", 0)):
        out = out + ffn(P, pre + "shared_experts.%d." % j, x, act)
    return out


def forward_loss(cfg, P, ids):
    N, T = ids.shape
    d, nh = cfg["n_embd"], cfg["n_head"]
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    m = cfg.get("moe") or {}
    layers = set(m.get("layers", []))
    h = P["transformer.wte.weight"][ids] + P["transformer.wpe.weight"][:T]
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    for L in range(cfg["n_layer"]):
        pre = "transformer.h.%d." % L
        a = F.layer_norm(h, (d,), P[pre + "ln_1.weight"], P[pre + "ln_1.bias"], eps)
        q, k, v = (a @ P[pre + "attn.c_attn.weight"] + P[pre + "attn.c_attn.bias"]).split(d, -1)
        q, k, v = (t.view(N, T, nh, d // nh).transpose(1, 2) for t in (q, k, v))
        if sdpa:
            o = sdpa(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-1, -2)) / math.sqrt(d // nh)
            o = att.masked_fill(~mask, float("-inf")).softmax(-1) @ v
        o = o.transpose(1, 2).reshape(N, T, d)
        h = h + o @ P[pre + "attn.c_proj.weight"] + P[pre + "attn.c_proj.bias"]
        x = F.layer_norm(h, (d,), P[pre + "ln_2.weight"], P[pre + "ln_2.bias"], eps).reshape(N * T, d)
        y = moe(P, pre + "mlp.", x, m) if L in layers else ffn(P, pre + "mlp.", x, cfg["activation_function"])
        h = h + y.reshape(N, T, d)
    h = F.layer_norm(h, (d,), P["transformer.ln_f.weight"], P["transformer.ln_f.bias"], eps)
    head = P["transformer.wte.weight"] if cfg.get("tie_word_embeddings", True) else P["lm_head.weight"]
    logits = h @ head.T
    if "lm_head.bias" in P:
        logits = logits + P["lm_head.bias"]
    return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))


def main():
    ck, ev, threads, reps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    benchlib.torch_threads(torch, threads)  # before any parallel work
    cfg, P = build(gpt2_ref.load(ck))
    ids = torch.from_numpy(gpt2_ref.read_safetensors(ev)[0]["input_ids"].astype("int64"))
    best, cpu, loss = float("inf"), float("inf"), None
    with torch.inference_mode():
        forward_loss(cfg, P, ids[:1])  # warm-up (one sequence: the kernels, the allocator)
        for _ in range(reps):
            t0, c0 = time.perf_counter(), time.process_time()
            loss = float(forward_loss(cfg, P, ids))
            best = min(best, time.perf_counter() - t0)
            cpu = min(cpu, time.process_time() - c0)
    print("PEER_NET_SECONDS %.6f CPU %.6f LOSS %.9g" % (best, cpu, loss))


if __name__ == "__main__":
    main()
