"""Claims: one live invocation per task. Several invocations may work on one results directory at
once (two lanes, the same command started twice, hosts sharing a file system): a task is run under a
claim, a file (``records/<key>.claim``) created exclusively and removed when its record is written.
A claim is a lease: a daemon thread of its holder refreshes the file's time every ``HEARTBEAT_S``,
so the claim of a process that no longer runs is taken over by the next invocation that wants the
task: at once on this host (its pid is gone or reused), after ``LEASE_S`` without a heartbeat from
another host. A claim is a path: nothing here reads records or the index."""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path

from rfbench.store.atomic import pid_runs
from rfbench.store.record import NOT_JSON

#: seconds between two refreshes of the claims a process holds
HEARTBEAT_S = 60.0
#: a claim from another host without a heartbeat for this long is a dead holder's
LEASE_S = 10 * HEARTBEAT_S


class Heartbeat:
    """Refreshes the mtime of every claim this process holds, from a daemon thread, so that other
    hosts can tell a live holder (even one busy in a long task) from a dead one."""

    def __init__(self):
        self.held: set[Path] = set()
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None

    def add(self, path: Path) -> None:
        with self.lock:
            self.held.add(path)
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._beat, name="rfbench-claims", daemon=True)
                self.thread.start()

    def discard(self, path: Path) -> None:
        with self.lock:
            self.held.discard(path)

    def beat(self) -> None:
        with self.lock:
            held = list(self.held)
        for path in held:
            try:
                os.utime(path)
            except OSError:          # released meanwhile, or the directory is gone
                self.discard(path)

    def _beat(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S)
            self.beat()


#: the heartbeat of this process's claims
HEARTBEAT = Heartbeat()


def take(path: Path) -> bool:
    """Create the claim ``path`` for this process; False if a live process holds it. An OSError
    while writing it (disk full) leaves no claim and is raised naming ``path``."""
    path = Path(path)
    for _ in range(2):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if not claim_is_stale(path):
                return False
            # a dead holder's claim; two takers racing here can at worst both run the task,
            # which only repeats work (records are written atomically under one name)
            path.unlink(missing_ok=True)
            continue
        try:
            with os.fdopen(fd, "w") as fh:
                json.dump(_process_identity(), fh)
        except OSError as exc:      # e.g. disk full: no half-written claim is left behind
            path.unlink(missing_ok=True)
            raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
        HEARTBEAT.add(path)
        return True
    return False


def release(path: Path) -> None:
    """Give the claim ``path`` up (its heartbeat stops; the file goes)."""
    path = Path(path)
    HEARTBEAT.discard(path)
    path.unlink(missing_ok=True)


def start_time(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a recycled pid from its first owner."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_IDENTITY: dict[int, dict] = {}     # pid → its host and start time (a forked worker has its own pid)


def _process_identity() -> dict:
    pid = os.getpid()
    if pid not in _IDENTITY:        # one /proc read per process, not one per claimed task
        _IDENTITY[pid] = {"host": socket.gethostname(), "pid": pid, "start": start_time(pid)}
    return {**_IDENTITY[pid], "claimed_at": time.time()}


def claim_is_stale(path: Path) -> bool:
    """A claim is stale when its process no longer runs on this host, or, from another host (a
    shared file system, where the pid cannot be checked), when its holder has not refreshed it for
    ``LEASE_S`` seconds."""
    try:
        holder = json.loads(path.read_text())
    except FileNotFoundError:
        return True
    except (OSError, *NOT_JSON):      # being written this instant, or foreign: wait a minute
        try:
            return time.time() - path.stat().st_mtime > 60
        except FileNotFoundError:
            return True
    if holder.get("host") != socket.gethostname():
        try:
            return time.time() - path.stat().st_mtime > LEASE_S
        except FileNotFoundError:
            return True
    pid = holder.get("pid")
    if not isinstance(pid, int) or not pid_runs(pid):
        return True
    return holder.get("start") is not None and start_time(pid) != holder.get("start")
