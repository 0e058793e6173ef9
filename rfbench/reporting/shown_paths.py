"""Paths as the pages show them: relative to the project (the checkout rfbench runs from, else the
working directory), never an absolute path of the machine that built them. A page is read on other
machines (the published site); the machine's own directory layout (home, work or data directories)
says nothing there and can leak where it was made. A path outside the project keeps its last part
only, behind '…/'.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from rfbench.registry import PACKAGE_DIR

#: an absolute path inside a text: '/' or '~/' after a space, '=', a quote, a bracket or the start
_ABSOLUTE = re.compile(r"(?:(?<=^)|(?<=[\s=\"'(\[,:]))(?:~|/)(?:/?[^\s,;:\"'()\[\]<>]+)+")


def _roots() -> list[Path]:
    return [PACKAGE_DIR.parent, Path.cwd().resolve()]


def shown(path) -> str:
    """``path`` relative to the project (or the working directory) when inside it, else '…/NAME'."""
    text = str(path)
    p = Path(os.path.expanduser(text))
    if not p.is_absolute():
        return text
    p = Path(os.path.normpath(p))
    for root in _roots():
        try:
            rel = p.relative_to(root)
        except ValueError:
            continue
        return str(rel) if str(rel) != "." else "."
    return f"…/{p.name}" if p.name else "…"


def scrub(text: str) -> str:
    """Every absolute path in a free text (a recorded command line, a note) as :func:`shown` writes it."""
    return _ABSOLUTE.sub(lambda m: shown(m.group(0)), str(text))
