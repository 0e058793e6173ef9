"""EERF: score, selection, σ rule, λ selection, estimator contract."""

import json

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.common import resolve_cv
from rfbench.methods.eerf import (
    EERFClassifier,
    EERFRegressor,
    candidate_sizes,
    cosine_features,
    draw_candidate_pool,
    empirical_scores,
    top_k_by_magnitude,
)
from rfbench.methods.rfkit import knn_bandwidth
from rfbench.methods.ridge import ridge_solve


def _toy(m=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.cos(2.0 * X[:, 0]) + 0.5 * np.sin(X[:, 1]) + 0.05 * rng.standard_normal(m)
    return X, y


def test_score_equals_naive_loop():
    rng = np.random.default_rng(1)
    X0, y0 = rng.standard_normal((7, 3)), rng.standard_normal(7)
    W, b = rng.standard_normal((5, 3)), rng.uniform(0, 2 * np.pi, 5)
    naive = np.zeros(5)
    for m in range(5):
        for n in range(7):
            naive[m] += y0[n] * np.cos(sum(W[m, j] * X0[n, j] for j in range(3)) + b[m])
        naive[m] /= 7
    np.testing.assert_allclose(empirical_scores(X0, y0, W, b), naive, rtol=1e-12, atol=1e-14)
    # block boundaries do not change anything
    np.testing.assert_allclose(empirical_scores(X0, y0, W, b, block=2), naive, rtol=1e-12, atol=1e-14)


def test_top_k_largest_magnitude_and_deterministic_ties():
    scores = np.array([1.0, -3.0, 3.0, 2.0, -3.0, 0.5, 3.0])
    assert list(top_k_by_magnitude(scores, 2)) == [1, 2]  # three tied at |3|: lowest indices
    assert list(top_k_by_magnitude(scores, 4)) == [1, 2, 4, 6]
    assert list(top_k_by_magnitude(scores, 5)) == [1, 2, 4, 6, 3]
    assert list(top_k_by_magnitude(scores, 10)) == [1, 2, 4, 6, 3, 0, 5]
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = rng.integers(-4, 5, size=50).astype(float)  # many ties
        k = int(rng.integers(1, 50))
        ref = np.lexsort((np.arange(50), -np.abs(s)))[:k]  # full sort reference
        np.testing.assert_array_equal(top_k_by_magnitude(s, k), ref)


def test_sigma_is_mean_distance_to_50th_neighbour():
    X = np.random.default_rng(2).standard_normal((120, 4))
    D = np.sort(cdist(X, X), axis=1)  # column 0 is the point itself
    assert knn_bandwidth(X) == pytest.approx(D[:, 50].mean(), rel=1e-12)
    assert knn_bandwidth(X[:30]) == pytest.approx(np.sort(cdist(X[:30], X[:30]), axis=1)[:, -1].mean())
    # subsampled queries: an estimate of the same quantity
    est = knn_bandwidth(X, n_query=60, rng=np.random.default_rng(0))
    assert abs(est - D[:, 50].mean()) < 0.1 * D[:, 50].mean()


def test_fit_keeps_top_scoring_candidates_of_the_pool():
    X, y = _toy()
    est = EERFRegressor(n_features=20, m0_factor=8, n0_fraction=0.2, random_state=3).fit(X, y)
    assert est.scores_.shape == (160,)
    kept = np.abs(est.scores_[est.selected_])
    rest = np.delete(np.abs(est.scores_), est.selected_)
    assert kept.min() >= rest.max()
    # the scores are those of the pool drawn with the same generator state, on its N₀ subsample,
    # with the responses mapped to [−1, 1] by their range (the paper's preprocessing)
    m0, n0 = candidate_sizes(20, 300, 8, 0.2)
    pool = draw_candidate_pool(X, m0, n0, np.random.default_rng(3))
    y_pm = 2 * (y - y.min()) / (y.max() - y.min()) - 1
    np.testing.assert_allclose(est.scores_, empirical_scores(X[pool.subsample], y_pm[pool.subsample],
                                                             pool.frequencies, pool.phases))
    np.testing.assert_array_equal(est.frequencies_, pool.frequencies[est.selected_])
    assert est.sigma_ == pytest.approx(knn_bandwidth(X))
    assert est.best_params_["m0"] == 160 and est.best_params_["n0"] == 60


def test_lambda_selected_by_inner_cv_brute_force():
    X, y = _toy(200)
    lambdas = (1e-4, 1e-2, 1.0)
    est = EERFRegressor(n_features=15, lambdas=lambdas, cv=4, random_state=0).fit(X, y)
    # rebuild the same splits: the generator is consumed by the pool first, then by resolve_cv
    rng = np.random.default_rng(0)
    draw_candidate_pool(X, *candidate_sizes(15, 200, 10, 0.1), rng)
    splits = resolve_cv(4, 200, rng)
    Z = cosine_features(X, est.frequencies_, est.phases_)
    cv = []
    for lam in lambdas:
        errs = []
        for tr, va in splits:
            c, c0 = ridge_solve(Z[tr], y[tr], lam)
            errs.append(np.mean((Z[va] @ c + c0 - y[va]) ** 2))
        cv.append(np.mean(errs))
    np.testing.assert_allclose(est.cv_errors_, cv, rtol=1e-6)
    assert est.best_params_["lambda"] == lambdas[int(np.argmin(cv))]
    c, c0 = ridge_solve(Z, y, est.best_params_["lambda"])
    np.testing.assert_allclose(est.predict(X), Z @ c + c0, rtol=1e-8, atol=1e-10)


def test_eerf_beats_unselected_features():
    """With few features, the top-|Ŝ| candidates fit a cosine target far better than the first n."""
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, size=(600, 2))  # σ ≈ 1, so ω ≈ (±1, 0) is well inside P₀
    y = np.cos(X[:, 0]) + 0.05 * rng.standard_normal(600)
    Xte = rng.uniform(-3, 3, size=(600, 2))
    yte = np.cos(Xte[:, 0])
    gains = []
    for seed in range(3):
        est = EERFRegressor(n_features=8, m0_factor=20, n0_fraction=0.5, random_state=seed).fit(X, y)
        eerf_mse = np.mean((est.predict(Xte) - yte) ** 2)
        plain = EERFRegressor(n_features=8, m0_factor=1, n0_fraction=0.5, random_state=seed).fit(X, y)
        gains.append(np.mean((plain.predict(Xte) - yte) ** 2) / eerf_mse)
    assert np.median(gains) > 5.0


def test_classifier_labels_and_bookkeeping():
    X, y = _toy()
    labels = np.where(y > np.median(y), "high", "low")
    clf = EERFClassifier(n_features=30, random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["high", "low"]
    pred = clf.predict(X)
    assert set(pred) <= {"high", "low"}
    assert np.mean(pred == labels) > 0.8
    # "high" < "low": "high" is the −1 class, score ≥ 0 → "low"
    np.testing.assert_array_equal(pred == "low", clf.decision_function(X) >= 0)
    assert clf.tune_time_ >= 0 and clf.preprocess_time_ >= 0
    json.dumps(clf.best_params_)
    # more than two classes: one-vs-rest, the largest score (tests/experiments/test_eerf_tables.py); one class: refused
    assert EERFClassifier(n_features=5).fit(X, np.arange(300) % 3).decision_function(X).shape == (300, 3)
    with pytest.raises(ValueError, match="at least 2 classes"):
        EERFClassifier(n_features=5).fit(X, np.zeros(300))


def test_invalid_parameters():
    X, y = _toy(50)
    with pytest.raises(ValueError, match="m0_factor"):
        EERFRegressor(n_features=5, m0_factor=0.5).fit(X, y)
    with pytest.raises(ValueError, match="n0_fraction"):
        EERFRegressor(n_features=5, n0_fraction=0).fit(X, y)
    with pytest.raises(ValueError, match="lambdas"):
        EERFRegressor(n_features=5, lambdas=(-1.0,)).fit(X, y)


@parametrize_with_checks([
    EERFRegressor(n_features=30, lambdas=(1e-3,), random_state=0),
    EERFClassifier(n_features=30, lambdas=(1e-3,), random_state=0),
])
def test_sklearn_contract(estimator, check):
    check(estimator)


def test_regression_selection_does_not_depend_on_the_unit_or_offset_of_y():
    """The score sees y mapped to [−1, 1] (the paper's preprocessing): an affine change of y keeps
    the selected features, and the predictions follow the change."""
    from rfbench.methods.eerf import EERFRegressor

    rng = np.random.default_rng(12)
    X = rng.normal(size=(400, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=400)
    a = EERFRegressor(n_features=20, random_state=0).fit(X, y)
    b = EERFRegressor(n_features=20, random_state=0).fit(X, 0.1 * y + 0.5)
    np.testing.assert_array_equal(a.selected_, b.selected_)
    np.testing.assert_allclose(b.predict(X), 0.1 * a.predict(X) + 0.5, rtol=1e-6, atol=1e-8)
