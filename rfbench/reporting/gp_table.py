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
  every method is complete when at least two are, else a screen on the splits all have in common);
* under the tables, the lines that say what bold and the ranks are.

The one model (:func:`build`) is rendered as text, markdown, LaTeX (``\\textbf`` for bold,
``\\multicolumn`` group rows), CSV (tidy: one row per dataset, method and n) and HTML (a fragment
for :mod:`rfbench.experiments.html_page`, or a page). :func:`figures` gives the gp page's figures:
the critical-difference diagram per n and error against wall time per size group.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd
from tabulate import tabulate

from rfbench.errors import UsageError
from rfbench.protocol import Published, Splits, read_key
from rfbench.registry import Registry
from rfbench.reporting import cells as cells_mod
from rfbench.reporting import plot, report
from rfbench.reporting.html_markup import document, esc
from rfbench.reporting.render import DEFAULT_LABEL, TEXT_WIDTH_PT, check_format
from rfbench.reporting.render.common import DASH, terminal_width, wrap
from rfbench.reporting.render.latex_layout import COLUMN_SEP, FONT_SIZES, latex_text, text_pt
from rfbench.reporting.render.text import fit_columns

LAYOUTS = ("default", "gp")
#: size-group suite of the registry → the group's name, in the order the groups are shown
GROUPS = {"uci-small": "small", "uci-intermediate": "intermediate", "uci-large": "large"}
OTHER = "other"
RANK_LABEL = "average rank"


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


@dataclass
class GPCell:
    mean: float
    std: float | None          # over the splits (None: fewer than two)
    splits: int                # (seed, split) errors finished
    expected: int | None       # of a complete cell (None: unknown)
    complete: bool
    bold: bool = False
    rank: float | None = None  # on its dataset, among the methods at n (None: the dataset is not ranked)


@dataclass
class GPRow:
    dataset: str
    label: str                 # the paper's name of the dataset (registry paper:), else its name
    m: object
    d: object
    group: str
    decimals: int = 2          # of every number in the row

    @property
    def title(self) -> str:
        return f"{self.label} ({self.m}, {self.d})"


@dataclass
class GPTable:
    n: int
    methods: list[str]
    rows: list[GPRow]
    cells: dict                # (dataset, method) → GPCell
    avg_rank: dict             # method → average rank (the methods ranked)
    ranked: list[str]          # the datasets ranked
    rank_screen: str | None = None

    def groups(self) -> list[tuple[str, list[GPRow]]]:
        out: dict[str, list[GPRow]] = {}
        for row in self.rows:
            out.setdefault(row.group, []).append(row)
        return list(out.items())


@dataclass
class GPReport:
    tables: list[GPTable]
    methods: list[str]
    names: dict
    caption: str
    bold_rule: str
    rank_rule: str
    test: str
    alpha: float
    higher_is_better: bool
    notes: list[str] = field(default_factory=list)
    footer: list[str] = field(default_factory=list)   # lines said after everything in text and Markdown

    def display(self, method: str) -> str:
        return self.names.get(method, method)


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
        table_cells, rows = {}, []
        for d in ds_order:
            keys = [(d, n, m) for m in shown if (d, n, m) in cells]
            if not keys:
                continue
            mark_bold(cells, errors, keys, higher, alpha, test)
            for k in keys:
                c = cells[k]
                table_cells[(d, k[2])] = GPCell(c.mean, c.std if c.folds >= 2 else None, c.folds, c.expected,
                                                c.complete, c.bold)
            best = (max if higher else min)(cells[k].mean for k in keys)
            entry = reg[d] if d in reg else None
            m = int(sizes.get(d, 0)) or (entry.m if entry is not None else DASH)
            rows.append(GPRow(d, (entry.paper if entry is not None and entry.paper else d), m,
                              report.inputs_of(d, registry, shapes) or DASH, group_of(d, registry),
                              _decimals(best)))
        ranks, screen, _ = plot.rank_table(df, n)
        for d, r in ranks.iterrows():
            for m, value in r.items():
                if (d, m) in table_cells:
                    table_cells[(d, m)].rank = float(value)
        if screen is not None and all(c.complete for (d, _), c in table_cells.items() if d in ranks.index):
            screen = None        # fewer than two datasets, but every ranked cell is complete: no screen
        avg = {m: float(ranks[m].mean()) for m in ranks.columns} if len(ranks) else {}
        tables.append(GPTable(n, shown, rows, table_cells, avg, list(ranks.index), screen))
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
    else:
        rank_rule = f"{RANK_LABEL}: none (fewer than two datasets with results for every method)"
    return GPReport(tables, methods, dict(names or {}), caption, bold_rule, rank_rule, test, alpha, higher)


# -- rendering -----------------------------------------------------------------------------------------------------

def cell_text(c: GPCell | None, decimals: int) -> str:
    """'2.42 ± 0.35' ('2.42 ± –' with one split), ' [3/10]' on a partial cell; DASH: no cell."""
    if c is None:
        return DASH
    std = DASH if c.std is None else f"{c.std:.{decimals}f}"
    text = f"{c.mean:.{decimals}f} ± {std}"
    return text + (f" [{c.splits}/{c.expected}]" if not c.complete and c.expected else "")


def _rank_text(table: GPTable, m: str) -> str:
    return f"{table.avg_rank[m]:.2f}" if m in table.avg_rank else DASH


def _lines(model: GPReport) -> list[str]:
    return [model.bold_rule[0].upper() + model.bold_rule[1:] + ".", model.rank_rule[0].upper() + model.rank_rule[1:] + "."]


def _text(model: GPReport, width: int | None) -> str:
    out = [wrap(model.caption, width)]
    for t in model.tables:
        header = ["dataset (m, d)", *(model.display(m) for m in t.methods)]
        rows = []
        for group, members in t.groups():
            rows.append([group] + [""] * len(t.methods))
            for r in members:
                rows.append([f"  {r.title}"] + [cell_text(c := t.cells.get((r.dataset, m)), r.decimals)
                                                + (" *" if c is not None and c.bold else "  ") for m in t.methods])
        rows.append([""] * (len(t.methods) + 1))
        rows.append([RANK_LABEL] + [_rank_text(t, m) + "  " for m in t.methods])
        colalign = ["left"] + ["right"] * len(t.methods)
        blocks = fit_columns(header, rows, width, [0], [0], [[i] for i in range(1, len(header))], colalign)
        for j, block in enumerate(blocks):
            out += ["", f"n = {t.n}" + (" (continued)" if j else ""), block]
    out += [""] + [wrap(("* = " if i == 0 else "") + line, width) for i, line in enumerate(_lines(model))]
    return "\n".join(out) + "\n" + "".join("\n" + wrap(line, width) + "\n" for line in model.footer)


def _markdown(model: GPReport) -> str:
    out = [model.caption]
    for t in model.tables:
        body = []
        for group, members in t.groups():
            body.append([f"**{group}**"] + [""] * len(t.methods))
            for r in members:
                row = [r.title]
                for m in t.methods:
                    c = t.cells.get((r.dataset, m))
                    text = cell_text(c, r.decimals)
                    row.append(f"**{text}**" if c is not None and c.bold else text)
                body.append(row)
        body.append([f"*{RANK_LABEL}*"] + [_rank_text(t, m) for m in t.methods])
        out += ["", f"n = {t.n}", "",
                tabulate(body, headers=["dataset (m, d)", *(model.display(m) for m in t.methods)], tablefmt="github",
                         disable_numparse=True, colalign=["left"] + ["right"] * len(t.methods))]
    out += [""] + [line for ln in _lines(model) for line in (ln, "")][:-1]
    return "\n".join(out) + "\n" + "".join("\n" + line + "\n" for line in model.footer)


def _tex_cell(c: GPCell | None, decimals: int) -> str:
    if c is None:
        return "--"
    text = latex_text(cell_text(c, decimals))
    if c.bold:
        main, _, partial = text.partition(" [")
        text = f"\\textbf{{{main}}}" + (f" [{partial}" if partial else "")
    return text


def _latex(model: GPReport, label: str, width_pt: float) -> str:
    out, scaled_any = [], False
    for i, t in enumerate(model.tables):
        k = len(t.methods)
        heads = [latex_text(model.display(m)) for m in t.methods]
        widths = [max([text_pt("Dataset (m, d)"), *(text_pt(r.title) for r in t.rows)])]
        widths += [max([text_pt(model.display(m)), *(text_pt(cell_text(t.cells.get((r.dataset, m)), r.decimals),
                                                                   bool(getattr(t.cells.get((r.dataset, m)), "bold",
                                                                                False)))
                                                         for r in t.rows)]) for m in t.methods]
        natural = sum(widths) * FONT_SIZES["small"] + COLUMN_SEP * k
        scaled = natural > width_pt
        scaled_any |= scaled
        body = [f"\\begin{{tabular}}{{@{{}}l{'r' * k}@{{}}}}", r"\toprule",
                "Dataset $(m, d)$ & " + " & ".join(heads) + r" \\", r"\midrule"]
        for g, (group, members) in enumerate(t.groups()):
            if g:
                body.append(r"\addlinespace")
            body.append(f"\\multicolumn{{{k + 1}}}{{@{{}}l}}{{\\emph{{{latex_text(group)}}}}} \\\\")
            for r in members:
                body.append(" & ".join([latex_text(r.title)]
                                       + [_tex_cell(t.cells.get((r.dataset, m)), r.decimals) for m in t.methods])
                            + r" \\")
        body += [r"\midrule", f"\\emph{{{RANK_LABEL}}} & " + " & ".join(_rank_text(t, m) for m in t.methods) + r" \\",
                 r"\bottomrule", r"\end{tabular}"]
        tab_label = label if i == 0 else f"{label}-n{t.n}"
        caption = f"{model.caption} $n = {t.n}$." if i == 0 else f"As Table~\\ref{{{label}}}, $n = {t.n}$."
        out += [r"\begin{table}[tbp]", r"\centering",
                f"\\caption{{{latex_text(caption) if i == 0 else caption}}}", f"\\label{{{tab_label}}}",
                r"\small", *([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled else body),
                "", r"\smallskip",
                *(f"{{\\footnotesize {latex_text(line)}\\par}}" for line in _lines(model)),
                r"\end{table}", ""]
    head = [f"% requires: booktabs{', graphicx' if scaled_any else ''}",
            f"% rfbench report --layout gp: one table per n, for a text width of {width_pt:.4g}pt"
            + ("; tables wider than that scaled down" if scaled_any else ""),
            f"% labels: {label}" + "".join(f", {label}-n{t.n}" for t in model.tables[1:])]
    return "\n".join(head + out).rstrip("\n") + "\n"


def _csv(model: GPReport) -> str:
    rows = []
    for t in model.tables:
        for r in t.rows:
            for m in t.methods:
                c = t.cells.get((r.dataset, m))
                if c is None:
                    continue
                rows.append({"dataset": r.dataset, "paper": r.label, "group": r.group,
                             "m": None if r.m == DASH else r.m, "d": None if r.d == DASH else r.d, "n_features": t.n,
                             "method": m, "mean": c.mean, "std": c.std, "splits": c.splits, "expected": c.expected,
                             "bold": c.bold, "rank": c.rank, "bold_test": f"{model.test} p={model.alpha:g}"})
    columns = ["dataset", "paper", "group", "m", "d", "n_features", "method", "mean", "std", "splits", "expected",
               "bold", "rank", "bold_test"]
    return pd.DataFrame(rows, columns=columns).to_csv(index=False)


def _html(model: GPReport) -> str:
    parts = ['<h2 id="table">Results</h2>', f'<p class="caption">{esc(model.caption)}</p>']
    for t in model.tables:
        k = len(t.methods)
        head = '<tr><th class="l">dataset (m, d)</th>' + "".join(
            f'<th>{esc(model.display(m))}</th>' for m in t.methods) + "</tr>"
        body = []
        for group, members in t.groups():
            body.append(f'<tr class="group"><th class="l" colspan="{k + 1}">{esc(group)}</th></tr>')
            for r in members:
                tds = [f'<td class="l">{esc(r.title)}</td>']
                for m in t.methods:
                    c = t.cells.get((r.dataset, m))
                    text = esc(cell_text(c, r.decimals))
                    tds.append(f'<td class="best"><b>{text}</b></td>' if c is not None and c.bold else f"<td>{text}</td>")
                body.append("<tr>" + "".join(tds) + "</tr>")
        foot = (f'<tr class="rank"><th class="l">{RANK_LABEL}</th>'
                + "".join(f"<th>{esc(_rank_text(t, m))}</th>" for m in t.methods) + "</tr>")
        parts.append(f"<h3>n = {esc(t.n)}</h3>" + '<div class="scroll"><table class="results gp"><thead>' + head
                     + "</thead><tbody>" + "".join(body) + "</tbody><tfoot>" + foot + "</tfoot></table></div>")
    parts += [f"<p>{esc(line)}{' Bold cells are shaded.' if i == 0 else ''}</p>" for i, line in enumerate(_lines(model))]
    return "\n".join(parts)


def render(df: pd.DataFrame, fmt: str = "text", alpha: float = 0.05, test: str = "paired", *,
           names: dict[str, str] | None = None, width: int | None = None, label: str | None = None,
           latex_width: float = TEXT_WIDTH_PT, html_fragment: bool = False,
           registry: Registry, shapes: Mapping[str, tuple[int, int]] | None = None,
           footer=()) -> str:
    """The gp layout in one format (the options as :func:`rfbench.reporting.report.render`'s)."""
    check_format(fmt)
    model = build(df, alpha, test, names, registry=registry, shapes=shapes)
    model.footer = list(footer)
    if fmt == "csv":
        return _csv(model)
    if fmt == "markdown":
        return _markdown(model)
    if fmt == "latex":
        return _latex(model, label or DEFAULT_LABEL, latex_width)
    if fmt == "html":
        fragment = _html(model)
        return fragment if html_fragment else document("rfbench report", [fragment])
    if fmt == "text":
        return _text(model, terminal_width() if width is None else width)
    # a format of the default layout's renderers (rfbench.reporting.render) this layout has none for
    raise UsageError(f"the gp layout has no {fmt} output; use --layout default for --format {fmt}")


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

def figures(df: pd.DataFrame, registry: Registry, alpha: float = 0.05) -> tuple[list, list[str]]:
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
        what = f"Error against wall time, {group} datasets"
        try:
            out.append((what + " (Pareto front dashed)", plot.pareto_figure(df[df["dataset"].isin(members)])))
        except UsageError as exc:
            notes.append(f"{what}: not drawn ({exc})")
    return out, notes
