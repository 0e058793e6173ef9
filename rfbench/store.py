"""Results store: one atomically written record per finished task, and a consolidated results.csv.

Layout of a run directory::

    run.json              command, seed, protocol, package versions, machine facts (per invocation)
    records/<key>.json    one record per (dataset, method, n_features, fold, seed, protocol)
    folds/<dataset>.csv   the outer fold of every row (identical for every method)
    results.csv           all records as one tidy table, rewritten atomically after each record

Every write goes to a temporary file in the same directory followed by ``os.replace``, so a run
killed at any instant leaves either the old or the new version of each file, never a partial one.
Re-running resumes: ``done`` records are skipped, ``error``/``timeout`` ones are retried and
overwritten; the key-named files make duplicates impossible.

Several invocations may work on one directory at once (two lanes, or the same command started
twice): a task is run under a claim, ``records/<key>.claim``, created exclusively and removed when
its record is written, so no two live invocations run the same task. The claim of a process that
no longer runs on this host (killed) is taken over by the next invocation that wants the task.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import tempfile
import time
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError

COLUMNS = ["dataset", "method", "n_features", "fold", "seed", "protocol", "status", "metric",
           "error", "tune_s", "fit_s", "predict_s", "total_s", "preprocess_s", "n_train", "n_test", "threads",
           "params", "message", "source", "task", "finished_at"]


def atomic_write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def record_key(dataset: str, method: str, n_features: int, fold: int, seed: int, protocol: str) -> str:
    raw = f"{dataset}|{method}|{n_features}|{fold}|{seed}|{protocol}"
    slug = f"{dataset}__{method}__n{n_features}__f{fold}__s{seed}"
    return f"{slug}__{hashlib.sha1(raw.encode()).hexdigest()[:8]}"


class RunDir:
    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.records_dir = self.path / "records"
        self._cache: dict[str, dict] | None = None  # key → record, read from disk once per process

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
        return self.records_dir / f"{key}.json"

    def write_record(self, rec: dict) -> None:
        path = self.record_path(rec)
        atomic_write_text(path, json.dumps(rec, sort_keys=True, default=str))
        if self._cache is not None:
            self._cache[path.stem] = rec

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
                try:
                    self._cache[p.stem] = json.loads(p.read_text())
                except (OSError, json.JSONDecodeError):
                    continue  # cannot happen with atomic writes; a foreign file is ignored
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
        path = self.records_dir / f"{key}.json"
        try:
            return json.loads(path.read_text()).get("status") == "done"
        except (OSError, json.JSONDecodeError):
            return False

    # -- claims: one live invocation per task --------------------------------------------------
    def claim(self, key: str) -> bool:
        """Take the task ``key`` for this process; False if a live process holds it."""
        path = self.records_dir / f"{key}.claim"
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
            with os.fdopen(fd, "w") as fh:
                json.dump(_process_identity(), fh)
            return True
        return False

    def release(self, key: str) -> None:
        (self.records_dir / f"{key}.claim").unlink(missing_ok=True)

    # -- consolidated table ------------------------------------------------------------------
    def write_results_csv(self) -> pd.DataFrame:
        df = records_frame(self.records())
        atomic_write_text(self.path / "results.csv", df.to_csv(index=False))
        return df

    def write_folds(self, dataset: str, fold_of_row) -> None:
        path = self.path / "folds" / f"{dataset}.csv"
        text = "row,fold\n" + "".join(f"{i},{int(f)}\n" for i, f in enumerate(fold_of_row))
        if path.is_file() and path.read_text() != text:
            raise UsageError(f"{path} holds other fold assignments: this directory belongs to a run "
                             "with another seed or data; use a new --out directory")
        if not path.is_file():
            atomic_write_text(path, text)

    def write_run_info(self, info: dict) -> None:
        history = self.path / "runs.jsonl"
        lines = history.read_text() if history.is_file() else ""
        atomic_write_text(history, lines + json.dumps(info, default=str) + "\n")
        atomic_write_text(self.path / "run.json", json.dumps(info, indent=2, default=str))


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
    """A claim is stale when its process no longer runs on this host. Claims from other hosts
    (a shared file system) cannot be checked and are honoured; delete such a file by hand."""
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
        return False
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
    runs = sorted((pd.Timestamp(info["started_at"]), info.get("invocation"))
                  for info in map(json.loads, filter(str.strip, history.read_text().splitlines())))
    last: dict[int, pd.Timestamp] = {}
    ids = {inv: i for i, (_, inv) in enumerate(runs) if inv}
    starts = [start for start, _ in runs]
    for rec in RunDir(path).records():
        if not rec.get("finished_at"):
            continue
        t = pd.Timestamp(rec["finished_at"])
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


def load_results(dirs) -> pd.DataFrame:
    """All records of one or more run directories (the records are the source of truth)."""
    frames = []
    for d in dirs:
        run = RunDir(d)
        if not run.path.is_dir():
            raise UsageError(f"results directory not found: {d}")
        recs = run.records()
        if not recs and (run.path / "results.csv").is_file():
            frames.append(pd.read_csv(run.path / "results.csv"))
        else:
            frames.append(records_frame(recs))
    df = pd.concat(frames, ignore_index=True) if frames else records_frame([])
    if df.empty:
        raise UsageError(f"no results in {', '.join(map(str, dirs))}; run `rfbench run` first")
    return df
