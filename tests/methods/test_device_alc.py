"""ALC's torch path (rfbench.methods.alc_torch) against the NumPy path, on the CPU ("torch-cpu") and on a
GPU where one is present (the torch_device fixture)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rfbench.methods import alc, alc_torch  # noqa: E402
from rfbench.methods.alc import ALCRegressor, alc_objective, pack  # noqa: E402
from rfbench.methods.common import resolve_cv  # noqa: E402
from rfbench.methods.cvgrad import prepare_splits  # noqa: E402
from rfbench.methods.device import DeviceUnavailable  # noqa: E402


def problem(seed, Q, m=60, d=3, s=3, restarts=3):
    """A small random problem: X, centred y, k-fold splits (rows NOT grouped by fold), restarts' u's."""
    rng = np.random.default_rng(seed)
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    splits = prepare_splits(resolve_cv(5, m, rng), m)
    Us = [rng.standard_normal((Q, s, d)) for _ in range(restarts)]
    return X, y - y.mean(), splits, Us, rng


def random_theta(rng, Q, d, lam):
    return pack(rng.normal(size=(Q, d)), rng.uniform(0.5, 1.5, (Q, d)), rng.uniform(0.5, 1.5, Q), lam)


def rel(a, b):
    return np.linalg.norm(np.subtract(a, b)) / np.linalg.norm(b)


@pytest.mark.parametrize("Q", [1, 2, 5])
def test_objective_and_gradient_match_numpy(Q, torch_device):
    X, y, splits, Us, rng = problem(Q, Q)
    prob = alc_torch.Problem(X, y, splits, 0.7, Us, torch_device)
    for r, lam in enumerate([1e-1, 1e-4, 1e-7]):
        theta = random_theta(rng, Q, X.shape[1], lam)
        value, grad = prob.single(theta, r)
        value0, grad0 = alc_objective(theta, X, y, Us[r], splits, 0.7)
        assert value == pytest.approx(value0, rel=1e-10)
        assert rel(grad, grad0) <= 1e-10


def test_batched_restarts_equal_single_evaluations(torch_device):
    Q = 2
    X, y, splits, Us, rng = problem(10, Q, restarts=4)
    prob = alc_torch.Problem(X, y, splits, 1.3, Us, torch_device)
    thetas = np.stack([random_theta(rng, Q, X.shape[1], lam) for lam in (1e-1, 1e-2, 1e-3)])
    which = [3, 0, 2]                                   # any subset of the restarts, in any order
    values, grads = prob.evaluate(thetas, which)
    for i, r in enumerate(which):
        value, grad = prob.single(thetas[i], r)
        assert values[i] == pytest.approx(value, rel=1e-12)
        assert rel(grads[i], grad) <= 1e-12


def test_lockstep_runs_are_the_runs_alone():
    """Each lockstep run's iterates are those of its own L-BFGS-B run (runs of different lengths)."""
    rng = np.random.default_rng(0)
    A = rng.normal(size=(4, 4, 4))
    A = A @ A.transpose(0, 2, 1) + np.array([0.1, 1.0, 3.0, 10.0])[:, None, None] * np.eye(4)
    centre = rng.normal(size=(4, 4)) + [0, 0, 0, 6.0]        # the last one's log λ is bounded
    thetas0 = np.zeros((4, 4))

    def f(theta, r):
        x = theta - centre[r]
        return 0.5 * x @ A[r] @ x + r * np.sin(theta[0]), A[r] @ x + [r * np.cos(theta[0]), 0, 0, 0]

    sizes = []

    def batch(thetas, which):
        sizes.append(len(which))
        out = [f(th, r) for th, r in zip(thetas, which, strict=True)]
        return np.array([v for v, _ in out]), np.stack([g for _, g in out])

    together = alc_torch.lockstep_minimise(batch, thetas0, 15)
    assert sizes[0] == 4 and sizes[-1] == 1             # the runs end at different iterations
    for r in range(4):
        x, fun = alc_torch._minimise(lambda th, r=r: f(th, r), thetas0[r], 15)
        assert np.array_equal(together[r][0], x) and together[r][1] == fun


def test_lockstep_reraises_a_failed_evaluation():
    calls = []

    def batch(thetas, which):
        calls.append(list(which))
        if len(calls) == 3:
            raise FloatingPointError("boom")
        return (thetas ** 2).sum(1), 2 * thetas

    with pytest.raises(FloatingPointError, match="boom"):
        alc_torch.lockstep_minimise(batch, np.ones((3, 2)), 10)


def test_fit_on_a_torch_device_matches_numpy(monkeypatch, torch_device):
    starts = []
    draw = alc.initial_solutions
    monkeypatch.setattr(alc, "initial_solutions", lambda *a: starts.append(draw(*a)) or starts[-1])
    rng = np.random.default_rng(0)
    X = rng.normal(size=(250, 3))
    y = np.sin(X @ [1.0, 0.5, -0.3]) + 0.5 * np.cos(2 * X[:, 1]) + 0.1 * rng.normal(size=250)
    kw = dict(n_features=20, n_components=2, n_restarts=4, restart_iter=5, final_iter=10, random_state=0)
    cpu = ALCRegressor(**kw).fit(X[:200], y[:200])
    dev = ALCRegressor(device=torch_device, **kw).fit(X[:200], y[:200])
    # same restart starts (θ₀ and u's), same trajectories to rounding (measured: 1e-10)
    assert len(starts) == 2
    for (th_a, U_a), (th_b, U_b) in zip(*starts, strict=True):
        assert np.array_equal(th_a, th_b) and np.array_equal(U_a, U_b)
    np.testing.assert_allclose(dev.restart_errors_, cpu.restart_errors_, rtol=1e-6)
    assert dev.best_params_["best_restart"] == cpu.best_params_["best_restart"]
    assert set(dev.best_params_) == set(cpu.best_params_)
    mse_cpu, mse_dev = (np.mean((e.predict(X[200:]) - y[200:]) ** 2) for e in (cpu, dev))
    assert mse_dev == pytest.approx(mse_cpu, rel=0.01)


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_is_refused():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(DeviceUnavailable):
        ALCRegressor(n_features=4, n_components=1, n_restarts=2, restart_iter=2, final_iter=2,
                     device="cuda").fit(X, X[:, 0])


def test_device_is_checked():
    X = np.random.default_rng(0).normal(size=(30, 2))
    with pytest.raises(ValueError, match="device"):
        ALCRegressor(device="gpu").fit(X, X[:, 0])


def test_torch_path_needs_kfold_splits():
    X = np.random.default_rng(0).normal(size=(30, 2))
    inverted = [(va, tr) for tr, va in resolve_cv(3, 30, np.random.default_rng(0))]
    with pytest.raises(ValueError, match="k-fold"):
        alc_torch.Problem(X, X[:, 0], inverted, 1.0, [np.ones((1, 2, 2))], "torch-cpu")


def test_the_numpy_path_does_not_import_torch():
    code = ("import sys, numpy as np; from rfbench.methods.alc import ALCRegressor; "
            "X = np.random.default_rng(0).normal(size=(30, 2)); "
            "ALCRegressor(n_features=4, n_components=1, n_restarts=2, restart_iter=2, final_iter=2).fit(X, X[:, 0]); "
            "assert 'torch' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[2])
