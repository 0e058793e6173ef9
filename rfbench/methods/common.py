"""Conventions shared by every method estimator.

Every estimator in ``rfbench.methods`` follows scikit-learn's contract and this protocol (what the runner
reads of it, including budget sharing, is written down in rfbench/contract.py):

* ``__init__`` stores parameters only; ``fit(X, y)`` returns ``self``; fitted attributes end in ``_``.
* ``_parameter_constraints``: scikit-learn's declaration of every parameter's valid values (shared
  ones in :mod:`rfbench.methods.constraints`), checked when ``fit`` starts (``_fit_context``).
* ``n_features``: the feature budget (number of spectral vectors, boosting iterations, landmarks...).
* ``cv``: the inner cross-validation used to select *all* hyper-parameters inside ``fit``: an int
  (shuffled K-fold seeded by ``random_state``) or an iterable of ``(train_idx, test_idx)`` pairs.
  The runner passes the protocol's inner folds so that every method sees the same ones.
* ``random_state``: None, an int, or a Generator; turned into a ``numpy.random.Generator`` in ``fit``.
* ``n_jobs``: the number of cores the method may use for its own parallelism (BLAS threads are
  limited by the runner).
* After ``fit``: ``best_params_`` (a JSON-serialisable dict of the selected hyper-parameters) and
  ``tune_time_`` (seconds spent selecting them; the rest of ``fit`` is the final fit).
"""

from __future__ import annotations

import importlib
import numbers
from collections.abc import Iterable

import numpy as np
from sklearn.model_selection import KFold


def import_extra(module: str, method: str, install: str):
    """The optional package ``module`` a method needs, or ModuleNotFoundError (name ``module``) saying
    how to install it (``install``); an error inside the package itself is raised as it is."""
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise
        raise ModuleNotFoundError(f"{method} needs the optional extra: {install} (no module named '{module}')",
                                  name=module) from None


def as_generator(random_state) -> np.random.Generator:
    """Turn None / int / Generator / RandomState into a ``numpy.random.Generator``."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**32 - 1))
    if random_state is None or isinstance(random_state, numbers.Integral):
        return np.random.default_rng(random_state)
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got {random_state!r}")


def seed_from(rng: np.random.Generator) -> int:
    """Draw an integer seed from a generator (for libraries that want an int seed)."""
    return int(rng.integers(0, 2**31 - 1))


def library_seed(random_state):
    """``random_state`` as a seed for a library that takes an int or None (scikit-learn's HGB,
    xRFM): an int or None passes through unchanged, anything else is drawn from as a generator."""
    if random_state is None or (isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        return random_state
    return seed_from(as_generator(random_state))


def resolve_cv(cv, n_samples: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """The inner CV as a list of (train_idx, test_idx) pairs."""
    if isinstance(cv, numbers.Integral):
        if cv < 2:
            raise ValueError(f"cv must be at least 2 folds, got {cv}")
        if n_samples < cv:
            raise ValueError(f"cannot split {n_samples} samples into {cv} folds")
        kf = KFold(n_splits=int(cv), shuffle=True, random_state=seed_from(rng))
        return [(tr, te) for tr, te in kf.split(np.zeros((n_samples, 1)))]
    if isinstance(cv, Iterable):
        splits = [(np.asarray(tr, dtype=np.intp), np.asarray(te, dtype=np.intp)) for tr, te in cv]
        if not splits:
            raise ValueError("cv is an empty list of splits")
        return splits
    raise ValueError(f"cv must be an int or an iterable of (train, test) index pairs, got {cv!r}")


def standardise_columns(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and standard deviations (ddof=0), with zero std replaced by one."""
    mean = X.mean(axis=0)
    std = X.std(axis=0)
    std[std == 0] = 1.0
    return mean, std
