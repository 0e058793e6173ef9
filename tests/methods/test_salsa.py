"""SALSA / KRR: ESP kernel, exact and Nyström solvers, order search, scikit-learn contract."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from sklearn.kernel_ridge import KernelRidge
from sklearn.model_selection import KFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods import salsa
from rfbench.methods.esp import (
    base_kernels,
    esp_kernel,
    esp_kernels,
    esp_newton_girard,
    salsa_bandwidths,
)
from rfbench.methods.ridge import GramStats, cv_mse_path
from rfbench.methods.salsa import (
    KRRRegressor,
    SALSARegressor,
    _cv_mse,
    _NystromEngine,
    _order_search,
)


def _data(m=40, D=6, seed=0, scale=1.0):
    rng = np.random.default_rng(seed)
    return rng.normal(scale=scale, size=(m, D))


def _brute_force(A, B, h, d):
    S = base_kernels(A, B, h)
    return sum(np.prod(S[list(c)], axis=0) for c in itertools.combinations(range(A.shape[1]), d))


# --------------------------------------------------------------------------------- ESP kernel
@pytest.mark.parametrize("block_elems", [7, 2**16])
def test_esp_equals_brute_force_subset_sum(block_elems):
    A, B = _data(9, 6, 1), _data(13, 6, 2)
    h = salsa_bandwidths(A, c=3.0)  # narrow enough that the base kernels differ a lot
    for d in range(1, 7):
        ref = _brute_force(A, B, h, d)
        np.testing.assert_allclose(esp_kernel(A, B, h, d, block_elems=block_elems), ref,
                                   rtol=1e-12, atol=0)
    allk = esp_kernels(A, B, h, range(1, 7), block_elems=block_elems)
    for d in range(1, 7):
        np.testing.assert_allclose(allk[d], _brute_force(A, B, h, d), rtol=1e-12)


def test_order_one_is_sum_and_order_D_is_product():
    A, B = _data(11, 5, 3), _data(8, 5, 4)
    h = salsa_bandwidths(A, c=2.0)
    S = base_kernels(A, B, h)
    np.testing.assert_allclose(esp_kernel(A, B, h, 1), S.sum(axis=0), rtol=1e-13)
    np.testing.assert_allclose(esp_kernel(A, B, h, 5), S.prod(axis=0), rtol=1e-12)
    # the recursion reaching order D agrees with the direct product path
    np.testing.assert_allclose(esp_kernels(A, B, h, [4, 5])[5], S.prod(axis=0), rtol=1e-12)
    # and order D is the usual Gaussian kernel with a diagonal length-scale
    sq = (((A[:, None, :] - B[None, :, :]) / h) ** 2).sum(-1)
    np.testing.assert_allclose(esp_kernel(A, B, h, 5), np.exp(-sq / 2), rtol=1e-12)


def test_recursion_agrees_with_newton_girard():
    A, B = _data(10, 8, 5), _data(12, 8, 6)
    h = salsa_bandwidths(A, c=20.0)
    for d in range(1, 6):
        np.testing.assert_allclose(esp_kernel(A, B, h, d), esp_newton_girard(A, B, h, d),
                                   rtol=1e-10)
    # Newton–Girard itself is right on the brute force (small D)
    A6, B6 = A[:, :6], B[:, :6]
    for d in range(1, 7):
        np.testing.assert_allclose(esp_newton_girard(A6, B6, h[:6], d),
                                   _brute_force(A6, B6, h[:6], d), rtol=1e-10)


def test_esp_diagonal_is_binomial_and_bandwidths_use_ddof1():
    X = _data(30, 7, 7, scale=3.0)
    h = salsa_bandwidths(X, c=20.0)
    np.testing.assert_allclose(h, 20.0 * X.std(axis=0, ddof=1) * 30 ** (-0.2))
    for d in (1, 3, 7):
        np.testing.assert_allclose(np.diag(esp_kernel(X, X, h, d)), math.comb(7, d))
    Xc = X.copy()
    Xc[:, 2] = 4.0  # constant column: σ = 1 fallback keeps everything finite
    assert np.isfinite(salsa_bandwidths(Xc)).all()


def test_esp_rejects_bad_orders():
    A = _data(3, 4)
    h = salsa_bandwidths(A)
    with pytest.raises(ValueError):
        esp_kernel(A, A, h, 5)
    with pytest.raises(ValueError):
        esp_kernel(A, A, h, 0)


# ------------------------------------------------------------------------------- the solvers
def _regression(m=120, D=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(m, D))
    y = 2 * X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.3 * rng.normal(size=m) + 3.0
    return X, y


def test_exact_equals_kernel_ridge_precomputed():
    X, y = _regression()
    Xt, _ = _regression(37, seed=1)
    m, lam, d = X.shape[0], 3e-3, 2
    est = SALSARegressor(order=d, lambda_bounds=(lam, lam)).fit(X, y)
    assert est.best_params_ == {"order": d, "lambda": lam, "variant": "exact",
                                "n_landmarks": None, "threshold": 4000}
    assert est.tune_time_ == 0.0
    h = 20.0 * X.std(axis=0, ddof=1) * m ** (-0.2)
    s = np.std(y, ddof=1)
    # kernel ridge on the standardised targets, predictions scaled back by σ_Y
    K = esp_kernel(X, X, h, d)
    kr = KernelRidge(alpha=m * lam, kernel="precomputed").fit(K, (y - y.mean()) / s)
    np.testing.assert_allclose(est.dual_coef_, kr.dual_coef_, rtol=1e-8, atol=1e-10)
    expected = s * kr.predict(esp_kernel(Xt, X, h, d)) + y.mean()
    np.testing.assert_allclose(est.predict(Xt), expected, rtol=1e-9, atol=1e-9)


def test_nystrom_with_all_landmarks_equals_exact():
    X, y = _regression(150)
    Xt, _ = _regression(40, seed=2)
    for d, lam in [(1, 1e-3), (3, 1e-4)]:
        exact = SALSARegressor(order=d, lambda_bounds=(lam, lam)).fit(X, y)
        nys = SALSARegressor(order=d, lambda_bounds=(lam, lam), threshold=0, n_features=10**6,
                             random_state=0).fit(X, y)
        assert nys.best_params_["variant"] == "nystrom"
        assert nys.best_params_["n_landmarks"] == 150
        assert nys.best_params_["threshold"] == 0
        np.testing.assert_allclose(nys.predict(Xt), exact.predict(Xt), atol=1e-6, rtol=0)
        np.testing.assert_allclose(nys.predict(X), exact.predict(X), atol=1e-6, rtol=0)


def test_exact_fold_paths_equal_direct_fold_solves():
    X, y = _regression(90)
    m = X.shape[0]
    yc = (y - y.mean()) / np.std(y, ddof=1)      # the engines see standardised targets
    h = salsa_bandwidths(X)
    splits = [(np.arange(30, 90), np.arange(30)), (np.arange(60), np.arange(60, 90))]
    engine = salsa._ExactEngine(X, h, yc, cap=5, lookahead=2)
    folds = engine.folds(2, splits, n_jobs=1)
    K = esp_kernel(X, X, h, 2)
    lams = np.array([1e-4, 1e-2, 1.0])
    got = _cv_mse(folds, lams)
    for i, lam in enumerate(lams):
        errs = []
        for tr, va in splits:
            a = np.linalg.solve(K[np.ix_(tr, tr)] + tr.size * lam * np.eye(tr.size), yc[tr])
            errs.append(np.mean((K[np.ix_(va, tr)] @ a - yc[va]) ** 2))
        assert got[i] == pytest.approx(np.mean(errs), rel=1e-8)
    # two threads give the same folds
    folds2 = engine.folds(2, splits, n_jobs=2)
    np.testing.assert_allclose(_cv_mse(folds2, lams), got, rtol=1e-12)
    assert m == 90


def test_nystrom_fold_paths_equal_ridge_cv_mse_path():
    X, y = _regression(200)
    yc = (y - y.mean()) / np.std(y, ddof=1)      # the engines see standardised targets
    h = salsa_bandwidths(X)
    engine = _NystromEngine(X, h, yc, np.arange(0, 200, 5))
    rng = np.random.default_rng(0)
    perm = rng.permutation(200)
    splits = [(np.setdiff1d(perm, perm[k::4]), np.sort(perm[k::4])) for k in range(4)]
    splits.append((np.arange(0, 120), np.arange(150, 200)))  # not a partition of the rows
    lams = np.logspace(-4, 1, 7)
    Phi, _ = engine.features(2)
    ref = cv_mse_path(Phi, yc, splits[:4], lams, fit_intercept=False).mean(axis=0)
    np.testing.assert_allclose(_cv_mse(engine.folds(2, splits[:4], 1), lams), ref, rtol=1e-8)
    # the non-partition split is computed from its own training rows
    tr, va = splits[4]
    st = GramStats.of(Phi[tr], yc[tr])
    c = np.linalg.solve(st.G + tr.size * 1e-2 * np.eye(st.G.shape[0]), st.b)
    direct = np.mean((Phi[va] @ c - yc[va]) ** 2)
    assert _cv_mse(engine.folds(2, [splits[4]], 1), [1e-2])[0] == pytest.approx(direct, rel=1e-8)


def test_every_cpu_eigendecomposition_goes_through_one_driver_choice(monkeypatch):
    """The exact folds, the Nyström K_nn and the exact final fallback all call ``_scipy_eigh``
    (the driver, syevd, chosen in one place); the fallback's solve equals the Cholesky one."""
    X, y = _regression(60)
    yc = (y - y.mean()) / np.std(y, ddof=1)
    h = salsa_bandwidths(X)
    calls = []
    real = salsa._scipy_eigh
    monkeypatch.setattr(salsa, "_scipy_eigh", lambda A: calls.append(A.shape) or real(A))
    exact = salsa._ExactEngine(X, h, yc, cap=3, lookahead=1)
    exact.folds(2, [(np.arange(20, 60), np.arange(20))], n_jobs=1)
    assert calls == [(40, 40)]
    _NystromEngine(X, h, yc, np.arange(0, 60, 3)).features(2)
    assert calls[-1] == (20, 20)
    # the final solve's eigenvalue fallback, taken when the Cholesky factorisation fails
    cholesky = salsa._ExactEngine(X, h, yc, cap=3, lookahead=1).final(2, 1e-3)

    def failing(*args, **kwargs):
        raise np.linalg.LinAlgError("not positive definite")

    monkeypatch.setattr(salsa.scipy.linalg, "cho_factor", failing)
    fallback = salsa._ExactEngine(X, h, yc, cap=3, lookahead=1).final(2, 1e-3)
    assert calls[-1] == (60, 60)
    np.testing.assert_allclose(fallback, cholesky, rtol=1e-8, atol=1e-10)


# ----------------------------------------------------------------------------- order search
def _check_search_rule(est, D):
    path = est.order_path_
    errs = [p["cv_mse"] for p in path]
    assert [p["order"] for p in path] == list(range(1, len(path) + 1))
    best = est.best_params_["order"]
    assert best == int(np.argmin(errs)) + 1
    # stops after `patience` orders without improvement (or at D)
    assert len(path) == min(D, best + est.patience)
    from rfbench.methods.salsa import EXACT_LAMBDA_BOUNDS, NYSTROM_LAMBDA_BOUNDS

    default = NYSTROM_LAMBDA_BOUNDS if est.best_params_["variant"] == "nystrom" else EXACT_LAMBDA_BOUNDS
    lo, hi = est.lambda_bounds or default
    assert all(lo <= p["lambda"] <= hi for p in path)


def test_order_search_rule_strict_improvement_and_patience():
    errs = {1: 3.0, 2: 2.0, 3: 2.0, 4: 1.5, 5: 1.6, 6: 1.5, 7: 1.7, 8: 0.1}
    calls, forgotten = [], []

    def evaluate(d):
        calls.append(d)
        return 1e-3 * d, errs[d]

    best, lam, err, path = _order_search(evaluate, range(1, 9), 3,
                                         lambda keep, frm: forgotten.append((keep, frm)))
    # a tie (order 3, order 6) is no improvement; three misses after order 4 stop the search
    assert (best, lam, err) == (4, 4e-3, 1.5)
    assert calls == [1, 2, 3, 4, 5, 6, 7]
    assert [p["order"] for p in path] == calls
    assert forgotten[-1] == ({4}, 8)
    best, *_ = _order_search(evaluate, range(1, 9), 4)
    assert best == 8
    best, _, _, path = _order_search(evaluate, range(1, 4), 3)  # capped at D = 3
    assert best == 2 and len(path) == 3


def test_order_search_picks_one_on_additive_function():
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(200, 6))
    y = (np.sin(2 * X[:, 0]) + np.sin(2 * X[:, 1]) + np.cos(2 * X[:, 2]) + X[:, 3]
         + 0.3 * rng.normal(size=200))
    # c = 5 (the paper's robust range is 5..60) makes the base kernels narrow enough that an
    # additive model is clearly better than any higher order
    est = SALSARegressor(c=5.0, random_state=0).fit(X, y)
    assert est.best_params_["order"] == 1
    _check_search_rule(est, 6)
    assert est.tune_time_ > 0


@pytest.mark.parametrize("c", [5.0, 20.0])
@pytest.mark.slow
def test_order_search_picks_interaction_order(c):
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, size=(200, 6))
    y = 2 * X[:, 0] * X[:, 1] + np.sin(X[:, 2]) + 0.3 * rng.normal(size=200)
    est = SALSARegressor(c=c, random_state=0).fit(X, y)
    assert est.best_params_["order"] >= 2
    assert est.order_path_[0]["cv_mse"] > 5 * est.cv_mse_
    _check_search_rule(est, 6)


def test_max_order_and_patience_limit_the_search():
    X, y = _regression(80, D=6)
    est = SALSARegressor(max_order=2, random_state=0).fit(X, y)
    assert len(est.order_path_) <= 2
    est = SALSARegressor(patience=1, random_state=0).fit(X, y)
    best = est.best_params_["order"]
    assert len(est.order_path_) == min(6, best + 1)


def test_explicit_folds_and_nystrom_search():
    X, y = _regression(150, D=4)
    folds = [(np.arange(50, 150), np.arange(50)), (np.arange(100), np.arange(100, 150))]
    est = SALSARegressor(cv=folds, threshold=100, n_features=60, random_state=3).fit(X, y)
    assert est.best_params_["variant"] == "nystrom"
    assert est.best_params_["n_landmarks"] == 60
    assert est.X_fit_.shape == (60, 4)
    assert est.best_params_["order"] >= 2
    assert np.mean((est.predict(X) - y) ** 2) < 0.5 * np.var(y)
    default = SALSARegressor(threshold=100, random_state=3, order=1).fit(X, y)
    assert default.best_params_["n_landmarks"] == 150  # min(m, 500)


def test_krr_is_full_order_salsa():
    X, y = _regression(100, D=4)
    krr = KRRRegressor(c_grid=None, random_state=0).fit(X, y)
    full = SALSARegressor(order="full", random_state=0).fit(X, y)
    assert krr.best_params_["order"] == 4 == full.best_params_["order"]
    assert len(krr.order_path_) == 1
    assert krr.best_params_["lambda"] == full.best_params_["lambda"]
    np.testing.assert_allclose(krr.predict(X), full.predict(X), rtol=1e-10)
    assert "order" not in krr.get_params()
    assert SALSARegressor(order=99, lambda_bounds=(1e-2, 1e-2)).fit(X, y).order_ == 4


def test_krr_chooses_its_bandwidth_by_cv_on_one_set_of_splits():
    """The paper's KRR tunes by CV grid search: the chosen c is the one whose fixed-c fit on the
    same inner splits has the lowest CV MSE, and the model is that fit (naive loop as reference)."""
    X, y = _regression(150, D=4)
    X = np.hstack([X, np.random.default_rng(5).normal(size=(150, 6))])    # noise inputs: c matters
    splits = list(KFold(5, shuffle=True, random_state=1).split(X))
    grid = (2.0, 20.0, 200.0)
    fits = [KRRRegressor(c=c, c_grid=None, cv=splits, random_state=0).fit(X, y) for c in grid]
    best = min(fits, key=lambda f: f.cv_mse_)
    krr = KRRRegressor(c_grid=grid, cv=splits, random_state=0).fit(X, y)
    assert krr.best_params_["c"] == best.c and len({f.cv_mse_ for f in fits}) == 3
    assert krr.cv_mse_ == best.cv_mse_
    np.testing.assert_allclose(krr.predict(X), best.predict(X), rtol=1e-12)
    with pytest.raises(ValueError, match="c_grid"):
        KRRRegressor(c_grid=(1.0, -2.0)).fit(X, y)


def test_predict_in_chunks(monkeypatch):
    X, y = _regression(60)
    Xt, _ = _regression(45, seed=4)
    est = SALSARegressor(order=2, random_state=0).fit(X, y)
    whole = est.predict(Xt)
    monkeypatch.setattr(salsa, "_CHUNK_ELEMS", 70)  # one test row per chunk
    np.testing.assert_allclose(est.predict(Xt), whole, rtol=1e-9)  # BLAS gemv vs dot rounding


def test_reproducible_and_seed_sensitive():
    X, y = _regression(120)
    a = SALSARegressor(random_state=5, threshold=50, n_features=30).fit(X, y)
    b = SALSARegressor(random_state=5, threshold=50, n_features=30).fit(X, y)
    c = SALSARegressor(random_state=6, threshold=50, n_features=30).fit(X, y)
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    assert not np.array_equal(a.X_fit_, c.X_fit_)


@pytest.mark.parametrize("params", [{"order": 0}, {"order": "half"}, {"c": -1.0},
                                    {"lambda_bounds": (1.0, 0.1)}, {"patience": 0},
                                    {"n_features": 0}, {"max_order": 0}, {"cv": 1}])
def test_invalid_parameters_raise_in_fit(params):
    X, y = _regression(30)
    est = SALSARegressor(**params)  # __init__ never validates
    with pytest.raises(ValueError):
        est.fit(X, y)


# ---------------------------------------------------------------------- scikit-learn contract
@parametrize_with_checks([
    SALSARegressor(cv=3, n_lambda_evals=10, random_state=0),
    SALSARegressor(cv=3, n_lambda_evals=10, threshold=0, n_features=15, random_state=0),
    KRRRegressor(cv=3, n_lambda_evals=10, random_state=0),
])
@pytest.mark.slow
def test_sklearn_compatible(estimator, check):
    check(estimator)


def test_scale_equivariant_in_y():
    """Multiplying y by a constant multiplies the predictions and CV errors (λ keeps its meaning)."""
    X, y = _regression(120, D=4)
    a = SALSARegressor(random_state=0).fit(X, y)
    b = SALSARegressor(random_state=0).fit(X, 0.07 * y + 3.0)
    assert a.best_params_ == b.best_params_
    np.testing.assert_allclose(b.predict(X), 0.07 * a.predict(X) + 3.0, rtol=1e-8)
    assert b.cv_mse_ == pytest.approx(0.07**2 * a.cv_mse_, rel=1e-8)


@pytest.mark.parametrize("cls", [SALSARegressor, KRRRegressor])
def test_one_exact_fit_serves_every_budget(cls):
    # the exact variant has no landmarks, so n does not enter it: the runner fits it once for every
    # budget of a work item (SharesBudgets), and each budget's predictions and chosen parameters are
    # bit for bit those of a fit of that budget alone
    X, y = _regression(80, D=3)
    Xt, _ = _regression(30, D=3, seed=1)
    kw = {"cv": 3, "n_lambda_evals": 8, "random_state": 4}
    if cls is KRRRegressor:
        kw["c_grid"] = (10.0, 40.0)
    shared = cls(n_features=30, budgets=[10, 30], **kw)
    assert shared.shares_fit(80) and not cls(threshold=50).shares_fit(80) and cls(threshold=None).shares_fit(10**6)
    shared.fit(X, y)
    assert shared.budget_models_ is None
    for n in (10, 30):
        alone = cls(n_features=n, **kw).fit(X, y)
        np.testing.assert_array_equal(shared.predict(Xt, budget=n), alone.predict(Xt))
        assert shared.best_params_per_budget_[n] == alone.best_params_ == shared.best_params_
    with pytest.raises(ValueError, match="budget 20 was not fitted"):
        shared.predict(Xt, budget=20)


@pytest.mark.parametrize("cls", [SALSARegressor, KRRRegressor])
def test_nystrom_budgets_are_fitted_each_as_alone(cls):
    # above the threshold n is the number of landmarks: each budget is its own fit, identical to a
    # fit of that budget alone (same seed, same landmark draw), and the largest is the estimator's
    X, y = _regression(120, D=3)
    Xt, _ = _regression(30, D=3, seed=1)
    kw = {"cv": 3, "n_lambda_evals": 8, "random_state": 4, "threshold": 50}
    if cls is KRRRegressor:
        kw["c_grid"] = (10.0, 40.0)
    both = cls(n_features=40, budgets=[40, 15], **kw).fit(X, y)
    assert sorted(both.budget_models_) == [15, 40]
    for n in (15, 40):
        alone = cls(n_features=n, **kw).fit(X, y)
        np.testing.assert_array_equal(both.predict(Xt, budget=n), alone.predict(Xt))
        assert both.best_params_per_budget_[n] == alone.best_params_
        assert alone.best_params_["n_landmarks"] == n
    np.testing.assert_array_equal(both.predict(Xt), both.predict(Xt, budget=40))
    assert both.tune_time_ == pytest.approx(sum(m.tune_time_ for m in both.budget_models_.values()))
