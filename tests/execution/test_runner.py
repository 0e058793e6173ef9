"""The shared runner: identical folds for every method, no test-fold leakage, records, timeouts."""

import json

import numpy as np
import pandas as pd
import pytest

from rfbench import protocol as proto
from rfbench import provenance, registry
from rfbench.data.sources import DataSources
from rfbench.errors import UsageError
from rfbench.execution import pool, runconfig, runner, tasks
from rfbench.execution.runconfig import RunConfig
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry
from tests.records import as_record

SMALL = Protocol("cv", outer_folds=3, inner_folds=3, seed=0, max_samples=300)
#: the built-in registry (what the tasks below look their names up in, as the runner passes it)
REG = registry.load(settings=False)
#: where a task reads its data: no mirror directory, the download cache of the setting
NO_MIRROR = DataSources((), None)


def test_folds_identical_for_every_method_and_saved(tmp_path):
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss", "rff-cauchy"], [10], SMALL, str(out), progress=False, registry=load_registry())
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 6 and (df["status"] == "done").all()
    per_method = {m: g.sort_values("fold")[["fold", "n_train", "n_test"]].to_numpy().tolist()
                  for m, g in df.groupby("method")}
    assert per_method["rff-gauss"] == per_method["rff-cauchy"]
    folds = pd.read_csv(out / "folds" / "friedman-generated.csv")
    assert len(folds) == 300 and sorted(folds["fold"].unique()) == [0, 1, 2]
    # the stored assignment is the protocol's split
    _, _, y, _ = tasks.prepared(REG.dataset("friedman-generated"), DataSources.from_settings(), 300, 0)
    for k, (_, te) in enumerate(proto.outer_splits(SMALL, y, "regression")):
        assert (folds["fold"].to_numpy()[te] == k).all()


def test_test_fold_values_do_not_leak_into_training(monkeypatch):
    _, X, y, src = tasks.prepared(REG.dataset("friedman-generated"), DataSources.from_settings(), 300, 0)
    _, te = proto.outer_splits(SMALL, y, "regression")[0]
    X2, y2 = X.copy(), y.copy()
    X2[te] *= 1000.0
    y2[te] += 1e6
    item = WorkItem("friedman-generated", "rff-gauss", 0, (10,))
    base = execute(item, WorkerOptions(SMALL, NO_MIRROR, 1, None, REG))[0]
    monkeypatch.setattr(tasks, "prepared", lambda ds, *a: (ds, X2, y2, src))
    tasks._fold_data.cache_clear()          # the runner keeps a fold's data for the next task
    poisoned = execute(item, WorkerOptions(SMALL, NO_MIRROR, 1, None, REG))[0]
    assert base.status == poisoned.status == "done"
    # identical training statistics ⇒ identical selection, to the last digit of the CV error
    assert json.loads(base.params) == json.loads(poisoned.params)
    assert base.error != poisoned.error


def test_scaler_uses_training_rows_only():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    sc = proto.Scaler.fit(X[:40], y[:40], "regression")
    np.testing.assert_allclose(sc.x(X[:40]).mean(axis=0), 0, atol=1e-12)
    assert sc.y(y[:40]).min() == 0 and sc.y(y[:40]).max() == pytest.approx(1)


def test_error_and_timeout_become_records(tmp_path, monkeypatch):
    item = WorkItem("friedman-generated", "rff-gauss", 0, (10,))
    recs = execute(item, WorkerOptions(SMALL, NO_MIRROR, 1, 1e-3, REG))
    assert recs[0].status == "timeout" and "timeout" in recs[0].message
    from rfbench.methods import rff

    def boom(self, X, y):
        raise RuntimeError("synthetic failure")

    monkeypatch.setattr(rff.RFFRegressor, "fit", boom)
    recs = execute(item, WorkerOptions(SMALL, NO_MIRROR, 1, None, REG))
    assert recs[0].status == "error" and "synthetic failure" in recs[0].message


def test_a_task_off_the_main_thread_runs_without_an_alarm_and_on_supplied_data():
    """A dask worker runs tasks in threads, where SIGALRM cannot be installed: the task runs (the
    client's deadline is the limit); data sent by the client give the records of loaded data."""
    from concurrent.futures import ThreadPoolExecutor

    item = WorkItem("friedman-generated", "rff-gauss", 0, (10,))
    _, X, y, src = tasks.prepared(REG.dataset("friedman-generated"), DataSources.from_settings(), 300, 0)
    with ThreadPoolExecutor(1) as threads:
        [rec] = threads.submit(execute, item, WorkerOptions(SMALL, NO_MIRROR, 1, 60.0, REG)).result()
        [sent] = threads.submit(execute, item, WorkerOptions(SMALL, DataSources(("/nonexistent",), None), 1, 60.0, REG), (X, y, src)).result()
    assert rec.status == sent.status == "done", rec.message
    assert (sent.error, sent.params, sent.source) == (rec.error, rec.params, rec.source)


def test_failed_tasks_are_retried_done_ones_skipped(tmp_path, monkeypatch):
    out = tmp_path / "run"
    from rfbench.methods import rff

    real_fit = rff.RFFRegressor.fit
    monkeypatch.setattr(rff.RFFRegressor, "fit", lambda self, X, y: (_ for _ in ()).throw(RuntimeError("x")))
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, registry=load_registry())
    assert set(pd.read_csv(out / "results.csv")["status"]) == {"error"}
    monkeypatch.setattr(rff.RFFRegressor, "fit", real_fit)
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, registry=load_registry())
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 3 and set(df["status"]) == {"done"}
    items = runner.plan(["friedman-generated"], ["rff-gauss"], [10], SMALL, runner.RunDir(out), registry=REG)
    assert items == []


def test_a_directory_holds_one_protocol(tmp_path):
    """A rerun with other inner folds (or any setting in the protocol key) into an existing directory
    is refused with one line, so no report can average two protocols as one cell; the same
    settings resume."""
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(folds=[0]), progress=False, registry=load_registry())
    other = Protocol("cv", outer_folds=3, inner_folds=2, seed=0, max_samples=300)
    with pytest.raises(UsageError, match="holds results of protocol cv-o3-i3-max300, not cv-o3-i2-max300"):
        runner.run(["friedman-generated"], ["rff-gauss"], [10], other, str(out), progress=False, registry=load_registry())
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, registry=load_registry())
    assert set(pd.read_csv(out / "results.csv")["protocol"]) == {"cv-o3-i3-max300"}


def test_results_csv_is_consolidated_at_the_end_not_after_every_task(tmp_path, monkeypatch):
    """Bookkeeping stays O(records): results.csv is rewritten when the run starts and ends (and at
    most once a minute between), not after each of its tasks; it then holds every record."""
    from rfbench import store

    writes = []
    real = store.RunDir.write_results_csv
    monkeypatch.setattr(store.RunDir, "write_results_csv", lambda self: writes.append(1) or real(self))
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss", "rff-laplace"], [10, 20], SMALL, str(out), progress=False, registry=load_registry())
    assert len(writes) == 2
    assert len(pd.read_csv(out / "results.csv")) == 2 * 2 * 3


def test_records_are_group_committed_not_fsynced_one_by_one(tmp_path, monkeypatch):
    """The runner writes its records without an fsync each and flushes them in one syncfs at most
    once a second and when the run ends: after the last record the file system was synced, and
    every record written was in a flushed batch."""
    import os

    from rfbench import store

    events = []
    real_write, real_sync = store.RunDir.write_record, store.sync_files
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync"))
    monkeypatch.setattr(store.RunDir, "write_record",
                        lambda self, rec, durable=True: events.append(("write", durable)) or real_write(self, rec, durable))
    monkeypatch.setattr(store.rundir, "sync_files", lambda paths, d: events.append(("sync", len(paths))) or real_sync(paths, d))
    runner.run(["friedman-generated"], ["rff-gauss", "rff-laplace"], [10, 20], SMALL, str(tmp_path / "run"),
               progress=False, registry=load_registry())
    writes = [e for e in events if e[0] == "write"]
    syncs = [e for e in events if e[0] == "sync"]
    assert len(writes) == 12 and all(durable is False for _, durable in writes)
    assert events[-1][0] == "sync" or events.index(syncs[-1]) > max(i for i, e in enumerate(events) if e[0] == "write")
    assert sum(n for _, n in syncs) == 12 and len(syncs) <= 3


def test_sync_files_falls_back_to_an_fsync_of_each_file_and_the_directory(tmp_path, monkeypatch):
    import os

    from rfbench import store

    run = store.RunDir(tmp_path / "run").ensure()
    for fold in range(3):
        run.write_record(as_record({"dataset": "d", "method": "m", "n_features": 1, "fold": fold, "seed": 0,
                          "protocol": "p", "status": "done", "error": 1.0, "total_s": 0.1}), durable=False)
    synced = []
    monkeypatch.setattr(store.atomic, "_syncfs", lambda d: False)  # no syncfs (not Linux)
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(os.readlink(f"/proc/self/fd/{fd}")))
    run.sync()
    assert sorted(synced) == sorted([str(p) for p in (tmp_path / "run" / "records").glob("*.json")]
                                    + [str(tmp_path / "run" / "records")])
    synced.clear()
    run.sync()                                  # nothing written since: nothing to flush
    assert synced == []


def test_a_record_left_empty_by_a_crash_before_its_sync_is_run_again(tmp_path):
    """What a machine crash between a record's write and the next group commit can leave: an empty
    file. It is not counted as done, and the rerun runs the task and replaces it."""
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, registry=load_registry())
    victim = sorted((out / "records").glob("*.json"))[0]
    victim.write_text("")
    rerun = runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False,
                       warn=lambda msg: None, registry=load_registry())
    assert json.loads(victim.read_text())["status"] == "done" and len(rerun.done_keys()) == 3


def test_dataset_smaller_than_the_fold_count_is_a_clear_error():
    with pytest.raises(UsageError, match="fewer than outer × inner folds"):
        proto.outer_splits(Protocol("cv", 10, 5), np.zeros(30), "regression")


def test_lgbm_budgets_share_one_work_item(tmp_path):
    items = runner.plan(["friedman-generated"], ["lgbm", "rff-gauss"], [10, 20], SMALL, runner.RunDir(tmp_path).ensure(),
                        registry=REG)
    lgbm = [i for i in items if i.method == "lgbm"]
    assert len(lgbm) == 3 and all(i.budgets == (10, 20) for i in lgbm)
    assert len([i for i in items if i.method == "rff-gauss"]) == 6


def test_the_runner_reads_budget_sharing_and_fitted_attributes_through_the_written_contract():
    from rfbench import contract
    from rfbench.methods.gbrff import GBRFF2Regressor
    from rfbench.methods.lgbm import LGBMRegressorCV
    from rfbench.methods.rff import RFFRegressor

    assert [contract.shares_budgets(c) for c in (LGBMRegressorCV, GBRFF2Regressor, RFFRegressor)] == [True, True, False]

    class Legacy:                     # a class attribute alone is not the contract
        shares_budgets = True

    assert not contract.shares_budgets(Legacy)
    est = type("Fitted", (), {"best_params_per_budget_": {10: {"a": 1}}, "best_params_": {"a": 2}})()
    assert contract.chosen_params(est, 10) == {"a": 1} and contract.chosen_params(est, 20) == {"a": 2}
    assert contract.chosen_params(object(), 10) == {} and contract.tuning_seconds(object()) == 0.0
    assert isinstance(RFFRegressor(), contract.Estimator) and not isinstance(object(), contract.Estimator)


def test_shared_fit_time_is_attributed_to_the_budgets_not_repeated():
    recs = {r.n_features: r for r in execute(WorkItem("friedman-generated", "lgbm", 0, (10, 30)),
                                                WorkerOptions(SMALL, NO_MIRROR, 1, None, REG))}
    assert {r.status for r in recs.values()} == {"done"}
    whole = recs[10].shared_fit_s
    assert whole == recs[30].shared_fit_s > 0
    # the budgets' fit times add up to the one fit, in proportion to n (10 : 30)
    fits = {n: r.total_s - r.predict_s for n, r in recs.items()}
    assert fits[10] + fits[30] == pytest.approx(whole)
    assert fits[30] == pytest.approx(3 * fits[10])
    assert recs[10].tune_s + recs[30].tune_s <= whole
    # a budget fitted alone keeps its whole time and has no shared part
    alone = execute(WorkItem("friedman-generated", "rff-gauss", 0, (10,)), WorkerOptions(SMALL, NO_MIRROR, 1, None, REG))[0]
    assert alone.shared_fit_s is None and "shared_fit_s" not in alone.to_dict()


def test_krr_salsa_share_one_fit_where_exact_and_fit_each_budget_where_nystrom(monkeypatch):
    # SALSA/KRR's budget is the number of Nystrom landmarks, which the exact variant (up to 4000
    # training rows) does not have: there one fit serves both budgets, and each record holds what a
    # fit of its budget alone gives; where the budget applies, each budget is fitted on its own
    from rfbench.methods.salsa import SALSARegressor

    options = WorkerOptions(SMALL, NO_MIRROR, 1, None, REG)
    alone = {n: execute(WorkItem("friedman-generated", "salsa", 0, (n,)), options)[0] for n in (10, 30)}
    both = {r.n_features: r for r in execute(WorkItem("friedman-generated", "salsa", 0, (10, 30)), options)}
    for n in (10, 30):
        assert both[n].status == "done" and both[n].error == alone[n].error and both[n].params == alone[n].params
    assert both[10].shared_fit_s == both[30].shared_fit_s > 0
    monkeypatch.setattr(SALSARegressor, "shares_fit", lambda self, rows: False)
    each = {r.n_features: r for r in execute(WorkItem("friedman-generated", "salsa", 0, (10, 30)), options)}
    assert all(r.shared_fit_s is None and r.error == alone[n].error for n, r in each.items())


def test_a_resumed_run_divides_repeated_times_only_where_one_fit_now_serves_every_budget(tmp_path):
    # records written before a method shared budgets hold a whole fit each: where one fit now serves
    # both budgets (salsa at or below 4000 training rows, lgbm always) the ETA divides them, never
    # where each budget is still its own fit (salsa's Nystrom above 4000 rows; rff)
    run = runner.RunDir(tmp_path).ensure()
    for method, rows, secs in (("salsa", 3000, 60.0), ("salsa", 9000, 80.0), ("lgbm", 9000, 40.0),
                               ("rff-gauss", 3000, 10.0)):
        run.write_record(as_record({"dataset": "friedman-generated", "method": method, "n_features": 10,
                                    "fold": rows % 7, "seed": 0, "protocol": SMALL.key(), "status": "done",
                                    "error": 1.0, "total_s": secs, "n_train": rows}))
    seconds = sorted(s for _, s in runner.recorded_seconds(run, ["friedman-generated"], ["salsa", "lgbm", "rff-gauss"],
                                                           [10, 30], SMALL, registry=REG))
    assert seconds == [10.0, 20.0, 30.0, 80.0]


def test_holdout_protocol_uses_registry_sizes_and_standardised_mse():
    y = np.arange(100.0)
    (tr, te), = proto.outer_splits(Protocol("holdout"), y, "regression", (40, 30))
    assert len(tr) == 40 and len(te) == 30 and not set(tr) & set(te)
    sc = proto.Scaler.fit(np.ones((40, 2)), y[tr], "regression", "standard")
    assert sc.y(y[tr]).mean() == pytest.approx(0) and sc.y(y[tr]).std(ddof=1) == pytest.approx(1)
    assert proto.score("regression", np.zeros(4), np.full(4, 0.5), "standard") == pytest.approx(0.25)
    assert proto.metric_name("regression", Protocol("holdout").target_scaling) == "mse"
    with pytest.raises(UsageError, match="exceed"):
        proto.outer_splits(Protocol("holdout"), y, "regression", (80, 30))


def test_run_walltime_sums_invocations_up_to_their_last_finished_task(tmp_path):
    import json

    from rfbench.store import RunDir, run_walltime

    run = RunDir(tmp_path / "run").ensure()
    # the third invocation found nothing left to do: neither time nor a count
    for started in ("2026-01-01T10:00:00+00:00", "2026-01-01T12:00:00+00:00", "2026-01-01T13:00:00+00:00"):
        run.write_run_info({"command": "rfbench run", "started_at": started})
    finished = ["2026-01-01T10:10:00+00:00", "2026-01-01T10:30:00+00:00",   # first invocation: 30 min
                "2026-01-01T12:05:00+00:00"]                                # second: 5 min
    for i, t in enumerate(finished):
        run.write_record(as_record({"dataset": "friedman-generated", "method": "rff-gauss", "n_features": 10, "fold": i, "seed": 0,
                          "protocol": "cv-o10-i5", "status": "done", "error": 1.0, "finished_at": t}))
    assert run_walltime(run.path) == (35 * 60.0, 2)
    assert json.loads((run.path / "runs.jsonl").read_text().splitlines()[0])["started_at"].startswith("2026")


def test_two_invocations_on_one_directory_see_each_others_records(tmp_path):
    # two lanes working on disjoint tasks of one results directory: each one's results.csv must
    # hold the other's finished records too, not only those it wrote or found at its start
    from rfbench.store import RunDir

    def rec(fold):
        return {"dataset": "friedman-generated", "method": "rff-gauss", "n_features": 10, "fold": fold, "seed": 0,
                "protocol": "cv-o10-i5", "status": "done", "error": 1.0}

    lane_a, lane_b = RunDir(tmp_path / "run").ensure(), RunDir(tmp_path / "run").ensure()
    lane_a.write_record(as_record(rec(0)))
    assert len(lane_b.records()) == 1          # b's cache is loaded now ...
    lane_a.write_record(as_record(rec(1)))
    lane_b.write_record(as_record(rec(2)))
    df = lane_b.write_results_csv()            # ... and still sees a's later record
    assert sorted(df["fold"]) == [0, 1, 2]
    assert lane_b.done_keys() == lane_a.done_keys()


def test_run_walltime_counts_side_by_side_lanes_once(tmp_path):
    from rfbench.store import RunDir, run_walltime

    run = RunDir(tmp_path / "run").ensure()
    # lanes a and b worked side by side (b started 5 min after a); c came later, alone
    for inv, started in (("a", "2026-01-01T10:00:00+00:00"), ("b", "2026-01-01T10:05:00+00:00"),
                         ("c", "2026-01-01T12:00:00+00:00")):
        run.write_run_info({"command": "rfbench run", "started_at": started, "invocation": inv})
    finished = [("a", "2026-01-01T10:10:00+00:00"), ("b", "2026-01-01T10:20:00+00:00"),
                ("a", "2026-01-01T10:30:00+00:00"), ("c", "2026-01-01T12:05:00+00:00")]
    for fold, (inv, t) in enumerate(finished):
        run.write_record(as_record({"dataset": "friedman-generated", "method": "rff-gauss", "n_features": 10, "fold": fold, "seed": 0,
                          "protocol": "cv-o10-i5", "status": "done", "error": 1.0, "finished_at": t,
                          "invocation": inv}))
    # union of [10:00, 10:30] (a), [10:05, 10:20] (b) and [12:00, 12:05] (c): 35 min, not 50
    assert run_walltime(run.path) == (35 * 60.0, 3)


def test_runner_tags_records_with_their_invocation(tmp_path):
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(folds=[0]), progress=False, registry=load_registry())
    (info,) = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    recs = runner.RunDir(out).records()
    assert recs and all(r["invocation"] == info["invocation"] for r in recs)
    code = provenance.code_version()            # the source's commit, when run from a checkout
    assert info["code"] == code and (not code or len(code["commit"]) == 40)


def _claim_file(run, key, **holder):
    (run.records_dir / f"{key}.claim").write_text(json.dumps(holder))


def test_claims_are_exclusive_released_and_taken_over_from_dead_or_recycled_holders(tmp_path):
    import os
    import socket
    import subprocess
    import sys

    from rfbench.store import RunDir
    from rfbench.store.claims import start_time

    run = RunDir(tmp_path / "run").ensure()
    assert run.claim("a") and not run.claim("a")           # held by a live process (this one)
    run.release("a")
    assert run.claim("a")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    host = socket.gethostname()
    _claim_file(run, "b", host=host, pid=int(dead.stdout), start=None)          # killed holder
    assert run.claim("b")
    _claim_file(run, "c", host=host, pid=os.getpid(), start="0")               # pid reused since
    assert start_time(os.getpid()) is None or run.claim("c")
    _claim_file(run, "d", host="another-machine", pid=1, start=None)           # a live lease elsewhere
    assert not run.claim("d")


def test_claims_from_another_host_are_leases_that_expire_without_a_heartbeat(tmp_path, monkeypatch):
    """A holder on another host cannot be checked by pid: its claim stands while it is refreshed
    and is taken over once LEASE_S pass without a heartbeat; this process's heartbeat refreshes
    the claims it holds (and forgets released ones)."""
    import os
    import time

    from rfbench import store

    run = store.RunDir(tmp_path / "run").ensure()
    _claim_file(run, "e", host="another-machine", pid=1, start=None)
    old = time.time() - store.LEASE_S - 5
    os.utime(run.records_dir / "e.claim", (old, old))                        # its holder died long ago
    assert run.claim("e")
    mine = run.records_dir / "e.claim"
    os.utime(mine, (old, old))
    store.HEARTBEAT.beat()                                                  # what the thread does every HEARTBEAT_S
    assert time.time() - mine.stat().st_mtime < 5
    assert not store.claim_is_stale(mine)
    run.release("e")
    assert mine not in store.HEARTBEAT.held and not mine.exists()


@pytest.mark.slow
def test_a_task_running_in_another_invocation_is_left_to_it(tmp_path, monkeypatch):
    import os
    import socket

    from rfbench.store import record_key

    out = tmp_path / "run"
    run = runner.RunDir(out).ensure()
    key = record_key("friedman-generated", "rff-gauss", 10, 1, 0, SMALL.key())
    _claim_file(run, key, host=socket.gethostname(), pid=os.getppid(), start=None)   # a live process
    warnings = []
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, warn=warnings.append, registry=load_registry())
    df = pd.read_csv(out / "results.csv")
    assert sorted(df["fold"]) == [0, 2] and any("another invocation" in w for w in warnings)
    run.release(key)                                        # the other invocation went away
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(jobs=2), progress=False, registry=load_registry())
    assert sorted(pd.read_csv(out / "results.csv")["fold"]) == [0, 1, 2]
    assert not list(run.records_dir.glob("*.claim"))        # every claim released
    # the worker pool was the run's own: joblib's loky backend still works in this process (it
    # failed on loky's shared executor when the runner had created it)
    from joblib import Parallel, delayed
    assert Parallel(n_jobs=2, backend="loky")(delayed(abs)(-i) for i in range(3)) == [0, 1, 2]


def test_an_interrupted_task_releases_its_claim(tmp_path, monkeypatch):
    out = tmp_path / "run"

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pool, "execute", interrupted)         # the item runs in this process (--jobs 1)
    with pytest.raises(KeyboardInterrupt):
        runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), progress=False, registry=load_registry())
    assert not list((out / "records").glob("*.claim"))


def test_unobtainable_dataset_is_skipped_with_one_line_or_fails_under_strict(monkeypatch):
    from rfbench.errors import DataUnavailable

    def fake_load(ds, data_dir, registry, cache=None):
        if ds.name == "bankmarketing":
            raise DataUnavailable("dataset 'bankmarketing' is not available (OpenML unreachable)")

    monkeypatch.setattr(runner, "load", fake_load)
    said = []
    assert runner.available_datasets(["wine", "bankmarketing", "sonar"], NO_MIRROR, False, said.append, registry=load_registry()) == ["wine", "sonar"]
    assert said == ["skipped: dataset 'bankmarketing' is not available (OpenML unreachable)"]
    with pytest.raises(DataUnavailable, match="bankmarketing"):
        runner.available_datasets(["wine", "bankmarketing"], NO_MIRROR, True, said.append, registry=load_registry())


def test_default_jobs_is_one_process_per_core_unless_every_method_prefers_threads(tmp_path, monkeypatch):
    """--jobs left out: the placement measured faster (bench/perf/thread_placement.py: processes for
    every built-in method) decides; a user method registered with placement: threads runs alone on
    one worker with every core; --threads alone gives cores // threads workers."""

    assert {m.placement for m in registry.load().methods.values()} == {"processes"}
    assert runconfig.default_jobs(["gfc", "lgbm"], cores=4, registry=load_registry()) == 4
    assert runconfig.default_jobs(["gfc"], threads=2, cores=4, registry=load_registry()) == 2
    reg = tmp_path / "my.yaml"
    reg.write_text("methods:\n  my-ridge:\n    estimator: sklearn.linear_model:Ridge\n    placement: threads\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    assert registry.load().method("my-ridge").placement == "threads"
    assert runconfig.default_jobs(["my-ridge"], cores=4, registry=load_registry()) == 1
    assert runconfig.default_jobs(["my-ridge", "gfc"], cores=4, registry=load_registry()) == 4    # mixed: the cores as processes
    reg.write_text("methods:\n  my-ridge:\n    estimator: sklearn.linear_model:Ridge\n    placement: gpu\n")
    with pytest.raises(UsageError, match="field 'placement' must be one of processes, threads, got 'gpu'"):
        registry.load()


def test_the_command_line_default_runs_one_single_threaded_worker_per_core(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from rfbench.cli import cli

    monkeypatch.delenv("RFBENCH_JOBS")
    monkeypatch.setattr(runner.os, "cpu_count", lambda: 2)
    out = tmp_path / "run"
    result = CliRunner().invoke(cli, ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss",
                                      "--features", "10", "--outer-folds", "3", "--inner-folds", "3",
                                      "--max-samples", "300", "--out", str(out), "--quiet", "--no-report"])
    assert result.exit_code == 0, result.output
    info = json.loads((out / "run.json").read_text())
    assert (info["jobs"], info["threads_per_worker"]) == (2, 1)
    assert set(pd.read_csv(out / "results.csv")["status"]) == {"done"}


def test_records_hold_cpu_seconds_beside_wall_seconds(tmp_path, monkeypatch):
    """cpu_s is the process's CPU time over fit + predict: a fit that waits 0.3 s (what a busy machine
    does to wall time) shows in total_s and not in cpu_s, and the computing part shows in both."""
    import time

    from rfbench.methods.rff import RFFRegressor

    fit = RFFRegressor.fit

    def waiting_fit(self, X, y):
        time.sleep(0.3)
        return fit(self, X, y)

    monkeypatch.setattr(RFFRegressor, "fit", waiting_fit)
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(threads=1), progress=False, registry=load_registry())
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 3 and set(df["status"]) == {"done"}
    assert (df["total_s"] - df["cpu_s"] > 0.28).all()
    assert (df["cpu_s"] > 0.005).all() and (df["cpu_s"] < df["total_s"] - 0.28 + 0.05).all()



def test_a_run_without_any_obtainable_dataset_says_so_not_that_every_task_is_done(tmp_path, monkeypatch, capsys):
    """rfbench run: one error naming the datasets and how to supply them, and no --out left behind; a
    spec's group (reproduce goes on with its other groups): the skipped lines and "nothing run"."""
    from rfbench.errors import DataUnavailable

    def unavailable(ds, data_dir, registry, cache=None):
        raise DataUnavailable(f"dataset '{ds.name}' is not available (no mirror)")

    monkeypatch.setattr(runner, "load", unavailable)
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    out = tmp_path / "a" / "b"
    with pytest.raises(DataUnavailable, match=r"\(kinematics, bank: no dataset mirror is set.*RFBENCH_DATA_DIR or "
                                              r"--data-dir.*rfbench datasets fetch kinematics bank"):
        runner.run(["kinematics", "bank"], ["rff-gauss"], [10], SMALL, str(out), progress=True, registry=load_registry())
    assert not (tmp_path / "a").exists()
    said = []
    runner.run(["kinematics", "bank"], ["rff-gauss"], [10], SMALL, str(out), progress=True, warn=said.append,
               all_unavailable_ok=True, registry=load_registry())
    assert said == ["skipped: dataset 'kinematics' is not available (no mirror)",
                    "skipped: dataset 'bank' is not available (no mirror)",
                    "nothing run for rff-gauss: none of its datasets can be obtained here"]
    assert "every task is done" not in capsys.readouterr().err


def test_non_finite_predictions_are_an_error_record_that_a_rerun_retries(tmp_path, monkeypatch):
    """A method that predicts NaN or inf gets an error record naming it (never a done record with a
    NaN error, which the readers refuse); the next run retries the task."""
    import json

    from rfbench.cli import main

    module = tmp_path / "nanmod.py"
    module.write_text("import numpy as np\nfrom sklearn.base import BaseEstimator, RegressorMixin\n"
                      "class NaNMethod(BaseEstimator, RegressorMixin):\n"
                      "    def fit(self, X, y):\n        return self\n"
                      "    def predict(self, X):\n        out = np.zeros(len(X)); out[0] = np.inf; out[1] = np.nan\n"
                      "        return out\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    argv = ["run", "--datasets", "friedman-generated", "--methods", "nanmod:NaNMethod", "--features", "10",
            "--outer-folds", "2", "--inner-folds", "2", "--max-samples", "100", "--quiet", "--no-report", "--out", "o"]
    invocations = []
    for _ in range(2):
        try:
            main(argv)
        except SystemExit as exc:
            assert exc.code in (0, None)
        records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
        assert len(records) == 2 and {r["status"] for r in records} == {"error"}
        assert all("predicted 2 non-finite values (NaN or inf) of 50" in r["message"] for r in records)
        invocations.append({r["invocation"] for r in records})
    assert len(invocations[1]) == 1 and invocations[1] != invocations[0]     # the rerun ran both tasks again


def test_a_changed_data_file_is_refused_on_resume_naming_both_checksums(tmp_path, monkeypatch, capsys):
    """Same name, same row count, other values: resuming into the same --out would mix two datasets'
    results; refused in one line, by both routes (a data file on the command line, a registry whose
    sha256 was updated), and nothing is written."""
    import hashlib

    import numpy as np

    from rfbench.cli import main
    from tests.cli_errors import one_line_error

    monkeypatch.chdir(tmp_path)

    def write(seed):
        rng = np.random.default_rng(seed)
        X = rng.normal(size=(60, 3))
        np.savetxt("d.csv", np.c_[X, X.sum(1)], delimiter=",", header="a,b,c,y", comments="")
        return hashlib.sha256(open("d.csv", "rb").read()).hexdigest()

    common = ["--methods", "rff-gauss", "--features", "10", "--outer-folds", "2", "--inner-folds", "2", "--quiet",
              "--no-report"]
    old = write(0)
    main(["run", "--datasets", "d.csv", "--target", "y", *common, "--out", "o"])
    new = write(1)
    capsys.readouterr()
    before = sorted(p.name for p in (tmp_path / "o").rglob("*"))
    line = one_line_error(capsys, ["run", "--datasets", "d.csv", "--target", "y", *common, "--out", "o"],
                          "a changed data file needs a new --out")
    assert old in line and new in line
    # the registry route: an entry whose sha256 was updated to the new file's
    (tmp_path / "reg.yaml").write_text(f"datasets:\n  d:\n    file: d.csv\n    target: y\n    sha256: \"{new}\"\n")
    line = one_line_error(capsys, ["run", "--registry", "reg.yaml", "--datasets", "d", *common, "--out", "o"],
                          "a changed data file needs a new --out")
    assert old in line and new in line
    assert sorted(p.name for p in (tmp_path / "o").rglob("*")) == before


@pytest.mark.parametrize("body, message", [("os._exit(1)", "worker died"), ("raise SystemExit(3)", "SystemExit: 3")])
def test_a_user_method_that_ends_its_process_is_an_error_record_with_one_job(tmp_path, monkeypatch, body, message):
    """--jobs 1 runs a user's method in a worker process (it may end it: os._exit, a crash), and a
    SystemExit it raises is caught: the run goes on, each task is an error record, no claim is left."""
    import json

    from rfbench.cli import main

    (tmp_path / "exitmod.py").write_text("import os\nfrom sklearn.base import BaseEstimator, RegressorMixin\n"
                                         "class Ends(BaseEstimator, RegressorMixin):\n"
                                         f"    def fit(self, X, y):\n        {body}\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    main(["run", "--datasets", "friedman-generated", "--methods", "exitmod:Ends", "--features", "10", "--outer-folds",
          "2", "--inner-folds", "2", "--max-samples", "100", "--jobs", "1", "--quiet", "--no-report", "--out", "o"])
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
    assert len(records) == 2 and all(r["status"] == "error" and message in r["message"] for r in records)
    assert not list((tmp_path / "o" / "records").glob("*.claim"))


def test_a_thread_sensitive_method_is_not_resumed_with_another_thread_count(tmp_path, monkeypatch, capsys):
    """à la carte's numbers change with the BLAS threads (results/thread-invariance.json): a resume
    that would finish its cell with another --threads is refused in one line before anything is
    written; the same thread count resumes, and a finished cell is no reason to refuse."""
    import json

    from rfbench import registry as reg
    from rfbench.cli import main
    from tests.cli_errors import one_line_error

    flagged = {name for name, m in reg.load().methods.items() if m.thread_sensitive}
    assert {"alc", "alc-q1", "alc-q2", "alc-q5", "gp", "krr", "salsa"} <= flagged
    assert not flagged & {"rff-gauss", "eerf", "lkrf", "gfc", "lgbm", "gbrff1", "falkon", "hgb"}

    monkeypatch.chdir(tmp_path)
    (tmp_path / "reg.yaml").write_text("methods:\n  sensitive:\n    estimator: rfbench.methods.rff:RFFRegressor\n"
                                       "    params: {kernel: gaussian}\n    thread_sensitive: true\n")
    common = ["--registry", "reg.yaml", "--datasets", "breiman-generated", "--methods", "sensitive,rff-gauss",
              "--features", "10", "--outer-folds", "3", "--inner-folds", "2", "--max-samples", "80", "--jobs", "1",
              "--quiet", "--no-report", "--out", "o"]
    main(["run", *common, "--folds", "0", "--threads", "1"])
    capsys.readouterr()
    before = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "o").rglob("*")}
    line = one_line_error(capsys, ["run", *common, "--folds", "0-1", "--threads", "2"],
                          "this run would use 2, which changes sensitive's numbers")
    assert "used 1 BLAS thread(s)" in line and "--threads 1" in line
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "o").rglob("*")} == before   # nothing written
    main(["run", *common, "--folds", "0-1", "--threads", "1"])
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
    assert len(records) == 4 and {r["threads"] for r in records} == {1}
    # every task of the sensitive cell done: nothing of it would be mixed, so another count runs the rest
    main(["run", *common, "--folds", "0-1", "--threads", "2"])


def test_the_dry_run_does_not_count_a_data_file_with_another_checksum_as_offline(tmp_path, monkeypatch, capsys):
    """A user's data file whose sha256 is not the registry's would be refused by the run: the dry run
    says so instead of counting it as data offline (or as needing the network)."""
    import hashlib

    from rfbench.cli import main
    from rfbench.data.loader import data_state, offline

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    np.savetxt("d.csv", np.c_[X, X.sum(1)], delimiter=",", header="a,b,c,y", comments="")
    good = hashlib.sha256((tmp_path / "d.csv").read_bytes()).hexdigest()
    for sha, state in ((good, "offline"), ("0" * 64, "sha256 differs")):
        (tmp_path / "reg.yaml").write_text(f"datasets:\n  d:\n    file: d.csv\n    target: y\n    sha256: \"{sha}\"\n")
        reg = registry.load([tmp_path / "reg.yaml"])
        assert data_state(reg.dataset("d"), registry=reg) == state
        assert offline(reg.dataset("d"), registry=reg) == (state == "offline")
        main(["run", "--registry", "reg.yaml", "--datasets", "d", "--methods", "rff-gauss", "--features", "10",
              "--dry-run", "--out", "o"])
        out = capsys.readouterr().out
        assert state in out.splitlines()[2]
        assert ("does not have the sha256 the registry gives it" in out) == (state != "offline")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("raised", ["OutOfMemoryError('CUDA out of memory. Tried to allocate 8.00 GiB')",
                                    "MemoryError('Unable to allocate 8.0 GiB for an array')",
                                    "np.linalg.LinAlgError('the Cholesky of K failed past the jitter ladder')"])
def test_a_task_out_of_memory_or_past_its_jitter_ladder_is_its_error_record_and_the_run_goes_on(
        tmp_path, monkeypatch, raised):
    """A GPU (or host) out of memory, or a Cholesky that fails past its jitter ladder, in one task: that
    task's one-line error record, the other tasks done, the run ends normally."""
    import json

    from rfbench.cli import main

    (tmp_path / "oommod.py").write_text(
        "import numpy as np\nfrom sklearn.base import BaseEstimator, RegressorMixin\n"
        "class OutOfMemoryError(RuntimeError):\n    pass\n"       # torch.cuda.OutOfMemoryError is a RuntimeError
        "class Big(BaseEstimator, RegressorMixin):\n"
        "    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):\n"
        "        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs\n"
        "    def fit(self, X, y):\n"
        f"        if len(y) % 2:\n            raise {raised}\n"
        "        self.mean_ = float(np.mean(y))\n        return self\n"
        "    def predict(self, X):\n        return np.full(len(X), self.mean_)\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    main(["run", "--datasets", "friedman-generated", "--methods", "oommod:Big", "--features", "10", "--outer-folds",
          "3", "--inner-folds", "2", "--max-samples", "100", "--jobs", "1", "--quiet", "--no-report", "--out", "o"])
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
    assert len(records) == 3
    failed = [r for r in records if r["status"] == "error"]
    assert failed and len(failed) < 3 and all(r["status"] == "done" for r in records if r not in failed)
    said = {"OutOfMemoryError": "GPU out of memory: CUDA out of memory", "MemoryError": "MemoryError: Unable to",
            "np.linalg.LinAlgError": "LinAlgError: the Cholesky"}[raised.split("(")[0]]
    assert all(r["message"].startswith(said) and "\n" not in r["message"] for r in failed), failed[0]["message"]
    assert not list((tmp_path / "o" / "records").glob("*.claim"))


def test_status_takes_the_registry_of_a_user_dataset_and_estimates_without_its_shape(tmp_path, monkeypatch, capsys):
    """`status DIR --registry FILE` reads a run on a user's dataset (without it: 'unknown dataset', one
    line); a dataset entry without a shape is left out of the size law instead of taking log(0)."""
    import warnings

    from rfbench.cli import main
    from tests.cli_errors import one_line_error

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    np.savetxt("d.csv", np.c_[X, X.sum(1)], delimiter=",", header="a,b,c,y", comments="")
    (tmp_path / "reg.yaml").write_text("datasets:\n  mydata:\n    file: d.csv\n    target: y\n")
    main(["run", "--registry", "reg.yaml", "--datasets", "mydata", "--methods", "rff-gauss", "--features", "10",
          "--outer-folds", "2", "--inner-folds", "2", "--quiet", "--no-report", "--out", "o"])
    capsys.readouterr()
    one_line_error(capsys, ["status", "o"], "unknown dataset 'mydata'")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        main(["status", "o", "--registry", "reg.yaml"])
    assert "o: 2 of 2 done, 0 failed, 0 left" in capsys.readouterr().out


def test_longest_first_orders_by_estimate_and_keeps_the_unestimated_last_in_their_order():
    items = [WorkItem("d", m, 0, (10,)) for m in "abcde"]
    est = dict(zip(items, [1.0, float("nan"), 5.0, 1.0, float("nan")], strict=True))
    ordered = runner.longest_first(items, lambda its: [est[i] for i in its])
    assert ordered == [items[2], items[0], items[3], items[1], items[4]]
    assert runner.longest_first([], lambda its: []) == []
    # device items first in each part (at most --gpu-slots run at once; the other workers take the
    # CPU items meanwhile), each kind longest first
    dev = [WorkItem("d", m, 0, (10,), "cuda") for m in "fg"]
    est.update({dev[0]: 2.0, dev[1]: float("nan")})
    assert runner.longest_first(items + dev, lambda its: [est[i] for i in its]) == [
        dev[0], items[2], items[0], items[3], dev[1], items[1], items[4]]


def test_a_resumed_run_dispatches_the_longest_estimated_items_first_with_the_same_results(tmp_path, monkeypatch):
    """With finished tasks in --out the runner orders the rest longest first (their estimates from
    those tasks, as `rfbench status` makes them); a task's records are keyed and seeded by the task
    alone, so the order changes no value."""
    methods, features = ["rff-gauss", "lgbm"], [10, 40]
    runner.run(["friedman-generated"], methods, features, SMALL, str(tmp_path / "planned"), progress=False, registry=load_registry())
    seen = []
    real = pool.run_pool
    monkeypatch.setattr(pool, "run_pool", lambda items, *a, **k: (seen.append(list(items)), real(items, *a, **k))[1])
    resumed = tmp_path / "resumed"
    runner.run(["friedman-generated"], methods, features, SMALL, str(resumed), RunConfig(folds=[0]), progress=False, registry=load_registry())
    assert [i.fold for i in seen[0]] == [0, 0, 0]          # nothing finished yet: the planned order
    estimate = runner.item_seconds(runner.finished_estimate(runner.RunDir(resumed), SMALL, registry=REG))
    runner.run(["friedman-generated"], methods, features, SMALL, str(resumed), progress=False, registry=load_registry())
    est = estimate(seen[1])                               # the estimates of fold 0's tasks, as the run had them
    assert len(seen[1]) == 6 and list(est) == sorted(est, reverse=True)
    a, b = (pd.read_csv(d / "results.csv").set_index(["method", "n_features", "fold"]).sort_index()
            for d in (tmp_path / "planned", resumed))
    assert len(a) == 12 and a["error"].equals(b["error"]) and a["params"].equals(b["params"])


def test_the_estimate_reads_the_numpy_paths_times_only(tmp_path):
    """A task computed by the torch code (a GPU's record, here torch-cpu's) says nothing of the NumPy
    path's time, which the estimate projects: it is left out, and the cell's estimate is the median of
    its CPU tasks alone."""
    pytest.importorskip("torch")
    out = tmp_path / "mixed"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(folds=[0], device="torch-cpu"),
               progress=False, registry=load_registry())
    assert runner.finished_estimate(runner.RunDir(out), SMALL, registry=REG) is None
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), RunConfig(folds=[1]),
               progress=False, registry=load_registry())
    times = pd.read_csv(out / "results.csv").set_index("fold")
    estimate = runner.finished_estimate(runner.RunDir(out), SMALL, registry=REG)
    seconds, same_cell = estimate([("friedman-generated", "rff-gauss", 10)])
    assert seconds[0] == pytest.approx(times.loc[1, "cpu_s"]) and bool(same_cell[0])     # its CPU seconds
    finished = runner.finished_cpu_times(runner.RunDir(out), SMALL, registry=REG)
    assert finished[["total_s", "cpu_s"]].values.tolist() == [times.loc[1, ["total_s", "cpu_s"]].tolist()]


def test_device_tasks_beside_the_cpu_workers_give_the_same_records(tmp_path, monkeypatch):
    """--gpu-beside runs the device tasks on lanes of their own (jobs + gpu_slots lanes, at most jobs
    CPU tasks in flight); the records are the same as with the device tasks holding a worker."""
    pytest.importorskip("torch")
    lanes = []
    real = pool.Lanes
    monkeypatch.setattr(pool, "Lanes", lambda jobs, *a, **k: (lanes.append(jobs), real(jobs, *a, **k))[1])
    frames = []
    for beside in (False, True):
        out = tmp_path / f"beside-{beside}"
        config = RunConfig(jobs=1, device="torch-cpu", gpu_slots=1, gpu_beside=beside, folds=(0, 1))
        runner.run(["friedman-generated"], ["rff-gauss", "lgbm"], [10], SMALL, str(out), config, progress=False, registry=load_registry())
        frames.append(pd.read_csv(out / "results.csv").set_index(["method", "fold"]).sort_index())
    assert lanes == [2]                       # held: one worker, in this process; beside: 1 + 1 lanes
    a, b = frames
    assert len(a) == 4 and a["error"].equals(b["error"]) and a["params"].equals(b["params"])
    assert json.loads((tmp_path / "beside-True" / "runs.jsonl").read_text().splitlines()[0])["gpu_beside"] is True


def test_the_workers_use_the_download_cache_the_config_resolved(tmp_path, monkeypatch):
    """The download cache is resolved once, with the RunConfig: the tasks read it there even when
    $RFBENCH_CACHE_DIR changes afterwards (a worker reads neither the environment nor the config file)."""
    from rfbench.data import loader

    ds = REG.dataset("friedman-generated")
    first = tmp_path / "first"
    made = loader.load_entry(ds, (), use_cache=False)
    loader._write_cache(ds, loader.Loaded(made.X, made.y, "url", "test"), first)   # read back as source "cache"
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(first))
    config = RunConfig()
    assert config.cache_dir == str(first)
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(tmp_path / "later"))
    out = tmp_path / "run"
    runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, str(out), config, progress=False,
               registry=load_registry())
    df = pd.read_csv(out / "results.csv")
    assert (df["status"] == "done").all() and set(df["source"]) == {"cache"}
    item = WorkItem("friedman-generated", "rff-gauss", 0, (10,))
    [rec] = execute(item, WorkerOptions(SMALL, DataSources((), str(first)), 1, None, REG))
    assert rec.source == "cache"
    assert RunConfig(cache_dir=str(first)).replace(jobs=2).cache_dir == str(first)
