"""LightGBM baseline with the GBRFF paper's grid (method-notes §8).

n_estimators = n_features (number of trees), max_depth ∈ {1..10} with num_leaves = 2^max_depth,
reg_lambda ∈ {0, 2⁻⁵, 2⁻⁴, 2⁻³, 2⁻²}; everything else at LightGBM defaults. The 50 combinations
are compared by inner CV.

Several tree budgets share one model per (combination, inner fold): boosting is sequential, so the
model with max(budgets) trees evaluated with ``num_iteration=n`` *is* the model with n trees. Pass
``budgets=[100, 500]`` and read ``best_params_per_budget_`` / ``predict(X, budget=n)``.

The inner CV bins each inner fold's training rows once (one ``lightgbm.Dataset``) and trains all 50
combinations on it with ``lightgbm.train``: the scikit-learn wrapper would re-bin them for every fit.
The binning depends only on the data, the seed and dataset parameters left at their defaults here, so
the boosters, and the errors, are bit for bit those of the wrapper's fits (tests/methods/test_lgbm.py).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv, seed_from
from rfbench.methods.tuning import Stopwatch, param_grid

DEFAULT_GRID = {"max_depth": list(range(1, 11)), "reg_lambda": [0.0, 2**-5, 2**-4, 2**-3, 2**-2]}


class _LGBMCV(SharesBudgets, BaseEstimator):
    _objective = "regression"
    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "budgets": ["array-like", None],
        "grid": [dict, None],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
    }

    def __init__(self, n_features=100, budgets=None, grid=None, cv=5, random_state=None, n_jobs=1):
        self.n_features = n_features
        self.budgets = budgets
        self.grid = grid
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs

    # LightGBM parameters under the scikit-learn wrapper's keyword names, which lightgbm.train takes as
    # documented aliases (random_state = seed, n_jobs = num_threads, reg_lambda = lambda_l2); the
    # wrapper's other keywords default to LightGBM's own defaults
    def _fixed(self, seed: int) -> dict:
        return {"random_state": seed, "n_jobs": self._threads, "verbose": -1}

    def _params(self, params: dict, seed: int) -> dict:
        return {"max_depth": params["max_depth"], "num_leaves": 2 ** params["max_depth"],
                "reg_lambda": params["reg_lambda"], **self._fixed(seed)}

    def _model(self, params: dict, n_trees: int, seed: int):
        import lightgbm

        cls = lightgbm.LGBMRegressor if self._objective == "regression" else lightgbm.LGBMClassifier
        return cls(n_estimators=n_trees, **self._params(params, seed))

    def _fold_errors(self, combos, budgets, seed, X_tr, y_tr, X_va, y_va) -> np.ndarray:
        """Validation errors (combination × budget) of one inner fold, as the wrapper's
        ``fit(X_tr, y_tr).predict(X_va, num_iteration=n)`` gives them, from one binned Dataset."""
        import lightgbm

        if self._objective == "regression":
            label, objective = y_tr, {"objective": "regression"}
        else:  # the wrapper's label encoding (sorted classes of the fold) and its choice of objective
            classes, label = np.unique(y_tr, return_inverse=True)
            objective = ({"objective": "multiclass", "num_class": len(classes)} if len(classes) > 2
                         else {"objective": "binary"})
        # raw data freed: a later parameter that would change the binning raises instead of re-binning
        data = lightgbm.Dataset(X_tr, label, params={**objective, **self._fixed(seed)}).construct()
        out = np.empty((len(combos), len(budgets)))
        for i, params in enumerate(combos):
            # keep_training_booster: predict with the trees as grown, skipping the copy through the
            # model text that train() otherwise makes (the text keeps every double exactly)
            booster = lightgbm.train({**self._params(params, seed), **objective}, data, num_boost_round=budgets[-1],
                                     keep_training_booster=True)
            for j, n in enumerate(budgets):
                pred = booster.predict(X_va, num_iteration=n)
                if self._objective == "regression":
                    out[i, j] = np.mean((pred - y_va) ** 2)
                else:  # LGBMClassifier.predict: argmax over the class probabilities (ties: first class)
                    proba = pred if pred.ndim == 2 else np.vstack((1.0 - pred, pred)).transpose()
                    out[i, j] = np.mean(classes[np.argmax(proba, axis=1)] != y_va)
        return out

    def _fit(self, X, y):
        rng = as_generator(self.random_state)
        seed = seed_from(rng)
        # LightGBM's OpenMP threads spin-wait: on small data (or a busy machine) two threads are
        # several times slower than one (measured 6x on 400 rows), so extra threads only from 20k rows
        self._threads = int(self.n_jobs or 1) if X.shape[0] >= 20000 else 1
        budgets = sorted({int(b) for b in (self.budgets or [self.n_features])})
        combos = param_grid(self.grid or DEFAULT_GRID)
        splits = resolve_cv(self.cv, X.shape[0], rng)
        clock = Stopwatch()
        with clock:
            errors = np.zeros((len(combos), len(budgets)))
            for tr, va in splits:  # every combination's sum over the folds in fold order, as before
                errors += self._fold_errors(combos, budgets, seed, X[tr], y[tr], X[va], y[va]) / len(splits)
        best = errors.argmin(axis=0)  # first combination wins ties (grid order)
        self.best_params_per_budget_ = {n: dict(combos[b], cv_error=float(errors[b, j]))
                                        for j, (n, b) in enumerate(zip(budgets, best, strict=True))}
        # one final model per distinct winning combination, grown to the largest budget using it
        self.models_ = {}
        for b in set(best.tolist()):
            n_max = max(n for n, bb in zip(budgets, best, strict=True) if bb == b)
            self.models_[b] = self._model(combos[b], n_max, seed).fit(X, y)
        self.budget_model_ = {n: int(b) for n, b in zip(budgets, best, strict=True)}
        self.budgets_ = budgets
        self.best_params_ = self.best_params_per_budget_[budgets[-1]]
        self.tune_time_ = clock.total
        return self

    def _predict(self, X, budget=None):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        n = self.budgets_[-1] if budget is None else int(budget)
        if n not in self.budget_model_:
            raise ValueError(f"budget {n} was not fitted; fitted budgets: {self.budgets_}")
        return self.models_[self.budget_model_[n]].predict(X, num_iteration=n)


class LGBMRegressorCV(RegressorMixin, _LGBMCV):
    """LightGBM regression (L2 objective) tuned on the GBRFF grid."""

    _objective = "regression"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64)
        return self._fit(X, y)

    def predict(self, X, budget=None):
        return self._predict(X, budget)


class LGBMClassifierCV(ClassifierMixin, _LGBMCV):
    """LightGBM binary classifier tuned on the GBRFF grid (accuracy)."""

    _objective = "binary"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        return self._fit(X, y)

    def predict(self, X, budget=None):
        return self._predict(X, budget)

