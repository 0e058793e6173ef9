"""The wall time of a run from its tasks' estimated seconds: the runner's own dispatch loop
(:class:`rfbench.execution.executor.Dispatch`: planned order, at most ``jobs`` items in flight, at most
``gpu_slots`` device items among them, the first allowed queued item taken when a worker frees) driven
by a virtual clock instead of worker processes. Nothing here re-implements the placement rule, so a
projection made with it cannot drift from what ``rfbench run`` does.

    makespan(seconds, on_device, jobs, gpu_slots)  # plain (seconds, needs-a-GPU-slot) pairs
    simulate(items, seconds_of, jobs, gpu_slots, order=runner.interleaved)  # the runner's WorkItems

Every item runs for exactly its estimated seconds; start-up, data loading and bookkeeping are not
counted. ``fluid_bound`` is the lower bound that no placement beats (the work spread evenly).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rfbench.data.sources import DataSources
from rfbench.execution.executor import Dispatch, Finished, ItemCallbacks, Slots
from rfbench.execution.tasks import WorkerOptions, WorkItem


@dataclass
class Placement:
    """A simulated run: its wall seconds and, per item, (start, end) on the virtual clock."""
    makespan: float
    spans: dict = field(default_factory=dict)       # WorkItem → (start, end)
    peak_device: int = 0


class _Clocked:
    """An :class:`rfbench.execution.executor.Executor` whose items take their estimated seconds on a
    virtual clock: ``events`` jumps to the next end (every item ending then finishes together)."""

    def __init__(self, jobs: int, seconds_of: Callable[[WorkItem], float]):
        self.jobs, self.seconds_of = jobs, seconds_of
        self.now = 0.0
        self.running: list = []             # heap of (end, submission number, item)
        self.count = 0
        self.spans: dict = {}

    def slots(self) -> int:
        return self.jobs

    def submit(self, item: WorkItem) -> None:
        s = float(self.seconds_of(item))
        if not s >= 0.0:
            raise ValueError(f"{item}: estimated seconds {s} (must be a number ≥ 0)")
        self.count += 1
        heapq.heappush(self.running, (self.now + s, self.count, item))
        self.spans[item] = (self.now, self.now + s)

    def events(self, timeout):
        if not self.running:
            return []
        end = self.running[0][0]
        self.now = end
        out = []
        while self.running and self.running[0][0] == end:
            out.append(Finished(heapq.heappop(self.running)[2], []))
        return out

    def kill(self, item):
        pass

    def settled(self, item):
        pass

    def shutdown(self, interrupted: bool) -> None:
        pass


def simulate(items: Sequence[WorkItem], seconds_of, jobs: int, gpu_slots: int | None = None,
             order: Callable | None = None, beside: bool = False) -> Placement:
    """The runner's placement of ``items`` (after ``order``, the runner's ordering function: e.g.
    :func:`rfbench.execution.runner.interleaved`; None: as given) on ``jobs`` workers, at most
    ``gpu_slots`` device items at once (None: no limit), each item taking ``seconds_of`` seconds
    (a mapping or a function of the item). ``beside`` (``--gpu-beside``): the device items on
    ``gpu_slots`` workers of their own beside the ``jobs`` CPU workers (rfbench.execution.pool.run_pool)."""
    if jobs < 1:
        raise ValueError("jobs must be at least 1")
    get = seconds_of.__getitem__ if hasattr(seconds_of, "__getitem__") else seconds_of
    planned = list(order(list(items))) if order is not None else list(items)
    beside = bool(beside and gpu_slots)
    executor = _Clocked(jobs + (gpu_slots if beside else 0), get)
    options = WorkerOptions(protocol=None, sources=DataSources((), None), threads=1, timeout_s=None, registry=None)
    callbacks = ItemCallbacks(take=lambda item: True, collect=lambda item, records: None, release=lambda item: None)
    dispatch = Dispatch(executor, planned, options, callbacks, Slots(device=gpu_slots, cpu=jobs if beside else None),
                        clock=lambda: executor.now)
    dispatch.run()
    return Placement(executor.now, executor.spans, dispatch.peak_device)


def work_items(seconds: Sequence[float], on_device: Sequence[bool] | None = None) -> tuple[list, dict]:
    """Plain (seconds, needs a GPU slot) pairs as distinct WorkItems, in the given order, and their seconds."""
    on_device = on_device if on_device is not None else [False] * len(seconds)
    items = [WorkItem(f"item-{i}", "simulated", 0, (1,), "cuda" if dev else "cpu")
             for i, dev in enumerate(on_device)]
    return items, dict(zip(items, map(float, seconds), strict=True))


def makespan(seconds: Sequence[float], on_device: Sequence[bool] | None = None, jobs: int = 1,
             gpu_slots: int | None = None, beside: bool = False) -> float:
    """Wall seconds of items placed in the given order (see :func:`simulate`)."""
    items, secs = work_items(seconds, on_device)
    return simulate(items, secs, jobs, gpu_slots, beside=beside).makespan


def fluid_bound(seconds: Sequence[float], on_device: Sequence[bool] | None = None, jobs: int = 1,
                gpu_slots: int | None = None) -> float:
    """The lower bound of any placement: the work ÷ the workers, the device work ÷ the slots, the
    longest item."""
    on_device = on_device if on_device is not None else [False] * len(seconds)
    device = sum(s for s, d in zip(seconds, on_device, strict=True) if d)
    return max(sum(seconds) / jobs, device / gpu_slots if gpu_slots else 0.0, max(seconds, default=0.0))
