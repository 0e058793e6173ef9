"""The records index, ``records.index.jsonl`` beside records/: a cache that makes reading a results
directory fast at 100 000 records. Every record written is appended to it as one line (its key, the
signature of its file, the record); a reader that had to read many record files rewrites it whole,
the records as columns in its first line. The files stay the truth: a record is taken from the
index only while its file's signature is the one indexed, so a stale index is never trusted and a
deleted one is rebuilt."""

from __future__ import annotations

import itertools
import json
import os
import time
from pathlib import Path

import numpy as np

from rfbench.errors import UsageError
from rfbench.store.atomic import atomic_write_text
from rfbench.store.record import (
    NOT_JSON,
    UnreadableRecord,
    not_json,
    parse_record,
    record_problem,
    warn_once,
)

#: the records index, beside records/: a cache of every record with its file's signature
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


def signature(st: os.stat_result) -> tuple[int, int, int, int]:
    """What tells one version of a record file from another: the store writes every record as a new
    file renamed into place (a new inode), and an edit in place changes its size or its modification
    and change times (nanoseconds)."""
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def entry_line(key: str, sig, text: str) -> str:
    """One appended index line: [key, inode, size, mtime_ns, ctime_ns, record]."""
    return f"[{json.dumps(key)}, {sig[0]}, {sig[1]}, {sig[2]}, {sig[3]}, {text}]\n"


class Columns:
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
    def parse(cls, head: dict) -> Columns:
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


def parse_index(text: str) -> tuple[Columns | None, dict[str, tuple[tuple, dict]], int]:
    """(the rewritten part, key → (signature, record) of the appended lines, the later line of a
    key winning, and the number of appended lines). A line torn by a writer killed mid-append (or
    interleaved by two writers on a file system without atomic appends) does not parse and is
    skipped; a first line that is not a whole index of this format is ignored."""
    base = None
    lines = text.split("\n")
    if lines and lines[0].startswith("{"):
        try:
            base = Columns.parse(json.loads(lines[0]))
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



class RecordIndex:
    """The records of one records/ directory as this process knows them, read through the index:
    ``records()``, ``columns(fields)`` and ``done_keys()`` list records/ again on every call (records
    written by another invocation appear, removed ones go) and parse a file only when neither this
    object nor the index holds it under its current signature. Only records that can be counted are
    indexed; damaged files are read (and warned about) every time.

    ``inside`` checks a path the index is written to (see RunDir.inside); ``read_only``: a look that
    must leave no trace (run --dry-run), the index is then never rewritten."""

    def __init__(self, records_dir: Path, index_path: Path, inside=lambda path: path, read_only: bool = False):
        self.records_dir, self.index_path, self.inside, self.read_only = records_dir, index_path, inside, read_only
        self._base: Columns | None = None                   # the index's columns, as last read
        self._entries: dict[str, tuple[tuple, dict]] = {}  # key → (file signature, record) not taken from _base
        self._bad: dict[str, tuple | None] = {}            # key → signature of a file that cannot be counted
        self._loaded = False
        self._index_seen: tuple | None = None               # signature of the index when last read
        self._last_scan: tuple | None = None                # (records/ signature, scan start ns, key → signature)
        self._view: tuple | None = None                     # (scan it was made for, sorted keys, base rows; -1: _entries)
        self._appended = 0                                  # index lines after its columns, as far as known here

    def written(self, path: Path, written: os.stat_result, text: str) -> None:
        """A record just written to ``path`` (``text``; ``written``: the file's status before its
        rename), appended to the index. The index line carries the signature of the file as it
        stands after the rename, and only when that file is still the one written (same inode): a
        concurrent writer of the same task leaves no wrong line."""
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
        sig = signature(st)
        if self._loaded:
            self._entries[key] = (sig, parsed)
            self._bad.pop(key, None)
        data = entry_line(key, sig, text).encode()
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

    def consolidate(self) -> None:
        """The index rewritten as columns when this object appended (or found) more than a tenth of
        the records as lines since it was last rewritten (amortised O(1) per record, as the tenth
        grows with the directory)."""
        if self._view is not None and self._appended > max(INDEX_APPENDED_MIN, len(self._view[1]) // 10):
            self._write_index()

    def _scan(self) -> dict[str, tuple | None]:
        """key → signature of every records/*.json file (None: its status cannot be read). Within
        a process a scan is reused while records/ is unchanged (no file added, removed or renamed
        into place since) and was last changed RACY_NS before that scan; across processes never."""
        try:
            dsig = signature(os.stat(self.records_dir))
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
                        sigs[name[:-5]] = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)   # signature
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
                sig = signature(os.fstat(fh.fileno()))
                rec = parse_record(fh.read())
        except FileNotFoundError:
            return False
        except UnreadableRecord as exc:     # not a record that counts (a field, a damaged file)
            problem = str(exc)
        except (OSError, *NOT_JSON) as exc:   # unreadable (e.g. not UTF-8)
            problem = not_json(exc)
        else:
            problem = None
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

    def _read_index(self) -> tuple[Columns | None, dict[str, tuple[tuple, dict]], int]:
        """The index (see parse_index), or nothing when it is missing or unchanged since this
        object last read it (what matched then is held already)."""
        try:
            with open(self.index_path, encoding="utf-8") as fh:
                sig = signature(os.fstat(fh.fileno()))
                if sig == self._index_seen:
                    return None, {}, 0
                text = fh.read()
        except (OSError, ValueError):
            return None, {}, 0
        self._index_seen = sig
        return parse_index(text)

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
        new = Columns(list(keys), sigs, fields, {f: cols[f][0] for f in fields}, {f: cols[f][1] for f in fields})
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
