"""The exact GP's negative log marginal likelihood and its analytic gradient in torch float64 on a
device (rfbench/methods/gp.py's ``nll_and_grad``, the same formulas): ``torch.linalg.cholesky_ex``
with the same jitter ladder, ``torch.cholesky_inverse`` for K⁻¹. Imported only for a torch device,
by gp.py, which hands in its jitter ladder, log and error (so this module does not import it back)."""

from __future__ import annotations

import numpy as np
import torch

from rfbench.methods.device import torch_device

F64 = torch.float64
LOG_2PI = float(np.log(2.0 * np.pi))


def _tensor(a, dev) -> torch.Tensor:
    return torch.from_numpy(np.array(a, dtype=np.float64)).to(dev)     # a copy: the runner's arrays are read-only


def se_kernel(A: torch.Tensor, B: torch.Tensor, ell: torch.Tensor, s2: float) -> torch.Tensor:
    """gp.se_kernel in torch, in place as there (one m × n buffer, in the NumPy path's order)."""
    As, Bs = A / ell, B / ell
    K = As @ Bs.T
    K.mul_(-2.0)
    K.add_((As * As).sum(1)[:, None])
    K.add_((Bs * Bs).sum(1)[None, :])
    K.clamp_min_(0.0)
    K.mul_(-0.5)
    K.exp_()
    K.mul_(s2)
    return K


def cholesky_with_jitter(K: torch.Tensor, ladder, log=None, failure=None) -> torch.Tensor:
    """gp.cholesky_with_jitter in torch (the lower factor): ``ladder`` (gp.JITTER_LADDER), ``log``
    (a gp.JitterLog or None), ``failure`` (m ↦ the exception past the ladder: gp.past_the_ladder)."""
    L, info = torch.linalg.cholesky_ex(K)
    if int(info) == 0:
        return L
    scale = float(torch.diagonal(K).mean())
    for rel in ladder:
        A = K.clone()                                  # K + jitter·I, without an m × m identity
        A.diagonal().add_(rel * scale)
        L, info = torch.linalg.cholesky_ex(A)
        del A
        if int(info) == 0:
            if log is not None:
                log.add(rel)
            return L
    if failure is not None:
        raise failure(K.shape[0])
    raise np.linalg.LinAlgError(f"the GP kernel matrix ({K.shape[0]} rows) is not positive definite past the jitter ladder")


class Objective:
    """θ ↦ (nll / m, gradient) as NumPy values, the data held on ``device``."""

    def __init__(self, X: np.ndarray, y: np.ndarray, device: str, ladder, log=None, failure=None):
        self.dev = torch_device(device)
        self.X, self.y = _tensor(X, self.dev), _tensor(y, self.dev)
        self.ladder, self.log, self.failure = tuple(ladder), log, failure

    def _kernel(self, theta: np.ndarray):
        ell = torch.exp(_tensor(theta[:-2], self.dev))
        s2, noise = float(np.exp(theta[-2])), float(np.exp(theta[-1]))
        return ell, noise, se_kernel(self.X, self.X, ell, s2)

    def _factor(self, theta: np.ndarray):
        """(ℓ, σ², the lower Cholesky factor of K_f + σ²I), K itself freed."""
        ell, noise, K = self._kernel(theta)
        K.diagonal().add_(noise)          # K_f + σ²I in place, without an m × m identity (10-15 GB at 40 000 rows)
        return ell, noise, cholesky_with_jitter(K, self.ladder, self.log, self.failure)

    def alpha(self, theta: np.ndarray) -> np.ndarray:
        """α = K⁻¹y at θ (the fit's last factorisation, on the device as the evaluations are)."""
        return torch.cholesky_solve(self.y[:, None], self._factor(theta)[2])[:, 0].cpu().numpy()

    def __call__(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        X, y = self.X, self.y
        m = X.shape[0]
        ell, noise, L = self._factor(theta)
        alpha = torch.cholesky_solve(y[:, None], L)[:, 0]
        value = 0.5 * float(y @ alpha) + float(torch.log(torch.diagonal(L)).sum()) + 0.5 * m * LOG_2PI
        W = torch.cholesky_inverse(L)
        del L
        W.addr_(alpha, alpha, alpha=-1.0)  # W = K⁻¹ − ααᵀ in place
        d_noise = 0.5 * noise * float(torch.trace(W))
        # K_f again, the same values: computing it (m²d) costs less than holding an m × m matrix
        # through the factorisation and the inverse, the fit's memory peak
        W *= self._kernel(theta)[2]
        d_signal = 0.5 * float(W.sum())
        Xs = X / ell
        d_ell = W.sum(1) @ (Xs * Xs) - (Xs * (W @ Xs)).sum(0)
        grad = np.concatenate([d_ell.cpu().numpy(), [d_signal, d_noise]])
        return value / m, grad / m
