"""The shared runner: (datasets × methods × n_features × outer folds) → records.

A task is one (dataset, method, n_features, outer fold). Tasks of a method whose estimator is a
``contract.SharesBudgets`` (one model serves every n_features value, e.g. LightGBM via num_iteration) are
executed together as one work item, but still produce one record per n_features.

How a run runs (workers, threads, time limit, seeds, folds, backend, data, device) is one validated
:class:`rfbench.execution.runconfig.RunConfig`. Work items run on local worker lanes (``--jobs N``, or
``--jobs 1`` with a ``--timeout``; pool.py) or in-process (``--jobs 1``), each under an explicit
thread budget (threadpoolctl for BLAS/OpenMP, ``n_jobs`` for the estimator) so that workers × threads
≤ cores. ``--timeout`` is enforced twice: inside the worker by a real-time alarm that raises in the
task (the worker survives), and, for code that blocks the signal or sits in C, by the loop over the
executor (executor.py), which kills the worker of a task past its limit (counted from the task's
start in its worker) plus a grace period and records it as a timeout. ``--backend dask`` runs the
same work items on a dask.distributed cluster instead (dask_pool.py), through the same loop, with the
same claims and records. With ``--device cuda``, the items of methods that take a ``device`` run on
the GPU, at most ``--gpu-slots`` at once, the other workers running CPU items meanwhile.

The datasets and methods a run names are those of the :class:`rfbench.registry.Registry` it is
given (``registry=``; by default the one :func:`rfbench.registry.load` builds when the run starts);
its workers get the part of it that the run needs, as an argument of each task.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from rfbench import contract
from rfbench import protocol as proto
from rfbench.data import load
from rfbench.data.loader import provenance as data_provenance
from rfbench.data.sources import DataSources
from rfbench.errors import DataUnavailable, UsageError
from rfbench.execution.backends import BACKENDS, open_backend
from rfbench.execution.executor import Backend, ItemCallbacks
from rfbench.execution.progress import Progress, hms
from rfbench.execution.runconfig import RunConfig
from rfbench.execution.tasks import WorkerOptions, WorkItem, own_splits, prepared
from rfbench.provenance import code_version, machine_info
from rfbench.registry import Registry
from rfbench.store import LEASE_S, Record, RunDir, device_tasks, is_disk_full, record_key

#: seconds between two consolidations of results.csv during a run
RESULTS_CSV_EVERY_S = 60.0
#: seconds between two group commits of the records to disk: one syncfs for all the records written
#: since, instead of an fsync (~1 ms) per record; only a machine crash can lose this window's records
#: (their tasks run again), and a syncfs also flushes what other processes wrote (ms on a busy disk)
SYNC_EVERY_S = 5.0


def plan(dataset_names, method_names, features, protocol, run_dir: RunDir, warn=None,
         folds=None, device: str = "cpu", *, registry: Registry) -> list[WorkItem]:
    """Work items whose tasks are not all done yet (resume), of datasets and methods of ``registry``.

    ``folds`` restricts the outer folds (splits) that are run; the splits themselves are unchanged,
    so a later run with more folds adds to the same results. ``device`` (the run's, "cpu" or
    "cuda"): the items of a method whose estimator takes a ``device`` (contract.accepts_device) are
    device items; the others run on the CPU.
    """
    fold_ids = range(protocol.n_outer) if folds is None else folds
    done = run_dir.done_keys()
    items = []
    for dname in dataset_names:
        ds = registry.dataset(dname)
        for mname in method_names:
            method = registry.method(mname)
            if not method.supports(ds.task):
                if warn:
                    warn(f"skipping {mname} on {dname}: the method has no estimator for {ds.task}")
                continue
            cls = method.estimator_class(ds.task)
            on = device if device != "cpu" and contract.accepts_device(cls) else "cpu"
            for fold in fold_ids:
                todo = tuple(n for n in features
                             if record_key(dname, mname, n, fold, protocol.seed, protocol.key()) not in done)
                if not todo:
                    continue
                if contract.shares_budgets(cls):
                    items.append(WorkItem(dname, mname, fold, todo, on))
                else:
                    items.extend(WorkItem(dname, mname, fold, (n,), on) for n in todo)
    return items


def refuse_thread_mixing(items: list[WorkItem], run_dir: RunDir, protocol, threads: int, registry: Registry) -> None:
    """One line (UsageError) when a pending task of a thread-sensitive method (registry field
    ``thread_sensitive``: its numbers change with the BLAS threads) would join finished tasks of the
    same (dataset, method) computed with another thread count, e.g. à la carte resumed with another
    --threads or --jobs: its cells would silently mix both."""
    pending = {(i.dataset, i.method) for i in items if registry.method(i.method).thread_sensitive}
    if not pending:
        return
    key = protocol.key()
    for status, dataset, method, prot, used in run_dir.columns(["status", "dataset", "method", "protocol", "threads"]):
        if (status == "done" and prot == key and (dataset, method) in pending and isinstance(used, int)
                and used != threads):
            raise UsageError(
                f"{method} on {dataset}: the finished tasks in {run_dir.path} used {used} BLAS thread(s) per task "
                f"and this run would use {threads}, which changes {method}'s numbers; resume with --threads {used} "
                "(and a --jobs that leaves each worker that many cores), or use another --out")


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


def longest_first(items: list[WorkItem], seconds) -> list[WorkItem]:
    """The items with an estimate by descending estimated seconds (``seconds``: items → their
    estimates, NaN or another non-finite value for none; equal estimates keep their given order),
    then those without one, in their given order; in each part the device items first. Longest first keeps the workers busy to
    the end (the list-scheduling rule that leaves the least tail: no long task starts when the rest
    are done). Device items first: at most ``--gpu-slots`` of them run at once and the dispatch fills
    every other worker with the first CPU items meanwhile (executor.Dispatch), so the longest CPU
    items still start at once, while device items left to the end would run on the slots alone
    with the other workers idle (the torgo suite on 16 cores and 4 slots: 1.31 h so, 1.10 h device
    first; bench/perf/gpu.py). The unestimated ones go last because an item has no estimate only
    when no task of its method at that n has finished in the directory: nothing says it is long,
    and in a spec's run these are the cells never run, the largest sets among them, which a long
    run reaches after every estimable cell."""
    import math

    est = [float(e) for e in seconds(items)] if items else []
    known = sorted((k for k, e in enumerate(est) if math.isfinite(e)), key=lambda k: (not items[k].on_device, -est[k]))
    unknown = sorted((k for k, e in enumerate(est) if not math.isfinite(e)), key=lambda k: not items[k].on_device)
    return [items[k] for k in known] + [items[k] for k in unknown]


def item_seconds(estimate):
    """Work items → their estimated seconds by ``estimate`` (:func:`rfbench.execution.estimate.task_seconds`'s
    :class:`~rfbench.execution.estimate.Estimate`): an item's the sum over its budgets (a fit shared by
    several budgets: the records split its time among them in proportion to n; a budget-free
    method's item: its whole fit, whatever its budgets); NaN: none."""
    import numpy as np

    def seconds(items):
        tasks = [(i.dataset, i.method, int(n), k) for k, i in enumerate(items) for n in i.budgets]
        if not tasks:
            return np.zeros(len(items))
        est, _ = estimate.of_tasks(tasks)
        bounds = np.cumsum([0] + [len(i.budgets) for i in items])
        return np.array([est[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:], strict=True)])

    return seconds


def finished_estimate(run_dir: RunDir, protocol, *, registry: Registry):
    """The estimator of ``rfbench status`` (:func:`rfbench.execution.estimate.task_seconds`) from the done
    tasks of ``protocol`` in ``run_dir`` that the CPU computed, or None when there is none."""
    from rfbench.execution.estimate import task_seconds

    finished = finished_cpu_times(run_dir, protocol, registry=registry)
    finished = finished[finished["method"].isin(list(registry.methods))]
    if not len(finished):
        return None
    return task_seconds(finished.astype({"n_features": int, "total_s": float}), registry=registry)


def finished_cpu_times(run_dir: RunDir, protocol, *, registry: Registry):
    """(dataset, method, n_features, fold, total_s, cpu_s, fit_s) of the done tasks of ``protocol`` in ``run_dir`` that
    the NumPy path computed: the estimator projects that path, and a task a torch device computed says
    nothing of its time (alc at n = 500 on kin40k: 14 s on an H200). The same rule as status and
    reproduce: ``rfbench.store.device_tasks`` left out by ``rfbench.execution.estimate.cpu_path_only``."""
    import pandas as pd

    from rfbench.execution.estimate import cpu_path_only

    known = registry.datasets
    fields = ["status", "dataset", "method", "n_features", "fold", "protocol", "total_s", "cpu_s", "fit_s"]
    done = pd.DataFrame([r[1:] for r in run_dir.columns(fields)
                         if r[0] == "done" and r[5] == protocol.key() and r[1] in known and _is_number(r[6])],
                        columns=fields[1:])
    done = cpu_path_only(done.astype({"n_features": int, "fold": int, "cpu_s": float, "fit_s": float}),
                         device_tasks([run_dir]))
    return done[["dataset", "method", "n_features", "fold", "total_s", "cpu_s", "fit_s"]].reset_index(drop=True)


def task_count(dataset_names, method_names, features, protocol, folds=None, *, registry: Registry) -> int:
    """The tasks (dataset, method, n, fold) a run asks for, done or not (as ``plan`` enumerates them)."""
    n_folds = protocol.n_outer if folds is None else len(folds)
    return sum(len(features) * n_folds for d in dataset_names for m in method_names
               if registry.method(m).supports(registry.dataset(d).task))


def recorded_seconds(run_dir: RunDir, dataset_names, method_names, features, protocol, *,
                     registry: Registry) -> list[tuple]:
    """((dataset, method, n), seconds) of the done tasks of these datasets and methods already in the
    directory (the ETA of a resumed run). Records of a fit shared by several budgets attribute its
    time in proportion to n (``shared_fit_s`` holds the whole); records written before that (or
    before their method shared budgets) repeat the item's time in each budget, so it is divided
    among them where one fit now serves them all (:func:`rfbench.contract.fit_is_shared` at the
    record's training rows)."""
    datasets, methods, out = set(dataset_names), set(method_names), []
    shared_at: dict[tuple, object] = {}
    key = protocol.key()
    for status, d, m, n, secs, prot, whole, n_train in run_dir.columns(
            ["status", "dataset", "method", "n_features", "total_s", "protocol", "shared_fit_s", "n_train"]):
        if status != "done" or d not in datasets or m not in methods or prot != key or not _is_number(secs):
            continue
        if (d, m) not in shared_at:
            shared_at[(d, m)] = _shared_fit_test(registry.method(m), registry.dataset(d))
        repeated = not _is_number(whole) and shared_at[(d, m)](int(n_train) if _is_number(n_train) else 0)
        out.append(((d, m, n), float(secs) / (len(features) if repeated else 1)))
    return out


def _shared_fit_test(method, dataset):
    """rows → whether one fit of ``method`` on ``dataset`` with that many training rows serves every
    budget (:func:`rfbench.contract.fit_is_shared`; always, for an estimator that cannot be built
    without the runner's arguments; never, for one that does not share budgets)."""
    cls = method.estimator_class(dataset.task)
    if not contract.shares_budgets(cls):
        return lambda rows: False
    try:
        est = cls(**method.params_for(dataset.name))
    except Exception:  # noqa: BLE001 - a user estimator whose constructor needs more: it shares throughout
        return lambda rows: True
    return lambda rows: contract.fit_is_shared(est, rows)


def _is_number(value) -> bool:
    """A finite number, as a column holds it (a field a record lacks is NaN there)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def available_datasets(names, sources: DataSources, strict: bool, warn, registry: Registry) -> list[str]:
    """The datasets of ``names`` (of ``registry``) whose data can be obtained from ``sources``; the
    others said by ``warn`` (with ``strict``, the first one raises)."""
    ok = []
    for name in names:
        try:
            load(registry.dataset(name), sources.data_dirs, registry=registry, cache=sources.cache_dir)
            ok.append(name)
        except DataUnavailable as exc:
            if strict:
                raise
            warn(f"skipped: {exc}")
    return ok


def _checked_request(method_names, features, protocol: proto.Protocol, config: RunConfig, registry: Registry):
    """(one protocol per seed, the sorted folds or None) of a run's request, or a UsageError naming
    what is wrong with it (shared by :func:`run` and :func:`dry_run`)."""
    protocols, folds = config.request(protocol)     # each seed's protocol validated now
    for name in method_names:
        registry.method(name)           # an unknown name fails now; its module is imported by check_methods
    if not features or any(n < 1 for n in features):
        raise UsageError("--features must be positive integers, e.g. --features 100,500")
    return protocols, folds


def stderr_warning(msg: str) -> None:
    """A run's default notice: one ``warning:`` line on stderr."""
    print(f"warning: {msg}", file=sys.stderr)


def installed_methods(method_names, registry: Registry, warn) -> list[str]:
    """The methods of ``method_names`` whose required package (methods.yaml ``requires``) is installed.
    Each other one is skipped with its one line said once by ``warn``; where that leaves none, the
    first one's line is the run's error (UsageError, exit 2)."""
    names = list(method_names)
    missing = {name: registry.method(name).missing() for name in names}
    ok = [name for name in names if not missing[name]]
    if names and not ok:
        raise UsageError(missing[names[0]])
    for name in names:
        if missing[name]:
            warn(f"skipped: {missing[name]}")
    return ok


def check_methods(method_names, registry: Registry) -> None:
    """Import every method's estimators: a missing module or class fails now, not in every task."""
    for name in method_names:
        registry.method(name).check()


def run(dataset_names, method_names, features, protocol: proto.Protocol, out: str,
        config: RunConfig | None = None, *, registry: Registry, progress: bool = True,
        warn=stderr_warning, command: str | None = None, order=None,
        all_unavailable_ok: bool = False) -> RunDir:
    """Run every task not done yet, as ``config`` says (:class:`rfbench.execution.runconfig.RunConfig`: workers,
    threads, time limit, seeds, folds, backend, data directory, device; default ``RunConfig()``: one
    in-process worker, the protocol's seed, every fold, the CPU); ``order`` (work items → work items)
    sets the sequence, e.g. cheapest first, so that an interrupted long run has completed as many
    cells as it could.

    ``registry``: the :class:`rfbench.registry.Registry` the names are looked up in (the command's,
    with what its command line added; a library caller passes :func:`rfbench.registry.load`'s). The worker
    processes get the part the run needs as an argument of each task.

    ``config.seeds`` (``--seeds 0,1,2``): run the protocol once per seed, one after the other, into
    the same directory (default: ``protocol.seed`` alone). The seed draws the outer splits, the inner
    folds and every estimator's random_state (and the --max-samples subsample); it is part of every
    record's key and the fold assignments are kept per seed, so the seeds' records sit side by side
    and the report pools them.

    ``config.backend``: "local" (this process or local worker lanes) or "dask": a LocalCluster of
    ``jobs`` workers, or the workers of the dask scheduler at ``config.scheduler`` (their own cores
    set their threads). ``config.jobs=None`` or ``threads=None``: resolved here
    (:meth:`rfbench.execution.runconfig.RunConfig.resolved`) unless the command resolved them.

    A run none of whose datasets can be obtained is refused (:func:`none_available`; a results
    directory it created is removed again) unless ``all_unavailable_ok`` (a spec's run, whose other
    groups and specs go on)."""
    config = config if config is not None else RunConfig()
    if not isinstance(config, RunConfig):
        raise TypeError(f"config must be a RunConfig, got {type(config).__name__}")
    if not isinstance(registry, Registry):
        raise TypeError(f"registry must be a Registry, got {type(registry).__name__}")
    protocols, folds = _checked_request(method_names, features, protocol, config, registry)
    method_names = installed_methods(method_names, registry, warn)
    config = config.resolved(method_names, registry)     # the commands pass it resolved already
    jobs = config.jobs
    run_dir = RunDir(out)
    if run_dir.path.is_dir():           # refused before the first line: bad input is that one line alone
        check_one_protocol(run_dir, protocol)
    # a user method's module (a registry file, a plugin) is imported before the first line: one that
    # cannot be imported (a missing dependency) is then that one line alone. The built-in methods'
    # imports (scikit-learn, ~0.6 s; their packages are rfbench's own dependencies) come after it.
    user = [m for m in method_names if registry.method(m).origin != "built-in"]
    if user:
        check_methods(user, registry)
    # a first line at once: the method imports, data loading and worker start-up take seconds (not
    # with dask, whose connection may still be refused in one line)
    if progress and not BACKENDS[config.backend].connects:
        asked = task_count(dataset_names, method_names, features, protocol, folds, registry=registry)
        rounds = len(protocols)
        n_folds = len(folds) if folds is not None else protocol.n_outer
        Progress(True, jobs).note(
            f"{asked * rounds} tasks asked for ({len(dataset_names)} dataset{'s' * (len(dataset_names) != 1)} × "
            f"{len(method_names)} method{'s' * (len(method_names) != 1)} × {len(features)} n × "
            f"{n_folds} fold{'s' * (n_folds != 1)}"
            + (f" × {rounds} seeds" if rounds > 1 else "")
            + (f"; {jobs} workers)" if jobs > 1 else ")"))
    check_methods([m for m in method_names if m not in user], registry)
    request = RunRequest(tuple(dataset_names), tuple(method_names), tuple(features), folds, registry, command,
                         all_unavailable_ok)
    hooks = RunHooks(progress, warn, order)
    created = [p for p in (Path(out), *Path(out).parents) if not p.exists()]   # deepest first
    try:
        run_dir.ensure()                    # one store for every seed: its index is read once
        with open_backend(config) as backend:
            for i, seeded in enumerate(protocols):
                seed = SeedPlan(seeded, first=i == 0, last=i == len(protocols) - 1)
                _Seed(request, hooks, config, run_dir, seed, backend).run()
        return run_dir
    except (DataUnavailable, UsageError):
        if created:                         # nothing was written into it: leave no empty directory behind
            for empty in (run_dir.records_dir, *created):
                try:
                    empty.rmdir()
                except OSError:
                    break
        raise
    except OSError as exc:
        if not is_disk_full(exc):
            raise
        raise UsageError(f"disk full while writing {exc.filename or out}; finished tasks are saved; free space "
                         "and re-run the same command to resume") from None


@dataclass(frozen=True)
class RunRequest:
    """What a run was asked for, the same for all its seeds: the datasets, methods and budgets (of
    ``registry``), the outer folds (None: all), the command line of runs.jsonl, and whether a run none
    of whose datasets can be obtained goes on (a spec's group) instead of being refused."""
    dataset_names: tuple[str, ...]
    method_names: tuple[str, ...]
    features: tuple[int, ...]
    folds: list[int] | None
    registry: Registry
    command: str | None = None
    all_unavailable_ok: bool = False


@dataclass(frozen=True)
class RunHooks:
    """How a run talks and orders: the progress line on or off, ``warn`` for a line to the user,
    ``order`` (work items → work items; None: the planned order)."""
    progress: bool
    warn: Callable[[str], None]
    order: Callable | None = None


@dataclass(frozen=True)
class SeedPlan:
    """One seed of a run: its protocol, and whether it is the first (the protocol checked, results.csv
    consolidated) and the last (results.csv consolidated at its end)."""
    protocol: proto.Protocol
    first: bool = True
    last: bool = True


def _outer_splits(name: str, protocol: proto.Protocol, sources: DataSources, *, registry: Registry):
    """(the outer (train, test) index pairs of a dataset, its row count): :func:`rfbench.protocol.outer_splits`
    on the data as the tasks prepare it (rfbench.execution.tasks) from ``sources``, so the splits every
    task runs on."""
    ds = registry.dataset(name)
    _, _, y, _ = prepared(ds, sources, protocol.max_samples, protocol.seed)
    return proto.outer_splits(protocol, y, ds.task, own_splits(ds, protocol, sources)), len(y)


def outer_fold_assignment(name: str, protocol: proto.Protocol, sources: DataSources | None = None, *,
                          registry: Registry):
    """The outer fold of every row of a dataset (of ``registry``, its data read from ``sources``;
    None: :meth:`DataSources.from_settings`) under a
    cv protocol (what folds/<dataset>.csv holds, and what rfbench.experiments.baselines fingerprints); None under
    the other protocols, whose splits are computed (and so checked against the data) but not stored."""
    sources = DataSources.given_or_settings(sources)
    splits, m = _outer_splits(name, protocol, sources, registry=registry)
    return proto.fold_assignment(splits, m) if isinstance(protocol, proto.CV) else None


def outer_splits_fingerprint(name: str, protocol: proto.Protocol, sources: DataSources | None = None, *,
                             registry: Registry) -> str:
    """The fingerprint of a dataset's outer splits under any protocol, from the splits the runner
    uses: under cv :func:`rfbench.protocol.folds_fingerprint` of the fold assignment (the value of
    its folds/<dataset>.csv), under published the sha256 of the split masks file (with --max-samples
    the splits' own fingerprint), under splits, holdout and fixed :func:`rfbench.protocol.splits_fingerprint`
    (those protocols store no splits file). Loads the data from ``sources`` (None:
    :meth:`DataSources.from_settings`; a UsageError when it cannot be obtained)."""
    from rfbench.protocol import folds_fingerprint, splits_fingerprint

    sources = DataSources.given_or_settings(sources)
    splits, m = _outer_splits(name, protocol, sources, registry=registry)
    if isinstance(protocol, proto.CV):
        return folds_fingerprint(proto.fold_assignment(splits, m))
    if isinstance(protocol, proto.Published) and not protocol.max_samples:
        # the published splits are a file: its sha256 names them (the same file, the same splits)
        return own_splits(registry.dataset(name), protocol, sources).sha256
    return splits_fingerprint(splits)


def dry_run(dataset_names, method_names, features, protocol: proto.Protocol, out, config: RunConfig | None = None,
            *, registry: Registry, warn=stderr_warning, timings=None):
    """What :func:`run` would do, without running or writing anything (no directory, no index, no
    data loaded): one row per (dataset, method, n) with the tasks that would run (``to_run``), those
    already done in ``out`` (``done``), whether the dataset's data is here offline (``offline``: else
    the run downloads it or skips it; ``data``: "offline", "needs network" or "sha256 differs", a file
    here that a run would refuse) and the estimated seconds of the tasks to run (``est_s``, NaN:
    unestimated) by the estimator of ``rfbench status`` (:func:`rfbench.execution.estimate.task_seconds`, from
    the finished tasks in ``out``). Of ``config``, the folds, seeds and data directory count; the names
    are those of ``registry``. ``timings``: finished tasks (dataset,
    method, n_features, total_s and, where recorded, fold, cpu_s and fit_s of this protocol) to estimate from in place
    of those in ``out`` (a spec's shipped baseline where ``out`` holds none)."""
    import pandas as pd

    from rfbench.data.loader import TASK_UNKNOWN, data_state, unresolved_openml
    from rfbench.execution.estimate import task_seconds

    config = config if config is not None else RunConfig()
    sources = config.sources
    protocols, folds = _checked_request(method_names, features, protocol, config, registry)
    method_names = installed_methods(method_names, registry, warn)     # as run skips them
    check_methods(method_names, registry)
    path = Path(out)
    if path.exists() and not path.is_dir():
        raise UsageError(f"--out {out} is a file, not a results directory; name a directory")
    run_dir = RunDir(path, read_only=True)
    if path.is_dir():
        check_one_protocol(run_dir, protocol)
    done_keys = run_dir.done_keys()
    finished = (finished_cpu_times(run_dir, protocol, registry=registry) if timings is None
                else timings[[c for c in ("dataset", "method", "n_features", "fold", "seed", "protocol", "total_s",
                                          "cpu_s", "fit_s") if c in timings]])
    estimate = task_seconds(finished.astype({"n_features": int}), registry=registry)
    fold_ids = range(protocol.n_outer) if folds is None else folds
    rows = []
    pending = unresolved_openml(registry, dataset_names)
    for dname in dataset_names:
        ds = registry.dataset(dname)
        state = data_state(ds, sources.data_dirs, registry=registry, cache=sources.cache_dir)
        here = state == "offline"
        task_unknown = dname in pending and ds.notes.endswith(TASK_UNKNOWN)
        for mname in method_names:
            if not task_unknown and not registry.method(mname).supports(ds.task):
                continue
            # the tasks to run, a fold's budgets together (one work item: a budget-free fit is shared)
            runs = {n: [(dname, mname, n, (p.seed, f)) for p in protocols for f in fold_ids
                        if record_key(dname, mname, n, f, p.seed, p.key()) not in done_keys] for n in features}
            tasks = [t for n in features for t in runs[n]]
            est = estimate.of_tasks(tasks)[0] if tasks else []
            per_n = {n: 0.0 for n in features}
            for (_, _, n, _), e in zip(tasks, est, strict=True):
                per_n[n] += float(e)
            for n in features:
                to_run = len(runs[n])
                rows.append({"dataset": dname, "method": mname, "n": int(n), "to_run": to_run,
                             "done": len(protocols) * len(fold_ids) - to_run,
                             "offline": here, "data": state, "est_s": per_n[n]})
    table = pd.DataFrame(rows, columns=["dataset", "method", "n", "to_run", "done", "offline", "data", "est_s"])
    table.attrs["unresolved"] = pending
    return table


def render_dry_run(table, out, estimated_from=None) -> str:
    """The table of :func:`dry_run` and what it adds up to (``estimated_from``: where the finished
    tasks the estimates come from are, when not in ``out``)."""
    import numpy as np
    from tabulate import tabulate

    shown = [[r.dataset, r.method, r.n, r.to_run, r.done, r.data,
              "" if not r.to_run else "?" if np.isnan(r.est_s) else hms(r.est_s)]
             for r in table.itertuples()]
    body = tabulate(shown, headers=["dataset", "method", "n", "to run", "done", "data", "est. core time"],
                    tablefmt="simple", disable_numparse=True)
    to_run, done = int(table["to_run"].sum()), int(table["done"].sum())
    runnable = table[table["offline"] & (table["to_run"] > 0)]
    unestimated = int(runnable.loc[runnable["est_s"].isna(), "to_run"].sum())
    hours = float(np.nansum(runnable["est_s"])) / 3600
    lines = [f"dry run: {to_run} of {to_run + done} tasks would run, {done} are done in {out}; nothing was run "
             "or written"]
    source = estimated_from or out
    if len(runnable) and unestimated == int(runnable["to_run"].sum()):
        lines.append(f"no estimate of the core-hours yet: no finished task of these methods in {source} "
                     "(`rfbench status` estimates from them)")
    elif len(runnable):
        lines.append(f"estimated {hours:.2f} core-hours ({hms(hours * 3600)} on one core per task) for the "
                     f"{int(runnable['to_run'].sum())} with data offline, from the finished tasks in {source} as "
                     "`rfbench status` estimates"
                     + (f"; {unestimated} unestimated (no finished task of their method there)"
                        if unestimated else ""))
    if estimated_from and not len(runnable) and to_run:
        lines.append(f"the est. core time of each row is from the finished tasks in {estimated_from}")
    changed = table[(table["data"] == "sha256 differs") & (table["to_run"] > 0)]
    if len(changed):
        lines.append(f"{', '.join(dict.fromkeys(changed['dataset']))}: the data file here does not have the sha256 the "
                     "registry gives it, so a run would refuse it: restore the file, or put its actual sha256 in "
                     "the registry once you trust it (and use a new --out)")
    away = table[~table["offline"] & (table["data"] != "sha256 differs") & (table["to_run"] > 0)]
    if len(away):
        lines.append(f"{int(away['to_run'].sum())} of them are of datasets without data offline "
                     f"({', '.join(dict.fromkeys(away['dataset']))}): a run downloads those it can and skips "
                     "the others (their files in a mirror: RFBENCH_DATA_DIR or --data-dir)")
    pending = table.attrs.get("unresolved") or []
    if pending:
        lines.append(f"{', '.join(pending)}: not resolved (a dry run does not contact OpenML): the target and shape "
                     "(and the task, unless --task gives it) are known only when the run obtains the data; a "
                     "method without an estimator for its task is skipped then")
    return body + "\n\n" + "\n".join(lines) + "\n"


def none_available(names, data_dir, registry: Registry) -> DataUnavailable:
    """The one line of a run none of whose datasets can be obtained (instead of a line per dataset,
    "nothing to run" and "no results"); where each is a user's data file, what is wrong with it."""
    from rfbench.data.loader import data_dirs

    files = {n: registry.dataset(n).file for n in names if registry.dataset(n).file
             and not Path(registry.dataset(n).file).is_file()}
    if files and len(files) == len(names):
        what = "; ".join(f"{n}: its file {f} " + ("is a directory" if Path(f).is_dir() else "is not there")
                         for n, f in files.items())
        return DataUnavailable(f"none of the datasets of this run can be read ({what}); nothing was run: point the "
                               "registry entry's 'file' at the data file")

    dirs = data_dirs(data_dir)
    where = (f"not in the mirror {os.pathsep.join(map(str, dirs))}" if dirs
             else "no dataset mirror is set (RFBENCH_DATA_DIR, --data-dir)")
    return DataUnavailable(
        f"none of the datasets of this run can be obtained here ({', '.join(names)}: {where}, and no download "
        "worked); nothing was run: point RFBENCH_DATA_DIR or --data-dir at the dataset mirror that holds their "
        "files (`rfbench datasets info NAME` shows which), or fetch them with network access "
        f"(`rfbench datasets fetch {' '.join(names)}`)")


def check_one_protocol(run_dir: RunDir, protocol: proto.Protocol) -> None:
    """One directory = one protocol: records of another protocol (other folds, inner folds, sample
    cap, ...) would sit beside these as a second table that no report may pool with this one."""
    held = sorted({str(key) for (key,) in run_dir.columns(["protocol"])} - {protocol.key()})
    if held:
        raise UsageError(f"{run_dir.path} holds results of protocol {', '.join(held)}, not {protocol.key()} (this "
                         "run's settings); rerun with the same protocol options to resume, or use another --out")


class _Seed:
    """One seed of :func:`run`: its records and bookkeeping around the executor's loop. results.csv
    is consolidated when the first seed starts and when the last ends (or any seed is interrupted),
    not around every seed: each consolidation reads the whole directory."""

    def __init__(self, request: RunRequest, hooks: RunHooks, config: RunConfig, run_dir: RunDir, seed: SeedPlan,
                 backend: Backend):
        self.request, self.registry, self.config, self.run_dir = request, request.registry, config, run_dir
        self.protocol, self.first, self.last = seed.protocol, seed.first, seed.last
        self.dataset_names, self.method_names = list(request.dataset_names), list(request.method_names)
        self.features, self.folds = request.features, request.folds
        self.progress, self.warn, self.order = hooks.progress, hooks.warn, hooks.order
        self.backend, self.jobs, self.threads = backend, config.jobs, config.threads
        self.busy: list[WorkItem] = []          # items another invocation was running
        self.started: dict[WorkItem, float] = {}
        self.keys: dict[WorkItem, list[str]] = {}
        self.consolidated = self.synced = time.monotonic()
        self.invocation = uuid.uuid4().hex[:12]     # ties this invocation's records to its runs.jsonl line
        self.bar: Progress | None = None

    def _tasks_of(self, item: WorkItem) -> list[tuple]:
        return [(item.dataset, item.method, n) for n in item.budgets]

    def take(self, item: WorkItem) -> bool:
        """Claim the item's tasks unless another invocation has finished or is running them."""
        run_dir, bar = self.run_dir, self.bar
        if all(run_dir.is_done(k) for k in self.keys[item]):
            bar.update(f"{item.dataset} {item.method} fold {item.fold}: done elsewhere", skipped=self._tasks_of(item))
            return False
        taken = []
        for k in self.keys[item]:
            if not run_dir.claim(k):
                for t in taken:
                    run_dir.release(t)
                self.busy.append(item)
                bar.update(f"{item.dataset} {item.method} fold {item.fold}: running elsewhere",
                           skipped=self._tasks_of(item))
                return False
            taken.append(k)
        self.started[item] = bar.begin(self._tasks_of(item))   # a worker is free for it: its wall time starts now
        return True

    def release(self, item: WorkItem) -> None:
        for k in self.keys[item]:
            self.run_dir.release(k)

    def collect(self, item: WorkItem, records: list[Record]) -> None:
        run_dir, bar = self.run_dir, self.bar
        try:
            for rec in records:
                run_dir.write_record(rec.replace(invocation=self.invocation), durable=False)
        finally:                            # a failed write (disk full) frees the task too
            self.release(item)
        now = time.monotonic()
        if now - self.synced >= SYNC_EVERY_S:
            run_dir.sync()
            self.synced = time.monotonic()
        # the records are the truth; results.csv is their consolidation, rewritten at most once a
        # minute (and when the run ends), so that bookkeeping stays O(records) over a long run
        if now - self.consolidated >= RESULTS_CSV_EVERY_S:
            run_dir.write_results_csv()
            self.consolidated = time.monotonic()
        statuses = ",".join(sorted({r.status for r in records}))
        secs = max((r.total_s or 0.0) for r in records)
        wall = (bar.clock() - self.started.pop(item, bar.clock())) / len(item.budgets)   # budgets share the item
        bar.update(f"{item.dataset} {item.method} n={'/'.join(map(str, item.budgets))} "
                   f"fold {item.fold}: {statuses} ({secs:.1f}s)", finished=[(t, wall) for t in self._tasks_of(item)])

    def _warn_under_bar(self, message: str) -> None:
        """A warning in the middle of the run (a worker's death): on a line of its own, not after the bar."""
        if self.bar is not None:
            self.bar.clear()
        self.warn(message)

    def _prepare(self) -> list[WorkItem] | None:
        """Load the data, save the folds and the run's line in runs.jsonl; the work items to run, or
        None when no dataset could be obtained."""
        run_dir, protocol, config = self.run_dir, self.protocol, self.config
        sources = config.sources            # where every dataset of the run is read from, workers included
        names_asked, methods, features, folds = self.dataset_names, self.method_names, self.features, self.folds
        if self.first:
            check_one_protocol(run_dir, protocol)   # the key does not hold the seed: once for all seeds
        self.jobs = self.backend.slots()            # an existing dask cluster: its size, its threads
        if self.threads is not None and self.threads * self.jobs > (os.cpu_count() or 1):
            self.warn(f"{self.jobs} workers × {self.threads} threads exceed the {os.cpu_count() or 1} cores; "
                      "expect slow, noisy timings")
        self.bar = Progress(self.progress, self.jobs)   # says at once what it does: loading can take a while
        self.bar.note(f"loading {len(names_asked)} dataset{'s' * (len(names_asked) != 1)} "
                      f"({', '.join(names_asked)}) ...")
        skipped: list[str] = []
        names = available_datasets(names_asked, sources, config.strict, skipped.append, self.registry)
        if names_asked and not names and not self.request.all_unavailable_ok:
            raise none_available(names_asked, sources.data_dirs, self.registry)
        for line in skipped:
            self.warn(line)
        if names_asked and not names:     # not "every task is done": none could be obtained
            self.warn(f"nothing run for {', '.join(methods)}: none of "
                      f"{'its' if len(methods) == 1 else 'their'} datasets can be obtained here")
            return None
        # a user's data file that changed since an earlier invocation wrote into --out would mix the
        # results of two datasets under one name: refused before anything is written
        provenance = data_provenance(self.registry, names, methods)
        recorded = run_dir.recorded_checksums()
        for name, info in (provenance.get("datasets") or {}).items():
            before, now = recorded.get(name), info.get("sha256")
            if before and now and before != now:
                raise UsageError(f"dataset '{name}': its file {info.get('file')} has sha256 {now}, but the results in "
                                 f"{run_dir.path} were computed on sha256 {before}; a changed data file needs a new "
                                 "--out (or restore the file)")
        # what is left to run, known before anything is written: a thread-sensitive method's cell is
        # never completed with another thread count than its finished tasks had
        items = plan(names, methods, features, protocol, run_dir, self.warn, folds, config.device,
                     registry=self.registry)
        refuse_thread_mixing(items, run_dir, protocol, self.threads, self.registry)
        # fold assignments, saved once and checked on resume; every dataset's splits are computed (and
        # so validated on the data: a bad split masks file is one line) before the first is written
        assignments = {name: outer_fold_assignment(name, protocol, sources, registry=self.registry)
                       for name in names}
        for name, fold_of_row in assignments.items():
            if fold_of_row is not None:
                run_dir.write_folds(name, fold_of_row, seed=protocol.seed)
        # a user dataset registered without its shape gets the shape of the data it was run on (loaded
        # just now for its splits), so that a report of the directory shows its rows and inputs
        for name, info in (provenance.get("datasets") or {}).items():
            if info.get("shape") is None:
                info["shape"] = list(load(self.registry.dataset(name), sources.data_dirs, registry=self.registry,
                                          cache=sources.cache_dir).X.shape)
        run_dir.write_run_info({
            "command": self.request.command or " ".join(sys.argv),
            "started_at": datetime.now(UTC).isoformat(timespec="seconds"), "invocation": self.invocation,
            "datasets": names, "methods": list(methods), "features": list(features),
            "protocol": protocol.__dict__, "protocol_key": protocol.key(), "jobs": self.jobs,
            "threads_per_worker": self.threads, "timeout_s": config.timeout_s,
            "backend": self.backend.label,
            "device": config.device, "gpu_slots": config.gpu_slots if config.device != "cpu" else None,
            **({"gpu_beside": True} if config.gpu_beside and config.device != "cpu" else {}),
            "folds": folds,
            "data_dir": sources.data_dirs[0] if sources.data_dirs else "",
            "user_entries": provenance, "machine": machine_info(),
            "code": code_version(),
        })
        self.dataset_names = names
        if self.order is not None:
            return self.order(items)
        # the planned order (interleaved), longest first once finished tasks here give estimates
        items = interleaved(items)
        if not items:
            return items
        import numpy as np

        # an order, not a result: a size model that cannot be fitted (a user's dataset declares no
        # shape: (0, 0)) leaves its items unestimated, or the planned order
        try:
            with np.errstate(all="ignore"):
                estimate = finished_estimate(run_dir, protocol, registry=self.registry)
                return longest_first(items, item_seconds(estimate)) if estimate is not None else items
        except (ArithmeticError, ValueError, LookupError, np.linalg.LinAlgError):
            return items

    def run(self) -> RunDir:
        run_dir, protocol, config = self.run_dir, self.protocol, self.config
        items = self._prepare()
        if items is None:
            return run_dir
        names, methods, features, folds = self.dataset_names, self.method_names, self.features, self.folds
        todo = [(i.dataset, i.method, n) for i in items for n in i.budgets]
        # earlier invocations' task times feed the bar's time estimate only: not read for a quiet run
        asked = task_count(names, methods, features, protocol, folds, registry=self.registry)
        self.bar.start(todo, done=max(0, asked - len(todo)),
                       history=recorded_seconds(run_dir, names, methods, features, protocol, registry=self.registry)
                       if self.progress else ())
        if self.first:
            run_dir.write_results_csv()
        self.keys = {item: [record_key(item.dataset, item.method, n, item.fold, protocol.seed, protocol.key())
                            for n in item.budgets] for item in items}
        completed = False
        # what the workers look the items up in: the run's datasets and methods, given with each task
        needed = self.registry.only(dict.fromkeys(i.dataset for i in items), dict.fromkeys(i.method for i in items))
        options = WorkerOptions(protocol, config.sources, config.threads, config.timeout_s, needed,
                                gpu_slots=config.device_slots or 1)
        callbacks = ItemCallbacks(self.take, self.collect, self.release, self._warn_under_bar)
        try:
            self.backend.run(items, options, callbacks)
            completed = True
        finally:
            self.bar.close()
            try:
                run_dir.sync()
                if self.last or not completed:
                    run_dir.write_results_csv()     # the records so far, also after an interruption
            except OSError:
                if completed:                   # else the error already on its way is the one to report
                    raise
        if self.busy:
            self.warn(f"{len(self.busy)} work item(s) were being run by another invocation on {run_dir.path}; "
                      "run the same command again once it has finished (a claim of a process on another machine "
                      f"expires {LEASE_S / 60:.0f} minutes after its last heartbeat)")
        return run_dir
