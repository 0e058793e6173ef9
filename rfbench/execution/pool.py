"""Work items on local worker processes, or in this process: the two local
:class:`rfbench.execution.executor.Executor` s, run by :class:`rfbench.execution.executor.Dispatch` (see there for the
time limits, deaths and the GPU slots, which are the same for every executor).

Local workers are *lanes*: one loky executor of a single worker process each, running one task at a
time. A worker that dies (segfault, out of memory) or is killed past its time limit takes down its
own lane only: that lane alone is replaced (one worker's start-up), while the other lanes' tasks go
on; a death is then always the dying task's own. Each task tells the parent when it starts in its
worker (a small file in the pool's temporary directory holding its start time), so that its
``--timeout`` clock counts the task and not the worker's start-up.

A worker never outlives the run: it watches its parent (:func:`worker_init`) and ends itself when the
run's process is gone (a ``kill -9`` of the run alone), and a worker that has not ended
``SHUTDOWN_GRACE_S`` after the run's last task (a thread its method left running) is killed. A
worker is replaced between tasks only when it has grown by ``WORKER_GROWTH_BYTES`` since its first
task (loky's leak protection, whose 300 MB an import of torch reaches), and quietly.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass

from rfbench.execution.executor import (
    Died,
    Dispatch,
    Failed,
    Finished,
    ItemCallbacks,
    Slots,
    Started,
)
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute

#: seconds between two looks for the start files of tasks submitted but not started yet
START_POLL_S = 0.05
#: the start files' directory in the temporary directory: <prefix><pid of the run>-<random>
START_DIR_PREFIX = "rfbench-lanes-"
#: seconds between two looks of a worker's watchdog at its parent
PARENT_POLL_S = 0.2
#: seconds a worker has to end after the run's last task before it is killed
SHUTDOWN_GRACE_S = 3.0
#: a worker whose memory after a task exceeds its size after its first task by this much is replaced
#: before its next task (loky's leak protection). loky's own 300 MB is what a worker grows by when its
#: second method imports torch or a CUDA library: it was replaced, loky warned of "a memory leak" on the
#: user's terminal, and a GPU worker paid its start-up again (3 times in a 7-minute run on an H200)
WORKER_GROWTH_BYTES = 2 * 2**30
#: loky's warning when it replaces a worker while tasks wait: a worker that dies is the runner's to
#: report (its task's error record); one replaced for its memory loses nothing, and the run says nothing
LOKY_REPLACED_WARNING = "A worker stopped while some jobs were given to the executor"


def _watch_parent(parent: int, poll_s: float) -> None:
    while os.getppid() == parent:
        time.sleep(poll_s)
    os._exit(1)        # the run's process is gone (re-parented to init or a subreaper): so is its task


#: the open file each worker's fault handler writes to (kept open for the worker's life)
_fault_file = None


def worker_init(parent: int, poll_s: float = PARENT_POLL_S, fault_file: str | None = None,
                growth_bytes: int = WORKER_GROWTH_BYTES) -> None:
    """In each worker, before its first task: a daemon thread ends the worker (``os._exit``) as soon as
    its parent is no longer ``parent`` (the run's pid): a run killed by SIGKILL cannot stop its workers
    itself, and without this they ran their task to its end and then waited for work for ever. Polling
    ``os.getppid()`` works wherever there is a pid (prctl's PR_SET_PDEATHSIG is Linux's only and fires
    when the *thread* that started the worker ends, which may be a pool's manager thread).

    ``fault_file``: where Python's fault handler writes its dump when the worker crashes (loky enables
    it to stderr: each death printed some 30 lines on the terminal); the parent reads its first line
    ("Fatal Python error: Segmentation fault") into the death's message. Left alone when the user
    configured it (PYTHONFAULTHANDLER).

    ``growth_bytes``: in a loky worker, the memory growth past its size after its first task at which
    loky replaces it (WORKER_GROWTH_BYTES)."""
    global _fault_file
    if os.getppid() != parent:          # gone already, while this worker started
        os._exit(1)
    _allow_growth(growth_bytes)
    import threading

    if fault_file and "PYTHONFAULTHANDLER" not in os.environ:
        import faulthandler

        with contextlib.suppress(OSError):
            _fault_file = open(fault_file, "w")     # noqa: SIM115 - open as long as the worker lives
            faulthandler.enable(file=_fault_file)

    threading.Thread(target=_watch_parent, args=(parent, poll_s), name="rfbench-parent-watch", daemon=True).start()


def _allow_growth(growth_bytes: int) -> None:
    """Set loky's leak threshold in this worker (read by its task loop after each task); nothing in a
    worker that is not loky's (the futures pool's)."""
    loky_worker = sys.modules.get("joblib.externals.loky.process_executor")
    if loky_worker is not None and hasattr(loky_worker, "_MAX_MEMORY_LEAK_SIZE"):
        loky_worker._MAX_MEMORY_LEAK_SIZE = int(growth_bytes)


def local_pool(jobs: int, fault_file: str | None = None, growth_bytes: int = WORKER_GROWTH_BYTES):
    """``jobs`` loky worker processes: a pool of its own, not loky's process-wide reusable executor
    (joblib's Parallel reuses that singleton too and fails on one it did not create, so any later
    Parallel(backend="loky") in this process — a method fitted in-process, the tests — would break).
    A worker is replaced when it grows by ``growth_bytes`` (worker_init), without loky's warning."""
    from joblib.externals.loky import ProcessPoolExecutor

    warnings.filterwarnings("ignore", message=LOKY_REPLACED_WARNING, category=UserWarning)
    return ProcessPoolExecutor(max_workers=jobs, initializer=worker_init,
                               initargs=(os.getpid(), PARENT_POLL_S, fault_file, growth_bytes))


def _join_bounded(threads, grace_s: float) -> None:
    """Wait up to ``grace_s`` in all for loky's manager threads to finish killing the workers and closing
    their queues: a process that exits before they do leaves the queues' semaphores to loky's resource
    tracker, which prints "leaked semlock objects" warnings on the user's terminal."""
    end = time.monotonic() + grace_s
    for thread in threads:
        if thread is not None:
            thread.join(max(0.0, end - time.monotonic()))


def _remove_stale_start_dirs() -> None:
    """The start-file directories of runs killed before they could remove theirs (their pid is gone)."""
    import glob

    for path in glob.glob(os.path.join(tempfile.gettempdir(), f"{START_DIR_PREFIX}*-*")):
        try:
            pid = int(os.path.basename(path)[len(START_DIR_PREFIX):].split("-")[0])
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(path, ignore_errors=True)
        except (ValueError, OSError):     # not ours, or a live process of another user
            continue


def _started_then(start_file: str, fn, args: tuple, kwargs: dict):
    """In the worker: note the task's start (time.monotonic(), the same clock system-wide) in
    ``start_file``, atomically, then run it."""
    tmp = f"{start_file}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        fh.write(repr(time.monotonic()))
    os.replace(tmp, start_file)
    return fn(*args, **kwargs)


class InProcess:
    """The executor in this process (``--jobs 1`` without a time limit: no worker to start, the
    task's errors are its own): ``submit`` runs the item at once; an interruption propagates."""

    def __init__(self, options: WorkerOptions):
        self.options = options
        self._events: list = []

    def slots(self) -> int:
        return 1

    def submit(self, item: WorkItem) -> None:
        self._events.append(Started(item, time.monotonic()))
        self._events.append(Finished(item, execute(item, self.options)))

    def events(self, timeout):
        out, self._events = self._events, []
        return out

    def kill(self, item):              # nothing runs past submit here
        pass

    def settled(self, item):
        pass

    def shutdown(self, interrupted: bool) -> None:
        pass


class _Lane:
    """One worker process (a single-worker loky executor) and the task it runs."""

    def __init__(self, fault_file: str | None = None):
        self.fault_file = fault_file
        self.executor = local_pool(1, fault_file)
        self.item: WorkItem | None = None
        self.future: Future | None = None
        self.start_file: str | None = None
        self.started = False


class Lanes:
    """``jobs`` lanes of one worker each (see the module notes); each task is
    :func:`rfbench.execution.tasks.execute` of its item and ``options``. ``track_starts`` (a run with a time
    limit): each task reports its start; without a limit nothing needs it, and no file is written or polled."""

    def __init__(self, jobs: int, options: WorkerOptions, track_starts: bool = True, warn=None):
        self.options, self.track_starts, self.warn = options, track_starts, warn
        _remove_stale_start_dirs()
        self.tmp = tempfile.mkdtemp(prefix=f"{START_DIR_PREFIX}{os.getpid()}-")
        self.replaced = 0                   # lanes replaced after a death or a kill
        self._count = 0
        self._workers = 0
        self.lanes = [_Lane(self._fault_file()) for _ in range(jobs)]

    def _fault_file(self) -> str:
        self._workers += 1
        return os.path.join(self.tmp, f"worker-{self._workers}.fault")

    @staticmethod
    def _fault_of(lane: _Lane) -> str | None:
        """The fault handler's first line of the lane's dead worker, without its "Fatal Python error: "."""
        try:
            with open(lane.fault_file) as fh:
                first = fh.readline().strip()
        except (OSError, TypeError, ValueError):
            return None
        return first.removeprefix("Fatal Python error:").strip() or None

    def slots(self) -> int:
        return len(self.lanes)

    def _lane_of(self, item) -> _Lane | None:
        return next((lane for lane in self.lanes if lane.item == item), None)

    def submit(self, item: WorkItem) -> None:
        lane = next(lane for lane in self.lanes if lane.item is None)
        lane.item, lane.started = item, not self.track_starts
        if not self.track_starts:
            lane.future = lane.executor.submit(execute, item, self.options)
            return
        self._count += 1
        lane.start_file = os.path.join(self.tmp, f"{self._count}.start")
        lane.future = lane.executor.submit(_started_then, lane.start_file, execute, (item, self.options), {})

    def _free(self, lane: _Lane) -> None:
        if lane.start_file:
            with contextlib.suppress(OSError):
                os.unlink(lane.start_file)
        lane.item = lane.future = lane.start_file = None
        lane.started = False

    def _replace(self, lane: _Lane) -> None:
        """A new worker for this lane, the old one killed (it died, or runs a task past its limit)."""
        lane.executor.shutdown(wait=False, kill_workers=True)
        self._free(lane)
        if lane.fault_file:
            with contextlib.suppress(OSError):
                os.unlink(lane.fault_file)
        lane.fault_file = self._fault_file()
        lane.executor = local_pool(1, lane.fault_file)
        self.replaced += 1

    def _starts(self) -> list:
        out = []
        for lane in self.lanes:
            if lane.item is None or lane.started:
                continue
            try:
                with open(lane.start_file) as fh:
                    at = float(fh.read())
            except (OSError, ValueError):
                continue
            lane.started = True
            out.append(Started(lane.item, min(at, time.monotonic())))
        return out

    def events(self, timeout: float | None) -> list:
        from concurrent.futures.process import BrokenProcessPool

        end = None if timeout is None else time.monotonic() + timeout
        while True:
            busy = {lane.future: lane for lane in self.lanes if lane.future is not None}
            waiting = any(not lane.started for lane in busy.values())
            left = None if end is None else max(0.0, end - time.monotonic())
            slice_s = START_POLL_S if waiting and (left is None or left > START_POLL_S) else left
            done, _ = wait(busy, timeout=slice_s, return_when=FIRST_COMPLETED) if busy else (set(), set())
            out = self._starts()
            for fut in done:
                lane = busy[fut]
                item = lane.item
                try:
                    out.append(Finished(item, fut.result()))
                    self._free(lane)
                except BrokenProcessPool as exc:    # its worker died: this lane alone is replaced
                    fault = self._fault_of(lane)
                    out.append(Died(item, fault or (str(exc).strip().splitlines() or [type(exc).__name__])[0]))
                    if self.warn:
                        self.warn(f"a worker died running {item.method} on {item.dataset} (fold {item.fold})"
                                  f"{': ' + fault if fault else ''}")
                    self._replace(lane)
                except Exception as exc:  # noqa: BLE001 - e.g. a result that cannot be unpickled
                    out.append(Failed(item, f"worker failed: {type(exc).__name__}: {exc}"))
                    self._free(lane)
            if out or not busy or (end is not None and time.monotonic() >= end):
                return out

    def kill(self, item: WorkItem) -> None:
        lane = self._lane_of(item)
        if lane is not None:
            self._replace(lane)

    def settled(self, item):
        pass

    def shutdown(self, interrupted: bool) -> None:
        # interrupted: stop the workers now, their tasks were released and will run again
        try:
            if interrupted:
                managers = [lane.executor._executor_manager_thread for lane in self.lanes]
                for lane in self.lanes:
                    lane.executor.shutdown(wait=False, kill_workers=True)
                _join_bounded(managers, SHUTDOWN_GRACE_S)
            else:
                self._bounded_shutdown()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _bounded_shutdown(self) -> None:
        """Ask every worker to end, give them SHUTDOWN_GRACE_S together, then kill those still there (a
        worker whose method left a non-daemon thread running waits for that thread at its exit, and
        loky's shutdown waited for the worker: the run hung after its last record)."""
        procs = [p for lane in self.lanes for p in list((getattr(lane.executor, "_processes", None) or {}).values())]
        for lane in self.lanes:
            lane.executor.shutdown(wait=False)
        # their sentinels (readable once a worker has ended), not join(): loky's manager thread reaps them
        from multiprocessing.connection import wait as wait_ended

        sentinels = {}
        for p in procs:
            with contextlib.suppress(ValueError, OSError):      # a closed process object: ended
                sentinels[p.sentinel] = p
        left, end = set(sentinels), time.monotonic() + SHUTDOWN_GRACE_S
        while left and time.monotonic() < end:
            left -= set(wait_ended(list(left), timeout=max(0.0, end - time.monotonic())))
        stuck = [sentinels[s] for s in left]
        for p in stuck:
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGKILL)     # (loky's Popen has no kill())
        for lane in self.lanes:            # the manager threads end once their workers have
            lane.executor.shutdown(wait=True)
        if stuck and self.warn:
            self.warn(f"{len(stuck)} worker(s) had not ended {SHUTDOWN_GRACE_S:g} s after the last task "
                      "(a thread left running by a method?): killed")


def run_pool(items, options: WorkerOptions, callbacks: ItemCallbacks, config) -> Dispatch:
    """Run the items on ``config.jobs`` lanes (or in this process), at most ``config.jobs`` in flight
    and at most ``config.device_slots`` device items among them (None: no device items); with
    ``config.gpu_beside``, ``jobs + gpu_slots`` lanes, at most ``jobs`` CPU items and ``gpu_slots``
    device items in flight, so that a device item does not hold one of the ``jobs`` CPU workers (its
    worker mostly waits on the GPU). ``config``: the run's resolved
    :class:`rfbench.execution.runconfig.RunConfig`. An item is claimed (``callbacks.take``) only when a
    worker is free for it, so another invocation can share the rest. Returns the
    :class:`rfbench.execution.executor.Dispatch` that ran them."""
    gpu_slots = config.device_slots
    beside = bool(config.gpu_beside and gpu_slots)
    # a time limit needs a process that can be killed, and a user's method (which may end its process:
    # os._exit, a crash) a process that may die: --jobs 1 runs in this process only without either
    user_code = any(options.registry.method(m).origin != "built-in" for m in options.registry.methods)
    in_process = config.jobs == 1 and not config.timeout_s and not user_code and not beside
    executor = InProcess(options) if in_process else Lanes(
        config.jobs + (gpu_slots if beside else 0), options, track_starts=bool(config.timeout_s),
        warn=callbacks.warn)
    dispatch = Dispatch(executor, items, options, callbacks, Slots(device=gpu_slots,
                                                                   cpu=config.jobs if beside else None))
    dispatch.run()
    return dispatch


@dataclass(frozen=True)
class LocalBackend:
    """This machine's worker lanes (or this process), as an :class:`rfbench.execution.executor.Backend`."""
    config: object          # the run's resolved RunConfig
    label: str = "local"

    def slots(self) -> int:
        return self.config.jobs

    def run(self, items, options: WorkerOptions, callbacks: ItemCallbacks) -> None:
        run_pool(items, options, callbacks, self.config)


def local_backend(config):
    """The local backend of a run (rfbench.execution.backends): nothing to open or close."""
    return contextlib.nullcontext(LocalBackend(config))
