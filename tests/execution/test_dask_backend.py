"""--backend dask on a real cluster: a `dask scheduler` and two `dask worker` processes on 127.0.0.1
(subprocesses, killed at teardown), the same records as a local run, and the faults a cluster brings:
a worker killed mid-task, the client killed, a task that kills every worker, a task past --timeout."""

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pandas as pd
import pytest

pytest.importorskip("distributed")

from rfbench.execution.runconfig import RunConfig  # noqa: E402
from rfbench.registry import load as load_registry
from tests.cli.test_cli import POISON, RUN, SLEEPER, _alive, _children, _wait_for  # noqa: E402

SMALL = ["--features", "10,20", "--outer-folds", "3", "--inner-folds", "3", "--max-samples", "300", "--quiet",
         "--no-report"]

SLOW = '''
import os
import time
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class Slow(RegressorMixin, BaseEstimator):
    """Takes a second; notes which process fitted which fold (its random_state) in $RFBENCH_TEST_LOG."""

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        with open(os.path.join(os.environ["RFBENCH_TEST_LOG"], "slow.log"), "a") as fh:
            fh.write(f"{os.getpid()} {self.random_state}\\n")
        time.sleep(1.0)
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
'''

LOGGED_SLEEPER = SLEEPER + '''

class LoggedSleeper(Sleeper):
    def fit(self, X, y):
        import os

        open(os.path.join(os.environ["RFBENCH_TEST_LOG"], f"sleeper-{os.getpid()}"), "w").close()
        return super().fit(X, y)
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, address, env, log):
        self.address, self.env, self.log = address, env, log

    def wait_for_workers(self, n=2, seconds=90):
        from distributed import Client

        with Client(self.address, timeout=30) as client:
            client.wait_for_workers(n, timeout=seconds)

    def rfbench(self, *args, check=True, timeout=300):
        res = subprocess.run([*RUN, "run", "--backend", "dask", "--scheduler", self.address, *args],
                             capture_output=True, text=True, timeout=timeout, env=self.env)
        if check and res.returncode != 0:
            raise AssertionError(f"exit {res.returncode}\n{res.stderr[-3000:]}")
        return res


@contextlib.contextmanager
def dask_cluster(env, workers=2):
    """`dask scheduler` and ``workers`` single-thread `dask worker` processes (each with its nanny),
    every server on 127.0.0.1; every process group is killed at the end, whatever its state."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    local = ["--no-dashboard", "--dashboard-address", "127.0.0.1:0"]
    procs = []
    try:
        procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1",
                                       "--port", address.rsplit(":", 1)[1], *local],
                                      env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True))
        for _ in range(workers):
            procs.append(subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", address,
                                           "--nthreads", "1", "--nworkers", "1", "--host", "127.0.0.1", *local,
                                           "--memory-limit", "0"],
                                          env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True))
        yield address, procs
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A scheduler and two workers that see the test estimators; a task may kill 2 workers before
    it is KilledWorker."""
    mods = tmp_path_factory.mktemp("mods")
    for name, text in {"poisonmod": POISON, "sleepmod": LOGGED_SLEEPER, "slowmod": SLOW}.items():
        (mods / f"{name}.py").write_text(text)
    log = mods / "log"
    log.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(mods), os.environ.get("PYTHONPATH", "")]),
           "POISON_SIZE": "202", "RFBENCH_TEST_LOG": str(log),
           "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    with dask_cluster(env) as (address, _):
        found = Cluster(address, env, log)
        found.wait_for_workers(2)
        yield found


def _records(out) -> pd.DataFrame:
    df = pd.read_csv(out / "results.csv")
    assert not df.duplicated(["dataset", "method", "n_features", "fold"]).any()
    return df.set_index(["dataset", "method", "n_features", "fold"]).sort_index()


@pytest.mark.slow
def test_records_on_the_cluster_equal_a_local_run(cluster, mirror_dir, tmp_path):
    """A generated and a mirrored (classification) dataset: the same errors and chosen
    hyper-parameters as local workers; each task's threads come from its worker's cores."""
    from dask.system import CPU_COUNT

    from rfbench.execution import runner
    from rfbench.protocol import Protocol

    threads = max(1, CPU_COUNT // 2)     # two single-slot workers on this host
    runner.run(["friedman-generated", "wine"], ["rff-gauss", "rff-cauchy"], [10],
               Protocol("cv", outer_folds=3, inner_folds=3, seed=0, max_samples=300), str(tmp_path / "local"),
               config=RunConfig(threads=threads), progress=False, registry=load_registry())
    cluster.rfbench("--datasets", "friedman-generated,wine", "--methods", "rff-gauss,rff-cauchy", *SMALL,
                    "--features", "10", "--out", str(tmp_path / "dask"))
    local, dask = _records(tmp_path / "local"), _records(tmp_path / "dask")
    assert len(dask) == 2 * 2 * 3 and (dask["status"] == "done").all()
    assert dask["error"].tolist() == local["error"].tolist()
    assert dask["params"].tolist() == local["params"].tolist()
    assert set(dask["source"]) == {"generator", "mirror"} and set(dask["threads"]) == {threads}
    assert json.loads((tmp_path / "dask" / "run.json").read_text())["backend"] == f"dask ({cluster.address})"


@pytest.mark.slow
def test_data_a_worker_cannot_load_is_scattered_from_the_client(cluster, mirror_dir, tmp_path, monkeypatch):
    """Workers that see no data directory get the prepared data from the client: the same records
    (the data directory they are given does not exist, so they could not have loaded it)."""
    from rfbench.execution import dask_pool, runner
    from rfbench.protocol import Protocol

    monkeypatch.setattr(dask_pool, "_loaded_everywhere", lambda *a: set())
    monkeypatch.setattr(dask_pool, "worker_data_dirs", lambda data_dirs: (str(tmp_path / "nowhere"),))
    protocol = Protocol("cv", outer_folds=3, inner_folds=3, seed=0, max_samples=300)
    runs = {}
    for backend in ("local", "dask"):
        out = tmp_path / backend
        runner.run(["wine"], ["rff-gauss"], [10], protocol, str(out), progress=False,
                   config=RunConfig(backend=backend, scheduler=cluster.address if backend == "dask" else None), registry=load_registry())
        runs[backend] = _records(out)
    assert (runs["dask"]["status"] == "done").all(), runs["dask"]["message"].tolist()
    assert runs["dask"]["error"].tolist() == runs["local"]["error"].tolist()
    assert set(runs["dask"]["source"]) == {"mirror"}


def test_a_worker_loads_only_what_it_has_from_the_clients_kind_of_source(mirror_dir, tmp_path):
    from rfbench import registry
    from rfbench.execution.dask_pool import _loads_locally

    origins = {"friedman-generated": "generator", "wine": "mirror", "breiman": "cache"}
    built = registry.load()
    assert _loads_locally(origins, str(mirror_dir), built) == ["friedman-generated", "wine"]
    assert _loads_locally(origins, str(tmp_path / "absent"), built) == ["friedman-generated"]


@pytest.mark.slow
def test_a_worker_killed_mid_task_has_its_task_rerun_elsewhere(cluster, tmp_path):
    cluster.wait_for_workers(2)
    log = cluster.log / "slow.log"
    start = log.stat().st_size if log.exists() else 0
    proc = subprocess.Popen([*RUN, "run", "--backend", "dask", "--scheduler", cluster.address, "--datasets",
                             "friedman-generated", "--methods", "slowmod:Slow", "--features", "10", "--outer-folds",
                             "4", "--inner-folds", "2", "--max-samples", "200", "--quiet", "--no-report",
                             "--out", str(tmp_path / "run")],
                            env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not (log.exists() and log.read_text()[start:].strip()):
            time.sleep(0.05)
        pid, victim = log.read_text()[start:].split()[:2]
        os.kill(int(pid), signal.SIGKILL)         # the worker process, in the middle of its fit
        _, err = proc.communicate(timeout=180)
    finally:
        proc.kill()
    assert proc.returncode == 0, err[-2000:]
    df = _records(tmp_path / "run")
    assert len(df) == 4 and (df["status"] == "done").all()
    fits = [line.split() for line in log.read_text()[start:].splitlines()]
    assert [p for p, seed in fits if seed == victim][0] == pid
    assert [p for p, seed in fits if seed == victim][1:], "the killed task was not run again"


@pytest.mark.slow
def test_a_killed_client_is_resumed_by_the_same_command(cluster, tmp_path):
    out = tmp_path / "run"
    args = [*RUN, "run", "--backend", "dask", "--scheduler", cluster.address, "--datasets", "friedman-generated",
            "--methods", "slowmod:Slow,rff-gauss", "--features", "10", "--outer-folds", "5", "--inner-folds", "2",
            "--max-samples", "200", "--quiet", "--no-report", "--out", str(out)]
    proc = subprocess.Popen(args, env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _wait_for(out / "records", "*.json", 2, 120)
    proc.kill()                                   # kill -9 of the client, mid-run
    proc.wait(timeout=30)
    before = {p.name: p.read_text() for p in (out / "records").glob("*.json")}
    assert 2 <= len(before) < 10, "the run finished before it could be killed; make it longer"
    subprocess.run(args, env=cluster.env, check=True, timeout=300, capture_output=True)
    after = {p.name: p.read_text() for p in (out / "records").glob("*.json")}
    assert len(after) == 10 and all(after[name] == text for name, text in before.items())
    df = _records(out)
    assert len(df) == 10 and (df["status"] == "done").all()
    assert not list((out / "records").glob("*.claim"))


@pytest.mark.slow
def test_a_task_that_kills_every_worker_is_one_error_record(cluster, tmp_path):
    """The scheduler allows 1 failure (2 deaths), then KilledWorker: `worker died`, and the run goes on."""
    cluster.wait_for_workers(2)
    res = cluster.rfbench("--datasets", "friedman-generated", "--methods", "poisonmod:Poison,rff-gauss", "--features",
                          "10", "--outer-folds", "3", "--inner-folds", "2", "--max-samples", "302", "--quiet",
                          "--no-report", "--out", str(tmp_path / "run"))
    assert "Traceback" not in res.stderr, res.stderr[-2000:]
    df = _records(tmp_path / "run").reset_index()
    assert len(df) == 6
    bad = df[df["status"] != "done"]
    assert len(bad) == 1 and bad["method"].item() == "poisonmod.Poison" and bad["status"].item() == "error"
    assert bad["message"].item().startswith("worker died (2 times)")


@pytest.mark.slow
def test_a_task_past_its_timeout_has_its_worker_killed(cluster, tmp_path):
    """A task that blocks SIGALRM and sleeps 120 s: the worker running it is killed soon after the
    limit (2 s × 1.2 + 5 s) and the task is a timeout; the other task finishes."""
    cluster.wait_for_workers(2)
    t0 = time.time()
    cluster.rfbench("--datasets", "friedman-generated", "--methods", "sleepmod:LoggedSleeper,rff-gauss",
                    "--features", "10", "--outer-folds", "2", "--folds", "0", "--inner-folds", "2", "--max-samples",
                    "200", "--timeout", "2s", "--quiet", "--no-report", "--out", str(tmp_path / "run"))
    assert time.time() - t0 < 60
    df = _records(tmp_path / "run").reset_index().set_index(["method", "fold"])["status"]
    assert (df.loc["sleepmod.LoggedSleeper"] == "timeout").all() and (df.loc["rff-gauss"] == "done").all()
    sleepers = [int(p.name.split("-")[1]) for p in cluster.log.glob("sleeper-*")]
    assert len(sleepers) == 1 and not _alive(sleepers[0]), "the sleeping worker was left running"


@pytest.mark.slow
def test_sigterm_closes_the_local_cluster_and_releases_the_claims(tmp_path, cluster):
    """--backend dask without --scheduler: its LocalCluster's worker processes are gone after
    SIGTERM, as are the claims; exit 143 with one line."""
    out = tmp_path / "run"
    proc = subprocess.Popen([*RUN, "run", "--backend", "dask", "--jobs", "2", "--datasets", "friedman-generated",
                             "--methods", "slowmod:Slow", "--features", "10", "--outer-folds", "6", "--inner-folds",
                             "2", "--max-samples", "200", "--quiet", "--no-report", "--out", str(out)],
                            env=cluster.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for(out / "records", "*.claim", 1, 120)
    time.sleep(0.5)
    children = _children(proc.pid)
    assert children, "no worker started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err[-2000:]
    assert err.strip().splitlines() == ["rfbench: terminated (SIGTERM); finished tasks are saved, "
                                        "re-run the same command to resume"]
    time.sleep(2)
    assert not [p for p in children if _alive(p)], "orphaned worker processes"
    assert not list((out / "records").glob("*.claim"))


@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--backend", "dask", "--scheduler", "tcp://127.0.0.1:9"], "cannot reach the dask scheduler at tcp://127.0.0.1:9"),
    (["--scheduler", "tcp://127.0.0.1:9"], "--scheduler names a dask scheduler: add --backend dask"),
    (["--backend", "dask", "--scheduler", "tcp://127.0.0.1:9", "--jobs", "2"], "--jobs sizes the workers"),
    (["--backend", "dask", "--scheduler", "tcp://127.0.0.1:9", "--threads", "2"], "--threads sizes local workers"),
    (["--backend", "dask", "--scheduler", ""], "--scheduler is empty"),
])
def test_bad_backend_input_is_one_line(args, message, tmp_path):
    res = subprocess.run([*RUN, "run", "--datasets", "friedman-generated", "--methods", "rff-gauss", *SMALL,
                          "--out", str(tmp_path / "run"), *args], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr[-2000:]
    assert message in res.stderr


def test_without_distributed_the_dask_backend_says_how_to_install_it(tmp_path):
    code = ("import sys; sys.modules['distributed'] = None; from rfbench.cli import main; "
            f"main(['run', '--backend', 'dask', '--datasets', 'friedman-generated', '--out', {str(tmp_path)!r}])")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["rfbench: error: --backend dask needs dask.distributed, which is not "
                                               "installed: pip install 'dask[distributed]'"]


@pytest.mark.slow
def test_a_lost_scheduler_is_one_line_and_the_run_resumes_elsewhere(cluster, tmp_path):
    """The scheduler dies mid-run: one line, exit 2, no claim left; the same run on another
    scheduler finishes it."""
    out = tmp_path / "run"
    args = ["--datasets", "friedman-generated", "--methods", "slowmod:Slow", "--features", "10", "--outer-folds", "4",
            "--inner-folds", "2", "--max-samples", "200", "--quiet", "--no-report", "--out", str(out)]
    with dask_cluster(cluster.env, workers=1) as (address, procs):
        proc = subprocess.Popen([*RUN, "run", "--backend", "dask", "--scheduler", address, *args], env=cluster.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            _wait_for(out / "records", "*.json", 1, 120)
            os.killpg(procs[0].pid, signal.SIGKILL)
            _, err = proc.communicate(timeout=120)
        finally:
            proc.kill()
    lines = err.strip().splitlines()
    assert len(lines) == 1, err  # one line, whatever dask's own loggers had to say
    [line] = lines
    assert proc.returncode == 2 and line.startswith(f"rfbench: error: lost the dask scheduler at {address} (")
    assert line.endswith("; finished tasks are saved, re-run the same command to resume")
    assert not list((out / "records").glob("*.claim"))
    assert len(list((out / "records").glob("*.json"))) < 4
    cluster.rfbench(*args)
    assert len(_records(out)) == 4


def test_dask_stays_quiet_after_a_cli_command_has_ended():
    """After the command's one line, the client's thread and dask's exit hooks may still log about
    a connection they are closing: the CLI leaves dask's loggers silenced for the rest of the process."""
    import logging

    import distributed  # noqa: F401 - creates dask's loggers

    import rfbench.execution.dask_pool  # noqa: F401 - a command that used the backend has imported it
    from rfbench import cli

    logger = logging.getLogger("distributed.client")
    before = logger.level
    try:
        logger.setLevel(logging.INFO)
        cli.main(["methods"])
        assert logger.getEffectiveLevel() == logging.CRITICAL
    finally:
        logger.setLevel(before)


def test_a_task_never_gets_the_cores_of_a_worker_that_is_away():
    """Threads per task from the host's task slots: the count is a high-water mark, so a worker
    restarting beside this one (or a scheduler that does not answer) never hands its cores over."""
    from rfbench.execution.dask_pool import threads_for_slots

    assert threads_for_slots(8, 2, 1, 0) == (4, 2)            # two single-slot workers on 8 cores
    assert threads_for_slots(8, 1, 1, 2) == (4, 2)            # the other one is restarting: still 4
    assert threads_for_slots(8, None, 1, 2) == (4, 2)         # no answer: what was seen
    assert threads_for_slots(8, 4, 1, 2) == (2, 4)            # two more joined: fewer threads
    assert threads_for_slots(8, None, 1, 0) == (1, 0)         # no answer, nothing seen: one thread
    assert threads_for_slots(2, 1, 2, 0) == (1, 2)            # this worker's own slots count
    assert threads_for_slots(2, 3, 1, 0) == (1, 3)            # more slots than cores: one thread
