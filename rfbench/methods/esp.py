"""Additive (ESP) kernels of Kandasamy & Yu (ICML 2016), method notes §9.1–9.3 and §9.7.

The d-th order additive kernel over D inputs is the d-th elementary symmetric polynomial (ESP) of the
D one-dimensional base kernels ``s_j = k_j(x_j, x'_j)``::

    k_d(x, x') = e_d(s_1, ..., s_D) = Σ_{i_1 < ... < i_d} s_{i_1} ··· s_{i_d}

with Gaussian base kernels ``k_j(a, b) = exp(-(a - b)² / (2 h_j²))``.

Evaluation uses the positive recursion over the dimensions (method notes §9.2 [O])::

    E_0 = 1;  for j = 1..D:  E_k ← E_k + s_j E_{k-1}   (k = d..1)

in which every term is non-negative (no cancellation, unlike Newton–Girard), at O(nA·nB·D·d) cost.
The nA×nB×D stack of base kernels is never formed: the rows of the output are processed in small
blocks, and inside a block the d running arrays and the current base kernel are block-sized
buffers; only the requested orders are written to full-size outputs. ``esp_newton_girard`` (the
paper's formula) is kept for parity tests only.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: target number of entries of one block buffer (rows × columns); 2**16 doubles = 512 KiB
_BLOCK_ELEMS = 2**16


def salsa_bandwidths(X: np.ndarray, c: float = 20.0) -> np.ndarray:
    """Per-dimension bandwidths ``h_i = c · σ_i · m^(-1/5)`` (σ_i: std with ddof=1, m = rows of X).

    A column with zero (or undefined, m = 1) standard deviation gets σ_i = 1 so that the kernel
    stays finite (its base kernel is then identically 1 on the training points).
    """
    X = np.asarray(X, dtype=np.float64)
    m = X.shape[0]
    if m > 1:
        sigma = X.std(axis=0, ddof=1)
    else:
        sigma = np.ones(X.shape[1])
    sigma = np.where(np.isfinite(sigma) & (sigma > 0), sigma, 1.0)
    return c * sigma * float(m) ** (-0.2)


def _block_rows(n_cols: int, block_elems: int) -> int:
    return max(1, block_elems // max(1, n_cols))


def esp_kernels(A: np.ndarray, B: np.ndarray, h: np.ndarray, orders: Iterable[int],
                block_elems: int = _BLOCK_ELEMS) -> dict[int, np.ndarray]:
    """ESP kernel matrices ``{d: e_d(k_1(A, B), ..., k_D(A, B))}`` for every requested order d.

    One pass over the D dimensions yields all orders up to ``max(orders)``; only the requested
    ones are materialised as (nA, nB) float64 arrays. Peak extra memory is
    ``(max(orders) + 2) · block`` entries besides the outputs. Order D alone (the full product
    kernel) takes a direct path: ``exp(-Σ_j (a_j - b_j)² / (2 h_j²))``.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    if A.ndim != 2 or B.ndim != 2 or A.shape[1] != B.shape[1] or h.shape != (A.shape[1],):
        raise ValueError("A, B must be 2-D with the same number of columns as h has entries")
    D = A.shape[1]
    wanted = sorted({int(d) for d in orders})
    if not wanted or wanted[0] < 1 or wanted[-1] > D:
        raise ValueError(f"orders must lie in 1..{D}, got {wanted}")
    nA, nB = A.shape[0], B.shape[0]
    inv2h2 = 1.0 / (2.0 * h * h)
    Bt = np.ascontiguousarray(B.T)  # rows of Bt are the columns of B (contiguous)
    out = {d: np.empty((nA, nB)) for d in wanted}
    if nA == 0 or nB == 0:
        return out
    d_max = wanted[-1]
    rows = _block_rows(nB, block_elems)
    S = np.empty((rows, nB))
    T = np.empty((rows, nB))

    if wanted == [D]:  # the product kernel: one accumulated exponent, one exp
        for r0 in range(0, nA, rows):
            r1 = min(nA, r0 + rows)
            s, acc = S[: r1 - r0], T[: r1 - r0]
            acc.fill(0.0)
            for j in range(D):
                np.subtract(A[r0:r1, j, None], Bt[j][None, :], out=s)
                np.square(s, out=s)
                s *= inv2h2[j]
                acc += s
            np.negative(acc, out=acc)
            np.exp(acc, out=out[D][r0:r1])
        return out

    E = np.empty((d_max, rows, nB))  # E[k-1] holds the running e_k of the current block
    for r0 in range(0, nA, rows):
        r1 = min(nA, r0 + rows)
        nr = r1 - r0
        s, t = S[:nr], T[:nr]
        Eb = E[:, :nr]
        Eb.fill(0.0)
        for j in range(D):
            np.subtract(A[r0:r1, j, None], Bt[j][None, :], out=s)
            np.square(s, out=s)
            s *= -inv2h2[j]
            np.exp(s, out=s)
            # e_k of the first j+1 dimensions is 0 for k > j+1: skip those orders
            for k in range(min(d_max, j + 1), 1, -1):
                np.multiply(s, Eb[k - 2], out=t)
                Eb[k - 1] += t
            Eb[0] += s
        for d in wanted:
            out[d][r0:r1] = Eb[d - 1]
    return out


def esp_kernel(A: np.ndarray, B: np.ndarray, h: np.ndarray, order: int,
               block_elems: int = _BLOCK_ELEMS) -> np.ndarray:
    """The order-``order`` ESP kernel matrix between the rows of A and B (see ``esp_kernels``)."""
    return esp_kernels(A, B, h, [order], block_elems)[int(order)]


def base_kernels(A: np.ndarray, B: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The (D, nA, nB) stack of one-dimensional Gaussian kernels (tests and small inputs only)."""
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    diff = A.T[:, :, None] - B.T[:, None, :]
    return np.exp(-(diff**2) / (2.0 * h[:, None, None] ** 2))


def esp_newton_girard(A: np.ndarray, B: np.ndarray, h: np.ndarray, order: int) -> np.ndarray:
    """e_order of the base kernels by the Newton–Girard identities (the paper's §3.1 formula).

    ``p_j = Σ_i s_iʲ``, ``e_0 = 1``, ``e_k = (1/k) Σ_{j=1..k} (-1)^{j-1} e_{k-j} p_j``. The
    alternating sum can cancel; kept as a reference for parity tests, not used for fitting.
    """
    A = np.asarray(A, dtype=np.float64)
    B = np.asarray(B, dtype=np.float64)
    h = np.asarray(h, dtype=np.float64)
    D = A.shape[1]
    if not 1 <= order <= D:
        raise ValueError(f"order must lie in 1..{D}, got {order}")
    nA, nB = A.shape[0], B.shape[0]
    p = np.zeros((order + 1, nA, nB))
    for j in range(D):
        s = np.exp(-((A[:, j, None] - B[None, :, j]) ** 2) / (2.0 * h[j] ** 2))
        sk = np.ones_like(s)
        for k in range(1, order + 1):
            sk *= s
            p[k] += sk
    e = [np.ones((nA, nB))]
    for k in range(1, order + 1):
        acc = np.zeros((nA, nB))
        for j in range(1, k + 1):
            acc += (-1) ** (j - 1) * e[k - j] * p[j]
        e.append(acc / k)
    return e[order]
