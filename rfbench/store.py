"""Results store: one atomically written record per finished task, and a consolidated results.csv.

Layout of a run directory::

    run.json              command, seed, protocol, package versions, machine facts (per invocation)
    records/<key>.json    one record per (dataset, method, n_features, fold, seed, protocol)
    folds/<dataset>.csv   the outer fold of every row under seed 0 (identical for every method)
    folds/s<seed>/<dataset>.csv   the same for every other seed (``rfbench run --seeds 0,1,2``)
    results.csv           all records as one tidy table, rewritten atomically at most once a minute
                          during a run and when it ends (the records are the truth)

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
import json
import math
import numbers
import os
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.errors import UsageError

COLUMNS = ["dataset", "method", "n_features", "fold", "seed", "protocol", "status", "metric",
           "error", "tune_s", "fit_s", "predict_s", "total_s", "preprocess_s", "n_train", "n_test", "threads",
           "params", "message", "source", "task", "finished_at"]


STATUSES = ("done", "error", "timeout")
DISK_FULL = (errno.ENOSPC, errno.EDQUOT)


def is_disk_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in DISK_FULL


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and ``os.replace``: a failed write (disk
    full, killed) removes its temporary file and leaves the old ``path`` untouched. An OSError is
    raised again naming ``path`` (not the temporary file)."""
    path = Path(path)
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename == str(path):
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)


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


NUMERIC = ("n_features", "fold", "seed", "error", "total_s", "tune_s", "fit_s", "predict_s", "preprocess_s",
           "n_train", "n_test", "threads")


_WARNED: set[tuple[str, str]] = set()


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


class RunDir:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.records_dir = self.path / "records"
        self._cache: dict[str, dict] | None = None  # key → record, read from disk once per process
        self._bad: dict[str, float] = {}             # key → mtime of a record file that cannot be counted

    def inside(self, path: Path) -> Path:
        """``path`` when it lies inside the run directory (after resolving '..' and links), else a
        UsageError: nothing the store writes may land outside ``--out`` (the registry refuses unsafe
        names already; this is defence in depth)."""
        root = self.path.resolve()
        if not Path(path).resolve().is_relative_to(root):
            raise UsageError(f"refusing to write {path}: it lies outside the results directory {self.path} "
                             "(a dataset or method name with '/' or '..'?)")
        return Path(path)

    def ensure(self) -> RunDir:
        try:
            self.records_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError(f"cannot create results directory {self.path}: {exc.strerror}") from None
        return self

    # -- records -----------------------------------------------------------------------------
    def record_path(self, rec: dict) -> Path:
        key = record_key(rec["dataset"], rec["method"], rec["n_features"], rec["fold"], rec["seed"],
                         rec["protocol"])
        return self.inside(self.records_dir / f"{key}.json")

    def write_record(self, rec: dict) -> None:
        path = self.record_path(rec)
        atomic_write_text(path, json.dumps(rec, sort_keys=True, default=str))
        if self._cache is not None:
            self._cache[path.stem] = rec
            self._bad.pop(path.stem, None)

    def _load(self) -> dict[str, dict]:
        """key → record. Files are parsed once per process; every call lists the directory again
        and reads only the names it has not seen, so records written by another invocation working
        on other tasks of the same directory (two lanes with disjoint --datasets or --folds) appear
        in this one's results.csv too."""
        if self._cache is None:
            self._cache = {}
        if self.records_dir.is_dir():
            for p in sorted(self.records_dir.glob("*.json")):
                if p.stem in self._cache:
                    continue
                mtime = 0.0
                try:
                    if p.stem in self._bad and p.stat().st_mtime == self._bad[p.stem]:
                        continue        # still the damaged file (another invocation may rewrite it)
                    mtime = p.stat().st_mtime
                    rec = json.loads(p.read_text())
                except FileNotFoundError:
                    continue
                except (OSError, ValueError) as exc:   # not JSON (a foreign or damaged file)
                    rec, problem = None, f"not a JSON record ({type(exc).__name__})"
                else:
                    problem = record_problem(rec)
                if problem:     # not counted (and not done: `rfbench run` runs the task again)
                    self._bad[p.stem] = mtime
                    warn_once(p, problem)
                    continue
                self._cache[p.stem] = rec
        return self._cache

    def records(self) -> list[dict]:
        """All records (each file parsed once per process; writes through this object keep the
        cache current)."""
        cache = self._load()
        return [cache[k] for k in sorted(cache)]

    def done_keys(self) -> set[str]:
        return {k for k, r in self._load().items() if r.get("status") == "done"}

    def is_done(self, key: str) -> bool:
        """Whether the task's record on disk says done (another invocation may have written it)."""
        path = self.inside(self.records_dir / f"{key}.json")
        try:
            rec = json.loads(path.read_text())
        except (OSError, ValueError):
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
        df = records_frame(self.records())
        atomic_write_text(self.inside(self.path / "results.csv"), df.to_csv(index=False))
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


def _start_time(pid: int) -> str | None:
    """The kernel's start time of a process (Linux), which tells a recycled pid from its first owner."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _process_identity() -> dict:
    return {"host": socket.gethostname(), "pid": os.getpid(), "start": _start_time(os.getpid()),
            "claimed_at": time.time()}


def claim_is_stale(path: Path) -> bool:
    """A claim is stale when its process no longer runs on this host, or, from another host (a
    shared file system, where the pid cannot be checked), when its holder has not refreshed it for
    ``LEASE_S`` seconds."""
    try:
        holder = json.loads(path.read_text())
    except FileNotFoundError:
        return True
    except (OSError, json.JSONDecodeError):      # being written this instant, or foreign: wait a minute
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
    if not isinstance(pid, int):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass                                     # alive, another user's
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
            start = _timestamp(info.get("started_at"))
        except (ValueError, AttributeError):
            start = None
        if start is None:
            warn_once(f"{history} line {n}", "not an invocation with a 'started_at' time")
            continue
        runs.append((start, info.get("invocation")))
    runs.sort(key=lambda r: r[0])
    last: dict[int, pd.Timestamp] = {}
    ids = {inv: i for i, (_, inv) in enumerate(runs) if inv}
    starts = [start for start, _ in runs]
    for rec in RunDir(path).records():
        t = _timestamp(rec.get("finished_at"))
        if t is None:
            continue
        i = ids.get(rec.get("invocation"))
        if i is None:           # untagged: the last invocation that started before it finished
            i = max((j for j, start in enumerate(starts) if start <= t), default=None)
            if i is None:
                continue
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


def _timestamp(value) -> pd.Timestamp | None:
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
        run = RunDir(d)
        if not run.path.is_dir():
            raise UsageError(f"results directory not found: {d}")
        recs = run.records()
        if not recs and (run.path / "results.csv").is_file():
            frame = read_results_csv(run.path / "results.csv")
        else:
            frame = records_frame(recs)
        frames.append(frame.assign(_dir=str(d)))
    df = pd.concat(frames, ignore_index=True) if frames else records_frame([]).assign(_dir=None)
    if df.empty:
        raise UsageError(f"no results in {', '.join(map(str, dirs))}; run `rfbench run` first")
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
