"""The dense linear algebra of the ridge-based methods in torch, float64, on a device.

Imported only from the branches of an estimator whose ``device`` is not "cpu" (the NumPy path never
imports torch; :mod:`rfbench.methods.device`). The algorithms are those of :mod:`rfbench.methods.ridge`
and ``salsa._ExactEngine``, batched over a leading dimension where the matrices have one size:

* :func:`fold_parts`: for a batch of feature matrices (RFF: one per bandwidth σ) and the inner
  folds, each training part's centred Gram matrix (the full one minus the validation one, as
  ``ridge.split_stats``), all of them eigendecomposed in one ``torch.linalg.eigh`` over the
  (batch × fold) leading dimensions, and the validation rows projected on the eigenvectors;
* :func:`cv_criteria`: from those, the validation MSE (and, for ±1 or one-vs-rest targets, the error
  rate) of every (batch, fold, λ) by a diagonal rescaling per λ (``ridge.cv_mse_path``,
  ``rfkit.ridge_cv_curves`` / ``multiclass_cv_curves``);
* :class:`CVCurve`: ``ridge.CVCurve`` on the device (the mean CV MSE at one λ, for the 1-D search
  of ``ridge.select_lambda_continuous``, which stays the NumPy/SciPy code);
* :func:`ridge_solve`: the final solve (Cholesky of ZᵀZ + mλI, eigenvalues if it fails);
* :func:`kernel_fold_paths` / :func:`kernel_solve`: kernel ridge on an m×m kernel (SALSA's exact
  variant): one eigendecomposition per fold's training block, batched over the folds of one size,
  and the Cholesky solve of the final fit.

Everything returns NumPy arrays or floats, so that the decisions (the grid's argmin, the 1-D search,
DIRECT) are the NumPy code's, fed with the device's quantities. They agree with the NumPy path to
rounding (≤ 1e-10 relative on well-conditioned problems; tests/methods/test_device_ridge.py), not bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

F64 = torch.float64
#: device memory one batch of feature matrices may take (:func:`batch_size`)
BATCH_BYTES = 2**30


def as_tensor(a, device) -> torch.Tensor:
    """A float64 tensor of ``a`` on ``device`` (a torch.device): a copy, since the runner hands
    read-only arrays that torch must not share (it warns, and a write would change the data)."""
    return torch.from_numpy(np.array(a, dtype=np.float64)).to(device)


def _index(idx, device) -> torch.Tensor:
    return torch.from_numpy(np.array(idx, dtype=np.int64)).to(device)     # a copy: see as_tensor


def _numpy(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def _is_partition(splits, m: int) -> bool:
    """Whether the validation parts partition the rows (K-fold), as ``ridge.split_stats`` asks."""
    vals = [np.asarray(va) for _, va in splits]
    return (sum(v.size for v in vals) == m and np.unique(np.concatenate(vals)).size == m
            and all(len(tr) + len(va) == m for tr, va in splits))


def _stats(Zp: torch.Tensor, Yp: torch.Tensor):
    """(G, B, s, sy, rows) of a batch of row sets Zp (..., r, p) with targets Yp (r, C)."""
    return Zp.mT @ Zp, Zp.mT @ Yp, Zp.sum(dim=-2), Yp.sum(dim=0), Zp.shape[-2]


def _train_stats(Z: torch.Tensor, Y: torch.Tensor, splits):
    """Per split, the statistics of its training part: ``ridge.split_stats``'s rule (the full
    statistics minus the validation part's where the two sides cover the rows)."""
    m = Z.shape[-2]
    dev = Z.device
    if _is_partition(splits, m):
        val = [_stats(Z[..., _index(va, dev), :], Y[_index(va, dev)]) for _, va in splits]
        full = val[0]
        for st in val[1:]:
            full = tuple(f + v for f, v in zip(full, st, strict=True))
        return [tuple(f - v for f, v in zip(full, st, strict=True)) for st in val]
    full = _stats(Z, Y)
    out = []
    for tr, va in splits:
        if len(tr) + len(va) == m and len(va) <= len(tr):
            st = _stats(Z[..., _index(va, dev), :], Y[_index(va, dev)])
            out.append(tuple(f - v for f, v in zip(full, st, strict=True)))
        else:
            out.append(_stats(Z[..., _index(tr, dev), :], Y[_index(tr, dev)]))
    return out


@dataclass
class FoldParts:
    """A batch of feature matrices × the folds after one eigendecomposition each (tensors).

    ``e`` (S, K, p) clipped eigenvalues of the centred training Gram; ``Q`` (S, K, p, C) = Vᵀ B_c;
    ``A`` (S, K, n, p) = (Z_va − z̄) V, zero rows beyond a fold's ``n_va``; ``R`` (K, n, C) = Y_va − ȳ
    and ``Yv`` (K, n, C) = Y_va, zero-padded; ``mask`` (K, n); ``n_va`` (K,); ``m_tr`` (K,);
    ``y_mean`` (K, C).
    """

    e: torch.Tensor
    Q: torch.Tensor
    A: torch.Tensor
    R: torch.Tensor
    Yv: torch.Tensor
    mask: torch.Tensor
    n_va: torch.Tensor
    m_tr: torch.Tensor
    y_mean: torch.Tensor

    def numpy_fold(self, s: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
        """(e, q, A, r, m_tr) of batch entry s, fold k, as ``ridge.CVCurve`` holds them (one response)."""
        n = int(self.n_va[k])
        return (_numpy(self.e[s, k]), _numpy(self.Q[s, k, :, 0]), _numpy(self.A[s, k, :n]),
                _numpy(self.R[k, :n, 0]), int(self.m_tr[k]))


def fold_parts(Z: torch.Tensor, Y: torch.Tensor, splits, fit_intercept: bool = True) -> FoldParts:
    """:class:`FoldParts` of Z (S, m, p) — or (m, p), read as S = 1 — with targets Y (m,) or (m, C)
    on the same device: every (S × K) centred training Gram matrix in one batched eigh."""
    if Z.ndim == 2:
        Z = Z[None]
    if Y.ndim == 1:
        Y = Y[:, None]
    dev = Z.device
    K = len(splits)
    train = _train_stats(Z, Y, splits)
    G = torch.stack([st[0] for st in train], dim=1)                      # (S, K, p, p)
    B = torch.stack([st[1] for st in train], dim=1)                      # (S, K, p, C)
    m_tr = torch.tensor([float(st[4]) for st in train], dtype=F64, device=dev)
    if fit_intercept:
        z_mean = torch.stack([st[2] for st in train], dim=1) / m_tr[None, :, None]     # (S, K, p)
        y_mean = torch.stack([st[3] for st in train], dim=0) / m_tr[:, None]           # (K, C)
        G = G - m_tr[None, :, None, None] * z_mean[..., :, None] * z_mean[..., None, :]
        B = B - m_tr[None, :, None, None] * z_mean[..., :, None] * y_mean[None, :, None, :]
    else:
        z_mean = torch.zeros(Z.shape[0], K, Z.shape[-1], dtype=F64, device=dev)
        y_mean = torch.zeros(K, Y.shape[1], dtype=F64, device=dev)
    e, V = torch.linalg.eigh(G)
    del G
    e = e.clamp_min(0.0)
    Q = V.mT @ B
    n_va = [len(va) for _, va in splits]
    n = max(n_va)
    A = torch.zeros(Z.shape[0], K, n, Z.shape[-1], dtype=F64, device=dev)
    R = torch.zeros(K, n, Y.shape[1], dtype=F64, device=dev)
    Yv = torch.zeros(K, n, Y.shape[1], dtype=F64, device=dev)
    mask = torch.zeros(K, n, dtype=torch.bool, device=dev)
    for k, (_, va) in enumerate(splits):
        iv = _index(va, dev)
        A[:, k, :n_va[k]] = (Z[:, iv] - z_mean[:, k, None, :]) @ V[:, k]
        Yv[k, :n_va[k]] = Y[iv]
        R[k, :n_va[k]] = Y[iv] - y_mean[k]
        mask[k, :n_va[k]] = True
    return FoldParts(e, Q, A, R, Yv, mask, torch.tensor(n_va, dtype=F64, device=dev), m_tr, y_mean)


def cv_criteria(parts: FoldParts, lambdas, classify: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """(MSE, error rate or None), each (S, K, L): the validation criteria of every batch entry,
    fold and λ. MSE over the rows (and the C columns); the error rate for ±1 targets (one column:
    sign, ties → +1) or one-vs-rest columns (several: argmax), as ``rfkit``."""
    lambdas = np.asarray(lambdas, dtype=float)
    S, K = parts.e.shape[:2]
    C = parts.R.shape[-1]
    mse = torch.empty(S, K, lambdas.size, dtype=F64, device=parts.e.device)
    err = torch.empty_like(mse) if classify else None
    mask = parts.mask[None, :, :, None]
    for j, lam in enumerate(lambdas):
        coef = parts.Q / (parts.e + parts.m_tr[None, :, None] * float(lam))[..., None]     # (S, K, p, C)
        pred = parts.A @ coef                                                               # (S, K, n, C)
        resid = (pred - parts.R) * mask
        mse[:, :, j] = (resid**2).sum(dim=(-2, -1)) / (parts.n_va * C)
        if classify:
            score = pred + parts.y_mean[None, :, None, :]
            if C == 1:
                wrong = torch.where(score >= 0, 1.0, -1.0) != parts.Yv
                wrong = wrong[..., 0]
            else:
                wrong = score.argmax(dim=-1) != parts.Yv.argmax(dim=-1)
            err[:, :, j] = (wrong & parts.mask).sum(dim=-1) / parts.n_va
    return _numpy(mse), None if err is None else _numpy(err)


class CVCurve:
    """``ridge.CVCurve`` of batch entry ``s`` of :class:`FoldParts` (one response): the mean K-fold
    CV MSE at one λ, computed on the device, returned as a float."""

    def __init__(self, parts: FoldParts, s: int = 0):
        self.e, self.q = parts.e[s], parts.Q[s, :, :, 0]
        self.A, self.r, self.mask = parts.A[s], parts.R[:, :, 0], parts.mask
        self.n_va, self.m_tr = parts.n_va, parts.m_tr

    def __call__(self, lam: float) -> float:
        coef = self.q / (self.e + self.m_tr[:, None] * float(lam))                      # (K, p)
        resid = ((self.A @ coef[..., None])[..., 0] - self.r) * self.mask                # (K, n)
        return float(((resid**2).sum(dim=-1) / self.n_va).mean())


def ridge_solve(Z: torch.Tensor, Y: torch.Tensor, lam: float,
                fit_intercept: bool = True) -> tuple[np.ndarray, np.ndarray | float]:
    """(coef, intercept) of ``ridge.ridge_solve`` / ``rfkit.ridge_fit``: Cholesky of the centred
    ZᵀZ + mλI, the eigenvalue path where it is not positive definite. Y (m,) or (m, C)."""
    one = Y.ndim == 1
    Y2 = Y[:, None] if one else Y
    m = Z.shape[0]
    G, B = Z.T @ Z, Z.T @ Y2
    if fit_intercept:
        z_mean, y_mean = Z.mean(dim=0), Y2.mean(dim=0)
        G = G - m * torch.outer(z_mean, z_mean)
        B = B - m * torch.outer(z_mean, y_mean)
    else:
        z_mean = torch.zeros(Z.shape[1], dtype=F64, device=Z.device)
        y_mean = torch.zeros(Y2.shape[1], dtype=F64, device=Z.device)
    A = G + m * float(lam) * torch.eye(G.shape[0], dtype=F64, device=Z.device)
    L, info = torch.linalg.cholesky_ex(A)
    if int(info) == 0:
        coef = torch.cholesky_solve(B, L)
    else:
        e, V = torch.linalg.eigh(G)
        coef = V @ ((V.T @ B) / (e.clamp_min(0.0) + m * float(lam))[:, None])
    intercept = y_mean - z_mean @ coef
    if one:
        return _numpy(coef[:, 0]), float(intercept[0])
    return _numpy(coef), _numpy(intercept)


def kernel_fold_paths(E: np.ndarray, y: np.ndarray, splits, device) -> list[tuple]:
    """Per split, (w, q, P, y_va, m_tr) of kernel ridge on the kernel E (m × m): K_tr = V diag(w) Vᵀ
    (w clipped at 0), q = Vᵀ y_tr, P = K_va,tr V — ``salsa._ExactEngine.folds``'s quantities, as
    NumPy arrays. The folds whose training parts have one size are eigendecomposed in one batch."""
    Et, yt = as_tensor(E, device), as_tensor(y, device)
    out: list = [None] * len(splits)
    by_size: dict[int, list[int]] = {}
    for k, (tr, _) in enumerate(splits):
        by_size.setdefault(len(tr), []).append(k)
    for ks in by_size.values():
        trs = [_index(splits[k][0], device) for k in ks]
        w, V = torch.linalg.eigh(torch.stack([Et[tr][:, tr] for tr in trs]))
        w = w.clamp_min(0.0)
        for i, k in enumerate(ks):
            tr, va = trs[i], _index(splits[k][1], device)
            out[k] = (_numpy(w[i]), _numpy(V[i].T @ yt[tr]), _numpy(Et[va][:, tr] @ V[i]),
                      np.asarray(y)[np.asarray(splits[k][1])], int(len(splits[k][0])))
        del w, V
    return out


def kernel_solve(E: np.ndarray, y: np.ndarray, lam: float, device) -> np.ndarray:
    """α = (E + mλI)⁻¹ y (Cholesky; the eigenvalue path, w clipped at 0, where it fails)."""
    Et, yt = as_tensor(E, device), as_tensor(y, device)
    m = Et.shape[0]
    L, info = torch.linalg.cholesky_ex(Et + m * float(lam) * torch.eye(m, dtype=F64, device=device))
    if int(info) == 0:
        return _numpy(torch.cholesky_solve(yt[:, None], L)[:, 0])
    w, V = torch.linalg.eigh(Et)
    return _numpy(V @ ((V.T @ yt) / (w.clamp_min(0.0) + m * float(lam))))


def fourier_features(P: torch.Tensor, phases: torch.Tensor | None) -> torch.Tensor:
    """``rff._features_from_projection`` of projections P (..., m, n): √(2/n) cos(P + b) with
    phases, else n^{-1/2} [cos P, sin P]."""
    n = P.shape[-1]
    if phases is not None:
        return torch.cos(P + phases) * np.sqrt(2.0 / n)
    return torch.cat([torch.cos(P), torch.sin(P)], dim=-1) / np.sqrt(n)


def batch_size(m: int, p: int, folds: int, budget: int | None = None) -> int:
    """How many feature matrices of m × p (and their folds' p × p eigendecompositions) one batch of
    :func:`fold_parts` holds within ``budget`` bytes (at least one)."""
    per = 8 * (3 * m * p + 3 * folds * p * p)   # Z, its validation projections A, a copy; G, V, workspace
    return max(1, int((BATCH_BYTES if budget is None else budget) // per))
