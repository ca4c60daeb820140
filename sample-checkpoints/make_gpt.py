#!/usr/bin/env python3
"""make_gpt.py - the GPT-2-layout network samples under sample-checkpoints/gpt/.

The paper's setting in miniature: a character-level GPT (bytes, V = 256) is
pretrained on the fortunes corpus; then, for each seed, the MoE block(s) are
re-initialised randomly and ONLY they are fine-tuned, every other weight frozen.
Recipe and measured numbers: sample-checkpoints/README.md, "GPT network samples".

usage: /usr/bin/python3 make_gpt.py [--out DIR] [POOL ...]     (default: every pool)

Deterministic for the same seeds (one thread, fixed seeds) on the same PyTorch
build. Needs Debian's python3-torch and fortunes packages."""
import argparse
import copy
import json
import math
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gptlib as G  # noqa: E402

torch.set_num_threads(1)  # shared machine, and one thread keeps runs reproducible

BASE = dict(model_type="gpt2", n_embd=64, n_layer=3, n_head=4, n_positions=160, vocab_size=256,
            layer_norm_epsilon=1e-5, activation_function="gelu_new", tie_word_embeddings=True)
MOE = dict(layers=[0], num_experts=4, top_k=2, router="topk", num_shared_experts=0,
           expert_activation="relu", expert_hidden=64)
# pool name -> the MoE of that pool (overrides of MOE)
POOLS = {
    "dense4": dict(router="dense", top_k=4),
    "topk4": dict(),
    "shared4": dict(num_shared_experts=1),
    "topk8": dict(num_experts=8),
    "every4": dict(layers=[0, 1, 2]),
}
SEEDS = [1, 2, 3, 4]
RECIPE = dict(pre_steps=3000, pre_lr=3e-3, ft_steps=3000, ft_lr=3e-3, batch=32, T=129, aux=0.01,
              teacher=True, expert_std=None)


def batches(data, B, T, gen):
    """Random windows of T bytes from the training text (a torch generator: the
    seed sets the order of the mini-batches)."""
    while True:
        off = torch.randint(0, len(data) - T, (B,), generator=gen)
        yield torch.stack([torch.from_numpy(data[o:o + T].astype(np.int64)) for o in off.tolist()])


def train(model, params, data, steps, lr, B, T, aux, seed, log=None, tag=""):
    """AdamW (no weight decay on LayerNorm/bias), linear warm-up then cosine decay."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    warm = max(1, steps // 20)
    it = batches(data, B, T, gen)
    t0, run = time.time(), None
    for step in range(steps):
        f = (step + 1) / warm if step < warm else 0.5 * (1 + math.cos(math.pi * (step - warm) / (steps - warm)))
        for g in opt.param_groups:
            g["lr"] = lr * f
        ids = next(it)
        loss = G.lm_loss(model(ids), ids)
        a = sum(m.aux for m in model.moe_blocks()) if model.moe_blocks() else 0.0
        opt.zero_grad(set_to_none=True)
        (loss + aux * a).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if log and (step % 200 == 0 or step == steps - 1):
            print("%s step %d loss %.4f (%.0f s)" % (tag, step, run, time.time() - t0), file=log, flush=True)
    return run


@torch.no_grad()
def evaluate(model, ids):
    logits = model(ids)
    loss = G.lm_loss(logits, ids).item()
    acc = (logits[:, :-1].argmax(-1) == ids[:, 1:]).float().mean().item()
    return loss, acc


def moe_params(model):
    return [p for b in model.moe_blocks() for p in b.parameters()]


def reinit_moe(model, cfg, seed):
    """Replace every MoE block by a fresh, randomly initialised one (torch's default
    Linear init for the gate; GPT-2's N(0, 0.02) for the experts unless
    expert_std is set)."""
    torch.manual_seed(seed)
    fresh = G.GPT(cfg)
    for L in cfg["moe"]["layers"]:
        model.transformer.h[L].mlp = fresh.transformer.h[L].mlp
    return model


def write_pool(out, cfg, backbone_sd, seeds, ev, meta):
    """gpt/POOL/: backbone.safetensors (every tensor outside the MoE blocks),
    eval.safetensors, and per seed a sharded HF folder whose first shard is a
    relative symlink to ../backbone.safetensors."""
    os.makedirs(out, exist_ok=True)
    G.st_write(os.path.join(out, "backbone.safetensors"), backbone_sd, meta)
    G.st_write(os.path.join(out, "eval.safetensors"), {"input_ids": ev},
               {"data": "fortunes held-out fortunes (i % 10 == 0)", "windows": "64 x 129 bytes, evenly spaced"})
    for name, (sd, m) in seeds.items():
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
        link = os.path.join(d, s1)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink("../backbone.safetensors", link)
        G.st_write(os.path.join(d, s2), sd, m)
        wmap = {k: s1 for k in backbone_sd}
        wmap.update({k: s2 for k in sd})
        size = sum(v.nbytes for v in backbone_sd.values()) + sum(v.nbytes for v in sd.values())
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": size}, "weight_map": dict(sorted(wmap.items()))}, f, indent=2)
            f.write("\n")
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(G.hf_config(cfg), f, indent=2)
            f.write("\n")


def split_sd(model, cfg):
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    back = {k: v for k, v in sd.items() if not G.is_moe_tensor(k, cfg)}
    moe = {k: v for k, v in sd.items() if G.is_moe_tensor(k, cfg)}
    return back, moe


def make_pool(name, out, recipe, log):
    cfg = dict(BASE, moe=dict(MOE, **POOLS[name]))
    train_b, test_b = G.corpus()
    ev = G.eval_windows(test_b)
    ev_t = torch.from_numpy(ev.astype(np.int64))
    r = recipe
    # 1. pretraining: the whole GPT, with the teacher MoE in place (teacher=True)
    #    or with GPT-2's dense MLP there (teacher=False)
    torch.manual_seed(0)
    pcfg = cfg if r["teacher"] else dict(cfg, moe=None)
    model = G.GPT(pcfg)
    train(model, list(model.parameters()), train_b, r["pre_steps"], r["pre_lr"], r["batch"], r["T"],
          r["aux"], seed=0, log=log, tag=name + " pretrain")
    pl, pa = evaluate(model, ev_t)
    print("%s pretrained: test loss %.4f acc %.4f" % (name, pl, pa), file=log, flush=True)
    seeds = {}
    if r["teacher"]:
        seeds["teacher"] = (split_sd(model, cfg)[1], {"role": "teacher", "test_loss": "%.6f" % pl})
    for p in model.parameters():
        p.requires_grad_(False)
    base_state = copy.deepcopy(model.state_dict())
    for s in r.get("seeds", SEEDS):
        model.load_state_dict(base_state)
        reinit_moe(model, cfg, s)
        ps = moe_params(model)
        train(model, ps, train_b, r["ft_steps"], r["ft_lr"], r["batch"], r["T"], r["aux"], seed=s,
              log=log, tag="%s seed%d" % (name, s))
        l, a = evaluate(model, ev_t)
        print("%s seed%d: test loss %.4f acc %.4f" % (name, s, l, a), file=log, flush=True)
        back, moe = split_sd(model, cfg)
        seeds["seed%d" % s] = (moe, {"seed": s, "test_loss": "%.6f" % l, "test_acc": "%.6f" % a,
                                     "recipe": json.dumps(r, sort_keys=True)})
    write_pool(out, cfg, back, seeds, ev,
               {"recipe": json.dumps(r, sort_keys=True), "pretrain_test_loss": "%.6f" % pl})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pools", nargs="*", default=list(POOLS))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt"))
    ap.add_argument("--set", action="append", default=[], help="recipe override KEY=VALUE (tuning)")
    a = ap.parse_args()
    r = dict(RECIPE)
    for kv in a.set:
        k, v = kv.split("=", 1)
        r[k] = json.loads(v)
    for p in a.pools:
        t0 = time.time()
        make_pool(p, os.path.join(a.out, p), r, sys.stdout)
        print("%s done in %.0f s" % (p, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
