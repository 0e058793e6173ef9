"""GFC as the GBRFF paper ran it: objective against a direct computation, gradient against finite
differences, the greedy loop's invariants, behaviour on the paper's toy sets, estimator contract."""

import numpy as np
import pytest
from sklearn.datasets import make_circles, make_moons
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.cvgrad import prepare_splits
from rfbench.methods.gfc_gbrff import GFCGBRFFClassifier, descent, in_sample_objective


def _direct(theta, X, y, f):
    """E(w, λ) written out: ridge in normalised form on [f, sin(Xw), cos(Xw)], in-sample MSE."""
    m = len(y)
    w, gamma = theta[:-1], theta[-1]
    Z = np.column_stack([f, np.sin(X @ w), np.cos(X @ w)])
    c = np.linalg.solve(Z.T @ Z / m + (gamma ** 2 + 1e-10) * np.eye(3), Z.T @ y / m)
    return np.mean((Z @ c - y) ** 2)


def _problem(m=60, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(m) > 0, 1.0, -1.0)
    f = 0.2 * np.tanh(X[:, 1]) + y.mean()
    splits = prepare_splits([(np.arange(m), np.arange(m))], m)
    return rng, X, y, f, splits


def test_objective_is_the_in_sample_error_of_the_normalised_ridge():
    rng, X, y, f, splits = _problem()
    for _ in range(3):
        theta = np.append(rng.standard_normal(3), rng.uniform(0.01, 0.5))
        value, _ = in_sample_objective(theta, X, y, f, splits)
        assert value == pytest.approx(_direct(theta, X, y, f), rel=1e-10)


def test_gradient_matches_central_differences():
    rng, X, y, f, splits = _problem(seed=1)
    for _ in range(3):
        theta = np.append(rng.standard_normal(3), rng.uniform(0.02, 0.3))
        _, grad = in_sample_objective(theta, X, y, f, splits)
        h = 1e-6
        fd = np.array([(_direct(theta + h * e, X, y, f) - _direct(theta - h * e, X, y, f)) / (2 * h)
                       for e in np.eye(theta.size)])
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-9)


def test_descent_lowers_the_in_sample_error_step_by_step():
    # the old estimate is a column of every step's ridge, so with a small λ no step can be much
    # worse than keeping it; on a learnable target the error must fall well below the start
    rng, X, y, _, _ = _problem(m=120, seed=2)
    W, lambdas = descent(X, y, 8, np.random.default_rng(0))
    assert W.shape == (3, 8) and lambdas.shape == (8,) and np.all(lambdas >= 1e-10)
    f = np.full(len(y), y.mean())
    errors = [np.mean((f - y) ** 2)]
    for t in range(8):
        Z = np.column_stack([f, np.sin(X @ W[:, t]), np.cos(X @ W[:, t])])
        c = np.linalg.solve(Z.T @ Z / len(y) + lambdas[t] * np.eye(3), Z.T @ y / len(y))
        f = Z @ c
        errors.append(np.mean((f - y) ** 2))
    assert np.all(np.diff(errors) <= 1e-3 * errors[0])
    assert errors[-1] < 0.5 * errors[0]


@pytest.mark.parametrize("make", [make_moons, make_circles])
@pytest.mark.slow
def test_separates_the_toy_sets(make):
    kwargs = {"noise": 0.1, "random_state": 0} | ({"factor": 0.5} if make is make_circles else {})
    X, y = make(n_samples=300, **kwargs)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = GFCGBRFFClassifier(n_features=15, cv=3, random_state=0).fit(X_tr, y_tr)
    assert clf.score(X_te, y_te) >= 0.95
    assert clf.best_params_["C"] == clf.C_grid[int(np.argmin(clf.cv_errors_))]
    assert clf.frequencies_.shape == (2, 15)


@pytest.mark.slow
def test_labels_are_returned_as_given_and_parallel_folds_change_nothing():
    X, y01 = make_moons(n_samples=120, noise=0.2, random_state=1)
    y = np.where(y01 == 1, "yes", "no")
    a = GFCGBRFFClassifier(n_features=5, cv=3, random_state=3).fit(X, y)
    b = GFCGBRFFClassifier(n_features=5, cv=3, random_state=3, n_jobs=2).fit(X, y)
    assert set(a.predict(X)) <= {"yes", "no"}
    np.testing.assert_array_equal(a.cv_errors_, b.cv_errors_)
    np.testing.assert_allclose(a.frequencies_, b.frequencies_)


def test_more_than_two_classes_is_refused():
    X = np.random.default_rng(0).standard_normal((30, 2))
    with pytest.raises(ValueError, match="binary"):
        GFCGBRFFClassifier(n_features=2, cv=2).fit(X, np.arange(30) % 3)


@parametrize_with_checks([GFCGBRFFClassifier(n_features=3, C_grid=(1.0, 10.0), cv=2, random_state=0)])
@pytest.mark.slow
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
