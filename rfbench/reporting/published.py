"""The papers' published tables: where they are (:func:`published_dir`, a setting) and reading one
(:func:`read_published`). The check compares reproduced cells with them, the plots draw their curves,
and a spec names the one it reproduces (:func:`rfbench.experiments.spec.published_path`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rfbench import config
from rfbench.errors import UsageError
from rfbench.registry import packaged_published_dir


def published_dir() -> Path:
    """The published tables: $RFBENCH_PUBLISHED_DIR, else the config's published_dir, else the copy
    that ships with the package (rfbench/_data/published: the papers' cells and their provenance
    notes, the same files as the project's shared/published)."""
    path, _ = config.setting("RFBENCH_PUBLISHED_DIR", "published_dir")
    return path if path is not None else packaged_published_dir()


def read_published(path: Path) -> pd.DataFrame:
    """A published CSV as strings, or the one-line error that says where it was looked for."""
    if not path.is_file():
        raise UsageError(f"published table not found: {path} (the package ships them in "
                         f"{packaged_published_dir()}; unset RFBENCH_PUBLISHED_DIR / published_dir in the "
                         "config file to use them, or point it at a directory that has this file)")
    try:
        return pd.read_csv(path, dtype=str)
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise UsageError(f"published table {path} cannot be read as CSV ({type(exc).__name__}: {first}); a spec's "
                         "'published:' names a CSV of the published cells") from None
