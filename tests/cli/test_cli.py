"""End-to-end CLI: a small suite run, every report format, check, bad input, and kill -9 + resume."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from tests.runner_stub import StopRun

RUN = [sys.executable, "-m", "rfbench.cli"]
QUICK = ["--methods", "rff-gauss,rff-cauchy", "--features", "10,20", "--outer-folds", "3",
         "--inner-folds", "3", "--max-samples", "300", "--quiet"]


def rfbench(*args, check=True, **kw):
    res = subprocess.run([*RUN, *args], capture_output=True, text=True, timeout=600, **kw)
    if check and res.returncode != 0:
        raise AssertionError(f"exit {res.returncode}\n{res.stdout}\n{res.stderr}")
    return res


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "synthetic"
    res = rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out))
    return out, res


@pytest.mark.slow
def test_run_prints_table_and_stores_everything(small_run):
    out, res = small_run
    assert "breiman-generated" in res.stdout and "friedman-generated" in res.stdout and "Wilcoxon" in res.stdout
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 * 2 * 2 * 3 and set(df["status"]) == {"done"}
    assert not df.duplicated(["dataset", "method", "n_features", "fold"]).any()
    assert (df["total_s"] >= df["tune_s"]).all() and df["params"].str.contains("bandwidth").all()
    info = json.loads((out / "run.json").read_text())
    assert info["protocol"]["seed"] == 0 and info["machine"]["versions"]["numpy"]
    assert "rfbench run" in info["command"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "latex", "csv", "html"])
@pytest.mark.slow
def test_report_formats(small_run, fmt, tmp_path):
    out, _ = small_run
    target = tmp_path / f"report.{fmt}"
    rfbench("report", str(out), "--format", fmt, "--output", str(target))
    text = target.read_text()
    assert "friedman-generated" in text
    if fmt == "latex":
        assert r"\toprule" in text and r"\midrule" in text and r"\bottomrule" in text
    if fmt == "csv":
        df = pd.read_csv(target)
        assert set(df["method"]) == {"rff-gauss", "rff-cauchy"} and len(df) == 8
    if fmt == "html":
        assert text.startswith("<!DOCTYPE html>") and "<table>" in text


@pytest.mark.slow
def test_report_and_plot_show_the_cpu_seconds_with_time_cpu(small_run, tmp_path):
    """--time cpu: each cell's time is the mean of its records' cpu_s, under its own name, in the table,
    the HTML page's figures and rfbench plot's; a spec's own figures and report --all refuse it."""
    out, _ = small_run
    records = pd.read_csv(out / "results.csv")
    target = tmp_path / "report.csv"
    rfbench("report", str(out), "--format", "csv", "--time", "cpu", "--output", str(target))
    cells = pd.read_csv(target).set_index(["dataset", "n_features", "method"])["cpu_time_s"]
    expected = records.groupby(["dataset", "n_features", "method"])["cpu_s"].mean()
    assert cells.sort_index().to_numpy() == pytest.approx(expected.sort_index().to_numpy())
    page = tmp_path / "report.html"
    rfbench("report", str(out), "--format", "html", "--time", "cpu", "--output", str(page))
    assert "<th>CPU time</th>" in page.read_text() and "Error against CPU time" in page.read_text()
    rfbench("plot", str(out), "--kind", "pareto", "--time", "cpu", "--output", str(tmp_path / "plots"))
    assert (tmp_path / "plots" / "error-vs-walltime.png").is_file()
    for args in (["report", "--all", "--format", "html", "--output", str(tmp_path / "site"), "--time", "cpu"],
                 ["plot", "--spec", "eerf2018-figures", "--time", "cpu"]):
        res = rfbench(*args, check=False)
        assert res.returncode == 2 and "--time" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "site").exists()


@pytest.mark.skipif(shutil.which("pdflatex") is None, reason="pdflatex not installed")
@pytest.mark.slow
def test_latex_report_compiles(small_run, tmp_path):
    """The LaTeX, in a minimal article with the packages its first line names and the 6.5 in text
    width it is laid out for, compiles without an overfull box."""
    out, _ = small_run
    body = rfbench("report", str(out), "--format", "latex").stdout
    assert body.startswith("% requires: ") and r"\label{tab:synthetic}" in body
    packages = body.splitlines()[0].removeprefix("% requires: ")
    doc = tmp_path / "t.tex"
    doc.write_text(f"\\documentclass{{article}}\n\\usepackage{{{packages}}}\n\\setlength{{\\textwidth}}{{6.5in}}\n"
                   "\\begin{document}\n" + body + "\\end{document}\n")
    res = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", doc.name],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-2000:]
    log = (tmp_path / "t.log").read_text(errors="replace")
    assert "Overfull \\hbox" not in log and "Float too large" not in log


@pytest.mark.slow
def test_report_names_label_and_widths(small_run, tmp_path):
    out, _ = small_run
    names = "rff-gauss=Gauss RFF,rff-cauchy=Cauchy RFF"
    text = rfbench("report", str(out), "--names", names, "--width", "60").stdout
    assert max(len(line) for line in text.splitlines()) <= 60
    assert "Gauss RFF" in text and "Cauchy RFF" in text and "rff-gauss" not in text    # the display names
    # the synthetic suite's two datasets are too few for the Wilcoxon test: one line, no pair rows
    assert "too few datasets for a test" in text.replace("\n", " ")
    assert "None" not in text and "00:00:00" not in text        # sub-second walltimes show as seconds
    yaml_names = tmp_path / "names.yaml"
    yaml_names.write_text("rff-gauss: Gauss RFF\n")
    tex = rfbench("report", str(out), "--format", "latex", "--names", str(yaml_names), "--label", "tab:small",
                  "--latex-width", "12cm").stdout
    assert r"\label{tab:small}" in tex and "too few datasets for a test" in tex   # no Wilcoxon table of 2 sets
    assert r"\multicolumn{2}{c}{Gauss RFF}" in tex and r"\multicolumn{2}{c}{rff-cauchy}" in tex
    assert "text width of 341.4pt" in tex
    bad = rfbench("report", str(out), "--format", "latex", "--latex-width", "wide", check=False)
    assert bad.returncode != 0 and "--latex-width 'wide'" in bad.stderr
    bad = rfbench("report", str(out), "--names", "gauss", check=False)
    assert bad.returncode != 0 and "--names 'gauss'" in bad.stderr


@pytest.mark.parametrize("args, message", [
    (["run", "--datasets", "nosuch"], "unknown dataset 'nosuch'"),
    (["run", "--suite", "synthetic", "--methods", "nosuch"], "unknown method 'nosuch'"),
    (["run", "--suite", "nosuch"], "unknown suite 'nosuch'"),
    (["run", "--features", "10,abc"], "--features"),
    (["run", "--timeout", "soon"], "not a duration"),
    (["run", "--suite", "synthetic", "--outer-folds", "1"], "at least 2"),
    (["run", "--suite", "synthetic", "--folds", "a-b"], "--folds 'a-b'"),
    (["run", "--suite", "synthetic", "--outer-folds", "3", "--folds", "2-3"], "numbered 0..2"),
    (["report", "/nonexistent/dir"], "results directory not found"),
    (["check", "/nonexistent/dir", "--spec", "nosuchspec"], "spec not found"),
    (["datasets", "info", "nosuch"], "unknown dataset"),
])
@pytest.mark.slow
def test_bad_input_is_one_clear_line_exit_2(args, message):
    res = rfbench(*args, check=False)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in res.stderr


@pytest.mark.slow
def test_folds_subset_then_rest_equals_the_full_run(small_run, tmp_path):
    """--folds runs part of the same splits; the rest added later gives the full run's records."""
    full, _ = small_run
    out = tmp_path / "partial"
    rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out), "--folds", "2", "--no-report")
    part = pd.read_csv(out / "results.csv")
    assert set(part["fold"]) == {2} and len(part) == 2 * 2 * 2
    rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out), "--folds", "0-2", "--no-report")
    keys = ["dataset", "method", "n_features", "fold"]
    got = pd.read_csv(out / "results.csv").sort_values(keys).reset_index(drop=True)
    want = pd.read_csv(full / "results.csv").sort_values(keys).reset_index(drop=True)
    assert not got.duplicated(keys).any() and len(got) == len(want)
    assert got.loc[got["fold"] == 2, "finished_at"].isin(part["finished_at"]).all()  # not redone
    pd.testing.assert_series_equal(got["error"], want["error"], rtol=1e-10)


def _tree(root):
    """path → (size, mtime_ns) of everything under ``root``: a command that writes leaves a trace."""
    return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


@pytest.mark.slow
def test_dry_run_counts_done_and_left_tasks_and_writes_nothing(tmp_path):
    """--dry-run against a directory with fold 0 done: 8 of 24 tasks done, 16 to run, estimated from
    the finished ones; neither that directory nor a fresh --out is touched."""
    out = tmp_path / "run"
    rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out), "--folds", "0", "--no-report")
    before = _tree(tmp_path)
    res = rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out), "--dry-run")
    assert f"dry run: 16 of 24 tasks would run, 8 are done in {out}" in res.stdout
    rows = [line.split() for line in res.stdout.splitlines() if line.startswith(("breiman-", "friedman-"))]
    assert len(rows) == 8 and all(r[3:6] == ["2", "1", "offline"] for r in rows)   # to run, done, data
    assert "estimated " in res.stdout and "core-hours" in res.stdout and "unestimated" not in res.stdout
    assert _tree(tmp_path) == before                   # no record, index, results.csv or runs.jsonl line
    # a partial request: only what it asks for is counted
    part = rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(out), "--folds", "0-1", "--dry-run")
    assert "dry run: 8 of 16 tasks would run, 8 are done" in part.stdout
    fresh = tmp_path / "fresh" / "x"
    res = rfbench("run", "--suite", "synthetic", *QUICK, "--out", str(fresh), "--dry-run")
    assert "dry run: 24 of 24 tasks would run, 0 are done" in res.stdout and "no estimate" in res.stdout
    assert not (tmp_path / "fresh").exists() and _tree(tmp_path) == before


@pytest.mark.slow
def test_run_without_any_obtainable_dataset_is_one_line_naming_them(tmp_path):
    """Offline without the mirror: one line naming the datasets and how to supply them, exit 2; not
    "nothing to run: every task is done" and "no results", and no empty --out left behind."""
    env = {k: v for k, v in os.environ.items() if k != "RFBENCH_DATA_DIR"}
    out = tmp_path / "new" / "out"
    res = rfbench("run", "--datasets", "ailerons,cal-housing", "--methods", "rff-gauss", "--features", "10",
                  "--out", str(out), check=False, env=env)
    # the progress notes (tasks asked for, loading) come first, as in any run; then the one error line
    lines = [line for line in res.stderr.splitlines() if not (line.startswith("loading ") or " tasks asked for (" in line)]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert "ailerons, cal-housing" in lines[0] and "RFBENCH_DATA_DIR or --data-dir" in lines[0]
    assert "nothing to run" not in res.stderr + res.stdout and "no results" not in res.stderr + res.stdout
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_datasets_commands():
    assert "friedman-generated" in rfbench("datasets", "list", "--suite", "synthetic").stdout
    assert "OpenML id" not in rfbench("datasets", "info", "breiman-generated").stdout
    assert "generator: breiman" in rfbench("datasets", "info", "breiman-generated").stdout
    assert "\ngenerator: " not in rfbench("datasets", "info", "breiman").stdout
    assert "rff-laplace" in rfbench("methods").stdout


@pytest.mark.slow
def test_methods_is_one_line_per_method_within_the_width():
    from rfbench import registry

    methods = registry.load().methods
    for args, env, width in [(["--width", "60"], {}, 60), ([], {"COLUMNS": "100"}, 100)]:
        out = rfbench("methods", *args, env={**os.environ, **env}).stdout.splitlines()
        assert max(map(len, out)) <= width, max(out, key=len)
        rows = [line for line in out if line.split(" ", 1)[0] in methods]
        assert [r.split()[0] for r in rows] == list(methods)       # each method once, one line
        gauss = next(r for r in rows if r.startswith("rff-gauss "))
        assert gauss.split()[1] == "reg" and "random Fourier" in gauss
    full = rfbench("methods", "--width", "0").stdout
    assert all(m.description in full and m.paper in full for m in methods.values())
    assert rfbench("methods", "--width", "10", check=False).returncode == 2


def _wait_for(directory, pattern: str, count: int, seconds: float) -> None:
    """Until ``directory`` holds ``count`` files matching ``pattern`` (a run under way), at most ``seconds``."""
    deadline = time.time() + seconds
    while time.time() < deadline and (not directory.is_dir() or len(list(directory.glob(pattern))) < count):
        time.sleep(0.05)


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = open(f"/proc/{entry}/stat").read()
            except OSError:
                continue
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parents.items() if pp in frontier} - found
        found |= frontier
    return found


def _alive(pid: int) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.slow
def test_sigterm_stops_like_ctrl_c_and_leaves_no_process_or_claim(tmp_path):
    """What a batch scheduler sends: one line, exit 143, the loky workers and resource trackers
    gone (no orphans), every claim released, finished records kept; the same command resumes."""
    out = tmp_path / "term"
    args = [*RUN, "run", "--datasets", "friedman-generated", "--methods", "gfc", "--features", "100",
            "--outer-folds", "4", "--inner-folds", "3", "--max-samples", "4000", "--jobs", "2", "--quiet",
            "--no-report", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    records = out / "records"
    _wait_for(records, "*.claim", 1, 120)
    time.sleep(0.5)
    children = _children(proc.pid)
    assert children, "no worker started"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143
    assert err.strip().splitlines() == ["rfbench: terminated (SIGTERM); finished tasks are saved, "
                                        "re-run the same command to resume"]
    time.sleep(2)
    assert not [p for p in children if _alive(p)], "orphaned worker processes"
    assert not list(records.glob("*.claim"))
    subprocess.run(args, check=True, timeout=600, capture_output=True)
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 4 and set(df["status"]) == {"done"}


@pytest.mark.slow
def test_kill_9_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path):
    out = tmp_path / "killed"
    args = [*RUN, "run", "--datasets", "friedman-generated", "--methods", "rff-gauss,rff-laplace", "--features", "30,60",
            "--outer-folds", "5", "--inner-folds", "3", "--max-samples", "3000", "--jobs", "2", "--quiet",
            "--no-report", "--out", str(out)]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    records = out / "records"
    _wait_for(records, "*.json", 4, 300)
    os.killpg(proc.pid, signal.SIGKILL)  # the runner and its loky workers, mid-write or not
    proc.wait()
    before = {p.name: p.read_text() for p in records.glob("*.json")}
    assert 4 <= len(before) < 20, "the run finished before it could be killed; make it longer"
    pd.read_csv(out / "results.csv")  # still a valid table
    subprocess.run([a for a in args if a != "--jobs" and a != "2"], check=True, timeout=600,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    after = {p.name: p.read_text() for p in records.glob("*.json")}
    assert len(after) == 2 * 2 * 5
    for name, text in before.items():  # finished work survives untouched
        if json.loads(text)["status"] == "done":
            assert after[name] == text
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 20 and set(df["status"]) == {"done"}
    assert not df.duplicated(["dataset", "method", "n_features", "fold"]).any()


def test_importing_rfbench_shortens_the_blas_thread_spin_unless_the_user_set_it():
    import os
    import subprocess
    import sys

    code = "import rfbench, os; print(os.environ['OPENBLAS_THREAD_TIMEOUT'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_THREAD_TIMEOUT"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "4"
    out = subprocess.run([sys.executable, "-c", code], env={**env, "OPENBLAS_THREAD_TIMEOUT": "9"},
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "9"


POISON = '''
import os
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class Poison(RegressorMixin, BaseEstimator):
    """Kills its worker process (as a segfault or the OOM killer would) when fitted on POISON_SIZE rows."""

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        if str(len(y)) == os.environ["POISON_SIZE"]:
            os._exit(1)
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)
'''


@pytest.mark.slow
def test_a_task_that_kills_its_worker_is_one_error_record_and_the_run_goes_on(tmp_path):
    """One outer fold kills its worker every time: after MAX_WORKER_DEATHS deaths alone it is one
    `worker died` record; the tasks that were in flight with it are rerun, not blamed; exit 0."""
    (tmp_path / "poisonmod.py").write_text(POISON)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "POISON_SIZE": "202"}         # 302 rows in 3 outer folds: training parts of 201, 201, 202 rows
    out = tmp_path / "run"
    res = subprocess.run([*RUN, "run", "--datasets", "friedman-generated", "--methods", "poisonmod:Poison,rff-gauss",
                          "--features", "10", "--outer-folds", "3", "--inner-folds", "2", "--max-samples", "302",
                          "--jobs", "2", "--quiet", "--no-report", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr[-2000:]
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 6 and not df.duplicated(["method", "fold"]).any()
    bad = df[df["status"] != "done"]
    assert len(bad) == 1 and bad["method"].item() == "poisonmod.Poison"
    assert bad["message"].item().startswith("worker died (2 times)")


SLEEP_S = 240
SLEEPER = f'''
import os
import signal
import threading
import time
import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class Sleeper(RegressorMixin, BaseEstimator):
    """Blocks SIGALRM and sleeps {SLEEP_S} s in one call, far past any reasonable limit, as a long
    call into C code would (the alarm's Python handler could run only when it returns). A thread
    writes the time (monotonic) to its log every 0.2 s: how long the task lived."""

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def fit(self, X, y):
        signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.SIGALRM}})
        if os.environ.get("SLEEPER_LOGS"):      # the heartbeat where a test asks for it (test_dask_backend does not)
            log = open(os.path.join(os.environ["SLEEPER_LOGS"], f"{{os.getpid()}}-{{time.monotonic_ns()}}.log"),
                       "a", buffering=1)

            def beat():
                while True:
                    log.write(f"{{time.monotonic()}}\\n")
                    time.sleep(0.2)

            threading.Thread(target=beat, daemon=True).start()
        time.sleep({SLEEP_S})
        return self

    def predict(self, X):
        return np.zeros(len(X))
'''


@pytest.mark.slow
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_timeout_is_a_process_level_limit(tmp_path, jobs):
    """A task that ignores the alarm is killed soon after --timeout (not after its SLEEP_S) and
    recorded as a timeout; the other tasks finish; exit 0.

    Soon is measured by the sleeper itself, not by the run's wall time (which a loaded machine
    stretches: worker start-ups, imports, the other tasks): its log says how long it lived. Its worker
    is killed TIMEOUT_GRACE after --timeout, 20 × 1.2 + 5 = 29 s after the task started in it; a
    sleeper that lived past half its sleep was not cut short by that limit (one that lived to its end
    would meet the alarm then: "exceeded the timeout", not the kill's message). --timeout is 20 s, not
    2 s, because the limit counts the task from its start in the worker, the first task's imports and
    data included: at a load of 14 on 2 cores those took 17 s, and with 2 s every task, rff-gauss's
    too, was killed before it began."""
    from rfbench.execution.executor import TIMEOUT_GRACE

    timeout_s = 20
    limit_s = timeout_s * TIMEOUT_GRACE[0] + TIMEOUT_GRACE[1]
    assert limit_s < SLEEP_S / 4          # the margin below is wide only with a short limit
    (tmp_path / "sleepmod.py").write_text(SLEEPER)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "SLEEPER_LOGS": str(logs)}
    out = tmp_path / "run"
    res = subprocess.run([*RUN, "run", "--datasets", "friedman-generated", "--methods", "sleepmod:Sleeper,rff-gauss",
                          "--features", "10", "--outer-folds", "2", "--inner-folds", "2", "--max-samples", "200",
                          "--jobs", jobs, "--timeout", f"{timeout_s}s", "--quiet", "--no-report", "--out", str(out)],
                         capture_output=True, text=True, timeout=600, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    df = pd.read_csv(out / "results.csv").set_index(["method", "fold"])
    assert (df.loc["sleepmod.Sleeper", "status"] == "timeout").all() and (df.loc["rff-gauss", "status"] == "done").all()
    # the worker was killed (the alarm, blocked, did not stop the task): timeout_records' message
    assert df.loc["sleepmod.Sleeper", "message"].str.startswith(f"killed after {timeout_s} s").all()
    lived = {}
    for log in sorted(logs.glob("*.log")):
        lines = log.read_text().split("\n")[:-1]         # whole lines: the last one may have been cut
        lived[log.name] = float(lines[-1]) - float(lines[0]) if lines else 0.0
    assert len(lived) == 2, lived          # one sleeper per outer fold, each run once
    assert all(t < SLEEP_S / 2 for t in lived.values()), (limit_s, lived)


def test_run_hands_the_runner_a_config_with_its_workers_resolved(tmp_path, monkeypatch, runner_calls):
    """`rfbench run` resolves jobs and threads once, before the runner: the config the runner gets
    has both as numbers (--jobs left out: one worker per core for the built-in methods)."""
    from click.testing import CliRunner

    from rfbench.cli import cli
    from rfbench.registry import load as load_registry

    monkeypatch.delenv("RFBENCH_JOBS", raising=False)
    res = CliRunner().invoke(cli, ["run", "--datasets", "friedman-generated", "--methods", "rff-gauss",
                                   "--out", str(tmp_path / "run"), "--quiet"])
    assert isinstance(res.exception, StopRun), res.output
    [(_, config)] = runner_calls
    cores = os.cpu_count() or 1
    assert (config.jobs, config.threads) == (cores, 1)
    assert config.resolved(["rff-gauss"], load_registry()) is config      # idempotent: the runner keeps it
