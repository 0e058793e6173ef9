"""PBRFF (Letarte, Morvant & Germain, AISTATS 2019) as run in the GBRFF paper (method-notes §7.1).

Pseudo-Bayesian landmark representation, then a linear SVM::

    draw n_L landmarks (x_l, y_l) with replacement from the training set
    draw K frequencies ω_lk ~ N(0, 2γ)^d per landmark              (γ = g/d)
    loss_lk = (1 − ā_lk)/2,  ā_lk = (Σ_i s_il cos(ω_lk·(x_i − x_l)) − 1)/(n − 1),
              s_il = +1 if y_i = y_l else −1 (the landmark's own term, +1, is removed)
    q_l = softmax(−β√n · loss_l)                                      (pseudo-posterior, eq. 4 of GBRFF)
    φ_l(x) = Σ_k q_lk cos(ω_lk·(x − x_l)),  l = 1..n_L
    SVC(kernel="linear", C, max_iter=10⁴) on φ

Grid (g, β, C) ∈ 2^{−2..2} × 10^{−2..2} × 10^{−2..2}, selected by inner-CV accuracy (ties → first in
grid order). Inputs are standardised with a scaler fitted on the training part of every fit, and
every fit uses a fresh generator from one seed drawn per outer fit (as the reference's
RandomState(1)); landmarks are drawn first, frequencies second. Within one inner fold the
representation cosines depend only on g and the weights q only on β, so each is computed once and
reused for the C values. Labels are compared for equality, so any number of classes works (the SVM
is one-vs-one for more than two).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator
from rfbench.methods.gbrff import GAMMA_GRID
from rfbench.methods.rfkit import fit_linear_svm, scaler_stats, select_on_folds
from rfbench.methods.tuning import Stopwatch, param_grid

BETA_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
C_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)


def draw_landmarks(n_samples: int, d: int, n_landmarks: int, n_random: int,
                   rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(landmark row indices, standard normal frequencies of shape (n_L, d, K)), in this order.

    The frequencies of one fit are these standard draws times √(2γ), so every g of the grid uses
    the same underlying draws, exactly as refitting with the same seed would.
    """
    idx = rng.integers(0, n_samples, size=n_landmarks)  # with replacement
    return idx, rng.standard_normal((n_landmarks, d, n_random))


def landmark_cosines(X: np.ndarray, landmarks: np.ndarray, frequencies: np.ndarray) -> np.ndarray:
    """cos(ω_lk·(x_i − x_l)) for all rows, landmarks and frequencies: array (n, n_L, K).

    One product X Ω_all with Ω_all = [ω_11 … ω_{n_L K}] (d × n_L·K), minus the landmark offsets
    ω_lk·x_l, instead of a loop over landmarks.
    """
    n_l, d, k = frequencies.shape
    W = frequencies.transpose(1, 0, 2).reshape(d, n_l * k)  # column l·K + k is ω_lk
    offsets = np.einsum("ld,ldk->lk", landmarks, frequencies).reshape(-1)
    return np.cos(X @ W - offsets).reshape(X.shape[0], n_l, k)


def pseudo_posterior(cos_train: np.ndarray, agree: np.ndarray, beta: float) -> np.ndarray:
    """q (n_L × K) from the training cosines (n × n_L × K) and label agreements s_il ∈ ±1 (n × n_L)."""
    n = cos_train.shape[0]
    raw = np.einsum("il,ilk->lk", agree, cos_train)  # Σ_i s_il cos(ω_lk·(x_i − x_l))
    mean_agreement = (raw - 1.0) / (n - 1)  # drop the landmark's own term (= +1)
    loss = (1.0 - mean_agreement) / 2.0  # ∈ [0, 1]
    return softmax(-beta * math.sqrt(n) * loss, axis=1)


def representation(cosines: np.ndarray, q: np.ndarray) -> np.ndarray:
    """φ_l(x) = Σ_k q_lk cos(ω_lk·(x − x_l)): array (n, n_L)."""
    return np.einsum("ilk,lk->il", cosines, q)


class PBRFFClassifier(ClassifierMixin, BaseEstimator):
    """PBRFF landmark representation + linear SVM, hyper-parameters by inner-CV accuracy.

    Parameters: ``n_features`` = n_L (landmarks = output features, 100), ``n_random_features`` =
    K (10), ``gamma_grid`` = g values (γ = g/d), ``beta_grid``, ``C_grid``, ``max_iter`` (libsvm
    iteration cap, 10⁴), ``cv``, ``random_state``, ``n_jobs`` (parallelises the inner folds),
    ``standardize`` (scaler fitted in every fit).

    Fitted: ``classes_``, ``landmarks_`` (n_L × d, standardised space), ``landmark_labels_``,
    ``frequencies_`` (n_L × d × K), ``q_`` (n_L × K), ``svm_``, ``n_iter_`` (libsvm iterations),
    ``x_mean_``, ``x_scale_``, ``cv_errors_`` (mean inner-CV error per (g, β, C), grid order),
    ``best_params_``, ``tune_time_``.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "n_random_features": [cons.positive_int()],
        "gamma_grid": ["array-like"],
        "beta_grid": ["array-like"],
        "C_grid": ["array-like"],
        "max_iter": cons.SVM_MAX_ITER,
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "standardize": ["boolean"],
    }

    def __init__(self, n_features=100, n_random_features=10, gamma_grid=GAMMA_GRID,
                 beta_grid=BETA_GRID, C_grid=C_GRID, max_iter=10_000, cv=5, random_state=None,
                 n_jobs=None, standardize=True):
        self.n_features = n_features
        self.n_random_features = n_random_features
        self.gamma_grid = gamma_grid
        self.beta_grid = beta_grid
        self.C_grid = C_grid
        self.max_iter = max_iter
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize

    def _cv_task(self, X, y, tr, va, seed):
        """Validation errors of every (g, β, C) on one inner fold, in ``param_grid`` order."""
        mean, scale = scaler_stats(X[tr], self.standardize)
        X_tr, X_va, y_tr = (X[tr] - mean) / scale, (X[va] - mean) / scale, y[tr]
        idx, std_freqs = draw_landmarks(len(tr), X.shape[1], int(self.n_features),
                                        int(self.n_random_features), np.random.default_rng(seed))
        agree = np.where(y_tr[:, None] == y_tr[idx][None, :], 1.0, -1.0)
        errors = []
        for g in self.gamma_grid:
            freqs = std_freqs * math.sqrt(2.0 * float(g) / X.shape[1])
            cos_tr = landmark_cosines(X_tr, X_tr[idx], freqs)
            cos_va = landmark_cosines(X_va, X_tr[idx], freqs)
            for beta in self.beta_grid:
                q = pseudo_posterior(cos_tr, agree, float(beta))
                Z_tr, Z_va = representation(cos_tr, q), representation(cos_va, q)
                for C in self.C_grid:
                    svm = fit_linear_svm(Z_tr, y_tr, float(C), int(self.max_iter))
                    errors.append(float(np.mean(svm.predict(Z_va) != y[va])))
        return np.array(errors)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_ = np.unique(y)
        if self.classes_.size < 2:
            raise ValueError("PBRFFClassifier needs at least 2 classes in y, got 1 class")
        combos = param_grid({"g": [float(v) for v in self.gamma_grid],
                             "beta": [float(v) for v in self.beta_grid],
                             "C": [float(v) for v in self.C_grid]})
        if not combos:
            raise ValueError("the hyper-parameter grid is empty")
        rng = as_generator(self.random_state)
        with Stopwatch() as tune:
            self.cv_errors_, best, seed = select_on_folds(self._cv_task, (X, y), len(combos), self.cv,
                                                          X.shape[0], rng, self.n_jobs)
        self.tune_time_ = tune.total
        params = combos[best]

        self.x_mean_, self.x_scale_ = scaler_stats(X, self.standardize)
        Xs = (X - self.x_mean_) / self.x_scale_
        idx, std_freqs = draw_landmarks(X.shape[0], X.shape[1], int(self.n_features),
                                        int(self.n_random_features), np.random.default_rng(seed))
        self.landmarks_ = Xs[idx]
        self.landmark_labels_ = y[idx]
        self.frequencies_ = std_freqs * math.sqrt(2.0 * params["g"] / X.shape[1])
        cos_tr = landmark_cosines(Xs, self.landmarks_, self.frequencies_)
        agree = np.where(y[:, None] == self.landmark_labels_[None, :], 1.0, -1.0)
        self.q_ = pseudo_posterior(cos_tr, agree, params["beta"])
        self.svm_ = fit_linear_svm(representation(cos_tr, self.q_), y, params["C"], int(self.max_iter))
        self.n_iter_ = self.svm_.n_iter_
        self.best_params_ = {**params, "gamma": params["g"] / X.shape[1],
                             "n_landmarks": int(self.n_features), "seed": int(seed)}
        return self

    def transform_landmarks(self, X) -> np.ndarray:
        """The learned representation φ(X) (n × n_L)."""
        check_is_fitted(self, "svm_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        Xs = (X - self.x_mean_) / self.x_scale_
        return representation(landmark_cosines(Xs, self.landmarks_, self.frequencies_), self.q_)

    def decision_function(self, X):
        Z = self.transform_landmarks(X)  # checks fitted state and input first
        return self.svm_.decision_function(Z)

    def predict(self, X):
        Z = self.transform_landmarks(X)
        return self.svm_.predict(Z)
