"""Whether the wall times of results say what the methods cost, read off their own records.

A record holds the task's wall time (``total_s``) and the CPU seconds of its worker over the same span
(``cpu_s``, every thread). On a machine of its own a task on one thread keeps its core busy: CPU
seconds ≈ wall. A task that waited for the core (other work beside the run) or whose worker was
stopped for a while records a wall time that counts the wait, unevenly across methods (the UCI suite's
records, computed on 2 cores beside test runs: 48 % at the median, 21 % for a tenth of the tasks).
Only the one-thread tasks are read: a task on T threads is busy less than T × its wall time on an idle
machine too, wherever its BLAS does not keep every thread at work.
The reports and figures show the wall time by default (the papers' measure); where the records say
the machine was busy they say so, in the caption and the time figures' titles, so that nobody reads a
method's slowness off a wait, and ``--time cpu`` shows the CPU seconds instead (:data:`CPU`,
:func:`in_cpu_seconds`). ``rfbench status`` and ``--dry-run`` estimate from the CPU seconds
(rfbench.execution.estimate.task_cost).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rfbench.errors import UsageError

#: below this median share of CPU seconds in the wall time of one-thread tasks, the wall times are a busy machine's
BUSY_SHARE = 0.8
#: tasks of at least MIN_SECONDS of wall time the median needs (a few short tasks say little)
MIN_TASKS, MIN_SECONDS = 10, 1.0


def cpu_share(results: pd.DataFrame) -> tuple[float, int] | None:
    """(median of cpu_s / total_s, tasks it is taken over) over the finished one-thread tasks that the
    CPU computed (a device task's wall time is its GPU's) with a wall time of MIN_SECONDS or more and
    both times recorded; None with fewer than MIN_TASKS of them (records written before cpu_s, a
    run of short tasks, a run on several threads per task)."""
    need = {"status", "total_s", "cpu_s"}
    if not need <= set(results.columns):
        return None
    done = results[results["status"] == "done"]
    if "device" in done:
        done = done[done["device"].fillna("cpu").astype(str) == "cpu"]
    wall = pd.to_numeric(done["total_s"], errors="coerce")
    cpu = pd.to_numeric(done["cpu_s"], errors="coerce")
    one_thread = (pd.to_numeric(done["threads"], errors="coerce") == 1 if "threads" in done
                  else pd.Series(False, index=done.index))
    timed = one_thread & (wall >= MIN_SECONDS) & (cpu > 0)
    if int(timed.sum()) < MIN_TASKS:
        return None
    share = cpu[timed] / wall[timed]
    return float(share.median()), int(timed.sum())


def busy_note(results: pd.DataFrame) -> str | None:
    """One sentence for a caption or a time figure's title when the records' CPU seconds say their
    machine was busy (median share below BUSY_SHARE), else None."""
    found = cpu_share(results)
    if found is None or found[0] >= BUSY_SHARE:
        return None
    share, tasks = found
    return (f"wall times of a busy machine: the median task kept its core busy {share:.0%} of its wall time "
            f"(cpu_s / total_s over the {tasks} one-thread tasks of 1 s or more that record cpu_s), so they "
            "overstate the methods' cost, unevenly; the records' cpu_s is the CPU time")


def join(*notes: str | None) -> str | None:
    """The notes that are given, joined by '; ' (None when none is)."""
    given = [n for n in notes if n]
    return "; ".join(given) if given else None


@dataclass(frozen=True)
class TimeMeasure:
    """Which seconds a report's time columns and figures show, and the words they use for them."""
    name: str           # the --time choice
    label: str          # a table's column header
    phrase: str         # in captions, figure titles and axis labels
    key: str            # the CSV and JSON field
    caption: str        # what one cell's time is, after "mean ... to cross-validate one fold"

    @property
    def heading(self) -> str:
        """The phrase opening a title or caption: "Wall time", "CPU time"."""
        return self.phrase[0].upper() + self.phrase[1:]


WALL = TimeMeasure("wall", "walltime", "wall time", "walltime_s", "time")
CPU = TimeMeasure("cpu", "CPU time", "CPU time", "cpu_time_s",
                  "CPU seconds (every thread of the worker; tasks without cpu_s or computed on a GPU left out)")
MEASURES = {m.name: m for m in (WALL, CPU)}


def in_cpu_seconds(results: pd.DataFrame, device_keys=frozenset()) -> pd.DataFrame:
    """``results`` with each finished task's ``total_s`` (the time every report and figure reads) replaced
    by its CPU seconds, for ``--time cpu``; NaN for a task whose record has none (written before
    ``cpu_s`` existed) or that a torch device computed (its work is not the host's CPU time; a
    ``device`` column, or ``device_keys``: :func:`rfbench.store.device_tasks` of the directories read,
    whose frames hold no device): such tasks are left out of the times, not shown at their wall
    time. A UsageError when no finished task has one."""
    out = results.copy()
    cpu = (pd.to_numeric(out["cpu_s"], errors="coerce") if "cpu_s" in out
           else pd.Series(np.nan, index=out.index))
    on_gpu = (out["device"].fillna("cpu").astype(str) != "cpu") if "device" in out else pd.Series(False, index=out.index)
    if device_keys and len(out):
        keys = zip(out["dataset"].astype(str), out["method"].astype(str), out["n_features"].astype(int),
                   out["fold"].astype(int), out["protocol"].astype(str), strict=True)
        on_gpu = on_gpu | pd.Series([k in device_keys for k in keys], index=out.index)
    out["total_s"] = cpu.where((cpu > 0) & ~on_gpu)
    if not out.loc[out["status"] == "done", "total_s"].notna().any():
        raise UsageError("--time cpu: no finished task in these results records its CPU seconds (cpu_s: records "
                         "written by rfbench before it recorded them hold wall times only); use --time wall")
    return out
