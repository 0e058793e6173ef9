"""Every input a user can give is validated once, with one line (exit 2), never a traceback and
never a silent surprise: registry names and mirror paths, methods.yaml estimators, numeric options,
empty lists, data directories, empty or damaged results directories, and a disk that fills up."""

import dataclasses
import errno
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from rfbench import registry
from rfbench.cli import MAX_TIMEOUT_S, parse_duration
from rfbench.errors import UsageError
from rfbench.registry import load as load_registry
from rfbench.reporting import cells
from rfbench.store import RunDir, atomic_write_text
from tests.records import as_record

ROOT = Path(__file__).resolve().parents[2]
RUN = [sys.executable, "-m", "rfbench.cli"]
TINY = ["--features", "10", "--outer-folds", "2", "--inner-folds", "2", "--max-samples", "100", "--quiet",
        "--no-report"]
SHA = "a" * 64


def rfbench(*args, env=None, cwd=None):
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=600, env=full_env, cwd=cwd)


def one_line_error(res, message: str) -> str:
    """The run failed with exit 2 and exactly one stderr line, ``rfbench: error: ...message...``."""
    assert res.returncode == 2, (res.returncode, res.stdout[-1000:], res.stderr[-2000:])
    lines = res.stderr.strip().splitlines()
    assert "Traceback" not in res.stderr and len(lines) == 1, res.stderr
    assert lines[0].startswith("rfbench: error: ") and message in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def custom_registry(tmp_path, monkeypatch):
    """Write a datasets.yaml (suite 's') and point the registry at it, in-process and for subprocesses."""
    def make(entries: str) -> Path:
        path = tmp_path / "datasets.yaml"
        path.write_text("suites: {s: test}\ndatasets:\n" + entries)
        monkeypatch.setenv("RFBENCH_DATASETS_YAML", str(path))     # read whenever a registry is built
        return path
    return make


def generated(name: str) -> str:
    return (f"  {name!r}:\n    task: regression\n    suites: [s]\n    shape: [200, 10]\n    target: y\n"
            "    generator: friedman\n")


def mirrored(name: str, file: str, append: str = "") -> str:
    extra = f", append: [{{file: {append!r}, sha256: {SHA}}}]" if append else ""
    return (f"  {name}:\n    task: regression\n    suites: [s]\n    shape: [10, 2]\n    target: y\n"
            f"    mirror: {{file: {file!r}, format: csv, sha256: {SHA}{extra}}}\n")


# -- 1. unsafe dataset / method names; nothing is written outside --out -----------------------------

@pytest.mark.parametrize("name", ["../../escape", "a/b", "..", ".hidden", "a..b", "x y", "a\\b", "ok;rm"])
def test_unsafe_dataset_name_is_refused_when_the_registry_loads(custom_registry, name):
    custom_registry(generated(name))
    with pytest.raises(UsageError, match="dataset name .* is not allowed"):
        registry.load()


def test_safe_names_still_load(custom_registry):
    custom_registry(generated("a.b-c_9") + generated("Z"))
    assert set(registry.load().datasets) == {"a.b-c_9", "Z"}


def test_escaping_dataset_name_through_the_cli_writes_nothing_outside_out(custom_registry, tmp_path):
    custom_registry(generated("../../escape"))
    out = tmp_path / "a" / "b" / "out"
    res = rfbench("run", "--datasets", "../../escape", "--methods", "rff-gauss", *TINY, "--out", str(out))
    one_line_error(res, "dataset name '../../escape' is not allowed")
    assert not list(tmp_path.rglob("*.json")) and not list(tmp_path.rglob("escape*"))


def test_unsafe_method_name_is_refused(tmp_path):
    methods = tmp_path / "methods.yaml"
    methods.write_text("'../evil':\n  estimator: rfbench.methods.rff:RFFRegressor\n")
    res = rfbench("methods", env={"RFBENCH_METHODS_YAML": str(methods)})
    one_line_error(res, "method name '../evil' is not allowed")


def test_store_refuses_every_path_outside_the_run_directory(tmp_path):
    """Defence in depth: even a record that slipped past the registry cannot leave --out."""
    run = RunDir(tmp_path / "run").ensure()
    rec = {"dataset": "../../escape", "method": "m", "n_features": 1, "fold": 0, "seed": 0, "protocol": "cv",
           "status": "done", "error": 1.0, "total_s": 1.0}
    with pytest.raises(UsageError, match="outside the results directory"):
        run.write_record(as_record(rec))
    with pytest.raises(UsageError, match="outside the results directory"):
        run.write_folds("../../escape", [0, 1])
    with pytest.raises(UsageError, match="outside the results directory"):
        run.claim("../../escape")
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []
    run.write_record(as_record(dict(rec, dataset="fine")))          # a safe record is still written
    # records/ is now known to be inside: a link planted there still cannot lead out
    (tmp_path / "outside.claim").write_text("")
    (run.records_dir / "linked.claim").symlink_to(tmp_path / "outside.claim")
    with pytest.raises(UsageError, match="outside the results directory"):
        run.claim("linked")
    assert len(list(run.records_dir.glob("*.json"))) == 1


# -- 2. a mirror path that leaves the data directory ------------------------------------------------

@pytest.mark.parametrize("file, append", [("../../etc/passwd", ""), ("/etc/passwd", ""), ("a/../../b.csv", ""),
                                          ("ok.csv", "../other.csv"), ("~/x.csv", "")])
def test_mirror_path_leaving_the_data_directory_is_refused_when_the_registry_loads(custom_registry, file, append):
    custom_registry(mirrored("leaky", file, append))
    with pytest.raises(UsageError, match="entry 'leaky': field 'mirror.file' must be a path relative to the data"):
        registry.load()


def test_mirror_path_outside_through_the_cli(custom_registry):
    custom_registry(mirrored("passwd", "../../etc/passwd"))
    res = rfbench("datasets", "fetch", "passwd", "--data-dir", "/usr/share")
    one_line_error(res, "field 'mirror.file'")


def test_loader_refuses_a_mirror_path_outside_the_data_directory(tmp_path):
    """Defence in depth: a Dataset built without the registry's check still cannot read outside."""
    from rfbench.data.loader import _from_mirror
    from rfbench.registry import Dataset, Mirror

    ds = Dataset("x", "regression", ("s",), (10, 2), "y", mirror=Mirror("../outside.csv", SHA, "csv"))
    (tmp_path / "outside.csv").write_text("a,b,y\n")
    (tmp_path / "mirror").mkdir()
    with pytest.raises(UsageError, match="outside the data directory"):
        _from_mirror(ds, tmp_path / "mirror")


def test_unknown_generator_is_refused_when_the_registry_loads(custom_registry):
    custom_registry(generated("g").replace("friedman", "nosuch"))
    with pytest.raises(UsageError, match="entry 'g': field 'generator' must be one of breiman, friedman"):
        registry.load()


# -- 3. a methods.yaml module or class that does not exist ------------------------------------------

@pytest.fixture
def bad_methods(tmp_path):
    path = tmp_path / "methods.yaml"
    path.write_text((ROOT / "methods.yaml").read_text()
                    + "\nnomod:\n  estimator: rfbench.methods.nosuch:Thing\n"
                    + "nocls:\n  estimator: rfbench.methods.rff:NoSuchClass\n")
    return path


@pytest.mark.parametrize("method, message", [
    ("nomod", "entry 'nomod': estimator 'rfbench.methods.nosuch:Thing': cannot import module 'rfbench.methods.nosuch'"),
    ("nocls", "entry 'nocls': estimator 'rfbench.methods.rff:NoSuchClass': module 'rfbench.methods.rff' has no "
              "class 'NoSuchClass'"),
])
@pytest.mark.slow
def test_missing_estimator_module_or_class_fails_before_any_task(bad_methods, tmp_path, method, message):
    out = tmp_path / "out"
    res = rfbench("run", "--suite", "synthetic", "--methods", f"rff-gauss,{method}", *TINY, "--out", str(out),
                  env={"RFBENCH_METHODS_YAML": str(bad_methods)})
    one_line_error(res, message)
    assert not out.exists()                      # nothing ran, nothing was written


def test_malformed_estimator_path_is_refused_when_the_registry_loads(tmp_path):
    path = tmp_path / "methods.yaml"
    path.write_text("x:\n  estimator: 'rfbench/methods:RFF'\n")
    one_line_error(rfbench("methods", env={"RFBENCH_METHODS_YAML": str(path)}),
                   "entry 'x': field 'estimator' must name 'package.module:Class'")


# -- 4. numeric options ---------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--seed", "-1"], "--seed -1 must be an integer from 0 to 2**32 - 1"),
    (["--seed", str(2**32)], "--seed 4294967296 must be"),
    (["--threads", "-1"], "--threads -1 must be at least 1; give the threads per worker, or leave it out for cores // jobs"),
    (["--threads", "0"], "--threads 0 must be at least 1; give the threads per worker"),
    (["--repeats", "0"], "--repeats 0 must be at least 1"),
    (["--repeats", "0", "--protocol", "splits"], "--repeats 0 must be at least 1"),
    (["--jobs", "0"], "--jobs 0 must be at least 1; give the worker processes to run, or leave it out for one per core"),
    (["--max-samples", "1"], "--max-samples 1 must be at least 2"),
    (["--max-samples", "0"], "--max-samples 0 must be at least 2"),
    (["--test-size", "1.5"], "--test-size 1.5 must be between 0 and 1"),
    (["--test-size", "0", "--protocol", "holdout"], "--test-size 0 must be between 0 and 1"),
    (["--test-size", "0.001", "--protocol", "splits"], "leaves 0 test and 100 training rows"),
    (["--timeout", "99999999999h"], "--timeout '99999999999h' is longer than 30 days (720h)"),
    (["--features", "99999999999999999999"], "--features '99999999999999999999' must be integers of at least 1 and at most 1000000 each"),
])
@pytest.mark.slow
def test_bad_numeric_option_is_one_line(tmp_path, args, message):
    out = tmp_path / "out"
    res = rfbench("run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY, *args, "--out", str(out))
    one_line_error(res, message)
    assert not list(out.glob("records/*.json"))


def test_every_count_option_records_where_its_value_came_from():
    """A Count names $RFBENCH_JOBS only when the value came from there: its option must be a CountOption."""
    from rfbench.cli import cli
    from rfbench.cli.options import Count, CountOption

    def params(command):
        yield from ((command.name, p) for p in command.params)
        for sub in getattr(command, "commands", {}).values():
            yield from params(sub)

    counts = [(name, p) for name, p in params(cli) if isinstance(p.type, Count)]
    assert len(counts) >= 4
    assert [(name, p.name) for name, p in counts if not isinstance(p, CountOption)] == []


# -- 5. empty lists ---------------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    (["--datasets", ""], "--datasets is empty"),
    (["--datasets", " , "], "--datasets is empty"),
    (["--suite", ""], "--suite is empty"),
    (["--methods", ""], "--methods is empty"),
    (["--suite", "synthetic", "--datasets", "friedman-generated,breiman"], "--datasets breiman not in suite 'synthetic'"),
])
@pytest.mark.slow
def test_empty_or_mismatched_lists_are_refused(tmp_path, args, message):
    res = rfbench("run", *TINY, *args, "--out", str(tmp_path / "out"))
    one_line_error(res, message)
    assert not (tmp_path / "out").exists()


def test_no_datasets_and_no_suite_still_runs_the_default_suite(tmp_path):
    out = tmp_path / "default"
    res = rfbench("run", "--methods", "rff-gauss", *TINY, "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert set(pd.read_csv(out / "results.csv")["dataset"]) == {"breiman-generated", "friedman-generated"}


# -- 6. a data directory that does not exist --------------------------------------------------------

@pytest.mark.slow
def test_missing_data_dir_option_is_refused(tmp_path):
    out = tmp_path / "out"
    res = rfbench("run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY, "--out", str(out),
                  "--data-dir", "/nonexistent")
    one_line_error(res, "--data-dir /nonexistent is not a directory (missing)")
    assert not out.exists()
    afile = tmp_path / "file"
    afile.write_text("")
    one_line_error(rfbench("datasets", "info", "breiman", "--data-dir", str(afile)), "is not a directory (a file)")
    one_line_error(rfbench("datasets", "fetch", "breiman", "--data-dir", ""), "--data-dir is empty")


def test_missing_data_dir_in_the_environment_is_refused_with_how_to_fix(tmp_path):
    res = rfbench("run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY,
                  "--out", str(tmp_path / "out"), env={"RFBENCH_DATA_DIR": "/nonexistent"})
    line = one_line_error(res, "RFBENCH_DATA_DIR=/nonexistent is not a directory")
    assert "unset it" in line
    one_line_error(rfbench("datasets", "info", "breiman", env={"RFBENCH_DATA_DIR": "/nonexistent"}),
                   "RFBENCH_DATA_DIR=/nonexistent")


# -- 7. status on an empty directory ----------------------------------------------------------------

def test_status_of_an_empty_directory_is_one_line(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    one_line_error(rfbench("status", str(empty)), f"no run in {empty} yet")


# -- 8. damaged records and results tables ----------------------------------------------------------

def _record(method, fold, **kw):
    rec = {"dataset": "friedman-generated", "method": method, "n_features": 10, "fold": fold, "seed": 0,
           "protocol": "cv-o3-i2", "status": "done", "metric": "rmse100", "error": 10.0 + fold, "total_s": 1.0,
           "tune_s": 0.5, "n_train": 90, "n_test": 10, "finished_at": "2026-01-01T00:00:00+00:00"}
    return rec | kw


BAD_RECORDS = {
    "no-error": ({"error": None}, "field 'error' of a done record is missing"),
    "text-error": ({"error": "abc"}, "field 'error' of a done record is not a finite number ('abc')"),
    "weird-status": ({"status": "weird"}, "field 'status' is 'weird'"),
    "text-time": ({"total_s": "slow"}, "field 'total_s' of a done record is not a finite number ('slow')"),
    "text-n": ({"n_features": "ten"}, "field 'n_features' is not an integer >= 1 ('ten')"),
    "no-method": ({"method": None}, "field 'method' is missing"),
    "text-n-test": ({"n_test": "ten"}, "field 'n_test' of a done record is not a positive integer ('ten')"),
}


@pytest.fixture
def damaged_run(tmp_path):
    run = tmp_path / "damaged"
    (run / "records").mkdir(parents=True)
    for m in ("rff-gauss", "rff-cauchy"):
        for f in range(3):
            (run / "records" / f"{m}-{f}.json").write_text(json.dumps(_record(m, f, error=10.0 + f + (m == "rff-cauchy"))))
    for name, (change, _) in BAD_RECORDS.items():
        rec = {k: v for k, v in (_record("rff-gauss", 3) | change).items() if v is not None}
        (run / "records" / f"{name}.json").write_text(json.dumps(rec))
    (run / "records" / "list.json").write_text("[1, 2]")
    (run / "records" / "garbage.json").write_bytes(b"\x00\xffnot json")
    (run / "runs.jsonl").write_text('{"started_at": "2026-01-01T00:00:00+00:00"}\nnot json\n')
    return run


def _warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("warning: ")]


@pytest.mark.slow
def test_report_skips_damaged_records_with_one_warning_each_and_counts_the_rest(damaged_run):
    res = rfbench("report", str(damaged_run), "--format", "csv")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    warnings = _warnings(res.stderr)
    for name, (_, field) in BAD_RECORDS.items():
        assert any(f"{name}.json" in w and field in w for w in warnings), (name, warnings)
    assert any("list.json" in w and "not a JSON object" in w for w in warnings)
    assert any("garbage.json" in w and "not a JSON record" in w for w in warnings)
    assert len(warnings) == len(BAD_RECORDS) + 2 and len(res.stderr.strip().splitlines()) == len(warnings)
    table = pd.read_csv(io.StringIO(res.stdout))
    assert sorted(table["folds"]) == [3, 3]                  # the good records still count
    text = rfbench("report", str(damaged_run))                  # text format: wall time from runs.jsonl too
    assert text.returncode == 0 and "Traceback" not in text.stderr
    assert any("runs.jsonl line 2" in w for w in _warnings(text.stderr))


@pytest.mark.slow
def test_check_and_status_skip_damaged_records(damaged_run):
    res = rfbench("check", str(damaged_run), "--spec", "gfc2016-table1")
    assert res.returncode in (0, 1) and "Traceback" not in res.stderr, res.stderr
    assert any("text-error.json" in w for w in _warnings(res.stderr))
    (damaged_run / "runs.jsonl").unlink()                   # (status reads runs.jsonl as it is)
    res = rfbench("status", str(damaged_run))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr


def test_results_csv_with_garbage_rows_is_read_with_one_warning(tmp_path):
    run = tmp_path / "csvonly"
    run.mkdir()
    rows = [_record("rff-gauss", f) for f in range(3)] + [_record("rff-gauss", 3, error="abc"),
                                                          _record("rff-gauss", 4, status="weird")]
    pd.DataFrame(rows).to_csv(run / "results.csv", index=False)
    res = rfbench("report", str(run), "--format", "csv")
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
    warnings = _warnings(res.stderr)
    assert len(warnings) == 1 and "results.csv" in warnings[0] and "2 of 5 row(s)" in warnings[0]
    assert "row 5: field 'error'" in warnings[0]
    assert list(pd.read_csv(io.StringIO(res.stdout))["folds"]) == [3]


@pytest.mark.slow
def test_results_csv_that_is_not_a_table_is_one_line(tmp_path):
    run = tmp_path / "broken"
    run.mkdir()
    (run / "results.csv").write_text('garbage\n"a,b\n')
    one_line_error(rfbench("report", str(run)), "results.csv is not a results table")
    one_line_error(rfbench("check", str(run), "--spec", "gfc2016-table1"), "results.csv is not a results table")


def test_only_damaged_records_is_the_no_results_line(tmp_path):
    run = tmp_path / "allbad"
    (run / "records").mkdir(parents=True)
    (run / "records" / "x.json").write_text(json.dumps(_record("rff-gauss", 0, error="abc")))
    res = rfbench("report", str(run))
    assert res.returncode == 2 and "Traceback" not in res.stderr
    assert res.stderr.strip().splitlines()[-1].startswith("rfbench: error: no results in")


# -- 9. disk full during a run ----------------------------------------------------------------------

def test_atomic_write_that_fails_keeps_the_old_file_and_leaves_no_temp(tmp_path, monkeypatch):
    target = tmp_path / "results.csv"
    target.write_text("old\n")

    def full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(OSError) as info:
        atomic_write_text(target, "new\n" * 1000)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(target)
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["results.csv"]


@pytest.mark.parametrize("victim", ["record", "results.csv"])
def test_disk_full_during_a_run_stops_with_one_line_and_resumes(tmp_path, monkeypatch, capsys, victim):
    from rfbench import cli

    out = tmp_path / "full"
    args = ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss", "--features", "10",
            "--outer-folds", "3", "--inner-folds", "2", "--max-samples", "100", "--quiet", "--no-report",
            "--out", str(out)]
    real_replace = os.replace
    writes = {"n": 0}

    def replace(src, dst, *a, **k):
        dst_s = str(dst)
        hit = (dst_s.endswith(".json") and f"{os.sep}records{os.sep}" in dst_s) if victim == "record" \
            else dst_s.endswith("results.csv")
        if hit:
            writes["n"] += 1
            # the first record is written, the second fails; results.csv: the initial write
            # succeeds, the consolidation at the end of the run fails
            if writes["n"] >= 2:
                raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst, *a, **k)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(SystemExit) as exc:
        cli.main(args)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rfbench: error: disk full while writing "), err
    assert "finished tasks are saved; free space and re-run" in err[0]
    assert (str(out / "records") if victim == "record" else str(out / "results.csv")) in err[0]
    # nothing partial: no temp file, no claim, every record whole
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp") or p.name.endswith(".claim")]
    records = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")]
    assert len(records) == (1 if victim == "record" else 3) and all(r["status"] == "done" for r in records)
    # the last complete table: the first task's (consolidated after the record failure), or the empty one
    assert len(pd.read_csv(out / "results.csv")) == (1 if victim == "record" else 0)
    monkeypatch.setattr(os, "replace", real_replace)
    cli.main(args)                                           # space freed: the same command resumes
    assert len(pd.read_csv(out / "results.csv")) == 3


# -- 10. faults of the torture run ------------------------------------------------

def test_timeout_is_bounded_at_thirty_days():
    assert parse_duration("720h") == MAX_TIMEOUT_S == 30 * 86400
    with pytest.raises(UsageError, match="--timeout '720h1s' is longer than 30 days"):
        parse_duration("720h1s")


@pytest.fixture
def finished_run(tmp_path):
    """A results directory of three finished records (enough to report and plot)."""
    run = tmp_path / "finished"
    (run / "records").mkdir(parents=True)
    for f in range(3):
        (run / "records" / f"rff-gauss-{f}.json").write_text(json.dumps(_record("rff-gauss", f)))
    return run


@pytest.mark.parametrize("args, message", [
    (["run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY, "--out", ""], "--out is empty"),
    (["reproduce", "eerf2018-claim", "--ci", "--out", ""], "--out is empty"),
    (["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--out", ""], "--out is empty"),
    (["report", "{run}", "--output", ""], "--output is empty; name a file"),
    (["compare", "report", "{run}", "--output", ""], "--output is empty; name a file"),
    (["plot", "{run}", "--output", ""], "--output is empty; name the directory"),
    (["compare", "plot", "{run}", "--output", ""], "--output is empty; name the directory"),
])
def test_an_empty_out_or_output_is_refused_and_writes_nothing_here(finished_run, tmp_path, args, message):
    here = tmp_path / "here"         # the current directory, where an empty path would write
    here.mkdir()
    one_line_error(rfbench(*(str(finished_run) if a == "{run}" else a for a in args), cwd=here), message)
    assert list(here.iterdir()) == []


@pytest.mark.parametrize("command", [["report"], ["compare", "report"]])
def test_output_file_in_a_missing_directory_is_refused_and_not_created(finished_run, tmp_path, command):
    target = tmp_path / "missing" / "dir" / "x.tex"
    one_line_error(rfbench(*command, str(finished_run), "--output", str(target)),
                   f"--output {target}: directory {target.parent} does not exist; create it first")
    assert not (tmp_path / "missing").exists()


def test_report_output_that_is_a_directory_is_refused(finished_run, tmp_path):
    one_line_error(rfbench("report", str(finished_run), "--output", str(tmp_path)),
                   f"--output {tmp_path} is a directory; name a file")


def test_plot_output_that_is_a_file_or_under_a_missing_directory_is_refused(finished_run, tmp_path):
    afile = tmp_path / "figures.png"
    afile.write_text("keep")
    one_line_error(rfbench("plot", str(finished_run), "--output", str(afile)),
                   f"--output {afile} is a file, not a directory")
    assert afile.read_text() == "keep"
    nested = tmp_path / "missing" / "plots"
    one_line_error(rfbench("plot", str(finished_run), "--output", str(nested)),
                   f"--output {nested}: directory {nested.parent} does not exist")
    assert not nested.parent.exists()
    res = rfbench("plot", str(finished_run), "--kind", "walltime", "--output", str(tmp_path / "plots"))
    assert res.returncode == 0 and (tmp_path / "plots").is_dir(), res.stderr     # the one directory is created


def test_a_record_nested_too_deep_to_parse_is_skipped_with_one_warning_and_the_run_resumes(tmp_path):
    out = tmp_path / "deep"
    (out / "records").mkdir(parents=True)
    (out / "records" / "deep.json").write_text("[" * 200_000)    # json.loads: RecursionError, not ValueError
    warning = f"warning: skipped {out / 'records' / 'deep.json'}: not a JSON record (RecursionError)"
    res = rfbench("run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY, "--out", str(out))
    assert res.returncode == 0 and res.stderr.strip().splitlines() == [warning], res.stderr
    assert len(pd.read_csv(out / "results.csv")) == 2
    res = rfbench("report", str(out), "--format", "csv")
    assert res.returncode == 0 and res.stderr.strip().splitlines() == [warning], res.stderr
    assert list(pd.read_csv(io.StringIO(res.stdout))["folds"]) == [2]


def test_a_registry_file_that_is_not_utf8_is_one_line(tmp_path):
    latin1 = tmp_path / "mine.yaml"
    latin1.write_bytes("methods: {}\n# Gaußkern\n".encode("latin-1"))
    one_line_error(rfbench("methods", "--registry", str(latin1)),
                   f"{latin1} is not UTF-8 text (byte 17 is 0xdf); save it as UTF-8")


def _spec_with(tmp_path, field: str, value) -> Path:
    """bench/eerf2018-claim.yaml with ``field`` (``section.field`` inside a mapping) set to ``value``."""
    import yaml

    raw = yaml.safe_load((ROOT / "bench" / "eerf2018-claim.yaml").read_text())
    *sections, key = field.split(".")
    target = raw
    for section in sections:
        target = target.setdefault(section, {})
    target[key] = value
    path = tmp_path / "wrong.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


@pytest.mark.parametrize("field, value, message", [
    ("run", 5, "field 'run' must be a mapping, not int 5"),
    ("protocol", 5, "field 'protocol' must be a mapping, not int 5"),
    ("protocol.outer_folds", "abc", "field 'protocol.outer_folds' must be a whole number at least 2, not str 'abc'"),
    ("ci", "x", "field 'ci' must be a mapping, not str 'x'"),
    ("ci.atol", "abc", "field 'ci.atol' must be a number at least 0, not str 'abc'"),
    ("ci.reference", 5, "field 'ci.reference' must be the CSV of every task's error (relative to the spec), not int 5"),
    ("tolerance", 5, "field 'tolerance' must be a mapping, not int 5"),
    ("tolerance.stds", True, "field 'tolerance.stds' must be a number at least 0, not bool True"),
    ("results", 5, "field 'results' must be text, not int 5"),
    ("methods", 5, "field 'methods' must be a mapping, not int 5"),
    ("also_reads", 5, "field 'also_reads' must be a list, not int 5"),
    ("metric", [1], "field 'metric' must be one of " + ", ".join(cells.METRICS) + ", not list [1]"),
    ("columns.std", 5, "field 'columns.std' must be text, not int 5"),
    ("chosen.param", 5, "field 'chosen.param' must be text, not int 5"),
    ("tolerance.holdout_ses", "x", "field 'tolerance.holdout_ses' must be a number above 0, not str 'x'"),
    ("test.why", 5, "field 'test.why' must be text, not int 5"),
])
def test_a_spec_field_of_the_wrong_type_is_one_line_naming_it(tmp_path, field, value, message):
    from rfbench.experiments.spec import load_spec

    with pytest.raises(UsageError) as info:
        load_spec(str(_spec_with(tmp_path, field, value)), load_registry())
    assert str(info.value) == f"wrong.yaml: {message}"


@pytest.mark.parametrize("field, value, message", [
    ("tolerance.sds", 2, "unknown field(s) tolerance.sds; allowed: stds, relative, holdout_ses, why"),
    ("columns.men", "m", "unknown field(s) columns.men; allowed: dataset, method, mean, n_features, std, walltime, "
                         "std_is, wide, times"),
    ("chosen.param", "order", "missing fields 'chosen.published' (text), 'chosen.dataset_column' (text), "
                              "'chosen.value_column' (text), 'chosen.method' (text)"),
    ("published_summary.file", "x.csv", "missing fields 'published_summary.mean' (the column of the printed means), "
                                        "'published_summary.rank' (the column of the printed average ranks)"),
    ("wilcoxon", [{"a": "x", "n_a": 1, "b": "y"}], "missing field 'wilcoxon[0].n_b' (a whole number)"),
    ("wilcoxon", [{"a": "x", "n_a": "1", "b": "y", "n_b": 2}], "field 'wilcoxon[0].n_a' must be a whole number, "
                                                               "not str '1'"),
    ("wilcoxon", [5], "field 'wilcoxon[0]' must be a mapping of a, n_a, b, n_b (and optionally published_T, "
                      "published_datasets), not int 5"),
    ("reasons", {"x": 5}, "reasons must map datasets to {paper method: {text, command, results}}"),
    ("reasons", {"nope": {"A": "why"}}, "reasons names nope, not among the spec's datasets"),
    ("reasons", {"*": {"A": "why"}}, "field 'reasons.*.A' must be a mapping of text, command, results (and optionally "
                                     "measured), not str 'why'"),
    ("reasons", {"*": {"A": {"text": "t", "command": "c", "results": "r", "why": 1}}},
     "unknown field(s) reasons.*.A.why; allowed: text, command, results, measured"),
])
def test_a_spec_section_is_built_and_checked_in_one_place(tmp_path, field, value, message):
    """Each section (tolerance, test, columns, chosen, published_summary, wilcoxon) is a frozen
    dataclass of spec.py, and reasons a checked mapping, all built in load_spec: an unknown or
    missing field is one line naming it."""
    from rfbench.experiments.spec import load_spec

    with pytest.raises(UsageError) as info:
        load_spec(str(_spec_with(tmp_path, field, value)), load_registry())
    assert str(info.value) == f"wrong.yaml: {message}"


def test_a_spec_reads_its_sections_as_attributes():
    from rfbench.experiments.spec import Columns, TTest, WilcoxonClaim, load_spec

    spec = load_spec("gfc2016-table1", load_registry())
    assert spec.columns == Columns(dataset="dataset", n_features="n_features", method="method", mean="error_mean",
                                   std="error_std", walltime="walltime_s")
    assert spec.test.name == "welch" and isinstance(spec.test, TTest) and spec.tolerance.stds == 2.0
    assert spec.wilcoxon[0] == WilcoxonClaim("gfc", 500, "alc", 100, published_T=28, published_datasets=16)
    assert spec.chosen is None and spec.published_summary is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.tolerance.stds = 3.0


@pytest.mark.parametrize("field, value, message", [
    ("run.features", [100, 10**6 + 1], "field 'run.features' must be a non-empty list of whole numbers from 1 to "
                                       "1000000 each, got [100, 1000001]"),
    ("ci.features", [10**7], "field 'ci.features' must be a non-empty list of whole numbers from 1 to 1000000 each, "
                             "got [10000000]"),
    ("run.features", [0], "field 'run.features' must be a non-empty list of whole numbers from 1 to 1000000 each, got [0]"),
    ("run.features", [True], "field 'run.features' must be a non-empty list of whole numbers from 1 to 1000000 each, "
                             "got [True]"),
])
def test_a_spec_feature_budget_is_bounded_like_the_command_line(tmp_path, field, value, message):
    from rfbench.cli import MAX_FEATURES
    from rfbench.experiments.spec import load_spec

    assert MAX_FEATURES == 10**6
    with pytest.raises(UsageError) as info:
        load_spec(str(_spec_with(tmp_path, field, value)), load_registry())
    assert str(info.value) == f"wrong.yaml: {message}"
    load_spec(str(_spec_with(tmp_path, field, [MAX_FEATURES])), load_registry())          # the largest budget is allowed


def test_a_spec_of_the_wrong_type_through_reproduce_and_status_is_one_line(tmp_path):
    spec = _spec_with(tmp_path, "run.features", "abc")
    one_line_error(rfbench("reproduce", str(spec), "--check-only"), "field 'run.features' must be a non-empty list of whole numbers from 1 to 1000000 "
                                                                 "each, not str")
    spec = _spec_with(tmp_path, "run", 5)
    one_line_error(rfbench("status", str(spec)), "wrong.yaml: field 'run' must be a mapping, not int 5")


def test_stale_temporaries_of_killed_writers_are_removed_when_a_run_directory_is_opened(tmp_path, monkeypatch):
    from rfbench.store import TEMPORARY_NAME

    names = []
    real_replace = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (names.append(Path(src).name), real_replace(src, dst)))
    atomic_write_text(tmp_path / "results.csv", "x\n")
    assert TEMPORARY_NAME.fullmatch(names[0])["pid"] == str(os.getpid())      # the writer's pid is in the name
    monkeypatch.setattr(os, "replace", real_replace)
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(finished.stdout)                      # a pid that ran and exited
    run = tmp_path / "run"
    (run / "folds" / "s1").mkdir(parents=True)
    (run / "records").mkdir()
    ages = {                                         # file → (age in seconds, removed?)
        f".results.csv.{dead}.abcd_123.tmp": (120, True),           # killed mid-consolidation
        f"records/.k.json.{dead}.abcdefgh.tmp": (120, True),
        f"folds/s1/.d.csv.{dead}.abcdefgh.tmp": (120, True),
        "records/.k.json.abcdefgh.tmp": (120, True),                 # named before the pid was: by age
        f".results.csv.{os.getpid()}.abcdefgh.tmp": (120, False),     # a live writer's
        f".run.json.{dead}.abcdefgh.tmp": (5, False),                # within the grace (another host's?)
        f".run.json.{os.getpid()}.zzzzzzzz.tmp": (2 * 86400, True),  # a reused pid: by age
        "notes.tmp": (10**6, False),                                  # not the store's
    }
    for name, (age, _) in ages.items():
        (run / name).write_text("partial")
        os.utime(run / name, (time.time() - age,) * 2)
    RunDir(run).ensure()
    assert {name for name in ages if (run / name).exists()} == {name for name, (_, gone) in ages.items() if not gone}


@pytest.mark.slow
def test_user_tables_with_stray_text_a_constant_target_or_a_repeated_header_are_one_line(tmp_path):
    """One text cell in a numeric column one-hot encoded the whole column (3 inputs
    became 62), a constant target gave error 0.00, a repeated column name was renamed silently."""
    rows = [(i % 7, (i * 3) % 11, i % 5 + 0.5 * (i % 7)) for i in range(60)]

    def table(name, header, cells):
        path = tmp_path / name
        path.write_text(header + "\n" + "".join(",".join(map(str, r)) + "\n" for r in cells))
        return path

    stray = table("stray.csv", "a,b,y", [(("12a" if i == 17 else a), b, y) for i, (a, b, y) in enumerate(rows)])
    one_line_error(rfbench("run", "--datasets", str(stray), "--target", "y", "--methods", "rff-gauss", *TINY,
                           "--out", str(tmp_path / "o1")),
                   "column 'a' of " + str(stray) + " is numeric but for 1 cell(s) such as '12a' (row 17)")
    constant = table("constant.csv", "a,b,y", [(a, b, 4.0) for a, b, _ in rows])
    one_line_error(rfbench("run", "--datasets", str(constant), "--target", "y", "--task", "regression",
                           "--methods", "rff-gauss", *TINY, "--out", str(tmp_path / "o2")),
                   "has a constant target (4 in every row)")
    repeated = table("repeated.csv", "a,a,y", rows)
    one_line_error(rfbench("run", "--datasets", str(repeated), "--target", "y", "--methods", "rff-gauss", *TINY,
                           "--out", str(tmp_path / "o3")),
                   "column name(s) a appear more than once in the header row")
    assert not any((tmp_path / o).exists() for o in ("o1", "o2", "o3"))
    # a genuinely categorical text column is still one-hot encoded, and the run goes on
    colour = table("colour.csv", "c,b,y", [(("red", "green", "blue")[i % 3], b, y) for i, (_, b, y) in enumerate(rows)])
    res = rfbench("run", "--datasets", str(colour), "--target", "y", "--methods", "rff-gauss", *TINY,
                  "--out", str(tmp_path / "o4"))
    assert res.returncode == 0 and "one-hot encoded (c)" in res.stderr, res.stderr


# -- bounded options ------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["report", "DIR", "--alpha", "2"], "2 is not a significance level"),
    (["report", "DIR", "--alpha", "nan"], "nan is not a significance level"),
    (["report", "DIR", "--alpha", "-0.1"], "-0.1 is not a significance level"),
    (["report", "DIR", "--alpha", "0"], "0 is not a significance level"),
    (["report", "DIR", "--width", "-3"], "-3 is not in the range 0<=x<=100000"),
    (["report", "DIR", "--label", "}\\input{/etc/passwd}"], "is not a LaTeX label"),
    (["compare", "report", "DIR", "--against", "x", "--label", "a b"], "is not a LaTeX label"),
    (["compare", "report", "DIR", "--against", "x", "--alpha", "1"], "1 is not a significance level"),
    (["plot", "DIR", "--alpha", "1.5"], "1.5 is not a significance level"),
    (["run", "--datasets", "breiman-generated", "--folds", "0-99999999999999"], "from 0 to 9999"),
    (["run", "--datasets", "breiman-generated", "--folds", "3-1"], "low to high"),
    (["run", "--datasets", "breiman-generated", "--jobs", "100000"], "--jobs 100000 exceeds 1024 worker processes"),
    (["run", "--datasets", "breiman-generated", "--threads", "5000"], "--threads 5000 exceeds 1024"),
])
def test_every_bounded_option_is_one_line_and_writes_nothing(capsys, tmp_path, monkeypatch, argv, message):
    from tests.cli_errors import one_line_error

    monkeypatch.chdir(tmp_path)
    (tmp_path / "DIR").mkdir()
    one_line_error(capsys, [*argv, *(["--out", "o"] if argv[0] == "run" else [])], message)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["DIR"]


def test_a_names_file_with_a_python_tag_is_one_line(capsys, tmp_path):
    from tests.cli_errors import one_line_error

    evil = tmp_path / "names.yaml"
    evil.write_text('a: !!python/object/apply:os.system ["touch pwned"]\n')
    (tmp_path / "DIR").mkdir()
    one_line_error(capsys, ["report", str(tmp_path / "DIR"), "--names", str(evil)], "is not plain YAML")
    assert not (tmp_path / "pwned").exists()
