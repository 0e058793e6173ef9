"""Work items on a dask.distributed cluster (``--backend dask``): a LocalCluster started here, or the
workers of an existing scheduler (``--scheduler tcp://HOST:PORT``).

The client keeps the runner's shape (claims, take/collect/release, records written here atomically);
the cluster brings its own fault handling, mapped onto the same records as the local pool's:

* a worker that dies is replaced by its nanny and the scheduler reruns its tasks elsewhere; a task
  that killed ``allowed-failures + 1`` workers raises ``KilledWorker``: one ``worker died`` record;
* ``--timeout`` is a process-level limit: a task past its deadline (counted from when the scheduler
  placed it on its worker) is cancelled and its worker restarted through its nanny (``timeout``);
* data: a dataset every worker can load itself (same generator, mirror file or data file as the
  client) is loaded there; any other is prepared here and scattered once to the cluster;
* threads per task: ``--threads`` on a LocalCluster; on an existing cluster, each worker's own
  cores shared among the task slots of the workers on its host (:func:`worker_threads`);
* the registry: the client's (user files, ``--methods package.module:Class``, ``--datasets FILE``),
  given to each task as an argument.

``distributed`` is imported only here, and only for ``--backend dask``.
"""

from __future__ import annotations

import contextlib
import logging
import time
import uuid
from collections import Counter
from concurrent.futures import CancelledError
from dataclasses import dataclass, replace
from pathlib import Path

from rfbench.errors import UsageError
from rfbench.execution.executor import (
    MAX_WORKER_DEATHS,
    Dispatch,
    Failed,
    Finished,
    ItemCallbacks,
    Started,
)
from rfbench.execution.tasks import WorkerOptions, execute, prepared
from rfbench.store.record import Record

INSTALL = "pip install 'dask[distributed]'"
#: seconds to reach a scheduler before giving up with one line
CONNECT_TIMEOUT_S = 10
#: seconds a nanny gets to kill and restart the worker of a task past its time limit
RESTART_TIMEOUT_S = 60


def require():
    """The distributed module, or one line saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise UsageError(f"--backend dask needs dask.distributed, which is not installed: {INSTALL}") from None
    return distributed


@dataclass
class Cluster:
    client: object
    address: str              # the scheduler's, or "LocalCluster"
    threads: int | None       # per task; None: each worker's own (worker_threads)

    def slots(self) -> int:
        """Tasks the cluster runs at once now (workers come and go)."""
        return max(1, sum(self.client.nthreads().values()))


@contextlib.contextmanager
def connect(scheduler: str | None, jobs: int, threads: int | None):
    """A client of the scheduler at ``scheduler``, or of a LocalCluster of ``jobs`` worker processes
    with one task slot each (a task then uses ``threads`` threads), closed at the end."""
    distributed = require()
    import dask

    with _quiet():
        if scheduler:
            try:
                client = distributed.Client(scheduler, timeout=CONNECT_TIMEOUT_S)
            except (OSError, TimeoutError, ValueError, TypeError) as exc:
                raise UsageError(f"cannot reach the dask scheduler at {scheduler} ({_first_line(exc)}); "
                                 "check the address (tcp://HOST:PORT) and that `dask scheduler` runs there") from None
            with client:
                yield Cluster(client, scheduler, None)
            return
        # deaths a task may cause before it is recorded as `worker died`, as in the local pool
        with dask.config.set({"distributed.scheduler.allowed-failures": MAX_WORKER_DEATHS - 1}):
            # every server on 127.0.0.1 (the scheduler's HTTP endpoint too, which would take :8787 of
            # every interface); no memory limit, as with local workers
            cluster = distributed.LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                               host="127.0.0.1", dashboard_address=None, memory_limit=0,
                                               scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},
                                               silence_logs=logging.CRITICAL)
        with cluster, distributed.Client(cluster) as client:
            yield Cluster(client, "LocalCluster", threads)


def _dask_loggers() -> list[logging.Logger]:
    # dask's configured loggers do not propagate, so each one is set, not just "distributed"
    return [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
            if name == "distributed" or name.startswith("distributed.")]


def silence_until_exit() -> None:
    """dask's log lines off for the rest of the process (the CLI, once its command has ended): the
    client's thread and dask's exit hooks can still log about a connection they are closing, after
    the command's one line."""
    for logger in _dask_loggers():
        logger.setLevel(logging.CRITICAL)


@contextlib.contextmanager
def _quiet():
    """dask's log lines off for the run: its faults become records (or one line), its lines would
    repeat them as tracebacks."""
    loggers = _dask_loggers()
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


# -- on the workers ------------------------------------------------------------------------------

#: the most task slots this worker process has seen on its host (see :func:`threads_for_slots`)
_slots_seen = 0


def threads_for_slots(cores: int, slots_now: int | None, own_slots: int, slots_seen: int) -> tuple[int, int]:
    """(threads for one task, the new high-water mark of slots on the host).

    ``slots_now`` is the scheduler's count of task slots on this host, None when it does not answer.
    The count never goes down within a worker process: a worker that restarts beside this one
    rejoins within seconds, and a task that took its cores meanwhile would oversubscribe them for
    the rest of its run. Without any count yet, one thread (the only safe guess)."""
    if slots_now is None and slots_seen == 0:
        return 1, 0
    seen = max(slots_seen, slots_now or 0, own_slots)
    return max(1, cores // seen), seen


def worker_threads() -> int:
    """Threads for one task on this dask worker: the cores this process may use, shared among the
    task slots of every worker on its host (``dask worker --nworkers 2 --nthreads 1`` on 8 cores:
    4 each), so that tasks × threads ≤ cores however the workers were started."""
    global _slots_seen
    from dask.system import CPU_COUNT
    from distributed import get_client, get_worker
    from distributed.comm import get_address_host

    worker = get_worker()
    host = get_address_host(worker.address)
    try:
        workers = get_client().scheduler_info()["workers"].values()
        slots = max(worker.state.nthreads, sum(w["nthreads"] for w in workers if w.get("host") == host))
    except Exception:  # noqa: BLE001 - the scheduler does not answer: keep what was seen
        slots = None
    threads, _slots_seen = threads_for_slots(CPU_COUNT, slots, worker.state.nthreads, _slots_seen)
    return threads


def _task(item, options: WorkerOptions, data=None) -> list[Record]:
    """One work item on a dask worker, with the client's options (None threads: this worker's share)."""
    if options.threads is None:
        options = options.replace(threads=worker_threads())
    return execute(item, options, data)


def _loads_locally(origins: dict[str, str], data_dir: tuple[str, ...], registry) -> list[str]:
    """The datasets this worker can load itself, from the kind of source the client loaded them from
    (``origins``, dataset → a generator, the mirror, a data file; ``data_dir``: the mirror directories
    as the workers see them); downloads are never repeated on workers."""
    from rfbench.data.loader import mirror_root

    found = []
    for name, source in origins.items():
        try:
            ds = registry.dataset(name)
            if (source == "generator" or (source == "mirror" and mirror_root(ds, data_dir) is not None)
                    or (source == "file" and Path(ds.file).is_file())):
                found.append(name)
        except Exception:  # noqa: BLE001 - a data directory or registry file missing on this worker
            pass
    return found


# -- on the client -------------------------------------------------------------------------------

def _place_data(client, names, options: WorkerOptions, worker_dirs: tuple[str, ...], warn) -> dict:
    """dataset → future of its prepared (X, y, source) scattered to the cluster, for the datasets that
    a worker present now cannot load itself; the others are loaded by the workers."""
    if not client.nthreads():
        warn("no dask worker has joined the scheduler yet; waiting for one (start `dask worker ADDRESS`)")
        client.wait_for_workers(1)
    registry, protocol, sources = options.registry, options.protocol, options.sources
    origins = {name: prepared(registry.dataset(name), sources, protocol.max_samples, protocol.seed)[3]
               for name in names}
    everywhere = _loaded_everywhere(client, origins, worker_dirs, registry)
    placed = {}
    for name in names:
        if name not in everywhere:
            _, X, y, source = prepared(registry.dataset(name), sources, protocol.max_samples, protocol.seed)
            [placed[name]] = client.scatter([(X, y, source)], hash=False)
    return placed


def worker_data_dirs(data_dirs: tuple[str, ...]) -> tuple[str, ...]:
    """The run's mirror directories, absolute (a worker's working directory is another)."""
    return tuple(str(Path(p).resolve()) for p in data_dirs)


def _loaded_everywhere(client, origins: dict, worker_dir, registry) -> set[str]:
    """The datasets that every worker present now can load itself (``origins``: see :func:`_loads_locally`)."""
    try:
        found = client.run(_loads_locally, origins, worker_dir, registry)
    except ImportError as exc:
        raise UsageError(f"the dask workers cannot run rfbench ({_first_line(exc)}); install rfbench and the "
                         "methods' packages in the workers' environment") from None
    return set.intersection(*(set(v) for v in found.values())) if found else set()


class DaskExecutor:
    """The cluster as an :class:`rfbench.execution.executor.Executor`: as many items in flight as it has task
    slots; a task has started when the scheduler has placed it on a worker (again after a rerun on
    another one); the scheduler reruns a task whose worker died by itself, and ``KilledWorker`` (a task
    that killed ``allowed-failures + 1`` workers) is the item's ``worker died`` failure."""

    def __init__(self, cluster: Cluster, items, options: WorkerOptions, data: dict, warn):
        self.cluster, self.client, self.options = cluster, cluster.client, options
        self.timeout_s = options.timeout_s
        self.data, self.warn = data, warn
        self.left = Counter(item.dataset for item in items)    # items of each dataset not settled yet
        self.pending: dict = {}       # future → item
        self.placed: dict = {}        # future → worker address it was last seen running on

    def slots(self) -> int:
        return self.cluster.slots()

    def submit(self, item) -> None:
        key = f"rfbench-{item.dataset}-{item.method}-f{item.fold}-{uuid.uuid4().hex[:8]}"
        fut = self.client.submit(_task, item, self.options, self.data.get(item.dataset), key=key, pure=False)
        self.pending[fut] = item

    def settled(self, item) -> None:
        self.left[item.dataset] -= 1
        if not self.left[item.dataset]:
            self.data.pop(item.dataset, None)     # the cluster may forget the data of a finished dataset

    def _starts(self) -> list:
        """Started events of the tasks placed on a worker since the last look (only with --timeout:
        nothing else needs their clock)."""
        if not self.timeout_s:
            return []
        now, where = time.monotonic(), {k: a for a, keys in self.client.processing().items() for k in keys}
        out = []
        for fut, item in self.pending.items():
            addr = where.get(fut.key)
            if addr is None:                  # queued, not running yet: no clock
                self.placed.pop(fut, None)
            elif self.placed.get(fut) != addr:
                self.placed[fut] = addr       # started, or rerun on another worker after a death
                out.append(Started(item, now))
        return out

    def events(self, timeout: float | None) -> list:
        from distributed import wait
        from distributed.comm import CommClosedError
        from distributed.scheduler import KilledWorker

        # a short wait: the clocks of the running tasks and the cluster's size are looked at again
        step = 1.0 if self.timeout_s else 5.0
        try:
            done = wait(list(self.pending), timeout=step if timeout is None else min(step, timeout),
                        return_when="FIRST_COMPLETED").done
        except TimeoutError:
            done = set()
        except CancelledError:            # one was cancelled: it is done, and handled below
            done = {f for f in self.pending if f.done()}
        out = self._starts()
        for fut in done:
            item = self.pending[fut]
            try:
                out.append(Finished(item, fut.result()))
            except KilledWorker as exc:
                last = getattr(exc.last_worker, "address", exc.last_worker)
                out.append(Failed(item, f"worker died ({exc.allowed_failures + 1} times): the task killed every "
                                        f"dask worker that ran it, the last {last}"))
            except CancelledError as exc:
                if self.client.status != "running" or getattr(exc, "reason", "") == "scheduler-connection-lost":
                    raise CommClosedError("the connection was lost") from None
                del self.pending[fut]
                self.placed.pop(fut, None)
                self.submit(item)             # cancelled by someone else (a restart of the cluster): again
                continue
            except Exception as exc:  # noqa: BLE001 - e.g. the worker cannot import the method
                out.append(Failed(item, f"worker failed: {_first_line(exc)}"))
            del self.pending[fut]
            self.placed.pop(fut, None)
        return out

    def kill(self, item) -> None:
        """Cancel the task and restart its worker through its nanny."""
        fut = next((f for f, i in self.pending.items() if i == item), None)
        if fut is None:
            return
        addr = self.placed.pop(fut, None)
        del self.pending[fut]
        self.client.cancel([fut])
        if addr is None:
            return
        try:
            self.client.restart_workers([addr], timeout=RESTART_TIMEOUT_S, raise_for_error=False)
        except ValueError as exc:             # no nanny: nothing can stop a thread of that worker
            self.warn(f"could not stop a task past --timeout: {_first_line(exc)}; start workers with a nanny "
                      "(the default of `dask worker`)")

    def shutdown(self, interrupted: bool) -> None:
        with contextlib.suppress(Exception):
            self.client.cancel(list(self.pending))     # interrupted: the unfinished ones


def run_dask(cluster: Cluster, items, options: WorkerOptions, callbacks: ItemCallbacks) -> None:
    """Run the items on the cluster through :class:`rfbench.execution.executor.Dispatch`, at most as many in
    flight as it has task slots: ``callbacks.take`` claims an item when a slot is free for it,
    ``collect`` gets its records, ``release`` frees an item that will not complete (interrupted); the
    unfinished ones are cancelled. Each task is given ``options`` (the client's registry among them;
    the mirror directories made absolute, the threads the cluster's) as an argument."""
    from distributed.comm import CommClosedError

    if not items:
        return
    client = cluster.client
    sources = options.sources
    on_workers = options.replace(sources=replace(sources, data_dirs=worker_data_dirs(sources.data_dirs)),
                                 threads=cluster.threads)
    data: dict = {}
    executor = DaskExecutor(cluster, items, on_workers, data, callbacks.warn)
    try:
        data.update(_place_data(client, list(dict.fromkeys(i.dataset for i in items)), options,
                                on_workers.sources.data_dirs, callbacks.warn))
        Dispatch(executor, items, on_workers, callbacks).run()
    except OSError as exc:
        if not isinstance(exc, CommClosedError) and client.status == "running":
            raise                             # not the connection (e.g. the disk, writing a record)
        raise UsageError(f"lost the dask scheduler at {cluster.address} ({_first_line(exc)}); finished tasks are "
                         "saved, re-run the same command to resume") from None


@dataclass(frozen=True)
class DaskBackend:
    """A dask cluster, as an :class:`rfbench.execution.executor.Backend`."""
    cluster: Cluster
    jobs: int

    @property
    def label(self) -> str:
        return f"dask ({self.cluster.address})"

    def slots(self) -> int:
        """An existing cluster's task slots (its size, its threads); a LocalCluster's ``jobs``."""
        return self.cluster.slots() if self.cluster.threads is None else self.jobs

    def run(self, items, options: WorkerOptions, callbacks: ItemCallbacks) -> None:
        run_dask(self.cluster, items, options, callbacks)


@contextlib.contextmanager
def dask_backend(config):
    """The dask backend of a run (rfbench.execution.backends): its cluster, connected for all its seeds."""
    with connect(config.scheduler, config.jobs, config.threads) as cluster:
        yield DaskBackend(cluster, config.jobs)
