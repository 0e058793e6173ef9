"""The store's modules on their own: the claims on a bare directory (no records, no index), and the
record (its fields, its dict and JSON forms, the rule that refuses one that cannot be counted)."""

import dataclasses
import json
import os
import pickle
import socket
import time
from pathlib import Path

import pandas as pd
import pytest

from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.protocol import Protocol
from rfbench.store import (
    COLUMNS,
    Record,
    RunDir,
    UnreadableRecord,
    claims,
    load_results,
    record_problem,
)
from rfbench.store.record import MESSAGE_MAX, TRACEBACK_MAX
from tests.records import as_record

ROOT = Path(__file__).resolve().parents[2]


def test_claims_work_on_a_bare_directory_without_records_or_index(tmp_path):
    mine, theirs = tmp_path / "a.claim", tmp_path / "b.claim"
    assert claims.take(mine) and not claims.take(mine)                 # exclusive: this process holds it
    holder = json.loads(mine.read_text())
    assert holder["host"] == socket.gethostname() and holder["pid"] == os.getpid()
    old = time.time() - claims.LEASE_S - 5
    os.utime(mine, (old, old))
    claims.HEARTBEAT.beat()                                            # what its thread does every HEARTBEAT_S
    assert time.time() - mine.stat().st_mtime < 5 and not claims.claim_is_stale(mine)
    claims.release(mine)
    assert not mine.exists() and mine not in claims.HEARTBEAT.held
    theirs.write_text(json.dumps({"host": "another-machine", "pid": 1, "start": None}))
    assert not claims.claim_is_stale(theirs) and not claims.take(theirs)   # a live lease elsewhere
    os.utime(theirs, (old, old))                                       # ... without a heartbeat since
    assert claims.claim_is_stale(theirs) and claims.take(theirs)
    claims.release(theirs)
    assert list(tmp_path.iterdir()) == []                              # no records/, no index was made


TASK = {"dataset": "friedman-generated", "method": "rff-gauss", "n_features": 10, "fold": 1, "seed": 0,
        "protocol": "cv-o3-i3-max300"}


def test_the_columns_are_the_record_s_fields_and_the_committed_tables_header():
    assert COLUMNS == [f.name for f in dataclasses.fields(Record)][:len(COLUMNS)]
    tables = sorted(ROOT.glob("results/*/results.csv"))
    if not tables:
        pytest.skip("no committed results in this checkout")
    for path in tables:
        assert pd.read_csv(path, nrows=0).columns.tolist() == COLUMNS, path


def test_a_worker_s_failed_records_are_records_with_every_field():
    """What rfbench.execution.tasks.execute returns for a task that fails at once is a record of every column
    (and its traceback), which Record reads and writes back unchanged."""
    options = WorkerOptions(Protocol("cv", outer_folds=3), DataSources((), None), 1, None, registry.load())
    records = execute(WorkItem("no-such-dataset", "rff-gauss", 1, (10, 20)), options)
    for rec in records:
        assert isinstance(rec, Record)
        rec = rec.to_dict()
        assert rec["status"] == "error" and rec["traceback"]
        assert set(rec) - set(COLUMNS) == {"traceback", "device"}     # the file-only fields it sets
        assert set(COLUMNS) <= set(rec)
        assert Record.from_dict(rec).to_dict() == rec


def test_record_dict_and_json_forms_round_trip_and_keep_unknown_fields():
    rec = Record(**TASK, status="done", error=1.25, total_s=0.5, n_train=200, n_test=100, invocation="abc",
                 finished_at="2026-01-01T10:00:00+00:00", extra={"future_field": [1, 2]})
    d = rec.to_dict()
    assert set(d) == {*COLUMNS, "invocation", "future_field"}         # a file-only field only when set
    assert Record.from_dict(d) == rec and Record.from_json(rec.to_json()) == rec
    assert pickle.loads(pickle.dumps(rec)) == rec                      # what a worker process sends back
    assert rec.key == Path(RunDir("x").record_path(TASK)).stem
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.status = "error"
    assert rec.replace(status="error").status == "error" and rec.status == "done"


@pytest.mark.parametrize("text", ['{"dataset": "d"}', "[1, 2]", '{"dataset": "d", "method": "m", "n_feat',
                                  json.dumps({**TASK, "status": "done", "error": "nan?"})])
def test_a_record_that_cannot_be_counted_is_refused_naming_why(text):
    with pytest.raises(UnreadableRecord) as err:
        Record.from_json(text)
    try:
        expected = record_problem(json.loads(text))
    except ValueError:
        expected = "not a JSON record (JSONDecodeError)"
    assert str(err.value) == expected


def test_a_failed_record_and_the_pool_s_dict_load_as_the_same_table(tmp_path):
    """Record.failed in place of the dict the local pool writes for a worker that died (it lacks
    the outcome columns; the Record has them, empty): the same table either way."""
    literal = {**TASK, "status": "error", "threads": 1, "message": "worker failed: boom",
               "finished_at": "2026-01-01T10:00:00+00:00"}
    built = Record.failed(**TASK, threads=1, status="error", message="worker failed: boom",
                          finished_at="2026-01-01T10:00:00+00:00")
    assert {k: v for k, v in built.to_dict().items() if v is not None} == literal
    frames = []
    for name, rec in (("dict", literal), ("record", built)):
        run = RunDir(tmp_path / name).ensure()
        run.write_record(as_record(rec))
        done = dict(TASK, fold=0, status="done", error=1.0, total_s=0.1, n_train=200, n_test=100)
        run.write_record(as_record(done))
        frames.append(load_results([run.path]))
        assert run.read(built.key) == built and not run.is_done(built.key) and run.is_done(Record(**done).key)
    pd.testing.assert_frame_equal(*frames)


def test_a_written_record_s_file_is_its_json_text(tmp_path):
    rec = Record.base(**TASK, threads=2).replace(status="done", error=2.0, total_s=0.3)
    run = RunDir(tmp_path / "run").ensure()
    run.write_record(as_record(rec))
    path = run.record_path(rec)
    assert path.read_text() == rec.to_json() == json.dumps(rec.to_dict(), sort_keys=True)
    assert run.records() == [rec.to_dict()]


def test_a_run_directory_let_go_of_is_freed_at_once_with_its_records(tmp_path):
    """No reference cycle through the index: 100 000 records held by a dropped RunDir would stay
    in memory until the cyclic collector runs (and slow every collection until then)."""
    import gc
    import weakref

    run = RunDir(tmp_path / "run").ensure()
    run.write_record(Record.base(**TASK, threads=1))
    assert len(run.records()) == 1
    gone = weakref.ref(run)
    gc.disable()
    try:
        del run
        assert gone() is None
    finally:
        gc.enable()


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_written_files_follow_the_umask(tmp_path, umask, mode):
    """Atomic writes go through mkstemp (0600): the file renamed into place gets the mode a plain open()
    would give it, so a shared --out or a site is readable as the user's umask allows."""
    import subprocess
    import sys

    code = ("import os, sys; os.umask(int(sys.argv[2], 8))\n"
            "from rfbench.store.atomic import atomic_write_text\n"
            "atomic_write_text(sys.argv[1], 'x')\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "f.txt"), oct(umask)[2:]], check=True)
    assert (tmp_path / "f.txt").stat().st_mode & 0o777 == mode


def test_a_failing_record_keeps_the_start_of_its_message_and_the_end_of_its_traceback():
    rec = Record.base(**TASK, threads=1)
    failed = rec.failing("timeout", "m" * 600 + "tail", "head" + "t" * 4000, total_s=2.0)
    assert (failed.status, failed.total_s) == ("timeout", 2.0)
    assert failed.message == "m" * MESSAGE_MAX and failed.traceback == "t" * TRACEBACK_MAX
    assert rec.status == "error" and rec.message == ""              # a new value; the old one unchanged
    with pytest.raises(ValueError, match="error or timeout"):
        rec.failing("done", "")


def test_a_sign_fitted_task_is_told_by_one_definition():
    from rfbench.store.record import SIGN_FIT, fitted_by_sign

    assert fitted_by_sign("classification" + SIGN_FIT)
    assert not any(fitted_by_sign(t) for t in ("classification", "regression", None, float("nan")))


def test_write_record_takes_a_record_only(tmp_path):
    run = RunDir(tmp_path / "run").ensure()
    with pytest.raises(TypeError, match="takes a Record, not dict"):
        run.write_record(dict(TASK))
    assert not list(run.records_dir.glob("*.json"))
