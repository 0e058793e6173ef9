"""bench/perf/gpu.py, the prepared GPU-machine run, works where there is no GPU: the torch path on
the CPU for a few folds, its rows, the side-by-side comparison, the projection and the summary."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_gpu_bench_runs_on_the_cpu(mirror_dir, tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "gpu.json"
    env = dict(os.environ, RFBENCH_DATA_DIR=str(mirror_dir))
    subprocess.run([sys.executable, str(REPO / "bench/perf/gpu.py"), "--device", "torch-cpu", "--budget-s", "30", "--features", "100",
                    "--slots", "1", "--cpu-workers", "1", "--datasets", "delta-ailerons", "--methods", "rff-gauss",
                    "--output", str(out)], check=True, env=env, cwd=tmp_path, capture_output=True, timeout=300)
    result = json.loads(out.read_text())
    done = [r for r in result["device_rows"] if r["status"] == "done"]
    assert done and all(r["device"] == "torch-cpu" and r["method"] == "rff-gauss" for r in done)
    assert result["environment"]["device"] == "torch-cpu" and "card" not in result["environment"]
    projection = result["projection"]
    assert projection["torgo_suite"]["projected_wall_h"] > 0
    assert set(projection["tables"]) >= {"gfc2016-table1", "gfc2016-tables1-4"}
    summary = subprocess.run([sys.executable, str(REPO / "bench/perf/gpu.py"), "--render", str(out)],
                             check=True, capture_output=True, text=True).stdout
    assert "no GPU (torch-cpu)" in summary and "| torgo suite" in summary
    assert list(tmp_path.iterdir()) == [out]          # nothing written beside the output
