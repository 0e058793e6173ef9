"""Crash-safe file writes: a file is written to a temporary file in its own directory and renamed
into place (``os.replace``), so a process killed at any instant leaves the old or the new version of
the file, never a partial one. Also: the removal of the temporaries a killed writer left behind, and
one flush (``syncfs``) for many files written without an fsync each."""

from __future__ import annotations

import errno
import os
import re
import tempfile
import time
from pathlib import Path

from rfbench.config import new_file_mode

DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def atomic_write_text(path: Path, text: str, durable: bool = True) -> os.stat_result:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace``: a failed write (disk
    full, killed) removes its temporary file and leaves the old ``path`` untouched. An OSError is
    raised again naming ``path`` (not the temporary file). Returns the written file's status
    (``os.fstat`` before the rename: its inode tells whether ``path`` still holds this text).
    ``durable=False`` skips the fsync: the caller flushes many files at once (:func:`sync_files`)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # the writer's pid in the name lets remove_stale_temporaries tell a killed writer's file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp")
        os.fchmod(fd, new_file_mode())      # mkstemp's 0600 would hide every result from the user's group
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
            written = os.fstat(fh.fileno())
        os.replace(tmp, path)
        return written
    except OSError as exc:
        if exc.filename == str(path):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


#: a temporary file of atomic_write_text: ``.<name>.<writer pid>.<8 random>.tmp`` (before the pid
#: was in the name: ``.<name>.<8 random>.tmp``)
TEMPORARY_NAME = re.compile(r"\.(?P<name>.+?)(?:\.(?P<pid>\d+))?\.[a-z0-9_]{8}\.tmp")
#: a temporary this old is no live write (one takes well under a second), whatever its pid says
#: on a shared file system, where the pid may be another host's
TEMPORARY_GRACE_S = 60.0
#: ... and one this old is a dead writer's even if its pid now names a live process (pids are reused)
TEMPORARY_MAX_AGE_S = 86400.0


def remove_stale_temporaries(directory: Path) -> list[Path]:
    """Remove the temporary files of atomic_write_text in ``directory`` that a killed writer left:
    older than TEMPORARY_GRACE_S and written by a pid that no longer runs (or by an unknown one),
    or older than TEMPORARY_MAX_AGE_S. A live writer's file is never touched. Returns those removed."""
    removed = []
    now = time.time()
    try:
        entries = list(os.scandir(directory))
    except FileNotFoundError:
        return removed
    for entry in entries:
        match = TEMPORARY_NAME.fullmatch(entry.name)
        if match is None or not entry.is_file(follow_symlinks=False):
            continue
        try:
            age = now - entry.stat(follow_symlinks=False).st_mtime
        except FileNotFoundError:
            continue                                 # its writer renamed it meanwhile
        pid = match["pid"]
        if age > TEMPORARY_MAX_AGE_S or (age > TEMPORARY_GRACE_S and (pid is None or not pid_runs(int(pid)))):
            try:
                os.unlink(entry.path)
                removed.append(Path(entry.path))
            except FileNotFoundError:
                pass
    return removed


def pid_runs(pid: int) -> bool:
    """Whether a process of this pid runs on this host (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OverflowError, ValueError):
        return False
    return True


def _syncfs(directory: Path) -> bool:
    """Linux ``syncfs`` of the filesystem holding ``directory``: one journal commit for every file
    written there since (~0.03 ms a record in a batch of 200, against ~1 ms for an fsync each).
    False where the call does not exist (not Linux/glibc) or fails."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        syncfs = libc.syncfs
    except (OSError, AttributeError):
        return False
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return False
    try:
        return syncfs(fd) == 0
    finally:
        os.close(fd)


def sync_files(paths, directory: Path) -> None:
    """Make files written with ``durable=False`` (and their renames in ``directory``) durable: one
    ``syncfs`` where there is one, else an fsync of each file still there and of the directory."""
    if not paths or _syncfs(directory):
        return
    for path in [*paths, directory]:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:             # replaced or removed since: its successor was synced by its writer
            continue
        try:
            os.fsync(fd)
        except OSError:
            pass
        finally:
            os.close(fd)
