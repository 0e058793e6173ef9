"""Welch and Wilcoxon helpers against scipy and hand-worked examples."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from rfbench.reporting import stats


def test_welch_hand_worked():
    a, b = [1.0, 2.0, 3.0, 4.0], [3.0, 5.0, 7.0, 9.0]
    # by hand: means 2.5, 6; variances 5/3, 20/3; se² = (5/3 + 20/3)/4 = 25/12
    t_hand = (2.5 - 6.0) / math.sqrt(25 / 12)
    df = (25 / 12) ** 2 / ((5 / 12) ** 2 / 3 + (20 / 12) ** 2 / 3)
    p_hand = 2 * sps.t.sf(abs(t_hand), df)
    t, p = stats.welch(a, b)
    assert t == pytest.approx(t_hand) and p == pytest.approx(p_hand)
    assert stats.significantly_lower([1, 1.1, 0.9, 1.0, 1.05], [2, 2.1, 1.9, 2.0, 2.05])
    assert not stats.significantly_lower([2, 2.1, 1.9], [1, 1.1, 0.9])
    assert not stats.significantly_lower([1.0, 2.0, 3.0], [1.1, 2.1, 2.9])


def test_welch_matches_scipy_random():
    rng = np.random.default_rng(0)
    a, b = rng.normal(0, 1, 10), rng.normal(0.5, 2, 10)
    ref = sps.ttest_ind(a, b, equal_var=False)
    assert stats.welch(a, b) == pytest.approx((ref.statistic, ref.pvalue))


def test_wilcoxon_hand_worked():
    # differences 1, -2, 3, 4, -5, 6 → ranks of |d|: 1..6; W+ = 1+3+4+6 = 14, W− = 2+5 = 7
    a = np.array([11.0, 8, 13, 14, 5, 16])
    b = np.array([10.0, 10, 10, 10, 10, 10])
    T, p, n = stats.wilcoxon(a, b)
    assert (T, n) == (7.0, 6)
    # exact two-sided p = 2 P(W+ ≤ 7); subsets of {1..6} with sum s = 0..7 number
    # 1, 1, 1, 2, 2, 3, 4, 4 → 18 of the 2^6 = 64 sign patterns
    assert p == pytest.approx(2 * 18 / 64)


def test_wilcoxon_critical_values_match_tables():
    # standard two-sided 5 % table values
    assert [stats.wilcoxon_critical_value(n) for n in (6, 8, 10, 11, 16, 20)] == [0, 3, 8, 10, 29, 52]
    assert stats.wilcoxon_critical_value(5) is None
    # the GFC paper quotes T = 30 for 16 datasets: the normal approximation
    assert stats.wilcoxon_critical_value(16, method="normal") == 30


def test_wilcoxon_drops_differences_at_rounding_level_like_exact_zeros():
    """Two methods that reduce to the same model on one dataset (gbrff vs gfc on ionosphere)
    differ by 1.4e-14 there: a tie, not the smallest rank."""
    a = np.array([0.11, 0.32, 0.27, 0.45, 0.50, 0.18, 0.93])
    b = np.array([0.10, 0.30, 0.30, 0.40, 0.56, 0.25, 0.93 + 1.4e-14])
    exact = b.copy()
    exact[-1] = a[-1]                       # the same data with the tie written as an exact zero
    T, p, n = stats.wilcoxon(a, b)
    assert n == 6 and (T, p, n) == stats.wilcoxon(a, exact)
    ref = sps.wilcoxon(a[:-1], b[:-1])
    assert T == ref.statistic and p == pytest.approx(ref.pvalue)
    # relative for large values, absolute below 1; a real difference of 1e-6 still counts
    assert list(stats.ties([1e6, 0.5, 0.5], [1e6 + 1e-4, 0.5 + 5e-10, 0.5 + 1e-6])) == [True, True, False]
    T0, _, n0 = stats.wilcoxon([1.0, 2.0], [1.0, 2.0 + 1e-15])    # nothing but ties: no test
    assert n0 == 0 and math.isnan(T0)


def test_paired_t_test_matches_scipy_and_pairs_by_fold():
    rng = np.random.default_rng(0)
    fold_effect = rng.normal(0, 1, 10)                       # shared by both methods
    a = fold_effect + rng.normal(0, 0.05, 10)
    b = fold_effect + 0.2 + rng.normal(0, 0.05, 10)
    ref = sps.ttest_rel(a, b)
    assert stats.paired(a, b) == pytest.approx((ref.statistic, ref.pvalue))
    # the fold effect hides a consistent 0.2 gain from Welch's test, not from the paired one
    assert stats.significantly_lower(a, b, test="paired") and not stats.significantly_lower(a, b, test="welch")
    assert stats.paired([1.0, 2.0], [1.5, 2.5]) == (-math.inf, 0.0)       # constant difference
    assert all(math.isnan(v) for v in stats.paired([1.0, 2.0], [1.0, 2.0]) + stats.paired([1.0], [2.0]))
