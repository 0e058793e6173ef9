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
    used = done.loc[done["dataset"].isin(datasets), ["dataset", "method", "metric", "fold", "seed", "error"]]
    for (ds, m), g in used.groupby(["dataset", "method"]):
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
    ``datasets`` (the diagonal: all ties). Each pair is tested once (its mirror is the reverse), every
    pair of a dataset in one :func:`rfbench.reporting.stats.outcomes` call: the decisions of
    :func:`outcome` pair by pair (its naive reference, tests/reporting/test_pairwise.py)."""
    methods, datasets = list(methods), list(datasets)
    errors = fold_errors(done, datasets)
    k = len(methods)
    wins = np.zeros((k, k), dtype=int)
    for ds in datasets:
        present = [i for i, m in enumerate(methods) if (ds, m) in errors]
        if len(present) < 2:
            continue
        series = {i: errors[(ds, methods[i])] for i in present}
        values = pd.concat(series, axis=1)                  # the folds of any method × the methods here
        has = pd.concat({i: pd.Series(True, index=s.index) for i, s in series.items()}, axis=1).notna()
        values, has = values.to_numpy(float).T, has.to_numpy().T
        first, second = np.triu_indices(len(present), 1)
        got = stats.outcomes(values[first], values[second], has[first], has[second], alpha, test)
        rows, cols = np.asarray(present)[first], np.asarray(present)[second]
        np.add.at(wins, (rows[got == 1], cols[got == 1]), 1)
        np.add.at(wins, (cols[got == -1], rows[got == -1]), 1)
    out = pd.DataFrame(index=methods, columns=methods, dtype=object)
    for i, a in enumerate(methods):
        for j, b in enumerate(methods):
            out.loc[a, b] = (0, len(datasets), 0) if i == j else (
                int(wins[i, j]), len(datasets) - int(wins[i, j]) - int(wins[j, i]), int(wins[j, i]))
    return out
