"""Significance tests of the papers (scipy.stats does the testing; this module only wraps it).

* Per dataset: Welch's unequal-variance t-test on the outer-fold errors of two methods
  (GFC paper §3: "paired Welch t-test, p = 0.05"), or the paired t-test on the per-fold
  differences (the outer folds are identical for every method).
* Across datasets: the Wilcoxon signed-rank test on per-dataset mean errors; the statistic T is
  min(W+, W−), compared with the critical value for N datasets. Means that agree to ~1e-9 are
  ties (see ``ties``).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def welch(a, b) -> tuple[float, float]:
    """(t statistic, two-sided p-value) of Welch's t-test of a against b."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2 or b.size < 2:
        return math.nan, math.nan
    if np.all(a == a[0]) and np.all(b == b[0]):
        return (math.nan, math.nan) if a[0] == b[0] else (math.copysign(math.inf, a[0] - b[0]), 0.0)
    res = stats.ttest_ind(a, b, equal_var=False)
    return float(res.statistic), float(res.pvalue)


def paired(a, b) -> tuple[float, float]:
    """(t statistic, two-sided p-value) of the paired t-test on the differences a − b (a[i] and
    b[i] from the same fold)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = a - b
    if d.size < 2:
        return math.nan, math.nan
    if np.all(d == d[0]):      # no spread: scipy would divide by zero
        return (math.nan, math.nan) if d[0] == 0 else (math.copysign(math.inf, d[0]), 0.0)
    res = stats.ttest_rel(a, b)
    return float(res.statistic), float(res.pvalue)


TESTS = {"welch": welch, "paired": paired}


def significantly_lower(a, b, alpha: float = 0.05, test: str = "welch") -> bool:
    """True when a's mean is lower than b's and the t-test (welch or paired; paired: a and b
    aligned by fold) rejects equality at level alpha."""
    if not np.mean(a) < np.mean(b):    # the test cannot make a higher mean significantly lower
        return False
    t, p = TESTS[test](a, b)
    return bool(p < alpha)


def outcomes(a, b, a_has, b_has, alpha: float = 0.05, test: str = "welch") -> np.ndarray:
    """Many comparisons at once, row by row: +1 where a's row is significantly lower than b's, -1 where
    b's is, 0 otherwise. ``a``, ``b``: P × F values on F common folds, ``a_has``, ``b_has``: which of
    them exist (a missing fold is left out of its side; paired: only the folds both have are compared).
    The decisions of :func:`significantly_lower` both ways on each row (rows of fewer than two values to
    test: 0); the rows with every fold and some spread go to scipy in one call, the rest one by one."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    a_has, b_has = np.asarray(a_has, bool), np.asarray(b_has, bool)
    out = np.zeros(len(a), dtype=int)
    if a.shape[1] < 2:
        return out
    full = a_has.all(axis=1) & b_has.all(axis=1) & np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    if test == "paired":
        d = a - b
        spread = ~np.all(d == d[:, :1], axis=1)
    else:
        spread = ~(np.all(a == a[:, :1], axis=1) & np.all(b == b[:, :1], axis=1))
    many = full & spread
    if many.any():
        x, y = a[many], b[many]
        res = stats.ttest_rel(x, y, axis=1) if test == "paired" else stats.ttest_ind(x, y, axis=1, equal_var=False)
        mx, my = x.mean(axis=1), y.mean(axis=1)
        out[many] = np.where(res.pvalue < alpha, np.where(mx < my, 1, np.where(my < mx, -1, 0)), 0)
    for i in np.flatnonzero(~many):
        if test == "paired":
            both = a_has[i] & b_has[i]
            x, y = a[i, both], b[i, both]
        else:
            x, y = a[i, a_has[i]], b[i, b_has[i]]
        if len(x) >= 2 and len(y) >= 2:
            out[i] = 1 if significantly_lower(x, y, alpha, test) else -1 if significantly_lower(y, x, alpha, test) else 0
    return out


def ties(a, b, rtol: float = 1e-9) -> np.ndarray:
    """Where a and b agree to rtol relative (absolute below 1): the same number up to rounding
    (e.g. two methods that reduce to the same model differ by 1e-14), not a difference."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return np.abs(a - b) <= rtol * np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))


def wilcoxon(a, b) -> tuple[float, float, int]:
    """(T = min(W+, W−), two-sided p-value, N) of the signed-rank test on paired values; ties
    (see ``ties``) are dropped, like exact zeros, and N counts the rest."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    d = (a - b)[~ties(a, b)]
    if d.size == 0:
        return math.nan, math.nan, 0
    res = stats.wilcoxon(d, alternative="two-sided")
    return float(res.statistic), float(res.pvalue), int(d.size)


def _signed_rank_null_counts(n: int) -> np.ndarray:
    """Number of sign patterns giving each W+ value 0..n(n+1)/2 under the null (ranks 1..n)."""
    total = n * (n + 1) // 2
    counts = np.zeros(total + 1, dtype=object)  # exact integers: 2^n overflows int64 for n > 62
    counts[0] = 1
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts


def wilcoxon_critical_value(n: int, alpha: float = 0.05, method: str = "exact") -> int | None:
    """Largest T with P(T ≤ c) ≤ alpha/2 (two-sided), or the normal approximation used in the
    GFC paper (which quotes T = 30 for 16 datasets; the exact value is 29)."""
    if n < 1:
        return None
    if method == "normal":
        mu = n * (n + 1) / 4
        sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
        value = int(math.floor(mu - stats.norm.ppf(1 - alpha / 2) * sd + 0.5))
        return value if value >= 0 else None
    counts = _signed_rank_null_counts(n)
    cdf = np.cumsum(counts) / 2**n
    ok = np.nonzero(cdf.astype(float) <= alpha / 2)[0]
    return int(ok[-1]) if ok.size else None
