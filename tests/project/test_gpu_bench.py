"""bench/perf/gpu.py, the prepared GPU-machine run, works where there is no GPU: the torch path on
the CPU for a few folds, its rows, the side-by-side comparison, the projection and the summary."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench_scripts import bench_script

REPO = Path(__file__).resolve().parents[2]


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


def test_projection_keeps_every_worker_busy_and_calibrates_each_cpu_method(monkeypatch):
    """A worked example of the projection: LightGBM's core speed from its calibration fold (the
    suite row's work item: both budgets in one fit), à la carte's device folds holding a worker
    each; the fluid bound the larger of the GPU's time and the workers' on every core, the wall the
    runner's dispatch of the work items."""
    gpu = bench_script("gpu")
    suite = [{"dataset": "kinematics", "method": "lgbm", "budgets": [100, 500], "seconds": 60.0},
             {"dataset": "kinematics", "method": "alc", "budgets": [100], "seconds": 10.0},
             {"dataset": "kinematics", "method": "alc", "budgets": [500], "seconds": 100.0}]
    monkeypatch.setattr(gpu, "suite_rows", lambda: suite)
    monkeypatch.setattr(gpu, "spec_runs", lambda name, order: [])
    monkeypatch.setattr(gpu, "spec_cells", lambda name: set())
    done = {"status": "done", "dataset": "kinematics", "fold": 0}
    out = {"slot_concurrency": 2.0,
           "device_rows": [{**done, "method": "alc", "n": 500, "seconds": 10.0},
                           {**done, "method": "alc", "n": 100, "seconds": 2.0}],
           "cpu_rows": [{**done, "method": "lgbm", "n": 500, "budgets": [100, 500], "seconds": 120.0},
                        {**done, "method": "lgbm", "n": 100, "budgets": [100], "seconds": 1.0},  # not the row's item
                        {**done, "method": "alc", "n": 500, "seconds": 200.0}]}
    p = gpu.project(out, cores=4, slots=2)
    assert p["core_speed_per_method"] == {"lgbm": 0.5}
    # n = 500 against this machine's core (200 / 10), n = 100 against the dev row at this core speed
    # (10 / 0.5 / 2): the median
    assert p["speedup_per_method"] == {"alc": 15.0}
    suite_p = p["torgo_suite"]
    assert suite_p["cpu_core_seconds"] == 60.0 * 10 / 0.5            # 10 outer folds at half the speed
    assert suite_p["device_seconds"] == (10.0 + 2.0) * 10
    assert suite_p["device_wall_s"] == 120.0 / 2.0
    assert suite_p["workers_wall_s"] == (1200.0 + 120.0) / 4
    assert suite_p["fluid_bound_h"] == 330.0 / 3600
    # the runner's dispatch (rfbench run's interleaved order: fold by fold, à la carte's two items
    # before LightGBM's in each), worked by hand: LightGBM's folds 0, 1 start at 0, fold 2 at 14 and
    # fold 3 at 34 (à la carte's items take the freed workers first while they precede them); then
    # 4 at 122, 5 at 134, 6 at 154, 7 at 166, 8 at 254 and 9 at 266, ending at 386
    assert suite_p["simulated_wall_s"] == 386.0
    assert suite_p["projected_wall_h"] == 386.0 / 3600 and suite_p["peak_device_in_flight"] == 2


def test_the_suite_with_the_modern_rows_projects_what_it_can_and_says_what_it_cannot(monkeypatch):
    """torgo-modern's rows join the suite's run: a CPU-only fold (hgb) from its committed time at the
    method's core speed, a device fold (svgp) from its measured fold, and a device cell with neither a
    measured fold nor a record (xrfm) left out and counted, never guessed."""
    gpu = bench_script("gpu")
    # which rows take the device, as their estimators say with the extras installed (without them
    # the classes cannot be imported, and a clone with nothing beside it runs this test too)
    monkeypatch.setattr(gpu, "accepts_device", lambda m: m in {"falkon", "gp-sod", "xrfm", "svgp"})
    monkeypatch.setattr(gpu, "shares_budgets", lambda m: m in {"hgb", "gp-sod", "xrfm"})
    monkeypatch.setattr(gpu, "suite_rows", lambda: [])
    monkeypatch.setattr(gpu, "spec_runs", lambda name, order: [])
    monkeypatch.setattr(gpu, "spec_cells", lambda name: set())
    nan = float("nan")
    monkeypatch.setattr(gpu, "modern_suite_tasks", lambda: [
        ("kinematics", "hgb", 100, 0, 30.0), ("kinematics", "svgp", 100, 0, nan), ("kinematics", "xrfm", 100, 0, nan)])
    done = {"status": "done", "dataset": "kinematics", "fold": 0}
    out = {"slot_concurrency": 1.0, "device_rows": [{**done, "method": "svgp", "n": 100, "seconds": 7.0}],
           "cpu_rows": [{**done, "method": "lgbm", "n": 500, "budgets": [100, 500], "seconds": 1.0}]}
    p = gpu.project(out, cores=2, slots=1)
    modern = p["torgo_suite_modern"]
    assert modern["device_seconds"] == 7.0 and modern["cpu_core_seconds"] == 30.0       # no calibration: ×1
    assert modern["cells_not_projected"] == 1 and modern["not_projected"] == ["kinematics/xrfm/100"]
    assert p["torgo_suite"]["cells_not_projected"] == 0 and p["torgo_suite"]["device_seconds"] == 0.0
    assert ("kinematics", "svgp", 500) in gpu.device_plan({"kinematics"}, [], ["svgp"])


def test_alone_folds_give_the_per_fold_speedup_beside_the_shared_one():
    gpu = bench_script("gpu")
    assert gpu.alone_plan([("kinematics", "alc", 500), ("kinematics", "alc", 100), ("bank", "alc", 500),
                           ("kinematics", "rff-gauss", 500)]) == [("kinematics", "alc", 500)]
    done = {"status": "done", "dataset": "kinematics", "method": "alc", "n": 500, "fold": 0}
    out = {"alone_rows": [{**done, "seconds": 4.0, "error": 4.9}],
           "device_rows": [{**done, "seconds": 8.0, "error": 4.8}],
           "cpu_rows": [{**done, "seconds": 160.0, "error": 4.85}]}
    (row,) = gpu.per_fold_comparison(out)
    assert row["speedup"] == 20.0 and row["speedup_alone"] == 40.0
    assert row["seconds_device_alone"] == 4.0 and row["error_device_alone"] == 4.9


def test_a_specs_projection_counts_only_the_cells_of_its_run():
    """Table 4's directory also holds LightGBM records of another run: its projection leaves them
    out (the cells are those rfbench reproduce expands from the spec's run block)."""
    import pandas as pd

    gpu = bench_script("gpu")
    held = set(pd.read_csv(REPO / "results/gfc2016-table4/results.csv")["method"])
    assert "lgbm" in held
    cells = gpu.spec_cells("gfc2016-table4")
    assert {m for _, m, _ in cells} == {"rff-gauss", "rff-laplace", "rff-cauchy", "rff-gauss-grid", "rff-laplace-grid",
                                        "rff-cauchy-grid"}
    committed = gpu.committed_seconds("gfc2016-table4")
    assert committed and set(committed) <= cells
    # Tables 2-3 read Table 1's directory too (also_reads): its GFC records are not Tables 2-3's run
    assert {m for _, m, _ in gpu.committed_seconds("gfc2016-tables2-3")} == {"alc-q1", "alc-q2"}


def test_the_projection_reads_a_methods_contract_without_its_extra(monkeypatch):
    """A fresh install without rfbench[xrfm] or [gp] projects the same work items: whether xrfm and svgp
    share their budgets or take a device is read off their classes, which import without the extra
    (the registry's estimator_class refuses without it, as a run must)."""
    from rfbench.errors import UsageError
    from rfbench.registry import Method

    gpu = bench_script("gpu")
    monkeypatch.setattr(Method, "missing", lambda self: f"method '{self.name}' needs its extra" if self.requires else None)
    with pytest.raises(UsageError, match="needs its extra"):
        gpu._registry().method("xrfm").estimator_class("regression")
    assert gpu.shares_budgets("xrfm") and gpu.accepts_device("xrfm") and gpu.accepts_device("svgp")
    assert gpu.shares_budgets("hgb") and not gpu.shares_budgets("rff-gauss")


def test_project_only_recomputes_the_projection_from_the_measured_rows(tmp_path):
    out = tmp_path / "projected.json"
    printed = subprocess.run([sys.executable, str(REPO / "bench/perf/gpu.py"), "--project-only",
                              str(REPO / "results/gpu-benchmark.json"), "--output", str(out)],
                             check=True, capture_output=True, text=True, timeout=300).stdout
    projection = json.loads(printed)
    written = json.loads(out.read_text())
    assert written["projection"] == projection and written["device_rows"]
    assert projection["cores"] == 16 and projection["tables"]["gfc2016-table4"]["cpu_core_seconds"] == 0.0


def test_gpu_kit_stages_exactly_the_sets_asked_and_leaves_out_a_file_over_the_limit(tmp_path):
    """bench/perf/gpu_kit.py's staging (what travels to the GPU machine, which has no mirror): the
    registry's files of the sets asked, relative paths kept, split masks included; a set with a file
    over the limit left out; files of sets no longer asked removed; a second staging copies nothing."""
    from rfbench import registry

    kit, reg = bench_script("gpu_kit"), registry.load()
    mirror, dest = tmp_path / "mirror", tmp_path / "staged"
    small, masked, big = "kinematics", "uci-yacht", "uci-kin40k"
    sizes = {small: 100, masked: 100, big: 3 * 2**20}
    for name, size in sizes.items():
        for rel in kit.mirror_files([name], reg):
            (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
            (mirror / rel).write_bytes(b"x" * size)
    assert any(rel.endswith("test_mask.csv.gz") for rel in kit.mirror_files([masked], reg))
    (dest / "old").mkdir(parents=True)
    (dest / "old" / "stale.csv").write_text("a set staged before")
    staged = kit.stage([small, masked, big], mirror, reg, max_file_mib=1.0, dest=dest)
    assert staged == [small, masked]
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert files == sorted(kit.mirror_files([small, masked], reg))
    assert kit.stage([masked], mirror, reg, max_file_mib=1.0, dest=dest) == [masked]
    assert sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file()) == sorted(kit.mirror_files([masked], reg))


def test_uci_gpu_plans_the_exact_gp_on_every_row_last_and_only_when_asked():
    """bench/perf/uci_gpu.py: the GP row of FALKON's "≥ 10× less fit time" is the exact GP on the
    whole training set; it comes last (each stopped after its own limit), above every set's rows."""
    from rfbench import registry
    from rfbench.methods import gp

    uci_gpu = bench_script("uci_gpu")
    default, _ = uci_gpu.plan("cuda", 10_000, 2**30, 2, 4, 120.0)
    assert not [r for r in default if r["role"] == "gp all rows"]
    gpu, cpu = uci_gpu.plan("cuda", 10_000, 2**30, 2, 4, 120.0, full_gp_s=300.0)
    assert gpu[:len(default)] == default and cpu == uci_gpu.plan("cuda", 10_000, 2**30, 2, 4, 120.0)[1]
    full = gpu[len(default):]
    assert [r["dataset"] for r in full] == uci_gpu.SETS and {r["limit"] for r in full} == {300.0}
    reg = registry.load()
    # the registry's gp on the device: N from the GPU's free memory, above every one of these sets' rows on an
    # H200 (140 GiB); an H100's 80 GiB holds kin40k's 36 000 training rows but not protein's 41 157
    assert all(r["method"] == "gp" and r["params"] == {} for r in full)
    assert all(gp.row_limit(None, "cuda", 140 * 2**30)[0] > reg.dataset(r["dataset"]).m for r in full)
    assert 36_000 < gp.row_limit(None, "cuda", 80 * 2**30)[0] < 41_157
