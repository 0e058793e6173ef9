"""The fast ridge path against scikit-learn's Ridge (the naive reference)."""

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.model_selection import KFold

from rfbench.methods.ridge import cv_mse_path, ridge_solve, select_lambda


@pytest.fixture
def problem():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(150, 20))
    y = Z @ rng.normal(size=20) + 2.0 + 0.5 * rng.normal(size=150)
    return Z, y


def test_ridge_solve_matches_sklearn(problem):
    Z, y = problem
    for lam in (1e-6, 1e-2, 1.0):
        coef, intercept = ridge_solve(Z, y, lam)
        ref = Ridge(alpha=len(y) * lam).fit(Z, y)
        np.testing.assert_allclose(coef, ref.coef_, atol=1e-10)
        assert intercept == pytest.approx(ref.intercept_, abs=1e-10)


@pytest.mark.parametrize("inverted", [False, True])
def test_cv_path_matches_refitting_every_fold(problem, inverted):
    Z, y = problem
    splits = list(KFold(5, shuffle=True, random_state=1).split(Z))
    if inverted:  # GFC's split: train on one fold, validate on the rest
        splits = [(va, tr) for tr, va in splits]
    lambdas = np.array([1e-8, 1e-3, 0.1, 10.0])
    fast = cv_mse_path(Z, y, splits, lambdas)
    for k, (tr, va) in enumerate(splits):
        for j, lam in enumerate(lambdas):
            ref = Ridge(alpha=len(tr) * lam).fit(Z[tr], y[tr])
            assert fast[k, j] == pytest.approx(np.mean((ref.predict(Z[va]) - y[va]) ** 2), rel=1e-8)


def test_select_lambda_prefers_regularisation_on_pure_noise():
    rng = np.random.default_rng(3)
    Z, y = rng.normal(size=(100, 60)), rng.normal(size=100)
    splits = list(KFold(5, shuffle=True, random_state=0).split(Z))
    lam, _, curve = select_lambda(Z, y, splits, np.logspace(-6, 3, 10))
    assert lam >= 1.0 and curve[0] > curve.min()


def test_cv_path_with_training_parts_that_do_not_cover_the_rows(problem):
    Z, y = problem
    rng = np.random.default_rng(4)
    perm = rng.permutation(len(y))
    splits = [(perm[:60], perm[60:90]), (perm[90:140], perm[:30])]  # 30 + 60 rows left out of each
    lambdas = np.array([1e-4, 1.0])
    fast = cv_mse_path(Z, y, splits, lambdas)
    for k, (tr, va) in enumerate(splits):
        for j, lam in enumerate(lambdas):
            ref = Ridge(alpha=len(tr) * lam).fit(Z[tr], y[tr])
            assert fast[k, j] == pytest.approx(np.mean((ref.predict(Z[va]) - y[va]) ** 2), rel=1e-8)
