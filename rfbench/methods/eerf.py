"""EERF: Energy-based Exploration of Random Features (Shahrampour, Beirami & Tarokh, AAAI 2018).

Algorithm 1 (shown for the Gaussian kernel, feature map φ(x, ω) = cos(ω_R·x + ω_I), ω_I = b the phase)::

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

Other feature maps (the paper's Table 4, ``feature_map``; rfbench/methods/featuremaps.py): the
arc-cosine map of order n, (ω·x)ⁿ H(ω·x) with ω ~ N(0, I) (``"arccos"``, ``arccos_order``; Letter
recognition uses n = 2, Year prediction n = 1), and the linear map x_ω, ω uniform on the d
coordinates (``"linear"``). The same score (eq. (7)) with that φ, the same selection and ridge.

Several classes (MNIST, Letter; method-notes §4.4 [O]): ridge on one-vs-rest ±1 columns, prediction
the largest score, λ by the inner-CV error rate; a candidate's score is ‖Ŝ(ω)‖₂ over the C centred
one-hot label columns (the score of each one-vs-rest problem, centred so that no class's share adds
mean(φ) to every candidate). Two classes keep the paper's ±1 labels, uncentred; ``centred_score``
centres them (and a regression's [−1, 1] responses) as well: with unbalanced classes (Adult: 24 %
positive) the uncentred score adds mean(y)·mean(φ), which ranks nearly constant low-frequency
features first.

``n_candidates`` gives M₀ itself (the paper's Tables 3 and 5 fix M₀ per dataset: Adult 2000 at
M = 100, MNIST 10 000 at M = 450, Letter 500 at M = 100) instead of ``m0_factor`` × M.

The candidate pool (σ, N₀ subsample, frequencies, phases) is drawn by ``draw_candidate_pool`` in a
fixed order of generator calls; LKRF calls the same function, so with the same ``random_state`` both
methods score exactly the same candidates on the same subsample, as in the paper's comparison.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods import featuremaps as fm
from rfbench.methods.common import as_generator
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.featuremaps import SCORE_BLOCK, cosine_features, empirical_scores  # noqa: F401 (re-exported)
from rfbench.methods.rfkit import (
    ScoreClassifierMixin,
    centred_indicators,
    choose_lambda,
    encode_class_labels,
    knn_bandwidth,
    ridge_fit,
    workers_from,
)
from rfbench.methods.tuning import Stopwatch

#: ridge regularisation grid of the EERF experiments, {10⁻⁵, 10⁻⁴, …, 10⁵} (ridge.py convention mλ)
LAMBDA_GRID = tuple(float(10.0**k) for k in range(-5, 6))


@dataclass
class CandidatePool:
    """Everything Algorithm 1 draws before scoring."""

    sigma: float  # bandwidth of P₀ (length-scale; 1 for the maps without one)
    subsample: np.ndarray  # the N₀ scoring rows, sorted
    frequencies: np.ndarray  # (M₀, d), rows ω̃_m ~ N(0, σ⁻² I) (linear map: M₀ coordinate indices)
    phases: np.ndarray | None  # (M₀,), b̃_m ~ U[0, 2π) (None for the maps without phases)
    bandwidth_time: float = 0.0  # seconds for the σ rule (shared with data-independent RFF)
    draw_time: float = 0.0  # seconds for the subsample and the M₀ draws (part of EERF's t_pp)


def candidate_sizes(n_features: int, n_samples: int, m0_factor: float,
                    n0_fraction: float, n_candidates: int | None = None) -> tuple[int, int]:
    """(M₀, N₀): M₀ = ``n_candidates`` if given, else round(m0_factor·M) (at least M);
    N₀ = round(n0_fraction·N) within [1, N]. The types and ranges of the arguments are the
    estimators' ``_parameter_constraints`` (:data:`CANDIDATE_CONSTRAINTS`); checked here is the
    relation between two of them, M₀ ≥ M."""
    if n_candidates is not None and n_candidates < int(n_features):
        raise ValueError(f"n_candidates (M0) must be an integer at least n_features (M = {n_features}), "
                         f"got {n_candidates!r}")
    m0 = int(n_candidates) if n_candidates is not None else max(int(n_features), int(round(m0_factor * n_features)))
    n0 = min(n_samples, max(1, int(round(n0_fraction * n_samples))))
    return m0, n0


def draw_candidate_pool(X: np.ndarray, m0: int, n0: int, rng: np.random.Generator,
                        bandwidth_queries: int | None = 2000, workers: int = 1,
                        feature_map: str = "gaussian") -> CandidatePool:
    """σ rule (Gaussian map only), N₀ subsample, then M₀ draws from P₀ (frequencies and phases, or
    coordinate indices) — always in this order of RNG calls."""
    with Stopwatch() as bw:
        sigma = (knn_bandwidth(X, k=50, n_query=bandwidth_queries, rng=rng, workers=workers)
                 if fm.uses_bandwidth(feature_map) else 1.0)
    with Stopwatch() as draw:
        subsample = np.sort(rng.choice(X.shape[0], size=n0, replace=False))
        frequencies, phases = fm.draw(feature_map, m0, X.shape[1], rng, sigma)
    return CandidatePool(sigma, subsample, frequencies, phases, bw.total, draw.total)


def fit_targets(y, classify: bool, regression_score=None, centred: bool = False):
    """(classes_ or None, ridge targets, score targets) of a fit: a real response (the score sees
    ``regression_score(y)``), two classes (±1 both), or C classes (one-vs-rest ±1 columns for the
    ridge, centred one-hot columns for the score). ``centred``: the score's response minus its mean
    (two classes, real responses; several classes are centred anyway)."""
    if not classify:
        y = np.asarray(y, dtype=float)
        score = y if regression_score is None else regression_score(y)
        return None, y, (score - score.mean() if centred else score)
    classes, Y = encode_class_labels(y)
    if Y.ndim == 2:
        return classes, Y, centred_indicators(Y)
    return classes, Y, (Y - Y.mean() if centred else Y)


def score_magnitudes(scores: np.ndarray) -> np.ndarray:
    """|Ŝ| for one response, ‖Ŝ‖₂ over the C columns of several (what the selection ranks)."""
    return scores if scores.ndim == 1 else np.linalg.norm(scores, axis=1)


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


#: the parameters EERF shares with LKRF: M, M₀ (M₀/M ≥ 1, or M₀ itself), N₀/N, the σ rule, the feature map
CANDIDATE_CONSTRAINTS: dict = {
    "n_features": [cons.positive_int()],
    "m0_factor": [Interval(Real, 1, None, closed="left")],
    "n0_fraction": [Interval(Real, 0, 1, closed="right")],
    "n_candidates": [cons.positive_int(), None],
    "bandwidth_queries": [cons.positive_int(), None],
    "feature_map": [cons.Choices(*fm.FEATURE_MAPS)],
    "arccos_order": [cons.non_negative_int()],
    "centred_score": ["boolean"],
}


class _EERFBase(BaseEstimator):
    """Shared fit of EERFRegressor / EERFClassifier (the target is real, ±1, or ±1 one-vs-rest columns)."""

    _parameter_constraints: dict = {
        **CANDIDATE_CONSTRAINTS,
        "lambdas": ["array-like"],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, m0_factor=10.0, n0_fraction=0.1, lambdas=LAMBDA_GRID,
                 cv=5, random_state=None, n_jobs=None, bandwidth_queries=2000, feature_map="gaussian",
                 arccos_order=1, n_candidates=None, centred_score=False, device="cpu"):
        self.n_features = n_features
        self.m0_factor = m0_factor
        self.n0_fraction = n0_fraction
        self.lambdas = lambdas
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.bandwidth_queries = bandwidth_queries
        self.feature_map = feature_map
        self.arccos_order = arccos_order
        self.n_candidates = n_candidates
        self.centred_score = centred_score
        self.device = device

    def _fit_target(self, X: np.ndarray, y: np.ndarray, y_score: np.ndarray, classify: bool):
        if uses_torch(self.device):
            torch_device(self.device)           # DeviceUnavailable before any work
        rng = as_generator(self.random_state)
        m = X.shape[0]
        m0, n0 = candidate_sizes(self.n_features, m, self.m0_factor, self.n0_fraction, self.n_candidates)
        lambdas = cons.positive_values("lambdas", self.lambdas)

        pool = draw_candidate_pool(X, m0, n0, rng, self.bandwidth_queries, workers_from(self.n_jobs),
                                   self.feature_map)
        with Stopwatch() as pre:  # Table 3's t_pp: draw (above), score M₀ candidates, select
            scores = fm.scores(X[pool.subsample], y_score[pool.subsample], pool.frequencies, pool.phases,
                               self.feature_map, self.arccos_order)
            selected = top_k_by_magnitude(score_magnitudes(scores), self.n_features)
        self.frequencies_, self.phases_ = fm.take(pool.frequencies, pool.phases, selected)
        self.selected_ = selected
        self.scores_ = scores
        self.sigma_ = pool.sigma
        self.preprocess_time_ = pool.draw_time + pre.total
        self.bandwidth_time_ = pool.bandwidth_time

        Z = self._features(X)
        with Stopwatch() as tune:
            best, self.cv_errors_ = choose_lambda(Z, y, self.cv, lambdas, classify, rng, self.device)
        lam = float(lambdas[best])
        self.coef_, self.intercept_ = ridge_fit(Z, y, lam, self.device)
        self.tune_time_ = tune.total
        self.best_params_ = {"lambda": lam, "m0": int(m0), "n0": int(n0), "sigma": float(pool.sigma)}
        return self

    def _features(self, X: np.ndarray) -> np.ndarray:
        return fm.feature_matrix(X, self.frequencies_, self.phases_, self.feature_map, self.arccos_order)

    def _score(self, X) -> np.ndarray:
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._features(X) @ self.coef_ + self.intercept_


class EERFRegressor(RegressorMixin, _EERFBase):
    """EERF random features + ridge regression, λ selected by the inner CV (MSE).

    Parameters: ``n_features`` = M (kept features), ``m0_factor`` = M₀/M (or ``n_candidates`` = M₀),
    ``n0_fraction`` = N₀/N, ``lambdas`` = ridge grid, ``cv``/``random_state``/``n_jobs`` as in
    ``common``, ``bandwidth_queries`` = query points for the σ rule (None = all), ``feature_map``
    ("gaussian", "arccos", "linear") and ``arccos_order`` (n of the arc-cosine map),
    ``centred_score``: the score sees the responses minus their mean (default False: the paper's
    responses as they are, in [−1, 1]).

    Fitted: ``frequencies_`` (M × d; the linear map: M coordinate indices), ``phases_`` (None but
    for the Gaussian map), ``selected_`` (candidate indices), ``scores_`` (Ŝ of all M₀ candidates),
    ``sigma_`` (1 for the maps without a bandwidth), ``coef_``, ``intercept_``, ``cv_errors_`` (mean
    CV MSE per λ), ``best_params_``, ``tune_time_``, ``preprocess_time_`` (candidate draws, scoring
    and selection: the paper's t_pp), ``bandwidth_time_`` (the σ rule, which plain RFF needs as well).

    ``device`` ("cpu", "cuda", "torch-cpu"; rfbench/methods/device.py): "cpu" is the NumPy path.
    Otherwise only the ridge part runs in torch float64 there (ridge_torch.py): the inner folds'
    Gram matrices with their eigendecompositions in one batch, the criteria of every λ and the
    final solve; the σ rule, the candidate draws, their scoring and selection, the features and
    ``predict`` stay NumPy on the CPU. The device's win is doubtful at the papers' sizes:
    with M = 100–450 features the λ path is five M × M eigendecompositions and one m × M² Gram
    product, milliseconds on the CPU, against the transfers and kernel launches; it pays only for
    large m·M² (MNIST's 60 000 rows). Equal to the CPU path to rounding (the same λ where the
    criteria are not tied at rounding level), not bit for bit.
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        _, y, y_score = fit_targets(y, classify=False, regression_score=paper_response_scale,
                                    centred=bool(self.centred_score))
        return self._fit_target(X, y, y_score, classify=False)

    def predict(self, X):
        return self._score(X)


class EERFClassifier(ScoreClassifierMixin, ClassifierMixin, _EERFBase):
    """EERF for classification: least squares on ±1 labels, prediction sign(score); with more than
    two classes, one-vs-rest ±1 columns and the largest score (the candidates ranked by ‖Ŝ‖₂ over the
    centred one-hot columns).

    Two classes: any two values, the smaller one → −1; ties of the score → positive class. λ is
    selected by the inner-CV misclassification rate (ties by the ±1 MSE). Same parameters and fitted
    attributes as ``EERFRegressor`` plus ``classes_`` (``scores_`` is M₀ × C with several classes).
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm, y_score = fit_targets(y, classify=True, centred=bool(self.centred_score))
        return self._fit_target(X, y_pm, y_score, classify=True)

    def decision_function(self, X):
        return self._score(X)
