"""tests/oracle/oracle.py - the shared numpy oracle for moescope (float64, pure numpy).

Written straight from the manual's formulas, independently of the C code, so tests can
compare the two. Other test modules add their own oracle functions here.

    read_safetensors(path)               -> (tensors: dict name -> ndarray, metadata: dict)
    write_safetensors(path, tensors, metadata=None, dtype=None)
    load_layer(path, prefix="moe")       -> layer dict (config + parameters, float64)
    layer_from_tensors(tensors, metadata, prefix="moe")
    load_evalset(path)                   -> {"inputs", "labels" | "targets"}
    route(layer, S)                      -> G (N, n)
    forward(layer, X)                    -> (Z, G): block output z and gate weights
    layer_output(layer, X)               -> (D, G): D(x) without the residual
    head(layer, Z)                       -> logits (N, C)
    eval(layer, evalset)                 -> {"loss", "accuracy", "load_mean", "load_frac"}

Conventions (match the manual and the C evaluator):
  * top-k: the k largest scores, ties to the smaller index; softmax over them;
  * GELU is the exact erf form 0.5 x (1 + erf(x / sqrt 2));
  * LayerNorm: biased variance, eps = 1e-5;
  * cross-entropy by log-sum-exp; accuracy by argmax with ties to the smaller
    index; regression loss is the MSE over N*C; a layer without a head gets the
    layer-only statistic mean(D(x)^2) over N*d;
  * load_frac is the fraction of samples with g_i(x) > 0.
"""
import json
import math
import struct

import numpy as np

__all__ = [
    "read_safetensors", "write_safetensors", "load_layer", "layer_from_tensors",
    "load_evalset", "route", "forward", "layer_output", "head", "eval", "gelu",
]

# ---------------------------------------------------------------- safetensors

_DTYPES = {
    "F64": np.dtype("<f8"), "F32": np.dtype("<f4"), "F16": np.dtype("<f2"),
    "I64": np.dtype("<i8"), "I32": np.dtype("<i4"), "I16": np.dtype("<i2"),
    "I8": np.dtype("i1"), "U8": np.dtype("u1"), "BOOL": np.dtype("u1"),
}
_NAMES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<f2"): "F16",
          np.dtype("<i8"): "I64", np.dtype("<i4"): "I32"}


def read_safetensors(path):
    """All tensors of a safetensors file: floats as float64, ints as int64."""
    with open(path, "rb") as f:
        raw = f.read()
    (hlen,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + hlen].decode("utf-8"))
    data = raw[8 + hlen:]
    meta = header.pop("__metadata__", None) or {}
    out = {}
    for name, info in header.items():
        b, e = info["data_offsets"]
        shape = tuple(info["shape"])
        dt = info["dtype"]
        buf = data[b:e]
        if dt == "BF16":
            u = np.frombuffer(buf, dtype="<u2").astype(np.uint32) << 16
            arr = u.view(np.float32).astype(np.float64)
        else:
            arr = np.frombuffer(buf, dtype=_DTYPES[dt])
            arr = arr.astype(np.float64 if arr.dtype.kind == "f" else np.int64)
        out[name] = arr.reshape(shape)
    return out, dict(meta)


def write_safetensors(path, tensors, metadata=None, dtype=None):
    """Write tensors (dict name -> array, in insertion order). Float arrays are
    written as F32 unless dtype (a numpy dtype, e.g. np.float64 / np.float16)
    says otherwise; integer arrays keep I64/I32."""
    header = {}
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    blobs = []
    off = 0
    for name, arr in tensors.items():
        a = np.asarray(arr)
        if a.dtype.kind == "f":
            a = a.astype(np.dtype(dtype).newbyteorder("<") if dtype is not None else "<f4")
        elif a.dtype.kind in "iu":
            a = a.astype("<i4" if a.dtype.itemsize == 4 else "<i8")
        a = np.ascontiguousarray(a)
        b = a.tobytes()
        header[name] = {"dtype": _NAMES[a.dtype.newbyteorder("<")], "shape": list(a.shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ---------------------------------------------------------------- the layer

def _expert(t, base, d, h, act):
    e = {"w1": t[base + ".fc1.weight"], "w2": t[base + ".fc2.weight"]}
    e["b1"] = t.get(base + ".fc1.bias", np.zeros(h))
    e["b2"] = t.get(base + ".fc2.bias", np.zeros(d))
    if act == "silu_glu":
        e["w3"] = t[base + ".fc3.weight"]
        e["b3"] = t.get(base + ".fc3.bias", np.zeros(h))
    return e


def layer_from_tensors(t, meta, prefix="moe"):
    gw = t[prefix + ".gate.weight"]
    n, d = gw.shape
    h = t[prefix + ".experts.0.fc1.weight"].shape[0]
    act = meta.get("moescope.activation", "relu")
    L = {
        "prefix": prefix, "n": n, "d": d, "h": h,
        "router": meta.get("moescope.router", "dense"),
        "k": int(meta.get("moescope.top_k", "2")),
        "act": act,
        "residual": meta.get("moescope.residual", "1") == "1",
        "gate_w": gw, "gate_b": t.get(prefix + ".gate.bias", np.zeros(n)),
        "meta": dict(meta),
    }
    L["experts"] = [_expert(t, "%s.experts.%d" % (prefix, i), d, h, act) for i in range(n)]
    shared = []
    while "%s.shared.%d.fc1.weight" % (prefix, len(shared)) in t:
        shared.append(_expert(t, "%s.shared.%d" % (prefix, len(shared)), d, h, act))
    L["shared"] = shared
    L["s"] = len(shared)
    if "head.out.weight" in t:
        L["head_w"] = t["head.out.weight"]
        L["C"] = L["head_w"].shape[0]
        L["head_b"] = t.get("head.out.bias", np.zeros(L["C"]))
        if "head.norm.weight" in t:
            L["norm_w"] = t["head.norm.weight"]
            L["norm_b"] = t.get("head.norm.bias", np.zeros(d))
    else:
        L["C"] = 0
    return L


def load_layer(path, prefix="moe"):
    t, meta = read_safetensors(path)
    return layer_from_tensors(t, meta, prefix)


def load_evalset(path):
    t, _ = read_safetensors(path)
    ev = {"inputs": t["inputs"]}
    if "labels" in t:
        ev["labels"] = t["labels"].astype(np.int64)
    else:
        ev["targets"] = t["targets"]
    return ev


# ---------------------------------------------------------------- forward pass

def gelu(x):
    from scipy.special import erf  # scipy is present on the test machines
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def gelu_new(x):
    """GPT-2's tanh form of GELU."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def _act(name, x):
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "gelu":
        return gelu(x)
    if name == "gelu_new":
        return gelu_new(x)
    raise ValueError(name)


def expert_apply(e, act, X):
    """E(X) for X (N, d)."""
    a = X @ e["w1"].T + e["b1"]
    if act == "silu_glu":
        hid = a / (1.0 + np.exp(-a)) * (X @ e["w3"].T + e["b3"])
    else:
        hid = _act(act, a)
    return hid @ e["w2"].T + e["b2"]


def route(L, S):
    """Gate weights G (N, n) from scores S (N, n)."""
    S = np.asarray(S, dtype=np.float64)
    N, n = S.shape
    if L["router"] == "topk" and L["k"] < n:
        k = L["k"]
        # stable sort of -S keeps the smaller index first among equal scores
        sel = np.argsort(-S, axis=1, kind="stable")[:, :k]
        mask = np.zeros_like(S, dtype=bool)
        np.put_along_axis(mask, sel, True, axis=1)
        Sm = np.where(mask, S, -np.inf)
    else:
        Sm = S
    mx = Sm.max(axis=1, keepdims=True)
    E = np.exp(Sm - mx)
    return E / E.sum(axis=1, keepdims=True)


def layer_output(L, X):
    """D(x) (N, d) and G (N, n)."""
    X = np.asarray(X, dtype=np.float64)
    S = X @ L["gate_w"].T + L["gate_b"]
    G = route(L, S)
    D = np.zeros_like(X)
    for e in L["shared"]:
        D += expert_apply(e, L["act"], X)
    for i, e in enumerate(L["experts"]):
        rows = G[:, i] > 0
        if rows.any():
            D[rows] += G[rows, i:i + 1] * expert_apply(e, L["act"], X[rows])
    return D, G


def forward(L, X):
    """Block output Z (N, d) = [x +] D(x), and the gate weights G (N, n)."""
    D, G = layer_output(L, X)
    Z = np.asarray(X, dtype=np.float64) + D if L["residual"] else D
    return Z, G


LN_EPS = 1e-5  # the LayerNorm eps (tests/oracle/test_layernorm_eps.py varies it to show it matters)


def head(L, Z):
    """logits (N, C) = H LayerNorm(z) + c."""
    Y = Z
    if "norm_w" in L:
        mu = Z.mean(axis=1, keepdims=True)
        var = ((Z - mu) ** 2).mean(axis=1, keepdims=True)
        Y = (Z - mu) / np.sqrt(var + LN_EPS) * L["norm_w"] + L["norm_b"]
    return Y @ L["head_w"].T + L["head_b"]


def eval(L, ev):  # noqa: A001 - the name the tests use
    """loss, accuracy (None unless classification), load_mean, load_frac."""
    X = ev["inputs"]
    N = X.shape[0]
    out = {}
    if L["C"] == 0:
        D, G = layer_output(L, X)
        out["loss"] = float((D ** 2).mean())
        out["accuracy"] = None
    else:
        Z, G = forward(L, X)
        logits = head(L, Z)
        if "labels" in ev:
            y = ev["labels"]
            mx = logits.max(axis=1, keepdims=True)
            lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
            out["loss"] = float((lse - logits[np.arange(N), y]).mean())
            out["accuracy"] = float((np.argmax(logits, axis=1) == y).mean())
        else:
            out["loss"] = float(((logits - ev["targets"]) ** 2).mean())
            out["accuracy"] = None
    out["load_mean"] = G.mean(axis=0)
    out["load_frac"] = (G > 0).mean(axis=0)
    return out


# ---------------------------------------------------------------- alignment
# Added by the alignment helper: gate_cost, expert_cost, wm_similarity,
# permute_expert, align. Plain numpy/scipy in float64, written from the manual.

def gate_cost(A, B, center=True):
    """C (n, n): C[i, j] = |[W|b]bar^A_i - [W|b]bar^B_j|, rows centred over experts."""
    ga = np.hstack([A["gate_w"], np.asarray(A["gate_b"])[:, None]])
    gb = np.hstack([B["gate_w"], np.asarray(B["gate_b"])[:, None]])
    if center:
        ga = ga - ga.mean(axis=0)
        gb = gb - gb.mean(axis=0)
    return np.sqrt(((ga[:, None, :] - gb[None, :, :]) ** 2).sum(axis=2))


def expert_grams(e, act):
    """(At^T At, Bt Bt^T) with At = [W1 | b1 (| W3 | b3)], Bt = [W2 | b2]."""
    cols = [e["w1"], e["b1"][:, None]]
    if act == "silu_glu":
        cols += [e["w3"], e["b3"][:, None]]
    At = np.hstack(cols)
    Bt = np.hstack([e["w2"], e["b2"][:, None]])
    return At.T @ At, Bt @ Bt.T


def expert_cost(A, B, shared=False):
    """C (n, n) of Gram distances; shared=True compares the shared experts."""
    key = "shared" if shared else "experts"
    ga = [expert_grams(e, A["act"]) for e in A[key]]
    gb = [expert_grams(e, B["act"]) for e in B[key]]
    C = np.zeros((len(ga), len(gb)))
    for i, (a1, a2) in enumerate(ga):
        for j, (b1, b2) in enumerate(gb):
            C[i, j] = math.sqrt(((a1 - b1) ** 2).sum() + ((a2 - b2) ** 2).sum())
    return C


def wm_similarity(ea, eb, act):
    """S (h, h) = W1a W1b^T + b1a b1b^T + W2a^T W2b [+ W3a W3b^T + b3a b3b^T]."""
    S = ea["w1"] @ eb["w1"].T + np.outer(ea["b1"], eb["b1"]) + ea["w2"].T @ eb["w2"]
    if act == "silu_glu":
        S = S + ea["w3"] @ eb["w3"].T + np.outer(ea["b3"], eb["b3"])
    return S


def permute_expert(e, P):
    """Unit u of the result is unit P[u] of e (rows of W1/W3, b1/b3, columns of W2)."""
    P = np.asarray(P)
    out = dict(e)
    out["w1"], out["b1"] = e["w1"][P], e["b1"][P]
    out["w2"] = e["w2"][:, P]
    if "w3" in e:
        out["w3"], out["b3"] = e["w3"][P], e["b3"][P]
    return out


def align(A, B, method="expert", center=True, order_stage=True, wm_stage=True, order=None):
    """Algorithm 1: B re-expressed in A's basis. Returns a dict with order, total,
    perms (one per slot), shared_order, shared_perms and layer (the aligned B)."""
    from scipy.optimize import linear_sum_assignment
    n, h = A["n"], A["h"]
    total = 0.0
    if order is not None:
        order = np.asarray(order)
    elif order_stage:
        C = gate_cost(A, B, center) if method == "gate" else expert_cost(A, B)
        rows, order = linear_sum_assignment(C)
        total = float(C[rows, order].sum())
    else:
        order = np.arange(n)
    s = len(A["shared"])
    if s and (order_stage or order is not None):
        Cs = expert_cost(A, B, shared=True)
        _, sorder = linear_sum_assignment(Cs)
    else:
        sorder = np.arange(s)

    def match(ea, eb):
        if not wm_stage:
            return np.arange(h)
        _, P = linear_sum_assignment(wm_similarity(ea, eb, A["act"]), maximize=True)
        return P

    out = dict(B)
    out["gate_w"] = B["gate_w"][order]
    out["gate_b"] = np.asarray(B["gate_b"])[order]
    perms, experts = [], []
    for i in range(n):
        P = match(A["experts"][i], B["experts"][order[i]])
        perms.append(P)
        experts.append(permute_expert(B["experts"][order[i]], P))
    sperms, shared = [], []
    for j in range(s):
        P = match(A["shared"][j], B["shared"][sorder[j]])
        sperms.append(P)
        shared.append(permute_expert(B["shared"][sorder[j]], P))
    out["experts"], out["shared"] = experts, shared
    return {"order": np.asarray(order), "total": total, "perms": perms,
            "shared_order": np.asarray(sorder), "shared_perms": sperms, "layer": out}


# ---------------------------------------------------------------- diagnostics
# Added by the diagnostics helper: diag_expert_dist, diag_output_dist, diag_gate,
# diag_topk_sigma, diag_routing, diag_margin, diag_slot_residuals. float64, from
# the definitions in include/analysis/diagnose.h.

def _expert_vec(e, P=None):
    """All parameters of one expert as a vector, hidden units permuted by P."""
    if P is not None:
        e = permute_expert(e, P)
    parts = [e["w1"].ravel(), e["b1"], e["w2"].ravel(), e["b2"]]
    if "w3" in e:
        parts += [e["w3"].ravel(), e["b3"]]
    return np.concatenate(parts)


def diag_expert_pair_dist(ea, eb, act):
    """min over hidden permutations P of |theta_a - P theta_b| (exact by one LAP)."""
    from scipy.optimize import linear_sum_assignment
    _, P = linear_sum_assignment(wm_similarity(ea, eb, act), maximize=True)
    return float(np.linalg.norm(_expert_vec(ea) - _expert_vec(eb, P)))


def diag_expert_dist(L):
    """(D (n, n) of permutation-aligned parameter distances, rms of |theta_i|)."""
    n = L["n"]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            D[i, j] = D[j, i] = diag_expert_pair_dist(L["experts"][i], L["experts"][j], L["act"])
    rms = math.sqrt(np.mean([(_expert_vec(e) ** 2).sum() for e in L["experts"]]))
    return D, rms


def diag_output_dist(L, X, max_samples=2048):
    """(D (n, n) of RMS output differences on X[:max_samples], RMS of the outputs)."""
    X = np.asarray(X, dtype=np.float64)[:max_samples]
    O = [expert_apply(e, L["act"], X) for e in L["experts"]]
    n = len(O)
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            D[i, j] = D[j, i] = math.sqrt(((O[i] - O[j]) ** 2).mean())
    rms = math.sqrt(np.mean([(o ** 2).mean() for o in O]))
    return D, rms


def diag_gate(L):
    """{scale, row_min, diff_min}: gate rows r_i = [W_i | b_i]; scale = mean |r_i - mean r|;
    row_min = min_{i<j} |r_i - r_j|; diff_min = min over ordered pairs (i,j) != (k,l)
    (i != j, k != l) of |(r_i - r_j) - (r_k - r_l)|."""
    R = np.hstack([L["gate_w"], np.asarray(L["gate_b"])[:, None]])
    n = R.shape[0]
    scale = float(np.linalg.norm(R - R.mean(axis=0), axis=1).mean())
    row_min = min(np.linalg.norm(R[i] - R[j]) for i in range(n) for j in range(i + 1, n))
    pairs = [(i, j) for i in range(n) for j in range(n) if i != j]
    diffs = np.array([R[i] - R[j] for i, j in pairs])
    G = np.sqrt(((diffs[:, None, :] - diffs[None, :, :]) ** 2).sum(axis=2))
    np.fill_diagonal(G, np.inf)
    return {"scale": scale, "row_min": float(row_min), "diff_min": float(G.min())}


def diag_topk_sigma(L):
    """Singular values (n-1 of them, descending, zeros past d) of M with rows
    W_{i-1} - W_i, and the rank (sigma > sigma_max * max(n-1, d) * float32 eps)."""
    W = L["gate_w"]
    M = W[:-1] - W[1:]
    s = np.linalg.svd(M, compute_uv=False)
    s = np.concatenate([s, np.zeros(M.shape[0] - len(s))])
    tol = s[0] * max(M.shape) * np.finfo(np.float32).eps
    return s, int((s > tol).sum())


def diag_routing(L, X):
    """(load_mean (n), load_frac (n)): mean gate weight, and the fraction of samples
    with the expert in the top-k (dense: the argmax), ties to the smaller index."""
    X = np.asarray(X, dtype=np.float64)
    S = X @ L["gate_w"].T + L["gate_b"]
    G = route(L, S)
    k = L["k"] if L["router"] == "topk" else 1
    sel = np.argsort(-S, axis=1, kind="stable")[:, :k]
    top = np.zeros_like(S, dtype=bool)
    np.put_along_axis(top, sel, True, axis=1)
    return G.mean(axis=0), top.mean(axis=0)


def diag_margin(C):
    """(best order, total, second-best total) by brute force over all permutations."""
    import itertools
    n = C.shape[0]
    tot = sorted((sum(C[i, p[i]] for i in range(n)), p) for p in itertools.permutations(range(n)))
    return np.array(tot[0][1]), float(tot[0][0]), float(tot[1][0])


def diag_slot_residuals(A, B, order):
    """(resid (n), rel (n)): distance of A's expert i from B's expert order[i] after
    weight matching, and relative to sqrt((|theta_a|^2 + |theta_b|^2) / 2)."""
    res, rel = [], []
    for i, j in enumerate(order):
        ea, eb = A["experts"][i], B["experts"][j]
        r = diag_expert_pair_dist(ea, eb, A["act"])
        sc = math.sqrt(0.5 * ((_expert_vec(ea) ** 2).sum() + (_expert_vec(eb) ** 2).sum()))
        res.append(r)
        rel.append(r / sc)
    return np.array(res), np.array(rel)


# ---------------------------------------------------------------- curves and landscapes
# Added by the landscape helper: interpolate, curve, curve_stats, landscape.
# Plain float64 numpy written from the manual: every order is aligned with
# align(order=pi) and evaluated point by point, with no sharing of work.

def _lerp_tree(a, b, t):
    if isinstance(a, dict):
        return {k: _lerp_tree(a[k], b[k], t) if k in b else a[k] for k in a}
    if isinstance(a, list):
        return [_lerp_tree(x, y, t) for x, y in zip(a, b)]
    if isinstance(a, np.ndarray):
        return (1.0 - t) * a + t * np.asarray(b)
    return a


def interpolate(A, B, t):
    """theta(t) = (1-t) theta_A + t theta_B on every parameter (gate, experts, shared, head)."""
    out = dict(A)
    for key in ("gate_w", "gate_b", "head_w", "head_b", "norm_w", "norm_b"):
        if key in A:
            out[key] = (1.0 - t) * np.asarray(A[key]) + t * np.asarray(B[key])
    out["experts"] = _lerp_tree(A["experts"], B["experts"], t)
    out["shared"] = _lerp_tree(A["shared"], B["shared"], t)
    return out


def _loss_acc(L, ev, Z):
    logits = head(L, Z)
    N = Z.shape[0]
    if "labels" in ev:
        y = ev["labels"]
        mx = logits.max(axis=1, keepdims=True)
        lse = mx[:, 0] + np.log(np.exp(logits - mx).sum(axis=1))
        return float((lse - logits[np.arange(N), y]).mean()), \
            float((np.argmax(logits, axis=1) == y).mean())
    return float(((logits - ev["targets"]) ** 2).mean()), None


def curve_stats(loss, acc=None):
    """(barrier, acc_barrier, auc) of the manual's formulas for a curve over t_m = m/(T-1)."""
    loss = np.asarray(loss, dtype=np.float64)
    T = len(loss)
    t = np.arange(T) / (T - 1)
    ex = loss - ((1 - t) * loss[0] + t * loss[-1])
    barrier = float(ex.max())
    auc = float(np.trapz(ex, t)) if hasattr(np, "trapz") else float(np.trapezoid(ex, t))
    accb = None
    if acc is not None:
        acc = np.asarray(acc, dtype=np.float64)
        accb = float((((1 - t) * acc[0] + t * acc[-1]) - acc).max())
    return barrier, accb, auc


def curve(A, Bp, ev, T=25):
    """Loss (and accuracy) at t_m from A to the aligned Bp: dict loss, acc, barrier,
    acc_barrier, auc. Without a head: mean((D_t - ((1-t) D_A + t D_B))^2) over N*d."""
    X = np.asarray(ev["inputs"], dtype=np.float64)
    ts = np.arange(T) / (T - 1)
    loss, acc = [], []
    if A["C"] == 0:
        DA, _ = layer_output(A, X)
        DB, _ = layer_output(Bp, X)
    for t in ts:
        M = interpolate(A, Bp, t)
        if A["C"] == 0:
            D, _ = layer_output(M, X)
            loss.append(float(((D - ((1 - t) * DA + t * DB)) ** 2).mean()))
            acc.append(None)
        else:
            Z, _ = forward(M, X)
            lo, ac = _loss_acc(M, ev, Z)
            loss.append(lo)
            acc.append(ac)
    acc = None if acc[0] is None else acc
    b, ab, auc = curve_stats(loss, acc)
    return {"t": ts, "loss": np.array(loss), "acc": None if acc is None else np.array(acc),
            "barrier": b, "acc_barrier": ab, "auc": auc}


def rank_tau(naive_barrier):
    """Two barriers are tied when they differ by at most tau."""
    return 1e-6 * max(naive_barrier, 1e-3) if not math.isnan(naive_barrier) else 1e-9


def tie_classes(barriers, tau):
    """Greedy tie classes of ascending barriers (NaN last): a class starts at the
    smallest barrier not yet in a class and takes every x with x - start <= tau.
    Returns the class index of each (NaN: one class after all numbers)."""
    cls, start, c = [], None, -1
    for x in barriers:
        if math.isnan(x):
            cls.append(None)
            continue
        if start is None or x - start > tau:
            start, c = x, c + 1
        cls.append(c)
    return [c + 1 if k is None else k for k in cls]


def rank_info(rows, barrier, auc, order, tau):
    """rank = 1 + #{B < b - tau}, tied = #{|B - b| <= tau} (the chosen included,
    added when it is not among rows), rank_auc = the chosen's 1-based position
    when every order is sorted by (tie class, AUC with NaN last, order).
    rows: [(order tuple, barrier, acc_barrier, auc)]."""
    order = tuple(order)
    B = np.array([r[1] for r in rows], dtype=np.float64)
    present = any(tuple(r[0]) == order for r in rows)
    if math.isnan(barrier):
        rank = 1 + int(np.sum(~np.isnan(B)))
        tied = int(np.sum(np.isnan(B)))
    else:
        rank = 1 + int(np.sum(B < barrier - tau))
        tied = int(np.sum(np.abs(B - barrier) <= tau))
    tied += 0 if present else 1
    allr = [(tuple(r[0]), float(r[1]), float(r[3])) for r in rows]
    if not present:
        allr.append((order, float(barrier), float(auc)))
    allr.sort(key=lambda r: (math.isnan(r[1]), 0.0 if math.isnan(r[1]) else r[1]))
    cls = tie_classes([r[1] for r in allr], tau)
    keyed = sorted(zip(cls, allr), key=lambda e: (e[0], math.isnan(e[1][2]),
                                                  0.0 if math.isnan(e[1][2]) else e[1][2], e[1][0]))
    pos = [k for k, (_, r) in enumerate(keyed) if r[0] == order][0] + 1
    return {"rank": rank, "tied": tied, "rank_auc": pos}


def l_hat(b, best, naive):
    den = naive - best
    return 100.0 * (b - best) / den if den > 0 else None


def spearman(x, y):
    """Pearson correlation of average ranks (scipy.stats.spearmanr's statistic),
    written out here so the C code has an independent check."""
    def avg_ranks(v):
        v = np.asarray(v, dtype=np.float64)
        idx = np.argsort(v, kind="stable")
        r = np.empty(len(v))
        s = 0
        while s < len(v):
            e = s + 1
            while e < len(v) and v[idx[e]] == v[idx[s]]:
                e += 1
            r[idx[s:e]] = 0.5 * (s + 1 + e)
            s = e
        return r
    rx, ry = avg_ranks(x), avg_ranks(y)
    if len(rx) < 2 or rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


def landscape(A, B, ev, T=25, orders=None, wm=True, center=True):
    """The landscape of the manual's formulas. orders: list of orders to evaluate (default: all n!).
    Returns dict rows [(order tuple, barrier, acc_barrier, auc)] sorted by
    (barrier, order), named curves naive/skip_order/gate/expert, and for the two
    methods rank and l_hat computed over the evaluated orders."""
    import itertools
    n = A["n"]
    if orders is None:
        orders = list(itertools.permutations(range(n)))
    rows = []
    for p in orders:
        c = curve(A, align(A, B, order=list(p), wm_stage=wm)["layer"], ev, T)
        rows.append((tuple(int(v) for v in p), c["barrier"], c["acc_barrier"], c["auc"]))
    rows.sort(key=lambda r: (r[1], r[0]))
    named = {
        "naive": curve(A, align(A, B, order_stage=False, wm_stage=False)["layer"], ev, T),
        "skip_order": curve(A, align(A, B, order_stage=False, wm_stage=True)["layer"], ev, T),
    }
    named["naive"]["order"] = tuple(range(n))
    named["skip_order"]["order"] = tuple(range(n))
    best = rows[0][1]
    for m in ("gate", "expert"):
        al = align(A, B, method=m, center=center, wm_stage=wm)
        c = curve(A, al["layer"], ev, T)
        c["order"] = tuple(int(v) for v in al["order"])
        c["cost"] = al["total"]
        tau = rank_tau(named["naive"]["barrier"])
        c.update(rank_info(rows, c["barrier"], c["auc"], c["order"], tau))
        c["l_hat"] = l_hat(c["barrier"], best, named["naive"]["barrier"])
        named[m] = c
    return {"rows": rows, "best": best, **named}
