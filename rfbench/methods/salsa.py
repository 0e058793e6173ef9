"""SALSA (Kandasamy & Yu, ICML 2016) and its full-order comparator KRR; method notes §9.

Model
    Kernel ridge regression with the d-th order additive (ESP) kernel of 1-D Gaussian base kernels
    (``rfbench.methods.esp``), bandwidths ``h_i = c · σ_i · m^(-1/5)`` with c = 20, σ_i the
    standard deviation (ddof=1) of input i and m the training size; σ_i and m are those of the whole
    training set, also inside the inner CV (as the reference code).

Output scale
    The reference code always runs on standardised targets (σ_Y = std(y, ddof=1) = 1) with the
    ESP kernel multiplied once by σ_Y (the paper puts σ_Y in every base kernel, σ_Y^d; identical
    there). Here the targets are standardised inside ``fit`` — the model is fitted to
    (y − ȳ)/σ_Y with the kernel e_d(k_1, ..., k_D) and predictions are multiplied back by σ_Y — so
    that the method is scale-equivariant and λ (with its search bounds) means what it means in the
    reference whatever the unit of y. This is the identity under ``--protocol holdout`` (y already
    standardised on the training part); under the GFC protocol (y scaled to range one, σ_Y ≈ 0.1–0.2)
    a kernel scaled by σ_Y would stretch every λ by 1/σ_Y and pin it at the lower bound
    (docs/history/salsa.md).

Intercept
    The reference code has none and relies on standardised targets. Here the targets are centred
    on the training mean, which is added back at prediction (the identity for standardised y);
    the mean and σ_Y of the whole training set are also used inside the CV, like σ_i.

Regularisation
    ``α = (K + m λ I)⁻¹ (y − ȳ)`` with λ per sample (the paper's (K + nλ'I) convention). In a CV
    fold the training part of size m_tr uses ``K_tr + m_tr λ I`` (the convention of
    ``rfbench.methods.ridge``); the reference keeps the absolute nλ in the folds (a factor 0.8
    difference for 5 folds). λ is chosen by minimising the mean validation MSE over the folds with
    ``scipy.optimize.direct`` on log λ ∈ log(lambda_bounds) = [log 1e-4, log 1e2] (exact variant,
    the reference's interval; Nyström: [log 1e-8, log 1e2], see below) with
    ``maxfun=n_lambda_evals`` (30), ``eps=1e-4``, ``locally_biased=False``, as the reference
    code's DIRECT (SciPy's maxfun is approximate: 30 requested gives 39 evaluations); the best
    evaluated point is kept. Equal bounds fix λ (no search). One symmetric eigendecomposition per
    (order, fold) serves every λ.

Order search
    d = 1, 2, ... up to min(D, max_order): a new order must be strictly better than the best so far
    (lower CV MSE); the search stops after ``patience`` (3) consecutive orders without improvement
    (reference code). ``order`` fixes d instead (``"full"`` = D, the product kernel).

Exact variant (m ≤ threshold)
    The ESP recursion gives all orders 1..d in one pass over the dimensions; orders are computed
    in blocks of up to 4 (d .. d + patience) and kept, so the search moves on without recomputing;
    orders that can no longer be selected are dropped. Memory: at most 5 cached m×m kernels (the
    best order and a block of 4) plus ~2.2 m² for one fold's eigendecomposition (the fold matrix,
    syevd's eigenvectors and workspace; measured peak RSS: docs/history/salsa.md).

Nyström variant (m > threshold)
    n = n_features landmarks (default min(m, 500)) drawn uniformly without replacement from the
    training rows; per order, ``K_nn = U diag(w) Uᵀ`` (jitter 1e-14·max w, eigenvalues below
    1e-12·max w dropped) and the features ``Φ = K_mn U w^(-1/2)`` (m × r, r ≤ n) are built with the
    same ESP recursion on row blocks of the m×n kernel, then ridge regression on Φ without
    intercept (centred y), ``(ΦᵀΦ + m λ I) c = Φᵀ y``, which is KRR with ``K ≈ Φ Φᵀ``. The fold
    statistics reuse ``ridge.GramStats`` (full minus validation Gram), one eigendecomposition per
    (order, fold). O(m·n·D·d) time and O(m·n) memory per order. Its λ interval starts at 1e-8: a
    rank-n approximation needs less shrinkage than the exact kernel, and the reference's 1e-4 bound
    held λ at the bound on every fold (docs/history/salsa.md).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from numbers import Real

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context, clone
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.esp import esp_kernel, esp_kernels, salsa_bandwidths
from rfbench.methods.ridge import GramStats, ridge_solve

#: default λ search intervals: the reference code's for the exact kernel, wider below for Nyström
EXACT_LAMBDA_BOUNDS = (1e-4, 1e2)
NYSTROM_LAMBDA_BOUNDS = (1e-8, 1e2)
#: at most this many orders are computed (and held as m×m arrays) per pass of the exact path
_ORDER_BLOCK = 4
#: Nyström: diagonal jitter and eigenvalue floor (drop below), relative to the top eigenvalue of K_nn.
#: The jitter is kept at rounding level: a jitter j biases Φ Φᵀ by ~j, i.e. predictions by ~j/(mλ)
#: (docs/history/salsa.md)
_NYSTROM_JITTER = 1e-14
_NYSTROM_FLOOR = 1e-12
#: rows × columns of one kernel chunk in predict / feature construction (32 MiB of float64)
_CHUNK_ELEMS = 2**22


@dataclass
class _FoldPath:
    """One CV fold after its eigendecomposition: validation predictions for any λ in O(m_va·r).

    pred(λ) = P (q / (w + m_tr λ)); exact: P = K_va,tr V, q = Vᵀ y_tr (K_tr = V diag(w) Vᵀ);
    Nyström: P = Φ_va V, q = Vᵀ Φ_trᵀ y_tr (Φ_trᵀ Φ_tr = V diag(w) Vᵀ).
    """

    w: np.ndarray
    q: np.ndarray
    P: np.ndarray
    y_va: np.ndarray
    m_tr: int

    def mse(self, lambdas: np.ndarray) -> np.ndarray:
        lambdas = np.atleast_1d(np.asarray(lambdas, dtype=float))
        coef = self.q[:, None] / (self.w[:, None] + self.m_tr * lambdas[None, :])
        resid = self.P @ coef - self.y_va[:, None]
        return np.mean(resid**2, axis=0)


def _cv_mse(folds: list[_FoldPath], lambdas) -> np.ndarray:
    """Mean over folds of the validation MSE, for every λ."""
    return np.mean([f.mse(lambdas) for f in folds], axis=0)


def _select_lambda(folds: list[_FoldPath], bounds: tuple[float, float],
                   maxfun: int) -> tuple[float, float]:
    """(λ, CV MSE): DIRECT on log λ over the bounds (fixed λ if the bounds are equal)."""
    lo, hi = float(bounds[0]), float(bounds[1])
    if lo == hi:
        return lo, float(_cv_mse(folds, [lo])[0])
    seen: dict[float, float] = {}

    def objective(x):
        key = float(x[0])
        if key not in seen:
            val = float(_cv_mse(folds, [np.exp(key)])[0])
            seen[key] = val if np.isfinite(val) else np.inf
        return seen[key]

    scipy.optimize.direct(objective, [(np.log(lo), np.log(hi))], maxfun=int(maxfun), eps=1e-4,
                          locally_biased=False)
    log_lam, err = min(seen.items(), key=lambda kv: (kv[1], kv[0]))
    return float(np.clip(np.exp(log_lam), lo, hi)), float(err)


def _order_search(evaluate, orders, patience: int, forget=None):
    """The reference code's order search (method notes §9.5).

    ``evaluate(d) -> (λ, CV error)`` for each order in turn; an order becomes the best only if
    its error is strictly lower; the search stops after ``patience`` consecutive orders without
    improvement. ``forget(keep, from_order)`` lets the caller drop kernels of orders below
    ``from_order`` other than those in ``keep``. Returns (order, λ, error, path).
    """
    best_d, best_lam, best_err, fails = None, None, np.inf, 0
    path: list[dict] = []
    for d in orders:
        lam, err = evaluate(d)
        path.append({"order": int(d), "lambda": float(lam), "cv_mse": float(err)})
        if best_d is None or err < best_err:
            best_d, best_lam, best_err, fails = d, lam, err, 0
        else:
            fails += 1
        if forget is not None:
            forget({best_d}, d + 1)
        if fails >= patience:
            break
    return best_d, best_lam, best_err, path


def _scipy_eigh(A):
    """Eigendecomposition of a fresh symmetric matrix ``A`` (overwritten): the one place the driver
    is chosen. Divide and conquer (LAPACK syevd, as NumPy's eigh and rfbench.methods.ridge): SciPy's
    default syevr took 7x longer on the clustered spectra of these kernels (bench/perf/salsa_eigh.py)."""
    return scipy.linalg.eigh(A, overwrite_a=True, check_finite=False, driver="evd")


def _map(fn, items, n_jobs: int):
    """``[fn(x) for x in items]``; with n_jobs > 1 on threads, each fold's eigendecomposition by
    NumPy (whose LAPACK call releases the GIL; SciPy's holds it, so its threads only queued)."""
    items = list(items)
    if n_jobs == 1 or len(items) <= 1:
        return [fn(x, _scipy_eigh) for x in items]
    # one BLAS thread per fold thread: n_jobs fold threads × n_jobs BLAS threads oversubscribe
    with threadpool_limits(limits=1), ThreadPoolExecutor(max_workers=min(n_jobs, len(items))) as pool:
        return list(pool.map(lambda x: fn(x, np.linalg.eigh), items))


def _is_partition(tr: np.ndarray, va: np.ndarray, m: int) -> bool:
    if tr.size + va.size != m:
        return False
    seen = np.zeros(m, dtype=bool)
    seen[tr] = True
    seen[va] = True
    return bool(seen.all())


class _ExactEngine:
    """Full m×m ESP kernels (unscaled), computed in blocks of orders and cached. ``device`` other
    than "cpu": each fold's eigendecomposition (batched over the folds of one size) and the final
    solve in torch there (ridge_torch.kernel_fold_paths / kernel_solve); the kernels stay NumPy."""

    def __init__(self, X, h, y_c, cap, lookahead, device="cpu"):
        self.X, self.h, self.y_c = X, h, y_c
        self.cap, self.lookahead = cap, lookahead
        self.device = device
        self.cache: dict[int, np.ndarray] = {}

    def kernel(self, d: int) -> np.ndarray:
        if d not in self.cache:
            last = min(self.cap, d + self.lookahead - 1)
            self.cache.update(esp_kernels(self.X, self.X, self.h, range(d, last + 1)))
        return self.cache[d]

    def keep_only(self, keep: set[int], from_order: int) -> None:
        """Drop cached orders below ``from_order`` that are not in ``keep``."""
        for d in [d for d in self.cache if d < from_order and d not in keep]:
            del self.cache[d]

    def folds(self, d: int, splits, n_jobs: int) -> list[_FoldPath]:
        E, y_c = self.kernel(d), self.y_c
        if self.device != "cpu":
            from rfbench.methods import ridge_torch as rt

            return [_FoldPath(*fold) for fold in rt.kernel_fold_paths(E, y_c, splits, torch_device(self.device))]

        def one(split, eigh):
            tr, va = split
            K_tr = E[np.ix_(tr, tr)]
            w, V = eigh(K_tr)
            del K_tr
            K_va = E[np.ix_(va, tr)]
            return _FoldPath(np.clip(w, 0.0, None), V.T @ y_c[tr], K_va @ V, y_c[va], tr.size)

        return _map(one, splits, n_jobs)

    def final(self, d: int, lam: float) -> np.ndarray:
        """Dual coefficients α = (E_d + m λ I)⁻¹ y_c (consumes the cached kernel)."""
        E = self.kernel(d)
        self.cache.clear()  # E stays alive through the local name and is overwritten below
        if self.device != "cpu":
            from rfbench.methods import ridge_torch as rt

            return rt.kernel_solve(E, self.y_c, lam, torch_device(self.device))
        m = E.shape[0]
        E[np.diag_indices(m)] += m * lam
        try:
            factor = scipy.linalg.cho_factor(E, overwrite_a=True, check_finite=False)
            return scipy.linalg.cho_solve(factor, self.y_c, check_finite=False)
        except np.linalg.LinAlgError:  # E was overwritten: rebuild it, then use eigenvalues
            del E
            K = esp_kernel(self.X, self.X, self.h, d)
            w, V = _scipy_eigh(K)
            return V @ ((V.T @ self.y_c) / (np.clip(w, 0.0, None) + m * lam))


class _NystromEngine:
    """Nyström features Φ_d = K_mn K_nn^{-1/2} per order (current and best order kept). ``device``
    other than "cpu": the folds' Gram matrices, their eigendecompositions (one batch) and the final
    ridge solve in torch there (ridge_torch.fold_parts / ridge_solve); the features stay NumPy."""

    def __init__(self, X, h, y_c, landmarks, device="cpu"):
        self.X, self.h, self.y_c = X, h, y_c
        self.L = X[landmarks]
        self.device = device
        self.cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def features(self, d: int) -> tuple[np.ndarray, np.ndarray]:
        """(Φ, T) with Φ = E_d(X, L) T and T = U_k w_k^{-1/2} from E_d(L, L)."""
        if d in self.cache:
            return self.cache[d]
        K_nn = esp_kernel(self.L, self.L, self.h, d)
        w, U = _scipy_eigh(K_nn)
        top = max(float(w[-1]), 0.0)
        w = w + _NYSTROM_JITTER * top
        keep = w > _NYSTROM_FLOOR * top if top > 0 else np.zeros(w.size, dtype=bool)
        if not keep.any():  # degenerate kernel: a single zero feature
            T = np.zeros((self.L.shape[0], 1))
        else:
            T = U[:, keep] / np.sqrt(w[keep])
        m = self.X.shape[0]
        Phi = np.empty((m, T.shape[1]))
        rows = max(1, _CHUNK_ELEMS // max(1, self.L.shape[0]))
        for r0 in range(0, m, rows):
            r1 = min(m, r0 + rows)
            Phi[r0:r1] = esp_kernel(self.X[r0:r1], self.L, self.h, d) @ T
        self.cache[d] = (Phi, T)
        return Phi, T

    def keep_only(self, keep: set[int], from_order: int) -> None:
        for d in [d for d in self.cache if d < from_order and d not in keep]:
            del self.cache[d]

    def folds(self, d: int, splits, n_jobs: int) -> list[_FoldPath]:
        Phi, _ = self.features(d)
        y_c, m = self.y_c, Phi.shape[0]
        if self.device != "cpu":
            from rfbench.methods import ridge_torch as rt

            dev = torch_device(self.device)
            parts = rt.fold_parts(rt.as_tensor(Phi, dev), rt.as_tensor(y_c, dev), splits, fit_intercept=False)
            return [_FoldPath(*parts.numpy_fold(0, k)) for k in range(len(splits))]
        full = GramStats.of(Phi, y_c)

        def one(split, eigh):
            tr, va = split
            if _is_partition(tr, va, m) and va.size <= tr.size:
                st = full - GramStats.of(Phi[va], y_c[va])
            else:
                st = GramStats.of(Phi[tr], y_c[tr])
            w, V = eigh(st.G)
            return _FoldPath(np.clip(w, 0.0, None), V.T @ st.b, Phi[va] @ V, y_c[va], st.m)

        return _map(one, splits, n_jobs)

    def final(self, d: int, lam: float) -> np.ndarray:
        """Landmark weights T c, with c the ridge solution on Φ_d (no intercept: y is centred)."""
        Phi, T = self.features(d)
        if self.device != "cpu":
            from rfbench.methods import ridge_torch as rt

            dev = torch_device(self.device)
            coef, _ = rt.ridge_solve(rt.as_tensor(Phi, dev), rt.as_tensor(self.y_c, dev), lam, fit_intercept=False)
        else:
            coef, _ = ridge_solve(Phi, self.y_c, lam, fit_intercept=False)
        self.cache.clear()
        return T @ coef


class SALSARegressor(SharesBudgets, RegressorMixin, BaseEstimator):
    """SALSA: kernel ridge regression with an additive (ESP) kernel of CV-selected order.

    Parameters
    ----------
    n_features : int or None
        Number of Nyström landmarks when the scalable variant runs (m > threshold); None means
        min(m, 500). Ignored by the exact variant.
    budgets : list of int or None
        Every budget of the runner's work item (:class:`rfbench.contract.SharesBudgets`). The exact
        variant does not depend on n, so one fit serves them all (``shares_fit``: m ≤ threshold);
        for the Nyström variant each budget is its own fit, exactly as it would be alone (the
        runner fits those one by one). ``predict(X, budget=n)`` answers for each.
    order : None, int or "full"
        None: the order d is chosen by the order search; an int fixes d (capped at D); "full"
        fixes d = D (the product kernel, i.e. plain Gaussian KRR).
    max_order : int or None
        Upper limit of the order search (None: D).
    c : float
        Bandwidth constant, h_i = c σ_i m^(-1/5).
    threshold : int or None
        The exact variant runs when m ≤ threshold, Nyström otherwise (None: always exact).
    patience : int
        Consecutive orders without a strict CV improvement before the order search stops.
    lambda_bounds : (float, float) or None
        Search interval of the per-sample λ in (K + mλI); equal bounds fix λ. None: (1e-4, 1e2)
        for the exact variant (the reference code's), (1e-8, 1e2) for Nyström.
    n_lambda_evals : int
        ``maxfun`` of the DIRECT search over log λ (per order).
    cv : int or iterable of (train, test) index pairs
        Inner CV (an int: shuffled K-fold seeded from random_state).
    random_state : None, int or numpy Generator
        Seeds the K-fold shuffle and the landmark draw.
    n_jobs : int
        Threads for the per-fold eigendecompositions (each holds one fold's matrices); on threads
        they are NumPy's (syevd) instead of SciPy's (syevr), equal to rounding.
    device : "cpu", "cuda" or "torch-cpu"
        Where the dense linear algebra runs (rfbench/methods/device.py). "cpu": the NumPy path.
        Otherwise, in torch float64 there: the exact variant's per-fold eigendecompositions of the
        m_tr × m_tr training kernels (batched over the folds of one size; O(m³), the bulk of the
        fit), the validation projections and the final Cholesky solve; the Nyström variant's fold
        Gram matrices, eigendecompositions and final solve. The ESP kernels and Nyström features
        (the recursion over the dimensions), the DIRECT search over λ and the order search stay
        NumPy/SciPy on the CPU, fed with the device's eigenvalues and projections, so the
        decisions are the NumPy code's; the numbers agree with the CPU path to rounding (not bit
        for bit). ``n_jobs`` is not used by the device path.

    Attributes
    ----------
    best_params_ : dict
        ``{"order", "lambda", "variant" ("exact"|"nystrom"), "n_landmarks" (None for exact),
        "threshold"}``.
    best_params_per_budget_ : dict
        ``best_params_`` of each budget (the same dict for every budget of an exact fit).
    budget_models_ : dict or None
        The fit of each budget when several Nyström budgets were fitted (the attributes above are
        the largest one's); None when one fit serves every budget.
    tune_time_ : float
        Seconds of the order/λ search (kernel computations of the search included).
    dual_coef_ : ndarray
        Weights of ``σ_Y k_d(·, X_fit_)``: α over the training rows (exact) or the landmark
        weights T c (Nyström).
    X_fit_ : ndarray
        Training inputs (exact) or landmarks (Nyström).
    bandwidths_, output_scale_, intercept_ : h, σ_Y and the training mean of y.
    order_path_ : list of dict
        Per evaluated order: order, selected λ and its CV MSE.
    cv_mse_ : float or None
        CV MSE of the selected (order, λ) (None when nothing was selected by CV).
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int(), None],
        "budgets": ["array-like", None],
        "order": [cons.positive_int(), cons.Choices("full"), None],
        "max_order": [cons.positive_int(), None],
        "c": [cons.positive_real()],
        "threshold": [cons.non_negative_int(), None],
        "patience": [cons.positive_int()],
        "lambda_bounds": ["array-like", None],
        "n_lambda_evals": [cons.positive_int()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        # threads: a positive count, or negative for every core (not None: the folds need a number)
        "n_jobs": [cons.Int(None, -1, closed="right"), cons.positive_int()],
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=None, budgets=None, order=None, max_order=None, c=20.0, threshold=4000,
                 patience=3, lambda_bounds=None, n_lambda_evals=30, cv=5,
                 random_state=None, n_jobs=1, device="cpu"):
        self.n_features = n_features
        self.budgets = budgets
        self.order = order
        self.max_order = max_order
        self.c = c
        self.threshold = threshold
        self.patience = patience
        self.lambda_bounds = lambda_bounds
        self.n_lambda_evals = n_lambda_evals
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    # ----------------------------------------------------------------------------------------
    def _order_settings(self, D: int) -> tuple[int | None, int, int]:
        """(fixed order or None, cap of the search, patience)."""
        order, max_order, patience = self.order, self.max_order, self.patience
        cap = D if max_order is None else min(D, int(max_order))
        if order is None:
            return None, cap, int(patience)
        if isinstance(order, str):                       # "full"
            return D, D, 1
        return min(D, int(order)), D, 1

    def _check_params(self) -> tuple[float, float] | None:
        """The λ bounds pair (lo, hi), or None for the default (two numbers with 0 < lo ≤ hi: what the
        constraints cannot say); DeviceUnavailable before any work."""
        if uses_torch(self.device):
            torch_device(self.device)           # DeviceUnavailable before any work
        if self.lambda_bounds is None:
            return None
        try:
            lo, hi = (float(v) for v in self.lambda_bounds)
        except (TypeError, ValueError):
            raise ValueError(f"lambda_bounds must be two numbers, got {self.lambda_bounds!r}") from None
        if not (0 < lo <= hi < np.inf):
            raise ValueError(f"lambda_bounds must satisfy 0 < low <= high < inf, got {(lo, hi)}")
        return lo, hi

    def shares_fit(self, n_rows: int) -> bool:
        """One fit serves every budget where the exact variant runs (it has no landmarks)."""
        return self.threshold is None or n_rows <= self.threshold

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        budgets = (sorted({int(b) for b in self.budgets}) if self.budgets is not None else [self.n_features])
        if self.budgets is not None and budgets != [self.n_features] and not self.shares_fit(_num_samples(X)):
            # Nyström: each budget draws its own landmarks, fitted exactly as it would be alone
            models = {n: clone(self).set_params(n_features=n, budgets=None).fit(X, y) for n in budgets}
            for key, value in vars(models[budgets[-1]]).items():
                if key.endswith("_") and not key.startswith("_"):
                    setattr(self, key, value)
            self.budget_models_ = models
            self.tune_time_ = sum(model.tune_time_ for model in models.values())
            self.best_params_per_budget_ = {n: model.best_params_ for n, model in models.items()}
        else:
            self._fit_one(X, y)
            self.budget_models_ = None
            self.best_params_per_budget_ = {n: self.best_params_ for n in budgets}
        return self

    def _fit_one(self, X, y):
        """The fit of one budget (``n_features``), or of every budget for the exact variant."""
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        bounds = self._check_params()
        m, D = X.shape
        nystrom = self.threshold is not None and m > self.threshold
        lam_lo, lam_hi = bounds or (NYSTROM_LAMBDA_BOUNDS if nystrom else EXACT_LAMBDA_BOUNDS)
        fixed_order, cap, patience = self._order_settings(D)
        n_jobs = int(self.n_jobs) if self.n_jobs > 0 else (os.cpu_count() or 1)
        rng = as_generator(self.random_state)

        h = salsa_bandwidths(X, float(self.c))
        y_mean = float(y.mean())
        y_c = y - y_mean
        sigma_y = float(np.std(y, ddof=1)) if m > 1 else 1.0
        if not (np.isfinite(sigma_y) and sigma_y > 0):
            sigma_y = 1.0
        # the model is fitted to the standardised targets (kernel scale σ_Y = 1), as the reference
        # always is, and predictions are scaled back: λ then means the same whatever the unit of y
        y_c = y_c / sigma_y

        fixed_lambda = lam_lo == lam_hi
        need_cv = not (fixed_order is not None and fixed_lambda)
        splits = resolve_cv(self.cv, m, rng) if need_cv else None

        if nystrom:
            n = min(m, 500 if self.n_features is None else int(self.n_features))
            landmarks = np.sort(rng.choice(m, size=n, replace=False))
            engine = _NystromEngine(X, h, y_c, landmarks, self.device)
        else:
            n = None
            engine = _ExactEngine(X, h, y_c, cap,
                                  1 if fixed_order is not None else min(_ORDER_BLOCK, patience + 1), self.device)

        t0 = time.perf_counter()
        if need_cv:
            def evaluate(d):
                return _select_lambda(engine.folds(d, splits, n_jobs), (lam_lo, lam_hi),
                                      self.n_lambda_evals)

            orders = [fixed_order] if fixed_order is not None else range(1, cap + 1)
            best_d, best_lam, best_err, path = _order_search(evaluate, orders, patience,
                                                             engine.keep_only)
            self.tune_time_ = time.perf_counter() - t0
        else:
            best_d, best_lam, best_err, path = fixed_order, lam_lo, None, []
            self.tune_time_ = 0.0

        self.dual_coef_ = engine.final(best_d, best_lam)
        self.X_fit_ = engine.L if nystrom else X
        self.bandwidths_ = h
        self.output_scale_ = sigma_y
        self.intercept_ = y_mean
        self.order_ = int(best_d)
        self.order_path_ = path
        self.cv_mse_ = None if best_err is None else float(best_err) * sigma_y**2
        for step in path:      # CV errors in the unit of y, like predictions
            step["cv_mse"] *= sigma_y**2
        self.best_params_ = {
            "order": int(best_d),
            "lambda": float(best_lam),
            "variant": "nystrom" if nystrom else "exact",
            "n_landmarks": None if n is None else int(n),
            "threshold": None if self.threshold is None else int(self.threshold),
        }
        return self

    def predict(self, X, budget=None):
        """Predictions of the fit of ``budget`` (one of the fitted budgets; None: the largest)."""
        check_is_fitted(self, "dual_coef_")
        if budget is not None:
            if int(budget) not in self.best_params_per_budget_:
                raise ValueError(f"budget {int(budget)} was not fitted; fitted budgets: "
                                 f"{sorted(self.best_params_per_budget_)}")
            if self.budget_models_ is not None:
                return self.budget_models_[int(budget)].predict(X)
        X = validate_data(self, X, dtype=np.float64, reset=False)
        n_fit = self.X_fit_.shape[0]
        out = np.empty(X.shape[0])
        rows = max(1, _CHUNK_ELEMS // max(1, n_fit))
        for r0 in range(0, X.shape[0], rows):
            r1 = min(X.shape[0], r0 + rows)
            K = esp_kernel(X[r0:r1], self.X_fit_, self.bandwidths_, self.order_)
            out[r0:r1] = self.output_scale_ * (K @ self.dual_coef_)
        return out + self.intercept_


class KRRRegressor(SALSARegressor):
    """Gaussian kernel ridge regression: SALSA with the order fixed to D (the product kernel).

    The SALSA paper's KRR comparator, with SALSA's bandwidths, output scale, λ search and
    exact/Nyström switch (see ``SALSARegressor``); ``best_params_["order"]`` is D. Its bandwidth
    constant c is chosen by the same inner CV from ``c_grid`` (App. "Some experimental details":
    "our KRR implementation minimises the least squares cross validation error via grid search");
    ``c_grid=None`` keeps c fixed. ``best_params_["c"]`` is the chosen constant. ``device``: as
    SALSA's (every c of the grid is one fit there: its m_tr × m_tr fold eigendecompositions run on
    the device, the kernels on the CPU).
    """

    _parameter_constraints: dict = {
        **{name: SALSARegressor._parameter_constraints[name]
           for name in ("n_features", "budgets", "c", "threshold", "lambda_bounds", "n_lambda_evals", "cv",
                        "random_state", "n_jobs", "device")},
        # a grid of constants (one constant: a grid of one), or None: c fixed
        "c_grid": ["array-like", Interval(Real, 0, None, closed="neither"), None],
    }

    def __init__(self, n_features=None, budgets=None, c=20.0, c_grid=(5.0, 10.0, 20.0, 40.0, 80.0, 160.0, 320.0),
                 threshold=4000, lambda_bounds=None, n_lambda_evals=30, cv=5, random_state=None, n_jobs=1,
                 device="cpu"):
        self.n_features = n_features
        self.budgets = budgets
        self.c = c
        self.c_grid = c_grid
        self.threshold = threshold
        self.lambda_bounds = lambda_bounds
        self.n_lambda_evals = n_lambda_evals
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    def _fit_one(self, X, y):
        if self.c_grid is None:
            return super()._fit_one(X, y)
        grid = [float(v) for v in np.atleast_1d(self.c_grid)]
        if not grid or not all(np.isfinite(v) and v > 0 for v in grid):
            raise ValueError(f"c_grid must be None or positive numbers, got {self.c_grid!r}")
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True)
        rng = as_generator(self.random_state)
        # one set of inner splits and one landmark seed for every c: the grid compares bandwidths only
        splits = resolve_cv(self.cv, X.shape[0], rng)
        seed = int(rng.integers(2**31 - 1))
        t0, best = time.perf_counter(), None
        for c in grid:
            fit = KRRRegressor(**{**self.get_params(), "c": c, "c_grid": None, "cv": splits,
                                  "random_state": seed, "budgets": None}).fit(X, y)
            if best is None or fit.cv_mse_ < best.cv_mse_:
                best = fit
        for key, value in vars(best).items():
            if key.endswith("_") and not key.startswith("_"):
                setattr(self, key, value)
        self.best_params_ = {**best.best_params_, "c": best.best_params_.get("c", best.c)}
        self.tune_time_ = time.perf_counter() - t0
        return self

    def _order_settings(self, D: int) -> tuple[int | None, int, int]:
        return D, D, 1
