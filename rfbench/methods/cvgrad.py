"""Gradient of a ridge cross-validation error w.r.t. the feature parameters (Keerthi et al. 2006).

GFC and ALC choose continuous hyper-parameters (spectral vectors, mixture parameters, λ) by L-BFGS-B
on a cross-validation error. The coefficients are not optimisation variables: for given features
they are the ridge solution, so the gradient follows by implicit differentiation of the normal
equations (GFC paper App. C, C.1, C.3; method-notes §0.4). For one split with training part
``(Z, y)`` (m rows), validation part ``(Z_v, y_v)`` (m_v rows) and ridge parameter λ::

    P = ZᵀZ + mλI      c = P⁻¹Zᵀy         r_v = Z_v c − y_v        E = ‖r_v‖² / m_v
    g = (2/m_v) Z_vᵀ r_v                   t = P⁻¹ g                (one extra solve, same factor)
    e = y − Z c        a = Z t
    dE/dθ = (2/m_v) r_vᵀ (∂Z_v/∂θ) c + eᵀ (∂Z/∂θ) t − aᵀ (∂Z/∂θ) c          dE/dλ = −m tᵀc

Two levels are provided:

* :func:`ridge_cv_grad` — the generic template. It returns the *total* derivative of the mean CV
  error with respect to the whole design matrix, ``Γ = dE/dZ`` (m × p, one row per sample). Any
  parameterisation θ of the features then only needs the chain rule ``dE/dθ = Σ_ij Γ_ij ∂Z_ij/∂θ``.
  Writing ``Γ = Σ_splits (u_c cᵀ + u_t tᵀ)`` with per-row weights ``u_c`` (``2r_v/m_v`` on validation
  rows, ``−a`` on training rows) and ``u_t`` (``e`` on training rows) makes it a single
  (m × 2k)·(2k × p) product for all k splits.
* :func:`trig_cv_grad` — the same for the trigonometric design ``[fixed, s ⊙ sin(XW), s ⊙ cos(XW)]``
  with gradients w.r.t. the frequency matrix W (d × n), the per-frequency scale s (n) and λ. With
  ``Γ_s, Γ_c`` the sin/cos blocks of Γ this is the ``B(v)`` trick of method-notes §0.4:
  ``dE/dW = Xᵀ[s ⊙ (cos(XW) ⊙ Γ_s − sin(XW) ⊙ Γ_c)]`` — one (d × m)(m × n) product, no loop over
  samples or frequencies.

Speed: the design matrix of all rows is formed once per evaluation. When a split's two parts
partition the rows and its validation part is the smaller one (standard k-fold), the training Gram
matrix is the full Gram matrix minus the validation Gram matrix; otherwise (e.g. GFC's inverted
split, whose training part is one fold) the training Gram matrix is formed directly because it is
the small side. Designs with at most ``Paths.small_p`` columns (GFC's [f, sin, cos]) take a batched
path that treats all splits at once with row-membership matrices, because there the cost of an
evaluation is Python call overhead, not arithmetic. Which path runs is the ``paths`` argument
(:class:`Paths`; the defaults are what every method uses).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from rfbench.methods.moderows import ModeCentredRows


@dataclass(frozen=True)
class Paths:
    """Which implementation :func:`ridge_cv_grad` and :func:`trig_cv_grad` take. Every choice
    computes the same value and gradients to rounding (tests/methods/test_cvgrad.py runs each); the
    defaults are the fastest and what every method uses (:data:`DEFAULT_PATHS`), so a result
    depends on them only in its last bits."""

    #: designs with at most this many columns take the batched all-splits path
    small_p: int = 8
    #: on fold-structured splits (k-fold, inverted k-fold) the batched path works with per-fold
    #: sums, and designs with more columns take the block-wise k-fold path on standard k-fold splits
    fold_path: bool = True
    #: the block-wise k-fold path solves each fold in the dual (its m_tr × m_tr kernel system instead
    #: of the p × p one) when the design has more columns than every training part has rows: à la
    #: carte at n = 500 (p = 1001) on a few hundred rows, 3.7-48× faster and more accurate at small λ,
    #: but not the default: it moves à la carte's searches on the smallest UCI sets to other optima
    #: (measured on the 210 committed tasks it would change, docs/history/cvgrad.md)
    dual: bool = False
    #: trig_cv_grad works on blocks of rows of about this many elements of an m × n array (512 KB),
    #: so that an evaluation's elementwise passes run in cache instead of streaming m × n arrays
    row_block_elems: int = 65_536


DEFAULT_PATHS = Paths()

__all__ = [
    "Paths",
    "DEFAULT_PATHS",
    "Split",
    "CVGrad",
    "TrigCVGrad",
    "prepare_splits",
    "inverted_kfold",
    "inverted_blocks",
    "trig_features",
    "sincos",
    "ridge_cv_grad",
    "trig_cv_grad",
    "contiguous_folds",
    "OneFrequencyCV",
    "Workspace",
]


@dataclass(frozen=True)
class Split:
    """One (train, validation) pair; ``complement`` ⇔ the two parts partition all rows."""

    tr: np.ndarray
    va: np.ndarray
    complement: bool


@dataclass
class CVGrad:
    """Mean validation MSE over the splits and its derivatives (``dZ`` is None without gradient).

    With ``factored=True`` the k-fold path may return ``dZ = None`` and ``dZ_factors = (U, V)``
    with ``dZ = U @ V`` (U: m × 2k, V: 2k × p), so that a caller needing only contractions of
    dZ never writes the m × p matrix.
    """

    value: float
    dZ: np.ndarray | None
    dlam: float
    split_values: np.ndarray
    dZ_factors: tuple[np.ndarray, np.ndarray] | None = None


@dataclass
class TrigCVGrad:
    """Mean validation MSE of the trigonometric design and its derivatives w.r.t. W, λ and s."""

    value: float
    dW: np.ndarray | None
    dlam: float
    dscale: np.ndarray | None


class SplitSet(list):
    """The prepared splits of one optimisation, plus their fold structure when they have one.

    ``fold`` (row → fold index) is set when every split is one fold against all the others;
    ``fold_side`` says which side is the fold: ``"va"`` for standard k-fold, ``"tr"`` for GFC's
    inverted split. ``memberships`` caches the (k × m) row-membership matrices of the batched path.
    """

    fold: np.ndarray | None = None
    fold_side: str | None = None
    memberships: tuple[np.ndarray, np.ndarray] | None = None
    _layout: tuple[np.ndarray | None, np.ndarray] | None = None

    def fold_layout(self) -> tuple[np.ndarray | None, np.ndarray]:
        """(row order that makes the folds contiguous, or None if they already are; fold bounds)."""
        if self._layout is None:
            counts = np.bincount(self.fold, minlength=len(self))
            bounds = np.concatenate([[0], np.cumsum(counts)])
            order = None if np.all(np.diff(self.fold) >= 0) else np.argsort(self.fold, kind="stable")
            self._layout = (order, bounds)
        return self._layout


def _fold_structure(splits: list[Split], n_rows: int) -> tuple[np.ndarray | None, str | None]:
    if not splits or not all(sp.complement for sp in splits):
        return None, None
    for side in ("va", "tr"):
        fold = np.full(n_rows, -1, dtype=np.intp)
        parts = [getattr(sp, side) for sp in splits]
        if sum(part.size for part in parts) != n_rows:
            continue
        for j, part in enumerate(parts):
            fold[part] = j
        if np.all(fold >= 0):
            return fold, side
    return None, None


def prepare_splits(splits, n_rows: int) -> SplitSet:
    """Turn (train_idx, val_idx) pairs into :class:`Split` objects (done once per optimisation)."""
    if isinstance(splits, SplitSet):
        return splits
    out = SplitSet()
    for sp in splits:
        if isinstance(sp, Split):
            out.append(sp)
            continue
        tr, va = (np.asarray(ix, dtype=np.intp) for ix in sp)
        complement = False
        if tr.size + va.size == n_rows:
            seen = np.zeros(n_rows, dtype=np.int8)
            seen[tr] += 1
            seen[va] += 1
            complement = bool(np.all(seen == 1))
        out.append(Split(tr, va, complement))
    out.fold, out.fold_side = _fold_structure(out, n_rows)
    return out


def inverted_kfold(n_rows: int, n_folds: int, rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """GFC's inverted k-fold split: train on ONE fold, validate on the union of the other k−1.

    During a greedy descent the spectrum matters more than the amplitudes (Algorithm 2 refits the
    amplitudes of all features at the end), so the paper validates on the larger side (§2.5).
    """
    folds = np.array_split(rng.permutation(n_rows), n_folds)
    return [(np.sort(folds[i]), np.sort(np.concatenate(folds[:i] + folds[i + 1:])))
            for i in range(n_folds)]


def inverted_blocks(n_rows: int, n_folds: int) -> SplitSet:
    """:func:`inverted_kfold` for rows already in random order: fold j is the j-th contiguous block.

    ``inverted_kfold(m, k, rng)`` equals this applied to the rows ``rng.permutation(m)``; callers
    that permute their data once per split draw get contiguous folds, which the fold path of
    :func:`ridge_cv_grad` visits without gathering rows.
    """
    bounds = np.cumsum([0] + [len(b) for b in np.array_split(np.arange(n_rows), n_folds)])
    return _block_splits(bounds, "tr")


def _block_splits(bounds: np.ndarray, fold_side: str) -> SplitSet:
    """Splits whose folds are the contiguous row blocks [bounds[j], bounds[j+1]); the fold is the
    validation side (``"va"``, standard k-fold) or the training side (``"tr"``, inverted)."""
    rows = np.arange(bounds[-1])
    splits = []
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
        fold, rest = rows[lo:hi], np.concatenate([rows[:lo], rows[hi:]])
        splits.append((rest, fold) if fold_side == "va" else (fold, rest))
    return prepare_splits(splits, int(bounds[-1]))


def sincos(A: np.ndarray, sin_out: np.ndarray | None = None,
           cos_out: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(sin A, cos A) through the half-angle tangent t = tan(A/2): sin = 2t/(1+t²), cos = 2/(1+t²) − 1.

    NumPy vectorises float64 ``tan`` but not ``sin``/``cos`` (scalar libm calls), so one ``tan`` and
    five arithmetic passes are 4–5× faster than ``sin`` + ``cos`` on an m × n phase matrix
    (docs/history/cvgrad.md); the results agree with ``np.sin``/``np.cos`` to about one ulp
    (tested). ``tan`` never overflows for finite doubles, so there is no special case.
    The two outputs are the only work arrays (t lives in the sine's, 1/(1+t²) in the cosine's):
    on large inputs fresh temporaries cost more than the arithmetic, because every array above
    malloc's mmap threshold is new memory that the kernel faults in and zeroes page by page.
    """
    s = np.multiply(A, 0.5, out=sin_out)
    np.tan(s, out=s)                      # s = t
    c = np.multiply(s, s, out=cos_out)
    c += 1.0
    np.reciprocal(c, out=c)               # c = 1/(1+t²)
    s *= c
    s *= 2.0                              # sin = 2t/(1+t²)
    c *= 2.0
    c -= 1.0                              # cos = 2/(1+t²) − 1
    return s, c


def trig_features(X: np.ndarray, W: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sin(XW), cos(XW)) for a d × n frequency matrix W."""
    return sincos(X @ W)


def _unsort(A: np.ndarray, order: np.ndarray | None) -> np.ndarray:
    """Rows of A computed in ``order`` (a fold layout) put back in the original row order."""
    if order is None:
        return A
    out = np.empty_like(A)
    out[order] = A
    return out


def _cho_factor(P: np.ndarray):
    """Cholesky factor of the SPD ridge matrix, with a tiny jitter only if it fails numerically."""
    try:
        return scipy.linalg.cho_factor(P, check_finite=False)
    except np.linalg.LinAlgError:
        jitter = 1e-10 * max(np.trace(P) / P.shape[0], 1e-300)
        return scipy.linalg.cho_factor(P + jitter * np.eye(P.shape[0]), check_finite=False)


def _cho_factor_in_place(fill, P: np.ndarray):
    """:func:`_cho_factor` of the symmetric matrix that ``fill`` writes into the C-ordered ``P``,
    factored where it lies: LAPACK is given ``P.T``, which holds the same matrix in Fortran order,
    so nothing is copied (SciPy's cho_factor copies a C-ordered matrix on every call; the factor
    is the same, bit for bit)."""
    fill(P)
    factor, info = scipy.linalg.lapack.dpotrf(P.T, lower=0, overwrite_a=1, clean=0)
    if info > 0:          # not numerically positive definite: the jitter of _cho_factor
        fill(P)
        P[np.diag_indices(P.shape[0])] += 1e-10 * max(np.trace(P) / P.shape[0], 1e-300)
        factor, info = scipy.linalg.lapack.dpotrf(P.T, lower=0, overwrite_a=1, clean=0)
    if info != 0:
        raise np.linalg.LinAlgError(f"Cholesky factorisation failed (LAPACK info {info})")
    return factor, False


def _scratch(work, name: str, shape: tuple[int, ...]) -> np.ndarray:
    """An array kept by the :class:`Workspace` ``work`` (a fresh one without a workspace)."""
    return np.empty(shape) if work is None else work.get(name, shape)


def _cho_factor_nogil(P: np.ndarray):
    """:func:`_cho_factor` through NumPy, whose LAPACK call releases the GIL (SciPy's holds it), so
    that threads of a pool factor several folds at once; returned in SciPy's (factor, lower) form."""
    try:
        return np.linalg.cholesky(P), True
    except np.linalg.LinAlgError:
        jitter = 1e-10 * max(np.trace(P) / P.shape[0], 1e-300)
        return np.linalg.cholesky(P + jitter * np.eye(P.shape[0])), True


class RowPool(ThreadPoolExecutor):
    """A thread pool that knows its size: the pooled paths give every thread an equal share of the
    rows (BLAS limited to one thread by the caller)."""

    def __init__(self, n_threads: int):
        super().__init__(n_threads)
        self.n_threads = n_threads


def _row_shares(m: int, pool: RowPool) -> list[tuple[int, int]]:
    """``pool.n_threads`` contiguous row ranges of (nearly) equal size covering 0..m."""
    cuts = [m * t // pool.n_threads for t in range(pool.n_threads + 1)]
    return list(zip(cuts[:-1], cuts[1:], strict=True))


def _pooled_grams(Z: np.ndarray, blocks, pool: RowPool) -> list[np.ndarray]:
    """``[Z[lo:hi].T @ Z[lo:hi] for lo, hi in blocks]`` by the threads of ``pool``: every thread takes
    an equal share of the rows, so a block that straddles two shares is the sum of its two parts
    (about twice as fast as one thread, and faster than splitting every block into two halves;
    docs/history/cvgrad.md)."""
    def share_grams(share):
        a, b = share
        pieces = [(j, max(lo, a), min(hi, b)) for j, (lo, hi) in enumerate(blocks)]
        return [(j, Z[lo:hi].T @ Z[lo:hi]) for j, lo, hi in pieces if lo < hi]

    grams: list[np.ndarray | None] = [None] * len(blocks)
    for part in pool.map(share_grams, _row_shares(int(blocks[-1][1]), pool)):
        for j, gram in part:
            if grams[j] is None:
                grams[j] = gram
            else:
                grams[j] += gram
    return grams


def ridge_cv_grad(Z: np.ndarray, y: np.ndarray, splits: Sequence, lam: float,
                  grad: bool = True, factored: bool = False, pool=None, work=None,
                  paths: Paths = DEFAULT_PATHS) -> CVGrad:
    """Mean over splits of the validation MSE of ridge ``(ZᵀZ + mλI)c = Zᵀy`` and its gradients.

    ``Z`` is the design matrix of *all* rows (m × p); ``splits`` index its rows. Returns the value,
    ``dZ = dE/dZ`` (m × p, total derivative including the dependence of c on the training rows) and
    ``dE/dλ``. No intercept is fitted: put a constant column in Z if one is wanted. ``pool`` (a
    :class:`RowPool`, BLAS limited to one thread by the caller) spreads the Gram matrices and the folds'
    factorisations of the standard k-fold path over its threads; ``work`` (a :class:`Workspace`)
    keeps that path's p × p matrices between calls; ``paths`` chooses the implementation.
    """
    m, p = Z.shape
    splits = prepare_splits(splits, m)
    if p <= paths.small_p:
        if paths.fold_path and splits.fold is not None:
            return _ridge_cv_grad_folds(Z, y, splits, lam, grad)
        return _ridge_cv_grad_batched(Z, y, splits, lam, grad)
    if paths.fold_path and splits.fold_side == "va":
        return _ridge_cv_grad_kfold(Z, y, splits, lam, grad, factored, pool, work=work, dual=paths.dual)
    k = len(splits)
    # the full Gram matrix only pays off for splits whose validation side is the smaller one
    full = None
    if any(sp.complement and sp.va.size < sp.tr.size for sp in splits):
        full = (Z.T @ Z, Z.T @ y)
    values = np.empty(k)
    dlam = 0.0
    if grad:
        U = np.zeros((m, 2 * k))  # per-row weights u_c (first k columns) and u_t (last k)
        V = np.empty((2 * k, p))  # the matching coefficient vectors c and t
    diag = np.diag_indices(p)
    for i, sp in enumerate(splits):
        tr, va = sp.tr, sp.va
        m_tr, m_va = tr.size, va.size
        Z_va, y_va = Z[va], y[va]
        if full is not None and sp.complement and m_va < m_tr:
            P = full[0] - Z_va.T @ Z_va            # training Gram = full − validation
            b = full[1] - Z_va.T @ y_va
        else:
            Z_tr = Z[tr]
            P = Z_tr.T @ Z_tr
            b = Z_tr.T @ y[tr]
        P[diag] += m_tr * lam
        factor = _cho_factor(P)
        c = scipy.linalg.cho_solve(factor, b, check_finite=False)
        r_va = Z_va @ c - y_va
        values[i] = r_va @ r_va / m_va
        if not grad:
            continue
        t = scipy.linalg.cho_solve(factor, (2.0 / m_va) * (Z_va.T @ r_va), check_finite=False)
        dlam -= m_tr * (t @ c)
        # training predictions Zc and adjoint a = Zt (product on all rows, then pick: no row copy)
        Zct = (Z @ np.column_stack([c, t]))[tr]
        U[va, i] += (2.0 / m_va) * r_va            # validation rows: (2/m_v) r_v against ∂Z·c
        U[tr, i] -= Zct[:, 1]                      # training rows:   −a against ∂Z·c
        U[tr, k + i] += y[tr] - Zct[:, 0]          # training rows:    e against ∂Z·t
        V[i] = c
        V[k + i] = t
    dZ = (U @ V) / k if grad else None
    return CVGrad(float(values.mean()), dZ, dlam / k, values)


def _dual_fold_solver(Zs: np.ndarray, ys: np.ndarray, blocks, lam: float, grad: bool):
    """``solve_fold`` of :func:`_ridge_cv_grad_kfold` in the dual, for a design wider than every
    training part (p > m_tr): with μ = m_tr λ > 0 and K = Z Zᵀ of every row (computed once),

        c = Z_trᵀ (K_tr + μI)⁻¹ y_tr                          (push-through: = (Z_trᵀZ_tr + μI)⁻¹ Z_trᵀ y_tr)
        t = (v − Z_trᵀ (K_tr + μI)⁻¹ Z_tr v) / μ               (Woodbury: = (Z_trᵀZ_tr + μI)⁻¹ v)

    with v = (2/m_v) Z_vᵀ r_v: one m_tr × m_tr factorisation per fold instead of a p × p one, and no
    p × p Gram matrices. It is the more accurate one at small λ: c lies exactly in the span of the
    training rows, so the 1/μ-sized null-space part of t meets no rounding of c in tᵀc (the primal's
    dλ was 3 % off at λ = 1e-7; docs/history/cvgrad.md)."""
    m = Zs.shape[0]
    K = Zs @ Zs.T

    def z_tr_t(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
        """Z_trᵀ a for a on the training rows (those before the fold, then those after it)."""
        return Zs[:lo].T @ a[:lo] + Zs[hi:].T @ a[lo:]

    def solve_fold(j: int):
        lo, hi = blocks[j]
        m_va, m_tr = hi - lo, m - (hi - lo)
        tr = np.r_[0:lo, hi:m]
        mu = m_tr * lam
        A = K[np.ix_(tr, tr)]
        A[np.diag_indices(m_tr)] += mu
        factor = _cho_factor(A)
        c = z_tr_t(scipy.linalg.cho_solve(factor, ys[tr], check_finite=False), lo, hi)
        r_va = Zs[lo:hi] @ c - ys[lo:hi]
        if not grad:
            return r_va @ r_va / m_va, c, None, 0.0
        v = (2.0 / m_va) * (Zs[lo:hi].T @ r_va)
        b = scipy.linalg.cho_solve(factor, np.concatenate([Zs[:lo] @ v, Zs[hi:] @ v]), check_finite=False)
        t = (v - z_tr_t(b, lo, hi)) / mu
        return r_va @ r_va / m_va, c, t, m_tr * (t @ c)

    return solve_fold


def _ridge_cv_grad_kfold(Z: np.ndarray, y: np.ndarray, splits: SplitSet, lam: float,
                         grad: bool, factored: bool = False, pool=None,
                         gram_dtype=np.float64, work=None, dual: bool = False) -> CVGrad:
    """:func:`ridge_cv_grad` for standard k-fold splits and many columns (ALC).

    The rows are visited fold by fold as contiguous blocks (no row copies when the caller's folds
    are already contiguous, see :func:`contiguous_folds`): one Gram matrix per fold, the full one
    as their sum, each training Gram matrix as full minus the fold's. The training predictions
    and adjoints of every split come from one (m × p)(p × 2k) product. With a ``pool`` the Gram
    matrices and the folds' systems are computed by its threads (the GFC paper parallelised its
    à la carte over the folds too, App. C.3); the sums are then grouped differently, so the
    result agrees with the serial one to rounding, not bit for bit.
    ``gram_dtype=np.float32`` forms the Gram matrices in single precision (measured by
    bench/perf/alc_precision.py and not used: along real à la carte runs the gradient loses up to
    2 of its digits, docs/history/alc.md).
    """
    m, p = Z.shape
    k = len(splits)
    order, bounds = splits.fold_layout()
    Zs = Z if order is None else Z[order]
    ys = y if order is None else y[order]
    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))
    if dual and lam > 0 and pool is None and gram_dtype is np.float64 and m - min(hi - lo for lo, hi in blocks) < p:
        return _kfold_tail(Zs, ys, blocks, order, k, grad, factored, _dual_fold_solver(Zs, ys, blocks, lam, grad),
                           None)
    if gram_dtype is not np.float64:
        Zl = Zs.astype(gram_dtype)
        grams = [(Zl[lo:hi].T @ Zl[lo:hi]).astype(np.float64) for lo, hi in blocks]
    elif pool is None:
        grams = [np.matmul(Zs[lo:hi].T, Zs[lo:hi], out=_scratch(work, f"gram{j}", (p, p)))
                 for j, (lo, hi) in enumerate(blocks)]
    else:
        grams = _pooled_grams(Zs, blocks, pool)
    rhs = [Zs[lo:hi].T @ ys[lo:hi] for lo, hi in blocks]
    G = _scratch(work, "G", (p, p))
    np.copyto(G, grams[0])
    for gram in grams[1:]:                      # the order of sum(grams)
        G += gram
    b = sum(rhs)

    def fold_matrix(j: int, out: np.ndarray) -> np.ndarray:
        """P_j = (full − fold j's Gram matrix) + m_tr λ I, written into ``out``."""
        np.subtract(G, grams[j], out=out)
        out[np.diag_indices(p)] += (m - (blocks[j][1] - blocks[j][0])) * lam
        return out

    def solve_fold(j: int):
        """(validation MSE, c, t, −m_tr tᵀc) of split j (t = None without gradient)."""
        lo, hi = blocks[j]
        m_va, m_tr = hi - lo, m - (hi - lo)
        if pool is None:   # the folds one after another: one p × p matrix, factored in place
            factor = _cho_factor_in_place(lambda out: fold_matrix(j, out), _scratch(work, "P", (p, p)))
        else:              # the pool's threads factor several folds at once
            factor = _cho_factor_nogil(fold_matrix(j, np.empty((p, p))))
        c = scipy.linalg.cho_solve(factor, b - rhs[j], check_finite=False)
        r_va = Zs[lo:hi] @ c - ys[lo:hi]
        if not grad:
            return r_va @ r_va / m_va, c, None, 0.0
        t = scipy.linalg.cho_solve(factor, (2.0 / m_va) * (Zs[lo:hi].T @ r_va), check_finite=False)
        return r_va @ r_va / m_va, c, t, m_tr * (t @ c)

    return _kfold_tail(Zs, ys, blocks, order, k, grad, factored, solve_fold, pool)


def _kfold_tail(Zs, ys, blocks, order, k: int, grad: bool, factored: bool, solve_fold, pool) -> CVGrad:
    """The k-fold path's value and gradient from every fold's (value, c, t, m_tr tᵀc) of ``solve_fold``
    (the primal's or :func:`_dual_fold_solver`'s)."""
    m, p = Zs.shape
    CT = np.empty((p, 2 * k))                   # c of every split, then t of every split
    values = np.empty(k)
    dlam = 0.0
    for j, (value, c, t, m_tc) in enumerate(map(solve_fold, range(k)) if pool is None
                                             else pool.map(solve_fold, range(k))):
        values[j] = value
        CT[:, j] = c
        if grad:
            CT[:, k + j] = t
            dlam -= m_tc
    if not grad:
        return CVGrad(float(values.mean()), None, 0.0, values)
    # per-row weights: against ∂Z·c_j, (2/m_v) r_v on fold j and −a_j = −Z t_j elsewhere;
    # against ∂Z·t_j, e_j = y − Z c_j outside fold j
    if pool is None:
        ZCT = Zs @ CT
    else:
        ZCT = np.empty((m, 2 * k))
        list(pool.map(lambda share: np.matmul(Zs[share[0]:share[1]], CT, out=ZCT[share[0]:share[1]]),
                      _row_shares(m, pool)))
    U = np.empty((m, 2 * k))
    U[:, :k] = -ZCT[:, k:]
    U[:, k:] = ys[:, None] - ZCT[:, :k]
    for j, (lo, hi) in enumerate(blocks):
        U[lo:hi, j] = (2.0 / (hi - lo)) * (ZCT[lo:hi, j] - ys[lo:hi])
        U[lo:hi, k + j] = 0.0
    if factored:
        return CVGrad(float(values.mean()), None, dlam / k, values, (_unsort(U, order), CT.T / k))
    return CVGrad(float(values.mean()), _unsort(U @ (CT.T / k), order), dlam / k, values)


def contiguous_folds(splits, *arrays):
    """Reorder the rows of ``arrays`` so that the folds of fold-structured ``splits`` are contiguous
    blocks; returns (block splits, *reordered arrays). The CV error and its gradient are the same
    for the reordered problem (same fold memberships), but every fold is then a slice, which the
    fold paths of :func:`ridge_cv_grad` read without copying rows. Other splits are returned as is.
    """
    m = len(arrays[0])
    splits = prepare_splits(splits, m)
    order, bounds = splits.fold_layout() if splits.fold is not None else (None, None)
    if order is None:
        return (splits, *arrays)
    return (_block_splits(bounds, splits.fold_side), *(np.asarray(a)[order] for a in arrays))


def _ridge_cv_grad_batched(Z: np.ndarray, y: np.ndarray, splits: list[Split], lam: float,
                           grad: bool) -> CVGrad:
    """:func:`ridge_cv_grad` for a few columns (GFC's [f, sin, cos]): all splits at once.

    Row-membership matrices ``M_tr, M_va`` (k × m) turn every per-split sum over rows into one
    matrix product, and the k small systems are solved in one batched call, so an evaluation
    costs a fixed handful of numpy calls instead of a Python loop of them per split.
    """
    m, p = Z.shape
    k = len(splits)
    if splits.memberships is None:
        splits.memberships = tuple(np.stack([np.bincount(getattr(sp, side), minlength=m) for sp in splits])
                                   .astype(float) for side in ("tr", "va"))
    M_tr, M_va = splits.memberships
    m_tr, m_va = M_tr.sum(axis=1), M_va.sum(axis=1)
    P = (M_tr @ (Z[:, :, None] * Z[:, None, :]).reshape(m, p * p)).reshape(k, p, p)
    P[:, np.arange(p), np.arange(p)] += (m_tr * lam)[:, None]
    b = M_tr @ (Z * y[:, None])                              # k × p
    Cf = np.linalg.solve(P, b[:, :, None])[:, :, 0]          # k × p: c of every split
    R = (Z @ Cf.T - y[:, None]).T                            # k × m: Zc − y on every row
    values = np.einsum("km,km->k", M_va, R * R) / m_va
    if not grad:
        return CVGrad(float(values.mean()), None, 0.0, values)
    Wv = M_va * R * (2.0 / m_va)[:, None]                    # (2/m_v) r_v on validation rows
    T = np.linalg.solve(P, (Wv @ Z)[:, :, None])[:, :, 0]   # t = P⁻¹ g, g = (2/m_v) Z_vᵀ r_v
    A = (Z @ T.T).T                                          # a = Zt on every row
    U_c = Wv - M_tr * A                                      # weights against ∂Z·c
    U_t = -M_tr * R                                          # e = y − Zc on training rows
    dZ = (U_c.T @ Cf + U_t.T @ T) / k
    dlam = -float(np.sum(m_tr * np.einsum("kp,kp->k", T, Cf))) / k
    return CVGrad(float(values.mean()), dZ, dlam, values)



def _fold_system(H: np.ndarray, n_f: np.ndarray, fold_side: str, lam: float, grad: bool):
    """The algebra of :func:`_ridge_cv_grad_folds` on the per-fold Gram matrices H (k × (p+1)²
    of ``[Z, y]``) and fold sizes n_f: (split values, dE/dλ, N) where N (k × (p+1) × p, already
    divided by k) maps a row ``[z_i, y_i]`` of fold f to its row gradient ``dE/dz_i``."""
    k, p = H.shape[0], H.shape[1] - 1
    m = n_f.sum()
    rest = H.sum(axis=0) - H
    if fold_side == "tr":                                        # inverted: train on fold j
        H_tr, m_tr, H_va, m_va = H, n_f, rest, m - n_f
    else:                                                        # standard: validate on fold j
        H_tr, m_tr, H_va, m_va = rest, m - n_f, H, n_f
    P = H_tr[:, :p, :p].copy()
    P[:, np.arange(p), np.arange(p)] += (m_tr * lam)[:, None]
    Cf = np.linalg.solve(P, H_tr[:, :p, p:])[:, :, 0]           # k × p
    Gc = np.einsum("kpq,kq->kp", H_va[:, :p, :p], Cf)
    b_va = H_va[:, :p, p]
    values = (np.einsum("kp,kp->k", Cf, Gc - 2 * b_va) + H_va[:, p, p]) / m_va
    if not grad:
        return values, 0.0, None
    g = (2.0 / m_va)[:, None] * (Gc - b_va)                       # (2/m_v) Z_vᵀ r_v
    T = np.linalg.solve(P, g[:, :, None])[:, :, 0]
    dlam = -float(np.sum(m_tr * np.einsum("kp,kp->k", T, Cf))) / k
    # per split: validation-row terms (A z − y α) and training-row terms (B z + y β), stacked as
    # one (p+1) × p map N of [z, y] per fold
    A = (2.0 / m_va)[:, None, None] * Cf[:, :, None] * Cf[:, None, :]
    alpha = (2.0 / m_va)[:, None] * Cf
    B = -(T[:, :, None] * Cf[:, None, :] + Cf[:, :, None] * T[:, None, :])
    N = np.empty((k, p + 1, p))
    if fold_side == "tr":             # row in fold f: trained on by split f, validated by the others
        N[:, :p] = (A.sum(0) - A + B).transpose(0, 2, 1)
        N[:, p] = -(alpha.sum(0) - alpha) + T
    else:                             # row in fold f: validated by split f, trained on by the others
        N[:, :p] = (A + B.sum(0) - B).transpose(0, 2, 1)
        N[:, p] = -alpha + (T.sum(0) - T)
    N /= k
    return values, dlam, N


class OneFrequencyCV:
    """GFC's inner problem, fast: the CV error of ridge on ``[fixed, sin(Xw), cos(Xw)]`` for ONE
    frequency w over fold-structured splits, with its gradient w.r.t. w and λ.

    Equals :func:`trig_cv_grad` with ``W = w[:, None]`` (tested). The rows are laid out once as
    zero-padded fold blocks, columns first (k × (p0+3) × b, b = largest fold, so that the sin and
    cos rows are contiguous), and an evaluation is a fixed handful of numpy calls: the k Gram
    matrices of ``[fixed, sin, cos, y]`` in one batched product and the row gradients in another.
    A GFC evaluation is dominated by call overhead on small data and by the two products with X
    (Xw, Xᵀt) on large data; ``X`` may be :class:`~rfbench.methods.moderows.ModeCentredRows`
    (nearly constant inputs), which makes those products sparse.
    """

    def __init__(self, X: np.ndarray | ModeCentredRows, y: np.ndarray, fixed: np.ndarray, splits):
        m, d = X.shape
        fixed = np.asarray(fixed, dtype=float).reshape(m, -1)
        self.splits = prepare_splits(splits, m)
        if self.splits.fold is None:
            raise ValueError("OneFrequencyCV needs fold-structured splits (one fold against the rest)")
        order, bounds = self.splits.fold_layout()
        rows = np.arange(m) if order is None else order
        k, self.p0 = len(self.splits), fixed.shape[1]
        b = int(np.diff(bounds).max())
        self.n_f = np.diff(bounds).astype(float)
        padded_rows = np.full((k, b), -1)              # −1: a padding row, all zero
        self.Zt = np.zeros((k, self.p0 + 3, b))      # rows [fixed, sin, cos, y]; padding stays 0
        self.valid = np.zeros((k, b))
        for f, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:], strict=True)):
            idx = rows[lo:hi]
            padded_rows[f, :hi - lo] = idx
            self.Zt[f, :self.p0, :hi - lo] = fixed[idx].T
            self.Zt[f, -1, :hi - lo] = y[idx]
            self.valid[f, :hi - lo] = 1.0
        self.compact = isinstance(X, ModeCentredRows)
        if self.compact:
            self.X2 = X.take_padded(padded_rows.reshape(-1))
        else:
            self.X2 = np.zeros((k * b, d))
            on = self.valid.reshape(-1) > 0
            self.X2[on] = X[padded_rows.reshape(-1)[on]]

    def __call__(self, w: np.ndarray, lam: float, grad: bool = True) -> tuple[float, np.ndarray | None, float]:
        """(mean validation MSE, dE/dw, dE/dλ)."""
        p0, Zt = self.p0, self.Zt
        sin, cos = Zt[:, p0], Zt[:, p0 + 1]
        sincos((self.X2 @ w).reshape(sin.shape), sin, cos)
        cos *= self.valid                               # cos(0) = 1 on padding rows
        H = Zt @ Zt.transpose(0, 2, 1)
        values, dlam, N = _fold_system(H, self.n_f, self.splits.fold_side, lam, grad)
        if not grad:
            return float(values.mean()), None, 0.0
        dZt = N[:, :, p0:].transpose(0, 2, 1) @ Zt      # sin and cos rows of dE/dZ; 0 on padding
        T = cos * dZt[:, 0] - sin * dZt[:, 1]
        dw = self.X2.rmatvec(T.reshape(-1)) if self.compact else self.X2.T @ T.reshape(-1)
        return float(values.mean()), dw, dlam


def _ridge_cv_grad_folds(Z: np.ndarray, y: np.ndarray, splits: SplitSet, lam: float,
                         grad: bool) -> CVGrad:
    """The batched path for splits that are one fold against the rest (k-fold or inverted).

    Every quantity of a split is a sum of per-fold sums (Gram ``G_f``, ``Z_fᵀy_f``, ``y_fᵀy_f``: one
    Gram matrix of ``[Z, y]`` per fold), so the k systems, the validation errors and ``t`` need no
    row-level work beyond that. The row gradient is ``dE/dz_i = M_f z_i + y_i μ_f`` for the fold f
    of row i: summed over the splits that validate on row i, ``(2/m_v)(c cᵀ z_i − y_i c)``, and
    over those that train on it, ``e_i t − a_i c = y_i t − (t cᵀ + c tᵀ) z_i``. Rows are visited
    fold by fold as contiguous blocks (callers that draw folds as contiguous ranges skip a gather).
    """
    m, p = Z.shape
    order, bounds = splits.fold_layout()
    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))
    Zy = np.empty((m, p + 1))
    Zy[:, :p] = Z if order is None else Z[order]
    Zy[:, p] = y if order is None else y[order]
    H = np.stack([Zy[lo:hi].T @ Zy[lo:hi] for lo, hi in blocks])  # k × (p+1) × (p+1)
    values, dlam, N = _fold_system(H, np.diff(bounds).astype(float), splits.fold_side, lam, grad)
    if not grad:
        return CVGrad(float(values.mean()), None, 0.0, values)
    dZ = np.empty((m, p))
    for f, (lo, hi) in enumerate(blocks):
        np.matmul(Zy[lo:hi], N[f], out=dZ[lo:hi])
    return CVGrad(float(values.mean()), _unsort(dZ, order), dlam, values)


class Workspace:
    """Arrays reused across the evaluations of one optimisation (same shapes every call).

    An evaluation of ALC's objective on a large training part writes several m × n arrays; fresh
    ones are new memory for the kernel to fault in and zero on every call (at m = 36 691, n = 500,
    about a third of the evaluation). Contents do not survive between uses of one name. ``pool``
    (optional) is a :class:`RowPool`: :func:`ridge_cv_grad` spreads the folds over it and
    :func:`trig_cv_grad` its blocks of rows.
    """

    def __init__(self, pool: RowPool | None = None):
        self._arrays: dict[str, np.ndarray] = {}
        self.pool = pool        # threads for the fold-parallel parts and trig_cv_grad's row blocks

    def get(self, name: str, shape: tuple[int, ...]) -> np.ndarray:
        arr = self._arrays.get(name)
        if arr is None or arr.shape != shape:
            arr = self._arrays[name] = np.empty(shape)
        return arr


def trig_cv_grad(X: np.ndarray, y: np.ndarray, W: np.ndarray, lam: float, splits: Sequence,
                 fixed: np.ndarray | None = None, scale: np.ndarray | None = None,
                 grad: bool = True, work: Workspace | None = None, paths: Paths = DEFAULT_PATHS) -> TrigCVGrad:
    """CV error of ridge on ``Z = [fixed, s ⊙ sin(XW), s ⊙ cos(XW)]`` and its gradients.

    ``fixed`` (m × p0, optional) are columns that do not depend on W (GFC's current estimate f,
    a constant column); ``scale`` (n, optional) multiplies both columns of frequency j (ALC's ν_q²).
    Returns ``dW`` (d × n), ``dlam`` and ``dscale`` (n; with ``scale=None`` it is the derivative
    w.r.t. a scale factor at its value one). ``paths`` chooses the implementation (:class:`Paths`).
    """
    m, d = X.shape
    n = W.shape[1]
    fixed = np.empty((m, 0)) if fixed is None else np.asarray(fixed, dtype=float).reshape(m, -1)
    p0 = fixed.shape[1]
    s = np.ones(n) if scale is None else np.asarray(scale, dtype=float)
    # the design is written in place, block by block (no stacking copies of m × 2n arrays)
    work = work or Workspace()
    Z = work.get("Z", (m, p0 + 2 * n))
    Z[:, :p0] = fixed
    XW = work.get("XW", (m, n))
    C_work = None if scale is None else work.get("C", (m, n))
    # the row-wise work (features, gradient contractions) runs on blocks of rows that stay in cache,
    # shared by the pool's threads when there is one (the blocks and the order of the sums are the
    # same either way, so a pool does not change this part's result)
    row_map = _row_mapper(m, n, work, paths.row_block_elems)

    def features(lo: int, hi: int):
        """Rows lo:hi of the design, with sin(XW), cos(XW) kept unscaled in S, C."""
        XWb = np.matmul(X[lo:hi], W, out=XW[lo:hi])
        if scale is None:
            sincos(XWb, Z[lo:hi, p0:p0 + n], Z[lo:hi, p0 + n:])
            return
        Sb, Cb = sincos(XWb, XWb, C_work[lo:hi])     # the sines overwrite the phases
        np.multiply(Sb, s, out=Z[lo:hi, p0:p0 + n])
        np.multiply(Cb, s, out=Z[lo:hi, p0 + n:])

    row_map(features)
    S, C = (Z[:, p0:p0 + n], Z[:, p0 + n:]) if scale is None else (XW, C_work)
    res = ridge_cv_grad(Z, y, splits, lam, grad, factored=True, pool=work.pool, work=work, paths=paths)
    if not grad:
        return TrigCVGrad(res.value, None, res.dlam, None)
    if res.dZ is None:
        U, V = res.dZ_factors
        V_s, V_c = V[:, p0:p0 + n], V[:, p0 + n:]

        def partial(lo: int, hi: int):
            """Rows lo:hi's share of dscale and of Xᵀ T, T = C ⊙ (U V_s) − S ⊙ (U V_c): the
            row gradient dZ = U V is formed one block at a time, never as an m × 2n array."""
            Ub, Sb, Cb = U[lo:hi], S[lo:hi], C[lo:hi]
            G_s, G_c = Ub @ V_s, Ub @ V_c
            ds = np.einsum("ij,ij->j", Sb, G_s) + np.einsum("ij,ij->j", Cb, G_c)
            # ∂(s_j sin(x·w_j))/∂w_j = s_j cos(x·w_j) x ;  ∂(s_j cos(x·w_j))/∂w_j = −s_j sin(x·w_j) x
            G_s *= Cb
            G_c *= Sb
            G_s -= G_c
            return ds, X[lo:hi].T @ G_s

        parts = row_map(partial)
        dscale, dW = parts[0]
        for ds, dw in parts[1:]:          # block order, whatever the pool: a fixed summation order
            dscale = dscale + ds
            dW = dW + dw
        if scale is not None:
            dW *= s
        return TrigCVGrad(res.value, dW, res.dlam, dscale)
    G_s, G_c = res.dZ[:, p0:p0 + n], res.dZ[:, p0 + n:]
    dscale = np.einsum("ij,ij->j", S, G_s) + np.einsum("ij,ij->j", C, G_c)
    T = C * G_s
    T -= S * G_c
    if scale is not None:
        T *= s
    return TrigCVGrad(res.value, X.T @ T, res.dlam, dscale)


def _row_mapper(m: int, n: int, work: Workspace, block_elems: int):
    """``fn ↦ [fn(lo, hi) for each row block]``: blocks of about ``block_elems`` elements of an
    m × n array (at least 64 rows), visited in order, on the pool's threads when ``work`` has one."""
    rows = max(64, block_elems // max(n, 1))
    bounds = list(range(0, m, rows)) + [m]
    blocks = list(zip(bounds[:-1], bounds[1:], strict=True))
    if work.pool is None or len(blocks) == 1:
        return lambda fn: [fn(lo, hi) for lo, hi in blocks]
    return lambda fn: list(work.pool.map(lambda b: fn(*b), blocks))
