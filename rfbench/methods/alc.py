"""ALC: "À la carte" kernel learning (Yang, Smola, Song & Wilson 2015) as re-implemented in the GFC
paper (App. C.3; method-notes §3): a learned spectral mixture with a cross-validation objective.

Spectral measure: a mixture of Q Gaussians with diagonal covariances. Every component q gets
s = n_features // Q frequencies, re-parameterised with FIXED standard-normal vectors u_qj::

    w_qj = D_q ⊙ u_qj + μ_q                      (D_q = diag(Σ_q)^{1/2}, μ_q ∈ R^d)
    f(x) = b + Σ_q ν_q² Σ_j [α_qj sin(w_qj·x) + β_qj cos(w_qj·x)]

The fixed u's keep the frequencies in Q clusters; a component's weight is carried by ν_q². The
coefficients (α, β) are ridge solutions ``(ZᵀZ + mλI)c = Zᵀy``; θ = (μ, D, ν) and λ are chosen by
L-BFGS-B on the k-fold CV error (standard split: train on the complement of a fold, validate on
it) with the Keerthi gradient (:mod:`rfbench.methods.cvgrad`) and the chain rule of §3.4::

    ∂E/∂μ_q = Σ_j ∂E/∂w_qj      ∂E/∂D_q = Σ_j (∂E/∂w_qj) ⊙ u_qj      ∂E/∂ν_q = 2ν_q Σ_j ∂E/∂s_qj
    ∂E/∂log λ = λ · (−m tᵀc)     (s_qj = ν_q², the scale of the columns of frequency qj)

Search (App. C.3): 10 random initial solutions × 20 L-BFGS-B iterations; the best one (with its u's)
continues for another 200 iterations. Final model: ridge with the learned θ and λ on all training
rows.

Choices where the sources are silent (method-notes §3.3 [O] items, plus ours):

* **ARD initialisation of D** (the À-la-carte supplement is not available): per input dimension j,
  D_q,j = 1/r_j with r_j = max − min of x_j over the training rows (1 for a constant column), for
  every component: the initial spectral scale of the spectral-mixture kernel's data-driven start
  (Wilson & Adams 2013 draw the scales around the inverse data range, and the GFC paper's ν_q =
  std(y)/Q is that start's weight rule). Restart 0 uses it as is; restarts 1.. multiply each D_q,j
  by exp(ξ), ξ ~ N(0, 0.5²). The initial kernel's length-scale along an input is then that input's
  whole spread, so every frequency's phase w·x moves by about one radian across the training data.
  Why the range: the earlier pairwise-distance scales made the initial kernel far too narrow on the
  d = 32 sets (median distance) or along cpu-activity's heavy-tailed inputs at n = 500 (mean
  distance); see docs/history/alc.md.
* known gap: bank (d = 32, noisy), where the inner-CV error of the learned mixture ends well below
  its test error (it overfits the CV objective); see docs/history/alc.md.
* μ_q ~ N(0, (0.01·D_q)²) entrywise ("close to zero"); ν_q = std(y)/Q (literal reading of the text);
  λ₀ = 1e-4, optimised as log λ within [1e-10, 1e2]; fresh u's at every restart.
* bias: y is centred by its training mean and the design carries a constant column (the zero
  frequency, penalised like the others, as GFC's bias); intercept_ = mean(y) + its coefficient.
* the CV objective is divided by var(y) (a constant) so that L-BFGS-B's absolute tolerances do not
  depend on the unit of y.
* speed: per objective evaluation ONE design matrix of all training rows is formed, with the rows
  grouped by inner fold so that each fold is a slice; the full Gram matrix is the sum of the folds'
  and each fold's training Gram matrix is the full one minus the fold's. The m × n arrays of an
  evaluation live in a workspace kept for the whole L-BFGS-B run (fresh ones would be page-faulted
  in on every call; docs/history/alc.md).
  BLAS always runs on one thread (see :func:`_minimise`). With n_jobs > 1 the restarts run in loky
  processes and the final 200 iterations spread every evaluation's folds over n_jobs threads (as
  the GFC paper parallelised its à la carte over the folds, App. C.3); all random draws are made up
  front, so the restarts do not depend on n_jobs and the final run agrees to rounding (its sums
  are grouped by the threads' blocks).
* device: with ``device="cuda"`` (or "torch-cpu", for CI) the same objective runs in
  torch float64 (:mod:`rfbench.methods.alc_torch`, imported only then; the gradient by autograd),
  the restarts' evaluations batched into one on the device. The random draws are the NumPy path's,
  so the restarts start from the same points; the trajectories agree to rounding.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
import scipy.optimize
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.cvgrad import (
    DEFAULT_PATHS,
    Paths,
    RowPool,
    Workspace,
    contiguous_folds,
    trig_cv_grad,
    trig_features,
)
from rfbench.methods.device import uses_torch
from rfbench.methods.ridge import ridge_solve
from rfbench.methods.tuning import Stopwatch

LAMBDA0 = 1e-4
LOG_LAMBDA_BOUNDS = (np.log(1e-10), np.log(1e2))
RESTART_LOG_SD = 0.5


def pack(mu: np.ndarray, D: np.ndarray, nu: np.ndarray, lam: float) -> np.ndarray:
    """θ as one vector: [μ (Q·d), D (Q·d), ν (Q), log λ]."""
    return np.concatenate([mu.ravel(), D.ravel(), nu.ravel(), [np.log(lam)]])


def unpack(theta: np.ndarray, Q: int, d: int):
    """Inverse of :func:`pack`: (μ (Q × d), D (Q × d), ν (Q), λ)."""
    mu = theta[:Q * d].reshape(Q, d)
    D = theta[Q * d:2 * Q * d].reshape(Q, d)
    nu = theta[2 * Q * d:2 * Q * d + Q]
    return mu, D, nu, float(np.exp(theta[-1]))


def mixture_frequencies(mu: np.ndarray, D: np.ndarray, U: np.ndarray) -> np.ndarray:
    """W (d × Q·s) with columns w_qj = D_q ⊙ u_qj + μ_q, component-major order."""
    Q, s, d = U.shape
    return (D[:, None, :] * U + mu[:, None, :]).reshape(Q * s, d).T


def alc_objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, U: np.ndarray, splits,
                  y_var: float = 1.0, work: Workspace | None = None,
                  paths: Paths = DEFAULT_PATHS) -> tuple[float, np.ndarray]:
    """CV error of ridge on [1, ν_q² sin(XW), ν_q² cos(XW)] (divided by ``y_var``) and its gradient
    w.r.t. θ = (μ, D, ν, log λ) (method-notes §3.4). ``work`` keeps the m × n arrays of one
    optimisation between its evaluations; ``paths``: :class:`rfbench.methods.cvgrad.Paths`."""
    Q, s, d = U.shape
    mu, D, nu, lam = unpack(theta, Q, d)
    scale = np.repeat(nu ** 2, s)
    res = trig_cv_grad(X, y, mixture_frequencies(mu, D, U), lam, splits,
                       fixed=np.ones((X.shape[0], 1)), scale=scale, work=work, paths=paths)
    dW = res.dW.T.reshape(Q, s, d)                      # ∂E/∂w_qj
    d_mu = dW.sum(axis=1)
    d_D = (dW * U).sum(axis=1)
    d_nu = 2.0 * nu * res.dscale.reshape(Q, s).sum(axis=1)
    grad = np.concatenate([d_mu.ravel(), d_D.ravel(), d_nu, [res.dlam * lam]])
    return res.value / y_var, grad / y_var


def ard_scales(X: np.ndarray) -> np.ndarray:
    """Initial spectral scales D_j = 1/(max − min of x_j): the initial kernel's length-scale along
    each input is that input's range (1 for a constant column). See the module notes."""
    spread = np.ptp(X, axis=0)
    return 1.0 / np.where(spread > 0, spread, 1.0)


def initial_solutions(X: np.ndarray, y: np.ndarray, Q: int, s: int, n_restarts: int,
                      rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """The restarts' (θ₀, U), drawn in order from ``rng``: restart 0 starts at the ARD scales,
    the others at scales perturbed by exp(ξ), ξ ~ N(0, 0.5²); μ near zero, ν = std(y)/Q, λ₀."""
    d = X.shape[1]
    D_ard = np.tile(ard_scales(X), (Q, 1))
    nu0 = np.full(Q, (float(np.std(y)) or 1.0) / Q)
    starts = []
    for r in range(n_restarts):
        U = rng.standard_normal((Q, s, d))
        D = D_ard if r == 0 else D_ard * np.exp(RESTART_LOG_SD * rng.standard_normal((Q, d)))
        mu = 0.01 * D * rng.standard_normal((Q, d))
        starts.append((pack(mu, D, nu0, LAMBDA0), U))
    return starts


def theta_bounds(size: int) -> list[tuple]:
    """L-BFGS-B's bounds on θ: free (μ, D, ν), log λ within LOG_LAMBDA_BOUNDS."""
    return [(None, None)] * (size - 1) + [LOG_LAMBDA_BOUNDS]


def _minimise(theta0, X, y, U, splits, y_var, maxiter, n_threads=1):
    """L-BFGS-B from θ₀; (θ, objective). BLAS runs on one thread: on a few cores, OpenBLAS's own
    threads lose more to waking and spinning (NumPy and SciPy each bring a pool) than they gain on
    these matrices (docs/history/alc.md). ``n_threads`` > 1 spreads each evaluation's folds over a
    pool of Python threads instead."""
    bounds = theta_bounds(theta0.size)
    with threadpool_limits(limits=1), RowPool(n_threads) if n_threads > 1 else nullcontext() as pool:
        opt = scipy.optimize.minimize(alc_objective, theta0, args=(X, y, U, splits, y_var, Workspace(pool)),
                                      jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": maxiter})
    return opt.x, float(opt.fun)


def _search(starts, X, y, splits, y_var, restart_iter, final_iter, n_jobs):
    """ALCRegressor's search in NumPy: every restart ([(θ₀, U)]) for ``restart_iter`` iterations, on
    ``n_jobs`` processes, then the best one for ``final_iter``, its folds on ``n_jobs`` threads.
    Returns (restart errors, best restart, θ, f), the objective divided by y_var."""
    # 10 restarts × 20 iterations ...
    n_procs = min(effective_n_jobs(n_jobs), len(starts))
    if n_procs > 1:
        with parallel_config(backend="loky", inner_max_num_threads=1):
            results = Parallel(n_jobs=n_procs)(
                delayed(_minimise)(th, X, y, U, splits, y_var, restart_iter) for th, U in starts)
    else:
        results = [_minimise(th, X, y, U, splits, y_var, restart_iter) for th, U in starts]
    restart_errors = np.array([fun for _, fun in results])
    best = int(np.argmin(restart_errors))
    # ... then the best one (with its u's) for another 200, its folds on the n_jobs cores
    theta, fun = _minimise(results[best][0], X, y, starts[best][1], splits, y_var, final_iter,
                           effective_n_jobs(n_jobs))
    return restart_errors, best, theta, fun


class ALCRegressor(RegressorMixin, BaseEstimator):
    """À la carte (mixture-of-Gaussians spectrum) with a CV-gradient objective + ridge regression.

    Parameters
    ----------
    n_features : total number of spectral vectors n (s = n // Q per component; 2n sin/cos columns).
    n_components : Q, mixture components.
    n_restarts, restart_iter : random initial solutions and L-BFGS-B iterations for each.
    final_iter : L-BFGS-B iterations continuing from the best restart.
    cv : the k-fold CV of the objective (int or iterable of (train, test) pairs).
    random_state, n_jobs : see :mod:`rfbench.methods.common` (restarts run in parallel processes).
    device : "cpu" (NumPy, the reference), "cuda"/"cuda:K" or "torch-cpu" (:mod:`rfbench.methods.device`):
        the objective in torch float64 (:mod:`rfbench.methods.alc_torch`), the restarts batched on the
        device (n_jobs unused); same random draws, so the same restart starts as on the CPU.

    Attributes
    ----------
    frequencies_ (d × Q·s), coef_ (2·Q·s, on [sin(XW), cos(XW)], ν² folded in), intercept_,
    means_ (μ, Q × d), scales_ (D, Q × d), amplitudes_ (ν, Q), restart_errors_,
    best_params_ ({"lambda", "cv_mse", "n_components", "best_restart"}), tune_time_, n_features_in_.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "n_components": [cons.positive_int()],
        "n_restarts": [cons.positive_int()],
        "restart_iter": [cons.non_negative_int()],
        "final_iter": [cons.non_negative_int()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, n_components=5, n_restarts=10, restart_iter=20,
                 final_iter=200, cv=5, random_state=None, n_jobs=1, device="cpu"):
        self.n_features = n_features
        self.n_components = n_components
        self.n_restarts = n_restarts
        self.restart_iter = restart_iter
        self.final_iter = final_iter
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        device = self.device
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        rng = as_generator(self.random_state)
        m, d = X.shape
        Q = int(self.n_components)
        s = max(1, int(self.n_features) // Q)
        y_mean = float(y.mean())
        yc = y - y_mean
        # the CV objective sees the rows grouped by fold, so that every fold is a slice (same value)
        splits, X_cv, yc_cv = contiguous_folds(resolve_cv(self.cv, m, rng), X, yc)
        y_var = float(np.var(y)) or 1.0
        timer = Stopwatch()

        # initial solutions, all drawn up front (the result must not depend on n_jobs)
        starts = initial_solutions(X, y, Q, s, int(self.n_restarts), rng)

        with timer:
            if uses_torch(device):   # the same search in torch, the restarts batched on the device
                from rfbench.methods import alc_torch
                restart_errors, best, theta, fun = alc_torch.search(
                    starts, X_cv, yc_cv, splits, y_var, self.restart_iter, self.final_iter, device,
                    theta_bounds(starts[0][0].size))
            else:
                restart_errors, best, theta, fun = _search(
                    starts, X_cv, yc_cv, splits, y_var, self.restart_iter, self.final_iter, self.n_jobs)
            U = starts[best][1]

        # final model: ridge with the learned θ and λ on all training rows
        mu, D, nu, lam = unpack(theta, Q, d)
        W = mixture_frequencies(mu, D, U)
        scale = np.repeat(nu ** 2, s)
        S, C = trig_features(X, W)
        Z = np.hstack([np.ones((m, 1)), S * scale, C * scale])
        c, _ = ridge_solve(Z, yc, lam, fit_intercept=False)
        n = W.shape[1]

        self.frequencies_ = W
        self.coef_ = np.concatenate([c[1:1 + n] * scale, c[1 + n:] * scale])
        self.intercept_ = y_mean + float(c[0])
        self.means_, self.scales_, self.amplitudes_ = mu, D, nu
        self.lambda_ = lam
        self.restart_errors_ = restart_errors * y_var
        self.best_params_ = {"lambda": lam, "cv_mse": float(fun * y_var), "n_components": Q,
                             "best_restart": best}
        self.tune_time_ = timer.total
        return self

    def predict(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        S, C = trig_features(X, self.frequencies_)
        return np.hstack([S, C]) @ self.coef_ + self.intercept_
