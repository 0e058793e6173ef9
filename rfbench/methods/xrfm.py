"""xRFM (Beaglehole et al. 2025, "xRFM: Accurate, scalable, and interpretable feature learning models for
tabular data") from its own package (``pip install xrfm``, the ``xrfm`` package, MIT) under
rfbench's estimator contract: a thin wrapper of ``xrfm.xRFM`` at its documented defaults.

xrfm (and torch, which it needs) is imported inside ``fit``, so this module imports everywhere;
without the extra, ``fit`` raises ModuleNotFoundError (name 'xrfm') naming the extra. The registry
entry declares ``requires: {package: xrfm, extra: xrfm}`` (rfbench.registry.Method.missing), so that
``rfbench run --methods xrfm`` without it is one line naming the extra, exit 2, before any task.

What the runner passes, and what becomes of it:

* ``n_features`` / ``budgets``: xRFM has no feature budget, so both are accepted and ignored. The
  wrapper shares budgets (:class:`rfbench.contract.SharesBudgets`): one fit serves every budget of a
  work item, and ``predict(X, budget=n)`` is the same model for each fitted n.
* ``cv``: xRFM tunes itself on a validation set given to ``fit`` (its README's usage:
  ``fit(X_train, y_train, X_val, y_val)``, the validation part split off the training rows). The
  wrapper gives it the *first* of the inner folds: xRFM is fitted on that fold's training part and
  tunes on its held-out part, so it sees the same inner split as every other method's first fold
  (an int ``cv`` is a shuffled K-fold seeded by ``random_state``, rfbench.methods.common.resolve_cv).
  The other folds are not used: xRFM's own tuning is one validation split, not K-fold CV. What it
  tunes there (all inside its ``fit``): the RFM iteration kept at each leaf (its default
  ``return_best_params=True`` over ``iters=5``, by validation MSE for regression and Brier loss for
  classification) and, when the tree splits, the soft-routing temperature. ``tune_time_`` is 0:
  the tuning is part of the one fit.
* ``random_state``: passed to ``xRFM(random_state=...)`` as an int (a Generator is turned into one);
  note that xRFM seeds the global ``random``, NumPy and torch generators with it.
* ``n_jobs``: passed as xRFM's ``n_threads`` (torch's CPU threads during fit and predict) when given.
* ``device``: "cpu" (the default) and "torch-cpu" run xRFM in torch on the CPU; "cuda" / "cuda:K"
  are passed through to xRFM. There is no NumPy path: xRFM is torch only.

Precision: float32. xRFM turns NumPy inputs into float32 tensors and casts regression targets to
float32 in ``fit`` (``y.float()``), so float64 is not available through its API; the wrapper gives
it NumPy arrays as they are and returns float64 predictions.

Everything else is xRFM's documented default (``rfm_params=None``: the 'l2_high_dim' Laplace kernel,
bandwidth 10, reg 1e-3, full Mahalanobis M, 5 RFM iterations; one tree; leaves of at most 60 000
rows), except ``verbose=False`` (its progress printing).

``best_params_``: ``{"n_leaves": leaves of the tree, "best_iter": the RFM iteration kept at each leaf}``.

Memory: a leaf's solve holds its rows × rows float32 kernel and temporaries of the same size, and on
the CPU xRFM keeps up to 60 000 rows in one leaf (its leaf size is scaled to GPU memory only).
:func:`host_memory_bytes` is the peak measured on this machine (:data:`BYTES_PER_KERNEL_ENTRY`,
docs/uci-cost.md); a CPU fit whose estimate is over ``max_memory`` (default 8 GiB) refuses in one line
before xRFM starts (e.g. keggundirected: 45 798 fitting rows, about 19 GiB), as ``gp`` does above its
rows. On a GPU xRFM sizes its leaves to the card itself, so no limit applies there.
"""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.preprocessing import LabelEncoder
from sklearn.utils.validation import check_array, check_is_fitted, check_X_y

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import import_extra, library_seed, resolve_cv

#: what to install where xrfm is missing
EXTRA = "pip install xrfm"
#: xRFM's default largest leaf (``max_leaf_size``), which it does not scale on the CPU
MAX_LEAF_ROWS = 60_000
#: the host memory of a CPU fit: per entry of its largest leaf's kernel (about 2.3 float32 rows × rows
#: arrays at once), and beside it; the peak's growth from 8 000 to 12 000 fitting rows and its
#: intercept, the largest of three runs (9.39, 9.67 and 9.45 bytes; bench/perf/xrfm_memory.py, docs/uci-cost.md)
BYTES_PER_KERNEL_ENTRY = 9.7
FIXED_BYTES = 0.26 * 2**30
#: the default ``max_memory``: the most host memory a fit may need (the suite's 8 GB ceiling)
MAX_MEMORY = 8 * 2**30


def host_memory_bytes(fit_rows: int) -> float:
    """The estimated peak host memory of a CPU fit on ``fit_rows`` rows (beyond the data itself)."""
    leaf = min(int(fit_rows), MAX_LEAF_ROWS)
    return FIXED_BYTES + BYTES_PER_KERNEL_ENTRY * leaf * leaf


def import_xrfm():
    """The ``xrfm`` package, or ModuleNotFoundError (name 'xrfm') naming rfbench's extra."""
    return import_extra("xrfm", "xRFM", EXTRA)


def torch_device_name(device: str) -> str:
    """The torch device xRFM is given for a contract device: "cpu" and "torch-cpu" → "cpu"."""
    return "cpu" if device in ("cpu", "torch-cpu") else device


class _XRFM(SharesBudgets, BaseEstimator):
    _parameter_constraints: dict = {
        "n_features": [cons.positive_int(), None],
        "budgets": ["array-like", None],
        "cv": [*cons.CV, None],
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
        "max_memory": [cons.positive_int(), None],
    }

    def __init__(self, n_features=None, budgets=None, cv=None, random_state=None, n_jobs=None, device="cpu",
                 max_memory=MAX_MEMORY):
        self.n_features = n_features
        self.budgets = budgets
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device
        self.max_memory = max_memory

    def _check_memory(self, fit_rows: int) -> None:
        """A CPU fit over ``max_memory`` refuses before it starts (one line)."""
        need = host_memory_bytes(fit_rows)
        if self.max_memory is not None and torch_device_name(self.device) == "cpu" and need > self.max_memory:
            raise MemoryError(f"xrfm: a fit on {fit_rows} rows needs about {need / 2**30:.1f} GiB on the CPU, over "
                              f"max_memory = {self.max_memory / 2**30:.1f} GiB (docs/uci-cost.md); run it on a GPU "
                              "(--device cuda) or give a larger max_memory")

    def _validation_split(self, n: int, seed):
        """(train rows, validation rows): the first inner fold (5-fold when ``cv`` is None)."""
        cv = 5 if self.cv is None else self.cv
        return resolve_cv(cv, n, np.random.default_rng(seed))[0]

    def _targets(self, y):
        return y

    def xrfm_kwargs(self) -> dict:
        """The arguments of ``xrfm.xRFM`` this wrapper sets (everything else at xRFM's defaults)."""
        n_threads = int(self.n_jobs) if self.n_jobs is not None and self.n_jobs > 0 else None
        return {"device": torch_device_name(self.device), "random_state": library_seed(self.random_state), "n_threads": n_threads,
                "verbose": False}

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        xrfm = import_xrfm()
        X, y = check_X_y(X, y, dtype=np.float64, y_numeric=not isinstance(self, ClassifierMixin))
        y = self._targets(y)
        kwargs = self.xrfm_kwargs()
        tr, va = self._validation_split(X.shape[0], kwargs["random_state"])
        self._check_memory(len(tr))
        self.model_ = xrfm.xRFM(**kwargs).fit(X[tr], y[tr], X[va], y[va])
        self.n_features_in_ = X.shape[1]
        budgets = sorted({int(b) for b in self.budgets}) if self.budgets is not None else (
            [int(self.n_features)] if self.n_features is not None else [])
        self.budgets_ = budgets
        leaves = [leaf for tree in self.model_.trees for leaf in self.model_._collect_leaf_nodes(tree)]
        self.best_params_ = {"n_leaves": len(leaves),
                             "best_iter": [int(getattr(leaf["model"], "best_iter", -1) or 0) for leaf in leaves]}
        self.best_params_per_budget_ = {n: dict(self.best_params_) for n in budgets}
        self.tune_time_ = 0.0
        return self

    def _model(self, X, budget):
        check_is_fitted(self, "model_")
        if budget is not None and int(budget) not in self.budgets_:
            raise ValueError(f"budget {int(budget)} was not fitted; fitted budgets: {self.budgets_}")
        return self.model_, check_array(X, dtype=np.float64)


class XRFMRegressor(RegressorMixin, _XRFM):
    """xRFM at its defaults, tuned on the first inner fold's held-out part; see the module notes."""

    def _targets(self, y):
        return y.astype(np.float32)

    def predict(self, X, budget=None):
        model, X = self._model(X, budget)
        return np.asarray(model.predict(X), dtype=np.float64).reshape(-1)


class XRFMClassifier(ClassifierMixin, _XRFM):
    """xRFM classification (its integer-label path: Brier loss tuning, {0, 1} / one-hot targets) at its
    defaults, tuned on the first inner fold's held-out part; see the module notes."""

    def _targets(self, y):
        self._encoder = LabelEncoder().fit(y)
        self.classes_ = self._encoder.classes_
        return self._encoder.transform(y).astype(np.int64)

    def predict(self, X, budget=None):
        model, X = self._model(X, budget)
        return self._encoder.inverse_transform(np.asarray(model.predict(X)).reshape(-1).astype(np.intp))

    def predict_proba(self, X, budget=None):
        model, X = self._model(X, budget)
        return np.asarray(model.predict_proba(X), dtype=np.float64)
