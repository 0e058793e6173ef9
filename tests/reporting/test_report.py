"""Report: bold marks, Wilcoxon rows (same n and across n) against scipy on a known table."""

import io
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from rfbench.errors import UsageError
from rfbench.registry import load as load_registry
from rfbench.reporting import report
from rfbench.reporting.render.common import fmt_walltime
from tests.records import as_record


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
    text = report.render(df, "text", registry=load_registry())
    assert "t_pp / (t_tune + t_fit)" in text and "0.25" in text
    assert "t_pp" not in report.render(frame(), "text", registry=load_registry())   # no pre-processing recorded: no table


def test_m_column_is_the_rows_of_one_task_when_fold_sizes_differ():
    df = frame()
    df.loc[df["fold"] % 3 == 0, ["n_train", "n_test"]] = [91, 9]   # uneven folds of 100 rows
    csv = pd.read_csv(io.StringIO(report.render(df, "csv", registry=load_registry())))
    assert set(csv["m"]) == {100}


def test_status_counts_asked_done_failed_and_estimates_the_time_left(tmp_path, mirror_dir):
    """(Needs the mirror: tasks of a dataset that cannot be had offline are counted apart, not left.)"""
    import json as _json

    from rfbench.experiments import status
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
        run.write_record(as_record({"dataset": "kinematics", "method": "rff-gauss", "n_features": 100, "fold": fold, "seed": 0,
                          "protocol": "cv-o3-i3", "status": st, "error": 1.0, "total_s": secs}))
    table = status.status([run.path], None, load_registry()).set_index("method")
    row = table.loc["rff-gauss"]
    assert (row["asked"], row["done"], row["failed"], row["left"]) == (4, 1, 1, 3)   # 3 kinematics + 1 bank
    # kinematics folds 1, 2 at its own median (10 s); bank (8192 × 32 vs 8192 × 8) scaled by size: 40 s
    assert row["left_core_h"] * 3600 == pytest.approx(10 + 10 + 40) and row["by_size"] == 1
    assert "pbrff" not in table.index
    assert "1 of 4 tasks done" in status.render(table.reset_index())
    (run.records_dir / "bank.claim").write_text(_json.dumps({"host": "another-machine", "pid": 1}))
    shown = status.render(status.status([run.path], None, load_registry()))
    assert "(1 task(s) running now)" in shown and "100.0" not in shown   # counts stay integers
    assert _json.loads((run.path / "runs.jsonl").read_text().splitlines()[1])["folds"] == [0]


def test_status_counts_a_gpu_task_but_times_the_cpu_path_only(tmp_path, mirror_dir):
    """A task a GPU computed is done (it counts) but its time is not the NumPy path's: the median and
    the time left come from the CPU tasks alone."""
    from rfbench.experiments import status
    from rfbench.store import RunDir, device_tasks

    run = RunDir(tmp_path / "run").ensure()
    protocol = {"name": "cv", "outer_folds": 3, "inner_folds": 3, "seed": 0, "repeats": 20, "test_size": 0.3,
                "max_samples": None}
    run.write_run_info({"started_at": "2026-01-01T10:00:00+00:00", "protocol": protocol, "datasets": ["kinematics"],
                        "methods": ["rff-gauss"], "features": [100], "folds": None})
    for fold, device, secs in ((0, "cpu", 10.0), (1, "cuda", 0.5)):
        run.write_record(as_record({"dataset": "kinematics", "method": "rff-gauss", "n_features": 100, "fold": fold,
                                    "seed": 0, "protocol": "cv-o3-i3", "status": "done", "error": 1.0,
                                    "total_s": secs, "device": device}))
    assert device_tasks([run.path]) == {("kinematics", "rff-gauss", 100, 1, "cv-o3-i3")}
    row = status.status([run.path], None, load_registry()).set_index("method").loc["rff-gauss"]
    assert (row["asked"], row["done"], row["left"]) == (3, 2, 1)
    assert row["median_task_s"] == 10.0 and row["left_core_h"] * 3600 == pytest.approx(10.0)


def test_caption_names_the_protocol_unit():
    df = frame()
    assert "over outer folds" in report.render(df.assign(protocol="cv-o10-i5"), "text", width=0, registry=load_registry())
    text = report.render(df.assign(protocol="splits-r20-t0.3-i5"), "text", width=0, registry=load_registry())    # prose not wrapped
    assert "over random splits" in text and "one split" in text and "outer fold" not in text


def test_accuracy_tables_are_labelled_accuracy_not_error():
    df = frame().assign(metric="accuracy", task="classification")
    text = report.render(df, "markdown", registry=load_registry())
    assert text.startswith("Accuracy (%)") and "n=100 a accuracy" in text and "a error" not in text
    assert "Accuracy & Walltime" in report.render(df, "latex", registry=load_registry())
    assert "n=100 a error" in report.render(frame(), "markdown", registry=load_registry())


def test_a_cell_still_running_is_marked_and_left_out_of_the_wilcoxon_test():
    """Method a at n = 500 on friedman has 3 of the protocol's 10 outer folds: the table says so,
    and the a-vs-b test at n = 500 runs on the five complete datasets (the n = 100 one on six)."""
    df = frame().assign(protocol="cv-o10-i5")
    df = df[~((df["dataset"] == "friedman") & (df["method"] == "a") & (df["n_features"] == 500) & (df["fold"] >= 3))]
    cells, _, _ = report.summarise(df)
    assert cells[("friedman", 500, "a")].partial and not cells[("friedman", 100, "a")].partial
    rows = {r["n"]: r for r in report.wilcoxon_table(cells, ["a", "b"], [100, 500])}
    assert rows[100]["datasets"] == 6 and rows[500]["datasets"] == 5
    text = report.render(df, "markdown", registry=load_registry())
    assert "[3/10]" in text and "[k/K]" in text and "[10/10]" not in text
    assert "[k/K]" not in report.render(frame().assign(protocol="cv-o10-i5"), "markdown", registry=load_registry())


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
    welch = report.render(df, fmt, width=0, registry=load_registry())                 # text: prose not wrapped
    paired = report.render(df, fmt, test="paired", alpha=0.01, width=0, registry=load_registry())
    assert "significantly better than every other method at that n" in welch
    assert "Welch's unequal-variance t-test over the outer folds, p = 0.05" in welch and "paired t-test" not in welch
    assert "paired t-test on the per-fold differences over the outer folds" in paired and "p = 0.01" in paired
    assert "Welch" not in paired
    table_end = welch.index("friedman") if fmt != "latex" else welch.index(r"\end{tabular}")
    assert welch.index("bold: significantly" if fmt == "text" else "Bold: significantly") > table_end
    csv = pd.read_csv(io.StringIO(report.render(df, "csv", test="paired", registry=load_registry())))
    assert set(csv["bold_test"]) == {"paired p=0.05"}


# --- publication-ready tables: walltimes, display names, text width, LaTeX layout --------------------------

WIDE_METHODS = ("alc", "gfc", "rff-gauss-knn", "lgbm", "gfc-gbrff")
WIDE_DATASETS = ("parkinsons-tm", "delta-ailerons", "kinematics", "delta-elevators", "breiman-generated",
                 "cal-housing", "friedman-generated")


def wide_frame(methods=WIDE_METHODS, ns=(100, 500, 1000), datasets=WIDE_DATASETS):
    """A table wider than any page or terminal: 5 methods × 3 n, walltimes from 0.03 s to hours,
    a bold method, a missing cell and a partial one (3 of 10 folds)."""
    rng = np.random.default_rng(3)
    seconds = (0.031, 0.314, 12.44, 229.0, 5000.0)
    rows = []
    for d, ds in enumerate(datasets):
        for k, method in enumerate(methods):
            for n in ns:
                if (ds, method, n) == ("kinematics", "lgbm", 500):
                    continue                                   # never ran
                folds = 3 if (ds, method, n) == ("cal-housing", "gfc", 1000) else 10
                for fold in range(folds):
                    rows.append({"dataset": ds, "method": method, "n_features": n, "fold": fold,
                                 "status": "done", "metric": "rmse100", "n_train": 90, "n_test": 10,
                                 "task": "regression", "total_s": seconds[(d + k) % 5], "protocol": "cv-o10-i5",
                                 "error": 15 + d + (0 if method == "alc" else 0.5 * k) + 0.05 * rng.normal()})
    return pd.DataFrame(rows)


def few_datasets_frame():
    """Three datasets: no Wilcoxon critical value exists (T_crit is None), and a method without
    pre-processing time (NaN in the timing table)."""
    df = frame()
    df = df[df["dataset"].isin(["kinematics", "bank", "pumadyn"])].assign(tune_s=1.0, fit_s=1.0, predict_s=0.1)
    return df.assign(preprocess_s=np.where(df["method"] == "a", 0.5, np.nan))


@pytest.mark.parametrize("seconds, text", [(0.314, "0.31 s"), (12.44, "12.4 s"), (229, "00:03:49"),
                                           (3.0, "3.00 s"), (9.996, "10.0 s"), (59.96, "00:01:00"),
                                           (0.001, "<0.01 s"), (0.0, "0 s"), (4000, "01:06:40"),
                                           (float("nan"), "–"), (None, "–")])
def test_walltime_keeps_sub_second_precision_below_a_minute(seconds, text):
    assert fmt_walltime(seconds) == text


def test_walltimes_below_a_minute_show_seconds_in_every_format():
    df = wide_frame(methods=("alc", "gfc"), ns=(100,))
    for fmt in ("text", "markdown", "latex", "html"):
        out = report.render(df, fmt, width=0, registry=load_registry())
        assert "00:00:00" not in out and "01:23:20" in out and "00:03:49" in out, fmt
        assert ("0.31\\,s" if fmt == "latex" else "0.31 s") in out, fmt
    assert "seconds below one minute, hh:mm:ss from one minute on" in report.render(df, "text", width=0, registry=load_registry())


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex", "csv", "html"])
def test_no_none_or_nan_in_any_format(fmt):
    df = few_datasets_frame()
    cells, errors, _ = report.summarise(df)
    row = report.wilcoxon_table(cells, ["a", "b"], [100], errors=errors)[0]
    assert row["T_crit_95"] is None and row["T_crit_95_normal"] is None      # what printed 'None' before
    out = report.render(df, fmt, width=80, registry=load_registry())
    assert "None" not in out
    assert not re.search(r"\bnan\b", out, re.IGNORECASE)
    if fmt in ("text", "markdown", "latex", "html"):         # the table of dashes is one line now
        assert "too few datasets for a test" in out


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex", "html"])
def test_too_few_datasets_for_a_wilcoxon_test_is_one_line_not_a_table_of_dashes(fmt):
    """Three datasets: the two-sided signed-rank test at p = 0.05 cannot reject below N = 6 (the
    project's exact critical values), so the report says so in one line instead of a table."""
    assert report.wilcoxon_minimum() == 6
    assert report.stats.wilcoxon_critical_value(5) is None and report.stats.wilcoxon_critical_value(6) == 0
    out = report.render(few_datasets_frame(), fmt, width=0, registry=load_registry())
    lines = [line for line in out.splitlines() if "too few datasets for a test" in line]
    assert len(lines) == 1 and "N = 6" in lines[0] and "3 at most" in lines[0]
    assert "T_crit" not in out and "wilcoxon}" not in out          # no table (LaTeX: no -wilcoxon float)
    # six datasets: the table is back, the line gone
    full = report.render(frame(), fmt, width=0, registry=load_registry())
    assert "too few datasets" not in full and ("T_crit" in full or "T_{\\mathrm{crit}}" in full)


@pytest.mark.parametrize("width", [60, 80, 100, 140])
@pytest.mark.slow
def test_text_lines_fit_the_terminal_width(width):
    df = wide_frame()
    text = report.render(df, "text", width=width, registry=load_registry())
    assert max(len(line) for line in text.splitlines()) <= width
    # split per n and into column blocks, every cell still there once
    assert all(f"n = {n}\n" in text for n in (100, 500, 1000)) and "(continued)" in text
    assert text.count("(±") == 1 + len(WIDE_DATASETS) * len(WIDE_METHODS) * 3 - 1 and "[3/10]" in text  # + caption
    assert all(m in text for m in WIDE_METHODS)


def test_text_width_defaults_to_the_terminal_and_a_table_that_fits_stays_whole(monkeypatch):
    df = wide_frame()
    monkeypatch.setenv("COLUMNS", "72")
    assert max(len(line) for line in report.render(df, "text", registry=load_registry()).splitlines()) <= 72
    whole = report.render(df, "text", width=0, registry=load_registry())                  # 0: no limit, the paper's single table
    assert "n=100 alc" in whole and "n = 100" not in whole
    assert max(len(line) for line in whole.splitlines()) > 300
    small = frame()
    assert "n = 100" not in report.render(small, "text", width=200, registry=load_registry())    # it fits: one table


def test_display_names_replace_registered_names_except_in_csv():
    df = frame()
    names = report.parse_names(r"a=Alpha, b=\`a la carte")
    assert names == {"a": "Alpha", "b": r"\`a la carte"}
    md = report.render(df, "markdown", names=names, registry=load_registry())
    assert "n=100 Alpha error" in md and r"Alpha vs \`a la carte" in md and "n=100 a error" not in md
    tex = report.render(df, "latex", names=names, registry=load_registry())
    assert r"\multicolumn{2}{c}{Alpha}" in tex and r"\multicolumn{2}{c}{\`a la carte}" in tex
    text = report.render(df, "text", names=names, width=0, registry=load_registry())
    assert "n=100 Alpha" in text and " a vs b" not in text
    html = report.render(df, "html", names=names, registry=load_registry())      # one table per n, a column group per method
    assert '<th class="g" colspan="2">Alpha</th>' in html and "<h3>n = 100</h3>" in html and ">a</th>" not in html
    assert set(pd.read_csv(io.StringIO(report.render(df, "csv", names=names, registry=load_registry())))["method"]) == {"a", "b"}
    # without a map: the registered names, not upper-cased
    plain = report.render(wide_frame(methods=("alc", "gfc"), ns=(100,)), "latex", registry=load_registry())
    assert r"\multicolumn{2}{c}{alc}" in plain and "ALC" not in plain and "GFC" not in plain


def test_names_from_a_yaml_file_and_bad_specs(tmp_path):
    path = tmp_path / "names.yaml"
    path.write_text("gfc: GFC\nalc: à la carte\n", encoding="utf-8")
    assert report.parse_names(str(path)) == {"gfc": "GFC", "alc": "à la carte"}
    assert report.parse_names(None) == {} and report.parse_names("") == {}
    with pytest.raises(UsageError, match="must look like gfc=GFC"):
        report.parse_names("gfc")
    with pytest.raises(UsageError, match="not found"):
        report.parse_names(str(tmp_path / "missing.yaml"))


def test_latex_has_caption_label_and_names_its_packages():
    tex = report.render(frame(), "latex", label="tab:demo", registry=load_registry())
    assert tex.startswith("% requires: booktabs\n")
    assert r"\caption{Error: RMSE $\times$ 100" in tex and r"\label{tab:demo}" in tex
    assert r"\label{tab:demo-wilcoxon}" in tex and tex.count(r"\caption{") == 2
    assert "±" not in tex and "×" not in tex and "–" not in tex      # all as LaTeX, not raw Unicode
    assert r"\label{tab:rfbench}" in report.render(frame(), "latex", registry=load_registry())   # a default label


def test_latex_layout_follows_the_text_width():
    df = wide_frame()
    roomy = report.render(df, "latex", latex_width=2000, registry=load_registry())
    assert "one table at \\small" in roomy and roomy.count(r"\begin{tabular}") == 2     # + Wilcoxon
    page = report.render(df, "latex", registry=load_registry())                        # 469 pt: 15 method columns do not fit
    assert "panels of whole methods" in page and page.count(r"\begin{tabular}") > 4
    assert "$n = 100$ (continued)" in page and "resizebox" not in page and "graphicx" not in page
    tiny = report.render(df, "latex", latex_width=report.parse_length("1.5in"), registry=load_registry())
    assert tiny.startswith("% requires: booktabs, graphicx") and r"\resizebox{\textwidth}{!}{%" in tiny
    assert report.parse_length("6.5in") == pytest.approx(469.755) and report.parse_length("469") == 469
    with pytest.raises(UsageError, match="latex-width"):
        report.parse_length("wide")


def compile_latex(tmp_path, body: str, text_width: str) -> str:
    """pdflatex on the table in a minimal article with the given \\textwidth; the log."""
    packages = body.splitlines()[0].removeprefix("% requires: ")
    doc = tmp_path / "t.tex"
    doc.write_text("\\documentclass{article}\n"
                   f"\\usepackage{{{packages}}}\n"
                   f"\\setlength{{\\textwidth}}{{{text_width}}}\\setlength{{\\textheight}}{{9in}}\n"
                   "\\begin{document}\n" + body + "\\end{document}\n", encoding="utf-8")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert res.returncode == 0, log[-3000:]
    return log


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
@pytest.mark.parametrize("width", ["469pt", "345pt", "3in"])
@pytest.mark.slow
def test_latex_fits_the_page_width_under_pdflatex(tmp_path, width):
    """The layout chosen for a text width has no overfull box in a document of that width (the
    wide table is split into panels; at 3 in some are scaled), and no float taller than the page."""
    body = report.render(wide_frame(), "latex", latex_width=report.parse_length(width),
                         names={"gfc-gbrff": "GFC+GBRFF", "alc": "à la carte"}, label="tab:wide", registry=load_registry())
    log = compile_latex(tmp_path, body, width)
    assert "Overfull \\hbox" not in log and "Float too large" not in log
    assert "LaTeX Error" not in log and "Missing character" not in log


def test_a_tasks_time_is_its_cpu_seconds_where_recorded_else_its_wall_time():
    """A worker stopped for an hour, or sharing its core, records a wall time that is not the method's:
    the estimate reads the CPU seconds (core-seconds: two threads busy for 5 s count 10), and the wall
    time only of a record written before cpu_s existed (or one whose cpu_s is not a positive number)."""
    from rfbench import registry
    from rfbench.execution import estimate

    done = pd.DataFrame([
        {"dataset": "kinematics", "method": "alc", "n_features": 100, "total_s": 3600.0, "cpu_s": 10.0},
        {"dataset": "kinematics", "method": "alc", "n_features": 100, "total_s": 12.0, "cpu_s": 12.0},
        {"dataset": "kinematics", "method": "alc", "n_features": 100, "total_s": 7.0, "cpu_s": np.nan},
        {"dataset": "bank", "method": "alc", "n_features": 100, "total_s": 5.0, "cpu_s": 10.0},
        {"dataset": "bank", "method": "alc", "n_features": 100, "total_s": 9.0, "cpu_s": 0.0},
    ])
    assert estimate.task_cost(done).tolist() == [10.0, 12.0, 7.0, 10.0, 9.0]
    assert estimate.task_cost(done.drop(columns="cpu_s")).tolist() == [3600.0, 12.0, 7.0, 5.0, 9.0]
    est, known = estimate.task_seconds(done, registry=registry.load())([("kinematics", "alc", 100), ("bank", "alc", 100)])
    assert list(est) == [10.0, 9.5] and known == [True, True]            # medians of 10, 12, 7 and of 10, 9


def test_status_reads_the_cpu_seconds_of_a_task_whose_worker_was_stopped(tmp_path, mirror_dir):
    """A task whose wall time counts an hour of its worker stopped: status's median and time left are
    its CPU seconds (10 s), not the hour."""
    from rfbench.experiments import status
    from rfbench.store import RunDir

    run = RunDir(tmp_path / "run").ensure()
    protocol = {"name": "cv", "outer_folds": 3, "inner_folds": 3, "seed": 0, "repeats": 20, "test_size": 0.3,
                "max_samples": None}
    run.write_run_info({"started_at": "2026-01-01T10:00:00+00:00", "protocol": protocol, "datasets": ["kinematics"],
                        "methods": ["rff-gauss"], "features": [100], "folds": None})
    run.write_record(as_record({"dataset": "kinematics", "method": "rff-gauss", "n_features": 100, "fold": 0,
                                "seed": 0, "protocol": "cv-o3-i3", "status": "done", "error": 1.0,
                                "total_s": 3610.0, "cpu_s": 10.0}))
    row = status.status([run.path], None, load_registry()).set_index("method").loc["rff-gauss"]
    assert row["median_task_s"] == 10.0 and row["left_core_h"] * 3600 == pytest.approx(20.0)


def test_status_scales_a_cell_without_finished_tasks_from_the_same_dataset_at_another_budget():
    from rfbench import registry
    from rfbench.execution import estimate

    done = pd.DataFrame([
        {"dataset": "kinematics", "method": "alc", "n_features": 100, "total_s": 10.0},
        {"dataset": "kinematics", "method": "alc", "n_features": 500, "total_s": 80.0},
        {"dataset": "bank", "method": "alc", "n_features": 100, "total_s": 30.0},
        {"dataset": "bank", "method": "gfc", "n_features": 100, "total_s": 5.0},
    ])
    estimator = estimate.task_seconds(done, registry=registry.load())
    est, known = estimator([("bank", "alc", 500), ("bank", "gfc", 500), ("kinematics", "alc", 500)])
    # bank at n = 500: its n = 100 time × alc's 500/100 ratio on kinematics (8×); gfc has no dataset
    # with both budgets, so n/n' = 5×; the finished cell keeps its own median
    assert list(est) == pytest.approx([240.0, 25.0, 80.0]) and known == [False, False, True]


def test_the_ratio_between_budgets_comes_from_the_sets_nearest_in_rows():
    """KRR-like: n costs nothing on small sets (exact solve) and 20× more at n = 500 on large ones
    (Nyström of rank n). keggundirected's n = 500 cell is its n = 100 time times the ratio of the
    RATIO_SETS sets nearest in rows (20), not of every set (the median, 1)."""
    from rfbench import registry
    from rfbench.execution import estimate

    small, large = ["uci-challenger", "uci-fertility", "uci-concreteslump", "uci-autos"], ["uci-kin40k", "uci-protein",
                                                                                         "uci-keggdirected"]
    done = pd.DataFrame([{"dataset": d, "method": "krr", "n_features": n, "total_s": t}
                         for sets, ratio in ((small, 1.0), (large, 20.0)) for d in sets
                         for n, t in ((100, 1.0), (500, ratio))]
                        + [{"dataset": "uci-keggundirected", "method": "krr", "n_features": 100, "total_s": 10.0},
                           {"dataset": "uci-servo", "method": "krr", "n_features": 100, "total_s": 2.0}])
    assert estimate.RATIO_SETS == 3
    est, known = estimate.task_seconds(done, registry=registry.load())([("uci-keggundirected", "krr", 500),
                                                                        ("uci-servo", "krr", 500)])
    assert list(est) == pytest.approx([200.0, 2.0]) and known == [False, False]     # servo (167 rows): the small sets' 1


def test_status_estimates_a_budget_no_dataset_has_reached_from_the_methods_other_budget():
    """No dataset has (alc, 500) yet: a set with no alc task at all is estimated from alc's size law
    at n = 100 scaled by n/n' = 5 (no dataset has both budgets to measure the ratio); a method with no
    finished task stays unestimated. The cell's own size law is used once it rests on SIZE_LAW_SETS sets or no
    other budget's rests on more."""
    from rfbench import registry
    from rfbench.execution import estimate

    reg = registry.load()
    done = pd.DataFrame([
        {"dataset": "kinematics", "method": "alc", "n_features": 100, "total_s": 10.0},
        {"dataset": "bank", "method": "alc", "n_features": 100, "total_s": 30.0},
        {"dataset": "bank", "method": "gfc", "n_features": 500, "total_s": 5.0},
    ])
    law_100 = estimate.size_model(pd.Series({"kinematics": 10.0, "bank": 30.0}),
                                   {k: reg.dataset(k).shape for k in ("kinematics", "bank")})
    est, known = estimate.task_seconds(done, registry=reg)([("pumadyn", "alc", 500), ("pumadyn", "rff-gauss", 500)])
    assert est[0] == pytest.approx(5 * law_100(*reg.dataset("pumadyn").shape)) and np.isnan(est[1])
    assert known == [False, False]
    # a measured ratio between the budgets (kinematics: 80 / 10) replaces n / n' for alc's own sets;
    # the cell's own size law (one set at n = 500) is not preferred to n = 100's, fitted on two sets
    done.loc[len(done)] = {"dataset": "kinematics", "method": "alc", "n_features": 500, "total_s": 80.0}
    est, _ = estimate.task_seconds(done, registry=reg)([("bank", "alc", 500), ("pumadyn", "alc", 500)])
    assert est == pytest.approx([30.0 * 8, 8 * law_100(*reg.dataset("pumadyn").shape)])
    # once n = 500's law rests on SIZE_LAW_SETS sets, it is the one used
    five = ["kinematics", "bank", "pumadyn", "ailerons"][:estimate.SIZE_LAW_SETS]
    for name, secs in zip(five[1:], (240.0, 300.0, 500.0), strict=False):
        done.loc[len(done)] = {"dataset": name, "method": "alc", "n_features": 500, "total_s": secs}
    times = done[(done.method == "alc") & (done.n_features == 500)].set_index("dataset")["total_s"]
    law_500 = estimate.size_model(times, {k: reg.dataset(k).shape for k in times.index})
    est, _ = estimate.task_seconds(done, registry=reg)([("elevators", "alc", 500)])
    assert est == pytest.approx([law_500(*reg.dataset("elevators").shape)])


def test_status_size_model_is_a_power_law_in_rows_and_inputs():
    """Four or more finished datasets that vary in rows and inputs: t = a·rows^b·inputs^c is recovered
    (here quadratic in rows, blind to inputs, as an SVR), where a line through the small sets would
    miss a large one; fewer sets fall back to a power of rows × inputs, one set to proportionality."""
    from rfbench.execution.estimate import size_model

    shape = {"a": (200, 5), "b": (400, 60), "c": (800, 8), "d": (300, 13), "e": (600, 30)}
    times = pd.Series({k: 1e-4 * r**2 for k, (r, _) in shape.items()})
    model = size_model(times, shape)
    assert model(20000, 5) == pytest.approx(1e-4 * 20000**2, rel=1e-9)
    assert model(20000, 500) == pytest.approx(1e-4 * 20000**2, rel=1e-9)
    two = size_model(times[["a", "c"]], shape)          # (rows·inputs)^b through two points
    assert two(800, 8) == pytest.approx(times["c"]) and two(200, 5) == pytest.approx(times["a"])
    one = size_model(times[["c"]], shape)
    assert one(1600, 8) == pytest.approx(2 * times["c"])
    # never below the fastest finished dataset
    assert model(10, 1) == pytest.approx(times.min())


def test_status_size_model_uses_a_methods_declared_cost_scaling():
    """With declared exponents (BMKR: rows²), the estimate is scaled from the largest finished set,
    not fitted to small sets whose times are mostly fixed costs."""
    from rfbench import registry
    from rfbench.execution.estimate import size_model

    methods = registry.load().methods
    assert methods["bmkr"].cost_scaling == {"rows": 2.0} and methods["gfc"].cost_scaling == {}
    # sonar has the most rows × inputs, pima the most rows: rows² is scaled from pima
    shape = {"wine": (178, 13), "sonar": (208, 60), "pima": (768, 8)}
    times = pd.Series({"wine": 13.0, "sonar": 13.0, "pima": 45.0})
    model = size_model(times, shape, {"rows": 2.0})
    assert model(20560, 5) == pytest.approx(45.0 * (20560 / 768) ** 2)
    assert size_model(times, shape)(20560, 5) < model(20560, 5) / 10   # what the fitted law would say


def test_a_declared_rows_cap_stops_the_growth_with_rows():
    """gp-sod fits N rows of any larger set: its m³ is scaled from its largest finished set up to the
    cap and is constant above it, where the uncapped law said 17× (keggundirected from sml)."""
    from rfbench import registry
    from rfbench.execution.estimate import size_model
    from rfbench.methods import gp

    assert registry.load().methods["gp-sod"].cost_scaling == {"rows": 3.0, "rows_cap": 3889.0, "budget_free": 1.0}
    assert 3889 == round(gp.MAX_ROWS / 0.9)          # N training rows of a 90 % split (the published protocol)
    shape = {"housing": (506, 13), "kin40k": (40000, 8), "sml": (4137, 22), "pol": (15000, 26)}
    times = pd.Series({"housing": 1.25, "sml": 420.0, "pol": 400.0, "kin40k": 380.0})   # three past the cap
    # the level from the largest set past the cap (kin40k), not from the first in the index
    capped = size_model(times, shape, {"rows": 3.0, "rows_cap": 3889.0})
    assert capped(63608, 27) == capped(4137, 22) == pytest.approx(380.0)      # above the cap: kin40k's time
    assert capped(1000, 8) == pytest.approx(380.0 * (1000 / 3889) ** 3)      # below it: m³ from the cap
    assert size_model(times, shape, {"rows": 3.0})(63608, 27) > 3 * 380.0
    # a task below every finished set has no floor at their fastest time: gp-sod finished on sml alone
    # (its CPU set) is m³ below it, not sml's 420 s on 21 rows (the former floor)
    only_sml = size_model(times[["sml"]], shape, {"rows": 3.0, "rows_cap": 3889.0})
    assert only_sml(21, 4) == pytest.approx(420.0 * (21 / 3889) ** 3) and only_sml(21, 4) < 0.01   # sml past the cap
    # a finished set no larger than the task floors the law (housing's 1.25 s at 506 rows: fixed costs)
    assert 380.0 * (520 / 3889) ** 3 < 1.25 and capped(520, 8) == pytest.approx(1.25)


def test_a_budget_capped_at_the_rows_ignores_the_sets_smaller_than_n():
    """svgp's M = n inducing points are capped at the fitting rows: its n = 500 times on sets under 500
    rows are a smaller budget's and must not make n = 500's law (nor the ratio between budgets); n = 500
    then comes from n = 100's law on the sets large enough, scaled by n / n' without a set of both."""
    from rfbench import registry
    from rfbench.execution import estimate

    reg = registry.load()
    assert reg.method("svgp").cost_scaling == {"budget_capped_at_rows": 1.0}
    small = ["uci-challenger", "uci-fertility", "uci-autos", "uci-servo", "uci-yacht"]        # all under 500 rows
    large = ["uci-wine", "uci-gas", "uci-skillcraft", "uci-sml", "uci-parkinsons"]
    rows = []
    for d in small + large:
        m = reg.dataset(d).shape[0]
        rows.append({"dataset": d, "method": "svgp", "n_features": 100, "total_s": 1e-2 * m})
        if d in small:        # at n = 500, M = rows: times steep in rows, as a capped budget's are
            rows.append({"dataset": d, "method": "svgp", "n_features": 500, "total_s": 1e-6 * m**3})
    done = pd.DataFrame(rows)
    est, known = estimate.task_seconds(done, registry=reg)([("uci-keggundirected", "svgp", 500)])
    law_100 = estimate.size_model(done[done.n_features == 100].set_index("dataset")["total_s"],
                                  {d: reg.dataset(d).shape for d in small + large})
    assert est[0] == pytest.approx(5 * law_100(*reg.dataset("uci-keggundirected").shape)) and known == [False]
    # without the declaration, n = 500's own law through the small sets (rows³) would say far more
    uncapped_law = estimate.size_model(done[done.n_features == 500].set_index("dataset")["total_s"],
                                           {d: reg.dataset(d).shape for d in small})
    assert uncapped_law(*reg.dataset("uci-keggundirected").shape) > 100 * est[0]


def test_a_bad_cost_scaling_is_one_line(tmp_path, monkeypatch):
    from rfbench import registry
    from rfbench.errors import UsageError

    reg = tmp_path / "my.yaml"
    reg.write_text("methods:\n  my-svr:\n    estimator: sklearn.svm:SVR\n    cost_scaling: {rows: 2}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    assert registry.load().method("my-svr").cost_scaling == {"rows": 2.0}
    reg.write_text("methods:\n  my-svr:\n    estimator: sklearn.svm:SVR\n    cost_scaling: {rows: fast}\n")
    with pytest.raises(UsageError, match="field 'cost_scaling' must be a mapping of rows and/or inputs to exponents"):
        registry.load()
    reg.write_text("methods:\n  my-svr:\n    estimator: sklearn.svm:SVR\n    cost_scaling: {budget_free: often}\n")
    with pytest.raises(UsageError, match="budget_free: true where one fit serves every budget"):
        registry.load()


def test_a_one_fold_cell_shows_no_spread_rather_than_zero(tmp_path, monkeypatch, capsys):
    """One finished fold has no spread across folds: '±–', never '±0.00'; the CSV leaves it empty."""
    import pandas as pd

    from rfbench.cli import main

    monkeypatch.chdir(tmp_path)
    main(["run", "--datasets", "breiman-generated", "--methods", "rff-gauss", "--features", "10", "--outer-folds", "3",
          "--inner-folds", "2", "--max-samples", "80", "--jobs", "1", "--folds", "0", "--quiet", "--no-report",
          "--out", "o"])
    capsys.readouterr()
    main(["report", "o"])
    text = capsys.readouterr().out
    assert "±–" in text and "±0.00" not in text
    # a screen of one fold of three, finished: not called "a run in progress" alone
    assert "a screen of some folds: --folds" in text
    main(["report", "o", "--format", "csv", "--output", "t.csv"])
    row = pd.read_csv(tmp_path / "t.csv").iloc[0]
    assert pd.isna(row["error_std"]) and row["folds"] == 1


def test_text_to_a_file_or_pipe_is_not_cut_into_continued_blocks(capsys, monkeypatch):
    """Not a terminal (a file, a pipe; here pytest's capture) and no $COLUMNS: whole lines, no
    "continued" blocks; on a terminal of 80 columns the same table is wrapped."""
    from pathlib import Path

    from rfbench.cli import main
    from rfbench.reporting.render.common import terminal_width

    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == 0
    results = Path(__file__).resolve().parents[2] / "results" / "gfc2016-table4"
    main(["report", str(results)])
    whole = capsys.readouterr().out
    assert "(continued)" not in whole and max(map(len, whole.splitlines())) > 80
    monkeypatch.setenv("COLUMNS", "80")
    main(["report", str(results)])
    assert "(continued)" in capsys.readouterr().out


def test_the_caption_names_the_methods_fitted_on_signs_and_only_them():
    from rfbench.store.record import SIGN_FIT

    df = frame()
    df.loc[df["method"] == "b", "task"] = "classification" + SIGN_FIT
    text = report.render(df, "text", width=0, registry=load_registry())
    assert "(regression methods) are fitted by ridge/least squares on ±1 labels" in text
    assert re.search(r"On classification data, b \(regression", text)
    assert "±1 labels" not in report.render(frame(), "text", width=0, registry=load_registry())


def test_every_table_format_the_commands_offer_is_rendered():
    """One list of formats (rfbench.formats): the --format choices of report and compare report are
    it, and the report renders each."""
    import click

    from rfbench.cli import cli
    from rfbench.formats import TABLE_FORMATS

    commands = [cli.commands["report"], cli.commands["compare"].commands["report"]]
    for command in commands:
        [option] = [p for p in command.params if p.name == "fmt"]
        assert isinstance(option.type, click.Choice) and tuple(option.type.choices) == TABLE_FORMATS
    for fmt in TABLE_FORMATS:
        assert report.render(frame(), fmt, registry=load_registry()).strip()
