"""rfbench plot: the statistics of the critical-difference diagram, the files, the figures' contents
and the 'nothing to plot' errors, on small synthetic result frames."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from rfbench.errors import UsageError
from rfbench.reporting import plot

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
PDF_MAGIC = b"%PDF-"


def frame(datasets=("d1", "d2", "d3", "d4", "d5", "d6"), methods=("m-a", "m-b", "m-c"), ns=(10, 50),
          folds=3, metric="rmse100", seed=0) -> pd.DataFrame:
    """Done records: method j is on average j worse, with noise, and slower with n."""
    rng = np.random.default_rng(seed)
    rows = []
    for di, ds in enumerate(datasets):
        for j, meth in enumerate(methods):
            for n in ns:
                for fold in range(folds):
                    err = 10 + di + 0.8 * j - 0.002 * n + rng.normal(0, 1.0)
                    rows.append({"dataset": ds, "method": meth, "n_features": n, "fold": fold, "seed": 0,
                                 "protocol": "cv-o3-i3", "status": "done", "metric": metric, "error": err,
                                 "total_s": 0.01 * n * (j + 1) * (1 + rng.uniform()), "message": ""})
    return pd.DataFrame(rows)


def naive_ranks(df, n, higher_is_better=False):
    means = df[df["n_features"] == n].groupby(["dataset", "method"])["error"].mean().unstack()
    ranks = {m: 0.0 for m in means.columns}
    for _, row in means.iterrows():
        order = (-row if higher_is_better else row).to_dict()
        for m, v in order.items():
            below = sum(1 for w in order.values() if w < v)
            equal = sum(1 for w in order.values() if w == v)
            ranks[m] += below + (equal + 1) / 2       # average rank of ties
    return pd.Series({m: r / len(means) for m, r in ranks.items()}), means


@pytest.mark.parametrize("metric", ["rmse100", "accuracy"])
def test_cd_ranks_equal_naive_average_ranks(metric):
    df = frame(metric=metric, seed=1)
    # a tie on one dataset: ranks must be averaged
    tie = (df["dataset"] == "d2") & (df["n_features"] == 10) & (df["method"] == "m-b")
    df.loc[tie, "error"] = df[(df["dataset"] == "d2") & (df["n_features"] == 10)
                              & (df["method"] == "m-a")]["error"].to_numpy()
    res = plot.cd_analysis(df, 10)
    want, _ = naive_ranks(df, 10, higher_is_better=metric == "accuracy")
    pd.testing.assert_series_equal(res.ranks.sort_index(), want.sort_index(), check_names=False)
    assert res.n_datasets == 6 and res.left_out == []
    assert res.ranks.sum() == pytest.approx(3 * 4 / 2)          # ranks 1..k always sum to k(k+1)/2


def test_friedman_p_equals_scipy_on_the_same_matrix():
    df = frame(seed=2)
    res = plot.cd_analysis(df, 50)
    _, means = naive_ranks(df, 50)
    want = stats.friedmanchisquare(*[means[m].to_numpy() for m in means.columns])
    assert res.friedman_p == pytest.approx(want.pvalue, rel=1e-12)
    assert res.friedman_stat == pytest.approx(want.statistic, rel=1e-12)
    # Nemenyi critical difference q_alpha * sqrt(k(k+1)/(6N)); q_0.05 for k = 3 is 2.343 (Demšar 2006)
    assert res.cd == pytest.approx(2.343 * np.sqrt(3 * 4 / (6 * 6)), rel=1e-3)
    assert "Friedman" in res.title() and "α = 0.05" in res.title() and "N = 6 datasets" in res.title()


def test_cd_uses_only_datasets_complete_for_every_method():
    df = frame()
    # m-c lost a fold on d1 (error) and never ran fold 2 on d2: both datasets are left out at n=10
    df.loc[(df["dataset"] == "d1") & (df["method"] == "m-c") & (df["fold"] == 0), "status"] = "error"
    df = df[~((df["dataset"] == "d2") & (df["method"] == "m-c") & (df["fold"] == 2))]
    res = plot.cd_analysis(df, 10)
    assert res.left_out == ["d1", "d2"] and list(res.scores.index) == ["d3", "d4", "d5", "d6"]
    want, _ = naive_ranks(df[df["dataset"].isin(["d3", "d4", "d5", "d6"])], 10)
    pd.testing.assert_series_equal(res.ranks.sort_index(), want.sort_index(), check_names=False)


def test_methods_run_on_disjoint_datasets_leave_the_fewest_covered_out_to_rank_the_rest():
    """gp runs below N rows and gp-sod above: no dataset has both, so nothing could be ranked with
    both; rankable_methods leaves out the method complete on the fewest datasets (m-d: 2 of 6) and
    the rest rank on the datasets they share."""
    df = frame(methods=("m-a", "m-b", "m-c", "m-d"))
    df = df[~((df["method"] == "m-c") & df["dataset"].isin(["d5", "d6"]))]            # m-c on d1-d4
    df = df[~((df["method"] == "m-d") & df["dataset"].isin(["d1", "d2", "d3", "d4"]))]   # m-d on d5, d6
    with pytest.raises(UsageError, match="0 dataset"):
        plot.cd_analysis(df, 10)
    kept, left_out = plot.rankable_methods(df, 10)
    assert kept == ["m-a", "m-b", "m-c"] and left_out == {"m-d": 2}
    res = plot.cd_analysis(df[df["method"].isin(kept)], 10)
    assert list(res.scores.index) == ["d1", "d2", "d3", "d4"]
    # every method complete on two datasets or more: nothing is left out
    assert plot.rankable_methods(frame(), 10) == (["m-a", "m-b", "m-c"], {})


def test_the_cd_figure_of_such_results_is_drawn_without_the_method_and_says_so(tmp_path):
    """rfbench plot --kind cd on them: the diagram of the methods that share datasets, drawn (not a
    skip), and a note naming the one left out (plot.ranking_results, the rule of every ranking)."""
    sets = tuple(f"d{i}" for i in range(1, 13))
    df = frame(datasets=sets, methods=("m-a", "m-b", "m-c", "m-d"), ns=(10,))
    df = df[~((df["method"] == "m-d") & ~df["dataset"].isin(["d1"]))]                  # m-d on d1 only
    df = df[~((df["method"] == "m-c") & df["dataset"].isin(["d1"]))]                    # m-c everywhere else
    figs, notes = plot.figures(df, "cd")
    assert [n for n, _ in figs] == [10]
    assert notes == ["at n=10, left out of the ranking, a complete cell on too few of the datasets the others "
                     "share: m-d (1 dataset)"]
    written, notes = plot.make_plots(df, "cd", tmp_path)
    assert [p.name for p in written] == ["cd-diagram-n10.png"] and notes[0].startswith("cd: at n=10, left out")


def test_wilcoxon_holm_variant_and_two_methods():
    df = frame(methods=("m-a", "m-b"))
    res = plot.cd_analysis(df, 10, alpha=0.1, test="nemenyi")
    assert res.test == "wilcoxon-holm" and np.isnan(res.friedman_p) and res.cd is None   # Friedman needs 3
    res = plot.cd_analysis(frame(), 10, test="wilcoxon-holm")
    assert res.test == "wilcoxon-holm" and "Holm" in res.title()
    assert res.pvalues.shape == (3, 3) and (np.diag(res.pvalues) == 1).all()
    # no post-hoc difference unless the Friedman test rejects at alpha (Demšar 2006)
    strict = plot.cd_analysis(frame(), 10, alpha=1e-12)
    assert not strict.friedman_p < 1e-12 and not strict.significant.to_numpy().any()


@pytest.mark.parametrize("kind, fmt, names", [
    ("cd", "png", ["cd-diagram-n10.png", "cd-diagram-n50.png"]),
    ("error-vs-n", "pdf", ["error-vs-n.pdf"]),
    ("walltime", "png", ["walltime.png"]),
    ("pareto", "pdf", ["error-vs-walltime.pdf"]),
])
def test_files_have_the_expected_names_and_are_valid_png_and_pdf(tmp_path, kind, fmt, names):
    df = frame(datasets=("d1", "d2", "d3"), folds=2)
    written, notes = plot.make_plots(df, kind, tmp_path, fmt)
    assert [p.name for p in written] == names and notes == []
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    magic = PNG_MAGIC if fmt == "png" else PDF_MAGIC
    assert all(p.read_bytes()[:len(magic)] == magic for p in written)


def test_error_vs_n_has_one_line_per_method_per_panel():
    df = frame(datasets=("d1", "d2", "d3"), folds=2)
    df = df[~((df["dataset"] == "d3") & (df["method"] == "m-b"))]       # m-b never ran on d3
    fig = plot.error_vs_n_figure(df)
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == ["d1", "d2", "d3"]
    for ax in panels:
        labels = [line.get_label() for line in ax.get_lines() if not line.get_label().startswith("_")]
        assert sorted(labels) == (["m-a", "m-c"] if ax.get_title() == "d3" else ["m-a", "m-b", "m-c"])
        for line in ax.get_lines():
            if line.get_label() == "m-a":
                assert len(line.get_xdata()) == 2                          # one point per n
    plot._pyplot().close(fig)


def test_error_and_pareto_figures_of_a_screen_say_so():
    full = frame(datasets=("d1", "d2"), folds=3)                       # protocol cv-o3-i3: complete
    screen = full[full["fold"] < 2]                                    # a --folds 0-1 run
    for make in (plot.error_vs_n_figure, plot.pareto_figure):
        complete, partial = make(full), make(screen)
        assert "screen" not in complete._suptitle.get_text()
        assert ("(a screen: 12 of 12 cells have fewer folds than the protocol's 3"
                in partial._suptitle.get_text()), partial._suptitle.get_text()
        plot._pyplot().close(complete)
        plot._pyplot().close(partial)


def test_pareto_front():
    pts = np.array([[1.0, 5.0], [2.0, 4.0], [3.0, 4.5], [4.0, 1.0], [0.5, 9.0], [4.0, 0.5]])
    assert list(plot.pareto_front(pts)) == [4, 0, 1, 5]


def test_nothing_to_plot_errors(tmp_path):
    one_method = frame(methods=("m-a",))
    with pytest.raises(UsageError, match="1 method.*at least 2"):
        plot.make_plots(one_method, "cd", tmp_path, "png")
    one_dataset = frame(datasets=("d1",))
    with pytest.raises(UsageError, match="1 dataset.*at least 2"):
        plot.make_plots(one_dataset, "cd", tmp_path, "png")
    one_n = frame(ns=(10,))
    with pytest.raises(UsageError, match="at least 2 feature budgets"):
        plot.make_plots(one_n, "error-vs-n", tmp_path, "png")
    # --kind all: skipped with a note, the others are written
    written, notes = plot.make_plots(frame(methods=("m-a",), ns=(10,), folds=2), "all", tmp_path, "png")
    assert sorted(p.name for p in written) == ["error-vs-walltime.png", "walltime.png"]
    assert len(notes) == 2 and notes[0].startswith("skipped cd: ") and "skipped error-vs-n" in notes[1]
    failed = frame().assign(status="error", error=np.nan)
    with pytest.raises(UsageError, match="nothing to plot"):
        plot.make_plots(failed, "all", tmp_path, "png")
    with pytest.raises(UsageError, match="format"):
        plot.make_plots(frame(), "all", tmp_path, "svg")


def test_cli_plot_exit_codes(tmp_path, capsys):
    from rfbench.cli import main
    from rfbench.store import COLUMNS

    run = tmp_path / "run"
    run.mkdir()
    frame(methods=("m-a",), ns=(10,), folds=2).reindex(columns=COLUMNS).to_csv(run / "results.csv", index=False)
    with pytest.raises(SystemExit) as exc:
        main(["plot", str(run), "--kind", "cd", "--output", str(tmp_path / "out")])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rfbench: error: critical-difference diagram") and "\n" not in err
    main(["plot", str(run), "--kind", "walltime", "--format", "pdf", "--output", str(tmp_path / "out")])
    assert (tmp_path / "out" / "walltime.pdf").read_bytes()[:5] == PDF_MAGIC


def test_cd_minimum_follows_the_tests_critical_values():
    """The fewest datasets on which the diagram's tests can reject at all."""
    from rfbench.reporting import stats as rstats

    assert plot.cd_minimum(2) == 6                      # two methods: the signed-rank test, N ≥ 6
    assert rstats.wilcoxon_critical_value(5) is None and rstats.wilcoxon_critical_value(6) is not None
    assert plot.cd_minimum(3) == 3                      # Friedman χ² = N(k − 1) = 6: p = e^-3 < 0.05
    assert stats.chi2.sf(2 * 2, 2) > 0.05 and stats.chi2.sf(3 * 2, 2) < 0.05
    assert plot.cd_minimum(3, test="wilcoxon-holm") == 7     # Holm: 0.05 / 3 pairs needs 2/2^N below it


@pytest.mark.parametrize("methods, datasets", [(("m-a", "m-b", "m-c"), ("d1", "d2")),
                                               (("m-a", "m-b"), ("d1", "d2", "d3"))])
def test_too_few_datasets_for_the_cd_tests_draw_no_diagram_and_say_so_in_one_line(tmp_path, methods, datasets):
    df = frame(methods=methods, datasets=datasets, ns=(10,))
    with pytest.raises(UsageError) as exc:
        plot.make_plots(df, "cd", tmp_path, "png")
    message = str(exc.value)
    assert "\n" not in message and "too few datasets for a test" in message
    assert f"N = {len(datasets)};" in message and f"only from N = {plot.cd_minimum(len(methods))}" in message
    assert not list(tmp_path.glob("*.png"))
    written, notes = plot.make_plots(df, "all", tmp_path, "png")       # the other kinds are drawn
    assert "cd-diagram-n10.png" not in {p.name for p in written}
    assert any("too few datasets" in n for n in notes)


def test_tied_average_ranks_are_drawn_apart():
    """Two pairs of methods with identical errors: equal average ranks, which scikit-posthocs draws
    on one point; their markers, elbows and labels are separate, and the bar joining them has length."""
    df = frame(methods=("m-a", "m-b", "m-c", "m-d"), ns=(10,))
    for a, b in (("m-a", "m-b"), ("m-c", "m-d")):
        df.loc[df["method"] == b, "error"] = df.loc[df["method"] == a, "error"].to_numpy()
    res = plot.cd_analysis(df, 10)
    assert res.ranks["m-a"] == res.ranks["m-b"] and res.ranks["m-c"] == res.ranks["m-d"]
    fig = plot.cd_figure(res)
    ax = fig.axes[0]
    markers = [tuple(c.get_offsets()[0]) for c in ax.collections]
    assert len(markers) == 4 and len(set(markers)) == 4
    xs = sorted(x for x, _ in markers)
    assert min(np.diff(xs)) > 0.01                                     # apart, not on one point
    labels = [t for t in ax.texts if "(" in t.get_text() and "CD" not in t.get_text()]
    assert len(labels) == 4 and len({t.get_position() for t in labels}) == 4
    for t in labels:           # the rank printed is still the tied average rank
        name = t.get_text().replace("(", " ").replace(")", " ").split()
        assert f"{res.ranks[[n for n in name if n.startswith('m-')][0]]:.2f}" in t.get_text()
    elbows = [line for line in ax.lines if len(line.get_xdata()) == 3]
    assert len({float(line.get_xdata()[1]) for line in elbows}) == 4
    bars = [line for line in ax.lines if len(line.get_xdata()) == 2 and float(line.get_ydata()[0]) < 0]
    assert bars and all(np.ptp(np.asarray(b.get_xdata(), float)) > 0.01 for b in bars)
    assert "side by side" in fig.texts[-1].get_text()
    untied = plot.cd_figure(plot.cd_analysis(frame(), 10))              # no tie: markers on the ranks
    ranks = sorted(plot.cd_analysis(frame(), 10).ranks)
    assert sorted(c.get_offsets()[0][0] for c in untied.axes[0].collections) == pytest.approx(ranks)
