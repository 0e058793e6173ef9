"""The records as one table: the frame every reader pools and results.csv holds (the columns of a
:class:`~rfbench.store.record.Record`, sorted by cell and fold), and a results.csv read back (a
directory without records, e.g. copied tables) under the record's rule, row by row."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.store.record import COLUMNS, NUMERIC, record_problem, warn_once

#: the order of a table of records (a stable sort: records of one fold keep their order)
ORDER = ["dataset", "method", "n_features", "fold"]


def sort_records(df: pd.DataFrame) -> pd.DataFrame:
    if not df.empty:
        df = df.sort_values(ORDER, kind="stable")
    return df


def records_frame(records: list[dict]) -> pd.DataFrame:
    return sort_records(pd.DataFrame(records, columns=COLUMNS))


def read_results_csv(path: Path, warn=None) -> pd.DataFrame:
    """The valid rows of a results.csv (a directory without records, e.g. copied tables): a file
    that is not a table is refused with one line; rows that cannot be counted are skipped with one
    warning line naming the file, the first bad row and its field."""
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return records_frame([])
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not a results table ({type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); "
                         "delete it or re-run `rfbench run` to rewrite it from the records") from None
    rows = [{k: _csv_value(k, v) for k, v in r.items()} for r in df.to_dict("records")]
    problems = [(i, record_problem(r)) for i, r in enumerate(rows)]
    bad = [(i, pr) for i, pr in problems if pr]
    if bad and len(bad) == len(rows):      # not one row of a results table: no table, as above
        i, problem = bad[0]
        raise UsageError(f"{path} is not a results table: none of its {len(rows)} row(s) can be counted (the first, "
                         f"row {i + 2}: {problem}); delete it or re-run `rfbench run` to rewrite it from the records")
    if bad:
        i, problem = bad[0]
        warn_once(path, f"{len(bad)} of {len(rows)} row(s) cannot be counted; the first, row {i + 2}: {problem}",
                  warn)
    keep = [r for r, (_, pr) in zip(rows, problems, strict=True) if not pr]
    for r in keep:
        r["n_features"], r["fold"] = int(r["n_features"]), int(r["fold"])
    df = records_frame(keep)
    for key in NUMERIC:         # a stray text cell in a column that is not checked becomes NaN
        if key not in ("n_features", "fold"):
            df[key] = pd.to_numeric(df[key], errors="coerce")
    return df


def _csv_value(key: str, value):
    """A results.csv cell as the record would hold it: empty → None; a numeric column's text (a
    column pandas could not parse as numbers because some row is garbage) → its number if it is one."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if key in NUMERIC and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value
