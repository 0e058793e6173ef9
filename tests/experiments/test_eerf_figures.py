"""The EERF paper's figures and the MNIST scaling variant: the inputs
scaled jointly, the spec-declared figures' data against a naive computation, their files, the
malformed figure blocks and the command line's one-line errors."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rfbench import protocol as proto
from rfbench import registry
from rfbench.cli import cli
from rfbench.errors import UsageError
from rfbench.experiments.spec import load_spec
from rfbench.methods.rff import RKSClassifier
from rfbench.registry import load as load_registry
from rfbench.reporting import plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


# ---- inputs scaled jointly (datasets.yaml scale_inputs) -------------------------------------------

def test_joint_scaling_is_one_mean_and_std_over_every_entry():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 256, (50, 7)).astype(float)
    X[:, 0] = 0.0                                   # a never-inked pixel: kept at the common scale
    y = rng.integers(0, 3, 50)
    joint = proto.Scaler.fit(X, y, "multiclass", "range", "joint")
    np.testing.assert_allclose(joint.x(X), (X - X.mean()) / X.std(), rtol=1e-13)
    columns = proto.Scaler.fit(X, y, "multiclass", "range")            # the default: each column its own
    expected = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    np.testing.assert_allclose(columns.x(X), expected, rtol=1e-13)
    with pytest.raises(UsageError, match="'columns' or 'joint'"):
        proto.Scaler.fit(X, y, "multiclass", "range", "rows")


def test_registry_scale_inputs_field(tmp_path):
    assert registry.load().dataset("eerf-mnist-joint").scale_inputs == "joint"
    assert registry.load().dataset("eerf-mnist").scale_inputs == "columns"
    mnist, joint = registry.load().dataset("eerf-mnist"), registry.load().dataset("eerf-mnist-joint")
    assert (joint.mirror, joint.holdout, joint.preprocess) == (mnist.mirror, mnist.holdout, mnist.preprocess)
    path = tmp_path / "datasets.yaml"
    path.write_text("suites: {}\ndatasets:\n  toy:\n    task: regression\n    suites: []\n    shape: [10, 2]\n"
                    "    target: y\n    generator: friedman\n    scale_inputs: rows\n")
    with pytest.raises(UsageError, match="scale_inputs' must be one of columns, joint"):
        registry.read_datasets_file(path)


def test_gaussian_features_follow_a_common_scale_of_the_inputs():
    """Why one variant covers every joint scaling (pixel / 255, joint standardisation up to its shift):
    the σ rule scales with the inputs, so the Gaussian features and the fit are the same."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 5))
    y = (X[:, 0] + X[:, 1] ** 2 > 1).astype(int)
    a = RKSClassifier(n_features=30, random_state=3).fit(X, y)
    b = RKSClassifier(n_features=30, random_state=3).fit(255.0 * X, y)
    assert b.sigma_ == pytest.approx(255.0 * a.sigma_, rel=1e-12)
    np.testing.assert_allclose(b.decision_function(255.0 * X), a.decision_function(X), atol=1e-8)


# ---- the spec's figures ------------------------------------------------------------------------------

def records(errors: dict, fit_s=1.0) -> pd.DataFrame:
    """Done records: {(dataset, method, n): [error per repeat]}."""
    rows = []
    for (ds, meth, n), errs in errors.items():
        for fold, e in enumerate(errs):
            rows.append({"dataset": ds, "method": meth, "n_features": n, "fold": fold, "seed": 0,
                         "protocol": "fixed-r3-i5", "status": "done", "metric": "error", "error": e,
                         "fit_s": fit_s * (fold + 1), "total_s": 2.0, "message": ""})
    return pd.DataFrame(rows)


SPEC_TEXT = """\
title: toy figures
results: {results}
run: {{datasets: [eerf-adult], methods: [eerf-paper, rks-paper], features: [10]}}
protocol: {{name: fixed, repeats: 3}}
figures:
  methods: {{EERF: eerf-paper, RKS: rks-paper}}
  datasets: {{Adult: eerf-adult, MNIST: eerf-mnist}}
  variants: {{MNIST: {{eerf-mnist-joint: joint}}}}
  published:
    - {{table: eerf2018_table3_rks.csv, methods: {{EERF: eerf, RKS: rks}}}}
  plots:
    - {{kind: error-vs-m, file: m}}
    - {{kind: error-vs-time, file: t, methods: [EERF, RKS], datasets: [Adult]}}
"""


def toy_spec(tmp_path, text=SPEC_TEXT):
    path = tmp_path / "toy-figures.yaml"
    path.write_text(text.format(results=tmp_path / "out"))
    return load_spec(str(path), load_registry())


def test_figure_data_against_a_naive_mean_and_the_published_cells(tmp_path):
    spec = toy_spec(tmp_path)
    errs = {("eerf-adult", "eerf-paper", 10): [20.0, 22.0, 27.0], ("eerf-adult", "rks-paper", 10): [25.0, 25.0],
            ("eerf-mnist-joint", "rks-paper", 100): [9.0, 10.0], ("eerf-letter", "rks-paper", 10): [50.0]}
    data = plot.figure_data(records(errs), plot.figure_spec(spec))
    ours = data[data["source"] == "rfbench"].set_index(["dataset", "method", "M"])
    e = np.array([20.0, 22.0, 27.0])
    assert ours.loc[("Adult", "EERF", 10), "error"] == pytest.approx(e.mean())
    assert ours.loc[("Adult", "EERF", 10), "se"] == pytest.approx(e.std(ddof=1) / np.sqrt(3))
    assert ours.loc[("Adult", "EERF", 10), "time_s"] == pytest.approx(2.0)      # median of fit_s 1, 2, 3
    assert ours.loc[("Adult", "RKS", 10), "se"] == 0.0
    assert "Letter recognition" not in set(data["dataset"])                     # not a figure dataset
    variant = data[data["source"].str.startswith("rfbench: ")]
    assert variant[["dataset", "method", "M", "error"]].values.tolist() == [["MNIST", "RKS", 100, 9.5]]
    pub = data[data["source"].str.startswith("published")].set_index(["dataset", "method"])
    # Table 3's printed cells: Adult EERF 16.16 (2e-2) at 0.19 + 1.78 s, RKS 17.37 (6e-2) at 1.61 s
    assert pub.loc[("Adult", "EERF"), ["M", "error", "se"]].tolist() == [100, 16.16, 0.02]
    assert pub.loc[("Adult", "EERF"), "time_s"] == pytest.approx(1.97)
    assert pub.loc[("Adult", "RKS"), "time_s"] == pytest.approx(1.61)
    assert pub.loc[("MNIST", "RKS"), ["M", "error", "se"]].tolist() == [450, 7.53, 0.18]


def test_spec_figures_are_written_with_their_data(tmp_path):
    spec = toy_spec(tmp_path)
    errs = {("eerf-adult", m, n): [20.0 - n / 100, 21.0] for m in ("eerf-paper", "rks-paper") for n in (10, 50)}
    written = plot.write_spec_figures(spec, records(errs))
    assert [p.name for p in written] == ["figures.csv", "m.png", "t.png"]
    assert all(p.parent == tmp_path / "out" for p in written)
    assert (tmp_path / "out" / "m.png").read_bytes().startswith(PNG_MAGIC)
    assert len(pd.read_csv(tmp_path / "out" / "figures.csv")) == 4 + 4      # ours + the published cells
    # the figure holds what it says: one panel per declared dataset, our points and the stars
    fig = plot.spec_figure(plot.figure_data(records(errs), plot.figure_spec(spec)), plot.figure_spec(spec),
                           {"kind": "error-vs-m", "file": "m"})
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Adult", "MNIST"]
    assert fig.axes[0].get_xlabel().startswith("M (random features")


@pytest.mark.parametrize("block, message", [
    ("figures: {methods: {EERF: eerf-paper}, datasets: {Adult: eerf-adult}, plots: [{kind: pie, file: x}]}",
     "a 'kind' among error-vs-m, error-vs-time"),
    ("figures: {methods: {EERF: eerf-paper}, datasets: {Adult: eerf-adult}}", "plots must list"),
    ("figures: {methods: [eerf-paper], datasets: {Adult: eerf-adult}, plots: [{kind: error-vs-m, file: x}]}",
     "methods must map paper names"),
    ("figures: {methods: {EERF: eerf-paper}, datasets: {Adult: eerf-adult},\n"
     "          plots: [{kind: error-vs-m, file: x, methods: [LKRF]}]}", "methods LKRF not in figures.methods"),
    ("figures: {methods: {EERF: eerf-paper}, datasets: {Adult: eerf-adult}, published: [{table: t.csv}],\n"
     "          plots: [{kind: error-vs-m, file: x}]}", "each entry needs 'table' and 'methods'"),
    ("", "declares no figures"),
])
def test_malformed_figure_blocks_are_one_line_errors(tmp_path, block, message):
    text = SPEC_TEXT.split("figures:")[0] + textwrap.dedent(block).replace("{", "{{").replace("}", "}}") + "\n"
    with pytest.raises(UsageError, match=message):
        plot.figure_spec(toy_spec(tmp_path, text))


def test_plot_command_line_errors():
    runner = CliRunner()
    for args, message in ((["plot"], "give the results directories"),
                          (["plot", "--spec", "eerf2018-figures", "results/x"], "give no DIRS"),
                          (["plot", "--spec", "eerf2018-table3"], "declares no figures")):
        res = runner.invoke(cli, args)
        assert isinstance(res.exception, UsageError) and message in str(res.exception), args
    # through the installed command: one line on stderr, no traceback
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "plot", "--spec", "eerf2018-table3"],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "declares no figures" in res.stderr and "Traceback" not in res.stderr


def test_committed_figures_spec_plots_from_its_results(tmp_path):
    spec = load_spec("eerf2018-figures", load_registry())
    res = CliRunner().invoke(cli, ["plot", "--spec", "eerf2018-figures", "--output", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["error-vs-m.png", "error-vs-time.png", "figures.csv"]
    committed = spec.results / "figures.csv"
    if committed.is_file():          # the committed data is the tool's output on the committed records
        pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "figures.csv"), pd.read_csv(committed))
    assert Path(spec.results).name == "eerf2018-figures"


# ---- dataset variants in the check (MNIST with its pixels scaled jointly) ----------------------------

def test_dataset_variant_rows_are_judged_but_not_counted():
    from rfbench.experiments import check
    from tests.experiments.test_eerf_tables import _records

    spec = load_spec("eerf2018-table5", load_registry())
    assert spec.dataset_variants == {"eerf-mnist": ("eerf-mnist-joint",)}
    rows = (_records("eerf-mnist", "lkrf-paper", np.full(10, 12.9), n=450)
            + _records("eerf-mnist-joint", "lkrf-paper", np.linspace(7.4, 7.8, 10), n=450))
    table = check.compare(spec, pd.DataFrame(rows), load_registry())
    joint = table[table["dataset"] == "eerf-mnist-joint"].set_index("method")
    # LKRF's variant row is judged against MNIST's published cell (7.59, s.e. 0.17); EERF is excluded
    # on the variant in Table 5's plan (its rows are Table 3's), so it has no row here
    assert list(joint.index) == ["lkrf-paper"] and bool(joint.loc["lkrf-paper", "variant"])
    assert joint.loc["lkrf-paper", "status"] == "pass"
    assert joint.loc["lkrf-paper", "diff_stds"] == pytest.approx((7.6 - 7.59) / 0.17)
    paper = check.paper_cells(table)
    assert "eerf-mnist-joint" not in set(paper["dataset"])                     # never counted
    assert paper.set_index(["dataset", "method"]).loc[("eerf-mnist", "lkrf-paper"), "status"] == "fail"
    assert "dataset variants: eerf-mnist-joint (another reading of eerf-mnist)" in check.render(table, spec)


def test_dataset_variants_must_name_the_specs_datasets(tmp_path):
    text = (Path(load_spec("eerf2018-table3", load_registry()).path).read_text()
            .replace("dataset_variants: {eerf-mnist: [eerf-mnist-joint]}", "dataset_variants: {mnist: [x]}"))
    path = tmp_path / "bad.yaml"
    path.write_text(text.replace("results: ../results/eerf2018-table3", f"results: {tmp_path}/r")
                    .replace("reference: reference/", f"reference: {load_spec('eerf2018-table3', load_registry()).path.parent}/reference/"))
    with pytest.raises(UsageError, match="dataset_variants must map datasets of 'datasets'"):
        load_spec(str(path), load_registry())
