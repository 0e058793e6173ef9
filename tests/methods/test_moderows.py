"""Mode-centred sparse inputs: the modes against a naive count, the products and GFC's one-frequency
CV against the dense computation, and the dispatch rule that keeps dense data on the dense path."""

from collections import Counter

import numpy as np
import pytest

from rfbench.methods import gfc, moderows
from rfbench.methods.cvgrad import OneFrequencyCV, inverted_blocks, prepare_splits
from rfbench.methods.moderows import ModeCentredRows, column_modes, compact_rows


def fingerprints(m, d, rng, detected=0.05):
    """Mostly 'not detected' (-110) signal strengths, a few detections, and one dense column."""
    X = np.full((m, d), -110.0)
    hit = rng.random((m, d)) < detected
    X[hit] = rng.uniform(-100, -30, size=hit.sum()).round()
    X[:, 0] = rng.normal(size=m)
    return (X - X.mean(0)) / X.std(0)


def test_column_modes_against_a_naive_count_with_ties_broken_to_the_smallest():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(37, 6)).astype(float)
    X[:, 5] = [1.0, 2.0] * 18 + [3.0]          # a tie between 1 and 2: the smaller wins
    modes, off = column_modes(X)
    naive_modes, naive_off = [], 0
    for j in range(X.shape[1]):
        counts = Counter(X[:, j].tolist())
        top = max(counts.values())
        naive_modes.append(min(v for v, c in counts.items() if c == top))
        naive_off += X.shape[0] - top
    np.testing.assert_array_equal(modes, naive_modes)
    assert off == naive_off


def test_products_and_row_selection_equal_the_dense_ones():
    rng = np.random.default_rng(1)
    X = fingerprints(200, 30, rng)
    C = ModeCentredRows.from_dense(X)
    assert C.density < 0.1
    W, t = rng.normal(size=(30, 3)), rng.normal(size=200)
    np.testing.assert_allclose(C.toarray(), X, rtol=0, atol=1e-12)
    np.testing.assert_allclose(C @ W, X @ W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(C @ W[:, 0], X @ W[:, 0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(C.rmatvec(t), X.T @ t, rtol=1e-12, atol=1e-12)
    rows = rng.permutation(200)[:50]
    np.testing.assert_allclose((C[rows] @ W), X[rows] @ W, rtol=1e-12, atol=1e-12)


def test_padded_rows_are_all_zero_rows_and_selection_keeps_them_off():
    rng = np.random.default_rng(3)
    X = fingerprints(60, 12, rng, detected=0.2)     # no all-'not detected' column (std 0)
    C = ModeCentredRows.from_dense(X)
    rows = np.array([5, -1, 0, 59, -1, 17])
    P = C.take_padded(rows)
    dense = np.where((rows >= 0)[:, None], X[np.maximum(rows, 0)], 0.0)   # naive padding
    W, t = rng.normal(size=(12, 4)), rng.normal(size=rows.size)
    np.testing.assert_allclose(P.toarray(), dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(P @ W, dense @ W, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(P.rmatvec(t), dense.T @ t, rtol=1e-12, atol=1e-12)
    # padding survives a second selection and a second padding
    again = P.take_padded(np.array([1, -1, 3]))
    np.testing.assert_allclose(again.toarray(), np.vstack([np.zeros(12), np.zeros(12), X[59]]),
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(P[[4, 2]].toarray(), dense[[4, 2]], rtol=0, atol=1e-12)


def test_dense_data_stay_dense_and_nearly_constant_data_become_sparse():
    rng = np.random.default_rng(2)
    dense = rng.normal(size=(100, 5))
    assert compact_rows(dense) is dense                # same object: bit-for-bit results kept
    sparse = fingerprints(300, 40, rng)
    assert isinstance(compact_rows(sparse), ModeCentredRows)
    assert compact_rows(sparse, max_density=0.0) is sparse


@pytest.mark.parametrize("kind", ["kfold", "inverted"])
def test_one_frequency_cv_on_mode_centred_rows_equals_the_dense_path(kind):
    """Unequal fold sizes, so the padding rows (which get the modes) are exercised."""
    rng = np.random.default_rng(3)
    m, d = 203, 25
    X, y, f = fingerprints(m, d, rng), rng.normal(size=m), rng.normal(size=m)
    if kind == "inverted":
        splits = inverted_blocks(m, 5)
    else:
        folds = np.array_split(np.arange(m), 5)
        splits = prepare_splits([(np.concatenate(folds[:i] + folds[i + 1:]), folds[i]) for i in range(5)], m)
    dense, compact = OneFrequencyCV(X, y, f, splits), OneFrequencyCV(compact_rows(X), y, f, splits)
    assert compact.compact and not dense.compact
    w = rng.normal(size=d) / np.sqrt(d)
    for lam in (1e-6, 1e-2):
        v0, g0, l0 = dense(w, lam)
        v1, g1, l1 = compact(w, lam)
        assert v1 == pytest.approx(v0, rel=1e-12)
        np.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-13)
        assert l1 == pytest.approx(l0, rel=1e-10)


def test_gfc_on_nearly_constant_inputs_builds_the_dense_path_model(monkeypatch):
    """The whole method, sparse against dense: same frequencies and predictions up to rounding
    (a short fit, so the L-BFGS-B paths have no room to separate)."""
    rng = np.random.default_rng(4)
    X = fingerprints(240, 20, rng, detected=0.08)
    y = np.sin(X[:, 0]) + X[:, 1:4].sum(1) + 0.1 * rng.normal(size=240)
    calls = []
    monkeypatch.setattr(gfc, "compact_rows", lambda A: calls.append(1) or moderows.compact_rows(A))
    est = gfc.GFCRegressor(n_features=6, max_steps=3, random_state=0).fit(X, y)
    assert calls
    monkeypatch.setattr(gfc, "compact_rows", lambda A: A)
    ref = gfc.GFCRegressor(n_features=6, max_steps=3, random_state=0).fit(X, y)
    assert est.frequencies_.shape == ref.frequencies_.shape
    np.testing.assert_allclose(est.frequencies_, ref.frequencies_, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(est.predict(X), ref.predict(X), rtol=1e-6, atol=1e-8)


def test_gfc_on_mode_centred_rows_parallel_equals_sequential():
    """The sparse inputs travel to loky workers and back to the same bits as in one process."""
    rng = np.random.default_rng(5)
    X = fingerprints(150, 30, rng, detected=0.04)
    y = X[:, 0] - X[:, 1:3].sum(1) + 0.1 * rng.normal(size=150)
    assert isinstance(compact_rows(X), ModeCentredRows)
    kw = dict(n_features=8, max_steps=2, random_state=1, chunks="all")
    seq = gfc.GFCRegressor(n_jobs=1, **kw).fit(X, y)
    par = gfc.GFCRegressor(n_jobs=2, **kw).fit(X, y)
    np.testing.assert_array_equal(par.frequencies_, seq.frequencies_)
    np.testing.assert_array_equal(par.predict(X), seq.predict(X))
