"""Report: bold marks, Wilcoxon rows (same n and across n) against scipy on a known table."""

import io

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rfbench import report
from rfbench.errors import UsageError


def frame():
    rng = np.random.default_rng(0)
    rows = []
    for d, ds in enumerate(["kinematics", "bank", "pumadyn", "ailerons", "elevators", "friedman"]):
        for method, offset in (("a", 0.0), ("b", 1.0)):
            for n, gain in ((100, 0.0), (500, -0.5)):
                for fold in range(10):
                    rows.append({"dataset": ds, "method": method, "n_features": n, "fold": fold,
                                 "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                                 "task": "regression", "total_s": 1.0,
                                 "error": 5 + d + offset + gain + 0.05 * rng.normal()})
    return pd.DataFrame(rows)


def test_bold_marks_the_significantly_better_method_only():
    cells, _, higher = report.summarise(frame())
    assert not higher
    assert all(cells[(d, n, "a")].bold and not cells[(d, n, "b")].bold
               for (d, n, m) in cells if m == "a")


def test_wilcoxon_rows_agree_with_scipy_and_cross_n():
    df = frame()
    cells, _, _ = report.summarise(df)
    rows = report.wilcoxon_table(cells, ["a", "b"], [100, 500], comparisons=report.parse_comparisons("a@500:b@100"))
    assert [r["pair"] for r in rows] == ["a vs b", "a vs b", "a@500 vs b@100"]
    means = df.groupby(["dataset", "method", "n_features"])["error"].mean()
    ds = sorted(df["dataset"].unique())
    ref = sps.wilcoxon([means[(d, "a", 500)] for d in ds], [means[(d, "b", 100)] for d in ds])
    assert rows[2]["T"] == ref.statistic == 0 and rows[2]["p"] == pytest.approx(ref.pvalue)
    assert rows[2]["wins_a"] == 6 and rows[2]["T_crit_95"] == 0  # exact 5 % value for N = 6


def test_bad_comparison_spec_is_a_usage_error():
    with pytest.raises(UsageError, match="gfc@500:alc@100"):
        report.parse_comparisons("gfc500-alc")


def test_welch_win_tie_loss_counts_confirmed_differences_only():
    """a is clearly better on one dataset, clearly worse on one, and equal up to noise on one."""
    rng = np.random.default_rng(1)
    rows = []
    for ds, shift in (("kinematics", -1.0), ("bank", 1.0), ("pumadyn", 0.0)):
        noise = rng.normal(size=10) * 0.1
        for method, offset in (("a", shift), ("b", 0.0)):
            for fold in range(10):
                rows.append({"dataset": ds, "method": method, "n_features": 100, "fold": fold,
                             "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                             "task": "regression", "total_s": 1.0,
                             "error": 5 + offset + noise[fold] + 0.01 * rng.normal()})
    cells, errors, _ = report.summarise(pd.DataFrame(rows))
    row = report.wilcoxon_table(cells, ["a", "b"], [100], errors=errors)[0]
    assert row["welch W/T/L (a)"] == "1/1/1"
    # on accuracy, higher is better: the same numbers read as the opposite record
    assert report.ttest_record(errors, ["kinematics", "bank", "pumadyn"], "a", 100, "b", 100, True) == "1/1/1"
    assert report.ttest_record(errors, ["kinematics"], "a", 100, "b", 100, True) == "0/0/1"


def test_timing_table_reports_preprocessing_share():
    df = frame().assign(preprocess_s=0.5, tune_s=1.0, fit_s=1.0, predict_s=0.1)
    text = report.render(df, "text")
    assert "t_pp / (t_tune + t_fit)" in text and "0.25" in text
    assert "t_pp" not in report.render(frame(), "text")   # no pre-processing recorded: no table


def test_m_column_is_the_rows_of_one_task_when_fold_sizes_differ():
    df = frame()
    df.loc[df["fold"] % 3 == 0, ["n_train", "n_test"]] = [91, 9]   # uneven folds of 100 rows
    csv = pd.read_csv(io.StringIO(report.render(df, "csv")))
    assert set(csv["m"]) == {100}


def test_status_counts_asked_done_failed_and_estimates_the_time_left(tmp_path):
    import json as _json

    from rfbench import status
    from rfbench.store import RunDir

    run = RunDir(tmp_path / "run").ensure()
    protocol = {"name": "cv", "outer_folds": 3, "inner_folds": 3, "seed": 0, "repeats": 20, "test_size": 0.3,
                "max_samples": None}
    # two invocations: all folds of rff-gauss on kinematics, then fold 0 of pbrff (classification only:
    # not asked on a regression set) and of rff-gauss on bank
    run.write_run_info({"started_at": "2026-01-01T10:00:00+00:00", "protocol": protocol, "datasets": ["kinematics"],
                        "methods": ["rff-gauss"], "features": [100], "folds": None})
    run.write_run_info({"started_at": "2026-01-01T11:00:00+00:00", "protocol": protocol,
                        "datasets": ["bank", "kinematics"], "methods": ["rff-gauss", "pbrff"], "features": [100],
                        "folds": [0]})
    for fold, st, secs in ((0, "done", 10.0), (1, "error", 1.0)):
        run.write_record({"dataset": "kinematics", "method": "rff-gauss", "n_features": 100, "fold": fold, "seed": 0,
                          "protocol": "cv-o3-i3", "status": st, "error": 1.0, "total_s": secs})
    table = status.status([run.path]).set_index("method")
    row = table.loc["rff-gauss"]
    assert (row["asked"], row["done"], row["failed"], row["left"]) == (4, 1, 1, 3)   # 3 kinematics + 1 bank
    # kinematics folds 1, 2 at its own median (10 s); bank (8192 × 32 vs 8192 × 8) scaled by size: 40 s
    assert row["left_core_h"] * 3600 == pytest.approx(10 + 10 + 40) and row["by_size"] == 1
    assert "pbrff" not in table.index
    assert "1 of 4 tasks done" in status.render(table.reset_index())
    (run.records_dir / "bank.claim").write_text(_json.dumps({"host": "another-machine", "pid": 1}))
    shown = status.render(status.status([run.path]))
    assert "(1 task(s) running now)" in shown and "100.0" not in shown   # counts stay integers
    assert _json.loads((run.path / "runs.jsonl").read_text().splitlines()[1])["folds"] == [0]


def test_caption_names_the_protocol_unit():
    df = frame()
    assert "over outer folds" in report.render(df.assign(protocol="cv-o10-i5"), "text")
    text = report.render(df.assign(protocol="splits-r20-t0.3-i5"), "text")
    assert "over random splits" in text and "one split" in text and "outer fold" not in text


def test_accuracy_tables_are_labelled_accuracy_not_error():
    df = frame().assign(metric="accuracy", task="classification")
    text = report.render(df, "markdown")
    assert text.startswith("Accuracy (%)") and "n=100 a accuracy" in text and "a error" not in text
    assert "Accuracy & Walltime" in report.render(df, "latex")
    assert "n=100 a error" in report.render(frame(), "markdown")


def test_a_cell_still_running_is_marked_and_left_out_of_the_wilcoxon_test():
    """Method a at n = 500 on friedman has 3 of the protocol's 10 outer folds: the table says so,
    and the a-vs-b test at n = 500 runs on the five complete datasets (the n = 100 one on six)."""
    df = frame().assign(protocol="cv-o10-i5")
    df = df[~((df["dataset"] == "friedman") & (df["method"] == "a") & (df["n_features"] == 500) & (df["fold"] >= 3))]
    cells, _, _ = report.summarise(df)
    assert cells[("friedman", 500, "a")].partial and not cells[("friedman", 100, "a")].partial
    rows = {r["n"]: r for r in report.wilcoxon_table(cells, ["a", "b"], [100, 500])}
    assert rows[100]["datasets"] == 6 and rows[500]["datasets"] == 5
    text = report.render(df, "markdown")
    assert "[3/10]" in text and "[k/K]" in text and "[10/10]" not in text
    assert "[k/K]" not in report.render(frame().assign(protocol="cv-o10-i5"), "markdown")


def fold_effect_frame():
    """b is 0.1 worse than a on every fold, hidden under a fold-to-fold spread of 1 that both share;
    fold 9 of b is missing (a run in progress) and fold 9 of a is an outlier in a's favour that the
    paired test must not use."""
    rng = np.random.default_rng(2)
    effect = rng.normal(0, 1, 10)
    rows = []
    for method, offset in (("a", 0.0), ("b", 0.1)):
        for fold in range(10 if method == "a" else 9):
            rows.append({"dataset": "kinematics", "method": method, "n_features": 100, "fold": fold,
                         "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                         "task": "regression", "total_s": 1.0, "protocol": "cv-o10-i5",
                         "error": 5 + effect[fold] + offset + 0.01 * rng.normal() - 50 * (fold == 9)})
    return pd.DataFrame(rows).sample(frac=1, random_state=0)     # records in any order


def test_paired_test_pairs_folds_by_number_and_only_common_ones():
    df = fold_effect_frame()
    welch_cells, _, _ = report.summarise(df)
    paired_cells, errors, _ = report.summarise(df, test="paired")
    assert not welch_cells[("kinematics", 100, "a")].bold         # the fold spread hides it from Welch
    assert paired_cells[("kinematics", 100, "a")].bold and not paired_cells[("kinematics", 100, "b")].bold
    a, b = errors[("kinematics", 100, "a")], errors[("kinematics", 100, "b")]
    assert list(a.index) == list(range(10)) and list(b.index) == list(range(9))
    ref = sps.ttest_rel(a.loc[:8], b)                               # folds 0..8, paired by number
    assert report.stats.paired(*a.align(b, join="inner")) == pytest.approx((ref.statistic, ref.pvalue))
    with pytest.raises(UsageError, match="unknown test 'sign'"):
        report.summarise(df, test="sign")


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex", "html"])
def test_every_format_says_which_t_test_bolds_cells(fmt):
    df = frame().assign(protocol="cv-o10-i5")
    welch = report.render(df, fmt)
    paired = report.render(df, fmt, test="paired", alpha=0.01)
    assert "significantly better than every other method at that n" in welch
    assert "Welch's unequal-variance t-test over the outer folds, p = 0.05" in welch and "paired t-test" not in welch
    assert "paired t-test on the per-fold differences over the outer folds" in paired and "p = 0.01" in paired
    assert "Welch" not in paired
    table_end = welch.index("friedman") if fmt != "latex" else welch.index(r"\end{tabular}")
    assert welch.index("bold: significantly" if fmt == "text" else "Bold: significantly") > table_end
    csv = pd.read_csv(io.StringIO(report.render(df, "csv", test="paired")))
    assert set(csv["bold_test"]) == {"paired p=0.05"}
