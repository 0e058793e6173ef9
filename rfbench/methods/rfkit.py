"""Small helpers shared by the EERF, LKRF, GBRFF and PBRFF estimators.

* ``knn_bandwidth``: the σ rule of thumb of the EERF paper (mean distance to the 50th neighbour).
* ``encode_binary_labels``: any two label values → ±1 (smallest → −1), as the GBRFF reference code;
  ``encode_class_labels``: the same for two classes, one-vs-rest ±1 columns for more (EERF, LKRF, RKS
  on MNIST and Letter), with ``ScoreClassifierMixin`` (sign or argmax of the scores).
* ``ridge_cv_curves``: inner-CV criteria of ridge along a λ path (one eigendecomposition per
  fold), for regression (MSE) and for least-squares classification on ±1 labels (error rate), also
  one-vs-rest on C columns (argmax) for several classes; ``ridge_fit`` the final solve of either.
* ``parallel_map``: run independent tasks serially or with joblib, in a deterministic order.
* ``select_on_folds``: a grid chosen by mean inner-CV error, one seed per outer fit (PBRFF, GFC-GBRFF).
* ``scaler_stats``: the per-fit input scaler of the GBRFF reference code's protocol.
* ``fit_linear_svm``: the GBRFF reference code's final classifier, SVC(kernel="linear", C, max_iter).
"""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
from scipy.spatial import cKDTree
from sklearn.exceptions import ConvergenceWarning
from sklearn.svm import SVC
from sklearn.utils.multiclass import type_of_target

from rfbench.methods.common import resolve_cv, seed_from, standardise_columns
from rfbench.methods.ridge import cv_mse_path, cv_path_predictions, ridge_solve

#: inputs above this many dimensions use exact brute-force neighbours (BLAS blocks) instead of a
#: kd-tree, which degrades to visiting nearly every leaf: on MNIST's 60 000 standardised training
#: images (d = 784, one thread) the 2000 queries took 4.9 s by blocks, where cKDTree took 21 s to be
#: built and answer 100 of them (about 200 s for 2000); the distances agree to 6e-14. At or below it
#: (every dataset before the EERF tables) the tree is kept, so their σ is unchanged to the last bit
BRUTE_FORCE_DIMENSIONS = 64


def knn_bandwidth(X: np.ndarray, k: int = 50, n_query: int | None = 2000,
                  rng: np.random.Generator | None = None, workers: int = 1) -> float:
    """σ = mean over (query) points of the ℓ₂ distance to their k-th nearest neighbour, self excluded.

    EERF (§Empirical results) samples Gaussian frequencies from N(0, σ⁻² I) with this σ (k = 50, a
    rule taken from the Orthogonal Random Features paper) and gives the same σ to every method.

    * The tree returns the point itself first (distance 0), so k + 1 neighbours are requested and the
      last one kept; with at most k other points the farthest one is used.
    * For large training sets the mean is estimated on ``n_query`` query points drawn without
      replacement (the tree still holds every point); ``rng`` is consumed only in that case.
    * Above ``BRUTE_FORCE_DIMENSIONS`` inputs the neighbours are found by brute force (all distances
      of a block of queries by one matrix product, then a partial sort): exact too, and far faster
      than a tree there.
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
    if X.shape[1] > BRUTE_FORCE_DIMENSIONS:
        kth = _kth_neighbour_distance(X, queries, kk)
    else:
        dist, _ = cKDTree(X).query(queries, k=kk, workers=workers)
        kth = dist[:, -1]
    sigma = float(np.mean(kth))
    if not np.isfinite(sigma) or sigma <= 0.0:
        return 1.0
    return sigma


def _kth_neighbour_distance(X: np.ndarray, queries: np.ndarray, kk: int, block: int = 256) -> np.ndarray:
    """Distance of every query to its kk-th nearest point of X (the query itself counted: it is a
    point of X at distance 0), by brute force: ‖q‖² + ‖x‖² − 2 q·x for a block of queries at a time."""
    sq = np.einsum("ij,ij->i", X, X)
    out = np.empty(queries.shape[0])
    for start in range(0, queries.shape[0], block):
        Q = queries[start:start + block]
        D2 = Q @ X.T
        D2 *= -2.0
        D2 += sq
        D2 += np.einsum("ij,ij->i", Q, Q)[:, None]
        out[start:start + block] = np.partition(D2, kk - 1, axis=1)[:, kk - 1]
    return np.sqrt(np.maximum(out, 0.0))


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


def encode_class_labels(y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(classes_, targets): two classes → a ±1 vector (the smaller value −1, as
    :func:`encode_binary_labels`); C > 2 classes → one-vs-rest ±1 columns (m × C, column c is +1 on
    class ``classes_[c]``). Fewer than two classes: ValueError."""
    y = np.asarray(y)
    type_of_target(y, input_name="y", raise_unknown=True)
    classes, codes = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"this classifier needs at least 2 classes in y, got {classes.size} class")
    if classes.size == 2:
        return classes, np.where(codes == 1, 1.0, -1.0)
    Y = -np.ones((codes.size, classes.size))
    Y[np.arange(codes.size), codes] = 1.0
    return classes, Y


def centred_indicators(Y: np.ndarray) -> np.ndarray:
    """One-vs-rest ±1 columns → the centred one-hot columns (indicator − the class's frequency in
    these rows, the whole training part) that the multi-class scores see (method-notes §4.4): a
    constant response would add mean(φ) to every score."""
    onehot = (Y > 0).astype(float)
    return onehot - onehot.mean(axis=0)


class ScoreClassifierMixin:
    """``predict`` = the original labels of ``decision_function``: for two classes its sign (score ≥ 0 →
    ``classes_[1]``), for more the class of the largest one-vs-rest score (ties → the first).
    Put it before ClassifierMixin in the bases."""

    def predict(self, X):
        score = self.decision_function(X)  # raises NotFittedError before classes_ is looked up
        if score.ndim == 1:
            return decode_binary_labels(self.classes_, score)
        return self.classes_[np.argmax(score, axis=1)]


def _multi_stats(Z: np.ndarray, Y: np.ndarray) -> tuple:
    return Z.T @ Z, Z.T @ Y, Z.sum(axis=0), Y.sum(axis=0), Z.shape[0]


def _centred(G, B, s, sy, m):
    z_mean, y_mean = s / m, sy / m
    return G - m * np.outer(z_mean, z_mean), B - m * np.outer(z_mean, y_mean), z_mean, y_mean


def multiclass_cv_curves(Z: np.ndarray, Y: np.ndarray, splits, lambdas: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(error rate, MSE) of one-vs-rest ridge on the ±1 columns Y (m × C) for every λ, mean over
    the inner folds; prediction = the column with the largest score. Ridge convention of
    ``ridge.py``: (Z_cᵀZ_c + m_tr λ I) C = Z_cᵀ Y_c on the centred training part; one symmetric
    eigendecomposition per fold serves every λ and every class. The training statistics of a fold
    are the whole part's minus its validation rows'."""
    lambdas = np.asarray(lambdas, dtype=float)
    full = _multi_stats(Z, Y)
    err, mse = [], []
    for tr, va in splits:
        if len(tr) + len(va) == Z.shape[0]:
            part = _multi_stats(Z[va], Y[va])
            stats = tuple(f - p for f, p in zip(full, part, strict=True))
        else:
            stats = _multi_stats(Z[tr], Y[tr])
        G_c, B_c, z_mean, y_mean = _centred(*stats)
        evals, V = scipy.linalg.eigh(G_c, driver="evd", check_finite=False)
        evals = np.clip(evals, 0.0, None)
        Q = V.T @ B_c
        P = (Z[va] - z_mean) @ V
        truth = np.argmax(Y[va], axis=1)
        e_fold, m_fold = np.empty(lambdas.size), np.empty(lambdas.size)
        for j, lam in enumerate(lambdas):
            pred = P @ (Q / (evals + stats[4] * lam)[:, None]) + y_mean
            e_fold[j] = np.mean(np.argmax(pred, axis=1) != truth)
            m_fold[j] = np.mean((pred - Y[va]) ** 2)
        err.append(e_fold)
        mse.append(m_fold)
    return np.mean(err, axis=0), np.mean(mse, axis=0)


def cv_curves(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray, classify: bool,
              device: str = "cpu") -> tuple[np.ndarray, np.ndarray]:
    """:func:`ridge_cv_curves` for one response, :func:`multiclass_cv_curves` for C columns;
    ``device`` other than "cpu": the same criteria from :func:`device_cv_curves`."""
    if device != "cpu":
        return device_cv_curves(Z, y, splits, lambdas, classify, device)
    if y.ndim == 2:
        return multiclass_cv_curves(Z, y, splits, lambdas)
    return ridge_cv_curves(Z, y, splits, lambdas, classify)


def device_cv_curves(Z: np.ndarray, y: np.ndarray, splits, lambdas: np.ndarray, classify: bool,
                     device: str) -> tuple[np.ndarray, np.ndarray]:
    """:func:`cv_curves` in torch on ``device`` (rfbench/methods/ridge_torch.py): the folds' Gram
    matrices eigendecomposed in one batch, every λ a diagonal rescaling; (primary, secondary) as
    NumPy arrays, mean over the folds, for :func:`best_index`. Equal to rounding."""
    from rfbench.methods import ridge_torch as rt
    from rfbench.methods.device import torch_device

    dev = torch_device(device)
    parts = rt.fold_parts(rt.as_tensor(Z, dev), rt.as_tensor(y, dev), splits)
    mse, err = rt.cv_criteria(parts, lambdas, classify)
    mse = mse[0].mean(axis=0)
    return (err[0].mean(axis=0) if classify else mse), mse


def choose_lambda(Z: np.ndarray, y: np.ndarray, cv, lambdas: np.ndarray, classify: bool,
                  rng: np.random.Generator, device: str = "cpu") -> tuple[int, np.ndarray]:
    """(index of the λ the inner CV chooses among ``lambdas``, its CV curve): with one λ there is
    no choice, no folds are drawn from ``rng`` and the curve is NaN. ``device``: where the curves
    are computed (:func:`cv_curves`)."""
    if lambdas.size == 1:
        return 0, np.full(1, np.nan)
    primary, secondary = cv_curves(Z, y, resolve_cv(cv, Z.shape[0], rng), lambdas, classify, device)
    return best_index(primary, secondary), primary


def ridge_fit(Z: np.ndarray, y: np.ndarray, lam: float, device: str = "cpu") -> tuple[np.ndarray, float | np.ndarray]:
    """(coef, intercept) of ridge for one λ: ``ridge.ridge_solve`` for one response (a float
    intercept), the same Cholesky solve with C right-hand sides for C columns (C intercepts);
    ``device`` other than "cpu": ``ridge_torch.ridge_solve`` there."""
    if device != "cpu":
        from rfbench.methods import ridge_torch as rt
        from rfbench.methods.device import torch_device

        dev = torch_device(device)
        return rt.ridge_solve(rt.as_tensor(Z, dev), rt.as_tensor(y, dev), lam)
    if y.ndim == 1:
        coef, intercept = ridge_solve(Z, y, lam)
        return coef, float(intercept)
    G_c, B_c, z_mean, y_mean = _centred(*_multi_stats(Z, y))
    A = G_c + Z.shape[0] * lam * np.eye(G_c.shape[0])
    try:
        coef = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, check_finite=False), B_c, check_finite=False)
    except np.linalg.LinAlgError:
        evals, V = scipy.linalg.eigh(G_c, driver="evd", check_finite=False)
        coef = V @ ((V.T @ B_c) / (np.clip(evals, 0.0, None) + Z.shape[0] * lam)[:, None])
    return coef, y_mean - z_mean @ coef


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
