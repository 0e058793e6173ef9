"""A results directory (:class:`RunDir`): where each of its files is, and its reads and writes,
each through the module that does that job (crash-safe writes, the record, the index, the claims).

Layout of a run directory::

    run.json              command, seed, protocol, package versions, machine facts (per invocation)
    runs.jsonl            the same, one line per invocation
    records/<key>.json    one record per (dataset, method, n_features, fold, seed, protocol)
    records/<key>.claim   the claim of a task being run (rfbench.store.claims)
    folds/<dataset>.csv   the outer fold of every row under seed 0 (identical for every method)
    folds/s<seed>/<dataset>.csv   the same for every other seed (``rfbench run --seeds 0,1,2``)
    results.csv           all records as one tidy table, rewritten atomically at most once a minute
                          during a run and when it ends (the records are the truth)
    records.index.jsonl   a cache of the records for fast reading (rfbench.store.index): never
                          trusted for a file that changed since it was indexed; safe to delete

Every file is written atomically (rfbench.store.atomic): a run killed at any instant leaves the old
or the new version of each, never a partial one. Re-running resumes: ``done`` records are skipped,
``error``/``timeout`` ones are retried and overwritten; the key-named files make duplicates impossible.
"""

from __future__ import annotations

import functools
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.store import claims
from rfbench.store.atomic import atomic_write_text, remove_stale_temporaries, sync_files
from rfbench.store.index import INDEX_NAME, RecordIndex
from rfbench.store.record import COLUMNS, Record, UnreadableRecord, record_key
from rfbench.store.table import sort_records


class RunDir:
    """A results directory. Reading it stays fast at 100 000 records through the records index
    (:class:`~rfbench.store.index.RecordIndex`): every record written is appended to it, and a
    reader takes a record from it only while the record's file is the one indexed."""

    def __init__(self, path: str | os.PathLike, read_only: bool = False):
        self.path = Path(path)
        # a look that must leave no trace (run --dry-run): the index, a cache, is then never rewritten
        self.read_only = read_only
        self.records_dir = self.path / "records"
        self.index_path = self.path / INDEX_NAME
        self._inside_dirs: set[Path] = set()                # directories already resolved to inside the run
        self._unsynced: list[Path] = []                     # records written with durable=False since sync()
        # the index checks its own writes with the same rule, through a function that holds no
        # reference to this object: a RunDir let go of is freed at once with its records
        self._index = RecordIndex(self.records_dir, self.index_path,
                                  functools.partial(inside, self.path, self._inside_dirs), read_only)

    def inside(self, path: Path) -> Path:
        """``path`` when it lies inside the run directory, else a UsageError (see :func:`inside`)."""
        return inside(self.path, self._inside_dirs, path)

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
    def record_path(self, rec: Record | Mapping) -> Path:
        key = rec.key if isinstance(rec, Record) else record_key(
            rec["dataset"], rec["method"], rec["n_features"], rec["fold"], rec["seed"], rec["protocol"])
        return self.inside(self.records_dir / f"{key}.json")

    def write_record(self, rec: Record, durable: bool = True) -> None:
        """Write the record atomically, then append it to the index (a mapping is refused: a record
        is built, and so checked, as a :class:`Record`; ``Record.from_dict`` reads one).

        ``durable=False`` (the runner's group commit): no fsync now; :meth:`sync` flushes every such
        record at once. A killed process loses nothing either way (the kernel holds the file); only
        a crash of the machine before the next sync can, and then the task is simply run again (a
        record file left empty or cut is read as not done)."""
        if not isinstance(rec, Record):
            raise TypeError(f"write_record takes a Record, not {type(rec).__name__}")
        path = self.record_path(rec)
        text = rec.to_json()
        written = atomic_write_text(path, text, durable=durable)
        if not durable:
            self._unsynced.append(path)
        self._index.written(path, written, text)

    def sync(self) -> None:
        """Flush the records written with ``durable=False`` to disk (one group commit)."""
        pending, self._unsynced = self._unsynced, []
        sync_files(pending, self.records_dir)

    def records(self) -> list[dict]:
        """All records that can be counted, sorted by key, as their files hold them."""
        return self._index.records()

    def done_keys(self) -> set[str]:
        return self._index.done_keys()

    def columns(self, fields) -> list[tuple]:
        """``fields`` of every record, in the order of records() (a field a record lacks: NaN, as
        pandas reads a list of records), one tuple per record, without building a dict per record."""
        return self._index.columns(fields)

    def frame(self) -> pd.DataFrame:
        """``records_frame(self.records())``: the same table (pandas converts a list of tuples and a
        list of dicts alike), built from the columns."""
        return sort_records(pd.DataFrame(self.columns(COLUMNS), columns=COLUMNS))

    def read(self, key: str) -> Record | None:
        """The task's record as its file holds it now (another invocation may have written it), or
        None when there is none that can be counted."""
        path = self.inside(self.records_dir / f"{key}.json")
        try:
            return Record.from_json(path.read_text())
        except (OSError, UnicodeDecodeError, UnreadableRecord):
            return None

    def is_done(self, key: str) -> bool:
        """Whether the task's record on disk says done (another invocation may have written it)."""
        rec = self.read(key)
        return rec is not None and rec.status == "done"

    # -- claims: one live invocation per task (rfbench.store.claims) ---------------------------
    def claim(self, key: str) -> bool:
        """Take the task ``key`` for this process; False if a live process holds it."""
        return claims.take(self.inside(self.records_dir / f"{key}.claim"))

    def release(self, key: str) -> None:
        claims.release(self.inside(self.records_dir / f"{key}.claim"))

    # -- consolidated table ------------------------------------------------------------------
    def write_results_csv(self) -> pd.DataFrame:
        """results.csv rewritten from the records; also the index, as columns, when this process
        appended (or found) many records as lines since it was last rewritten (the runner
        consolidates at the end of a run: the next status or report reads columns)."""
        df = self.frame()
        atomic_write_text(self.inside(self.path / "results.csv"), df.to_csv(index=False))
        self._index.consolidate()
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

    def _recorded_user_datasets(self):
        """(name, info) of every user dataset each invocation recorded in ``runs.jsonl``
        (``user_entries.datasets.<name>``), oldest first; an unreadable line is passed over."""
        history = self.path / "runs.jsonl"
        if not history.is_file():
            return
        for line in history.read_text().splitlines():
            try:
                entries = (json.loads(line).get("user_entries") or {}).get("datasets") or {}
            except (ValueError, AttributeError):
                continue
            for name, info in entries.items():
                if isinstance(info, dict):
                    yield name, info

    def recorded_checksums(self) -> dict[str, str]:
        """dataset name → the sha256 of its data file as the last invocation that named it recorded;
        user datasets only, whose files may change between invocations."""
        return {name: info["sha256"] for name, info in self._recorded_user_datasets()
                if isinstance(info.get("sha256"), str)}

    def recorded_shapes(self) -> dict[str, tuple[int, int]]:
        """dataset name → (rows, inputs) of a user dataset as the last invocation that named it
        recorded (the registry of a later command may not know the dataset, or not its shape)."""
        return {name: (int(shape[0]), int(shape[1])) for name, info in self._recorded_user_datasets()
                if isinstance(shape := info.get("shape"), list) and len(shape) == 2
                and all(isinstance(v, int) and v > 0 for v in shape)}

    def write_run_info(self, info: dict) -> None:
        history = self.inside(self.path / "runs.jsonl")
        lines = history.read_text() if history.is_file() else ""
        atomic_write_text(history, lines + json.dumps(info, default=str) + "\n")
        atomic_write_text(self.inside(self.path / "run.json"), json.dumps(info, indent=2, default=str))


def inside(root: Path, inside_dirs: set[Path], path: Path) -> Path:
    """``path`` when it lies inside the run directory ``root`` (after resolving '..' and links), else
    a UsageError: nothing the store writes may land outside ``--out`` (the registry refuses unsafe
    names already; this is defence in depth). A plain name in a directory already found inside
    (``inside_dirs``, which this adds to) costs one ``lstat`` (is it a link?) instead of resolving
    every component again: the store asks this several times per task."""
    path = Path(path)
    if path.parent in inside_dirs and path.name not in ("", ".", ".."):
        try:
            if not stat.S_ISLNK(os.lstat(path).st_mode):
                return path
        except FileNotFoundError:
            return path
        except OSError:
            pass
    resolved = root.resolve()
    if not path.resolve().is_relative_to(resolved):
        raise UsageError(f"refusing to write {path}: it lies outside the results directory {root} "
                         "(a dataset or method name with '/' or '..'?)")
    if path.parent.resolve().is_relative_to(resolved):
        inside_dirs.add(path.parent)
    return path


#: the RunDir of each path (absolute) that open_run gave out in this process
OPEN_RUNS: dict[str, RunDir] = {}


def invocations(path) -> list[dict]:
    """The invocations a results directory records, oldest first: the lines of its ``runs.jsonl``
    (one per ``rfbench run``; an unreadable line is passed over), else its ``run.json`` alone."""
    path = Path(path)
    history = path / "runs.jsonl"
    if not history.is_file():
        info = path / "run.json"
        try:
            return [json.loads(info.read_text())] if info.is_file() else []
        except ValueError:
            return []
    out = []
    for line in history.read_text().splitlines():
        try:
            info = json.loads(line)
        except ValueError:
            continue
        if isinstance(info, dict):
            out.append(info)
    return out


def recorded_shapes(dirs) -> dict[str, tuple[int, int]]:
    """:meth:`RunDir.recorded_shapes` of every results directory among ``dirs`` (a later one wins;
    a shipped baseline read in a directory's place records none)."""
    out: dict[str, tuple[int, int]] = {}
    for d in dirs:
        if not hasattr(d, "frame") and Path(d).is_dir():
            out.update(open_run(d).recorded_shapes())
    return out


def open_run(path) -> RunDir:
    """The RunDir of ``path`` shared by the readers of one process (report reads the records for
    its tables and again for the run's wall time): each read still lists records/ and re-reads what
    changed, so sharing only saves parsing the same files twice."""
    key = os.path.abspath(path)
    run = OPEN_RUNS.get(key)
    if run is None:
        run = OPEN_RUNS[key] = RunDir(path)
    return run
