"""ALC (à la carte with a CV-gradient objective): gradients, objective, recovery, estimator contract."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.methods import alc
from rfbench.methods.alc import (
    ALCRegressor,
    alc_objective,
    ard_scales,
    mixture_frequencies,
    pack,
    unpack,
)
from rfbench.methods.common import resolve_cv
from rfbench.methods.cvgrad import prepare_splits, trig_features

# two-component spectral mixture used by the recovery tests (d = 2, means far from each other)
MUS = np.array([[1.0, 0.3], [-0.4, 0.9]])
DS = np.array([[0.1, 0.1], [0.15, 0.05]])


def mixture_data(seed, m, s=8, sx=4.0, noise=0.05):
    """y = Σ random amplitudes × sin/cos(w·x) with w_qj = D_q ⊙ u_qj + μ_q (the model's spectrum)."""
    rng = np.random.default_rng(seed)
    U = rng.standard_normal((2, s, 2))
    W = mixture_frequencies(MUS, DS, U)
    X = sx * rng.normal(size=(m, 2))
    S, C = trig_features(X, W)
    f = S @ rng.normal(size=2 * s) + C @ rng.normal(size=2 * s)
    f /= f.std()
    return X, f + noise * rng.normal(size=m), U, rng


def mean_errors(means):
    """Distance of each learned mean to its true mean, up to the sign symmetry w ↔ −w."""
    return np.array([min(np.linalg.norm(a - b), np.linalg.norm(a + b))
                     for a, b in zip(means, MUS, strict=True)])


def kfold_splits(m, rng, k=5):
    return prepare_splits(resolve_cv(k, m, rng), m)


def test_pack_unpack_and_frequency_layout():
    rng = np.random.default_rng(0)
    Q, s, d = 3, 4, 2
    mu, D, nu = rng.normal(size=(Q, d)), rng.normal(size=(Q, d)), rng.normal(size=Q)
    mu2, D2, nu2, lam = unpack(pack(mu, D, nu, 0.3), Q, d)
    assert np.array_equal(mu, mu2) and np.array_equal(D, D2) and np.array_equal(nu, nu2)
    assert lam == pytest.approx(0.3)
    U = rng.normal(size=(Q, s, d))
    W = mixture_frequencies(mu, D, U)
    assert W.shape == (d, Q * s)
    # column q·s + j is w_qj = D_q ⊙ u_qj + μ_q
    np.testing.assert_allclose(W[:, 1 * s + 2], D[1] * U[1, 2] + mu[1])


def test_gradient_matches_finite_differences_for_mu_D_nu_lambda():
    rng = np.random.default_rng(1)
    m, d, Q, s = 70, 3, 2, 4
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    U = rng.standard_normal((Q, s, d))
    theta = pack(rng.normal(size=(Q, d)), rng.uniform(0.5, 1.5, (Q, d)), rng.uniform(0.5, 1.5, Q),
                 1e-2)
    splits = kfold_splits(m, rng)
    _, grad = alc_objective(theta, X, y, U, splits, 0.7)
    h = 1e-6
    fd = np.array([(alc_objective(theta + h * e, X, y, U, splits, 0.7)[0]
                    - alc_objective(theta - h * e, X, y, U, splits, 0.7)[0]) / (2 * h)
                   for e in np.eye(theta.size)])
    blocks = {"mu": slice(0, Q * d), "D": slice(Q * d, 2 * Q * d),
              "nu": slice(2 * Q * d, 2 * Q * d + Q), "log_lambda": slice(-1, None)}
    for name, part in blocks.items():
        err = np.linalg.norm(grad[part] - fd[part]) / np.linalg.norm(fd[part])
        assert err < 1e-5, name


def test_objective_is_the_standard_kfold_ridge_error():
    """Gram-subtraction value = naive per-fold ridge on [1, ν_q² sin, ν_q² cos], standard split."""
    rng = np.random.default_rng(2)
    m, d, Q, s = 50, 2, 2, 3
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    U = rng.standard_normal((Q, s, d))
    mu, D, nu, lam = rng.normal(size=(Q, d)), rng.uniform(0.5, 1, (Q, d)), np.array([0.7, 1.3]), 0.05
    raw = resolve_cv(5, m, rng)
    value, _ = alc_objective(pack(mu, D, nu, lam), X, y, U, prepare_splits(raw, m), y_var=2.0)
    S, C = trig_features(X, mixture_frequencies(mu, D, U))
    scale = np.repeat(nu ** 2, s)
    Z = np.hstack([np.ones((m, 1)), S * scale, C * scale])
    errs = []
    for tr, va in raw:
        assert len(va) < len(tr)                       # not inverted
        c = np.linalg.solve(Z[tr].T @ Z[tr] + len(tr) * lam * np.eye(Z.shape[1]), Z[tr].T @ y[tr])
        errs.append(np.mean((Z[va] @ c - y[va]) ** 2))
    assert value * 2.0 == pytest.approx(np.mean(errs), rel=1e-10)


def test_ard_scales_are_the_inverse_input_ranges():
    rng = np.random.default_rng(3)
    X = rng.uniform(-1.0, 1.0, size=(4000, 4)) * np.array([1.0, 3.0, 0.5, 1.0])
    X[:, 3] = 2.0                                      # constant column: falls back to 1
    D = ard_scales(X)
    np.testing.assert_allclose(D[:3], 1 / (X[:, :3].max(0) - X[:, :3].min(0)))
    np.testing.assert_allclose(D[:3], 1 / (2 * np.array([1.0, 3.0, 0.5])), rtol=0.01)
    assert D[3] == 1.0


def test_ard_start_follows_a_per_input_affine_rescaling():
    """Rescaling an input by a and shifting it leaves the initial kernel on the data unchanged:
    D_j scales by 1/a, so every initial phase D_j·u·x_j keeps its spread."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((500, 3))
    a, b = np.array([0.1, 7.0, 1.0]), np.array([5.0, -3.0, 0.0])
    np.testing.assert_allclose(ard_scales(X * a + b), ard_scales(X) / a)


def test_ard_start_is_slow_along_a_heavy_tailed_input():
    """cpu-activity's case: most rows in a narrow core, a few far out. The start's phases along such
    an input move by one radian over the whole spread, tails included; a scale set by typical
    distances would be set by the core and let the phases spin across the tails (the n = 500
    extrapolation failure in the module notes)."""
    rng = np.random.default_rng(5)
    x = np.where(rng.random(20000) < 0.9, 0.01 * rng.normal(size=20000), 10 * rng.normal(size=20000))
    x = (x - x.mean()) / x.std()
    assert x.max() > 10
    D = ard_scales(x[:, None])[0]
    assert D * (x.max() - x.min()) == pytest.approx(1.0)
    assert D < 0.05


def test_recovers_component_means_from_a_nearby_start():
    """With the data's own u's, L-BFGS-B on the CV objective moves perturbed means onto the true
    ones (up to w ↔ −w). This exercises objective, gradient and re-parameterisation together."""
    recovered = []
    for seed in range(4):
        X, y, U, rng = mixture_data(seed, 3000)
        start = pack(MUS + 0.15 * rng.normal(size=MUS.shape),
                     DS * np.exp(0.3 * rng.normal(size=DS.shape)), np.full(2, y.std() / 2), 1e-4)
        assert mean_errors(unpack(start, 2, 2)[0]).max() > 0.05
        theta, _ = alc._minimise(start, X, y - y.mean(), U, kfold_splits(len(y), rng),
                                 y.var(), 200)
        recovered.append(mean_errors(unpack(theta, 2, 2)[0]).max() < 0.03)
    assert sum(recovered) >= 3


def test_fit_on_mixture_spectrum_data():
    """End to end from the paper's initialisation (μ ≈ 0): the fit reaches the noise level and
    finds both true component means up to sign.

    Pinned example: from μ ≈ 0 the search is non-convex (w and −w give the same features, so a
    zero-mean component with D ≈ |μ| is a strong local optimum). With the inverse-range ARD start,
    seed 0 finds both means within 0.04 (|μ| ≈ 1, test RMSE 0.052); of seeds 0–7, seeds 0, 5 and 6
    find both within 0.1, and the others stop in that local optimum or find one mean (RMSE
    0.07–0.7). The seed-robust check of the recovery mechanics is the nearby-start test above."""
    X, y, _, _ = mixture_data(0, 4000)
    est = ALCRegressor(n_features=16, n_components=2, random_state=0).fit(X[:3000], y[:3000])
    rmse = np.sqrt(np.mean((est.predict(X[3000:]) - y[3000:]) ** 2))
    assert rmse < 1.5 * 0.05                           # y has unit variance
    # match learned components to the true ones (either order)
    errs = [mean_errors(est.means_), mean_errors(est.means_[::-1])]
    assert min(e.max() for e in errs) < 0.2 and min(e.min() for e in errs) < 0.1
    assert est.frequencies_.shape == (2, 16) and est.coef_.shape == (32,)
    assert set(est.best_params_) >= {"lambda", "cv_mse"} and est.best_params_["lambda"] > 0
    assert est.restart_errors_.shape == (10,) and est.tune_time_ > 0
    S, C = trig_features(X, est.frequencies_)
    np.testing.assert_allclose(est.predict(X), np.hstack([S, C]) @ est.coef_ + est.intercept_)


@pytest.mark.slow
def test_parallel_restarts_match_sequential():
    X, y, _, _ = mixture_data(5, 400)
    kw = dict(n_features=8, n_components=2, n_restarts=3, restart_iter=5, final_iter=10,
              random_state=0)
    a = ALCRegressor(n_jobs=1, **kw).fit(X, y)
    b = ALCRegressor(n_jobs=2, **kw).fit(X, y)
    # restarts: identical draws and arithmetic; final run: the folds on two threads group the sums
    # differently, so the two agree to rounding, not bit for bit
    np.testing.assert_allclose(a.restart_errors_, b.restart_errors_, rtol=1e-13)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-8, atol=1e-10)
    assert a.best_params_["best_restart"] == b.best_params_["best_restart"]


@pytest.mark.parametrize("Q, s", [(1, 10), (2, 5), (5, 2)])
def test_components_and_frequencies_per_component(Q, s):
    X, y, _, _ = mixture_data(6, 200)
    est = ALCRegressor(n_features=10, n_components=Q, n_restarts=2, restart_iter=3, final_iter=5,
                       random_state=0).fit(X, y)
    assert est.means_.shape == (Q, 2) and est.scales_.shape == (Q, 2)
    assert est.amplitudes_.shape == (Q,) and est.frequencies_.shape == (2, Q * s)


@parametrize_with_checks([ALCRegressor(n_features=10, n_components=2, n_restarts=2,
                                       restart_iter=3, final_iter=10)])
@pytest.mark.slow
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
