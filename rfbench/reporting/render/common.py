"""Texts every format writes the same way: the empty cell, a walltime, a cell's spread, a number of
the side tables, the notes over the Wilcoxon and timing tables, and prose wrapped to a width."""

from __future__ import annotations

import math
import os
import shutil
import sys
import textwrap

import numpy as np

from rfbench.execution.progress import hms
from rfbench.reporting.table_model import GPCell, GPReport, GPTable, ResultCell

DASH = "–"                   # an empty cell or a value that does not exist (never 'None' or 'nan')

WILCOXON_NOTE = ("Wilcoxon signed-rank test across datasets (T = min(W+, W−); reject equality at 95 % "
                 "when T ≤ T_crit; T_crit_normal is the normal approximation the GFC paper quotes):")


def timing_note(one: str) -> str:
    return (f"Time per {one} (median seconds; t_pp = feature pre-processing of data-dependent "
            "methods, part of t_fit):")


def fmt_walltime(seconds) -> str:
    """Seconds per outer fold as the tables print them: '0.31 s' below 10 s, '12.4 s' below one
    minute, hh:mm:ss ('00:03:49') from one minute on, so the speed of fast methods stays visible."""
    if seconds is None or not math.isfinite(float(seconds)):
        return DASH
    s = float(seconds)
    if s == 0:
        return "0 s"
    if s < 0.005:
        return "<0.01 s"
    if round(s, 2) < 10:
        return f"{s:.2f} s"
    if round(s, 1) < 60:
        return f"{s:.1f} s"
    return hms(s)


def shape_text(x) -> object:
    """A dataset's m or d in a table: the number, or the dash when unknown."""
    return x or DASH


def spread(cell: ResultCell) -> str:
    """'±0.36' (one seed), or '±0.36 folds, ±0.05 seeds': the spread across folds (mean over seeds
    of one seed's std over its folds) apart from the spread across seeds (std of the seed means);
    '±–' where each seed has one fold (no spread measured, not a spread of zero)."""
    std = f"{cell.std:.2f}" if cell.std_measured else DASH
    if cell.seed_std is None:
        return f"±{std}"
    return f"±{std} {cell.unit}, ±{cell.seed_std:.2f} seeds"


def error_text(cell: ResultCell | None, bold_mean: str | None = None) -> tuple[str, str]:
    """A cell's error and its walltime ('3.92 (±0.36)', '0.31 s'; dashes for an empty cell). Bold:
    the mean as ``bold_mean`` writes it ('**{}**' in Markdown), or, where a format has no bold
    (None: plain text), a star after the spread; the [k/K] mark of a partial cell last."""
    if cell is None:
        return DASH, DASH
    mean = f"{cell.mean:.2f}"
    if not cell.bold:
        err = f"{mean} ({spread(cell)})"
    elif bold_mean is None:
        err = f"{mean} ({spread(cell)}) *"
    else:
        err = f"{bold_mean.format(mean)} ({spread(cell)})"
    if cell.partial:
        err += f" [{cell.folds}/{cell.expected}]"
    return err, fmt_walltime(cell.walltime)


def missing(x):
    """None and NaN → None (tabulate prints its missingval, the en dash, for it)."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def number_text(x, floatfmt: str = "g") -> str:
    x = missing(x)
    if x is None:
        return DASH
    if isinstance(x, (float, np.floating)):
        return format(float(x), floatfmt)
    return str(x)


def wrap(text: str, width: int | None) -> str:
    """Prose wrapped to width characters (paragraphs kept); width None or ≤ 0: unchanged."""
    if not width or width <= 0:
        return text
    return "\n".join(textwrap.fill(p, width, break_on_hyphens=False) if p.strip() else p
                     for p in text.split("\n"))


def terminal_width() -> int:
    """The width text output wraps to by default: the terminal's when standard output is one (or
    ``$COLUMNS`` when set); 0, no limit, when it goes to a file or a pipe, where wrapping would only
    cut a table into "continued" blocks."""
    if os.environ.get("COLUMNS") or sys.stdout.isatty():
        return shutil.get_terminal_size().columns
    return 0


def balanced(items: list, parts: int, larger_first: bool = True) -> list[list]:
    """items cut into parts contiguous chunks whose sizes differ by at most one."""
    q, r = divmod(len(items), parts)
    out, i = [], 0
    for j in range(parts):
        size = q + (j < r if larger_first else j >= parts - r)
        out.append(items[i:i + size])
        i += size
    return [c for c in out if c]


# -- the gp layout's texts (rfbench.reporting.gp_table; the model in rfbench.reporting.table_model) -------------------

RANK_LABEL = "average rank"          # the gp tables' last row


def gp_cell_text(c: GPCell | None, decimals: int) -> str:
    """A gp cell: '2.42 ± 0.35' ('2.42 ± –' with one split), ' [3/10]' on a partial cell; DASH: no cell."""
    if c is None:
        return DASH
    std = DASH if c.std is None else f"{c.std:.{decimals}f}"
    text = f"{c.mean:.{decimals}f} ± {std}"
    return text + (f" [{c.splits}/{c.expected}]" if not c.complete and c.expected else "")


def gp_rank_text(table: GPTable, m: str) -> str:
    """A method's average rank in a gp table's last row (DASH: not ranked)."""
    return f"{table.avg_rank[m]:.2f}" if m in table.avg_rank else DASH


def gp_rules(model: GPReport) -> list[str]:
    """The sentences under the gp tables: what bold is, what the ranks are."""
    return [model.bold_rule[0].upper() + model.bold_rule[1:] + ".", model.rank_rule[0].upper() + model.rank_rule[1:] + "."]
