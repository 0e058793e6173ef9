"""RFF: the features converge to the exact kernels, and the estimator is a proper sklearn estimator."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.rff import (
    KERNELS,
    RFFRegressor,
    RKSClassifier,
    RKSRegressor,
    exact_kernel,
    fourier_features,
    sample_frequencies,
)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("feature_map", ["phase", "cos-sin"])
@pytest.mark.slow
def test_features_converge_to_exact_kernel(kernel, feature_map):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    sigma = 1.7
    K = exact_kernel(kernel, X, X, sigma)
    errs = []
    for n in (100, 1000, 20000):
        W = sample_frequencies(kernel, 3, n, np.random.default_rng(n)) / sigma
        b = np.random.default_rng(n + 1).uniform(0, 2 * np.pi, n) if feature_map == "phase" else None
        Z = fourier_features(X, W, b)
        errs.append(np.abs(Z @ Z.T - K).max())
    # Monte-Carlo error shrinks like n^{-1/2}: 200× more features, ≥ 5× smaller error
    assert errs[-1] < 0.06
    assert errs[-1] < errs[0] / 5


def test_crossed_samplers_are_not_interchangeable():
    """Sampling the Laplace kernel with Laplace frequencies (the classic mistake) is detectably wrong."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    K = exact_kernel("laplace", X, X, 1.0)
    n = 40000
    right = fourier_features(X, sample_frequencies("laplace", 2, n, rng), None)
    wrong = fourier_features(X, sample_frequencies("cauchy", 2, n, rng), None)
    assert np.abs(right @ right.T - K).max() < 0.05 < np.abs(wrong @ wrong.T - K).max()


@pytest.mark.slow
def test_selects_bandwidth_and_fits_smooth_function():
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(600, 2))
    y = np.sin(2 * X[:, 0]) + 0.5 * np.cos(X[:, 1]) + 0.05 * rng.normal(size=600)
    est = RFFRegressor(n_features=200, random_state=0, cv=3).fit(X[:500], y[:500])
    rmse = np.sqrt(np.mean((est.predict(X[500:]) - y[500:]) ** 2))
    assert rmse < 0.1
    assert 0.1 <= est.bandwidth_ <= 10  # the extreme grid ends (1e-3, 100) cannot fit this
    assert set(est.best_params_) >= {"bandwidth", "lambda"} and est.tune_time_ > 0


def test_same_seed_same_model():
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(120, 3)), rng.normal(size=120)
    a = RFFRegressor(n_features=30, random_state=5, cv=3).fit(X, y).predict(X)
    b = RFFRegressor(n_features=30, random_state=5, cv=3).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)


@parametrize_with_checks([RFFRegressor(n_features=50, cv=3, bandwidths=[0.5, 2.0, 8.0], lambdas=[1e-6, 1e-3, 1e-1],
                                       random_state=0),
                          RKSRegressor(n_features=30, lambdas=(1e-3, 1e-1), cv=3, random_state=0),
                          RKSClassifier(n_features=30, lambdas=(1e-3, 1e-1), cv=3, random_state=0)])
def test_sklearn_estimator_contract(estimator, check):
    check(estimator)


def test_knn_bandwidth_rule_is_the_eerf_sigma():
    from rfbench.methods.rfkit import knn_bandwidth

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(300, 4)), rng.normal(size=300)
    est = RFFRegressor(n_features=20, bandwidths="knn", cv=3, random_state=0).fit(X, y)
    assert est.bandwidth_ == pytest.approx(knn_bandwidth(X, 50))  # 300 < 2000 query points: exact
    with pytest.raises(ValueError, match="knn"):
        RFFRegressor(bandwidths="median").fit(X, y)


def test_lambda_is_the_continuous_cv_minimiser_per_bandwidth():
    """App. C: the ridge penalty is a hyper-parameter optimised on the CV error, not a grid value.
    For the chosen σ, λ minimises a naive per-fold ridge CV error over a fine grid; the grid option
    returns a grid value, and its CV error is never below the continuous one."""
    from sklearn.model_selection import KFold

    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, size=(300, 2))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.1 * rng.normal(size=300)
    splits = list(KFold(5, shuffle=True, random_state=0).split(X))
    kw = dict(n_features=40, cv=splits, bandwidths=[0.3, 1.0, 3.0], random_state=0)
    cont = RFFRegressor(**kw).fit(X, y)
    grid = RFFRegressor(lambda_search="grid", **kw).fit(X, y)
    assert np.isclose(np.logspace(-10, 2, 49), grid.lambda_, rtol=1e-12).any()
    assert cont.best_params_["cv_mse"] <= grid.best_params_["cv_mse"] + 1e-15
    Z = cont.features(X)

    def naive_cv(lam):
        errs = []
        for tr, va in splits:
            zm, ym = Z[tr].mean(axis=0), y[tr].mean()
            A = Z[tr] - zm
            c = np.linalg.solve(A.T @ A + len(tr) * lam * np.eye(Z.shape[1]), A.T @ (y[tr] - ym))
            errs.append(np.mean(((Z[va] - zm) @ c + ym - y[va]) ** 2))
        return np.mean(errs)

    fine = np.logspace(np.log10(cont.lambda_) - 1, np.log10(cont.lambda_) + 1, 401)
    curve = np.array([naive_cv(v) for v in fine])
    assert cont.best_params_["cv_mse"] == pytest.approx(naive_cv(cont.lambda_), rel=1e-8)
    assert cont.best_params_["cv_mse"] <= curve.min() + 1e-12
    with pytest.raises(ValueError, match="lambda_search"):
        RFFRegressor(lambda_search="direct").fit(X, y)


@pytest.mark.parametrize("lambda_search, feature_map", [("cv-1d", "phase"), ("grid", "cos-sin")])
def test_thread_count_does_not_change_the_numbers(lambda_search, feature_map):
    """--threads 2 gives the numbers of --threads 1 bit for bit: OpenBLAS's
    multi-threaded GEMM/SYRK/GEMV and syevd round differently from its one-thread kernels (at this
    size they moved λ and the predictions), so the fit keeps one BLAS thread and spreads the
    bandwidths over n_jobs Python threads instead."""
    from threadpoolctl import threadpool_limits

    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 8))
    y = np.sin(X[:, 0]) + 0.3 * X[:, 1] * X[:, 2] + 0.1 * rng.standard_normal(500)
    fits = []
    for blas, n_jobs in [(1, 1), (2, 2), (2, 1)]:      # the runner's --threads T: both limits T
        with threadpool_limits(limits=blas):
            est = RFFRegressor(kernel="cauchy", n_features=150, feature_map=feature_map, bandwidths=[1.0, 4.0, 16.0],
                               lambda_search=lambda_search, cv=3, random_state=0, n_jobs=n_jobs).fit(X[:400], y[:400])
            fits.append((est.best_params_, est.predict(X[400:])))
    for params, pred in fits[1:]:
        assert params == fits[0][0]
        np.testing.assert_array_equal(pred, fits[0][1])
