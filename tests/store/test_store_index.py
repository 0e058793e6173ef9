"""A store that scales: the records index (records.index.jsonl) makes reading a
results directory fast, and is never trusted for a record whose file changed since it was indexed;
status and report print exactly what they printed from the record files alone."""

import json
import os
import time

import numpy as np
import pandas as pd
import pytest

from rfbench import store
from rfbench.cli import main
from rfbench.experiments import status
from rfbench.protocol import Splits, outer_count_of_key, read_key
from rfbench.registry import load as load_registry
from rfbench.reporting import cells as cells_mod
from rfbench.reporting import report
from rfbench.store import INDEX_NAME, RunDir, load_results, record_key, records_frame
from tests.records import as_record

DATASETS = ("kinematics", "bank", "pumadyn", "elevators")
METHODS = ("rff-gauss", "alc", "gfc")
PROTOCOL = "cv-o5-i3"


def record(ds, meth, n, fold, seed, rng, **extra):
    u = rng.uniform()
    rec = {"dataset": ds, "method": meth, "n_features": n, "fold": fold, "seed": seed, "protocol": PROTOCOL,
           "metric": "rmse100", "task": "regression", "n_train": 900, "n_test": 100, "threads": 1,
           "source": "mirror", "invocation": f"inv{seed}", "finished_at": f"2026-01-0{1 + seed}T10:{fold:02d}:00+00:00"}
    if u < 0.05:
        rec.update(status="error", error=None, total_s=0.5, message="ValueError: boom", traceback="Traceback ...")
    elif u < 0.08:
        rec.update(status="timeout", error=None, total_s=60.0, message="exceeded the timeout of 60 s")
    else:
        rec.update(status="done", error=float(3 + DATASETS.index(ds) + METHODS.index(meth) + rng.normal(0, .3)),
                   total_s=float(rng.uniform(0.1, 2)), tune_s=float(rng.uniform(0, .1)), fit_s=0.05, predict_s=0.01,
                   params=json.dumps({"lambda": float(rng.uniform())}), message="")
        if u < 0.2:
            rec["preprocess_s"] = None           # a None beside a missing field elsewhere
        if u > 0.9:
            rec["shared_fit_s"] = 1.5            # a field only some records have
    rec.update(extra)
    return rec


def write_run(path, seeds=(0, 1), folds=5):
    """4 datasets × 3 methods × 2 n × 5 folds × 2 seeds = 240 records, with errors and timeouts."""
    rng = np.random.default_rng(1)
    run = RunDir(path).ensure()
    for seed in seeds:
        run.write_run_info({"started_at": f"2026-01-0{1 + seed}T09:00:00+00:00", "invocation": f"inv{seed}",
                            "protocol": {"name": "cv", "outer_folds": 5, "inner_folds": 3, "seed": seed,
                                         "repeats": 20, "test_size": 0.3, "max_samples": None},
                            "datasets": list(DATASETS), "methods": list(METHODS), "features": [10, 20],
                            "folds": None})
        for ds in DATASETS:
            for meth in METHODS:
                for n in (10, 20):
                    for fold in range(folds):
                        run.write_record(as_record(record(ds, meth, n, fold, seed, rng)))
    return run.path


def from_files(path) -> list[dict]:
    """Every countable record as the record files hold it, in key order (what the store must return)."""
    out = {}
    for p in (path / "records").glob("*.json"):
        try:
            rec = json.loads(p.read_text())
        except ValueError:
            continue
        if store.record_problem(rec) is None:
            out[p.stem] = rec
    return [out[k] for k in sorted(out)]


def count_file_reads(monkeypatch) -> list[str]:
    reads = []
    real = store.RecordIndex._read_record
    monkeypatch.setattr(store.RecordIndex, "_read_record", lambda self, key: reads.append(key) or real(self, key))
    return reads


def fresh(path) -> RunDir:
    store.OPEN_RUNS.clear()
    return RunDir(path)


def test_writes_append_the_index_and_a_reader_then_reads_no_record_file(tmp_path, monkeypatch):
    path = write_run(tmp_path / "run")
    lines = (path / INDEX_NAME).read_text().splitlines()
    assert len(lines) == 240 and all(json.loads(line)[0] for line in lines)   # one appended line per record
    reads = count_file_reads(monkeypatch)
    run = fresh(path)
    assert run.records() == from_files(path) and reads == []
    pd.testing.assert_frame_equal(run.frame(), records_frame(from_files(path)))
    assert run.done_keys() == {record_key(r["dataset"], r["method"], r["n_features"], r["fold"], r["seed"],
                                          r["protocol"]) for r in from_files(path) if r["status"] == "done"}


def test_a_missing_index_is_rebuilt_as_columns_and_gives_the_same_records(tmp_path, monkeypatch):
    path = write_run(tmp_path / "run")
    (path / INDEX_NAME).unlink()
    reads = count_file_reads(monkeypatch)
    assert fresh(path).records() == from_files(path) and len(reads) == 240   # every file read once ...
    first = (path / INDEX_NAME).read_text().split("\n", 1)[0]
    assert json.loads(first)["format"] == store.INDEX_FORMAT                  # ... and the index rewritten
    reads.clear()
    run = fresh(path)
    assert run.records() == from_files(path) and reads == []
    frame = run.frame()
    pd.testing.assert_frame_equal(frame, records_frame(from_files(path)))
    assert frame.dtypes.to_dict() == records_frame(from_files(path)).dtypes.to_dict()
    # a record's missing field stays missing (not null), a null stays null
    recs = {json.dumps([r["dataset"], r["method"], r["n_features"], r["fold"], r["seed"]]): r for r in run.records()}
    files = {json.dumps([r["dataset"], r["method"], r["n_features"], r["fold"], r["seed"]]): r
             for r in from_files(path)}
    assert all(set(recs[k]) == set(files[k]) for k in files)


def test_a_stale_index_is_detected_and_the_files_win(tmp_path, monkeypatch):
    path = write_run(tmp_path / "run")
    fresh(path).records()                                    # the index is current now
    keys = sorted(p.stem for p in (path / "records").glob("*.json"))
    rng = np.random.default_rng(5)
    # 1. a rerun by another process that does not append (an older version): error → done
    victim = next(k for k in keys if json.loads((path / "records" / f"{k}.json").read_text())["status"] == "error")
    old = json.loads((path / "records" / f"{victim}.json").read_text())
    new = record(old["dataset"], old["method"], old["n_features"], old["fold"], old["seed"], rng, status="done",
                 error=1.25, total_s=1.0, message="")
    store.atomic_write_text(path / "records" / f"{victim}.json", json.dumps(new, sort_keys=True))
    # 2. a record edited in place, same size, its modification time put back (only the change time moves)
    edited = keys[0]
    p = path / "records" / f"{edited}.json"
    st = p.stat()
    text = p.read_text()
    rec = json.loads(text)
    rec["message"] = "x" * len(rec.get("message", ""))       # same length
    rec["n_test"] = 999 if rec["n_test"] != 999 else 998
    edited_text = json.dumps(rec, sort_keys=True)
    assert len(edited_text) == len(text)
    time.sleep(0.05)
    with open(p, "r+") as fh:
        fh.write(edited_text)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))
    # 3. a record deleted (the stale-record advice of a refused combine) and 4. one added by hand
    gone = keys[1]
    (path / "records" / f"{gone}.json").unlink()
    added = record("elevators", "gfc", 30, 0, 0, rng, status="done", error=7.5)
    store.atomic_write_text(path / "records" / "added.json", json.dumps(added))
    run = fresh(path)
    recs = run.records()
    assert recs == from_files(path)
    by_key = dict(zip(sorted(p.stem for p in (path / "records").glob("*.json")), recs, strict=True))
    assert by_key[victim]["status"] == "done" and by_key[edited]["n_test"] == rec["n_test"]
    assert gone not in by_key and by_key["added"]["error"] == 7.5
    pd.testing.assert_frame_equal(run.frame(), records_frame(from_files(path)))
    assert victim in run.done_keys() and gone not in run.done_keys()


def test_a_torn_or_damaged_index_costs_only_speed(tmp_path):
    path = write_run(tmp_path / "run")
    with open(path / INDEX_NAME, "a") as fh:                 # a writer killed mid-append ...
        fh.write('["kinematics__gfc__n10__f0__s0__deadbeef", 1, 2')
    run = RunDir(path)                                       # ... and the next record glued onto it
    run.write_record(as_record(record("bank", "gfc", 30, 0, 0, np.random.default_rng(2), status="done", error=2.0)))
    assert fresh(path).records() == from_files(path)
    fresh(path).records()                                    # rebuilt when too much was unreadable
    (path / INDEX_NAME).write_text((path / INDEX_NAME).read_text()[:5000])   # a truncated index
    assert fresh(path).records() == from_files(path)
    (path / INDEX_NAME).write_text('{"format": "something else"}\n[1, 2]\nnot json\n')
    assert fresh(path).records() == from_files(path)


def test_a_forged_index_line_for_another_version_of_a_file_is_not_trusted(tmp_path):
    path = write_run(tmp_path / "run")
    key = sorted(p.stem for p in (path / "records").glob("*.json"))[0]
    st = (path / "records" / f"{key}.json").stat()
    fake = {**json.loads((path / "records" / f"{key}.json").read_text()), "status": "done", "error": -1.0}
    sig = [st.st_ino, st.st_size, st.st_mtime_ns - 1, st.st_ctime_ns]      # not the file as it is
    with open(path / INDEX_NAME, "a") as fh:
        fh.write(json.dumps([key, *sig, fake]) + "\n")
    assert fresh(path).records() == from_files(path)


def test_an_unwritable_index_is_no_error(tmp_path, monkeypatch):
    path = write_run(tmp_path / "run")
    (path / INDEX_NAME).unlink()
    real = store.atomic_write_text

    def refuse(target, text):
        if str(target).endswith(INDEX_NAME):
            raise OSError(30, "Read-only file system", str(target))
        return real(target, text)

    monkeypatch.setattr(store.index, "atomic_write_text", refuse)      # what the index writes with
    assert fresh(path).records() == from_files(path) and not (path / INDEX_NAME).exists()


def test_records_written_by_another_invocation_appear_in_a_loaded_directory(tmp_path):
    path = write_run(tmp_path / "run", seeds=(0,))
    lane_a, lane_b = RunDir(path), RunDir(path)
    assert len(lane_a.records()) == 120
    lane_b.write_record(as_record(record("bank", "gfc", 30, 0, 0, np.random.default_rng(3), status="done", error=2.0)))
    assert len(lane_a.records()) == 121 and lane_a.records() == from_files(path)
    (path / "records" / f"{record_key('bank', 'gfc', 30, 0, 0, PROTOCOL)}.json").unlink()
    assert len(lane_a.records()) == 120


def _old_summarise(df, alpha=0.05, test="welch"):
    """summarise as it was before it was vectorised (one pandas group per cell): the reference."""
    done = df[df["status"] == "done"].copy()
    done["error"] = done["error"].astype(float)
    done["seed"] = cells_mod.seeds_of(done)
    several = done["seed"].nunique() > 1
    seeds_of = done.groupby("dataset")["seed"].nunique()
    cells, errors = {}, {}
    for (ds, n, meth), g in done.groupby(["dataset", "n_features", "method"], sort=True):
        e = g.set_index(["seed", "fold"] if several else "fold")["error"].sort_index()
        errors[(ds, n, meth)] = e
        per_seed = g.groupby("seed")["error"]
        fold_stds = per_seed.std(ddof=1).dropna()
        means = per_seed.mean()
        counts = {outer_count_of_key(k) for k in g["protocol"]} if "protocol" in g else {None}
        unit = "splits" if "protocol" in g and all(isinstance(read_key(k), Splits) for k in g["protocol"]) else "folds"
        cells[(ds, n, meth)] = report.Cell(
            float(e.mean()), float(fold_stds.mean()) if len(fold_stds) else 0.0, float(g["total_s"].astype(float).mean()),
            int(e.size), expected=None if None in counts else max(counts) * int(seeds_of[ds]), seeds=len(means),
            seed_std=float(means.std(ddof=1)) if len(means) > 1 else None, unit=unit,
            complete=None in counts or int(e.size) >= max(counts) * int(seeds_of[ds]))
    higher = set(done["metric"].dropna()) == {"accuracy"}
    for (ds, n, meth), cell in cells.items():
        others = [k for k in cells if k[0] == ds and k[1] == n and k[2] != meth]
        if others:
            cell.bold = all(_old_lower(cells, errors, (ds, n, meth), o, higher, alpha, test) for o in others)
    return cells, errors, higher


def _old_lower(cells, errors, k, o, higher, alpha, test):
    x, y = (-errors[c] if higher else errors[c] for c in (k, o))
    if not (cells[k].complete and cells[o].complete):      # against a partial cell: on the folds both have
        on = x.index.intersection(y.index)
        x, y = x.loc[on], y.loc[on]
    return report.lower(x, y, alpha, test)


@pytest.mark.parametrize("seeds", [(0,), (0, 1)])
@pytest.mark.parametrize("test", ["welch", "paired"])
def test_summarise_is_the_per_cell_computation_bit_for_bit(tmp_path, seeds, test):
    df = load_results([write_run(tmp_path / "run", seeds=seeds)])
    got, want = report.summarise(df, test=test), _old_summarise(df, test=test)
    assert list(got[0]) == list(want[0]) and [repr(c) for c in got[0].values()] == [repr(c) for c in want[0].values()]
    assert any(c.bold for c in got[0].values()) and any(c.partial for c in got[0].values())
    for k in want[1]:
        pd.testing.assert_series_equal(got[1][k], want[1][k], check_exact=True)
    assert got[2] == want[2]


def cli_output(capsys, *args) -> str:
    main(list(args))
    return capsys.readouterr().out


def test_status_and_report_print_the_same_with_and_without_the_index(tmp_path, capsys, monkeypatch):
    path = str(write_run(tmp_path / "run"))
    commands = [("status", path), ("report", path, "--width", "0"), ("report", path, "--format", "latex"),
                ("report", path, "--format", "csv"), ("report", path, "--test", "paired", "--format", "markdown")]
    store.OPEN_RUNS.clear()
    fast = [cli_output(capsys, *c) for c in commands]
    assert "In all: " in fast[0] and "Wall time of the run" in fast[1]
    # the slow path: every record parsed from its file, the table built from a list of dicts
    (tmp_path / "run" / INDEX_NAME).unlink()
    monkeypatch.setattr(store.RecordIndex, "_read_index", lambda self: (None, {}, 0))
    monkeypatch.setattr(store.RecordIndex, "_write_index", lambda self: None)
    monkeypatch.setattr(RunDir, "frame", lambda self: records_frame(self.records()))
    store.OPEN_RUNS.clear()
    slow = [cli_output(capsys, *c) for c in commands]
    for c, a, b in zip(commands, fast, slow, strict=True):
        assert a == b, c
    assert status.status([path], None, load_registry()).equals(status.status([path], None, load_registry()))


@pytest.mark.parametrize("values", [
    ["2026-01-01T10:00:05+00:00", "2026-01-01T11:00:04+01:00", "2026-01-01T09:59:59+00:00"],
    ["2026-01-01T10:00:05+00:00", "2026-01-01T12:00:04+02:00", "2026-01-01T10:00:04.999999+00:00"],
    ["2026-01-01T10:00:05+00:00", None, "not a time", float("nan"), "2026-01-01T09:00:00-02:00"],
    [None, "garbage"],
])
def test_the_latest_finish_time_is_the_latest_parsed_time(values):
    times = [t for t in map(store.parse_timestamp, values) if t is not None]
    assert store.walltime.latest_time(values) == (max(times) if times else None)


def test_the_end_of_a_run_leaves_the_index_as_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(store.index, "INDEX_APPENDED_MIN", 100)
    run = RunDir(tmp_path / "run").ensure()
    run.write_results_csv()                                  # as the runner does when it starts
    rng = np.random.default_rng(4)
    for fold in range(150):
        run.write_record(as_record(record("bank", "gfc", 10, fold, 0, rng)))
    text = (tmp_path / "run" / INDEX_NAME).read_text()
    assert len(text.splitlines()) == 150 and text.startswith("[")        # appended while it ran
    run.write_results_csv()                                  # the consolidation at its end
    first, *rest = (tmp_path / "run" / INDEX_NAME).read_text().splitlines()
    assert json.loads(first)["format"] == store.INDEX_FORMAT and rest == []
    reads = count_file_reads(monkeypatch)
    assert fresh(tmp_path / "run").records() == from_files(tmp_path / "run") and reads == []
