"""The report as HTML: a caller's notes, a banner when the whole report is a screen, one table per
n with a column group per method (error, walltime), bold and shaded where significantly best; then
the Wilcoxon and timing tables. Every text is escaped. ``options.html_fragment``: the fragment that
:mod:`rfbench.experiments.html_page` puts into its pages; else a page of its own."""

from __future__ import annotations

import math

from rfbench.reporting.html_markup import document, esc, simple_table
from rfbench.reporting.render import RenderOptions
from rfbench.reporting.render.common import (
    DASH,
    RANK_LABEL,
    WILCOXON_NOTE,
    balanced,
    fmt_walltime,
    gp_cell_text,
    gp_rank_text,
    gp_rules,
    number_text,
    shape_text,
    spread,
    timing_note,
)
from rfbench.reporting.table_model import FULL_PROTOCOL, GPReport, TableModel

HTML_METHODS_PER_TABLE = 5   # method column groups of one HTML table: five fit a 1280 px window


#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = False


def render(model: TableModel, options: RenderOptions) -> str:
    fragment = tables(model)
    return fragment if options.html_fragment else document("rfbench report", [fragment])


def tables(model: TableModel) -> str:
    def table(n, shown, continued) -> str:
        head = ['<tr><th class="l" rowspan="2">dataset</th><th rowspan="2">m</th><th rowspan="2">d</th>'
                + "".join(f'<th class="g" colspan="2">{esc(model.display(m))}</th>' for m in shown) + "</tr>",
                "<tr>" + f'<th class="g">{esc(model.score)}</th><th>{esc(model.time.label)}</th>' * len(shown) + "</tr>"]
        body = []
        for r in model.rows:
            tds = [f'<td class="l">{esc(r.dataset)}</td><td>{esc(shape_text(r.m))}</td><td>{esc(shape_text(r.d))}</td>']
            for meth in shown:
                c = model.cells.get((r.dataset, n, meth))
                if c is None:
                    tds.append(f'<td class="g">{DASH}</td><td>{DASH}</td>')
                    continue
                mean = f"<b>{c.mean:.2f}</b>" if c.bold else f"{c.mean:.2f}"
                part = (f' <span class="partial" title="{c.folds} of {c.expected} finished">[{c.folds}/{c.expected}]'
                        "</span>" if c.partial else "")
                best = "g best" if c.bold else "g"
                tds.append(f'<td class="{best}">{mean} ({esc(spread(c))}){part}</td>'
                           f"<td>{esc(fmt_walltime(c.walltime))}</td>")
            body.append("<tr>" + "".join(tds) + "</tr>")
        return (f"<h3>n = {esc(n)}{' (continued)' if continued else ''}</h3>"
                + '<div class="scroll"><table class="results"><thead>' + "".join(head)
                + "</thead><tbody>" + "".join(body) + "</tbody></table></div>")

    # one table per n, of at most HTML_METHODS_PER_TABLE methods (as even as possible): wider ones
    # would scroll in a 1280 px window and hide the last methods' marks
    per_n = {n: model.methods_at(n) for n in model.ns}
    shown_tables = [table(n, chunk, i > 0) for n, at in per_n.items() if at
                    for i, chunk in enumerate(balanced(at, math.ceil(len(at) / HTML_METHODS_PER_TABLE)))]
    screen, rule = model.screen, model.bold_rule
    caption = model.caption.removeprefix(f"{screen}. ") if screen else model.caption     # the banner says it
    parts = [*(f'<p class="sub">{esc(note)}</p>' for note in model.notes),
             '<h2 id="table">Results</h2>',
             *([f'<p class="banner"><b>{esc(screen)}</b>: every statistic below is computed on the folds the '
                "compared cells have in common.</p>"] if screen else []),
             f'<p class="caption">{esc(caption)}</p>',
             *shown_tables,
             f"<p>{esc(rule[0].upper() + rule[1:])}; bold cells are shaded.</p>"]
    parts.append('<h2 id="wilcoxon">Wilcoxon signed-rank tests across datasets</h2>')
    if model.too_few:
        parts.append(f'<p class="note">{esc(model.too_few)}</p>')
    elif model.wilcoxon:
        columns = list(model.wilcoxon[0])
        rows = [[number_text(t[k], ".4g") for k in columns] for t in model.wilcoxon]
        classes = ["screen" if t.get("protocol", FULL_PROTOCOL) != FULL_PROTOCOL else "" for t in model.wilcoxon]
        parts += [f"<p>{esc(WILCOXON_NOTE)}</p>", simple_table(columns, rows, left=2, row_classes=classes)]
    else:
        parts.append('<p class="note">no pair of methods has two datasets to compare on</p>')
    if model.timing:
        columns = list(model.timing[0])
        parts += [f"<h3>{esc(timing_note(model.task_unit))}</h3>",
                  simple_table(columns, [[number_text(t[k], ".3g") for k in columns] for t in model.timing],
                               left=3)]
    return "\n".join(parts)


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table): per n a table with group rows, bold and shaded cells
    and the rank row in its foot; then the rules. A fragment or a page, as ``render``."""
    fragment = gp_tables(model)
    return fragment if options.html_fragment else document("rfbench report", [fragment])


def gp_tables(model: GPReport) -> str:
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
                    text = esc(gp_cell_text(c, r.decimals))
                    tds.append(f'<td class="best"><b>{text}</b></td>' if c is not None and c.bold else f"<td>{text}</td>")
                body.append("<tr>" + "".join(tds) + "</tr>")
        foot = (f'<tr class="rank"><th class="l">{RANK_LABEL}</th>'
                + "".join(f"<th>{esc(gp_rank_text(t, m))}</th>" for m in t.methods) + "</tr>")
        parts.append(f"<h3>n = {esc(t.n)}</h3>" + '<div class="scroll"><table class="results gp"><thead>' + head
                     + "</thead><tbody>" + "".join(body) + "</tbody><tfoot>" + foot + "</tfoot></table></div>")
    parts += [f"<p>{esc(line)}{' Bold cells are shaded.' if i == 0 else ''}</p>" for i, line in enumerate(gp_rules(model))]
    return "\n".join(parts)
