"""The report as LaTeX (booktabs): the main table in the first layout that fits the text width
(:mod:`rfbench.reporting.render.latex_layout` measures and chooses; a panel still too wide is scaled
down with ``\\resizebox{\\textwidth}{!}{...}``), its panels stacked in one ``table`` float with one
caption and ``\\label{<label>}`` while they fit a 9 in text height, further ones in continuation
floats (``<label>-2``, ...); then the Wilcoxon table, ``<label>-wilcoxon``. A comment at the top names
the packages the output needs, and a caller's notes come first as comments (the caption repeats
``caption_notes``)."""

from __future__ import annotations

import math

from rfbench.reporting.render import DEFAULT_LABEL, RenderOptions
from rfbench.reporting.render.common import (
    RANK_LABEL,
    fmt_walltime,
    gp_cell_text,
    gp_rank_text,
    gp_rules,
    missing,
    shape_text,
    spread,
)
from rfbench.reporting.render.latex_layout import (
    BASELINE,
    COLUMN_SEP,
    FONT_SIZES,
    TEXT_HEIGHT_PT,
    Panel,
    choose_layout,
    latex_text,
    text_pt,
)
from rfbench.reporting.table_model import FULL_PROTOCOL, GPCell, GPReport, TableModel

#: whether this format shows the model's footer (the run's wall-time lines): the reader of a run computes it only then
SHOWS_FOOTER = False


def render(model: TableModel, options: RenderOptions) -> str:
    head = "".join(f"% {note}\n" for note in model.notes)
    return head + table(model, options.label or DEFAULT_LABEL, options.latex_width)


def tex_walltime(seconds) -> str:
    return latex_text(fmt_walltime(seconds)).replace(" s", r"\,s")


def table(model: TableModel, label: str, width_pt: float) -> str:
    keys = [(r.dataset, shape_text(r.m), shape_text(r.d)) for r in model.rows]
    cells, ns, methods, tests = model.cells, model.ns, model.methods, model.wilcoxon
    score, rule, test, few = model.score, model.bold_rule, model.test, model.too_few
    caption = model.caption
    time_head = model.time.label[0].upper() + model.time.label[1:]      # "Walltime", "CPU time"
    # every cell as LaTeX with its estimated width (pt at 10 pt)
    tex: dict = {}
    for d, _, _ in keys:
        for n in ns:
            for meth in methods:
                c = cells.get((d, n, meth))
                if c is None:
                    tex[(d, n, meth)] = ("--", text_pt("–"), "--", text_pt("–"))
                    continue
                mean, spread_text = f"{c.mean:.2f}", spread(c)
                err = (f"\\textbf{{{mean}}}" if c.bold else mean) + f" ({latex_text(spread_text)})"
                w = text_pt(mean, c.bold) + text_pt(f" ({spread_text})")
                if c.partial:
                    err += f" [{c.folds}/{c.expected}]"
                    w += text_pt(f" [{c.folds}/{c.expected}]")
                tex[(d, n, meth)] = (err, w, tex_walltime(c.walltime),
                                     text_pt(fmt_walltime(c.walltime).replace(" s", "\u2009s")))
    key_w = [max(text_pt("Dataset"), *(text_pt(d) for d, _, _ in keys)), max(text_pt("m"), *(text_pt(m) for _, m, _ in keys)),
             max(text_pt("d"), *(text_pt(dd) for _, _, dd in keys))]
    pair_w = {}
    for n in ns:
        for meth in methods:
            e = max(text_pt(score.capitalize()), *(tex[(d, n, meth)][1] for d, _, _ in keys))
            w = max(text_pt(time_head), *(tex[(d, n, meth)][3] for d, _, _ in keys))
            pair_w[(n, meth)] = (e, w + max(0.0, text_pt(model.display(meth)) - e - w))

    def panel_width(p: Panel, size: str) -> float:
        cols = key_w if p.with_md else key_w[:1]
        text = sum(cols) + sum(sum(pair_w[pair]) for pair in p.pairs)
        return text * FONT_SIZES[size] + COLUMN_SEP * (len(cols) + 2 * len(p.pairs) - 1)

    at = {n: model.methods_at(n) for n in ns}
    size, panels, what = choose_layout(panel_width, ns, at, width_pt)
    scaled = [panel_width(p, size) > width_pt for p in panels]

    def tabular(p: Panel) -> list[str]:
        k = 3 if p.with_md else 1
        pad = " & " * (k - 1)
        groups = [(n, [m for nn, m in p.pairs if nn == n]) for n in dict.fromkeys(n for n, _ in p.pairs)]
        cont = " (continued)" if p.continued else ""
        lines = [f"\\begin{{tabular}}{{@{{}}{'lrr' if p.with_md else 'l'}{'rr' * len(p.pairs)}@{{}}}}", r"\toprule"]
        lines.append(pad + " & " + " & ".join(f"\\multicolumn{{{2 * len(ms)}}}{{c}}{{$n = {n}${cont}}}"
                                              for n, ms in groups) + r" \\")
        start, rules = k + 1, []
        for _, ms in groups:
            rules.append(f"\\cmidrule(lr){{{start}-{start + 2 * len(ms) - 1}}}")
            start += 2 * len(ms)
        lines.append(" ".join(rules))
        lines.append(pad + " & " + " & ".join(f"\\multicolumn{{2}}{{c}}{{{latex_text(model.display(m))}}}"
                                              for _, m in p.pairs) + r" \\")
        lines.append(" ".join(f"\\cmidrule(lr){{{k + 1 + 2 * i}-{k + 2 + 2 * i}}}" for i in range(len(p.pairs))))
        lines.append(("Dataset & $m$ & $d$ & " if p.with_md else "Dataset & ")
                     + " & ".join([f"{score.capitalize()} & {latex_text(time_head)}"] * len(p.pairs)) + r" \\")
        lines.append(r"\midrule")
        for d, m, dd in keys:
            row = [latex_text(d)] + ([latex_text(m), latex_text(dd)] if p.with_md else [])
            for n, meth in p.pairs:
                err, _, wall, _ = tex[(d, n, meth)]
                row += [err, wall]
            lines.append(" & ".join(row) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}"]
        return lines

    # panels stacked in floats while they fit the text height
    def lines_of(text: str, pt_per_line: float, font: float) -> int:
        return math.ceil(text_pt(text) * font / width_pt) * pt_per_line
    overhead = lines_of(caption, 12.0, 1.0) + lines_of(rule, 9.5, 0.862) + 40
    panel_h = (len(keys) + 4) * BASELINE[size] + 16
    floats, height = [[]], overhead
    for i, _ in enumerate(panels):
        if floats[-1] and height + panel_h + 8 > TEXT_HEIGHT_PT:
            floats.append([])
            height = overhead
        floats[-1].append(i)
        height += panel_h + 8
    packages = "booktabs, graphicx" if any(scaled) or wilcoxon_scaled(tests, test, width_pt) else "booktabs"
    out = [f"% requires: {packages}",
           f"% layout for a text width of {width_pt:.4g}pt ({width_pt / 72.27:.1f} in; rfbench report --latex-width): "
           f"{what} at \\{size}" + (f"; {sum(scaled)} panel(s) scaled down to the text width" if any(scaled) else ""),
           f"% labels: {label}" + "".join(f", {label}-{j + 1}" for j in range(1, len(floats)))
           + (f", {label}-wilcoxon" if tests else "")]
    # a caller's notes lead the caption (the comments above the table are not printed); the float
    # heights above are measured on the report's own caption
    lead = f"{model.caption_notes} " if model.caption_notes else ""
    for j, members in enumerate(floats):
        out += [r"\begin{table}[tbp]", r"\centering"]
        out.append(f"\\caption{{{latex_text(lead + caption)}}}" if j == 0 else f"\\caption{{Table~\\ref{{{label}}}, continued.}}")
        out.append(f"\\label{{{label}}}" if j == 0 else f"\\label{{{label}-{j + 1}}}")
        out.append(f"\\{size}")
        for i in members:
            if i != members[0]:
                out += ["", r"\medskip"]
            body = tabular(panels[i])
            out += ([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled[i] else body)
        out += ["", r"\smallskip", f"{{\\footnotesize {latex_text(rule[0].upper() + rule[1:])}.\\par}}", r"\end{table}", ""]
    if few:
        out += [f"\\noindent{{\\footnotesize {latex_text(few)}\\par}}", ""]
    if tests:
        out += wilcoxon_table(tests, test, label, width_pt)
    return "\n".join(out).rstrip("\n") + "\n"


def wilcoxon_cells(tests, test) -> list[list[str]]:
    def num(x, spec="g"):
        x = missing(x)
        return "--" if x is None else format(x, spec)
    def pair(t):
        screen = t.get("protocol", FULL_PROTOCOL)
        return t["pair"] + ("" if screen == FULL_PROTOCOL else f" ({screen})")
    return [[str(t["n"]), latex_text(pair(t)), str(t["datasets"]), num(t["T"]), num(t["T_crit_95"]),
             num(t["T_crit_95_normal"]), num(t["p"], ".3g"), str(t.get(f"{test} W/T/L (a)", "--"))] for t in tests]


WILCOXON_HEAD = [r"$n$", "Pair", "Datasets", r"$T$", r"$T_{\mathrm{crit}}$", r"$T_{\mathrm{crit}}^{\mathrm{normal}}$",
                  r"$p$"]
WILCOXON_HEAD_PT = [text_pt("n"), text_pt("Pair"), text_pt("Datasets"), text_pt("T"), text_pt("Tcrit"), text_pt("Tnormal"), text_pt("p")]


def wilcoxon_width(tests, test: str, size: str) -> float:
    rows = wilcoxon_cells(tests, test) if tests else []
    cols = [max(h, *(text_pt(r[i].replace("\\_", "_")) for r in rows)) for i, h in enumerate(WILCOXON_HEAD_PT)]
    cols.append(max([text_pt("Paired W/T/L")] + [text_pt(r[7]) for r in rows]))
    return sum(cols) * FONT_SIZES[size] + COLUMN_SEP * (len(cols) - 1)


def wilcoxon_scaled(tests, test, width_pt) -> bool:
    return bool(tests) and wilcoxon_width(tests, test, "footnotesize") > width_pt


def wilcoxon_table(tests, test, label, width_pt) -> list[str]:
    size = "small" if wilcoxon_width(tests, test, "small") <= width_pt else "footnotesize"
    scaled = wilcoxon_scaled(tests, test, width_pt)
    body = [r"\begin{tabular}{@{}rlrrrrrc@{}}", r"\toprule",
            " & ".join(WILCOXON_HEAD) + f" & {test.capitalize()} W/T/L \\\\", r"\midrule"]
    body += [" & ".join(row) + r" \\" for row in wilcoxon_cells(tests, test)]
    body += [r"\bottomrule", r"\end{tabular}"]
    return [r"\begin{table}[tbp]", r"\centering",
            r"\caption{Wilcoxon signed-rank test across datasets ($T = \min(W^+, W^-)$; "
            r"significant at 95\,\% when $T \le T_{\mathrm{crit}}$"
            + ("; --: no critical value exists for so few datasets" if any(
                missing(t[k]) is None for t in tests for k in ("T_crit_95", "T_crit_95_normal")) else "") + ").}",
            f"\\label{{{label}-wilcoxon}}", f"\\{size}",
            *([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled else body), r"\end{table}"]




def _gp_cell(c: GPCell | None, decimals: int) -> str:
    if c is None:
        return "--"
    text = latex_text(gp_cell_text(c, decimals))
    if c.bold:
        main, _, partial = text.partition(" [")
        text = f"\\textbf{{{main}}}" + (f" [{partial}" if partial else "")
    return text


def render_gp(model: GPReport, options: RenderOptions) -> str:
    """The gp layout (rfbench.reporting.gp_table): one table float per n (``\\textbf`` for bold,
    ``\\multicolumn`` group rows, the rank row), scaled down to the text width when wider, the rules
    under each; the first labelled ``<label>``, the others ``<label>-n<n>``."""
    label, width_pt = options.label or DEFAULT_LABEL, options.latex_width
    out, scaled_any = [], False
    for i, t in enumerate(model.tables):
        k = len(t.methods)
        heads = [latex_text(model.display(m)) for m in t.methods]
        widths = [max([text_pt("Dataset (m, d)"), *(text_pt(r.title) for r in t.rows)])]
        widths += [max([text_pt(model.display(m)), *(text_pt(gp_cell_text(t.cells.get((r.dataset, m)), r.decimals),
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
                                       + [_gp_cell(t.cells.get((r.dataset, m)), r.decimals) for m in t.methods])
                            + r" \\")
        body += [r"\midrule", f"\\emph{{{RANK_LABEL}}} & " + " & ".join(gp_rank_text(t, m) for m in t.methods) + r" \\",
                 r"\bottomrule", r"\end{tabular}"]
        tab_label = label if i == 0 else f"{label}-n{t.n}"
        caption = f"{model.caption} $n = {t.n}$." if i == 0 else f"As Table~\\ref{{{label}}}, $n = {t.n}$."
        out += [r"\begin{table}[tbp]", r"\centering",
                f"\\caption{{{latex_text(caption) if i == 0 else caption}}}", f"\\label{{{tab_label}}}",
                r"\small", *([r"\resizebox{\textwidth}{!}{%", *body, "}"] if scaled else body),
                "", r"\smallskip",
                *(f"{{\\footnotesize {latex_text(line)}\\par}}" for line in gp_rules(model)),
                r"\end{table}", ""]
    head = [f"% requires: booktabs{', graphicx' if scaled_any else ''}",
            f"% rfbench report --layout gp: one table per n, for a text width of {width_pt:.4g}pt"
            + ("; tables wider than that scaled down" if scaled_any else ""),
            f"% labels: {label}" + "".join(f", {label}-n{t.n}" for t in model.tables[1:])]
    return "\n".join(head + out).rstrip("\n") + "\n"
