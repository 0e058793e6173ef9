"""The bench/perf scripts that run one task through the runner's ``execute`` still run it.

They call the worker's entry point directly (to time or profile a task exactly as ``rfbench run``
fits it), so a change of its signature breaks them without any other test noticing (the profiler,
suite, speed and thread-placement scripts all did once). Each runs here on the generated Breiman
set with a tiny RFF model, no mirror needed, and must report the task's own error.
"""

import json
import subprocess
import sys

from tests.bench_scripts import BENCH_PERF


def _run(script: str, *args: str, cwd) -> str:
    proc = subprocess.run([sys.executable, str(BENCH_PERF / script), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_profile_task_profiles_one_runner_task(tmp_path):
    out = tmp_path / "profile.txt"
    text = _run("profile_task.py", "--dataset", "breiman-generated", "--method", "rff-gauss",
                "--features", "10", "--top", "5", "--output", str(out), cwd=tmp_path)
    assert "status done" in text and "Ordered by: internal time" in text
    error = float(text.split("error ")[1].split(",")[0])
    # Breiman's noise variance is 4 (GFC Table 1: 4.01 at n = 100): ten features land above it,
    # within the target's own variance
    assert 4.0 < error < 30.0
    assert out.read_text().strip() == text.strip()


def test_profile_task_reports_a_failed_task_in_one_line(tmp_path):
    proc = subprocess.run([sys.executable, str(BENCH_PERF / "profile_task.py"), "--dataset", "no-such-set",
                           "--method", "rff-gauss"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert proc.returncode != 0
    assert "unknown dataset 'no-such-set'" in proc.stderr and "Traceback" not in proc.stderr


def test_suite_benchmark_measures_one_task(tmp_path):
    out = tmp_path / "suite.json"
    _run("suite.py", "--suite", "synthetic", "--datasets", "breiman-generated", "--methods", "rff-gauss",
         "--features", "10", "--output", str(out), cwd=tmp_path)
    rows = [r for label in json.loads(out.read_text())["labels"].values() for r in label["rows"]]
    assert len(rows) == 1 and rows[0]["method"] == "rff-gauss" and rows[0]["seconds"] > 0


def test_speed_cores_times_one_task_on_one_and_two_cores(tmp_path):
    out = tmp_path / "speed.json"
    _run("speed_cores.py", "--task", "rff-gauss:10:breiman-generated", "--output", str(out), cwd=tmp_path)
    (row,) = json.loads(out.read_text())
    # the thread count changes the time, never the numbers
    assert row["error_1core"] == row["error_2core"] and row["wall_1core_s"] > 0


def test_thread_placement_compares_both_placements(tmp_path):
    out = tmp_path / "placement.json"
    _run("thread_placement.py", "--methods", "rff-gauss", "--dataset", "breiman-generated", "--features", "10",
         "--output", str(out), cwd=tmp_path)
    (row,) = json.loads(out.read_text())["rows"]
    assert row["errors_2x1"] == row["errors_1x2"]
