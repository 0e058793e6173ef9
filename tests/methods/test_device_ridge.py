"""The torch path of the ridge-based methods (rfbench/methods/ridge_torch.py) against
the NumPy path, on the CPU through device="torch-cpu" (CI has no GPU) and on a GPU where one is present
(the torch_device fixture).

The primitives agree with their NumPy counterparts to 1e-10 relative on small well-conditioned
problems; each estimator's fit with device="torch-cpu" chooses what device="cpu" chooses (the same
bandwidth, order, c or grid λ; a continuous λ to 1e-8 relative) and predicts with a test MSE within
1e-8 relative. The problems are well conditioned on purpose: where the CV picks a λ so small that the
curve is flat at rounding level (1e-17 on some real folds), any two LAPACKs — or OpenBLAS at one and
two threads — pick different λ, and only the test MSE stays close.
"""

import numpy as np
import pytest
from sklearn.model_selection import KFold

torch = pytest.importorskip("torch")

from rfbench.methods import device as devmod  # noqa: E402
from rfbench.methods import rfkit, ridge  # noqa: E402
from rfbench.methods import ridge_torch as rt  # noqa: E402

RTOL = 1e-10


@pytest.fixture(autouse=True)
def one_thread():
    """One BLAS/OpenMP thread and one torch thread: at these sizes more threads only wait (10× slower
    on a loaded 2-core CI machine); the comparisons do not depend on it."""
    from threadpoolctl import threadpool_limits

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        yield
    torch.set_num_threads(before)


def _problem(m=150, p=40, seed=0, classes=None):
    """Noisy enough that the CV minimum is interior (λ ≈ 0.12), not at the 1e-20 end of the search."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(m, p))
    y = Z @ rng.normal(size=p) * 0.3 + 2.0 + 1.5 * rng.normal(size=m)
    if classes == 2:
        y = np.where(y > np.median(y), 1.0, -1.0)
    elif classes:
        y = rfkit.encode_class_labels(np.digitize(y, np.quantile(y, [0.33, 0.66])))[1]
    return Z, y


def _rel(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-300)))


SPLITS = {
    "kfold": lambda m: list(KFold(5, shuffle=True, random_state=0).split(np.zeros(m))),
    "holdout": lambda m: [(np.arange(0, m - 40), np.arange(m - 40, m)), (np.arange(40, m), np.arange(0, 40))],
    "overlap": lambda m: [(np.arange(0, 100), np.arange(100, m)), (np.arange(30, m), np.arange(0, 60))],
}


@pytest.mark.parametrize("kind", sorted(SPLITS))
def test_cv_mse_path_and_curve_match_numpy(kind, torch_device):
    tdev = devmod.torch_device(torch_device)
    Z, y = _problem()
    splits = SPLITS[kind](Z.shape[0])
    lambdas = np.logspace(-6, 1, 8)
    parts = rt.fold_parts(rt.as_tensor(Z, tdev), rt.as_tensor(y, tdev), splits)
    mse, err = rt.cv_criteria(parts, lambdas)
    assert err is None and mse.shape == (1, len(splits), lambdas.size)
    assert _rel(mse[0], ridge.cv_mse_path(Z, y, splits, lambdas)) < RTOL
    numpy_curve, device_curve = ridge.CVCurve(Z, y, splits), rt.CVCurve(parts)
    assert _rel([device_curve(v) for v in lambdas], [numpy_curve(v) for v in lambdas]) < RTOL
    lam_np, err_np = ridge.select_lambda_continuous(Z, y, splits)
    lam_dev, err_dev = ridge.select_lambda_continuous(None, None, None, curve=device_curve)
    assert _rel(lam_dev, lam_np) < 1e-8 and _rel(err_dev, err_np) < RTOL


def test_eigen_quantities_give_the_numpy_coefficients(torch_device):
    """Eigenvectors are defined up to sign: compare what they give, the coefficients of every λ,
    the eigenvalues, and the validation predictions."""
    tdev = devmod.torch_device(torch_device)
    Z, y = _problem()
    splits = SPLITS["kfold"](Z.shape[0])
    parts = rt.fold_parts(rt.as_tensor(Z, tdev), rt.as_tensor(y, tdev), splits)
    _, train = ridge.split_stats(Z, y, splits)
    lambdas = np.array([1e-4, 1e-1])
    for k, st in enumerate(train):
        G_c, b_c, _, _ = st.centred(True)
        e, q, A, r, m = parts.numpy_fold(0, k)
        assert m == st.m
        assert _rel(e, np.clip(np.linalg.eigvalsh(G_c), 0, None)) < RTOL
        # the coefficients V (q / (e + mλ)), through A = (Z_va − z̄) V: validation predictions
        pred = A @ (q[:, None] / (e[:, None] + m * lambdas))
        C = ridge._eig_path(G_c, b_c, st.m, lambdas)
        va = splits[k][1]
        assert _rel(pred, (Z[va] - st.s / st.m) @ C) < 1e-9
        assert _rel(r, y[va] - st.sy / st.m) < RTOL


@pytest.mark.parametrize("intercept", [True, False])
def test_ridge_solve_matches_numpy(intercept, torch_device):
    tdev = devmod.torch_device(torch_device)
    Z, y = _problem()
    for lam in (1e-6, 1e-2):
        coef, b = rt.ridge_solve(rt.as_tensor(Z, tdev), rt.as_tensor(y, tdev), lam, intercept)
        ref_coef, ref_b = ridge.ridge_solve(Z, y, lam, intercept)
        assert _rel(coef, ref_coef) < RTOL and abs(b - ref_b) < 1e-10 * abs(ref_b) + 1e-14


@pytest.mark.parametrize("classes", [None, 2, 3])
def test_classification_criteria_match_rfkit(classes, torch_device):
    Z, y = _problem(classes=classes)
    splits = SPLITS["kfold"](Z.shape[0])
    lambdas = np.logspace(-5, 1, 7)
    primary, secondary = rfkit.cv_curves(Z, y, splits, lambdas, classify=classes is not None)
    d_primary, d_secondary = rfkit.cv_curves(Z, y, splits, lambdas, classify=classes is not None, device=torch_device)
    assert _rel(d_secondary, secondary) < RTOL
    if classes is None:
        assert _rel(d_primary, primary) < RTOL
    else:
        np.testing.assert_array_equal(d_primary, primary)      # error rates: counts of the same signs
    coef, b = rfkit.ridge_fit(Z, y, 1e-3, device=torch_device)
    ref_coef, ref_b = rfkit.ridge_fit(Z, y, 1e-3)
    assert _rel(coef, ref_coef) < RTOL and np.allclose(b, ref_b, rtol=RTOL, atol=1e-14)


def test_kernel_folds_and_solve_match_numpy(torch_device):
    tdev = devmod.torch_device(torch_device)
    from rfbench.methods.esp import esp_kernel, salsa_bandwidths

    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=90)
    E = esp_kernel(X, X, salsa_bandwidths(X), 2)
    splits = SPLITS["kfold"](90)     # training parts of 72: one batch of 5
    lambdas = np.array([1e-4, 1e-2, 1.0])
    for (w, q, P, y_va, m_tr), (tr, va) in zip(rt.kernel_fold_paths(E, y, splits, tdev), splits, strict=True):
        assert m_tr == tr.size and np.array_equal(y_va, y[va])
        pred = P @ (q[:, None] / (w[:, None] + m_tr * lambdas))
        ref = E[np.ix_(va, tr)] @ np.linalg.solve(E[np.ix_(tr, tr)][None] + m_tr * lambdas[:, None, None]
                                                  * np.eye(tr.size), np.broadcast_to(y[tr], (3, tr.size))[..., None])[..., 0].T
        assert _rel(pred, ref) < 1e-9
    alpha = rt.kernel_solve(E, y, 1e-3, tdev)
    assert _rel(alpha, np.linalg.solve(E + 90 * 1e-3 * np.eye(90), y)) < 1e-9


# --- estimators: device="torch-cpu" against device="cpu" --------------------------------------

def _data(m=300, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(m, d))
    y = np.sin(2 * X[:, 0]) * np.cos(X[:, 1]) + 0.3 * rng.normal(size=m)
    return X[:200], y[:200], X[200:], y[200:]


def _fit_both(make, data, device, continuous=("lambda",)):
    X, y, X_te, y_te = data
    cpu, dev = make("cpu").fit(X, y), make(device).fit(X, y)
    for key, value in cpu.best_params_.items():
        if key in continuous:
            assert _rel(dev.best_params_[key], value) < 1e-8, key
        elif isinstance(value, float):
            assert _rel(dev.best_params_[key], value) < 1e-8, key
        else:
            assert dev.best_params_[key] == value, key
    mse_cpu, mse_dev = (np.mean((est.predict(X_te) - y_te) ** 2) for est in (cpu, dev))
    assert _rel(mse_dev, mse_cpu) < 1e-8
    return cpu, dev


@pytest.mark.parametrize("kernel, feature_map, search", [
    ("gaussian", "phase", "cv-1d"), ("gaussian", "cos-sin", "grid"), ("laplace", "phase", "grid"),
    ("laplace", "cos-sin", "cv-1d"), ("cauchy", "phase", "cv-1d"), ("cauchy", "cos-sin", "grid")])
def test_rff_device_fit_matches_cpu(kernel, feature_map, search, torch_device):
    from rfbench.methods.rff import RFFRegressor

    cpu, dev = _fit_both(lambda d: RFFRegressor(kernel=kernel, n_features=30, feature_map=feature_map,
                                                 lambda_search=search, bandwidths=[0.3, 1.0, 3.0], cv=3,
                                                 random_state=0, device=d), _data(), torch_device)
    assert cpu.bandwidth_ == dev.bandwidth_
    if search == "grid":        # the grid's 1e-10 end is conditioning-limited: 1e-10 from λ = 1e-6 on
        assert cpu.lambda_ == dev.lambda_
        assert _rel(dev.cv_curves_, cpu.cv_curves_) < 1e-7
        assert _rel(dev.cv_curves_[:, 16:], cpu.cv_curves_[:, 16:]) < RTOL


def test_rff_device_batches_bandwidths(monkeypatch, torch_device):
    """One bandwidth per batch (a small device budget) gives the batch-of-all result."""
    from rfbench.methods.rff import RFFRegressor

    X, y, X_te, _ = _data()
    kw = dict(n_features=30, bandwidths=[0.3, 1.0, 3.0], cv=3, random_state=0, device=torch_device)
    whole = RFFRegressor(**kw).fit(X, y)
    monkeypatch.setattr(rt, "BATCH_BYTES", 1)
    assert rt.batch_size(200, 30, 3) == 1
    single = RFFRegressor(**kw).fit(X, y)
    assert single.best_params_["bandwidth"] == whole.best_params_["bandwidth"]
    assert _rel(single.predict(X_te), whole.predict(X_te)) < 1e-9


def _salsa(**kw):
    from rfbench.methods.salsa import SALSARegressor

    return lambda d: SALSARegressor(cv=3, random_state=0, device=d, **kw)


def _krr(**kw):
    from rfbench.methods.salsa import KRRRegressor

    return lambda d: KRRRegressor(cv=3, random_state=0, device=d, **kw)


@pytest.mark.parametrize("make", [_salsa(max_order=2), _salsa(threshold=100, n_features=60), _krr(c_grid=(5.0, 20.0))],
                         ids=["salsa-exact", "salsa-nystrom", "krr-c-grid"])
def test_salsa_and_krr_device_fit_matches_cpu(make, torch_device):
    X, y, X_te, y_te = _data(d=4)
    y = y + X[:, 2]
    y_te = y_te + X_te[:, 2]
    cpu, dev = _fit_both(make, (X, y, X_te, y_te), torch_device)
    assert dev.order_ == cpu.order_ and _rel(dev.cv_mse_, cpu.cv_mse_) < 1e-9
    assert [s["order"] for s in dev.order_path_] == [s["order"] for s in cpu.order_path_]


@pytest.mark.parametrize("name, task", [("eerf", "regression"), ("eerf", 2), ("eerf", 3),
                                        ("lkrf", "regression"), ("lkrf", 2), ("rks", "regression"), ("rks", 3)])
def test_eerf_lkrf_rks_device_fit_matches_cpu(name, task, torch_device):
    from rfbench.methods import eerf, lkrf, rff

    classes = {"eerf": eerf.EERFClassifier, "lkrf": lkrf.LKRFClassifier, "rks": rff.RKSClassifier}
    regressors = {"eerf": eerf.EERFRegressor, "lkrf": lkrf.LKRFRegressor, "rks": rff.RKSRegressor}
    cls = regressors[name] if task == "regression" else classes[name]
    kw = dict(n_features=30, cv=3, random_state=0)
    if name == "lkrf":
        kw["rhos"] = (1e-2, 1.0, 100.0)
    X, y, X_te, y_te = _data()
    if task != "regression":
        cut = np.quantile(np.concatenate([y, y_te]), np.linspace(0, 1, task + 1)[1:-1])
        y, y_te = np.digitize(y, cut), np.digitize(y_te, cut)
    cpu = cls(device="cpu", **kw).fit(X, y)
    dev = cls(device=torch_device, **kw).fit(X, y)
    assert dev.best_params_ == cpu.best_params_       # λ (and ρ) from grids: the same grid point
    assert _rel(dev.cv_errors_, cpu.cv_errors_) < 1e-9
    if task == "regression":
        mse_cpu, mse_dev = (np.mean((est.predict(X_te) - y_te) ** 2) for est in (cpu, dev))
        assert _rel(mse_dev, mse_cpu) < 1e-8
    else:
        assert _rel(dev.decision_function(X_te), cpu.decision_function(X_te)) < 1e-8
        np.testing.assert_array_equal(dev.predict(X_te), cpu.predict(X_te))


# --- without a GPU ---------------------------------------------------------------------------

def _estimators():
    from rfbench.methods import eerf, lkrf, rff, salsa

    return {"rff": lambda d: rff.RFFRegressor(n_features=10, cv=3, device=d),
            "rks": lambda d: rff.RKSRegressor(n_features=10, cv=3, device=d),
            "eerf": lambda d: eerf.EERFRegressor(n_features=10, cv=3, device=d),
            "lkrf": lambda d: lkrf.LKRFRegressor(n_features=10, cv=3, device=d),
            "salsa": lambda d: salsa.SALSARegressor(cv=3, device=d),
            "krr": lambda d: salsa.KRRRegressor(cv=3, device=d)}


ESTIMATORS = ("rff", "rks", "eerf", "lkrf", "salsa", "krr")


@pytest.mark.parametrize("name", ESTIMATORS)
def test_cuda_without_a_gpu_is_refused(name):
    if devmod.cuda_available():
        pytest.skip("this machine has a GPU")
    X, y, _, _ = _data()
    make = _estimators()[name]
    with pytest.raises(devmod.DeviceUnavailable, match="no CUDA GPU"):
        make("cuda").fit(X, y)
    with pytest.raises(ValueError, match=r"'device' parameter of \w+ must be one of cpu, cuda, torch-cpu"):
        make("gpu").fit(X, y)
    assert make("cpu").get_params()["device"] == "cpu"
