"""Random Fourier features + ridge regression (Rahimi & Recht 2007), as in GFC paper App. C.2.

For a shift-invariant kernel k(x − x′) with spectral measure p(ω):

    1. draw n frequency vectors ω_1..ω_n ~ p (one draw per fit, rescaled for every bandwidth σ),
    2. features with z(x)·z(x′) ≈ k(x − x′), either
         ``phase``   (default) n columns √(2/n) cos(ω_k·x + b_k), b_k ~ U[0, 2π)   (Rahimi & Recht)
         ``cos-sin`` 2n columns n^{-1/2} [cos(ω_k·x), sin(ω_k·x)]
       The paper does not say which it used. ``phase`` reproduces its Table 4, whereas ``cos-sin``
       (twice the columns) is markedly better than the published numbers (docs/history/rff.md), so
       ``phase`` is the default and "n features" means n columns, as for EERF and LKRF.
    3. ridge regression on z with an unpenalised intercept,
    4. σ from 10 values logspace(−3, 2) by inner CV (App. C.2) and, for each σ, λ by the inner
       CV error as a continuous 1-D problem (App. C: every ridge penalty is a hyper-parameter
       optimised on the CV error [20]; ``lambda_search="cv-1d"``, :func:`ridge.select_lambda_continuous`)
       or from the log grid (``"grid"``: a grid floor of 1e-10 held λ on friedman, n = 500, in 70 %
       of folds, docs/history/rff.md); one eigendecomposition per (σ, inner fold) serves every λ.

Spectral samplers (method-notes §1.2; the Laplace and Cauchy *kernels* use the crossed densities):

    kernel     k(δ)                          ω_j
    gaussian   exp(−‖δ‖² / (2σ²))            N(0, 1) / σ
    laplace    exp(−‖δ‖₁ / σ)                Cauchy(0, 1) / σ
    cauchy     Π_j 1 / (1 + δ_j² / σ²)       Laplace(0, 1) / σ

``RKSRegressor`` / ``RKSClassifier``: random kitchen sinks (Rahimi & Recht 2009) as the EERF paper
runs them (its "RKS" column of Table 3): M features drawn from P₀ and used as they are, on any of the
EERF paper's feature maps (``feature_map`` = "gaussian" with the EERF σ rule, "arccos" of order
``arccos_order``, "linear"; rfbench/methods/featuremaps.py), ridge with λ from EERF's grid
{10⁻⁵, …, 10⁵} by the inner CV (error rate for classification, one-vs-rest for several classes):
EERF's pipeline without the candidate scoring and selection, so that the two differ only in that.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from rfbench.methods import constraints as cons
from rfbench.methods import featuremaps as fm
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.rfkit import (
    ScoreClassifierMixin,
    choose_lambda,
    encode_class_labels,
    knn_bandwidth,
    ridge_fit,
    workers_from,
)
from rfbench.methods.ridge import (
    DEFAULT_LAMBDAS,
    cv_mse_path,
    ridge_solve,
    select_lambda_continuous,
)
from rfbench.methods.tuning import Stopwatch

KERNELS = ("gaussian", "laplace", "cauchy")
DEFAULT_BANDWIDTHS = np.logspace(-3, 2, 10)


def sample_frequencies(kernel: str, d: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Unit-bandwidth frequencies (d × n) from the kernel's spectral measure."""
    if kernel == "gaussian":
        return rng.standard_normal((d, n))
    if kernel == "laplace":   # the Laplace kernel's spectral density is a product of Cauchys
        return rng.standard_cauchy((d, n))
    if kernel == "cauchy":    # the Cauchy kernel's spectral density is a product of Laplaces
        return rng.laplace(0.0, 1.0, (d, n))
    raise ValueError(f"unknown kernel {kernel!r}; use one of {KERNELS}")


def exact_kernel(kernel: str, X: np.ndarray, Y: np.ndarray, sigma: float) -> np.ndarray:
    """The kernel matrix that the features approximate (for tests and diagnostics)."""
    D = (X[:, None, :] - Y[None, :, :]) / sigma
    if kernel == "gaussian":
        return np.exp(-0.5 * np.sum(D**2, axis=-1))
    if kernel == "laplace":
        return np.exp(-np.sum(np.abs(D), axis=-1))
    if kernel == "cauchy":
        return np.prod(1.0 / (1.0 + D**2), axis=-1)
    raise ValueError(f"unknown kernel {kernel!r}; use one of {KERNELS}")


FEATURE_MAPS = ("phase", "cos-sin")


def fourier_features(X: np.ndarray, W: np.ndarray, phases: np.ndarray | None) -> np.ndarray:
    """√(2/n) cos(Xω + b) (m × n) with phases, else n^{-1/2} [cos(Xω), sin(Xω)] (m × 2n)."""
    return _features_from_projection(X @ W, phases)


def _features_from_projection(P: np.ndarray, phases: np.ndarray | None) -> np.ndarray:
    n = P.shape[1]
    if phases is not None:
        P = P + phases
        np.cos(P, out=P)
        P *= np.sqrt(2.0 / n)
        return P
    return np.hstack([np.cos(P), np.sin(P)]) / np.sqrt(n)


_controller: dict = {}


def _one_blas_thread():
    """threadpoolctl's limit of the BLAS libraries to one thread, through one controller per set of
    loaded modules (creating one scans every native library, ~2 ms; as ``tasks.thread_limits``)."""
    n_modules = len(sys.modules)
    if _controller.get("n_modules") != n_modules:
        _controller.update(n_modules=n_modules, controller=ThreadpoolController())
    return _controller["controller"].limit(limits=1, user_api="blas")


def _n_threads(n_jobs) -> int:
    """Python threads of a fit from ``n_jobs`` (None → 1, negative → every core)."""
    if n_jobs is None:
        return 1
    return int(n_jobs) if int(n_jobs) > 0 else (os.cpu_count() or 1)


def _thread_map(fn, items, n_threads: int) -> list:
    """``[fn(x) for x in items]`` in order; on ``n_threads`` Python threads when more than one. Each
    item's BLAS and LAPACK calls are the very calls of the serial loop (the GIL is released inside
    them), on one BLAS thread: the results do not depend on the number of threads."""
    items = list(items)
    if n_threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(n_threads, len(items))) as pool:
        return list(pool.map(fn, items))


def _search_on_device(X, y, W0, phases, bandwidths, lambdas, splits, lambda_search, device):
    """``RFFRegressor``'s search in torch on ``device``: (index of the best σ, its λ, its CV MSE, the
    grid's CV curves (σ × λ) or None). Batches of bandwidths share one batched eigh of every
    (σ, fold) Gram matrix; the decisions are the NumPy path's code."""
    from rfbench.methods import ridge_torch as rt

    dev = torch_device(device)
    P0 = rt.as_tensor(X, dev) @ rt.as_tensor(W0, dev)
    b = None if phases is None else rt.as_tensor(phases, dev)
    yt = rt.as_tensor(y, dev)
    p = W0.shape[1] * (1 if phases is not None else 2)
    step = rt.batch_size(X.shape[0], p, len(splits))
    results = []
    for start in range(0, bandwidths.size, step):
        chunk = bandwidths[start:start + step]
        parts = rt.fold_parts(rt.fourier_features(P0[None] / rt.as_tensor(chunk, dev)[:, None, None], b),
                              yt, splits)
        if lambda_search == "grid":
            results.extend(rt.cv_criteria(parts, lambdas)[0].mean(axis=1))
        else:
            results.extend(select_lambda_continuous(None, None, None, lambdas=lambdas, curve=rt.CVCurve(parts, s))
                           for s in range(chunk.size))
        del parts
    if lambda_search == "grid":
        curves = np.array(results)
        i_best, j_best = np.unravel_index(np.argmin(curves), curves.shape)
        return int(i_best), lambdas[j_best], curves[i_best, j_best], curves
    i_best = int(np.argmin([err for _, err in results]))
    return i_best, results[i_best][0], results[i_best][1], None


def _solve_on_device(X, y, frequencies, phases, lam, device):
    """The final ridge solve on the fitted features (the NumPy ``features`` formula) on ``device``."""
    from rfbench.methods import ridge_torch as rt

    dev = torch_device(device)
    Z = rt.fourier_features(rt.as_tensor(X, dev) @ rt.as_tensor(frequencies, dev),
                            None if phases is None else rt.as_tensor(phases, dev))
    return rt.ridge_solve(Z, rt.as_tensor(y, dev), lam)


class RFFRegressor(RegressorMixin, BaseEstimator):
    """Random Fourier features with bandwidth and ridge penalty chosen by inner CV
    (``lambda_search``: "cv-1d", continuous, or "grid", the best of ``lambdas``).

    Threads: the BLAS runs on one thread inside ``fit`` and ``predict`` whatever the caller's
    limit, and ``n_jobs`` Python threads (the runner's ``--threads``) share the bandwidths, each
    computing its σ exactly as the serial loop does: the numbers are the same at any thread count
    (bit for bit; OpenBLAS's multi-threaded kernels round differently from its one-thread ones).

    Device (``device``: "cpu", "cuda", "torch-cpu"; rfbench/methods/device.py): "cpu" is the NumPy
    path above. Otherwise the search runs in torch float64 on the device (ridge_torch.py): the
    features of a batch of bandwidths (all ten where the device memory allows), every (σ, inner
    fold) training Gram matrix and its eigendecomposition in one batched ``eigh``, the λ curves
    (the grid's, or the device-evaluated CV curve that the NumPy/SciPy 1-D search of
    ``ridge.select_lambda_continuous`` queries) and the final Cholesky solve. The frequency and phase
    draws, the σ rule and ``predict`` stay NumPy on the CPU (O(m·d·n), cheap). The device agrees
    with the NumPy path to rounding, not bit for bit: the same σ, and λ to the 1-D search's
    tolerance, where the CV curve is not flat at rounding level (see tests/methods/test_device_ridge.py)."""

    _parameter_constraints: dict = {
        "kernel": [cons.Choices(*KERNELS)],
        "n_features": [cons.positive_int()],
        "feature_map": [cons.Choices(*FEATURE_MAPS)],
        "bandwidths": ["array-like", cons.Choices("knn"), None],
        "lambdas": ["array-like", None],
        "lambda_search": [cons.Choices("cv-1d", "grid")],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, kernel="gaussian", n_features=100, feature_map="phase", bandwidths=None,
                 lambdas=None, lambda_search="cv-1d", cv=5, random_state=None, n_jobs=1, device="cpu"):
        self.kernel = kernel
        self.lambda_search = lambda_search
        self.feature_map = feature_map
        self.n_features = n_features
        self.bandwidths = bandwidths
        self.lambdas = lambdas
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        if uses_torch(self.device):
            torch_device(self.device)           # DeviceUnavailable before any work
        # one BLAS thread, whatever the caller's limit: OpenBLAS's GEMM, SYRK and GEMV kernels and
        # LAPACK's syevd split their work by the thread count and round differently (at 2 threads
        # the CV errors moved by up to 1e-6 and λ by up to 1e-5 relative), so the n_jobs threads
        # run whole bandwidths instead
        with _one_blas_thread():
            return self._fit(X, y)

    def _fit(self, X, y):
        rng = as_generator(self.random_state)
        if isinstance(self.bandwidths, str):     # "knn":
            # the EERF paper's rule, shared with eerf/lkrf: σ = mean distance to the 50th neighbour
            bandwidths = np.array([knn_bandwidth(X, 50, rng=rng)])
        else:
            bandwidths = np.asarray(DEFAULT_BANDWIDTHS if self.bandwidths is None else self.bandwidths, float)
        lambdas = np.asarray(DEFAULT_LAMBDAS if self.lambdas is None else self.lambdas, float)
        W0 = sample_frequencies(self.kernel, X.shape[1], int(self.n_features), rng)
        phases = rng.uniform(0.0, 2 * np.pi, W0.shape[1]) if self.feature_map == "phase" else None
        splits = resolve_cv(self.cv, X.shape[0], rng)
        clock = Stopwatch()
        with clock:
            if uses_torch(self.device):
                i_best, best_lambda, best_err, curves = _search_on_device(
                    X, y, W0, phases, bandwidths, lambdas, splits, self.lambda_search, self.device)
                if curves is not None:
                    self.cv_curves_ = curves
            else:
                i_best, best_lambda, best_err = self._search(X, y, W0, phases, bandwidths, lambdas, splits)
        self.bandwidth_ = float(bandwidths[i_best])
        self.lambda_ = float(best_lambda)
        self.frequencies_ = W0 / self.bandwidth_
        self.phases_ = phases
        if uses_torch(self.device):
            self.coef_, self.intercept_ = _solve_on_device(X, y, self.frequencies_, phases, self.lambda_,
                                                           self.device)
        else:
            self.coef_, self.intercept_ = ridge_solve(self.features(X), y, self.lambda_)
        self.best_params_ = {"bandwidth": self.bandwidth_, "lambda": self.lambda_, "cv_mse": float(best_err)}
        self.tune_time_ = clock.total
        return self

    def _search(self, X, y, W0, phases, bandwidths, lambdas, splits):
        """(index of the best σ, its λ, its CV MSE) by the NumPy path."""
        # identical unit frequencies for every σ: the grid compares bandwidths, not draws
        P0 = X @ W0
        if self.lambda_search == "grid":
            def one(sigma):
                return cv_mse_path(_features_from_projection(P0 / sigma, phases), y, splits,
                                   lambdas).mean(axis=0)

            curves = np.array(_thread_map(one, bandwidths, _n_threads(self.n_jobs)))
            i_best, j_best = np.unravel_index(np.argmin(curves), curves.shape)
            best_lambda, best_err = lambdas[j_best], curves[i_best, j_best]
            self.cv_curves_ = curves
        else:
            def one(sigma):
                return select_lambda_continuous(_features_from_projection(P0 / sigma, phases), y, splits,
                                                lambdas=lambdas)

            chosen = _thread_map(one, bandwidths, _n_threads(self.n_jobs))
            i_best = int(np.argmin([err for _, err in chosen]))
            best_lambda, best_err = chosen[i_best]
        return i_best, best_lambda, best_err

    def features(self, X):
        """The fitted random features of X (m × n, or m × 2n for cos-sin)."""
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return fourier_features(X, self.frequencies_, self.phases_)

    def predict(self, X):
        with _one_blas_thread():   # the same numbers at any thread count (see fit)
            return self.features(X) @ self.coef_ + self.intercept_


class _RKSBase(BaseEstimator):
    """Shared fit of RKSRegressor / RKSClassifier."""

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "feature_map": [cons.Choices(*fm.FEATURE_MAPS)],
        "arccos_order": [cons.non_negative_int()],
        "lambdas": ["array-like", None],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "bandwidth_queries": [cons.positive_int(), None],
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, feature_map="gaussian", arccos_order=1, lambdas=None, cv=5,
                 random_state=None, n_jobs=None, bandwidth_queries=2000, device="cpu"):
        self.n_features = n_features
        self.feature_map = feature_map
        self.arccos_order = arccos_order
        self.lambdas = lambdas
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.bandwidth_queries = bandwidth_queries
        self.device = device

    def _fit_target(self, X, y, classify: bool):
        from rfbench.methods.eerf import LAMBDA_GRID

        if uses_torch(self.device):
            torch_device(self.device)           # DeviceUnavailable before any work
        lambdas = cons.positive_values("lambdas", LAMBDA_GRID if self.lambdas is None else self.lambdas)
        rng = as_generator(self.random_state)
        with Stopwatch() as bw:
            sigma = (knn_bandwidth(X, 50, self.bandwidth_queries, rng, workers_from(self.n_jobs))
                     if fm.uses_bandwidth(self.feature_map) else 1.0)
        self.frequencies_, self.phases_ = fm.draw(self.feature_map, int(self.n_features), X.shape[1], rng, sigma)
        self.sigma_ = float(sigma)
        self.bandwidth_time_ = bw.total
        self.preprocess_time_ = 0.0      # data-independent features: nothing before training
        Z = self._features(X)
        with Stopwatch() as tune:
            best, self.cv_errors_ = choose_lambda(Z, y, self.cv, lambdas, classify, rng, self.device)
        lam = float(lambdas[best])
        self.coef_, self.intercept_ = ridge_fit(Z, y, lam, self.device)
        self.tune_time_ = tune.total
        self.best_params_ = {"lambda": lam, "sigma": self.sigma_}
        return self

    def _features(self, X):
        return fm.feature_matrix(X, self.frequencies_, self.phases_, self.feature_map, self.arccos_order)

    def _score(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._features(X) @ self.coef_ + self.intercept_


class RKSRegressor(RegressorMixin, _RKSBase):
    """Random kitchen sinks + ridge regression, λ from EERF's grid by the inner CV (MSE).

    Parameters: ``n_features`` = M, ``feature_map`` / ``arccos_order`` (the EERF paper's maps),
    ``lambdas`` (None: EERF's grid {10⁻⁵, …, 10⁵}), ``cv``/``random_state``/``n_jobs`` as in
    ``common``, ``bandwidth_queries`` = query points of the σ rule (Gaussian map).

    Fitted: ``frequencies_`` (M × d; the linear map: M coordinate indices), ``phases_`` (Gaussian map,
    else None), ``sigma_``, ``coef_``, ``intercept_``, ``cv_errors_``, ``best_params_``,
    ``tune_time_``, ``bandwidth_time_`` (the σ rule) and ``preprocess_time_`` = 0 (no pre-processing).

    ``device`` ("cpu", "cuda", "torch-cpu"; rfbench/methods/device.py): "cpu" is the NumPy path.
    Otherwise only the ridge part runs in torch float64 there (ridge_torch.py): the inner folds'
    Gram matrices with their eigendecompositions in one batch, the criteria of every λ and the
    final solve; the σ rule, the draws, the features and ``predict`` stay NumPy on the CPU. The device's win is doubtful at the papers' sizes:
    with M = 100–450 features the λ path is five M × M eigendecompositions and one m × M² Gram
    product, milliseconds on the CPU, against the transfers and kernel launches; it pays only for
    large m·M² (MNIST's 60 000 rows). Equal to the CPU path to rounding (the same λ where the
    criteria are not tied at rounding level), not bit for bit.
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        return self._fit_target(X, np.asarray(y, dtype=float), classify=False)

    def predict(self, X):
        return self._score(X)


class RKSClassifier(ScoreClassifierMixin, ClassifierMixin, _RKSBase):
    """Random kitchen sinks for classification: least squares on ±1 labels and the sign (two
    classes, the smaller label −1, ties → positive), or one-vs-rest ±1 columns and the largest score
    (more classes); λ by the inner-CV error rate (ties by the ±1 MSE). As ``RKSRegressor`` plus
    ``classes_``."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm = encode_class_labels(y)
        return self._fit_target(X, y_pm, classify=True)

    def decision_function(self, X):
        return self._score(X)
