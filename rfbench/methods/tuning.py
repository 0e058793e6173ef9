"""Generic inner-CV grid search for methods that have no faster selection path."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Mapping, Sequence

import numpy as np


def param_grid(grid: Mapping[str, Sequence]) -> list[dict]:
    """All combinations of a dict of value lists, in a deterministic order."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


def grid_search_cv(build: Callable[..., object], grid: Mapping[str, Sequence], X: np.ndarray,
                   y: np.ndarray, splits, error: Callable[[np.ndarray, np.ndarray], float]):
    """Select the combination with the lowest mean validation error.

    ``build(**params)`` returns an unfitted estimator; ``error(y_true, y_pred)`` is lower-is-better.
    Returns ``(best_params, best_error, errors)`` where ``errors[i]`` is the mean error of
    ``param_grid(grid)[i]``. Ties go to the first combination in grid order.
    """
    combos = param_grid(grid)
    errors = np.empty(len(combos))
    for i, params in enumerate(combos):
        fold_errors = []
        for tr, va in splits:
            est = build(**params).fit(X[tr], y[tr])
            fold_errors.append(error(y[va], est.predict(X[va])))
        errors[i] = float(np.mean(fold_errors))
    best = int(np.argmin(errors))
    return combos[best], float(errors[best]), errors


def mse(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(np.mean((np.asarray(y_true, float) - np.asarray(y_pred, float)) ** 2))


def misclassification(y_true: np.ndarray, y_pred: np.ndarray) -> float:
    return float(np.mean(np.asarray(y_true) != np.asarray(y_pred)))


class Stopwatch:
    """Accumulates elapsed seconds of ``with`` blocks (used for ``tune_time_``)."""

    def __init__(self):
        self.total = 0.0

    def __enter__(self):
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.total += time.perf_counter() - self._t0
        return False
