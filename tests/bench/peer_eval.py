"""tests/bench/peer_eval.py - the numpy peer of bench_eval.py: the same
evaluation (gate, routing, experts, residual, LayerNorm head, loss) written
the way one would in numpy, in float32 throughout, over the whole set at once
(numpy's BLAS uses every core). Its loss is printed so the bench can check
both sides computed the same thing.

    peer_eval.py LAYER.safetensors EVAL.safetensors REPS
prints PEER_EVAL_SECONDS <best of REPS> LOSS <loss>
(Not a test: run by bench_eval.py.)"""
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", d) for d in ("lib", "oracle")]
import oracle  # noqa: E402

F = np.float32


def f32(L):
    """The layer's arrays as float32 (they are float32 values in the file)."""
    out = dict(L)
    for key in ("gate_w", "gate_b", "head_w", "head_b", "norm_w", "norm_b"):
        if key in L:
            out[key] = np.ascontiguousarray(L[key], dtype=F)
    out["experts"] = [{k: np.ascontiguousarray(v, dtype=F) for k, v in e.items()}
                      for e in L["experts"]]
    out["shared"] = [{k: np.ascontiguousarray(v, dtype=F) for k, v in e.items()}
                     for e in L["shared"]]
    return out


def expert(e, act, X):
    a = X @ e["w1"].T + e["b1"]
    if act == "silu_glu":
        hid = a / (F(1) + np.exp(-a)) * (X @ e["w3"].T + e["b3"])
    elif act == "gelu":
        from scipy.special import erf
        hid = F(0.5) * a * (F(1) + erf(a * F(0.70710678)))
    else:
        hid = np.maximum(a, F(0))
    return hid @ e["w2"].T + e["b2"]


def evaluate(L, X, y):
    S = X @ L["gate_w"].T + L["gate_b"]  # (N, n)
    if L["router"] == "topk" and L["k"] < L["n"]:
        k = L["k"]
        sel = np.argpartition(-S, k - 1, axis=1)[:, :k]
        Sm = np.full_like(S, -np.inf)
        np.put_along_axis(Sm, sel, np.take_along_axis(S, sel, axis=1), axis=1)
    else:
        Sm = S
    E = np.exp(Sm - Sm.max(axis=1, keepdims=True))
    G = E / E.sum(axis=1, keepdims=True)
    D = np.zeros_like(X)
    for e in L["shared"]:
        D += expert(e, L["act"], X)
    for i, e in enumerate(L["experts"]):
        rows = np.nonzero(G[:, i] > 0)[0]
        if len(rows) == len(X):
            D += G[:, i:i + 1] * expert(e, L["act"], X)
        elif len(rows):
            D[rows] += G[rows, i:i + 1] * expert(e, L["act"], X[rows])
    Z = X + D if L["residual"] else D
    if "norm_w" in L:
        mu = Z.mean(axis=1, keepdims=True)
        var = ((Z - mu) ** 2).mean(axis=1, keepdims=True)
        Z = (Z - mu) / np.sqrt(var + F(1e-5)) * L["norm_w"] + L["norm_b"]
    logits = Z @ L["head_w"].T + L["head_b"]
    mx = logits.max(axis=1, keepdims=True)
    lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
    loss = float((lse - logits[np.arange(len(X)), y]).mean())
    return loss, G.mean(axis=0), (G > 0).mean(axis=0)


def main():
    L = f32(oracle.load_layer(sys.argv[1]))
    ev = oracle.load_evalset(sys.argv[2])
    reps = int(sys.argv[3])
    X = np.ascontiguousarray(ev["inputs"], dtype=F)
    y = ev["labels"]
    best, loss = float("inf"), None
    for _ in range(reps):
        t0 = time.perf_counter()
        loss = evaluate(L, X, y)[0]
        best = min(best, time.perf_counter() - t0)
    print("PEER_EVAL_SECONDS %.6f LOSS %.9g" % (best, loss))


if __name__ == "__main__":
    main()
