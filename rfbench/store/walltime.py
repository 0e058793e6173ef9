"""Wall-time accounting of a results directory: how long its ``rfbench run`` invocations were busy
(:func:`run_walltime`, from ``runs.jsonl`` and the records' finish times), and the parsing of the
times records and invocations hold."""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path

import pandas as pd

from rfbench.store.record import NOT_JSON, warn_once
from rfbench.store.rundir import open_run


def run_walltime(path) -> tuple[float, int]:
    """(seconds, invocations) a resumed run has spent: every ``rfbench run`` invocation in
    ``runs.jsonl`` is busy from its start to the last task it finished, and the wall time is the
    length of the union of those intervals (two lanes working side by side on one directory count
    once), together with how many invocations finished at least one task. Time an invocation spent
    on a task it did not finish (killed) is not counted, nor an invocation that found nothing left
    to do. A record names its invocation; records written before invocations had ids belong to the
    last invocation started before they finished."""
    path = Path(path)
    history = path / "runs.jsonl"
    if not history.is_file():
        return 0.0, 0
    runs = []
    for n, line in enumerate(history.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            info = json.loads(line)
            start = parse_timestamp(info.get("started_at"))
        except (*NOT_JSON, AttributeError):
            start = None
        if start is None:
            warn_once(f"{history} line {n}", "not an invocation with a 'started_at' time")
            continue
        runs.append((start, info.get("invocation")))
    runs.sort(key=lambda r: r[0])
    last: dict[int, pd.Timestamp] = {}
    ids = {inv: i for i, (_, inv) in enumerate(runs) if inv}
    starts = [start for start, _ in runs]
    tagged: dict[int, list] = {}
    for finished_at, invocation in open_run(path).columns(["finished_at", "invocation"]):
        i = ids.get(invocation)
        if i is not None:
            tagged.setdefault(i, []).append(finished_at)
            continue
        t = parse_timestamp(finished_at)
        if t is None:
            continue
        # untagged: the last invocation that started before it finished
        i = max((j for j, start in enumerate(starts) if start <= t), default=None)
        if i is None:
            continue
        last[i] = max(last.get(i, t), t)
    for i, times in tagged.items():
        t = latest_time(times)
        if t is not None:
            last[i] = max(last.get(i, t), t)
    total, reach = 0.0, None
    for i in sorted(last, key=lambda j: starts[j]):   # union of [start, last finished] intervals
        lo, hi = starts[i], last[i]
        if reach is None or lo > reach:
            total += (hi - lo).total_seconds()
            reach = hi
        elif hi > reach:
            total += (hi - reach).total_seconds()
            reach = hi
    return total, len(last)



_SECONDS_UTC_OFFSET = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")


def latest_time(values) -> pd.Timestamp | None:
    """The latest of ``parse_timestamp(v)`` over values (None when none is a time). A time as the runner
    writes it (whole seconds, an offset) is compared as a datetime and only the latest is parsed by
    pandas (100 000 parses take a while); any other value makes it parse every one."""
    best = None
    for v in set(values):
        if not (isinstance(v, str) and _SECONDS_UTC_OFFSET.fullmatch(v)):
            best = None
            break
        d = datetime.fromisoformat(v)
        if best is None or d > best[0]:
            best = (d, v)
    if best is not None:
        return parse_timestamp(best[1])
    times = [t for t in map(parse_timestamp, values) if t is not None]
    return max(times) if times else None


def parse_timestamp(value) -> pd.Timestamp | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return pd.Timestamp(value)
    except (ValueError, TypeError):
        return None

