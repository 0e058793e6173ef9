"""svgp (rfbench/methods/svgp.py): GPyTorch's SVGP as the module builds it is Hensman et al.'s model
(at Titsias' optimal q(u) its ELBO is the collapsed bound, its predictive mean with Z = X the exact
GP's, and that q(u) is a stationary point of the ELBO it trains), and the estimator is seeded, learns,
caps M at the fitting rows and restores its best validation state. Skipped where gpytorch (the
optional extra ``gp``) is not installed."""

import numpy as np
import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from rfbench.contract import accepts_device, shares_budgets
from rfbench.methods.svgp import SVGPRegressor, build_model

gpytorch = pytest.importorskip("gpytorch", reason="gpytorch is not installed (pip install gpytorch)")
torch = pytest.importorskip("torch", reason="torch is not installed")


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread (the machine's cores may be busy): the same numbers, no oversubscription."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def se(A, B, ell, s2):
    d2 = (((A[:, None, :] - B[None, :, :]) / ell) ** 2).sum(-1)
    return s2 * np.exp(-0.5 * d2)


def _toy(m=40, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, (m, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=m)
    return X, y


def _at_titsias_optimum(X, y, Z, ell, s2, noise, jitter=None):
    """The module's SVGP on Z with these hyper-parameters (and GPyTorch's jitter, or ``jitter``) and q(u)
    set to the closed-form optimum (Titsias 2009), in the whitened parametrisation:
    (model, likelihood, mll, K_ZZ + jitter)."""
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    model, lik, mll = build_model(t(Z), len(X))
    if jitter is not None:
        model.variational_strategy.jitter_val = jitter
    model.covar_module.base_kernel.lengthscale = t(ell)[None, :]
    model.covar_module.outputscale = t(s2)
    lik.noise = t([noise])
    Kzz = se(Z, Z, ell, s2) + model.variational_strategy.jitter_val * np.eye(len(Z))
    Kzx = se(Z, X, ell, s2)
    Sigma = Kzz + Kzx @ Kzx.T / noise
    m_u = Kzz @ np.linalg.solve(Sigma, Kzx @ y) / noise
    S_u = Kzz @ np.linalg.solve(Sigma, Kzz)
    L = np.linalg.cholesky(Kzz)
    m_v = np.linalg.solve(L, m_u)
    S_v = np.linalg.solve(L, np.linalg.solve(L, S_u).T)
    strategy = model.variational_strategy
    q = strategy._variational_distribution
    with torch.no_grad():
        strategy.variational_params_initialized.fill_(1)     # else its first call re-initialises q
        q.variational_mean.copy_(t(m_v))
        q.chol_variational_covar.copy_(t(np.linalg.cholesky(0.5 * (S_v + S_v.T))))
    return model, lik, mll, Kzz


def test_elbo_at_the_optimal_q_is_the_collapsed_bound_and_stationary():
    """Z a subset: GPyTorch's ELBO (× m) at Titsias' q(u) equals log N(y | 0, Q + σ²I) − tr(K − Q)/(2σ²),
    and its gradient in q's parameters vanishes there (num_data = m wired as the ELBO needs)."""
    X, y = _toy(m=40)
    Z = X[::5]
    ell, s2, noise = np.array([0.8, 1.3]), 1.2, 0.05
    model, lik, mll, Kzz = _at_titsias_optimum(X, y, Z, ell, s2, noise)
    Kzx = se(Z, X, ell, s2)
    Q = Kzx.T @ np.linalg.solve(Kzz, Kzx)
    C = Q + noise * np.eye(len(X))
    sign, logdet = np.linalg.slogdet(C)
    jitter = model.variational_strategy.jitter_val      # GPyTorch adds it to diag K_XX as well as K_ZZ
    bound = (-0.5 * y @ np.linalg.solve(C, y) - 0.5 * logdet - 0.5 * len(X) * np.log(2 * np.pi)
             - (len(X) * (s2 + jitter) - np.trace(Q)) / (2 * noise))
    model.train()
    lik.train()
    elbo = mll(model(torch.as_tensor(X)), torch.as_tensor(y))
    assert float(elbo.detach()) * len(X) == pytest.approx(bound, rel=1e-9, abs=1e-7)
    q = model.variational_strategy._variational_distribution
    grads = torch.autograd.grad(elbo, [q.variational_mean, q.chol_variational_covar])
    assert max(float(g.abs().max()) for g in grads) < 1e-6


def test_with_every_input_inducing_the_predictive_mean_is_the_exact_gps():
    """Z = X: SVGP's predictive mean at the optimal q(u) is k*ᵀ(K + σ²I)⁻¹y (GPyTorch's K_ZZ jitter,
    1e-6 in float64, moves it by ~1e-4 on this ill-conditioned K, so it is set to 1e-11 here)."""
    X, y = _toy(m=30)
    Xs = np.random.default_rng(1).uniform(-2, 2, (15, 2))
    ell, s2, noise = np.array([0.9, 1.1]), 1.0, 0.1
    model, lik, _, _ = _at_titsias_optimum(X, y, X, ell, s2, noise, jitter=1e-11)
    model.eval()
    with torch.no_grad():
        mean = model(torch.as_tensor(Xs)).mean.numpy()
    exact = se(Xs, X, ell, s2) @ np.linalg.solve(se(X, X, ell, s2) + noise * np.eye(len(X)), y)
    np.testing.assert_allclose(mean, exact, atol=1e-6)


FAST = dict(max_epochs=8, min_epoch_steps=5, learning_rate=0.05)


def test_n_jobs_is_torchs_threads_during_fit_and_restored_after():
    X, y = _toy(m=40)
    seen = []
    real = torch.set_num_threads

    def spy(n):
        seen.append(n)
        real(n)

    torch.set_num_threads = spy
    try:
        SVGPRegressor(n_features=5, random_state=0, max_epochs=1, min_epoch_steps=1, n_jobs=2).fit(X, y)
    finally:
        torch.set_num_threads = real
    assert seen == [2, 1] and torch.get_num_threads() == 1


def test_same_seed_same_predictions_another_seed_another():
    X, y = _toy(m=80)
    a = SVGPRegressor(n_features=10, random_state=3, **FAST).fit(X, y).predict(X)
    b = SVGPRegressor(n_features=10, random_state=3, **FAST).fit(X, y).predict(X)
    c = SVGPRegressor(n_features=10, random_state=4, **FAST).fit(X, y).predict(X)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_it_learns_a_smooth_function_and_says_what_it_chose():
    rng = np.random.default_rng(0)
    X = rng.uniform(-3, 3, (300, 1))
    f = lambda x: np.sin(2 * x[:, 0]) + 0.3 * x[:, 0]  # noqa: E731
    y = f(X) + 0.1 * rng.normal(size=300)
    Xt = np.linspace(-2.8, 2.8, 200)[:, None]
    est = SVGPRegressor(n_features=15, random_state=0, max_epochs=60, min_epoch_steps=10,
                        learning_rate=0.05).fit(X, y)
    rmse = np.sqrt(np.mean((est.predict(Xt) - f(Xt)) ** 2))
    assert rmse < 0.1 * f(Xt).std(), rmse
    assert est.inducing_points_.shape == (15, 1) and est.n_inducing_ == 15
    assert 0.002 < est.noise_variance_ * est.y_std_ ** 2 < 0.05          # σ² near the truth, 0.01
    bp = est.best_params_
    assert bp["inducing_points"] == 15 and "note" not in bp and bp["validation_rows"] == 30
    assert bp["cv"].startswith("inner folds not used")
    assert not shares_budgets(SVGPRegressor) and accepts_device(SVGPRegressor)


def test_m_is_capped_at_the_fitting_rows_with_a_note():
    X, y = _toy(m=30)
    est = SVGPRegressor(n_features=100, random_state=0, max_epochs=2, min_epoch_steps=2).fit(X, y)
    assert est.n_inducing_ == 27 == est.inducing_points_.shape[0]        # 30 rows − 3 held out
    assert est.best_params_["note"] == "n_features 100 > 27 fitting rows: M = 27 (every fitting row an inducing point)"


def test_early_stopping_restores_the_best_validation_state():
    X, y = _toy(m=120, seed=2)
    est = SVGPRegressor(n_features=30, random_state=0, max_epochs=200, min_epoch_steps=5, patience=3,
                        learning_rate=0.1).fit(X, y)
    hist = est.validation_mse_
    assert est.n_epochs_ < 200 and len(hist) == est.n_epochs_           # it stopped early
    assert est.best_epoch_ == int(np.argmin(hist)) + 1 == est.n_epochs_ - 3
    assert est.n_steps_ == 5 * est.n_epochs_
    val = est.validation_rows_
    mse = np.mean(((est.predict(X[val]) - y[val]) / est.y_std_) ** 2)
    assert mse == pytest.approx(hist.min(), rel=1e-9)                  # the best epoch's state, not the last
    assert hist[-1] > hist.min()


def test_without_validation_it_runs_every_epoch_and_keeps_the_last_state():
    X, y = _toy(m=40)
    est = SVGPRegressor(n_features=5, random_state=0, max_epochs=3, min_epoch_steps=2,
                        validation_fraction=0.0).fit(X, y)
    assert est.n_epochs_ == est.best_epoch_ == 3 and est.n_steps_ == 6 and est.validation_rows_.size == 0
    assert est.best_params_["validation_mse"] is None


def test_torch_cpu_is_the_same_path_and_cuda_without_a_gpu_is_refused():
    X, y = _toy(m=40)
    kw = dict(n_features=5, random_state=0, max_epochs=2, min_epoch_steps=2)
    np.testing.assert_array_equal(SVGPRegressor(**kw).fit(X, y).predict(X),
                                  SVGPRegressor(device="torch-cpu", **kw).fit(X, y).predict(X))
    if not torch.cuda.is_available():
        from rfbench.methods.device import DeviceUnavailable

        with pytest.raises(DeviceUnavailable, match="sees no CUDA GPU"):
            SVGPRegressor(device="cuda", **kw).fit(X, y)


def test_the_model_is_built_on_the_inducing_points_device(monkeypatch):
    """The starting values go to Z's device. The meta device stands in for a GPU, so the test runs
    on a CPU machine: a CPU tensor handed to GPyTorch's setters there raises, as on CUDA (the H200
    run of 2026-11-30 failed every svgp task so). GPyTorch's bound check reads values, which meta
    tensors have none of, so it is switched off here."""
    monkeypatch.setattr(gpytorch.constraints.Interval, "check_raw", lambda self, tensor: True)
    Z = torch.zeros(5, 3, dtype=torch.float64, device="meta")
    model, likelihood, _ = build_model(Z, 100)
    tensors = [*model.parameters(), *model.buffers(), *likelihood.parameters(), *likelihood.buffers()]
    assert tensors and {t.device.type for t in tensors} == {"meta"}


@parametrize_with_checks([SVGPRegressor(n_features=10, max_epochs=4, min_epoch_steps=10, learning_rate=0.1)])
@pytest.mark.slow
def test_sklearn_estimator_checks(estimator, check):
    check(estimator)
