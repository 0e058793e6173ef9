"""LKRF: simplex projection, χ²-constrained alignment solver, feature sampling, estimator."""

import json

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.eerf import EERFClassifier, cosine_features
from rfbench.methods.lkrf import (
    LKRFClassifier,
    LKRFRegressor,
    draw_features_from_q,
    project_onto_simplex,
    solve_chi_square_alignment,
)


def _slsqp_alignment(K, rho):
    """Brute-force reference: SLSQP from several starts on max qᵀK, simplex ∩ ball."""
    n = K.size
    u = np.full(n, 1.0 / n)
    scale = K.max()
    cons = [{"type": "eq", "fun": lambda q: q.sum() - 1.0, "jac": lambda q: np.ones(n)},
            {"type": "ineq", "fun": lambda q: rho / n - np.sum((q - u) ** 2),
             "jac": lambda q: -2.0 * (q - u)}]
    best = -np.inf
    rng = np.random.default_rng(0)
    for start in [u] + [project_onto_simplex(u + 0.01 * rng.standard_normal(n)) for _ in range(4)]:
        res = minimize(lambda q: -(q @ K) / scale, start, jac=lambda q: -K / scale, method="SLSQP",
                       bounds=[(0, 1)] * n, constraints=cons,
                       options={"ftol": 1e-14, "maxiter": 1000})
        q = res.x
        if np.sum((q - u) ** 2) <= rho / n + 1e-9 and abs(q.sum() - 1) < 1e-9 and q.min() > -1e-9:
            best = max(best, q @ K)
    return best


def test_projection_onto_simplex():
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = rng.standard_normal(int(rng.integers(1, 12))) * 3
        p = project_onto_simplex(v)
        assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
        # optimality (KKT): p − v = θ·1 − μ with μ ≥ 0 and μ_i = 0 where p_i > 0
        theta = (p - v)[p > 0]
        assert np.ptp(theta) < 1e-12
        assert np.all((p - v)[p == 0] >= theta[0] - 1e-12)
    np.testing.assert_allclose(project_onto_simplex(np.array([0.2, 0.3, 0.5])), [0.2, 0.3, 0.5])
    np.testing.assert_allclose(project_onto_simplex(np.array([5.0, 0.0, 0.0])), [1.0, 0.0, 0.0])


@pytest.mark.parametrize("rho", [1e-3, 0.05, 0.3, 1.0, 2.0])
def test_solver_feasible_and_optimal_against_slsqp(rho):
    rng = np.random.default_rng(int(rho * 1000))
    n = 6
    K = (rng.standard_normal(n) * 5) ** 2
    q, lam = solve_chi_square_alignment(K, rho)
    u = np.full(n, 1.0 / n)
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.sum((q - u) ** 2) <= rho / n  # feasible, not "by a hair"
    ref = _slsqp_alignment(K, rho)
    assert q @ K >= ref - 1e-6 * abs(ref)
    assert q @ K <= ref + 1e-6 * abs(ref)  # SLSQP found the optimum too (sanity of the reference)
    assert lam > 0


def test_solver_matches_fine_grid_search_on_three_candidates():
    K = np.array([1.0, 4.0, 2.5])
    rho = 0.2
    q, _ = solve_chi_square_alignment(K, rho)
    s = np.linspace(0, 1, 1201)
    a, b = np.meshgrid(s, s)
    c = 1 - a - b
    Q = np.stack([a, b, c], axis=-1)
    ok = (c >= 0) & (np.sum((Q - 1 / 3) ** 2, axis=-1) <= rho / 3)
    grid_best = np.max((Q @ K)[ok])
    assert q @ K >= grid_best - 1e-9
    assert q @ K <= grid_best + 1e-2  # grid resolution


def test_limits_uniform_and_one_hot():
    K = np.array([3.0, 9.0, 1.0, 4.0, 9.5, 0.0])
    n = K.size
    q_small, _ = solve_chi_square_alignment(K, 1e-12)
    np.testing.assert_allclose(q_small, np.full(n, 1 / n), atol=1e-6)
    q_big, _ = solve_chi_square_alignment(K, n - 1.0)  # ball no longer binding
    np.testing.assert_allclose(q_big, np.eye(n)[np.argmax(K)], atol=1e-8)
    q_huge, _ = solve_chi_square_alignment(K * 1e6, 1e5)  # K ~ N₀² scale, large ρ
    np.testing.assert_allclose(q_huge, np.eye(n)[np.argmax(K)], atol=1e-8)
    q_flat, _ = solve_chi_square_alignment(np.zeros(n), 1.0)
    np.testing.assert_allclose(q_flat, np.full(n, 1 / n))


def test_sampling_from_q():
    # inverse CDF on the support {0, 2, 3, 4, 5}: cdf = [0.4, 0.7, 0.8, 0.9, 1.0]
    q = np.array([0.4, 0.0, 0.3, 0.1, 0.1, 0.1, 1e-20])
    u = np.array([0.1, 0.55, 0.79, 0.999])
    np.testing.assert_array_equal(draw_features_from_q(q, 4, u), [0, 2, 3, 5])
    np.testing.assert_array_equal(draw_features_from_q(q, 2, u), [0, 2])  # first uniforms only
    # fewer support points than requested draws: all of them, once
    np.testing.assert_array_equal(draw_features_from_q(q, 5, u), [0, 2, 3, 4, 5])
    # a CDF ending at 1 − ε never yields an index past the support
    q_eps = np.array([0.3, 0.2, 0.5 - 1e-16, 0.0])
    assert draw_features_from_q(q_eps, 2, np.array([1 - 1e-17, 0.99999999])).max() <= 2
    # i.i.d. draws follow q
    q_big = np.random.default_rng(0).dirichlet(np.ones(10))
    q_big = np.concatenate([q_big, np.full(5000, 0.0)])
    q_big[10:] = 1e-12
    q_big /= q_big.sum()
    draws = draw_features_from_q(q_big, 4000, np.random.default_rng(1).random(4000))
    freq = np.bincount(draws, minlength=q_big.size)[:10] / 4000
    np.testing.assert_allclose(freq, q_big[:10], atol=0.03)


def _toy(m=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 3))
    y = np.where(np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] > 0, 1, -1)
    return X, y


def test_same_candidates_as_eerf_and_constraints_hold():
    X, y = _toy()
    lk = LKRFClassifier(n_features=20, random_state=4).fit(X, y)
    ee = EERFClassifier(n_features=20, random_state=4).fit(X, y)
    n0 = lk.best_params_["n0"]
    np.testing.assert_allclose(lk.scores_, (n0 * ee.scores_) ** 2, rtol=1e-12)
    assert lk.sigma_ == ee.sigma_
    q, n = lk.q_, lk.q_.size
    assert q.min() >= 0 and q.sum() == pytest.approx(1.0)
    assert np.sum((q - 1 / n) ** 2) <= lk.rho_ / n
    assert lk.rho_ in [10.0**k for k in range(-5, 6)]
    assert set(lk.selected_) <= set(np.flatnonzero(q > 0))
    assert lk.score(X, y) > 0.8
    json.dumps(lk.best_params_)


def test_rho_and_lambda_selected_jointly_by_inner_cv():
    X, y = _toy(300)
    rhos, lambdas = (1e-3, 1.0, 100.0), (1e-4, 1e-1)
    est = LKRFRegressor(n_features=15, rhos=rhos, lambdas=lambdas, cv=3, random_state=1)
    est.fit(X, y.astype(float))
    assert est.cv_errors_.shape == (3, 2)
    i, j = np.unravel_index(np.argmin(est.cv_errors_), est.cv_errors_.shape)
    assert est.rho_ == rhos[i] and est.best_params_["lambda"] == lambdas[j]
    # refitting the selected configuration alone gives the same model
    alone = LKRFRegressor(n_features=15, rhos=(rhos[i],), lambdas=(lambdas[j],), cv=3,
                          random_state=1).fit(X, y.astype(float))
    np.testing.assert_allclose(alone.q_, est.q_)


def test_weighted_mode_uses_whole_support_with_sqrt_q_weights():
    X, y = _toy(200)
    est = LKRFClassifier(n_features=10, rhos=(0.5,), lambdas=(1e-3,), mode="weighted",
                         random_state=0).fit(X, y)
    support = np.flatnonzero(est.q_ > np.finfo(float).eps)
    np.testing.assert_array_equal(est.selected_, support)
    p = est.q_[support] / est.q_[support].sum()
    Z = cosine_features(X, est.frequencies_, est.phases_, est.feature_weights_)
    np.testing.assert_allclose(Z, np.sqrt(2 * p) * np.cos(X @ est.frequencies_.T + est.phases_))
    with pytest.raises(ValueError, match="mode"):
        LKRFClassifier(n_features=5, mode="nope").fit(X, y)


@parametrize_with_checks([
    LKRFRegressor(n_features=30, rhos=(1.0,), lambdas=(1e-3,), random_state=0),
    LKRFClassifier(n_features=30, rhos=(1.0,), lambdas=(1e-3,), random_state=0),
])
def test_sklearn_contract(estimator, check):
    check(estimator)
