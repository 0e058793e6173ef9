"""rfbench reproduce / status: an experiment spec drives the run, the check, the outputs and the
generated reproduction section (docs/results.md)."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from rfbench.errors import UsageError
from rfbench.experiments import reproduce, status
from rfbench.experiments.spec import all_specs, load_spec
from rfbench.registry import load as load_registry
from tests.records import as_record

ROOT = Path(__file__).resolve().parents[2]
RUN = [sys.executable, "-m", "rfbench.cli"]


def rfbench(*args, env=None, check=True):
    res = subprocess.run([*RUN, *args], capture_output=True, text=True, env=env)
    if check:
        assert res.returncode == 0, res.stderr
    return res


@pytest.fixture
def tiny_spec(tmp_path, monkeypatch):
    """A spec of two generated sets × two RFF kernels under a 3-fold protocol, and a 'published'
    table whose kernel cells sit at our numbers (gauss) and far off them (laplace)."""
    pub = tmp_path / "published"
    pub.mkdir()
    (pub / "tiny.csv").write_text("dataset,n,kernel,mean,std\n"
                                  "friedman,10,G,50.0,0.5\nfriedman,10,L,99.0,0.5\n"
                                  "breiman,10,G,1.0,0.5\n")
    spec = tmp_path / "bench" / "tiny.yaml"
    spec.parent.mkdir()
    spec.write_text("title: tiny\nresults: ../results/tiny\n"
                    "run: {datasets: [friedman-generated, ct-slice], methods: [rff-gauss, rff-laplace], features: [10]}\n"
                    "protocol: {name: cv, outer_folds: 3, inner_folds: 2, max_samples: 300}\n"
                    "published: tiny.csv\ncolumns: {dataset: dataset, n_features: n, method: kernel, mean: mean, std: std}\n"
                    "methods: {G: rff-gauss, L: rff-laplace}\n"
                    "datasets: {friedman: friedman-generated, breiman: ct-slice}\n"
                    "test: {name: paired, why: because}\n")
    monkeypatch.setenv("RFBENCH_PUBLISHED_DIR", str(pub))
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", "http://127.0.0.1:9/api/v1/xml")
    return spec


@pytest.mark.slow
def test_reproduce_runs_checks_writes_and_resumes(tiny_spec):
    spec = load_spec(str(tiny_spec), load_registry())
    assert spec.protocol_key == "cv-o3-i2-max300" and spec.test.name == "paired"
    res = rfbench("reproduce", str(tiny_spec), "--quiet")
    assert "skipped" in res.stderr and "ct-slice" in res.stderr       # no network: skipped, named
    out = tiny_spec.parent.parent / "results" / "tiny"
    df = pd.read_csv(out / "results.csv")
    assert len(df) == 2 * 3 and set(df["status"]) == {"done"}
    assert (out / "check.txt").is_file() and (out / "report.md").is_file()
    # the published gauss cell now holds our own mean: pass; laplace at 99: fail; breiman: missing
    mean = df[df["method"] == "rff-gauss"]["error"].mean()
    pub = tiny_spec.parent.parent / "published" / "tiny.csv"
    pub.write_text(pub.read_text().replace("G,50.0", f"G,{float(mean)!r}"))
    checked = reproduce.check_spec(load_spec(str(tiny_spec), load_registry()), None, load_registry())
    assert checked.counts == {"published": 3, "offline": 2, "present": 2, "pass": 1, "fail": 1,
                              "not comparable": 0, "partial": 0, "missing": 1}
    listing = rfbench("reproduce", str(tiny_spec), "--list").stdout
    assert "tiny" in listing and "published" in listing
    # a second run finds every task done: nothing is added or repeated
    before = sorted(p.name for p in (out / "records").glob("*.json"))
    rfbench("reproduce", str(tiny_spec), "--quiet")
    assert sorted(p.name for p in (out / "records").glob("*.json")) == before


@pytest.mark.slow
def test_reproduce_dry_run_counts_the_specs_tasks_and_writes_nothing(tiny_spec):
    """--dry-run: the spec's 12 tasks (ct-slice's 6 without data offline), then after fold 0 the 2
    done ones; no results directory before the run, no check.txt or record after it."""
    out = tiny_spec.parent.parent / "results" / "tiny"
    res = rfbench("reproduce", str(tiny_spec), "--dry-run")
    assert "dry run: 12 of 12 tasks would run, 0 are done" in res.stdout
    assert "6 of them are of datasets without data offline (ct-slice)" in res.stdout
    assert not out.exists()
    rfbench("reproduce", str(tiny_spec), "--quiet", "--folds", "0")
    (out / "check.txt").unlink()
    before = {p.name: p.stat().st_mtime_ns for p in out.rglob("*")}
    res = rfbench("reproduce", str(tiny_spec), "--dry-run")
    assert "dry run: 10 of 12 tasks would run, 2 are done" in res.stdout and "estimated " in res.stdout
    assert {p.name: p.stat().st_mtime_ns for p in out.rglob("*")} == before
    assert rfbench("reproduce", str(tiny_spec), "--dry-run", "--check-only", check=False).returncode == 2


@pytest.mark.slow
def test_status_counts_what_the_spec_asks(tiny_spec):
    rfbench("reproduce", str(tiny_spec), "--quiet", "--folds", "0")
    table = status.status([str(tiny_spec)], None, load_registry())
    rows = table[table["method"].isin(["rff-gauss", "rff-laplace"])]
    # per method: 2 datasets × 3 folds asked; fold 0 of friedman-generated done; ct-slice has no data
    assert rows["asked"].tolist() == [6, 6] and rows["done"].tolist() == [1, 1]
    assert rows["left"].tolist() == [2, 2] and rows["no_data"].tolist() == [3, 3]
    text = rfbench("status", str(tiny_spec)).stdout
    assert "tiny: 2 of 12 done, 0 failed, 4 left" in text


@pytest.mark.slow
def test_without_a_mirror_counts_say_so_and_the_readme_summary_is_refused(tiny_spec, tmp_path):
    """No mirror set: `status` and `--list` add one line saying why nothing is offline, and
    `--summary` (whose offline counts are committed) refuses to write rather than write zeros."""
    env = {k: v for k, v in os.environ.items() if k != "RFBENCH_DATA_DIR"} | {"RFBENCH_CONFIG": "none"}
    note = "no dataset mirror is set"
    assert note in rfbench("status", str(tiny_spec), env=env).stderr
    assert note in rfbench("reproduce", str(tiny_spec), "--list", env=env).stderr
    summary = tmp_path / "SUMMARY.md"
    summary.write_text("kept\n")
    res = rfbench("reproduce", str(tiny_spec), "--check-only", "--summary", str(summary), env=env, check=False)
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "--summary needs the dataset mirror" in lines[0]
    assert summary.read_text() == "kept\n"
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    assert note not in rfbench("status", str(tiny_spec), env=env | {"RFBENCH_DATA_DIR": str(mirror)}).stderr


@pytest.mark.slow
def test_bad_spec_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("title: x\nrun: {datasets: [nosuch], methods: [gfc]}\nprotocol: {name: cv}\n")
    res = rfbench("reproduce", str(bad), check=False)
    assert res.returncode == 2 and "unknown dataset 'nosuch'" in res.stderr and "Traceback" not in res.stderr
    res = rfbench("reproduce", "no-such-spec", check=False)
    assert res.returncode == 2 and "spec not found" in res.stderr


def test_every_spec_declares_a_run_into_its_own_directory():
    specs = all_specs(load_registry())
    dirs = [s.results for s in specs]
    assert len(set(dirs)) == len(dirs)                 # one table = one directory
    for s in specs:
        assert s.plan is not None and s.results.parent == ROOT / "results", s.name
        assert s.tolerance.why or not s.published, s.name


@pytest.mark.slow
def test_results_summary_is_generated(monkeypatch, tmp_path, mirror_dir):
    """No number in docs/results.md's reproduction section is typed by hand: it equals what
    `rfbench reproduce --all --check-only --summary docs/results.md` generates from the committed results."""
    monkeypatch.setenv("RFBENCH_CACHE_DIR", str(tmp_path))     # offline = mirror + generators only
    text = (ROOT / reproduce.SUMMARY_FILE).read_text()
    begin, end = text.index(reproduce.SUMMARY_BEGIN), text.index(reproduce.SUMMARY_END)
    current = text[begin:end + len(reproduce.SUMMARY_END)] + "\n"
    generated = reproduce.summary_markdown([reproduce.check_spec(s, mirror_dir, load_registry()) for s in all_specs(load_registry())])
    assert current == generated, f"{reproduce.SUMMARY_FILE} is stale: run `{reproduce.SUMMARY_COMMAND}`"


@pytest.mark.parametrize("order, expected", [
    # laplace (2 s) before gauss (50 s); ct-slice laplace by the size model of laplace's one dataset
    # (proportional to rows × inputs: far larger) last; equal estimates by fold
    ("cheapest_first", [3, 2, 1, 0]),
    # the reverse for long cells, ct-slice first; equal estimates still by fold
    ("longest_first", [0, 1, 3, 2]),
])
def test_a_spec_orders_its_cells_by_their_estimated_time(tiny_spec, order, expected):
    from rfbench.execution.tasks import WorkItem
    from rfbench.store import RunDir

    spec = load_spec(str(tiny_spec), load_registry())
    run = RunDir(spec.results).ensure()
    for method, seconds in (("rff-gauss", 50.0), ("rff-laplace", 2.0)):
        run.write_record(as_record({"dataset": "friedman-generated", "method": method, "n_features": 10, "fold": 0,
                          "seed": 0, "protocol": spec.protocol_key, "status": "done", "error": 1.0,
                          "total_s": seconds}))
    items = [WorkItem("ct-slice", "rff-laplace", 1, (10,)), WorkItem("friedman-generated", "rff-gauss", 1, (10,)),
             WorkItem("friedman-generated", "rff-laplace", 2, (10,)), WorkItem("friedman-generated", "rff-laplace", 1, (10,))]
    assert getattr(reproduce, order)(spec, load_registry())(items) == [items[i] for i in expected]


def test_a_method_without_a_finished_task_in_its_spec_is_estimated_from_the_other_specs(tiny_spec, monkeypatch):
    """torgo-modern's GP rows before their first task: status, the dry run and the run order estimate
    rff-laplace (no record in tiny's results) from its finished tasks in another spec's results, under
    that spec's own protocol, and say so; without them its cells stay unestimated."""
    from rfbench.execution.tasks import WorkItem
    from rfbench.experiments import spec as spec_mod
    from rfbench.store import RunDir

    other = tiny_spec.parent / "other.yaml"
    other.write_text("title: other\nresults: ../results/other\n"
                     "run: {datasets: [friedman-generated], methods: [rff-laplace], features: [10]}\n"
                     "protocol: {name: cv, outer_folds: 2, inner_folds: 2}\n")
    monkeypatch.setattr(spec_mod, "bench_dir", lambda: tiny_spec.parent)
    reg = load_registry()
    tiny, theirs = load_spec(str(tiny_spec), reg), load_spec(str(other), reg)

    def record(spec, method, seconds, fold=0):
        RunDir(spec.results).ensure().write_record(as_record({
            "dataset": "friedman-generated", "method": method, "n_features": 10, "fold": fold, "seed": 0,
            "protocol": spec.protocol_key, "status": "done", "error": 1.0, "total_s": seconds, "cpu_s": seconds}))

    record(tiny, "rff-gauss", 5.0)

    def laplace_row():
        table = status.status([str(tiny_spec)], None, reg)
        return table.set_index("method").loc["rff-laplace"], table.attrs["sources"]

    row, said = laplace_row()
    assert row["unestimated"] == 3 and not any("estimated from" in line for line in said)
    items = [WorkItem("friedman-generated", "rff-gauss", 0, (10,)), WorkItem("friedman-generated", "rff-laplace", 0, (10,))]
    assert reproduce.longest_first(tiny, reg)(items) == items       # unestimated: last
    record(theirs, "rff-laplace", 60.0)
    record(theirs, "rff-laplace", 80.0, fold=1)
    row, said = laplace_row()
    # friedman-generated's 3 folds at the median of its 2 tasks there (70 s); ct-slice has no data offline
    assert row["unestimated"] == 0 and row["left_core_h"] == pytest.approx(3 * 70.0 / 3600)
    assert "tiny: rff-laplace: no finished task here, estimated from its finished tasks in other" in said
    text = reproduce.dry_run_spec(tiny, registry=reg)
    assert "(rff-laplace: no finished task here, estimated from its finished tasks in other)" in text
    assert reproduce.longest_first(tiny, reg)(items) == items[::-1]    # 70 s before 5 s
    # the other spec's estimate of its own method is its own: nothing borrowed
    assert reproduce.estimate_timings(theirs, reproduce.cpu_timings(theirs), reg)[1] == ""


@pytest.mark.slow
def test_excluded_cells_are_not_run_counted_or_checked_but_listed(tiny_spec):
    """run.exclude (the GBRFF Table 2 '-' cells): the method is not run there, status does not ask
    for it, the check names it; a wrong exclusion is a one-line error."""
    text = tiny_spec.read_text().replace(
        "features: [10]}", "features: [10], exclude: {rff-laplace: {friedman-generated: \"not in the paper\"}}}")
    tiny_spec.write_text(text)
    spec = load_spec(str(tiny_spec), load_registry())
    assert not spec.plan.runs("rff-laplace", "friedman-generated") and spec.plan.runs("rff-gauss", "friedman-generated")
    assert spec.plan.method_groups() == [(["friedman-generated", "ct-slice"], ["rff-gauss"]),
                                         (["ct-slice"], ["rff-laplace"])]
    rfbench("reproduce", str(tiny_spec), "--quiet", "--folds", "0")
    out = tiny_spec.parent.parent / "results" / "tiny"
    assert not list((out / "records").glob("*rff-laplace*"))
    assert len(list((out / "records").glob("friedman-generated__rff-gauss*"))) == 1
    rows = status.status([str(tiny_spec)], None, load_registry()).set_index("method")
    assert rows.loc["rff-laplace", "asked"] == 3 and rows.loc["rff-gauss", "asked"] == 6
    assert "rff-laplace on friedman-generated: not in the paper" in (out / "check.txt").read_text()
    tiny_spec.write_text(text.replace("rff-laplace: {friedman", "gfc: {friedman"))
    res = rfbench("reproduce", str(tiny_spec), "--list", check=False)
    assert res.returncode == 2 and "exclude names method gfc" in res.stderr and "Traceback" not in res.stderr


def test_gbrff_table2_leaves_bmkr_off_bankmarketing():
    spec = load_spec("gbrff2020-table2", load_registry())
    plan = status.spec_plan(spec, load_registry())
    bmkr = plan[plan["method"] == "bmkr"]
    assert len(bmkr) == 15 * 20 and "bankmarketing" not in set(bmkr["dataset"])
    assert len(plan[(plan["method"] == "lgbm") & (plan["dataset"] == "bankmarketing")]) == 20


def test_readme_benchmarks_show_the_suite_projection_and_side_by_side_speedups(tmp_path):
    """The summary's benchmark section renders results/suite-benchmark.json: the projection of the
    label named current (per method and in total) and every side-by-side comparison."""
    import json

    from rfbench.experiments.reproduce import benchmarks_markdown

    cells = [{"method": "gbrff", "n_features": 100, "projected_core_hours": 0.25},
             {"method": "gbrff", "n_features": 500, "projected_core_hours": 1.5},
             {"method": "alc", "n_features": 500, "projected_core_hours": 8.0}]
    state = {"current": "new", "labels": {"new": {"rows": [], "summary": {
        "cells": cells, "projected_core_hours": 9.75, "projected_wall_hours_2_cores": 4.875}}},
        "comparisons": {"old -> new": [{"method": "gbrff", "pairs": 12, "seconds_base": 700.7, "seconds_other": 604.0,
                                        "speedup": 700.7 / 604.0, "same_params": 21, "same_error": 0, "records": 24,
                                        "max_abs_error_diff": 0.229}]}}
    (tmp_path / "suite-benchmark.json").write_text(json.dumps(state))
    text = benchmarks_markdown(tmp_path)
    assert "9.8 core-hours, 4.9 h of wall time on two cores" in text and 'code state "new"' in text
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ")}
    assert rows["alc"] == ["", "8.00", "8.00"] and rows["gbrff"] == ["0.25", "1.50", "1.75"]
    assert rows["old -> new"] == ["gbrff", "12", "700.7", "604.0", "1.16", "21/24", "0/24", "0.23"]
    assert "floor" not in text
    floor = {"benchmark_label": "new", "floor_core_hours": 7.25, "floor_wall_hours_2_cores": 3.625,
             "methods": {"alc": {"floor_core_hours": 5.0, "measured_core_hours": 8.0},
                         "lgbm": {"floor_core_hours": 0.5, "measured_core_hours": 0.6}}}
    (tmp_path / "suite-floor.json").write_text(json.dumps(floor))
    assert "7.2 core-hours, 3.6 h on two cores" in benchmarks_markdown(tmp_path)
    assert "(5.00 of its 8.00 core-h)" in benchmarks_markdown(tmp_path)
    floor["benchmark_label"] = "old"                 # a floor of another projection is not shown
    (tmp_path / "suite-floor.json").write_text(json.dumps(floor))
    assert "floor" not in benchmarks_markdown(tmp_path)
    state["current"] = "missing"
    (tmp_path / "suite-benchmark.json").write_text(json.dumps(state))
    assert "torgo suite" not in benchmarks_markdown(tmp_path)


def test_readme_peer_sentence_states_the_measured_range(tmp_path):
    """The peer benchmark's claim is computed from results/peer-rff-<n>.json, every budget pooled."""
    import json

    from rfbench.experiments.reproduce import benchmarks_markdown

    row = {"dataset": "ailerons", "fold": 0, "rfbench_s": 1.0, "rfbench_error": 4.5, "peer_error": 4.6}
    (tmp_path / "peer-rff-100.json").write_text(json.dumps([dict(row, n=100, peer_s=40.0, ratio=40.0),
                                                            dict(row, n=100, fold=1, peer_s=36.0, ratio=36.0)]))
    (tmp_path / "peer-rff-500.json").write_text(json.dumps([dict(row, n=500, peer_s=30.0, ratio=30.0)]))
    text = benchmarks_markdown(tmp_path)
    assert "RidgeCV" in text and "rfbench 30–40× faster (median 36×) over 3 outer folds" in text
    assert text.count("| ailerons ") == 3


def test_a_specs_direction_comes_from_its_metric(tiny_spec):
    """'higher is better' is defined once, by the metric table (rfbench.reporting.cells): a spec names its
    published cells' metric, and the retired higher_is_better key or an unknown metric is one line."""
    assert load_spec("gbrff2020-table2", load_registry()).higher_is_better and not load_spec("gfc2016-table1", load_registry()).higher_is_better
    text = tiny_spec.read_text()
    tiny_spec.write_text(text + "metric: accuracy\n")
    assert load_spec(str(tiny_spec), load_registry()).higher_is_better
    tiny_spec.write_text(text + "metric: error\n")
    assert not load_spec(str(tiny_spec), load_registry()).higher_is_better
    tiny_spec.write_text(text + "higher_is_better: true\n")
    with pytest.raises(UsageError, match="write metric: accuracy"):
        load_spec(str(tiny_spec), load_registry())
    tiny_spec.write_text(text + "metric: r2\n")
    with pytest.raises(UsageError, match="field 'metric' must be one of rmse100"):
        load_spec(str(tiny_spec), load_registry())


@pytest.mark.parametrize("results, refused", [("/tmp/rfbench-elsewhere/x", True), ("../../../x", True),
                                              ("../results/x", False), ("out", False)])
def test_a_specs_results_stay_under_its_project_or_the_working_directory(tmp_path, monkeypatch, results, refused):
    """A spec's results: directory under the spec's project (its directory or the one above) or the
    working directory; anything else is refused in one line unless results_anywhere: true."""
    from rfbench.errors import UsageError
    from rfbench.experiments.spec import load_spec

    spec = tmp_path / "proj" / "bench" / "s.yaml"
    spec.parent.mkdir(parents=True)
    body = (f"title: x\nresults: {results}\nrun: {{datasets: [friedman-generated], methods: [rff-gauss], "
            "features: [10]}\nprotocol: {name: cv, outer_folds: 2, inner_folds: 2}\n")
    spec.write_text(body)
    monkeypatch.chdir(spec.parent)
    if refused:
        with pytest.raises(UsageError, match="outside the spec's project .* and the working directory"):
            load_spec(str(spec), load_registry())
        spec.write_text(body + "results_anywhere: true\n")
    assert load_spec(str(spec), load_registry()).results == (spec.parent / results).resolve()




def test_summary_benchmarks_mark_stale_rows_and_show_both_peers(tmp_path):
    """A speed-cores row measured with older code carries its note (†), and the peer benchmark shows
    the peer's CV mode with each ratio: the 5 inner folds and RidgeCV's default leave-one-out."""
    import json

    from rfbench.experiments.reproduce import benchmarks_markdown

    row = {"dataset": "bank", "method": "gfc", "n_features": 500, "wall_1core_s": 15.3, "wall_2core_s": 8.9}
    (tmp_path / "speed-cores.json").write_text(json.dumps([{**row, "stale": "measured with the old GFC"},
                                                           {**row, "dataset": "pumadyn"}]))
    peer = {"dataset": "ailerons", "n": 100, "fold": 0, "rfbench_s": 1.0, "rfbench_error": 4.5, "peer_error": 4.6}
    (tmp_path / "peer-rff-100.json").write_text(json.dumps([{**peer, "peer_s": 30.0, "ratio": 30.0}]))
    (tmp_path / "peer-rff-loo-100.json").write_text(json.dumps([{**peer, "peer_s": 5.0, "ratio": 5.0,
                                                                 "load_1min": 3.2}]))
    text = benchmarks_markdown(tmp_path)
    assert "| gfc †    |" in text and "| gfc      |" in text and "† measured with the old GFC" in text
    assert "`RidgeCV(cv=inner)`, the same 5 inner folds" in text and "rfbench 30–30× faster" in text
    assert "`RidgeCV(cv=None)`, RidgeCV's default efficient leave-one-out" in text
    assert "rfbench 5–5× faster (median 5×) over 1 outer folds (1-minute load average 3.2–3.2" in text


def test_summary_is_written_between_markers_and_never_over_other_text(tmp_path):
    page = tmp_path / "results.md"
    old = "<!-- BEGIN generated by `rfbench reproduce --all --check-only --summary README.md` -->"
    page.write_text(f"# Title\n\n{old}\nold\n{reproduce.SUMMARY_END}\n\nafter\n")
    section = f"{reproduce.SUMMARY_BEGIN}\nnew\n{reproduce.SUMMARY_END}\n"
    reproduce.replace_section(page, section)
    assert page.read_text() == f"# Title\n\n{section}\nafter\n"
    fresh = tmp_path / "new.md"
    reproduce.replace_section(fresh, section)
    assert fresh.read_text() == section
    readme = tmp_path / "README.md"
    readme.write_text("# a README without the generated section\n")
    with pytest.raises(UsageError, match="docs/results.md"):
        reproduce.replace_section(readme, section)
    assert readme.read_text() == "# a README without the generated section\n"


def test_a_specs_run_hands_the_runner_each_group_s_resolved_workers(tiny_spec, runner_calls):
    """reproduce resolves jobs and threads per group of the spec (its default jobs depend on the
    group's methods), before the runner."""
    from rfbench.execution import runconfig
    from rfbench.execution.runconfig import RunConfig

    runner_calls.stop = False
    reg = load_registry()
    reproduce.run_spec(load_spec(str(tiny_spec), reg), RunConfig(jobs=None), registry=reg, progress=False)
    assert runner_calls
    for methods, config in runner_calls:
        jobs = runconfig.default_jobs(methods, registry=reg)
        assert (config.jobs, config.threads) == (jobs, max(1, (os.cpu_count() or 1) // jobs))
