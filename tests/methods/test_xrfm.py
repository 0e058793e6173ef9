"""The xRFM wrapper (rfbench/methods/xrfm.py) is xrfm.xRFM at its defaults, fitted on the first inner
fold's training part and tuned on its held-out part, one fit for every budget; without the optional
extra, a run that names it is one line naming the extra. Skipped where xrfm is not installed, except
the test that simulates its absence."""

import sys

import numpy as np
import pytest
from sklearn.utils._param_validation import InvalidParameterError

from rfbench.contract import accepts_device, chosen_params, shares_budgets
from rfbench.methods.xrfm import XRFMClassifier, XRFMRegressor


@pytest.fixture
def xrfm():
    return pytest.importorskip("xrfm", reason="xrfm is not installed (pip install xrfm)")


def _problem(m=260, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.2 * rng.normal(size=m)
    return X[:200], y[:200], X[200:], y[200:]


def test_regressor_is_xrfm_used_directly_with_the_same_settings_and_seed(xrfm):
    X, y, X_te, y_te = _problem()
    folds = [(np.arange(50, 200), np.arange(50)), (np.arange(50), np.arange(50, 200))]
    ours = XRFMRegressor(n_features=500, budgets=[100, 500], cv=folds, random_state=7).fit(X, y)
    theirs = xrfm.xRFM(device="cpu", random_state=7, verbose=False).fit(X[50:], y[50:], X[:50], y[:50])
    expected = theirs.predict(X_te).reshape(-1)
    pred = ours.predict(X_te)
    assert pred.dtype == np.float64
    np.testing.assert_array_equal(pred, expected)
    assert np.mean((pred - y_te) ** 2) < 0.5 * np.var(y_te)          # it learned something
    # one fit serves every budget: the same model, the same chosen parameters
    assert shares_budgets(XRFMRegressor) and accepts_device(XRFMRegressor)
    for n in (100, 500):
        np.testing.assert_array_equal(ours.predict(X_te, budget=n), expected)
        assert chosen_params(ours, n) == ours.best_params_
    assert ours.best_params_["n_leaves"] == 1 and len(ours.best_params_["best_iter"]) == 1
    assert ours.tune_time_ == 0.0
    with pytest.raises(ValueError, match="budget 200 was not fitted"):
        ours.predict(X_te, budget=200)


def test_classifier_keeps_its_labels(xrfm):
    X, y, X_te, y_te = _problem()
    labels = np.where(y > np.median(y), "hi", "lo")
    clf = XRFMClassifier(n_features=10, cv=3, random_state=1).fit(X, labels)
    assert list(clf.classes_) == ["hi", "lo"]
    pred = clf.predict(X_te)
    assert set(pred) <= {"hi", "lo"}
    assert np.mean(pred == np.where(y_te > np.median(y), "hi", "lo")) > 0.7
    proba = clf.predict_proba(X_te)
    assert proba.shape == (len(X_te), 2)
    np.testing.assert_array_equal(clf.classes_[proba.argmax(axis=1)], pred)


@pytest.mark.parametrize("params, match", [
    ({"n_features": 0}, "n_features"),
    ({"cv": 1}, "cv"),
    ({"random_state": "x"}, "random_state"),
    ({"n_jobs": 1.5}, "n_jobs"),
    ({"device": "tpu"}, "device"),
])
def test_parameter_constraints(params, match):
    """Checked when fit starts, before xrfm is looked for."""
    X, y, _, _ = _problem(m=220)
    with pytest.raises(InvalidParameterError, match=match):
        XRFMRegressor(**params).fit(X, y)


def test_without_the_extra_a_run_is_one_line_naming_it(tmp_path, monkeypatch, capsys):
    """xrfm absent (simulated): the estimator module still imports, fit names the extra, and a run that
    names only the method stops with one stderr line naming the extra, exit 2, before --out is written
    (the registry entry's ``requires``, checked before the module is imported)."""
    from cli_errors import one_line_error

    monkeypatch.setitem(sys.modules, "xrfm", None)
    X, y, _, _ = _problem(m=220)
    with pytest.raises(ModuleNotFoundError, match=r"needs the optional extra: pip install xrfm") as exc:
        XRFMRegressor(cv=2).fit(X, y)
    assert exc.value.name == "xrfm"
    line = one_line_error(capsys, ["run", "--methods", "xrfm", "--datasets", "breiman-generated",
                                   "--features", "5", "--outer-folds", "2", "--inner-folds", "2",
                                   "--quiet", "--out", str(tmp_path / "o")],
                          "method 'xrfm' needs the package 'xrfm', which is not installed here")
    assert line.endswith("(pip install xrfm; in rfbench's checkout: pip install -e '.[xrfm]')")
    assert not (tmp_path / "o").exists()


def test_a_cpu_fit_over_its_memory_limit_refuses_in_one_line_before_xrfm_starts(xrfm, monkeypatch):
    """The estimate is quadratic in the fitting rows up to xRFM's CPU leaf (60 000 rows); a fit over
    ``max_memory`` is one MemoryError line and xRFM is never constructed; on a GPU (xRFM sizes its
    leaves to the card) and with ``max_memory=None`` there is no check."""
    from rfbench.methods import xrfm as wrapper

    kernel = [wrapper.host_memory_bytes(rows) - wrapper.FIXED_BYTES for rows in (1000, 2000)]
    assert kernel[1] == pytest.approx(4 * kernel[0])
    assert wrapper.host_memory_bytes(90_000) == wrapper.host_memory_bytes(wrapper.MAX_LEAF_ROWS)
    # keggundirected's inner fit (45 798 rows) is over the 8 GiB default, a 20 000-row fit is not
    assert wrapper.host_memory_bytes(45_798) > wrapper.MAX_MEMORY > wrapper.host_memory_bytes(20_000)
    monkeypatch.setattr(xrfm, "xRFM", lambda **kw: pytest.fail("xRFM was constructed"))
    X, y, _, _ = _problem()
    with pytest.raises(MemoryError) as info:
        XRFMRegressor(cv=5, random_state=0, max_memory=1000).fit(X, y)
    message = str(info.value)
    assert "\n" not in message and "160 rows" in message and "max_memory" in message
    XRFMRegressor(device="cuda", max_memory=1000)._check_memory(45_798)       # no check on a GPU
    XRFMRegressor(max_memory=None)._check_memory(45_798)
