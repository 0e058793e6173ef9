"""BMKR: the boosting loop against a naive loop written from method-notes §7.2, the precomputed
kernels against libsvm's own, invariants of the fitted model, the C grid, estimator contract."""

import json

import numpy as np
import pytest
from sklearn.datasets import make_classification, make_moons
from sklearn.svm import SVR
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.bmkr import RBF_GAMMAS, BMKRClassifier, KernelBank, cross_kernel, fit_bmkr
from rfbench.methods.common import standardise_columns


def _naive(X, y, T, C, X_eval):
    """The recipe as written: 11 SVR objects per iteration on libsvm's own kernels, the one with the
    smallest training squared error kept, residual updated, prediction = sign of the summed SVRs."""
    y = np.where(y == np.unique(y)[1], 1.0, -1.0)
    r = y.copy()
    learners = []
    for _ in range(T):
        fits = [SVR(kernel="rbf", gamma=g, C=C, max_iter=10_000).fit(X, r) for g in RBF_GAMMAS]
        fits.append(SVR(kernel="linear", C=C, max_iter=10_000).fit(X, r))
        errors = [np.sum((f.predict(X) - r) ** 2) for f in fits]
        best = fits[int(np.argmin(errors))]
        r = r - best.predict(X)
        learners.append(best)
    return np.sum([f.predict(X_eval) for f in learners], axis=0), r


def _standardised(X):
    mean, std = standardise_columns(X)
    return (X - mean) / std


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_native_kernels_equal_the_naive_loop():
    X, y = make_classification(60, n_features=4, random_state=0)
    Xe = make_classification(40, n_features=4, random_state=1)[0]
    clf = BMKRClassifier(n_features=8, C_grid=(1.0,), kernel_mode="native").fit(X, y)
    score, residual = _naive(_standardised(X), y, 8, 1.0, (Xe - X.mean(0)) / X.std(0))
    np.testing.assert_allclose(clf.decision_function(Xe), score, rtol=1e-9, atol=1e-11)
    y_pm = np.where(y == 1, 1.0, -1.0)
    np.testing.assert_allclose(clf.train_sse_[-1], np.sum(residual ** 2), rtol=1e-9)
    assert clf.kernel_mode_ == "native"
    np.testing.assert_array_equal(clf.predict(Xe), np.where(score >= 0, 1, 0))
    # the fitted model is the sum of its learners: y − (final residual) on the training rows
    np.testing.assert_allclose(clf.decision_function(X), y_pm - residual, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("C", [0.01, 1.0, 100.0])
def test_precomputed_kernels_predict_as_libsvm_own(seed, C):
    """Precomputed Gram matrices give the labels of libsvm's own kernels. Not bit-for-bit: libsvm
    rounds exp(−γ‖x − x'‖²) in another order and its SMO stops at tol 1e-3, so with γ = 32 the paths
    can part at that tolerance (decision values within a few 1e-3; measured ≤ 4.5e-3)."""
    X, y = make_classification(120, n_features=5, random_state=seed)
    Xe = make_classification(300, n_features=5, random_state=seed + 100)[0]
    stored = BMKRClassifier(n_features=20, C_grid=(C,), kernel_mode="stored").fit(X, y)
    native = BMKRClassifier(n_features=20, C_grid=(C,), kernel_mode="native").fit(X, y)
    np.testing.assert_array_equal(stored.predict(Xe), native.predict(Xe))
    np.testing.assert_array_equal(stored.predict(X), native.predict(X))
    np.testing.assert_allclose(stored.decision_function(Xe), native.decision_function(Xe), atol=1e-2)


def test_one_svr_precomputed_equals_native_within_libsvm_tolerance():
    """One SVR on the precomputed Gram matrix against libsvm's own kernel: the same support set and
    predictions within libsvm's stopping tolerance (tol 1e-3; the rounding of the kernel values can
    send its SMO along another path, measured 1e-3 here), to rounding when the paths coincide (here
    γ = 1/16 and the linear kernel)."""
    X, y = make_moons(150, noise=0.2, random_state=0)
    Xs, y_pm = _standardised(X), np.where(y == 1, 1.0, -1.0)
    gammas = (0.0625, 0.25, 1.0)
    stored, native = KernelBank(Xs, gammas, 100.0, "stored"), KernelBank(Xs, gammas, 100.0, "native")
    for k in range(4):
        a, b = stored.svr(k, 1.0, y_pm), native.svr(k, 1.0, y_pm)
        np.testing.assert_array_equal(a[0], b[0])
        np.testing.assert_allclose(a[3], b[3], atol=1e-10 if k in (0, 3) else 2e-3)


def test_distances_mode_is_bit_identical_to_stored():
    X, y = make_moons(100, noise=0.2, random_state=3)
    a = BMKRClassifier(n_features=15, C_grid=(1.0,), kernel_mode="stored").fit(X, y)
    b = BMKRClassifier(n_features=15, C_grid=(1.0,), kernel_mode="distances").fit(X, y)
    np.testing.assert_array_equal(a.decision_function(X), b.decision_function(X))
    # auto: 11 Gram matrices of 100 rows need 0.84 MB
    assert BMKRClassifier(n_features=1, C_grid=(1.0,), kernel_memory_mb=0.9).fit(X, y).kernel_mode_ == "stored"
    assert BMKRClassifier(n_features=1, C_grid=(1.0,), kernel_memory_mb=0.8).fit(X, y).kernel_mode_ == "native"
    assert a.kernel_mode_ == "stored"


def test_each_step_keeps_the_kernel_of_smallest_training_error():
    """Replaying the loop: at every iteration the chosen kernel's SVR has the smallest Σ(h − r)²
    of the 11, and train_sse_ is the residual's Σ r² after the step."""
    X, y = make_moons(80, noise=0.3, random_state=1)
    Xs = _standardised(X)
    y_pm = np.where(y == 1, 1.0, -1.0)
    bank = KernelBank(Xs, RBF_GAMMAS, 100.0)
    weights, b, chosen, sse = fit_bmkr(bank, y_pm, 6, 10.0)
    r = y_pm.copy()
    for t in range(6):
        fits = [bank.svr(k, 10.0, r) for k in range(len(bank))]
        errors = [np.sum((f[3] - r) ** 2) for f in fits]
        assert chosen[t] == int(np.argmin(errors))
        r = r - fits[chosen[t]][3]
        assert sse[t] == pytest.approx(np.sum(r ** 2), rel=1e-12)
    assert sse[-1] < np.sum(y_pm ** 2)
    # no constant model: with one iteration the score is exactly the first SVR's
    w1, b1, c1, _ = fit_bmkr(bank, y_pm, 1, 10.0)
    sv, coef, b0, pred = bank.svr(int(c1[0]), 10.0, y_pm)
    assert b1 == b0 and np.count_nonzero(w1) == sv.size


def test_cross_kernel_matches_its_definition():
    rng = np.random.default_rng(0)
    A, B = rng.standard_normal((7, 3)), rng.standard_normal((5, 3))
    ref = np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))
    np.testing.assert_allclose(cross_kernel(A, B, 0.5), ref, rtol=1e-12)
    np.testing.assert_allclose(cross_kernel(A, B, None), A @ B.T)


def test_C_chosen_by_inner_cv_and_ties_to_the_first():
    X, y = make_moons(150, noise=0.25, random_state=2)
    clf = BMKRClassifier(n_features=5, C_grid=(0.01, 1.0), cv=3, random_state=0).fit(X, y)
    assert clf.cv_errors_.shape == (2,)
    assert clf.best_params_ == {"C": (0.01, 1.0)[int(np.argmin(clf.cv_errors_))]}
    json.dumps(clf.best_params_)
    assert clf.score(X, y) > 0.85
    tie = BMKRClassifier(n_features=2, C_grid=(1.0, 1.0), cv=3, random_state=0).fit(X, y)
    assert tie.cv_errors_[0] == tie.cv_errors_[1] and tie.best_params_ == {"C": 1.0}
    # labels of any two values: the smaller is the negative class, ties of the score go to the other
    lab = BMKRClassifier(n_features=5, C_grid=(1.0,)).fit(X, np.where(y == 1, "b", "a"))
    assert set(lab.predict(X)) <= {"a", "b"} and list(lab.classes_) == ["a", "b"]


def test_invalid_inputs():
    X, y = make_moons(30, random_state=0)
    with pytest.raises(ValueError, match="n_features"):
        BMKRClassifier(n_features=0).fit(X, y)
    with pytest.raises(ValueError, match="C_grid"):
        BMKRClassifier(C_grid=()).fit(X, y)
    with pytest.raises(ValueError, match="kernel_mode"):
        BMKRClassifier(n_features=1, C_grid=(1.0,), kernel_mode="fast").fit(X, y)
    with pytest.raises(ValueError, match="binary"):
        BMKRClassifier(n_features=1, C_grid=(1.0,)).fit(X, np.arange(30) % 3)


@parametrize_with_checks([BMKRClassifier(n_features=3, C_grid=(1.0,), random_state=0)])
def test_sklearn_contract(estimator, check):
    check(estimator)
