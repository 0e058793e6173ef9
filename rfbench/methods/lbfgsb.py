"""Unbounded L-BFGS-B, the same iterates as ``scipy.optimize.minimize(method="L-BFGS-B", jac=True)``.

GBRFF runs ~10⁵ short L-BFGS-B solves per fold (10 iterations on a few thousand rows), where
``minimize``'s own set-up (ScalarFunction, bounds processing, the result object) costs as much as
the objective. This drives SciPy's L-BFGS-B routine ``setulb`` directly with the same calls, the
same memoisation of the last point and the same stopping tests, so the iterates are bit for bit
those of ``minimize`` (tested against it). On a SciPy whose private routine has another signature
it falls back to ``minimize``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.optimize import minimize

try:  # the reverse-communication signature of SciPy ≥ 1.15 (the C translation of L-BFGS-B 3.0)
    from scipy.optimize import _lbfgsb

    _DIRECT = "ln_task" in (_lbfgsb.setulb.__doc__ or "")
except ImportError:  # pragma: no cover - depends on the installed SciPy
    _DIRECT = False

#: minimize's L-BFGS-B defaults (maxcor, ftol, gtol, maxls, maxfun)
MAXCOR, FTOL, GTOL, MAXLS, MAXFUN = 10, 2.2204460492503131e-09, 1e-05, 20, 15000

_NEW_X, _FG = 1, 3  # setulb's task codes: an iteration ended / evaluate f and g at x
_STOP, _STOP_MAXITER, _STOP_MAXFUN = 5, 504, 502


def minimize_lbfgsb(fun: Callable[..., tuple[float, np.ndarray]], x0: np.ndarray, args: tuple = (),
                    maxiter: int = 15000) -> np.ndarray:
    """The x that ``minimize(fun, x0, args, jac=True, method="L-BFGS-B", options={"maxiter": ...})``
    returns; ``fun`` gives (value, gradient)."""
    if not _DIRECT:
        return minimize(fun, x0, args=args, jac=True, method="L-BFGS-B", options={"maxiter": maxiter}).x
    x = np.array(x0, dtype=np.float64).ravel()
    n, m = x.size, MAXCOR
    no_bounds = np.zeros(n, np.int32)
    lower, upper = np.zeros(n), np.zeros(n)
    f, g = np.array(0.0), np.zeros(n)
    wa = np.zeros(2 * m * n + 5 * n + 11 * m * m + 8 * m)
    iwa = np.zeros(3 * n, np.int32)
    task, ln_task = np.zeros(2, np.int32), np.zeros(2, np.int32)
    lsave, isave, dsave = np.zeros(4, np.int32), np.zeros(44, np.int32), np.zeros(29)
    factr = FTOL / np.finfo(float).eps

    def evaluate(at: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = fun(at.copy(), *args)  # a copy: setulb overwrites x in place
        return float(value), np.asarray(grad, dtype=np.float64)

    # minimize evaluates at x0 before the first call and then serves any request at the point it
    # evaluated last from memory; doing the same keeps the evaluation count, hence maxfun, equal
    last_x, last = x.copy(), evaluate(x)
    nfev, nit = 1, 0
    while True:
        g = g.astype(np.float64)
        _lbfgsb.setulb(m, x, lower, upper, no_bounds, f, g, factr, GTOL, wa, iwa, task, lsave, isave,
                       dsave, MAXLS, ln_task)
        if task[0] == _FG:
            if (x != last_x).any():  # np.array_equal's test (NaN ≠ NaN), without its overhead
                last_x, last = x.copy(), evaluate(x)
                nfev += 1
            f, g = last
        elif task[0] == _NEW_X:
            nit += 1
            if nit >= maxiter:
                task[0], task[1] = _STOP, _STOP_MAXITER
            elif nfev > MAXFUN:
                task[0], task[1] = _STOP, _STOP_MAXFUN
        else:
            return x
