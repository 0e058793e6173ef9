"""Figures of a results store (``rfbench plot``): matplotlib with the Agg backend, so it runs headless.

Kinds (one file each, the critical-difference diagram one file per feature budget n):

* ``cd``          critical-difference diagram of the methods across datasets at each n: average
                  ranks, Friedman test, then the Nemenyi post-hoc test (bar = critical difference)
                  or pairwise Wilcoxon signed-rank tests with Holm's correction; methods joined by
                  a thick bar are not significantly different. Only datasets on which every method
                  has a complete cell (every fold done) at that n take part; when fewer than two
                  have, the diagram is a screen: every dataset with all methods, each cell's mean
                  over the (seed, fold) tasks all of them have in common, titled so
                  ("screen: folds 0-2 of 10").
* ``error-vs-n``  error (mean ± std over the outer folds) against n, one panel per dataset and one
                  line per method.
* ``walltime``    per-fold ``total_s`` (tuning + fit + predict) per method and n, box plot with the
                  folds of every dataset as points, log scale.
* ``pareto``      error against wall time per dataset (log x), one point per (method, n), with the
                  Pareto front (no other point is both faster and better) as a dashed line.

The records' ``metric`` says which way is better and what the axes are called (the one table of
metrics, :data:`rfbench.reporting.cells.METRICS`: accuracy is higher-is-better, the errors lower-is-better).

The statistics come from scipy (Friedman) and scikit-posthocs (Nemenyi, Wilcoxon–Holm, the
diagram itself); this module only selects the cells and lays out the figures.
"""

from __future__ import annotations

import math
import textwrap
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.errors import UsageError
from rfbench.formats import FIGURE_FORMATS
from rfbench.registry import load_yaml
from rfbench.reporting import cells, timing
from rfbench.reporting.published import published_dir, read_published
from rfbench.store import atomic_write_text

KINDS = ("cd", "error-vs-n", "walltime", "pareto")
TIME_KINDS = ("walltime", "pareto")      # the kinds that plot walltimes
CD_TESTS = ("nemenyi", "wilcoxon-holm")
FORMATS = FIGURE_FORMATS
FILE_STEMS = {"cd": "cd-diagram", "error-vs-n": "error-vs-n", "walltime": "walltime",
              "pareto": "error-vs-walltime"}
KEY = ["dataset", "method", "n_features", "fold", "seed", "protocol"]


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


# -- data selection ------------------------------------------------------------------------------
def _prepare(df: pd.DataFrame) -> pd.DataFrame:
    """All rows, one per task (the same record loaded from two directories counts once)."""
    missing = {"dataset", "method", "n_features", "status", "error"} - set(df.columns)
    if missing:
        raise UsageError(f"results lack column(s) {', '.join(sorted(missing))}; not an rfbench results table")
    df = df.copy()
    for col in ("fold", "seed", "protocol", "metric", "total_s"):
        if col not in df.columns:
            df[col] = np.nan
    df["n_features"] = df["n_features"].astype(int)
    df["error"] = pd.to_numeric(df["error"], errors="coerce")
    df["total_s"] = pd.to_numeric(df["total_s"], errors="coerce")
    return df.drop_duplicates(subset=KEY, keep="last").reset_index(drop=True)


def _done(df: pd.DataFrame) -> pd.DataFrame:
    return df[(df["status"] == "done") & np.isfinite(df["error"])]


def _dataset_metric(df: pd.DataFrame) -> dict[str, str]:
    """dataset → its metric (the most frequent one among its done records)."""
    out = {}
    for ds, g in _done(df).groupby("dataset"):
        m = g["metric"].dropna()
        out[ds] = str(m.mode().iloc[0]) if len(m) else ""      # not recorded: shown as "error"
    return out


def _higher_is_better(metric: str) -> bool:
    return cells.metric(metric).higher_is_better


def _metric_label(metrics) -> str:
    return cells.axis_label(metrics)


def _complete_mask(done: pd.DataFrame, failed: set) -> pd.Series:
    """Per (dataset, method) at one n: complete (cells.completeness, every task done), or where the
    protocol is unknown, as many folds as the method with the most on that dataset."""
    comp = cells.completeness(done).droplevel("n_features")
    most = comp["folds"].groupby(level="dataset").transform("max")
    ok = comp["complete"] & (comp["expected"].notna() | (comp["folds"] >= most))
    return ok & ~comp.index.isin(list(failed))


def partial_note(done: pd.DataFrame) -> str:
    """'' when every plotted cell is complete (cells.completeness), else what the means are over,
    e.g. ' (a screen: 8 of 20 cells have fewer folds than the protocol's 10)'."""
    comp = cells.completeness(done)
    partial = int((~comp["complete"]).sum())
    if not partial:
        return ""
    total = cells.protocol_folds(done["protocol"].dropna().unique()) if done["protocol"].notna().any() else None
    of = f" than the protocol's {total}" if total else ""
    return f"\n(a screen: {partial} of {len(comp)} cells have fewer folds{of}; each mean is over its own folds)"


def rankable_methods(df: pd.DataFrame, n: int, need: int = 2) -> tuple[list[str], dict[str, int]]:
    """(methods kept, {method left out: the datasets where its cell is complete}) at n: while fewer
    than ``need`` datasets have a complete cell of every kept method, the method complete on the
    fewest datasets is left out (ties: the last by name). A method run only where another is not
    (gp below N rows, gp-sod above) would otherwise leave no dataset to rank anyone on."""
    df = _prepare(df)
    df = df[df["n_features"] == n]
    done = _done(df)
    methods = sorted(done["method"].unique())
    if done.empty:
        return methods, {}
    bad = df[(df["status"] != "done") | ~np.isfinite(df["error"])]
    ok = _complete_mask(done, set(zip(bad["dataset"], bad["method"], strict=True)))
    table = ok[ok].reset_index().pivot_table(index="dataset", columns="method", aggfunc="size").notna()
    table = table.reindex(columns=methods, fill_value=False)
    left_out: dict[str, int] = {}
    while len(methods) > 2 and int(table[methods].all(axis=1).sum()) < need:
        counts = table[methods].sum()
        worst = max(methods, key=lambda m: (-int(counts[m]), m))
        left_out[worst] = int(counts[worst])
        methods = [m for m in methods if m != worst]
    return methods, left_out


def ranking_results(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, dict[str, int]]:
    """(the results the ranks at n are taken on, {method left out: the datasets where its cell is
    complete}): all of ``df`` when :func:`cell_means` has two datasets to rank every method on
    (complete cells, or a screen of common folds), else only the methods :func:`rankable_methods` keeps. The
    one rule of every ranking (the gp table's rank row, the critical-difference diagram, the site's
    leaderboards), so that a method run where another is not (gp below N rows, gp-sod above) leaves
    the others ranked instead of none."""
    prepared = _prepare(df)
    full, _, _ = cell_means(prepared, n)
    if len(full) >= 2:
        return df, {}
    kept, left_out = rankable_methods(prepared, n)
    return (df[df["method"].isin(kept)], left_out) if left_out else (df, {})


def left_out_note(left_out: dict[str, int]) -> str:
    """The line that names the methods :func:`ranking_results` left out of a ranking."""
    return ("left out of the ranking, a complete cell on too few of the datasets the others share: "
            + ", ".join(f"{m} ({k} dataset{'s' if k != 1 else ''})" for m, k in left_out.items()))


def cell_means(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, str | None, list[str]]:
    """(dataset × method table of the mean outer-fold error at n, screen label, datasets left out).

    With at least two datasets on which every method's cell is complete (every task done): those
    datasets and the cells' means over all their folds (screen None). Else a screen: every dataset
    on which every method has finished tasks, each mean over the (seed, fold) tasks all methods there
    have in common, labelled e.g. 'screen: folds 0-2 of 10'."""
    df = df[df["n_features"] == n]
    done = _done(df)
    if done.empty:
        return pd.DataFrame(), None, []
    methods = sorted(done["method"].unique())
    bad = df[(df["status"] != "done") | ~np.isfinite(df["error"])]
    failed = set(zip(bad["dataset"], bad["method"], strict=True))
    ok = _complete_mask(done, failed)
    means = done.groupby(["dataset", "method"])["error"].mean()
    table = means.where(ok.reindex(means.index, fill_value=False)).unstack("method").reindex(columns=methods)
    full = table.dropna()
    if len(full) >= 2:
        return full, None, sorted(set(table.index) - set(full.index))
    done = done.assign(seed=cells.seeds_of(done))
    rows, on = {}, {}
    for ds, g in done.groupby("dataset"):
        if set(g["method"].unique()) != set(methods):       # checked first: the screen skips most sets
            continue
        per = {m: e.set_index(["seed", "fold"])["error"] for m, e in g.groupby("method")}
        common = cells.common_index(per.values())
        if len(common):
            rows[ds], on[ds] = {m: float(e.loc[common].mean()) for m, e in per.items()}, common
    screen = pd.DataFrame.from_dict(rows, orient="index", columns=methods)
    total = cells.protocol_folds(done["protocol"].dropna().unique()) if done["protocol"].notna().any() else None
    label = cells.screen_label(on.values(), total) if on else None
    return screen, label, sorted(set(done["dataset"]) - set(rows))


def _loss_means(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, pd.DataFrame, str | None, list[str]]:
    """:func:`cell_means` of the prepared results at n, and the same oriented so that lower is better
    (accuracy negated): (scores, loss, screen label, datasets left out)."""
    full, screen, left_out = cell_means(df, n)
    metric_of = _dataset_metric(df)
    sign = np.array([-1.0 if _higher_is_better(metric_of.get(ds, "")) else 1.0 for ds in full.index])
    return full, full.mul(sign, axis=0), screen, left_out


def dataset_ranks(loss: pd.DataFrame) -> pd.DataFrame:
    """dataset × method ranks of a loss table (1 = lowest loss on that dataset, ties share their
    average rank): the ranks the critical-difference diagram averages."""
    from scipy import stats

    return pd.DataFrame(stats.rankdata(loss.to_numpy(float), axis=1), index=loss.index, columns=loss.columns)


def rank_table(df: pd.DataFrame, n: int) -> tuple[pd.DataFrame, str | None, list[str]]:
    """(dataset × method ranks at n, screen label, datasets left out) on the datasets and cell means
    the critical-difference diagram at n ranks (:func:`cell_means`: those on which every method is
    complete when at least two are, else a screen on the folds all have in common); their mean over
    the datasets is the diagram's average rank. No dataset: an empty table."""
    df = _prepare(df)
    _, loss, screen, left_out = _loss_means(df, n)
    return (dataset_ranks(loss) if len(loss) else pd.DataFrame()), screen, left_out


@dataclass
class CDResult:
    n: int
    test: str                      # "nemenyi" or "wilcoxon-holm"
    alpha: float
    scores: pd.DataFrame           # dataset × method: mean error (or accuracy) of the complete cells
    loss: pd.DataFrame             # the same, oriented so that lower is better (accuracy negated)
    ranks: pd.Series               # method → average rank over the datasets (1 = best)
    friedman_stat: float
    friedman_p: float              # NaN with two methods (scipy's Friedman test needs three)
    pvalues: pd.DataFrame          # method × method post-hoc p-values
    significant: pd.DataFrame      # method × method, True where the difference is significant
    cd: float | None               # Nemenyi critical difference (None for Wilcoxon–Holm)
    left_out: list[str] = field(default_factory=list)   # datasets without every method complete
    metric: str = "error"          # the axis label of the metric (cells.METRICS)
    higher_is_better: bool = False
    screen: str | None = None      # 'screen: folds 0-2 of 10' when not on complete cells

    @property
    def n_datasets(self) -> int:
        return len(self.scores)

    def title(self) -> str:
        k = len(self.ranks)
        if math.isnan(self.friedman_p):
            first = f"{k} methods, no Friedman test (needs ≥ 3)"
        else:
            first = f"Friedman χ² = {self.friedman_stat:.2f}, p = {_fmt_p(self.friedman_p)}"
            if not self.friedman_p < self.alpha:
                first += " (no significant difference)"
        post = ("Nemenyi post-hoc" if self.test == "nemenyi"
                else "Wilcoxon signed-rank post-hoc, Holm-corrected")
        screen = f" ({self.screen}, not the full protocol)" if self.screen else ""
        return (f"Critical-difference diagram, n = {self.n}, N = {self.n_datasets} datasets{screen}\n"
                f"{first}; {post}, α = {self.alpha:g}")


def _fmt_p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-3 else f"{p:.1e}"


def cd_analysis(df: pd.DataFrame, n: int, alpha: float = 0.05, test: str = "nemenyi") -> CDResult:
    """Average ranks, Friedman test and post-hoc p-values of the methods at n over the datasets on
    which every method has a complete cell."""
    import scikit_posthocs as sp
    from scipy import stats

    if test not in CD_TESTS:
        raise UsageError(f"unknown critical-difference test '{test}'; use one of {', '.join(CD_TESTS)}")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha} must be between 0 and 1")
    df = _prepare(df)
    methods = sorted(_done(df[df["n_features"] == n])["method"].unique())
    if len(methods) < 2:
        raise UsageError(f"critical-difference diagram at n={n}: {len(methods)} method(s) with results "
                         f"({', '.join(methods) or 'none'}); it needs at least 2")
    full, loss, screen, left_out = _loss_means(df, n)
    if len(full) < 2:
        raise UsageError(f"critical-difference diagram at n={n}: {len(full)} dataset(s) with results for every "
                         f"one of {', '.join(methods)}; it needs at least 2")
    metric_of = _dataset_metric(df)
    values = loss.to_numpy(float)
    ranks = dataset_ranks(loss).mean(axis=0)
    k = len(methods)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        if k >= 3:
            res = stats.friedmanchisquare(*values.T)
            f_stat, f_p = float(res.statistic), float(res.pvalue)
        else:
            f_stat, f_p = math.nan, math.nan
        if test == "nemenyi" and k >= 3:
            pv = sp.posthoc_nemenyi_friedman(values)
        else:
            if test == "nemenyi":   # Nemenyi needs the Friedman ranks of ≥ 3 methods
                test = "wilcoxon-holm"
            pv = sp.posthoc_wilcoxon([values[:, j] for j in range(k)], p_adjust="holm")
    pv = pd.DataFrame(pv.to_numpy(float), index=methods, columns=methods).fillna(1.0)
    sig = pv.to_numpy() < alpha
    np.fill_diagonal(sig, False)
    if k >= 3 and not f_p < alpha:   # Demšar (2006): post-hoc tests only after the Friedman test rejects
        sig[:] = False
    significant = pd.DataFrame(sig, index=methods, columns=methods)
    cd = None
    if test == "nemenyi":
        q = float(stats.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
        cd = q * math.sqrt(k * (k + 1) / (6.0 * len(full)))
    metrics = {metric_of.get(ds, "") for ds in full.index}
    return CDResult(n=n, test=test, alpha=alpha, scores=full, loss=loss, ranks=ranks, friedman_stat=f_stat,
                    friedman_p=f_p, pvalues=pv, significant=significant, cd=cd, left_out=left_out,
                    metric=_metric_label(metrics), higher_is_better=cells.higher_is_better(metrics), screen=screen)


def cd_minimum(k: int, alpha: float = 0.05, test: str = "nemenyi") -> int:
    """The fewest datasets N on which the diagram's tests can find any difference among k methods
    at ``alpha``, with the strongest data there is (every dataset ranking the methods alike): the
    Friedman test (k ≥ 3; its statistic is then N(k − 1), p from the χ² approximation scipy uses)
    must reject, and the post-hoc test too: Nemenyi's critical difference below the widest rank
    gap k − 1, or (Wilcoxon–Holm, and any two methods) the signed-rank test at alpha divided by the
    k(k − 1)/2 pairs (Holm's first step), by the exact critical values of rfbench.reporting.stats."""
    from scipy import stats as st

    from rfbench.reporting import stats

    if test == "nemenyi" and k < 3:
        test = "wilcoxon-holm"           # as cd_analysis: Nemenyi needs the Friedman ranks of ≥ 3 methods
    for n in range(2, 10_000):
        if k >= 3 and not st.chi2.sf(n * (k - 1), k - 1) < alpha:
            continue
        if test == "nemenyi":
            q = float(st.studentized_range.ppf(1 - alpha, k, np.inf)) / math.sqrt(2)
            if q * math.sqrt(k * (k + 1) / (6.0 * n)) < k - 1:
                return n
        elif stats.wilcoxon_critical_value(n, alpha / (k * (k - 1) / 2)) is not None:
            return n
    raise ValueError(f"no N up to 10000 for k = {k}, alpha = {alpha}")


def too_few_for_cd(res: CDResult) -> str | None:
    """One line when res has fewer datasets than :func:`cd_minimum` (no diagram is drawn), else None."""
    k = len(res.ranks)
    need = cd_minimum(k, res.alpha, res.test)
    if res.n_datasets >= need:
        return None
    post = "Nemenyi" if res.test == "nemenyi" else "Wilcoxon–Holm"
    tests = f"the Friedman and {post} tests" if k >= 3 else "the Wilcoxon signed-rank test"
    return (f"critical-difference diagram at n={res.n}: too few datasets for a test (N = {res.n_datasets}; "
            f"with {k} methods {tests} at α = {res.alpha:g} can reject only from N = {need}), so none is drawn")


# -- figures -------------------------------------------------------------------------------------
def _colors(methods) -> dict[str, str]:
    plt = _pyplot()
    cycle = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if len(methods) > len(cycle):
        cmap = plt.get_cmap("tab20")
        cycle = [cmap(i % 20) for i in range(len(methods))]
    return {m: cycle[i] for i, m in enumerate(sorted(methods))}


def cd_figure(res: CDResult):
    """The critical-difference diagram of scikit-posthocs, with the Nemenyi critical difference
    drawn above the rank axis."""
    import scikit_posthocs as sp
    from matplotlib.transforms import ScaledTranslation

    plt = _pyplot()
    k = len(res.ranks)
    fig, ax = plt.subplots(figsize=(8.5, 1.7 + 0.3 * k + (0.25 if res.left_out else 0)))
    # the diagram joins methods whose p-value is ≥ its alpha (0.05 unless given, and only newer
    # versions take one): hand it the decision already taken at res.alpha as p = 0 or 1
    sig = pd.DataFrame(np.where(res.significant.to_numpy(), 0.0, 1.0), index=res.ranks.index,
                       columns=res.ranks.index)
    artists = sp.critical_difference_diagram(
        res.ranks, sig, ax=ax, color_palette=_colors(res.ranks.index),
        label_fmt_left="{label} ({rank:.2f})", label_fmt_right="({rank:.2f}) {label}",
        label_props={"fontsize": 9}, marker_props={"clip_on": False, "s": 30},
        elbow_props={"clip_on": False, "lw": 1.2})
    tied = _spread_ties(artists, k)
    bottom = min(float(np.min(line.get_ydata())) for line in artists["elbows"])
    ax.set_ylim(bottom - 0.6, 0)            # the rank axis (y = 0) is the top edge of the axes
    ax.set_xlim(1 - 0.03 * k, k + 0.03 * k)
    ax.set_xticks(range(1, k + 1))
    ax.tick_params(axis="x", labelsize=9)
    if res.cd is not None:                  # above the tick labels of the rank axis
        up = ax.get_xaxis_transform() + ScaledTranslation(0, 26 / 72, fig.dpi_scale_trans)
        ax.plot([1, 1 + res.cd], [1, 1], transform=up, color="k", lw=1.5, clip_on=False,
                marker="|", ms=7)
        ax.text(1 + res.cd / 2, 1, f"CD = {res.cd:.2f}", transform=up + ScaledTranslation(0, 4 / 72, fig.dpi_scale_trans),
                ha="center", va="bottom", fontsize=8.5)
    best = f"highest {res.metric}" if res.higher_is_better else f"lowest {res.metric}"
    ax.set_title(res.title(), fontsize=9.5, pad=48 if res.cd is not None else 26)
    notes = [f"average rank over datasets (1 = {best}); a thick bar joins methods that are not "
             "significantly different"]
    if tied:
        notes.append("methods with the same average rank are drawn side by side, a hair apart")
    if res.left_out:
        notes.append(f"left out (not every method complete): {', '.join(res.left_out)}")
    fig.text(0.5, 0.01, _wrap("; ".join(notes), 130), ha="center", va="bottom", fontsize=7.5, color="0.35")
    fig.tight_layout(rect=(0, 0.07 + (0.05 if res.left_out else 0), 1, 1))
    return fig


TIE_SPACING_IN = 0.1          # inches between the markers of methods with the same average rank
LABEL_MARGIN = 0.01           # rank units between a label and its elbow (scikit-posthocs' text_h_margin)


def _spread_ties(artists, k: int) -> bool:
    """Methods with equal average rank, which scikit-posthocs draws on one point (one marker on
    top of the other, their elbows on one line): their markers and elbows moved apart by
    TIE_SPACING_IN around the rank, so that no elbow crosses another (the left-hand labels' in the
    order of their rows, then the right-hand ones' in reverse). The labels still print the rank.
    Returns whether any rank was tied."""
    per_unit = (k - 1 + 0.06 * k) / 7.5      # rank units per inch: the axes span about 7.5 in
    original = [round(float(np.asarray(e.get_xdata(), float)[1]), 9) for e in artists["elbows"]]
    groups: dict[float, list[int]] = {}
    for i, rank in enumerate(original):
        groups.setdefault(rank, []).append(i)
    tied = False
    for rank, members in groups.items():
        if len(members) < 2:
            continue
        tied = True
        left = [i for i in members if artists["labels"][i].get_ha() == "right"]
        right = [i for i in members if artists["labels"][i].get_ha() != "right"]
        for j, i in enumerate(left + right[::-1]):
            x = rank + (j - (len(members) - 1) / 2) * TIE_SPACING_IN * per_unit
            xs = np.asarray(artists["elbows"][i].get_xdata(), float)
            artists["elbows"][i].set_xdata([xs[0], x, x])
            artists["markers"][i].set_offsets([[x, 0.0]])
    # a thick bar joining methods (a range of ranks) reaches their moved markers: a bar joining
    # only tied methods would otherwise have no length
    moved = [float(np.asarray(e.get_xdata(), float)[1]) for e in artists["elbows"]]
    bars = [line for b in artists.get("crossbars", []) for line in (b if isinstance(b, list) else [b])]
    for bar in bars if tied else []:
        xs = np.asarray(bar.get_xdata(), float)
        lo, hi = round(float(xs.min()), 9), round(float(xs.max()), 9)
        inside = [x for r, x in zip(original, moved, strict=True) if lo <= r <= hi]
        if inside:
            bar.set_xdata([min(inside), max(inside)])
            bar.set_ydata(np.full(2, np.asarray(bar.get_ydata(), float)[0]))
    # the labels' column stays just outside the outermost elbow of its side
    for side, outer in (("right", min), ("left", max)):
        idx = [i for i, label in enumerate(artists["labels"]) if label.get_ha() == side]
        if not tied or not idx:
            continue
        xs = [np.asarray(artists["elbows"][i].get_xdata(), float) for i in idx]
        edge = outer(x[1] for x in xs) + (-LABEL_MARGIN if side == "right" else LABEL_MARGIN)
        edge = min(edge, xs[0][0]) if side == "right" else max(edge, xs[0][0])
        for i, x in zip(idx, xs, strict=True):
            artists["elbows"][i].set_xdata([edge, x[1], x[2]])
            artists["labels"][i].set_x(edge)
    return tied


def _wrap(text: str, width: int) -> str:
    return "\n".join(textwrap.wrap(text, width))


def _grid(n_panels: int, max_cols: int = 4):
    cols = min(max_cols, n_panels)
    return math.ceil(n_panels / cols), cols


def _x_scale(ax, ns):
    ns = sorted(ns)
    if len(ns) > 1 and ns[-1] / ns[0] >= 4:
        ax.set_xscale("log")
    ax.set_xticks(ns)
    ax.set_xticklabels([str(n) for n in ns])
    ax.minorticks_off() if ax.get_xscale() == "log" else None


def error_vs_n_figure(df: pd.DataFrame):
    """One panel per dataset, one line per method: mean ± std of the error over the outer folds
    against n."""
    plt = _pyplot()
    df = _prepare(df)
    done = _done(df)
    if done.empty:
        raise UsageError("error against n: no finished task in the results")
    ns = sorted(done["n_features"].unique())
    if len(ns) < 2:
        raise UsageError(f"error against n: every result has n_features = {ns[0]}; it needs at least 2 "
                         "feature budgets")
    datasets = sorted(done["dataset"].unique())
    methods = sorted(done["method"].unique())
    colors = _colors(methods)
    metric_of = _dataset_metric(df)
    rows, cols = _grid(len(datasets))
    fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols + 0.4, 2.45 * rows + 0.9), squeeze=False)
    span = math.log(ns[-1] / ns[0])
    for ax, ds in zip(axes.flat, datasets, strict=False):
        g = done[done["dataset"] == ds]
        present = [m for m in methods if m in set(g["method"])]
        for i, meth in enumerate(present):
            s = g[g["method"] == meth].groupby("n_features")["error"].agg(["mean", "std"]).fillna({"std": 0.0})
            # dodge the methods a little so that the error bars do not hide each other
            dodge = math.exp(0.025 * span * (i - (len(present) - 1) / 2))
            bars = ax.errorbar(s.index.to_numpy(float) * dodge, s["mean"], yerr=s["std"].fillna(0.0),
                               label=meth, color=colors[meth], marker="o", ms=3.5, lw=1.3, elinewidth=0.9,
                               capsize=2)
            bars.lines[0].set_label(meth)      # the data line (not the caps) carries the method's name
        _x_scale(ax, ns)
        ax.set_title(ds, fontsize=9)
        ax.tick_params(labelsize=7.5)
        ax.grid(alpha=0.3, lw=0.5)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for r in range(rows):
        ax0 = axes[r, 0]
        ds_row = datasets[r * cols:(r + 1) * cols]
        ax0.set_ylabel(_metric_label(metric_of.get(d, "") for d in ds_row), fontsize=8.5)
    for c in range(cols):
        last = max(i for i in range(len(datasets)) if i % cols == c)
        axes.flat[last].set_xlabel("n (features)", fontsize=8.5)
    handles = [plt.Line2D([], [], color=colors[m], marker="o", ms=4, lw=1.3, label=m) for m in methods]
    title = "Error against the number of features (mean ± std over outer folds)" + partial_note(done)
    fig.suptitle(title, fontsize=11)
    _header_legend(fig, handles, ncol=min(len(methods), 6), title_lines=title.count("\n") + 1)
    return fig


def _header_legend(fig, handles, ncol: int, title_lines: int = 1) -> None:
    """A legend between the suptitle and the panels, outside every panel (never over data)."""
    height = fig.get_figheight()
    lines = math.ceil(len(handles) / ncol)
    # a title of several lines (a screen's note) pushes the legend down by its extra lines
    extra = 0.22 * (title_lines - 1)
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - (0.32 + extra) / height), ncol=ncol,
               fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.3 + extra + 0.22 * lines) / height))


def _timed(df: pd.DataFrame, what: str) -> pd.DataFrame:
    """The finished tasks that recorded a positive time (the two time plots need them)."""
    done = _done(_prepare(df))
    done = done[np.isfinite(done["total_s"]) & (done["total_s"] > 0)]
    if done.empty:
        raise UsageError(f"{what}: no finished task with a recorded time")
    return done


def walltime_figure(df: pd.DataFrame, time_caveat: str | None = None, time: timing.TimeMeasure = timing.WALL):
    """Per-fold total_s (tuning + fit + predict; ``time``: which seconds it holds) per method and n: boxes
    with the folds of every dataset as points, log scale; ``time_caveat`` a second title line (times
    from several machines)."""
    plt = _pyplot()
    done = _timed(df, time.phrase)
    methods = sorted(done["method"].unique())
    ns = sorted(done["n_features"].unique())
    n_colors = dict(zip(ns, plt.get_cmap("viridis")(np.linspace(0.15, 0.8, len(ns))), strict=True))
    width = 0.8 / len(ns)
    fig, ax = plt.subplots(figsize=(max(6.5, 1.1 * len(methods) * max(1, len(ns) * 0.7) + 1.5), 4.6))
    rng = np.random.default_rng(0)
    for i, meth in enumerate(methods):
        for j, n in enumerate(ns):
            t = done[(done["method"] == meth) & (done["n_features"] == n)]["total_s"].to_numpy(float)
            if t.size == 0:
                continue
            x = i - 0.4 + width * (j + 0.5)
            ax.boxplot([t], positions=[x], widths=width * 0.8, showfliers=False, patch_artist=True,
                       boxprops={"facecolor": (*n_colors[n][:3], 0.25), "edgecolor": n_colors[n]},
                       medianprops={"color": "black", "lw": 1.2}, whiskerprops={"color": n_colors[n]},
                       capprops={"color": n_colors[n]})
            ax.scatter(x + rng.uniform(-width * 0.3, width * 0.3, t.size), t, s=5, alpha=0.35,
                       color=n_colors[n], lw=0, zorder=3)
    _log_axis(ax, "y", done["total_s"].to_numpy(float))
    ax.set_xticks(range(len(methods)))
    ax.set_xticklabels(methods, rotation=30 if len(methods) > 5 else 0, ha="right" if len(methods) > 5 else "center")
    ax.set_xlim(-0.6, len(methods) - 0.4)
    ax.set_ylabel(f"{time.phrase} per outer fold (s, log scale)")
    ax.grid(axis="y", which="major", alpha=0.3, lw=0.5)
    n_ds = done["dataset"].nunique()
    ax.set_title(f"{time.heading} per task (tuning + fit + predict): {n_ds} datasets × outer folds"
                 + (f"\n{_wrap(time_caveat, 110)}" if time_caveat else ""), fontsize=10.5)
    if len(ns) > 1:
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(facecolor=(*n_colors[n][:3], 0.35), edgecolor=n_colors[n], label=f"n = {n}")
                           for n in ns], loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8.5, frameon=False)
    else:
        ax.set_xlabel(f"method (n = {ns[0]})")
    fig.tight_layout()
    return fig


def _log_axis(ax, which: str, values: np.ndarray) -> None:
    """Log scale with plain-number labels on 1-2-5 ticks (1-10-100 over a wide range), never the
    overlapping minor-tick labels matplotlib puts on a narrow log range."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    (ax.set_xscale if which == "x" else ax.set_yscale)("log")
    axis = ax.xaxis if which == "x" else ax.yaxis
    decades = math.log10(values.max() / values.min()) if values.size and values.min() > 0 else 0.0
    subs = (1.0,) if decades >= 2 else (1.0, 2.0, 5.0) if decades >= 0.5 else (1.0, 1.5, 2.0, 3.0, 5.0, 7.0)
    axis.set_major_locator(LogLocator(base=10, subs=subs))
    axis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:g}"))
    axis.set_minor_formatter(NullFormatter())


def pareto_front(points: np.ndarray) -> np.ndarray:
    """Indices of the points (time, loss) that no other point beats in both, sorted by time."""
    order = np.lexsort((points[:, 1], points[:, 0]))
    front, best = [], math.inf
    for i in order:
        if points[i, 1] < best:
            front.append(i)
            best = points[i, 1]
    return np.array(front, dtype=int)


def pareto_figure(df: pd.DataFrame, time_caveat: str | None = None, time: timing.TimeMeasure = timing.WALL):
    """Error against wall time (``time``: or the seconds it names) per dataset (log x), one point per
    (method, n), Pareto front dashed."""
    plt = _pyplot()
    done = _timed(df, f"error against {time.phrase}")
    datasets = sorted(done["dataset"].unique())
    methods = sorted(done["method"].unique())
    ns = sorted(done["n_features"].unique())
    colors = _colors(methods)
    markers = dict(zip(ns, "osD^vP*Xh", strict=False))
    metric_of = _dataset_metric(_prepare(df))
    rows, cols = _grid(len(datasets))
    fig, axes = plt.subplots(rows, cols, figsize=(3.1 * cols + 0.4, 2.45 * rows + 1.0), squeeze=False)
    for ax, ds in zip(axes.flat, datasets, strict=False):
        g = done[done["dataset"] == ds].groupby(["method", "n_features"]).agg(
            err=("error", "mean"), t=("total_s", "mean")).reset_index()
        higher = _higher_is_better(metric_of.get(ds, ""))
        pts = np.column_stack([g["t"].to_numpy(float), (-1 if higher else 1) * g["err"].to_numpy(float)])
        front = pareto_front(pts)
        ax.plot(g["t"].to_numpy()[front], g["err"].to_numpy()[front], ls="--", color="0.55", lw=1, zorder=1,
                drawstyle="steps-post", marker="o", ms=9, mfc="none", mec="0.45", mew=0.8)
        for _, r in g.iterrows():
            ax.scatter(r["t"], r["err"], color=colors[r["method"]], marker=markers.get(r["n_features"], "o"),
                       s=26, zorder=3, edgecolor="white", linewidth=0.4)
        _log_axis(ax, "x", g["t"].to_numpy(float))
        ax.set_title(ds, fontsize=9)
        ax.tick_params(labelsize=7.5)
        ax.grid(alpha=0.3, lw=0.5, which="major")
        ax.margins(x=0.12, y=0.12)
    for ax in axes.flat[len(datasets):]:
        ax.set_visible(False)
    for r in range(rows):
        ds_row = datasets[r * cols:(r + 1) * cols]
        axes[r, 0].set_ylabel(_metric_label(metric_of.get(d, "") for d in ds_row), fontsize=8.5)
    for c in range(cols):
        last = max(i for i in range(len(datasets)) if i % cols == c)
        axes.flat[last].set_xlabel(f"mean {time.phrase} per fold (s)", fontsize=8.5)
    handles = [plt.Line2D([], [], color=colors[m], marker="o", lw=0, ms=5, label=m) for m in methods]
    if len(ns) > 1:
        handles += [plt.Line2D([], [], color="0.3", marker=markers.get(n, "o"), lw=0, ms=5, label=f"n = {n}")
                    for n in ns]
    handles.append(plt.Line2D([], [], color="0.55", ls="--", lw=1, marker="o", ms=8, mfc="none", mec="0.45",
                              label="Pareto front"))
    title = f"Error against {time.phrase} (means over outer folds; ringed and dashed: Pareto front)"
    if len(ns) == 1:
        title += f", n = {ns[0]}"
    title += partial_note(done)
    if time_caveat:
        title += "\n" + _wrap(time_caveat, 130)
    fig.suptitle(title, fontsize=11)
    _header_legend(fig, handles, ncol=min(len(handles), 8), title_lines=title.count("\n") + 1)
    return fig


# -- files ---------------------------------------------------------------------------------------
def rank_against_time(ranks: pd.Series, seconds: pd.Series, title: str):
    """Average rank (1 = best, up) against median seconds per task (log x), a labelled point per
    method: the figure of a leaderboard of ``rfbench publish`` (one axes; the per-dataset error
    against wall time is :func:`pareto_figure`)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    colors = _colors(ranks.index)
    for m in ranks.index:
        t = float(seconds.get(m, np.nan))
        if not np.isfinite(t) or t <= 0:
            continue
        ax.scatter([t], [ranks[m]], s=28, color=colors[m], zorder=2)
        ax.annotate(str(m), (t, ranks[m]), xytext=(4, 3), textcoords="offset points", fontsize=8)
    ax.set_xscale("log")
    ax.invert_yaxis()
    ax.set_xlabel("median wall time per task (s, log scale)", fontsize=9)
    ax.set_ylabel("average rank (1 = best)", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.grid(True, which="major", color="0.9", zorder=0)
    ax.set_title(title, fontsize=9.5)
    fig.subplots_adjust(left=0.09, right=0.97, bottom=0.14, top=0.9)
    return fig


def file_name(kind: str, fmt: str, n: int | None = None) -> str:
    """'cd-diagram-n100.png', 'error-vs-n.pdf', 'walltime.png', 'error-vs-walltime.png'."""
    stem = FILE_STEMS[kind] + (f"-n{n}" if n is not None else "")
    return f"{stem}.{fmt}"


def _save(fig, path: Path) -> Path:
    plt = _pyplot()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150, bbox_inches="tight", pad_inches=0.15)
    plt.close(fig)
    return path


def figures(df: pd.DataFrame, kind: str, alpha: float = 0.05, test: str = "nemenyi",
            time_caveat: str | None = None,
            time: timing.TimeMeasure = timing.WALL) -> tuple[list[tuple[int | None, object]], list[str]]:
    """([(n or None, figure)], notes on the budgets n left out) of one kind; UsageError when there
    is nothing to plot. ``time_caveat``: a line the time figures' titles add (e.g. walltimes that
    mix machines, rfbench.experiments.compare), before the busy machine's note where the records
    give one (:func:`rfbench.reporting.timing.busy_note`; none for ``time`` other than wall time: which
    seconds ``df``'s ``total_s`` holds, :func:`rfbench.reporting.timing.in_cpu_seconds`)."""
    if kind == "cd":
        df = _prepare(df)
        out, notes, ranked_notes = [], [], []
        for n in sorted(_done(df)["n_features"].unique()):
            ranked, methods_out = ranking_results(df, int(n))
            try:
                res = cd_analysis(ranked, int(n), alpha, test)
            except UsageError as exc:
                notes.append(str(exc))
                continue
            few = too_few_for_cd(res)
            if few:
                notes.append(few)
                continue
            if methods_out:          # drawn, on fewer methods: said, not a skip
                ranked_notes.append(f"at n={n}, {left_out_note(methods_out)}")
            out.append((int(n), cd_figure(res)))
        if not out:
            raise UsageError("; ".join(notes) or "critical-difference diagram: no finished task in the results")
        return out, [f"skipped {n}" for n in notes] + ranked_notes
    make = {"error-vs-n": error_vs_n_figure, "walltime": walltime_figure, "pareto": pareto_figure}.get(kind)
    if make is None:
        raise UsageError(f"unknown plot kind '{kind}'; use one of {', '.join(KINDS)} or all")
    if kind in TIME_KINDS:          # the wall times of a busy machine say so (rfbench.reporting.timing)
        waited = timing.busy_note(df) if time is timing.WALL else None
        return [(None, make(df, timing.join(time_caveat, waited), time))], []
    return [(None, make(df))], []


def make_plots(df: pd.DataFrame, kind: str = "all", output: str | Path = "plots", fmt: str = "png",
               alpha: float = 0.05, test: str = "nemenyi", time_caveat: str | None = None,
               time: timing.TimeMeasure = timing.WALL) -> tuple[list[Path], list[str]]:
    """Write the figures of ``kind`` (or every kind) to ``output``; returns (paths written, notes
    on what was skipped because there was nothing to plot). An explicitly asked kind with nothing
    to plot raises UsageError; with ``all`` it is skipped with a note (an error if nothing is left)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    if kind != "all" and kind not in KINDS:
        raise UsageError(f"unknown plot kind '{kind}'; use one of {', '.join(KINDS)} or all")
    if test not in CD_TESTS:
        raise UsageError(f"unknown critical-difference test '{test}'; use one of {', '.join(CD_TESTS)}")
    if not 0 < alpha < 1:
        raise UsageError(f"--alpha {alpha} must be between 0 and 1")
    kinds = list(KINDS) if kind == "all" else [kind]
    out, notes = Path(output), []
    written: list[Path] = []
    for k in kinds:
        try:
            figs, skipped = figures(df, k, alpha, test, time_caveat, time)
        except UsageError as exc:
            if kind != "all":
                raise
            notes.append(f"skipped {k}: {exc}")
            continue
        notes += [s if s.startswith("skipped") else f"{k}: {s}" for s in skipped]
        written += [_save(fig, out / file_name(k, fmt, n)) for n, fig in figs]
    if not written:
        raise UsageError("nothing to plot: " + "; ".join(s.removeprefix("skipped ") for s in notes))
    return written, notes


# -- a spec's own figures (the EERF paper's Figs. 1-3) ---------------------------------------------
#
# A spec may declare ``figures:`` (bench/eerf2018-figures.yaml): paper method -> rfbench method, paper
# dataset -> rfbench dataset, the published tables whose cells are the curves' end points, and the
# plots. `rfbench plot --spec NAME` writes them, with the plotted numbers, into the spec's results.
SPEC_KINDS = ("error-vs-m", "error-vs-time")
FIGURE_DATA = "figures.csv"
#: the paper's colours are not known; these stay the same in every panel and both figures
PAPER_COLORS = {"EERF": "#d62728", "RKS": "#1f77b4", "LKRF": "#2ca02c"}


@dataclass
class FigureSpec:
    methods: dict                  # paper method -> rfbench method
    datasets: dict                 # paper dataset -> rfbench dataset
    published: list                # [{table, methods: {paper method: column prefix}, figure}]
    plots: list                    # [{kind, file, methods?, datasets?}]
    # paper dataset -> {rfbench dataset: label}: another reading of the same data, dashed in its panel
    variants: dict = field(default_factory=dict)


def figure_spec(spec) -> FigureSpec:
    """The ``figures:`` block of a spec, checked (one-line UsageError for a malformed one)."""
    raw = load_yaml(spec.path).get("figures") if spec.path else None
    where = f"{spec.name}: figures"
    if not isinstance(raw, dict):
        raise UsageError(f"spec {spec.name} declares no figures (field 'figures')")
    methods, datasets = raw.get("methods"), raw.get("datasets")
    for name, value in (("methods", methods), ("datasets", datasets)):
        if not isinstance(value, dict) or not value or not all(isinstance(v, str) for v in value.values()):
            raise UsageError(f"{where}.{name} must map paper names to rfbench names")
    published = raw.get("published") or []
    for p in published:
        if not (isinstance(p, dict) and isinstance(p.get("table"), str) and isinstance(p.get("methods"), dict)
                and set(p["methods"]) <= set(methods)):
            raise UsageError(f"{where}.published: each entry needs 'table' and 'methods' (paper methods of "
                             "figures.methods -> the table's column prefix)")
    plots = raw.get("plots") or []
    if not plots:
        raise UsageError(f"{where}.plots must list at least one plot")
    for p in plots:
        if not (isinstance(p, dict) and p.get("kind") in SPEC_KINDS and isinstance(p.get("file"), str)):
            raise UsageError(f"{where}.plots: each plot needs 'file' and a 'kind' among {', '.join(SPEC_KINDS)}")
        for key, names in (("methods", methods), ("datasets", datasets)):
            unknown = sorted(set(p.get(key) or []) - set(names))
            if unknown:
                raise UsageError(f"{where}.plots {p['file']}: {key} {', '.join(unknown)} not in figures.{key}")
    variants = raw.get("variants") or {}
    if not (isinstance(variants, dict) and set(variants) <= set(datasets)
            and all(isinstance(v, dict) and all(isinstance(x, str) for x in v.values()) for v in variants.values())):
        raise UsageError(f"{where}.variants must map paper datasets of figures.datasets to {{rfbench dataset: label}}")
    return FigureSpec(dict(methods), dict(datasets), list(published), list(plots),
                      {k: dict(v) for k, v in variants.items()})


def _published_points(fs: FigureSpec) -> pd.DataFrame:
    """The published cells as points: paper dataset, method, M, error, its standard error, and the
    figure's time (pre-processing + training where the table has t_pp, else training)."""
    rows = []
    for p in fs.published:
        table = read_published(published_dir() / p["table"])
        for _, r in table.iterrows():
            if r["dataset"] not in fs.datasets:
                continue
            for meth, prefix in p["methods"].items():
                num = lambda col, r=r: float(r[col]) if col in r and pd.notna(r[col]) else np.nan  # noqa: E731
                t_pp = num(f"{prefix}_t_pp_s")
                rows.append({"dataset": r["dataset"], "method": meth, "M": int(r["M"]),
                             "error": num(f"{prefix}_error_pct"), "se": num(f"{prefix}_error_se"),
                             "time_s": num(f"{prefix}_t_train_s") + (0.0 if np.isnan(t_pp) else t_pp),
                             "repeats": np.nan, "source": f"published ({p['table']})"})
    out = pd.DataFrame(rows, columns=["dataset", "method", "M", "error", "se", "time_s", "repeats", "source"])
    # EERF's Adult and MNIST cells are printed in both tables (the same numbers): one point each
    return out.drop_duplicates(subset=["dataset", "method", "M", "error", "se"]).reset_index(drop=True)


def figure_data(results: pd.DataFrame, fs: FigureSpec) -> pd.DataFrame:
    """One row per (paper dataset, paper method, M): ours (mean error over the finished repeats, its
    standard error std/√repeats, the median per-repeat time fit_s = t_pp + t_train, the time the
    paper plots in Fig. 2), then the published end points."""
    df = _done(_prepare(results)) if len(results) else results
    by_method = {v: k for k, v in fs.methods.items()}
    by_dataset = {v: k for k, v in fs.datasets.items()}
    variant_of = {name: (paper, label) for paper, v in fs.variants.items() for name, label in v.items()}
    by_dataset.update({name: paper for name, (paper, _) in variant_of.items()})
    rows = []
    if len(df):
        df = df[df["method"].isin(by_method) & df["dataset"].isin(by_dataset)]
        fit = pd.to_numeric(df["fit_s"], errors="coerce") if "fit_s" in df else pd.Series(np.nan, df.index)
        df = df.assign(fit_s=fit)
        for (ds, meth, n), g in df.groupby(["dataset", "method", "n_features"]):
            err = g["error"].to_numpy(float)
            rows.append({"dataset": by_dataset[ds], "method": by_method[meth], "M": int(n),
                         "error": float(err.mean()),
                         "se": float(err.std(ddof=1) / math.sqrt(err.size)) if err.size > 1 else np.nan,
                         "time_s": float(g["fit_s"].median()), "repeats": int(err.size),
                         "source": f"rfbench: {variant_of[ds][1]} ({ds})" if ds in variant_of else "rfbench"})
    ours = pd.DataFrame(rows, columns=["dataset", "method", "M", "error", "se", "time_s", "repeats", "source"])
    order = {d: i for i, d in enumerate(fs.datasets)}
    out = pd.concat([ours, _published_points(fs)], ignore_index=True)
    out["_o"] = out["dataset"].map(order)
    return out.sort_values(["_o", "source", "method", "M"], kind="stable").drop(columns="_o").reset_index(drop=True)


def _paper_color(method: str, i: int) -> str:
    return PAPER_COLORS.get(method, f"C{3 + i}")


def _spec_panels(data: pd.DataFrame, fs: FigureSpec, plot: dict, x: str, xlabel: str, title: str):
    """One panel per dataset: our mean ± 1 standard error per method along x (log), the published
    cells as large black-edged markers with ± 2 standard errors (the check's tolerance)."""
    plt = _pyplot()
    datasets = [d for d in (plot.get("datasets") or list(fs.datasets)) if d in set(data["dataset"])]
    methods = plot.get("methods") or list(fs.methods)
    if not datasets:
        raise UsageError(f"{plot['file']}: no result and no published point on {', '.join(fs.datasets)}")
    fig, axes = plt.subplots(1, len(datasets), figsize=(max(3.6 * len(datasets) + 0.3, 8.0), 3.5 + 0.2 * title.count("\n")),
                             squeeze=False)
    for ax, ds in zip(axes.flat, datasets, strict=True):
        g = data[(data["dataset"] == ds) & data["method"].isin(methods)]
        ours = g[g["source"] == "rfbench"]
        variant = g[g["source"].str.startswith("rfbench: ")]
        pub = g[~g["source"].str.startswith("rfbench")]
        xs = []
        for i, meth in enumerate(methods):
            color = _paper_color(meth, i)
            for part, dashed in ((ours, False), (variant, True)):
                s = part[part["method"] == meth].sort_values("M")
                s = s[np.isfinite(s[x])]
                if not len(s):
                    continue
                ax.errorbar(s[x], s["error"], yerr=s["se"].fillna(0.0), color=color, marker="o", ms=3.5, lw=1.2,
                            elinewidth=0.9, capsize=2, zorder=3, ls="--" if dashed else "-",
                            mfc="white" if dashed else color)
                if x == "time_s":       # Fig. 2's points are M values: say which
                    for _, r in s.iterrows():
                        ax.annotate(str(int(r["M"])), (r[x], r["error"]), textcoords="offset points",
                                    xytext=(3, 3), fontsize=6, color=color)
                xs += list(s[x])
            p = pub[(pub["method"] == meth) & np.isfinite(pub[x])]
            if len(p):
                # the methods' stars side by side where their cells share an M (MNIST: 7.28, 7.53, 7.59)
                dodge = math.exp(0.05 * (i - (len(methods) - 1) / 2)) if x == "M" else 1.0
                ax.errorbar(p[x] * dodge, p["error"], yerr=2 * p["se"].fillna(0.0), color=color, marker="*", ms=11,
                            mec="black", mew=0.8, lw=0, elinewidth=1.2, capsize=4, zorder=4)
                xs += list(p[x])
        if xs:
            _log_axis(ax, "x", np.asarray(xs, float))
        if x == "M":
            ticks = sorted({int(v) for v in xs})
            ax.set_xticks(ticks)
            ax.set_xticklabels([str(t) for t in ticks])
            ax.minorticks_off()
        ax.set_title(ds, fontsize=10)
        ax.set_xlabel(xlabel, fontsize=8.5)
        ax.tick_params(labelsize=7.5)
        ax.grid(alpha=0.3, lw=0.5)
        ax.margins(x=0.08, y=0.08)
    axes[0, 0].set_ylabel("test error (%)", fontsize=8.5)
    handles = [plt.Line2D([], [], color=_paper_color(m, i), marker="o", ms=4, lw=1.4, label=f"{m} ({fs.methods[m]})")
               for i, m in enumerate(methods)]
    labels = sorted({lab for d in datasets for lab in fs.variants.get(d, {}).values()})
    handles += [plt.Line2D([], [], color="0.4", marker="o", ms=4, mfc="white", lw=1.2, ls="--", label=lab)
                for lab in labels]
    handles.append(plt.Line2D([], [], color="0.4", marker="*", ms=10, mec="black", lw=0,
                              label="published cell (± 2 s.e.)"))
    # a title of one or two lines, the legend under it, the panels under both (never over data)
    height = fig.get_figheight()
    top = 0.15 + 0.2 * (title.count("\n") + 1)
    fig.suptitle(title, fontsize=10 if "\n" in title else 10.5, y=1 - 0.08 / height, va="top")
    fig.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, 1 - top / height), ncol=len(handles),
               fontsize=8.5, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 1 - (top + 0.3) / height))
    # tight_layout keeps room for the suptitle on top of the rectangle: take it back
    fig.subplots_adjust(top=1 - (top + 0.6) / height)
    return fig


def spec_figure(data: pd.DataFrame, fs: FigureSpec, plot: dict):
    """One declared plot of a spec's figures."""
    if plot["kind"] == "error-vs-m":
        return _spec_panels(data, fs, plot, "M", "M (random features, log scale)",
                            "Test error against M (mean ± 1 s.e. over the repeats; stars: the paper's tables)")
    # wall times of records made at different times on a shared machine: the load differed between
    # runs, which the label says (the records hold no CPU time)
    return _spec_panels(data, fs, plot, "time_s", "wall time per repeat (s, log scale)",
                        "Test error against time: EERF t_pp + t_train, RKS t_train (labels: M)\n"
                        "ours: one thread on a shared machine whose load varied between runs; "
                        "stars: the paper's cells at its own times (MATLAB, 2.9 GHz)")


def write_spec_figures(spec, results: pd.DataFrame, output: str | Path | None = None,
                       fmt: str = "png") -> list[Path]:
    """figures.csv and every plot a spec declares, into ``output`` (default: its results directory)."""
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    fs = figure_spec(spec)
    out = Path(output) if output is not None else spec.results
    data = figure_data(results, fs)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / FIGURE_DATA, data.to_csv(index=False, float_format="%.6g"))
    written = [out / FIGURE_DATA]
    for plot in fs.plots:
        written.append(_save(spec_figure(data, fs, plot), out / f"{plot['file']}.{fmt}"))
    return written
