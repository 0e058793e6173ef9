"""Exact Gaussian-process regression (methods.yaml ``gp`` and ``gp-sod``).

Model: y = f(x) + ε, f ~ GP(0, k) on the training targets standardised inside ``fit`` (mean 0,
standard deviation 1: the prior mean is the training mean), ε ~ N(0, σ²), with the ARD squared
exponential (Gaussian) kernel::

    k(x, x′) = s² exp(−½ Σ_j (x_j − x′_j)² / ℓ_j²)

Why SE and not Matérn 5/2: the papers whose tables the UCI fixed-split suite reproduces (Yang et
al. 2015, Wilson et al.'s deep kernel learning 2016, and most exact-GP baselines on those splits)
report the GP with the ARD SE ("RBF") kernel, so ``gp`` is the number those tables call "GP". Matérn
5/2 is the common modern default (rougher sample paths, often a little better on real data); it is
a different method and would be its own row.

Hyper-parameters θ = (log ℓ_1..ℓ_d, log s², log σ²) by type-II maximum likelihood: the negative log
marginal likelihood ``nll`` = ½ yᵀα + Σ log L_ii + (m/2) log 2π (α = K⁻¹y, K = LLᵀ = K_f + σ²I),
divided by m so that L-BFGS-B's tolerances do not depend on the number of rows, with its analytic
gradient ∂nll/∂θ_i = ½ tr((K⁻¹ − ααᵀ) ∂K/∂θ_i) (Rasmussen & Williams eq. 5.9). One evaluation is a
Cholesky (m³/3), the inverse from it (LAPACK ``potri``, 2m³/3) and O(m²d) for the d + 2 traces.
The inner CV folds ``cv`` are not used: the hyper-parameters come from the marginal likelihood, as
the method is defined (``best_params_["cv"]`` says so).

Starts (``n_restarts``, drawn from ``random_state`` in order, all up front): start 0 is ℓ_j = √d ·
std(x_j) (a typical pair of rows is then about one length-scale apart), s² = 1 (the variance of the
standardised target), σ² = 0.1; each further start multiplies every ℓ_j by exp(u_j), u_j ~ U(−1.5,
1.5), and draws log₁₀ s² ~ U(−0.5, 0.5) and log₁₀ σ² ~ U(−3, −0.5). Every start runs
``restart_iter`` L-BFGS-B iterations; the best one continues to ``max_iter`` (à la carte's scheme,
rfbench/methods/alc.py). Bounds: ℓ_j within [1e-3, 1e4] · (std(x_j), or 1 for a column constant up to rounding: ``column_scales``), s² within [1e-4, 1e4],
σ² within [1e-6, 10].

Cholesky and jitter: K = K_f + σ²I is factorised by ``scipy.linalg.cho_factor``; where that fails,
the jitter ladder adds 1e-8 · mean(diag K) to the diagonal, then ten times more, up to 1e-2 · mean
diag; past it, a one-line ``np.linalg.LinAlgError``. ``best_params_["jitter"]`` says how many
factorisations needed jitter and the largest added (or "none").

Prediction: the predictive mean k(X*, X) α, mapped back to the target's unit. ``n_features`` (the
budget) does not apply: it is accepted and ignored, and the estimator shares budgets
(:class:`rfbench.contract.SharesBudgets`): one fit serves every budget of a work item, with the
same predictions for each.

Size: exact GP costs O(m³) time and O(m²) memory per evaluation. Above N training rows ``gp``
refuses in one line before it allocates anything. N is ``max_rows`` where given, else the device's
(:func:`row_limit`): on the CPU :data:`MAX_ROWS` (a time bound, measured in docs/gp.md); on a GPU the
whole training set where its free memory holds the fit's m × m matrices (:data:`DEVICE_MATRICES`).
``subset=True`` (``gp-sod``, registered with ``max_rows`` = :data:`MAX_ROWS` on every device, so that
its row means one thing) fits the same model on N rows drawn without replacement from
``random_state`` (subset of data), and is identical to ``gp`` at or below N rows (no draw is made
there, so the starts are the same).

Device (``device``: "cpu", the NumPy path; "cuda"/"cuda:K"/"torch-cpu"): the same marginal
likelihood and gradient in torch float64 with ``torch.linalg.cholesky_ex`` and
``torch.cholesky_inverse`` (:mod:`rfbench.methods.gp_torch`, imported only then); L-BFGS-B, the
draws and the prediction stay in NumPy; the last factorisation at the optimum (α = K⁻¹y) is the
device's too, since a whole-set fit's K is tens of GB. ``n_jobs`` is not used (the BLAS threads are the runner's).
"""

from __future__ import annotations

import math

import numpy as np
import scipy.linalg
import scipy.optimize
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils.validation import _num_samples, check_is_fitted, validate_data

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator
from rfbench.methods.device import free_bytes, uses_torch
from rfbench.methods.tuning import Stopwatch

#: the most training rows ``gp`` fits: a default fit there is about 8 minutes on one core (docs/gp.md)
MAX_ROWS = 3500
#: float64 m × m matrices a fit on a torch device holds at its peak: 5.0 measured (torch's
#: max_memory_allocated, 10 000 rows on an H200: results/uci-gpu.json), one more for the jitter ladder's
#: copy. Measured before gp_torch computed K_f twice instead of holding it (on the CPU that took the
#: peak from 3 matrices to 2): to be lowered once a GPU run measures it again (docs/gp.md)
DEVICE_MATRICES = 6
#: the share of a GPU's free memory a fit plans on (the rest: the allocator's rounding, cuSOLVER's workspace)
DEVICE_SHARE = 0.9
#: the jitter ladder, in units of mean(diag K): 1e-8, 1e-7, ..., 1e-2
JITTER_LADDER = tuple(10.0 ** e for e in range(-8, -1))
LOG_2PI = float(np.log(2.0 * np.pi))
ELL_BOUNDS = (1e-3, 1e4)     # times std(x_j)
SIGNAL_BOUNDS = (1e-4, 1e4)
NOISE_BOUNDS = (1e-6, 10.0)


class JitterLog:
    """How many factorisations needed jitter, and the largest added (relative to mean diag K)."""

    def __init__(self):
        self.count = 0
        self.largest = 0.0

    def add(self, relative: float):
        self.count += 1
        self.largest = max(self.largest, relative)

    def note(self) -> str:
        if not self.count:
            return "none"
        return f"{self.count} factorisation(s) needed jitter, at most {self.largest:.0e} x mean diag"


def cholesky_with_jitter(K: np.ndarray, log: JitterLog | None = None, overwrite: bool = False) -> np.ndarray:
    """The lower Cholesky factor of the symmetric K (its lower triangle; the upper one is garbage),
    with the jitter ladder where K is not numerically positive definite; one-line LinAlgError past it."""
    try:
        return scipy.linalg.cho_factor(K, lower=True, overwrite_a=overwrite, check_finite=False)[0]
    except np.linalg.LinAlgError:
        pass
    scale = float(np.mean(np.diag(K)))
    for rel in JITTER_LADDER:
        A = K + (rel * scale) * np.eye(K.shape[0])
        try:
            L = scipy.linalg.cho_factor(A, lower=True, overwrite_a=True, check_finite=False)[0]
        except np.linalg.LinAlgError:
            continue
        if log is not None:
            log.add(rel)
        return L
    raise past_the_ladder(K.shape[0])


def past_the_ladder(m: int) -> np.linalg.LinAlgError:
    """The one-line error of a kernel matrix that the whole jitter ladder leaves indefinite."""
    return np.linalg.LinAlgError(
        f"the GP kernel matrix ({m} rows) is not positive definite even with jitter "
        f"{JITTER_LADDER[-1]:.0e} x mean diag (duplicated rows with no noise, or non-finite inputs?)")


def se_kernel(A: np.ndarray, B: np.ndarray, ell: np.ndarray, s2: float) -> np.ndarray:
    """s² exp(−½ Σ_j (a_j − b_j)² / ℓ_j²) between the rows of A and B (len(A) × len(B))."""
    As, Bs = A / ell, B / ell
    K = As @ Bs.T
    K *= -2.0
    K += np.einsum("ij,ij->i", As, As)[:, None]
    K += np.einsum("ij,ij->i", Bs, Bs)[None, :]
    np.maximum(K, 0.0, out=K)
    K *= -0.5
    np.exp(K, out=K)
    K *= s2
    return K


def unpack(theta: np.ndarray) -> tuple[np.ndarray, float, float]:
    """(ℓ (d,), s², σ²) of θ = (log ℓ, log s², log σ²)."""
    return np.exp(theta[:-2]), float(np.exp(theta[-2])), float(np.exp(theta[-1]))


def nll_and_grad(theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                 log: JitterLog | None = None) -> tuple[float, np.ndarray]:
    """The negative log marginal likelihood divided by m, and its gradient w.r.t. θ (see the module notes)."""
    m = X.shape[0]
    ell, s2, noise = unpack(theta)
    Kf = se_kernel(X, X, ell, s2)
    K = Kf.copy()
    K.flat[::m + 1] += noise
    L = cholesky_with_jitter(K, log, overwrite=True)
    alpha = scipy.linalg.cho_solve((L, True), y, check_finite=False)
    value = 0.5 * float(y @ alpha) + float(np.sum(np.log(np.diag(L)))) + 0.5 * m * LOG_2PI
    Kinv, info = scipy.linalg.lapack.dpotri(L, lower=1, overwrite_c=1)
    if info:
        raise np.linalg.LinAlgError(f"LAPACK dpotri failed (info {info})")
    W = np.tril(Kinv)
    W += np.tril(Kinv, -1).T                         # K⁻¹, both triangles
    W -= np.outer(alpha, alpha)                      # W = K⁻¹ − ααᵀ
    d_noise = 0.5 * noise * float(np.trace(W))
    W *= Kf                                          # M = W ∘ K_f
    d_signal = 0.5 * float(W.sum())
    Xs = X / ell
    r = W.sum(axis=1)
    d_ell = r @ (Xs * Xs) - np.einsum("ij,ij->j", Xs, W @ Xs)
    grad = np.concatenate([d_ell, [d_signal, d_noise]])
    return value / m, grad / m


def nll_value(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> float:
    """The negative log marginal likelihood (not divided by m), for tests and reports."""
    return nll_and_grad(theta, X, y)[0] * X.shape[0]


def column_scales(X: np.ndarray) -> np.ndarray:
    """The unit of each input's length-scale: std(x_j), or 1 for a column that is constant up to
    rounding (std ≤ 1e-8 · (1 + max|x_j|)). Such a column's std (3e-16 in a keggdirected subset) would
    otherwise set bounds that let ℓ_j follow its rounding noise and split rows that are equal."""
    x_std = X.std(axis=0)
    spread = 1e-8 * (1.0 + np.abs(X).max(axis=0, initial=0.0))
    return np.where(x_std > spread, x_std, 1.0)


def bounds(scale: np.ndarray) -> list[tuple[float, float]]:
    """L-BFGS-B's bounds on θ (module notes), ``scale``: :func:`column_scales`."""
    out = [(float(np.log(ELL_BOUNDS[0] * s)), float(np.log(ELL_BOUNDS[1] * s))) for s in scale]
    return out + [tuple(float(v) for v in np.log(SIGNAL_BOUNDS)), tuple(float(v) for v in np.log(NOISE_BOUNDS))]


def initial_thetas(X: np.ndarray, n_restarts: int, rng: np.random.Generator) -> list[np.ndarray]:
    """The starts (module notes), drawn in order from ``rng``."""
    m, d = X.shape
    scale = column_scales(X)
    ell0 = np.sqrt(d) * scale
    starts = [np.concatenate([np.log(ell0), [0.0, np.log(0.1)]])]
    for _ in range(1, n_restarts):
        u = rng.uniform(-1.5, 1.5, d)
        log_s2 = np.log(10.0) * rng.uniform(-0.5, 0.5)
        log_noise = np.log(10.0) * rng.uniform(-3.0, -0.5)
        starts.append(np.concatenate([np.log(ell0) + u, [log_s2, log_noise]]))
    lo, hi = np.array(bounds(scale)).T
    return [np.clip(t, lo, hi) for t in starts]


def row_limit(max_rows, device: str, free: int | None = None) -> tuple[int, str]:
    """(N, why N): the most training rows an exact fit takes. ``max_rows`` where given; else on the CPU
    (NumPy or torch-cpu: ``free`` None) :data:`MAX_ROWS`; else on a GPU with ``free`` bytes free the
    largest m whose :data:`DEVICE_MATRICES` m × m float64 matrices fit in :data:`DEVICE_SHARE` of them."""
    if max_rows is not None:
        return int(max_rows), "the max_rows given"
    if free is None:
        return MAX_ROWS, "the most an exact GP fits on the CPU (about 8 minutes on one core, docs/gp.md)"
    rows = max(math.isqrt(int(DEVICE_SHARE * free) // (DEVICE_MATRICES * 8)), 2)
    return rows, (f"the most whose fit ({DEVICE_MATRICES} m × m float64 matrices) fits in the "
                  f"{free / 2**30:.1f} GiB free on {device}")


def _minimise(objective, theta0, bnds, maxiter: int) -> tuple[np.ndarray, float, int]:
    """L-BFGS-B from θ₀: (θ, objective, evaluations)."""
    if maxiter <= 0:
        return theta0, float(objective(theta0)[0]), 1
    opt = scipy.optimize.minimize(objective, theta0, jac=True, method="L-BFGS-B", bounds=bnds,
                                  options={"maxiter": int(maxiter)})
    return opt.x, float(opt.fun), int(opt.nfev)


class GPRegressor(SharesBudgets, RegressorMixin, BaseEstimator):
    """Exact GP regression, ARD squared-exponential kernel, type-II maximum likelihood (module notes).

    Parameters
    ----------
    n_features : the budget; does not apply to an exact GP: accepted and ignored.
    budgets : every budget of the work item (SharesBudgets): one fit serves them all.
    n_restarts : starts of L-BFGS-B (start 0 deterministic, the others drawn from random_state).
    restart_iter : L-BFGS-B iterations of every start; the best continues to ``max_iter``.
    max_iter : iterations of the best start in all.
    max_rows : the most training rows an exact fit takes; None: the device's (:func:`row_limit`:
        :data:`MAX_ROWS` on the CPU, the rows whose fit fits in a GPU's free memory), and
        :data:`MAX_ROWS` with ``subset`` on any device (a subset's size must not depend on the machine).
    subset : above ``max_rows``, fit on ``max_rows`` seeded rows (gp-sod) instead of refusing (gp).
    cv : the inner folds: not used (hyper-parameters by marginal likelihood).
    random_state : the starts and the subset.
    n_jobs : not used.
    device : "cpu" (NumPy) or a torch device ("cuda", "cuda:K", "torch-cpu") for the likelihood.

    Attributes
    ----------
    lengthscales_, signal_variance_, noise_variance_ (in the standardised target's unit), alpha_,
    X_train_, y_mean_, y_std_, nll_ (per row, at the optimum), rows_ (the subset's indices or None),
    best_params_, best_params_per_budget_, tune_time_, n_features_in_.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "budgets": ["array-like", None],
        "n_restarts": [cons.positive_int()],
        "restart_iter": [cons.non_negative_int()],
        "max_iter": [cons.non_negative_int()],
        "max_rows": [cons.Int(2, None, closed="left"), None],
        "subset": ["boolean"],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, budgets=None, n_restarts=3, restart_iter=20, max_iter=200,
                 max_rows=None, subset=False, cv=5, random_state=None, n_jobs=1, device="cpu"):
        self.n_features = n_features
        self.budgets = budgets
        self.n_restarts = n_restarts
        self.restart_iter = restart_iter
        self.max_iter = max_iter
        self.max_rows = max_rows
        self.subset = subset
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    def _objective(self, X, y, log: JitterLog):
        if uses_torch(self.device):
            from rfbench.methods import gp_torch

            return gp_torch.Objective(X, y, self.device, JITTER_LADDER, log, past_the_ladder)
        return lambda theta: nll_and_grad(theta, X, y, log)

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        m_all = _num_samples(X)
        # a GPU's memory (None on the CPU); a subset's size is never the memory's: the same seed draws the
        # same rows on any machine
        free = free_bytes(self.device) if self.max_rows is None and not self.subset else None
        cap, why = row_limit(self.max_rows, self.device, free)
        if m_all > cap and not self.subset:
            if free is not None:
                instead = "free the GPU (--gpu-slots 1: one device task at a time)"
            elif self.max_rows is None:
                instead = "a GPU (--device cuda)"
            else:
                instead = "a larger max_rows"
            raise ValueError(f"gp: {m_all} training rows is over N = {cap}, {why}; use gp-sod (a GP on "
                             f"{MAX_ROWS} seeded rows) or {instead}")
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        rng = as_generator(self.random_state)
        self.rows_ = None
        if X.shape[0] > cap:          # gp-sod above N: the subset first (no draw at or below N)
            self.rows_ = np.sort(rng.choice(X.shape[0], size=cap, replace=False))
            X, y = X[self.rows_], y[self.rows_]
        m, d = X.shape
        self.y_mean_ = float(y.mean())
        self.y_std_ = float(y.std()) or 1.0
        yz = (y - self.y_mean_) / self.y_std_
        starts = initial_thetas(X, int(self.n_restarts), rng)
        bnds = bounds(column_scales(X))
        log = JitterLog()
        objective = self._objective(X, yz, log)
        timer = Stopwatch()
        with timer:
            first = max(min(int(self.restart_iter), int(self.max_iter)), 0) if len(starts) > 1 else int(self.max_iter)
            runs = [_minimise(objective, t, bnds, first) for t in starts]
            values = np.array([v for _, v, _ in runs])
            best = int(np.argmin(values))
            theta, value, evals = runs[best]
            rest = int(self.max_iter) - first
            n_evals = sum(e for _, _, e in runs)
            if rest > 0:
                theta, value, more = _minimise(objective, theta, bnds, rest)
                n_evals += more
        ell, s2, noise = unpack(theta)
        if uses_torch(self.device):
            self.alpha_ = objective.alpha(theta)
        else:
            K = se_kernel(X, X, ell, s2)
            K.flat[::m + 1] += noise
            L = cholesky_with_jitter(K, log, overwrite=True)
            self.alpha_ = scipy.linalg.cho_solve((L, True), yz, check_finite=False)
        self.X_train_ = X
        self.lengthscales_, self.signal_variance_, self.noise_variance_ = ell, s2, noise
        self.theta_ = theta
        self.nll_ = value
        self.restart_nll_ = values
        self.best_params_ = {
            "lengthscales": [float(v) for v in ell], "signal_variance": s2, "noise_variance": noise,
            "nll_per_row": value, "best_restart": best, "evaluations": n_evals,
            "rows": m if self.rows_ is not None else None,
            "jitter": log.note(),
            "cv": "inner folds not used: hyper-parameters by type-II maximum likelihood",
            "n_features": "not used: an exact GP has no feature budget",
        }
        budgets = sorted({int(b) for b in (self.budgets or [self.n_features])})
        self.best_params_per_budget_ = {n: self.best_params_ for n in budgets}
        self.tune_time_ = timer.total
        return self

    def predict(self, X, budget=None):
        """The predictive mean (the same for every ``budget``: it does not apply)."""
        check_is_fitted(self, "alpha_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        Ks = se_kernel(X, self.X_train_, self.lengthscales_, self.signal_variance_)
        return self.y_mean_ + self.y_std_ * (Ks @ self.alpha_)
