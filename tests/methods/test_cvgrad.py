"""The Keerthi CV-gradient template: values against a naive ridge CV, gradients against central
finite differences (method-notes §0.4, mandatory test)."""

import numpy as np
import pytest
import scipy.linalg

from rfbench.methods import cvgrad
from rfbench.methods.cvgrad import (
    Paths,
    inverted_kfold,
    prepare_splits,
    ridge_cv_grad,
    trig_cv_grad,
    trig_features,
)


def rel_err(a, b):
    a, b = np.ravel(a), np.ravel(b)
    return np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300)


def kfold(m, k, rng):
    folds = np.array_split(rng.permutation(m), k)
    return [(np.concatenate(folds[:i] + folds[i + 1:]), folds[i]) for i in range(k)]


def naive_cv(Z, y, splits, lam):
    """Ridge CV error computed the obvious way (per split, no Gram tricks)."""
    errs = []
    for tr, va in splits:
        Zt = Z[tr]
        c = np.linalg.solve(Zt.T @ Zt + len(tr) * lam * np.eye(Z.shape[1]), Zt.T @ y[tr])
        errs.append(np.mean((Z[va] @ c - y[va]) ** 2))
    return np.mean(errs)


def naive_cv_kernel_form(Z, y, splits, lam):
    """The same ridge CV through the m_tr × m_tr system: c = Z_trᵀ (Z_tr Z_trᵀ + m_tr λ I)⁻¹ y_tr."""
    errs = []
    for tr, va in splits:
        Zt = Z[tr]
        c = Zt.T @ np.linalg.solve(Zt @ Zt.T + len(tr) * lam * np.eye(len(tr)), y[tr])
        errs.append(np.mean((Z[va] @ c - y[va]) ** 2))
    return np.mean(errs)


SPLIT_KINDS = ["standard", "inverted", "partial"]


#: every implementation: per-split loop with Gram subtraction, the batched all-splits path used for
#: designs with few columns, its per-fold-sum form for splits that are one fold against the rest, and
#: the block-wise k-fold path for designs with many columns
PATHS = {"loop": Paths(small_p=0, fold_path=False), "batched": Paths(small_p=10_000, fold_path=False),
         "folds": Paths(small_p=10_000, fold_path=True), "kfold-blocks": Paths(small_p=0, fold_path=True, dual=False),
         "kfold-dual": Paths(small_p=0, fold_path=True, dual=True)}


@pytest.fixture(params=list(PATHS))
def paths(request):
    """Run a test through all implementations (:data:`PATHS`)."""
    return PATHS[request.param]


def make_splits(kind, m, rng):
    if kind == "standard":
        return kfold(m, 5, rng)
    if kind == "inverted":
        return inverted_kfold(m, 5, rng)
    # parts that neither partition the rows nor are disjoint (user-given iterables may do this)
    return [(rng.choice(m, 20, replace=False), rng.choice(m, 15, replace=False)) for _ in range(3)]


@pytest.mark.parametrize("kind", SPLIT_KINDS)
def test_value_matches_naive_cv(kind, paths):
    rng = np.random.default_rng(0)
    m, p = 60, 7
    Z, y = rng.normal(size=(m, p)), rng.normal(size=m)
    splits = make_splits(kind, m, rng)
    res = ridge_cv_grad(Z, y, splits, 0.03, paths=paths)
    assert res.value == pytest.approx(naive_cv(Z, y, splits, 0.03), rel=1e-10)
    assert ridge_cv_grad(Z, y, splits, 0.03, grad=False, paths=paths).value == pytest.approx(res.value, rel=1e-14)


def test_prepare_splits_detects_complements():
    rng = np.random.default_rng(1)
    sp = prepare_splits(kfold(30, 5, rng) + inverted_kfold(30, 3, rng) + [([0, 1, 2], [3, 4])], 30)
    assert [s.complement for s in sp] == [True] * 8 + [False]


def test_inverted_split_trains_on_one_fold():
    rng = np.random.default_rng(2)
    splits = inverted_kfold(103, 5, rng)
    train_sizes = sorted(len(tr) for tr, _ in splits)
    assert train_sizes == [20, 20, 21, 21, 21]
    for tr, va in splits:
        assert len(va) > 3 * len(tr)
        assert np.intersect1d(tr, va).size == 0 and np.union1d(tr, va).size == 103
    # the training parts are the folds: they partition the rows
    assert np.array_equal(np.sort(np.concatenate([tr for tr, _ in splits])), np.arange(103))


@pytest.mark.parametrize("kind", SPLIT_KINDS)
def test_generic_dZ_and_dlam_match_finite_differences(kind, paths):
    rng = np.random.default_rng(3)
    m, p, lam, h = 40, 5, 0.02, 1e-6
    Z, y = rng.normal(size=(m, p)), rng.normal(size=m)
    splits = prepare_splits(make_splits(kind, m, rng), m)
    res = ridge_cv_grad(Z, y, splits, lam, paths=paths)
    fd = np.empty_like(Z)
    for i in range(m):
        for j in range(p):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[i, j] += h
            Zm[i, j] -= h
            fd[i, j] = (ridge_cv_grad(Zp, y, splits, lam, False, paths=paths).value
                        - ridge_cv_grad(Zm, y, splits, lam, False, paths=paths).value) / (2 * h)
    assert rel_err(res.dZ, fd) < 1e-5
    hl = 1e-7
    fd_lam = (ridge_cv_grad(Z, y, splits, lam + hl, False, paths=paths).value
              - ridge_cv_grad(Z, y, splits, lam - hl, False, paths=paths).value) / (2 * hl)
    assert rel_err(res.dlam, fd_lam) < 1e-5


@pytest.mark.parametrize("kind", SPLIT_KINDS)
@pytest.mark.parametrize("with_fixed_and_scale", [False, True])
def test_trig_gradients_match_finite_differences(kind, with_fixed_and_scale, paths):
    rng = np.random.default_rng(4)
    m, d, n, lam, h = 50, 3, 4, 1e-3, 1e-6
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    W = rng.normal(size=(d, n))
    splits = prepare_splits(make_splits(kind, m, rng), m)
    fixed = np.column_stack([np.ones(m), rng.normal(size=m)]) if with_fixed_and_scale else None
    scale = rng.uniform(0.5, 2.0, n) if with_fixed_and_scale else None

    def value(W_, lam_, scale_):
        return trig_cv_grad(X, y, W_, lam_, splits, fixed, scale_, grad=False, paths=paths).value

    res = trig_cv_grad(X, y, W, lam, splits, fixed, scale, paths=paths)
    fd_W = np.empty_like(W)
    for idx in np.ndindex(W.shape):
        Wp, Wm = W.copy(), W.copy()
        Wp[idx] += h
        Wm[idx] -= h
        fd_W[idx] = (value(Wp, lam, scale) - value(Wm, lam, scale)) / (2 * h)
    assert rel_err(res.dW, fd_W) < 1e-5
    hl = 1e-4 * lam
    fd_lam = (value(W, lam + hl, scale) - value(W, lam - hl, scale)) / (2 * hl)
    assert rel_err(res.dlam, fd_lam) < 1e-5
    s0 = np.ones(n) if scale is None else scale
    fd_s = np.empty(n)
    for j in range(n):
        sp, sm = s0.copy(), s0.copy()
        sp[j] += h
        sm[j] -= h
        fd_s[j] = (value(W, lam, sp) - value(W, lam, sm)) / (2 * h)
    assert rel_err(res.dscale, fd_s) < 1e-5


def test_all_paths_agree():
    rng = np.random.default_rng(6)
    Z, y = rng.normal(size=(45, 4)), rng.normal(size=45)
    for kind in SPLIT_KINDS:
        splits = prepare_splits(make_splits(kind, 45, rng), 45)
        assert (splits.fold is not None) == (kind != "partial")
        a = ridge_cv_grad(Z, y, splits, 0.01, paths=PATHS["loop"])
        for name in ("kfold-blocks", "batched", "folds"):
            b = ridge_cv_grad(Z, y, splits, 0.01, paths=PATHS[name])
            np.testing.assert_allclose(a.split_values, b.split_values, rtol=1e-10)
            np.testing.assert_allclose(a.dZ, b.dZ, rtol=1e-8, atol=1e-12)
            assert a.dlam == pytest.approx(b.dlam, rel=1e-8)


@pytest.mark.parametrize("paths, kind, p, taken", [
    (PATHS["loop"], "standard", 4, None), (PATHS["batched"], "standard", 4, "_ridge_cv_grad_batched"),
    (PATHS["folds"], "inverted", 4, "_ridge_cv_grad_folds"), (PATHS["folds"], "partial", 4, "_ridge_cv_grad_batched"),
    (PATHS["kfold-blocks"], "standard", 4, "_ridge_cv_grad_kfold"), (PATHS["kfold-blocks"], "inverted", 4, None),
    (Paths(), "standard", 8, "_ridge_cv_grad_folds"), (Paths(), "standard", 9, "_ridge_cv_grad_kfold"),
])
def test_the_paths_argument_chooses_the_implementation(paths, kind, p, taken, monkeypatch):
    """The default Paths: GFC's 3-column designs take the per-fold sums, ALC's wide ones the
    block-wise k-fold path; None: the per-split loop."""
    calls = []
    for name in ("_ridge_cv_grad_batched", "_ridge_cv_grad_folds", "_ridge_cv_grad_kfold"):
        original = getattr(cvgrad, name)
        monkeypatch.setattr(cvgrad, name, lambda *a, _f=original, _n=name, **k: calls.append(_n) or _f(*a, **k))
    rng = np.random.default_rng(7)
    Z, y = rng.normal(size=(40, p)), rng.normal(size=40)
    ridge_cv_grad(Z, y, make_splits(kind, 40, rng), 0.01, paths=paths)
    assert calls == ([taken] if taken else [])


def test_trig_design_layout():
    """The design is [fixed, s·sin, s·cos]: its CV value equals the generic one on that matrix."""
    rng = np.random.default_rng(5)
    X, y, W = rng.normal(size=(30, 2)), rng.normal(size=30), rng.normal(size=(2, 3))
    s = np.array([0.5, 1.0, 2.0])
    S, C = trig_features(X, W)
    fixed = np.ones((30, 1))
    splits = kfold(30, 3, rng)
    Z = np.hstack([fixed, S * s, C * s])
    assert trig_cv_grad(X, y, W, 0.1, splits, fixed, s).value == pytest.approx(
        naive_cv(Z, y, splits, 0.1), rel=1e-10)


def test_inverted_blocks_on_shuffled_rows_equal_inverted_kfold():
    """GFC shuffles its rows and uses contiguous folds: the same splits as inverted_kfold."""
    from rfbench.methods.cvgrad import inverted_blocks

    m, k = 23, 5
    order = np.random.default_rng(3).permutation(m)
    expected = inverted_kfold(m, k, np.random.default_rng(3))
    blocks = inverted_blocks(m, k)
    assert blocks.fold_side == "tr" and blocks.fold_layout()[0] is None  # already contiguous
    for (tr, va), sp in zip(expected, blocks, strict=True):
        assert set(order[sp.tr]) == set(tr) and set(order[sp.va]) == set(va)


@pytest.mark.parametrize("kind", ["standard", "inverted"])
def test_contiguous_folds_reorders_rows_without_changing_the_cv_error(kind, paths):
    from rfbench.methods.cvgrad import contiguous_folds

    rng = np.random.default_rng(8)
    m = 53
    X, y, W = rng.normal(size=(m, 3)), rng.normal(size=m), rng.normal(size=(3, 4))
    splits = prepare_splits(make_splits(kind, m, rng), m)
    blocks, Xs, ys = contiguous_folds(splits, X, y)
    assert blocks.fold_layout()[0] is None and blocks.fold_side == splits.fold_side
    a = trig_cv_grad(X, y, W, 1e-3, splits, scale=np.linspace(0.5, 2, 4), paths=paths)
    b = trig_cv_grad(Xs, ys, W, 1e-3, blocks, scale=np.linspace(0.5, 2, 4), paths=paths)
    assert a.value == pytest.approx(b.value, rel=1e-12)
    np.testing.assert_allclose(a.dW, b.dW, rtol=1e-9)
    np.testing.assert_allclose(a.dscale, b.dscale, rtol=1e-9)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0, 1e6])
def test_sincos_agrees_with_numpy_to_an_ulp(scale):
    from rfbench.methods.cvgrad import sincos

    A = np.random.default_rng(9).normal(size=(200, 7)) * scale
    A[0, :4] = [0.0, np.pi, np.pi / 2, -np.pi]
    s, c = sincos(A)
    np.testing.assert_allclose(s, np.sin(A), rtol=0, atol=4e-16)
    np.testing.assert_allclose(c, np.cos(A), rtol=0, atol=4e-16)
    out = np.zeros((200, 14))
    s2, c2 = sincos(A, out[:, :7], out[:, 7:])      # written into column blocks of a design
    assert np.shares_memory(s2, out) and np.array_equal(out[:, :7], s) and np.array_equal(out[:, 7:], c)


def test_factored_gradient_contractions_equal_the_materialised_ones():
    """trig_cv_grad forms dZ = U V one block of rows at a time (one block, or many small ones);
    both must equal the gradient from the explicit dZ of the per-split loop."""
    rng = np.random.default_rng(10)
    m = 80
    X, y, W = rng.normal(size=(m, 3)), rng.normal(size=m), rng.normal(size=(3, 5))
    fixed, scale = rng.normal(size=(m, 1)), np.linspace(0.3, 1.7, 5)
    splits = prepare_splits(make_splits("standard", m, rng), m)
    ref = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale, paths=PATHS["loop"])
    for elems in (10**9, 1):        # one block; blocks of 64 rows (80 = 64 + 16)
        got = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale,
                           paths=Paths(small_p=0, fold_path=True, row_block_elems=elems))
        assert got.value == pytest.approx(ref.value, rel=1e-12)
        np.testing.assert_allclose(got.dW, ref.dW, rtol=1e-9, atol=1e-14)
        np.testing.assert_allclose(got.dscale, ref.dscale, rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("kind", ["standard", "inverted"])
def test_one_frequency_cv_equals_the_generic_trig_gradient(kind):
    """GFC's padded fast path against the generic per-split computation (unequal fold sizes)."""
    from rfbench.methods.cvgrad import OneFrequencyCV

    rng = np.random.default_rng(11)
    m = 47
    X, y, f = rng.normal(size=(m, 4)), rng.normal(size=m), rng.normal(size=m)
    w = rng.normal(size=4)
    splits = prepare_splits(make_splits(kind, m, rng), m)
    fast = OneFrequencyCV(X, y, f, splits)
    for lam in (1e-6, 1e-2):
        value, dw, dlam = fast(w, lam)
        ref = trig_cv_grad(X, y, w[:, None], lam, splits, fixed=f[:, None])
        assert value == pytest.approx(ref.value, rel=1e-11)
        np.testing.assert_allclose(dw, ref.dW[:, 0], rtol=1e-9, atol=1e-13)
        assert dlam == pytest.approx(ref.dlam, rel=1e-9)
        assert fast(w, lam, grad=False)[0] == pytest.approx(value, rel=1e-12)
    with pytest.raises(ValueError, match="fold-structured"):
        OneFrequencyCV(X, y, f, make_splits("partial", m, rng))


def test_workspace_reuse_gives_identical_results_across_calls():
    """A workspace kept over an optimisation must not leak one call's arrays into the next."""
    from rfbench.methods.cvgrad import Workspace

    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((60, 3)), rng.standard_normal(60)
    splits = [(np.setdiff1d(np.arange(60), f), f) for f in np.array_split(rng.permutation(60), 4)]
    work = Workspace()
    for _ in range(3):
        W, scale = rng.standard_normal((3, 5)), rng.uniform(0.5, 2.0, 5)
        fixed = np.ones((60, 1))
        fresh = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale)
        reused = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale, work=work)
        assert reused.value == fresh.value and reused.dlam == fresh.dlam
        np.testing.assert_array_equal(reused.dW, fresh.dW)
        np.testing.assert_array_equal(reused.dscale, fresh.dscale)


@pytest.mark.parametrize("n_threads, d", [(2, 3), (3, 3), (2, 17)])
def test_fold_parallel_pool_agrees_with_the_serial_evaluation(n_threads, d):
    """The pooled path (row shares, folds and row blocks on threads, NumPy's Cholesky) is the same
    arithmetic grouped differently: equal to rounding, with and without gradient, odd fold sizes,
    several row blocks."""
    from rfbench.methods.cvgrad import RowPool, Workspace

    paths = Paths(row_block_elems=1)            # row blocks of 64 rows: two blocks
    rng = np.random.default_rng(4)
    m = 97                                   # folds of 20/20/19/19/19 rows, odd halves
    X, y = rng.standard_normal((m, d)), rng.standard_normal(m)
    splits = [(np.setdiff1d(np.arange(m), f), f) for f in np.array_split(rng.permutation(m), 5)]
    W, scale, fixed = rng.standard_normal((d, 6)) / np.sqrt(d), rng.uniform(0.5, 2.0, 6), np.ones((m, 1))
    with RowPool(n_threads) as pool:
        for grad in (True, False):
            serial = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale, grad=grad, paths=paths)
            pooled = trig_cv_grad(X, y, W, 1e-3, splits, fixed=fixed, scale=scale, grad=grad,
                                  work=Workspace(pool), paths=paths)
            assert pooled.value == pytest.approx(serial.value, rel=1e-12)
            if grad:
                assert pooled.dlam == pytest.approx(serial.dlam, rel=1e-10)
                np.testing.assert_allclose(pooled.dW, serial.dW, rtol=1e-10, atol=1e-13)
                np.testing.assert_allclose(pooled.dscale, serial.dscale, rtol=1e-10, atol=1e-13)


def test_float32_gram_matrices_lose_digits_as_the_ridge_shrinks():
    """The float32 Gram option measured by bench/perf/alc_precision.py: with a ridge term far above
    float32's rounding of ZᵀZ it agrees with the float64 path to ~1e-6, and the loss grows as λ
    shrinks (the reason ALC keeps float64; docs/history/alc.md)."""
    rng = np.random.default_rng(3)
    m, p = 600, 41
    X = rng.standard_normal((m, 3))
    # low frequencies: nearly collinear columns, an ill-conditioned Gram matrix (cond ~ 1e12)
    Z = np.hstack([np.ones((m, 1)), np.sin(X @ rng.standard_normal((3, p - 1)) * 0.3)])
    y = Z[:, 1] - 0.5 * Z[:, 7] + 0.1 * rng.standard_normal(m)
    splits, Z, y = cvgrad.contiguous_folds(kfold(m, 5, rng), Z, y)
    errors = []
    for lam in (1e-2, 1e-6):
        ref = cvgrad._ridge_cv_grad_kfold(Z, y, splits, lam, True)
        low = cvgrad._ridge_cv_grad_kfold(Z, y, splits, lam, True, gram_dtype=np.float32)
        errors.append((abs(low.value - ref.value) / ref.value, rel_err(low.dZ, ref.dZ)))
    assert errors[0][0] < 1e-6 and errors[0][1] < 1e-4
    assert errors[1][1] > 100 * errors[0][1]          # measured: 3.8e-6 at λ = 1e-2, 3.6e-2 at 1e-6


def test_in_place_cholesky_is_scipys_factor_bit_for_bit_and_keeps_its_jitter_fallback():
    """The k-fold path factors each fold's matrix where it lies (LAPACK on P.T): the factor must be
    SciPy's cho_factor of the same matrix exactly, and a singular matrix must get the same jitter."""
    rng = np.random.default_rng(5)
    A = rng.standard_normal((40, 12))
    singular = A[:5].T @ A[:5]                                  # rank 5: only the jitter factors it
    assert scipy.linalg.lapack.dpotrf(singular)[1] > 0
    for P in (A.T @ A + 0.1 * np.eye(12), singular):
        ref_c, ref_lower = cvgrad._cho_factor(P.copy())
        buf = np.empty_like(P)
        c, lower = cvgrad._cho_factor_in_place(lambda out, P=P: np.copyto(out, P), buf)
        assert lower == ref_lower is False
        assert np.shares_memory(c, buf)                     # no copy was made
        np.testing.assert_array_equal(np.triu(c), np.triu(ref_c))
        b = rng.standard_normal(12)
        np.testing.assert_array_equal(scipy.linalg.cho_solve((c, lower), b),
                                      scipy.linalg.cho_solve((ref_c, ref_lower), b))


@pytest.mark.parametrize("lam", [0.03, 1e-7])
def test_the_dual_k_fold_path_on_a_design_wider_than_its_training_parts(lam, monkeypatch):
    """p > m_tr (à la carte's n = 500 on a few hundred rows): the k-fold path solves every fold in its
    m_tr × m_tr kernel system; value, dZ and dλ equal the primal path's and the naive ridge CV, and
    the gradient its finite differences. A small λ (the null space's eigenvalue μ = m_tr λ) too."""
    rng = np.random.default_rng(11)
    m, p = 30, 50
    Z, y = rng.normal(size=(m, p)), rng.normal(size=m)
    raw = kfold(m, 5, rng)
    splits = prepare_splits(raw, m)
    taken = []
    original = cvgrad._dual_fold_solver
    monkeypatch.setattr(cvgrad, "_dual_fold_solver", lambda *a: taken.append(1) or original(*a))
    dual = ridge_cv_grad(Z, y, splits, lam, paths=PATHS["kfold-dual"])
    assert taken                                            # the dual path ran
    primal = ridge_cv_grad(Z, y, splits, lam, paths=PATHS["kfold-blocks"])
    assert len(taken) == 1                                  # and the primal did not
    # the naive ridge in its kernel form (well conditioned here) is the reference: at λ = 1e-7 the
    # p × p systems (the naive primal, the primal path) lose about 9 digits, the dual none (checked
    # once against 40-digit arithmetic: dual 5e-16, primal path 1.9e-9, per-split loop 4.8e-10)
    assert dual.value == pytest.approx(naive_cv_kernel_form(Z, y, raw, lam), rel=1e-12)
    assert primal.value == pytest.approx(naive_cv(Z, y, raw, lam), rel=1e-8)
    np.testing.assert_allclose(dual.split_values, primal.split_values, rtol=1e-8)
    assert rel_err(dual.dZ, primal.dZ) < 1e-7
    hl = lam * 1e-3                                        # dλ against finite differences of the dual's value
    fd_lam = (ridge_cv_grad(Z, y, splits, lam + hl, False, paths=PATHS["kfold-dual"]).value
              - ridge_cv_grad(Z, y, splits, lam - hl, False, paths=PATHS["kfold-dual"]).value) / (2 * hl)
    assert dual.dlam == pytest.approx(fd_lam, rel=1e-5)
    # the primal's dλ = −Σ m_tr tᵀc / k meets t's null-space part, of size 1/μ, with the rounding of c
    # there (exactly 0 in the dual): 3 % off at λ = 1e-7, 1e-9 at 0.03
    assert dual.dlam == pytest.approx(primal.dlam, rel=1e-7 if lam > 1e-3 else 0.05)
    assert ridge_cv_grad(Z, y, splits, lam, grad=False, paths=PATHS["kfold-dual"]).value == pytest.approx(dual.value, rel=1e-14)
    if lam > 1e-3:                                          # finite differences of a well-posed ridge
        h, i, j = 1e-6, 3, 7
        Zp, Zm = Z.copy(), Z.copy()
        Zp[i, j] += h
        Zm[i, j] -= h
        fd = (ridge_cv_grad(Zp, y, splits, lam, False, paths=PATHS["kfold-dual"]).value
              - ridge_cv_grad(Zm, y, splits, lam, False, paths=PATHS["kfold-dual"]).value) / (2 * h)
        assert dual.dZ[i, j] == pytest.approx(fd, rel=1e-5)
    # as narrow as the training parts or narrower: the primal, whatever the flag says
    taken.clear()
    ridge_cv_grad(Z[:, :20], y, splits, lam, paths=PATHS["kfold-dual"])
    assert not taken


def test_the_dual_path_in_the_trig_design_of_a_la_carte():
    """trig_cv_grad (à la carte's objective) through the dual and the primal k-fold path on a wide
    trigonometric design: the same value and frequency gradient (what L-BFGS-B sees)."""
    rng = np.random.default_rng(12)
    m, d, n = 40, 3, 30                                    # p = 2n = 60 > m_tr = 32
    X, y = rng.normal(size=(m, d)), rng.normal(size=m)
    W = rng.normal(size=(d, n))
    splits = prepare_splits(kfold(m, 5, rng), m)
    a = trig_cv_grad(X, y, W, 1e-3, splits, paths=PATHS["kfold-dual"])
    b = trig_cv_grad(X, y, W, 1e-3, splits, paths=PATHS["kfold-blocks"])
    assert a.value == pytest.approx(b.value, rel=1e-10)
    assert rel_err(a.dW, b.dW) < 1e-8 and a.dlam == pytest.approx(b.dlam, rel=1e-8)
