"""The HGB wrapper (rfbench/methods/hgb.py) is scikit-learn's HistGradientBoosting at its defaults with
early stopping, seeded by the contract's random_state, one fit for every budget."""

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.utils._param_validation import InvalidParameterError

from rfbench.contract import chosen_params, shares_budgets
from rfbench.methods.hgb import HGBClassifier, HGBRegressor


def _problem(m=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=m)
    return X[:200], y[:200], X[200:], y[200:]


def test_regressor_is_sklearns_with_the_same_seed():
    X, y, X_te, _ = _problem()
    folds = [(np.arange(50, 200), np.arange(50))]
    ours = HGBRegressor(n_features=500, budgets=[100, 500], cv=folds, random_state=7, n_jobs=2).fit(X, y)
    theirs = HistGradientBoostingRegressor(early_stopping=True, random_state=7).fit(X, y)
    np.testing.assert_array_equal(ours.predict(X_te), theirs.predict(X_te))
    assert ours.model_.get_params() == theirs.get_params()
    assert ours.best_params_ == {"n_iter": theirs.n_iter_} and theirs.n_iter_ < 100   # early stopping stopped it
    # one fit serves every budget: the same model, the same chosen parameters
    for n in (100, 500):
        np.testing.assert_array_equal(ours.predict(X_te, budget=n), theirs.predict(X_te))
        assert chosen_params(ours, n) == {"n_iter": theirs.n_iter_}
    with pytest.raises(ValueError, match="budget 200 was not fitted"):
        ours.predict(X_te, budget=200)


def test_classifier_is_sklearns_with_the_same_seed():
    X, y, X_te, _ = _problem()
    labels = np.where(y > np.median(y), "hi", "lo")
    ours = HGBClassifier(n_features=100, random_state=3).fit(X, labels)
    theirs = HistGradientBoostingClassifier(early_stopping=True, random_state=3).fit(X, labels)
    np.testing.assert_array_equal(ours.predict(X_te), theirs.predict(X_te))
    np.testing.assert_array_equal(ours.predict_proba(X_te), theirs.predict_proba(X_te))
    assert list(ours.classes_) == ["hi", "lo"] and ours.best_params_ == {"n_iter": theirs.n_iter_}


def test_shares_budgets_and_takes_the_contract():
    assert shares_budgets(HGBRegressor) and shares_budgets(HGBClassifier)
    # a Generator seed becomes an int seed: the same Generator state, the same model
    X, y, X_te, _ = _problem()
    a = HGBRegressor(random_state=np.random.default_rng(1)).fit(X, y)
    b = HGBRegressor(random_state=np.random.default_rng(1)).fit(X, y)
    np.testing.assert_array_equal(a.predict(X_te), b.predict(X_te))
    with pytest.raises(InvalidParameterError):
        HGBRegressor(n_features=0).fit(X, y)
