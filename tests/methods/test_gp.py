"""Exact GP regression (rfbench/methods/gp.py): the marginal likelihood against a naive
reference and its gradient against finite differences, the predictive mean against the textbook
formula, hyper-parameters recovered from a GP draw, the jitter ladder, the refusal above N and
gp-sod's subset, and the torch path on the CPU against the NumPy one."""

import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import approx_fprime
from sklearn.utils.estimator_checks import check_param_validation

from rfbench import registry
from rfbench.contract import chosen_params, shares_budgets
from rfbench.methods import gp


@pytest.fixture(autouse=True)
def one_thread():
    """One BLAS thread (and one torch thread): at these sizes more threads only wait on a loaded machine."""
    from threadpoolctl import threadpool_limits

    try:
        import torch
    except ImportError:
        torch = None
    before = torch.get_num_threads() if torch else None
    if torch:
        torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    if torch:
        torch.set_num_threads(before)


def _data(m=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=m)
    return X, y


THETA = np.array([0.2, -0.3, 1.0, 0.4, np.log(0.05)])     # log ℓ (3), log s², log σ²


def _naive_nll(theta, X, y):
    ell, s2, noise = np.exp(theta[:-2]), np.exp(theta[-2]), np.exp(theta[-1])
    D = (X[:, None, :] - X[None, :, :]) / ell
    K = s2 * np.exp(-0.5 * np.sum(D**2, axis=-1)) + noise * np.eye(len(y))
    return 0.5 * y @ np.linalg.inv(K) @ y + 0.5 * np.linalg.slogdet(K)[1] + 0.5 * len(y) * np.log(2 * np.pi)


def test_the_marginal_likelihood_matches_the_dense_inverse_and_slogdet():
    X, y = _data()
    for shift in (0.0, -1.0, 1.5):
        theta = THETA + shift * np.array([1, 1, 1, 0, 0.5])
        assert gp.nll_value(theta, X, y) == pytest.approx(_naive_nll(theta, X, y), rel=1e-10)


def test_the_gradient_matches_finite_differences():
    X, y = _data()
    _, grad = gp.nll_and_grad(THETA, X, y)
    fd = approx_fprime(THETA, lambda t: gp.nll_and_grad(t, X, y)[0], 1e-7)
    assert np.allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_the_prediction_is_the_textbook_predictive_mean():
    X, y = _data()
    Xt = np.random.default_rng(5).normal(size=(30, 3))
    est = gp.GPRegressor(n_restarts=2, max_iter=30, random_state=0).fit(X, y)
    ell, s2, noise = est.lengthscales_, est.signal_variance_, est.noise_variance_
    k = lambda A, B: s2 * np.exp(-0.5 * np.sum(((A[:, None] - B[None]) / ell) ** 2, axis=-1))   # noqa: E731
    yz = (y - y.mean()) / y.std()
    naive = k(Xt, X) @ np.linalg.inv(k(X, X) + noise * np.eye(len(y))) @ yz
    assert np.allclose(est.predict(Xt), y.mean() + y.std() * naive, rtol=1e-9, atol=1e-9)


def test_hyper_parameters_drawn_from_a_gp_are_recovered():
    rng = np.random.default_rng(1)
    m, ell, s2, noise = 300, np.array([0.6, 2.5]), 1.0, 0.01
    X = rng.uniform(-2, 2, size=(m, 2))
    K = gp.se_kernel(X, X, ell, s2) + noise * np.eye(m)
    y = np.linalg.cholesky(K) @ rng.standard_normal(m)
    est = gp.GPRegressor(random_state=0).fit(X, y)
    var = y.std() ** 2          # the fit is in the standardised target's unit
    assert np.all(np.abs(np.log(est.lengthscales_ / ell)) < np.log(1.6))
    assert abs(np.log(est.signal_variance_ * var / s2)) < np.log(3.0)
    assert abs(np.log(est.noise_variance_ * var / noise)) < np.log(1.6)


def test_the_jitter_ladder_on_duplicated_rows_and_the_error_past_it():
    X = np.repeat(np.random.default_rng(0).normal(size=(5, 2)), 3, axis=0)     # every row three times
    K = gp.se_kernel(X, X, np.ones(2), 1.0)                                     # singular, no noise
    with pytest.raises(np.linalg.LinAlgError):
        np.linalg.cholesky(K)
    log = gp.JitterLog()
    L = np.tril(gp.cholesky_with_jitter(K, log))
    assert log.count == 1 and 1e-8 <= log.largest <= 1e-2
    assert np.allclose(L @ L.T, K, atol=1e-2 * np.mean(np.diag(K)))
    assert log.note().startswith("1 factorisation(s) needed jitter, at most")
    assert gp.JitterLog().note() == "none"
    with pytest.raises(np.linalg.LinAlgError) as caught:
        gp.cholesky_with_jitter(K - 0.5 * np.eye(len(K)))                        # indefinite: past the ladder
    assert "not positive definite even with jitter 1e-02" in str(caught.value) and "\n" not in str(caught.value)


def test_a_fit_reports_the_jitter_and_that_cv_and_the_budget_are_unused():
    X, y = _data(40)
    est = gp.GPRegressor(n_features=500, budgets=[100, 500], n_restarts=1, max_iter=10,
                         cv=[(np.arange(20), np.arange(20, 40))], random_state=0).fit(X, y)
    params = chosen_params(est, 100)
    assert params["jitter"] == "none" and "not used" in params["cv"] and "not used" in params["n_features"]
    assert chosen_params(est, 500) == params and shares_budgets(gp.GPRegressor)
    assert np.array_equal(est.predict(X, budget=100), est.predict(X, budget=500))


def test_the_parameter_constraints():
    assert set(gp.GPRegressor._parameter_constraints) == set(gp.GPRegressor().get_params())
    check_param_validation("GPRegressor", gp.GPRegressor())


def test_gp_refuses_above_n_in_one_line_before_allocating():
    huge = np.broadcast_to(np.zeros(8), (10**7, 8))       # 640 MB if it were copied; 10¹⁴ entries of K
    with pytest.raises(ValueError) as caught:
        gp.GPRegressor().fit(huge, np.broadcast_to(0.0, (10**7,)))
    message = str(caught.value)
    assert "\n" not in message and f"N = {gp.MAX_ROWS}" in message and "gp-sod" in message


def test_n_is_the_cpus_time_bound_or_what_a_gpus_free_memory_holds():
    assert gp.row_limit(None, "cpu")[0] == gp.row_limit(None, "torch-cpu")[0] == gp.MAX_ROWS
    assert gp.row_limit(1234, "cuda", 10**12) == (1234, "the max_rows given")
    # N rows' DEVICE_MATRICES float64 m × m matrices fit in DEVICE_SHARE of the free bytes, N + 1 rows' do not
    for free in (140 * 2**30, 80 * 2**30, 10**9):
        rows, why = gp.row_limit(None, "cuda", free)
        need = lambda m: gp.DEVICE_MATRICES * 8 * m * m        # noqa: E731
        assert need(rows) <= gp.DEVICE_SHARE * free < need(rows + 1)
        assert f"{free / 2**30:.1f} GiB free on cuda" in why
    # an H200's 140 GiB holds every UCI set's whole training set but keggundirected's 57 248 rows
    assert 48_000 < gp.row_limit(None, "cuda", 140 * 2**30)[0] < 57_248


def test_on_a_gpu_gp_refuses_above_what_its_memory_holds_before_allocating(monkeypatch):
    monkeypatch.setattr(gp, "free_bytes", lambda device: 10**9)            # 1 GB free: N = 4330
    huge = np.broadcast_to(np.zeros(8), (10**5, 8))
    with pytest.raises(ValueError) as caught:
        gp.GPRegressor(device="cuda").fit(huge, np.broadcast_to(0.0, (10**5,)))
    message = str(caught.value)
    assert "\n" not in message and "over N = 4330" in message and "0.9 GiB free on cuda" in message
    assert f"gp-sod (a GP on {gp.MAX_ROWS} seeded rows)" in message and "--device cuda" not in message
    assert "--gpu-slots 1" in message
    # a given max_rows says so; gp-sod's subset is MAX_ROWS rows on any device, never the free memory's
    with pytest.raises(ValueError, match=r"over N = 40, the max_rows given; use gp-sod \(a GP on 3500 seeded rows\) "
                                         r"or a larger max_rows$"):
        gp.GPRegressor(max_rows=40).fit(*_data(60))

    def no_memory_read(device):
        raise AssertionError("a subset's size read the GPU's memory")

    monkeypatch.setattr(gp, "free_bytes", no_memory_read)
    with pytest.raises(Exception) as caught:          # no GPU here: the torch objective refuses, after the draw
        gp.GPRegressor(subset=True, device="cuda", random_state=0).fit(*_data(gp.MAX_ROWS + 10))
    assert not isinstance(caught.value, AssertionError)


def test_free_bytes_is_what_this_process_may_still_allocate(monkeypatch):
    """The device's free memory plus this process's cached blocks, at most its per-process share of
    the total less what it holds (a run's worker takes 0.9 / --gpu-slots of the GPU)."""
    from types import SimpleNamespace

    from rfbench.methods import device

    GiB = 2**30

    def fake(free, total, allocated, reserved, share):
        cuda = SimpleNamespace(mem_get_info=lambda dev: (free, total), memory_allocated=lambda dev: allocated,
                               memory_reserved=lambda dev: reserved, get_per_process_memory_fraction=lambda dev: share)
        monkeypatch.setattr(device, "torch_module", lambda: SimpleNamespace(cuda=cuda))
        monkeypatch.setattr(device, "torch_device", lambda name: name)

    fake(free=100 * GiB, total=140 * GiB, allocated=0, reserved=0, share=1.0)
    assert device.free_bytes("cuda") == 100 * GiB
    fake(free=100 * GiB, total=140 * GiB, allocated=0, reserved=0, share=0.9 / 4)   # --gpu-slots 4
    assert device.free_bytes("cuda:1") == int(0.225 * 140 * GiB)
    fake(free=40 * GiB, total=140 * GiB, allocated=2 * GiB, reserved=52 * GiB, share=1.0)   # 50 GiB cached
    assert device.free_bytes("cuda") == 90 * GiB
    assert device.free_bytes("cpu") is None and device.free_bytes("torch-cpu") is None


PEAK_SCRIPT = """
import numpy as np, torch
torch.set_num_threads(1)
from rfbench.methods import gp, gp_torch

def kib(field):
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(field + ":"))

m, d = 4000, 6
rng = np.random.default_rng(0)
X, y = rng.standard_normal((m, d)), rng.standard_normal(m)
theta = np.r_[np.zeros(d), 0.0, np.log(0.1)]
gp_torch.Objective(X[:100], y[:100], "torch-cpu", gp.JITTER_LADDER)(theta)     # the libraries' own start-up
objective = gp_torch.Objective(X, y, "torch-cpu", gp.JITTER_LADDER)
with open("/proc/self/clear_refs", "w") as f:        # the peak resident size restarts from now (Linux)
    f.write("5")
base = kib("VmRSS")
objective(theta)
print((kib("VmHWM") - base) * 1024 / (8 * m * m))
"""


@pytest.mark.skipif(sys.platform != "linux", reason="the peak resident size is read from Linux's /proc")
def test_the_torch_objective_holds_two_m_by_m_matrices_at_its_peak():
    """K + σ²I and its factor, then the factor and K⁻¹: K_f is computed again for the gradient rather
    than held through both (three matrices before; the GPU's peak was 5.0 with the library's own)."""
    pytest.importorskip("torch")
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT], capture_output=True, text=True, check=True)
    assert 1.5 < float(out.stdout) < 2.6


def test_gp_sod_subset_is_seeded_and_below_n_equals_gp():
    X, y = _data(60)
    kw = dict(n_restarts=2, restart_iter=5, max_iter=15)
    a = gp.GPRegressor(max_rows=40, subset=True, random_state=3, **kw).fit(X, y)
    b = gp.GPRegressor(max_rows=40, subset=True, random_state=3, **kw).fit(X, y)
    c = gp.GPRegressor(max_rows=40, subset=True, random_state=4, **kw).fit(X, y)
    assert len(a.rows_) == 40 and np.array_equal(a.rows_, b.rows_) and not np.array_equal(a.rows_, c.rows_)
    assert np.array_equal(a.predict(X), b.predict(X)) and a.best_params_["rows"] == 40
    # at or below N: no draw, the same fit as gp
    full = gp.GPRegressor(max_rows=60, random_state=3, **kw).fit(X, y)
    sod = gp.GPRegressor(max_rows=60, subset=True, random_state=3, **kw).fit(X, y)
    assert sod.rows_ is None and np.array_equal(full.predict(X), sod.predict(X))
    with pytest.raises(ValueError, match="gp-sod"):
        gp.GPRegressor(max_rows=40, random_state=3, **kw).fit(X, y)


def test_a_column_constant_up_to_rounding_is_a_constant_column():
    """A column whose values differ by rounding alone (as in a keggdirected subset, std 3e-16) gets
    the unit scale of a constant one, so the fit is the constant column's: with std(x_j) as the unit
    its bounds would let ℓ_j follow the rounding noise and split equal rows."""
    X, y = _data(60)
    rng = np.random.default_rng(1)
    exact = np.column_stack([X, np.full(60, 0.7)])
    rounded = np.column_stack([X, 0.7 + 1e-16 * rng.integers(-2, 3, 60)])
    assert 0 < rounded[:, 3].std() < 1e-15
    assert gp.column_scales(rounded)[3] == gp.column_scales(exact)[3] == 1.0
    assert np.array_equal(gp.column_scales(rounded)[:3], X.std(axis=0))
    kw = dict(n_restarts=2, restart_iter=5, max_iter=15, random_state=0)
    a, b = gp.GPRegressor(**kw).fit(exact, y), gp.GPRegressor(**kw).fit(rounded, y)
    np.testing.assert_allclose(b.predict(rounded), a.predict(exact), rtol=1e-8, atol=1e-10)


def test_one_training_row_is_a_clear_error():
    with pytest.raises(ValueError, match="1 sample.*minimum of 2 is required by GPRegressor"):
        gp.GPRegressor().fit(np.zeros((1, 3)), np.zeros(1))


def test_the_registry_has_gp_and_gp_sod():
    reg = registry.load()
    assert reg.method("gp").estimators["regression"] == "rfbench.methods.gp:GPRegressor"
    # gp-sod's N is the CPU's on every device: its records mean one thing wherever they ran
    assert reg.method("gp-sod").params == {"subset": True, "max_rows": gp.MAX_ROWS}


def test_the_torch_path_matches_numpy_on_the_cpu():
    pytest.importorskip("torch")
    from rfbench.methods import gp_torch

    X, y = _data()
    objective = gp_torch.Objective(X, y, "torch-cpu", gp.JITTER_LADDER)
    for shift in (0.0, -1.0, 1.0):
        theta = THETA + shift
        v_np, g_np = gp.nll_and_grad(theta, X, y)
        v_t, g_t = objective(theta)
        assert v_t == pytest.approx(v_np, rel=1e-8)
        assert np.allclose(g_t, g_np, rtol=1e-8, atol=1e-10)
    K = gp_torch.se_kernel(*(gp_torch._tensor(a, "cpu") for a in (X, X)), gp_torch._tensor(np.ones(3), "cpu"), 1.0)
    assert np.allclose(K.numpy(), gp.se_kernel(X, X, np.ones(3), 1.0), rtol=1e-12)
    # the jitter ladder: the same step on duplicated rows, the same error past it
    Xd = np.repeat(X[:5, :2], 3, axis=0)
    Kd = gp.se_kernel(Xd, Xd, np.ones(2), 1.0)
    log_np, log_t = gp.JitterLog(), gp.JitterLog()
    gp.cholesky_with_jitter(Kd, log_np)
    gp_torch.cholesky_with_jitter(gp_torch._tensor(Kd, "cpu"), gp.JITTER_LADDER, log_t, gp.past_the_ladder)
    assert log_t.note() == log_np.note() != "none"
    with pytest.raises(np.linalg.LinAlgError, match="even with jitter 1e-02"):
        gp_torch.cholesky_with_jitter(gp_torch._tensor(Kd - 0.5 * np.eye(15), "cpu"), gp.JITTER_LADDER,
                                      None, gp.past_the_ladder)
    cpu = gp.GPRegressor(n_restarts=2, max_iter=20, random_state=0).fit(X, y)
    dev = gp.GPRegressor(n_restarts=2, max_iter=20, random_state=0, device="torch-cpu").fit(X, y)
    assert np.allclose(dev.predict(X), cpu.predict(X), rtol=1e-6, atol=1e-8)
    # the last factorisation on the device: α = K⁻¹y there, the same as the NumPy solve at the same θ
    K = gp.se_kernel(X, X, *gp.unpack(dev.theta_)[:2])
    K.flat[::len(X) + 1] += dev.noise_variance_
    yz = (y - dev.y_mean_) / dev.y_std_
    assert np.allclose(dev.alpha_, np.linalg.solve(K, yz), rtol=1e-8, atol=1e-10)
