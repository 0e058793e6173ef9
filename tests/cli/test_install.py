"""Installable: the registries, specs and CI references ship as package data; settings come from the
environment or a config file; a built wheel installed into a fresh venv works from any directory."""

import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rfbench import config, registry
from rfbench.data import loader
from rfbench.errors import UsageError
from rfbench.experiments import spec
from rfbench.registry import load as load_registry
from rfbench.reporting import published
from tests.wheel import build_wheel

ROOT = Path(__file__).resolve().parents[2]


# -- package data in the checkout ----------------------------------------------------------------

def test_package_data_points_at_the_top_level_files():
    """In the checkout rfbench/_data/ links to the top-level files, which stay the source of truth."""
    assert registry.datasets_file() == (ROOT / "datasets.yaml").resolve()
    assert registry.methods_file() == (ROOT / "methods.yaml").resolve()
    assert registry.bench_dir() == (ROOT / "bench").resolve()
    for name in ("datasets.yaml", "methods.yaml", "bench", "published"):
        assert (ROOT / "rfbench" / "_data" / name).resolve() == (ROOT / name).resolve()
    table4 = spec.load_spec("gfc2016-table4", load_registry())
    assert table4.results == (ROOT / "results" / "gfc2016-table4").resolve()     # checkout rule: unchanged
    assert table4.ci.reference == (ROOT / "bench" / "reference" / "gfc2016-table4.csv").resolve()


def test_published_tables_ship_and_are_the_default(monkeypatch):
    for var in ("RFBENCH_PUBLISHED_DIR", "RFBENCH_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    assert published.published_dir() == registry.packaged_published_dir() == (ROOT / "published").resolve()
    # every table a spec names is there: reproduce --list / check / report need nothing beside the package
    for s in spec.all_specs(load_registry()):
        if s.published and not s.published.startswith(("bench/", "results/")):
            assert spec.published_path(s).is_file(), (s.name, s.published)


def test_shipped_published_tables_are_the_projects_verified_copy():
    """The package's copy of the papers' cells must not drift from the verified shared/published."""
    shared = ROOT.parent / "shared" / "published"
    if not (shared / "README.md").is_file():
        pytest.skip(f"{shared} not beside the checkout: nothing to compare the shipped copy with")
    ours = ROOT / "published"
    assert sorted(p.name for p in ours.iterdir()) == sorted(p.name for p in shared.iterdir())
    for p in shared.iterdir():
        assert (ours / p.name).read_bytes() == p.read_bytes(), p.name


def test_packaged_spec_results_go_under_results_root(monkeypatch, tmp_path):
    monkeypatch.setattr(spec, "is_packaged", lambda path: True)
    monkeypatch.chdir(tmp_path)
    s = spec.load_spec("gfc2016-tables2-3", load_registry())
    assert s.results == tmp_path / "results" / "gfc2016-tables2-3"
    assert s.also_reads == (tmp_path / "results" / "gfc2016-table1",)
    monkeypatch.setenv("RFBENCH_RESULTS_ROOT", str(tmp_path / "elsewhere"))
    assert spec.load_spec("gfc2016-table4", load_registry()).results == tmp_path / "elsewhere" / "gfc2016-table4"


# -- settings: environment over config file over default --------------------------------------------

def test_config_file_sets_directories_and_environment_overrides_it(monkeypatch, tmp_path):
    a, b, pub, cache = (tmp_path / n for n in ("a", "b", "pub", "cache"))
    for d in (a, b, pub):
        d.mkdir()
    cfg = tmp_path / "xdg" / "rfbench" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'data_dirs = ["{a}", "../../b"]\npublished_dir = "{pub}"\ncache_dir = "{cache}"\n'
                   'results_root = "out"\n')
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in ("RFBENCH_DATA_DIR", "RFBENCH_PUBLISHED_DIR", "RFBENCH_CACHE_DIR", "RFBENCH_RESULTS_ROOT",
                "RFBENCH_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(tmp_path)
    assert [p.resolve() for p in loader.data_dirs()] == [a, b]      # relative: to the config file
    assert published.published_dir() == pub and loader.cache_dir() == cache
    assert config.results_root() == cfg.parent / "out"
    # ./rfbench.toml overrides the user config key by key; the environment overrides both
    (tmp_path / "rfbench.toml").write_text(f'data_dirs = "{b}{os.pathsep}{a}"\n')
    assert loader.data_dirs() == [b, a] and published.published_dir() == pub
    monkeypatch.setenv("RFBENCH_DATA_DIR", str(a))
    monkeypatch.setenv("RFBENCH_PUBLISHED_DIR", str(b))
    assert loader.data_dirs() == [a] and published.published_dir() == b
    assert loader.data_dirs(str(b)) == [b]                          # --data-dir over everything
    monkeypatch.setenv("RFBENCH_CONFIG", "none")
    monkeypatch.delenv("RFBENCH_DATA_DIR")
    assert loader.data_dirs() == []


def test_bad_config_is_one_line(monkeypatch, tmp_path):
    path = tmp_path / "c.toml"
    monkeypatch.setenv("RFBENCH_CONFIG", str(path))
    path.write_text("data_dir = 'x'\n")
    with pytest.raises(UsageError, match="unknown key.*data_dir.*allowed: data_dirs"):
        config.load()
    path.write_text("data_dirs = [\n")
    with pytest.raises(UsageError, match="is not valid TOML"):
        config.load()
    monkeypatch.setenv("RFBENCH_CONFIG", str(tmp_path / "missing.toml"))
    with pytest.raises(UsageError, match="RFBENCH_CONFIG=.* is not a file"):
        config.load()


def test_several_data_directories_are_searched_in_order(monkeypatch, tmp_path):
    """A dataset found in the second directory of RFBENCH_DATA_DIR; a missing entry is refused."""
    import hashlib

    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    (second / "sub").mkdir(parents=True)
    csv = second / "sub" / "d.csv"
    csv.write_text("a,b,y\n" + "".join(f"{i},{i % 3},{2 * i}\n" for i in range(20)))
    sha = hashlib.sha256(csv.read_bytes()).hexdigest()
    reg = tmp_path / "datasets.yaml"
    reg.write_text("suites: {s: test}\ndatasets:\n  d:\n    task: regression\n    suites: [s]\n    shape: [20, 2]\n"
                   f"    target: y\n    mirror: {{file: sub/d.csv, format: csv, sha256: {sha}}}\n")
    monkeypatch.setenv("RFBENCH_DATASETS_YAML", str(reg))
    monkeypatch.setenv("RFBENCH_DATA_DIR", f"{first}{os.pathsep}{second}")
    loaded = loader.load("d", registry=load_registry())
    assert loaded.source == "mirror" and loaded.detail == str(csv) and loaded.X.shape == (20, 2)
    monkeypatch.setenv("RFBENCH_DATA_DIR", f"{first}{os.pathsep}{tmp_path / 'nope'}")
    with pytest.raises(UsageError, match=r"RFBENCH_DATA_DIR=.*nope is not a directory"):
        loader.load("d", registry=load_registry())


# -- the built wheel, installed into a fresh venv ---------------------------------------------------

def see_the_running_environment(py: Path) -> None:
    """Let the fresh venv of ``py`` import rfbench's dependencies from the environment running the
    tests: a .pth file in its site-packages lists this interpreter's site directories.

    The wheel goes in with --no-deps (the tests run offline but for the package registries, and
    installing matplotlib, pyarrow & co. again would be slow and need the network), so its
    dependencies must come from somewhere. `venv --system-site-packages` gives the base interpreter's
    site-packages only: where the tests run inside a venv (`pip install -e '.[test]'` in one, as CI's
    first run does) the dependencies are not there ("No module named 'tabulate'"). site.getsitepackages()
    is this environment's directories, the venv's and, with system site-packages, the base's.
    The .pth lists them as plain paths, appended after the venv's own site-packages: the wheel's
    rfbench is found first, and the .pth files of those directories are not run, so the running
    environment's editable rfbench (its import hook) stays out."""
    venv_site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True).stdout.strip()
    dirs = [*site.getsitepackages(), *([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])]
    (Path(venv_site) / "_rfbench_test_deps.pth").write_text("".join(f"{d}\n" for d in dirs if Path(d).is_dir()))


@pytest.mark.slow
def test_built_wheel_works_from_any_directory(tmp_path):
    wheel = build_wheel(tmp_path)
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for f in ("rfbench/_data/datasets.yaml", "rfbench/_data/methods.yaml", "rfbench/_data/bench/gfc2016-table4.yaml",
              "rfbench/_data/bench/reference/gfc2016-table4.csv", "rfbench/_data/published/gfc2016_table4_rff.csv",
              "rfbench/_data/published/README.md"):
        assert f in names, f
    assert not any(n.startswith("rfbench/_data/bench/perf") for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    see_the_running_environment(py)
    inst = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--ignore-installed",
                           str(wheel)], capture_output=True, text=True, timeout=300)
    assert inst.returncode == 0, inst.stderr[-3000:]

    work = tmp_path / "work"                       # another directory: no checkout in sight
    work.mkdir()
    # no settings at all: the published tables come from the wheel itself
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "RFBENCH_DATA_DIR", "RFBENCH_REGISTRY",
                                                             "RFBENCH_DATASETS_YAML", "RFBENCH_METHODS_YAML",
                                                             "RFBENCH_PUBLISHED_DIR")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", RFBENCH_CONFIG="none")

    def rfbench(*args, ok=(0,)):
        res = subprocess.run([str(venv / "bin" / "rfbench"), *args], cwd=work, env=env, capture_output=True,
                             text=True, timeout=300)
        assert res.returncode in ok, (args, res.returncode, res.stdout[-2000:], res.stderr[-2000:])
        return res

    where = subprocess.run([str(py), "-c", "import rfbench; print(rfbench.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    assert Path(where).resolve().is_relative_to(venv.resolve()), where      # the wheel's, not the checkout's
    site = Path(where).parent

    assert "breiman-generated" in rfbench("datasets", "list").stdout
    assert "rff-gauss" in rfbench("methods").stdout
    rfbench("run", "--suite", "synthetic", "--methods", "rff-gauss", "--features", "10", "--outer-folds", "2",
            "--inner-folds", "2", "--max-samples", "150", "--quiet", "--no-report", "--out", "runs/s")
    assert "friedman-generated" in rfbench("report", "runs/s").stdout
    check = rfbench("check", "runs/s", "--spec", "gfc2016-table4", "--protocol", "cv-o2-i2-max150")
    assert "breiman" in check.stdout
    listing = rfbench("reproduce", "--list").stdout
    assert "gfc2016-table4" in listing and "96" in listing                # published cells counted
    # without results of its own, a packaged spec's are its shipped baseline, read and never written to
    assert "shipped baseline rfbench/_data/baselines/gfc2016-table4.parquet" in listing
    checked = rfbench("reproduce", "gfc2016-table4", "--check-only").stdout
    assert "read from the shipped baseline" in checked and "nothing written" in checked
    assert not (work / "results").exists()
    report = rfbench("report", "gfc2016-table4")
    assert "shipped baseline" in report.stderr and "cal-housing" in report.stdout
    # a packaged spec's outputs go to ./results/<name>, never into site-packages
    # with a results directory of its own (here a copy of another run's records), the outputs go there
    shutil.copytree(work / "runs" / "s", work / "results" / "gfc2016-table4")
    checked = rfbench("reproduce", "gfc2016-table4", "--check-only").stdout
    assert (work / "results" / "gfc2016-table4" / "check.txt").is_file(), checked
    assert not list(site.rglob("check.txt")) and not (site / "results").exists()
    # bring your own method and data, with the console script: mymod is imported from the current directory
    (work / "mymod.py").write_text(textwrap.dedent("""
        from sklearn.linear_model import Ridge as MyRidge
    """))
    (work / "my.csv").write_text("a,b,y\n" + "".join(f"{i % 7},{i % 5},{i % 7 + 2 * (i % 5)}\n" for i in range(40)))
    res = rfbench("run", "--methods", "mymod:MyRidge", "--datasets", "my.csv", "--target", "y", "--features", "5",
                  "--outer-folds", "2", "--inner-folds", "2", "--quiet", "--no-report", "--out", "runs/byo")
    assert "2 done" in res.stdout
