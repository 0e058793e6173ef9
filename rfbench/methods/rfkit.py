"""Small helpers shared by the EERF, LKRF, GBRFF and PBRFF estimators.

* ``knn_bandwidth``: the σ rule of thumb of the EERF paper (mean distance to the 50th neighbour).
* ``encode_binary_labels``: any two label values → ±1 (smallest → −1), as the GBRFF reference code.
* ``ridge_cv_curves``: inner-CV criteria of ridge along a λ path (one eigendecomposition per
  fold), for regression (MSE) and for least-squares classification on ±1 labels (error rate).
* ``parallel_map``: run independent tasks serially or with joblib, in a deterministic order.
* ``select_on_folds``: a grid chosen by mean inner-CV error, one seed per outer fit (PBRFF, GFC-GBRFF).
* ``scaler_stats``: the per-fit input scaler of the GBRFF reference code's protocol.
* ``fit_linear_svm``: the GBRFF reference code's final classifier, SVC(kernel="linear", C, max_iter).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.spatial import cKDTree
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils.multiclass import type_of_target

from rfbench.methods.common import resolve_cv, seed_from, standardise_columns
from rfbench.methods.ridge import cv_mse_path, cv_path_predictions


def knn_bandwidth(X: np.ndarray, k: int = 50, n_query: int | None = 2000,
                  rng: np.random.Generator | None = None, workers: int = 1) -> float:
    """σ = mean over (query) points of the ℓ₂ distance to their k-th nearest neighbour, self excluded.

    EERF (§Empirical results) samples Gaussian frequencies from N(0, σ⁻² I) with this σ (k = 50, a
    rule taken from the Orthogonal Random Features paper) and gives the same σ to every method.

    * The tree returns the point itself first (distance 0), so k + 1 neighbours are requested and the
      last one kept; with at most k other points the farthest one is used.
    * For large training sets the mean is estimated on ``n_query`` query points drawn without
      replacement (the tree still holds every point); ``rng`` is consumed only in that case.
    * A degenerate σ (all points identical) falls back to 1 so that the frequencies stay finite.
    """
    X = np.asarray(X, dtype=float)
    m = X.shape[0]
    if m < 2:
        return 1.0
    kk = min(int(k), m - 1) + 1
    if n_query is not None and m > n_query:
        rng = np.random.default_rng() if rng is None else rng
        queries = X[rng.choice(m, size=int(n_query), replace=False)]
    else:
        queries = X
    dist, _ = cKDTree(X).query(queries, k=kk, workers=workers)
    sigma = float(np.mean(dist[:, -1]))
    if not np.isfinite(sigma) or sigma <= 0.0:
        return 1.0
    return sigma


def workers_from(n_jobs) -> int:
    """scipy/joblib-style worker count from an ``n_jobs`` parameter (None → 1)."""
    return 1 if n_jobs is None else int(n_jobs)


def encode_binary_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(classes_, y in ±1): the smaller of the two label values becomes −1, the other +1."""
    y_type = type_of_target(y, input_name="y", raise_unknown=True)
    if y_type != "binary":
        raise ValueError("Only binary classification is supported. The type of the target "
                         f"is {y_type}.")
    classes = np.unique(y)
    if classes.size != 2:
        raise ValueError("this classifier needs 2 classes in y, got 1 class")
    return classes, np.where(y == classes[1], 1.0, -1.0)


def decode_binary_labels(classes: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Original labels from a real score: score ≥ 0 (ties included) → positive class."""
    return classes[(np.asarray(score) >= 0).astype(int)]


class BinaryScoreClassifierMixin:
    """``predict`` = the original labels of ``decision_function`` (score ≥ 0 → ``classes_[1]``);
    declares binary-only to scikit-learn's checks. Put it before ClassifierMixin in the bases."""

    def predict(self, X):
        score = self.decision_function(X)  # raises NotFittedError before classes_ is looked up
        return decode_binary_labels(self.classes_, score)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags


def ridge_cv_curves(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray,
                    classify: bool) -> tuple[np.ndarray, np.ndarray]:
    """Mean inner-CV criteria of ridge for every λ: ``(primary, secondary)``, lower is better.

    Regression: primary = secondary = validation MSE (``ridge.cv_mse_path``).
    Classification (y in ±1, prediction sign(score), ties → +1): primary = misclassification rate,
    secondary = MSE on the ±1 targets, used to break the frequent ties between error rates.
    Same convention and cost as ``ridge.cv_mse_path``: (ZᵀZ + mλI)c = Zᵀy with the intercept by
    centring, fold statistics from ``ridge.split_stats``, one eigendecomposition per fold for the
    whole λ path.
    """
    lambdas = np.asarray(lambdas, dtype=float)
    if not classify:
        mse = cv_mse_path(Z, y, splits, lambdas).mean(axis=0)
        return mse, mse
    mse, err = [], []
    for va, pred in cv_path_predictions(Z, y, splits, lambdas):
        mse.append(np.mean((pred - y[va, None]) ** 2, axis=0))
        err.append(np.mean(np.where(pred >= 0, 1.0, -1.0) != y[va, None], axis=0))
    return np.mean(err, axis=0), np.mean(mse, axis=0)


def best_index(primary: np.ndarray, secondary: np.ndarray) -> int:
    """Index of the smallest primary criterion, ties by secondary, then by position (first wins)."""
    primary = np.ravel(primary)
    secondary = np.ravel(secondary)
    return int(np.lexsort((np.arange(primary.size), secondary, primary))[0])


def parallel_map(fn, items, n_jobs) -> list:
    """``[fn(*item) for item in items]``, with joblib processes when ``n_jobs`` is not None/1."""
    items = list(items)
    if n_jobs is None or int(n_jobs) == 1 or len(items) <= 1:
        return [fn(*item) for item in items]
    from joblib import Parallel, delayed

    return Parallel(n_jobs=int(n_jobs))(delayed(fn)(*item) for item in items)


def fit_linear_svm(Z: np.ndarray, y: np.ndarray, C: float, max_iter: int) -> SVC:
    """``SVC(kernel="linear", C, max_iter)`` fitted on (Z, y), as the GBRFF reference code's final
    classifier of PBRFF and GFC. The iteration cap is part of that protocol: libsvm stopping at it
    is expected, not news, so its ConvergenceWarning is silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return SVC(kernel="linear", C=C, max_iter=max_iter).fit(Z, y)


def scaler_stats(X: np.ndarray, standardize: bool) -> tuple[np.ndarray, np.ndarray]:
    """(mean, scale) of the scaler fitted in every fit of the GBRFF paper's protocol (identity if
    ``standardize`` is off)."""
    if standardize:
        return standardise_columns(X)
    return np.zeros(X.shape[1]), np.ones(X.shape[1])


def select_on_folds(cv_task, args: tuple, n_grid: int, cv, n_samples: int, rng: np.random.Generator,
                    n_jobs) -> tuple[np.ndarray, int, int]:
    """(mean inner-CV error of every grid point, best index, seed) for estimators that score a whole
    grid on one inner fold with ``cv_task(*args, train_idx, val_idx, seed)`` (an array, grid order).

    The seed is drawn once per outer fit and given to every inner fit (and to the final fit by the
    caller), as the GBRFF reference code's RandomState(1). Ties go to the first grid point. A grid
    of one point skips the CV (errors NaN).
    """
    if n_grid > 1:
        splits = resolve_cv(cv, n_samples, rng)
        seed = seed_from(rng)
        per_fold = parallel_map(cv_task, [(*args, tr, va, seed) for tr, va in splits], n_jobs)
        errors = np.mean(per_fold, axis=0)
        return errors, int(np.argmin(errors)), seed
    return np.full(1, np.nan), 0, seed_from(rng)
