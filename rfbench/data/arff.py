"""A fast reader for numeric ARFF files (the Torgo regression collection).

liac-arff parses row by row in Python; these files have up to 40 768 rows, so the header is read
by hand and the data section by pandas' C parser. Blank lines inside the data section and
attribute names with extra spaces (both present in the mirror) are tolerated.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError

_ATTR = re.compile(r"^\s*@attribute\s+('(?:[^']*)'|\"(?:[^\"]*)\"|\S+)\s+(.+?)\s*$", re.IGNORECASE)


def read_arff(path: Path) -> pd.DataFrame:
    text = Path(path).read_text(errors="replace")
    names, types = [], []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped or stripped.startswith("%"):
            continue
        low = stripped.lower()
        if low.startswith("@attribute"):
            m = _ATTR.match(stripped)
            if not m:
                raise UsageError(f"{path}: cannot parse ARFF attribute line {i + 1}: {stripped[:60]}")
            names.append(m.group(1).strip("'\""))
            types.append(m.group(2).lower())
        elif low.startswith("@data"):
            body = "\n".join(lines[i + 1:])
            break
    else:
        raise UsageError(f"{path}: no @data section; the file is not ARFF")
    if not names:
        raise UsageError(f"{path}: no @attribute lines; the file is not ARFF")
    non_numeric = [n for n, t in zip(names, types, strict=True) if t.split()[0] not in ("numeric", "real", "integer")]
    try:
        df = pd.read_csv(io.StringIO(body), header=None, names=names, comment="%",
                         skip_blank_lines=True, na_values=["?"], skipinitialspace=True,
                         dtype={n: float for n in names if n not in non_numeric})
    except (ValueError, pd.errors.ParserError) as exc:
        raise UsageError(f"{path}: malformed ARFF data section ({str(exc).splitlines()[0]})") from None
    if not isinstance(df.index, pd.RangeIndex):     # pandas makes the extra leading values of long rows an index
        raise UsageError(f"{path}: malformed ARFF data section (rows have more values than the {len(names)} "
                         "@attribute lines declare); fix the rows or the header")
    return df
