"""LightGBM baseline: one model per configuration serves every tree budget."""

import lightgbm
import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.common import as_generator, resolve_cv, seed_from
from rfbench.methods.lgbm import LGBMClassifierCV, LGBMRegressorCV
from rfbench.methods.tuning import param_grid

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


EXACT_GRID = {"max_depth": [1, 3, 6], "reg_lambda": [0.0, 0.25]}


def _wrapper_cv(est, X, y):
    """The inner CV as it was: one scikit-learn-wrapper fit per (combination, inner fold), each
    binning its training rows itself. Returns the (combination × budget) errors of every fold."""
    rng = as_generator(est.random_state)
    seed = seed_from(rng)
    budgets, combos = sorted(est.budgets), param_grid(est.grid)
    cls = lightgbm.LGBMClassifier if isinstance(est, LGBMClassifierCV) else lightgbm.LGBMRegressor
    folds = []
    for tr, va in resolve_cv(est.cv, len(y), rng):
        err = np.empty((len(combos), len(budgets)))
        for i, p in enumerate(combos):
            model = cls(n_estimators=budgets[-1], max_depth=p["max_depth"], num_leaves=2 ** p["max_depth"],
                        reg_lambda=p["reg_lambda"], random_state=seed, n_jobs=1, verbose=-1).fit(X[tr], y[tr])
            for j, n in enumerate(budgets):
                pred = model.predict(X[va], num_iteration=n)
                err[i, j] = np.mean(pred != y[va]) if cls is lightgbm.LGBMClassifier else np.mean((pred - y[va]) ** 2)
        folds.append((tr, va, err))
    return seed, combos, budgets, folds


def _exact_data(task):
    # continuous features (~400 distinct values each, over LightGBM's 255 bins): the trees depend on the binning
    rng = np.random.default_rng(7)
    X = rng.normal(size=(400, 4))
    f = X[:, 0] * X[:, 1] + np.sin(2 * X[:, 2]) + 0.5 * rng.normal(size=400)
    if task == "regression":
        return X, f
    if task == "binary":
        return X, np.where(f > 0, "yes", "no")
    return X, np.digitize(f, [-0.5, 0.5]) * 10 - 7  # three classes, unsorted codes -7, 3, 13


@pytest.mark.parametrize("task", ["regression", "binary", "multiclass"])
def test_inner_cv_on_one_dataset_per_fold_equals_the_wrapper_fits_bit_for_bit(task):
    """Every inner-fold error, the chosen combinations with their CV errors and the test predictions
    equal those of the old loop over scikit-learn-wrapper fits exactly (no tolerance)."""
    X, y = _exact_data(task)
    cls = LGBMRegressorCV if task == "regression" else LGBMClassifierCV
    est = cls(budgets=[5, 40], grid=EXACT_GRID, cv=3, random_state=3).fit(X[:300], y[:300])
    seed, combos, budgets, folds = _wrapper_cv(est, X[:300], y[:300])
    total = np.zeros((len(combos), len(budgets)))
    for tr, va, ref in folds:
        np.testing.assert_array_equal(est._fold_errors(combos, budgets, seed, X[tr], y[tr], X[va], y[va]), ref)
        total += ref / len(folds)
    best = total.argmin(axis=0)
    assert est.best_params_per_budget_ == {n: dict(combos[b], cv_error=float(total[b, j]))
                                           for j, (n, b) in enumerate(zip(budgets, best, strict=True))}
    for j, n in enumerate(budgets):
        p = combos[best[j]]
        ref_cls = lightgbm.LGBMRegressor if task == "regression" else lightgbm.LGBMClassifier
        ref = ref_cls(n_estimators=n, max_depth=p["max_depth"], num_leaves=2 ** p["max_depth"], reg_lambda=p["reg_lambda"],
                      random_state=seed, n_jobs=1, verbose=-1).fit(X[:300], y[:300])
        np.testing.assert_array_equal(est.predict(X[300:], budget=n), ref.predict(X[300:]))


def test_the_exactness_data_would_show_another_binning():
    """On the data of the test above a Dataset binned otherwise (max_bin, min_data_in_bin) trains other
    trees, so that test fails if the shared Dataset's binning differed from the wrapper's."""
    X, y = _exact_data("regression")
    params = {"objective": "regression", "max_depth": 3, "num_leaves": 8, "random_state": 1, "n_jobs": 1, "verbose": -1}
    pred = {}
    for name, binning in {"default": {}, "max_bin": {"max_bin": 63}, "min_data_in_bin": {"min_data_in_bin": 10}}.items():
        data = lightgbm.Dataset(X[:300], y[:300], params={**params, **binning})
        pred[name] = lightgbm.train({**params, **binning}, data, num_boost_round=20).predict(X[300:])
    assert not np.array_equal(pred["default"], pred["max_bin"])
    assert not np.array_equal(pred["default"], pred["min_data_in_bin"])


def test_inner_cv_bins_with_the_wrappers_seed_where_binning_samples_rows():
    """Past bin_construct_sample_cnt (200 000) rows LightGBM bins a sample drawn with the seed, and a
    seed given only at training time does not re-bin a constructed Dataset: the shared Dataset must
    get the wrapper's seed itself. Inner folds of 225 000 rows, errors equal exactly."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(450_000, 1))
    y = X[:, 0] + rng.normal(size=450_000)
    est = LGBMRegressorCV(budgets=[3], grid={"max_depth": [1], "reg_lambda": [0.0]}, cv=2, random_state=0).fit(X, y)
    seed, combos, budgets, folds = _wrapper_cv(est, X, y)
    for tr, va, ref in folds:
        np.testing.assert_array_equal(est._fold_errors(combos, budgets, seed, X[tr], y[tr], X[va], y[va]), ref)
    other = est._fold_errors(combos, budgets, seed + 1, X[tr], y[tr], X[va], y[va])  # another seed, other bins
    assert not np.array_equal(other, ref)


def test_a_training_parameter_that_would_rebin_the_shared_dataset_raises():
    """The shared Dataset frees its raw data: a binning parameter given only at training time cannot
    silently re-bin it (LightGBM raises), so every combination trains on the same bins."""
    X, y = _exact_data("regression")
    data = lightgbm.Dataset(X, y, params={"random_state": 1, "verbose": -1}).construct()
    lightgbm.train({"random_state": 1, "verbose": -1, "max_depth": 2, "num_leaves": 4}, data, num_boost_round=2)
    for rebin in ({"max_bin": 63}, {"min_data_in_bin": 10}, {"min_data_in_leaf": 5}):
        with pytest.raises(lightgbm.basic.LightGBMError):
            lightgbm.train({"random_state": 1, "verbose": -1, **rebin}, data, num_boost_round=2)


@parametrize_with_checks([LGBMRegressorCV(n_features=50, grid={"max_depth": [2], "reg_lambda": [0.0]}, cv=3,
                                          random_state=0),
                          LGBMClassifierCV(n_features=5, grid={"max_depth": [2], "reg_lambda": [0.0]}, cv=3,
                                           random_state=0)])
def test_sklearn_estimator_contract(estimator, check):
    check(estimator)
