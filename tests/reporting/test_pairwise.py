"""The wins/ties/losses matrix (rfbench.reporting.pairwise.matrix) tests every pair of a dataset in one
vectorised call (stats.outcomes); its decisions must be those of the pair-by-pair reference
(pairwise.outcome → stats.significantly_lower, one scipy call per test) on every kind of cell: complete,
missing folds (paired: only the common ones), a NaN error, no spread, a single fold, an accuracy."""

import numpy as np
import pandas as pd
import pytest

from rfbench.reporting import pairwise, stats

# the sets hold methods of nearly equal errors on purpose; scipy says so, as it does on such results
pytestmark = pytest.mark.filterwarnings("ignore:Precision loss occurred:RuntimeWarning")


def reference(done, methods, datasets, alpha, test):
    """The matrix pair by pair with :func:`pairwise.outcome` (the naive reference)."""
    errors = pairwise.fold_errors(done, datasets)
    out = {(a, a): (0, len(datasets), 0) for a in methods}
    for i, a in enumerate(methods):
        for b in methods[i + 1:]:
            got = [pairwise.outcome(errors.get((ds, a)), errors.get((ds, b)), alpha, test) for ds in datasets]
            out[(a, b)] = (got.count(1), got.count(0), got.count(-1))
            out[(b, a)] = out[(a, b)][::-1]
    return out


def random_results(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for d in range(12):
        metric = "accuracy" if d % 5 == 4 else "rmse"
        for k, m in enumerate("abcdefg"):
            if rng.random() < 0.1:
                continue                                   # a method that never ran on this set
            level, noise = 1 + 0.05 * k * rng.random(), rng.choice([0.0, 1e-3, 0.05, 0.3])
            folds = [f for f in range(10) if rng.random() > 0.15] if rng.random() < 0.3 else range(10)
            for f in folds:
                err = level + noise * rng.standard_normal()
                if rng.random() < 0.01:
                    err = np.nan                           # a record whose error is NaN
                rows.append((f"d{d}", m, 100, f, 0, "done", metric, err))
        if d == 3:                                         # one fold only, and identical errors everywhere
            rows = [r for r in rows if not (r[0] == "d3" and r[1] == "a" and r[3] > 0)]
            rows += [("d3", "h", 100, f, 0, "done", metric, 0.5) for f in range(10)]
            rows += [("d3", "i", 100, f, 0, "done", metric, 0.5) for f in range(10)]
    return pd.DataFrame(rows, columns=["dataset", "method", "n_features", "fold", "seed", "status", "metric",
                                       "error"])


@pytest.mark.parametrize("test", ["welch", "paired"])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_matrix_decides_as_the_pair_by_pair_reference(seed, test):
    done = random_results(seed)
    methods, datasets = sorted(done["method"].unique()), sorted(done["dataset"].unique())
    got = pairwise.matrix(done, methods, datasets, 0.05, test)
    want = reference(done, methods, datasets, 0.05, test)
    assert {(a, b): got.loc[a, b] for a in methods for b in methods} == want
    # the random sets hold every kind of decision, so the comparison is not of ties alone
    assert any(w for (w, _t, _lo) in want.values()) and any(t < len(datasets) for (_w, t, _lo) in want.values())


def test_outcomes_row_by_row_as_significantly_lower_both_ways():
    rng = np.random.default_rng(5)
    a = 1 + 0.1 * rng.standard_normal((200, 6))
    b = a + rng.choice([-0.2, 0.0, 0.02, 0.2], size=(200, 1)) + 0.05 * rng.standard_normal((200, 6))
    b[7] = a[7] + 0.1                                       # paired: no spread in the differences
    a[8], b[8] = 1.0, 2.0                                   # welch: both constant
    has = np.ones_like(a, bool)
    has[9, 2:] = False                                      # two folds left on one side
    for test in ("welch", "paired"):
        got = stats.outcomes(a, b, has, has | True, 0.05, test)
        for i in range(len(a)):
            x = a[i, has[i]]
            y = b[i, has[i]] if test == "paired" else b[i]
            want = 1 if stats.significantly_lower(x, y, 0.05, test) else (
                -1 if stats.significantly_lower(y, x, 0.05, test) else 0)
            assert got[i] == want, (test, i)
    assert set(stats.outcomes(a, b, has, has | True, 0.05, "paired")) == {-1, 0, 1}
