"""GFC as the GBRFF paper ran it (Gautheron et al., ECML 2020, §4.1 and Table 2, column "GFC").

The GBRFF paper's baseline is the reference code's variant of greedy feature construction, not the
GFC paper's Algorithms 1–2 (:mod:`rfbench.methods.gfc`); method-notes §2.6 lists the differences:
one sequential descent over all training points, an in-sample objective, no ε-stop, no chunks, no
pruning, and a linear SVM instead of the final ridge::

    f ← mean(y) on every training point                          (y ∈ {−1, +1})
    for t = 1..T                                                  (T = n_features = 100)
        w₀ ~ N(0, I)/√d,  γ₀ = 0.01                               (λ = γ² + 1e-10, γ free)
        (w_t, γ_t) ← L-BFGS-B (maxiter 200) on the in-sample error
                 E(w, λ) = (1/m) Σ_i (z_w(x_i)ᵀ c − y_i)²,   z_w(x) = [f(x), sin(w·x), cos(w·x)],
                 c = (ZᵀZ/m + λI)⁻¹ Zᵀy/m                         (c is the ridge solution, not a variable)
        f ← Z c(w_t, λ_t)                                         (stepwise: the old estimate is rescaled)
    SVC(kernel="linear", C, max_iter=10⁴) on [sin(x·w_t), cos(x·w_t)]_{t=1..T}      (the f column is not used)

C ∈ {10⁻², …, 10²} by inner-CV accuracy (ties → the first in grid order, as PBRFF). The features do
not depend on C, so every inner fold builds them once for the whole grid. The gradient of E is the
Keerthi template of :mod:`rfbench.methods.cvgrad` with one split whose training and validation
parts are both all points (the total derivative through c, as the reference code's), and
dE/dγ = 2γ · dE/dλ.

Choices where the sources are silent, as in :mod:`rfbench.methods.pbrff`: inputs are standardised
with a scaler fitted on the training part of every fit; every fit (inner folds and final) draws its
w₀'s from a fresh generator seeded by one seed drawn per outer fit, as the reference's RandomState(1)
would. Binary labels only (the descent regresses ±1 targets).

Once the in-sample error is near zero (small sets, many inputs) the gradient is below L-BFGS-B's
tolerance at the start and the remaining steps keep their random w₀ and γ₀, as the reference code's
would. A spot check against the paper's column: docs/history/gfc_gbrff.md.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator
from rfbench.methods.cvgrad import DEFAULT_PATHS, Paths, prepare_splits, trig_cv_grad, trig_features
from rfbench.methods.rfkit import (
    encode_binary_labels,
    fit_linear_svm,
    scaler_stats,
    select_on_folds,
)
from rfbench.methods.tuning import Stopwatch

C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
GAMMA0 = 0.01
LAMBDA_FLOOR = 1e-10
MAXITER = 200


def in_sample_objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, f: np.ndarray,
                        splits, paths: Paths = DEFAULT_PATHS) -> tuple[float, np.ndarray]:
    """E(w, λ) of the module docstring and its gradient w.r.t. θ = (w, γ), λ = γ² + 1e-10.

    ``splits`` is the single (all points, all points) split, prepared once per descent; ``paths``:
    :class:`rfbench.methods.cvgrad.Paths`.
    """
    gamma = theta[-1]
    res = trig_cv_grad(X, y, theta[:-1, None], gamma * gamma + LAMBDA_FLOOR, splits, fixed=f[:, None],
                       paths=paths)
    return res.value, np.append(res.dW[:, 0], 2.0 * gamma * res.dlam)


def descent(X: np.ndarray, y: np.ndarray, n_steps: int, rng: np.random.Generator,
            maxiter: int = MAXITER) -> tuple[np.ndarray, np.ndarray]:
    """The greedy loop of the module docstring; returns (W (d × T), λ of every step)."""
    m, d = X.shape
    f = np.full(m, y.mean())
    splits = prepare_splits([(np.arange(m), np.arange(m))], m)
    W, lambdas = np.empty((d, n_steps)), np.empty(n_steps)
    for t in range(n_steps):
        theta0 = np.append(rng.standard_normal(d) / np.sqrt(d), GAMMA0)
        opt = scipy.optimize.minimize(in_sample_objective, theta0, args=(X, y, f, splits), jac=True,
                                      method="L-BFGS-B", options={"maxiter": maxiter})
        w, lam = opt.x[:-1], float(opt.x[-1] ** 2 + LAMBDA_FLOOR)
        S, C = trig_features(X, w[:, None])
        Z = np.column_stack([f, S[:, 0], C[:, 0]])
        c = np.linalg.solve(Z.T @ Z / m + lam * np.eye(3), Z.T @ y / m)
        f = Z @ c
        W[:, t], lambdas[t] = w, lam
    return W, lambdas


def design(X: np.ndarray, W: np.ndarray) -> np.ndarray:
    """The SVM's inputs [sin(XW), cos(XW)] (m × 2T)."""
    S, C = trig_features(X, W)
    return np.hstack([S, C])


class GFCGBRFFClassifier(ClassifierMixin, BaseEstimator):
    """The GBRFF paper's GFC baseline: one greedy in-sample descent of ``n_features`` cosine
    features, then a linear SVM whose C is chosen by inner-CV accuracy.

    Parameters: ``n_features`` = T (descent steps = spectral vectors, 100), ``C_grid``,
    ``max_iter`` (libsvm iteration cap, 10⁴), ``maxiter`` (L-BFGS-B iterations per feature, 200),
    ``cv``, ``random_state``, ``n_jobs`` (parallelises the inner folds), ``standardize`` (scaler
    fitted in every fit).

    Fitted: ``classes_``, ``frequencies_`` (d × T, standardised space), ``feature_lambdas_``,
    ``svm_``, ``n_iter_`` (libsvm iterations), ``x_mean_``, ``x_scale_``, ``cv_errors_`` (mean inner-CV error per C),
    ``best_params_``, ``tune_time_``, ``n_features_in_``.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "C_grid": ["array-like"],
        "max_iter": cons.SVM_MAX_ITER,
        "maxiter": [cons.non_negative_int()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "standardize": ["boolean"],
    }

    def __init__(self, n_features=100, C_grid=C_GRID, max_iter=10_000, maxiter=MAXITER, cv=5,
                 random_state=None, n_jobs=None, standardize=True):
        self.n_features = n_features
        self.C_grid = C_grid
        self.max_iter = max_iter
        self.maxiter = maxiter
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize

    def _features(self, X, y_pm, seed):
        """(scaler, W, λs) learned on (X, y_pm) with the w₀ stream of ``seed``."""
        mean, scale = scaler_stats(X, self.standardize)
        W, lambdas = descent((X - mean) / scale, y_pm, int(self.n_features), np.random.default_rng(seed),
                             int(self.maxiter))
        return mean, scale, W, lambdas

    def _cv_task(self, X, y, y_pm, tr, va, seed):
        """Validation error of every C on one inner fold (grid order)."""
        mean, scale, W, _ = self._features(X[tr], y_pm[tr], seed)
        Z_tr, Z_va = design((X[tr] - mean) / scale, W), design((X[va] - mean) / scale, W)
        return np.array([np.mean(fit_linear_svm(Z_tr, y[tr], float(C), int(self.max_iter)).predict(Z_va) != y[va])
                         for C in self.C_grid])

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm = encode_binary_labels(y)
        if len(self.C_grid) < 1:
            raise ValueError("C_grid is empty")
        rng = as_generator(self.random_state)
        with Stopwatch() as tune:
            self.cv_errors_, best, seed = select_on_folds(self._cv_task, (X, y, y_pm), len(self.C_grid),
                                                          self.cv, X.shape[0], rng, self.n_jobs)
        self.tune_time_ = tune.total
        C = float(self.C_grid[best])
        self.x_mean_, self.x_scale_, self.frequencies_, self.feature_lambdas_ = self._features(X, y_pm, seed)
        self.svm_ = fit_linear_svm(design((X - self.x_mean_) / self.x_scale_, self.frequencies_), y, C,
                                   int(self.max_iter))
        self.n_iter_ = self.svm_.n_iter_
        self.best_params_ = {"C": C, "n_steps": int(self.n_features), "seed": int(seed),
                             "median_lambda": float(np.median(self.feature_lambdas_))}
        return self

    def decision_function(self, X):
        check_is_fitted(self, "svm_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.svm_.decision_function(design((X - self.x_mean_) / self.x_scale_, self.frequencies_))

    def predict(self, X):
        check_is_fitted(self, "svm_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self.svm_.predict(design((X - self.x_mean_) / self.x_scale_, self.frequencies_))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
