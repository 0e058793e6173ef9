"""Shipped baselines: every spec's results directory as one Parquet file that agrees with it (a stale
file fails here), written deterministically, listed by `rfbench baselines`; the fold fingerprint."""

import hashlib
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from rfbench import protocol as proto
from rfbench import registry
from rfbench.cli import cli
from rfbench.data.sources import DataSources
from rfbench.errors import UsageError
from rfbench.experiments import baselines
from rfbench.registry import load as load_registry
from rfbench.store import COLUMNS, TASK_KEY, RunDir, load_results

ROOT = Path(__file__).resolve().parents[2]


def test_fingerprint_is_of_the_fold_values_in_row_order(tmp_path):
    assert proto.folds_fingerprint([0, 1, -1]) == "sha256:" + hashlib.sha256(b"0\n1\n-1\n").hexdigest()
    folds = np.array([2, 0, 1, 1, 0, 2])
    same = {proto.folds_fingerprint(folds.astype(t)) for t in (np.int16, np.int32, np.int64)}
    assert len(same) == 1                                          # not the dtype's bytes
    path = tmp_path / "d.csv"
    path.write_text("row,fold\n" + "".join(f"{i},{f}\n" for i, f in enumerate(folds)))
    assert proto.folds_fingerprint(baselines.read_folds_file(path)) == same.pop()
    swapped = folds.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    assert proto.folds_fingerprint(swapped) != proto.folds_fingerprint(folds)
    with pytest.raises(ValueError):
        proto.folds_fingerprint([0.5, 1.0])
    path.write_text("row,fold\n1,0\n0,1\n")
    with pytest.raises(UsageError, match="not a fold assignment"):
        baselines.read_folds_file(path)


def _committed_results(results: Path) -> pd.DataFrame:
    return load_results([results], mixed_protocols=True).sort_values(TASK_KEY).reset_index(drop=True)


@pytest.mark.parametrize("spec,results", baselines.sources(load_registry()), ids=[r.name for _, r in baselines.sources(load_registry())])
def test_shipped_file_agrees_with_its_results_directory(spec, results):
    """Same tasks, statuses, errors, chosen hyper-parameters and times as the committed records, the
    fingerprint of every cv dataset's folds/*.csv: regenerate with `rfbench baselines --write`."""
    path = baselines.shipped_dir() / f"{results.name}.parquet"
    assert path.is_file(), f"{path} missing: run `rfbench baselines --write`"
    b = baselines.read_file(path)
    assert b.name == results.name and b.spec == spec
    ours = b.results.sort_values(TASK_KEY).reset_index(drop=True)
    committed = _committed_results(results)
    assert list(ours.columns) == COLUMNS
    assert ours[TASK_KEY].astype(str).equals(committed[TASK_KEY].astype(str)), "tasks differ"
    for col in ("status", "params", "message", "metric"):
        a, c = ours[col].fillna("").astype(str), committed[col].fillna("").astype(str)
        assert a.equals(c), f"{col} differs"
    for col in ("error", "total_s", "tune_s", "fit_s", "predict_s", "n_train", "n_test"):
        np.testing.assert_array_equal(ours[col].astype(float).to_numpy(), committed[col].astype(float).to_numpy(),
                                      err_msg=col)
    assert set(b.protocols) == set(committed["protocol"])
    # each task's device as its record names it (the large UCI sets' GPU tasks say cuda), cpu where none
    recorded = [d if isinstance(d, str) and d else "cpu" for (d,) in RunDir(results, read_only=True).columns(["device"])]
    assert sorted(b.frame["device"]) == sorted(recorded) and set(recorded) <= {"cpu", "cuda"}
    prints = baselines.run_fingerprints(results)
    for (key, dataset, seed), fp in b.fingerprints.items():
        if b.protocols[key]["name"] == "cv":                 # the others store no splits (see test_splits_...)
            assert prints[(dataset, seed)] == fp
    assert b.frame["folds_sha256"].notna().all()            # every baseline ships verifiable splits
    commits = b.frame["code"].dropna()
    assert commits.str.fullmatch(r"[0-9a-f]{40}(\+dirty)?").all()


@pytest.mark.slow       # 6.1 CPU s with the mirror (0.7 s without): it loads every non-cv dataset
def test_nothing_is_stale_and_total_size_fits_the_wheel():
    """`rfbench baselines --check`: with the mirror it recomputes the non-cv fingerprints (loading
    every dataset of the splits, holdout and fixed baselines, hence slow), without it it accepts the
    shipped ones and says so."""
    from conftest import MIRROR

    res = CliRunner().invoke(cli, ["baselines", "--check"])
    assert res.exit_code == 0 and f"{len(baselines.sources(load_registry()))} shipped baseline(s) agree" in res.output, res.output
    assert ("not verified, the data not being here" in res.output) == (MIRROR is None), res.output
    files = baselines.shipped()
    assert {p.stem for p in files} == {r.name for _, r in baselines.sources(load_registry())}
    assert sum(p.stat().st_size for p in files) < 5 * 2**20


def _copy_run(src: Path, dest: Path, n_records: int = 12) -> Path:
    """A small results directory: some records of a committed one, its folds and runs.jsonl."""
    (dest / "records").mkdir(parents=True)
    for f in sorted((src / "records").glob("*.json"))[:n_records]:
        shutil.copy2(f, dest / "records" / f.name)
    shutil.copytree(src / "folds", dest / "folds")
    shutil.copy2(src / "runs.jsonl", dest / "runs.jsonl")
    return dest


def test_write_is_deterministic_and_a_changed_record_makes_the_file_stale(tmp_path, monkeypatch):
    run = _copy_run(ROOT / "results" / "gfc2016-table1", tmp_path / "results" / "mini")
    monkeypatch.setattr(baselines, "sources", lambda registry=None: [("gfc2016-table1", run)])
    monkeypatch.setattr(baselines, "shipped_dir", lambda: tmp_path / "ship")
    dest = tmp_path / "ship"
    (written, changed), = baselines.write_all(dest, registry=load_registry())
    first = written.read_bytes()
    assert changed and baselines.stale(None, load_registry()) == []
    assert baselines.write_all(dest, registry=load_registry()) == [(written, False)] and written.read_bytes() == first   # same bytes
    rec = sorted((run / "records").glob("*.json"))[3]
    data = json.loads(rec.read_text())
    data["error"] += 0.5
    rec.write_text(json.dumps(data))
    assert baselines.stale(None, load_registry()) == ["mini.parquet: column(s) error differ from " + str(run)]
    (written2, changed2), = baselines.write_all(dest, registry=load_registry())
    assert changed2 and baselines.stale(None, load_registry()) == []
    b = baselines.read_file(written2)
    row = b.frame[(b.frame["dataset"] == data["dataset"]) & (b.frame["method"] == data["method"])
                  & (b.frame["n_features"] == data["n_features"]) & (b.frame["fold"] == data["fold"])]
    assert row["error"].item() == data["error"]
    # the code version: the record's invocation's commit in runs.jsonl
    lines = [json.loads(x) for x in (run / "runs.jsonl").read_text().splitlines()]
    inv = {x["invocation"]: x["code"] for x in lines if x.get("invocation") and x.get("code")}
    if data.get("invocation") in inv:
        code = inv[data["invocation"]]
        assert row["code"].item() == code["commit"] + ("+dirty" if code["dirty"] else "")
    # a shipped file no spec names any more goes
    (dest / "gone.parquet").write_bytes(first)
    assert baselines.stale(None, load_registry())[-1] == "gone.parquet: no spec's results directory is gone"
    assert (dest / "gone.parquet", True) in baselines.write_all(dest, registry=load_registry()) and not (dest / "gone.parquet").exists()


def test_load_by_name_spec_name_or_directory():
    assert baselines.load("gfc2016-table1", load_registry()).name == "gfc2016-table1"
    assert baselines.load("eerf2018-claim", load_registry()).name == "eerf-claim"          # the spec's name
    d = baselines.load(str(ROOT / "results" / "gfc2016-tables2-3"), load_registry())      # a results directory
    assert d.name == "gfc2016-tables2-3" and len(d.frame) == 560
    with pytest.raises(UsageError, match="no baseline named 'nope'.*shipped: eerf-claim"):
        baselines.load("nope", load_registry())


def test_protocol_from_key_round_trips():
    from rfbench.protocol import Protocol

    for p in (Protocol(), Protocol("splits", repeats=20, test_size=0.3), Protocol("holdout", test_size=0.25),
              Protocol("fixed", repeats=10, inner_folds=3), Protocol(outer_folds=3, max_samples=2000)):
        assert Protocol.from_key(p.key()) == Protocol(**{**p.__dict__, "seed": 0})
        assert Protocol(**Protocol.from_key(p.key()).key_settings()) == Protocol(**{**p.__dict__, "seed": 0})
    with pytest.raises(UsageError, match="cannot read protocol key"):
        Protocol.from_key("nope")


def test_baselines_command_lists_what_ships_and_write_needs_a_checkout(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")           # a terminal of 80 columns (a pipe: no limit)
    res = CliRunner().invoke(cli, ["baselines"])
    assert res.exit_code == 0, res.output
    for name in ("gfc2016-table1", "gfc2016-table4", "eerf-claim", "gbrff2020-table2"):
        assert name in res.output
    assert "1120" in res.output and "KiB" in res.output
    table = res.output.split("\neerf-claim*:")[0].splitlines()      # the table, then its notes
    assert max(map(len, table)) <= 80, max(table, key=len)          # wrapped to the terminal's width
    assert "rff-gauss-knn" in res.output                             # names wrapped whole
    wide = CliRunner().invoke(cli, ["baselines", "--width", "0"]).output
    assert "lgbm, rff-cauchy, rff-cauchy-grid, rff-gauss, rff-gauss-grid" in wide
    monkeypatch.setattr(baselines, "in_checkout", lambda: False)
    with pytest.raises(UsageError, match="installed package"):
        baselines.write_all(registry=load_registry())


def test_splits_fingerprint_is_of_the_runners_test_rows_in_split_order(mirror_dir):
    """The non-cv fingerprint recomputed naively from protocol.outer_splits on the data as the tasks
    prepare it: one line per split, its test row indices as outer_splits orders them; it is the
    shipped gbrff2020-table2 value, and another seed or test size gives another fingerprint."""
    from rfbench.execution import runner, tasks
    from rfbench.protocol import Protocol

    settings = baselines.load("gbrff2020-table2", load_registry()).protocols["splits-r20-t0.3-i5"]
    p = Protocol(**settings, seed=0)
    mirror = DataSources.from_settings(str(mirror_dir))
    _, _, y, _ = tasks.prepared(registry.load().dataset("wine"), mirror, None, 0)
    splits = proto.outer_splits(p, y, "classification")
    assert len(splits) == 20 and {len(te) for _, te in splits} == {math.ceil(0.3 * len(y))}   # scikit-learn's size
    text = "".join(" ".join(map(str, te)) + "\n" for _, te in splits)
    naive = "sha256:" + hashlib.sha256(text.encode()).hexdigest()
    assert proto.splits_fingerprint(splits) == naive
    assert runner.outer_splits_fingerprint("wine", p, mirror, registry=load_registry()) == naive
    assert baselines.load("gbrff2020-table2", load_registry()).fingerprints[("splits-r20-t0.3-i5", "wine", 0)] == naive
    others = {runner.outer_splits_fingerprint("wine", Protocol(**{**settings, "test_size": 0.25}), mirror, registry=load_registry()),
              runner.outer_splits_fingerprint("wine", Protocol(**settings, seed=1), mirror, registry=load_registry())}
    assert naive not in others and len(others) == 2
    reordered = [(tr, te[::-1]) for tr, te in splits]             # the same rows, fed in another order
    assert proto.splits_fingerprint(reordered) != naive


def test_a_wrong_splits_fingerprint_is_stale_with_the_mirror_and_unverified_without(tmp_path, monkeypatch, mirror_dir):
    """With the data here --check recomputes the non-cv fingerprints; without it the shipped value is
    accepted and reported unverified, every other column still compared."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    results = ROOT / "results" / "salsa2016-table1"
    monkeypatch.setattr(baselines, "sources", lambda registry=None: [("salsa2016-table1", results)])
    monkeypatch.setattr(baselines, "shipped_dir", lambda: tmp_path / "ship")
    (tmp_path / "ship").mkdir()
    table = pq.read_table(ROOT / "rfbench" / "_data" / "baselines" / "salsa2016-table1.parquet")
    column = table.schema.get_field_index("folds_sha256")
    tampered = table.set_column(column, table.schema.field(column),
                                pa.array(["sha256:" + "0" * 64] * table.num_rows, type=pa.string()))
    baselines.write_table(tampered, tmp_path / "ship" / "salsa2016-table1.parquet")
    assert baselines.stale(None, load_registry()) == [f"salsa2016-table1.parquet: column(s) folds_sha256 differ from {results}"]
    monkeypatch.setenv("RFBENCH_DATA_DIR", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    unverified: list = []
    assert baselines.stale(unverified, load_registry()) == []
    assert len(unverified) == 12 and {u[:2] for u in unverified} == {("salsa2016-table1.parquet", "holdout-t0.3-i5")}
    # --write without the data leaves the fingerprints null, says which, and compare run then refuses
    unavailable: list = []
    (written, _), = baselines.write_all(tmp_path / "nodata", unavailable, registry=load_registry())
    assert sorted(u[2] for u in unavailable) == sorted(u[2] for u in unverified)
    b = baselines.read_file(written)
    assert b.frame["folds_sha256"].isna().all() and b.fingerprints == {}
    assert baselines.listing([b])[0]["compare"] == "no"
    from rfbench.experiments import compare

    with pytest.raises(UsageError, match="baseline salsa2016-table1 has no fingerprint of the splits of"):
        compare.run(str(written), ["sklearn.linear_model:Ridge"], None, None, [0], str(tmp_path / "out"), registry=load_registry())
    assert not (tmp_path / "out").exists()
    rec = sorted((results / "records").glob("*.json"))[0]          # another column is still compared
    copy = tmp_path / "results" / "salsa2016-table1"
    shutil.copytree(results, copy)
    data = json.loads((copy / "records" / rec.name).read_text())
    data["error"] += 0.5
    (copy / "records" / rec.name).write_text(json.dumps(data))
    monkeypatch.setattr(baselines, "sources", lambda registry=None: [("salsa2016-table1", copy)])
    assert baselines.stale(None, load_registry()) == [f"salsa2016-table1.parquet: column(s) error differ from {copy}"]


def test_every_shipped_file_has_its_checksum_beside_it():
    for path in baselines.shipped():
        line = baselines.checksum_path(path).read_text()
        assert line == f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}\n"


def _copy_shipped(tmp_path, name="salsa2016-table1"):
    src = baselines.shipped_dir() / f"{name}.parquet"
    dst = tmp_path / f"{name}.parquet"
    shutil.copy(src, dst)
    shutil.copy(baselines.checksum_path(src), baselines.checksum_path(dst))
    return dst


def test_a_damaged_baseline_is_refused_by_its_checksum(tmp_path):
    path = _copy_shipped(tmp_path)
    assert len(baselines.read_file(path).frame) == 35
    data = bytearray(path.read_bytes())
    data[len(data) // 2: len(data) // 2 + 2000] = bytes(2000)        # 2000 bytes overwritten in the middle
    path.write_bytes(bytes(data))
    with pytest.raises(UsageError, match="its checksum file says .*: the file is damaged or was changed"):
        baselines.read_file(path)


def test_a_baseline_whose_error_column_is_text_is_refused(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = _copy_shipped(tmp_path)
    table = pq.read_table(path)
    i = table.schema.get_field_index("error")
    table = table.set_column(i, pa.field("error", pa.string()), pa.array([str(v) for v in table.column(i).to_pylist()]))
    table = table.replace_schema_metadata(pq.read_table(path).schema.metadata)
    baselines.checksum_path(path).unlink()          # a file of one's own, no checksum: the schema still holds
    pq.write_table(table, path)
    with pytest.raises(UsageError, match="column error is string, not double"):
        baselines.read_file(path)
