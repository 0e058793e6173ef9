"""GBRFF1/GBRFF2: step size, initial score, gradients, toy accuracy, labels, estimator contract."""

import json

import numpy as np
import pytest
from scipy.optimize import minimize_scalar
from sklearn.datasets import make_circles, make_moons
from sklearn.model_selection import train_test_split
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods.common import standardise_columns
from rfbench.methods.gbrff import (
    ALPHA_CAP,
    CosineRefinement,
    GBRFF1Classifier,
    GBRFF1Regressor,
    GBRFF2Classifier,
    GBRFF2Regressor,
    amplitude_phase,
    amplitude_phase_from,
    exp_loss_step,
    fit_gbrff2,
    frequency_objective,
    frequency_objective_sq,
    initial_score,
    landmark_objective,
    landmark_objective_sq,
    sincos,
)
from rfbench.methods.rfkit import decode_binary_labels


def _fd_check(fun, x, rtol=1e-5):
    """Analytic gradient of fun (returning (f, g)) against central finite differences."""
    _, g = fun(x)
    h = 1e-6
    fd = np.array([(fun(x + h * e)[0] - fun(x - h * e)[0]) / (2 * h) for e in np.eye(x.size)])
    np.testing.assert_allclose(g, fd, rtol=rtol, atol=1e-8 * max(1.0, np.abs(fd).max()))


# ---------------------------------------------------------------- closed forms
def test_alpha_minimises_the_exponential_loss_bound():
    rng = np.random.default_rng(0)
    for _ in range(20):
        n = 50
        y = rng.choice([-1.0, 1.0], n)
        w = rng.exponential(size=n)
        h = np.clip(0.4 * y + rng.uniform(-0.8, 0.8, n), -1, 1)

        def bound(a, w=w, y=y, h=h):
            return np.sum(w * ((1 - y * h) / 2 * np.exp(a) + (1 + y * h) / 2 * np.exp(-a)))

        alpha, capped = exp_loss_step(w, y, h)
        ref = minimize_scalar(bound, bracket=(-1, 1), tol=1e-12).x
        assert not capped
        assert alpha == pytest.approx(ref, abs=1e-6)
        # and the bound really bounds the exp loss at that α
        assert np.sum(w * np.exp(-alpha * y * h)) <= bound(alpha) + 1e-12
    # sign convention (the text of §3.2 prints the inverse): a learner agreeing with y gets α > 0
    assert exp_loss_step(np.ones(4), np.array([1.0, 1, -1, -1]), np.array([0.5, 0.5, -0.5, -0.5]))[0] > 0


def test_alpha_guard_counts_non_finite_steps():
    y = np.array([1.0, -1.0, 1.0])
    assert exp_loss_step(np.ones(3), y, y) == (ALPHA_CAP, True)  # perfect learner
    assert exp_loss_step(np.ones(3), y, -y) == (-ALPHA_CAP, True)
    alpha, capped = exp_loss_step(np.array([np.inf, 1.0, 1.0]), y, np.array([0.5, 0.1, 0.1]))
    assert capped and np.isfinite(alpha)


def test_initial_score_minimises_exp_loss_over_constants():
    y = np.array([1.0] * 7 + [-1.0] * 3)
    ref = minimize_scalar(lambda c: np.sum(np.exp(-y * c)), tol=1e-12).x
    assert initial_score(y) == pytest.approx(ref, abs=1e-6)
    assert initial_score(y) == pytest.approx(0.5 * np.log((1 + y.mean()) / (1 - y.mean())))
    assert np.isfinite(initial_score(np.ones(5)))  # one class only: guarded


# ---------------------------------------------------------------- gradients
def test_landmark_gradient_and_value():
    rng = np.random.default_rng(1)
    n, d, K = 40, 3, 5
    X = rng.standard_normal((n, d))
    Omega = rng.standard_normal((K, d))
    yt = rng.choice([-1.0, 1.0], n) * rng.exponential(size=n)
    A = Omega @ X.T
    cosA, sinA = np.cos(A), np.sin(A)
    x = rng.standard_normal(d)
    # the value is eq. (9) evaluated directly
    direct = np.mean([np.exp(-yt[i] * np.mean([np.cos(Omega[j] @ (x - X[i])) for j in range(K)]))
                      for i in range(n)])
    assert landmark_objective(x, Omega, cosA, sinA, yt)[0] == pytest.approx(direct, rel=1e-12)
    _fd_check(lambda z: landmark_objective(z, Omega, cosA, sinA, yt), x)
    # the derivative printed in the paper (Σ_j ω_j factored out) is *not* the gradient
    e = np.exp(-yt * np.cos(Omega @ x[:, None] - A).mean(0))
    printed = (yt * np.sin(Omega @ x[:, None] - A).sum(0) * e).sum() / (K * n) * Omega.sum(0)
    assert not np.allclose(printed, landmark_objective(x, Omega, cosA, sinA, yt)[1], rtol=1e-3)


def test_frequency_refinement_gradient():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((60, 4))
    yt = rng.choice([-1.0, 1.0], 60) * rng.exponential(size=60)
    for lam in (0.0, 0.125):
        _fd_check(lambda w, lam=lam: frequency_objective(w, X, yt, 0.7, lam), rng.standard_normal(4))


def test_regression_variant_gradients():
    rng = np.random.default_rng(3)
    n, d, K = 50, 3, 4
    X = rng.standard_normal((n, d))
    r = rng.standard_normal(n)
    _fd_check(lambda w: frequency_objective_sq(w, X, r, 0.8, -0.3, 0.1), rng.standard_normal(d))
    Omega = rng.standard_normal((K, d))
    A = Omega @ X.T
    z = np.append(rng.standard_normal(d), 0.6)
    _fd_check(lambda v: landmark_objective_sq(v, Omega, np.cos(A), np.sin(A), r), z)
    direct = np.mean((r - z[-1] * np.cos(Omega @ z[:-1][:, None] - A).mean(0)) ** 2)
    assert landmark_objective_sq(z, Omega, np.cos(A), np.sin(A), r)[0] == pytest.approx(direct)


def test_amplitude_phase_is_least_squares_cosine():
    rng = np.random.default_rng(4)
    u = rng.uniform(-5, 5, 200)
    r = 1.7 * np.cos(u - 0.9) + 0.01 * rng.standard_normal(200)
    a, b = amplitude_phase(r, u)
    assert a == pytest.approx(1.7, abs=0.01) and b == pytest.approx(0.9, abs=0.01)
    # no (a′, b′) on a fine grid does better
    grid_b = np.linspace(-np.pi, np.pi, 721)
    best = min(np.sum((r - (r @ np.cos(u - bb)) / np.sum(np.cos(u - bb) ** 2) * np.cos(u - bb)) ** 2)
               for bb in grid_b)
    assert np.sum((r - a * np.cos(u - b)) ** 2) <= best + 1e-12


def test_sincos_agrees_with_cos_and_sin_to_rounding():
    rng = np.random.default_rng(7)
    # ordinary, large and near-odd-multiple-of-π arguments (where tan(v/2) is ~1e16)
    v = np.concatenate([rng.uniform(-10, 10, 20000), rng.uniform(-1e4, 1e4, 20000),
                        np.pi * np.arange(-999, 1000, 2) + rng.normal(0, 1e-9, 1000), [0.0, -0.0, 1e-300]])
    c, s = sincos(v)
    assert np.max(np.abs(c - np.cos(v))) <= 4.5e-16 and np.max(np.abs(s - np.sin(v))) <= 4.5e-16
    with np.errstate(invalid="ignore"):   # tan(inf) is NaN: the warning is the expected case
        assert np.all(np.isnan(sincos(np.array([np.nan, np.inf]))[0]))


# well-conditioned normal equations; near-parallel columns (rotated path) down to σ₂/σ₁ ~ 1e-8
@pytest.mark.parametrize("spread", [3.0, 1e-2, 1e-5, 1e-8])
@pytest.mark.parametrize("centre", [0.4, 2.5, -3.0])
def test_amplitude_phase_closed_form_matches_qr_least_squares(spread, centre, monkeypatch):
    rng = np.random.default_rng(8)
    u = centre + spread * rng.standard_normal(500)
    r = rng.standard_normal(500) + 3.0 * np.cos(u - 1.0)
    Z = np.column_stack([np.cos(u), np.sin(u)])
    ref = np.linalg.lstsq(Z, r, rcond=None)[0]
    monkeypatch.setattr(np.linalg, "lstsq", None)  # closed forms only, no SVD (the point is speed)
    a, phi, k1, k2 = amplitude_phase_from(Z[:, 0], Z[:, 1], r)
    # both solve an ill-conditioned problem with error ~ κε (κ ~ 1/spread): compare at that scale
    tol = 1e-12 / min(spread, 1.0)
    np.testing.assert_allclose([k1, k2], ref, rtol=tol, atol=tol * np.abs(ref).max())
    assert (a, phi) == pytest.approx((np.hypot(*ref), np.arctan2(ref[1], ref[0])), rel=tol)
    # and the fit is as good as QR's (to the rounding of evaluating Z k, whose terms grow as κ)
    assert np.sum((r - Z @ [k1, k2]) ** 2) <= np.sum((r - Z @ ref) ** 2) * (1 + 1e-14 / min(spread, 1.0))


def test_amplitude_phase_of_a_constant_cosine_is_the_mean_fit():
    u = np.full(300, 0.7)  # ω = 0: the two columns are exactly parallel
    r = np.random.default_rng(3).standard_normal(300)
    a, phi, k1, k2 = amplitude_phase_from(np.cos(u), np.sin(u), r)
    np.testing.assert_allclose(k1 * np.cos(u) + k2 * np.sin(u), np.full(300, r.mean()), rtol=1e-12)


def test_refinement_reuses_its_last_evaluation_only_at_that_point():
    rng = np.random.default_rng(9)
    X, r = rng.standard_normal((80, 3)), rng.standard_normal(80)
    obj = CosineRefinement(X, r, 0.8, -0.3, 0.1)
    w = rng.standard_normal(3)
    obj(w)
    np.testing.assert_array_equal(np.stack(obj.cos_sin_at(w)), np.stack(sincos(X @ w + 0.3)))
    w2 = w + 1e-3
    np.testing.assert_allclose(np.stack(obj.cos_sin_at(w2)), np.stack([np.cos(X @ w2 + 0.3), np.sin(X @ w2 + 0.3)]),
                               atol=1e-15)


# ---------------------------------------------------------------- behaviour
@pytest.mark.parametrize("make", [
    lambda: make_moons(400, noise=0.15, random_state=0),
    lambda: make_circles(400, noise=0.08, factor=0.5, random_state=0),
])
def test_gbrff2_separates_toy_sets(make):
    X, y = make()
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = GBRFF2Classifier(n_features=60, gamma_grid=(0.5, 2.0), lambda_grid=(0.0, 2.0**-4), cv=3,
                           random_state=0).fit(Xtr, ytr)
    assert clf.score(Xte, yte) >= 0.9
    assert clf.cv_errors_.shape == (4,)
    assert clf.n_alpha_capped_ == 0


def test_gbrff1_separates_moons():
    X, y = make_moons(400, noise=0.15, random_state=1)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
    clf = GBRFF1Classifier(n_features=40, gamma_grid=(1.0,), beta_grid=(1.0,), random_state=0)
    assert clf.fit(Xtr, ytr).score(Xte, yte) >= 0.9
    assert clf.q_.shape == (40, 10) and np.allclose(clf.q_.sum(1), 1)
    assert clf.frequencies_.shape == (40, 10, 2) and clf.landmarks_.shape == (40, 2)


def test_final_model_is_the_selected_configuration_with_the_fit_seed():
    X, y = make_moons(200, noise=0.2, random_state=2)
    clf = GBRFF2Classifier(n_features=15, gamma_grid=(0.5, 2.0), lambda_grid=(0.0,), cv=3,
                           random_state=7).fit(X, y)
    assert clf.best_params_["g"] == (0.5, 2.0)[int(np.argmin(clf.cv_errors_))]
    assert clf.best_params_["gamma"] == clf.best_params_["g"] / 2
    mean, std = standardise_columns(X)
    ref = fit_gbrff2((X - mean) / std, 2.0 * y - 1, 15, clf.best_params_["gamma"], 0.0,
                     np.random.default_rng(clf.best_params_["seed"]))
    np.testing.assert_allclose(clf.decision_function(X), ref.decision((X - mean) / std))
    again = GBRFF2Classifier(n_features=15, gamma_grid=(0.5, 2.0), lambda_grid=(0.0,), cv=3,
                             random_state=7).fit(X, y)
    np.testing.assert_array_equal(again.decision_function(X), clf.decision_function(X))
    json.dumps(clf.best_params_)
    assert clf.tune_time_ > 0


def test_labels_any_two_values_ties_positive():
    X, y = make_moons(150, noise=0.2, random_state=3)
    kw = dict(n_features=10, gamma_grid=(1.0,), lambda_grid=(0.0,), random_state=0)
    a = GBRFF2Classifier(**kw).fit(X, np.where(y == 1, "yes", "no"))
    b = GBRFF2Classifier(**kw).fit(X, 2 * y - 1)
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X))
    assert set(a.predict(X)) <= {"no", "yes"}
    np.testing.assert_array_equal(a.predict(X) == "yes", b.predict(X) == 1)
    np.testing.assert_array_equal(decode_binary_labels(np.array(["no", "yes"]),
                                                       np.array([-0.1, 0.0, 0.2])),
                                  ["no", "yes", "yes"])
    with pytest.raises(ValueError, match="Only binary"):
        GBRFF2Classifier(**kw).fit(X, np.arange(150) % 3)


def test_regression_variants_fit_a_smooth_function():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (300, 2))
    y = 3.0 + 2.0 * np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.05 * rng.standard_normal(300)
    Xte = rng.uniform(-2, 2, (300, 2))
    yte = 3.0 + 2.0 * np.sin(2 * Xte[:, 0]) * np.cos(Xte[:, 1])
    r2 = GBRFF2Regressor(n_features=60, gamma_grid=(1.0,), lambda_grid=(0.0,),
                         random_state=0).fit(X, y).score(Xte, yte)
    assert r2 > 0.9
    reg1 = GBRFF1Regressor(n_features=60, gamma_grid=(1.0,), beta_grid=(1.0,), random_state=0)
    assert reg1.fit(X, y).score(Xte, yte) > 0.9
    # tuned: the grid is searched by inner-CV MSE
    reg = GBRFF2Regressor(n_features=20, gamma_grid=(0.25, 1.0), lambda_grid=(0.0,), cv=3,
                          random_state=0).fit(X, y)
    assert reg.cv_errors_.shape == (2,) and reg.best_params_["g"] in (0.25, 1.0)


SMALL = dict(n_features=10, gamma_grid=(1.0,), random_state=0)


@parametrize_with_checks([
    GBRFF2Classifier(lambda_grid=(0.0,), **SMALL),
    GBRFF1Classifier(beta_grid=(1.0,), **SMALL),
    GBRFF2Regressor(lambda_grid=(0.0,), **SMALL),
    GBRFF1Regressor(beta_grid=(1.0,), **SMALL),
])
@pytest.mark.slow
def test_sklearn_contract(estimator, check):
    check(estimator)


@pytest.mark.slow
def test_parallel_inner_cv_gives_the_same_selection():
    X, y = make_moons(120, noise=0.2, random_state=4)
    kw = dict(n_features=8, gamma_grid=(0.5, 2.0), lambda_grid=(0.0,), cv=3, random_state=1)
    serial = GBRFF2Classifier(**kw).fit(X, y)
    parallel = GBRFF2Classifier(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(serial.cv_errors_, parallel.cv_errors_)
    np.testing.assert_array_equal(serial.decision_function(X), parallel.decision_function(X))


@pytest.mark.parametrize("cls", [GBRFF1Classifier, GBRFF2Classifier, GBRFF1Regressor, GBRFF2Regressor])
def test_budgets_from_one_fit_equal_separate_fits(cls):
    """budgets=[4, 9]: one fit per (combination, fold) to 9 steps scored at 4 and 9 gives exactly
    the choices, parameters and predictions of two separate fits (the runner's n = 100, 500)."""
    X, y = make_moons(160, noise=0.3, random_state=0)
    if issubclass(cls, (GBRFF1Regressor, GBRFF2Regressor)):
        y = np.sin(3 * X[:, 0]) + X[:, 1]
    grid = {"gamma_grid": (0.5, 2.0)} | ({"beta_grid": (0.1, 10.0)} if "1" in cls.__name__ else {"lambda_grid": (0.0, 0.25)})
    shared = cls(n_features=9, budgets=[4, 9], cv=3, random_state=1, **grid).fit(X, y)
    for n in (4, 9):
        alone = cls(n_features=n, cv=3, random_state=1, **grid).fit(X, y)
        assert shared.best_params_per_budget_[n] == alone.best_params_
        np.testing.assert_array_equal(shared.cv_errors_per_budget_[n], alone.cv_errors_)
        np.testing.assert_array_equal(shared.predict(X, budget=n), alone.predict(X))
    with pytest.raises(ValueError, match="budget 5 was not fitted"):
        shared.predict(X, budget=5)


@pytest.mark.parametrize("cls", [GBRFF1Classifier, GBRFF1Regressor])
def test_gbrff1_betas_fitted_together_equal_one_at_a_time(cls):
    """The inner CV fits the β of one g together (the angles' cos and sin once per step): every
    model is the one fitted alone, bit for bit, whatever the β order and however g and β interleave."""
    X, y = make_moons(150, noise=0.3, random_state=2)
    if cls is GBRFF1Regressor:
        y = np.sin(3 * X[:, 0]) + X[:, 1]
    est = cls(gamma_grid=(0.5, 2.0), beta_grid=(10.0, 0.01, 1.0))
    y_enc = y if cls is GBRFF1Regressor else 2.0 * y - 1.0
    combos = est._grid()[::-1]          # g descending, β reversed: groups by g keep the given order
    together = dict(est._fit_models(X, y_enc, combos, 12, 5))
    assert sorted(together) == list(range(len(combos)))
    for i, params in enumerate(combos):
        alone = est._fit_model(X, y_enc, params, 12, np.random.default_rng(5))
        np.testing.assert_array_equal(together[i].decision(X), alone.decision(X))
        np.testing.assert_array_equal(together[i].decision(X, 5), alone.decision(X, 5))
    # and different β give different models (the shared angles do not tie them together)
    assert not np.array_equal(together[0].decision(X), together[1].decision(X))
