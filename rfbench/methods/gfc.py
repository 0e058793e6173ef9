"""GFC: Greedy Feature Construction (Oglic & Gärtner, NIPS 2016), method-notes §2.

The model is ridge regression on cosine-wave features (paper eq. (5))::

    f(x) = a₀ + Σ_l [a_l^s sin(w_l·x) + a_l^c cos(w_l·x)]

whose spectral vectors w_l are constructed by greedy functional descent on the squared error: each
step fits one new feature to the current estimate (Algorithm 1); several descents run on random
samples S_j of the rows and their features are pooled by one ridge fit (Algorithm 2).

Algorithm 2 (GFC), as implemented in :meth:`GFCRegressor.fit`::

    W ← {0} ; f₀ ← mean(y)                                  (bias = the zero frequency)
    for pass = 1..T:
        for j = 1..M (in parallel):  S_j ~ U{1..m} ;  W ← W ∪ GREEDYDESCENT(data[S_j], f_{pass−1}[S_j], p, ε)
        ν ← inner-CV choice (``cv``) on [1, sin(XW), cos(XW)]; a* ← ridge(ν)
        drop every w with max(|a_s|, |a_c|) < η (never the bias); refit with ν; f_pass ← prediction
    return (W, a*)

Algorithm 1 (GREEDYDESCENT), :func:`greedy_descent`::

    W ← ∅ ; f ← f₀
    for k = 1..p:
        draw the inverted k-fold split of the chunk
        (w_k, λ_k) ← argmin of the inverted k-fold CV error of ridge on z_w(x) = [f(x), sin(w·x), cos(w·x)]
        c ← ridge(λ_k) on all chunk points;  f_new ← c₀ f + c₁ sin(w_k·x) + c₂ cos(w_k·x)
        W ← W ∪ {w_k}
        if |E(f_new) − E(f)| / max(E(f_new), E(f)) < ε: stop   (E = in-sample MSE; w_k is kept)
        f ← f_new
    return W

Settings of the paper (App. C.1): M = 5 descents for 100 features and 25 for 500 (M = n_features//20),
T = 1, p = 20, ε = 0.01, η = 1e-6·range(y), regulariser Ω(c) = ‖c‖², w₀ ~ N(0, I)/√d, L-BFGS-B.

Readings where the paper is terse (each with its source; the measurements are in docs/history/gfc.md):

* S_j (``chunks="partition"``): a random partition of the rows into M disjoint chunks — §2.5 calls
  the final fit "averaging of the greedy approximations constructed on different chunks of the
  data" and method-notes §2.4 resolves S_j ~ U{1..m} so;
* the bias is the zero frequency's feature inside the penalised ridge of line 6
  (``bias="penalised"``: a constant column penalised by ν like every amplitude, Alg. 2 lines 1, 6);
* ν by CV as a continuous 1-D problem (``nu_search="cv-1d"``; §2.5: "cross-validation of the
  capacity parameter involves optimizing a 1-dimensional objective function [20]"), 5-fold inner CV;
* per-feature λ is optimised as log λ (λ₀ = 1e-4, method-notes §2.3) with no bounds and the plain
  CV objective (App. C.1 gives no bounds or scaling), L-BFGS-B with maxiter = 200, scipy defaults;
* descent folds: k = ``descent_folds`` = 5 (method-notes §2.3), drawn afresh for every step from the
  descent's own generator; amplitudes of line 4 are the ridge solution on all chunk points with λ_k;
* each descent gets an independent seed and its rows drawn up front, so sequential and parallel
  runs agree; the step budget n_features is shared over the M descents (at most p each);
* inputs are used as given (the protocol standardises them; w₀'s scale assumes it).

Other readings are options, compared by the ablation (``gfc-*`` methods in methods.yaml):
``chunks="all"``, ``bias="centred"``, ``nu_search="grid"``, ``lambda_bounds=(1e-10, 1e2)``,
``scale_objective=True``.
"""

from __future__ import annotations

from numbers import Real

import numpy as np
import scipy.optimize
from joblib import Parallel, delayed, effective_n_jobs, parallel_config
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.cvgrad import (
    DEFAULT_PATHS,
    OneFrequencyCV,
    Paths,
    inverted_blocks,
    trig_cv_grad,
    trig_features,
)
from rfbench.methods.moderows import compact_rows
from rfbench.methods.ridge import (
    DEFAULT_LAMBDAS,
    ridge_solve,
    select_lambda,
    select_lambda_continuous,
)
from rfbench.methods.tuning import Stopwatch

LAMBDA0 = 1e-4
MAXITER = 200
# exp() range only (not a modelling bound): keeps λ = exp(θ) finite in L-BFGS-B's trial steps
LOG_LAMBDA_RANGE = (-700.0, 700.0)
# an unbounded λ can reach values with no effect in double precision, where a fold's 3 × 3 system
# [f, sin, cos] is singular (e.g. f constant and w → 0): there λ is evaluated at this floor instead,
# with zero derivative — below it λ changes nothing, so this is rounding, not a bound
NUMERIC_LAMBDA_FLOOR = 1e-12


def feature_objective(theta: np.ndarray, X: np.ndarray, y: np.ndarray, f: np.ndarray, splits,
                      y_var: float = 1.0, paths: Paths = DEFAULT_PATHS) -> tuple[float, np.ndarray]:
    """Alg. 1 line 3 as a hyper-parameter problem: CV error of ridge on [f, sin(Xw), cos(Xw)].

    ``theta = (w, log λ)``; the amplitudes c are the ridge solution, not variables. Returns the
    mean validation MSE over ``splits`` divided by ``y_var`` and its gradient (Keerthi template,
    :func:`rfbench.methods.cvgrad.trig_cv_grad` along ``paths``; the f column has zero derivative).
    """
    lam = np.exp(theta[-1])
    res = trig_cv_grad(X, y, theta[:-1, None], lam, splits, fixed=f[:, None], paths=paths)
    grad = np.append(res.dW[:, 0], res.dlam * lam)  # chain rule dλ/dlogλ = λ
    return res.value / y_var, grad / y_var


def fast_feature_objective(theta: np.ndarray, cv: OneFrequencyCV, y_var: float = 1.0) -> tuple[float, np.ndarray]:
    """:func:`feature_objective` through the padded one-frequency evaluator built once per step
    (same value and gradient, tested; what the descent runs)."""
    lam = np.exp(np.clip(theta[-1], *LOG_LAMBDA_RANGE))
    try:
        value, dw, dlam = cv(theta[:-1], lam)
    except np.linalg.LinAlgError:
        if lam >= NUMERIC_LAMBDA_FLOOR:
            raise
        value, dw, _ = cv(theta[:-1], NUMERIC_LAMBDA_FLOOR)
        dlam = 0.0
    return value / y_var, np.append(dw, dlam * lam) / y_var


def greedy_descent(X: np.ndarray, y: np.ndarray, f0: np.ndarray, max_steps: int, epsilon: float,
                   n_folds: int, seed, y_var: float = 1.0, lambda_bounds=None,
                   maxiter: int = MAXITER) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1 (GREEDYDESCENT) on one chunk; returns (W (d × k), λ of each built feature).

    ``y_var`` divides the CV objective (1: the paper's objective); ``lambda_bounds`` (lo, hi)
    bounds λ (None: unbounded, the paper)."""
    rng = np.random.default_rng(seed)
    m, d = X.shape
    k_folds = max(2, min(n_folds, m))
    log_bounds = (None, None) if lambda_bounds is None else tuple(np.log(lambda_bounds))
    bounds = [(None, None)] * d + [log_bounds]
    f = np.asarray(f0, dtype=float)
    err = np.mean((f - y) ** 2)
    W, lambdas = [], []
    splits = inverted_blocks(m, k_folds)
    for _ in range(max_steps):
        # inverted split, drawn afresh for every step: train on one fold, validate on the others
        # (the spectrum matters more than the amplitudes, §2.5). The rows are shuffled and the
        # folds are contiguous blocks of the shuffled rows (= inverted_kfold(m, k, rng)).
        order = rng.permutation(m)
        # line 3: new spectral vector (and its λ) by L-BFGS-B on the CV error; no heuristic start
        theta0 = np.append(rng.standard_normal(d) / np.sqrt(d), np.log(LAMBDA0))
        cv = OneFrequencyCV(X[order], y[order], f[order], splits)
        opt = scipy.optimize.minimize(fast_feature_objective, theta0, args=(cv, y_var),
                                      jac=True, method="L-BFGS-B", bounds=bounds,
                                      options={"maxiter": maxiter})
        w, lam = opt.x[:-1], float(np.exp(np.clip(opt.x[-1], *LOG_LAMBDA_RANGE)))
        # line 4: stepwise update, the old estimate is rescaled by c₀ (amplitudes on all chunk points)
        S, C = trig_features(X, w[:, None])
        Z = np.column_stack([f, S[:, 0], C[:, 0]])
        c, _ = ridge_solve(Z, y, lam, fit_intercept=False)
        f_new = Z @ c
        err_new = np.mean((f_new - y) ** 2)
        W.append(w)
        lambdas.append(lam)
        # line 5: relative in-sample improvement below ε ends the descent (this feature is kept)
        denom = max(err_new, err)
        f, converged = f_new, denom <= 0 or abs(err_new - err) / denom < epsilon
        err = err_new
        if converged:
            break
    return np.column_stack(W), np.asarray(lambdas)


def _descent_job(X, y, f0, max_steps, epsilon, n_folds, seed, y_var, lambda_bounds):
    # one BLAS thread in every mode: the sequential and the parallel run must agree bit for bit
    with threadpool_limits(limits=1):
        return greedy_descent(X, y, f0, max_steps, epsilon, n_folds, seed, y_var, lambda_bounds)


def _design(X: np.ndarray, W: np.ndarray, bias: bool) -> np.ndarray:
    """[1 (the zero frequency's cos; its sin is 0), sin(XW), cos(XW)], without the 1 if not bias."""
    S, C = trig_features(X, W)
    return np.hstack(([np.ones((X.shape[0], 1))] if bias else []) + [S, C])


class GFCRegressor(RegressorMixin, BaseEstimator):
    """Greedy Feature Construction + ridge regression (Algorithm 2 with Algorithm 1).

    Parameters
    ----------
    n_features : spectral-vector budget per pass (shared by the descents; the ε-stop and the
        amplitude cut-off may leave fewer).
    n_descents : M, the number of parallel greedy descents; default n_features // 20.
    chunks : the rows S_j of each descent: ``"partition"`` (M disjoint random chunks of m/M rows,
        the paper), ``"all"`` (every descent sees all rows) or a float in (0, 1] (an independent
        uniform random subset of that fraction of the rows per descent).
    max_steps : p, maximum greedy steps per descent.
    passes : T, data passes.
    epsilon : ε, relative in-sample improvement that stops a descent.
    eta_rel : amplitude cut-off η as a fraction of range(y).
    descent_folds : k of the inverted k-fold CV inside a descent.
    bias : ``"penalised"`` (the constant feature of w = 0 inside the ν-penalised ridge, the paper)
        or ``"centred"`` (an unpenalised intercept by centring).
    nu_search : ``"cv-1d"`` (ν minimising the inner-CV error as a continuous 1-D problem, the
        paper) or ``"grid"`` (the best of ``ridge.DEFAULT_LAMBDAS``).
    lambda_bounds : None (λ of a descent step unbounded, the paper) or (lo, hi).
    scale_objective : divide a descent's CV objective by var(y) (False: the paper's objective).
    cv : inner CV for the final ridge ν (int or iterable of (train, test) pairs).
    random_state, n_jobs : see :mod:`rfbench.methods.common`; descents run in loky processes when
        n_jobs > 1, with the same result as n_jobs = 1.

    Attributes
    ----------
    frequencies_ (d × n_kept), coef_ (2·n_kept, on [sin(XW), cos(XW)]), intercept_ (the bias
    feature's amplitude, or the centred intercept), feature_lambdas_ (λ of each kept feature's
    descent step), descent_steps_ (steps each descent ran, pass by pass), best_params_
    ({"nu", "n_features_built", "n_features_kept"}), tune_time_, n_features_out_ (= n_kept, the
    number of spectral vectors; the design has 2·n_kept columns), n_features_in_.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "n_descents": [cons.positive_int(), None],
        "chunks": [cons.Choices("partition", "all"), Interval(Real, 0, 1, closed="right")],
        "max_steps": [cons.positive_int()],
        "passes": [cons.positive_int()],
        "epsilon": [cons.non_negative_real()],
        "eta_rel": [cons.non_negative_real()],
        "descent_folds": [cons.Int(2, None, closed="left")],
        "bias": [cons.Choices("penalised", "centred")],
        "nu_search": [cons.Choices("cv-1d", "grid")],
        "lambda_bounds": ["array-like", None],
        "scale_objective": ["boolean"],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
    }

    def __init__(self, n_features=100, n_descents=None, chunks="partition", max_steps=20, passes=1,
                 epsilon=0.01, eta_rel=1e-6, descent_folds=5, bias="penalised", nu_search="cv-1d",
                 lambda_bounds=None, scale_objective=False, cv=5, random_state=None, n_jobs=1):
        self.n_features = n_features
        self.n_descents = n_descents
        self.chunks = chunks
        self.max_steps = max_steps
        self.passes = passes
        self.epsilon = epsilon
        self.eta_rel = eta_rel
        self.descent_folds = descent_folds
        self.bias = bias
        self.nu_search = nu_search
        self.lambda_bounds = lambda_bounds
        self.scale_objective = scale_objective
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs

    def _check_lambda_bounds(self):
        """The relation the constraints cannot say: a bounds pair (lo, hi) with 0 < lo < hi."""
        if self.lambda_bounds is not None:
            lo, hi = self.lambda_bounds
            if not 0 < lo < hi:
                raise ValueError(f"lambda_bounds must be None or (lo, hi) with 0 < lo < hi, got {self.lambda_bounds!r}")

    def _ridge(self, Z, y, splits):
        """Line 6: ν by inner CV, then the amplitudes (and the bias) on all rows."""
        centred = self.bias == "centred"     # else the bias is Z's constant column, penalised
        if self.nu_search == "grid":
            nu, cv_err, _ = select_lambda(Z, y, splits, DEFAULT_LAMBDAS, fit_intercept=centred)
        else:
            nu, cv_err = select_lambda_continuous(Z, y, splits, fit_intercept=centred)
        coef, intercept = ridge_solve(Z, y, nu, fit_intercept=centred)
        return nu, cv_err, coef, intercept

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        self._check_lambda_bounds()
        X, y = validate_data(self, X, y, dtype=np.float64, y_numeric=True, ensure_min_samples=2)
        y = np.asarray(y, dtype=np.float64)
        rng = as_generator(self.random_state)
        m, d = X.shape
        splits = resolve_cv(self.cv, m, rng)
        n_desc = self.n_descents if self.n_descents is not None else self.n_features // 20
        partition = isinstance(self.chunks, str) and self.chunks == "partition"
        if partition:
            # every chunk must hold one sample per descent fold
            n_desc = min(n_desc, m // self.descent_folds)
        elif isinstance(self.chunks, str):            # "all"
            chunk_size = m
        else:                                         # a fraction in (0, 1]
            chunk_size = int(min(m, max(self.descent_folds, round(self.chunks * m))))
        n_desc = int(max(1, min(n_desc, self.n_features)))   # never more descents than features
        # step budget of each descent: n_features shared over the descents, at most p each
        share = np.full(n_desc, self.n_features // n_desc) + (np.arange(n_desc) < self.n_features % n_desc)
        steps = np.minimum(share, self.max_steps).astype(int)
        eta = self.eta_rel * np.ptp(y)
        y_var = (float(np.var(y)) or 1.0) if self.scale_objective else 1.0
        lambda_bounds = None if self.lambda_bounds is None else tuple(map(float, self.lambda_bounds))
        bias = self.bias == "penalised"
        n_jobs = min(effective_n_jobs(self.n_jobs), n_desc)

        # the descents' inputs: sparse around the column modes when nearly constant (same model up
        # to rounding, several times faster on fingerprint data), else X itself
        X_descent = compact_rows(X)
        timer = Stopwatch()
        W, lambdas = np.zeros((d, 0)), np.zeros(0)
        f = np.full(m, y.mean())                       # line 1: f₀ = mean(y); bias = w = 0
        n_built, descent_steps = 0, []
        for _ in range(self.passes):                   # line 2
            # line 4: the rows S_j of every descent, drawn up front (parallel = sequential)
            if partition:
                chunks = np.array_split(rng.permutation(m), n_desc)
            elif chunk_size == m:
                chunks = [np.arange(m)] * n_desc
            else:
                chunks = [np.sort(rng.choice(m, size=chunk_size, replace=False)) for _ in range(n_desc)]
            seeds = rng.integers(0, 2**63 - 1, size=n_desc)   # one independent seed per descent
            jobs = [((X_descent, y, f) if ch.size == m else (X_descent[ch], y[ch], f[ch]))   # no copies of all rows
                    + (steps[j], self.epsilon, self.descent_folds, seeds[j], y_var, lambda_bounds)
                    for j, ch in enumerate(chunks)]
            with timer:                                # lines 3–5
                if n_jobs > 1:
                    with parallel_config(backend="loky", inner_max_num_threads=1):
                        results = Parallel(n_jobs=n_jobs)(delayed(_descent_job)(*job) for job in jobs)
                else:
                    results = [_descent_job(*job) for job in jobs]
            W = np.hstack([W] + [Wj for Wj, _ in results])
            lambdas = np.concatenate([lambdas] + [lj for _, lj in results])
            descent_steps.append([int(Wj.shape[1]) for Wj, _ in results])
            n_built += sum(Wj.shape[1] for Wj, _ in results)
            Z = _design(X, W, bias)
            with timer:                                # line 6: ν by inner CV
                nu, cv_err, coef, intercept = self._ridge(Z, y, splits)
            # line 7: drop features whose amplitudes are all below η (never the bias), refit
            n, b = W.shape[1], int(bias)
            keep = np.maximum(np.abs(coef[b:b + n]), np.abs(coef[b + n:])) >= eta
            if not keep.all():
                W, lambdas = W[:, keep], lambdas[keep]
                Z = _design(X, W, bias)
                coef, intercept = ridge_solve(Z, y, nu, fit_intercept=not bias)
            f = Z @ coef + intercept
        if bias:                                       # report the bias feature's amplitude as the intercept
            intercept, coef = float(coef[0]), coef[1:]

        self.frequencies_ = W
        self.coef_ = coef
        self.intercept_ = float(intercept)
        self.feature_lambdas_ = lambdas
        self.descent_steps_ = descent_steps
        self.n_features_out_ = int(W.shape[1])
        self.best_params_ = {"nu": float(nu), "n_features_built": int(n_built),
                             "n_features_kept": int(W.shape[1])}
        self.cv_error_ = float(cv_err)
        self.tune_time_ = timer.total
        return self

    def predict(self, X):
        check_is_fitted(self, "coef_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        return _design(X, self.frequencies_, bias=False) @ self.coef_ + self.intercept_
