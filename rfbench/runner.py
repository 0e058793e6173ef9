"""The shared runner: (datasets × methods × n_features × outer folds) → records.

A task is one (dataset, method, n_features, outer fold). Tasks of a method whose estimator sets
``shares_budgets`` (one model serves every n_features value, e.g. LightGBM via num_iteration) are
executed together as one work item, but still produce one record per n_features.

Work items run in loky worker processes (``--jobs N``, or ``--jobs 1`` with a ``--timeout``) or
in-process (``--jobs 1``), each under an explicit thread budget (threadpoolctl for BLAS/OpenMP,
``n_jobs`` for the estimator) so that workers × threads ≤ cores. ``--timeout`` is enforced twice:
inside the worker by a real-time alarm that raises in the task (the worker survives), and, for code
that blocks the signal or sits in C, by the pool, which kills the workers of a task past its limit
plus a grace period and records it as a timeout.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
import traceback
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path

import numpy as np

from rfbench import protocol as proto
from rfbench.data import load
from rfbench.data.loader import data_dir as resolve_data_dir
from rfbench.data.loader import provenance as data_provenance
from rfbench.errors import DataUnavailable, UsageError
from rfbench.registry import get_dataset, get_method
from rfbench.store import LEASE_S, RunDir, is_disk_full, record_key


#: seconds between two consolidations of results.csv during a run
RESULTS_CSV_EVERY_S = 60.0


@dataclass(frozen=True)
class WorkItem:
    dataset: str
    method: str
    fold: int
    budgets: tuple[int, ...]


class TaskTimeout(Exception):
    pass


@contextlib.contextmanager
def alarm(seconds: float | None):
    """Raise TaskTimeout in this (main) thread after ``seconds`` of wall time."""
    if not seconds or seconds <= 0:
        yield
        return

    def _raise(signum, frame):
        raise TaskTimeout(f"exceeded the timeout of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def method_seed(seed: int, fold: int) -> int:
    # the same stream for every method on a fold, so e.g. the three RFF kernels share draws
    return int(np.random.default_rng([seed, fold, 15485863]).integers(2**31 - 1))


@lru_cache(maxsize=4)
def _prepared(dataset: str, data_dir: str | None, max_samples: int | None, seed: int):
    """Loaded, subsampled, label-encoded data of a dataset (cached per worker process)."""
    ds = get_dataset(dataset)
    loaded = load(dataset, data_dir)
    idx = proto.subsample_index(loaded.X.shape[0], max_samples, seed)
    X, y = loaded.X[idx], loaded.y[idx]
    if ds.task == "classification":
        y, _ = proto.encode_labels(y)
    return ds, X, y, loaded.source


def execute(item: WorkItem, protocol: proto.Protocol, data_dir: str | None, threads: int,
            timeout_s: float | None) -> list[dict]:
    """Run one work item (in a worker); returns one record per budget, whatever happens."""
    from threadpoolctl import threadpool_limits

    base = {"dataset": item.dataset, "method": item.method, "fold": item.fold, "seed": protocol.seed,
            "protocol": protocol.key(), "threads": threads, "metric": None, "error": None,
            "tune_s": None, "fit_s": None, "predict_s": None, "total_s": None, "preprocess_s": None,
            "params": None,
            "message": "", "source": None, "task": None, "n_train": None, "n_test": None}
    records = {n: dict(base, n_features=n, status="error") for n in item.budgets}
    t_start = time.perf_counter()
    try:
        with threadpool_limits(limits=threads):
            _execute(item, protocol, data_dir, threads, timeout_s, records)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a record, never a crash
        status = "timeout" if isinstance(exc, TaskTimeout) else "error"
        for rec in records.values():
            if rec["status"] != "done":
                rec["status"] = status
                rec["message"] = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
                rec["traceback"] = traceback.format_exc()[-3000:]
                rec["total_s"] = time.perf_counter() - t_start
    now = datetime.now(UTC).isoformat(timespec="seconds")
    for rec in records.values():
        rec["finished_at"] = now
    return list(records.values())


@dataclass
class FoldTask:
    """One outer fold of one (dataset, method), ready to fit: the fold's scaled data and the
    estimator class with every constructor argument but ``n_features``."""
    ds: object
    source: str
    X_tr: np.ndarray
    X_te: np.ndarray
    y_tr: np.ndarray
    y_te: np.ndarray
    cls: type
    common: dict
    as_sign: bool


def fold_task(dataset: str, method_name: str, fold: int, protocol: proto.Protocol,
              data_dir: str | None, threads: int = 1) -> FoldTask:
    """The data and estimator arguments of one outer fold exactly as the runner fits it (also for
    diagnosis scripts that refit one task)."""
    ds, X, y, source = _prepared(dataset, data_dir, protocol.max_samples, protocol.seed)
    method = get_method(method_name)
    tr, te = proto.outer_splits(protocol, y, ds.task, ds.holdout)[fold]
    scaler = proto.Scaler.fit(X[tr], y[tr], ds.task, protocol.target_scaling)
    y_tr, y_te = (scaler.y(y[tr]), scaler.y(y[te])) if ds.task == "regression" else (y[tr], y[te])
    common = {"cv": proto.inner_splits(protocol, y_tr, ds.task, fold),
              "random_state": method_seed(protocol.seed, fold), "n_jobs": threads, **method.params}
    return FoldTask(ds, source, scaler.x(X[tr]), scaler.x(X[te]), y_tr, y_te, method.estimator_class(ds.task),
                    common, ds.task == "classification" and not method.is_native(ds.task))


def _execute(item, protocol, data_dir, threads, timeout_s, records):
    task = fold_task(item.dataset, item.method, item.fold, protocol, data_dir, threads)
    ds, cls, common, as_sign = task.ds, task.cls, task.common, task.as_sign
    X_tr, X_te, y_tr, y_te = task.X_tr, task.X_te, task.y_tr, task.y_te
    for rec in records.values():
        rec.update(source=task.source, task=ds.task + (" (ridge on ±1, sign)" if as_sign else ""),
                   n_train=len(y_tr), n_test=len(y_te))

    def finish(rec, est, predict, t_fit):
        t0 = time.perf_counter()
        pred = predict()
        if as_sign:
            pred = np.where(pred >= 0, 1.0, -1.0)
        t_pred = time.perf_counter() - t0
        tune = float(getattr(est, "tune_time_", 0.0) or 0.0)
        params = getattr(est, "best_params_per_budget_", {}).get(rec["n_features"]) or getattr(est, "best_params_", {})
        rec.update(status="done", metric=proto.metric_name(ds.task, protocol.target_scaling),
                   error=proto.score(ds.task, y_te, pred, protocol.target_scaling), tune_s=tune, fit_s=max(t_fit - tune, 0.0),
                   predict_s=t_pred, total_s=t_fit + t_pred, params=json.dumps(params, default=float),
                   # data-dependent feature methods (EERF, LKRF): the feature selection part of fit
                   preprocess_s=getattr(est, "preprocess_time_", None),
                   message="")

    if getattr(cls, "shares_budgets", False):
        with alarm(timeout_s * len(item.budgets) if timeout_s else None):
            est = cls(n_features=max(item.budgets), budgets=list(item.budgets), **common)
            t0 = time.perf_counter()
            est.fit(X_tr, y_tr)
            t_fit = time.perf_counter() - t0
            for n in item.budgets:
                finish(records[n], est, lambda n=n: est.predict(X_te, budget=n), t_fit)
        return
    for n in item.budgets:
        try:
            with alarm(timeout_s):
                est = cls(n_features=n, **common)
                t0 = time.perf_counter()
                est.fit(X_tr, y_tr)
                t_fit = time.perf_counter() - t0
                finish(records[n], est, lambda est=est: est.predict(X_te), t_fit)
        except TaskTimeout as exc:
            records[n].update(status="timeout", message=str(exc))


# ---------------------------------------------------------------------------------------------
# planning and scheduling (main process)


def plan(dataset_names, method_names, features, protocol, run_dir: RunDir, warn=None,
         folds=None) -> list[WorkItem]:
    """Work items whose tasks are not all done yet (resume).

    ``folds`` restricts the outer folds (splits) that are run; the splits themselves are unchanged,
    so a later run with more folds adds to the same results.
    """
    fold_ids = range(protocol.n_outer) if folds is None else folds
    done = run_dir.done_keys()
    items = []
    for dname in dataset_names:
        ds = get_dataset(dname)
        for mname in method_names:
            method = get_method(mname)
            if not method.supports(ds.task):
                if warn:
                    warn(f"skipping {mname} on {dname}: the method has no estimator for {ds.task}")
                continue
            cls = method.estimator_class(ds.task)
            for fold in fold_ids:
                todo = tuple(n for n in features
                             if record_key(dname, mname, n, fold, protocol.seed, protocol.key()) not in done)
                if not todo:
                    continue
                if getattr(cls, "shares_budgets", False):
                    items.append(WorkItem(dname, mname, fold, todo))
                else:
                    items.extend(WorkItem(dname, mname, fold, (n,)) for n in todo)
    return items


def code_version() -> dict:
    """The git commit of the rfbench source that runs (and whether it has uncommitted changes), so
    that every invocation in runs.jsonl says which code produced its records; empty outside a
    checkout."""
    import subprocess

    src = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", str(src)],
                               cwd=src, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": bool(dirty)}


def machine_info() -> dict:
    import platform
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for pkg in ("rfbench", "numpy", "scipy", "scikit-learn", "lightgbm", "pandas", "openml", "joblib",
                "threadpoolctl"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gb = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "memory_gb": round(mem_gb, 1) if mem_gb else None, "versions": versions}


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
            import shutil

            width = max(40, shutil.get_terminal_size().columns - 1)
            stream.write("\r" + line[:width].ljust(width) + ("\n" if end else ""))
        else:
            stream.write(line + "\n")
        stream.flush()

    def close(self):
        if self.enabled and self.tty and self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def interleaved(items: list[WorkItem]) -> list[WorkItem]:
    """The first fold of every (dataset, method) first, then the rest by dataset (first-seen order),
    fold and method (the planned order otherwise): every (dataset, method) has a finished task early,
    which gives the ETA a time for each and an interrupted run a first fold of the whole table, and
    a dataset's data is loaded (per worker) at most twice."""
    first: dict[str, int] = {}
    lowest: dict[tuple, int] = {}
    for item in items:
        first.setdefault(item.dataset, len(first))
        lowest[item.dataset, item.method] = min(item.fold, lowest.get((item.dataset, item.method), item.fold))
    return sorted(items, key=lambda i: (i.fold != lowest[i.dataset, i.method], first[i.dataset], i.fold))


def task_count(dataset_names, method_names, features, protocol, folds=None) -> int:
    """The tasks (dataset, method, n, fold) a run asks for, done or not (as ``plan`` enumerates them)."""
    n_folds = protocol.n_outer if folds is None else len(folds)
    return sum(len(features) * n_folds for d in dataset_names for m in method_names
               if get_method(m).supports(get_dataset(d).task))


def recorded_seconds(run_dir: RunDir, dataset_names, method_names, features, protocol) -> list[tuple]:
    """((dataset, method, n), seconds) of the done tasks of these datasets and methods already in the
    directory (the ETA of a resumed run); a method fitting all budgets in one model records the
    item's time in each, so it is shared among the budgets."""
    datasets, methods, out = set(dataset_names), set(method_names), []
    shared: dict[tuple, int] = {}
    for rec in run_dir.records():
        d, m, secs = rec.get("dataset"), rec.get("method"), rec.get("total_s")
        if (rec.get("status") != "done" or d not in datasets or m not in methods
                or rec.get("protocol") != protocol.key() or not isinstance(secs, (int, float))):
            continue
        if (d, m) not in shared:
            cls = get_method(m).estimator_class(get_dataset(d).task)
            shared[(d, m)] = len(features) if getattr(cls, "shares_budgets", False) else 1
        out.append(((d, m, rec.get("n_features")), float(secs) / shared[(d, m)]))
    return out


def hms(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def available_datasets(names, data_dir, strict: bool, warn) -> list[str]:
    ok = []
    for name in names:
        try:
            load(name, data_dir)
            ok.append(name)
        except DataUnavailable as exc:
            if strict:
                raise
            warn(f"skipped: {exc}")
    return ok


def run(dataset_names, method_names, features, protocol: proto.Protocol, out: str, jobs: int = 1,
        timeout_s: float | None = None, data_dir: str | None = None, strict: bool = False,
        progress: bool = True, warn=lambda msg: print(f"warning: {msg}", file=sys.stderr),
        command: str | None = None, threads: int | None = None, folds=None, order=None,
        seeds=None) -> RunDir:
    """Run every task not done yet; ``order`` (work items → work items) sets the sequence, e.g.
    cheapest first, so that an interrupted long run has completed as many cells as it could.

    ``seeds`` (``--seeds 0,1,2``): run the protocol once per seed, one after the other, into the
    same directory (default: ``protocol.seed`` alone). The seed draws the outer splits, the inner
    folds and every estimator's random_state (and the --max-samples subsample); it is part of every
    record's key and the fold assignments are kept per seed, so the seeds' records sit side by side
    and the report pools them."""
    import dataclasses

    seeds = [protocol.seed] if seeds is None else list(dict.fromkeys(seeds))
    if not seeds:
        raise UsageError("--seeds names no seed; use e.g. --seeds 0,1,2")
    protocols = [dataclasses.replace(protocol, seed=s) for s in seeds]   # each seed validated now
    for name in method_names:
        get_method(name).check()        # a missing module or class fails now, not in every task
    if folds is not None:
        bad = sorted(f for f in folds if not 0 <= f < protocol.n_outer)
        if bad or not folds:
            raise UsageError(f"--folds {','.join(map(str, bad)) or '(empty)'}: outer folds are numbered "
                             f"0..{protocol.n_outer - 1} for this protocol")
        folds = sorted(set(folds))
    if not features or any(n < 1 for n in features):
        raise UsageError("--features must be positive integers, e.g. --features 100,500")
    if jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if threads is not None and threads < 1:
        raise UsageError(f"--threads {threads} must be at least 1 (leave it out for cores // jobs)")
    resolve_data_dir(data_dir)          # a named data directory that does not exist is refused now
    try:
        for seeded in protocols:
            run_dir = _run(dataset_names, method_names, features, seeded, out, jobs, timeout_s, data_dir, strict,
                           progress, warn, command, threads, folds, order)
        return run_dir
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        raise UsageError(f"disk full while writing {exc.filename or out}; finished tasks are saved; free space "
                         "and re-run the same command to resume") from None


def _run(dataset_names, method_names, features, protocol, out, jobs, timeout_s, data_dir, strict, progress,
         warn, command, threads, folds, order) -> RunDir:
    run_dir = RunDir(out).ensure()
    # one directory = one protocol: records of another protocol (other folds, inner folds, sample
    # cap, ...) would sit beside these as a second table that no report may pool with this one
    held = sorted({str(r.get("protocol")) for r in run_dir.records()} - {protocol.key()})
    if held:
        raise UsageError(f"{out} holds results of protocol {', '.join(held)}, not {protocol.key()} (this run's "
                         "settings); rerun with the same protocol options to resume, or use another --out")
    bar = Progress(progress, jobs)      # says at once what it does: loading can take a while
    bar.note(f"loading {len(dataset_names)} dataset{'s' * (len(dataset_names) != 1)} "
             f"({', '.join(dataset_names)}) ...")
    names = available_datasets(dataset_names, data_dir, strict, warn)
    for name in names:  # fold assignments, saved once and checked on resume
        _, _, y, _ = _prepared(name, data_dir, protocol.max_samples, protocol.seed)
        splits = proto.outer_splits(protocol, y, get_dataset(name).task, get_dataset(name).holdout)
        if protocol.name == "cv":
            run_dir.write_folds(name, proto.fold_assignment(splits, len(y)), seed=protocol.seed)
    cores = os.cpu_count() or 1
    threads = threads or max(1, cores // jobs)
    if threads * jobs > cores:
        warn(f"{jobs} workers × {threads} threads exceed the {cores} cores; expect slow, noisy timings")
    invocation = uuid.uuid4().hex[:12]   # ties this invocation's records to its runs.jsonl line
    run_dir.write_run_info({
        "command": command or " ".join(sys.argv), "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "invocation": invocation,
        "datasets": names, "methods": list(method_names), "features": list(features),
        "protocol": protocol.__dict__, "protocol_key": protocol.key(), "jobs": jobs,
        "threads_per_worker": threads, "timeout_s": timeout_s,
        "folds": folds,
        "data_dir": str(resolve_data_dir(data_dir) or ""),
        "user_entries": data_provenance(names, method_names), "machine": machine_info(), "code": code_version(),
    })
    items = plan(names, method_names, features, protocol, run_dir, warn, folds)
    items = order(items) if order is not None else interleaved(items)
    todo = [(i.dataset, i.method, n) for i in items for n in i.budgets]
    bar.start(todo, done=max(0, task_count(names, method_names, features, protocol, folds) - len(todo)),
              history=recorded_seconds(run_dir, names, method_names, features, protocol))
    run_dir.write_results_csv()

    keys = {item: [record_key(item.dataset, item.method, n, item.fold, protocol.seed, protocol.key())
                   for n in item.budgets] for item in items}
    busy: list[WorkItem] = []
    started: dict[WorkItem, float] = {}
    consolidated = [time.monotonic()]

    def tasks_of(item: WorkItem) -> list[tuple]:
        return [(item.dataset, item.method, n) for n in item.budgets]

    def take(item: WorkItem) -> bool:
        """Claim the item's tasks unless another invocation has finished or is running them."""
        if all(run_dir.is_done(k) for k in keys[item]):
            bar.update(f"{item.dataset} {item.method} fold {item.fold}: done elsewhere", skipped=tasks_of(item))
            return False
        taken = []
        for k in keys[item]:
            if not run_dir.claim(k):
                for t in taken:
                    run_dir.release(t)
                busy.append(item)
                bar.update(f"{item.dataset} {item.method} fold {item.fold}: running elsewhere",
                           skipped=tasks_of(item))
                return False
            taken.append(k)
        started[item] = bar.begin(tasks_of(item))   # a worker is free for it: its wall time starts now
        return True

    def collect(item: WorkItem, records: list[dict]):
        try:
            for rec in records:
                rec["invocation"] = invocation
                run_dir.write_record(rec)
        finally:                            # a failed write (disk full) frees the task too
            for k in keys[item]:
                run_dir.release(k)
        # the records are the truth; results.csv is their consolidation, rewritten at most once a
        # minute (and when the run ends), so that bookkeeping stays O(records) over a long run
        if time.monotonic() - consolidated[0] >= RESULTS_CSV_EVERY_S:
            run_dir.write_results_csv()
            consolidated[0] = time.monotonic()
        statuses = ",".join(sorted({r["status"] for r in records}))
        secs = max((r.get("total_s") or 0.0) for r in records)
        wall = (bar.clock() - started.pop(item, bar.clock())) / len(item.budgets)   # budgets share the item
        bar.update(f"{item.dataset} {item.method} n={'/'.join(map(str, item.budgets))} "
                   f"fold {item.fold}: {statuses} ({secs:.1f}s)", finished=[(t, wall) for t in tasks_of(item)])

    completed = False
    try:
        if jobs == 1 and not timeout_s:     # a time limit needs a process that can be killed
            for item in items:
                if take(item):
                    try:
                        records = execute(item, protocol, data_dir, threads, timeout_s)
                    except BaseException:           # interrupted: the task is free again
                        for k in keys[item]:
                            run_dir.release(k)
                        raise
                    collect(item, records)
        else:
            _run_pool(items, protocol, data_dir, threads, timeout_s, jobs, take, collect,
                      lambda item: [run_dir.release(k) for k in keys[item]])
        completed = True
    finally:
        bar.close()
        try:
            run_dir.write_results_csv()     # the records so far, also after an interruption
        except OSError:
            if completed:                   # else the error already on its way is the one to report
                raise
    if busy:
        warn(f"{len(busy)} work item(s) were being run by another invocation on {run_dir.path}; "
             "run the same command again once it has finished (a claim of a process on another machine "
             f"expires {LEASE_S / 60:.0f} minutes after its last heartbeat)")
    return run_dir


#: times a work item may kill its worker, running alone, before it is recorded as an error
MAX_WORKER_DEATHS = 2
#: a task past its --timeout by this much more (its alarm did not fire) has its worker killed
TIMEOUT_GRACE = (1.2, 5.0)     # × the limit, + seconds


def _failed_records(item, protocol, threads, message: str) -> list[dict]:
    return [{"dataset": item.dataset, "method": item.method, "n_features": n, "fold": item.fold,
             "seed": protocol.seed, "protocol": protocol.key(), "status": "error", "threads": threads,
             "message": message[:500], "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
            for n in item.budgets]


def _run_pool(items, protocol, data_dir, threads, timeout_s, jobs, take, collect, release):
    """Run the items on ``jobs`` worker processes, at most ``jobs`` in flight: an item is claimed
    (``take``) only when a worker is free for it, so another invocation can share the rest.

    A worker that dies (segfault, out of memory) breaks the whole pool and every task in flight with
    it: the pool is replaced and those tasks become suspects, rerun one at a time so that a death
    names its cause; a task that kills its worker ``MAX_WORKER_DEATHS`` times alone is recorded as
    ``error: worker died`` and the run goes on."""
    from collections import Counter
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    from joblib.externals.loky import ProcessPoolExecutor

    # a pool of its own, not loky's process-wide reusable executor: joblib's Parallel reuses that
    # singleton too and fails on one it did not create (AttributeError '_temp_folder_manager'), so
    # any later Parallel(backend="loky") in this process (a method fitted in-process, the tests)
    # would break
    executor = ProcessPoolExecutor(max_workers=jobs)
    queue = list(reversed(items))
    suspects: list[WorkItem] = []          # claimed, their worker died with others in flight
    deaths: Counter = Counter()
    pending = {}
    interrupted = True

    deadline = {}

    def submit(item):
        fut = executor.submit(execute, item, protocol, data_dir, threads, timeout_s)
        pending[fut] = item
        if timeout_s:
            deadline[fut] = time.monotonic() + timeout_s * len(item.budgets) * TIMEOUT_GRACE[0] + TIMEOUT_GRACE[1]

    try:
        while queue or pending or suspects:
            if suspects:
                if not pending:
                    submit(suspects.pop())
            else:
                while queue and len(pending) < jobs:
                    item = queue.pop()
                    if take(item):
                        submit(item)
            if not pending:
                break
            limit = max(0.0, min(deadline[f] for f in pending) - time.monotonic()) if deadline else None
            finished, _ = wait(pending, timeout=limit, return_when=FIRST_COMPLETED)
            overdue = [f for f in pending if f not in finished and f in deadline and time.monotonic() > deadline[f]]
            if overdue:                             # the alarm did not stop it: kill its worker, for real
                for fut in overdue:
                    item = pending.pop(fut)
                    collect(item, [dict(r, status="timeout", message=f"killed after {timeout_s * len(item.budgets):g} s "
                                        "(--timeout; the task did not stop by itself)")
                                   for r in _failed_records(item, protocol, threads, "")])
                suspects += list(pending.values())     # in flight in the same pool: rerun, not blamed
                pending.clear()
                executor.shutdown(wait=False, kill_workers=True)
                executor = ProcessPoolExecutor(max_workers=jobs)
                continue
            died = []
            for fut in finished:
                item = pending.pop(fut)
                try:
                    records = fut.result()
                except BrokenProcessPool as exc:    # its worker, or another one of the pool, died
                    died.append((item, exc))
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be unpickled
                    records = _failed_records(item, protocol, threads, f"worker failed: {type(exc).__name__}: {exc}")
                collect(item, records)
            if died:
                died += [(item, None) for item in pending.values()]   # the broken pool takes them all
                pending.clear()
                executor.shutdown(wait=False, kill_workers=True)
                executor = ProcessPoolExecutor(max_workers=jobs)
                if len(died) == 1:                  # it ran alone: the death is its own
                    item, exc = died[0]
                    deaths[item] += 1
                    if deaths[item] >= MAX_WORKER_DEATHS:
                        collect(item, _failed_records(item, protocol, threads,
                                                      f"worker died ({deaths[item]} times): {str(exc).splitlines()[0]}"))
                    else:
                        suspects.append(item)
                else:
                    suspects += [item for item, _ in died]
        interrupted = False
    finally:
        for item in [*pending.values(), *suspects]:   # interrupted: the unfinished tasks are free again
            release(item)
        # interrupted: stop the workers now, their tasks were released and will run again
        executor.shutdown(wait=not interrupted, kill_workers=interrupted)
