"""Work items on a standard-library process pool (``--backend futures``): one
``concurrent.futures.ProcessPoolExecutor`` of ``--jobs`` spawned workers, run by
:class:`rfbench.execution.executor.Dispatch` like every backend (claims, records, time limits, deaths).

It is the small backend: no lanes, no start files. A task's ``--timeout`` clock starts when it is
submitted, which is when a worker is free for it (the pool has one worker per slot). The pool cannot
stop one task, so a task past its limit restarts the whole pool and the tasks that were running
beside it are submitted again (their clocks restart; that is no death of theirs). A worker that dies
breaks the pool: every task in flight then counts one death (the pool cannot say whose it was) and
runs again on a new pool, up to :data:`rfbench.execution.executor.MAX_WORKER_DEATHS`.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from rfbench.execution.executor import (
    Died,
    Dispatch,
    Event,
    Failed,
    Finished,
    ItemCallbacks,
    Slots,
    Started,
)
from rfbench.execution.pool import worker_init
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute


class KeptProcesses:
    """A multiprocessing context that keeps every process it makes: given to a pool as its ``mp_context``,
    the pool's workers, which it can then kill."""

    def __init__(self, context):
        self.context, self.processes = context, []

    def Process(self, *args, **kwargs):  # noqa: N802 - the context's own name
        process = self.context.Process(*args, **kwargs)
        self.processes.append(process)
        return process

    def __getattr__(self, name):
        return getattr(self.context, name)


class FuturesExecutor:
    """``jobs`` spawned worker processes of one pool, as an :class:`rfbench.execution.executor.Executor`."""

    def __init__(self, jobs: int, options: WorkerOptions, warn=None):
        self.jobs, self.options, self.warn = jobs, options, warn
        self.pending: dict[Future, WorkItem] = {}
        self.started: list[Event] = []
        self.pool = self._new_pool()

    def _new_pool(self) -> ProcessPoolExecutor:
        # spawned, not forked: the run's process has threads (the claims' heartbeat) a fork would copy
        # mid-lock; each worker ends itself once the run's process is gone (pool.worker_init)
        self.context = KeptProcesses(multiprocessing.get_context("spawn"))
        return ProcessPoolExecutor(max_workers=self.jobs, mp_context=self.context,
                                   initializer=worker_init, initargs=(os.getpid(),))

    def _stop_pool(self) -> None:
        """Kill the pool's workers now (the pool has no call for it before Python 3.14)."""
        for process in self.context.processes:
            with contextlib.suppress(OSError, ValueError):
                process.kill()
        self.pool.shutdown(wait=False, cancel_futures=True)

    def slots(self) -> int:
        return self.jobs

    def submit(self, item: WorkItem) -> None:
        self.pending[self.pool.submit(execute, item, self.options)] = item
        self.started.append(Started(item, time.monotonic()))

    def events(self, timeout: float | None) -> list[Event]:
        out, self.started = self.started, []
        if out or not self.pending:
            return out
        done, _ = wait(list(self.pending), timeout=timeout, return_when=FIRST_COMPLETED)
        for fut in done:
            item = self.pending.pop(fut, None)
            if item is None:                  # handled with the broken pool below
                continue
            try:
                out.append(Finished(item, fut.result()))
            except BrokenProcessPool as exc:
                out.extend(self._broken(item, str(exc).strip().splitlines()[:1] or [type(exc).__name__]))
            except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be unpickled
                out.append(Failed(item, f"worker failed: {type(exc).__name__}: {exc}"))
        return out

    def _broken(self, item: WorkItem, message: list[str]) -> list[Event]:
        """A worker died: the pool is broken, so every task in flight died with it; a new pool."""
        items = [item, *self.pending.values()]
        self.pending.clear()
        if self.warn:
            self.warn(f"a worker died running {item.method} on {item.dataset} (fold {item.fold}); "
                      f"{len(items)} task(s) in flight run again")
        self._stop_pool()
        self.pool = self._new_pool()
        return [Died(i, message[0]) for i in items]

    def kill(self, item: WorkItem) -> None:
        others = [i for i in self.pending.values() if i != item]
        self.pending.clear()
        self._stop_pool()
        self.pool = self._new_pool()
        for other in others:                  # not their fault: submitted again, their clocks restarted
            self.submit(other)

    def settled(self, item: WorkItem) -> None:
        pass

    def shutdown(self, interrupted: bool) -> None:
        if interrupted:
            self._stop_pool()
        else:
            self.pool.shutdown(wait=True)


@dataclass(frozen=True)
class FuturesBackend:
    """The process pool, as an :class:`rfbench.execution.executor.Backend` (``--gpu-beside`` has no
    lanes of its own here: device items share the ``jobs`` workers, at most ``--gpu-slots`` at once)."""
    config: object          # the run's resolved RunConfig
    label: str = "futures"

    def slots(self) -> int:
        return self.config.jobs

    def run(self, items, options: WorkerOptions, callbacks: ItemCallbacks) -> None:
        if not items:
            return
        executor = FuturesExecutor(self.config.jobs, options, callbacks.warn)
        Dispatch(executor, items, options, callbacks, Slots(device=self.config.device_slots)).run()


def futures_backend(config):
    """The futures backend of a run (rfbench.execution.backends): a pool per seed, nothing to open."""
    return contextlib.nullcontext(FuturesBackend(config))
