"""The report as plain text, every line at most ``options.width`` characters when the columns allow
it: the main table as one table, else one table per n, each split into column blocks of whole
methods (the dataset column repeated); the Wilcoxon and timing tables into column blocks; prose
wrapped. A star marks a bold cell (plain text has no bold)."""

from __future__ import annotations

import numpy as np

from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import (
    RANK_LABEL,
    WILCOXON_NOTE,
    balanced,
    error_text,
    gp_cell_text,
    gp_rank_text,
    gp_rules,
    missing,
    number_text,
    shape_text,
    terminal_width,
    timing_note,
    wrap,
)
from rfbench.reporting.table_model import GPReport, TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = True


def render(model: TableModel, options: RenderOptions) -> str:
    width = terminal_width() if options.width is None else options.width
    out = [*(wrap(note, width) for note in model.notes), ""] if model.notes else []
    footer = "".join("\n" + wrap(line, width) + "\n" for line in model.footer)
    return "\n".join(out) + ("\n" if model.notes else "") + tables(model, width) + footer


def tables(model: TableModel, width: int) -> str:
    def main(pairs, with_n):
        header = ["dataset", "m", "d"]
        for n, meth in pairs:
            name = model.display(meth)
            header += [f"n={n} {name}\n{model.score}" if with_n else f"{name}\n{model.score}", model.time.label]
        rows = [[r.dataset, str(shape_text(r.m)), str(shape_text(r.d))]
                + [x for n, meth in pairs for x in error_text(model.cells.get((r.dataset, n, meth)))]
                for r in model.rows]
        colalign = ["left", "right", "right"] + ["left", "right"] * len(pairs)
        groups = [[3 + 2 * i, 4 + 2 * i] for i in range(len(pairs))]
        return header, rows, colalign, groups

    out = [wrap(model.caption, width), ""]
    header, body, colalign, groups = main([(n, m) for n in model.ns for m in model.methods], True)
    single = simple_table(header, body, colalign)
    if not width or width <= 0 or line_width(single) <= width:
        out += [single]
    else:
        for i, n in enumerate(model.ns):
            header, body, colalign, groups = main([(n, m) for m in model.methods_at(n)], False)
            blocks = fit_columns(header, body, width, [0, 1, 2], [0], groups, colalign)
            for j, block in enumerate(blocks):
                out += ([""] if i or j else []) + [f"n = {n}" + (" (continued)" if j else ""), block]
    out += ["", wrap("* = " + model.bold_rule + ".", width)]
    if model.too_few:
        out += ["", wrap(model.too_few, width)]
    if model.wilcoxon:
        header, body, colalign = records_table(model.wilcoxon, ".4g")
        blocks = fit_columns(header, body, width, [0, 1], [0, 1], [[i] for i in range(2, len(header))], colalign)
        out += ["", wrap(WILCOXON_NOTE, width), "", "\n\n".join(blocks)]
    if model.timing:
        header, body, colalign = records_table(model.timing, ".3g")
        blocks = fit_columns(header, body, width, [0, 1, 2], [0, 1, 2], [[i] for i in range(3, len(header))],
                             colalign)
        out += ["", wrap(timing_note(model.task_unit), width), "", "\n\n".join(blocks)]
    return "\n".join(out) + "\n"


def line_width(text: str) -> int:
    return max((len(line) for line in text.split("\n")), default=0)


def simple_table(header, rows, colalign) -> str:
    """A plain-text table in tabulate's 'simple' look, two spaces between columns and no padding
    around headers; a header may have several lines (bottom-aligned)."""
    heads = [str(h).split("\n") for h in header]
    depth = max(len(h) for h in heads)
    heads = [[""] * (depth - len(h)) + h for h in heads]
    widths = [max([len(x) for x in h] + [len(r[i]) for r in rows]) for i, h in enumerate(heads)]

    def line(cells):
        return "  ".join(c.rjust(w) if a == "right" else c.ljust(w)
                         for c, w, a in zip(cells, widths, colalign, strict=True)).rstrip()

    return "\n".join([*(line([h[k] for h in heads]) for k in range(depth)), "  ".join("-" * w for w in widths),
                      *(line(r) for r in rows)])


def records_table(records, floatfmt: str):
    """Header, string rows and alignment (numbers right) of a list of dicts with the same keys."""
    header = list(records[0])
    rows = [[number_text(r[k], floatfmt) for k in header] for r in records]
    numeric = [all(isinstance(missing(r[k]), (int, float, np.integer, np.floating)) or missing(r[k]) is None
                   for r in records) for k in header]
    return header, rows, ["right" if num else "left" for num in numeric]


def fit_columns(header, rows, width, keep_first, keep_rest, groups, colalign) -> list[str]:
    """The table as one block or, when wider than width characters, as column blocks that each fit:
    every block starts with the key columns (keep_first in the first block, keep_rest in the
    others), and the column groups (lists of column indices kept together, e.g. a method's error
    and walltime) are packed greedily. A group that does not fit even alone gets a block of its own."""
    def table(cols):
        return simple_table([header[c] for c in cols], [[r[c] for c in cols] for r in rows],
                            [colalign[c] for c in cols])

    def block(i, chunk):
        return table((keep_rest if i else keep_first) + [c for g in chunk for c in g])

    chunks, cur = [], []            # greedy: the fewest blocks; then as even as that number allows
    for g in groups:
        if cur and width and width > 0 and line_width(block(len(chunks), [*cur, g])) > width:
            chunks.append(cur)
            cur = [g]
        else:
            cur.append(g)
    chunks.append(cur)
    for larger_first in (True, False):
        even = balanced(list(groups), len(chunks), larger_first)
        if len(chunks) > 1 and all(line_width(block(i, ch)) <= width for i, ch in enumerate(even)):
            chunks = even
            break
    return [block(i, chunk) for i, chunk in enumerate(chunks)]


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table): per n, the table in column blocks of whole methods
    that fit the width (the dataset column repeated), a star on a bold cell, the group rows, the rank
    row; then the rules and the footer, wrapped."""
    width = terminal_width() if options.width is None else options.width
    out = [wrap(model.caption, width)]
    for t in model.tables:
        header = ["dataset (m, d)", *(model.display(m) for m in t.methods)]
        rows = []
        for group, members in t.groups():
            rows.append([group] + [""] * len(t.methods))
            for r in members:
                rows.append([f"  {r.title}"] + [gp_cell_text(c := t.cells.get((r.dataset, m)), r.decimals)
                                                + (" *" if c is not None and c.bold else "  ") for m in t.methods])
        rows.append([""] * (len(t.methods) + 1))
        rows.append([RANK_LABEL] + [gp_rank_text(t, m) + "  " for m in t.methods])
        colalign = ["left"] + ["right"] * len(t.methods)
        blocks = fit_columns(header, rows, width, [0], [0], [[i] for i in range(1, len(header))], colalign)
        for j, block in enumerate(blocks):
            out += ["", f"n = {t.n}" + (" (continued)" if j else ""), block]
    out += [""] + [wrap(("* = " if i == 0 else "") + line, width) for i, line in enumerate(gp_rules(model))]
    return "\n".join(out) + "\n" + "".join("\n" + wrap(line, width) + "\n" for line in model.footer)
