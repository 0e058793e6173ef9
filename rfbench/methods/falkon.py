"""FALKON: Nyström kernel ridge regression solved by preconditioned conjugate gradient (Rudi,
Carratino & Rosasco, "FALKON: An Optimal Large Scale Kernel Method", NeurIPS 2017, Algorithm 1),
written from the paper's algorithm (the FALKON library is not used).

The model. ``M`` centres c_1..c_M are drawn uniformly without replacement from the n training rows
(``M = n_features``, capped at n: ``best_params_["note"]`` says so). With the Gaussian kernel
k(x, x') = exp(−‖x − x'‖² / (2σ²)), K_nM the n × M kernel between the rows and the centres and
K_MM the M × M one, the Nyström estimator f(x) = ȳ + Σ_j α_j k(x, c_j) minimises

    (1/n) ‖K_nM α − (y − ȳ)‖² + λ αᵀ K_MM α,

i.e. it solves H α = K_nMᵀ (y − ȳ) with H = K_nMᵀ K_nM + λ n K_MM. ȳ, the training mean, is an
unpenalised intercept (the runner's "range" target scaling leaves y uncentred). With M = n (every row
a centre) and K invertible, α = (K + λ n I)⁻¹ (y − ȳ): exact kernel ridge regression with λ per row.

The preconditioner (the paper's Algorithm 1, MATLAB's upper-triangular ``chol``: R = chol(S) has
RᵀR = S):

    T = chol(K_MM + ε M I)            ε = machine epsilon (2.2e-16), the paper's jitter
    A = chol(T Tᵀ / M + λ I)
    B = (1/√n) T⁻¹ A⁻¹,               so that B Bᵀ = ((n/M) K_MM² + λ n K_MM)⁻¹ (with TᵀT for K_MM)

and CG solves Bᵀ H B β = Bᵀ K_nMᵀ (y − ȳ), then α = B β. As in Algorithm 1 the factor √n is moved
out of B (B̃ = √n B = T⁻¹A⁻¹, β̃ = β/√n, the same α) and K_MM of the penalty is taken as TᵀT, so the
system CG runs on is, exactly,

    W β̃ = r,   W u = A⁻ᵀ ( T⁻ᵀ K_nMᵀ K_nM T⁻¹ A⁻¹ u / n + λ A⁻¹ u ),   r = A⁻ᵀ T⁻ᵀ K_nMᵀ (y − ȳ) / n,
    α = T⁻¹ A⁻¹ β̃,

i.e. the Nyström system with K_MM + εM I in the penalty (a relative change of order 1e-16 · M).
When the Cholesky of K_MM + εM I fails (a Gaussian K_MM is often singular to rounding), the jitter
is multiplied by 10 until it succeeds (``jitter_`` records the one used). With M = n the
preconditioner is exact (W = I up to the jitter) and CG converges in one step.

Stopping. The paper runs CG for a fixed number t of iterations, its analysis asking for t of order
log n; here t = ``max_iter`` (None: ⌈ln n⌉ + 5), and CG also stops, column by column, as soon as the
relative residual ‖r − W β̃‖ / ‖r‖ falls to ``tol`` (1e-8, far below what changes the CV error).
``n_iter_`` and ``cg_residuals_`` (the relative residual after each iteration) record what the final
fit did. On uci-housing (published splits 0-1, 455 training rows) t = 12 stopped the final CG before
the tolerance (CG with t up to 100 needed 14-37 iterations to reach it), and the test RMSE moved by
at most 0.02 (M = 100) and 1e-4 (M = 400).

Memory. K_nM is never stored whole unless it fits the budget: the products K_nMᵀ (K_nM V) and the
predictions K(X, C) α are sums over row blocks of ⌊``block_bytes`` / (8 M)⌋ rows (the paper's
KnM_times_vector), each block's kernel computed on the fly; when the whole n × M matrix fits in
``block_bytes`` (default 256 MiB; the block's distance computation takes about twice that) it is
computed once and reused by every iteration. No n × n matrix is formed, nor an M × M identity (the
jitter and λ are added to the diagonal). What is M × M is held: T, and the factors A of the λ being
solved: the grid is solved in groups whose factors fit ``factor_bytes`` (default 1 GiB), one CG per
group (:func:`lambda_groups`). At M ≤ 3 600 the nine λ are one group (the kernel products shared by
all); at M = 10 000 (0.8 GB a factor) each λ is its own group, so the peak is T, T Tᵀ/M and one
factor being made (about 3.2 GB with the kernel blocks) instead of the 8 GB of nine factors at once.

Hyper-parameters, by the inner folds ``cv`` (their mean validation MSE), then a refit on the whole
training part:

* σ = s · median pairwise distance, s ∈ {1/8, 1/4, 1/2, 1, 2, 4} (``bandwidth_factors``): the median
  heuristic sets the scale of the data (the median is taken over at most 512 training rows drawn at
  random), and the factors cover the short length scales that the UCI regression sets prefer as well
  as smooth fits; ``bandwidths`` gives σ values directly instead;
* λ ∈ {10⁻⁹, 10⁻⁸, …, 10⁻¹} (``lambdas``): the per-row λ of the objective above, on the targets as the
  runner scales them; the decades span interpolation (≈ n·λ ≪ 1 against the kernel's eigenvalues)
  to heavy smoothing.

Each inner fold draws its own M centres from its training rows (capped at that part's size), and
one CG, column by column over the λ grid (every λ has its A, the kernel products are shared), serves
every λ of a (σ, fold). With one σ and one λ there is nothing to choose and the CV is skipped.

``device`` ("cpu", "cuda", "torch-cpu"; rfbench/methods/device.py): "cpu" is NumPy float64. Otherwise
the kernel blocks, the Cholesky factors, the triangular solves and CG run in torch float64 on the
device (rfbench/methods/falkon_torch.py), with the same algorithm and the same decisions (the CG
step lengths and stopping are computed from the device's numbers, the grid's argmin in NumPy). The
centres and the median distance are drawn in NumPy on the CPU. Equal to the NumPy path to rounding.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.linalg import solve_triangular
from scipy.spatial.distance import pdist
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.tuning import Stopwatch

DEFAULT_BANDWIDTH_FACTORS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0)
DEFAULT_LAMBDAS = tuple(float(f"1e{k}") for k in range(-9, 0))     # 1e-9 .. 1e-1, exact decimals
#: rows of the sample whose pairwise distances give the median heuristic
MEDIAN_ROWS = 512
#: the jitter's growth when the Cholesky of K_MM + jitter·I fails, and the most attempts
JITTER_GROWTH, JITTER_TRIES = 10.0, 12


def default_iterations(n: int) -> int:
    """t = ⌈ln n⌉ + 5: the order log n of the paper's analysis, with a margin for small n."""
    return int(math.ceil(math.log(max(n, 2)))) + 5


def median_distance(X: np.ndarray, rng: np.random.Generator, rows: int = MEDIAN_ROWS) -> float:
    """The median Euclidean distance between the pairs of (at most ``rows``) rows drawn at random."""
    idx = rng.choice(X.shape[0], size=min(rows, X.shape[0]), replace=False)
    d = pdist(X[np.sort(idx)])
    d = d[d > 0]
    return float(np.median(d)) if d.size else 1.0


class NumPyOps:
    """The array operations of the algorithm in NumPy float64 (the reference path)."""

    def array(self, a):
        return np.array(a, dtype=np.float64)

    def numpy(self, a) -> np.ndarray:
        return np.asarray(a)

    def rows(self, X, idx):
        return X[np.asarray(idx)]

    def n_rows(self, X) -> int:
        return X.shape[0]

    def gaussian(self, X, C, sigma: float):
        """k(x, c) = exp(−‖x − c‖² / (2σ²)) for every row of X and C."""
        sq = (X * X).sum(axis=1)[:, None] + (C * C).sum(axis=1)[None, :] - 2.0 * (X @ C.T)
        np.maximum(sq, 0.0, out=sq)
        return np.exp(sq * (-0.5 / sigma**2), out=sq)

    def cholesky_upper(self, S):
        """Upper R with RᵀR = S, or None where S is not positive definite to rounding."""
        try:
            return np.linalg.cholesky(S).T
        except np.linalg.LinAlgError:
            return None

    def solve_upper(self, R, B, transpose: bool = False):
        """R⁻¹ B (or R⁻ᵀ B) for upper-triangular R."""
        return solve_triangular(R, B, lower=False, trans="T" if transpose else "N", check_finite=False)

    def add_diagonal(self, S, value: float):
        """S + value·I as a new matrix (no M × M identity is formed; the same numbers as S + value·I)."""
        out = S.copy()
        out.flat[::out.shape[0] + 1] += value
        return out

    def index(self, idx):
        return np.asarray(idx)

    def hstack(self, parts):
        return parts[0] if len(parts) == 1 else np.hstack(parts)

    def vstack(self, parts):
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def column_dots(self, U, V) -> np.ndarray:
        return np.einsum("ij,ij->j", U, V)

    def scale_columns(self, U, s: np.ndarray):
        return U * s[None, :]


class _Kernel:
    """K_nM between rows X and centres C at bandwidth σ, in row blocks of a memory budget."""

    def __init__(self, ops, X, C, sigma: float, block_bytes: int):
        self.ops, self.X, self.C, self.sigma = ops, X, C, float(sigma)
        n, M = ops.n_rows(X), ops.n_rows(C)
        self.step = max(1, int(block_bytes) // (8 * M))
        # the whole n × M matrix within the budget: computed once, reused by every product
        self.full = ops.gaussian(X, C, self.sigma) if n <= self.step else None
        self.n = n

    def blocks(self):
        if self.full is not None:
            yield slice(0, self.n), self.full
            return
        for start in range(0, self.n, self.step):
            part = slice(start, min(start + self.step, self.n))
            yield part, self.ops.gaussian(self.X[part], self.C, self.sigma)

    def gram_times(self, V):
        """K_nMᵀ (K_nM V) (M × L), block by block."""
        out = None
        for _, K in self.blocks():
            term = K.T @ (K @ V)
            out = term if out is None else out + term
        return out

    def transpose_times(self, v):
        """K_nMᵀ v (M × L) for v (n × L), block by block."""
        out = None
        for part, K in self.blocks():
            term = K.T @ v[part]
            out = term if out is None else out + term
        return out


def kernel_times(ops, X, C, sigma: float, alpha, block_bytes: int):
    """K(X, C) α, in row blocks of the memory budget (predictions)."""
    step = max(1, int(block_bytes) // (8 * ops.n_rows(C)))
    return ops.vstack([ops.gaussian(X[s:s + step], C, sigma) @ alpha for s in range(0, ops.n_rows(X), step)])


def preconditioner_T(ops, Kmm, M: int):
    """(T, jitter): T = chol(K_MM + εM I), the jitter grown tenfold until the factor exists."""
    jitter = np.finfo(np.float64).eps * M
    for _ in range(JITTER_TRIES):
        T = ops.cholesky_upper(ops.add_diagonal(Kmm, jitter))
        if T is not None:
            return T, jitter
        jitter *= JITTER_GROWTH
    raise np.linalg.LinAlgError(f"the Cholesky of K_MM + jitter·I failed up to jitter {jitter / JITTER_GROWTH:.3g}")


def lambda_groups(L: int, M: int, factor_bytes: int) -> list[slice]:
    """The λ grid in groups whose M × M factors A fit ``factor_bytes`` together (at least one λ per
    group): at M ≤ 3 600 the nine default λ are one group, at M = 10 000 each λ is its own."""
    per_group = max(1, int(factor_bytes) // (8 * M * M))
    return [slice(start, min(start + per_group, L)) for start in range(0, L, per_group)]


def falkon_solve(ops, X, y, C, sigma: float, lambdas, max_iter: int, tol: float, block_bytes: int,
                 factor_bytes: int = 2**30):
    """FALKON's α (M × L) for each λ of ``lambdas`` on rows X (n × d), centred targets y (n,) and
    centres C (M × d), with the CG record: (alpha, iterations per λ, relative residuals (t × L, NaN
    after a column stopped), jitter). The λ are solved in groups whose factors fit ``factor_bytes``
    (:func:`lambda_groups`; each group one CG, sharing the kernel products)."""
    lambdas = np.asarray(lambdas, dtype=np.float64)
    n, M, L = ops.n_rows(X), ops.n_rows(C), lambdas.size
    kernel = _Kernel(ops, X, C, sigma, block_bytes)
    T, jitter = preconditioner_T(ops, ops.gaussian(C, C, sigma), M)
    # r = A⁻ᵀ T⁻ᵀ K_nMᵀ y / n, one column per λ
    ky = ops.solve_upper(T, kernel.transpose_times(y[:, None]), transpose=True) / n
    alphas, iterations, histories = [], [], []
    for group in lambda_groups(L, M, factor_bytes):
        lams = lambdas[group]
        TTt = T @ T.T / M
        A = []
        for lam in lams:
            R = ops.cholesky_upper(ops.add_diagonal(TTt, lam))
            if R is None:
                raise np.linalg.LinAlgError(f"the Cholesky of T Tᵀ/M + λI failed at λ = {lam:g}")
            A.append(R)
        del TTt, R

        def a_solve(U, cols, transpose=False, A=A):
            """A_j⁻¹ u_j (or A_j⁻ᵀ u_j) for the columns ``cols`` of U, column j with its λ."""
            out = [ops.solve_upper(A[j], U[:, k:k + 1], transpose) for k, j in enumerate(cols)]
            return ops.hstack(out)

        def W(U, cols, a_solve=a_solve, lams=lams):
            V = a_solve(U, cols)                                   # A⁻¹ u
            G = ops.solve_upper(T, kernel.gram_times(ops.solve_upper(T, V)), transpose=True) / n
            return a_solve(G + ops.scale_columns(V, lams[cols]), cols, transpose=True)

        cols = np.arange(lams.size)
        r = a_solve(ops.hstack([ky] * lams.size), cols, transpose=True)
        beta, iters, history = _cg(ops, W, r, max_iter, tol)
        alphas.append(ops.solve_upper(T, a_solve(beta, cols)))
        iterations.append(iters)
        histories.append(history)
        del A
    t = max(h.shape[0] for h in histories)
    history = np.hstack([np.vstack([h, np.full((t - h.shape[0], h.shape[1]), np.nan)]) for h in histories])
    return ops.hstack(alphas), np.concatenate(iterations), history, jitter


def _cg(ops, W, R, max_iter: int, tol: float):
    """Conjugate gradient on W β = R, each column its own CG (W(U, cols) applies the column's
    operator); a column stops when its relative residual is ≤ tol or after max_iter iterations.
    Returns (β, iterations per column, relative residuals after each iteration (t × L, NaN once the
    column stopped))."""
    L = R.shape[1]
    beta = R * 0.0
    res = R * 1.0
    P = R * 1.0
    rs = ops.numpy(ops.column_dots(res, res)).astype(float)
    norm0 = np.sqrt(rs)
    active = norm0 > 0
    iters = np.zeros(L, dtype=int)
    history = []
    for _ in range(max_iter):
        cols = np.flatnonzero(active)
        if cols.size == 0:
            break
        ci = ops.index(cols)
        Pa = P[:, ci]
        WP = W(Pa, cols)
        pwp = ops.numpy(ops.column_dots(Pa, WP)).astype(float)
        ok = pwp > 0                      # a breakdown (no descent left at rounding level) ends the column
        step = np.where(ok, rs[cols] / np.where(ok, pwp, 1.0), 0.0)
        beta[:, ci] = beta[:, ci] + ops.scale_columns(Pa, step)
        res_a = res[:, ci] - ops.scale_columns(WP, step)
        res[:, ci] = res_a
        rs_new = ops.numpy(ops.column_dots(res_a, res_a)).astype(float)
        iters[cols] += ok
        rel = np.full(L, np.nan)
        rel[cols] = np.sqrt(rs_new) / norm0[cols]
        history.append(rel)
        ratio = np.where(ok, rs_new / np.where(rs[cols] > 0, rs[cols], 1.0), 0.0)
        P[:, ci] = res_a + ops.scale_columns(Pa, ratio)
        rs[cols] = rs_new
        active[cols[(~ok) | (rel[cols] <= tol)]] = False
    return beta, iters, np.array(history).reshape(-1, L)


class FalkonRegressor(RegressorMixin, BaseEstimator):
    """FALKON (Nyström KRR by preconditioned CG) with σ and λ from the inner CV; see the module notes
    for the equations, the grid and the stopping rule.

    Parameters: ``n_features`` = M, the number of centres (capped at the training rows);
    ``bandwidth_factors`` (multiples of the median pairwise distance) or ``bandwidths`` (σ values,
    overriding the factors); ``lambdas``; ``max_iter`` (t; None: ⌈ln n⌉ + 5); ``tol`` (CG's relative
    residual); ``block_bytes`` (the memory of one kernel block); ``factor_bytes`` (the memory of
    the λ factors held at once); ``cv``, ``random_state``, ``n_jobs``
    (unused: the BLAS threads are the runner's) as in rfbench/methods/common.py; ``device``.

    Fitted: ``centres_`` (M × d), ``alpha_``, ``intercept_`` (ȳ), ``sigma_``, ``lambda_``,
    ``jitter_``, ``n_iter_``, ``cg_residuals_``, ``cv_errors_`` (σ × λ mean validation MSE, or None),
    ``best_params_`` (sigma, lambda, centres, iterations, cv_mse, and a note when M was capped) and
    ``tune_time_``."""

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "bandwidth_factors": ["array-like"],
        "bandwidths": ["array-like", None],
        "lambdas": ["array-like", None],
        "max_iter": [cons.positive_int(), None],
        "tol": [cons.non_negative_real()],
        "block_bytes": [cons.positive_int()],
        "factor_bytes": [cons.positive_int()],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, bandwidth_factors=DEFAULT_BANDWIDTH_FACTORS, bandwidths=None,
                 lambdas=None, max_iter=None, tol=1e-8, block_bytes=2**28, factor_bytes=2**30, cv=5,
                 random_state=None, n_jobs=1, device="cpu"):
        self.n_features = n_features
        self.bandwidth_factors = bandwidth_factors
        self.bandwidths = bandwidths
        self.lambdas = lambdas
        self.max_iter = max_iter
        self.tol = tol
        self.block_bytes = block_bytes
        self.factor_bytes = factor_bytes
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    def _ops(self):
        if not uses_torch(self.device):
            return NumPyOps()
        from rfbench.methods.falkon_torch import TorchOps

        return TorchOps(torch_device(self.device))

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        ops = self._ops()                     # DeviceUnavailable before any work
        rng = as_generator(self.random_state)
        lambdas = cons.positive_values("lambdas", DEFAULT_LAMBDAS if self.lambdas is None else self.lambdas)
        if self.bandwidths is not None:
            sigmas = cons.positive_values("bandwidths", self.bandwidths)
        else:
            factors = cons.positive_values("bandwidth_factors", self.bandwidth_factors)
            sigmas = factors * median_distance(X, rng)
        m = X.shape[0]
        y = np.asarray(y, dtype=np.float64)
        Xd = ops.array(X)
        clock = Stopwatch()
        self.cv_errors_ = None
        cv_mse = None
        if sigmas.size * lambdas.size > 1:
            splits = resolve_cv(self.cv, m, rng)
            with clock:
                errors = np.zeros((sigmas.size, lambdas.size))
                for tr, va in splits:
                    if len(tr) < 1 or len(va) < 1:
                        raise ValueError("every inner fold needs training and validation rows")
                    C = ops.rows(Xd, self._centres(len(tr), rng, tr))
                    ytr = y[tr]
                    mean = float(ytr.mean())
                    for i, sigma in enumerate(sigmas):
                        alpha, *_ = falkon_solve(ops, ops.rows(Xd, tr), ops.array(ytr - mean), C, sigma, lambdas,
                                                 self._iterations(len(tr)), float(self.tol), int(self.block_bytes),
                                                 int(self.factor_bytes))
                        pred = ops.numpy(kernel_times(ops, ops.rows(Xd, va), C, sigma, alpha,
                                                      int(self.block_bytes))) + mean
                        errors[i] += np.mean((pred - y[va][:, None]) ** 2, axis=0) / len(splits)
            errors = np.where(np.isfinite(errors), errors, np.inf)
            i_best, j_best = np.unravel_index(np.argmin(errors), errors.shape)
            self.cv_errors_ = errors
            cv_mse = float(errors[i_best, j_best])
        else:
            i_best, j_best = 0, 0
        self.sigma_, self.lambda_ = float(sigmas[i_best]), float(lambdas[j_best])
        idx = self._centres(m, rng, np.arange(m))
        self.intercept_ = float(y.mean())
        C = ops.rows(Xd, idx)
        alpha, iters, history, self.jitter_ = falkon_solve(
            ops, Xd, ops.array(y - self.intercept_), C, self.sigma_, [self.lambda_], self._iterations(m),
            float(self.tol), int(self.block_bytes), int(self.factor_bytes))
        self.centres_ = X[idx]
        self.alpha_ = ops.numpy(alpha)[:, 0].copy()
        self.n_iter_ = int(iters[0])
        self.cg_residuals_ = history[:, 0]
        self.tune_time_ = clock.total
        params = {"sigma": self.sigma_, "lambda": self.lambda_, "centres": int(idx.size),
                  "iterations": self.n_iter_, "cv_mse": cv_mse}
        if int(self.n_features) > m:
            params["note"] = f"n_features {int(self.n_features)} > {m} training rows: M = {m} (every row a centre)"
        self.best_params_ = params
        return self

    def _iterations(self, n: int) -> int:
        return default_iterations(n) if self.max_iter is None else int(self.max_iter)

    def _centres(self, n: int, rng: np.random.Generator, rows) -> np.ndarray:
        """min(M, n) of ``rows`` drawn uniformly without replacement (in their row order)."""
        M = min(int(self.n_features), n)
        return np.asarray(rows)[np.sort(rng.choice(n, size=M, replace=False))]

    def predict(self, X):
        check_is_fitted(self, "alpha_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        ops = self._ops()
        out = kernel_times(ops, ops.array(X), ops.array(self.centres_), self.sigma_, ops.array(self.alpha_),
                           int(self.block_bytes))
        return ops.numpy(out) + self.intercept_
