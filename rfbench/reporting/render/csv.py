"""The report as tidy CSV: one row per dataset, n and method with a cell, the numbers unrounded, the
registered method names (never display names), the bold mark as a column and the test that decides
it in another (a line under the table would break the CSV); the spread across seeds when a cell
pools several; a caller's per-dataset columns last."""

from __future__ import annotations

import pandas as pd

from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import DASH
from rfbench.reporting.table_model import GPReport, TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = False
#: the columns of the gp layout's CSV
GP_COLUMNS = ["dataset", "paper", "group", "m", "d", "n_features", "method", "mean", "std", "splits", "expected",
              "bold", "rank", "bold_test"]


def render(model: TableModel, options: RenderOptions) -> str:
    several_seeds = model.seeds > 1
    rows = [{"dataset": r.dataset, "m": r.m, "d": r.d, "n_features": n, "method": meth,
             "error_mean": c.mean, "error_std": c.std if c.std_measured else None, model.time.key: c.walltime,
             "folds": c.folds, "bold": c.bold, "bold_test": f"{model.test} p={model.alpha:g}"}
            | ({"error_std_seeds": c.seed_std, "seeds": c.seeds} if several_seeds else {})
            | {column: values.get(r.dataset) for column, values in model.dataset_columns.items()}
            for r in model.rows for n in model.ns for meth in model.methods
            if (c := model.cells.get((r.dataset, n, meth)))]
    return pd.DataFrame(rows).to_csv(index=False)


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table) as tidy CSV: one row per dataset, n and method with a
    cell, its paper name, size group and rank; the bold mark and the test that decides it as columns."""
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
    return pd.DataFrame(rows, columns=GP_COLUMNS).to_csv(index=False)
