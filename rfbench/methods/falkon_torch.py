"""FALKON's array operations in torch float64 on a device (rfbench/methods/falkon.py's device path).

Imported only when an estimator's ``device`` is not "cpu" (the NumPy path never imports torch;
:mod:`rfbench.methods.device`). :class:`TorchOps` has the methods of ``falkon.NumPyOps``, so that one
algorithm (``falkon.falkon_solve``, ``falkon.kernel_times``) runs on either: the kernel blocks are
computed on the device from the rows and centres held there, the Cholesky factors and triangular
solves are torch's, and only the CG's scalars (L per iteration) come back to the CPU for the
decisions. The results agree with the NumPy path to rounding (tests/methods/test_falkon.py).
"""

from __future__ import annotations

import numpy as np
import torch

F64 = torch.float64


class TorchOps:
    """``falkon.NumPyOps`` in torch float64 on ``device`` (a torch.device)."""

    def __init__(self, device):
        self.device = device

    def array(self, a) -> torch.Tensor:
        # a copy: the runner hands read-only arrays that torch must not share
        return torch.from_numpy(np.array(a, dtype=np.float64)).to(self.device)

    def numpy(self, a) -> np.ndarray:
        return a.detach().cpu().numpy()

    def index(self, idx) -> torch.Tensor:
        return torch.from_numpy(np.array(idx, dtype=np.int64)).to(self.device)

    def rows(self, X, idx):
        return X[self.index(idx)]

    def n_rows(self, X) -> int:
        return int(X.shape[0])

    def gaussian(self, X, C, sigma: float):
        """k(x, c) = exp(−‖x − c‖² / (2σ²)), the NumPy formula."""
        sq = (X * X).sum(dim=1)[:, None] + (C * C).sum(dim=1)[None, :] - 2.0 * (X @ C.T)
        sq.clamp_(min=0.0)
        return torch.exp(sq.mul_(-0.5 / sigma**2))

    def cholesky_upper(self, S):
        L, info = torch.linalg.cholesky_ex(S)
        return None if int(info.item()) != 0 else L.mT.contiguous()

    def solve_upper(self, R, B, transpose: bool = False):
        if transpose:   # Rᵀ is lower triangular
            return torch.linalg.solve_triangular(R.mT, B, upper=False)
        return torch.linalg.solve_triangular(R, B, upper=True)

    def add_diagonal(self, S, value: float):
        out = S.clone()
        out.diagonal().add_(value)
        return out

    def hstack(self, parts):
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=1)

    def vstack(self, parts):
        return parts[0] if len(parts) == 1 else torch.cat(parts, dim=0)

    def column_dots(self, U, V):
        return (U * V).sum(dim=0)

    def scale_columns(self, U, s):
        return U * torch.as_tensor(np.asarray(s, dtype=np.float64), device=self.device)[None, :]
