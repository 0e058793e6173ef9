"""Small helpers of the methods' hyper-parameter selection: a parameter grid in a fixed order, the
two losses (squared error, misclassification) and a stopwatch for ``tune_time_``."""

from __future__ import annotations

import itertools
import time
from collections.abc import Mapping, Sequence

import numpy as np


def param_grid(grid: Mapping[str, Sequence]) -> list[dict]:
    """All combinations of a dict of value lists, in a deterministic order."""
    keys = list(grid)
    return [dict(zip(keys, values, strict=True)) for values in itertools.product(*(grid[k] for k in keys))]


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
