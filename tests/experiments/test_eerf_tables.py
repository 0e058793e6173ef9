"""The EERF paper's tables: the `fixed` protocol on a dataset's own split, the
EERF datasets (Adult's encoding, MNIST, Letter), several classes, the per-dataset settings, the wide
published tables in the check, and the committed results against the published numbers."""

import json
import pickle
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rfbench import protocol as proto
from rfbench import registry
from rfbench.errors import UsageError
from rfbench.experiments import check
from rfbench.experiments.spec import load_spec
from rfbench.methods import featuremaps as fm
from rfbench.methods.eerf import EERFClassifier
from rfbench.methods.lkrf import LKRFClassifier
from rfbench.methods.rff import RKSClassifier
from rfbench.methods.rfkit import multiclass_cv_curves, ridge_fit
from rfbench.registry import load as load_registry

MIRROR = Path(__import__("os").environ.get("RFBENCH_DATA_DIR", "")) / "uci-eerf"
needs_mirror = pytest.mark.skipif(not MIRROR.is_dir(), reason="the uci-eerf mirror (RFBENCH_DATA_DIR) is not here")
ROOT = Path(__file__).resolve().parents[2]


# ---- protocol `fixed` -----------------------------------------------------------------------------

def test_fixed_protocol_is_the_files_split_every_repeat():
    sizes = proto.HoldoutSizes(7, 3, fixed=True)
    p = proto.Protocol("fixed", repeats=4, inner_folds=2)
    splits = proto.outer_splits(p, np.zeros(10), "classification", sizes)
    assert len(splits) == p.n_outer == 4
    for tr, te in splits:
        np.testing.assert_array_equal(tr, np.arange(7))
        np.testing.assert_array_equal(te, np.arange(7, 10))
    assert p.key() == "fixed-r4-i2" and proto.outer_count_of_key(p.key()) == 4
    assert p.target_scaling == "pm1"
    # the holdout protocol takes the files' split once instead of a permutation
    (tr, te), = proto.outer_splits(proto.Protocol("holdout"), np.zeros(10), "regression", sizes)
    np.testing.assert_array_equal(te, np.arange(7, 10))
    # a seeded split of the same sizes is still a permutation (SALSA): unchanged
    (tr, te), = proto.outer_splits(proto.Protocol("holdout"), np.zeros(10), "regression", proto.HoldoutSizes(7, 3))
    assert not np.array_equal(te, np.arange(7, 10))


def test_fixed_protocol_with_max_samples_keeps_the_kept_rows_sides():
    """--max-samples keeps a seeded sorted subset: its training rows still come first."""
    sizes = proto.HoldoutSizes(600, 400, fixed=True)
    p = proto.Protocol("fixed", repeats=2, max_samples=100, seed=3)
    kept = proto.subsample_index(1000, 100, 3)
    (tr, te), _ = proto.outer_splits(p, np.zeros(100), "regression", sizes)
    assert len(tr) == int(np.sum(kept < 600)) and len(te) == int(np.sum(kept >= 600))
    np.testing.assert_array_equal(np.concatenate([tr, te]), np.arange(100))


def test_fixed_protocol_refuses_what_it_cannot_split():
    p = proto.Protocol("fixed", repeats=2)
    with pytest.raises(UsageError, match="own train/test split"):
        proto.outer_splits(p, np.zeros(10), "regression", proto.HoldoutSizes(7, 3))
    with pytest.raises(UsageError, match="own train/test split"):
        proto.outer_splits(p, np.zeros(10), "regression", None)
    with pytest.raises(UsageError, match="another version"):
        proto.outer_splits(p, np.zeros(12), "regression", proto.HoldoutSizes(7, 3, fixed=True))


def test_holdout_sizes_stay_a_pair_and_pickle_with_their_flag():
    h = proto.HoldoutSizes(5, 2, fixed=True)
    assert h == (5, 2) and sum(h) == 7 and h[1] == 2
    back = pickle.loads(pickle.dumps(h))
    assert back == (5, 2) and back.fixed is True
    assert pickle.loads(pickle.dumps(proto.HoldoutSizes(5, 2))).fixed is False


def test_pm1_scaling_and_error_in_percent():
    y = np.array([2.0, 4.0, 10.0])
    sc = proto.Scaler.fit(np.ones((3, 1)), y, "regression", "pm1")
    np.testing.assert_allclose(sc.y(y), [-1.0, -0.5, 1.0])
    assert proto.metric_name("classification", "pm1") == proto.metric_name("multiclass", "pm1") == "error"
    assert proto.score("multiclass", np.array([0, 1, 2, 2]), np.array([0, 1, 1, 2]), "pm1") == 25.0
    assert proto.score("regression", np.zeros(2), np.array([0.1, -0.1]), "pm1") == pytest.approx(1.0)
    # the other protocols' measures are unchanged
    assert proto.metric_name("classification") == "accuracy" and proto.metric_name("regression") == "rmse100"


def test_registry_split_files_must_cover_the_rows(tmp_path, monkeypatch):
    path = tmp_path / "datasets.yaml"
    entry = ("suites: {}\ndatasets:\n  toy:\n    task: regression\n    suites: []\n    shape: [10, 2]\n"
             "    target: y\n    generator: friedman\n    holdout: {train: 6, test: %s, split: %s}\n")
    path.write_text(entry % (4, "files"))
    assert registry.read_datasets_file(path)[0]["toy"].holdout.fixed
    for test, split, msg in ((3, "files", "must cover the 10 rows"), (4, "sideways", "random or files")):
        path.write_text(entry % (test, split))
        with pytest.raises(UsageError, match=msg):
            registry.read_datasets_file(path)


def test_multiclass_runs_only_native_estimators_and_per_dataset_parameters():
    assert registry.load().method("eerf-paper").supports("multiclass")
    assert not registry.load().method("rff-gauss").supports("multiclass")       # a regressor: skipped
    assert not registry.load().method("eerf-paper-centred").supports("multiclass")
    m = registry.load().method("eerf-paper")
    assert m.params_for("eerf-letter") == {"feature_map": "arccos", "arccos_order": 2, "n_candidates": 500,
                                            "n0_fraction": 1.0}
    assert m.params_for("eerf-mnist") == {"n_candidates": 10000, "n0_fraction": 0.2}
    assert m.params_for("kinematics") == {}


# ---- several classes ------------------------------------------------------------------------------

def _three_classes(m=360, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, 4))
    y = np.digitize(X[:, 0] + 0.5 * np.sin(2 * X[:, 1]), [-0.5, 0.5])
    return X, np.array(["a", "b", "c"])[y]


def test_multiclass_score_is_the_norm_over_centred_one_hot_columns():
    X, y = _three_classes()
    est = EERFClassifier(n_features=15, m0_factor=8, n0_fraction=0.5, random_state=1).fit(X, y)
    # the same pool again: scores by a loop over classes
    from rfbench.methods.eerf import draw_candidate_pool

    pool = draw_candidate_pool(X, 120, 180, np.random.default_rng(1))
    X0, y0 = X[pool.subsample], y[pool.subsample]
    naive = np.zeros((120, 3))
    for c, label in enumerate(["a", "b", "c"]):
        col = (y0 == label) - np.mean(y == label)          # centred by the class's training frequency
        naive[:, c] = col @ np.cos(X0 @ pool.frequencies.T + pool.phases) / len(y0)
    np.testing.assert_allclose(est.scores_, naive, rtol=1e-10, atol=1e-13)
    kept = np.argsort(-np.linalg.norm(naive, axis=1), kind="stable")[:15]
    np.testing.assert_array_equal(np.sort(est.selected_), np.sort(kept))
    # one-vs-rest ridge on ±1 columns, the largest score wins
    Z = fm.feature_matrix(X, est.frequencies_, est.phases_)
    Ypm = np.where(y[:, None] == np.array(["a", "b", "c"])[None, :], 1.0, -1.0)
    coef, b = ridge_fit(Z, Ypm, est.best_params_["lambda"])
    np.testing.assert_allclose(est.decision_function(X), Z @ coef + b, rtol=1e-8, atol=1e-10)
    np.testing.assert_array_equal(est.predict(X), np.array(["a", "b", "c"])[np.argmax(Z @ coef + b, axis=1)])
    assert np.mean(est.predict(X) == y) > 0.7


def test_multiclass_cv_curves_equal_per_fold_ridge():
    X, y = _three_classes(200, 3)
    Z = fm.feature_matrix(X, *fm.draw("gaussian", 20, 4, np.random.default_rng(0)))
    Y = np.where(y[:, None] == np.array(["a", "b", "c"])[None, :], 1.0, -1.0)
    splits = proto.inner_splits(proto.Protocol("fixed", inner_folds=4), y, "multiclass", 0)
    lambdas = np.array([1e-4, 1e-2, 1.0])
    err, mse = multiclass_cv_curves(Z, Y, splits, lambdas)
    for j, lam in enumerate(lambdas):
        e, s = [], []
        for tr, va in splits:
            coef, b = ridge_fit(Z[tr], Y[tr], lam)
            pred = Z[va] @ coef + b
            e.append(np.mean(np.argmax(pred, 1) != np.argmax(Y[va], 1)))
            s.append(np.mean((pred - Y[va]) ** 2))
        assert err[j] == pytest.approx(np.mean(e), abs=1e-12)
        assert mse[j] == pytest.approx(np.mean(s), rel=1e-8)


def test_lkrf_multiclass_alignment_is_eerf_score_squared():
    X, y = _three_classes(240, 5)
    kw = dict(n_features=10, m0_factor=6, n0_fraction=0.5, random_state=4)
    e = EERFClassifier(**kw).fit(X, y)
    k = LKRFClassifier(rhos=(1e-2, 10.0), **kw).fit(X, y)
    n0 = k.best_params_["n0"]
    np.testing.assert_allclose(k.scores_, n0**2 * np.sum(e.scores_**2, axis=1), rtol=1e-10)
    assert k.predict(X).shape == (240,) and set(k.predict(X)) <= {"a", "b", "c"}


def test_rks_is_ridge_on_its_drawn_features():
    X, y = _three_classes(200, 6)
    est = RKSClassifier(n_features=30, random_state=2).fit(X, y == "a")
    assert est.preprocess_time_ == 0.0 and est.classes_.tolist() == [False, True]
    Z = fm.feature_matrix(X, est.frequencies_, est.phases_)
    coef, b = ridge_fit(Z, np.where(y == "a", 1.0, -1.0), est.best_params_["lambda"])
    np.testing.assert_allclose(est.decision_function(X), Z @ coef + b, rtol=1e-8, atol=1e-10)


def test_centred_score_changes_only_two_class_scores():
    X, y = _three_classes(300, 7)
    b = y == "a"                                          # 1 in 3 positive: an unbalanced pair
    kw = dict(n_features=10, random_state=0)
    plain, centred = EERFClassifier(**kw).fit(X, b), EERFClassifier(centred_score=True, **kw).fit(X, b)
    pm = np.where(b, 1.0, -1.0)
    mean_phi = (plain.scores_ - centred.scores_) / pm.mean()    # Ŝ(y) − Ŝ(y − ȳ) = ȳ · mean(φ)
    assert np.all(np.abs(mean_phi) <= 1.0 + 1e-12) and np.ptp(mean_phi) > 0.1
    multi = [EERFClassifier(centred_score=c, **kw).fit(X, y).scores_ for c in (False, True)]
    np.testing.assert_array_equal(multi[0], multi[1])


# ---- the datasets ---------------------------------------------------------------------------------

@needs_mirror
def test_adult_encoding_is_built_from_the_training_file():
    from rfbench.data import load
    from rfbench.data.prepare import _adult_frame, adult_encoding

    ds = registry.load().dataset("eerf-adult")
    loaded = load("eerf-adult", registry=load_registry())
    assert loaded.X.shape == (48842, 121) == ds.shape and ds.holdout == (32561, 16281) and ds.holdout.fixed
    train = _adult_frame(MIRROR / "adult" / "adult.data", False)
    cols = adult_encoding(train)
    per_attr = pd.Series([c for c, _, _ in cols]).value_counts()
    assert per_attr[["age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week"]].tolist() \
        == [5, 5, 4, 2, 2, 4]
    assert per_attr[["workclass", "occupation", "native-country"]].tolist() == [8, 14, 41]   # '?' is none
    X_tr = loaded.X[:32561]
    assert np.all(X_tr.sum(axis=0) > 0)                       # every column occurs in training
    # one value per attribute, none for a missing one: 14 ones at most
    assert X_tr.sum(axis=1).max() == 14 and X_tr.sum(axis=1).min() >= 11
    assert int((loaded.y[:32561] > 0).sum()) == 7841 and int((loaded.y[32561:] > 0).sum()) == 3846


@needs_mirror
def test_mnist_and_letter_are_multiclass_in_file_order():
    from rfbench.data import load

    mnist = load("eerf-mnist", registry=load_registry())
    assert mnist.X.shape == (70000, 784) and mnist.X.max() == 255.0
    assert np.bincount(mnist.y[:60000].astype(int)).tolist()[:3] == [5923, 6742, 5958]
    letter = load("eerf-letter", registry=load_registry())
    assert letter.X.shape == (20000, 16) and len(np.unique(letter.y)) == 26
    first = (MIRROR / "letter" / "letter-recognition.data").read_text().split("\n", 1)[0]
    assert letter.y[0] == ord(first[0]) - ord("A")          # codes follow the sorted letters
    assert registry.load().dataset("eerf-letter").holdout == (15000, 5000)


# ---- the check against the published tables -------------------------------------------------------

def test_wide_published_table_melts_into_cells():
    spec = load_spec("eerf2018-table5", load_registry())
    pub = check.published_table(spec)
    adult = pub[pub["dataset"] == "Adult"].set_index("method")
    assert adult.loc["EERF", "error_pct"] == "16.16" and adult.loc["LKRF", "error_pct"] == "16.34"
    assert adult.loc["LKRF", "t_pp_s"] == "0.08" and adult.loc["EERF", "M0"] == "2000"
    assert len(pub) == 2 * 7


def _records(ds, method, errors, n=100, pre=0.1, fit=1.0, pred=0.05):
    return [{"dataset": ds, "method": method, "n_features": n, "fold": f, "seed": 0, "protocol": "fixed-r10-i5",
             "status": "done", "error": e, "total_s": fit + pred, "fit_s": fit, "predict_s": pred, "tune_s": 0.0,
             "preprocess_s": pre, "params": json.dumps({})} for f, e in enumerate(errors)]


def test_check_judges_in_standard_errors_and_shows_time_ratios():
    spec = load_spec("eerf2018-table3", load_registry())
    rng = np.random.default_rng(0)
    ok = 16.16 + 0.06 * rng.standard_normal(10)                  # EERF Adult: 16.16 (SE 0.02)
    rows = (_records("eerf-adult", "eerf-paper", ok - ok.mean() + 16.17, pre=0.38, fit=2.0)
            + _records("eerf-adult", "rks-paper", np.full(10, 17.9), pre=0.0, fit=1.61))
    table = check.compare(spec, pd.DataFrame(rows), load_registry())
    cell = table[(table["dataset"] == "eerf-adult") & ~table["variant"]].set_index("method")
    assert cell.loc["eerf-paper", "status"] == "pass"                           # 0.5 SE
    assert cell.loc["rks-paper", "status"] == "fail"                             # (17.9 − 17.37) / 0.06
    assert cell.loc["rks-paper", "diff_stds"] == pytest.approx((17.9 - 17.37) / 0.06)
    assert cell.loc["eerf-paper", "t_pp_s"] == pytest.approx(0.38)
    assert cell.loc["eerf-paper", "t_train_s"] == pytest.approx(2.0 - 0.38)    # fit_s − preprocess_s
    text = check.render(table, spec)
    assert "0.38 / 0.19 = 2×" in text and "standard error of the mean" in text
    assert "16.17 ± " in text                                   # ours shown as mean ± standard error
    # the spec's reason is printed under the failing cell only
    reasons = text.split("why the failing cells miss")[1]
    assert "eerf-adult RKS (n = 100): measured: RKS selects nothing" in reasons and "eerf-adult EERF" not in reasons
    # the MNIST cells have no records: missing; the variant has no multiclass estimator: no MNIST row
    assert set(table.loc[table["dataset"] == "eerf-mnist", "status"]) == {"missing"}
    assert not ((table["dataset"] == "eerf-mnist") & table["variant"]).any()


# ---- the committed results ------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["eerf2018-table3", "eerf2018-table5"])
def test_committed_check_matches_the_records(name):
    """check.txt is the tool's own output on the committed records (regenerated, not typed), and the
    spec's sizes are the published CSV's (M, M0, N0/N)."""
    spec = load_spec(name, load_registry())
    out = spec.results / "check.txt"
    if not out.is_file():
        pytest.skip(f"{name} has no committed results yet")
    from rfbench.experiments.reproduce import check_spec

    checked = check_spec(spec, None, load_registry())
    assert out.read_text() == f"{spec.title}\n\n{checked.text}"
    pub = check.published_table(spec).drop_duplicates("dataset").set_index("dataset")
    method = registry.load().method(spec.methods["EERF"])
    for paper, ds in spec.datasets.items():
        params = method.params_for(ds)
        assert params["n_candidates"] == int(pub.loc[paper, "M0"])
        assert params["n0_fraction"] * 100 == pytest.approx(float(pub.loc[paper, "N0_over_N_pct"]))
        assert int(pub.loc[paper, "M"]) in spec.plan.features


def test_rfbench_run_takes_the_fixed_protocol_and_refuses_it_without_a_split(tmp_path, mirror_dir):
    """`rfbench run --protocol fixed`: every repeat tests on the file's own test part (the record's
    n_test is that part's size after the subsample), and a dataset with no split of its own gets the
    one-line error naming the problem."""
    from click.testing import CliRunner

    from rfbench.cli import cli

    out = tmp_path / "run"
    res = CliRunner().invoke(cli, ["run", "--protocol", "fixed", "--repeats", "2", "--inner-folds", "2",
                                   "--datasets", "eerf-adult", "--methods", "rks-paper", "--features", "10",
                                   "--max-samples", "600", "--out", str(out), "--quiet", "--no-report"])
    assert res.exit_code == 0, res.output
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 and set(df["status"]) == {"done"} and set(df["protocol"]) == {"fixed-r2-i2-max600"}
    assert df["n_test"].nunique() == 1 and df["n_train"].nunique() == 1
    assert df["metric"].iloc[0] == registry_metric("eerf-adult")
    res = CliRunner().invoke(cli, ["run", "--protocol", "fixed", "--repeats", "2", "--datasets", "friedman-generated",
                                   "--methods", "rff-gauss", "--features", "10", "--out", str(tmp_path / "x"),
                                   "--quiet", "--no-report"])
    # a UsageError: rfbench's main prints it as the one line "rfbench: error: ..." (test_validation)
    assert isinstance(res.exception, UsageError)
    assert "protocol fixed runs on a dataset's own train/test split, and this dataset has none" in str(res.exception)
    assert not (tmp_path / "x" / "records").is_dir() or not any((tmp_path / "x" / "records").iterdir())


def registry_metric(dataset: str) -> str:
    return proto.metric_name(registry.load().dataset(dataset).task, "pm1")
