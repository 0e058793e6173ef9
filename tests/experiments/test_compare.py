"""rfbench compare run | report: a new method on a baseline's outer folds (verified by fingerprint),
reported beside the baseline on the folds both have, labelled as a screen; the README's section
end to end from an installed wheel."""

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rfbench import registry
from rfbench.cli import main
from rfbench.data.sources import DataSources
from rfbench.execution import runner
from rfbench.execution.runconfig import RunConfig
from rfbench.experiments import baselines, compare
from rfbench.protocol import Protocol
from rfbench.registry import load as load_registry
from rfbench.reporting.shown_paths import shown
from tests.cli_errors import one_line_error
from tests.records import as_record
from tests.runner_stub import StopRun
from tests.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]
GENERATED = ["breiman-generated", "friedman-generated"]      # no mirror needed
USER = "sklearn.linear_model:Ridge"


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    monkeypatch.setenv("RFBENCH_REGISTRY", "")


@pytest.fixture(scope="module")
def base_dir(tmp_path_factory):
    """A small baseline as a plain results directory: rff-gauss on the two generated sets, 3 folds."""
    out = tmp_path_factory.mktemp("base") / "base"
    runner.run(GENERATED, ["rff-gauss"], [10], Protocol(outer_folds=3, inner_folds=2, max_samples=300), str(out),
               RunConfig(jobs=1), progress=False, registry=load_registry())
    return out




def test_run_on_the_baselines_folds_and_report_a_screen(base_dir, tmp_path):
    out = tmp_path / "mine"
    run_dir, b, names = compare.run(str(base_dir), [USER], None, None, [0, 1], str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    assert names == GENERATED and b.name == "base"
    # only the user's method ran, on the baseline's protocol, budgets and the asked folds
    recs = pd.read_csv(out / "results.csv")
    assert set(recs["method"]) == {"sklearn.linear_model.Ridge"} and set(recs["fold"]) == {0, 1}
    assert set(recs["protocol"]) == {"cv-o3-i2-max300"} and set(recs["n_features"]) == {10}
    assert baselines.run_fingerprints(out) == baselines.run_fingerprints(base_dir)    # every fold of every row
    assert json.loads((out / "compare.json").read_text())["baseline"] == str(base_dir.resolve())   # loads it again

    c = compare.compare([str(out)], [str(base_dir)], registry=load_registry())          # also found from compare.json: same result
    assert compare.compare([str(out)], registry=load_registry()).frame.equals(c.frame)
    assert c.folds == {d: "0-1" for d in GENERATED} and c.outer == 3
    assert "a screen, folds 0-1 of 3 on" in c.notes[0] and "over these folds only" in c.notes[1]
    table = pd.read_csv(pd.io.common.StringIO(compare.render(c, "csv", registry=load_registry())))
    base = pd.read_csv(base_dir / "results.csv")
    for (d, meth), row in table.set_index(["dataset", "method"]).iterrows():
        src = recs if meth.startswith("sklearn") else base
        errs = src[(src["dataset"] == d) & (src["method"] == meth) & src["fold"].isin([0, 1])]["error"]
        assert row["folds"] == 2 and row["error_mean"] == pytest.approx(errs.mean(), rel=1e-12)
        assert row["folds_compared"] == "0-1" and row["folds_of_protocol"] == 3
    # the baseline's third fold is not in the statistics: its full mean differs
    full = base[base["dataset"] == GENERATED[0]]["error"].mean()
    assert table.set_index(["dataset", "method"]).loc[(GENERATED[0], "rff-gauss"), "error_mean"] != pytest.approx(full)
    latex = compare.render(c, "latex", registry=load_registry())
    assert re.search(r"\\caption\{Compared: sklearn\.linear\\_model\.Ridge .*a screen, folds 0-1 of 3", latex)
    page = compare.render(c, "html", registry=load_registry())
    assert '<p class="sub">Compared: sklearn.linear_model.Ridge' in page and "over these folds only" in page
    # two datasets: too few for the CD diagram's tests (one line says so), the other figures drawn
    assert "too few datasets for a test" in page and "Critical-difference diagram, n = 10" not in page
    assert page.count('src="data:image/png;base64,') >= 1
    assert "http://" not in page and "https://" not in page
    # the run as the pages show paths (relative to the project, else '…/NAME'), never this machine's own
    assert str(out) not in page and f"<title>rfbench comparison: {shown(out)} against " in page
    text = compare.render(c, "text", width=0, registry=load_registry())
    assert text.startswith("Compared: ") and "sklearn.linear_model.Ridge" in text and "rff-gauss" in text
    # the screen keeps its protocol key, so the one model of cells labels every statistic as a screen
    assert set(c.frame["protocol"]) == {"cv-o3-i2-max300"}
    # the caption says the screen; two datasets are too few for Wilcoxon rows: one line instead
    assert "Screen: folds 0-1 of 3" in text and "too few datasets for a test" in text
    from rfbench.reporting import plot

    assert plot.cd_analysis(c.frame, 10).screen == "screen: folds 0-1 of 3"

    # a run over every fold is not a screen
    compare.run(str(base_dir), [USER], None, None, None, str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    c = compare.compare([str(out)], registry=load_registry())
    assert "all outer folds, folds 0-2 of 3" in c.notes[0] and set(c.frame["protocol"]) == {"cv-o3-i2-max300"}


def test_compare_plot_of_two_datasets_says_the_cd_tests_need_more_in_one_line(base_dir, tmp_path, capsys):
    """Two methods on two datasets: no critical-difference test can reject (the signed-rank test
    needs N ≥ 6), so no diagram is drawn and the error says so in one line."""
    out = tmp_path / "mine"
    compare.run(str(base_dir), [USER], None, None, [0, 1], str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    one_line_error(capsys, ["compare", "plot", str(out), "--output", str(tmp_path / "plots")],
                   "too few datasets for a test (N = 2; with 2 methods the Wilcoxon signed-rank test at α = 0.05 can "
                   "reject only from N = 6)")
    assert not (tmp_path / "plots" / "cd-diagram-n10.png").exists()
    main(["compare", "plot", str(out), "--kind", "walltime", "--output", str(tmp_path / "plots")])
    captured = capsys.readouterr()
    assert "a screen, folds 0-1 of 3" in captured.err
    png = tmp_path / "plots" / "walltime.png"
    assert f"wrote {png}" in captured.out and png.read_bytes().startswith(b"\x89PNG")
    one_line_error(capsys, ["compare", "plot", str(out), "--methods", "nosuch", "--output", str(tmp_path / "p2")],
                    "--methods: nosuch not in")
    assert not (tmp_path / "p2").exists()


def test_other_splits_are_refused_before_and_after_the_run(base_dir, tmp_path, capsys):
    tampered = tmp_path / "tampered"
    shutil.copytree(base_dir, tampered, ignore=shutil.ignore_patterns("*.jsonl"))
    shutil.copy2(base_dir / "runs.jsonl", tampered / "runs.jsonl")
    folds = tampered / "folds" / f"{GENERATED[0]}.csv"
    lines = folds.read_text().splitlines()
    row1, row2 = lines[1].split(","), next(x.split(",") for x in lines[2:] if x.split(",")[1] != lines[1].split(",")[1])
    lines[1], lines[int(row2[0]) + 1] = f"{row1[0]},{row2[1]}", f"{row2[0]},{row1[1]}"   # two rows swap folds
    folds.write_text("\n".join(lines) + "\n")
    out = tmp_path / "mine"
    line = one_line_error(capsys, ["compare", "run", str(tampered), "--methods", USER, "--folds", "0",
                                    "--out", str(out), "--quiet", "--jobs", "1"],
                           f"outer folds of {GENERATED[0]} (seed 0) differ")
    assert "the data here" in line and not (out / "records").exists()        # refused before anything ran
    # a run made against the real baseline, then reported against the tampered one
    compare.run(str(base_dir), [USER], None, None, [0], str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    one_line_error(capsys, ["compare", "report", str(out), "--against", str(tampered)],
                    f"outer folds of {GENERATED[0]} (seed 0) differ: {out} has sha256:")


def test_common_folds_are_those_every_method_finished():
    rows = [("d", m, 100, f, 0, "cv-o10-i5", "done", float(f)) for m, fs in (("a", [0, 1, 2]), ("b", [0, 2]))
            for f in fs]
    rows += [("d", "b", 100, 1, 0, "cv-o10-i5", "error", np.nan), ("d", "a", 500, 4, 0, "cv-o10-i5", "done", 1.0)]
    df = pd.DataFrame(rows, columns=["dataset", "method", "n_features", "fold", "seed", "protocol", "status", "error"])
    kept, folds = compare.common_folds(df)
    at100 = kept[kept["n_features"] == 100]
    assert sorted(at100["fold"]) == [0, 0, 2, 2] and (kept["status"] == "done").all()
    assert folds == {"d": "0,2,4"}            # n = 500 has one method: its fold is common to itself


def test_bad_requests_are_one_line(capsys, tmp_path):
    out = str(tmp_path / "x")
    one_line_error(capsys, ["compare", "run", "gbrff2020-table2", "--methods", "gbrff2", "--out", out],
                    "baseline gbrff2020-table2 already holds gbrff2")
    one_line_error(capsys, ["compare", "run", "gfc2016-table1", "--methods", "gfc", "--out", out],
                    "baseline gfc2016-table1 already holds gfc")
    one_line_error(capsys, ["compare", "run", "gfc2016-table1", "--methods", USER, "--datasets", "year-msd",
                             "--out", out], "--datasets: year-msd not in baseline gfc2016-table1")
    one_line_error(capsys, ["compare", "run", "gfc2016-table1", "--methods", USER, "--features", "300",
                             "--out", out], "--features: 300 not in baseline gfc2016-table1 (they have 100, 500)")
    one_line_error(capsys, ["compare", "run", "nope", "--methods", USER, "--out", out], "no baseline named 'nope'")
    (tmp_path / "x").mkdir()
    one_line_error(capsys, ["compare", "report", out], "no results in")
    from rfbench.store import RunDir

    RunDir(out).ensure().write_record(as_record({"dataset": "kinematics", "method": "m", "n_features": 100, "fold": 0, "seed": 0,
                                       "protocol": "cv-o10-i5", "status": "error", "message": "boom"}))
    one_line_error(capsys, ["compare", "report", out, "--against", "gfc2016-table1"], "no finished tasks in")
    shutil.rmtree(tmp_path / "x" / "records")
    (tmp_path / "x" / "records.index.jsonl").unlink()
    assert not list(tmp_path.glob("x/*"))                   # nothing written where it was refused


def test_report_filters_by_methods_and_datasets(base_dir, tmp_path, capsys):
    out = tmp_path / "mine"
    compare.run(str(base_dir), [USER], None, None, [0, 1], str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    c = compare.compare([str(out)], None, None, [GENERATED[1]], registry=load_registry())
    assert set(c.frame["dataset"]) == {GENERATED[1]}
    one_line_error(capsys, ["compare", "report", str(out), "--methods", "gfc"],
                    "--methods: gfc not in the run or baseline(s) base at its n (they have rff-gauss, sklearn")
    one_line_error(capsys, ["compare", "report", str(out), "--methods", "rff-gauss"],
                    "--methods names none of the run's methods")


# -- the README's section, verbatim, from an installed wheel ----------------------------------------

def readme_compare_block() -> str:
    """The bash block of the README's "Compare your method with the baselines" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Compare your method with the baselines", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_readme_compare_section_from_an_installed_wheel(tmp_path, mirror_dir):
    import zipfile

    script = readme_compare_block()
    assert "rfbench compare run gfc2016-table1" in script and "rfbench compare report" in script
    wheel = build_wheel(tmp_path)
    shipped = {n for n in zipfile.ZipFile(wheel).namelist() if n.startswith("rfbench/_data/baselines/")}
    assert shipped == {f"rfbench/_data/baselines/{name}" for p in baselines.shipped()
                       for name in (p.name, baselines.checksum_path(p).name)}     # each file with its checksum
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    inst = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                           "--ignore-installed", str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr[-3000:]
    work = tmp_path / "work"                       # an empty directory, no checkout in sight
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RFBENCH_REGISTRY", "RFBENCH_JOBS")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", RFBENCH_DATA_DIR=str(mirror_dir),
               RFBENCH_CONFIG="none")
    started = time.monotonic()
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=work, env=env, capture_output=True,
                         text=True, timeout=600)
    elapsed = time.monotonic() - started
    assert res.returncode == 0, (res.stdout[-3000:], res.stderr[-3000:])
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import rfbench; print(rfbench.__file__)"], cwd=work,
                           env=env, capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve())             # the wheel's rfbench ran
    assert "a screen, folds 0-2 of 10 on" in res.stdout
    for method in ("mymod.RandomRidge", "gfc", "alc", "rff-gauss", "lgbm"):
        assert method in res.stdout, method
    recs = pd.read_csv(work / "runs" / "mine" / "results.csv")
    assert set(recs["method"]) == {"mymod.RandomRidge"} and set(recs["fold"]) == {0, 1, 2}
    assert set(recs["dataset"]) == {"kinematics", "bank"} and (recs["status"] == "done").all()
    assert sorted(p.name for p in work.iterdir()) == ["mymod.py", "runs"]    # nothing written elsewhere
    assert "gfc2016-table1" in res.stdout.split("Compared:")[0]                # `rfbench baselines` listed it
    assert elapsed < 120, f"the README's commands took {elapsed:.0f} s"


# -- a classifier against the splits protocol's baseline (gbrff2020-table2), verified from the data ------

GBRFF = "gbrff2020-table2"
GBRFF_KEY = "splits-r20-t0.3-i5"
SMALLEST = ["wine", "sonar"]            # the baseline's two smallest datasets (178 and 208 rows)
CLASSIFIER = "sklearn.linear_model:RidgeClassifier"


@pytest.fixture(scope="module")
def gbrff_run(tmp_path_factory):
    """A RidgeClassifier run on splits 0-1 of the two smallest GBRFF Table 2 datasets."""
    from conftest import MIRROR, NO_MIRROR_REASON

    if MIRROR is None:
        pytest.skip(NO_MIRROR_REASON)
    out = tmp_path_factory.mktemp("gbrff") / "mine"
    compare.run(GBRFF, [CLASSIFIER], SMALLEST, [100], [0, 1], str(out), RunConfig(jobs=1), progress=False, registry=load_registry())
    return out


def test_a_classifier_on_the_gbrff_splits_is_reported_beside_gbrff2_and_lgbm(gbrff_run, mirror_dir):
    b = baselines.load(GBRFF, load_registry())
    recs = pd.read_csv(gbrff_run / "results.csv")
    assert set(recs["protocol"]) == {GBRFF_KEY} and set(recs["fold"]) == {0, 1} and set(recs["metric"]) == {"accuracy"}
    assert set(recs["dataset"]) == set(SMALLEST) and (recs["status"] == "done").all()
    assert not (gbrff_run / "folds").exists()                    # the splits protocol stores no splits
    marker = json.loads((gbrff_run / "compare.json").read_text())
    # the fingerprints compare run computed before it ran are the baseline's, i.e. the runner's splits
    assert {(d, s): fp for d, s, fp in marker["splits_sha256"]} == {
        (d, 0): b.fingerprints[(GBRFF_KEY, d, 0)] for d in SMALLEST}
    recorded = {d: fp for d, _, fp in marker["splits_sha256"]}
    assert recorded[SMALLEST[0]] == runner.outer_splits_fingerprint(SMALLEST[0], Protocol(**b.protocols[GBRFF_KEY]),
                                                                    DataSources.from_settings(str(mirror_dir)),
                                                                    registry=load_registry())
    # run again into the same --out on one dataset: the other's verified fingerprint stays recorded
    compare.run(GBRFF, [CLASSIFIER], SMALLEST[:1], [100], [0], str(gbrff_run), RunConfig(jobs=1), progress=False, registry=load_registry())
    assert json.loads((gbrff_run / "compare.json").read_text())["splits_sha256"] == marker["splits_sha256"]

    c = compare.compare([str(gbrff_run)], None, ["sklearn.linear_model.RidgeClassifier", "gbrff2", "lgbm"], registry=load_registry())
    assert c.folds == {d: "0-1" for d in SMALLEST} and c.outer == 20
    assert "a screen, splits 0-1 of 20 on" in c.notes[0] and "before it ran (this protocol stores no splits)" in \
        c.notes[0] and "not over the published table's 20 splits" in c.notes[1]
    table = pd.read_csv(pd.io.common.StringIO(compare.render(c, "csv", registry=load_registry()))).set_index(["dataset", "method"])
    base = b.results[(b.results["protocol"] == GBRFF_KEY) & b.results["fold"].isin([0, 1])]
    for (d, meth), row in table.iterrows():
        src = recs if meth.startswith("sklearn") else base[base["method"] == meth]
        assert row["folds"] == 2 and row["error_mean"] == pytest.approx(src[src["dataset"] == d]["error"].mean())
    assert sorted(table.index.get_level_values("method").unique()) == [
        "gbrff2", "lgbm", "sklearn.linear_model.RidgeClassifier"]
    # accuracy: higher is better, so a Wilcoxon pair's wins are the datasets where its mean accuracy is higher
    # (two datasets are too few for the test to reject: the report says so in one line, the rows are
    # still computed)
    assert "too few datasets for a test" in compare.render(c, "markdown", registry=load_registry())
    from rfbench.reporting import report

    cells_, errors, higher = report.summarise(c.frame)
    rows = {r["pair"]: r for r in report.wilcoxon_table(cells_, sorted(set(c.frame["method"])), [100], higher,
                                                        errors=errors)}
    means = table["error_mean"].unstack("method")
    for a, b_ in (("gbrff2", "lgbm"), ("gbrff2", "sklearn.linear_model.RidgeClassifier")):
        wins = rows[f"{a} vs {b_}"]
        assert (int(wins["wins_a"]), int(wins["wins_b"])) == (int((means[a] > means[b_]).sum()),
                                                              int((means[b_] > means[a]).sum()))
    assert (means["gbrff2"] > means["lgbm"]).all()                 # so the check above sees the direction


def test_other_splits_than_the_gbrff_baselines_are_refused(gbrff_run, tmp_path, capsys):
    """Another test size (the baseline's metadata edited in a copy), a tampered fingerprint, a run not
    made by compare run, a run under another protocol: each refused in one line, nothing run."""
    import pyarrow.parquet as pq

    table = pq.read_table(baselines.shipped_dir() / f"{GBRFF}.parquet")
    meta = json.loads(table.schema.metadata[baselines.METADATA_KEY])
    meta["protocols"][GBRFF_KEY]["test_size"] = 0.25              # the key still says t0.3
    other_size = tmp_path / "other-size.parquet"
    baselines.write_table(table.replace_schema_metadata({baselines.METADATA_KEY: json.dumps(meta)}), other_size)
    out = tmp_path / "refused"
    line = one_line_error(capsys, ["compare", "run", str(other_size), "--methods", CLASSIFIER, "--datasets",
                                    SMALLEST[0], "--folds", "0", "--out", str(out), "--quiet", "--jobs", "1"],
                           f"outer folds of {SMALLEST[0]} (seed 0) differ: the data here has sha256:")
    assert "test size" in line and not out.exists()                # refused before anything ran

    column = table.schema.get_field_index("folds_sha256")
    prints = [("sha256:" + "0" * 64) if d == SMALLEST[1] else fp
              for d, fp in zip(table.column("dataset").to_pylist(), table.column("folds_sha256").to_pylist(),
                               strict=True)]
    tampered = tmp_path / "tampered.parquet"
    import pyarrow as pa

    baselines.write_table(table.set_column(column, table.schema.field(column), pa.array(prints, pa.string())),
                          tampered)
    one_line_error(capsys, ["compare", "report", str(gbrff_run), "--against", str(tampered)],
                    f"outer folds of {SMALLEST[1]} (seed 0) differ: {gbrff_run} has sha256:")

    plain = tmp_path / "plain"                                     # the same records, not made by compare run
    shutil.copytree(gbrff_run, plain, ignore=shutil.ignore_patterns("compare.json"))
    one_line_error(capsys, ["compare", "report", str(plain), "--against", GBRFF],
                    f"has no fingerprint of the {GBRFF_KEY} splits of {SMALLEST[1]} (seed 0) in its compare.json")

    cv_run = tmp_path / "cv"                                       # a plain results directory under cv
    reg, methods = registry.resolve_method_names(registry.load(), [CLASSIFIER])
    runner.run([SMALLEST[0]], methods, [100], Protocol(outer_folds=3, inner_folds=2), str(cv_run),
               RunConfig(folds=[0], jobs=1), registry=reg, progress=False)
    one_line_error(capsys, ["compare", "report", str(cv_run), "--against", GBRFF],
                    f"baseline {GBRFF} has no protocol cv-o3-i2 (it has {GBRFF_KEY})")


def test_the_report_command_compare_run_prints_works_for_a_results_directory_and_a_user_registry(
        tmp_path, monkeypatch, capsys):
    """`compare run` ends with the command that reports the comparison: it names the baseline as the
    user gave it (a results directory is a path, not a shipped name) and their --registry, and it runs."""
    import shlex

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 3))
    np.savetxt("d.csv", np.c_[X, np.sin(X).sum(1)], delimiter=",", header="a,b,c,y", comments="")
    (tmp_path / "reg.yaml").write_text("datasets:\n  mydata:\n    file: d.csv\n    target: y\n")
    tiny = ["--features", "10", "--jobs", "1", "--quiet"]
    main(["run", "--registry", "reg.yaml", "--datasets", "mydata", "--methods", "rff-gauss", "--outer-folds", "2",
          "--inner-folds", "2", *tiny, "--no-report", "--out", "base"])
    main(["compare", "run", "base", "--methods", USER, "--registry", "reg.yaml", *tiny, "--no-report",
          "--out", "mine"])
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("report: ")][-1]
    argv = shlex.split(printed.removeprefix("report: "))
    assert argv[:3] == ["rfbench", "compare", "report"] and "--against" in argv and "--registry" in argv
    assert argv[argv.index("--against") + 1] == "base"
    main(argv[1:])                            # exits normally: the LaTeX table of the comparison
    assert "\\begin{table" in capsys.readouterr().out


def test_a_user_dataset_registered_without_its_shape_shows_its_rows_and_inputs(tmp_path, monkeypatch, capsys):
    """A registry entry without `shape` (and a data file named on the command line): the run records
    the shape it loaded in run.json, and report and compare report show its m and d from there, with
    the registry or without it."""
    import io

    import pandas as pd

    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(1)
    X = rng.normal(size=(70, 4))
    np.savetxt("d.csv", np.c_[X, np.sin(X).sum(1)], delimiter=",", header="a,b,c,e,y", comments="")
    (tmp_path / "reg.yaml").write_text("datasets:\n  mydata:\n    file: d.csv\n    target: y\n")
    tiny = ["--features", "10", "--jobs", "1", "--quiet", "--no-report", "--outer-folds", "2", "--inner-folds", "2"]
    main(["run", "--registry", "reg.yaml", "--datasets", "mydata", "--methods", "rff-gauss", *tiny, "--out", "base"])
    main(["run", "--datasets", "d.csv", "--target", "y", "--methods", "rff-gauss", *tiny, "--out", "file"])
    assert json.loads((tmp_path / "base" / "run.json").read_text())["user_entries"]["datasets"]["mydata"]["shape"] \
        == [70, 4]
    capsys.readouterr()

    def shape_of(argv):
        main(argv + ["--format", "csv"])
        table = pd.read_csv(io.StringIO(capsys.readouterr().out))
        return table[["m", "d"]].drop_duplicates().values.tolist()

    assert shape_of(["report", "base", "--registry", "reg.yaml"]) == [[70, 4]]
    assert shape_of(["report", "base"]) == [[70, 4]]
    assert shape_of(["report", "file"]) == [[70, 4]]
    main(["compare", "run", "base", "--methods", USER, "--registry", "reg.yaml", *tiny[:4], "--no-report",
          "--out", "mine"])
    capsys.readouterr()
    csv = shape_of(["compare", "report", "mine", "--registry", "reg.yaml"])
    assert [70, 4] in csv


ROOT = Path(__file__).resolve().parents[2]


def table1_screen(out: Path, machine: dict | None) -> Path:
    """A run of one's own on folds 0-2 of kinematics and bank under Table 1's protocol: its folds
    are Table 1's (copied from the checkout's results), its records written directly, and its
    run.json records ``machine`` (None: none)."""
    import shutil

    from rfbench.store import RunDir

    run = RunDir(str(out)).ensure()
    (out / "folds").mkdir(exist_ok=True)
    for d in ("kinematics", "bank"):
        shutil.copy(ROOT / "results" / "gfc2016-table1" / "folds" / f"{d}.csv", out / "folds" / f"{d}.csv")
        for fold in range(3):
            run.write_record(as_record({"dataset": d, "method": "mine", "n_features": 100, "fold": fold, "seed": 0,
                              "protocol": "cv-o10-i5", "status": "done", "metric": "rmse100", "task": "regression",
                              "error": 5.0 + 0.1 * fold, "total_s": 1.0, "tune_s": 0.5, "fit_s": 0.4,
                              "predict_s": 0.1}))
    if machine is not None:
        (out / "run.json").write_text(json.dumps({"machine": machine}))
    return out


def table1_machine() -> dict:
    """The machine the checkout's Table 1 results were measured on (its runs.jsonl)."""
    lines = (ROOT / "results" / "gfc2016-table1" / "runs.jsonl").read_text().splitlines()
    return json.loads(lines[-1])["machine"]


def test_a_gfc_row_shown_says_which_gfc_rows_exist_and_what_each_is(tmp_path, capsys):
    """`--methods mine,gfc` picks the faithful gfc among several readings: one note line names them
    all (gfc-prior, the ablation rows, gfc-gbrff) and where each is checked."""
    from rfbench import registry as reg_mod

    run = table1_screen(tmp_path / "mine", table1_machine())
    main(["compare", "report", str(run), "--against", "gfc2016-table1", "--methods", "mine,gfc", "--width", "0"])
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if line.startswith("GFC rows")]
    assert len(lines) == 1
    gfc_names = [m.name for m in reg_mod.gfc_rows(load_registry())]
    assert {"gfc", "gfc-prior", "gfc-all-rows", "gfc-scaled-objective", "gfc-gbrff"} <= set(gfc_names)
    assert "(shown here: gfc)" in lines[0] and all(n in lines[0] for n in gfc_names)
    assert "gfc-prior = GFC as rfbench ran it before (docs/history/gfc.md)" in lines[0] and "rfbench check gfc2016-table1" in lines[0]
    for fmt, marker in (("markdown", "GFC rows (shown here: gfc)"), ("html", "GFC rows (shown here: gfc)"),
                        ("latex", "% GFC rows (shown here: gfc)")):
        main(["compare", "report", str(run), "--against", "gfc2016-table1", "--methods", "mine,gfc", "--format", fmt])
        assert marker in capsys.readouterr().out, fmt
    main(["compare", "report", str(run), "--against", "gfc2016-table1", "--methods", "mine,alc"])
    assert "GFC rows" not in capsys.readouterr().out            # no GFC row shown: no note
    # the listing describes each GFC row, and says which is which once whatever the width
    methods = reg_mod.load().methods
    for width in ("0", "80"):
        main(["methods", "--width", width])
        listing = capsys.readouterr().out
        assert "GFC rows: gfc = GFC as the paper's Algorithm 2 reads" in " ".join(listing.split())
    assert methods["gfc"].description.startswith("GFC as the paper's Algorithm 2 reads")
    assert methods["gfc-prior"].description.startswith("GFC as rfbench ran it before")
    assert all(methods[n].description.startswith("GFC ablation: gfc with") for n in gfc_names
               if n not in ("gfc", "gfc-prior", "gfc-gbrff"))


@pytest.mark.parametrize("case", ["other", "same", "unrecorded"])
def test_walltimes_from_different_machines_are_said_in_the_notes_and_the_time_figures(tmp_path, capsys,
                                                                                       monkeypatch, case):
    """The run's run.json machine against the baseline's (the runs.jsonl of the results it was made
    from): a difference is said in the table's notes and in the time figures' titles."""
    machine = table1_machine()
    if case == "other":
        machine = {**machine, "cpu_count": 64, "memory_gb": 512.0}
    run = table1_screen(tmp_path / "mine", None if case == "unrecorded" else machine)
    c = compare.compare([str(run)], ["gfc2016-table1"], ["mine", "gfc"], registry=load_registry())
    timed = [n for n in c.notes if n.startswith("Walltimes")]
    assert len(timed) == 1
    if case == "same":
        assert timed[0].startswith("Walltimes: the run and the baseline(s) were measured on the same machine (2 cores")
        assert c.time_caveat is None
    elif case == "other":
        assert timed[0].startswith("Walltimes mix machines: the run's on 64 cores, 512.0 GB")
        assert "baseline gfc2016-table1's on 2 cores, 23.5 GB" in timed[0]
        assert c.time_caveat == ("walltimes from different machines: the run on 64 cores, 512.0 GB, baseline "
                                 "gfc2016-table1 on 2 cores, 23.5 GB")
    else:
        assert timed[0].startswith("Walltimes may mix machines: the run's on a machine its run.json does not record")
        assert c.time_caveat == "walltimes may mix machines (see the notes)"
    main(["compare", "report", str(run), "--against", "gfc2016-table1", "--methods", "mine,gfc", "--width", "0"])
    assert timed[0] in capsys.readouterr().out
    from rfbench.reporting import plot

    for kind in ("walltime", "pareto"):
        (_, fig), = plot.figures(c.frame, kind, time_caveat=c.time_caveat)[0]
        titles = " ".join([fig._suptitle.get_text() if fig._suptitle else ""] + [a.get_title() for a in fig.axes])
        assert (c.time_caveat is None and "machines" not in titles) or \
            " ".join(c.time_caveat.split()) in " ".join(titles.split()), (kind, titles)
    if case == "other":
        page = compare.render(c, "html", registry=load_registry())
        assert "Wall time per task (walltimes from different machines" in page
    # a shipped baseline outside a checkout records no machine: "may mix"
    monkeypatch.setattr(compare, "spec_paths", lambda: [])
    c = compare.compare([str(run)], ["gfc2016-table1"], ["mine", "gfc"], registry=load_registry())
    assert any(n.startswith("Walltimes may mix machines") and "does not record (the shipped file" in n for n in c.notes)


def test_compare_report_to_a_file_or_pipe_is_not_cut_into_continued_blocks(tmp_path, capsys, monkeypatch):
    """Not a terminal (here pytest's capture) and no $COLUMNS: the comparison's table and notes are
    whole lines, not "continued" blocks of 80 columns; $COLUMNS=80 wraps them."""
    run = table1_screen(tmp_path / "mine", table1_machine())
    argv = ["compare", "report", str(run), "--against", "gfc2016-table1", "--methods",
            "mine,gfc,gfc-prior,gfc-all-rows,alc"]
    monkeypatch.delenv("COLUMNS", raising=False)
    main(argv)
    whole = capsys.readouterr().out
    assert "(continued)" not in whole and max(map(len, whole.splitlines())) > 150
    assert sum(line.startswith("GFC rows") for line in whole.splitlines()) == 1       # one line, unwrapped
    monkeypatch.setenv("COLUMNS", "80")
    main(argv)
    wrapped = capsys.readouterr().out
    assert "(continued)" in wrapped and max(map(len, wrapped.splitlines())) <= 80


def test_compare_run_hands_the_runner_a_config_with_its_workers_resolved(base_dir, tmp_path, runner_calls):
    """jobs and threads are resolved before the runner, for the methods compare run resolved."""
    with pytest.raises(StopRun):
        compare.run(str(base_dir), [USER], None, None, [0], str(tmp_path / "mine"), RunConfig(jobs=None),
                    progress=False, registry=load_registry())
    [(_, config)] = runner_calls
    cores = os.cpu_count() or 1
    assert (config.jobs, config.threads) == (cores, 1) and config.strict and config.folds == (0,)
