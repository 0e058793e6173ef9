"""The EERF paper's feature maps (rfbench/methods/featuremaps.py): kernels in closed form, scores,
draws, and the three estimators (EERF, LKRF, RKS) on every map."""

import numpy as np
import pytest
from scipy.spatial import cKDTree

from rfbench.methods import featuremaps as fm
from rfbench.methods.eerf import EERFClassifier, EERFRegressor, draw_candidate_pool
from rfbench.methods.lkrf import LKRFClassifier
from rfbench.methods.rff import RKSClassifier, RKSRegressor
from rfbench.methods.rfkit import _kth_neighbour_distance, knn_bandwidth


def _points(seed=0, d=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((4, d)), rng.standard_normal((3, d))


@pytest.mark.parametrize("order", [0, 1, 2])
def test_arccos_closed_form_on_the_diagonal_is_a_gaussian_moment(order):
    """k_n(x, x) = 2 E[(ω·x)^{2n} H(ω·x)] = E[(ω·x)^{2n}] = ‖x‖^{2n} (2n − 1)!! for ω ~ N(0, I): an
    identity independent of the J_n formulas (J_n(0) = π, 3π, …)."""
    x = np.array([[0.3, -1.2, 2.0]])
    moment = {0: 1.0, 1: 1.0, 2: 3.0}[order] * float(np.sum(x**2)) ** order
    assert fm.expected_kernel("arccos", x, x, order)[0, 0] == pytest.approx(moment, rel=1e-12)


@pytest.mark.parametrize("order", [0, 1, 2])
def test_arccos_features_average_to_the_cho_saul_kernel(order):
    """The mean of z(x)·z(y) over many draws converges to Cho & Saul's k_n in closed form (orders 0, 1,
    2), within 5 Monte-Carlo standard errors; orthogonal and opposite pairs included (θ = π/2, π)."""
    X, Y = _points(1)
    X = np.vstack([X, [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]]])
    Y = np.vstack([Y, [[0.0, 2.0, 0.0], [-1.5, 0.0, 0.0]]])
    rng = np.random.default_rng(order)
    W, _ = fm.draw("arccos", 200_000, 3, rng)
    px = fm.raw_features(X, W, None, "arccos", order)        # unscaled φ
    py = fm.raw_features(Y, W, None, "arccos", order)
    prods = 2.0 * px[:, None, :] * py[None, :, :]           # 2 φ(x) φ(y): mean → k_n
    mc, se = prods.mean(axis=2), prods.std(axis=2) / np.sqrt(W.shape[0])
    exact = fm.expected_kernel("arccos", X, Y, order)
    assert np.all(np.abs(mc - exact) <= 5 * se + 1e-12)
    # the scaled features of one draw: Z Zᵀ is that average (√(2/M) each)
    Zx = fm.feature_matrix(X, W, None, "arccos", order)
    Zy = fm.feature_matrix(Y, W, None, "arccos", order)
    np.testing.assert_allclose(Zx @ Zy.T, mc, rtol=1e-9, atol=1e-12)
    assert exact[-2, -2] == pytest.approx(fm.expected_kernel("arccos", [[1, 0, 0]], [[0, 2, 0]], order)[0, 0])
    if order >= 1:                      # θ = π: no ω has both ω·x > 0 and ω·y > 0
        assert exact[-1, -1] == pytest.approx(0.0, abs=1e-12)


def test_gaussian_and_linear_features_average_to_their_kernels():
    X, Y = _points(2)
    sigma = 1.7
    W, b = fm.draw("gaussian", 300_000, 3, np.random.default_rng(5), sigma)
    K = fm.feature_matrix(X, W, b) @ fm.feature_matrix(Y, W, b).T
    np.testing.assert_allclose(K, fm.expected_kernel("gaussian", X, Y, sigma=sigma), atol=0.01)
    # linear: each coordinate once gives xᵀy exactly; uniform draws average to it
    d = X.shape[1]
    Z = fm.feature_matrix(X, np.arange(d), None, "linear") @ fm.feature_matrix(Y, np.arange(d), None, "linear").T
    np.testing.assert_allclose(Z, X @ Y.T, rtol=1e-12)
    idx, phases = fm.draw("linear", 200_000, d, np.random.default_rng(6))
    assert phases is None and idx.min() == 0 and idx.max() == d - 1
    Zx = fm.feature_matrix(X, idx, None, "linear")
    np.testing.assert_allclose(Zx @ fm.feature_matrix(Y, idx, None, "linear").T, X @ Y.T, atol=0.05)
    # a column selection is copied before scaling: X itself is never touched
    X0 = X.copy()
    fm.feature_matrix(X, np.arange(d), None, "linear")
    np.testing.assert_array_equal(X, X0)


def test_heaviside_is_half_at_zero():
    P = np.array([[-1.0, 0.0, 2.0]])
    W = np.eye(3)
    np.testing.assert_array_equal(fm.raw_features(P, W, None, "arccos", 0), [[0.0, 0.5, 1.0]])
    np.testing.assert_array_equal(fm.raw_features(P, W, None, "arccos", 2), [[0.0, 0.0, 4.0]])


@pytest.mark.parametrize("feature_map,order", [("gaussian", 1), ("arccos", 0), ("arccos", 2), ("linear", 1)])
def test_scores_equal_a_naive_loop(feature_map, order):
    """Ŝ(ω) = (1/N₀) Σ_n y_n φ(x_n, ω), one response or C columns, any block size."""
    rng = np.random.default_rng(3)
    X0 = rng.standard_normal((9, 4))
    W, b = fm.draw(feature_map, 7, 4, rng, 1.3)

    def phi(x, m):
        if feature_map == "gaussian":
            return np.cos(sum(W[m, j] * x[j] for j in range(4)) + b[m])
        if feature_map == "linear":
            return x[W[m]]
        t = sum(W[m, j] * x[j] for j in range(4))
        return (t**order if t > 0 else 0.0) if order else float(t > 0)

    for y0 in (rng.standard_normal(9), rng.standard_normal((9, 3))):
        naive = np.zeros((7,) + y0.shape[1:])
        for m in range(7):
            for n in range(9):
                naive[m] += y0[n] * phi(X0[n], m) / 9
        for block in (2, 2000):
            np.testing.assert_allclose(fm.scores(X0, y0, W, b, feature_map, order, block), naive,
                                       rtol=1e-12, atol=1e-14)


def test_gaussian_pool_keeps_its_order_of_draws():
    """σ rule, subsample, then N(0, σ⁻²) frequencies and U[0, 2π) phases: the RNG stream EERF always
    used (the eerf2018-claim CI reference depends on it); the other maps draw no σ and no phases."""
    X = np.random.default_rng(0).standard_normal((300, 3))
    pool = draw_candidate_pool(X, 50, 30, np.random.default_rng(9))
    rng = np.random.default_rng(9)
    sigma = knn_bandwidth(X, 50, 2000, rng)
    sub = np.sort(rng.choice(300, size=30, replace=False))
    W = rng.standard_normal((50, 3)) / sigma
    b = rng.uniform(0.0, 2.0 * np.pi, size=50)
    np.testing.assert_array_equal(pool.subsample, sub)
    np.testing.assert_array_equal(pool.frequencies, W)
    np.testing.assert_array_equal(pool.phases, b)
    arc = draw_candidate_pool(X, 50, 30, np.random.default_rng(9), feature_map="arccos")
    assert arc.sigma == 1.0 and arc.phases is None and arc.frequencies.shape == (50, 3)


def test_brute_force_neighbours_equal_the_tree():
    """Above 64 inputs the σ rule takes exact brute-force distances: the same k-th neighbours as a
    kd-tree, duplicate rows (distance 0) included."""
    rng = np.random.default_rng(4)
    X = rng.standard_normal((400, 80))
    X[10] = X[11]                                     # a duplicate: a neighbour at distance 0
    q = X[rng.choice(400, 60, replace=False)]
    tree = cKDTree(X).query(q, k=51)[0][:, -1]
    np.testing.assert_allclose(_kth_neighbour_distance(X, q, 51, block=7), tree, rtol=1e-10)
    assert knn_bandwidth(X, 50, None) == pytest.approx(cKDTree(X).query(X, k=51)[0][:, -1].mean(), rel=1e-10)


@pytest.mark.parametrize("feature_map,order", [("arccos", 1), ("arccos", 2), ("linear", 1)])
def test_estimators_run_on_every_map(feature_map, order):
    """EERF, LKRF and RKS on a non-Gaussian map: the kept features are drawn from that map's P₀ and
    the fit is the ridge on them (predictions = Z·coef + intercept)."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((240, 5))
    y = np.where(X[:, 0] * X[:, 1] + 0.3 * X[:, 2] > 0, 1, 0)
    for est in (EERFClassifier(n_features=12, feature_map=feature_map, arccos_order=order, random_state=0),
                LKRFClassifier(n_features=12, feature_map=feature_map, arccos_order=order, random_state=0,
                               rhos=(1e-3, 1.0)),
                RKSClassifier(n_features=12, feature_map=feature_map, arccos_order=order, random_state=0)):
        est.fit(X, y)
        assert est.phases_ is None and est.sigma_ == 1.0
        Z = fm.feature_matrix(X, est.frequencies_, None, feature_map, order,
                              getattr(est, "feature_weights_", None))
        np.testing.assert_allclose(est.decision_function(X), Z @ est.coef_ + est.intercept_, rtol=1e-10)
        assert set(est.predict(X)) <= {0, 1}
    reg = RKSRegressor(n_features=40, feature_map="linear", random_state=0).fit(X, X @ np.arange(5.0))
    assert reg.score(X, X @ np.arange(5.0)) > 0.99         # the linear map holds the linear model
    EERFRegressor(n_features=10, feature_map="arccos", arccos_order=2, random_state=0).fit(X, X[:, 0] ** 2)


def test_bad_feature_map_parameters_are_one_line_errors():
    X, y = np.random.default_rng(0).standard_normal((50, 3)), np.arange(50) % 2
    # the estimators' _parameter_constraints: one InvalidParameterError (a ValueError) naming what is valid
    with pytest.raises(ValueError, match=r"'feature_map' parameter of EERFClassifier must be a str among "
                                         r"\{'gaussian', 'arccos', 'linear'\}\. Got 'laplace' instead"):
        EERFClassifier(n_features=5, feature_map="laplace").fit(X, y)
    with pytest.raises(ValueError, match=r"'arccos_order' parameter of RKSClassifier must be an int in the range \[0, inf\)"):
        RKSClassifier(n_features=5, feature_map="arccos", arccos_order=1.5).fit(X, y)
    with pytest.raises(ValueError, match="n_candidates"):
        LKRFClassifier(n_features=10, n_candidates=5).fit(X, y)
    with pytest.raises(ValueError, match="orders 0, 1, 2"):
        fm.expected_kernel("arccos", X, X, 3)
