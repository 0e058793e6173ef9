"""Local worker lanes: a task's --timeout counts from its start in its worker (not the worker's start-up),
and a worker that dies costs its own lane only (the other lanes' tasks go on, never rerun)."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from rfbench.execution.tasks import method_seed

RUN = [sys.executable, "-m", "rfbench.cli"]

#: a worker process (loky's) whose start-up takes $SLOW_START_S seconds more; not the run's own process
SITECUSTOMIZE = '''
import os
import time

if b"popen_loky" in open("/proc/self/cmdline", "rb").read() and os.environ.get("SLOW_START_S"):
    time.sleep(float(os.environ["SLOW_START_S"]))
'''

LANEMOD = '''
import json
import os
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class Lane(RegressorMixin, BaseEstimator):
    """Notes each fit's start in $RFBENCH_TEST_LOG; kills its worker (as a segfault would) after
    $CRASH_AFTER_S seconds unless its random_state is $SURVIVOR_RS or $CRASH is unset; else sleeps
    $FIT_S seconds."""

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        with open(os.path.join(os.environ["RFBENCH_TEST_LOG"], "fits.jsonl"), "a") as fh:
            fh.write(json.dumps({"rs": self.random_state, "pid": os.getpid(), "at": time.time()}) + "\\n")
        if os.environ.get("CRASH") and str(self.random_state) != os.environ.get("SURVIVOR_RS"):
            time.sleep(float(os.environ.get("CRASH_AFTER_S", "0")))
            os._exit(1)
        time.sleep(float(os.environ.get("FIT_S", "0")))
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
'''


def _env(tmp_path, **extra) -> dict:
    code = tmp_path / "code"
    code.mkdir(exist_ok=True)
    (code / "sitecustomize.py").write_text(SITECUSTOMIZE)
    (code / "lanemod.py").write_text(LANEMOD)
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]),
            "RFBENCH_TEST_LOG": str(log), **{k: str(v) for k, v in extra.items()}}


def _fits(tmp_path) -> list[dict]:
    return [json.loads(line) for line in (tmp_path / "log" / "fits.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_the_timeout_counts_the_task_not_its_workers_start_up(tmp_path):
    """A fit of 3 s under --timeout 5s, in a worker whose start-up takes 9 s more: done (the kill
    deadline, 5 × 1.2 + 5 s, counted from submission, killed it)."""
    out = tmp_path / "run"
    res = subprocess.run([*RUN, "run", "--datasets", "friedman-generated", "--methods", "lanemod:Lane", "--features",
                          "10", "--outer-folds", "2", "--inner-folds", "2", "--max-samples", "100", "--folds", "0",
                          "--jobs", "1", "--timeout", "5s", "--quiet", "--no-report", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env=_env(tmp_path, SLOW_START_S=9, FIT_S=3))
    assert res.returncode == 0, res.stderr[-2000:]
    [rec] = pd.read_csv(out / "results.csv").to_dict("records")
    assert rec["status"] == "done", rec["message"]
    assert 3 <= rec["total_s"] < 5


@pytest.mark.slow
def test_a_worker_that_dies_costs_its_own_lane_only(tmp_path):
    """Four of five tasks kill their worker a second into their fit (each twice, then `worker died`);
    the fifth, fitting in the other lane meanwhile, is not disturbed: it finishes once, never rerun
    (a pool-wide respawn killed it with the first death and ran it again)."""
    survivor = method_seed(0, 0)                # fold 0's estimator seed
    out = tmp_path / "run"
    res = subprocess.run([*RUN, "run", "--datasets", "friedman-generated", "--methods", "lanemod:Lane", "--features",
                          "10", "--outer-folds", "5", "--inner-folds", "2", "--max-samples", "200", "--jobs", "2",
                          "--quiet", "--no-report", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, cwd=tmp_path,
                         env=_env(tmp_path, CRASH=1, CRASH_AFTER_S=1, SURVIVOR_RS=survivor, FIT_S=5))
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    df = pd.read_csv(out / "results.csv").set_index("fold")
    assert df.loc[0, "status"] == "done"
    assert (df.loc[1:, "status"] == "error").all() and len(df) == 5
    assert df.loc[1:, "message"].str.startswith("worker died (2 times)").all()
    fits = _fits(tmp_path)
    assert [f["rs"] for f in fits].count(survivor) == 1                 # never rerun
    assert len(fits) == 1 + 4 * 2                                       # each crasher: twice, alone
