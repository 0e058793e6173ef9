"""The two artificial regression problems of the Torgo collection, from their published formulas.

Both are used at the papers' size (40 768 × 10) and are seeded, so a run is reproducible without
network or mirror.
"""

from __future__ import annotations

import numpy as np


def breiman(m: int = 40768, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """2dplanes (Breiman, Friedman, Olshen & Stone 1984, p. 238).

    X1 ∈ {−1, 1}, X2..X10 ∈ {−1, 0, 1}, all equiprobable;
    X1 = 1:  y = 3 + 3 X2 + 2 X3 + X4 + ε;   X1 = −1:  y = −3 + 3 X5 + 2 X6 + X7 + ε;   ε ~ N(0, 1).
    """
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, size=(m, 10)).astype(float)
    X[:, 0] = rng.choice([-1.0, 1.0], size=m)
    y = np.where(X[:, 0] == 1,
                 3 + 3 * X[:, 1] + 2 * X[:, 2] + X[:, 3],
                 -3 + 3 * X[:, 4] + 2 * X[:, 5] + X[:, 6])
    return X, y + rng.standard_normal(m)


def friedman(m: int = 40768, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """fried (Friedman 1991; Breiman 1996): X1..X10 ~ U[0, 1] independent, X6..X10 irrelevant;
    y = 10 sin(π X1 X2) + 20 (X3 − 0.5)² + 10 X4 + 5 X5 + ε, ε ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    X = rng.random((m, 10))
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2
         + 10 * X[:, 3] + 5 * X[:, 4])
    return X, y + rng.standard_normal(m)


#: name → generator; the names are rfbench.registry.GENERATOR_NAMES (tests/data/test_data.py checks both agree)
GENERATORS = {"breiman": breiman, "friedman": friedman}
