"""Where work items run, behind one interface, and the loop that feeds them.

An :class:`Executor` runs work items somewhere (this process, local worker lanes: rfbench.execution.pool; a
dask cluster: rfbench.execution.dask_pool) and reports what happened to them as events: a task started in its
worker (:class:`Started`), finished with its records (:class:`Finished`), killed its worker
(:class:`Died`), or failed for good (:class:`Failed`). It can stop one task's worker
(``kill``) and shut down.

:class:`Dispatch` is the one loop over any executor: it claims items when a slot is free (at most
``gpu_slots`` device items in flight, the other slots kept busy with CPU items), starts each task's
``--timeout`` clock when the task starts in its worker (not when it is submitted: a worker's start-up
is not the task's time), kills the worker of a task past its limit, reruns a task whose worker died
up to :data:`MAX_WORKER_DEATHS` times and then records it as ``worker died``, and frees (``release``)
every claimed item that will not complete when interrupted. The records of those outcomes are made
here (:func:`failed_records`, :func:`timeout_records`), for every executor alike.
"""

from __future__ import annotations

import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rfbench.execution.tasks import WorkerOptions, WorkItem
from rfbench.store.record import Record

#: times a work item may kill its worker before it is recorded as an error
MAX_WORKER_DEATHS = 2
#: a task past its --timeout by this much more (its alarm did not fire) has its worker killed
TIMEOUT_GRACE = (1.2, 5.0)     # × the limit, + seconds


def failed_records(item: WorkItem, protocol, threads, message: str, status: str = "error") -> list[Record]:
    """One error (or timeout) record per budget of an item that produced none itself (its worker died,
    its result could not be read, it was killed past its time limit)."""
    return [Record.failed(dataset=item.dataset, method=item.method, n_features=n, fold=item.fold,
                          seed=protocol.seed, protocol=protocol.key(), threads=threads, status=status,
                          message=message).replace(device=item.device)
            for n in item.budgets]


def time_limit(item: WorkItem, timeout_s: float) -> float:
    """Seconds after its start at which a running item's worker is killed: its --timeout (per budget)
    with grace."""
    return timeout_s * len(item.budgets) * TIMEOUT_GRACE[0] + TIMEOUT_GRACE[1]


def timeout_records(item: WorkItem, protocol, threads, timeout_s: float) -> list[Record]:
    """The records of an item whose worker was killed past its time limit."""
    return failed_records(item, protocol, threads, f"killed after {timeout_s * len(item.budgets):g} s "
                          "(--timeout; the task did not stop by itself)", status="timeout")


# -- what an executor reports ----------------------------------------------------------------------

@dataclass(frozen=True)
class Started:
    """The task began in its worker at ``at`` (time.monotonic()); again after a rerun elsewhere."""
    item: WorkItem
    at: float


@dataclass(frozen=True)
class Finished:
    item: WorkItem
    records: list[Record]


@dataclass(frozen=True)
class Died:
    """The task's worker died under it (segfault, out of memory, os._exit): it may be run again."""
    item: WorkItem
    message: str


@dataclass(frozen=True)
class Failed:
    """The task cannot complete (e.g. its result cannot be read, or it killed every worker of a
    cluster that retries by itself): one error record per budget saying ``message``."""
    item: WorkItem
    message: str


Event = Started | Finished | Died | Failed


# -- what the run gives the loop -------------------------------------------------------------------

@dataclass(frozen=True)
class ItemCallbacks:
    """The run's side of the loop: ``take(item)`` claims an item (False: done or running elsewhere,
    skipped), ``collect(item, records)`` stores its records, ``release(item)`` frees an item that will
    not complete, ``warn(line)`` says something in the middle of the run (a worker's death)."""
    take: Callable[[WorkItem], bool]
    collect: Callable[[WorkItem, list[Record]], None]
    release: Callable[[WorkItem], None]
    warn: Callable[[str], None] | None = None


@dataclass(frozen=True)
class Slots:
    """``device``: at most this many device items (``item.on_device``) in flight at once, the other
    slots running CPU items meanwhile (None: no limit). ``cpu``: at most this many CPU items in flight
    at once (None: no limit); with an executor of ``cpu + device`` workers, the device items run on
    workers of their own beside the CPU ones (``--gpu-beside``)."""
    device: int | None = None
    cpu: int | None = None


class Executor(Protocol):
    """What :class:`Dispatch` needs of a place that runs work items."""

    def slots(self) -> int:
        """Work items it runs at once now."""

    def submit(self, item: WorkItem) -> None:
        """Start the item (it is claimed); its outcome comes back as events."""

    def events(self, timeout: float | None) -> list[Event]:
        """What happened since the last call, waiting up to ``timeout`` seconds (None: until
        something happens) for the first event."""

    def kill(self, item: WorkItem) -> None:
        """Stop the item's worker now (its task is past its time limit); no event follows for it."""

    def settled(self, item: WorkItem) -> None:
        """The item needs nothing more of the executor (recorded, run elsewhere or released)."""

    def shutdown(self, interrupted: bool) -> None:
        """Stop: wait for the workers to end, or kill them at once when ``interrupted``."""


class Backend(Protocol):
    """Where a run's work items run (rfbench.execution.backends gives one by name), open for all the
    run's seeds."""

    label: str          # what runs.jsonl says of it, e.g. "local", "dask (tcp://10.0.0.5:8786)"

    def slots(self) -> int:
        """Work items it runs at once (the progress line's workers)."""

    def run(self, items: list[WorkItem], options: WorkerOptions, callbacks: ItemCallbacks) -> None:
        """Run the items through :class:`Dispatch`: each worker gets the item and ``options``."""


class Dispatch:
    """The run's loop over an executor, owning its state: the queue (by kind), the items in flight,
    their deadlines and the deaths each caused.

    ``options``: the workers' options (the protocol, threads and time limit of the records made
    here too); ``callbacks``: the run's claims and records (:class:`ItemCallbacks`); ``slots``: the
    device and CPU items allowed in flight at once (:class:`Slots`)."""

    def __init__(self, executor: Executor, items, options: WorkerOptions, callbacks: ItemCallbacks,
                 slots: Slots = Slots(), clock: Callable[[], float] = time.monotonic):
        self.executor, self.protocol = executor, options.protocol
        self.threads, self.timeout_s = options.threads, options.timeout_s
        self.take, self.collect, self.release = callbacks.take, callbacks.collect, callbacks.release
        self.device_slots, self.cpu_slots = slots.device, slots.cpu
        self.clock = clock
        # the planned order, kept across the two kinds: the next item is the first allowed one
        self.order = {item: i for i, item in enumerate(items)}
        self.cpu = deque(i for i in items if not i.on_device)
        self.device = deque(i for i in items if i.on_device)
        self.claimed: set[WorkItem] = set()       # taken and not yet recorded or released
        self.in_flight: set[WorkItem] = set()
        self.deadline: dict[WorkItem, float] = {}
        self.deaths: Counter = Counter()
        self.peak_device = 0                       # the most device items in flight at once

    # -- the queue -------------------------------------------------------------------------------
    def _device_in_flight(self) -> int:
        return sum(1 for i in self.in_flight if i.on_device)

    def _next(self) -> WorkItem | None:
        """The first queued item in planned order that may start now."""
        on_device = self._device_in_flight()
        device_ok = bool(self.device) and (self.device_slots is None or on_device < self.device_slots)
        cpu_ok = bool(self.cpu) and (self.cpu_slots is None or len(self.in_flight) - on_device < self.cpu_slots)
        heads = [q for q, ok in ((self.cpu, cpu_ok), (self.device, device_ok)) if ok]
        if not heads:
            return None
        return min(heads, key=lambda q: self.order[q[0]]).popleft()

    def _requeue(self, item: WorkItem) -> None:
        """Back at the front of its kind, still claimed: it runs next."""
        (self.device if item.on_device else self.cpu).appendleft(item)

    def _fill(self) -> None:
        while len(self.in_flight) < self.executor.slots():
            item = self._next()
            if item is None:
                return
            if item not in self.claimed:
                if not self.take(item):
                    self.executor.settled(item)
                    continue
                self.claimed.add(item)
            self.in_flight.add(item)            # before submit: an interruption in it frees the item
            self.executor.submit(item)

    # -- outcomes --------------------------------------------------------------------------------
    def _record(self, item: WorkItem, records: list[Record]) -> None:
        self.in_flight.discard(item)
        self.deadline.pop(item, None)
        self.claimed.discard(item)          # collect releases the claims, also when it fails
        self.executor.settled(item)
        self.collect(item, records)

    def _handle(self, event: Event) -> None:
        item = event.item
        if item not in self.in_flight:           # killed meanwhile: its outcome was recorded
            return
        if isinstance(event, Started):
            if self.timeout_s:
                self.deadline[item] = event.at + time_limit(item, self.timeout_s)
        elif isinstance(event, Finished):
            self._record(item, event.records)
        elif isinstance(event, Failed):
            self._record(item, failed_records(item, self.protocol, self.threads, event.message))
        elif isinstance(event, Died):
            self.in_flight.discard(item)
            self.deadline.pop(item, None)
            self.deaths[item] += 1
            if self.deaths[item] >= MAX_WORKER_DEATHS:
                self._record(item, failed_records(item, self.protocol, self.threads,
                                                  f"worker died ({self.deaths[item]} times): {event.message}"))
            else:
                self._requeue(item)

    def _overdue(self) -> None:
        """Kill the workers of the tasks past their limit (the alarm did not stop them): for real."""
        now = self.clock()
        for item in [i for i, d in self.deadline.items() if now > d]:
            self.executor.kill(item)
            self._record(item, timeout_records(item, self.protocol, self.threads, self.timeout_s))

    def _wait_s(self) -> float | None:
        if not self.deadline:
            return None
        return max(0.0, min(self.deadline.values()) - self.clock())

    def run(self) -> None:
        interrupted = True
        try:
            while True:
                self._fill()
                self.peak_device = max(self.peak_device, self._device_in_flight())
                if not self.in_flight:
                    break
                for event in self.executor.events(self._wait_s()):
                    self._handle(event)
                self._overdue()
            interrupted = False
        finally:
            for item in list(self.claimed):      # interrupted: the unfinished tasks are free again
                self.release(item)
                self.executor.settled(item)
            self.claimed.clear()
            self.executor.shutdown(interrupted)
