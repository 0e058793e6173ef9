"""Progress of a run on one line of stderr: tasks done / total, elapsed time and an ETA."""

from __future__ import annotations

import shutil
import sys
import time

import numpy as np


def hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


class Progress:
    """Tasks done / total with an ETA, on one line of stderr (one line per update when stderr is
    not a terminal).

    ``note`` says what the run does before its first task (loading data); ``start`` draws the bar at
    once, counting the tasks finished before this invocation (resume) as done. The ETA is estimated
    per group of tasks (dataset, method, n): the median seconds of finished tasks of the same
    (dataset, method, n), else of the same (method, n) on other datasets (this invocation's times
    first, then those recorded by earlier ones), times the tasks left in the group, less the time
    the running ones (``begin``) have run; a group with none takes the median of every finished task
    and makes the ETA rough (``~``). The sum is shared by the ``jobs`` workers, but is never less
    than the longest single task left.
    """

    WIDTH = 24

    def __init__(self, enabled: bool = True, jobs: int = 1, clock=time.perf_counter, stream=None):
        self.enabled, self.jobs, self.clock, self._stream = enabled, max(1, int(jobs)), clock, stream
        self.t0 = clock()
        self.total = self.done = 0
        self.left: dict[tuple, int] = {}            # (dataset, method, n) → tasks left
        self.times: dict[tuple, list[float]] = {}   # (dataset, method, n) → seconds, this invocation
        self.prior: dict[tuple, list[float]] = {}   # the same from records of earlier invocations
        self.running: list[tuple[tuple, float]] = []  # (task, start time) of the tasks being run
        self.drawn = False

    @property
    def stream(self):
        return self._stream or sys.stderr           # looked up late: tests capture sys.stderr

    @property
    def tty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())

    def note(self, message: str):
        """One line saying what the run is doing (before the bar)."""
        if self.enabled:
            self._write(message, end=True)

    def start(self, tasks, done: int = 0, history=()):
        """Draw the bar: ``tasks`` are the (dataset, method, n) of every task to run, ``done`` the
        tasks already finished (resume), ``history`` ((dataset, method, n), seconds) pairs of tasks
        earlier invocations finished."""
        tasks = list(tasks)
        for key in tasks:
            self.left[key] = self.left.get(key, 0) + 1
        for key, seconds in history:
            self.prior.setdefault(key, []).append(float(seconds))
        self.done, self.total = done, done + len(tasks)
        if not tasks:
            label = "nothing to run: every task is done"
        elif done:
            label = f"resuming: {done} of {self.total} tasks were done before; running {len(tasks)}"
        else:
            label = f"running {len(tasks)} tasks"
        self._show(label)

    def begin(self, tasks) -> float:
        """The tasks (dataset, method, n) start running now; returns the clock's time."""
        now = self.clock()
        self.running.extend((key, now) for key in tasks)
        return now

    def update(self, label: str, finished=(), skipped=()):
        """``finished``: ((dataset, method, n), seconds) of tasks this invocation ran; ``skipped``:
        (dataset, method, n) of tasks another invocation finished or is running."""
        finished, skipped = list(finished), list(skipped)
        for key, seconds in finished:
            self._leave(key)
            self.times.setdefault(key, []).append(float(seconds))
            for i, (running, _) in enumerate(self.running):     # the earliest started of its group
                if running == key:
                    del self.running[i]
                    break
        for key in skipped:
            self._leave(key)
        self.done += len(finished) + len(skipped)
        self._show(label)

    def _leave(self, key):
        if self.left.get(key, 0) > 0:
            self.left[key] -= 1

    def eta(self) -> tuple[float | None, bool]:
        """(seconds left, rough); seconds is None while no task has a time to estimate from."""
        left = {k: c for k, c in self.left.items() if c > 0}
        if not left:
            return 0.0, False
        pools = [self.times, self.prior]
        by_key = [{k: float(np.median(v)) for k, v in p.items() if v} for p in pools]
        by_mn = []
        for p in pools:
            groups: dict[tuple, list[float]] = {}
            for (_, m, n), v in p.items():
                groups.setdefault((m, n), []).extend(v)
            by_mn.append({k: float(np.median(v)) for k, v in groups.items() if v})
        every = [s for p in pools for v in p.values() for s in v]
        fallback = float(np.median(every)) if every else None
        ran: dict[tuple, list[float]] = {}          # seconds each running task has run so far
        now = self.clock()
        for key, t0 in self.running:
            ran.setdefault(key, []).append(now - t0)
        work, longest, rough = 0.0, 0.0, False
        for (d, m, n), count in left.items():
            est = next((t[(d, m, n)] for t in by_key if (d, m, n) in t),
                       next((t[(m, n)] for t in by_mn if (m, n) in t), None))
            if est is None:
                if fallback is None:
                    return None, True
                est, rough = fallback, True
            # a running task has est - (its time so far) left, at least a tenth of est (overrunning)
            rest = [max(est - r, est / 10) for r in ran.get((d, m, n), [])[:count]]
            work += est * (count - len(rest)) + sum(rest)
            longest = max([longest, *rest] if len(rest) == count else [longest, est])
        return max(work / self.jobs, longest), rough

    def _show(self, label: str):
        if not self.enabled:
            return
        elapsed = self.clock() - self.t0
        eta, rough = self.eta()
        eta_text = "--:--:--" if eta is None else ("~" if rough else "") + hms(eta)
        filled = int(self.WIDTH * self.done / max(self.total, 1))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        self._write(f"[{bar}] {self.done}/{self.total} tasks  elapsed {hms(elapsed)}  ETA {eta_text}  {label}")
        self.drawn = True

    def _write(self, line: str, end: bool = False):
        stream = self.stream
        if self.tty:
            width = max(40, shutil.get_terminal_size().columns - 1)
            stream.write("\r" + line[:width].ljust(width) + ("\n" if end else ""))
        else:
            stream.write(line + "\n")
        stream.flush()

    def clear(self):
        """Blank the bar's line (a terminal's), so that a message printed meanwhile has a line of its own;
        the next update draws the bar again."""
        if self.enabled and self.tty and self.drawn:
            width = max(40, shutil.get_terminal_size().columns - 1)
            self.stream.write("\r" + " " * width + "\r")
            self.stream.flush()

    def close(self):
        if self.enabled and self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()
