"""The report as JSON: the model itself, for a program to read. Columns are the (n, method) pairs;
a row is a dataset with its shape and its cells, each cell its numbers (unrounded, as in the CSV)
and its marks (``bold``: significantly best at its dataset and n; ``partial``: fewer folds than
the protocol's); then the captions, the notes and the Wilcoxon and timing rows. A number that does
not exist (NaN) is null."""

from __future__ import annotations

import json
import math

import numpy as np

from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import DASH
from rfbench.reporting.table_model import GPCell, GPReport, ResultCell, TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = True


def render(model: TableModel, options: RenderOptions) -> str:
    columns = [{"n": n, "method": meth, "name": model.display(meth)} for n in model.ns for meth in model.methods]
    rows = [{"dataset": r.dataset, "m": r.m, "d": r.d,
             "cells": [cell(model.cells.get((r.dataset, c["n"], c["method"])), model.time.key) for c in columns]}
            for r in model.rows]
    document = {"columns": columns, "rows": rows, "score": model.score,
                "caption": model.caption, "screen": model.screen, "notes": list(model.notes), "footer": list(model.footer),
                "bold_rule": model.bold_rule, "test": model.test, "alpha": model.alpha,
                "wilcoxon": list(model.wilcoxon), "too_few": model.too_few, "timing": list(model.timing),
                "dataset_columns": dict(model.dataset_columns)}
    return json.dumps(plain(document), indent=1, ensure_ascii=False) + "\n"


def cell(c: ResultCell | None, time_key: str = "walltime_s") -> dict | None:
    """A cell's numbers and marks (its time under ``time_key``: the model's TimeMeasure.key); None for
    an empty cell (no result at that dataset, n, method)."""
    if c is None:
        return None
    return {"error_mean": c.mean, "error_std": c.std if c.std_measured else None, "error_std_seeds": c.seed_std,
            time_key: c.walltime, "folds": c.folds, "expected": c.expected, "seeds": c.seeds,
            "marks": {"bold": c.bold, "partial": c.partial}}


def plain(x):
    """x with numpy numbers as Python ones and NaN as None (JSON has no NaN)."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and math.isnan(x):
        return None
    return x


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table) as JSON: one table per n, its columns the methods, a
    row a dataset with its paper name, size group and shape and its cells (unrounded, as in the CSV:
    mean, std over the splits, splits finished and expected, rank; marks bold and partial), the
    average rank row; then the caption, the rules and the test."""
    tables = [{"n": t.n, "columns": [{"method": m, "name": model.display(m)} for m in t.methods],
               "rows": [{"dataset": r.dataset, "paper": r.label, "group": r.group,
                         "m": None if r.m == DASH else r.m, "d": None if r.d == DASH else r.d,
                         "cells": [gp_cell(t.cells.get((r.dataset, m))) for m in t.methods]} for r in t.rows],
               "average_rank": {m: t.avg_rank.get(m) for m in t.methods}, "ranked": list(t.ranked),
               "rank_screen": t.rank_screen, "rank_left_out": dict(t.rank_left_out)} for t in model.tables]
    document = {"layout": "gp", "tables": tables, "caption": model.caption, "notes": list(model.notes),
                "footer": list(model.footer), "bold_rule": model.bold_rule, "rank_rule": model.rank_rule,
                "test": model.test, "alpha": model.alpha, "higher_is_better": model.higher_is_better}
    return json.dumps(plain(document), indent=1, ensure_ascii=False) + "\n"


def gp_cell(c: GPCell | None) -> dict | None:
    """A gp cell's numbers and marks; None for an empty cell."""
    if c is None:
        return None
    return {"mean": c.mean, "std": c.std, "splits": c.splits, "expected": c.expected, "rank": c.rank,
            "marks": {"bold": c.bold, "partial": not c.complete}}
