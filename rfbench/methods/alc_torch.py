"""À la carte's CV objective in torch (float64), for ALCRegressor with ``device`` "cuda" or "torch-cpu".

The objective is :func:`rfbench.methods.alc.alc_objective`'s: the k-fold CV error of ridge on
[1, ν_q² sin(XW), ν_q² cos(XW)], each training Gram matrix the full one minus its fold's, divided by
var(y), as a function of θ = (μ, D, ν, log λ) packed as :func:`rfbench.methods.alc.pack` packs it.
Here it is written once for a batch of restarts (θ and u's with a leading batch dimension, every
fold of every restart factored in one batched Cholesky), so that a GPU evaluates the 10 restarts
together, and differentiated by autograd; two steps have their backward written out because
autograd's own is far slower: the ridge solve (the Keerthi adjoint t = P⁻¹c̄ from the same factor)
and the Gram matrices. The L-BFGS-B runs stay in SciPy: :func:`lockstep_minimise` runs one
optimiser per restart, each in its own thread, and answers their requests for f and ∇f together
once every optimiser still running has made one.
torch is imported here only; :mod:`rfbench.methods.alc` imports this module only for a torch device.
"""

from __future__ import annotations

import queue
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.optimize
import torch

from rfbench.methods.cvgrad import prepare_splits
from rfbench.methods.device import torch_device


def unpack(theta: torch.Tensor, Q: int, d: int):
    """:func:`rfbench.methods.alc.unpack` for a batch θ (B × P): μ, D (B × Q × d), ν (B × Q), λ (B)."""
    B = theta.shape[0]
    mu = theta[:, :Q * d].reshape(B, Q, d)
    D = theta[:, Q * d:2 * Q * d].reshape(B, Q, d)
    nu = theta[:, 2 * Q * d:2 * Q * d + Q]
    return mu, D, nu, torch.exp(theta[:, -1])


class Gram(torch.autograd.Function):
    """H = FᵀF over the last two dimensions. Its backward, dE/dF = F (Ḡ + Ḡᵀ) for Ḡ = dE/dH, is one
    product; autograd's own (the two operands of a matmul) takes two, the bulk of an evaluation."""

    @staticmethod
    def forward(ctx, F):
        ctx.save_for_backward(F)
        return F.mT @ F

    @staticmethod
    def backward(ctx, dH):
        (F,) = ctx.saved_tensors
        return F @ (dH + dH.mT)


def solve(b: torch.Tensor, L: torch.Tensor) -> torch.Tensor:
    """P⁻¹b from P's lower factor L, as two batched triangular solves: torch.cholesky_solve does the
    same arithmetic, but on an H200 its batched kernels took 1.54 ms for five 1 001 × 1 001 factors
    and one right-hand side against 0.73 ms here, 12.3 → 9.2 ms per evaluation at n = 500
    (bench/perf/cholesky_device.py, results/cholesky-device.json)."""
    return torch.linalg.solve_triangular(L.mT, torch.linalg.solve_triangular(L, b, upper=False), upper=True)


def cholesky(P: torch.Tensor) -> torch.Tensor:
    """Cholesky factors of the batch of SPD ridge matrices P (… × p × p), with cvgrad's tiny jitter,
    1e-10 · trace(P)/p on the diagonal, on the matrices that fail numerically (a constant: the
    NumPy gradient does not differentiate it either)."""
    L, info = torch.linalg.cholesky_ex(P)
    if bool((info > 0).any()):
        p = P.shape[-1]
        with torch.no_grad():
            jitter = 1e-10 * torch.clamp(P.diagonal(dim1=-2, dim2=-1).sum(-1) / p, min=1e-300)
            jitter = torch.where(info > 0, jitter, torch.zeros_like(jitter))
        L, info = torch.linalg.cholesky_ex(P + jitter[..., None, None] * torch.eye(p, dtype=P.dtype, device=P.device))
        if bool((info > 0).any()):
            raise np.linalg.LinAlgError("Cholesky factorisation of a ridge matrix failed after the jitter")
    return L


class RidgeSolve(torch.autograd.Function):
    """c = P⁻¹b for a batch of SPD ridge matrices, by :func:`cholesky`. The backward uses the same
    factor, as the Keerthi gradient does: t = P⁻¹c̄, dE/dP = −t cᵀ, dE/db = t (differentiating the
    factorisation instead costs several p³ per matrix, more than the rest of an evaluation)."""

    @staticmethod
    def forward(ctx, P, b):
        L = cholesky(P)
        c = solve(b, L)
        ctx.save_for_backward(L, c)
        return c

    @staticmethod
    def backward(ctx, dc):
        L, c = ctx.saved_tensors
        t = solve(dc, L)
        return -t @ c.mT, t


def cv_objective(theta: torch.Tensor, X: torch.Tensor, y: torch.Tensor, U: torch.Tensor,
                 bounds: list[int], y_var: float) -> torch.Tensor:
    """ALC's objective for a batch of B restarts: θ (B × P), their fixed u's U (B × Q × s × d); the
    rows of X (m × d) and y (m, centred) grouped by fold, fold j being rows bounds[j]:bounds[j+1]
    (validated on, trained on the rest). Returns the B values (differentiable w.r.t. θ)."""
    B, Q, s, d = U.shape
    m = X.shape[0]
    mu, D, nu, lam = unpack(theta, Q, d)
    W = (D[:, :, None, :] * U + mu[:, :, None, :]).reshape(B, Q * s, d)    # rows w_qj = D_q ⊙ u_qj + μ_q
    XW = X @ W.mT                                                          # B × m × n
    scale = torch.repeat_interleave(nu ** 2, s, dim=1)[:, None, :]         # ν_q² on frequency qj
    # the design Z = [1, ν² sin(XW), ν² cos(XW)] (p = 2n + 1 columns) with y as one more column
    Zy = torch.cat([X.new_ones(B, m, 1), scale * torch.sin(XW), scale * torch.cos(XW),
                    y.expand(B, m)[:, :, None]], dim=2)
    p = Zy.shape[2] - 1
    sizes = [hi - lo for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    folds = Zy.split(sizes, dim=1)                                         # views, fold by fold
    m_va = torch.tensor(sizes, dtype=X.dtype, device=X.device)
    # one Gram matrix of [Z, y] per fold; split j trains on the full one minus fold j's
    H = torch.stack([Gram.apply(F) for F in folds], dim=1)                  # B × k × (p+1) × (p+1)
    H_tr = H.sum(dim=1, keepdim=True) - H
    ridge = ((m - m_va)[None, :] * lam[:, None])[:, :, None, None]         # m_tr λ, B × k × 1 × 1
    P = H_tr[:, :, :p, :p] + ridge * torch.eye(p, dtype=X.dtype, device=X.device)
    c = RidgeSolve.apply(P, H_tr[:, :, :p, p:])                            # B × k × p × 1
    # validation error of split j on fold j: residuals Z_j c_j − y_j = [Z_j, y_j] [c_j; −1]
    c_1 = torch.cat([c, -torch.ones_like(c[:, :, :1])], dim=2)
    errors = torch.stack([(F @ c_1[:, j]).square().mean(dim=(1, 2)) for j, F in enumerate(folds)],
                         dim=1)                                            # B × k
    return errors.mean(dim=1) / y_var


class Problem:
    """One ALC search's data on a torch device: X, y grouped by fold, the restarts' u's; evaluates
    the objective and its gradient for any subset of the restarts at once."""

    def __init__(self, X: np.ndarray, y: np.ndarray, splits, y_var: float, Us, device: str):
        self.device = torch_device(device)
        m = X.shape[0]
        splits = prepare_splits(splits, m)
        if splits.fold_side != "va":
            raise ValueError("ALC's torch path needs k-fold splits: every row validated on by exactly one "
                             "split and trained on by the others")
        order, bounds = splits.fold_layout()
        rows = slice(None) if order is None else order
        self.bounds = [int(b) for b in bounds]
        self.X = torch.as_tensor(np.ascontiguousarray(X[rows]), dtype=torch.float64, device=self.device)
        self.y = torch.as_tensor(np.ascontiguousarray(y[rows]), dtype=torch.float64, device=self.device)
        self.U = torch.as_tensor(np.stack(Us), dtype=torch.float64, device=self.device)   # R × Q × s × d
        self.y_var = float(y_var)

    def evaluate(self, thetas: np.ndarray, which) -> tuple[np.ndarray, np.ndarray]:
        """Values (B) and gradients (B × P) at the θ's (B × P) of restarts ``which`` (B indices)."""
        theta = torch.tensor(np.asarray(thetas, dtype=np.float64), device=self.device, requires_grad=True)
        idx = torch.as_tensor(np.asarray(which, dtype=np.int64), device=self.device)
        values = cv_objective(theta, self.X, self.y, self.U[idx], self.bounds, self.y_var)
        (grads,) = torch.autograd.grad(values.sum(), theta)     # the restarts are independent
        return values.detach().cpu().numpy(), grads.cpu().numpy()

    def single(self, theta: np.ndarray, r: int) -> tuple[float, np.ndarray]:
        """(value, gradient) of restart r at θ: the form scipy.optimize.minimize(jac=True) calls."""
        values, grads = self.evaluate(theta[None, :], [r])
        return float(values[0]), grads[0]


def _minimise(fun, theta0: np.ndarray, maxiter: int, bounds=None):
    """alc._minimise's L-BFGS-B call for an objective ``fun(θ) → (f, ∇f)``: (θ, f); ``bounds`` as
    alc.theta_bounds gives them (the caller's, so that this module does not import alc back)."""
    opt = scipy.optimize.minimize(fun, theta0, jac=True, method="L-BFGS-B", bounds=bounds,
                                  options={"maxiter": maxiter})
    return opt.x, float(opt.fun)


class _Stopped(Exception):
    """Ends an optimiser whose batch evaluation failed (the caller re-raises the failure)."""


def lockstep_minimise(evaluate, thetas0, maxiter: int, bounds=None) -> list[tuple[np.ndarray, float]]:
    """L-BFGS-B from every θ₀ of ``thetas0`` (SciPy, ``maxiter`` iterations), the objectives of all
    runs evaluated together: ``evaluate(θs, which)`` → (values, gradients) of the runs ``which``.

    Each run is a SciPy optimiser in its own thread whose objective posts its θ and waits for the
    answer. This thread collects the θ of every run still going, evaluates them in one call and
    hands the answers out one run at a time, each time waiting for that run's next message (its next
    θ, or that it has finished): the threads take turns like coroutines, so SciPy is never entered
    by two at once. A run sees the (f, ∇f) that an evaluation of it alone gives (up to the batch's
    rounding), so its trajectory is its own, and which runs share a batch depends only on which have
    finished, never on thread timing. Returns (θ, f) per run."""
    inbox: queue.Queue = queue.Queue()       # (run, θ or None when it has finished, its answer slot)

    def run(r: int):
        answer: queue.Queue = queue.Queue(maxsize=1)

        def objective(theta):
            inbox.put((r, np.array(theta, dtype=np.float64), answer))
            reply = answer.get()
            if reply is None:
                raise _Stopped
            return reply

        try:
            return _minimise(objective, thetas0[r], maxiter, bounds)
        finally:
            inbox.put((r, None, None))

    posted, failure = {}, None

    def receive():
        """Wait for the message of the one run that is going, and keep its θ if it posted one."""
        r, theta, answer = inbox.get()
        if theta is not None:
            posted[r] = (theta, answer)

    with ThreadPoolExecutor(max_workers=len(thetas0)) as pool:
        futures = []
        for r in range(len(thetas0)):
            futures.append(pool.submit(run, r))
            receive()
        while posted:
            which = sorted(posted)
            batch = [posted.pop(r) for r in which]
            try:
                values, grads = evaluate(np.stack([theta for theta, _ in batch]), which)
                replies = [(float(v), g.copy()) for v, g in zip(values, grads, strict=True)]
            except BaseException as exc:             # stop every run, then re-raise below
                failure, replies = exc, [None] * len(which)
            for (_, answer), reply in zip(batch, replies, strict=True):
                answer.put(reply)
                receive()
    if failure is not None:
        raise failure
    return [f.result() for f in futures]


def search(starts, X: np.ndarray, y: np.ndarray, splits, y_var: float, restart_iter: int,
           final_iter: int, device: str, bounds):
    """ALCRegressor's search on ``device``: the restarts ``starts`` ([(θ₀, U)], drawn on the CPU as
    for the NumPy path) batched for ``restart_iter`` iterations, then the best one alone for
    ``final_iter``. Returns (restart errors, best restart, θ, f), the objective divided by y_var."""
    problem = Problem(X, y, splits, y_var, [U for _, U in starts], device)
    results = lockstep_minimise(problem.evaluate, [th for th, _ in starts], restart_iter, bounds)
    restart_errors = np.array([fun for _, fun in results])
    best = int(np.argmin(restart_errors))
    theta, fun = _minimise(lambda th: problem.single(th, best), results[best][0], final_iter, bounds)
    return restart_errors, best, theta, fun
