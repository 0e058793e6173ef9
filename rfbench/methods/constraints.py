"""The parameter constraints shared by the estimators' ``_parameter_constraints`` (scikit-learn's
declarative validation, :mod:`sklearn.utils._param_validation`).

Every estimator in ``rfbench.methods`` declares the valid type and range of each constructor
parameter in ``_parameter_constraints`` and checks them at the start of ``fit`` (the
``_fit_context`` decorator, as scikit-learn's own estimators do): a bad value is one
``InvalidParameterError`` (a ValueError) naming the parameter, the estimator, what is valid and
what it got, before any data is looked at; ``check_estimator``'s ``check_param_validation`` tests
every declaration. What constraints cannot say stays explicit in ``fit``: the values inside a list
(:func:`positive_values`) and relations between parameters or with the data (n_candidates ≥
n_features, lo < hi of a bounds pair, folds ≤ rows).

scikit-learn accepts its own constraint classes only, so the four here subclass them:

* :class:`Int`: an interval of the integers that refuses bools (``True`` is not a feature count);
* :class:`Choices`: a set of strings, named in a fixed order in the message;
* :class:`Device`: the values of ``device``, decided by :func:`rfbench.methods.device.check_device`
  (the one definition: "cpu", "cuda", "torch-cpu" and "cuda:K");
* :class:`Splits`: an iterable of (train, test) index pairs, the other form of ``cv``.
"""

from __future__ import annotations

from collections.abc import Iterable
from numbers import Integral, Real

import numpy as np
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

from rfbench.methods.device import DEVICES, check_device


class Int(Interval):
    """``Interval(Integral, left, right, closed=...)`` without the bools."""

    def __init__(self, left, right, *, closed):
        super().__init__(Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


class Choices(StrOptions):
    """``StrOptions`` whose message lists the options in the order given: a set's order changes from
    one process to the next (string hashing), and a one-line error should read the same every time."""

    def __init__(self, *options: str):
        super().__init__(set(options))
        self.ordered = options

    def __str__(self):
        return f"a str among {{{', '.join(repr(o) for o in self.ordered)}}}"


class Device(StrOptions):
    """The valid values of an estimator's ``device``: what ``check_device`` accepts."""

    def __init__(self):
        super().__init__(set(DEVICES))

    def is_satisfied_by(self, val):
        try:
            check_device(val)
        except ValueError:
            return False
        return True

    def __str__(self):
        return f"one of {', '.join(DEVICES)} (or cuda:K)"


class Splits(HasMethods):
    """An iterable (not a string) of (train, test) index pairs: the inner folds given as they are."""

    def __init__(self):
        super().__init__("__iter__")

    def is_satisfied_by(self, val):
        return isinstance(val, Iterable) and not isinstance(val, str)

    def __str__(self):
        return "an iterable of (train, test) index pairs"


def positive_int() -> Int:
    return Int(1, None, closed="left")


def non_negative_int() -> Int:
    return Int(0, None, closed="left")


def positive_real() -> Interval:
    return Interval(Real, 0, None, closed="neither")


def non_negative_real() -> Interval:
    return Interval(Real, 0, None, closed="left")


#: ``cv`` (rfbench.methods.common.resolve_cv): k ≥ 2 shuffled folds, or the folds themselves
CV = [Int(2, None, closed="left"), Splits()]
#: ``random_state`` (rfbench.methods.common.as_generator): scikit-learn's, or a numpy Generator
RANDOM_STATE = ["random_state", np.random.Generator]
#: ``n_jobs``: joblib's convention (None: one; negative: counted back from the number of cores)
N_JOBS = [Integral, None]
#: ``device`` (rfbench/methods/device.py)
DEVICE = [Device()]
#: an SVC's ``max_iter`` (−1: no cap), as scikit-learn's own constraint
SVM_MAX_ITER = [Int(-1, None, closed="left")]


def positive_values(name: str, values) -> np.ndarray:
    """``values`` as a flat float array, or a one-line ValueError unless it is non-empty and every
    value is positive (a grid of λ, ρ, ...: the constraint says "array-like", this says the rest)."""
    array = np.asarray(values, dtype=float).ravel()
    if array.size == 0 or not np.all(array > 0):
        raise ValueError(f"{name} must be a non-empty list of positive values, got {values!r}")
    return array
