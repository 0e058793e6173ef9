"""FALKON (rfbench/methods/falkon.py) against a naive dense kernel ridge regression, its CG's stopping,
its torch path (on the CPU as "torch-cpu") against the NumPy path, and its validation."""


import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.utils._param_validation import InvalidParameterError

from rfbench.methods import falkon as F
from rfbench.methods.falkon import FalkonRegressor


def _problem(m=120, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.sin(X).sum(axis=1) + 0.1 * rng.normal(size=m) + 3.0
    return X, y, rng.normal(size=(40, d))


def _gauss(A, B, sigma):
    return np.exp(-cdist(A, B, "sqeuclidean") / (2 * sigma**2))


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def _exact_krr(X, y, X_te, sigma, lam):
    """ȳ + K(X_te, X) (K + λ m I)⁻¹ (y − ȳ), by a dense solve."""
    m = X.shape[0]
    alpha = np.linalg.solve(_gauss(X, X, sigma) + lam * m * np.eye(m), y - y.mean())
    return _gauss(X_te, X, sigma) @ alpha + y.mean()


@pytest.mark.parametrize("block_bytes", [2**28, 8 * 120 * 7])      # K_nM kept whole; blocks of 7 rows
@pytest.mark.parametrize("sigma,lam", [(1.3, 1e-3), (0.7, 1e-5)])
def test_all_rows_as_centres_is_exact_kernel_ridge(sigma, lam, block_bytes):
    X, y, X_te = _problem()
    est = FalkonRegressor(n_features=len(y), bandwidths=[sigma], lambdas=[lam], max_iter=20, tol=1e-14,
                          block_bytes=block_bytes, random_state=0).fit(X, y)
    assert est.centres_.shape == X.shape and est.best_params_["centres"] == len(y)
    assert est.best_params_["cv_mse"] is None and est.cv_errors_ is None     # one (σ, λ): no CV
    assert _rel(est.predict(X_te), _exact_krr(X, y, X_te, sigma, lam)) < 1e-8
    # with M = n the preconditioner is exact: CG is done in one or two steps
    assert est.n_iter_ <= 3


def test_the_preconditioner_factors_have_the_papers_scaling():
    """T = chol(K_MM + εM I), A = chol(T Tᵀ/M + λI): B = T⁻¹A⁻¹/√n has B Bᵀ = ((n/M) K_MM² + λ n K_MM)⁻¹
    (with TᵀT for K_MM), and the solve is the Nyström system (K_nMᵀK_nM + λ n TᵀT) α = K_nMᵀ y."""
    X, y, _ = _problem()
    ops, sigma, lam, n = F.NumPyOps(), 0.9, 1e-3, X.shape[0]
    C = X[::3]
    M = C.shape[0]
    Kmm = _gauss(C, C, sigma)
    T, jitter = F.preconditioner_T(ops, Kmm, M)
    assert jitter == np.finfo(float).eps * M
    S = T.T @ T
    np.testing.assert_allclose(S, Kmm + jitter * np.eye(M), rtol=0, atol=1e-13)
    A = np.linalg.cholesky(T @ T.T / M + lam * np.eye(M)).T
    B = np.linalg.solve(T, np.linalg.inv(A)) / np.sqrt(n)
    inverse = np.linalg.inv(n / M * S @ S + lam * n * S)
    np.testing.assert_allclose(B @ B.T, inverse, rtol=0, atol=1e-8 * np.abs(inverse).max())
    yc = y - y.mean()
    alpha, iters, history, _ = F.falkon_solve(ops, X, yc, C, sigma, [lam], 200, 1e-13, 2**20)
    Knm = _gauss(X, C, sigma)
    direct = np.linalg.solve(Knm.T @ Knm + lam * n * S, Knm.T @ yc)
    assert _rel(Knm @ alpha[:, 0], Knm @ direct) < 1e-8


def test_cg_residuals_fall_and_stop_at_the_tolerance():
    X, y, _ = _problem(m=200)
    ops, yc = F.NumPyOps(), y - y.mean()
    C = X[:30]
    lambdas = [1e-6, 1e-4, 1e-2]
    _, iters, history, _ = F.falkon_solve(ops, X, yc, C, 1.5, lambdas, 500, 1e-9, 2**20)
    for j in range(len(lambdas)):
        rel = history[: iters[j], j]
        assert rel[-1] <= 1e-9 and iters[j] < 500          # stopped by the tolerance, not the cap
        assert np.all(np.isnan(history[iters[j]:, j]))       # nothing after the column stopped
        assert np.all(rel[:-1] > 1e-9)                       # and not before it got there
        # monotone-ish: CG's residual may rise for a step, never far above its best so far
        assert np.all(rel[1:] <= 10 * np.minimum.accumulate(rel)[:-1])
        assert rel[-1] < 1e-6 * rel[0]
    # a stronger penalty is better conditioned: fewer iterations
    assert iters[2] <= iters[0]
    # the fixed number of iterations is the other stop: tol 0 runs exactly max_iter
    _, iters0, history0, _ = F.falkon_solve(ops, X, yc, C, 1.5, lambdas, 4, 0.0, 2**20)
    assert list(iters0) == [4, 4, 4] and history0.shape == (4, 3)


def test_default_iterations_grow_as_log_n():
    assert F.default_iterations(100) == 5 + 5 and F.default_iterations(40000) == 11 + 5
    X, y, _ = _problem()
    est = FalkonRegressor(n_features=20, bandwidths=[1.0], lambdas=[1e-9], tol=0.0, random_state=1).fit(X, y)
    assert est.n_iter_ == F.default_iterations(len(y)) == len(est.cg_residuals_)


def test_inner_cv_chooses_from_the_grid_and_reports_it():
    X, y, X_te = _problem()
    folds = [(np.arange(40, 120), np.arange(40)), (np.arange(0, 80), np.arange(80, 120))]
    est = FalkonRegressor(n_features=30, lambdas=[1e-6, 1e-3, 1e-1], cv=folds, random_state=3).fit(X, y)
    assert est.cv_errors_.shape == (len(F.DEFAULT_BANDWIDTH_FACTORS), 3)
    i, j = np.unravel_index(np.argmin(est.cv_errors_), est.cv_errors_.shape)
    median = F.median_distance(X, np.random.default_rng(3))
    assert est.sigma_ == pytest.approx(F.DEFAULT_BANDWIDTH_FACTORS[i] * median, rel=1e-12)
    assert est.lambda_ == [1e-6, 1e-3, 1e-1][j]
    p = est.best_params_
    assert p["cv_mse"] == pytest.approx(est.cv_errors_[i, j]) and p["centres"] == 30 and "note" not in p
    assert set(p) == {"sigma", "lambda", "centres", "iterations", "cv_mse"}
    assert est.tune_time_ > 0 and np.mean((est.predict(X_te) - (np.sin(X_te).sum(1) + 3)) ** 2) < 0.05
    # the same seed, the same fit
    again = FalkonRegressor(n_features=30, lambdas=[1e-6, 1e-3, 1e-1], cv=folds, random_state=3).fit(X, y)
    np.testing.assert_array_equal(again.predict(X_te), est.predict(X_te))


def test_more_centres_than_rows_are_capped_and_said():
    X, y, _ = _problem(m=30)
    est = FalkonRegressor(n_features=500, lambdas=[1e-4, 1e-2], bandwidth_factors=[0.5, 1.0], cv=3,
                          random_state=0).fit(X, y)
    assert est.centres_.shape[0] == 30 and est.best_params_["centres"] == 30
    assert est.best_params_["note"] == "n_features 500 > 30 training rows: M = 30 (every row a centre)"
    np.testing.assert_array_equal(est.centres_, X)       # all rows, in their order


def test_centres_are_distinct_training_rows():
    X, y, _ = _problem()
    est = FalkonRegressor(n_features=25, bandwidths=[1.0], lambdas=[1e-3], random_state=4).fit(X, y)
    rows = [int(np.flatnonzero((X == c).all(axis=1))[0]) for c in est.centres_]
    assert len(set(rows)) == 25 and rows == sorted(rows)


@pytest.mark.parametrize("bad", [
    {"n_features": 0}, {"n_features": 2.5}, {"n_features": True}, {"tol": -1.0}, {"max_iter": 0},
    {"block_bytes": 0}, {"cv": 1}, {"device": "gpu"}, {"lambdas": "small"},
])
def test_bad_parameters_are_refused_by_the_constraints(bad):
    X, y, _ = _problem(m=20)
    with pytest.raises(InvalidParameterError):
        FalkonRegressor(**bad).fit(X, y)


def test_scikit_learns_parameter_check():
    from sklearn.utils.estimator_checks import check_param_validation

    check_param_validation("FalkonRegressor", FalkonRegressor())


def test_bad_grids_and_data_are_clear_errors():
    X, y, _ = _problem(m=20)
    with pytest.raises(ValueError, match="lambdas must be a non-empty list of positive values"):
        FalkonRegressor(lambdas=[1e-3, 0.0]).fit(X, y)
    with pytest.raises(ValueError, match="bandwidths must be a non-empty list of positive values"):
        FalkonRegressor(bandwidths=[]).fit(X, y)
    X_nan = X.copy()
    X_nan[3, 1] = np.nan
    with pytest.raises(ValueError, match="Input X contains NaN"):
        FalkonRegressor().fit(X_nan, y)
    y_inf = y.copy()
    y_inf[0] = np.inf
    with pytest.raises(ValueError, match="Input y contains infinity"):
        FalkonRegressor().fit(X, y_inf)
    with pytest.raises(ValueError, match=r"Found array with 1 sample\(s\).*minimum of 2 is required"):
        FalkonRegressor().fit(X[:1], y[:1])


# -- the torch path, on the CPU ----------------------------------------------------------------------

class TestTorchPath:
    torch = pytest.importorskip("torch")

    @pytest.fixture(autouse=True)
    def one_thread(self):
        """One torch and one BLAS thread: the 2-core CI machine is busy, more threads only wait."""
        from threadpoolctl import threadpool_limits

        before = self.torch.get_num_threads()
        self.torch.set_num_threads(1)
        with threadpool_limits(limits=1):
            yield
        self.torch.set_num_threads(before)

    @pytest.mark.parametrize("block_bytes", [2**28, 8 * 30 * 11])
    def test_the_device_path_equals_the_numpy_path(self, block_bytes, torch_device):
        """A well-conditioned problem (σ small against the spread of the centres, λ not tiny) where CG
        stops by its tolerance: the iterates are then insensitive to rounding and the two paths agree
        to 1e-10. (With λ = 1e-3 and σ half the median distance, a 15-iteration CG cut short at a
        relative residual of 1e-6 already differs by 1e-8 between two BLASes: such a CG amplifies
        rounding, and the paths agree only to that.)"""
        X, y, X_te = _problem()
        folds = [(np.arange(40, 120), np.arange(40)), (np.arange(0, 80), np.arange(80, 120))]
        kw = dict(n_features=30, bandwidth_factors=[0.1, 0.25], lambdas=[1e-2, 1e-1], cv=folds,
                  max_iter=20, random_state=5, block_bytes=block_bytes)
        cpu = FalkonRegressor(**kw).fit(X, y)
        dev = FalkonRegressor(**kw, device=torch_device).fit(X, y)
        assert (dev.sigma_, dev.lambda_, dev.n_iter_) == (cpu.sigma_, cpu.lambda_, cpu.n_iter_)
        assert _rel(dev.cv_errors_, cpu.cv_errors_) < 1e-10
        assert _rel(dev.alpha_, cpu.alpha_) < 1e-10
        assert _rel(dev.predict(X_te), cpu.predict(X_te)) < 1e-10
        np.testing.assert_allclose(dev.cg_residuals_, cpu.cg_residuals_, rtol=1e-8)

    def test_the_device_path_is_exact_kernel_ridge_with_every_row(self, torch_device):
        X, y, X_te = _problem()
        est = FalkonRegressor(n_features=len(y), bandwidths=[1.3], lambdas=[1e-3], max_iter=20, tol=1e-14,
                              device=torch_device).fit(X, y)
        assert _rel(est.predict(X_te), _exact_krr(X, y, X_te, 1.3, 1e-3)) < 1e-8


def test_the_lambda_grid_solved_in_groups_equals_one_group():
    # factor_bytes too small for two M × M factors: each λ its own CG, the same α to rounding
    X, y, _ = _problem(m=150)
    ops, yc = F.NumPyOps(), y - y.mean()
    C, lambdas = X[:25], [1e-7, 1e-5, 1e-3, 1e-1]
    assert F.lambda_groups(4, 25, 8 * 25 * 25) == [slice(0, 1), slice(1, 2), slice(2, 3), slice(3, 4)]
    assert F.lambda_groups(9, 3600, 2**30) == [slice(0, 9)]          # the default keeps nine together
    assert len(F.lambda_groups(9, 10_000, 2**30)) == 9                 # 0.8 GB a factor: one at a time
    one = F.falkon_solve(ops, X, yc, C, 1.5, lambdas, 50, 1e-10, 2**20)
    grouped = F.falkon_solve(ops, X, yc, C, 1.5, lambdas, 50, 1e-10, 2**20, factor_bytes=8 * 25 * 25 * 2)
    np.testing.assert_allclose(grouped[0], one[0], rtol=1e-7, atol=1e-9 * np.abs(one[0]).max())   # CG's rounding
    assert np.abs(grouped[1] - one[1]).max() <= 1         # a column may stop one step apart at the tolerance
    assert grouped[2].shape[1] == 4
    a = FalkonRegressor(n_features=25, random_state=3).fit(X, y)
    b = FalkonRegressor(n_features=25, random_state=3, factor_bytes=8 * 25 * 25).fit(X, y)
    assert (a.sigma_, a.lambda_) == (b.sigma_, b.lambda_)
    np.testing.assert_allclose(b.predict(X), a.predict(X), rtol=1e-9)
