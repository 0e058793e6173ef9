"""The report as GitHub Markdown: the caption, one table of every n and method (bold as **), the
line that says what bold means, then the Wilcoxon and timing tables."""

from __future__ import annotations

from tabulate import tabulate

from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import (
    DASH,
    WILCOXON_NOTE,
    error_text,
    missing,
    shape_text,
    timing_note,
)
from rfbench.reporting.table_model import TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = True


def render(model: TableModel, options: RenderOptions) -> str:
    header = ["dataset", "m", "d"]
    for n in model.ns:
        for meth in model.methods:
            name = model.display(meth)
            header += [f"n={n} {name} {model.score}", f"n={n} {name} walltime"]
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
