"""The local workers' lifetime: a run killed alone (SIGKILL of its pid) leaves no worker behind, and a
method that leaves a thread running does not keep the run from ending.

Each run is started in a session of its own (``start_new_session``); the test looks for what is left
of it by that session id and kills, at the end, whatever of that session is still there (never
anything else)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

RUN = [sys.executable, "-m", "rfbench.cli"]

LIFEMOD = '''
import os
import threading
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class Sleeper(RegressorMixin, BaseEstimator):
    """Notes its fit's start (a file <random_state>.<pid> in $RFBENCH_TEST_LOG), then sleeps $FIT_S s;
    with $LEAVE_THREAD it first starts a non-daemon thread that sleeps an hour; with $SEGFAULT it reads
    address 0."""

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        open(os.path.join(os.environ["RFBENCH_TEST_LOG"], f"{self.random_state}.{os.getpid()}"), "w").close()
        if os.environ.get("LEAVE_THREAD"):
            threading.Thread(target=time.sleep, args=(3600,)).start()
        if os.environ.get("SEGFAULT"):
            import ctypes
            import sys

            print("lifemod: reading address 0", file=sys.stderr, flush=True)

            ctypes.string_at(0)
        time.sleep(float(os.environ.get("FIT_S", "0")))
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
'''


def session_pids(sid: int) -> list[int]:
    """The live (not zombie) processes of session ``sid``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()      # after "pid (comm) ": state ppid pgrp session
        if fields[0] != "Z" and int(fields[3]) == sid:
            out.append(int(entry))
    return out


def kill_session(sid: int) -> None:
    """SIGKILL to what is left of session ``sid`` (its processes, by pid: one group or several)."""
    for pid in session_pids(sid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def setup(tmp_path: Path, **extra) -> tuple[dict, Path]:
    code = tmp_path / "code"
    code.mkdir(parents=True, exist_ok=True)
    (code / "lifemod.py").write_text(LIFEMOD)
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(code), os.environ.get("PYTHONPATH", "")]),
           "RFBENCH_TEST_LOG": str(log), **{k: str(v) for k, v in extra.items()}}
    return env, log


def run_args(out: Path, jobs: int, folds: int = 2) -> list[str]:
    return [*RUN, "run", "--datasets", "friedman-generated", "--methods", "lifemod:Sleeper", "--features", "10",
            "--outer-folds", str(folds), "--inner-folds", "2", "--max-samples", "100", "--jobs", str(jobs),
            "--quiet", "--no-report", "--out", str(out)]


def run_to_end(args: list[str], env: dict, cwd: Path, timeout_s: float) -> tuple[int, str, list[int]]:
    """(exit code, stderr, the pids of its session still alive 5 s after it ended) of a run started in a
    session of its own; whatever of that session is left is killed afterwards."""
    proc = subprocess.Popen(args, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        _, stderr = proc.communicate(timeout=timeout_s)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        end = time.monotonic() + 5                      # loky's resource tracker ends a moment after
        while (left := session_pids(proc.pid)) and time.monotonic() < end:
            time.sleep(0.05)
        kill_session(proc.pid)
    return proc.returncode, stderr, left


def kill_run_when_fitting(tmp_path: Path, trial: int, start_timeout_s: float = 120) -> float:
    """Start a --jobs 2 run whose two tasks sleep a minute, SIGKILL its process alone once both fit, and
    return the seconds until none of its processes is left (at most 10: then it gives up)."""
    env, log = setup(tmp_path / f"t{trial}", FIT_S=60)
    proc = subprocess.Popen(run_args(tmp_path / f"t{trial}" / "run", jobs=2), env=env, cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        end = time.monotonic() + start_timeout_s
        while len(list(log.iterdir())) < 2:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < end, "the two fits did not start"
            time.sleep(0.1)
        assert len(session_pids(proc.pid)) >= 3             # the run and its two workers, at least
        os.kill(proc.pid, signal.SIGKILL)
        t0 = time.monotonic()
        proc.wait()
        while session_pids(proc.pid) and time.monotonic() - t0 < 10:
            time.sleep(0.02)
        return time.monotonic() - t0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        kill_session(proc.pid)
        proc.stderr.close()


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(3))
def test_a_run_killed_alone_leaves_no_process_behind(tmp_path, trial):
    """SIGKILL of the run's pid while both its workers fit: within 5 s no process of its session is left
    (workers, loky's resource tracker). Before, both workers ran on, then waited for work for ever."""
    assert kill_run_when_fitting(tmp_path, trial) < 5


@pytest.mark.slow
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_thread_left_running_by_a_method_does_not_hang_the_run(tmp_path, jobs):
    """A fit that starts a non-daemon thread sleeping an hour: the run records the task, says in one line
    that it killed the worker, and ends (it hung at the pool's shutdown, the worker waiting for the
    thread)."""
    env, _ = setup(tmp_path, LEAVE_THREAD=1)
    out = tmp_path / "run"
    returncode, stderr, left = run_to_end(run_args(out, jobs=jobs, folds=2), env, tmp_path, timeout_s=90)
    assert returncode == 0, stderr[-2000:]
    assert not left
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 and (df["status"] == "done").all()
    assert "worker(s) had not ended" in stderr and "Traceback" not in stderr, stderr[-2000:]


@pytest.mark.slow
def test_a_worker_segfault_is_one_line_not_the_fault_handlers_dump(tmp_path):
    """A fit reading address 0 kills its worker twice: each death is one line of rfbench's on stderr and
    the record says why (before: Python's fault-handler dump, ~30 lines, once per death); the method's
    own print still reaches stderr."""
    env, _ = setup(tmp_path, SEGFAULT=1)
    env.pop("PYTHONFAULTHANDLER", None)
    out = tmp_path / "run"
    returncode, stderr, _ = run_to_end([*run_args(out, jobs=1), "--folds", "0"], env, tmp_path, timeout_s=120)
    assert returncode == 0, stderr[-2000:]
    assert "Fatal Python error" not in stderr and "Extension modules" not in stderr, stderr[-3000:]
    deaths = [line for line in stderr.splitlines() if "a worker died" in line]
    assert len(deaths) == 2 and all(line.endswith(": Segmentation fault") for line in deaths), stderr
    assert stderr.count("lifemod: reading address 0") == 2
    [rec] = pd.read_csv(out / "results.csv").to_dict("records")
    assert rec["status"] == "error" and rec["message"] == "worker died (2 times): Segmentation fault"


def test_an_interrupted_shutdown_returns_once_loky_has_cleaned_up():
    """Ctrl-C / SIGTERM: the workers are killed and the run waits (bounded) for loky's manager threads to
    finish, so that the process never exits in the middle of their cleanup (a semaphore unlinked but not
    unregistered: loky's resource tracker then printed "leaked semlock" warnings after the one line)."""
    from rfbench.execution import pool

    lanes = pool.Lanes(2, options=None, track_starts=False)
    futures = [lane.executor.submit(time.sleep, 60) for lane in lanes.lanes]
    managers = [lane.executor._executor_manager_thread for lane in lanes.lanes]
    procs = [p for lane in lanes.lanes for p in lane.executor._processes.values()]
    assert all(m is not None and m.is_alive() for m in managers) and len(procs) == 2
    t0 = time.monotonic()
    lanes.shutdown(interrupted=True)
    assert time.monotonic() - t0 < pool.SHUTDOWN_GRACE_S + 1
    assert not any(m.is_alive() for m in managers)
    assert all(p.exitcode is not None for p in procs)
    assert all(f.done() for f in futures)


def test_the_bounded_join_gives_up_after_its_grace():
    import threading

    from rfbench.execution import pool

    stop = threading.Event()
    slow = threading.Thread(target=stop.wait, args=(30,), daemon=True)
    slow.start()
    t0 = time.monotonic()
    pool._join_bounded([None, slow], 0.3)
    assert 0.25 < time.monotonic() - t0 < 2 and slow.is_alive()
    stop.set()


_KEPT = []


def _keep_and_pid(mb: int) -> int:
    """In the worker: keep ``mb`` MB alive past the task (pages touched), return the worker's pid. It
    lasts over a second: loky looks at a worker's memory at most once a second."""
    import numpy as np

    _KEPT.append(np.ones(mb * 2**20 // 8))
    time.sleep(1.1)
    return os.getpid()


def test_a_worker_that_grows_by_an_import_s_worth_is_kept():
    """loky replaces a worker that has grown by 300 MB since its first task, which a worker does when
    its second method imports torch or loads a CUDA library: rfbench's workers allow WORKER_GROWTH_BYTES
    (2 GiB), so three tasks that each keep 350 MB run in one worker (with loky's 300 MB the third ran in
    a new one)."""
    from rfbench.execution import pool

    executor = pool.local_pool(1)
    try:
        pids = [executor.submit(_keep_and_pid, 350).result(timeout=120) for _ in range(3)]
    finally:
        executor.shutdown(wait=True)
    assert len(set(pids)) == 1, pids


def test_a_worker_past_its_growth_is_replaced_without_loky_s_warning():
    """Past the allowed growth the worker is still replaced before its next task (loky's leak
    protection is kept), and the run's terminal does not get loky's warning of "a memory leak"."""
    import warnings

    from rfbench.execution import pool

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        executor = pool.local_pool(1, growth_bytes=40 * 2**20)
        try:
            pids = [executor.submit(_keep_and_pid, 100).result(timeout=120) for _ in range(4)]
            time.sleep(0.5)          # loky's manager thread warns after the replacement
        finally:
            executor.shutdown(wait=True)
    assert len(set(pids)) > 1, pids
    assert not [w for w in caught if pool.LOKY_REPLACED_WARNING in str(w.message)], [str(w.message) for w in caught]
