"""Dataset-specific readers for sources that need more than "target column + inputs".

Each reader takes the mirror file's path and returns (X, y) in the paper's form; a registry entry
selects one with ``preprocess: NAME``. Readers are pure functions of the file (any randomness is
seeded and documented), so every method sees the same data.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

PREPARERS: dict[str, Callable[[Path], tuple[np.ndarray, np.ndarray]]] = {}


def preparer(name: str):
    def register(fn):
        PREPARERS[name] = fn
        return fn

    return register
