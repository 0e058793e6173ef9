"""Result cells (rfbench/reporting/cells.py): the metric table, completeness, common folds and screens, the
--methods/--datasets filters, and how report and plot use them on a screen (3 of 10 folds)."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rfbench.errors import UsageError
from rfbench.registry import load as load_registry
from rfbench.reporting import cells, plot, report
from rfbench.store import RunDir
from tests.records import as_record

DATASETS = ("kinematics", "bank", "pumadyn", "ailerons", "elevators", "friedman")


def frame(folds=range(10), methods=(("a", 0.0), ("b", 1.0), ("c", 2.0)), ns=(100,), seed=0, metric="rmse100"):
    """Done records of a cv-o10-i5 run: method j is worse by its offset, with noise."""
    rng = np.random.default_rng(seed)
    rows = []
    for d, ds in enumerate(DATASETS):
        for method, offset in methods:
            for n in ns:
                for fold in folds:
                    rows.append({"dataset": ds, "method": method, "n_features": n, "fold": fold, "seed": 0,
                                 "status": "done", "metric": metric, "n_train": 90, "n_test": 10,
                                 "task": "regression", "total_s": 1.0, "protocol": "cv-o10-i5",
                                 "error": 5 + d + offset + rng.normal(0, 0.6)})
    return pd.DataFrame(rows)


# -- the metric table --------------------------------------------------------------------------------------------------

def test_every_metric_the_protocol_records_has_a_label_unit_and_direction():
    from rfbench.protocol import metric_name

    codes = {metric_name(task, scaling) for task in ("regression", "classification")
             for scaling in ("range", "standard", "pm1", "stored")}
    # no code is shown raw; rmse-std is the report's own (gp layout --relative: RMSE / std(y))
    assert codes | {"rmse-std"} == set(cells.METRICS)
    assert [m for m in codes if cells.metric(m).higher_is_better] == ["accuracy"]
    assert cells.metric("mse100").axis_label == "test MSE × 100"
    assert cells.metric("error").axis_label == "misclassification rate (%)"
    assert cells.higher_is_better(["accuracy"]) and not cells.higher_is_better(["accuracy", "rmse100"])
    assert not cells.higher_is_better([])
    assert cells.axis_label(["rmse100", "accuracy"]) == "error / accuracy"
    assert cells.metric(float("nan")).label == "error"          # not recorded


def test_error_vs_n_axis_shows_the_metric_label_not_its_code():
    df = frame(ns=(100, 500), metric="mse100")
    fig = plot.error_vs_n_figure(df)
    labels = {ax.get_ylabel() for ax in fig.axes if ax.get_visible()} - {""}
    assert labels == {"test MSE × 100"}


# -- completeness, common folds, screen labels ------------------------------------------------------------------------

def test_completeness_counts_every_seed_of_the_dataset():
    df = pd.concat([frame(), frame().assign(seed=1)])
    df = df[~((df["method"] == "b") & (df["seed"] == 1) & (df["fold"] >= 7))]     # b's seed 1: 7 of 10
    df = df[~((df["method"] == "c") & (df["seed"] == 1))]                         # c never ran seed 1
    comp = cells.completeness(df)
    row = comp.loc[("kinematics", 100, "a")]
    assert (row["folds"], row["expected"], row["complete"]) == (20, 20, True)
    assert not comp.loc[("kinematics", 100, "b"), "complete"] and comp.loc[("kinematics", 100, "b"), "folds"] == 17
    assert not comp.loc[("kinematics", 100, "c"), "complete"]      # 10 folds, but of one seed of two
    assert set(cells.complete_cells(df)["method"]) == {"a"}
    # a spec's own count overrides the keys; 0 = unknown, every cell complete
    assert cells.completeness(df, folds_per_seed=7)["complete"].sum() == 2 * len(DATASETS)
    assert cells.completeness(df, folds_per_seed=0)["complete"].all()


def test_fold_ranges_and_screen_labels():
    assert cells.fold_ranges([5, 0, 2, 1]) == "0-2,5"
    same = [pd.Index([0, 1, 2], name="fold")] * 3
    assert cells.screen_label(same, 10) == "screen: folds 0-2 of 10"
    with_seeds = [pd.MultiIndex.from_product([[0, 1], [0, 1, 2]], names=["seed", "fold"])]
    assert cells.screen_label(with_seeds, 10) == "screen: folds 0-2 of 10"
    assert cells.screen_label([pd.Index([4])], 10) == "screen: fold 4 of 10"
    assert cells.screen_label([pd.Index([0, 1]), pd.Index([0, 1, 2, 3])], 10) == \
        "screen: 2-4 of 10 folds in common per dataset"
    a, b = pd.Series(1.0, index=[0, 1, 2, 5]), pd.Series(1.0, index=[1, 2, 3, 5])
    assert list(cells.common_index([a, b])) == [1, 2, 5]


# -- filters -----------------------------------------------------------------------------------------------------------

def test_select_keeps_the_named_cells_and_refuses_unknown_names():
    df = frame()
    out = cells.select(df, ["a", "c"], ["bank"])
    assert set(out["method"]) == {"a", "c"} and set(out["dataset"]) == {"bank"} and len(out) == 20
    assert cells.select(df) is df
    with pytest.raises(UsageError, match=r"--methods: zz not in these results \(they have a, b, c\)"):
        cells.select(df, ["a", "zz"])
    with pytest.raises(UsageError, match="--datasets: nope not in"):
        cells.select(df, None, ["nope"])
    with pytest.raises(UsageError, match="--methods names nothing"):
        cells.select(df, [])


# -- screens in report and plot ----------------------------------------------------------------------------------------

def test_a_screen_of_three_folds_gets_wilcoxon_rows_on_those_folds():
    df = frame(folds=range(3))
    cells_, errors, _ = report.summarise(df)
    assert all(c.partial for c in cells_.values())
    rows = {r["pair"]: r for r in report.wilcoxon_table(cells_, ["a", "b", "c"], [100], errors=errors)}
    assert set(rows) == {"a vs b", "a vs c", "b vs c"}
    assert {r["protocol"] for r in rows.values()} == {"screen: folds 0-2 of 10"}
    means = df.groupby(["method", "dataset"])["error"].mean()
    want = sps.wilcoxon(means["a"].to_numpy() - means["c"].to_numpy())
    assert rows["a vs c"]["T"] == want.statistic and rows["a vs c"]["datasets"] == 6
    text = report.render(df, "markdown", registry=load_registry())
    assert text.startswith("Screen: folds 0-2 of 10 (not the full protocol).") and "| protocol" in text


def test_a_screen_against_a_complete_cell_uses_only_the_common_folds():
    """a is complete, b has folds 0-2: the a-vs-b Wilcoxon row takes a's mean over folds 0-2 only."""
    df = frame(methods=(("a", 0.0), ("b", 0.3)))
    df = df[(df["method"] == "a") | (df["fold"] < 3)]
    cells_, errors, _ = report.summarise(df)
    row, = report.wilcoxon_table(cells_, ["a", "b"], [100], errors=errors)
    on3 = df[df["fold"] < 3].groupby(["method", "dataset"])["error"].mean()
    T, p, N = report.stats.wilcoxon(on3["a"].to_numpy(), on3["b"].to_numpy())
    assert (row["T"], row["p"], row["N (non-ties)"]) == (T, p, N)
    full_a = df[df["method"] == "a"].groupby("dataset")["error"].mean()
    assert not np.allclose(full_a.sort_index(), on3["a"].sort_index())      # the screen is not the full mean
    # the t-test marks against b use folds 0-2 of a too: same as a report of folds 0-2 alone
    only3 = report.summarise(df[df["fold"] < 3])[0]
    assert {k: c.bold for k, c in cells_.items()} == {k: c.bold for k, c in only3.items()}


def test_complete_runs_have_no_protocol_column_and_no_screen():
    df = frame()
    cells_, errors, _ = report.summarise(df)
    rows = report.wilcoxon_table(cells_, ["a", "b", "c"], [100], errors=errors)
    assert rows and all("protocol" not in r for r in rows)
    assert "screen" not in report.render(df, "markdown", registry=load_registry()).lower()


def test_cd_diagram_of_a_screen_is_on_the_common_folds_and_says_so(tmp_path):
    df = frame(folds=range(3))
    df = df[~((df["dataset"] == "bank") & (df["method"] == "b") & (df["fold"] == 2))]   # bank: folds 0-1 in common
    res = plot.cd_analysis(df, 100)
    assert res.screen == "screen: 2-3 of 10 folds in common per dataset" and res.n_datasets == 6
    bank = df[(df["dataset"] == "bank") & (df["fold"] < 2)].groupby("method")["error"].mean()
    pd.testing.assert_series_equal(res.scores.loc["bank"], bank, check_names=False)
    assert "screen" in res.title() and "not the full protocol" in res.title()
    # complete: no screen, the same diagram as before
    assert plot.cd_analysis(frame(), 100).screen is None
    written, _ = plot.make_plots(df, "cd", tmp_path)
    assert [p.name for p in written] == ["cd-diagram-n100.png"]


def _write_dir(path, df):
    run = RunDir(path).ensure()
    for rec in df.to_dict("records"):
        run.write_record(as_record(rec))
    run.write_results_csv()
    return path


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "rfbench.cli", *args], capture_output=True, text=True)


def test_cli_screen_plots_and_filters(tmp_path):
    d = _write_dir(tmp_path / "screen", frame(folds=range(3)))
    out = _cli("plot", str(d), "--kind", "cd", "--output", str(tmp_path / "plots"))
    assert out.returncode == 0 and (tmp_path / "plots" / "cd-diagram-n100.png").is_file(), out.stderr
    out = _cli("report", str(d), "--format", "csv", "--methods", "a,c", "--datasets", "bank,friedman")
    csv = pd.read_csv(pd.io.common.StringIO(out.stdout))
    assert set(csv["method"]) == {"a", "c"} and set(csv["dataset"]) == {"bank", "friedman"}
    for command in (["report", str(d)], ["plot", str(d), "--output", str(tmp_path / "p2")]):
        bad = _cli(*command, "--methods", "a,gfc")
        assert bad.returncode == 2 and bad.stderr.strip().splitlines() == [
            "rfbench: error: --methods: gfc not in these results (they have a, b, c)"]
        assert "Traceback" not in bad.stderr
    assert not (tmp_path / "p2").exists()


def test_check_filters_the_cells_and_the_variants_it_names():
    """The GFC paper's Table 1 without the variants run beside it (gfc-all-rows, gfc-prior)."""
    from conftest import ROOT

    out = subprocess.run([sys.executable, "-m", "rfbench.cli", "check", "results/gfc2016-table1", "--methods", "gfc,alc",
                          "--datasets", "kinematics,bank"], capture_output=True, text=True, cwd=ROOT)
    rows = [line.split()[:3] for line in out.stdout.splitlines() if line.startswith(("kinematics ", "bank "))]
    assert sorted(rows) == sorted([d, m, n] for d in ("kinematics", "bank") for m in ("gfc", "alc") for n in ("100", "500"))
    assert "variants:" not in out.stdout and out.returncode == 1          # bank's gfc cells fail
    bad = subprocess.run([sys.executable, "-m", "rfbench.cli", "check", "results/gfc2016-table1", "--datasets", "mnist"],
                         capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr.startswith("rfbench: error: --datasets: mnist not in the cells of spec "
                                                         "gfc2016-table1") and len(bad.stderr.splitlines()) == 1


def test_subset_keeps_the_declared_order_and_refuses_unknown_or_empty_requests():
    """One rule for every '--methods/--datasets/--features: a subset of what is there' (report,
    plot, check, compare, reproduce)."""
    assert cells.subset(None, ["c", "a", "b"], "--methods", "x") == ["c", "a", "b"]
    assert cells.subset(["b", "c", "b"], ["c", "a", "b"], "--methods", "x") == ["c", "b"]
    with pytest.raises(UsageError, match=r"^--features: 7 not in baseline t \(they have 100, 500\)$"):
        cells.subset([7], [100, 500], "--features", "baseline t")
    with pytest.raises(UsageError, match="--datasets names nothing"):
        cells.subset([], ["a"], "--datasets", "x")
    from rfbench.experiments import reproduce
    from rfbench.experiments.spec import load_spec

    spec = load_spec("gfc2016-table1", load_registry())
    assert reproduce.run_groups(spec, ["alc"], ["bank"]) == [(["bank"], ["alc"])]
    with pytest.raises(UsageError, match=r"--methods: rff-gauss not in spec gfc2016-table1 \(they have gfc, alc"):
        reproduce.run_groups(spec, ["rff-gauss"])
