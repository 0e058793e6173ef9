"""bench/perf/alc_dual.py switches à la carte's objective to the dual k-fold path inside its block,
and only there (the measurement of docs/history/cvgrad.md rests on it)."""

import numpy as np
import pytest

from rfbench.methods import alc, cvgrad
from tests.bench_scripts import bench_script


def test_the_dual_path_is_taken_inside_the_block_and_the_default_after(monkeypatch):
    script = bench_script("alc_dual")
    calls = []
    original = cvgrad._dual_fold_solver
    monkeypatch.setattr(cvgrad, "_dual_fold_solver", lambda *a: calls.append(1) or original(*a))
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)           # 32 training rows < p = 2 * 30 + 1
    fit = lambda: alc.ALCRegressor(n_features=30, n_components=1, n_restarts=2, restart_iter=2,  # noqa: E731
                                   final_iter=2, random_state=0).fit(X, y)
    before = alc.alc_objective
    with script.path(True):
        dual = fit()
    assert calls and alc.alc_objective is before
    calls.clear()
    primal = fit()
    assert not calls
    # the same search to rounding on this well-posed problem
    assert dual.best_params_["cv_mse"] == pytest.approx(primal.best_params_["cv_mse"], rel=1e-6)
