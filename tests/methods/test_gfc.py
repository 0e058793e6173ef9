"""GFC (Greedy Feature Construction): gradients, behaviour of Algorithms 1/2, estimator contract."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.cvgrad import inverted_kfold, prepare_splits
from rfbench.methods.gfc import GFCRegressor, feature_objective, greedy_descent


def ridge_data(seed, m, d=2, noise=0.1):
    """y = cos(w₁·x) + 0.5 cos(w₂·x + 1) + noise: two known cosine ridge functions."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    W = np.array([[1.0, -0.5], [0.5, 1.2]])[:d]
    f = np.cos(X @ W[:, 0]) + 0.5 * np.cos(X @ W[:, 1] + 1.0)
    return X, f + noise * rng.normal(size=m), f


def test_feature_objective_gradient_matches_finite_differences():
    rng = np.random.default_rng(0)
    m, d = 80, 3
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    f = 0.3 * rng.normal(size=m) + y.mean()
    splits = prepare_splits(inverted_kfold(m, 5, rng), m)
    theta = np.append(rng.normal(size=d), np.log(3e-3))
    _, grad = feature_objective(theta, X, y, f, splits, 0.8)
    h = 1e-6
    fd = np.array([(feature_objective(theta + h * e, X, y, f, splits, 0.8)[0]
                    - feature_objective(theta - h * e, X, y, f, splits, 0.8)[0]) / (2 * h)
                   for e in np.eye(d + 1)])
    for part in (slice(0, d), slice(d, d + 1)):          # w and log λ separately
        assert np.linalg.norm(grad[part] - fd[part]) / np.linalg.norm(fd[part]) < 1e-5


def test_feature_objective_uses_the_fixed_column():
    """The current estimate f enters the design: a perfect f gives (almost) zero CV error."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 2))
    y = np.sin(X[:, 0])
    splits = prepare_splits(inverted_kfold(60, 5, rng), 60)
    theta = np.array([0.3, -0.7, np.log(1e-8)])
    good, _ = feature_objective(theta, X, y, y.copy(), splits)
    bad, _ = feature_objective(theta, X, y, np.full(60, y.mean()), splits)
    assert good < 1e-6 < bad


def test_greedy_descent_stops_on_small_relative_improvement():
    """ε-stop: a single cosine is fitted in a few steps, far fewer than p."""
    rng = np.random.default_rng(2)
    X = rng.normal(size=(400, 2))
    y = np.cos(X @ np.array([0.8, -0.4])) + 0.01 * rng.normal(size=400)
    W, lams = greedy_descent(X, y, np.full(400, y.mean()), max_steps=20, epsilon=0.01,
                             n_folds=5, seed=0)
    assert W.shape[0] == 2 and 1 <= W.shape[1] < 8 and lams.shape == (W.shape[1],)
    assert np.all(lams > 0)
    # with ε = 0 the descent runs the full p steps
    W_all, _ = greedy_descent(X, y, np.full(400, y.mean()), max_steps=5, epsilon=0.0,
                              n_folds=5, seed=0)
    assert W_all.shape[1] == 5


def test_descent_optimises_on_the_inverted_split(monkeypatch):
    """Inside a descent the ridge is trained on ONE fold and validated on the other k−1 (§2.5)."""
    import rfbench.methods.gfc as gfc

    seen = set()

    class Spy(gfc.OneFrequencyCV):
        def __init__(self, X, y, fixed, splits):
            super().__init__(X, y, fixed, splits)
            seen.add(tuple((sp.tr.size, sp.va.size) for sp in self.splits))

    monkeypatch.setattr(gfc, "OneFrequencyCV", Spy)
    X, y, _ = ridge_data(7, 200)
    greedy_descent(X, y, np.full(200, y.mean()), max_steps=1, epsilon=0.0, n_folds=5, seed=0)
    assert seen == {((40, 160),) * 5}


@pytest.mark.parametrize("seed", [0, 1])
def test_reaches_noise_level_on_cosine_ridge_functions(seed):
    noise = 0.1
    X, y, f = ridge_data(seed, 4000, noise=noise)
    est = GFCRegressor(n_features=40, random_state=seed).fit(X[:2000], y[:2000])
    rmse = np.sqrt(np.mean((est.predict(X[2000:]) - y[2000:]) ** 2))
    assert rmse < 1.1 * noise                      # a constant predictor has RMSE ≈ 0.8
    assert 0 < est.n_features_out_ <= 40
    assert est.frequencies_.shape == (2, est.n_features_out_)
    assert est.coef_.shape == (2 * est.n_features_out_,)
    assert est.best_params_["n_features_kept"] == est.n_features_out_
    assert est.best_params_["n_features_built"] >= est.n_features_out_
    assert est.tune_time_ > 0


@pytest.mark.slow
def test_parallel_and_sequential_give_identical_results():
    X, y, _ = ridge_data(3, 600)
    kw = dict(n_features=30, n_descents=3, max_steps=4, random_state=7)
    seq = GFCRegressor(n_jobs=1, **kw).fit(X, y)
    par = GFCRegressor(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(seq.frequencies_, par.frequencies_)
    np.testing.assert_array_equal(seq.predict(X), par.predict(X))
    assert seq.best_params_ == par.best_params_


@pytest.mark.parametrize("chunks, sizes", [(None, [100, 100, 100]), ("all", [300, 300, 300]),
                                           ("partition", [100, 100, 100]), (0.5, [150, 150, 150])])
def test_rows_of_each_descent(monkeypatch, chunks, sizes):
    """S_j ~ U{1..m}: by default (the paper, method-notes §2.4) M disjoint random chunks that cover
    the rows; the alternatives all rows per descent or a random fraction."""
    import rfbench.methods.gfc as gfc

    seen = []
    real = gfc.greedy_descent

    def spy(X, y, f0, *args, **kw):
        seen.append(X.copy())
        return real(X, y, f0, *args, **kw)

    monkeypatch.setattr(gfc, "greedy_descent", spy)
    X, y, _ = ridge_data(8, 300)
    kw = {} if chunks is None else {"chunks": chunks}
    GFCRegressor(n_features=6, n_descents=3, max_steps=2, random_state=0, **kw).fit(X, y)
    assert [len(Xj) for Xj in seen] == sizes
    rows = [{tuple(r) for r in Xj} for Xj in seen]
    assert all(r <= {tuple(x) for x in X} for r in rows)
    if chunks in (None, "partition"):
        assert not (rows[0] & rows[1]) and not (rows[1] & rows[2]) and not (rows[0] & rows[2])
        assert rows[0] | rows[1] | rows[2] == {tuple(x) for x in X}
        assert sorted(seen[0][:, 0]) != sorted(X[:100, 0])      # random, not the first rows
    elif chunks == 0.5:
        assert rows[0] != rows[1]                    # independent samples per descent


@pytest.mark.parametrize("chunks", ["some", 0.0, 1.5])
def test_invalid_chunks_is_refused(chunks):
    X, y, _ = ridge_data(9, 50)
    with pytest.raises(ValueError, match="chunks"):
        GFCRegressor(n_features=4, chunks=chunks).fit(X, y)


def test_descent_draws_new_folds_every_step(monkeypatch):
    import rfbench.methods.gfc as gfc

    seen = []   # the targets of the first training fold, which identify its rows

    class Spy(gfc.OneFrequencyCV):
        def __init__(self, X, y, fixed, splits):
            super().__init__(X, y, fixed, splits)
            seen.append(frozenset(y[self.splits[0].tr]))

    monkeypatch.setattr(gfc, "OneFrequencyCV", Spy)
    X, y, _ = ridge_data(10, 200)
    greedy_descent(X, y, np.full(200, y.mean()), max_steps=3, epsilon=0.0, n_folds=5, seed=0)
    assert len(seen) == 3 and len(set(seen)) == 3


def test_budget_and_default_number_of_descents():
    X, y, _ = ridge_data(4, 300)
    est = GFCRegressor(n_features=10, epsilon=0.0, random_state=0).fit(X, y)
    # n_features // 20 = 0 → one descent, whose p is capped by the budget of 10
    assert est.best_params_["n_features_built"] == 10
    est = GFCRegressor(n_features=40, max_steps=3, epsilon=0.0, random_state=0).fit(X, y)
    assert est.best_params_["n_features_built"] == 2 * 3     # M = 40 // 20 = 2 descents × p = 3


def test_amplitude_cut_off_prunes_and_refits():
    X, y, _ = ridge_data(5, 500)
    est = GFCRegressor(n_features=20, eta_rel=0.02, epsilon=0.0, random_state=0).fit(X, y)
    built, kept = est.best_params_["n_features_built"], est.best_params_["n_features_kept"]
    assert kept < built == 20
    S, C = np.sin(X @ est.frequencies_), np.cos(X @ est.frequencies_)
    np.testing.assert_allclose(est.predict(X), np.hstack([S, C]) @ est.coef_ + est.intercept_)


def test_seed_reproducibility():
    X, y, _ = ridge_data(6, 300)
    a = GFCRegressor(n_features=20, random_state=3).fit(X, y).predict(X)
    b = GFCRegressor(n_features=20, random_state=np.random.default_rng(3)).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)


@parametrize_with_checks([GFCRegressor(n_features=10, max_steps=5)])
@pytest.mark.slow
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("bias", ["penalised", "centred"])
def test_final_ridge_penalises_the_bias_feature(bias):
    """Alg. 2 line 6: the bias (w = 0's constant feature) is one of the amplitudes penalised by ν;
    checked against a naive solve of (ZᵀZ + mνI)a = Zᵀy. The centred option leaves it unpenalised."""
    X, y, _ = ridge_data(11, 400, noise=0.3)
    y = y + 5.0                                     # a large mean makes the penalty on the bias visible
    est = GFCRegressor(n_features=20, bias=bias, random_state=0).fit(X, y)
    nu, m = est.best_params_["nu"], len(y)
    SC = np.hstack([np.sin(X @ est.frequencies_), np.cos(X @ est.frequencies_)])
    if bias == "penalised":
        Z = np.column_stack([np.ones(m), SC])
        a = np.linalg.solve(Z.T @ Z + m * nu * np.eye(Z.shape[1]), Z.T @ y)
        want_coef, want_intercept = a[1:], a[0]
    else:
        Zc, yc = SC - SC.mean(axis=0), y - y.mean()
        want_coef = np.linalg.solve(Zc.T @ Zc + m * nu * np.eye(Zc.shape[1]), Zc.T @ yc)
        want_intercept = y.mean() - SC.mean(axis=0) @ want_coef
    np.testing.assert_allclose(est.coef_, want_coef, rtol=1e-6, atol=1e-9)
    assert est.intercept_ == pytest.approx(want_intercept, rel=1e-8)


def test_nu_is_the_minimiser_of_the_continuous_cv_curve():
    """Line 6's ν: the 1-D CV problem solved continuously, checked against a naive ridge per fold
    on a fine grid (the grid reading would be off by up to half a grid step)."""
    from rfbench.methods.ridge import select_lambda_continuous

    rng = np.random.default_rng(12)
    m, p = 300, 40
    Z = np.column_stack([np.ones(m), rng.normal(size=(m, p))])
    y = Z[:, 1:6] @ rng.normal(size=5) + 2.0 + rng.normal(size=m)
    folds = np.array_split(rng.permutation(m), 5)
    splits = [(np.setdiff1d(np.arange(m), va), va) for va in folds]

    def naive_cv(lam):
        errs = []
        for tr, va in splits:
            a = np.linalg.solve(Z[tr].T @ Z[tr] + len(tr) * lam * np.eye(p + 1), Z[tr].T @ y[tr])
            errs.append(np.mean((Z[va] @ a - y[va]) ** 2))
        return np.mean(errs)

    nu, err = select_lambda_continuous(Z, y, splits, fit_intercept=False)
    fine = np.logspace(-6, 1, 1401)
    curve = np.array([naive_cv(v) for v in fine])
    assert err == pytest.approx(naive_cv(nu), rel=1e-9)
    assert err <= curve.min() + 1e-12
    assert abs(np.log(nu) - np.log(fine[curve.argmin()])) < 0.02


def test_descent_lambda_is_unbounded_and_the_objective_unscaled_by_default(monkeypatch):
    """App. C.1 bounds neither λ nor scales the CV objective; both survive only as options."""
    import rfbench.methods.gfc as gfc

    calls = []
    real = gfc.scipy.optimize.minimize

    def spy(fun, x0, args=(), **kw):
        calls.append((kw["bounds"][-1], args[-1]))
        return real(fun, x0, args=args, **kw)

    monkeypatch.setattr(gfc.scipy.optimize, "minimize", spy)
    X, y, _ = ridge_data(13, 200)
    y = 3.0 * y                                         # var(y) far from 1
    GFCRegressor(n_features=4, max_steps=2, random_state=0).fit(X, y)
    assert calls and all(b == (None, None) and y_var == 1.0 for b, y_var in calls)
    calls.clear()
    est = GFCRegressor(n_features=4, max_steps=2, lambda_bounds=(1e-3, 1e-2), scale_objective=True,
                       random_state=0).fit(X, y)
    assert all(b == pytest.approx(tuple(np.log([1e-3, 1e-2]))) and y_var == pytest.approx(np.var(y))
               for b, y_var in calls)
    assert np.all((est.feature_lambdas_ >= 1e-3 * (1 - 1e-12)) & (est.feature_lambdas_ <= 1e-2 * (1 + 1e-12)))


def test_epsilon_stop_ends_the_paper_default_descents_early():
    """The ε-stop fires in the default estimator: a single cosine is fitted by far fewer steps than
    p in every descent (App. C.1: GFC 'terminates sooner' on simple hypotheses)."""
    rng = np.random.default_rng(14)
    X = rng.normal(size=(2000, 3))
    y = np.cos(X @ np.array([0.8, -0.4, 0.3])) + 0.01 * rng.normal(size=2000)
    est = GFCRegressor(n_features=100, random_state=0).fit(X, y)
    steps = est.descent_steps_[0]
    assert len(steps) == 5 and max(steps) < 10 and est.best_params_["n_features_built"] == sum(steps) < 50


@pytest.mark.parametrize("option, value", [("bias", "free"), ("nu_search", "brent"), ("lambda_bounds", (1.0, 0.1))])
def test_invalid_options_are_refused(option, value):
    X, y, _ = ridge_data(15, 50)
    with pytest.raises(ValueError, match=option):
        GFCRegressor(n_features=4, **{option: value}).fit(X, y)


def test_continuous_nu_is_not_bounded_by_the_grid():
    """A grid edge is not a bound: noiseless linear data want λ → 0, far below the grid's 1e-10,
    and the search follows them down (to where ridge is plain least squares)."""
    from rfbench.methods.ridge import DEFAULT_LAMBDAS, select_lambda_continuous

    rng = np.random.default_rng(16)
    Z = rng.normal(size=(300, 10))
    y = Z @ rng.normal(size=10)
    folds = np.array_split(rng.permutation(300), 5)
    splits = [(np.setdiff1d(np.arange(300), va), va) for va in folds]
    nu, err = select_lambda_continuous(Z, y, splits)
    assert nu < DEFAULT_LAMBDAS[0] / 1e4 and err < 1e-20


def test_unbounded_lambda_survives_a_singular_fold_system():
    """With λ unbounded, L-BFGS-B may try λ ≈ 0 where [f, sin, cos] is singular (f constant, w = 0):
    the objective is then the value at the rounding floor with zero λ-derivative, not an exception."""
    import rfbench.methods.gfc as gfc
    from rfbench.methods.cvgrad import OneFrequencyCV

    rng = np.random.default_rng(17)
    X, y = rng.normal(size=(100, 2)), rng.normal(size=100)
    cv = OneFrequencyCV(X, y, np.full(100, 0.5), prepare_splits(inverted_kfold(100, 5, rng), 100))
    theta = np.array([0.0, 0.0, -700.0])
    with pytest.raises(np.linalg.LinAlgError):
        cv(theta[:-1], np.exp(theta[-1]))
    value, grad = gfc.fast_feature_objective(theta, cv)
    want, _, _ = cv(theta[:-1], gfc.NUMERIC_LAMBDA_FLOOR)
    assert value == want and np.isfinite(grad).all() and grad[-1] == 0.0


@pytest.mark.parametrize("bias", ["penalised", "centred"])
def test_every_feature_pruned_leaves_the_bias_alone(bias):
    """Line 7 never drops the bias: with a cut-off above every amplitude the model is a constant
    (the centred intercept is mean(y); the penalised bias is the ν-shrunk one-column ridge)."""
    X, y, _ = ridge_data(18, 200)
    est = GFCRegressor(n_features=10, eta_rel=100.0, bias=bias, random_state=0).fit(X, y)
    assert est.n_features_out_ == 0 and est.coef_.shape == (0,)
    pred = est.predict(X)
    assert np.ptp(pred) == 0
    nu, m = est.best_params_["nu"], len(y)
    want = y.mean() if bias == "centred" else y.sum() / (m + m * nu)     # (1ᵀ1 + mν) a = 1ᵀy
    assert pred[0] == pytest.approx(want, rel=1e-10)
