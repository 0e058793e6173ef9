"""Bring your own method and data: the README's example end to end, user registries that extend the
built-in one, plugins (entry points), data files and openml:ID, and no dataset dropped silently."""

import io
import json
import os
import re
import subprocess
import sys
from importlib.metadata import EntryPoint
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rfbench import contract, registry
from rfbench.data import loader
from rfbench.errors import DataUnavailable, UsageError
from rfbench.registry import load as load_registry
from tests.fake_openml import serve_openml

ROOT = Path(__file__).resolve().parents[2]
# the CLI as the `rfbench` console script runs it: the current directory is NOT on sys.path
CLI = [sys.executable, "-c", "import sys; sys.path = [p for p in sys.path if p not in ('', '.')]; "
       "sys.argv[0] = 'rfbench'; from rfbench.cli import main; main()"]
TINY = ["--features", "5", "--outer-folds", "2", "--inner-folds", "2", "--quiet", "--no-report"]


@pytest.fixture(autouse=True)
def clean_registry(monkeypatch):
    """No user registry of the settings unless a test names one; the subprocesses import this rfbench."""
    monkeypatch.setenv("RFBENCH_REGISTRY", "")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH")] if p))
    yield


def rfbench(*args, cwd, env=None, ok=(0,)):
    res = subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, **(env or {})))
    assert res.returncode in ok, (res.returncode, res.stdout[-2000:], res.stderr[-3000:])
    return res


def one_line_error(res, message: str) -> str:
    lines = res.stderr.strip().splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert lines[0].startswith("rfbench: error: ") and message in lines[0], lines[0]
    return lines[0]


def readme_example() -> str:
    """The bash block of the README's "Bring your own method and data" section."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Bring your own method and data", 1)[1].split("\n## ", 1)[0]
    return re.search(r"```bash\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_readme_example_runs_end_to_end(tmp_path):
    script = readme_example()
    assert "--methods mymod:MyRidge --datasets my.csv --target y" in script
    shim = (f'rfbench() {{ "{CLI[0]}" -c "{CLI[2]}" "$@"; }}\n'
            f'python() {{ "{sys.executable}" "$@"; }}\n')
    res = subprocess.run(["bash", "-euo", "pipefail", "-c", shim + script], cwd=tmp_path, capture_output=True,
                         text=True, timeout=600, env=dict(os.environ))
    assert res.returncode == 0, (res.stdout[-2000:], res.stderr[-3000:])
    out = next(tmp_path.rglob("results.csv")).parent
    df = pd.read_csv(out / "results.csv")
    assert set(df["method"]) == {"mymod.MyRidge"} and set(df["dataset"]) == {"my"}
    assert set(df["status"]) == {"done"} and df["params"].str.contains("alpha").all()
    assert (df["source"] == "file").all() and (df["task"] == "regression").all()
    info = json.loads((out / "run.json").read_text())["user_entries"]
    assert len(info["datasets"]["my"]["sha256"]) == 64 and info["datasets"]["my"]["shape"][1] == 3
    assert info["methods"]["mymod.MyRidge"]["estimators"] == {"regression": "mymod:MyRidge"}
    assert "mymod.MyRidge" in res.stdout                 # the report's column


# -- user registry files ---------------------------------------------------------------------------

def _table(path: Path, n: int = 60, classes=None) -> Path:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=n)
    df = pd.DataFrame(X, columns=["a", "b", "c"])
    df["y"] = np.where(y > 0, *classes) if classes else y
    if path.suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_user_registry_extends_the_built_in_one(tmp_path, monkeypatch):
    _table(tmp_path / "data.csv")
    reg = tmp_path / "my.yaml"
    reg.write_text("methods:\n"
                   "  my-ridge:\n"
                   "    estimator: sklearn.linear_model:Ridge\n"
                   "    grid: {alpha: [0.1, 10.0]}\n"
                   "    description: ridge, alpha by GridSearchCV on the inner folds\n"
                   "datasets:\n"
                   "  mydata: {file: data.csv, target: y}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    built = registry.load()           # reads $RFBENCH_REGISTRY now
    assert built.method("my-ridge").origin == str(reg) and "rff-gauss" in built.methods
    ds = built.dataset("mydata")
    assert ds.task == "regression" and ds.file == str(tmp_path / "data.csv") and "breiman" in built.datasets
    assert loader.load("mydata", registry=load_registry()).X.shape == (60, 3)
    # through the CLI: --registry on methods, datasets and run
    assert "my-ridge" in rfbench("methods", "--registry", str(reg), cwd=tmp_path).stdout
    assert "mydata" in rfbench("datasets", "list", "--registry", str(reg), cwd=tmp_path).stdout
    rfbench("run", "--registry", str(reg), "--methods", "my-ridge", "--datasets", "mydata", *TINY, "--out", "o",
            cwd=tmp_path, env={"RFBENCH_REGISTRY": ""})
    df = pd.read_csv(tmp_path / "o" / "results.csv")
    assert set(df["status"]) == {"done"} and len(df) == 2
    assert all(json.loads(p)["alpha"] in (0.1, 10.0) for p in df["params"])


@pytest.mark.parametrize("entry, message", [
    ("methods:\n  rff-gauss: {estimator: 'sklearn.linear_model:Ridge'}\n",
     "method 'rff-gauss' is already registered by the built-in registry"),
    ("datasets:\n  breiman: {file: x.csv, target: y}\n", "dataset 'breiman' is already registered by the built-in"),
    ("methods:\n  r: {estimator: 'sklearn.linear_model:Ridge', grid: {nope: [1]}}\n",
     "nope is not a parameter of Ridge"),
    ("methods:\n  r: {estimator: 'nosuchmodule:Thing'}\n", "cannot import module 'nosuchmodule'"),
    ("datasets:\n  d: {target: y}\n", "entry 'd': needs at least one source: file, mirror"),
])
@pytest.mark.slow
def test_bad_user_entry_is_one_line(tmp_path, entry, message):
    reg = tmp_path / "bad.yaml"
    reg.write_text(entry)
    one_line_error(rfbench("run", "--registry", str(reg), "--suite", "synthetic", "--methods", "rff-gauss,r"
                           if "  r:" in entry else "rff-gauss", *TINY, "--out", "o", cwd=tmp_path, ok=(2,)), message)
    assert not (tmp_path / "o").exists()


def test_module_path_method_name_cannot_shadow_a_registered_one(tmp_path, monkeypatch):
    reg = tmp_path / "my.yaml"
    reg.write_text("methods:\n  sklearn.linear_model.Ridge: {estimator: 'sklearn.linear_model:Lasso'}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    with pytest.raises(UsageError, match="already registered by .*my.yaml; use that name"):
        registry.resolve_method_names(registry.load(), ["sklearn.linear_model:Ridge"])


# -- plugins: entry points of the group rfbench.methods ----------------------------------------------

def _fake_entry_points(*eps):
    import importlib.metadata

    real = importlib.metadata.entry_points

    def entry_points(**kw):
        return list(eps) if kw == {"group": "rfbench.methods"} else real(**kw)
    return entry_points


def test_entry_point_plugins_are_discovered(monkeypatch):
    import importlib.metadata

    ep = EntryPoint(name="plug-ridge", value="sklearn.linear_model:Ridge", group="rfbench.methods")
    monkeypatch.setattr(importlib.metadata, "entry_points", _fake_entry_points(ep))
    m = registry.load().method("plug-ridge")
    assert "entry point 'plug-ridge'" in m.origin and m.estimators == {"regression": "sklearn.linear_model:Ridge"}
    cls = m.estimator_class("regression")
    assert issubclass(cls, contract.ForeignEstimator)        # Ridge does not take n_features/cv: wrapped
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 2)), rng.normal(size=30)
    est = cls(n_features=10, cv=[(np.arange(15), np.arange(15, 30))], random_state=0, n_jobs=1).fit(X, y)
    assert est.predict(X).shape == (30,) and est.best_params_ == {}
    # a plugin may not take a registered name
    dup = EntryPoint(name="lgbm", value="sklearn.linear_model:Ridge", group="rfbench.methods")
    monkeypatch.setattr(importlib.metadata, "entry_points", _fake_entry_points(dup))
    with pytest.raises(UsageError, match="method 'lgbm' is already registered by the built-in registry"):
        registry.load()


def test_estimator_with_cv_receives_the_inner_folds():
    from sklearn.linear_model import RidgeCV

    cls = contract.adapt(RidgeCV)
    folds = [(np.arange(10, 20), np.arange(10)), (np.arange(10), np.arange(10, 20))]
    est = cls(n_features=5, cv=iter(folds), random_state=1, n_jobs=1, alphas=[0.1, 1.0])
    est.fit(np.random.default_rng(0).normal(size=(20, 2)), np.arange(20.0))
    assert [(list(a), list(b)) for a, b in est.model_.cv] == [(list(a), list(b)) for a, b in folds]


# -- data files, task inference, openml:ID ---------------------------------------------------------

def test_data_file_task_is_inferred_or_given(tmp_path):
    notes = []
    reg = _table(tmp_path / "r.parquet")
    cls = _table(tmp_path / "c.csv", classes=("yes", "no"))
    two = _table(tmp_path / "two.csv", classes=(1, 0))
    base = registry.load()
    built, names = loader.resolve_dataset_names(base, [str(reg), str(cls)], "y", note=notes.append)
    assert names == ["r", "c"] and not {"r", "c"} & set(base.datasets)       # a new value; the base is unchanged
    assert built.dataset("r").task == "regression" and built.dataset("c").task == "classification"
    assert built.dataset("c").origin == "command line"
    assert notes == ["dataset 'c': target 'y' is not numeric: classification (no → −1, yes → +1); give --task "
                     "regression to predict it as a number"]
    y = loader.load("c", registry=built).y
    assert set(y) == {-1.0, 1.0}
    # the same file named again is the same entry; a name taken by another command-line entry is refused
    assert loader.resolve_dataset_names(built, [str(reg)], "y")[1] == ["r"]
    built, names = loader.resolve_dataset_names(built, [str(two)], "y", note=notes.append)
    assert names == ["two"] and {"r", "c", "two"} <= set(built.datasets)
    assert built.dataset("two").task == "classification" and "has two values" in notes[-1]
    with pytest.raises(UsageError, match="not numeric; regression needs a numeric target"):
        loader.resolve_dataset_names(base, [str(tmp_path / "c.csv")], "y", "regression")
    with pytest.raises(UsageError, match="--target nope: no such column .*columns: a, b, c, y"):
        loader.resolve_dataset_names(base, [str(reg)], "nope")
    with pytest.raises(UsageError, match="needs --target COLUMN"):
        loader.resolve_dataset_names(base, [str(reg)])
    with pytest.raises(UsageError, match="missing.csv: no such file"):
        loader.resolve_dataset_names(base, [str(tmp_path / "missing.csv")], "y")
    breiman = tmp_path / "breiman.csv"
    breiman.write_text("a,y\n1,2\n")
    with pytest.raises(UsageError, match="its name 'breiman' is already a registered dataset"):
        loader.resolve_dataset_names(base, [str(breiman)], "y")
    with pytest.raises(UsageError, match="--target applies to data files and openml:ID"):
        loader.resolve_dataset_names(base, ["breiman-generated"], "y")


def _serve_openml(did: int, arff: str, target: str):
    return serve_openml({did: ("toy", arff.encode(), target)})[0]


@pytest.mark.slow
def test_openml_id_through_the_cli_and_unavailable_ones_are_never_dropped_silently(tmp_path):
    rng = np.random.default_rng(0)
    rows = [f"{a:.4f},{b:.4f},{'pos' if a + b > 0 else 'neg'}" for a, b in rng.normal(size=(40, 2))]
    arff = "@relation toy\n@attribute u numeric\n@attribute v numeric\n@attribute cls {neg,pos}\n@data\n"
    server = _serve_openml(4321, arff + "\n".join(rows) + "\n", "cls")
    env = {"RFBENCH_OPENML_SERVER": f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml",
           "NO_PROXY": "127.0.0.1,localhost"}
    try:
        # openml:4321 (target: its default, classification inferred); openml:999 is unknown to the server
        res = rfbench("run", "--datasets", "openml:4321,openml:999,breiman-generated", "--methods", "rff-gauss",
                      "--max-samples", "60", *TINY, "--out", "o", cwd=tmp_path, env=env)
        assert "note: dataset 'openml-4321': target 'cls' is not numeric: classification" in res.stderr
        assert re.search(r"warning: skipped: dataset 'openml-999' is not available", res.stderr)
        df = pd.read_csv(tmp_path / "o" / "results.csv")
        assert set(df["dataset"]) == {"openml-4321", "breiman-generated"} and set(df["status"]) == {"done"}
        assert df.loc[df["dataset"] == "openml-4321", "metric"].eq("accuracy").all()
        # --strict: the unavailable dataset is an error, nothing runs
        one_line_error(rfbench("run", "--datasets", "breiman-generated,openml:999", "--methods", "rff-gauss",
                               "--strict", *TINY, "--out", "o2", cwd=tmp_path, env=env, ok=(2,)),
                       "dataset 'openml-999' is not available")
    finally:
        server.shutdown()
        server.server_close()


def test_dry_run_of_an_openml_id_contacts_nothing_and_writes_nothing(tmp_path, monkeypatch, capsys):
    """A dry run lists openml:ID unresolved: no request reaches the (fake) OpenML server, no cache or
    --out is written, and the output says its details are known only when the run obtains it."""
    from rfbench.cli import main

    server, calls = serve_openml({4321: ("toy", b"@relation toy\n@attribute u numeric\n@attribute y numeric\n"
                                                b"@data\n1,2\n3,4\n", "y")})
    monkeypatch.setenv("RFBENCH_OPENML_SERVER", f"http://127.0.0.1:{server.server_address[1]}/api/v1/xml")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    try:
        main(["run", "--datasets", "openml:4321,breiman-generated", "--methods", "rff-gauss", "--features", "5",
              "--outer-folds", "2", "--dry-run", "--out", str(tmp_path / "o")])
    finally:
        server.shutdown()
        server.server_close()
    out = capsys.readouterr().out
    assert calls == []
    assert not (tmp_path / "o").exists() and not (tmp_path / "cache").exists()
    assert re.search(r"openml-4321 +rff-gauss +5 +2 +0 +needs network", out), out
    assert "openml-4321: not resolved (a dry run does not contact OpenML)" in out
    assert "dry run: 4 of 4 tasks would run" in out


@pytest.mark.parametrize("estimator, message", [
    ("mine_needs_dep:Est", "module 'mine_needs_dep' needs 'rfbench_absent_optional_dep', which is not installed here"),
    ("rfbench_absent_module:Est", "cannot import module 'rfbench_absent_module'"),
])
def test_a_method_whose_optional_dependency_is_missing_is_one_stderr_line(tmp_path, monkeypatch, capsys, estimator,
                                                                         message):
    """A user method whose module imports a package that is not installed (or whose module is not
    there): one stderr line naming it and what to do, exit 2, before the progress line and before
    --out is written; the run's own progress stays on (no --quiet)."""
    from cli_errors import one_line_error

    monkeypatch.setattr(sys, "path", list(sys.path))       # the registry's directory is put on it
    (tmp_path / "mine_needs_dep.py").write_text("import rfbench_absent_optional_dep\n\nclass Est:\n    pass\n")
    reg = tmp_path / "reg.yaml"
    reg.write_text(f"methods:\n  mine:\n    estimator: {{regression: '{estimator}'}}\n")
    one_line_error(capsys, ["run", "--registry", str(reg), "--methods", "mine,rff-gauss", "--datasets",
                            "breiman-generated", "--features", "5", "--outer-folds", "2", "--inner-folds", "2",
                            "--out", str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


def test_method_that_cannot_serve_a_dataset_is_skipped_with_a_warning(tmp_path):
    _table(tmp_path / "my.csv")
    res = rfbench("run", "--methods", "sklearn.linear_model:LogisticRegression,rff-gauss", "--datasets", "my.csv",
                  "--target", "y", *TINY, "--out", "o", cwd=tmp_path)
    assert "skipping sklearn.linear_model.LogisticRegression on my: the method has no estimator for regression" \
        in res.stderr
    assert set(pd.read_csv(tmp_path / "o" / "results.csv")["method"]) == {"rff-gauss"}


def test_openml_id_parsing():
    for bad in ("openml:", "openml:x", "openml:-3", "openml:0"):
        with pytest.raises(UsageError, match="openml:ID with a positive integer ID"):
            loader.resolve_dataset_names(registry.load(), [bad])
    # unreachable server (conftest): registered as unavailable, raised when loaded
    built, names = loader.resolve_dataset_names(registry.load(), ["openml:77"], "y")
    assert names == ["openml-77"]
    with pytest.raises(DataUnavailable, match="dataset 'openml-77' is not available"):
        loader.load("openml-77", registry=built)


# -- a user registry of ARFF files: checksums, info, report -----------------------------------------

def _arff(path: Path, n: int = 40) -> Path:
    rng = np.random.default_rng(2)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=n)
    rows = "\n".join(",".join(f"{v:.6f}" for v in (*x, t)) for x, t in zip(X, y, strict=True))
    path.write_text("@relation toy\n@attribute a numeric\n@attribute b numeric\n@attribute c numeric\n"
                    f"@attribute y numeric\n@data\n{rows}\n")
    return path


def test_sha256_mismatch_shows_both_full_digests_and_both_fixes(tmp_path, monkeypatch):
    import hashlib

    data = _arff(tmp_path / "toy.arff")
    actual = hashlib.sha256(data.read_bytes()).hexdigest()
    wrong = "ab" * 32
    reg = tmp_path / "my.yaml"
    reg.write_text(f"datasets:\n  toy: {{file: toy.arff, target: y, sha256: {wrong}}}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    with pytest.raises(UsageError) as err:
        loader.load("toy", registry=load_registry())
    msg = str(err.value)
    assert actual in msg and wrong in msg and "\n" not in msg
    assert "the file changed, or the registry's sha256 is wrong: fix one" in msg


@pytest.mark.parametrize("digits", ["0" * 64, "1234567890" * 6 + "1234"])
def test_unquoted_all_digit_sha256_is_refused_with_how_to_quote_it(tmp_path, monkeypatch, digits):
    """YAML reads it as an int: 0…0 (octal) became 0, i.e. no checksum at all; others lose leading zeros."""
    _arff(tmp_path / "toy.arff")
    reg = tmp_path / "my.yaml"
    reg.write_text(f"datasets:\n  toy: {{file: toy.arff, target: y, sha256: {digits}}}\n"
                   f"  toy2: {{mirror: {{file: toy.arff, format: arff, sha256: {digits}}}, target: y}}\n")
    monkeypatch.setenv("RFBENCH_REGISTRY", str(reg))
    with pytest.raises(UsageError, match=r"entry 'toy': field 'sha256' was read as a number.*quote it: sha256: \""):
        registry.load()
    reg.write_text(f"datasets:\n  toy: {{file: toy.arff, target: y, sha256: \"{digits}\"}}\n")
    assert registry.load().dataset("toy").sha256 == digits          # quoted: kept as written, checked
    reg.write_text(f"datasets:\n  toy2: {{mirror: {{file: toy.arff, format: arff, sha256: {digits}}}, target: y}}\n")
    with pytest.raises(UsageError, match=r"entry 'toy2': field 'mirror.sha256' was read as a number"):
        registry.load()


@pytest.mark.slow
def test_info_list_and_report_of_a_user_arff_dataset(tmp_path):
    import hashlib

    data = _arff(tmp_path / "toy.arff")
    sha = hashlib.sha256(data.read_bytes()).hexdigest()
    reg = tmp_path / "my.yaml"
    reg.write_text(f"datasets:\n  toy: {{file: toy.arff, target: y, shape: [40, 3], sha256: \"{sha}\"}}\n"
                   "  gone: {file: missing.arff, target: y}\n"
                   "  elsewhere: {mirror: {file: sub/toy.arff, format: arff}, target: y}\n")
    info = rfbench("datasets", "info", "toy", "--registry", str(reg), cwd=tmp_path).stdout
    assert f"file: {data} (present)" in info and sha in info and "source here: file" in info
    info = rfbench("datasets", "info", "elsewhere", "--registry", str(reg), "--data-dir", str(tmp_path),
                   cwd=tmp_path).stdout
    assert f"mirror: sub/toy.arff: not found in {tmp_path}" in info
    listing = rfbench("datasets", "list", "--registry", str(reg), "--data-dir", str(tmp_path), cwd=tmp_path).stdout
    header = listing.splitlines()[0]
    at, end = header.index("source here"), header.index("generator")
    source = {line.split()[0]: line[at:end].strip() for line in listing.splitlines()[2:]}
    assert source["toy"] == "file" and source["friedman-generated"] == "generator"
    assert source["gone"] == f"absent (file {tmp_path / 'missing.arff'} not found)"
    assert source["elsewhere"] == f"absent (mirror file sub/toy.arff not found in {tmp_path})"
    rfbench("run", "--registry", str(reg), "--methods", "rff-gauss", "--datasets", "toy", *TINY, "--out", "o",
            cwd=tmp_path)
    plain = rfbench("report", "o", "--format", "csv", cwd=tmp_path).stdout
    with_reg = rfbench("report", "o", "--format", "csv", "--registry", str(reg), cwd=tmp_path).stdout
    # d: the registry's shape, else the one the run recorded in run.json (the entry declares none)
    assert (pd.read_csv(io.StringIO(plain))["d"] == 3).all()
    assert (pd.read_csv(io.StringIO(with_reg))["d"] == 3).all()
    text = rfbench("report", "o", "--registry", str(reg), cwd=tmp_path).stdout
    assert re.search(r"toy\s+40\s+3\b", text), text
