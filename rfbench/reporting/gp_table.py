"""The report layout of the GP and kernel-learning papers (Yang et al., AISTATS 2015; Wilson et al.,
AISTATS 2016): ``rfbench report DIR --layout gp``, and a spec's reports with ``layout: gp``.

Per feature budget n, one table:

* rows are the datasets, grouped under a header row per size group: the dataset's size-group suite
  of the registry (:data:`GROUPS`: ``uci-small`` → small, ``uci-intermediate`` → intermediate,
  ``uci-large`` → large; any other dataset → other), in that order, each group in the registry's
  order. A row shows the dataset's paper name (registry ``paper:``, else its rfbench name) with
  (m, d);
* columns are the methods; a cell is "mean ± std" over the splits (the std over one seed's splits,
  as :func:`rfbench.reporting.report.summarise` computes it; "–" with fewer than two), decimals
  chosen per row so that the row's best mean shows three significant digits, ``[k/K]`` on a
  partial cell (a run in progress);
* bold: the best mean of the row and every method not significantly worse than it, by the paired
  t-test over the splits (paired by split number; ``test="welch"``: Welch's test), p = ``alpha``.
  A test against a partial cell runs on the splits both cells have
  (:func:`rfbench.reporting.report.lower` and friends: the same tests as the default layout);
* a last row "average rank": the methods ranked on each dataset (1 = lowest error, ties share
  their average rank), mean over the datasets; the same datasets, cell means and ranks as the
  critical-difference diagram at n (:func:`rfbench.reporting.plot.rank_table`: the datasets where
  every method is complete when at least two are, else a screen on the splits all have in common;
  when not even a screen has two, :func:`rfbench.reporting.plot.ranking_results` leaves out the
  method complete on the fewest datasets, named under the table: gp-sod, run only where gp is not);
* under the tables, the lines that say what bold and the ranks are.

This module is the build step: :func:`build` makes the model, a frozen value
(:class:`rfbench.reporting.table_model.GPReport`), and each format's module of
:mod:`rfbench.reporting.render` renders it with its ``render_gp``
(:func:`rfbench.reporting.render.render_gp` dispatches by the format's name, as ``render`` does for
the default layout): text, Markdown, LaTeX (``\\textbf`` for bold, ``\\multicolumn`` group rows),
CSV (tidy: one row per dataset, method and n), HTML (a fragment for
:mod:`rfbench.experiments.html_page`, or a page) and JSON. :func:`figures` gives the gp page's
figures: the critical-difference diagram per n and error against wall time per size group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import pandas as pd

from rfbench.errors import UsageError
from rfbench.protocol import Published, Splits, read_key
from rfbench.registry import Registry
from rfbench.reporting import cells as cells_mod
from rfbench.reporting import plot, report, timing
from rfbench.reporting.render import TEXT_WIDTH_PT, RenderOptions, check_format, render_gp
from rfbench.reporting.render.common import DASH, RANK_LABEL
from rfbench.reporting.table_model import GPCell, GPReport, GPRow, GPTable

LAYOUTS = ("default", "gp")
#: size-group suite of the registry → the group's name, in the order the groups are shown
GROUPS = {"uci-small": "small", "uci-intermediate": "intermediate", "uci-large": "large"}
OTHER = "other"


def check_layout(layout: str | None) -> str:
    """The layout's name (None: the default one); an unknown one is a UsageError."""
    layout = layout or "default"
    if layout not in LAYOUTS:
        raise UsageError(f"unknown layout '{layout}'; use one of {', '.join(LAYOUTS)}")
    return layout


def group_of(dataset: str, registry: Registry) -> str:
    """The size group of a dataset: its first size-group suite in the registry (GROUPS), else 'other'."""
    entry = registry.datasets.get(dataset)
    suites = entry.suites if entry is not None else ()
    return next((name for suite, name in GROUPS.items() if suite in suites), OTHER)


def _decimals(best: float) -> int:
    """Decimals that show a row's best mean to three significant digits (0 to 6)."""
    if not math.isfinite(best) or best == 0:
        return 2
    return max(0, min(6, 2 - math.floor(math.log10(abs(best)))))


def _unit(df: pd.DataFrame) -> str:
    keys = set(df["protocol"].astype(str)) if "protocol" in df else set()
    splits = bool(keys) and all(isinstance(read_key(k), (Splits, Published)) for k in keys)
    return "splits" if splits else "outer folds"


def mark_bold(cells: dict, errors: dict, keys: list, higher_is_better: bool, alpha: float, test: str) -> None:
    """Bold in one row (the cells ``keys`` of one dataset and n): the best mean and every cell not
    significantly worse than it (the best's loss not significantly lower, on the splits both have)."""
    if not keys:
        return
    sign = -1.0 if higher_is_better else 1.0
    loss = {k: sign * errors[k] for k in keys}
    best = min(keys, key=lambda k: sign * cells[k].mean)
    for k in keys:
        cells[k].bold = k == best or not report.lower_on_common(cells, loss, best, k, alpha, test)


def build(df: pd.DataFrame, alpha: float = 0.05, test: str = "paired", names: dict | None = None, *,
          registry: Registry, shapes: Mapping[str, tuple[int, int]] | None = None) -> GPReport:
    """The gp layout's model of the results (see the module docstring; shapes as for
    :func:`rfbench.reporting.report.render`)."""
    cells, errors, ds_order, ns, methods, sizes, higher = report.build(df, alpha, test, registry=registry)
    reg = registry.datasets
    order = {g: i for i, g in enumerate([*GROUPS.values(), OTHER])}
    ds_order = sorted(ds_order, key=lambda d: order[group_of(d, registry)])     # stable: registry order within
    done = df[df["status"] == "done"]
    tables = []
    for n in ns:
        shown = [m for m in methods if any((d, n, m) in cells for d in ds_order)]
        rows, bold = [], {}
        for d in ds_order:
            keys = [(d, n, m) for m in shown if (d, n, m) in cells]
            if not keys:
                continue
            mark_bold(cells, errors, keys, higher, alpha, test)
            bold.update((k, cells[k].bold) for k in keys)
            best = (max if higher else min)(cells[k].mean for k in keys)
            entry = reg[d] if d in reg else None
            m = int(sizes.get(d, 0)) or (entry.m if entry is not None else DASH)
            rows.append(GPRow(d, (entry.paper if entry is not None and entry.paper else d), m,
                              report.inputs_of(d, registry, shapes) or DASH, group_of(d, registry),
                              _decimals(best)))
        ranked, methods_out = plot.ranking_results(df, n)
        ranks, screen, _ = plot.rank_table(ranked, n)
        table_cells = {}
        for k, is_bold in bold.items():
            c, d, m = cells[k], k[0], k[2]
            rank = float(ranks.at[d, m]) if d in ranks.index and m in ranks.columns else None
            table_cells[(d, m)] = GPCell(c.mean, c.std if c.folds >= 2 else None, c.folds, c.expected, c.complete,
                                         is_bold, rank)
        if screen is not None and all(c.complete for (d, _), c in table_cells.items() if d in ranks.index):
            screen = None        # fewer than two datasets, but every ranked cell is complete: no screen
        avg = {m: float(ranks[m].mean()) for m in ranks.columns} if len(ranks) else {}
        tables.append(GPTable(n, tuple(shown), tuple(rows), table_cells, avg, tuple(ranks.index), screen,
                              methods_out if len(ranks) else {}))
    unit = _unit(df)
    one = unit[:-1].replace("outer ", "")
    metrics = sorted(set(done["metric"].dropna().astype(str))) if "metric" in done else []
    metric = " / ".join(cells_mod.metric(m).description for m in metrics or ["rmse100"])
    lead = metric[0].upper() + metric[1:]
    expected = {c.expected // c.seeds for c in cells.values() if c.expected}
    how_many = f"the {expected.pop()} {unit}" if len(expected) == 1 else f"the {unit}"
    caption = (f"{lead}: mean ± std over {how_many} of each dataset, methods as columns; datasets grouped by "
               "size (the registry's size-group suites), each shown by its name in the papers with (m, d).")
    if any(c.partial for c in cells.values()):
        caption += (f" [k/K]: only k of the K {unit} have finished (a run in progress, or a screen of some splits: --folds); a t-test against it runs "
                    f"on the {unit} both cells have in common.")
    how = {"paired": f"paired t-test over the {unit} (paired by {one} number; the {unit} are identical for "
                     "every method)",
           "welch": f"Welch's unequal-variance t-test over the {unit}"}[test]
    bold_rule = (f"bold: the best mean of the row and every method not significantly worse than it, {how}, "
                 f"p = {alpha:g}")
    best = "highest" if higher else "lowest"
    tables_ranked = [t for t in tables if t.ranked]
    if tables_ranked:
        counts = sorted({len(t.ranked) for t in tables_ranked})
        sets = (f"{counts[0]} dataset{'s' if counts[0] > 1 else ''}" if len(counts) == 1
                else f"{counts[0]}-{counts[-1]} datasets")
        screens = {t.rank_screen for t in tables_ranked}
        where = (f"{sets} on which every method is complete" if screens == {None}
                 else f"{sets} on which every method has results, a cell's mean taken over the {unit} all "
                      f"methods have in common there ({'; '.join(sorted(s or 'complete' for s in screens))}, not the "
                      "full protocol)")
        rank_rule = (f"{RANK_LABEL}: the methods ranked on each dataset, 1 = the {best} mean, ties sharing their "
                     f"average rank; the mean rank over the {where}; the ranks of the critical-difference diagram")
        outs = [f"at n = {t.n}, {plot.left_out_note(t.rank_left_out)}" for t in tables_ranked if t.rank_left_out]
        if outs:
            rank_rule += "; " + "; ".join(outs) + " (their cells are shown, not ranked)"
    else:
        rank_rule = f"{RANK_LABEL}: none (fewer than two datasets with results for every method)"
    return GPReport(tuple(tables), tuple(methods), dict(names or {}), caption, bold_rule, rank_rule, test, alpha,
                    higher)


def render(df: pd.DataFrame, fmt: str = "text", alpha: float = 0.05, test: str = "paired", *,
           names: dict[str, str] | None = None, width: int | None = None, label: str | None = None,
           latex_width: float = TEXT_WIDTH_PT, html_fragment: bool = False,
           registry: Registry, shapes: Mapping[str, tuple[int, int]] | None = None,
           footer=()) -> str:
    """The gp layout in one format (the options as :func:`rfbench.reporting.report.render`'s): the
    model, with the footer, rendered by the format's module (:func:`rfbench.reporting.render.render_gp`)."""
    check_format(fmt)
    model = replace(build(df, alpha, test, names, registry=registry, shapes=shapes), footer=tuple(footer))
    return render_gp(model, fmt, RenderOptions(width=width, label=label, latex_width=latex_width,
                                               html_fragment=html_fragment))


def relative_to_target_std(df: pd.DataFrame, registry: Registry, data_dir=None) -> pd.DataFrame:
    """The results with each ``rmse`` error divided by the standard deviation of its dataset's
    target as stored (all rows, ddof 0; the data is loaded once per dataset): RMSE / std(y), which
    puts sets of different target scales side by side (0: perfect, 1: the mean's error). Other
    metrics are refused: the ratio is defined for an RMSE on the stored target only."""
    from rfbench.data.loader import load

    other = sorted(set(df["metric"].dropna().astype(str)) - {"rmse"})
    if other:
        raise UsageError(f"--relative divides test RMSEs on the stored target (metric rmse, --protocol published) "
                         f"by the target's std; these results hold {', '.join(other)}: leave out --relative")
    out = df.copy()
    for name in out["dataset"].unique():
        std = float(load(registry.dataset(name), data_dir, registry=registry).y.std())
        rows = out["dataset"] == name
        out.loc[rows, "error"] = out.loc[rows, "error"].astype(float) / (std or 1.0)
    out.loc[out["metric"] == "rmse", "metric"] = "rmse-std"
    return out


# -- figures of the gp page ----------------------------------------------------------------------------------------

def figures(df: pd.DataFrame, registry: Registry, alpha: float = 0.05,
            time: timing.TimeMeasure = timing.WALL) -> tuple[list, list[str]]:
    """([(caption, figure)], notes): the critical-difference diagram at each n (the ranks of the
    table's average rank row), then error against wall time (Pareto front dashed) per size group,
    one panel per dataset. A figure with nothing to draw is a note saying why."""
    out, notes = [], []
    try:
        figs, skipped = plot.figures(df, "cd", alpha)
        out += [(f"Critical-difference diagram, n = {n}", fig) for n, fig in figs]
        notes += [f"Critical-difference diagram: {s}" for s in skipped]
    except UsageError as exc:
        notes.append(f"Critical-difference diagram: not drawn ({exc})")
    datasets = list(dict.fromkeys(df["dataset"].astype(str)))
    for group in [*GROUPS.values(), OTHER]:
        members = [d for d in datasets if group_of(d, registry) == group]
        if not members:
            continue
        what = f"Error against {time.phrase}, {group} datasets"
        try:
            part = df[df["dataset"].isin(members)]
            waited = timing.busy_note(part) if time is timing.WALL else None
            out.append((what + " (Pareto front dashed" + (f"; {waited}" if waited else "") + ")",
                        plot.pareto_figure(part, time_caveat=waited, time=time)))
        except UsageError as exc:
            notes.append(f"{what}: not drawn ({exc})")
    return out, notes
