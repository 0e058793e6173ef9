"""GBRFF1 and GBRFF2: gradient boosting of random Fourier features (Gautheron et al., ECML 2020).

Exponential-loss boosting for binary labels y ∈ {−1, +1} (paper §3, Algorithms 2 and 3)::

    H⁰ = ½ ln((1 + ȳ)/(1 − ȳ))
    for t = 1..T:
        w_i = exp(−y_i H(x_i)),  ỹ_i = y_i w_i                     (negative gradient)
        fit the weak learner h ∈ [−1, 1] by minimising (1/n) Σ_i exp(−ỹ_i h(x_i))
        α = ½ ln((Σ w + Σ w y h)/(Σ w − Σ w y h))                  (minimiser of a convex bound)
        H ← H + α h
    predict sign(H⁰ + Σ α_t h_t(x)), ties → positive class

GBRFF1 (Alg. 2): h(x) = Σ_j q_j cos(ω_j·(x^t − x)) with K = 10 frequencies ω_j ~ N(0, 2γ)^d, the
landmark x^t by L-BFGS-B (10 iterations from x = 0) on eq. (9), q = softmax(−β√n L) (eq. 10).
GBRFF2 (Alg. 3): h(x) = cos(ω·x − b): phase b = 2πs by bounded Brent over s ∈ [−0.5, 0.5]
(xtol 1e-2), then ω refined by L-BFGS-B (10 iterations) on the exp loss + λ‖ω‖².

Errata and choices (method-notes §6): α has Σwyh in the *numerator* (the closed form printed in §3.2
is inverted); the landmark gradient is Ωᵀ(sin(P)(ỹ⊙e))/(nK) (the printed one factors Σ_j ω_j out of
the sum); h is recomputed at the ω returned by L-BFGS-B; γ = g/d with g ∈ 2^{−2..2}; inputs are
standardised with a scaler fitted on the training part of every fit (inner folds included); one
generator seeded once per outer fit serves every inner and final fit, so that all hyper-parameter
combinations see the same random draws (the reference uses RandomState(1) for every fit). If α is
not finite (a perfect or overflowing weak learner) it is capped at ±20 and counted
(``n_alpha_capped_``); exp overflow elsewhere is left as in the reference code.

Regression variants (method-notes §6.6, own proposal): squared-loss boosting on standardised y;
GBRFF2-R fits amplitude and phase of one cosine in closed form and refines ω by L-BFGS-B; GBRFF1-R
learns the landmark and a scale by L-BFGS-B and weights the K cosines by softmax(−β√n L) of their
normalised residual losses.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import fminbound
from scipy.special import softmax
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import threadpool_limits

from rfbench.contract import SharesBudgets
from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, resolve_cv, seed_from, standardise_columns
from rfbench.methods.lbfgsb import minimize_lbfgsb
from rfbench.methods.rfkit import (
    BinaryScoreClassifierMixin,
    decode_binary_labels,
    encode_binary_labels,
    parallel_map,
)
from rfbench.methods.tuning import Stopwatch, misclassification, mse, param_grid

#: g values of the grid γ = g/d [P-GB §4.1]
GAMMA_GRID = (0.25, 0.5, 1.0, 2.0, 4.0)
#: GBRFF2's λ (ridge on ω) grid {0, 2⁻⁵, …, 2⁻²} [P-GB §4.1]
LAMBDA_GRID = (0.0, 2.0**-5, 2.0**-4, 2.0**-3, 2.0**-2)
#: GBRFF1's β (pseudo-posterior temperature) grid 10^{−2..2} [P-GB §4.1]
BETA_GRID = (0.01, 0.1, 1.0, 10.0, 100.0)
#: |α| cap applied only when the closed form is not finite
ALPHA_CAP = 20.0
#: L-BFGS-B iterations for the landmark and for ω [C-GB]
LBFGS_MAXITER = 10
#: bounded Brent tolerance on s (b = 2πs) [C-GB]
PHASE_XTOL = 1e-2
#: rows per block when evaluating a fitted model
PREDICT_BLOCK = 4096


# ------------------------------------------------------------------ exponential-loss building blocks
def initial_score(y: np.ndarray) -> float:
    """H⁰ = ½ ln((1 + ȳ)/(1 − ȳ)) = ½ ln(n₊/n₋), the constant minimising the exp loss.

    A class absent from the training part (possible in a tiny inner fold) is counted as half a
    point so that H⁰ stays finite.
    """
    n_pos = max(float(np.sum(y > 0)), 0.5)
    n_neg = max(float(np.sum(y < 0)), 0.5)
    return 0.5 * math.log(n_pos / n_neg)


def exp_loss_step(w: np.ndarray, y: np.ndarray, h: np.ndarray) -> tuple[float, bool]:
    """(α, capped): α = ½ ln((Σw + Σwyh)/(Σw − Σwyh)) (Alg. 2/3 line 8).

    Minimiser of the bound Σ_i w_i e^{−α y_i h_i} ≤ Σ_i w_i [(1 − y_i h_i)/2 e^{α} + (1 + y_i h_i)/2 e^{−α}],
    valid for h ∈ [−1, 1]. A non-finite α (perfect weak learner, overflowing weights) is replaced
    by ±ALPHA_CAP with the sign of Σwyh (0 if that is undefined) and reported as capped.
    """
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        sw = float(np.sum(w))
        swyh = float(np.sum(w * y * h))
        alpha = 0.5 * math.log((sw + swyh) / (sw - swyh)) if sw - swyh > 0 and sw + swyh > 0 else math.nan
    if math.isfinite(alpha):
        return alpha, False
    if swyh > 0:
        return ALPHA_CAP, True
    if swyh < 0:
        return -ALPHA_CAP, True
    return 0.0, True


def landmark_objective(x: np.ndarray, Omega: np.ndarray, cosA: np.ndarray, sinA: np.ndarray,
                       yt: np.ndarray) -> tuple[float, np.ndarray]:
    """GBRFF1 eq. (9) and its (correct) gradient; A = Ω Xᵀ (K × n) enters through cos A and sin A.

    F(x) = (1/n) Σ_i e_i,  e_i = exp(−ỹ_i (1/K) Σ_j cos(ω_j·x − A_ji))
    ∇F(x) = (1/(nK)) Σ_j ω_j Σ_i ỹ_i e_i sin(ω_j·x − A_ji)

    With p = Ωx, cos(p_j − A_ji) = cos p_j cos A_ji + sin p_j sin A_ji and
    sin(p_j − A_ji) = sin p_j cos A_ji − cos p_j sin A_ji, so one evaluation costs four K × n
    matrix-vector products and 2K trigonometric calls instead of 2Kn.
    """
    K, n = cosA.shape
    p = Omega @ x
    cp, sp = np.cos(p), np.sin(p)
    e = np.exp(-yt * ((cp @ cosA + sp @ sinA) / K))
    v = yt * e
    grad = Omega.T @ (sp * (cosA @ v) - cp * (sinA @ v)) / (n * K)
    return float(e.mean()), grad


def frequency_objective(omega: np.ndarray, X: np.ndarray, yt: np.ndarray, b: float,
                        lam: float) -> tuple[float, np.ndarray]:
    """GBRFF2 line 7 and its gradient.

    G(ω) = (1/n) Σ_i exp(−ỹ_i cos(ω·x_i − b)) + λ‖ω‖²
    ∇G(ω) = (1/n) Σ_i ỹ_i e_i sin(ω·x_i − b) x_i + 2λω
    """
    v = X @ omega - b
    # np.cos/np.sin, not the faster sincos: boosting amplifies rounding (10× per few steps), and
    # Table 2's committed results and CI reference are of this arithmetic
    e = np.exp(-yt * np.cos(v))
    grad = X.T @ (yt * e * np.sin(v)) / X.shape[0] + 2.0 * lam * omega
    return float(e.mean() + lam * omega @ omega), grad


def phase_objective(s: float, u: np.ndarray, yt: np.ndarray) -> float:
    """GBRFF2 line 6 as coded in [C-GB]: Σ_i exp(−ỹ_i cos(2πs − ω·x_i)), b = 2πs (cos is even)."""
    return float(np.sum(np.exp(-yt * np.cos(2.0 * np.pi * s - u))))


def _lbfgs(fun, x0, args=()) -> np.ndarray:
    return minimize_lbfgsb(fun, x0, args=args, maxiter=LBFGS_MAXITER)


# ------------------------------------------------------------------ fitted models (plain data)
@dataclass
class CosineEnsemble:
    """H(x) = offset + Σ_t α_t cos(ω_t·x − b_t) (GBRFF2 and GBRFF2-R)."""

    offset: float
    frequencies: np.ndarray  # (T, d)
    phases: np.ndarray  # (T,)
    alphas: np.ndarray  # (T,)
    n_capped: int = 0

    def decision(self, X: np.ndarray, n_terms: int | None = None) -> np.ndarray:
        """H(x) with the first ``n_terms`` boosting steps (all by default): the model of a smaller
        budget is a prefix of a larger one (same draws, same steps)."""
        F, b, a = self.frequencies[:n_terms], self.phases[:n_terms], self.alphas[:n_terms]
        out = np.empty(X.shape[0])
        for s in range(0, X.shape[0], PREDICT_BLOCK):
            out[s:s + PREDICT_BLOCK] = np.cos(X[s:s + PREDICT_BLOCK] @ F.T - b) @ a
        return self.offset + out


@dataclass
class LandmarkEnsemble:
    """H(x) = offset + Σ_t α_t Σ_j q_tj cos(ω_tj·(x^t − x)) (GBRFF1 and GBRFF1-R)."""

    offset: float
    frequencies: np.ndarray  # (T, K, d)
    landmarks: np.ndarray  # (T, d)
    q: np.ndarray  # (T, K)
    alphas: np.ndarray  # (T,)
    n_capped: int = 0

    def decision(self, X: np.ndarray, n_terms: int | None = None) -> np.ndarray:
        """H(x) with the first ``n_terms`` boosting steps (all by default)."""
        freqs, marks = self.frequencies[:n_terms], self.landmarks[:n_terms]
        T, K, d = freqs.shape
        W = freqs.reshape(T * K, d)
        centre = np.einsum("tkd,td->tk", freqs, marks).ravel()
        weight = (self.alphas[:n_terms, None] * self.q[:n_terms]).ravel()
        out = np.empty(X.shape[0])
        for s in range(0, X.shape[0], PREDICT_BLOCK):
            out[s:s + PREDICT_BLOCK] = np.cos(centre - X[s:s + PREDICT_BLOCK] @ W.T) @ weight
        return self.offset + out


# ------------------------------------------------------------------ Algorithm 3 (GBRFF2)
def fit_gbrff2(X: np.ndarray, y: np.ndarray, n_iter: int, gamma: float, lam: float,
               rng: np.random.Generator) -> CosineEnsemble:
    """GBRFF2 on standardised X and y ∈ {−1, +1}."""
    n, d = X.shape
    omega0 = rng.standard_normal((n_iter, d)) * math.sqrt(2.0 * gamma)  # N(0, 2γ)^d, drawn upfront
    H0 = initial_score(y)
    H = np.full(n, H0)
    freqs, phases, alphas = np.empty((n_iter, d)), np.empty(n_iter), np.empty(n_iter)
    capped = 0
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(n_iter):
            w = np.exp(-y * H)  # line 3
            yt = y * w  # line 4
            u = X @ omega0[t]
            # line 6: b = argmin_b Σ_i exp(−ỹ_i cos(ω·x_i − b)), searched as b = 2πs, s ∈ [−½, ½]
            s = fminbound(phase_objective, -0.5, 0.5, args=(u, yt), xtol=PHASE_XTOL)
            b = 2.0 * np.pi * float(s)
            # line 7: refine ω from its random draw, b fixed
            omega = _lbfgs(frequency_objective, omega0[t], (X, yt, b, lam))
            h = np.cos(X @ omega - b)  # recomputed at the returned ω
            alpha, was_capped = exp_loss_step(w, y, h)  # line 8
            capped += was_capped
            H += alpha * h  # line 9
            freqs[t], phases[t], alphas[t] = omega, b, alpha
    return CosineEnsemble(H0, freqs, phases, alphas, capped)


# ------------------------------------------------------------------ Algorithm 2 (GBRFF1)
def fit_gbrff1(X: np.ndarray, y: np.ndarray, n_iter: int, n_random: int, gamma: float,
               beta: float, rng: np.random.Generator) -> LandmarkEnsemble:
    """GBRFF1 on standardised X and y ∈ {−1, +1}."""
    return fit_gbrff1_betas(X, y, n_iter, n_random, gamma, [beta], rng)[0]


def fit_gbrff1_betas(X: np.ndarray, y: np.ndarray, n_iter: int, n_random: int, gamma: float,
                     betas, rng: np.random.Generator) -> list[LandmarkEnsemble]:
    """GBRFF1 for every β of ``betas`` at once, each model the one :func:`fit_gbrff1` fits alone, bit
    for bit. Why together: β only weighs the K cosines of a step (line 7), so with the same γ and
    draws the angles A = ΩXᵀ and their cos and sin, a third of a step's time, are the same for
    every β and computed once per step (the inner CV's five β)."""
    n, d = X.shape
    Omegas = rng.standard_normal((n_iter, n_random, d)) * math.sqrt(2.0 * gamma)  # line 5, upfront
    H0 = initial_score(y)
    H = np.full((len(betas), n), H0)
    landmarks = np.empty((len(betas), n_iter, d))
    qs, alphas = np.empty((len(betas), n_iter, n_random)), np.empty((len(betas), n_iter))
    capped = [0] * len(betas)
    with np.errstate(over="ignore", invalid="ignore"):
        for t in range(n_iter):
            Omega = Omegas[t]
            A = Omega @ X.T  # ω_j·x_i once per iteration; an evaluation at x is then O(Kn + Kd)
            cosA, sinA = np.cos(A), np.sin(A)
            for k, beta in enumerate(betas):
                w = np.exp(-y * H[k])  # line 3
                yt = y * w  # line 4
                x_t = _lbfgs(landmark_objective, np.zeros(d), (Omega, cosA, sinA, yt))  # line 6, x⁰ = 0
                C = np.cos((Omega @ x_t)[:, None] - A)  # cos(ω_j·(x^t − x_i)), K × n
                L = np.exp(-yt * C).mean(axis=1)  # per-feature exp loss
                q = softmax(-beta * math.sqrt(n) * L)  # line 7: (β√n/n) Σ_i = β√n · mean_i
                h = q @ C
                alpha, was_capped = exp_loss_step(w, y, h)  # line 8
                capped[k] += was_capped
                H[k] += alpha * h  # line 9
                landmarks[k, t], qs[k, t], alphas[k, t] = x_t, q, alpha
    return [LandmarkEnsemble(H0, Omegas, landmarks[k], qs[k], alphas[k], capped[k]) for k in range(len(betas))]


# ------------------------------------------------------------------ squared-loss variants (§6.6)
def sincos(v: np.ndarray, overwrite: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(cos v, sin v) from one tangent: t = tan(v/2), cos v = (1 − t²)/(1 + t²), sin v = 2t/(1 + t²).

    NumPy's float64 tan is SIMD-vectorised and its cos and sin are not (here 10 µs against 2 × 51 µs
    for 6 000 values), and GBRFF2-R spends most of its time on the pair; the identity agrees with
    them to a few units of 1e-16 (tests), at v/2 → ±π/2 too (t ≈ 1e16: cos → −1, sin → 0).
    In place where it can (``overwrite``: v is scratch): same operations, two allocations fewer.
    """
    t = np.multiply(v, 0.5, out=v if overwrite else None)
    np.tan(t, out=t)
    t2 = t * t
    inv = np.add(t2, 1.0)
    np.divide(1.0, inv, out=inv)
    cos = np.subtract(1.0, t2, out=t2)
    cos *= inv
    inv *= 2.0
    inv *= t
    return cos, inv


def amplitude_phase_from(c: np.ndarray, s: np.ndarray, r: np.ndarray) -> tuple[float, float, float, float]:
    """(a, φ, κ₁, κ₂) minimising Σ_i (r_i − a cos(u_i − φ))² given c = cos u, s = sin u.

    a cos(u − φ) = κ₁ cos u + κ₂ sin u with (κ₁, κ₂) = (a cos φ, a sin φ): least squares on the two
    columns, solved by its 2 × 2 normal equations when they are well conditioned (squared condition
    ≤ 1e6, so at most ~1e-10 relative error against QR). Near-parallel columns (a tiny ω: u is
    almost the constant u₀) are first rotated to cos(u − u₀) ≈ 1 and sin(u − u₀) ≈ u − u₀, u₀ the
    mean phase, where the normal equations are well conditioned again (and as accurate as QR, the
    rounding being in forming sin(u − u₀)); ``lstsq`` only when even those are parallel (u constant).
    """
    k = _normal_equations(c, s, r)
    if k is None:
        u0 = math.atan2(float(np.sum(s)), float(np.sum(c)))
        co, si = math.cos(u0), math.sin(u0)
        m = _normal_equations(co * c + si * s, co * s - si * c, r)
        k = (co * m[0] - si * m[1], si * m[0] + co * m[1]) if m is not None else \
            np.linalg.lstsq(np.column_stack([c, s]), r, rcond=None)[0]
    k1, k2 = float(k[0]), float(k[1])
    return math.hypot(k1, k2), math.atan2(k2, k1), k1, k2


def _normal_equations(c: np.ndarray, s: np.ndarray, r: np.ndarray) -> tuple[float, float] | None:
    """argmin ‖r − k₁c − k₂s‖² by the 2 × 2 normal equations, or None when their squared condition
    exceeds ~1e6 or one column's norm is below 1e-10 of the other's (rounding noise, not signal)."""
    cc, ss, cs = float(c @ c), float(s @ s), float(c @ s)
    det = cc * ss - cs * cs
    if not (det > 1e-6 * cc * ss and min(cc, ss) > 1e-20 * max(cc, ss)):
        return None
    cr, sr = float(c @ r), float(s @ r)
    return (ss * cr - cs * sr) / det, (cc * sr - cs * cr) / det


def amplitude_phase(r: np.ndarray, u: np.ndarray) -> tuple[float, float]:
    """(a, b) minimising Σ_i (r_i − a cos(u_i − b))²: least squares on [cos u, sin u], no intercept."""
    a, b, _, _ = amplitude_phase_from(*sincos(u), r)
    return a, b


class CosineRefinement:
    """GBRFF2-R refinement of one step: (1/n) Σ (r_i − a cos(ω·x_i − b))² + λ‖ω‖² and its gradient
    (2a/n) Σ_i (r_i − a cos v_i) sin v_i x_i + 2λω, v = Xω − b.

    Remembers cos v and sin v of its last evaluation: L-BFGS-B returns the ω it evaluated last, so
    the line search at the refined ω reuses them instead of recomputing the pair.
    """

    def __init__(self, X: np.ndarray, r: np.ndarray, a: float, b: float, lam: float):
        self.X, self.r, self.a, self.b, self.lam = X, r, a, b, lam
        self.scale = 2.0 * a / X.shape[0]
        self.last = None

    def __call__(self, omega: np.ndarray) -> tuple[float, np.ndarray]:
        v = self.X @ omega
        v -= self.b
        c, s = sincos(v, overwrite=True)
        res = np.multiply(c, self.a)
        np.subtract(self.r, res, out=res)  # r − a cos v
        self.last = (omega.copy(), c, s)
        grad = self.scale * (np.multiply(res, s, out=v) @ self.X) + 2.0 * self.lam * omega
        return float(res @ res) / self.X.shape[0] + self.lam * float(omega @ omega), grad

    def cos_sin_at(self, omega: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """cos and sin of Xω − b, from the last evaluation when it was at this ω."""
        if self.last is not None and np.array_equal(self.last[0], omega):
            return self.last[1], self.last[2]
        return sincos(self.X @ omega - self.b)


def frequency_objective_sq(omega: np.ndarray, X: np.ndarray, r: np.ndarray, a: float, b: float,
                           lam: float) -> tuple[float, np.ndarray]:
    """:class:`CosineRefinement` as a function (its value and gradient at ω)."""
    return CosineRefinement(X, r, a, b, lam)(omega)


def landmark_objective_sq(z: np.ndarray, Omega: np.ndarray, cosA: np.ndarray, sinA: np.ndarray,
                          r: np.ndarray) -> tuple[float, np.ndarray]:
    """GBRFF1-R landmark and scale z = (x, c): (1/n) Σ (r_i − c g_i(x))², g_i = mean_j cos(ω_j·x − A_ji).

    ∂/∂c = −(2/n) Σ_i e_i g_i,  ∂/∂x = (2c/(nK)) Σ_j ω_j Σ_i e_i sin(ω_j·x − A_ji),  e = r − c g
    (same angle-addition evaluation as ``landmark_objective``).
    """
    K, n = cosA.shape
    x, c = z[:-1], z[-1]
    p = Omega @ x
    cp, sp = np.cos(p), np.sin(p)
    g = (cp @ cosA + sp @ sinA) / K
    e = r - c * g
    grad_x = (2.0 * c / (n * K)) * (Omega.T @ (sp * (cosA @ e) - cp * (sinA @ e)))
    grad_c = -2.0 / n * float(e @ g)
    return float(np.mean(e**2)), np.append(grad_x, grad_c)


def fit_gbrff2_regression(X, y, n_iter, gamma, lam, rng, learning_rate=1.0) -> CosineEnsemble:
    """GBRFF2-R on standardised X and standardised y (squared loss ½(y − H)²)."""
    # column-major X: one-thread gemv of Xω and of vᵀX are 2.8× and 1.6× faster on a tall, narrow X
    # than row-major (5.4 and 4.7 µs against 14.8 and 7.6 µs at 5 242 × 8)
    X = np.asfortranarray(X)
    n, d = X.shape
    omega0 = rng.standard_normal((n_iter, d)) * math.sqrt(2.0 * gamma)
    H0 = float(np.mean(y))
    H = np.full(n, H0)
    freqs, phases, alphas = np.empty((n_iter, d)), np.empty(n_iter), np.empty(n_iter)
    for t in range(n_iter):
        r = y - H  # negative gradient of the squared loss
        a, b = amplitude_phase(r, X @ omega0[t])  # exact counterpart of the phase search
        objective = CosineRefinement(X, r, a, b, lam)
        omega = _lbfgs(objective, omega0[t])
        # exact line search at the refined ω, on cos and sin of Xω − b (the refinement's last
        # evaluation): a′ cos(Xω − b − φ) is the best cosine, its phase b + φ
        c, s = objective.cos_sin_at(omega)
        a, phi, k1, k2 = amplitude_phase_from(c, s, r)
        H += learning_rate * (k1 * c + k2 * s)
        freqs[t], phases[t], alphas[t] = omega, math.remainder(b + phi, 2.0 * math.pi), learning_rate * a
    return CosineEnsemble(H0, freqs, phases, alphas)


def fit_gbrff1_regression(X, y, n_iter, n_random, gamma, beta, rng,
                          learning_rate=1.0) -> LandmarkEnsemble:
    """GBRFF1-R on standardised X and standardised y (squared loss)."""
    return fit_gbrff1_regression_betas(X, y, n_iter, n_random, gamma, [beta], rng, learning_rate)[0]


def fit_gbrff1_regression_betas(X, y, n_iter, n_random, gamma, betas, rng,
                                learning_rate=1.0) -> list[LandmarkEnsemble]:
    """GBRFF1-R for every β of ``betas`` at once, each model the one :func:`fit_gbrff1_regression`
    fits alone, bit for bit (the angles' cos and sin computed once per step, as
    :func:`fit_gbrff1_betas`)."""
    n, d = X.shape
    Omegas = rng.standard_normal((n_iter, n_random, d)) * math.sqrt(2.0 * gamma)
    H0 = float(np.mean(y))
    H = np.full((len(betas), n), H0)
    landmarks = np.empty((len(betas), n_iter, d))
    qs, alphas = np.empty((len(betas), n_iter, n_random)), np.empty((len(betas), n_iter))
    tiny = np.finfo(float).tiny
    for t in range(n_iter):
        Omega = Omegas[t]
        A = Omega @ X.T
        cosA, sinA = np.cos(A), np.sin(A)
        g0 = cosA.mean(axis=0)  # g_i at x = 0 (cos is even)
        for k, beta in enumerate(betas):
            r = y - H[k]
            c0 = float(r @ g0) / max(float(g0 @ g0), tiny)
            z = _lbfgs(landmark_objective_sq, np.append(np.zeros(d), c0), (Omega, cosA, sinA, r))
            x_t = z[:-1]
            C = np.cos((Omega @ x_t)[:, None] - A)
            rr = float(r @ r)
            # normalised residual loss of each cosine alone: min_c ‖r − c C_j‖² / ‖r‖² ∈ [0, 1]
            L = 1.0 - (C @ r) ** 2 / np.maximum(np.sum(C**2, axis=1) * rr, tiny) if rr > 0 else np.zeros(len(C))
            q = softmax(-beta * math.sqrt(n) * L)
            h = q @ C
            alpha = learning_rate * float(r @ h) / max(float(h @ h), tiny)  # exact line search
            H[k] += alpha * h
            landmarks[k, t], qs[k, t], alphas[k, t] = x_t, q, alpha
    return [LandmarkEnsemble(H0, Omegas, landmarks[k], qs[k], alphas[k]) for k in range(len(betas))]


@dataclass
class StandardisedTarget:
    """A regression ensemble fitted on (y − y_mean)/y_scale, predicting on the original scale."""

    y_mean: float
    y_scale: float
    inner: CosineEnsemble | LandmarkEnsemble

    def decision(self, X: np.ndarray, n_terms: int | None = None) -> np.ndarray:
        return self.y_mean + self.y_scale * self.inner.decision(X, n_terms)


def standardised_target(y: np.ndarray) -> tuple[float, float]:
    """(mean, population std) of y, a zero std replaced by 1."""
    scale = float(np.std(y))
    return float(np.mean(y)), (scale if scale > 0 else 1.0)


# ------------------------------------------------------------------ estimators
class _GBRFFBase(SharesBudgets, BaseEstimator):
    """Inner-CV grid search and final fit shared by the four estimators.

    Subclasses define ``_grid()`` (hyper-parameter dicts in grid order), ``_fit_model(X, y, params,
    n_iter, rng)`` on standardised inputs and encoded targets, ``_error`` (lower is better) and
    ``_export(model)`` (the public fitted attributes).

    Budgets: the model of T boosting steps is the first T steps of a longer one (the random draws
    are made up front in step order), so ``budgets=[100, 500]`` fits each (combination, inner fold)
    once to 500 steps and scores its 100- and 500-step prefixes: the same choices and predictions
    as two separate fits, at the cost of the larger one. ``predict(X, budget=n)``.
    """

    #: the parameters of every variant; each adds its grid (and K, and the regressors' ν)
    _common_constraints: dict = {
        "n_features": [cons.positive_int()],
        "budgets": ["array-like", None],
        "gamma_grid": ["array-like"],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "standardize": ["boolean"],
    }

    def _budgets(self) -> list[int]:
        budgets = sorted({int(b) for b in (self.budgets or [self.n_features])})
        if budgets[0] < 1:
            raise ValueError(f"budgets must be positive integers, got {self.budgets!r}")
        return budgets

    def _standardise(self, X_train, *others):
        """Scaler fitted on the training part of this fit, applied to every given array."""
        if not self.standardize:
            return (X_train, *others)
        mean, std = standardise_columns(X_train)
        return tuple((Z - mean) / std for Z in (X_train, *others))

    def _cv_task(self, X, y, tr, va, combos, budgets, seed):
        """Validation error of every (combination, budget) on one inner fold (one scaler per fold)."""
        X_tr, X_va = self._standardise(X[tr], X[va])
        errors = np.empty((len(combos), len(budgets)))
        with threadpool_limits(limits=1):   # see _fit_encoded; set here too for worker processes
            for i, model in self._fit_models(X_tr, y[tr], combos, budgets[-1], seed):
                errors[i] = [self._error(y[va], model.decision(X_va, n)) for n in budgets]
        return errors

    def _fit_models(self, X, y, combos, n_iter, seed):
        """(index in ``combos``, model) of every combination, each fitted with a generator seeded by
        ``seed``, one at a time (a variant that fits several together overrides it)."""
        for i, params in enumerate(combos):
            yield i, self._fit_model(X, y, params, n_iter, np.random.default_rng(seed))

    def _fit_encoded(self, X, y):
        budgets = self._budgets()
        combos = self._grid()
        if not combos:
            raise ValueError("the hyper-parameter grid is empty")
        rng = as_generator(self.random_state)
        with Stopwatch() as tune:
            if len(combos) > 1:
                splits = resolve_cv(self.cv, X.shape[0], rng)
                seed = seed_from(rng)  # one fresh generator per fit, all from this seed
                per_fold = parallel_map(self._cv_task,
                                        [(X, y, tr, va, combos, budgets, seed) for tr, va in splits],
                                        self.n_jobs)
                errors = np.mean(per_fold, axis=0)                  # combinations × budgets
                best = [int(np.argmin(errors[:, j])) for j in range(len(budgets))]   # ties → grid order
            else:
                seed = seed_from(rng)
                errors = np.full((1, len(budgets)), np.nan)
                best = [0] * len(budgets)
        self.tune_time_ = tune.total
        if self.standardize:
            self.x_mean_, self.x_scale_ = standardise_columns(X)
        else:
            self.x_mean_, self.x_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
        # one BLAS thread: a boosting step is hundreds of tiny products and L-BFGS-B steps, and
        # SciPy's L-BFGS-B (C since 1.15) calls BLAS on its small vectors, where a second thread
        # only adds synchronisation (a fit of 100 steps on 400 × 30: 0.49 s → 0.16 s)
        models = {}    # one final model per winning combination, as long as its largest budget
        with threadpool_limits(limits=1):
            for b in dict.fromkeys(best):
                n_max = max(n for n, bb in zip(budgets, best, strict=True) if bb == b)
                models[b] = self._fit_model((X - self.x_mean_) / self.x_scale_, y, combos[b], n_max,
                                            np.random.default_rng(seed))
        self.budgets_ = budgets
        self.budget_models_ = {n: models[b] for n, b in zip(budgets, best, strict=True)}
        self.best_params_per_budget_ = {n: {**combos[b], "gamma": combos[b]["g"] / X.shape[1], "n_iter": n,
                                            "seed": int(seed)} for n, b in zip(budgets, best, strict=True)}
        self.cv_errors_per_budget_ = {n: errors[:, j] for j, n in enumerate(budgets)}
        n_top = budgets[-1]
        self.model_ = self.budget_models_[n_top]
        self.cv_errors_ = self.cv_errors_per_budget_[n_top]
        self.best_params_ = self.best_params_per_budget_[n_top]
        self._export(self.model_)
        return self

    def _decision(self, X, budget=None):
        check_is_fitted(self, "model_")
        X = validate_data(self, X, reset=False, dtype=np.float64)
        n = self.budgets_[-1] if budget is None else int(budget)
        if n not in self.budget_models_:
            raise ValueError(f"budget {n} was not fitted; fitted budgets: {self.budgets_}")
        return self.budget_models_[n].decision((X - self.x_mean_) / self.x_scale_, n)


class _BinaryBoosting(BinaryScoreClassifierMixin, ClassifierMixin, _GBRFFBase):
    """Label handling of the classifiers: any two labels, smaller → −1; score ≥ 0 → positive."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, dtype=np.float64, ensure_min_samples=2)
        check_classification_targets(y)
        self.classes_, y_pm = encode_binary_labels(y)
        return self._fit_encoded(X, y_pm)

    @staticmethod
    def _error(y_true, score):
        return misclassification(y_true, np.where(score >= 0, 1.0, -1.0))

    def decision_function(self, X, budget=None):
        """H⁰ + Σ_t α_t h_t(x) (≥ 0 → ``classes_[1]``), over the first ``budget`` steps."""
        return self._decision(X, budget)

    def predict(self, X, budget=None):
        score = self.decision_function(X, budget)   # raises NotFittedError before classes_ is looked up
        return decode_binary_labels(self.classes_, score)



class _SquaredLossBoosting(RegressorMixin, _GBRFFBase):
    """Regression: y standardised inside every fit, inner CV by MSE on the original scale."""

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        return self._fit_encoded(X, np.asarray(y, dtype=float))

    @staticmethod
    def _error(y_true, pred):
        return mse(y_true, pred)

    def predict(self, X, budget=None):
        return self._decision(X, budget)


class _CosineExport:
    def _export(self, model):
        ens = model.inner if isinstance(model, StandardisedTarget) else model
        self.frequencies_, self.phases_, self.alphas_ = ens.frequencies, ens.phases, ens.alphas
        self.init_score_ = ens.offset
        self.n_alpha_capped_ = int(ens.n_capped)


class _LandmarkExport:
    def _export(self, model):
        ens = model.inner if isinstance(model, StandardisedTarget) else model
        self.frequencies_, self.landmarks_, self.q_ = ens.frequencies, ens.landmarks, ens.q
        self.alphas_, self.init_score_ = ens.alphas, ens.offset
        self.n_alpha_capped_ = int(ens.n_capped)


class GBRFF2Classifier(_CosineExport, _BinaryBoosting):
    """GBRFF2 (Algorithm 3): boosting of single learned cosines cos(ω_t·x − b_t), binary labels.

    Parameters: ``n_features`` = T (boosting iterations = learned features), ``gamma_grid`` = g
    values (γ = g/d), ``lambda_grid`` = λ values of the ‖ω‖² penalty, ``cv``, ``random_state``,
    ``n_jobs`` (parallelises the inner folds), ``standardize`` (scaler fitted in every fit).
    (g, λ) is selected by inner-CV accuracy, ties → first in grid order.

    Fitted: ``classes_``, ``frequencies_`` (T × d), ``phases_``, ``alphas_``, ``init_score_`` (H⁰),
    ``x_mean_``, ``x_scale_``, ``n_alpha_capped_``, ``cv_errors_`` (mean inner-CV error per
    combination, grid order), ``best_params_``, ``tune_time_``, ``model_``.
    """

    _parameter_constraints: dict = {**_GBRFFBase._common_constraints, "lambda_grid": ["array-like"]}

    def __init__(self, n_features=100, budgets=None, gamma_grid=GAMMA_GRID, lambda_grid=LAMBDA_GRID, cv=5,
                 random_state=None, n_jobs=None, standardize=True):
        self.n_features = n_features
        self.budgets = budgets
        self.gamma_grid = gamma_grid
        self.lambda_grid = lambda_grid
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize

    def _grid(self):
        return param_grid({"g": [float(g) for g in self.gamma_grid],
                           "lambda": [float(v) for v in self.lambda_grid]})

    def _fit_model(self, X, y, params, n_iter, rng):
        return fit_gbrff2(X, y, n_iter, params["g"] / X.shape[1], params["lambda"], rng)


class GBRFF1Classifier(_LandmarkExport, _BinaryBoosting):
    """GBRFF1 (Algorithm 2): boosting of K-frequency kernels around learned landmarks, binary labels.

    Parameters: ``n_features`` = T, ``n_random_features`` = K, ``gamma_grid`` = g values (γ = g/d),
    ``beta_grid`` = β values, ``cv``, ``random_state``, ``n_jobs``, ``standardize``.

    Fitted: ``classes_``, ``frequencies_`` (T × K × d), ``landmarks_`` (T × d, standardised space),
    ``q_`` (T × K), ``alphas_``, ``init_score_``, ``x_mean_``, ``x_scale_``, ``n_alpha_capped_``,
    ``cv_errors_``, ``best_params_``, ``tune_time_``, ``model_``.
    """

    _parameter_constraints: dict = {**_GBRFFBase._common_constraints, "beta_grid": ["array-like"],
                                    "n_random_features": [cons.positive_int()]}

    def __init__(self, n_features=100, budgets=None, n_random_features=10, gamma_grid=GAMMA_GRID,
                 beta_grid=BETA_GRID, cv=5, random_state=None, n_jobs=None, standardize=True):
        self.n_features = n_features
        self.budgets = budgets
        self.n_random_features = n_random_features
        self.gamma_grid = gamma_grid
        self.beta_grid = beta_grid
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize

    def _grid(self):
        return param_grid({"g": [float(g) for g in self.gamma_grid],
                           "beta": [float(v) for v in self.beta_grid]})

    def _fit_model(self, X, y, params, n_iter, rng):
        return fit_gbrff1(X, y, n_iter, int(self.n_random_features), params["g"] / X.shape[1],
                          params["beta"], rng)

    def _fit_models(self, X, y, combos, n_iter, seed):
        """The combinations of one g together (:func:`fit_gbrff1_betas`: the same models, the
        angles' trigonometry once for every β)."""
        for g, members in _by_gamma(combos):
            models = fit_gbrff1_betas(X, y, n_iter, int(self.n_random_features), g / X.shape[1],
                                      [combos[i]["beta"] for i in members], np.random.default_rng(seed))
            yield from zip(members, models, strict=True)


class GBRFF2Regressor(_CosineExport, _SquaredLossBoosting):
    """GBRFF2-R (method-notes §6.6): squared-loss boosting of single learned cosines.

    Same parameters as GBRFF2Classifier plus ``learning_rate`` ν (1 = no shrinkage, as the paper's
    classifier). (g, λ) selected by inner-CV MSE. Fitted attributes as GBRFF2Classifier (without
    ``classes_``; ``alphas_`` are the amplitudes on the standardised scale, ``n_alpha_capped_`` is
    always 0), ``model_.y_mean``/``model_.y_scale`` give the target standardisation.
    """

    _parameter_constraints: dict = {**GBRFF2Classifier._parameter_constraints,
                                    "learning_rate": [cons.positive_real()]}

    def __init__(self, n_features=100, budgets=None, gamma_grid=GAMMA_GRID, lambda_grid=LAMBDA_GRID, cv=5,
                 random_state=None, n_jobs=None, standardize=True, learning_rate=1.0):
        self.n_features = n_features
        self.budgets = budgets
        self.gamma_grid = gamma_grid
        self.lambda_grid = lambda_grid
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize
        self.learning_rate = learning_rate

    _grid = GBRFF2Classifier._grid

    def _fit_model(self, X, y, params, n_iter, rng):
        y_mean, y_scale = standardised_target(y)
        inner = fit_gbrff2_regression(X, (y - y_mean) / y_scale, n_iter,
                                      params["g"] / X.shape[1], params["lambda"], rng,
                                      float(self.learning_rate))
        return StandardisedTarget(y_mean, y_scale, inner)


class GBRFF1Regressor(_LandmarkExport, _SquaredLossBoosting):
    """GBRFF1-R (method-notes §6.6): squared-loss boosting of K-frequency landmark kernels.

    Same parameters as GBRFF1Classifier plus ``learning_rate``. (g, β) selected by inner-CV MSE.
    Fitted attributes as GBRFF1Classifier without ``classes_``.
    """

    _parameter_constraints: dict = {**GBRFF1Classifier._parameter_constraints,
                                    "learning_rate": [cons.positive_real()]}

    def __init__(self, n_features=100, budgets=None, n_random_features=10, gamma_grid=GAMMA_GRID,
                 beta_grid=BETA_GRID, cv=5, random_state=None, n_jobs=None, standardize=True,
                 learning_rate=1.0):
        self.n_features = n_features
        self.budgets = budgets
        self.n_random_features = n_random_features
        self.gamma_grid = gamma_grid
        self.beta_grid = beta_grid
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.standardize = standardize
        self.learning_rate = learning_rate

    _grid = GBRFF1Classifier._grid

    def _fit_model(self, X, y, params, n_iter, rng):
        y_mean, y_scale = standardised_target(y)
        inner = fit_gbrff1_regression(X, (y - y_mean) / y_scale, n_iter,
                                      int(self.n_random_features), params["g"] / X.shape[1],
                                      params["beta"], rng, float(self.learning_rate))
        return StandardisedTarget(y_mean, y_scale, inner)

    def _fit_models(self, X, y, combos, n_iter, seed):
        """The combinations of one g together (:func:`fit_gbrff1_regression_betas`)."""
        y_mean, y_scale = standardised_target(y)
        for g, members in _by_gamma(combos):
            models = fit_gbrff1_regression_betas(X, (y - y_mean) / y_scale, n_iter, int(self.n_random_features),
                                                 g / X.shape[1], [combos[i]["beta"] for i in members],
                                                 np.random.default_rng(seed), float(self.learning_rate))
            yield from ((i, StandardisedTarget(y_mean, y_scale, m)) for i, m in zip(members, models, strict=True))


def _by_gamma(combos) -> list[tuple[float, list[int]]]:
    """(g, the indices of its combinations in ``combos``), g in order of first appearance."""
    groups: dict[float, list[int]] = {}
    for i, params in enumerate(combos):
        groups.setdefault(params["g"], []).append(i)
    return list(groups.items())
