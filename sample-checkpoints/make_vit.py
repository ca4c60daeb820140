#!/usr/bin/env python3
"""make_vit.py - the ViT samples (sample-checkpoints/vit/, run by `make samples`): a small
ViT pretrained here on the digits images, one MoE block fine-tuned from four seeds.

1. Pretrain (seed 0) a dense ViT in Hugging Face's layout on the digits' training split
   (digits.safetensors, every image but each fifth): 8 x 8 images, one channel, 2 x 2
   patches (16 tokens + CLS), d = 32, 2 blocks, 4 heads, MLP width 64, gelu; Adam with
   cosine decay (lr 3e-3, batch 64, 60 epochs) on the class cross-entropy.
2. For each pool, one block's MLP is replaced by an MoE layer (n = 4 experts of width 16,
   gelu), drawn afresh from seed s = 1..4, and only the MoE layer is trained (lr 3e-3,
   batch 64, 40 epochs): every tensor outside it is the pretrained network's, shared by
   the seeds (POOL/backbone.safetensors, each seed's first shard a link to it; itself a
   link to vit/backbone_blockL.safetensors, one file for the pools whose MoE is at L).
       dense4/        block 0 (the first), dense routing
       topk4/         block 0, top-2
       shared4/       block 0, top-2 + one shared expert
       topk4_last/    block 1 (the last), top-2
3. vit/eval.safetensors: the test split (i % 5 == 0): pixel_values [360, 1, 8, 8] F32,
   labels [360] I64; each pool's eval.safetensors links to it.

PyTorch (Debian's python3-torch) on one thread: the same files for the same seeds on one
machine. usage: make_vit.py [--out DIR] [--epochs-scale F]
"""
import argparse
import copy
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vitlib  # noqa: E402

POOLS = [  # name, block, router, k, shared
    ("dense4", 0, "dense", 4, 0),
    ("topk4", 0, "topk", 2, 0),
    ("shared4", 0, "topk", 2, 1),
    ("topk4_last", 1, "topk", 2, 0),
]
N_EXPERTS, H = 4, 16


def pretrain(train, test, scale):
    torch.manual_seed(0)
    model = vitlib.ViT()
    vitlib.train(model, list(model.parameters()), *train, epochs=max(1, int(60 * scale)), lr=3e-3, batch=64, seed=0)
    loss, acc = vitlib.evaluate(model, *test)
    print("make_vit: pretrained dense ViT: test loss %.4f, accuracy %.1f%%" % (loss, 100 * acc), flush=True)
    return model


def fine_tune(base, L, router, k, shared, seed, train, scale):
    model = copy.deepcopy(base)
    torch.manual_seed(seed)
    model.make_moe(L, N_EXPERTS, H, router, k, shared)
    for p in model.parameters():
        p.requires_grad_(False)
    moe = model.vit.encoder.layer[L].moe
    for p in moe.parameters():
        p.requires_grad_(True)
    vitlib.train(model, list(moe.parameters()), *train, epochs=max(1, int(40 * scale)), lr=3e-3, batch=64,
                 seed=seed)
    return model


def write_backbone(out, pool, L, back):
    """vit/backbone_blockL.safetensors (the pools whose MoE is at block L share it: the
    pretrained network less block L's MLP) and POOL/backbone.safetensors a link to it"""
    name = "backbone_block%d.safetensors" % L
    path = os.path.join(out, name)
    if os.path.exists(path):
        have, _ = vitlib.read_safetensors(path)
        assert sorted(have) == sorted(back) and all(np.array_equal(have[k], back[k]) for k in back)
    else:
        vitlib.write_safetensors(path, back, {"role": "the frozen backbone every seed shares (MoE at block %d)" % L})
    link = os.path.join(pool, "backbone.safetensors")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../" + name, link)


def make_pool(out, base, name, L, router, k, shared, train, test, scale):
    pool = os.path.join(out, name)
    os.makedirs(pool, exist_ok=True)
    moe_cfg = {"layers": [L], "num_experts": N_EXPERTS, "top_k": k, "router": router, "num_shared_experts": shared,
               "expert_activation": "gelu", "expert_intermediate_size": H}
    back = None
    for seed in (1, 2, 3, 4):
        model = fine_tune(base, L, router, k, shared, seed, train, scale)
        t = vitlib.tensors(model)
        pre = "vit.encoder.layer.%d.moe." % L
        moe = {k_: v for k_, v in t.items() if k_.startswith(pre)}
        b = {k_: v for k_, v in t.items() if not k_.startswith(pre)}
        if back is None:
            back = b
            write_backbone(out, pool, L, back)
        assert all(np.array_equal(back[k_], b[k_]) for k_ in back), "the backbone moved"
        vitlib.write_seed(os.path.join(pool, "seed%d" % seed), model.config(moe_cfg), back, moe)
        loss, acc = vitlib.evaluate(model, *test)
        print("make_vit: %s seed %d: test loss %.4f, accuracy %.1f%%" % (name, seed, loss, 100 * acc), flush=True)
    link = os.path.join(pool, "eval.safetensors")
    if os.path.lexists(link):
        os.remove(link)
    os.symlink("../eval.safetensors", link)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "vit"))
    ap.add_argument("--epochs-scale", type=float, default=1.0, help="a quick try: fewer epochs")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    train, test = vitlib.digits(os.path.join(HERE, "digits.safetensors"))
    os.makedirs(a.out, exist_ok=True)
    vitlib.write_safetensors(os.path.join(a.out, "eval.safetensors"), {"pixel_values": test[0], "labels": test[1]},
                             {"source": "digits.safetensors, the test split (i % 5 == 0) as 8 x 8 images"})
    base = pretrain(train, test, a.epochs_scale)
    for name, L, router, k, shared in POOLS:
        make_pool(a.out, base, name, L, router, k, shared, train, test, a.epochs_scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
