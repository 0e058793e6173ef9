"""One validated RunConfig for run, reproduce and the library; --device and its records; the loop over
an executor (GPU slots, deaths, time limits counted from a task's start), tested with fake executors
and a fake GPU (CI has none)."""

import dataclasses
import json
import os
import pickle
import sys
from collections import Counter

import pandas as pd
import pytest

from rfbench import contract
from rfbench.cli import main
from rfbench.data.sources import DataSources
from rfbench.errors import UsageError
from rfbench.execution import executor, runner, tasks
from rfbench.execution.executor import (
    Died,
    Dispatch,
    Failed,
    Finished,
    ItemCallbacks,
    Slots,
    Started,
)
from rfbench.execution.runconfig import MAX_TIMEOUT_S, RunConfig
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.methods import device as devices
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry
from tests.cli_errors import one_line_error

SMALL = Protocol("cv", outer_folds=3, inner_folds=2, seed=0, max_samples=200)
#: where a task reads its data: no mirror directory, the download cache of the setting
NO_MIRROR = DataSources((), None)
TINY = ["--features", "10", "--outer-folds", "3", "--inner-folds", "2", "--max-samples", "200", "--quiet",
        "--no-report"]




@pytest.fixture
def fake_gpu(monkeypatch):
    """--device cuda/auto resolve to the GPU, as on a machine that has one."""
    monkeypatch.setattr(devices, "resolve", lambda requested: ("cpu", None) if requested == "cpu" else ("cuda", None))


# -- 1. one config, validated once -------------------------------------------------------------------

@pytest.mark.parametrize("settings, message", [
    ({"jobs": 0}, "--jobs must be at least 1"),
    ({"threads": 0}, "--threads 0 must be at least 1"),
    ({"gpu_slots": 0}, "--gpu-slots 0 must be at least 1"),
    ({"timeout_s": 0}, "--timeout must be positive"),
    ({"timeout_s": MAX_TIMEOUT_S + 1}, "is longer than 30 days"),
    ({"seeds": []}, "--seeds names no seed"),
    ({"backend": "ray"}, "--backend ray: use local"),
    ({"scheduler": "tcp://h:1"}, "--scheduler names a dask scheduler: add --backend dask"),
    ({"scheduler": " ", "backend": "dask"}, "--scheduler is empty"),
    ({"scheduler": "tcp://h:1", "backend": "dask", "threads": 2}, "--threads sizes local workers"),
    ({"device": "tpu"}, "--device must be one of cpu, cuda, auto, got 'tpu'"),
    ({"data_dir": "/nonexistent"}, "--data-dir /nonexistent is not a directory"),
])
def test_every_bound_of_a_run_is_checked_when_its_config_is_built(settings, message):
    with pytest.raises(UsageError, match=None) as exc:
        RunConfig(**settings)
    assert message in str(exc.value)


def test_a_config_is_frozen_typed_and_normalised():
    config = RunConfig(seeds=[2, 1, 2], folds=[1, 0], timeout_s=90)
    assert config.seeds == (2, 1) and config.folds == (1, 0) and config.timeout_s == 90.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.jobs = 4
    with pytest.raises(UsageError, match="--jobs must be at least 1"):
        config.replace(jobs=0)                  # a copy is validated again
    protocols, folds = config.request(SMALL)
    assert [p.seed for p in protocols] == [2, 1] and folds == [0, 1]
    with pytest.raises(UsageError, match=r"--folds 3: outer folds are numbered 0..2"):
        RunConfig(folds=[3]).request(SMALL)
    with pytest.raises(TypeError, match="config must be a RunConfig"):
        runner.run(["friedman-generated"], ["rff-gauss"], [10], SMALL, "x", {"jobs": 1}, registry=load_registry())


def test_a_configs_sources_are_its_resolved_mirrors_and_cache_as_one_hashable_picklable_value(tmp_path,
                                                                                              monkeypatch):
    """What the run hands to everything that loads data (its workers included): the mirror
    directories and the download cache the config resolved, one frozen value, equal for equal configs
    (a key of the tasks' data cache) and sent to a worker process as it is."""
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    monkeypatch.chdir(tmp_path)
    config = RunConfig(data_dir=os.pathsep.join([str(first), str(second)]), cache_dir="cache")
    sources = config.sources
    assert isinstance(sources, DataSources)
    assert sources == DataSources((str(first), str(second)), str(tmp_path / "cache"))
    assert (sources.data_dirs, sources.cache_dir) == (config.data_dirs, config.cache_dir)   # absolute cache
    with pytest.raises(dataclasses.FrozenInstanceError):
        sources.cache_dir = None
    assert pickle.loads(pickle.dumps(sources)) == sources
    again = RunConfig(data_dir=os.pathsep.join([str(first), str(second)]), cache_dir="cache")
    assert again == config and again.sources == sources and hash(again.sources) == hash(sources)
    assert config.replace(jobs=2).sources == sources            # not a data setting: the same sources
    assert RunConfig(data_dir=str(second), cache_dir="cache").sources != sources
    monkeypatch.delenv("RFBENCH_DATA_DIR", raising=False)
    assert RunConfig(cache_dir="cache").sources.data_dirs == DataSources.from_settings().data_dirs  # the settings'
    # a library function's sources=None: the settings' (here $RFBENCH_DATA_DIR), a given value as is
    monkeypatch.setenv("RFBENCH_DATA_DIR", str(second))
    assert DataSources.given_or_settings(None) == DataSources((str(second),), None)
    assert DataSources.given_or_settings(sources) is sources


def test_device_cuda_without_torch_or_gpu_is_one_line_and_auto_falls_back_with_a_note(monkeypatch):
    def no_torch():
        raise devices.DeviceUnavailable("the GPU path needs torch: pip install 'rfbench[gpu]'")

    monkeypatch.setattr(devices, "torch_module", no_torch)
    with pytest.raises(UsageError, match=r"^--device cuda: the GPU path needs torch: pip install 'rfbench\[gpu\]'"):
        RunConfig(device="cuda")
    auto = RunConfig(device="auto")
    assert auto.device == "cpu" and auto.device_slots is None
    assert auto.device_note.startswith("--device auto: the GPU path needs torch")
    assert RunConfig().device_note is None


def test_torch_cpu_is_a_library_device_for_the_device_regression_and_needs_torch(monkeypatch):
    """RunConfig(device="torch-cpu"): the device methods' torch code on the CPU (python -m rfbench.experiments.regress
    --device torch-cpu); no GPU needed, torch needed (one line without it)."""
    pytest.importorskip("torch")
    config = RunConfig(device="torch-cpu")
    assert config.device == "torch-cpu" and config.device_note is None and config.device_slots == 4

    def no_torch():
        raise devices.DeviceUnavailable("the GPU path needs torch: pip install 'rfbench[gpu]'")

    monkeypatch.setattr(devices, "torch_module", no_torch)
    with pytest.raises(UsageError, match=r"^device torch-cpu: the GPU path needs torch"):
        RunConfig(device="torch-cpu")


def test_device_cuda_resolved_where_a_gpu_is_and_refused_on_dask(fake_gpu):
    config = RunConfig(device="auto", gpu_slots=2)
    assert config.device == "cuda" and config.device_slots == 2
    with pytest.raises(UsageError, match="--device cuda runs device tasks on local workers"):
        RunConfig(device="cuda", backend="dask")


def test_the_command_line_refuses_a_device_it_cannot_use_in_one_line(tmp_path, monkeypatch, capsys):
    def no_torch():
        raise devices.DeviceUnavailable("the GPU path needs torch: pip install 'rfbench[gpu]'")

    monkeypatch.setattr(devices, "torch_module", no_torch)
    out = tmp_path / "run"
    one_line_error(capsys, ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY,
                             "--device", "cuda", "--out", str(out)],
                    "--device cuda: the GPU path needs torch: pip install 'rfbench[gpu]'")
    one_line_error(capsys, ["reproduce", "gfc2016-table1", "--dry-run", "--device", "cuda"],
                    "--device cuda: the GPU path needs torch")
    assert not out.exists()
    one_line_error(capsys, ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY,
                             "--gpu-slots", "0", "--out", str(out)],
                   "--gpu-slots 0 must be at least 1; give the device tasks")


def test_device_auto_runs_on_the_cpu_with_the_note_once_and_the_config_file_sets_the_device(
        tmp_path, monkeypatch, capsys):
    def no_torch():
        raise devices.DeviceUnavailable("the GPU path needs torch: pip install 'rfbench[gpu]'")

    monkeypatch.setattr(devices, "torch_module", no_torch)
    settings = tmp_path / "rfbench.toml"
    settings.write_text('device = "auto"\n')
    monkeypatch.setenv("RFBENCH_CONFIG", str(settings))
    out = tmp_path / "run"
    argv = ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *TINY, "--seeds", "0,1",
            "--out", str(out)]
    main(argv)                          # the device setting of the config file: auto
    err = capsys.readouterr().err
    assert err.count("--device auto: the GPU path needs torch") == 1, err      # once, for both seeds
    infos = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [i["device"] for i in infos] == ["cpu", "cpu"]
    assert {r["device"] for r in runner.RunDir(out).records()} == {"cpu"}
    main([*argv, "--device", "cpu"])            # the command line wins: no note
    assert "--device auto" not in capsys.readouterr().err
    monkeypatch.setenv("RFBENCH_DEVICE", "cpu")   # so does the environment over the file
    main(argv)
    assert "--device auto" not in capsys.readouterr().err
    monkeypatch.setenv("RFBENCH_DEVICE", "gpu")
    one_line_error(capsys, argv, "RFBENCH_DEVICE=gpu must be one of cpu, cuda, auto")
    monkeypatch.delenv("RFBENCH_DEVICE")
    settings.write_text('device = "gpu"\n')
    one_line_error(capsys, argv, "'device' must be one of cpu, cuda, auto, got 'gpu'")


# -- 1. the device reaches the estimators that take one -----------------------------------------------

DEVMOD = '''
import os
import sys
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class CpuEst(RegressorMixin, BaseEstimator):
    """Notes each fit (its kind, device, process, fold, times and whether torch was imported) in
    $RFBENCH_TEST_LOG, taking $RFBENCH_TEST_FIT_S seconds."""

    kind = "cpu"

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        start = time.time()
        time.sleep(float(os.environ.get("RFBENCH_TEST_FIT_S", "0")))
        if os.environ.get("RFBENCH_TEST_OOM") and getattr(self, "device", "cpu") != "cpu":
            class OutOfMemoryError(RuntimeError):
                pass
            raise OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB total)"
                                   + os.environ["RFBENCH_TEST_OOM"] + "\\nmore")
        with open(os.path.join(os.environ["RFBENCH_TEST_LOG"], "fits.jsonl"), "a") as fh:
            fh.write(__import__("json").dumps({"kind": self.kind, "device": getattr(self, "device", None),
                                               "pid": os.getpid(), "rs": self.random_state, "start": start,
                                               "end": time.time(), "torch": "torch" in sys.modules}) + "\\n")
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


class DevEst(CpuEst):
    """The same, taking a device (as the dense methods do)."""

    kind = "device"

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1, device="cpu"):
        super().__init__(n_features, cv, random_state, n_jobs)
        self.device = device
'''

#: a torch that notes who imported it and is not there (fast, and visible)
FAKE_TORCH = '''
import os
open(os.path.join(os.environ["RFBENCH_TEST_LOG"], f"torch-imported-{os.getpid()}"), "w").close()
raise ImportError("no torch in this test")
'''


@pytest.fixture
def devmod(tmp_path, monkeypatch):
    """The test estimators importable here and in worker processes; returns the log directory."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "devmod.py").write_text(DEVMOD)
    (code / "torch.py").write_text(FAKE_TORCH)
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("RFBENCH_TEST_LOG", str(log))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.chdir(code)
    yield log
    sys.modules.pop("devmod", None)


def _fits(log) -> list[dict]:
    path = log / "fits.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_accepts_device_reads_the_constructor_once_for_every_estimator():
    class Takes:
        def __init__(self, n_features=10, device="cpu"):
            pass

    class KeywordsOnly:
        def __init__(self, n_features=10, **params):
            pass

    assert contract.accepts_device(Takes) and not contract.accepts_device(KeywordsOnly)
    assert not contract.accepts_device(contract.ForeignEstimator)      # a wrapped user estimator: the CPU


def test_a_device_item_gives_its_estimator_the_device_and_records_it(devmod):
    from rfbench import registry

    reg, (dev, cpu) = registry.resolve_method_names(registry.load(), ["devmod:DevEst", "devmod:CpuEst"])
    [on_gpu] = execute(WorkItem("friedman-generated", dev, 0, (10,), "cuda"), WorkerOptions(SMALL, NO_MIRROR, 1, None, reg))
    [user] = execute(WorkItem("friedman-generated", cpu, 0, (10,), "cuda"), WorkerOptions(SMALL, NO_MIRROR, 1, None, reg))
    [plain] = execute(WorkItem("friedman-generated", dev, 1, (10,)), WorkerOptions(SMALL, NO_MIRROR, 1, None, reg))
    assert (on_gpu.status, on_gpu.device) == ("done", "cuda")
    assert (user.status, user.device) == ("done", "cpu")        # no device parameter: the CPU as it is
    assert (plain.status, plain.device) == ("done", "cpu")
    assert [f["device"] for f in _fits(devmod)] == ["cuda", None, "cpu"]
    # the run's plan: only the estimators that take a device are device items
    items = runner.plan(["friedman-generated"], [dev, cpu], [10], SMALL, runner.RunDir(devmod / "r").ensure(),
                        device="cuda", registry=reg)
    assert {(i.method, i.device) for i in items} == {(dev, "cuda"), (cpu, "cpu")}


def test_a_gpu_out_of_memory_error_is_the_tasks_one_line_error_record(devmod, monkeypatch):
    from rfbench import registry

    monkeypatch.setenv("RFBENCH_TEST_OOM", ".")
    reg, [dev] = registry.resolve_method_names(registry.load(), ["devmod:DevEst"])
    [rec] = execute(WorkItem("friedman-generated", dev, 0, (10,), "cuda"), WorkerOptions(SMALL, NO_MIRROR, 1, None, reg, gpu_slots=4))
    assert rec.status == "error" and rec.device == "cuda"
    assert rec.message == ("GPU out of memory: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.1 GiB "
                              "total).; lower --gpu-slots or the budget")
    # torch's one line is long (its advice on fragmentation): cut, so that ours stays in the record
    monkeypatch.setenv("RFBENCH_TEST_OOM", " Of the allocated memory ..." * 30)
    [rec] = execute(WorkItem("friedman-generated", dev, 0, (10,), "cuda"), WorkerOptions(SMALL, NO_MIRROR, 1, None, reg, gpu_slots=4))
    assert rec.message.startswith("GPU out of memory: CUDA out of memory. Tried to allocate 2.00 GiB")
    assert rec.message.endswith("; lower --gpu-slots or the budget") and len(rec.message) <= 500


def test_the_device_is_recorded_but_not_part_of_the_protocol_key(devmod, fake_gpu, tmp_path):
    from rfbench import registry

    reg, dev = registry.resolve_method_names(registry.load(), ["devmod:DevEst"])
    out = tmp_path / "run"
    runner.run(["friedman-generated"], dev, [10], SMALL, str(out), RunConfig(device="cuda", folds=[0]), registry=reg,
               progress=False)
    runner.run(["friedman-generated"], dev, [10], SMALL, str(out), RunConfig(folds=[0, 1]), registry=reg,
               progress=False)
    recs = sorted(runner.RunDir(out).records(), key=lambda r: r["fold"])
    assert [(r["fold"], r["device"], r["protocol"]) for r in recs] == [(0, "cuda", SMALL.key()),
                                                                       (1, "cpu", SMALL.key())]
    assert len(_fits(devmod)) == 2                  # fold 0 was done: the CPU run resumed, not redid it
    infos = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert [(i["device"], i["gpu_slots"]) for i in infos] == [("cuda", 4), ("cpu", None)]


# -- 2. the GPU slots: device items at most gpu_slots at once, CPU items meanwhile -------------------

class FakeExecutor:
    """Runs nothing: each ``events`` call starts and finishes the oldest item in flight; notes the
    kinds in flight after every submit."""

    def __init__(self, slots, die=(), clock=None):
        self.n, self.running, self.snapshots, self.die = slots, [], [], Counter(die)
        self.killed, self.settled_items = [], []

    def slots(self):
        return self.n

    def submit(self, item):
        self.running.append(item)
        self.snapshots.append(sorted(i.device for i in self.running))

    def events(self, timeout):
        item = self.running.pop(0)
        if self.die.get(item):
            self.die[item] -= 1
            return [Started(item, 0.0), Died(item, "A worker process ... terminated abruptly")]
        return [Started(item, 0.0), Finished(item, [{"item": item}])]

    def kill(self, item):
        self.killed.append(item)

    def settled(self, item):
        self.settled_items.append(item)

    def shutdown(self, interrupted):
        self.shut = interrupted


def _items(kinds: str) -> list[WorkItem]:
    return [WorkItem("d", "m", i, (10,), "cuda" if k == "g" else "cpu") for i, k in enumerate(kinds)]


def _dispatch(ex, items, gpu_slots=None, timeout_s=None, clock=None, taken=None):
    collected, released = [], []
    take = (lambda item: taken.append(item) or True) if taken is not None else (lambda item: True)
    d = Dispatch(ex, items, WorkerOptions(SMALL, NO_MIRROR, 1, timeout_s, None),
                 ItemCallbacks(take, lambda item, recs: collected.append((item, recs)), released.append),
                 Slots(device=gpu_slots), **({"clock": clock} if clock else {}))
    d.run()
    return d, collected, released


def test_device_items_never_exceed_the_gpu_slots_and_cpu_items_run_meanwhile():
    items = _items("ggggcccc")                      # the planned order puts every device item first
    ex = FakeExecutor(3)
    d, collected, released = _dispatch(ex, items, gpu_slots=1)
    assert sorted(i.fold for i, _ in collected) == list(range(8)) and not released
    assert max(s.count("cuda") for s in ex.snapshots) == 1 == d.peak_device
    assert ex.snapshots[:3] == [["cuda"], ["cpu", "cuda"], ["cpu", "cpu", "cuda"]]  # CPU items pulled ahead
    # without the GPU limit the planned order is kept: three device items at once
    ex = FakeExecutor(3)
    _dispatch(ex, items)
    assert max(s.count("cuda") for s in ex.snapshots) == 3


def test_a_task_whose_worker_died_is_rerun_once_then_recorded_never_claimed_twice():
    items = _items("cccc")
    ex = FakeExecutor(2, die=[items[1]])
    taken = []
    _, collected, _ = _dispatch(ex, items, taken=taken)
    assert taken == items and sorted(i.fold for i, _ in collected) == [0, 1, 2, 3]      # claimed once each
    ex = FakeExecutor(2, die=[items[1], items[1]])
    _, collected, _ = _dispatch(ex, items)
    [(_, recs)] = [(i, r) for i, r in collected if i == items[1]]
    assert recs[0].status == "error" and recs[0].message.startswith("worker died (2 times): A worker process")


def test_the_time_limit_counts_from_the_tasks_start_in_its_worker_not_its_submission():
    """A task submitted at t=0 whose worker took 100 s to start runs to t=103 within a 1 s timeout's
    limit (1 × 1.2 + 5 s after its start); past that its worker is killed and it is a timeout."""
    now = [0.0]
    item = _items("c")[0]

    class SlowStart(FakeExecutor):
        def events(self, timeout):
            if now[0] == 0.0:
                now[0] = 100.0
                return [Started(item, 100.0)]
            if now[0] == 100.0:
                now[0] = 105.0          # still within 6.2 s of its start: not killed
                return []
            now[0] = 110.0              # past it
            return []

    ex = SlowStart(1)
    _, collected, _ = _dispatch(ex, [item], timeout_s=1.0, clock=lambda: now[0])
    assert ex.killed == [item] and now[0] == 110.0
    [(_, recs)] = collected
    assert recs[0].status == "timeout" and recs[0].message.startswith("killed after 1 s")


def test_an_interrupted_dispatch_releases_every_claimed_item_and_kills_the_workers():
    items = _items("cgc")

    class Interrupted(FakeExecutor):
        def events(self, timeout):
            raise KeyboardInterrupt

    ex = Interrupted(2)
    with pytest.raises(KeyboardInterrupt):
        _dispatch(ex, items)
    assert ex.shut is True


def test_a_failed_event_is_one_error_record_per_budget():
    item = WorkItem("d", "m", 0, (10, 20), "cuda")

    class Fails(FakeExecutor):
        def events(self, timeout):
            return [Failed(self.running.pop(0), "worker failed: cannot unpickle")]

    _, [(_, recs)], _ = _dispatch(Fails(1), [item])
    assert [(r.n_features, r.status, r.device) for r in recs] == [(10, "error", "cuda"), (20, "error", "cuda")]
    assert executor.failed_records is not None


@pytest.mark.slow
def test_worker_lanes_run_at_most_gpu_slots_device_tasks_and_cpu_tasks_beside_them(devmod, fake_gpu, tmp_path,
                                                                                    monkeypatch):
    """Real worker lanes, a fake GPU: three workers, one GPU slot; the device tasks never overlap,
    the CPU tasks run beside them, each record says where it ran; a CPU-only run imports no torch."""
    from rfbench import registry

    monkeypatch.setenv("RFBENCH_TEST_FIT_S", "0.8")
    reg, methods = registry.resolve_method_names(registry.load(), ["devmod:DevEst", "devmod:CpuEst"])
    protocol = Protocol("cv", outer_folds=4, inner_folds=2, seed=0, max_samples=200)
    out = tmp_path / "run"
    runner.run(["friedman-generated"], methods, [10], protocol, str(out),
               RunConfig(jobs=3, threads=1, device="cuda", gpu_slots=1), registry=reg, progress=False)
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 8 and set(df["status"]) == {"done"}
    recs = runner.RunDir(out).records()
    assert {(r["method"], r["device"]) for r in recs} == {(methods[0], "cuda"), (methods[1], "cpu")}
    fits = _fits(devmod)
    dev = sorted((f["start"], f["end"]) for f in fits if f["kind"] == "device")
    cpu = [(f["start"], f["end"]) for f in fits if f["kind"] == "cpu"]
    assert len(dev) == 4 and all(a[1] <= b[0] for a, b in zip(dev, dev[1:], strict=False))        # one at a time
    assert any(s < de and ds < e for s, e in cpu for ds, de in dev)                 # CPU beside the GPU
    assert {f["device"] for f in fits if f["kind"] == "device"} == {"cuda"}
    imported = {int(p.name.rsplit("-", 1)[1]) for p in devmod.glob("torch-imported-*")}
    assert imported and imported <= {f["pid"] for f in fits if f["kind"] == "device"}   # device workers only
    for p in devmod.glob("torch-imported-*"):
        p.unlink()
    runner.run(["friedman-generated"], methods, [10], protocol, str(tmp_path / "cpu"),
               RunConfig(jobs=2, threads=1), registry=reg, progress=False)
    assert not list(devmod.glob("torch-imported-*"))      # the CPU never imports torch
    tasks._gpu_capped.clear()
