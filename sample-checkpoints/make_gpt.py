#!/usr/bin/env python3
"""make_gpt.py - the GPT-2-layout network samples under sample-checkpoints/gpt/.

The paper's setting in miniature: a character-level GPT (bytes, V = 256) is
pretrained on the fortunes corpus with an MoE at block 0 (the base GPT, topk4's
teacher); each other pool's teacher is that network with the pool's MoE block(s),
only they trained. Then, for each seed, the MoE block(s) are re-initialised randomly
and ONLY they are trained, distilled from the teacher's block on its own inputs,
every other weight frozen (one backbone file for the block-0 pools).
Recipe and measured numbers: sample-checkpoints/README.md, "GPT network samples".

usage: /usr/bin/python3 make_gpt.py [--out DIR] [POOL ...]     (default: every pool)

Deterministic for the same seeds (one thread, fixed seeds) on the same PyTorch
build. Needs Debian's python3-torch and fortunes packages."""
import argparse
import json
import math
import os
import shutil
import sys
import tempfile
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
# pool name -> the MoE of that pool (overrides of MOE; "hidden": the teacher's and the
# students' expert width, else the recipe's). The cache keys name the pool, not this.
POOLS = {
    "topk4": dict(),
    "dense4": dict(router="dense", top_k=4),
    "shared4": dict(num_shared_experts=1),
    "topk8": dict(num_experts=8, hidden=32),  # 8 x 32 units, the dense MLP's 256 (and small files)
    "every4": dict(layers=[0, 1, 2]),
    "paper4": dict(),  # topk4's block, but trained the paper's way (POOL_RECIPE)
}
# recipe overrides per pool: every4 distils three blocks per seed, so a quarter of the
# steps each (the session's compute; its students end 0.04-0.08 nats above the teacher)
# paper4 is the paper's own recipe, no teacher: each seed's MoE initialised at random and
# trained on the LM loss alone in the base GPT's frozen backbone; its own seed range
# (5000 + 100 s + L), so no seed shares an initialisation or batch order with another pool
POOL_RECIPE = {"every4": dict(st_steps=4000),
               "paper4": dict(student="lm", lm_steps=1200, batch=16, lm_lr=3e-3, seed_base=5000)}
BASE_POOL = "topk4"  # its teacher is the base GPT whose backbone the others share
SEEDS = [1, 2, 3, 4]
RECIPE = dict(
    pre_steps=2000, pre_lr=3e-3,         # 1. the base GPT (topk4's teacher), every weight trained
    teacher_hidden=64,                   #    the teachers' expert width
    expert_hidden=64,                    #    the students' expert width
    up_steps=600, up_lr=3e-3,            # 2. other teachers: only their MoE trained in the base
    distill_windows=2048,                # 3. students: the teacher block's inputs/outputs on these
    st_steps=16000, st_lr=3e-3, st_tokens=1024, st_wd=0.1,
    batch=32, T=129, aux=0.01)


STUDENT_KEYS = ("distill_windows", "st_steps", "st_lr", "st_tokens", "st_wd", "aux")


def recipe_meta(name, r):
    """What a seed of the pool is, in words ("recipe", shown by `moescope info`), and the
    recipe's settings ("recipe_settings")."""
    if r.get("student") == "lm":
        what = ("the paper's recipe: a fresh MoE (torch seed %d + 100 s + L) in the base GPT's frozen "
                "backbone, trained on the next-token (LM) loss alone, no teacher" % r["seed_base"])
    else:
        what = ("teacher-student distillation, not the paper's recipe: a fresh MoE (torch seed 100 s + L) "
                "trained by mean squared error to reproduce one teacher MoE block's outputs on its inputs, "
                "the LM loss never used, so all seeds approximate one function")
    return {"recipe": what, "recipe_settings": json.dumps(r, sort_keys=True)}


def batches(data, B, T, gen):
    """Random windows of T bytes from the training text (a torch generator: the
    seed sets the order of the mini-batches)."""
    while True:
        off = torch.randint(0, len(data) - T, (B,), generator=gen)
        yield torch.stack([torch.from_numpy(data[o:o + T].astype(np.int64)) for o in off.tolist()])


def train_lm(model, params, data, steps, lr, B, T, aux, seed, log, tag):
    """Next-token cross-entropy (+ aux x the Switch load-balancing loss), AdamW
    without weight decay, gradient clipping at 1."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(params, lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    it = batches(data, B, T, gen)
    t0, run = time.time(), None
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = G.lr_at(step, steps, lr)
        ids = next(it)
        loss = G.lm_loss(model(ids), ids)
        a = sum(m.aux for m in model.moe_blocks()) if model.moe_blocks() else 0.0
        opt.zero_grad(set_to_none=True)
        (loss + aux * a).backward()
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        opt.step()
        run = loss.item() if run is None else 0.98 * run + 0.02 * loss.item()
        if step % 50 == 0 or step == steps - 1:
            print("%s step %d loss %.4f (%.0f s)" % (tag, step, run, time.time() - t0), file=log, flush=True)
    return run


@torch.no_grad()
def evaluate(model, ids):
    logits = model(ids)
    loss = G.lm_loss(logits, ids).item()
    acc = (logits[:, :-1].argmax(-1) == ids[:, 1:]).float().mean().item()
    return loss, acc


def fresh_moe(cfg, seed):
    """A randomly initialised MoE block from its own seed: GPT-2's init for the
    experts (c_fc N(0, 0.02), c_proj N(0, 0.02 / sqrt(2 n_layer))), torch's default
    Linear init for the gate."""
    torch.manual_seed(seed)
    m = cfg["moe"]
    moe = G.MoE(cfg["n_embd"], m["expert_hidden"], m["num_experts"], m["top_k"], m["router"],
                m["num_shared_experts"], m["expert_activation"])
    for name, p in moe.named_parameters():
        if name.endswith("c_proj.weight"):
            torch.nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg["n_layer"]))
    return moe


@torch.no_grad()
def block_io(model, ids, L):
    """Inputs ln_2(x) and outputs mlp(ln_2(x)) of block L's MLP/MoE, [tokens, d]."""
    X, Y = [], []
    for i in range(0, len(ids), 128):
        h = model.embed(ids[i:i + 128])
        for b in model.transformer.h[:L]:
            h = b(h)
        b = model.transformer.h[L]
        x = b.ln_2(h + b.attn(b.ln_1(h)))
        X.append(x.reshape(-1, x.shape[-1]))
        Y.append(b.mlp(x).reshape(-1, x.shape[-1]))
    return torch.cat(X), torch.cat(Y)


def distill(student, X, Y, r, seed, log, tag):
    """Train a student MoE to reproduce the teacher block's output on the teacher's
    inputs: mean squared error (summed over d) + aux x load balancing, AdamW."""
    gen = torch.Generator().manual_seed(seed)
    params = list(student.parameters())
    opt = torch.optim.AdamW(params, lr=r["st_lr"], weight_decay=r["st_wd"])
    t0, steps = time.time(), r["st_steps"]
    for step in range(steps):
        for g in opt.param_groups:
            g["lr"] = G.lr_at(step, steps, r["st_lr"])
        idx = torch.randint(0, len(X), (r["st_tokens"],), generator=gen)
        mse = ((student(X[idx]) - Y[idx]) ** 2).sum(-1).mean()
        opt.zero_grad(set_to_none=True)
        (mse + r["aux"] * student.aux).backward()
        opt.step()
        if step % 1000 == 0 or step == steps - 1:
            print("%s step %d mse %.5f (%.0f s)" % (tag, step, mse.item(), time.time() - t0), file=log, flush=True)
    with torch.no_grad():
        return float(((student(X) - Y) ** 2).sum(-1).mean() / Y.var(0).sum())


def write_pool(root, name, back, shared_back, seeds, meta, cfgs):
    """gpt/POOL/: backbone.safetensors (every tensor outside the MoE blocks; a link to
    the shared ../backbone.safetensors when the pool's backbone is the base's),
    eval.safetensors (a link to ../eval.safetensors), and per seed a sharded HF folder
    whose first shard is a relative symlink to ../backbone.safetensors."""
    out = os.path.join(root, name)
    os.makedirs(out, exist_ok=True)

    def link(target, path):
        if os.path.lexists(path):
            os.remove(path)
        os.symlink(target, path)
    bpath = os.path.join(out, "backbone.safetensors")
    if shared_back:
        link("../backbone.safetensors", bpath)
    else:
        if os.path.islink(bpath):
            os.remove(bpath)
        G.st_write(bpath, back, meta)
    link("../eval.safetensors", os.path.join(out, "eval.safetensors"))
    if "teacher" not in seeds and os.path.isdir(os.path.join(out, "teacher")):
        shutil.rmtree(os.path.join(out, "teacher"))  # from a run --with-teachers
    for sname, (sd, m) in seeds.items():
        d = os.path.join(out, sname)
        os.makedirs(d, exist_ok=True)
        s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
        link("../backbone.safetensors", os.path.join(d, s1))
        G.st_write(os.path.join(d, s2), sd, m)
        wmap = {k: s1 for k in back}
        wmap.update({k: s2 for k in sd})
        size = sum(v.nbytes for v in back.values()) + sum(v.nbytes for v in sd.values())
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": size}, "weight_map": dict(sorted(wmap.items()))}, f, indent=2)
            f.write("\n")
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(G.hf_config(cfgs[sname == "teacher"]), f, indent=2)
            f.write("\n")


def split_sd(model, cfg):
    sd = {k: v.detach().numpy().astype(np.float32) for k, v in model.state_dict().items()}
    back = {k: v for k, v in sd.items() if not G.is_moe_tensor(k, cfg)}
    moe = {k: v for k, v in sd.items() if G.is_moe_tensor(k, cfg)}
    return back, moe


def pool_cfgs(name, r):
    """(students' config, teacher's config) of a pool"""
    m = dict(MOE, **POOLS[name])
    h = m.pop("hidden", None)
    cfg = dict(BASE, moe=dict(m, expert_hidden=h or r["expert_hidden"]))
    return cfg, dict(cfg, moe=dict(cfg["moe"], expert_hidden=h or r["teacher_hidden"]))


def moefy(sd, base, L, m):
    """Block L's dense MLP (ff hidden units) cut into the n experts of an MoE, expert e
    holding units e*h .. (e+1)*h - 1 (n h = ff) and the MLP's output bias."""
    p = "transformer.h.%d.mlp." % L
    h = m["expert_hidden"]
    for e in range(m["num_experts"]):
        q, u = p + "experts.%d." % e, slice(e * h, (e + 1) * h)
        sd[q + "c_fc.weight"] = base[p + "c_fc.weight"][:, u].clone()
        sd[q + "c_fc.bias"] = base[p + "c_fc.bias"][u].clone()
        sd[q + "c_proj.weight"] = base[p + "c_proj.weight"][u, :].clone()
        sd[q + "c_proj.bias"] = base[p + "c_proj.bias"].clone()


def teacher_state(name, r, work, log, train_b):
    """The pool's teacher GPT. BASE_POOL's: the whole GPT trained from scratch with its
    MoE block, so the backbone relies on it. Every other pool's: the base GPT with the
    pool's MoE block(s) (a tensor of the base's shape copied, a dense MLP that becomes
    an MoE cut into experts, the rest freshly initialised), only the MoE trained, the
    backbone frozen: the pools share the base's backbone."""
    key = lambda *ks: "-".join("%s%s" % (k, r[k]) for k in ks)
    bcfg = pool_cfgs(BASE_POOL, r)[1]

    def pretrain():
        torch.manual_seed(0)
        m = G.GPT(bcfg)
        train_lm(m, list(m.parameters()), train_b, r["pre_steps"], r["pre_lr"], r["batch"], r["T"], r["aux"],
                 seed=0, log=log, tag=BASE_POOL + " pretrain")
        return m.state_dict()
    bkey = BASE_POOL + "-teacher-" + key("pre_steps", "pre_lr", "batch", "teacher_hidden", "aux")
    base = G.cached(work, bkey, pretrain)
    if name == BASE_POOL:
        return base, bkey
    tcfg = pool_cfgs(name, r)[1]

    def derive():
        torch.manual_seed(0)
        m = G.GPT(tcfg)
        sd = m.state_dict()
        for k, v in base.items():
            if k in sd and sd[k].shape == v.shape:
                sd[k] = v.clone()
        for L in tcfg["moe"]["layers"]:
            if "transformer.h.%d.mlp.c_fc.weight" % L in base:
                moefy(sd, base, L, tcfg["moe"])
        m.load_state_dict(sd)
        params = [p for b in m.moe_blocks() for p in b.parameters()]
        for p in m.parameters():
            p.requires_grad_(False)
        for p in params:
            p.requires_grad_(True)
        train_lm(m, params, train_b, r["up_steps"], r["up_lr"], r["batch"], r["T"], r["aux"],
                 seed=0, log=log, tag=name + " teacher")
        return m.state_dict()
    tkey = name + "-teacher-" + bkey + "-" + key("up_steps", "up_lr")
    return G.cached(work, tkey, derive), tkey


def base_backbone(root, r, work, log, train_b):
    """The frozen backbone every block-0 pool shares: the committed
    ROOT/backbone.safetensors when it is there, else the base GPT (remade or cached)."""
    path = os.path.join(root, "backbone.safetensors")
    if os.path.exists(path):
        return {k: torch.from_numpy(v) for k, v in G.st_read(path)[0].items()}
    base = teacher_state(BASE_POOL, r, work, log, train_b)[0]
    return {k: v for k, v in base.items() if not G.is_moe_tensor(k, pool_cfgs(BASE_POOL, r)[1])}


def make_lm_pool(name, root, r, work, log):
    """The paper's recipe: per seed a fresh MoE block in the base GPT's frozen backbone,
    trained on the next-token loss alone (+ aux x load balancing), no teacher."""
    cfg = pool_cfgs(name, r)[0]
    train_b, test_b = G.corpus()
    ev_t = torch.from_numpy(G.eval_windows(test_b).astype(np.int64))
    back = base_backbone(root, r, work, log, train_b)
    model = G.GPT(cfg)
    sd = model.state_dict()
    sd.update(back)
    model.load_state_dict(sd)
    for p in model.parameters():
        p.requires_grad_(False)
    key = "-".join("%s%s" % (k, r[k]) for k in ("lm_steps", "lm_lr", "batch", "aux", "seed_base"))
    seeds = {}
    for s in r.get("seeds", SEEDS):
        for L in cfg["moe"]["layers"]:
            sid = r["seed_base"] + 100 * s + L
            st = fresh_moe(cfg, sid)
            model.transformer.h[L].mlp = st

            def student():
                train_lm(model, list(st.parameters()), train_b, r["lm_steps"], r["lm_lr"], r["batch"], r["T"],
                         r["aux"], seed=sid, log=log, tag="%s seed%d block %d" % (name, s, L))
                return {"state": st.state_dict()}
            st.load_state_dict(G.cached(work, "%s-seed%d-block%d-%s" % (name, s, L, key), student)["state"])
        l, a = evaluate(model, ev_t)
        print("%s seed%d: test loss %.4f acc %.4f" % (name, s, l, a), file=log, flush=True)
        seeds["seed%d" % s] = (split_sd(model, cfg)[1], dict(
            recipe_meta(name, r), seed=s, test_loss="%.6f" % l, test_acc="%.6f" % a))
    write_pool(root, name, {k: v.numpy() for k, v in back.items()}, True, seeds, {}, {False: cfg, True: cfg})


def make_pool(name, root, r, work, log, with_teacher=False):
    if r.get("student") == "lm":
        return make_lm_pool(name, root, r, work, log)
    cfg, tcfg = pool_cfgs(name, r)
    layers = cfg["moe"]["layers"]
    train_b, test_b = G.corpus()
    ev = G.eval_windows(test_b)
    ev_t = torch.from_numpy(ev.astype(np.int64))
    key = lambda *ks: "-".join("%s%s" % (k, r[k]) for k in ks)  # noqa: E731

    # 1. the teacher (cached between runs)
    tstate, tkey = teacher_state(name, r, work, log, train_b)
    if r.get("teachers_only"):
        return
    model = G.GPT(tcfg)
    model.load_state_dict(tstate)
    for p in model.parameters():
        p.requires_grad_(False)
    tl, ta = evaluate(model, ev_t)
    print("%s teacher: test loss %.4f acc %.4f" % (name, tl, ta), file=log, flush=True)
    back, tmoe = split_sd(model, tcfg)
    seeds = {}
    if with_teacher:
        seeds["teacher"] = (tmoe, {"role": "teacher (not a seed)", "test_loss": "%.6f" % tl, "test_acc": "%.6f" % ta})

    # 2. the students: each MoE block re-initialised from the seed, distilled from
    #    the teacher's block on the teacher's inputs; the backbone frozen
    gen = torch.Generator().manual_seed(123)
    off = torch.randint(0, len(train_b) - r["T"], (r["distill_windows"],), generator=gen).tolist()
    ids = torch.stack([torch.from_numpy(train_b[o:o + r["T"]].astype(np.int64)) for o in off])
    io = {L: block_io(model, ids, L) for L in layers}
    teachers = {L: model.transformer.h[L].mlp for L in layers}
    for s in r.get("seeds", SEEDS):
        fit = {}
        for L in layers:
            st = fresh_moe(cfg, 100 * s + L)

            def student():
                f = distill(st, *io[L], r, seed=100 * s + L, log=log, tag="%s seed%d block %d" % (name, s, L))
                return {"state": st.state_dict(), "fit": f}
            skey = "%s-seed%d-block%d-expert_hidden%d-%s-%s" % (name, s, L, cfg["moe"]["expert_hidden"],
                                                                 key(*STUDENT_KEYS), tkey)
            got = G.cached(work, skey, student)
            st.load_state_dict(got["state"])
            fit[L] = got["fit"]
            model.transformer.h[L].mlp = st
        l, a = evaluate(model, ev_t)
        print("%s seed%d: test loss %.4f acc %.4f; relative mse %s" % (name, s, l, a, fit), file=log, flush=True)
        seeds["seed%d" % s] = (split_sd(model, cfg)[1], {
            "seed": s, "test_loss": "%.6f" % l, "test_acc": "%.6f" % a, "teacher_test_loss": "%.6f" % tl,
            "distill_relative_mse": json.dumps(fit), **recipe_meta(name, r)})
        for L in layers:
            model.transformer.h[L].mlp = teachers[L]
    meta = {"recipe": json.dumps(r, sort_keys=True), "teacher_test_loss": "%.6f" % tl}
    os.makedirs(root, exist_ok=True)
    G.st_write(os.path.join(root, "eval.safetensors"), {"input_ids": ev},
               {"data": "fortunes, held-out fortunes (i % 10 == 0)", "windows": "64 x 129 bytes, evenly spaced"})
    shared = layers == pool_cfgs(BASE_POOL, r)[0]["moe"]["layers"]
    if shared:  # the base GPT's backbone, frozen in every pool that shares it
        path = os.path.join(root, "backbone.safetensors")
        if os.path.exists(path):
            old = G.st_read(path)[0]
            assert sorted(old) == sorted(back) and all(np.array_equal(old[k], back[k]) for k in back), \
                "%s: the backbone differs from %s" % (name, path)
        G.st_write(path, back, {"recipe": json.dumps(r, sort_keys=True),
                                "role": "the frozen backbone of the pools with MoE block 0"})
    write_pool(root, name, back, shared, seeds, meta, {False: cfg, True: tcfg})


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pools", nargs="*", default=list(POOLS))
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpt"))
    ap.add_argument("--work", default=os.path.join(tempfile.gettempdir(), "make_gpt-work"),
                    help="cache of the teachers between runs")
    ap.add_argument("--set", action="append", default=[], help="recipe override KEY=VALUE (tuning)")
    ap.add_argument("--teachers-only", action="store_true", help="pretrain (and cache) the teachers, no students")
    ap.add_argument("--with-teachers", action="store_true",
                    help="also write each teacher as POOL/teacher/ (role = teacher; not committed: size)")
    a = ap.parse_args()
    r = dict(RECIPE)
    if a.teachers_only:
        r["teachers_only"] = True
    sets = {}
    for kv in a.set:
        k, v = kv.split("=", 1)
        sets[k] = json.loads(v)
    for p in a.pools:
        t0 = time.time()
        make_pool(p, a.out, {**r, **POOL_RECIPE.get(p, {}), **sets}, a.work, sys.stdout, a.with_teachers)
        print("%s done in %.0f s" % (p, time.time() - t0), flush=True)


if __name__ == "__main__":
    main()
