"""What the runner asks of an estimator: the whole contract, written down in one place.

Required (scikit-learn's estimator contract): ``fit(X, y)`` returning ``self`` and ``predict(X)``.
The runner passes ``n_features`` (the budget), ``cv`` (the protocol's inner folds),
``random_state`` and ``n_jobs`` to the constructor (see rfbench/methods/common.py for what they
mean). A user estimator that takes fewer, or whose registry entry has a ``grid``, is adapted to
the contract here (:func:`conforming`: the :class:`ForeignEstimator` subclass that wraps it).

Optional, read after ``fit`` when present (a missing one is recorded as empty, never an error):

* ``best_params_``: a JSON-serialisable dict of the hyper-parameters the inner CV selected;
* ``tune_time_``: seconds of ``fit`` spent selecting them (the rest is the final fit);
* ``preprocess_time_``: seconds of data-dependent feature selection (EERF's and LKRF's t_pp).

Budget sharing (:class:`SharesBudgets`): a method whose model for n is a prefix of its model for
a larger n (boosting), or whose model does not depend on n, declares it by inheriting the class;
the runner then builds it once per work item with ``budgets=[all n]`` and ``n_features=max(budgets)``,
and reads ``predict(X, budget=n)`` and ``best_params_per_budget_[n]`` for each budget. A method
whose budget applies only above some training size (KRR/SALSA: exact up to 4 000 rows, Nyström
above) says so by :meth:`SharesBudgets.shares_fit`; where it is False the runner fits each budget
on its own, as for a method that does not share.

Device (:func:`accepts_device`): an estimator whose constructor has a ``device`` parameter (see
rfbench/methods/device.py) is given the run's device (``--device cuda``: "cuda"); any other runs on
the CPU as it is, whatever the run's device.
"""

from __future__ import annotations

import inspect
import json
import time
from functools import lru_cache
from typing import Any, ClassVar, Protocol, runtime_checkable


@runtime_checkable
class Estimator(Protocol):
    """The required part: what every method's estimator class provides."""

    def fit(self, X, y) -> Estimator: ...

    def predict(self, X) -> Any: ...


class SharesBudgets:
    """Mixin of the methods that fit every budget of a work item in one go (see the module notes):
    the constructor takes ``budgets``; after ``fit``, ``predict(X, budget=n)`` and
    ``best_params_per_budget_`` answer for each n in it."""

    shares_budgets: ClassVar[bool] = True

    def shares_fit(self, n_rows: int) -> bool:
        """Whether one fit on ``n_rows`` training rows serves every budget (by default always)."""
        return True


def shares_budgets(cls: type) -> bool:
    """Whether the runner gives this estimator class all budgets of a work item at once."""
    return isinstance(cls, type) and issubclass(cls, SharesBudgets)


def fit_is_shared(est, n_rows: int) -> bool:
    """Whether one fit of this estimator (built with every budget of its work item) on ``n_rows``
    training rows serves them all; else each budget is fitted on its own."""
    return isinstance(est, SharesBudgets) and bool(est.shares_fit(int(n_rows)))


@lru_cache(maxsize=256)
def accepts_device(cls: type) -> bool:
    """Whether the estimator class takes a ``device`` constructor parameter (a named one: ``**kwargs``
    alone does not count), so that the runner may give it the run's device."""
    try:
        params = inspect.signature(cls).parameters
    except (TypeError, ValueError):     # no signature to read (a builtin): the CPU
        return False
    p = params.get("device")
    return p is not None and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)


def tuning_seconds(est) -> float:
    """``tune_time_`` (0 when the estimator does not report it)."""
    return float(getattr(est, "tune_time_", 0.0) or 0.0)


def preprocess_seconds(est) -> float | None:
    """``preprocess_time_`` (None when the estimator has no feature-selection stage)."""
    return getattr(est, "preprocess_time_", None)


def chosen_params(est, n_features: int) -> dict:
    """The hyper-parameters selected for budget ``n_features`` (``best_params_per_budget_`` of a
    budget-sharing estimator, else ``best_params_``; empty when it reports none)."""
    per_budget = getattr(est, "best_params_per_budget_", None) or {}
    return per_budget.get(n_features) or getattr(est, "best_params_", None) or {}


# -- user estimators: the adapter to the contract ------------------------------------------------

#: the constructor arguments the runner passes to every estimator (besides ``budgets`` and ``device``)
CONTRACT = ("n_features", "cv", "random_state", "n_jobs")


def init_params(cls) -> tuple[set, bool]:
    """The constructor's named parameters, and whether it takes **kwargs."""
    try:
        sig = inspect.signature(cls.__init__)
    except (TypeError, ValueError):
        return set(), True
    names = {p.name for p in sig.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"}
    return names, any(p.kind == p.VAR_KEYWORD for p in sig.parameters.values())


def follows_contract(cls) -> bool:
    """Whether the class takes every argument the runner passes (rfbench/methods/common.py)."""
    names, _ = init_params(cls)
    return set(CONTRACT) <= names


def grid_keys(grid) -> set:
    """The constructor parameters a grid (a mapping, or a list of mappings) searches over."""
    grids = grid if isinstance(grid, list) else [grid]
    return {k for g in grids for k in g}


def unknown_arguments(cls, params: dict, grid=None) -> tuple[list[str], set]:
    """(the names of ``params`` and of ``grid`` that the constructor of ``cls`` does not take, sorted;
    the names it takes); none are unknown to a constructor with **kwargs."""
    names, var_kw = init_params(cls)
    if var_kw:
        return [], names
    return sorted((set(params) | (grid_keys(grid) if grid else set())) - names), names


def is_classifier_class(cls: type) -> bool:
    """Whether an estimator class is a classifier (scikit-learn's ClassifierMixin, its estimator type)."""
    from sklearn.base import ClassifierMixin, is_classifier

    if issubclass(cls, ClassifierMixin):
        return True
    try:
        return bool(is_classifier(cls()))
    except Exception:  # noqa: BLE001 - a constructor that needs arguments
        return getattr(cls, "_estimator_type", None) == "classifier"


class ForeignEstimator:
    """Runs any scikit-learn estimator under rfbench's estimator contract.

    Of the runner's arguments, the estimator receives ``n_features``, ``random_state`` and ``n_jobs``
    when its constructor has them. Hyper-parameters: with a ``grid``, a GridSearchCV over the inner
    folds (scoring: mean squared error, or accuracy for classifiers) selects them; else the inner
    folds are passed as ``cv`` when the constructor has a ``cv`` parameter; else the estimator is
    fitted as it is. ``best_params_``: the grid's choice, else the estimator's own ``best_params_``."""

    target: type = None      # set by adapt()
    grid = None

    def __init__(self, n_features=None, cv=None, random_state=None, n_jobs=None, **params):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs
        self.params = params

    def fit(self, X, y):
        names, _ = init_params(self.target)
        kw = dict(self.params)
        for key in ("n_features", "random_state", "n_jobs"):
            if key in names and key not in kw and getattr(self, key) is not None:
                kw[key] = getattr(self, key)
        cv = self.cv if self.cv is None or isinstance(self.cv, int) else list(self.cv)
        t0 = time.perf_counter()
        if self.grid:
            from sklearn.base import is_classifier
            from sklearn.model_selection import GridSearchCV

            est = self.target(**kw)
            search = GridSearchCV(est, self.grid, cv=cv, refit=True, error_score="raise",
                                  scoring="accuracy" if is_classifier(est) else "neg_mean_squared_error")
            search.fit(X, y)
            self.model_ = search.best_estimator_
            self.best_params_ = dict(search.best_params_)
            self.tune_time_ = max(time.perf_counter() - t0 - float(getattr(search, "refit_time_", 0.0)), 0.0)
        else:
            if "cv" in names and "cv" not in kw and cv is not None:
                kw["cv"] = cv
            self.model_ = self.target(**kw)
            self.model_.fit(X, y)
            self.best_params_ = dict(getattr(self.model_, "best_params_", None) or {})
            self.tune_time_ = float(getattr(self.model_, "tune_time_", 0.0) or 0.0)
        return self

    def predict(self, X):
        return self.model_.predict(X)


def adapt(cls: type, grid=None) -> type:
    """The ForeignEstimator subclass that runs ``cls`` (with ``grid``, if any): a new class each call
    (cheap), holding nothing between calls. The grid is copied through JSON (as the registry files
    hold it), so that a search cannot change the registry's entry."""
    grid = json.loads(json.dumps(grid or None, sort_keys=True, default=str))
    return type(f"Foreign{cls.__name__}", (ForeignEstimator,), {"target": cls, "grid": grid, "__module__": __name__})


def conforming(cls: type, grid=None) -> type:
    """``cls`` itself when it follows the contract and no ``grid`` is asked for, else :func:`adapt` of it."""
    return cls if follows_contract(cls) and not grid else adapt(cls, grid)
