"""The shipped baselines are a spec's results where no local results directory holds records (issue
45, item 1): from an installed wheel in an empty directory, `report SPEC`, `check SPEC`, `plot SPEC`,
`status SPEC`, `reproduce --list`, `reproduce --check-only`, the dry run's estimates and the pages of
`report --all` read the spec's shipped baseline, say so in one line and write nothing; a local
results directory wins, and is said to."""

import io
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from rfbench.cli import cli
from rfbench.experiments import baselines, html_page, reproduce, sources
from rfbench.experiments import spec as spec_mod
from rfbench.experiments.spec import load_spec
from rfbench.registry import load as load_registry
from tests.cli_errors import one_line_error

ROOT = Path(__file__).resolve().parents[2]
SPEC = "eerf2018-table3"            # a small baseline (180 tasks) with a published table
CLAIM = "eerf2018-claim"            # a spec of a claim: tasks counted, no published table


@pytest.fixture
def wheel_cwd(tmp_path, monkeypatch):
    """An empty working directory, the packaged specs resolving their results as an installed wheel's
    do (<results_root>/<name>, results_root: ./results of the working directory), no config file:
    no local results directory anywhere."""
    monkeypatch.setattr(spec_mod, "is_packaged", lambda path: True)
    monkeypatch.setenv("RFBENCH_CONFIG", "none")
    monkeypatch.delenv("RFBENCH_RESULTS_ROOT", raising=False)
    cwd = tmp_path / "empty"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def invoke(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def shipped(name: str) -> baselines.Baseline:
    return baselines.read_file(baselines.shipped_dir() / f"{name}.parquet")


def files_in(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


def test_report_spec_reads_the_shipped_baseline_and_writes_nothing(wheel_cwd):
    b = shipped(SPEC)
    result = invoke("report", SPEC, "--format", "csv")
    assert result.exit_code == 0, result.output
    said = (f"{SPEC}: results: shipped baseline rfbench/_data/baselines/{SPEC}.parquet ({len(b.frame)} tasks; "
            f"no local results directory at {wheel_cwd / 'results' / SPEC})")
    assert said in result.stderr
    table = pd.read_csv(io.StringIO(result.stdout))
    done = b.frame[b.frame["status"] == "done"]
    assert set(table["method"]) == set(done["method"])
    assert set(table["dataset"]) == set(done["dataset"])
    assert int(table["folds"].sum()) == len(done) == len(b.frame)
    assert files_in(wheel_cwd) == []


def test_check_spec_from_the_baseline_is_the_check_of_the_committed_results(wheel_cwd):
    from_baseline = invoke("check", SPEC)
    assert "shipped baseline" in from_baseline.stderr
    from_results = invoke("check", str(ROOT / "results" / SPEC), "--spec", SPEC)
    assert from_baseline.exit_code == from_results.exit_code       # the published cells' verdict, not exit 2
    assert from_baseline.stdout == from_results.stdout
    assert files_in(wheel_cwd) == []


def test_a_local_results_directory_wins_and_is_said_to(wheel_cwd):
    local = wheel_cwd / "results" / SPEC / "records"
    local.mkdir(parents=True)
    kept = sorted((ROOT / "results" / SPEC / "records").glob("eerf-adult__*.json"))[:4]
    for f in kept:
        shutil.copy(f, local / f.name)
    result = invoke("report", SPEC, "--format", "csv")
    assert result.exit_code == 0, result.output
    assert (f"results: {wheel_cwd / 'results' / SPEC} (local results directory; it wins over the shipped baseline "
            f"rfbench/_data/baselines/{SPEC}.parquet)") in result.stderr
    table = pd.read_csv(io.StringIO(result.stdout))
    assert int(table["folds"].sum()) == len(kept)
    assert set(table["dataset"]) == {"eerf-adult"}
    # reproduce's outputs go to the local directory again
    assert sources.source(wheel_cwd / "results" / SPEC) == wheel_cwd / "results" / SPEC


def test_an_empty_records_directory_is_no_results(wheel_cwd):
    (wheel_cwd / "results" / SPEC / "records").mkdir(parents=True)
    src = sources.source(wheel_cwd / "results" / SPEC)
    assert sources.is_shipped(src)
    assert "no records in" in sources.describe_one(wheel_cwd / "results" / SPEC, src)


def test_list_and_check_only_count_the_baseline_and_write_nothing(wheel_cwd):
    listed = invoke("reproduce", SPEC, CLAIM, "--list")
    assert listed.exit_code == 0, listed.output
    rows = {line.split()[0]: line for line in listed.stdout.splitlines()[2:]}
    spec = load_spec(SPEC, load_registry())
    committed = reproduce.check_spec(spec, os.environ.get("RFBENCH_DATA_DIR"), load_registry())   # the baseline's rows
    assert committed.shipped
    present = committed.counts["present"]
    assert present > 0
    assert rows[SPEC].split()[1:4] == [str(committed.counts[k]) for k in ("published", "offline", "present")]
    assert f"shipped baseline rfbench/_data/baselines/{SPEC}.parquet" in rows[SPEC]
    claim = reproduce.check_spec(load_spec(CLAIM, load_registry()), None, load_registry())
    assert f"{claim.counts['done']}/{claim.counts['tasks']} tasks" in rows[CLAIM]
    assert claim.counts["done"] > 0
    checked = invoke("reproduce", SPEC, "--check-only")
    assert "read from the shipped baseline" in checked.stdout and "nothing written" in checked.stdout
    assert files_in(wheel_cwd) == []              # no ./results/SPEC/check.txt, report.md


def test_the_index_counts_a_claim_as_reproduce_list_does(wheel_cwd):
    """The tasks the spec asks for that are finished: records outside its plan (a directory it also
    reads, another spec's columns) are not counted, in the index as in --list."""
    for name in (CLAIM, "eerf2018-figures"):
        spec = load_spec(name, load_registry())
        counts = reproduce.check_spec(spec, None, load_registry()).counts
        _, summary = html_page.spec_page(spec, figures=False, registry=load_registry())
        assert summary.startswith(f"{counts['done']} of {counts['tasks']} tasks done"), summary
        assert "shipped baseline" in summary
    # eerf2018-figures also reads Table 3's and 5's directories: more rows than its plan
    spec = load_spec("eerf2018-figures", load_registry())
    assert len(reproduce.results_of(spec)) > reproduce.check_spec(spec, None, load_registry()).counts["tasks"]
    assert files_in(wheel_cwd) == []


def test_report_all_pages_read_the_baselines(wheel_cwd, monkeypatch):
    specs = [load_spec(SPEC, load_registry()), load_spec(CLAIM, load_registry())]
    monkeypatch.setattr(spec_mod, "all_specs", lambda registry=None: specs)
    result = invoke("report", "--all", "--format", "html", "--output", "site")
    assert result.exit_code == 0, result.output
    index = (wheel_cwd / "site" / "index.html").read_text()
    assert "2 page(s)" in index and "no finished task yet" not in index
    page = (wheel_cwd / "site" / f"{SPEC}.html").read_text()
    assert f"shipped baseline rfbench/_data/baselines/{SPEC}.parquet" in page
    assert files_in(wheel_cwd) == ["site", "site/eerf2018-claim.html", f"site/{SPEC}.html", "site/index.html"]


def test_dry_run_estimates_from_the_baseline(wheel_cwd):
    result = invoke("reproduce", SPEC, "--dry-run")
    assert result.exit_code == 0, result.output
    assert f"from the finished tasks in the shipped baseline rfbench/_data/baselines/{SPEC}.parquet" in result.stdout
    rows = [line.split() for line in result.stdout.splitlines() if line.startswith("eerf-")]
    assert rows and all(r[-1] != "?" for r in rows)
    assert "0 are done" in result.stdout                  # nothing is done here: every task would run
    assert files_in(wheel_cwd) == []


def test_the_estimates_from_a_baseline_leave_its_gpu_tasks_out(wheel_cwd):
    """uci-splits ships tasks computed on a GPU (its records' device: cuda); read from the wheel, the
    baseline names them, and the run order's estimates (reproduce.cpu_timings) leave them out."""
    from rfbench.store import device_tasks

    spec = load_spec("uci-splits", load_registry())
    src = sources.source(spec.results)
    assert isinstance(src, sources.Shipped)
    frame = shipped("uci-splits").frame
    on_gpu = device_tasks([src])
    assert len(on_gpu) == int((frame["device"] == "cuda").sum()) > 0
    timed = reproduce.cpu_timings(spec)
    keys = set(zip(timed["dataset"], timed["method"], timed["n_features"], timed["fold"], timed["protocol"], strict=True))
    assert not keys & on_gpu and len(timed) == int(((frame["status"] == "done") & (frame["device"] == "cpu")).sum())


def test_status_and_plot_read_the_baseline(wheel_cwd):
    b = shipped(SPEC)
    status = invoke("status", SPEC)
    assert status.exit_code == 0, status.output
    assert "shipped baseline" in status.stderr
    assert f"{SPEC}: {len(b.frame)} of {len(b.frame)} done" in status.stdout
    plotted = invoke("plot", SPEC, "--output", "figs", "--kind", "walltime")
    assert plotted.exit_code == 0, plotted.output
    assert "shipped baseline" in plotted.stderr
    assert files_in(wheel_cwd) and all(f.startswith("figs") for f in files_in(wheel_cwd))


def test_a_name_that_is_no_spec_and_no_directory_is_still_not_found(wheel_cwd, capsys):
    one_line_error(capsys, ["report", "no-such-thing"], "results directory not found: no-such-thing")


def test_plot_spec_from_the_baseline_needs_an_output_directory(wheel_cwd, capsys):
    one_line_error(capsys, ["plot", "--spec", "eerf2018-figures"], "give --output DIR for its figures")
    assert files_in(wheel_cwd) == []
