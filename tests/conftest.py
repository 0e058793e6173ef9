import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# the README's test command gives the mirror relative to the checkout; tests that run the CLI from
# another directory need it absolute
if os.environ.get("RFBENCH_DATA_DIR"):
    os.environ["RFBENCH_DATA_DIR"] = os.pathsep.join(
        str(Path(p).resolve()) for p in os.environ["RFBENCH_DATA_DIR"].split(os.pathsep) if p)


def mirror_path() -> Path | None:
    env = os.environ.get("RFBENCH_DATA_DIR")
    path = Path(env) if env else ROOT.parent / "shared" / "datasets"
    return path if (path / "MANIFEST.csv").is_file() else None


@pytest.fixture
def mirror_dir():
    path = mirror_path()
    if path is None:
        pytest.skip("dataset mirror not available (set RFBENCH_DATA_DIR)")
    return path


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
    from rfbench import tasks

    tasks._fold_data.cache_clear()     # a fold's data kept by one test (maybe monkeypatched) stays there
