"""Work items on a pool of local worker processes (loky), surviving what a pool does to them: a
worker that dies, a task past its time limit, an interruption."""

from __future__ import annotations

import time
from datetime import UTC, datetime

from rfbench.tasks import WorkItem, execute

#: times a work item may kill its worker, running alone, before it is recorded as an error
MAX_WORKER_DEATHS = 2
#: a task past its --timeout by this much more (its alarm did not fire) has its worker killed
TIMEOUT_GRACE = (1.2, 5.0)     # × the limit, + seconds


def _failed_records(item, protocol, threads, message: str) -> list[dict]:
    return [{"dataset": item.dataset, "method": item.method, "n_features": n, "fold": item.fold,
             "seed": protocol.seed, "protocol": protocol.key(), "status": "error", "threads": threads,
             "message": message[:500], "finished_at": datetime.now(UTC).isoformat(timespec="seconds")}
            for n in item.budgets]


def time_limit(item, timeout_s: float) -> float:
    """Seconds after which a running item's worker is killed: its --timeout (per budget) with grace."""
    return timeout_s * len(item.budgets) * TIMEOUT_GRACE[0] + TIMEOUT_GRACE[1]


def timeout_records(item, protocol, threads, timeout_s: float) -> list[dict]:
    """The records of an item whose worker was killed past its time limit."""
    return [dict(r, status="timeout", message=f"killed after {timeout_s * len(item.budgets):g} s "
                 "(--timeout; the task did not stop by itself)")
            for r in _failed_records(item, protocol, threads, "")]


class InProcess:
    """The executor interface in this process: ``submit`` runs the item at once and returns a done
    future (``--jobs 1`` without a time limit: no worker to start, the task's errors are its own)."""

    def submit(self, fn, *args):
        from concurrent.futures import Future

        fut = Future()
        fut.set_result(fn(*args))       # an interruption propagates: the caller frees the item
        return fut

    def shutdown(self, wait=True, kill_workers=False):
        pass


def local_pool(jobs: int):
    """``jobs`` loky worker processes: a pool of its own, not loky's process-wide reusable executor
    (joblib's Parallel reuses that singleton too and fails on one it did not create, so any later
    Parallel(backend="loky") in this process — a method fitted in-process, the tests — would break)."""
    from joblib.externals.loky import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=jobs)


def run_pool(items, protocol, data_dir, threads, timeout_s, jobs, take, collect, release, in_process=False):
    """Run the items on ``jobs`` worker processes (or in this process), at most ``jobs`` in flight:
    an item is claimed (``take``) only when a worker is free for it, so another invocation can share
    the rest; ``collect`` gets each item's records as they complete, ``release`` frees an item
    that will not complete (interrupted).

    A worker that dies (segfault, out of memory) breaks the whole pool and every task in flight with
    it: the pool is replaced and those tasks become suspects, rerun one at a time so that a death
    names its cause; a task that kills its worker ``MAX_WORKER_DEATHS`` times alone is recorded as
    ``error: worker died`` and the run goes on."""
    from collections import Counter
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    def new_executor():
        return InProcess() if in_process else local_pool(jobs)

    executor = new_executor()
    queue = list(reversed(items))
    suspects: list[WorkItem] = []          # claimed, their worker died with others in flight
    deaths: Counter = Counter()
    pending = {}
    deadline = {}                          # future → when its worker is killed (--timeout)
    interrupted = True

    def replace_pool() -> list[WorkItem]:
        """A fresh pool after killing this one; returns the items that were in flight in it."""
        nonlocal executor
        in_flight = list(pending.values())
        pending.clear()
        deadline.clear()
        executor.shutdown(wait=False, kill_workers=True)
        executor = new_executor()
        return in_flight

    def submit(item):
        try:
            fut = executor.submit(execute, item, protocol, data_dir, threads, timeout_s)
        except BaseException:           # interrupted while running in this process: free again
            release(item)
            raise
        pending[fut] = item
        if timeout_s:
            deadline[fut] = time.monotonic() + time_limit(item, timeout_s)

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
                    collect(item, timeout_records(item, protocol, threads, timeout_s))
                suspects += replace_pool()          # in flight in the same pool: rerun, not blamed
                continue
            died = []
            for fut in finished:
                item = pending.pop(fut)
                deadline.pop(fut, None)
                try:
                    records = fut.result()
                except BrokenProcessPool as exc:    # its worker, or another one of the pool, died
                    died.append((item, exc))
                    continue
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be unpickled
                    records = _failed_records(item, protocol, threads, f"worker failed: {type(exc).__name__}: {exc}")
                collect(item, records)
            if died:
                died += [(item, None) for item in replace_pool()]   # the broken pool takes them all
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
