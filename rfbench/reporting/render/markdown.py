"""The report as GitHub Markdown: the caption, one table of every n and method (bold as **), the
line that says what bold means, then the Wilcoxon and timing tables."""

from __future__ import annotations

from tabulate import tabulate

from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import (
    DASH,
    RANK_LABEL,
    WILCOXON_NOTE,
    error_text,
    gp_cell_text,
    gp_rank_text,
    gp_rules,
    missing,
    shape_text,
    timing_note,
)
from rfbench.reporting.table_model import GPReport, TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = True


def render(model: TableModel, options: RenderOptions) -> str:
    header = ["dataset", "m", "d"]
    for n in model.ns:
        for meth in model.methods:
            name = model.display(meth)
            header += [f"n={n} {name} {model.score}", f"n={n} {name} {model.time.label}"]
    body = [[r.dataset, shape_text(r.m), shape_text(r.d)]
            + [x for n in model.ns for meth in model.methods
               for x in error_text(model.cells.get((r.dataset, n, meth)), bold_mean="**{}**")]
            for r in model.rows]
    out = ["\n\n".join(model.notes), ""] if model.notes else []
    out += [model.caption, "", tabulate(body, headers=header, tablefmt="github", disable_numparse=True,
                                        missingval=DASH),
            "", model.bold_rule[0].upper() + model.bold_rule[1:] + "."]
    if model.too_few:
        out += ["", model.too_few]
    if model.wilcoxon:
        out += ["", WILCOXON_NOTE, "",
                tabulate([{k: missing(v) for k, v in t.items()} for t in model.wilcoxon], headers="keys",
                         tablefmt="github", floatfmt=".4g", missingval=DASH)]
    if model.timing:
        out += ["", timing_note(model.task_unit), "",
                tabulate([{k: missing(v) for k, v in t.items()} for t in model.timing], headers="keys",
                         tablefmt="github", floatfmt=".3g", missingval=DASH)]
    return "\n".join(out) + "\n" + "".join("\n" + line + "\n" for line in model.footer)


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table): the caption, per n a table with bold group rows,
    bold cells as ** and an italic rank row; then the rules and the footer."""
    out = [model.caption]
    for t in model.tables:
        body = []
        for group, members in t.groups():
            body.append([f"**{group}**"] + [""] * len(t.methods))
            for r in members:
                row = [r.title]
                for m in t.methods:
                    c = t.cells.get((r.dataset, m))
                    text = gp_cell_text(c, r.decimals)
                    row.append(f"**{text}**" if c is not None and c.bold else text)
                body.append(row)
        body.append([f"*{RANK_LABEL}*"] + [gp_rank_text(t, m) for m in t.methods])
        out += ["", f"n = {t.n}", "",
                tabulate(body, headers=["dataset (m, d)", *(model.display(m) for m in t.methods)], tablefmt="github",
                         disable_numparse=True, colalign=["left"] + ["right"] * len(t.methods))]
    out += [""] + [line for ln in gp_rules(model) for line in (ln, "")][:-1]
    return "\n".join(out) + "\n" + "".join("\n" + line + "\n" for line in model.footer)
