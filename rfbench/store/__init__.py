"""Results store: one atomically written record per finished task, and a consolidated results.csv.
Its modules, one job each:

* ``atomic``: crash-safe file writes (a temporary file and a rename), the removal of a killed
  writer's temporaries, one flush for many files;
* ``record``: the record of one task (:class:`Record`, its fields defined once), its key, its JSON
  text and the rule that tells a record that can be counted;
* ``table``: the records as one table (results.csv, the frames the readers pool);
* ``index``: the records index that makes reading 100 000 records fast, never trusted when stale;
* ``claims``: one live invocation per task, a claim file with a heartbeat;
* ``rundir``: a results directory (:class:`RunDir`): its layout, its reads and writes;
* ``walltime``: how long a directory's invocations were busy;
* ``merging``: reading and pooling several directories (:func:`load_results`) under shared rules.

Every name the rest of rfbench uses is importable from ``rfbench.store``."""

from rfbench.store import claims, index, rundir, walltime
from rfbench.store.atomic import (
    DISK_FULL,
    TEMPORARY_GRACE_S,
    TEMPORARY_MAX_AGE_S,
    TEMPORARY_NAME,
    atomic_write_text,
    is_disk_full,
    pid_runs,
    remove_stale_temporaries,
    sync_files,
)
from rfbench.store.claims import HEARTBEAT, HEARTBEAT_S, LEASE_S, claim_is_stale
from rfbench.store.index import (
    INDEX_APPENDED_MIN,
    INDEX_FORMAT,
    INDEX_MIN,
    INDEX_NAME,
    RACY_NS,
    RecordIndex,
)
from rfbench.store.merging import CELL, CombineError, device_tasks, load_results, pool_frames
from rfbench.store.record import (
    COLUMNS,
    FILE_ONLY,
    NOT_JSON,
    NUMERIC,
    STATUSES,
    TASK_KEY,
    Record,
    UnreadableRecord,
    on_device,
    record_key,
    record_problem,
    record_text,
    timestamp,
    warn_once,
)
from rfbench.store.rundir import OPEN_RUNS, RunDir, invocations, open_run, recorded_shapes
from rfbench.store.table import read_results_csv, records_frame
from rfbench.store.walltime import parse_timestamp, run_walltime

__all__ = [
    "claims", "index", "rundir", "walltime",  # the modules, for what is not re-exported
    "CELL", "COLUMNS", "DISK_FULL", "FILE_ONLY", "HEARTBEAT", "HEARTBEAT_S", "INDEX_APPENDED_MIN", "INDEX_FORMAT",
    "INDEX_MIN", "INDEX_NAME", "LEASE_S", "NOT_JSON", "NUMERIC", "OPEN_RUNS", "RACY_NS", "STATUSES", "TASK_KEY",
    "TEMPORARY_GRACE_S", "TEMPORARY_MAX_AGE_S", "TEMPORARY_NAME", "CombineError", "Record", "RecordIndex", "RunDir",
    "UnreadableRecord", "atomic_write_text", "claim_is_stale", "device_tasks", "is_disk_full", "invocations", "load_results", "on_device", "open_run", "recorded_shapes",
    "parse_timestamp", "pid_runs", "pool_frames", "read_results_csv", "record_key", "record_problem", "record_text",
    "records_frame", "remove_stale_temporaries", "run_walltime", "sync_files", "timestamp", "warn_once",
]
