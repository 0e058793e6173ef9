"""Results store: one atomically written record per finished task, and a consolidated results.csv.

Layout of a run directory::

    run.json              command, seed, protocol, package versions, machine facts (per invocation)
    records/<key>.json    one record per (dataset, method, n_features, fold, seed, protocol)
    folds/<dataset>.csv   the outer fold of every row under seed 0 (identical for every method)
    folds/s<seed>/<dataset>.csv   the same for every other seed (``rfbench run --seeds 0,1,2``)
    results.csv           all records as one tidy table, rewritten atomically at most once a minute
                          during a run and when it ends (the records are the truth)
    records.index.jsonl   a cache of the records for fast reading (RunDir): never trusted for a file
                          that changed since it was indexed; safe to delete (it is rebuilt)

Every write goes to a temporary file in the same directory followed by ``os.replace``, so a run
killed at any instant leaves either the old or the new version of each file, never a partial one.
Re-running resumes: ``done`` records are skipped, ``error``/``timeout`` ones are retried and
overwritten; the key-named files make duplicates impossible.

Several invocations may work on one directory at once (two lanes, or the same command started
twice): a task is run under a claim, ``records/<key>.claim``, created exclusively and removed when
its record is written, so no two live invocations run the same task. A claim is a lease: its
holder refreshes the file's time every ``HEARTBEAT_S`` while it runs, so the claim of a process that
no longer runs is taken over by the next invocation that wants the task — at once on this host
(its pid is gone), after ``LEASE_S`` without a heartbeat from another host (a shared file system).
"""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import math
import numbers
import os
import re
import socket
import stat
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.errors import UsageError

COLUMNS = ["dataset", "method", "n_features", "fold", "seed", "protocol", "status", "metric",
           "error", "tune_s", "fit_s", "predict_s", "total_s", "cpu_s", "preprocess_s", "n_train", "n_test", "threads",
           "params", "message", "source", "task", "finished_at"]


STATUSES = ("done", "error", "timeout")
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


def record_key(dataset: str, method: str, n_features: int, fold: int, seed: int, protocol: str) -> str:
    raw = f"{dataset}|{method}|{n_features}|{fold}|{seed}|{protocol}"
    slug = f"{dataset}__{method}__n{n_features}__f{fold}__s{seed}"
    return f"{slug}__{hashlib.sha1(raw.encode()).hexdigest()[:8]}"


def _number(value, integral: bool = False):
    """A finite number (an integral one when asked) or None; JSON and CSV values alike."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        return None
    if integral:
        return int(value) if float(value).is_integer() else None
    return float(value)


def record_problem(rec) -> str | None:
    """Why a record (a JSON record or a results.csv row) cannot be counted, naming the field; None
    when it can. Only the fields that the tables and checks read are required: every record names
    its dataset, method, n_features, fold and a known status, and a done one its error (its time and
    sizes may be missing, but must be numbers when given)."""
    if not isinstance(rec, dict):
        return "not a JSON object"
    for key in ("dataset", "method"):
        if key not in rec or rec[key] is None:
            return f"field '{key}' is missing"
        if not isinstance(rec[key], str) or not rec[key]:
            return f"field '{key}' is not a name ({rec[key]!r})"
    for key, low in (("n_features", 1), ("fold", 0)):
        if key not in rec or rec[key] is None:
            return f"field '{key}' is missing"
        value = _number(rec[key], integral=True)
        if value is None or value < low:
            return f"field '{key}' is not an integer >= {low} ({rec[key]!r})"
    if rec.get("status") not in STATUSES:
        return ("field 'status' is missing" if rec.get("status") is None else
                f"field 'status' is {rec['status']!r}, not one of {', '.join(STATUSES)}")
    if rec.get("protocol") is not None and not isinstance(rec["protocol"], str):
        return f"field 'protocol' is not a protocol key ({rec['protocol']!r})"
    if rec["status"] == "done":
        for key, integral in (("error", False), ("total_s", False), ("n_train", True), ("n_test", True)):
            if key not in rec or rec[key] is None:
                if key != "error":                   # optional (an unknown time or size), numeric when given
                    continue
                return f"field '{key}' of a done record is missing"
            value = _number(rec[key], integral)
            if value is None or (integral and value < 1):
                return (f"field '{key}' of a done record is not "
                        f"{'a positive integer' if integral else 'a finite number'} ({rec[key]!r})")
    return None


NUMERIC = ("n_features", "fold", "seed", "error", "total_s", "cpu_s", "tune_s", "fit_s", "predict_s", "preprocess_s",
           "n_train", "n_test", "threads")


_WARNED: set[tuple[str, str]] = set()


#: what json.loads raises on a damaged file: deep nesting ("[" × 200 000) overflows the parser's
#: recursion before it can say ValueError
NOT_JSON = (ValueError, RecursionError)


def warn_once(where, problem: str, warn=None) -> None:
    """One warning line per (file, problem) per process (the runner re-reads its directory often)."""
    if (str(where), problem) in _WARNED:
        return
    _WARNED.add((str(where), problem))
    msg = f"skipped {where}: {problem}"
    if warn is not None:
        warn(msg)
    else:
        print(f"warning: {msg}", file=sys.stderr)


#: seconds between two refreshes of the claims a process holds
HEARTBEAT_S = 60.0
#: a claim from another host without a heartbeat for this long is a dead holder's
LEASE_S = 10 * HEARTBEAT_S


class _Heartbeat:
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


HEARTBEAT = _Heartbeat()


#: the records index, beside records/: a cache of every record with its file's signature (see RunDir)
INDEX_NAME = "records.index.jsonl"
INDEX_FORMAT = "rfbench records index 1"
#: records to read above which a reader consults the index, and records it had to read from their
#: files (also: 2 % of all) above which it rewrites the index
INDEX_MIN = 50
#: appended index lines (also: a tenth of the records) above which the index is rewritten as columns
INDEX_APPENDED_MIN = 1000
#: a scan of records/ is reused within a process while the directory is unchanged since, and was last
#: changed at least this long before the scan (a change in the same clock tick would look unchanged)
RACY_NS = 2_000_000_000


_ABSENT = object()      # a field a record does not have


def _signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a record file from another: the store writes every record as a new
    file renamed into place (a new inode), and an edit in place changes its size or its modification
    and change times (nanoseconds)."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _entry_line(key: str, sig, text: str) -> str:
    """One appended index line: [key, inode, size, mtime_ns, ctime_ns, record]."""
    return f"[{json.dumps(key)}, {sig[0]}, {sig[1]}, {sig[2]}, {sig[3]}, {text}]\n"


class _Base:
    """The records of a rewritten index, column by column (what makes reading 100 000 records and
    building their table fast): ``values[field]`` is an object array with NaN where a record has no
    such field (as pandas fills a list of records), ``present[field]`` tells those apart from a NaN
    value; ``sigs[i]`` is the signature of the file record ``i`` was read from."""

    def __init__(self, keys: list[str], sigs: list[tuple], fields: list[str], values: dict, present: dict):
        self.keys, self.sigs, self.fields, self.values, self.present = keys, sigs, fields, values, present
        self.row = {k: i for i, k in enumerate(keys)}

    def record(self, i: int) -> dict:
        return {f: self.values[f][i] for f in self.fields if self.present[f][i]}

    def text(self) -> str:
        """The first line of a rewritten index (a field a record lacks: null in its column, and its
        row listed in ``missing``)."""
        values = [[None if not p else v for v, p in zip(self.values[f].tolist(), self.present[f].tolist(), strict=True)]
                  for f in self.fields]
        missing = [np.flatnonzero(~self.present[f]).tolist() for f in self.fields]
        sigs = [list(c) for c in zip(*self.sigs, strict=True)] or [[], [], [], []]
        return json.dumps({"format": INDEX_FORMAT, "keys": self.keys, "sigs": sigs, "fields": self.fields,
                           "values": values, "missing": missing}, default=str) + "\n"

    @classmethod
    def parse(cls, head: dict) -> _Base:
        if head.get("format") != INDEX_FORMAT:
            raise ValueError("not an index of this format")
        keys, sigs, fields = head["keys"], head["sigs"], head["fields"]
        n = len(keys)
        if (len(sigs) != 4 or any(len(c) != n for c in sigs) or len(head["values"]) != len(fields)
                or len(head["missing"]) != len(fields) or not all(type(k) is str for k in keys)
                or not all(a < b for a, b in zip(keys, keys[1:], strict=False))):   # sorted, each once
            raise ValueError("inconsistent index")
        values, present = {}, {}
        for f, col, miss in zip(fields, head["values"], head["missing"], strict=True):
            if len(col) != n:
                raise ValueError("inconsistent index")
            arr = np.fromiter(col, dtype=object, count=n)
            mask = np.ones(n, dtype=bool)
            if miss:
                mask[np.asarray(miss, dtype=np.int64)] = False
                arr[~mask] = np.nan
            values[f], present[f] = arr, mask
        return cls(keys, list(zip(*sigs, strict=True)), list(fields), values, present)


def _parse_index(text: str) -> tuple[_Base | None, dict[str, tuple[tuple, dict]], int]:
    """(the rewritten part, key → (signature, record) of the appended lines, the later line of a
    key winning, and the number of appended lines). A line torn by a writer killed mid-append (or
    interleaved by two writers on a file system without atomic appends) does not parse and is
    skipped; a first line that is not a whole index of this format is ignored."""
    base = None
    lines = text.split("\n")
    if lines and lines[0].startswith("{"):
        try:
            base = _Base.parse(json.loads(lines[0]))
        except (*NOT_JSON, TypeError, KeyError, IndexError, AttributeError):
            base = None
        lines = lines[1:]
    lines = [line for line in lines if line]
    try:        # one parse of all lines; exact only when every line is one whole element
        items = json.loads("[" + ",".join(lines) + "]")
        if len(items) != len(lines):
            raise ValueError("a torn line")
    except NOT_JSON:
        items = []
        for line in lines:
            try:
                items.append(json.loads(line))
            except NOT_JSON:
                continue
    appended: dict[str, tuple[tuple, dict]] = {}
    for item in items:
        if type(item) is list and len(item) == 6 and type(item[0]) is str and type(item[5]) is dict:
            appended[item[0]] = (tuple(item[1:5]), item[5])
    return base, appended, len(lines)


class RunDir:
    """A results directory. Reading it stays fast at 100 000 records through the records index,
    ``records.index.jsonl``: every record written is appended to it as one line (its key, the
    signature of its file: inode, size, modification and change times, and the record; O(1) per
    record, and a line torn by a kill is skipped), and a reader that had to read many records from
    their files (no index yet, a directory written by an older version or copied, many appended
    lines) rewrites it whole, the records as columns in its first line. The records stay the truth:
    a reader lists records/ and takes a record from the index only when its file's signature is the
    one the index holds, and reads every other file, so the index is never trusted when stale and
    can always be deleted (it is rebuilt). Only records that can be counted are indexed; damaged
    files are read (and warned about) every time."""

    def __init__(self, path: str | os.PathLike, read_only: bool = False):
        self.path = Path(path)
        # a look that must leave no trace (run --dry-run): the index, a cache, is then never rewritten
        self.read_only = read_only
        self.records_dir = self.path / "records"
        self.index_path = self.path / INDEX_NAME
        self._base: _Base | None = None                     # the index's columns, as last read
        self._entries: dict[str, tuple[tuple, dict]] = {}  # key → (file signature, record) not taken from _base
        self._bad: dict[str, tuple | None] = {}            # key → signature of a file that cannot be counted
        self._loaded = False
        self._index_seen: tuple | None = None               # signature of the index when last read
        self._last_scan: tuple | None = None                # (records/ signature, scan start ns, key → signature)
        self._view: tuple | None = None                     # (scan it was made for, sorted keys, base rows; -1: _entries)
        self._appended = 0                                  # index lines after its columns, as far as known here
        self._inside_dirs: set[Path] = set()                # directories already resolved to inside the run
        self._unsynced: list[Path] = []                     # records written with durable=False since sync()

    def inside(self, path: Path) -> Path:
        """``path`` when it lies inside the run directory (after resolving '..' and links), else a
        UsageError: nothing the store writes may land outside ``--out`` (the registry refuses unsafe
        names already; this is defence in depth). A plain name in a directory already found inside
        costs one ``lstat`` (is it a link?) instead of resolving every component again: the store
        asks this several times per task."""
        path = Path(path)
        if path.parent in self._inside_dirs and path.name not in ("", ".", ".."):
            try:
                if not stat.S_ISLNK(os.lstat(path).st_mode):
                    return path
            except FileNotFoundError:
                return path
            except OSError:
                pass
        root = self.path.resolve()
        if not path.resolve().is_relative_to(root):
            raise UsageError(f"refusing to write {path}: it lies outside the results directory {self.path} "
                             "(a dataset or method name with '/' or '..'?)")
        if path.parent.resolve().is_relative_to(root):
            self._inside_dirs.add(path.parent)
        return path

    def ensure(self) -> RunDir:
        try:
            self.records_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create results directory {self.path}: {exc.strerror}") from None
        # what a writer killed mid-write (consolidation, a record, the folds) left behind; only the
        # directories the store writes, never through a link out of the run
        folds = self.path / "folds"
        seeds = [d for d in folds.glob("s*") if d.is_dir() and not d.is_symlink()] if folds.is_dir() else []
        for directory in (self.path, self.records_dir, folds, *seeds):
            if not directory.is_symlink():
                remove_stale_temporaries(directory)
        return self

    # -- records -----------------------------------------------------------------------------
    def record_path(self, rec: dict) -> Path:
        key = record_key(rec["dataset"], rec["method"], rec["n_features"], rec["fold"], rec["seed"],
                         rec["protocol"])
        return self.inside(self.records_dir / f"{key}.json")

    def write_record(self, rec: dict, durable: bool = True) -> None:
        """Write the record atomically, then append it to the index. The index line carries the
        signature of the file as it stands after the rename, and only when that file is still the
        one written here (same inode): a concurrent writer of the same task leaves no wrong line.

        ``durable=False`` (the runner's group commit): no fsync now; :meth:`sync` flushes every such
        record at once. A killed process loses nothing either way (the kernel holds the file); only
        a crash of the machine before the next sync can, and then the task is simply run again (a
        record file left empty or cut is read as not done)."""
        path = self.record_path(rec)
        text = json.dumps(rec, sort_keys=True, default=str)
        written = atomic_write_text(path, text, durable=durable)
        if not durable:
            self._unsynced.append(path)
        key = path.stem
        self._entries.pop(key, None)
        self._view = None
        try:
            st = path.stat()
        except OSError:
            return
        if (st.st_ino, st.st_dev) != (written.st_ino, written.st_dev):
            return                          # replaced meanwhile: the next load reads the file
        parsed = json.loads(text)           # what every reader of the file gets
        if record_problem(parsed) is not None:
            return                          # not counted: the next load reads the file and says why
        sig = _signature(st)
        if self._loaded:
            self._entries[key] = (sig, parsed)
            self._bad.pop(key, None)
        data = _entry_line(key, sig, text).encode()
        self._appended += 1
        try:
            fd = os.open(self.inside(self.index_path), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                while data:                 # one write in practice (a regular file)
                    data = data[os.write(fd, data):]
            finally:
                os.close(fd)
        except (OSError, UsageError):       # a cache: a read-only or full disk only costs speed
            pass

    def sync(self) -> None:
        """Flush the records written with ``durable=False`` to disk (one group commit)."""
        pending, self._unsynced = self._unsynced, []
        sync_files(pending, self.records_dir)

    def _scan(self) -> dict[str, tuple | None]:
        """key → signature of every records/*.json file (None: its status cannot be read). Within
        a process a scan is reused while records/ is unchanged (no file added, removed or renamed
        into place since) and was last changed RACY_NS before that scan; across processes never."""
        try:
            dsig = _signature(os.stat(self.records_dir))
        except OSError:
            self._last_scan = None
            return {}
        last = self._last_scan
        if last is not None and last[0] == dsig and dsig[2] < last[1] - RACY_NS:
            return last[2]
        started = time.time_ns()
        sigs: dict[str, tuple | None] = {}
        try:
            with os.scandir(self.records_dir) as entries:
                for entry in entries:
                    name = entry.name
                    if not name.endswith(".json"):
                        continue
                    try:
                        st = entry.stat()
                        sigs[name[:-5]] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)   # _signature
                    except FileNotFoundError:
                        continue            # removed this instant
                    except OSError:
                        sigs[name[:-5]] = None
        except NotADirectoryError:
            return {}
        self._last_scan = (dsig, started, sigs)
        return sigs

    def _read_record(self, key: str) -> bool:
        """Parse records/<key>.json into _entries (True), or note it as damaged with one warning."""
        p = self.records_dir / f"{key}.json"
        sig = None
        try:
            with open(p) as fh:             # the signature of the very file read
                sig = _signature(os.fstat(fh.fileno()))
                rec = json.loads(fh.read())
        except FileNotFoundError:
            return False
        except (OSError, *NOT_JSON) as exc:   # not JSON (a foreign or damaged file)
            rec, problem = None, f"not a JSON record ({type(exc).__name__})"
        else:
            problem = record_problem(rec)
        if problem:     # not counted (and not done: `rfbench run` runs the task again)
            self._bad[key] = sig
            warn_once(p, problem)
            return False
        self._bad.pop(key, None)
        self._entries[key] = (sig, rec)
        return True

    def _load(self) -> tuple[list[str], np.ndarray]:
        """(sorted keys, row of each in _base or -1 for _entries) of every record that can be
        counted, as the files are now: records/ is listed again on every call (records written by
        another invocation working on other tasks of the same directory appear, removed ones go),
        and a file is parsed only when neither this process nor the index holds it under its
        current signature."""
        sigs = self._scan()
        self._loaded = True
        if self._view is not None and self._view[0] is sigs:
            return self._view[1], self._view[2]
        entries, bad = self._entries, self._bad
        for key in [k for k, (sig, _) in entries.items() if sigs.get(k) != sig]:
            del entries[key]
        for key in [k for k, sig in bad.items() if k not in sigs or sigs[k] != sig]:
            del bad[key]

        def stale_keys(base):
            row, bsigs = (base.row, base.sigs) if base is not None else ({}, [])
            return [k for k, sig in sigs.items()
                    if sig is None or (k not in entries and k not in bad
                                       and ((i := row.get(k)) is None or bsigs[i] != sig))]

        stale = stale_keys(self._base)
        if len(stale) > INDEX_MIN:
            base, appended, lines = self._read_index()
            if base is not None or lines:
                self._appended = lines
            if base is not None and base is not self._base:
                if self._base is not None:      # records held through the old columns and not the new
                    old, row = self._base, base.row
                    for k, i in old.row.items():
                        if sigs.get(k) == old.sigs[i] and k not in entries and (
                                (j := row.get(k)) is None or base.sigs[j] != old.sigs[i]):
                            entries[k] = (old.sigs[i], old.record(i))
                self._base = base
            for k in stale:
                hit = appended.get(k)
                if hit is not None and hit[0] == sigs[k]:
                    entries[k] = hit
            stale = stale_keys(self._base)
        else:
            lines = 0
        read = sum(self._read_record(k) for k in sorted(stale, key=lambda k: k + ".json"))
        base = self._base
        if base is not None:        # its rows whose file is unchanged and not held otherwise
            valid = [sigs.get(k) == sig and k not in entries for k, sig in zip(base.keys, base.sigs, strict=True)]
            keys = list(itertools.compress(base.keys, valid))
            rows = np.flatnonzero(np.fromiter(valid, dtype=bool, count=len(valid)))
        else:
            keys, rows = [], np.zeros(0, dtype=np.int64)
        if entries:                 # (base.keys are sorted: then so are keys)
            row = dict(zip(keys, rows.tolist(), strict=True))
            keys = sorted([*keys, *entries])
            rows = np.fromiter((row.get(k, -1) for k in keys), dtype=np.int64, count=len(keys))
        self._view = (sigs, keys, rows)
        if read > max(INDEX_MIN, len(keys) // 50) or lines > max(INDEX_APPENDED_MIN, len(keys) // 10):
            self._write_index()             # (the view now points at the new columns)
        return self._view[1], self._view[2]

    def _read_index(self) -> tuple[_Base | None, dict[str, tuple[tuple, dict]], int]:
        """The index (see _parse_index), or nothing when it is missing or unchanged since this
        object last read it (what matched then is held already)."""
        try:
            with open(self.index_path, encoding="utf-8") as fh:
                sig = _signature(os.fstat(fh.fileno()))
                if sig == self._index_seen:
                    return None, {}, 0
                text = fh.read()
        except (OSError, ValueError):
            return None, {}, 0
        self._index_seen = sig
        return _parse_index(text)

    def _gather(self, fields, view=None) -> tuple[list[str], dict[str, tuple[np.ndarray, np.ndarray]]]:
        """(sorted keys, field → (values, present)) of every record (of ``view``, (keys, rows), when
        given; else as the files are now): object arrays, NaN where a record lacks the field."""
        keys, rows = self._load() if view is None else view
        n, base = len(keys), self._base
        own = np.flatnonzero(rows < 0)
        take = np.maximum(rows, 0)
        out = {}
        for f in fields:
            if base is not None and f in base.values and n:
                values, present = base.values[f][take], base.present[f][take]
            else:
                values, present = np.full(n, np.nan, dtype=object), np.zeros(n, dtype=bool)
            out[f] = (values, present)
        if len(own):                # records held as dicts: one list per field
            recs = [self._entries[keys[p]][1] for p in own.tolist()]
            for f in fields:
                values, present = out[f]
                got = [r.get(f, _ABSENT) for r in recs]
                has = np.fromiter((v is not _ABSENT for v in got), dtype=bool, count=len(got))
                col = np.fromiter(got, dtype=object, count=len(got))
                col[~has] = np.nan
                values[own], present[own] = col, has
        return keys, out

    def _write_index(self) -> None:
        """The index rewritten from the records held now (each paired with the signature of the
        file it was read from); a concurrent append may be lost, which only costs a read later."""
        if self.read_only:
            return
        keys, rows = self._view[1], self._view[2]
        fields = sorted(set(self._base.fields if self._base is not None and (rows >= 0).any() else ())
                        | {f for p in np.flatnonzero(rows < 0).tolist() for f in self._entries[keys[p]][1]})
        _, cols = self._gather(fields, (keys, rows))
        base = self._base
        sigs = [self._entries[k][0] if r < 0 else base.sigs[r] for k, r in zip(keys, rows.tolist(), strict=True)]
        new = _Base(list(keys), sigs, fields, {f: cols[f][0] for f in fields}, {f: cols[f][1] for f in fields})
        try:
            atomic_write_text(self.inside(self.index_path), new.text())
        except (OSError, UsageError):       # read-only directory, disk full: the index is a cache
            return
        self._base, self._entries, self._appended = new, {}, 0
        self._view = (self._view[0], list(keys), np.arange(len(keys), dtype=np.int64))

    def records(self) -> list[dict]:
        """All records that can be counted, sorted by key (see _load)."""
        keys, rows = self._load()
        base, entries = self._base, self._entries
        return [entries[k][1] if r < 0 else base.record(r) for k, r in zip(keys, rows.tolist(), strict=True)]

    def done_keys(self) -> set[str]:
        keys, cols = self._gather(["status"])
        return {k for k, s in zip(keys, cols["status"][0].tolist(), strict=True) if s == "done"}

    def columns(self, fields) -> list[tuple]:
        """``fields`` of every record, in the order of records() (a field a record lacks: NaN, as
        pandas reads a list of records), one tuple per record, without building a dict per record."""
        keys, cols = self._gather(fields)
        if not fields:
            return [() for _ in keys]
        return list(zip(*(cols[f][0].tolist() for f in fields), strict=True))

    def frame(self) -> pd.DataFrame:
        """``records_frame(self.records())``: the same table (pandas converts a list of tuples and a
        list of dicts alike), built from the columns."""
        df = pd.DataFrame(self.columns(COLUMNS), columns=COLUMNS)
        if not df.empty:
            df = df.sort_values(["dataset", "method", "n_features", "fold"], kind="stable")
        return df

    def is_done(self, key: str) -> bool:
        """Whether the task's record on disk says done (another invocation may have written it)."""
        path = self.inside(self.records_dir / f"{key}.json")
        try:
            rec = json.loads(path.read_text())
        except (OSError, *NOT_JSON):
            return False
        return record_problem(rec) is None and rec["status"] == "done"

    # -- claims: one live invocation per task --------------------------------------------------
    def claim(self, key: str) -> bool:
        """Take the task ``key`` for this process; False if a live process holds it."""
        path = self.inside(self.records_dir / f"{key}.claim")
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

    def release(self, key: str) -> None:
        path = self.inside(self.records_dir / f"{key}.claim")
        HEARTBEAT.discard(path)
        path.unlink(missing_ok=True)

    # -- consolidated table ------------------------------------------------------------------
    def write_results_csv(self) -> pd.DataFrame:
        """results.csv rewritten from the records; also the index, as columns, when this process
        appended (or found) more than a tenth of the records as lines since it was last rewritten (the
        runner consolidates at the end of a run: the next status or report reads columns; amortised
        O(1) per record, as the tenth grows with the directory)."""
        df = self.frame()
        atomic_write_text(self.inside(self.path / "results.csv"), df.to_csv(index=False))
        if self._view is not None and self._appended > max(INDEX_APPENDED_MIN, len(self._view[1]) // 10):
            self._write_index()
        return df

    def folds_path(self, dataset: str, seed: int = 0) -> Path:
        """folds/<dataset>.csv for seed 0 (the layout of every run before seeds were repeated), and
        folds/s<seed>/<dataset>.csv for any other seed (a subdirectory, so that no dataset name can
        collide with another dataset's file of another seed)."""
        sub = self.path / "folds" if int(seed) == 0 else self.path / "folds" / f"s{int(seed)}"
        return self.inside(sub / f"{dataset}.csv")

    def write_folds(self, dataset: str, fold_of_row, seed: int = 0) -> None:
        path = self.folds_path(dataset, seed)
        text = "row,fold\n" + "".join(f"{i},{int(f)}\n" for i, f in enumerate(fold_of_row))
        if path.is_file() and path.read_text() != text:
            raise UsageError(f"{path} holds other fold assignments for seed {int(seed)}: this directory belongs "
                             "to a run with other data or another protocol (outer folds, --max-samples); use a "
                             "new --out directory")
        if not path.is_file():
            atomic_write_text(path, text)

    def write_run_info(self, info: dict) -> None:
        history = self.inside(self.path / "runs.jsonl")
        lines = history.read_text() if history.is_file() else ""
        atomic_write_text(history, lines + json.dumps(info, default=str) + "\n")
        atomic_write_text(self.inside(self.path / "run.json"), json.dumps(info, indent=2, default=str))


_OPEN: dict[str, RunDir] = {}


def open_run(path) -> RunDir:
    """The RunDir of ``path`` shared by the readers of one process (report reads the records for
    its tables and again for the run's wall time): each read still lists records/ and re-reads what
    changed, so sharing only saves parsing the same files twice."""
    key = os.path.abspath(path)
    run = _OPEN.get(key)
    if run is None:
        run = _OPEN[key] = RunDir(path)
    return run


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a recycled pid from its first owner."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


_IDENTITY: dict[int, dict] = {}     # pid → its host and start time (a forked worker has its own pid)


def _process_identity() -> dict:
    pid = os.getpid()
    if pid not in _IDENTITY:        # one /proc read per process, not one per claimed task
        _IDENTITY[pid] = {"host": socket.gethostname(), "pid": pid, "start": _start_time(pid)}
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
    return holder.get("start") is not None and _start_time(pid) != holder.get("start")


def run_walltime(path) -> tuple[float, int]:
    """(seconds, invocations) a resumed run has spent: every ``rfbench run`` invocation in
    ``runs.jsonl`` is busy from its start to the last task it finished, and the wall time is the
    length of the union of those intervals (two lanes working side by side on one directory count
    once), together with how many invocations finished at least one task. Time an invocation spent
    on a task it did not finish (killed) is not counted, nor an invocation that found nothing left
    to do. A record names its invocation; records written before invocations had ids belong to the
    last invocation started before they finished."""
    path = Path(path)
    history = path / "runs.jsonl"
    if not history.is_file():
        return 0.0, 0
    runs = []
    for n, line in enumerate(history.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            info = json.loads(line)
            start = parse_timestamp(info.get("started_at"))
        except (*NOT_JSON, AttributeError):
            start = None
        if start is None:
            warn_once(f"{history} line {n}", "not an invocation with a 'started_at' time")
            continue
        runs.append((start, info.get("invocation")))
    runs.sort(key=lambda r: r[0])
    last: dict[int, pd.Timestamp] = {}
    ids = {inv: i for i, (_, inv) in enumerate(runs) if inv}
    starts = [start for start, _ in runs]
    tagged: dict[int, list] = {}
    for finished_at, invocation in open_run(path).columns(["finished_at", "invocation"]):
        i = ids.get(invocation)
        if i is not None:
            tagged.setdefault(i, []).append(finished_at)
            continue
        t = parse_timestamp(finished_at)
        if t is None:
            continue
        # untagged: the last invocation that started before it finished
        i = max((j for j, start in enumerate(starts) if start <= t), default=None)
        if i is None:
            continue
        last[i] = max(last.get(i, t), t)
    for i, times in tagged.items():
        t = _latest(times)
        if t is not None:
            last[i] = max(last.get(i, t), t)
    total, reach = 0.0, None
    for i in sorted(last, key=lambda j: starts[j]):   # union of [start, last finished] intervals
        lo, hi = starts[i], last[i]
        if reach is None or lo > reach:
            total += (hi - lo).total_seconds()
            reach = hi
        elif hi > reach:
            total += (hi - reach).total_seconds()
            reach = hi
    return total, len(last)


def records_frame(records: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(records, columns=COLUMNS)
    if not df.empty:
        df = df.sort_values(["dataset", "method", "n_features", "fold"], kind="stable")
    return df


_SECONDS_UTC_OFFSET = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d\d:\d\d")


def _latest(values) -> pd.Timestamp | None:
    """The latest of ``parse_timestamp(v)`` over values (None when none is a time). A time as the runner
    writes it (whole seconds, an offset) is compared as a datetime and only the latest is parsed by
    pandas (100 000 parses take a while); any other value makes it parse every one."""
    best = None
    for v in set(values):
        if not (isinstance(v, str) and _SECONDS_UTC_OFFSET.fullmatch(v)):
            best = None
            break
        d = datetime.fromisoformat(v)
        if best is None or d > best[0]:
            best = (d, v)
    if best is not None:
        return parse_timestamp(best[1])
    times = [t for t in map(parse_timestamp, values) if t is not None]
    return max(times) if times else None


def parse_timestamp(value) -> pd.Timestamp | None:
    if not value or not isinstance(value, str):
        return None
    try:
        return pd.Timestamp(value)
    except (ValueError, TypeError):
        return None


def read_results_csv(path: Path, warn=None) -> pd.DataFrame:
    """The valid rows of a results.csv (a directory without records, e.g. copied tables): a file
    that is not a table is refused with one line; rows that cannot be counted are skipped with one
    warning line naming the file, the first bad row and its field."""
    try:
        df = pd.read_csv(path)
    except pd.errors.EmptyDataError:
        return records_frame([])
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"{path} is not a results table ({type(exc).__name__}: "
                         f"{str(exc).strip().splitlines()[0] if str(exc).strip() else ''}); "
                         "delete it or re-run `rfbench run` to rewrite it from the records") from None
    rows = [{k: _csv_value(k, v) for k, v in r.items()} for r in df.to_dict("records")]
    problems = [(i, record_problem(r)) for i, r in enumerate(rows)]
    bad = [(i, pr) for i, pr in problems if pr]
    if bad:
        i, problem = bad[0]
        warn_once(path, f"{len(bad)} of {len(rows)} row(s) cannot be counted; the first, row {i + 2}: {problem}",
                  warn)
    keep = [r for r, (_, pr) in zip(rows, problems, strict=True) if not pr]
    for r in keep:
        r["n_features"], r["fold"] = int(r["n_features"]), int(r["fold"])
    df = records_frame(keep)
    for key in NUMERIC:         # a stray text cell in a column that is not checked becomes NaN
        if key not in ("n_features", "fold"):
            df[key] = pd.to_numeric(df[key], errors="coerce")
    return df


def _csv_value(key: str, value):
    """A results.csv cell as the record would hold it: empty → None; a numeric column's text (a
    column pandas could not parse as numbers because some row is garbage) → its number if it is one."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if key in NUMERIC and isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


TASK_KEY = ["dataset", "method", "n_features", "fold", "seed", "protocol"]   # what record_key hashes
CELL = ["dataset", "method", "n_features"]


class CombineError(UsageError):
    """Results that cannot be pooled: one task with different errors, or one cell under two protocols."""


def load_results(dirs, protocol: str | None = None, *, mixed_protocols: bool = False,
                 missing_ok: bool = False) -> pd.DataFrame:
    """All records of one or more run directories (the records are the source of truth), pooled
    by the rules every command that reads results shares (report, check, plot, reproduce, the
    table at the end of run). Records that cannot be counted (a missing or non-numeric field, an
    unknown status) are skipped with one warning line each naming the file and the field.

    Pooling, by task key (dataset, method, n_features, fold, seed, protocol; :func:`record_key`):

    * a task found in several directories (the same directory given twice, a copy, a run resumed
      elsewhere) counts once: a finished record wins over an error/timeout one, then the newest;
      finished copies must agree on the error (to 1e-9 relative: the same code on other thread
      counts differs in the last bits);
    * finished copies whose errors differ (two code versions) are refused with one line naming the
      task and both directories (CombineError, exit 2): keeping either silently would hide the
      change; report the directories separately, or delete the stale record;
    * directories whose finished records of one (dataset, seed, protocol) were computed on other
      outer folds (their ``folds/<dataset>.csv`` differ) are refused with one line (CombineError):
      their fold k is another test set, so neither pooling nor pairing folds would be sound;
    * ``protocol``: only the records of that protocol key count (a directory holding several);
      none is an error naming the keys the directories hold, unless ``missing_ok`` (the check's
      default, the spec's protocol: then every published cell is missing);
    * one (dataset, method, n) finished under two protocols (other fold counts, --max-samples) is
      refused with one line naming them, unless ``mixed_protocols`` (status counts tasks, it pools
      nothing): select one with ``--protocol KEY``.

    Records of different seeds are distinct tasks and all count: a cell's statistics are pooled
    over seeds by the report (rfbench.report.summarise) and the check."""
    frames = []
    for d in dirs:
        run = open_run(d)
        if not run.path.is_dir():
            raise UsageError(f"results directory not found: {d}")
        frame = run.frame()
        if frame.empty and (run.path / "results.csv").is_file():
            frame = read_results_csv(run.path / "results.csv")
        frames.append(frame.assign(_dir=str(d)))
    df = pd.concat(frames, ignore_index=True) if frames else records_frame([]).assign(_dir=None)
    if df.empty:
        raise UsageError(f"no results in {', '.join(map(str, dirs))}; run `rfbench run` first")
    if len(dirs) > 1:
        _refuse_other_outer_folds(df if protocol is None else df[df["protocol"].astype(str) == protocol])
    df = _one_record_per_task(df)
    if protocol is not None:
        held = sorted(set(df["protocol"].dropna().astype(str)))
        df = df[df["protocol"].astype(str) == protocol]
        if df.empty and not missing_ok:
            raise UsageError(f"no records of protocol {protocol} in {', '.join(map(str, dirs))} (they hold "
                             f"{', '.join(held) or 'no protocol key'}); name one of those with --protocol")
    if not mixed_protocols:
        _refuse_mixed_protocols(df)
    return df.drop(columns="_dir").reset_index(drop=True)


def _refuse_other_outer_folds(df: pd.DataFrame) -> None:
    """CombineError when two directories hold finished records of one (dataset, seed, protocol) but
    different outer folds (their folds/<dataset>.csv differ): fold k of one is not fold k of the
    other, so pooling them, or pairing their folds in a paired test, would compare other test sets."""
    done = df[(df["status"] == "done") & df["seed"].notna()]
    for (dataset, seed, protocol), group in done.groupby(["dataset", "seed", "protocol"], sort=True):
        held = sorted(set(group["_dir"]))
        if len(held) < 2:
            continue
        texts = {}
        for d in held:
            path = open_run(d).folds_path(dataset, int(seed))
            texts[d] = path.read_bytes() if path.is_file() else None
        known = {d: t for d, t in texts.items() if t is not None}
        if len(set(known.values())) > 1:
            a, b = list(known)[:2]
            raise CombineError(
                f"{dataset} (seed {int(seed)}, protocol {protocol}) has other outer folds in {a} than in {b} "
                f"(their folds/{dataset}.csv differ): their fold k is not the same test set, so they are not "
                "pooled or paired; report the directories separately, or rerun one into a new --out")


def pool_frames(frames) -> pd.DataFrame:
    """Results of several sources, ``[(label, frame in COLUMNS), ...]`` (e.g. a run directory and a
    shipped baseline), pooled by the rules of :func:`load_results`: one record per task, finished
    copies that disagree refused (naming the labels), one cell under two protocols refused."""
    df = pd.concat([f.assign(_dir=str(label)) for label, f in frames], ignore_index=True)
    df = _one_record_per_task(df)
    _refuse_mixed_protocols(df)
    return df.drop(columns="_dir").reset_index(drop=True)


def _task_label(row) -> str:
    seed = "?" if pd.isna(row["seed"]) else f"{int(row['seed'])}"
    return (f"{row['dataset']} {row['method']} n={int(row['n_features'])} fold {int(row['fold'])} seed {seed} "
            f"protocol {row['protocol']}")


def _record_file(row) -> str:
    if pd.isna(row["seed"]) or pd.isna(row["protocol"]):
        return "its records/*.json file"
    key = record_key(row["dataset"], row["method"], int(row["n_features"]), int(row["fold"]), int(row["seed"]),
                     row["protocol"])
    return f"records/{key}.json of one directory"


def _one_record_per_task(df: pd.DataFrame) -> pd.DataFrame:
    """One row per task key (see load_results); CombineError when finished copies disagree."""
    if not df.duplicated(TASK_KEY).any():
        return df
    done = df["status"] == "done"
    error = pd.to_numeric(df["error"], errors="coerce").where(done)
    by_task = error.groupby([df[k] for k in TASK_KEY], dropna=False, sort=False)
    lo, hi = by_task.transform("min"), by_task.transform("max")
    differ = done & ~np.isclose(lo, hi, rtol=1e-9, atol=1e-12, equal_nan=True)
    if differ.any():
        n_tasks = len(df[differ].drop_duplicates(TASK_KEY))
        first = df[differ].iloc[0]
        same = np.logical_and.reduce([(df[k] == first[k]) | (df[k].isna() & pd.isna(first[k])) for k in TASK_KEY])
        copies = df[same & done]
        a, b = copies.loc[error[same & done].idxmin()], copies.loc[error[same & done].idxmax()]
        more = f" ({n_tasks - 1} more task(s) differ)" if n_tasks > 1 else ""
        raise CombineError(
            f"task {_task_label(first)} has different results: error {a['error']:.10g} in {a['_dir']}, "
            f"{b['error']:.10g} in {b['_dir']}{more} (two code versions?); report the directories separately, "
            f"or delete the stale record ({_record_file(first)})")
    order = df.assign(_done=done, _at=df["finished_at"].astype(str).where(df["finished_at"].notna(), ""))
    order = order.sort_values(["_done", "_at"], ascending=False, kind="stable")
    return df.loc[sorted(order.drop_duplicates(TASK_KEY, keep="first").index)]


def _refuse_mixed_protocols(df: pd.DataFrame) -> None:
    """CombineError when a (dataset, method, n) has finished records under more than one protocol."""
    done = df[df["status"] == "done"]
    if done.empty:
        return
    protocols = done["protocol"].astype(str).where(done["protocol"].notna(), "(none)")
    counts = protocols.groupby([done[k] for k in CELL]).nunique()
    mixed = counts[counts > 1]
    if mixed.empty:
        return
    ds, meth, n = mixed.index[0]
    cell = (done["dataset"] == ds) & (done["method"] == meth) & (done["n_features"] == n)
    held = {p: sorted(set(done.loc[cell & (protocols == p), "_dir"])) for p in sorted(set(protocols[cell]))}
    more = f" ({len(mixed) - 1} more cell(s) too)" if len(mixed) > 1 else ""
    raise CombineError(
        f"{ds} {meth} n={n} has results under {len(held)} protocols, which are not pooled: "
        + ", ".join(f"{p} (in {', '.join(d)})" for p, d in held.items())
        + f"{more}; select one with --protocol KEY, e.g. --protocol {next(iter(held))}")
