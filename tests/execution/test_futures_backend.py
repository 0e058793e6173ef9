"""--backend futures (rfbench.execution.futures_pool): a real run on a concurrent.futures process pool
gives the records of the local backend (the same keys and values), resumes, and is a command-line
choice."""

import json
import subprocess
import sys

import pytest

from rfbench.execution import runner
from rfbench.execution.backends import BACKENDS
from rfbench.execution.runconfig import RunConfig
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry

RUN = [sys.executable, "-m", "rfbench.cli"]
SMALL = Protocol("cv", outer_folds=3, inner_folds=3, seed=0, max_samples=300)
#: what differs between two runs of the same tasks: the times, when they finished, which invocation
VOLATILE = {"tune_s", "fit_s", "predict_s", "total_s", "cpu_s", "preprocess_s", "shared_fit_s", "finished_at",
            "invocation"}


def _records(out) -> dict[str, dict]:
    """record file name → its fields but the volatile ones."""
    return {p.name: {k: v for k, v in json.loads(p.read_text()).items() if k not in VOLATILE}
            for p in sorted((out / "records").glob("*.json"))}


def _run(out, backend: str, **config) -> None:
    runner.run(["friedman-generated", "wine"], ["rff-gauss", "lgbm"], [10, 20], SMALL, str(out),
               RunConfig(backend=backend, jobs=2, threads=1, **config), progress=False, registry=load_registry())


def test_the_futures_backend_is_registered():
    assert "futures" in BACKENDS and RunConfig(backend="futures").backend == "futures"


@pytest.mark.slow     # two real runs with worker processes: ~40 CPU s
def test_records_on_the_futures_pool_equal_the_local_backend_s_and_it_resumes(mirror_dir, tmp_path):
    """A generated and a mirrored (classification) dataset, a method of one budget per task and one
    whose budgets share a fit: the same record files with the same fields and values; a run of fold 0
    first, then the rest, ends with the same records, its fold-0 records untouched by the second."""
    _run(tmp_path / "local", "local")
    _run(tmp_path / "futures", "futures")
    local, futures = _records(tmp_path / "local"), _records(tmp_path / "futures")
    assert len(local) == 2 * 2 * 2 * 3
    assert {r["status"] for r in futures.values()} == {"done"}
    assert futures == local
    run_info = json.loads((tmp_path / "futures" / "run.json").read_text())
    assert run_info["backend"] == "futures" and run_info["data_dir"] == str(mirror_dir)

    resumed = tmp_path / "resumed"
    _run(resumed, "futures", folds=(0,))
    first = {p.name: p.read_text() for p in (resumed / "records").glob("*.json")}
    assert len(first) == 2 * 2 * 2
    _run(resumed, "futures")
    assert _records(resumed) == local
    assert all((resumed / "records" / name).read_text() == text for name, text in first.items())


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["futures"])
def test_the_command_line_accepts_backend_futures(backend, tmp_path):
    out = tmp_path / "run"
    res = subprocess.run([*RUN, "run", "--backend", backend, "--datasets", "friedman-generated", "--methods",
                          "rff-gauss", "--features", "10", "--outer-folds", "3", "--inner-folds", "3",
                          "--max-samples", "200", "--jobs", "2", "--threads", "1", "--quiet", "--no-report",
                          "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert len(list((out / "records").glob("*.json"))) == 3
    assert json.loads((out / "run.json").read_text())["backend"] == "futures"


def _ended(processes, within_s: float = 10) -> bool:
    """Whether every process ended within ``within_s`` (polled: the pool's own thread may reap it first)."""
    import time

    deadline = time.monotonic() + within_s
    while any(p.is_alive() for p in processes) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not any(p.is_alive() for p in processes)


@pytest.mark.slow     # three spawned workers: ~3 CPU s
def test_a_killed_pool_leaves_no_worker_process():
    """kill and an interrupted shutdown kill the pool's workers (kept by its mp_context, no private
    attribute), even mid-task; the next pool's workers are new ones."""
    import time

    from rfbench.execution.futures_pool import FuturesExecutor

    executor = FuturesExecutor(2, options=None)
    busy = [executor.pool.submit(time.sleep, 60) for _ in range(2)]
    while not all(f.running() for f in busy):
        time.sleep(0.05)
    first = list(executor.context.processes)
    assert len(first) == 2 and all(p.is_alive() for p in first)
    executor.kill(None)                           # nothing else in flight: a new, empty pool
    assert _ended(first)
    executor.pool.submit(time.sleep, 60)
    while not executor.context.processes:
        time.sleep(0.05)
    second = list(executor.context.processes)
    assert second and not set(second) & set(first)
    executor.shutdown(interrupted=True)
    assert _ended(second)
