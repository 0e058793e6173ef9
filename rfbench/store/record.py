"""The record of one task, its fields defined once (:class:`Record`): the task's key, the rule that
tells a record that can be counted from one that cannot (:func:`record_problem`; such a record is
skipped with one warning line and its task is run again), and its JSON text, one file per task.

Writers build a :class:`Record` (:meth:`Record.base`, :meth:`Record.failed`); a reader of one record
gets one (:meth:`Record.from_json`). Readers of many records (the index, the tables) keep them as
the dicts and columns they were read as: 100 000 objects would cost more than the whole read."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import numbers
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, get_args, get_type_hints

STATUSES = ("done", "error", "timeout")

#: a failure's message and traceback as a record keeps them (their first and last characters)
MESSAGE_MAX = 500
TRACEBACK_MAX = 3000

#: what a record's ``task`` adds when a regression method was fitted on a classification set (by
#: ridge/least squares on ±1 labels, predicting the sign)
SIGN_FIT = " (ridge on ±1, sign)"


def fitted_by_sign(task) -> bool:
    """Whether a record's ``task`` says a regression method was fitted on ±1 labels (:data:`SIGN_FIT`)."""
    return isinstance(task, str) and task.endswith(SIGN_FIT)

_TASK = {"part": "task"}        # identifies the task: record_key hashes these, in this order
_FILE = {"part": "file"}        # kept in the record's file, not a column of results.csv


@dataclass(frozen=True, slots=True, kw_only=True)
class Record:
    """One task's outcome, as ``records/<key>.json`` holds it. The fields up to ``finished_at`` are
    the columns of results.csv, in their order; the next ones only the record's file keeps, when
    set; ``extra`` holds the fields of a record this version does not know (a newer writer's)."""

    # -- the task
    dataset: str = field(metadata=_TASK)            # registry names
    method: str = field(metadata=_TASK)
    n_features: int = field(metadata=_TASK)         # the feature budget n
    fold: int = field(metadata=_TASK)               # the outer fold
    seed: int | None = field(metadata=_TASK)        # the protocol's seed (None: a record older than seeds)
    protocol: str | None = field(metadata=_TASK)    # the protocol key, e.g. cv-o10-i5
    # -- its outcome
    status: str                                     # one of STATUSES
    metric: str | None = None                       # what ``error`` measures (rfbench.protocol.metric_name)
    error: float | None = None                      # the test error of the fold (done only)
    tune_s: float | None = None                     # the hyper-parameter search, part of the fit
    fit_s: float | None = None                      # the fit without the search
    predict_s: float | None = None
    total_s: float | None = None                    # fit + predict (a failure: until it failed)
    cpu_s: float | None = None                      # the worker's CPU seconds over fit + predict
    preprocess_s: float | None = None               # the data-dependent feature selection in the fit
    n_train: int | None = None                      # rows of the fold's training and test parts
    n_test: int | None = None
    threads: int | None = None                      # the task's thread budget
    params: str | None = None                       # the chosen hyper-parameters, as JSON text
    message: str = ""                               # why it failed (its first line); "" when done
    source: str | None = None                       # where the data came from
    task: str | None = None                         # regression, classification (and how it was fitted)
    finished_at: str | None = None                  # see timestamp()
    # -- kept in the record's file only, when set
    traceback: str | None = field(default=None, metadata=_FILE)       # a failure's, its last lines
    shared_fit_s: float | None = field(default=None, metadata=_FILE)  # one fit served several n: its time
    invocation: str | None = field(default=None, metadata=_FILE)      # the runs.jsonl line that ran it
    device: str | None = field(default=None, metadata=_FILE)          # what it ran on (none: the CPU)
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False, metadata={"part": "extra"})

    @classmethod
    def base(cls, *, dataset: str, method: str, n_features: int, fold: int, seed: int, protocol: str,
             threads: int, status: str = "error") -> Record:
        """A task's record before it runs (a worker fills it in): every outcome unknown, the status
        ``error`` until the task is done."""
        return cls(dataset=dataset, method=method, n_features=n_features, fold=fold, seed=seed, protocol=protocol,
                   status=status, threads=threads)

    @classmethod
    def failed(cls, *, dataset: str, method: str, n_features: int, fold: int, seed: int, protocol: str,
               threads: int, status: str, message: str, finished_at: str | None = None) -> Record:
        """The record of a task that did not finish (its worker died, was killed past its time limit
        or lost by the cluster): ``status`` error or timeout, the message cut to MESSAGE_MAX
        characters, finished now unless ``finished_at`` says when."""
        if status not in STATUSES or status == "done":
            raise ValueError(f"a failed task's status is error or timeout, not {status!r}")
        return cls(dataset=dataset, method=method, n_features=n_features, fold=fold, seed=seed, protocol=protocol,
                   status=status, threads=threads, message=message[:MESSAGE_MAX],
                   finished_at=finished_at or timestamp())

    def failing(self, status: str, message: str, traceback: str | None = None, **changes) -> Record:
        """This record as a failure (``status`` error or timeout) with its message and traceback cut to
        MESSAGE_MAX and TRACEBACK_MAX characters (the message's start, the traceback's end)."""
        if status not in STATUSES or status == "done":
            raise ValueError(f"a failed task's status is error or timeout, not {status!r}")
        return dataclasses.replace(self, status=status, message=message[:MESSAGE_MAX],
                                   traceback=None if traceback is None else traceback[-TRACEBACK_MAX:], **changes)

    def replace(self, **changes) -> Record:
        """This record with ``changes`` (field names)."""
        return dataclasses.replace(self, **changes)

    @property
    def key(self) -> str:
        """The name of its file (records/<key>.json): see :func:`record_key`."""
        return record_key(self.dataset, self.method, self.n_features, self.fold, self.seed, self.protocol)

    def to_dict(self) -> dict:
        """The record as its file holds it: every column (None where unknown), the file-only fields
        that are set, and the fields this version does not know."""
        out = {name: getattr(self, name) for name in COLUMNS}
        for name in FILE_ONLY:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, rec: Mapping) -> Record:
        """The record a record file's dict holds; UnreadableRecord (naming the field) when it cannot
        be counted (:func:`record_problem`). A field it lacks is None (``message``: "")."""
        problem = record_problem(rec)
        if problem is not None:
            raise UnreadableRecord(problem)
        known = {name: rec[name] for name in _NAMES if name in rec}
        known.update(n_features=int(rec["n_features"]), fold=int(rec["fold"]),
                     seed=rec.get("seed"), protocol=rec.get("protocol"))
        return cls(**known, extra={k: v for k, v in rec.items() if k not in _NAMES})

    def to_json(self) -> str:
        return record_text(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Record:
        """The record of a record file's text; UnreadableRecord when it is not one that counts."""
        return cls.from_dict(parse_record(text))


_PARTS = {f.name: f.metadata.get("part") for f in dataclasses.fields(Record)}
_NAMES = frozenset(name for name, part in _PARTS.items() if part != "extra")
#: what identifies a task (what record_key hashes)
TASK_KEY = [name for name, part in _PARTS.items() if part == "task"]
#: the columns of results.csv and of every frame of records, in this order
COLUMNS = [name for name, part in _PARTS.items() if part in ("task", None)]
#: the fields a record's file holds only when set
FILE_ONLY = tuple(name for name, part in _PARTS.items() if part == "file")


def on_device(device) -> bool:
    """Whether a record's ``device`` names a torch device ("cuda", "cuda:K", "torch-cpu") rather than
    the NumPy path ("cpu", or none in a record older than the field): the one test the estimators
    use to leave such a task's time out (it says nothing of the NumPy path's time)."""
    return isinstance(device, str) and device not in ("", "cpu")


def _kinds(annotation) -> set:
    return {t for t in (get_args(annotation) or (annotation,)) if t is not type(None)}


_TYPES = get_type_hints(Record)
#: the columns that hold numbers (a results.csv cell of one is read as a number)
NUMERIC = tuple(name for name in COLUMNS if _kinds(_TYPES[name]) <= {int, float})


class UnreadableRecord(ValueError):
    """A record that cannot be counted: its text is not JSON, or a field the tables read is missing
    or of the wrong kind (the message names it)."""


#: what json.loads raises on a damaged file: deep nesting ("[" × 200 000) overflows the parser's
#: recursion before it can say ValueError
NOT_JSON = (ValueError, RecursionError)


def not_json(exc: BaseException) -> str:
    """The problem of a record file that could not be read or parsed."""
    return f"not a JSON record ({type(exc).__name__})"


def parse_record(text: str) -> dict:
    """The dict of a record file's text, when it is a record that can be counted; else UnreadableRecord."""
    try:
        rec = json.loads(text)
    except NOT_JSON as exc:
        raise UnreadableRecord(not_json(exc)) from None
    problem = record_problem(rec)
    if problem is not None:
        raise UnreadableRecord(problem)
    return rec


def record_text(rec: Mapping) -> str:
    """A record's file text: JSON, keys sorted (a value JSON has no type for: its str)."""
    return json.dumps(rec, sort_keys=True, default=str)


def timestamp() -> str:
    """Now as a record's ``finished_at`` holds it: UTC, whole seconds, ISO 8601."""
    return datetime.now(UTC).isoformat(timespec="seconds")


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
