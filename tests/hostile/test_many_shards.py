"""tests/hostile/test_many_shards.py - a network over more shards than the first
chunk of moescope's table of live mappings (256): a Mixtral-layout decoder of 48
experts per block, one tensor per shard (305 shards), and a copy that is its own
landscape's B (610 files mapped at once).

  * eval gives the loss of the same model in one file, bit for bit;
  * a landscape of the two copies maps both (a barrier of 0);
  * shard 300 cut while the evaluation reads it in place (held at 'evaluation rows' by
    MOESCOPE_TEST_STALL, truncated, resumed): exit 1 naming the shard and the tensor,
    never a bare SIGBUS."""
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib")]
import testutil  # noqa: E402
from testutil import check, run  # noqa: E402

TMP = tempfile.mkdtemp(prefix="moescope_shards_")
N_EXPERTS, L, D, H, V = 48, 2, 8, 4, 16


def write_st(path, tensors):
    """float32 tensors [(name, array)] into one safetensors file"""
    header, off = {}, 0
    for name, a in tensors:
        header[name] = {"dtype": "F32", "shape": list(a.shape), "data_offsets": [off, off + a.nbytes]}
        off += a.nbytes
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for _, a in tensors:
            f.write(np.ascontiguousarray(a, np.float32).tobytes())


def tensors():
    r = np.random.default_rng(1)
    w = lambda *s: (r.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)  # noqa: E731
    ts = [("model.embed_tokens.weight", w(V, D))]
    for li in range(L):
        P = "model.layers.%d." % li
        ts += [(P + "input_layernorm.weight", np.ones(D, np.float32))]
        ts += [(P + "self_attn.%s_proj.weight" % x, w(D, D)) for x in "qkvo"]
        ts += [(P + "post_attention_layernorm.weight", np.ones(D, np.float32)),
               (P + "block_sparse_moe.gate.weight", w(N_EXPERTS, D))]
        for e in range(N_EXPERTS):
            E = P + "block_sparse_moe.experts.%d." % e
            ts += [(E + "w1.weight", w(H, D)), (E + "w3.weight", w(H, D)), (E + "w2.weight", w(D, H))]
    return ts + [("model.norm.weight", np.ones(D, np.float32)), ("lm_head.weight", w(V, D))]


def write_model(out, sharded):
    """the model into out: one tensor per shard with its index, or model.safetensors"""
    os.makedirs(out, exist_ok=True)
    ts = tensors()
    if sharded:
        wm = {}
        for i, t in enumerate(ts):
            nm = "model-%05d-of-%05d.safetensors" % (i + 1, len(ts))
            write_st(os.path.join(out, nm), [t])
            wm[t[0]] = nm
        with open(os.path.join(out, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": wm}, f)
    else:
        write_st(os.path.join(out, "model.safetensors"), ts)
    cfg = {"architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "hidden_size": D,
           "num_hidden_layers": L, "num_attention_heads": 2, "num_key_value_heads": 2, "intermediate_size": H,
           "num_local_experts": N_EXPERTS, "num_experts_per_tok": 2, "vocab_size": V, "max_position_embeddings": 64,
           "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "hidden_act": "silu", "tie_word_embeddings": False}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f)
    return len(ts)


def write_eval(path):
    ids = np.random.default_rng(2).integers(0, V, (2, 8)).astype(np.int64)
    h = json.dumps({"input_ids": {"dtype": "I64", "shape": [2, 8], "data_offsets": [0, ids.nbytes]}}).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + ids.tobytes())


def loss_of(out):
    return json.load(open(out))["loss"]


def test_many_shards():
    a, b, one, ev = (os.path.join(TMP, x) for x in ("a", "b", "one", "eval.safetensors"))
    k = write_model(a, True)
    write_model(b, True)
    write_model(one, False)
    write_eval(ev)
    check(k > 300, "the model spans %d shards (more than 256)" % k)
    outs = []
    for ck in (a, one):
        out = os.path.join(TMP, os.path.basename(ck) + ".json")
        r = run("eval", ck, "--eval", ev, "--json", out)
        check(r.returncode == 0, "eval of %s: %s" % (os.path.basename(ck), r.stderr.strip()[-400:]))
        outs.append(loss_of(out) if r.returncode == 0 else None)
    check(None not in outs and outs[0] == outs[1], "%d shards: the loss of the one-file model (%s)" % (k, outs))
    lj = os.path.join(TMP, "ls.json")
    r = run("landscape", a, b, "--eval", ev, "--samples", 2, "--points", 3, "-q", "--json", lj)
    check(r.returncode == 0, "landscape over 2 x %d shards: %s" % (k, r.stderr.strip()[-400:]))
    # shard 300 cut while the evaluation reads its tensor in place
    live = os.path.join(TMP, "live")
    write_model(live, True)
    err = os.path.join(TMP, "st.err")
    env = dict(os.environ, MOESCOPE_TEST_STALL="evaluation rows")
    with open(err, "w") as fe:
        p = subprocess.Popen([testutil.MOESCOPE, "eval", live, "--eval", ev], stdout=subprocess.DEVNULL, stderr=fe,
                             env=env)
    held = False
    for _ in range(1200):  # until it says it waits (or ends)
        if "test stall" in open(err).read():
            held = True
            break
        if p.poll() is not None:
            break
        time.sleep(0.1)
    check(held, "eval over %d shards held at 'evaluation rows': %s" % (k, open(err).read()[-400:]))
    if not held:
        p.kill()
        p.wait()
        return
    cut = "model-00300-of-%05d.safetensors" % k
    os.truncate(os.path.join(live, cut), 0)
    p.send_signal(signal.SIGUSR1)
    rc = p.wait()
    msg = open(err).read()
    check(rc == 1 and "live/%s: tensor 'model.layers." % cut in msg and "the file changed while being read" in msg,
          "shard 300 of %d cut while mapped: exit 1 naming it (exit %d): %s" % (k, rc, msg.strip()[-400:]))


if __name__ == "__main__":
    sys.exit(testutil.run_tests("test_many_shards", [test_many_shards], TMP))
