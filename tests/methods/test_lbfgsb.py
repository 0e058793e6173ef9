"""The direct L-BFGS-B driver against scipy.optimize.minimize: the same iterates, bit for bit."""

import numpy as np
import pytest
from scipy.optimize import minimize

from rfbench.methods import gbrff, lbfgsb
from rfbench.methods.gbrff import (
    CosineRefinement,
    fit_gbrff1,
    fit_gbrff2,
    fit_gbrff2_regression,
    frequency_objective,
    landmark_objective,
)


def _reference(fun, x0, args=(), maxiter=15000):
    return minimize(fun, x0, args=args, jac=True, method="L-BFGS-B", options={"maxiter": maxiter})


def _problems(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((700, 6))
    r = np.sin(X @ rng.standard_normal(6)) + 0.1 * rng.standard_normal(700)
    yt = np.sign(r) * np.exp(rng.standard_normal(700))
    Omega = rng.standard_normal((10, 6))
    A = Omega @ X.T
    w0 = rng.standard_normal(6)
    return [
        (CosineRefinement(X, r, 0.7, 0.3, 0.0), w0, ()),
        (CosineRefinement(X, r, 0.7, 0.3, 2.0**-4), w0, ()),
        (frequency_objective, w0, (X, yt, 1.1, 0.0)),
        (landmark_objective, np.zeros(6), (Omega, np.cos(A), np.sin(A), yt)),
        (lambda x: (float(np.sum((x - 1.0) ** 4)), 4 * (x - 1.0) ** 3), w0, ()),  # slow, ends on tolerance
    ]


@pytest.mark.skipif(not lbfgsb._DIRECT, reason="this SciPy has no ln_task setulb; the driver is minimize")
@pytest.mark.parametrize("maxiter", [1, 10, 15000])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_same_iterates_as_minimize(seed, maxiter):
    for fun, x0, args in _problems(seed):
        calls = []

        def counted(x, *a, fun=fun, calls=calls):
            calls.append(x.copy())
            return fun(x, *a)

        ref = _reference(counted, x0, args, maxiter)
        n_ref, calls[:] = list(calls), []
        x = lbfgsb.minimize_lbfgsb(counted, x0, args, maxiter=maxiter)
        np.testing.assert_array_equal(x, ref.x)
        # the same points evaluated in the same order: the driver is minimize, not a look-alike
        assert len(calls) == len(n_ref) and all(np.array_equal(a, b) for a, b in zip(calls, n_ref, strict=True))
        assert not np.array_equal(x, x0)  # it moved


def test_fallback_is_minimize(monkeypatch):
    monkeypatch.setattr(lbfgsb, "_DIRECT", False)
    fun, x0, args = _problems(3)[0]
    np.testing.assert_array_equal(lbfgsb.minimize_lbfgsb(fun, x0, args, maxiter=10),
                                  _reference(fun, x0, args, 10).x)


@pytest.mark.parametrize("fit", ["gbrff2", "gbrff1", "gbrff2_regression"])
def test_gbrff_ensembles_unchanged_by_the_driver(fit, monkeypatch):
    """Whole boosting runs (which amplify any rounding difference tenfold every few steps) give the
    same ensemble through the driver and through minimize."""
    rng = np.random.default_rng(5)
    X = rng.standard_normal((300, 4))
    y = np.where(np.sin(2 * X[:, 0]) + X[:, 1] ** 2 > 0.5, 1.0, -1.0)
    fits = {
        "gbrff2": lambda: fit_gbrff2(X, y, 25, 0.5, 0.0, np.random.default_rng(1)),
        "gbrff1": lambda: fit_gbrff1(X, y, 15, 10, 0.5, 1.0, np.random.default_rng(1)),
        "gbrff2_regression": lambda: fit_gbrff2_regression(X, np.sin(3 * X[:, 0]) + X[:, 2], 40, 0.5, 0.0,
                                                           np.random.default_rng(1)),
    }
    direct = fits[fit]()
    monkeypatch.setattr(gbrff, "minimize_lbfgsb",
                        lambda f, x0, args=(), maxiter=15000: _reference(f, x0, args, maxiter).x)
    reference = fits[fit]()
    for name in ("alphas", "frequencies", "phases", "landmarks", "q"):
        if hasattr(direct, name):
            np.testing.assert_array_equal(getattr(direct, name), getattr(reference, name))
