"""scikit-learn's histogram gradient boosting (HistGradientBoostingRegressor / -Classifier) under
rfbench's estimator contract: a thin wrapper, the estimator at its defaults with early stopping on.

What the runner passes, and what becomes of it:

* ``n_features`` / ``budgets``: HGB has no feature budget (its number of trees is set by early
  stopping), so both are accepted and ignored. The wrapper shares budgets
  (:class:`rfbench.contract.SharesBudgets`): one fit serves every budget of a work item, and
  ``predict(X, budget=n)`` is the same model for each n (fitted budgets only).
* ``cv``: ignored. HGB chooses its own number of iterations by early stopping
  (``early_stopping=True``: 10 % of the training rows held out, ``validation_fraction=0.1``, stratified
  for classifiers, stopping after 10 iterations without improvement of the loss by 1e-7); nothing else
  is tuned. ``tune_time_`` is 0: the early stopping is part of the one fit.
* ``random_state``: passed to HGB as it is when it is an int or None (the runner's seeds are ints), so
  the model is that of ``HistGradientBoostingRegressor(early_stopping=True, random_state=seed)``;
  a numpy Generator is turned into an int seed first.
* ``n_jobs``: ignored: HGB's OpenMP threads follow the runner's thread limits.

``best_params_``: ``{"n_iter": the boosting iterations early stopping kept}``.
"""

from __future__ import annotations

from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
from sklearn.utils.validation import check_is_fitted

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import library_seed


class _HGB(SharesBudgets, BaseEstimator):
    _model_class: type = HistGradientBoostingRegressor

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int(), None],
        "budgets": ["array-like", None],
        "cv": [*cons.CV, None],
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
    }

    def __init__(self, n_features=None, budgets=None, cv=None, random_state=None, n_jobs=None):
        self.n_features = n_features
        self.budgets = budgets
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        self.model_ = self._model_class(early_stopping=True, random_state=library_seed(self.random_state)).fit(X, y)
        self.n_features_in_ = self.model_.n_features_in_
        if hasattr(self.model_, "classes_"):
            self.classes_ = self.model_.classes_
        budgets = sorted({int(b) for b in self.budgets}) if self.budgets is not None else (
            [int(self.n_features)] if self.n_features is not None else [])
        self.budgets_ = budgets
        self.best_params_ = {"n_iter": int(self.model_.n_iter_)}
        self.best_params_per_budget_ = {n: dict(self.best_params_) for n in budgets}
        self.tune_time_ = 0.0
        return self

    def _model(self, budget):
        check_is_fitted(self, "model_")
        if budget is not None and int(budget) not in self.budgets_:
            raise ValueError(f"budget {int(budget)} was not fitted; fitted budgets: {self.budgets_}")
        return self.model_

    def predict(self, X, budget=None):
        return self._model(budget).predict(X)


class HGBRegressor(RegressorMixin, _HGB):
    """HistGradientBoostingRegressor (squared error), defaults, early stopping on; see the module notes."""

    _model_class = HistGradientBoostingRegressor


class HGBClassifier(ClassifierMixin, _HGB):
    """HistGradientBoostingClassifier (log loss), defaults, early stopping on; see the module notes."""

    _model_class = HistGradientBoostingClassifier

    def predict_proba(self, X, budget=None):
        return self._model(budget).predict_proba(X)

    def decision_function(self, X, budget=None):
        return self._model(budget).decision_function(X)

