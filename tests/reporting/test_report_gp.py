"""The gp report layout (rfbench report --layout gp, spec layout: gp): bold by the paired t-test
against the row's best, average ranks with ties, size-group rows, every format, the page."""

import dataclasses
import io
import json
import re

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats as sps

from rfbench.errors import UsageError
from rfbench.experiments import html_page
from rfbench.experiments.spec import load_spec
from rfbench.formats import TABLE_FORMATS
from rfbench.registry import load as load_registry
from rfbench.reporting import gp_table, stats
from rfbench.reporting.render.common import gp_cell_text
from tests.experiments.test_html_page import write_dir

# two small sets and one intermediate (the registry's suites uci-small, uci-intermediate), listed
# intermediate first: the table orders by group, not by the records
DATASETS = {"uci-gas": 2565, "uci-challenger": 23, "uci-servo": 167}
SPREAD = np.array([0.5, -0.3, 0.4, 0, 0, 0, 0, 0, 0, 0])     # C − A on servo: a mean 0.06, p ≈ 0.42


def errors_of():
    """Per dataset, the split errors of methods a, b, c (10 splits):
    b = a + 0.01 on every split: significantly worse under the paired test, though the means are close;
    challenger: c = a on every split (a tie of the best mean); servo: c = a on 7 splits, SPREAD on 3
    (not significantly worse); gas: c = a − 1 with noise (best, a significantly worse)."""
    rng = np.random.default_rng(0)
    out = {}
    for i, ds in enumerate(DATASETS):
        a = 3.0 + i + rng.normal(0, 0.3, 10)
        c = {"uci-challenger": a.copy(), "uci-servo": a + SPREAD, "uci-gas": a - 1 + rng.normal(0, 0.05, 10)}[ds]
        out[ds] = {"a": a, "b": a + 0.01, "c": c}
    return out


def frame(errors=None):
    rows = []
    for ds, by_method in (errors or errors_of()).items():
        m = DATASETS[ds]
        for method, e in by_method.items():
            for split, value in enumerate(e):
                rows.append({"dataset": ds, "method": method, "n_features": 100, "fold": split, "seed": 0,
                             "protocol": "published-r10-i5", "status": "done", "metric": "rmse",
                             "n_train": m - m // 10, "n_test": m // 10, "task": "regression", "total_s": 1.0 + split,
                             "error": float(value)})
    return pd.DataFrame(rows)


def test_bold_is_the_best_mean_and_every_method_not_significantly_worse():
    model = gp_table.build(frame(), registry=load_registry())
    (table,) = model.tables
    bold = {(d, m) for (d, m), c in table.cells.items() if c.bold}
    assert bold == {("uci-challenger", "a"), ("uci-challenger", "c"),     # a tie of the best mean
                    ("uci-servo", "a"), ("uci-servo", "c"),               # c not significantly worse
                    ("uci-gas", "c")}                                     # a and b significantly worse
    # b is 0.01 above a on every split: the means are close, the paired test is sure
    assert table.cells[("uci-servo", "b")].mean - table.cells[("uci-servo", "a")].mean == pytest.approx(0.01)
    assert model.test == "paired" and "paired t-test" in model.bold_rule and "p = 0.05" in model.bold_rule


def test_the_servo_c_cell_against_scipy_ttest_rel():
    e = errors_of()["uci-servo"]
    ref = sps.ttest_rel(e["a"], e["c"])
    assert ref.pvalue == pytest.approx(0.425, abs=1e-3)
    assert stats.paired(e["a"], e["c"]) == (pytest.approx(ref.statistic), pytest.approx(ref.pvalue))
    assert (ref.pvalue < 0.05) == (not gp_table.build(frame(), registry=load_registry()).tables[0].cells[("uci-servo", "c")].bold)
    # at a level above its p-value the same cell is no longer bold
    assert not gp_table.build(frame(), alpha=0.5, registry=load_registry()).tables[0].cells[("uci-servo", "c")].bold


def test_average_ranks_by_hand_with_a_tie():
    (table,) = gp_table.build(frame(), registry=load_registry()).tables
    # challenger: a = c (1.5 each), b 3; servo: a 1, b 2 (+0.01), c 3 (+0.06); gas: c 1, a 2, b 3
    assert {k: table.cells[k].rank for k in table.cells if k[0] == "uci-challenger"} == {
        ("uci-challenger", "a"): 1.5, ("uci-challenger", "b"): 3.0, ("uci-challenger", "c"): 1.5}
    assert table.avg_rank == pytest.approx({"a": (1.5 + 1 + 2) / 3, "b": (3 + 2 + 3) / 3, "c": (1.5 + 3 + 1) / 3})
    assert sorted(table.ranked) == sorted(DATASETS) and table.rank_screen is None


def test_groups_in_order_with_the_papers_names_and_shapes():
    (table,) = gp_table.build(frame(), registry=load_registry()).tables
    assert [(g, [r.dataset for r in rows]) for g, rows in table.groups()] == [
        ("small", ["uci-challenger", "uci-servo"]), ("intermediate", ["uci-gas"])]
    assert [r.title for r in table.rows] == ["challenger (23, 4)", "servo (167, 4)", "gas (2565, 128)"]
    assert gp_table.group_of("kinematics", load_registry()) == "other"


def test_text_and_markdown_show_groups_bold_and_the_rank_row():
    df = frame()
    text = gp_table.render(df, "text", width=0, registry=load_registry())
    lines = text.splitlines()
    at = {name: next(i for i, line in enumerate(lines) if line.strip().startswith(name))
          for name in ("small", "challenger", "servo", "intermediate", "gas", "average rank")}
    assert list(at) == sorted(at, key=at.get)                                   # in this order
    assert lines[at["gas"]].count(" *") == 1 and lines[at["challenger"]].count(" *") == 2
    assert re.search(r"average rank\s+1\.50\s+2\.67\s+1\.83", text)
    assert "paired t-test" in text and "ranks of the critical-difference diagram" in text
    md = gp_table.render(df, "markdown", registry=load_registry())
    assert "| **small**" in md and "| **intermediate**" in md and md.count("**") == 2 * (2 + 5)
    assert "| *average rank*" in md


def test_latex_bolds_exactly_the_bold_cells():
    df = frame()
    tex = gp_table.render(df, "latex", label="tab:gp", registry=load_registry())
    (table,) = gp_table.build(df, registry=load_registry()).tables
    bold = [c for c in table.cells.values() if c.bold]
    assert tex.count(r"\textbf{") == len(bold) == 5
    for c in bold:
        assert rf"\textbf{{{c.mean:.2f} $\pm$ {c.std:.2f}}}" in tex
    assert r"\multicolumn{4}{@{}l}{\emph{small}} \\" in tex and r"\multicolumn{4}{@{}l}{\emph{intermediate}}" in tex
    assert r"\label{tab:gp}" in tex and r"\emph{average rank} & 1.50 & 2.67 & 1.83 \\" in tex


def test_csv_is_tidy():
    df = frame()
    out = pd.read_csv(io.StringIO(gp_table.render(df, "csv", registry=load_registry())))
    assert list(out.columns) == ["dataset", "paper", "group", "m", "d", "n_features", "method", "mean", "std",
                                 "splits", "expected", "bold", "rank", "bold_test"]
    assert len(out) == 9 and set(out["group"]) == {"small", "intermediate"}
    assert out["bold"].sum() == 5 and out.groupby("method")["rank"].mean().round(4).to_dict() == {
        "a": 1.5, "b": 2.6667, "c": 1.8333}
    row = out.set_index(["dataset", "method"]).loc[("uci-servo", "c")]
    e = errors_of()["uci-servo"]["c"]
    assert row["mean"] == pytest.approx(e.mean()) and row["std"] == pytest.approx(e.std(ddof=1))
    assert row["splits"] == 10 and row["expected"] == 10 and row["bold_test"] == "paired p=0.05"


def test_html_table_and_page_with_the_gp_figures(tmp_path):
    df = frame()
    fragment = gp_table.render(df, "html", html_fragment=True, registry=load_registry())
    assert fragment.count('<td class="best"><b>') == 5 and fragment.count('<tr class="group">') == 2
    assert '<tfoot><tr class="rank"><th class="l">average rank</th><th>1.50</th>' in fragment
    page = html_page.directory_page([tmp_path], df, fragment, layout="gp", registry=load_registry())
    assert 'href="#wilcoxon"' not in page and "Critical-difference diagram, n = 100" in page
    assert page.count("data:image/png;base64,") == 3            # the CD diagram, one per size group
    assert "Error against wall time, small datasets" in page and "intermediate datasets" in page


def test_the_model_is_a_frozen_value_every_format_renders():
    """gp_table builds the model; each format's module of rfbench.reporting.render renders it
    (render_gp), so every format of rfbench.formats.TABLE_FORMATS has a gp output, JSON too."""
    df = frame()
    model = gp_table.build(df, registry=load_registry())
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.tables[0].cells[("uci-servo", "a")].bold = False
    with pytest.raises(dataclasses.FrozenInstanceError):
        model.footer = ("x",)
    for fmt in TABLE_FORMATS:
        assert gp_table.render(df, fmt, width=0, registry=load_registry())
    doc = json.loads(gp_table.render(df, "json", registry=load_registry(), footer=["took 1 s"]))
    (table,) = doc["tables"]
    assert table["n"] == 100 and [c["method"] for c in table["columns"]] == ["a", "b", "c"]
    assert [(r["dataset"], r["group"]) for r in table["rows"]] == [
        ("uci-challenger", "small"), ("uci-servo", "small"), ("uci-gas", "intermediate")]
    servo = dict(zip("abc", table["rows"][1]["cells"], strict=True))
    e = errors_of()["uci-servo"]["c"]
    assert servo["c"]["mean"] == pytest.approx(e.mean()) and servo["c"]["std"] == pytest.approx(e.std(ddof=1))
    assert servo["c"]["marks"] == {"bold": True, "partial": False} and not servo["b"]["marks"]["bold"]
    assert table["average_rank"] == pytest.approx({"a": 1.5, "b": 8 / 3, "c": 5.5 / 3})
    assert doc["footer"] == ["took 1 s"] and doc["test"] == "paired" and doc["alpha"] == 0.05


def test_partial_cells_are_marked_and_a_single_split_has_no_std():
    df = frame()
    one = df[df["fold"] == 0]
    (table,) = gp_table.build(one, registry=load_registry()).tables
    c = table.cells[("uci-servo", "a")]
    assert c.std is None and gp_cell_text(c, 2) == f"{c.mean:.2f} ± – [1/10]"
    assert all(c.bold for c in table.cells.values())           # one split: nothing significant
    assert table.rank_screen == "screen: fold 0 of 10"


def test_cli_layout_gp_and_what_it_refuses(tmp_path):
    from rfbench.cli import cli

    d = write_dir(tmp_path / "r", frame())
    res = CliRunner().invoke(cli, ["report", str(d), "--layout", "gp", "--format", "csv"])
    assert res.exit_code == 0, res.output
    assert res.output.startswith("dataset,paper,group,") and "paired p=0.05" in res.output
    res = CliRunner().invoke(cli, ["report", str(d), "--layout", "gp", "--test", "welch", "--format", "csv"])
    assert "welch p=0.05" in res.output
    res = CliRunner().invoke(cli, ["report", str(d), "--layout", "gp", "--compare", "a@100:b@100"])
    assert isinstance(res.exception, UsageError) and "--compare" in str(res.exception)


def test_the_uci_spec_asks_for_the_gp_layout(tmp_path):
    assert load_spec("uci-splits", load_registry()).layout == "gp"
    assert load_spec("gfc2016-table1", load_registry()).layout == "default"
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: x\nresults: r\nrun: {datasets: [uci-servo], methods: [rff-gauss]}\nlayout: wide\n")
    with pytest.raises(UsageError, match="field 'layout' must be one of default, gp"):
        load_spec(str(bad), load_registry())


def test_a_gp_spec_s_page_uses_its_layout(tmp_path):
    write_dir(tmp_path / "r", frame())
    spec_file = tmp_path / "gp.yaml"
    spec_file.write_text("title: gp\nresults: r\nrun: {datasets: [uci-challenger], methods: [rff-gauss]}\n"
                         "protocol: {name: published, repeats: 10, inner_folds: 5}\ntest: paired\nlayout: gp\n")
    spec = load_spec(str(spec_file), load_registry())
    page, summary = html_page.spec_page(spec, figures=False, registry=load_registry())
    assert '<table class="results gp">' in page and 'href="#wilcoxon"' not in page and "paired t-test" in page
    page, _ = html_page.spec_page(spec, figures=False, layout="default", registry=load_registry())      # report --all --layout default
    assert '<table class="results gp">' not in page and 'href="#wilcoxon"' in page


def test_report_of_a_spec_s_results_uses_its_layout_and_test(tmp_path, monkeypatch):
    # `rfbench report DIR` where DIR is a gp spec's results directory: the spec's own table (gp layout,
    # paired t-test), said on stderr; --layout / --test replace them; a second DIR is no spec's: default
    from rfbench.cli import cli
    from rfbench.experiments import spec as spec_module

    d = write_dir(tmp_path / "r", frame())
    spec_file = tmp_path / "gp.yaml"
    spec_file.write_text("title: gp\nresults: r\nrun: {datasets: [uci-challenger], methods: [rff-gauss]}\n"
                         "protocol: {name: published, repeats: 10, inner_folds: 5}\ntest: paired\nlayout: gp\n")
    spec = load_spec(str(spec_file), load_registry())
    monkeypatch.setattr(spec_module, "all_specs", lambda registry: [spec])
    runner = CliRunner(mix_stderr=False) if "mix_stderr" in CliRunner.__init__.__code__.co_varnames else CliRunner()
    res = runner.invoke(cli, ["report", str(d), "--format", "csv"])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("dataset,paper,group,") and "paired p=0.05" in res.stdout
    assert "gp: its own layout (gp) and t-test (paired); --layout and --test replace them" in res.stderr
    res = runner.invoke(cli, ["report", str(d), "--format", "csv", "--test", "welch"])
    assert res.stdout.startswith("dataset,paper,group,") and "welch p=0.05" in res.stdout
    res = runner.invoke(cli, ["report", str(d), "--format", "csv", "--layout", "default"])
    assert res.exit_code == 0 and not res.stdout.startswith("dataset,paper,group,")
    res = runner.invoke(cli, ["report", str(d), "--compare", "a@100:b@100"])
    assert isinstance(res.exception, UsageError) and "add --layout default (gp's own layout is gp)" in str(res.exception)
    res = runner.invoke(cli, ["report", str(d), "--compare", "a@100:b@100", "--layout", "default"])
    assert res.exit_code == 0, res.output
    other = write_dir(tmp_path / "other", frame())
    res = runner.invoke(cli, ["report", str(d), str(other), "--format", "csv"])
    assert res.exit_code == 0 and not res.stdout.startswith("dataset,paper,group,") and "its own layout" not in res.stderr


def test_a_method_run_where_another_is_not_is_left_out_of_the_ranks_not_the_ranks_dropped():
    # gp runs below N rows and gp-sod above (bench/uci-splits.yaml): no dataset has every method, so
    # without the fallback no method would be ranked at all. The one complete on the fewest datasets
    # (sod: gas only) is left out and named; the rest are ranked on the two sets they share, the same
    # ranks as the table without it and the CD diagram's
    errors = errors_of()
    for ds in errors:
        other = errors[ds]["a"] + 0.5
        errors[ds]["gpx" if ds != "uci-gas" else "sod"] = other
    df = frame(errors)
    (table,) = gp_table.build(df, registry=load_registry()).tables
    assert table.rank_left_out == {"sod": 1}
    assert set(table.ranked) == {"uci-challenger", "uci-servo"}
    assert set(table.avg_rank) == {"a", "b", "c", "gpx"} and table.avg_rank["gpx"] == 4.0
    assert ("uci-gas", "sod") in table.cells                      # shown, not ranked
    base = frame()
    (alone,) = gp_table.build(base[base["dataset"] != "uci-gas"], registry=load_registry()).tables
    assert {m: table.avg_rank[m] for m in "abc"} == alone.avg_rank
    text = gp_table.render(df, "text", width=0, registry=load_registry())
    assert "left out of the ranking, a complete cell on too few of the datasets the others share: sod (1 dataset)" in text
    doc = json.loads(gp_table.render(df, "json", registry=load_registry()))
    assert doc["tables"][0]["rank_left_out"] == {"sod": 1}
    from rfbench.reporting import plot

    ranked, out = plot.ranking_results(df, 100)
    assert out == {"sod": 1} and "sod" not in set(ranked["method"])
    assert plot.ranking_results(base, 100)[1] == {}              # every method shares the datasets: all kept
    res = plot.cd_analysis(ranked, 100)
    assert res.ranks.to_dict() == pytest.approx(table.avg_rank)
