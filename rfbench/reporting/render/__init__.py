"""The renderers of the report's table model (:mod:`rfbench.reporting.table_model`): one module per
format, named as the format is in :data:`rfbench.formats.TABLE_FORMATS` (the one list of formats),
each with ``render(model, options) -> str`` and ``render_gp(model, options) -> str``, the gp
layout's model (:class:`rfbench.reporting.table_model.GPReport`, built by
:mod:`rfbench.reporting.gp_table`). A format is added by its module and its name in that list;
nothing else names the formats.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from rfbench.errors import UsageError
from rfbench.formats import TABLE_FORMATS
from rfbench.reporting.table_model import GPReport, TableModel

TEXT_WIDTH_PT = 469.0        # LaTeX \textwidth the layout is chosen for: 6.5 in (letter, 1 in margins)
DEFAULT_LABEL = "tab:rfbench"


@dataclass(frozen=True)
class RenderOptions:
    """How a format lays the model out (each format reads the options it has)."""
    width: int | None = None               # text: characters a line may take (None: the terminal's, 0: no limit)
    label: str | None = None               # LaTeX: the \label (None: DEFAULT_LABEL)
    latex_width: float = TEXT_WIDTH_PT     # LaTeX: the text width (pt) the layout must fit
    html_fragment: bool = False            # HTML: the tables without the page around them


def check_format(fmt: str) -> str:
    if fmt not in TABLE_FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(TABLE_FORMATS)}")
    return fmt


def _module(fmt: str):
    """The renderer module of a format (its name checked)."""
    return importlib.import_module(f"{__name__}.{check_format(fmt)}")


def render(model: TableModel, fmt: str, options: RenderOptions | None = None) -> str:
    """The model in one format: the module of that name renders it."""
    return _module(fmt).render(model, options or RenderOptions())


def render_gp(model: GPReport, fmt: str, options: RenderOptions | None = None) -> str:
    """The gp layout's model in one format: the module of that name renders it (its ``render_gp``)."""
    return _module(fmt).render_gp(model, options or RenderOptions())


def shows_footer(fmt: str) -> bool:
    """Whether ``fmt`` shows the model's footer (its module's SHOWS_FOOTER), so that a caller reads what
    the footer says (runs.jsonl's wall times) only for the formats that show it."""
    return _module(fmt).SHOWS_FOOTER
