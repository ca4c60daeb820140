"""tests/oracle/net_oracle.py - a network's MoE blocks as oracle layers, and the barrier
of the network's loss along a line, in numpy (gpt2_ref's forward, oracle's alignment):
what the network tests compare moescope's landscapes and curves with.

    Ld = block_layer(tensors, L, cfg)     MoE block L as an oracle layer (weights [out, in])
    layer_tensors(Ld, L)                  back to the block's GPT-2 tensors (Conv1D [in, out])
    aligned(A, B, order=None, order_stage=True, wm=True)   oracle.align's aligned B
    net_curve(ck, tb, ta, ids, T)         the network's loss at t = m / (T - 1): every MoE
                                          block L interpolated between ta[L] and tb[L]
    barrier(loss)                         max_m loss[m] - the chord
"""
import numpy as np

import gpt2_ref
import oracle


def block_layer(t, L, cfg):
    """MoE block L's tensors as an oracle layer (weights [out, in], no residual)"""
    m = cfg["moe"]
    pre = "transformer.h.%d.mlp." % L

    def ex(q):
        return {"w1": t[q + "c_fc.weight"].T, "b1": t[q + "c_fc.bias"], "w2": t[q + "c_proj.weight"].T,
                "b2": t[q + "c_proj.bias"]}
    n = m["num_experts"]
    return {"n": n, "d": cfg["n_embd"], "h": m["expert_intermediate_size"], "router": m["router"],
            "k": m["top_k"], "act": m["expert_activation"], "residual": False, "C": 0,
            "gate_w": t[pre + "gate.weight"], "gate_b": t.get(pre + "gate.bias", np.zeros(n)),
            "experts": [ex(pre + "experts.%d." % e) for e in range(n)],
            "shared": [ex(pre + "shared_experts.%d." % s) for s in range(m["num_shared_experts"])],
            "s": m["num_shared_experts"]}


def layer_tensors(Ld, L):
    pre = "transformer.h.%d.mlp." % L
    out = {pre + "gate.weight": Ld["gate_w"], pre + "gate.bias": Ld["gate_b"]}
    for kind, es in (("experts", Ld["experts"]), ("shared_experts", Ld["shared"])):
        for e, x in enumerate(es):
            q = "%s%s.%d." % (pre, kind, e)
            out.update({q + "c_fc.weight": x["w1"].T, q + "c_fc.bias": x["b1"], q + "c_proj.weight": x["w2"].T,
                        q + "c_proj.bias": x["b2"]})
    return out


def aligned(A, B, order=None, order_stage=True, wm=True):
    return oracle.align(A, B, order=order, order_stage=order_stage, wm_stage=wm)["layer"]


def net_curve(ck, tb_layers, ta_layers, ids, T, backbone_b=None, loss_a=None):
    """losses at the T points: every MoE tensor interpolated between A's layers and the
    aligned B's (and the backbone too when backbone_b); loss_a: A's own loss, known
    (the point t = 0 is A exactly)"""
    out = [] if loss_a is None else [loss_a]
    for m in range(len(out), T):
        t = m / (T - 1)
        params = {}
        for L in ta_layers:
            a, b = layer_tensors(ta_layers[L], L), layer_tensors(tb_layers[L], L)
            params.update({k: (1 - t) * a[k] + t * b[k] for k in a})
        if backbone_b is not None:
            for k, v in backbone_b.items():
                params[k] = (1 - t) * ck["tensors"][k] + t * v
        out.append(gpt2_ref.evaluate(ck, ids, params)["loss"])
    return out


def barrier(loss):
    T = len(loss)
    return max(loss[m] - ((1 - m / (T - 1)) * loss[0] + m / (T - 1) * loss[-1]) for m in range(T))
