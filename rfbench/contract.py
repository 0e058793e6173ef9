"""What the runner asks of an estimator: the whole contract, written down in one place.

Required (scikit-learn's estimator contract): ``fit(X, y)`` returning ``self`` and ``predict(X)``.
The runner passes ``n_features`` (the budget), ``cv`` (the protocol's inner folds),
``random_state`` and ``n_jobs`` to the constructor (see rfbench/methods/common.py for what they
mean; estimators that take fewer are wrapped by ``registry.ForeignEstimator``).

Optional, read after ``fit`` when present (a missing one is recorded as empty, never an error):

* ``best_params_``: a JSON-serialisable dict of the hyper-parameters the inner CV selected;
* ``tune_time_``: seconds of ``fit`` spent selecting them (the rest is the final fit);
* ``preprocess_time_``: seconds of data-dependent feature selection (EERF's and LKRF's t_pp).

Budget sharing (:class:`SharesBudgets`): a method whose model for n is a prefix of its model for
a larger n (boosting) declares it by inheriting the class; the runner then builds it once per
work item with ``budgets=[all n]`` and ``n_features=max(budgets)``, and reads ``predict(X,
budget=n)`` and ``best_params_per_budget_[n]`` for each budget.

Device (:func:`accepts_device`): an estimator whose constructor has a ``device`` parameter (see
rfbench/methods/device.py) is given the run's device (``--device cuda``: "cuda"); any other runs on
the CPU as it is, whatever the run's device.
"""

from __future__ import annotations

import inspect
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


def shares_budgets(cls: type) -> bool:
    """Whether the runner gives this estimator class all budgets of a work item at once."""
    return isinstance(cls, type) and issubclass(cls, SharesBudgets)


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
