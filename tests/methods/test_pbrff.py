"""PBRFF: vectorised representation against a naive loop, pseudo-posterior, fit, estimator contract."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_blobs, make_moons
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.common import standardise_columns
from rfbench.methods.pbrff import (
    PBRFFClassifier,
    draw_landmarks,
    landmark_cosines,
    pseudo_posterior,
    representation,
)


def _naive(X_train, y_train, X_eval, idx, freqs, beta):
    """Per-landmark, per-frequency, per-point loops written from the method-notes §7.1 recipe."""
    n = X_train.shape[0]
    n_l, d, K = freqs.shape
    q = np.empty((n_l, K))
    for l in range(n_l):
        xl, yl = X_train[idx[l]], y_train[idx[l]]
        losses = []
        for k in range(K):
            w = freqs[l, :, k]
            raw = sum((1.0 if y_train[i] == yl else -1.0) * np.cos(w @ (X_train[i] - xl))
                      for i in range(n))
            abar = (raw - 1.0) / (n - 1)
            losses.append((1.0 - abar) / 2.0)
        logits = -beta * np.sqrt(n) * np.array(losses)
        q[l] = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    phi = np.empty((X_eval.shape[0], n_l))
    for i in range(X_eval.shape[0]):
        for l in range(n_l):
            phi[i, l] = sum(q[l, k] * np.cos(freqs[l, :, k] @ (X_eval[i] - X_train[idx[l]]))
                            for k in range(K))
    return q, phi


def test_representation_equals_naive_loop():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((25, 3)), rng.choice(["a", "b", "c"], 25)
    Xe = rng.standard_normal((6, 3))
    idx, std = draw_landmarks(25, 3, 7, 4, np.random.default_rng(1))
    idx[1] = idx[0]  # a landmark drawn twice (sampling is with replacement)
    freqs = std * np.sqrt(2 * 0.4)
    cos_tr = landmark_cosines(X, X[idx], freqs)
    agree = np.where(y[:, None] == y[idx][None, :], 1.0, -1.0)
    for beta in (0.01, 1.0, 100.0):
        q = pseudo_posterior(cos_tr, agree, beta)
        q_ref, phi_ref = _naive(X, y, Xe, idx, freqs, beta)
        np.testing.assert_allclose(q, q_ref, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(representation(landmark_cosines(Xe, X[idx], freqs), q), phi_ref,
                                   rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(pseudo_posterior(cos_tr, agree, 0.0), 0.25)  # β = 0: uniform


def test_fitted_model_uses_training_landmarks_and_its_representation():
    X, y = make_moons(300, noise=0.15, random_state=0)
    clf = PBRFFClassifier(n_features=30, gamma_grid=(1.0,), beta_grid=(1.0,), C_grid=(1.0,),
                          random_state=0).fit(X, y)
    mean, std = standardise_columns(X)
    Xs = (X - mean) / std
    idx, z = draw_landmarks(300, 2, 30, 10, np.random.default_rng(clf.best_params_["seed"]))
    np.testing.assert_allclose(clf.landmarks_, Xs[idx])
    np.testing.assert_allclose(clf.frequencies_, z * np.sqrt(2 * 1.0 / 2))
    q_ref, phi_ref = _naive(Xs, y, Xs[:5], idx, clf.frequencies_, 1.0)
    np.testing.assert_allclose(clf.q_, q_ref, rtol=1e-10)
    np.testing.assert_allclose(clf.transform_landmarks(X[:5]), phi_ref, rtol=1e-10)
    assert clf.score(X, y) > 0.9


def test_grid_search_on_moons_and_multiclass():
    X, y = make_moons(400, noise=0.15, random_state=1)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = PBRFFClassifier(n_features=50, gamma_grid=(0.5, 2.0), beta_grid=(0.1, 10.0),
                          C_grid=(1.0, 100.0), cv=3, random_state=0).fit(Xtr, ytr)
    assert clf.cv_errors_.shape == (8,)
    assert clf.score(Xte, yte) >= 0.9
    best = int(np.argmin(clf.cv_errors_))
    assert (clf.best_params_["g"], clf.best_params_["beta"], clf.best_params_["C"]) == \
        [(g, b, c) for g in (0.5, 2.0) for b in (0.1, 10.0) for c in (1.0, 100.0)][best]
    json.dumps(clf.best_params_)
    Xb, yb = make_blobs(300, centers=3, random_state=0)
    multi = PBRFFClassifier(n_features=20, gamma_grid=(1.0,), beta_grid=(1.0,), C_grid=(1.0,),
                            random_state=0).fit(Xb, yb)
    assert multi.score(Xb, yb) > 0.9


def test_invalid_inputs():
    X, y = make_moons(50, random_state=0)
    with pytest.raises(ValueError, match="n_features"):
        PBRFFClassifier(n_features=0).fit(X, y)


@parametrize_with_checks([
    PBRFFClassifier(n_features=10, gamma_grid=(1.0,), beta_grid=(1.0,), C_grid=(1.0,),
                    random_state=0),
])
def test_sklearn_contract(estimator, check):
    check(estimator)
