"""LightGBM baseline: one model per configuration serves every tree budget."""

import lightgbm
import numpy as np
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.lgbm import LGBMClassifierCV, LGBMRegressorCV

SMALL_GRID = {"max_depth": [1, 3], "reg_lambda": [0.0, 0.25]}


def test_budget_prediction_equals_a_model_grown_to_that_budget():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    y = X[:, 0] ** 2 + X[:, 1] + 0.1 * rng.normal(size=300)
    est = LGBMRegressorCV(budgets=[10, 40], grid=SMALL_GRID, cv=3, random_state=0).fit(X, y)
    for n in (10, 40):
        params = est.best_params_per_budget_[n]
        seed = next(iter(est.models_.values())).random_state
        ref = lightgbm.LGBMRegressor(n_estimators=n, max_depth=params["max_depth"],
                                     num_leaves=2 ** params["max_depth"], reg_lambda=params["reg_lambda"],
                                     random_state=seed, n_jobs=1, verbose=-1).fit(X, y)
        np.testing.assert_allclose(est.predict(X, budget=n), ref.predict(X), rtol=1e-10)


def test_deeper_trees_win_on_interactions_and_more_trees_help():
    rng = np.random.default_rng(1)
    X = rng.uniform(-1, 1, size=(1200, 3))
    y = np.sign(X[:, 0] * X[:, 1]) + 0.1 * rng.normal(size=1200)
    est = LGBMRegressorCV(budgets=[5, 100], grid=SMALL_GRID, cv=3, random_state=0).fit(X[:1000], y[:1000])
    assert est.best_params_per_budget_[100]["max_depth"] == 3  # stumps cannot model x0·x1
    err = {n: np.mean((est.predict(X[1000:], budget=n) - y[1000:]) ** 2) for n in (5, 100)}
    assert err[100] < err[5]


def test_classifier_predicts_original_labels():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 2))
    y = np.where(X[:, 0] > 0, "yes", "no")
    est = LGBMClassifierCV(n_features=20, grid=SMALL_GRID, cv=3, random_state=0).fit(X, y)
    assert set(est.predict(X)) <= {"yes", "no"} and np.mean(est.predict(X) == y) > 0.95


@parametrize_with_checks([LGBMRegressorCV(n_features=50, grid={"max_depth": [2], "reg_lambda": [0.0]}, cv=3,
                                          random_state=0),
                          LGBMClassifierCV(n_features=5, grid={"max_depth": [2], "reg_lambda": [0.0]}, cv=3,
                                           random_state=0)])
def test_sklearn_estimator_contract(estimator, check):
    check(estimator)
