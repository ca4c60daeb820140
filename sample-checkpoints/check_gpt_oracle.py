#!/usr/bin/env python3
"""check_gpt_oracle.py - tests/oracle/gpt2_ref.py (numpy, float64) against the
PyTorch model that made the samples (float32), on each pool's seed folders:
max |logit difference| / max |logit| and the loss difference. Also checks the
oracle's override path: a seed's MoE tensors given as arrays reproduce its logits.

usage: check_gpt_oracle.py POOL_DIR [...]"""
import json
import os
import struct
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tests", "oracle"))
import gptlib as G  # noqa: E402
import gpt2_ref as R  # noqa: E402

torch.set_num_threads(1)
worst = 0.0
for pool in sys.argv[1:]:
    ids = G.st_read(os.path.join(pool, "eval.safetensors"))[0]["input_ids"][:16]
    for seed in sorted(s for s in os.listdir(pool) if os.path.isdir(os.path.join(pool, s))):
        folder = os.path.join(pool, seed)
        model, _ = G.model_from_folder(folder)
        with torch.no_grad():
            zt = model(torch.from_numpy(ids.astype(np.int64))).double().numpy()
        ck = R.load(folder)
        zr = R.logits(ck, ids)
        rel = np.abs(zt - zr).max() / np.abs(zr).max()
        lt = G.lm_loss(torch.from_numpy(zt), torch.from_numpy(ids)).item()
        lr = R.evaluate(ck, ids)["loss"]
        # the override path: the next seed's MoE given as arrays must give that seed's logits
        seeds = sorted(x for x in os.listdir(pool) if os.path.isdir(os.path.join(pool, x)))
        other = R.load(os.path.join(pool, seeds[(seeds.index(seed) + 1) % len(seeds)]))
        over = {k: other["tensors"][k].astype(np.float64) for k in R.moe_names(other)}
        zo = np.abs(R.logits(ck, ids[:4], over) - R.logits(other, ids[:4])).max()
        worst = max(worst, rel, zo / np.abs(zr).max())
        print("%s/%s: logits rel %.2e, loss torch %.6f numpy %.6f, override %.1e" % (
            os.path.basename(pool), seed, rel, lt, lr, zo), flush=True)
# the reader's half-precision paths: F16 and BF16 files of known values
x = np.array([1.0, -2.5, 0.15625, 3e-3], np.float32)
with tempfile.TemporaryDirectory() as tmp:
    for dt, raw in (("F16", x.astype(np.float16).tobytes()),
                    ("BF16", (x.view(np.uint32) >> 16).astype(np.uint16).tobytes())):
        h = json.dumps({"x": {"dtype": dt, "shape": [4], "data_offsets": [0, len(raw)]}}).encode()
        p = os.path.join(tmp, dt)
        open(p, "wb").write(struct.pack("<Q", len(h)) + h + raw)
        got = R.read_safetensors(p)[0]["x"].astype(np.float64)
        err = np.abs(got - x).max() / np.abs(x).max()
        print("%s reader: rel %.1e" % (dt, err))
        assert err < (1e-3 if dt == "F16" else 1e-2), dt
print("worst relative logit difference %.2e (%s)" % (worst, "ok" if worst < 1e-5 else "FAIL"))
sys.exit(0 if worst < 1e-5 else 1)
