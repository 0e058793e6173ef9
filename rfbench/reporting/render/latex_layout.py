"""The LaTeX layout engine: how wide a text is set in Computer Modern (glyph-width tables measured
with pdflatex), and which layout of the main table fits a text width: one table at ``\\small``; one
panel per n at ``\\small``, then at ``\\footnotesize``; the fewest panels of whole methods per n that
fit at ``\\footnotesize``, split as evenly as possible (and set at ``\\small`` when they fit there
too). :mod:`rfbench.reporting.render.latex` writes the table in the layout chosen; its ``render_gp``
(the gp layout of :mod:`rfbench.reporting.gp_table`) measures its columns with the same tables."""

from __future__ import annotations

from dataclasses import dataclass

from rfbench.reporting.render.common import balanced

TEXT_HEIGHT_PT = 650.0       # \textheight (9 in): panels beyond it go to a continuation float


def latex_text(s) -> str:
    """Plain text as LaTeX: the special characters the reports contain escaped, and the Unicode
    signs they use as math (pdflatex would need them declared); backslash commands pass through."""
    s = str(s)
    for a, b in (("_", r"\_"), ("%", r"\%"), ("&", r"\&"), ("#", r"\#"), ("±", r"$\pm$"), ("×", r"$\times$"),
                 ("−", "$-$"), ("≤", r"$\le$"), ("–", "--"), ("<", "$<$"), (">", "$>$")):
        s = s.replace(a, b)
    return s


def _widths(groups: dict[str, float]) -> dict[str, float]:
    return {c: w for chars, w in groups.items() for c in chars}


# Widths in pt of Computer Modern at 10 pt (cmr10, cmbx10), measured with pdflatex's \settowidth;
# a LaTeX size scales them by FONT_SIZES (cmr9/cmr8 are relatively wider than cmr10 scaled; the factor
# is the largest ratio measured on table strings, so estimates err on the wide side).
_RM = _widths({"!',.:;[]`il": 2.78, "j": 3.06, " -": 3.33, "I": 3.61, "f": 3.83, "()t": 3.89, "r": 3.92,
               "s": 3.94, "cez": 4.44, "?": 4.72, "$*/0123456789ao": 5.0, "Jg": 5.14, "kqx–": 5.28, "vy": 5.42,
               "Sbdhnpu": 5.56, "Z": 6.11, "L": 6.25, "F": 6.53, "EP": 6.81, "B": 7.08, "CT": 7.22, "Rw": 7.36,
               "AHNUX": 7.5, "DV": 7.64, "Y": 7.75, "&+=<>@KOQ±×": 7.78, "G": 7.85, "#%m": 8.33, "M": 9.17,
               "W": 10.42, "\u2009": 1.67})
_BF = _widths({"',.:;[]`il": 3.19, "!": 3.5, "j": 3.51, " -": 3.83, "I": 4.36, "()t": 4.47, "s": 4.54, "f": 4.6,
               "r": 4.74, "cz": 5.11, "e": 5.27, "?": 5.43, "a": 5.59, "$*/0123456789o": 5.75, "g": 5.91,
               "J": 5.94, "kqx–": 6.07, "vy": 6.23, "Sbdhnpu": 6.39, "L": 6.92, "Z": 7.03, "F": 7.24, "E": 7.56,
               "±×": 7.78, "P": 7.86, "T": 8.0, "B": 8.18, "C": 8.31, "w": 8.47, "R": 8.62, "OQ": 8.64, "AX": 8.69,
               "D": 8.82, "UV": 8.85, "&+=<>@": 8.94, "Y": 8.98, "HN": 9.0, "K": 9.01, "G": 9.04, "#%m": 9.58,
               "M": 10.92, "W": 12.05, "\u2009": 1.92})
FONT_SIZES = {"small": 0.937, "footnotesize": 0.862}
BASELINE = {"small": 11.0, "footnotesize": 9.5}     # \baselineskip of the size in a 10 pt article
COLUMN_SEP = 12.0                                       # 2 \tabcolsep between two columns (pt, any size)


def text_pt(text: str, bold: bool = False) -> float:
    """Estimated width (pt at 10 pt) of plain text; an unknown character counts as wide as an 'M'."""
    table = _BF if bold else _RM
    return sum(table.get(c, table["M"]) for c in str(text))


@dataclass
class Panel:
    """One tabular of the LaTeX table: the (n, method) column pairs it shows; with_md: it has the
    m and d columns (the first panel of an n); n: the n every pair has (None: several)."""
    pairs: list
    with_md: bool
    n: int | None
    continued: bool = False


def choose_layout(panel_width, ns, at, width_pt):
    """The first layout whose panels all fit width_pt (see the module docstring): (size, panels,
    description); panels still too wide are scaled down by the caller."""
    single = [Panel([(n, m) for n in ns for m in at[n]], True, ns[0] if len(ns) == 1 else None)]
    per_n = [Panel([(n, m) for m in at[n]], True, n) for n in ns]
    tries = [("small", single, "one table"), ("small", per_n, "one panel per n"),
             ("footnotesize", per_n, "one panel per n")]
    if len(ns) == 1:
        tries = tries[:1] + tries[2:]
    for size, panels, what in tries:
        if all(panel_width(p, size) <= width_pt for p in panels):
            return size, panels, what

    def blocks(n, chunks):
        return [Panel(chunk, i == 0, n, i > 0) for i, chunk in enumerate(chunks)]

    def fit(size, panels):
        return all(panel_width(p, size) <= width_pt for p in panels)

    panels = []
    for n in ns:      # the fewest panels of whole methods that fit at \footnotesize, as even as possible
        pairs = [(n, m) for m in at[n]]
        splits = [balanced(pairs, k, first) for k in range(2, len(pairs) + 1) for first in (True, False)]
        panels.append((n, next((c for c in splits if fit("footnotesize", blocks(n, c))), splits[-1])))
    for size in ("small", "footnotesize"):
        if all(fit(size, blocks(n, chunks)) for n, chunks in panels):
            break
    return size, [p for n, chunks in panels for p in blocks(n, chunks)], "panels of whole methods"

