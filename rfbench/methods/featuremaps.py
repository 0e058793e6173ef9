"""Feature maps φ(x, ω) of the EERF paper (Shahrampour, Beirami & Tarokh, AAAI 2018, eq. (3), Table 4),
shared by EERF, LKRF and RKS (plain random features).

Every map is an expectation over a sampling distribution P₀ of ω (the paper's eq. (3)); M draws and
the scaling below give features z(x) ∈ R^M with E[z(x)·z(x′)] = k(x, x′)::

    map        φ(x, ω)                       P₀                          z(x)            k(x, x′)
    gaussian   cos(ω_R·x + b)                ω_R ~ N(0, σ⁻² I), b ~ U[0, 2π)  √(2/M) φ   exp(−‖x − x′‖² / (2σ²))
    arccos     (ω·x)ⁿ H(ω·x)                 ω ~ N(0, I)                 √(2/M) φ        arc-cosine kernel of order n
    linear     x_ω                           ω uniform on {1, …, d}      √(d/M) φ        x·x′

H is the paper's Heaviside step, H(t) = 0.5 + 0.5 sgn(t) (so H(0) = ½, which matters for n = 0
only). The arc-cosine kernel is Cho & Saul's (NIPS 2009): k_n(x, x′) = (1/π) ‖x‖ⁿ ‖x′‖ⁿ J_n(θ), θ the
angle between x and x′, J₀ = π − θ, J₁ = sin θ + (π − θ) cos θ, J₂ = 3 sin θ cos θ + (π − θ)(1 +
2 cos² θ); Cho & Saul define it as 2 E[Θ(ω·x) Θ(ω·x′) (ω·x)ⁿ (ω·x′)ⁿ], hence the √2 in z.
:func:`expected_kernel` gives these closed forms (the tests compare them with the features).

The paper's data-dependent score (eq. (7)) uses φ itself, unscaled: :func:`scores`. Only the Gaussian
map has a bandwidth (σ, the EERF rule of thumb: the mean distance to the 50th nearest neighbour); the
arc-cosine map is homogeneous of degree n in ω, so a scale of ω only rescales every feature alike
(absorbed by the ridge penalty) and P₀ is the standard Gaussian, as the paper says. For the linear map
the "frequencies" are coordinate indices (0-based) and there are no phases.
"""

from __future__ import annotations

import math

import numpy as np

#: the maps; the estimators' ``_parameter_constraints`` refuse any other (and an ``arccos_order`` that
#: is not 0, 1, 2, ...) before these functions see it
FEATURE_MAPS = ("gaussian", "arccos", "linear")

#: candidates scored per matrix product (bounds the N₀ × block working array)
SCORE_BLOCK = 2000


def uses_bandwidth(feature_map: str) -> bool:
    """Whether P₀ depends on the σ rule (only the Gaussian map's does)."""
    return feature_map == "gaussian"


def draw(feature_map: str, n: int, d: int, rng: np.random.Generator,
         sigma: float = 1.0) -> tuple[np.ndarray, np.ndarray | None]:
    """(frequencies, phases) of n draws from P₀, in a fixed order of generator calls.

    gaussian: frequencies (n × d) ~ N(0, σ⁻² I), then phases (n,) ~ U[0, 2π) (the order EERF has
    always used); arccos: frequencies (n × d) ~ N(0, I), no phases; linear: n coordinate indices
    uniform on {0, …, d − 1}, no phases."""
    if feature_map == "gaussian":
        frequencies = rng.standard_normal((n, d)) / sigma
        phases = rng.uniform(0.0, 2.0 * np.pi, size=n)
        return frequencies, phases
    if feature_map == "arccos":
        return rng.standard_normal((n, d)), None
    if feature_map == "linear":
        return rng.integers(0, d, size=n), None
    raise ValueError(f"feature_map must be one of {', '.join(FEATURE_MAPS)}, got {feature_map!r}")


def take(frequencies: np.ndarray, phases: np.ndarray | None, idx) -> tuple[np.ndarray, np.ndarray | None]:
    """The candidates ``idx`` of a pool (phases stay None for the maps without them)."""
    return frequencies[idx], None if phases is None else phases[idx]


def scale(feature_map: str, n: int, d: int) -> float:
    """The factor of z = factor · φ that makes E[z(x)·z(x′)] the map's kernel (n features)."""
    n = max(int(n), 1)
    return math.sqrt((d if feature_map == "linear" else 2.0) / n)


def _heaviside_power(P: np.ndarray, order: int) -> np.ndarray:
    """(t)ⁿ H(t) elementwise, in place on P; H(0) = ½ (the paper's H), which only n = 0 sees."""
    if order == 0:
        zero = P == 0
        np.greater(P, 0.0, out=P, casting="unsafe")      # 1.0 where t > 0, else 0.0
        P[zero] = 0.5
        return P
    np.maximum(P, 0.0, out=P)
    if order > 1:
        np.power(P, order, out=P)
    return P


def raw_features(X: np.ndarray, frequencies: np.ndarray, phases: np.ndarray | None, feature_map: str,
                 arccos_order: int = 1) -> np.ndarray:
    """φ(x_i, ω_m) for every row and candidate (rows × candidates), unscaled (the score's φ)."""
    if feature_map == "linear":
        return X[:, np.asarray(frequencies, dtype=np.intp)]
    P = X @ frequencies.T
    if feature_map == "gaussian":
        P += phases
        np.cos(P, out=P)
        return P
    return _heaviside_power(P, int(arccos_order))


def cosine_features(X: np.ndarray, frequencies: np.ndarray, phases: np.ndarray,
                    weights: np.ndarray | None = None) -> np.ndarray:
    """Z = √(2/M) cos(X Ωᵀ + b), optionally times per-feature weights (LKRF's weighted mode).

    Built in place (one m × M array) since m·M can be large (EERF's Buzz set: 93 800 × 1000).
    """
    Z = X @ frequencies.T
    Z += phases
    np.cos(Z, out=Z)
    Z *= math.sqrt(2.0 / max(frequencies.shape[0], 1))
    if weights is not None:
        Z *= weights
    return Z


def feature_matrix(X: np.ndarray, frequencies: np.ndarray, phases: np.ndarray | None, feature_map: str = "gaussian",
                   arccos_order: int = 1, weights: np.ndarray | None = None) -> np.ndarray:
    """Z = scale · φ(X, ω) (rows × M): E[Z Zᵀ] is the map's kernel matrix; times per-feature
    ``weights`` if given (LKRF's weighted mode). The Gaussian map is :func:`cosine_features`."""
    if feature_map == "gaussian":
        return cosine_features(X, frequencies, phases, weights)
    Z = raw_features(X, frequencies, phases, feature_map, arccos_order)
    if feature_map == "linear":
        Z = Z.copy()            # a column selection of X: never scale the caller's array in place
    Z *= scale(feature_map, len(frequencies), X.shape[1])
    if weights is not None:
        Z *= weights
    return Z


def empirical_scores(X0: np.ndarray, y0: np.ndarray, frequencies: np.ndarray, phases: np.ndarray,
                     block: int = SCORE_BLOCK) -> np.ndarray:
    """Ŝ_m = (1/N₀) Σ_n y_n cos(ω_m·x_n + b_m) for every candidate (eq. 7), in column blocks.

    One (N₀ × d)·(d × block) product per block, so memory stays O(N₀·block) for any M₀.
    """
    n0 = X0.shape[0]
    scores = np.empty(frequencies.shape[0])
    for start in range(0, frequencies.shape[0], block):
        stop = start + block
        scores[start:stop] = y0 @ np.cos(X0 @ frequencies[start:stop].T + phases[start:stop]) / n0
    return scores


def scores(X0: np.ndarray, y0: np.ndarray, frequencies: np.ndarray, phases: np.ndarray | None,
           feature_map: str = "gaussian", arccos_order: int = 1, block: int = SCORE_BLOCK) -> np.ndarray:
    """The empirical score Ŝ(ω) = (1/N₀) Σ_n y_n φ(x_n, ω) of every candidate (eq. (7)), in blocks of
    candidates: shape (M₀,) for one response y0 (N₀,), (M₀, C) for C responses y0 (N₀ × C)."""
    if feature_map == "gaussian" and y0.ndim == 1:
        return empirical_scores(X0, y0, frequencies, phases, block)
    n0, m0 = X0.shape[0], len(frequencies)
    out = np.empty((m0,) + y0.shape[1:])
    for start in range(0, m0, block):
        stop = min(start + block, m0)
        ph = None if phases is None else phases[start:stop]
        Phi = raw_features(X0, frequencies[start:stop], ph, feature_map, arccos_order)
        out[start:stop] = (y0.T @ Phi).T / n0
    return out


def expected_kernel(feature_map: str, X: np.ndarray, Y: np.ndarray, arccos_order: int = 1,
                    sigma: float = 1.0) -> np.ndarray:
    """The kernel matrix k(x_i, y_j) that the scaled features approximate, in closed form."""
    X, Y = np.atleast_2d(X), np.atleast_2d(Y)
    if feature_map == "gaussian":
        sq = np.sum(X**2, 1)[:, None] + np.sum(Y**2, 1)[None, :] - 2.0 * X @ Y.T
        return np.exp(-np.maximum(sq, 0.0) / (2.0 * sigma**2))
    if feature_map == "linear":
        return X @ Y.T
    if feature_map != "arccos":
        raise ValueError(f"feature_map must be one of {', '.join(FEATURE_MAPS)}, got {feature_map!r}")
    nx, ny = np.linalg.norm(X, axis=1), np.linalg.norm(Y, axis=1)
    denom = np.outer(nx, ny)
    # θ by Kahan's stable form 2 atan2(‖u − v‖, ‖u + v‖) of the unit vectors (arccos of the cosine
    # loses half the digits near θ = 0); a zero vector: θ = π/2, the value H(0) = ½ gives k₀
    U = X / np.where(nx > 0, nx, 1.0)[:, None]
    V = Y / np.where(ny > 0, ny, 1.0)[:, None]
    theta = 2.0 * np.arctan2(np.linalg.norm(U[:, None, :] - V[None, :, :], axis=2),
                             np.linalg.norm(U[:, None, :] + V[None, :, :], axis=2))
    theta = np.where(denom > 0, theta, np.pi / 2)
    s, c = np.sin(theta), np.cos(theta)
    n = int(arccos_order)
    if n == 0:
        J = np.pi - theta
    elif n == 1:
        J = s + (np.pi - theta) * c
    elif n == 2:
        J = 3.0 * s * c + (np.pi - theta) * (1.0 + 2.0 * c**2)
    else:
        raise ValueError(f"closed form of the arc-cosine kernel for orders 0, 1, 2 only, got {arccos_order!r}")
    return denom**n * J / np.pi
