"""Wins, ties and losses of every pair of methods over datasets (the leaderboards of ``rfbench
publish``): per dataset, method a wins against b when its fold errors are significantly better by
the spec's t-test at level alpha (welch, or paired on the folds both finished), loses when b's are,
and ties otherwise (not significantly different, or fewer than two folds to test). Counted over
the same datasets for every pair, so wins + ties + losses is their number and the matrix is
antisymmetric: (a, b) = (w, t, l) exactly when (b, a) = (l, t, w).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rfbench.reporting import cells, stats


def fold_errors(done: pd.DataFrame, datasets) -> dict[tuple[str, str], pd.Series]:
    """(dataset, method) → its errors indexed by (fold, seed), oriented lower-is-better (an accuracy
    negated), from the finished tasks of one budget n."""
    out = {}
    for (ds, m), g in done[done["dataset"].isin(datasets)].groupby(["dataset", "method"]):
        sign = -1.0 if cells.higher_is_better(set(g["metric"].dropna())) else 1.0
        out[(ds, m)] = sign * g.set_index(["fold", "seed"])["error"].astype(float)
    return out


def outcome(a: pd.Series | None, b: pd.Series | None, alpha: float, test: str) -> int:
    """+1 where a is significantly better than b on one dataset, -1 where worse, 0 a tie."""
    if a is None or b is None:
        return 0
    if test == "paired":            # the paired test compares the folds both finished
        common = a.index.intersection(b.index)
        a, b = a.loc[common], b.loc[common]
    x, y = a.to_numpy(), b.to_numpy()
    if len(x) < 2 or len(y) < 2:
        return 0
    if stats.significantly_lower(x, y, alpha, test):
        return 1
    if stats.significantly_lower(y, x, alpha, test):
        return -1
    return 0


def matrix(done: pd.DataFrame, methods, datasets, alpha: float = 0.05, test: str = "welch") -> pd.DataFrame:
    """methods × methods of (wins, ties, losses) of the row's method against the column's over
    ``datasets`` (the diagonal: all ties). Each pair is tested once; its mirror is the reverse."""
    methods, datasets = list(methods), list(datasets)
    errors = fold_errors(done, datasets)
    out = pd.DataFrame(index=methods, columns=methods, dtype=object)
    for i, a in enumerate(methods):
        out.loc[a, a] = (0, len(datasets), 0)
        for b in methods[i + 1:]:
            got = np.array([outcome(errors.get((ds, a)), errors.get((ds, b)), alpha, test) for ds in datasets])
            w, lo = int((got == 1).sum()), int((got == -1).sum())
            out.loc[a, b] = (w, len(datasets) - w - lo, lo)
            out.loc[b, a] = (lo, len(datasets) - w - lo, w)
    return out
