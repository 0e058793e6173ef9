import csv
import os
import resource
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# test functions measured as heavy (`--cpu-times`, then tests/slow_marks.py): marked slow, so the fast
# loop `pytest -m "not slow"` keeps its tests within the budget of CPU seconds written in the list's header
SLOW_LIST = Path(__file__).with_name("slow-tests.txt")


def _find_mirror() -> tuple[Path | None, str]:
    """The dataset mirror the tests use, or why there is none. RFBENCH_DATA_DIR when it is set and
    exists, else the project's ../shared/datasets beside the checkout (then set as RFBENCH_DATA_DIR). A RFBENCH_DATA_DIR that is set
    but missing (a fresh clone given the usual command) is dropped from the environment: rfbench
    itself refuses such a setting, which would fail every test on generated data too; the tests
    that need the mirror skip and say why."""
    env = os.environ.pop("RFBENCH_DATA_DIR", "").strip()
    if env:
        paths = [Path(p).resolve() for p in env.split(os.pathsep) if p.strip()]
        missing = [str(p) for p in paths if not p.is_dir()]
        if missing:
            return None, f"RFBENCH_DATA_DIR={env} is set but {', '.join(missing)} does not exist"
        # the README's command gives the mirror relative to the checkout; tests that run the CLI from
        # another directory need it absolute
        os.environ["RFBENCH_DATA_DIR"] = os.pathsep.join(map(str, paths))
        return (paths[0] if (paths[0] / "MANIFEST.csv").is_file() else None,
                f"RFBENCH_DATA_DIR={env} has no MANIFEST.csv")
    shared = ROOT.parent / "shared" / "datasets"
    if (shared / "MANIFEST.csv").is_file():
        os.environ["RFBENCH_DATA_DIR"] = str(shared)     # as if given: the CLI and loader read it
        return shared, ""
    return None, f"dataset mirror not available: no RFBENCH_DATA_DIR and no {shared}"


MIRROR, NO_MIRROR_REASON = _find_mirror()


@pytest.fixture
def mirror_dir():
    if MIRROR is None:
        pytest.skip(NO_MIRROR_REASON)
    return MIRROR


@pytest.fixture(params=["torch-cpu", "cuda"])
def torch_device(request):
    """The device a torch-path test runs on: "torch-cpu" everywhere (CI has no GPU) and "cuda" where a
    GPU is present (skipped elsewhere), so the same checks cover the CUDA path on a GPU machine."""
    if request.param == "cuda":
        from rfbench.methods.device import cuda_available

        if not cuda_available():
            pytest.skip("no CUDA GPU here")
    return request.param


@pytest.fixture
def runner_calls(monkeypatch):
    """``runner.run`` replaced by a stub that records each call as (methods, config) and raises
    :class:`tests.runner_stub.StopRun` (a command stops there); set ``runner_calls.stop = False`` to let the caller go
    on (a spec's run calls the runner once per group)."""
    from rfbench.execution import runner
    from tests.runner_stub import StopRun

    class Calls(list):
        stop = True

    calls = Calls()

    def fake_run(names, methods, budgets, protocol, out, config=None, **kw):
        calls.append((methods, config))
        if calls.stop:
            raise StopRun

    monkeypatch.setattr(runner, "run", fake_run)
    return calls


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path, monkeypatch):
    """Every test gets its own download cache and never touches the network."""
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", "http://127.0.0.1:9/api/v1/xml")  # closed port
    monkeypatch.setenv("OPENML_CACHE_DIR", str(tmp_path / "openml-cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    # the command line's default is one worker process per core; a test runs its tasks in-process
    # unless it asks for workers (test_runner tests the default itself)
    monkeypatch.setenv("RFBENCH_JOBS", "1")
    yield
    from rfbench.execution import tasks

    tasks._fold_data.cache_clear()     # a fold's data kept by one test (maybe monkeypatched) stays there


# -- the slow marks follow a measurement --------------------------------------------------------------

def pytest_addoption(parser):
    parser.addoption("--cpu-times", metavar="FILE", default=None,
                     help="write each test's CPU seconds (this process and the subprocesses it waited for) "
                          "and wall seconds to FILE (CSV); tests/slow_marks.py turns it into tests/slow-tests.txt")


def function_id(nodeid: str) -> str:
    """A test function's id: its parametrizations share one entry."""
    return nodeid.split("[", 1)[0]


_SLOW_IN_SOURCE: set[str] = set()


def pytest_collection_modifyitems(config, items):
    _SLOW_IN_SOURCE.update(item.nodeid for item in items if item.get_closest_marker("slow"))
    if not SLOW_LIST.is_file():
        return
    slow = {line.split("#", 1)[0].strip() for line in SLOW_LIST.read_text().splitlines()} - {""}
    for item in items:
        if function_id(item.nodeid) in slow:
            item.add_marker(pytest.mark.slow)


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


_CPU_TIMES: list[tuple[str, float, float]] = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    if not item.config.getoption("--cpu-times"):
        yield
        return
    cpu, wall = _cpu_seconds(), time.perf_counter()
    yield
    _CPU_TIMES.append((item.nodeid, _cpu_seconds() - cpu, time.perf_counter() - wall))


def pytest_sessionfinish(session):
    path = session.config.getoption("--cpu-times")
    if path and _CPU_TIMES:
        with open(path, "w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["nodeid", "cpu_s", "wall_s", "slow_in_source"])
            out.writerows((n, f"{c:.3f}", f"{w:.3f}", int(n in _SLOW_IN_SOURCE)) for n, c, w in _CPU_TIMES)
