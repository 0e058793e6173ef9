"""BMKR (Wu, Zhang, Zhang et al. 2017) as run in the GBRFF paper (method-notes §7.2).

Least-squares gradient boosting whose weak learners are SVRs on a dictionary of 11 kernels::

    r ← y                                               (y ∈ {−1, +1}; no constant initial model)
    for t = 1..T:                                       (T = n_features = 100)
        for k in {RBF γ = 2⁻⁴, …, 2⁵ (not divided by d), linear}:
            h_k ← SVR(kernel k, C, ε = 0.1, tol 1e-3, max_iter 10⁴) fitted to (X, r)
        h_t ← the h_k of smallest training squared error Σ_i (h_k(x_i) − r_i)²   (ties → first k)
        r ← r − h_t(X)                                  (no step size, no shrinkage)
    predict sign(Σ_t h_t(x)), ties → positive class

C ∈ 10^{−2..2} by inner-CV accuracy (ties → the first in grid order, as PBRFF). Inputs are
standardised with a scaler fitted on the training part of every fit, as for the other methods of
the GBRFF paper's protocol. Labels: the smaller of two values is −1 (method-notes §0.2).

Every SVR of one fit sees the same 11 Gram matrices of the training rows, so they are computed once
per fit (one inner fold serves all C values) and libsvm is given kernel="precomputed"; the learner's
training predictions are K[:, support] @ dual_coef + b. When 11 Gram matrices would exceed
``kernel_memory_mb`` (4 GB: 6 900 rows), libsvm computes its own kernels (the reference code's path:
the same learners within libsvm's tolerance, tests/methods/test_bmkr.py). Mode "distances" (explicit only)
keeps the squared distances and rebuilds each RBF Gram from them, bit-identical to "stored" but one
n² exp per SVR fit, much slower (docs/history/bmkr.md).

The fitted model Σ_t h_t(x) = Σ_t (Σ_{i∈SV_t} a_ti k_t(x_i, x) + b_t) is stored per kernel as one
weight per training row: ``dual_weights_[k, i]`` = Σ_{t: k_t = k} a_ti, ``intercept_`` = Σ_t b_t.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn import config_context
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVR
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator
from rfbench.methods.rfkit import (
    BinaryScoreClassifierMixin,
    encode_binary_labels,
    scaler_stats,
    select_on_folds,
)
from rfbench.methods.tuning import Stopwatch

#: RBF widths of the dictionary, γ = 2⁻⁴ … 2⁵ on standardised inputs [C-GB bmkr.py]
RBF_GAMMAS = tuple(2.0**i for i in range(-4, 6))
#: the C grid of the GBRFF paper's SVM/SVR baselines
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
#: libsvm's iteration cap in the reference code (stopping there is the protocol, not news)
MAX_ITER = 10_000
#: rows of evaluation points per block of cross kernels
PREDICT_BLOCK = 2048


def kernel_names(gammas=RBF_GAMMAS) -> list[str]:
    """The dictionary in order: the RBF kernels by increasing γ, then the linear kernel."""
    return [f"rbf:{g:g}" for g in gammas] + ["linear"]


def squared_distances(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """‖a_i − b_j‖² (clipped at 0: the expansion can round below it)."""
    D = A @ B.T
    D *= -2.0
    D += np.einsum("ij,ij->i", A, A)[:, None]
    D += np.einsum("ij,ij->i", B, B)[None, :]
    return np.maximum(D, 0.0, out=D)


def cross_kernel(A: np.ndarray, B: np.ndarray, gamma: float | None) -> np.ndarray:
    """k(a_i, b_j): exp(−γ‖a_i − b_j‖²) for a γ, the linear kernel a_i·b_j for None."""
    if gamma is None:
        return A @ B.T
    D = squared_distances(A, B)
    D *= -gamma
    return np.exp(D, out=D)


class KernelBank:
    """The dictionary's Gram matrices on the training rows of one fit.

    mode "stored": all 11 kept; "native": none, libsvm computes its own kernels from the rows; "auto":
    stored when 11 fit in ``memory_mb``, else native; "distances": the squared distances and the linear
    Gram kept, an RBF Gram rebuilt per call (the same elementwise arithmetic as stored, so the same bits).
    """

    def __init__(self, X: np.ndarray, gammas, memory_mb: float, mode: str = "auto", epsilon: float = 0.1):
        self.X = X
        self.epsilon = float(epsilon)
        self.gammas = [float(g) for g in gammas] + [None]
        n = X.shape[0]
        full_mb = len(self.gammas) * n * n * 8 / 2**20
        if mode == "auto":
            mode = "stored" if full_mb <= memory_mb else "native"
        self.mode = mode
        if mode == "stored":
            D = squared_distances(X, X)
            self._grams = [np.exp(-g * D) for g in self.gammas[:-1]] + [X @ X.T]
        elif mode == "distances":
            self._distances, self._linear = squared_distances(X, X), X @ X.T
        elif mode != "native":
            raise ValueError(f"kernel mode must be auto, stored, distances or native, got {mode!r}")

    def __len__(self) -> int:
        return len(self.gammas)

    def gram(self, k: int) -> np.ndarray | None:
        if self.mode == "stored":
            return self._grams[k]
        if self.mode == "distances":
            g = self.gammas[k]
            return self._linear if g is None else np.exp(-g * self._distances)
        return None

    def svr(self, k: int, C: float, residual: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
        """(support rows, dual coefficients, intercept, training predictions) of the SVR of kernel k."""
        K = self.gram(k)
        g = self.gammas[k]
        if K is None:
            model = SVR(kernel="linear" if g is None else "rbf", gamma="scale" if g is None else g, C=C,
                        epsilon=self.epsilon, max_iter=MAX_ITER)
        else:
            model = SVR(kernel="precomputed", C=C, epsilon=self.epsilon, max_iter=MAX_ITER)
        # our Gram matrices are finite (built from validated rows): sklearn's scan of an n × n matrix
        # for NaN/inf would otherwise take a fifth of each boosting step (docs/history/bmkr.md)
        with warnings.catch_warnings(), config_context(assume_finite=K is not None):
            warnings.simplefilter("ignore", ConvergenceWarning)
            model.fit(self.X if K is None else K, residual)
        sv, coef, b = model.support_, model.dual_coef_[0], float(model.intercept_[0])
        pred = model.predict(self.X) if K is None else K[:, sv] @ coef + b
        return sv, coef, b, pred


def fit_bmkr(bank: KernelBank, y: np.ndarray, n_iter: int, C: float) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """The boosting loop of the module docstring on the bank's training rows and y ∈ {−1, +1}.

    Returns (dual_weights (11 × n), intercept, chosen kernel per iteration, training squared error
    Σ_i r_i² after each iteration)."""
    n = y.shape[0]
    weights = np.zeros((len(bank), n))
    intercept = 0.0
    chosen = np.empty(n_iter, dtype=int)
    sse = np.empty(n_iter)
    r = y.astype(float).copy()
    for t in range(n_iter):
        best = None
        for k in range(len(bank)):
            sv, coef, b, pred = bank.svr(k, C, r)
            err = float(np.sum((pred - r) ** 2))
            if best is None or err < best[0]:  # strict: ties keep the first kernel, as argmin
                best = (err, k, sv, coef, b, pred)
        err, k, sv, coef, b, pred = best
        weights[k, sv] += coef
        intercept += b
        r -= pred
        chosen[t], sse[t] = k, err
    return weights, intercept, chosen, sse


def kernel_expansion(X_eval: np.ndarray, X_train: np.ndarray, weights: np.ndarray, intercept: float,
                     gammas) -> np.ndarray:
    """Σ_k Σ_i weights[k, i] k(x_i, x) + intercept, only over the rows with a non-zero weight."""
    gammas = [float(g) for g in gammas] + [None]
    out = np.full(X_eval.shape[0], float(intercept))
    for k, g in enumerate(gammas):
        rows = np.flatnonzero(weights[k])
        if rows.size == 0:
            continue
        for s in range(0, X_eval.shape[0], PREDICT_BLOCK):
            out[s:s + PREDICT_BLOCK] += cross_kernel(X_eval[s:s + PREDICT_BLOCK], X_train[rows], g) @ weights[k, rows]
    return out


class BMKRClassifier(BinaryScoreClassifierMixin, ClassifierMixin, BaseEstimator):
    """BMKR: least-squares boosting of SVRs over an 11-kernel dictionary, binary labels.

    Parameters: ``n_features`` = T (boosting iterations, 100), ``C_grid`` (shared C of the SVRs,
    chosen by inner-CV accuracy), ``rbf_gammas`` (the dictionary's RBF widths; the linear kernel is
    always added), ``epsilon`` (SVR tube, 0.1), ``cv``, ``random_state`` (draws the inner folds
    when ``cv`` is an int; BMKR itself is deterministic), ``n_jobs`` (parallelises the inner folds),
    ``standardize`` (scaler fitted in every fit), ``kernel_memory_mb`` (above it the Gram matrices
    are not all stored, see the module notes), ``kernel_mode`` ("auto", "stored", "distances",
    "native").

    Fitted: ``classes_``, ``support_vectors_`` (the standardised training rows with a non-zero
    weight), ``dual_weights_`` (11 × their number), ``intercept_``, ``kernels_`` (chosen kernel per
    iteration, an index into ``kernel_names_``), ``train_sse_`` (Σ r² after each iteration),
    ``x_mean_``, ``x_scale_``, ``cv_errors_`` (mean inner-CV error per C), ``best_params_``,
    ``tune_time_``.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "C_grid": ["array-like"],
        "rbf_gammas": ["array-like"],
        "epsilon": [cons.non_negative_real()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "standardize": ["boolean"],
        "kernel_memory_mb": [cons.non_negative_real()],
        "kernel_mode": [cons.Choices("auto", "stored", "distances", "native")],
    }

    def __init__(self, n_features=100, C_grid=C_GRID, rbf_gammas=RBF_GAMMAS, epsilon=0.1, cv=5,
                 random_state=None, n_jobs=None, standardize=True, kernel_memory_mb=4096.0, kernel_mode="auto"):
        self.n_features = n_features
        self.C_grid = C_grid
        self.rbf_gammas = rbf_gammas
        self.epsilon = epsilon
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize
        self.kernel_memory_mb = kernel_memory_mb
        self.kernel_mode = kernel_mode

    def _bank(self, X: np.ndarray) -> KernelBank:
        return KernelBank(X, self.rbf_gammas, float(self.kernel_memory_mb), self.kernel_mode, float(self.epsilon))

    def _cv_task(self, X, y, tr, va, seed):
        """Validation error of every C on one inner fold (one kernel bank for all of them)."""
        mean, scale = scaler_stats(X[tr], self.standardize)
        X_tr, X_va = (X[tr] - mean) / scale, (X[va] - mean) / scale
        bank = self._bank(X_tr)
        errors = []
        for C in self.C_grid:
            weights, b, _, _ = fit_bmkr(bank, y[tr], int(self.n_features), float(C))
            score = kernel_expansion(X_va, X_tr, weights, b, self.rbf_gammas)
            errors.append(float(np.mean(np.where(score >= 0, 1.0, -1.0) != y[va])))
        return np.array(errors)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        self.classes_, y_pm = encode_binary_labels(y)
        if len(self.C_grid) == 0:
            raise ValueError("C_grid is empty")
        rng = as_generator(self.random_state)
        with Stopwatch() as tune:
            self.cv_errors_, best, _ = select_on_folds(self._cv_task, (X, y_pm), len(self.C_grid), self.cv,
                                                       X.shape[0], rng, self.n_jobs)
        self.tune_time_ = tune.total
        C = float(self.C_grid[best])
        self.x_mean_, self.x_scale_ = scaler_stats(X, self.standardize)
        Xs = (X - self.x_mean_) / self.x_scale_
        bank = self._bank(Xs)
        weights, self.intercept_, self.kernels_, self.train_sse_ = fit_bmkr(bank, y_pm, int(self.n_features), C)
        rows = np.flatnonzero(np.any(weights != 0, axis=0))
        self.support_vectors_, self.dual_weights_ = Xs[rows], weights[:, rows]
        self.kernel_names_ = kernel_names(self.rbf_gammas)
        self.kernel_mode_ = bank.mode
        self.best_params_ = {"C": C}
        return self

    def decision_function(self, X):
        check_is_fitted(self, "dual_weights_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Xs = (X - self.x_mean_) / self.x_scale_
        return kernel_expansion(Xs, self.support_vectors_, self.dual_weights_, self.intercept_, self.rbf_gammas)
