"""tests/oracle/geometry_ref.py - an independent numpy/scipy version of moescope's
routing geometry (the manual's ROUTING GEOMETRY ACROSS DEPTH), float64 throughout:
numpy.linalg.svd / eigh / lstsq, scipy.linalg.subspace_angles and
scipy.linalg.orthogonal_procrustes. Written from the formulas, sharing no code with
src/analysis/.

    geometry(layers, ntrain)  layers: [{"W": [n, d], "b": [n], "X": [N, d], "k": k}]
        -> {"r", "layers": [{"rank", "sv", "logit_error", "variance_control",
                             "variance_pca", "recall": {...}}],
            "mean_deg", "overlap", "angles_deg": {(a, b): [...]},
            "gpa": {"residual", "residual_identity", "iterations"},
            "transitions": {method: {"shared", "specific", "identity", "eta", "steps"}}}

Conventions (as the manual states them): the centred router W - mean row; rank =
singular values above sigma_1 max(n, d) eps32; a basis vector's largest entry is
positive (svd_flip); states on the first r (the common rank) directions, centred on
the training rows' mean; GPA by alternation from the first layer's gauge and from the spectral start (the top
r eigenvectors of the block matrix [Y_l^T Y_k], each block's polar factor), the lower
residual kept, each stopping when no entry of any rotation moves by more than 1e-10 in
a round; transitions y_{l+1} ~ y_l A by least squares on
the training rows, R^2 on the held-out rows about 0; PCA of the training rows
(biased covariance); CCA: each layer whitened by S^-1/2, then turned onto the
previous layer's frame (Procrustes on the training rows); recall: logits read out
from [y, 1] by least squares on the training rows, top-k (dense: top-1) against
the router's own choice on the held-out rows. The random gauge depends on
moescope's random stream and is not reproduced here.
"""
import numpy as np
import scipy.linalg

EPS32 = float(np.finfo(np.float32).eps)


def flip(V):
    """each column's largest-magnitude entry (the first of equals) positive"""
    idx = np.argmax(np.abs(V), axis=0)
    s = np.sign(V[idx, np.arange(V.shape[1])])
    s[s == 0] = 1
    return V * s


def control(W):
    W = np.asarray(W, np.float64)
    n, d = W.shape
    Wc = W - W.mean(0)
    _, sv, Vt = np.linalg.svd(Wc, full_matrices=False)
    tol = sv[0] * max(n, d) * EPS32
    r = int((sv > tol).sum())
    U = flip(Vt[:r].T)
    return {"Wc": Wc, "sv": sv, "r": r, "U": U}


def choices(S, k):
    """the k largest logits of each row, ties to the smaller index (softmax routers:
    the largest weights are the largest logits)"""
    return np.argsort(-S, axis=1, kind="stable")[:, :k]


def readout_recall(Y, S, ch, ntrain, k, Ypred=None):
    """logits from [Y, 1] (least squares on the training rows), top-k on the held-out
    rows of Ypred (default Y) against ch"""
    X1 = np.hstack([Y, np.ones((len(Y), 1))])
    B = np.linalg.lstsq(X1[:ntrain], S[:ntrain], rcond=None)[0]
    P = Y[ntrain:] if Ypred is None else Ypred
    pred = np.hstack([P, np.ones((len(P), 1))]) @ B
    got = choices(pred.astype(np.float32).astype(np.float64), k)
    want = ch[ntrain:]
    hits = sum(len(set(g) & set(w)) for g, w in zip(got, want))
    return hits / (len(want) * k)


def _alternate(Ys, Q, tol, max_iter):
    L = len(Ys)
    it = 0
    while it < max_iter:
        M = sum(Y @ q for Y, q in zip(Ys, Q)) / L
        Qn = [scipy.linalg.orthogonal_procrustes(Y, M)[0] for Y in Ys]
        step = max(np.abs(a - b).max() for a, b in zip(Qn, Q))
        Q = Qn
        it += 1
        if it > 1 and step <= tol:
            break
    Z = [Y @ q for Y, q in zip(Ys, Q)]
    M = sum(Z) / L
    return Q, sum(((z - M) ** 2).sum() for z in Z), it


def align_signs(Ys, ntrain):
    """each layer's columns negated where their training product with the layer
    before's (already aligned) is negative"""
    out = [Ys[0]]
    for Y in Ys[1:]:
        c = (Y[:ntrain] * out[-1][:ntrain]).sum(0)
        out.append(Y * np.where(c < 0, -1.0, 1.0))
    return out


def gpa(Ys, tol=1e-10, max_iter=1000):
    """from the first layer's gauge and from the spectral (synchronisation) start; the
    lower residual kept; the identity gauge's residual with the axes' signs aligned"""
    L, r = len(Ys), Ys[0].shape[1]
    total = sum((Y ** 2).sum() for Y in Ys)
    M0 = sum(align_signs(Ys, len(Ys[0]))) / L
    res0 = sum(((Y - M0) ** 2).sum() for Y in align_signs(Ys, len(Ys[0]))) / total
    first = [scipy.linalg.orthogonal_procrustes(Y, Ys[0])[0] for Y in Ys]
    big = np.block([[a.T @ b for b in Ys] for a in Ys])
    V = np.linalg.eigh(big)[1][:, ::-1][:, :r]
    spectral = []
    for l in range(L):
        u, _, vt = np.linalg.svd(V[l * r:(l + 1) * r])
        spectral.append(u @ vt)
    runs = [_alternate(Ys, first, tol, max_iter), _alternate(Ys, spectral, tol, max_iter)]
    b = 1 if runs[1][1] < runs[0][1] * (1 - 1e-9) else 0
    Q, s, it = runs[b]
    return Q, s / total, res0, it, ("first", "spectral")[b], runs[1 - b][1] / total


def transitions(Ys, ntrain):
    L = len(Ys)
    tr = [Y[:ntrain] for Y in Ys]
    ho = [Y[ntrain:] for Y in Ys]
    A = np.linalg.lstsq(np.vstack(tr[:-1]), np.vstack(tr[1:]), rcond=None)[0]
    out = {"steps": [], "A": A}
    sums = {m: [0.0, 0.0] for m in ("shared", "specific", "identity")}
    for l in range(L - 1):
        Al = np.linalg.lstsq(tr[l], tr[l + 1], rcond=None)[0]
        T = ho[l + 1]
        sst = (T ** 2).sum()
        step = {}
        for m, P in (("shared", ho[l] @ A), ("specific", ho[l] @ Al), ("identity", ho[l])):
            sse = ((T - P) ** 2).sum()
            step[m] = 1 - sse / sst
            sums[m][0] += sse
            sums[m][1] += sst
        out["steps"].append(step)
    for m, (e, s) in sums.items():
        out[m] = 1 - e / s
    out["eta"] = out["shared"] / out["specific"]
    return out


def whiten(Y, ntrain):
    S = Y[:ntrain].T @ Y[:ntrain] / ntrain
    w, V = np.linalg.eigh(S)
    keep = w > w[-1] * 1e-12
    f = np.where(keep, 1 / np.sqrt(np.where(keep, w, 1)), 0)
    return Y @ (V * f) @ V.T


def cca_chain(Ys, ntrain):
    out = [whiten(Ys[0], ntrain)]
    for Y in Ys[1:]:
        w = whiten(Y, ntrain)
        R = scipy.linalg.orthogonal_procrustes(w[:ntrain], out[-1][:ntrain])[0]
        out.append(w @ R)
    return out


def geometry(layers, ntrain):
    ctl = [control(l["W"]) for l in layers]
    r = min(c["r"] for c in ctl)
    d = ctl[0]["U"].shape[0]
    res = {"r": r, "layers": []}
    Ys, Ps, extra = [], [], []
    for lay, c in zip(layers, ctl):
        X = np.asarray(lay["X"], np.float64)
        C = X @ c["U"]
        direct = X @ c["Wc"].T
        via = C @ (c["Wc"] @ c["U"]).T
        logit_err = np.abs(direct - via).max() / np.abs(direct).max()
        Y = C[:, :r] - C[:ntrain, :r].mean(0)
        mu = X[:ntrain].mean(0)
        Xc = X[:ntrain] - mu
        Sx = Xc.T @ Xc / ntrain
        w, V = np.linalg.eigh(Sx)
        Vr = flip(V[:, ::-1][:, :r])
        P = (X - mu) @ Vr
        P = P - P[:ntrain].mean(0)
        S = X @ np.asarray(lay["W"], np.float64).T + np.asarray(lay["b"], np.float64)
        ch = choices(S, lay["k"])
        res["layers"].append({
            "rank": c["r"], "sv": c["sv"], "logit_error": logit_err,
            "variance_control": np.trace(c["U"].T @ Sx @ c["U"]) / np.trace(Sx),
            "variance_pca": w[::-1][:r].sum() / np.trace(Sx),
            "recall": {"states": readout_recall(Y, S, ch, ntrain, lay["k"]),
                       "pca": readout_recall(P, S, ch, ntrain, lay["k"]),
                       "by_rank": {"states": [readout_recall(Y[:, :q], S, ch, ntrain, lay["k"]) for q in range(1, r + 1)],
                                   "pca": [readout_recall(P[:, :q], S, ch, ntrain, lay["k"]) for q in range(1, r + 1)]}}})
        Ys.append(Y)
        Ps.append(P)
        extra.append((S, ch))
    L = len(layers)
    res["mean_deg"] = np.zeros((L, L))
    res["overlap"] = np.zeros((L, L))
    res["angles_deg"] = {}
    for a in range(L):
        for b in range(L):
            th = np.sort(scipy.linalg.subspace_angles(ctl[a]["U"], ctl[b]["U"]))
            res["angles_deg"][(a, b)] = np.degrees(th)
            res["mean_deg"][a, b] = np.degrees(th).mean()
            res["overlap"][a, b] = (np.cos(th) ** 2).mean()
    Q, resid, resid0, it, start, other = gpa([Y[:ntrain] for Y in Ys])
    res["gpa"] = {"residual": resid, "residual_identity": resid0, "iterations": it, "start": start,
                  "residual_other_start": other}
    Zs = [Y @ q for Y, q in zip(Ys, Q)]
    res["transitions"] = {"canonical": transitions(Zs, ntrain), "raw": transitions(Ys, ntrain),
                          "pca": transitions(align_signs(Ps, ntrain), ntrain), "cca": transitions(cca_chain(Ys, ntrain), ntrain)}
    can = res["transitions"]["canonical"]
    for l in range(1, L):
        S, ch = extra[l]
        zp = Zs[l - 1][ntrain:]
        for name, A in (("shared", can["A"]),
                        ("specific", np.linalg.lstsq(Zs[l - 1][:ntrain], Zs[l][:ntrain], rcond=None)[0])):
            res["layers"][l]["recall"][name] = readout_recall(Ys[l], S, ch, ntrain, layers[l]["k"],
                                                              Ypred=zp @ A @ Q[l].T)
    res["d"] = d
    res["internal"] = {"U": [c["U"][:, :r] for c in ctl], "mu": [], "Q": Q,
                       "A": {m: res["transitions"][m]["A"] for m in ("canonical", "raw")},
                       "Al": [np.linalg.lstsq(Zs[l][:ntrain], Zs[l + 1][:ntrain], rcond=None)[0] for l in range(L - 1)]}
    for lay, c in zip(layers, ctl):
        X = np.asarray(lay["X"], np.float64)
        res["internal"]["mu"].append((X[:ntrain] @ c["U"][:, :r]).mean(0))
    return res


def transport_maps(res, method):
    """K_i (r, r) into layer i from layer i - 1 (i >= 1; K[0] unused)"""
    it, L, r = res["internal"], len(res["layers"]), res["r"]
    K = [np.zeros((r, r))]
    for i in range(1, L):
        if method == "canonical":
            K.append(it["Q"][i - 1] @ it["A"]["canonical"] @ it["Q"][i].T)
        elif method == "specific":
            K.append(it["Q"][i - 1] @ it["Al"][i - 1] @ it["Q"][i].T)
        elif method == "raw":
            K.append(it["A"]["raw"])
        else:  # "mean"
            K.append(np.zeros((r, r)))
    return K


def transport_hook(res, K, only):
    """gpt2_ref.logits' hook: MoE block `only`'s (every block after the first when only
    is None) control component replaced by the one transported from the block before:
    x + U (mu + (U_prev^T x_prev - mu_prev) K - U^T x)"""
    it = res["internal"]
    state = {}

    def hook(i, x):
        if i > 0 and (only is None or i == only):
            y = state["prev"] @ it["U"][i - 1] - it["mu"][i - 1]
            c = x @ it["U"][i]
            x = x + (it["mu"][i] + y @ K[i] - c) @ it["U"][i].T
        state["prev"] = x
        return x
    return hook
