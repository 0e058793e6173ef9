"""EERF: Energy-based Exploration of Random Features (Shahrampour, Beirami & Tarokh, AAAI 2018).

Algorithm 1 (Gaussian kernel, feature map φ(x, ω) = cos(ω_R·x + ω_I), ω_I = b the phase)::

    Input: training set, M₀ ≥ M, initial distribution P₀ = N(0, σ⁻² I) × U[0, 2π)
    1: draw M₀ candidates (ω̃_m, b̃_m) ~ P₀
    2: score each on N₀ training points: Ŝ(ω) = (1/N₀) Σ_n y_n cos(ω·x_n + b)        (eq. 7)
    3: keep the M candidates with the largest |Ŝ|
    then ridge regression on √(2/M) cos(ω_m·x + b_m), λ from {10⁻⁵, …, 10⁵}

Choices (method-notes §4): σ = mean distance to the 50th nearest neighbour; M₀ = 10·M and
N₀ = 0.1·N by default (rule of thumb M₀ ∈ [5M, 20M], N₀ = 0.1N); regression targets are *not*
centred for the score, but mapped to [−1, 1] by their training range as the paper's preprocessing
does (``paper_response_scale``); ties between equal |Ŝ| go to the lower candidate
index, so the selection is deterministic.

The candidate pool (σ, N₀ subsample, frequencies, phases) is drawn by ``draw_candidate_pool`` in a
fixed order of generator calls; LKRF calls the same function, so with the same ``random_state`` both
methods score exactly the same candidates on the same subsample, as in the paper's comparison.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.rfkit import (
    BinaryScoreClassifierMixin,
    best_index,
    encode_binary_labels,
    knn_bandwidth,
    ridge_cv_curves,
    workers_from,
)
from rfbench.methods.ridge import ridge_solve
from rfbench.methods.tuning import Stopwatch

#: ridge regularisation grid of the EERF experiments, {10⁻⁵, 10⁻⁴, …, 10⁵} (ridge.py convention mλ)
LAMBDA_GRID = tuple(float(10.0**k) for k in range(-5, 6))

#: candidates scored per matrix product (bounds the N₀ × block working array)
SCORE_BLOCK = 2000


@dataclass
class CandidatePool:
    """Everything Algorithm 1 draws before scoring."""

    sigma: float  # bandwidth of P₀ (length-scale)
    subsample: np.ndarray  # the N₀ scoring rows, sorted
    frequencies: np.ndarray  # (M₀, d), rows ω̃_m ~ N(0, σ⁻² I)
    phases: np.ndarray  # (M₀,), b̃_m ~ U[0, 2π)
    bandwidth_time: float = 0.0  # seconds for the σ rule (shared with data-independent RFF)
    draw_time: float = 0.0  # seconds for the subsample and the M₀ draws (part of EERF's t_pp)


def candidate_sizes(n_features: int, n_samples: int, m0_factor: float,
                    n0_fraction: float) -> tuple[int, int]:
    """(M₀, N₀): M₀ = round(m0_factor·M) (at least M), N₀ = round(n0_fraction·N) within [1, N]."""
    if int(n_features) < 1:
        raise ValueError(f"n_features must be a positive integer, got {n_features!r}")
    if not m0_factor >= 1:
        raise ValueError(f"m0_factor must be >= 1 (M0 >= M), got {m0_factor!r}")
    if not 0 < n0_fraction <= 1:
        raise ValueError(f"n0_fraction must be in (0, 1], got {n0_fraction!r}")
    m0 = max(int(n_features), int(round(m0_factor * n_features)))
    n0 = min(n_samples, max(1, int(round(n0_fraction * n_samples))))
    return m0, n0


def draw_candidate_pool(X: np.ndarray, m0: int, n0: int, rng: np.random.Generator,
                        bandwidth_queries: int | None = 2000, workers: int = 1) -> CandidatePool:
    """σ rule, N₀ subsample, then M₀ frequencies and phases — always in this order of RNG calls."""
    with Stopwatch() as bw:
        sigma = knn_bandwidth(X, k=50, n_query=bandwidth_queries, rng=rng, workers=workers)
    with Stopwatch() as draw:
        subsample = np.sort(rng.choice(X.shape[0], size=n0, replace=False))
        frequencies = rng.standard_normal((m0, X.shape[1])) / sigma
        phases = rng.uniform(0.0, 2.0 * np.pi, size=m0)
    return CandidatePool(sigma, subsample, frequencies, phases, bw.total, draw.total)


def empirical_scores(X0: np.ndarray, y0: np.ndarray, frequencies: np.ndarray, phases: np.ndarray,
                     block: int = SCORE_BLOCK) -> np.ndarray:
    """Ŝ_m = (1/N₀) Σ_n y_n cos(ω_m·x_n + b_m) for every candidate (eq. 7), in column blocks.

    One (N₀ × d)·(d × block) product per block, so memory stays O(N₀·block) for any M₀.
    """
    n0 = X0.shape[0]
    scores = np.empty(frequencies.shape[0])
    for start in range(0, frequencies.shape[0], block):
        stop = start + block
        scores[start:stop] = y0 @ np.cos(X0 @ frequencies[start:stop].T + phases[start:stop]) / n0
    return scores


def paper_response_scale(y: np.ndarray) -> np.ndarray:
    """The EERF paper's regression preprocessing: responses mapped to [−1, 1] by their range.

    The score (eq. 7) sees these values — not centred, as in the paper — whatever scaling the
    protocol applied, so the selection does not depend on the unit or offset of y. Scoring the GFC
    protocol's [0, 1] outputs directly would add a bonus of mean(y) ≈ 0.5 to every low frequency
    (measured in docs/history/eerf.md).
    """
    lo, hi = float(np.min(y)), float(np.max(y))
    return 2.0 * (y - lo) / (hi - lo) - 1.0 if hi > lo else np.zeros_like(y)


def top_k_by_magnitude(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest |scores|, in descending |score| order, ties → lower index first.

    O(M₀) selection (``np.partition``) of the threshold, then only the kept ones are sorted.
    """
    a = np.abs(np.asarray(scores, dtype=float))
    k = min(int(k), a.size)
    if k < a.size:
        threshold = np.partition(a, a.size - k)[a.size - k]  # k-th largest |Ŝ|
        above = np.flatnonzero(a > threshold)
        tied = np.flatnonzero(a == threshold)[: k - above.size]
        keep = np.concatenate([above, tied])
    else:
        keep = np.arange(a.size)
    return keep[np.lexsort((keep, -a[keep]))]


def cosine_features(X: np.ndarray, frequencies: np.ndarray, phases: np.ndarray,
                    weights: np.ndarray | None = None) -> np.ndarray:
    """Z = √(2/M) cos(X Ωᵀ + b), optionally times per-feature weights (LKRF's weighted mode).

    Built in place (one m × M array) since m·M can be large (EERF's Buzz set: 93 800 × 1000).
    """
    Z = X @ frequencies.T
    Z += phases
    np.cos(Z, out=Z)
    Z *= math.sqrt(2.0 / max(frequencies.shape[0], 1))
    if weights is not None:
        Z *= weights
    return Z


class _EERFBase(BaseEstimator):
    """Shared fit of EERFRegressor / EERFClassifier (the target is real or ±1)."""

    def __init__(self, n_features=100, m0_factor=10.0, n0_fraction=0.1, lambdas=LAMBDA_GRID,
                 cv=5, random_state=None, n_jobs=None, bandwidth_queries=2000):
        self.n_features = n_features
        self.m0_factor = m0_factor
        self.n0_fraction = n0_fraction
        self.lambdas = lambdas
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.bandwidth_queries = bandwidth_queries

    def _fit_target(self, X: np.ndarray, y: np.ndarray, classify: bool, y_score: np.ndarray | None = None):
        rng = as_generator(self.random_state)
        m = X.shape[0]
        m0, n0 = candidate_sizes(self.n_features, m, self.m0_factor, self.n0_fraction)
        lambdas = np.asarray(self.lambdas, dtype=float).ravel()
        if lambdas.size == 0 or np.any(lambdas <= 0):
            raise ValueError(f"lambdas must be a non-empty list of positive values, got {self.lambdas!r}")

        pool = draw_candidate_pool(X, m0, n0, rng, self.bandwidth_queries, workers_from(self.n_jobs))
        with Stopwatch() as pre:  # Table 3's t_pp: draw (above), score M₀ candidates, select
            y_s = y if y_score is None else y_score
            scores = empirical_scores(X[pool.subsample], y_s[pool.subsample], pool.frequencies,
                                      pool.phases)
            selected = top_k_by_magnitude(scores, self.n_features)
        self.frequencies_ = pool.frequencies[selected]
        self.phases_ = pool.phases[selected]
        self.selected_ = selected
        self.scores_ = scores
        self.sigma_ = pool.sigma
        self.preprocess_time_ = pool.draw_time + pre.total
        self.bandwidth_time_ = pool.bandwidth_time

        Z = cosine_features(X, self.frequencies_, self.phases_)
        with Stopwatch() as tune:
            if lambdas.size > 1:
                splits = resolve_cv(self.cv, m, rng)
                primary, secondary = ridge_cv_curves(Z, y, splits, lambdas, classify)
                best = best_index(primary, secondary)
                self.cv_errors_ = primary
            else:
                best = 0
                self.cv_errors_ = np.full(1, np.nan)
        lam = float(lambdas[best])
        self.coef_, self.intercept_ = ridge_solve(Z, y, lam)
        self.intercept_ = float(self.intercept_)
        self.tune_time_ = tune.total
        self.best_params_ = {"lambda": lam, "m0": int(m0), "n0": int(n0), "sigma": float(pool.sigma)}
        return self

    def _score(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return cosine_features(X, self.frequencies_, self.phases_) @ self.coef_ + self.intercept_


class EERFRegressor(RegressorMixin, _EERFBase):
    """EERF random features + ridge regression, λ selected by the inner CV (MSE).

    Parameters: ``n_features`` = M (kept features), ``m0_factor`` = M₀/M, ``n0_fraction`` = N₀/N,
    ``lambdas`` = ridge grid, ``cv``/``random_state``/``n_jobs`` as in ``common``,
    ``bandwidth_queries`` = query points for the σ rule (None = all).

    Fitted: ``frequencies_`` (M × d), ``phases_``, ``selected_`` (candidate indices), ``scores_``
    (Ŝ of all M₀ candidates), ``sigma_``, ``coef_``, ``intercept_``, ``cv_errors_`` (mean CV MSE per λ),
    ``best_params_``, ``tune_time_``, ``preprocess_time_`` (candidate draws, scoring and selection:
    the paper's t_pp), ``bandwidth_time_`` (the σ rule, which plain RFF needs as well).
    """

    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        y = np.asarray(y, dtype=float)
        return self._fit_target(X, y, classify=False, y_score=paper_response_scale(y))

    def predict(self, X):
        return self._score(X)


class EERFClassifier(BinaryScoreClassifierMixin, ClassifierMixin, _EERFBase):
    """EERF for binary classification: least squares on ±1 labels, prediction sign(score).

    Labels: any two values, the smaller one → −1; ties of the score → positive class. λ is selected
    by the inner-CV misclassification rate (ties by the ±1 MSE). Same parameters and fitted
    attributes as ``EERFRegressor`` plus ``classes_``.
    """

    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm = encode_binary_labels(y)
        return self._fit_target(X, y_pm, classify=True)

    def decision_function(self, X):
        return self._score(X)

