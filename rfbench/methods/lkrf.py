"""LKRF: Learning Kernels with Random Features (Sinha & Duchi, NIPS 2016), as compared in EERF.

Kernel alignment with a χ²-divergence ball around the uniform weights::

    draw N_w candidates (w_m, b_m), Φ_im = cos(w_m·x_i + b_m) on the N₀ scoring points
    K_m = (Σ_i y_i Φ_im)²
    maximise_q Σ_m q_m K_m   s.t.  q ≥ 0, Σ q_m = 1, ‖q − u‖² ≤ ρ/N_w      (u = 1/N_w)
    draw D features i.i.d. from q, ridge regression on √(2/D) cos(w·x + b)

The candidates are EERF's (``eerf.draw_candidate_pool``: σ = mean 50-NN distance, N₀ = 0.1 N,
M₀ = N_w = 10·D by default), so with the same ``random_state`` both methods start from exactly the
same pool, as in the EERF paper's comparison. Solver: method-notes §5.2 (bisection on the Lagrange
multiplier of the ball, Euclidean projection onto the simplex), returning the feasible q(λ_hi).

ρ and the ridge λ are selected jointly by the inner CV: for each ρ of the grid, q(ρ) and the D
sampled features are computed once from the training part (the same uniform draws serve every ρ, so
that the comparison between ρ values is not blurred by sampling noise) and the whole λ path is scored
on the inner folds with one factorisation per fold. (The feature selection sees the whole training
part, exactly like EERF's; only the ridge fit is cross-validated.)

Feature maps (``feature_map``, ``arccos_order``; rfbench/methods/featuremaps.py): the alignment and
the model use φ of the Gaussian (default), arc-cosine or linear map, as EERF's (the paper's Table 5
compares the two on Letter with the arc-cosine map of order 2). Several classes (MNIST, Letter):
the alignment with the label kernel Y Yᵀ of the C centred one-hot columns,
K_m = Σ_c (Σ_i Y_ic φ_m(x_i))² (= N₀² ‖Ŝ_m‖², EERF's score squared), and one-vs-rest ridge as EERF's.

Timing: ``preprocess_time_`` (the paper's t_pp) is the draws, the alignment scores and one χ² solve
for the selected ρ, the latter repeated after the ρ × λ search so that it is counted in the final fit
and not inside ``tune_time_`` (the solve is deterministic: the same q).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods import featuremaps as fm
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.eerf import (
    CANDIDATE_CONSTRAINTS,
    LAMBDA_GRID,
    candidate_sizes,
    draw_candidate_pool,
    fit_targets,
)
from rfbench.methods.rfkit import (
    ScoreClassifierMixin,
    best_index,
    cv_curves,
    ridge_fit,
    workers_from,
)
from rfbench.methods.tuning import Stopwatch

#: ρ grid of the EERF comparison, {10⁻⁵, …, 10⁵}
RHO_GRID = tuple(float(10.0**k) for k in range(-5, 6))

#: weights at or below this are outside the support of q (the reference code uses machine ε)
SUPPORT_EPS = np.finfo(float).eps


def project_onto_simplex(v: np.ndarray) -> np.ndarray:
    """Euclidean projection onto {q ≥ 0, Σ q = 1}, sort-based (Duchi et al. 2008), O(N log N).

    The projection is unchanged by adding a constant to v; shifting by max(v) avoids the
    cancellation v̂₁ − (v̂₁ − 1) = 0 when the entries are huge (K/λ reaches 1e16 and more).
    """
    v = np.asarray(v, dtype=float)
    v = v - v.max()
    desc = np.sort(v)[::-1]
    cumsum = np.cumsum(desc)
    k = np.arange(1, v.size + 1)
    rho = np.flatnonzero(desc - (cumsum - 1.0) / k > 0)[-1]  # largest k with v̂_k > (S_k − 1)/k
    theta = (cumsum[rho] - 1.0) / (rho + 1)
    return np.maximum(v - theta, 0.0)


def solve_chi_square_alignment(K: np.ndarray, rho: float, tol: float = 1e-10,
                               max_doublings: int = 2000) -> tuple[np.ndarray, float]:
    """q maximising qᵀK over the simplex ∩ {‖q − u‖² ≤ ρ/N}, and its multiplier λ_hi.

    Lagrangian relaxation of the ball with multiplier λ > 0: q(λ) = Π_simplex(u + K/λ), and
    ‖q(λ) − u‖² decreases with λ. Double λ from 1 until q(λ) is feasible (λ_hi), then bisect on
    [0, λ_hi] until the bracket is below tol·λ_hi(start). The last feasible point q(λ_hi) is
    returned (the reference code returns the last midpoint, which may violate the ball by a hair).
    """
    K = np.asarray(K, dtype=float)
    if not rho > 0:
        raise ValueError(f"rho must be positive, got {rho!r}")
    n = K.size
    u = np.full(n, 1.0 / n)
    budget = rho / n

    def q_of(lam):
        return project_onto_simplex(u + K / lam)

    def feasible(q):
        return float(np.sum((q - u) ** 2)) <= budget

    lam_hi = 1.0
    q_hi = q_of(lam_hi)
    for _ in range(max_doublings):
        if feasible(q_hi):
            break
        lam_hi *= 2.0
        q_hi = q_of(lam_hi)
    lam_lo, lam_start = 0.0, lam_hi
    while lam_hi - lam_lo > tol * lam_start:
        mid = 0.5 * (lam_lo + lam_hi)
        q_mid = q_of(mid)
        if feasible(q_mid):
            lam_hi, q_hi = mid, q_mid
        else:
            lam_lo = mid
    return q_hi, lam_hi


def draw_features_from_q(q: np.ndarray, n_draws: int, uniforms: np.ndarray) -> np.ndarray:
    """Candidate indices: ``n_draws`` i.i.d. draws from q by inverse CDF on the given uniforms.

    Weights ≤ machine ε are outside the support and q is renormalised on it; if the support has at
    most ``n_draws`` candidates, all of them are returned (the model then has fewer features), as
    in the reference code.
    """
    support = np.flatnonzero(q > SUPPORT_EPS)
    if support.size <= n_draws:
        return support
    p = q[support] / q[support].sum()
    cdf = np.cumsum(p)
    idx = np.searchsorted(cdf, uniforms[:n_draws], side="right")
    return support[np.minimum(idx, support.size - 1)]  # the last CDF value can be 1 − 1e-16


class _LKRFBase(BaseEstimator):
    """Shared fit of LKRFRegressor / LKRFClassifier."""

    _parameter_constraints: dict = {
        **CANDIDATE_CONSTRAINTS,
        "rhos": ["array-like"],
        "lambdas": ["array-like"],
        "mode": [cons.Choices("sample", "weighted")],
        "tol": [cons.positive_real()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, m0_factor=10.0, n0_fraction=0.1, rhos=RHO_GRID,
                 lambdas=LAMBDA_GRID, mode="sample", tol=1e-10, cv=5, random_state=None,
                 n_jobs=None, bandwidth_queries=2000, feature_map="gaussian", arccos_order=1,
                 n_candidates=None, centred_score=False, device="cpu"):
        self.n_features = n_features
        self.m0_factor = m0_factor
        self.n0_fraction = n0_fraction
        self.rhos = rhos
        self.lambdas = lambdas
        self.mode = mode
        self.tol = tol
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.bandwidth_queries = bandwidth_queries
        self.feature_map = feature_map
        self.arccos_order = arccos_order
        self.n_candidates = n_candidates
        self.centred_score = centred_score
        self.device = device

    def _features_for(self, q, uniforms):
        """(candidate indices, per-feature weights or None) for one solution q."""
        if self.mode == "sample":
            return draw_features_from_q(q, int(self.n_features), uniforms), None
        # "weighted": the optimised kernel itself, Σ_m q_m φ_m(x) φ_m(x'), on the support of q;
        # the map's scale (√(2/D′) for cos) is undone so that the features are √(2 q_m) cos(w_m·x + b_m).
        support = np.flatnonzero(q > SUPPORT_EPS)
        p = q[support] / q[support].sum()
        return support, np.sqrt(p * support.size)

    def _fit_target(self, X, y, y_align, classify):
        if uses_torch(self.device):
            torch_device(self.device)           # DeviceUnavailable before any work
        rng = as_generator(self.random_state)
        m = X.shape[0]
        m0, n0 = candidate_sizes(self.n_features, m, self.m0_factor, self.n0_fraction, self.n_candidates)
        rhos = cons.positive_values("rhos", self.rhos)
        lambdas = cons.positive_values("lambdas", self.lambdas)

        pool = draw_candidate_pool(X, m0, n0, rng, self.bandwidth_queries, workers_from(self.n_jobs),
                                   self.feature_map)
        with Stopwatch() as pre:  # alignment weights K_m = (Σ_i y_i Φ_im)² on the N₀ points
            S = fm.scores(X[pool.subsample], y_align[pool.subsample], pool.frequencies, pool.phases,
                          self.feature_map, self.arccos_order)
            K = (n0 * S) ** 2 if S.ndim == 1 else n0**2 * np.sum(S**2, axis=1)
        tune_grid = rhos.size * lambdas.size > 1
        with Stopwatch() as tune:
            splits = resolve_cv(self.cv, m, rng) if tune_grid else None
            uniforms = rng.random(int(self.n_features))  # common random numbers for every ρ
            solutions, curves, cache = [], [], {}
            for rho in rhos:
                q, _ = solve_chi_square_alignment(K, rho, tol=self.tol)
                idx, weights = self._features_for(q, uniforms)
                solutions.append((q, idx, weights))
                if not tune_grid:
                    continue
                key = (idx.tobytes(), None if weights is None else weights.tobytes())
                if key not in cache:  # several ρ often give the very same features
                    Z = fm.feature_matrix(X, *fm.take(pool.frequencies, pool.phases, idx), self.feature_map,
                                          self.arccos_order, weights)
                    cache[key] = cv_curves(Z, y, splits, lambdas, classify, self.device)
                curves.append(cache[key])
            if tune_grid:
                primary = np.array([c[0] for c in curves])
                secondary = np.array([c[1] for c in curves])
                best = best_index(primary, secondary)
                i_rho, i_lam = divmod(best, lambdas.size)
                self.cv_errors_ = primary
            else:
                i_rho = i_lam = 0
                self.cv_errors_ = np.full((1, 1), np.nan)

        with Stopwatch() as solve:  # the selected ρ's solve again, outside the search: part of t_pp
            solve_chi_square_alignment(K, rhos[i_rho], tol=self.tol)
        q, idx, weights = solutions[i_rho]
        self.q_ = q
        self.rho_ = float(rhos[i_rho])
        self.scores_ = K
        self.selected_ = idx
        self.frequencies_, self.phases_ = fm.take(pool.frequencies, pool.phases, idx)
        self.feature_weights_ = weights
        self.sigma_ = pool.sigma
        # t_pp of EERF Table 5: draws, alignment scores and the solve for the selected ρ
        self.preprocess_time_ = pool.draw_time + pre.total + solve.total
        self.bandwidth_time_ = pool.bandwidth_time
        self.tune_time_ = tune.total
        lam = float(lambdas[i_lam])
        Z = self._features(X)
        self.coef_, self.intercept_ = ridge_fit(Z, y, lam, self.device)
        self.best_params_ = {"rho": self.rho_, "lambda": lam, "m0": int(m0), "n0": int(n0),
                             "sigma": float(pool.sigma), "n_features_used": int(idx.size)}
        return self

    def _features(self, X):
        return fm.feature_matrix(X, self.frequencies_, self.phases_, self.feature_map, self.arccos_order,
                                 self.feature_weights_)

    def _score(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return self._features(X) @ self.coef_ + self.intercept_


class LKRFRegressor(RegressorMixin, _LKRFBase):
    """LKRF features + ridge regression; ρ and λ selected by the inner CV (MSE).

    The alignment uses the *centred* responses (K_m = (Σ_i (y_i − ȳ) Φ_im)²): for real responses
    the uncentred alignment would be dominated by the constant component (method-notes §5.4).

    Parameters: as ``EERFRegressor`` (``n_candidates``, ``feature_map``, ``arccos_order`` too) plus
    ``rhos`` (ρ grid), ``mode`` ("sample": D i.i.d. draws from q, unweighted, default; "weighted":
    every support feature weighted by √q_m, so the number of features is the support size), ``tol``
    (relative bisection tolerance), ``centred_score`` (no effect here: the responses are centred).

    Fitted: as EERF (``frequencies_``, ``phases_``, ``selected_``, ``scores_`` = K of all M₀
    candidates, ``sigma_``, ``coef_``, ``intercept_``, ``best_params_``, ``tune_time_``,
    ``preprocess_time_``) plus ``q_`` (the weights over the M₀ candidates), ``rho_``,
    ``feature_weights_`` (None in sample mode) and ``cv_errors_`` (ρ × λ mean CV MSE).

    ``device`` ("cpu", "cuda", "torch-cpu"; rfbench/methods/device.py): "cpu" is the NumPy path.
    Otherwise only the ridge part runs in torch float64 there (ridge_torch.py): the inner folds'
    Gram matrices with their eigendecompositions in one batch, the criteria of every λ and the
    final solve; the σ rule, the candidate draws, the alignment scores, the χ² solves, the
    features and ``predict`` stay NumPy on the CPU. The device's win is doubtful at the papers' sizes:
    with M = 100–450 features the λ path is five M × M eigendecompositions and one m × M² Gram
    product, milliseconds on the CPU, against the transfers and kernel launches; it pays only for
    large m·M² (MNIST's 60 000 rows). Equal to the CPU path to rounding (the same λ where the
    criteria are not tied at rounding level), not bit for bit.
    """

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        _, y, y_align = fit_targets(y, classify=False, regression_score=lambda v: v - v.mean())
        return self._fit_target(X, y, y_align, classify=False)

    def predict(self, X):
        return self._score(X)


class LKRFClassifier(ScoreClassifierMixin, ClassifierMixin, _LKRFBase):
    """LKRF for classification (the reference setting: two classes): alignment with the ±1 labels,
    ridge on ±1, prediction sign(score) with ties → positive class; several classes: alignment with
    the centred one-hot columns, one-vs-rest ridge, the largest score. ρ and λ are selected by the
    inner-CV misclassification rate (ties by the ±1 MSE). Two labels: any two values, smaller → −1;
    ``centred_score``: align with the ±1 labels minus their mean (default False: the reference code's
    ±1 labels)."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm, y_align = fit_targets(y, classify=True, centred=bool(self.centred_score))
        return self._fit_target(X, y_pm, y_align, classify=True)

    def decision_function(self, X):
        return self._score(X)
