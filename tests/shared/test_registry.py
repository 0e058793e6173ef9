"""The registry is a value: built once per command, immutable, extended by the
command line into a new value, passed explicitly, and handed to worker processes as an argument;
nothing of it lives in process-global caches or in the environment."""

import dataclasses
import json
import os
import pickle
import sys

import pandas as pd
import pytest

from rfbench import registry
from rfbench.cli import main
from rfbench.errors import UsageError

#: a user estimator (rfbench's contract: n_features, cv, random_state, n_jobs) that notes, in each
#: process that fits it, the process and the rfbench settings of its environment
RECORDER = '''
import json, os
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class EnvRecorder(RegressorMixin, BaseEstimator):
    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=None):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        seen = {k: v for k, v in os.environ.items() if k.startswith("RFBENCH_")}
        with open(os.path.join(os.path.dirname(__file__), "fits.jsonl"), "a") as fh:
            fh.write(json.dumps({"pid": os.getpid(), "env": seen}) + "\\n")
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
'''


@pytest.fixture
def user_code(tmp_path, monkeypatch):
    """A directory holding the recorder module, a data file and a user registry file, as the current
    directory (as `rfbench run --methods recmod:EnvRecorder` finds the module); sys.path and
    sys.modules restored after."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "recmod.py").write_text(RECORDER)
    rows = [(i, (i * 7) % 11, 2.0 * i + (i % 3)) for i in range(40)]
    (code / "table.csv").write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in rows))
    (code / "mine.yaml").write_text("methods:\n  my-ridge: {estimator: 'sklearn.linear_model:Ridge'}\n")
    monkeypatch.chdir(code)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setenv("RFBENCH_REGISTRY", "")
    yield code
    sys.modules.pop("recmod", None)


def _fits(code) -> list[dict]:
    path = code / "fits.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _settings() -> dict:
    return {k: v for k, v in os.environ.items() if k.startswith("RFBENCH_")}


def test_the_registry_is_an_immutable_value_that_pickles():
    built = registry.load(settings=False)
    assert "wine" in built.datasets and "rff-gauss" in built.methods and "gfc" in built.suites
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.datasets = {}                                  # frozen
    with pytest.raises(TypeError):
        built.datasets["x"] = built.dataset("wine")          # read-only mappings
    assert pickle.loads(pickle.dumps(built)) == built          # what a worker process is given
    # the part a run's workers get: its datasets and methods, nothing else
    part = built.only(["wine"], ["rff-gauss"])
    assert list(part.datasets) == ["wine"] and list(part.methods) == ["rff-gauss"]
    assert pickle.loads(pickle.dumps(part)) == part and len(pickle.dumps(part)) < len(pickle.dumps(built)) / 5
    with pytest.raises(UsageError, match="unknown dataset 'nope'"):
        built.only(["nope"], [])


def test_command_line_additions_are_a_new_value_the_base_is_unchanged(tmp_path):
    base = registry.load(settings=False)
    before = pickle.dumps(base)
    extended, names = registry.resolve_method_names(base, ["sklearn.linear_model:Ridge", "rff-gauss"])
    assert names == ["sklearn.linear_model.Ridge", "rff-gauss"]
    assert extended.method("sklearn.linear_model.Ridge").origin == "command line"
    assert "sklearn.linear_model.Ridge" not in base.methods and pickle.dumps(base) == before
    # the same addition again is the same entry; a built-in name is never overridden
    again, _ = registry.resolve_method_names(extended, ["sklearn.linear_model:Ridge"])
    assert again == extended
    with pytest.raises(UsageError, match="method 'rff-gauss' is already registered by the built-in registry"):
        base.with_command_line(methods={"rff-gauss": {"estimator": "sklearn.linear_model:Ridge"}})
    with pytest.raises(UsageError, match="named twice on the command line with different sources"):
        extended.with_command_line(methods={"sklearn.linear_model.Ridge": {"estimator": "sklearn.linear_model:Lasso"}})
    # load(command_line=...) builds the same value in one call
    assert registry.load(settings=False, command_line={"methods": {
        "sklearn.linear_model.Ridge": {"estimator": "sklearn.linear_model:Ridge", "sys_path": [os.getcwd()]}}}) \
        == extended


def test_a_built_registry_reads_the_files_again_no_cache(tmp_path, monkeypatch):
    """Nothing is kept between two builds: a changed user file (same size, same second) is read anew,
    and tests need no cache to reset."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("methods:\n  mine-a: {estimator: 'sklearn.linear_model:Ridge'}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(mine))
    assert "mine-a" in registry.load().methods
    stamp = mine.stat()
    mine.write_text("methods:\n  mine-b: {estimator: 'sklearn.linear_model:Ridge'}\n")
    os.utime(mine, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))     # what a cache keyed by the mtime would miss
    built = registry.load()
    assert "mine-b" in built.methods and "mine-a" not in built.methods
    assert "mine-b" not in registry.load(settings=False).methods     # the settings are read at load only
    # and no state at module level to keep one in: no mutable container, no memoised function
    kept = [n for n, v in vars(registry).items() if not n.startswith("__")
            and ((n.startswith("_") and isinstance(v, (dict, list, set))) or hasattr(v, "cache_clear"))]
    assert not kept, kept


def test_a_run_writes_no_rfbench_setting_into_the_environment(user_code, capsys):
    """--registry, --datasets FILE and --methods package.module:Class reach the run through the
    registry value: the environment is the same after the run as before it."""
    def settings():
        # the process pool that runs user code (loky) sets its own KMP_* variables when it starts a worker:
        # those are the pool's, not settings of rfbench's
        return {k: v for k, v in os.environ.items() if not k.startswith("KMP_")}

    before = settings()
    main(["run", "--registry", "mine.yaml", "--datasets", "table.csv", "--target", "y",
          "--methods", "recmod:EnvRecorder,my-ridge", "--features", "5", "--outer-folds", "2", "--inner-folds", "2",
          "--jobs", "1", "--quiet", "--no-report", "--out", str(user_code / "out")])
    assert settings() == before
    df = pd.read_csv(user_code / "out" / "results.csv")
    assert set(df["status"]) == {"done"} and set(df["method"]) == {"recmod.EnvRecorder", "my-ridge"}
    # --jobs 1 with user code: one worker process (a user's method may end its process), not this one
    pids = {f["pid"] for f in _fits(user_code)}
    assert len(pids) == 1 and os.getpid() not in pids
    info = json.loads((user_code / "out" / "runs.jsonl").read_text().splitlines()[-1])
    assert info["user_entries"]["datasets"]["table"]["origin"] == "command line"
    assert info["user_entries"]["methods"]["recmod.EnvRecorder"]["origin"] == "command line"


@pytest.mark.slow
def test_command_line_entries_reach_worker_processes_as_an_argument(user_code, capsys):
    """--jobs 2: worker processes run the command line's dataset (a data file) and method (a module of
    the current directory) and the --registry file's method, which they know from the registry given
    with each task; their environment holds no rfbench setting that the parent did not have (loky
    sets KMP_* variables of its own when it starts workers: only the rfbench ones are compared)."""
    before = _settings()
    main(["run", "--registry", "mine.yaml", "--datasets", "table.csv", "--target", "y",
          "--methods", "recmod:EnvRecorder,my-ridge", "--features", "5", "--outer-folds", "3", "--inner-folds", "2",
          "--jobs", "2", "--threads", "1", "--quiet", "--no-report", "--out", str(user_code / "out")])
    assert _settings() == before
    df = pd.read_csv(user_code / "out" / "results.csv")
    assert len(df) == 6 and set(df["status"]) == {"done"}, df["message"].tolist()
    fits = _fits(user_code)
    assert len(fits) == 3 and os.getpid() not in {f["pid"] for f in fits}      # fitted in the workers
    assert all(f["env"] == before for f in fits)          # no RFBENCH_* written for the workers
