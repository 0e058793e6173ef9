"""Ridge regression on an explicit feature matrix, along a regularisation path.

Convention of the GFC paper (App. C.1/C.3), used by every ridge-based method here::

    c(λ) = argmin_c ‖Z c − y‖² + m λ ‖c‖²      i.e.   (ZᵀZ + m λ I) c = Zᵀ y

with m the number of training rows and an unpenalised intercept obtained by centring Z and y on
the training rows (``fit_intercept=True``).

Speed: a cross-validated λ path costs one Gram matrix of the whole training part plus, per inner
fold, the Gram matrix of the smaller side (training Gram = full − validation Gram) and one
symmetric eigendecomposition; every λ value is then a diagonal rescaling, O(p·L) for L values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

#: default λ grid for the "fast path" (per-sample scale, multiplied by m inside)
DEFAULT_LAMBDAS = np.logspace(-10, 2, 49)


@dataclass
class GramStats:
    """Sufficient statistics of (Z, y) for ridge: ZᵀZ, Zᵀy, column sums, Σy, Σy², row count."""

    G: np.ndarray
    b: np.ndarray
    s: np.ndarray
    sy: float
    yy: float
    m: int

    @classmethod
    def of(cls, Z: np.ndarray, y: np.ndarray) -> GramStats:
        return cls(Z.T @ Z, Z.T @ y, Z.sum(axis=0), float(y.sum()), float(y @ y), Z.shape[0])

    def __sub__(self, other: GramStats) -> GramStats:
        return GramStats(self.G - other.G, self.b - other.b, self.s - other.s,
                         self.sy - other.sy, self.yy - other.yy, self.m - other.m)

    def centred(self, fit_intercept: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
        """(G_c, b_c, z_mean, y_mean) of the centred problem (or the raw one without intercept)."""
        if not fit_intercept:
            return self.G, self.b, np.zeros_like(self.s), 0.0
        z_mean = self.s / self.m
        y_mean = self.sy / self.m
        G_c = self.G - self.m * np.outer(z_mean, z_mean)
        b_c = self.b - self.m * z_mean * y_mean
        return G_c, b_c, z_mean, y_mean


def _eig_path(G_c: np.ndarray, b_c: np.ndarray, m: int, lambdas: np.ndarray) -> np.ndarray:
    """Coefficients for every λ (p × L) from one eigendecomposition of the centred Gram matrix."""
    evals, V = scipy.linalg.eigh(G_c, driver="evd", check_finite=False)
    evals = np.clip(evals, 0.0, None)
    q = V.T @ b_c
    return V @ (q[:, None] / (evals[:, None] + m * lambdas[None, :]))


def ridge_solve(Z: np.ndarray, y: np.ndarray, lam: float, fit_intercept: bool = True,
                stats: GramStats | None = None) -> tuple[np.ndarray, float]:
    """Ridge coefficients and intercept for one λ (Cholesky of ZᵀZ + mλI)."""
    st = stats if stats is not None else GramStats.of(Z, y)
    G_c, b_c, z_mean, y_mean = st.centred(fit_intercept)
    A = G_c + st.m * lam * np.eye(G_c.shape[0])
    try:
        coef = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, check_finite=False), b_c,
                                      check_finite=False)
    except np.linalg.LinAlgError:
        coef = _eig_path(G_c, b_c, st.m, np.array([lam]))[:, 0]
    return coef, y_mean - z_mean @ coef


def split_stats(Z: np.ndarray, y: np.ndarray, splits) -> tuple[GramStats, list[GramStats]]:
    """Statistics of all rows and of each split's training part.

    Each split derives its training statistics from the full ones minus the smaller side, so no
    fold is recomputed from scratch. When the validation parts partition the rows (K-fold), the
    full statistics are the sum of the validation ones: one pass of O(m p²) in all.
    """
    m = Z.shape[0]
    val_sizes = [len(va) for _, va in splits]
    partition = (sum(val_sizes) == m and np.unique(np.concatenate([va for _, va in splits])).size == m
                 and all(len(tr) + len(va) == m for tr, va in splits))
    if partition:
        val = [GramStats.of(Z[va], y[va]) for _, va in splits]
        full = val[0]
        for st in val[1:]:
            full = GramStats(full.G + st.G, full.b + st.b, full.s + st.s, full.sy + st.sy,
                             full.yy + st.yy, full.m + st.m)
        return full, [full - st for st in val]
    full = GramStats.of(Z, y)
    train = []
    for tr, va in splits:
        # "all rows minus validation" is the training part only when the two sides cover the rows
        complement = len(tr) + len(va) == m
        train.append(full - GramStats.of(Z[va], y[va]) if complement and len(va) <= len(tr)
                     else GramStats.of(Z[tr], y[tr]))
    return full, train


def cv_path_predictions(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray,
                        fit_intercept: bool = True):
    """For every split: (validation indices, predictions of shape (len(va), len(lambdas)))."""
    lambdas = np.asarray(lambdas, dtype=float)
    _, train = split_stats(Z, y, splits)
    for (_, va), st in zip(splits, train, strict=True):
        G_c, b_c, z_mean, y_mean = st.centred(fit_intercept)
        C = _eig_path(G_c, b_c, st.m, lambdas)
        yield va, (Z[va] - z_mean) @ C + y_mean


def cv_mse_path(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray,
                fit_intercept: bool = True) -> np.ndarray:
    """Validation MSE for every (split, λ): array of shape (len(splits), len(lambdas))."""
    return np.array([np.mean((pred - y[va, None]) ** 2, axis=0)
                     for va, pred in cv_path_predictions(Z, y, splits, lambdas, fit_intercept)])


def select_lambda(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray = DEFAULT_LAMBDAS,
                  fit_intercept: bool = True) -> tuple[float, float, np.ndarray]:
    """(best λ, its mean CV MSE, the mean CV MSE curve) over a λ grid."""
    curve = cv_mse_path(Z, y, splits, lambdas, fit_intercept).mean(axis=0)
    best = int(np.argmin(curve))
    return float(lambdas[best]), float(curve[best]), curve


class CVCurve:
    """The mean K-fold CV MSE of ridge as a function of one continuous λ.

    Each split's centred training Gram is eigendecomposed once; the validation rows are projected
    on its eigenvectors, so an evaluation is O(m·p) (a diagonal rescaling and one product).
    """

    def __init__(self, Z: np.ndarray, y: np.ndarray, splits, fit_intercept: bool = True):
        _, train = split_stats(Z, y, splits)
        self._parts = []
        for (_, va), st in zip(splits, train, strict=True):
            G_c, b_c, z_mean, y_mean = st.centred(fit_intercept)
            evals, V = scipy.linalg.eigh(G_c, driver="evd", check_finite=False)
            self._parts.append((np.clip(evals, 0.0, None), V.T @ b_c, (Z[va] - z_mean) @ V,
                                y[va] - y_mean, st.m))

    def __call__(self, lam: float) -> float:
        return float(np.mean([np.mean((A @ (q / (e + m * lam)) - r) ** 2) for e, q, A, r, m in self._parts]))


def select_lambda_continuous(Z: np.ndarray, y: np.ndarray, splits, fit_intercept: bool = True,
                             lambdas: np.ndarray = DEFAULT_LAMBDAS, xatol: float = 1e-3,
                             limits: tuple[float, float] = (1e-20, 1e6), curve=None) -> tuple[float, float]:
    """(λ, its mean CV MSE) minimising the CV error over a continuous λ: the 1-D CV problem of
    the GFC paper's line 6 (§2.5, [20]). The grid only brackets the minimum, and is extended in
    its own steps while the minimum sits at one of its ends (within ``limits``, where the ridge is
    numerically plain least squares or the constant model): a grid edge is not a bound. Bounded
    Brent on log λ between the best point's neighbours then finds it (to ``xatol`` in log λ).
    ``curve``: λ → the mean CV MSE computed elsewhere (``ridge_torch.CVCurve``, on a device; Z, y
    and splits are then not read); None: :class:`CVCurve` of (Z, y, splits)."""
    if curve is None:
        curve = CVCurve(Z, y, splits, fit_intercept)
    logs = list(np.log(np.asarray(lambdas, dtype=float)))
    values = [curve(np.exp(v)) for v in logs]
    step = logs[1] - logs[0] if len(logs) > 1 else np.log(10.0)
    lo_limit, hi_limit = np.log(limits[0]), np.log(limits[1])
    while int(np.argmin(values)) == 0 and logs[0] - step >= lo_limit:
        logs.insert(0, logs[0] - step)
        values.insert(0, curve(np.exp(logs[0])))
    while int(np.argmin(values)) == len(logs) - 1 and logs[-1] + step <= hi_limit:
        logs.append(logs[-1] + step)
        values.append(curve(np.exp(logs[-1])))
    best = int(np.argmin(values))
    lo, hi = logs[max(best - 1, 0)], logs[min(best + 1, len(logs) - 1)]
    res = scipy.optimize.minimize_scalar(lambda v: curve(np.exp(v)), bounds=(lo, hi), method="bounded",
                                         options={"xatol": xatol})
    if res.fun < values[best]:
        return float(np.exp(res.x)), float(res.fun)
    return float(np.exp(logs[best])), float(values[best])
