"""The bad-input battery: every command's options, registries, specs, data files
(CSV, ARFF, Parquet, the published split masks), user methods and baselines, each given something
wrong. A refused command line exits 2 with one line on stderr ("rfbench: error: ...") and writes
nothing: the working directory holds exactly the files the case set up. Where a task is at fault (a
user method that fails in fit), the task gets an error record and the run goes on.

A case: its id, the files it sets up in the working directory, its argv, a fragment of the message
and, when needed, environment variables. Cases not clean today are marked xfail (strict), with what
happens, so the remaining work stays visible."""

from __future__ import annotations

import gzip
import hashlib
import io
import json

import numpy as np
import pytest

from rfbench.cli import main

#: a small, fast run: the generated datasets need no files
SMALL = ["--max-samples", "80", "--outer-folds", "2", "--inner-folds", "2", "--features", "10", "--jobs", "1",
         "--quiet", "--no-report"]
GEN = ["--datasets", "friedman-generated", "--methods", "rff-gauss"]
RUN = ["run", *GEN, *SMALL, "--out", "o"]


def run_with(*options, datasets=GEN[:2], methods=GEN[2:], small=SMALL):
    """``rfbench run`` on a generated dataset with these options replacing the small defaults."""
    names = {o for o in options if isinstance(o, str) and o.startswith("--")}
    base: list[str] = []
    it = iter(small)
    for opt in it:
        value = None if opt in ("--quiet", "--no-report") else next(it)
        if opt not in names:
            base += [opt] + ([value] if value is not None else [])
    return ["run", *datasets, *methods, *base, *options, *([] if "--out" in names else ["--out", "o"])]


# -- files a case sets up ------------------------------------------------------------------------

def csv_rows(m=60, header="a,b,c,y", stray=None, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    lines = [header] + [",".join(f"{v:.6f}" for v in (*x, x.sum())) for x in X]
    if stray:
        row, text = stray
        cells = lines[row + 1].split(",")
        cells[0] = text
        lines[row + 1] = ",".join(cells)
    return "\n".join(lines) + "\n"


GOOD_CSV = csv_rows()
#: a well-formed sha256 that no file here has (quoted: YAML would read all digits as a number)
BAD_SHA = '"' + "ab" * 32 + '"'
SHA_GOOD = hashlib.sha256(GOOD_CSV.encode()).hexdigest()


def gz(text: str) -> bytes:
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as fh:
        fh.write(text.encode())
    return buf.getvalue()


def truncated_gz(text: str) -> bytes:
    raw = gz(text * 20)
    return raw[: len(raw) // 2]


def parquet_bytes(frame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf)
    return buf.getvalue()


def masks_csv(split_of_row, n_splits=10, edit=None) -> bytes:
    masks = (np.asarray(split_of_row)[:, None] == np.arange(n_splits)).astype(int).astype(object)
    if edit:
        masks = edit(masks)
    return gz("".join(",".join(str(v) for v in row) + "\n" for row in masks))


TOY_DATA = gz("".join(",".join(f"{v:.6f}" for v in r) + "\n"
                      for r in np.random.default_rng(0).normal(size=(60, 4))))


def toy_registry(splits="{file: mask.csv.gz}"):
    return (f"datasets:\n  toy:\n    file: data.csv.gz\n    format: csv-noheader\n    target: c3\n"
            f"    splits: {splits}\n")


def toy(masks: bytes, splits="{file: mask.csv.gz}"):
    return {"data.csv.gz": TOY_DATA, "mask.csv.gz": masks, "reg.yaml": toy_registry(splits)}


TOY_RUN = ["run", "--registry", "reg.yaml", "--datasets", "toy", "--methods", "rff-gauss", "--features", "10",
           "--protocol", "published", "--jobs", "1", "--quiet", "--no-report", "--out", "o"]


def _no_split(m):
    m[7] = 0
    return m


def _value(v):
    def edit(m):
        m[9, 3] = v
        return m
    return edit


def _two_splits(m):
    m[8, :2] = 1
    return m


#: a registry's dataset entry with one field wrong (the rest valid: a generated dataset)
def reg_dataset(**fields):
    entry = {"generator": "friedman", "shape": "[80, 5]", "target": "y", **fields}
    body = "".join(f"    {k}: {v}\n" for k, v in entry.items() if v is not None)
    return {"reg.yaml": f"datasets:\n  mine:\n{body}"}


def reg_method(**fields):
    entry = {"estimator": "rfbench.methods.rff:RFFRegressor", **fields}
    body = "".join(f"    {k}: {v}\n" for k, v in entry.items() if v is not None)
    return {"reg.yaml": f"methods:\n  mine:\n{body}"}


DS_LIST = ["datasets", "list", "--registry", "reg.yaml"]
METHODS = ["methods", "--registry", "reg.yaml"]

#: a run-only spec, valid as written (every case replaces one field)
SPEC = {"title": "t", "results": "out",
        "run": "{datasets: [friedman-generated], methods: [rff-gauss], features: [10]}",
        "protocol": "{name: cv, outer_folds: 2, inner_folds: 2, max_samples: 80}"}


def spec(**fields):
    entry = {**SPEC, **fields}
    return {"spec.yaml": "".join(f"{k}: {v}\n" for k, v in entry.items() if v is not None)}


USER_MODULE = '''\
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge


class NotEstimator:
    pass


class RaisesInInit(BaseEstimator, RegressorMixin):
    def __init__(self, n_features=10):
        raise RuntimeError("boom in __init__")

    def fit(self, X, y):
        return self


class RaisesInFit(BaseEstimator, RegressorMixin):
    def __init__(self, n_features=10):
        self.n_features = n_features

    def fit(self, X, y):
        raise RuntimeError("boom in fit")


class NaNPredictions(BaseEstimator, RegressorMixin):
    def __init__(self, n_features=10):
        self.n_features = n_features

    def fit(self, X, y):
        return self

    def predict(self, X):
        return X[:, 0] * float("nan")


class WrongShape(BaseEstimator, RegressorMixin):
    def __init__(self, n_features=10):
        self.n_features = n_features

    def fit(self, X, y):
        return self

    def predict(self, X):
        return X[:1, 0]


not_a_class = 3
OkRidge = Ridge
'''

#: a finished run's directory, the minimal records a report reads being those of a real run (made once)
_FINISHED: dict = {}


def finished_run(tmp_path_factory):
    if "dir" not in _FINISHED:
        where = tmp_path_factory.mktemp("finished")
        import os

        here = os.getcwd()
        os.chdir(where)
        try:
            main([*RUN[:-1], str(where / "o")])   # absolute: open_run caches a RunDir by absolute path
        except SystemExit as exc:
            assert exc.code in (0, None)
        finally:
            os.chdir(here)
        _FINISHED["dir"] = where / "o"
    return _FINISHED["dir"]


#: why a registry dataset whose file is missing is not clean yet

# -- the cases -----------------------------------------------------------------------------------

def c(id_, argv, files=None, message="", env=None, xfail=None):
    marks = [pytest.mark.xfail(strict=True, reason=xfail)] if xfail else []
    return pytest.param(argv, files or {}, message, env or {}, id=id_, marks=marks)


CASES = [
    # run: numeric options out of range
    c("run-features-0", run_with("--features", "0"), message="--features '0'"),
    c("run-features-neg", run_with("--features", "-5"), message="--features"),
    c("run-features-abc", run_with("--features", "abc"), message="--features 'abc'"),
    c("run-features-empty", run_with("--features", ""), message="--features"),
    c("run-features-huge", run_with("--features", "10000000"), message="at most"),
    c("run-features-10-abc", run_with("--features", "10,abc"), message="--features"),
    c("run-outer-folds-1", run_with("--outer-folds", "1"), message="at least 2"),
    c("run-outer-folds-0", run_with("--outer-folds", "0"), message="outer"),
    c("run-outer-folds-abc", run_with("--outer-folds", "abc"), message="--outer-folds"),
    c("run-inner-folds-0", run_with("--inner-folds", "0"), message="inner"),
    c("run-inner-folds-1", run_with("--inner-folds", "1"), message="inner"),
    c("run-jobs-0", run_with("--jobs", "0"), message="--jobs"),
    c("run-jobs-neg", run_with("--jobs", "-2"), message="--jobs"),
    c("run-jobs-abc", run_with("--jobs", "abc"), message="--jobs"),
    c("run-jobs-huge", run_with("--jobs", "100000"), message="--jobs 100000"),
    c("run-threads-neg", run_with("--threads", "-1"), message="--threads"),
    c("run-threads-0", run_with("--threads", "0"), message="--threads"),
    c("run-threads-huge", run_with("--threads", "5000"), message="--threads 5000"),
    c("run-timeout-0s", run_with("--timeout", "0s"), message="--timeout"),
    c("run-timeout-abc", run_with("--timeout", "abc"), message="not a duration"),
    c("run-timeout-huge", run_with("--timeout", "100000h"), message="--timeout"),
    c("run-timeout-neg", run_with("--timeout", "-5m"), message="--timeout"),
    c("run-seed-neg", run_with("--seed", "-1"), message="seed"),
    c("run-seed-huge", run_with("--seed", str(2**40)), message="seed"),
    c("run-seed-abc", run_with("--seed", "abc"), message="--seed"),
    c("run-seeds-abc", run_with("--seeds", "0,x"), message="--seeds"),
    c("run-seeds-neg", run_with("--seeds", "-1"), message="--seeds"),
    c("run-seed-and-seeds", run_with("--seed", "3", "--seeds", "0,1"), message="not both"),
    c("run-max-samples-0", run_with("--max-samples", "0"), message="max"),
    c("run-max-samples-neg", run_with("--max-samples", "-10"), message="max"),
    c("run-max-samples-1", run_with("--max-samples", "1"), message="max"),
    c("run-folds-5-2", run_with("--folds", "5-2"), message="low to high"),
    c("run-folds-a-b", run_with("--folds", "a-b"), message="--folds 'a-b'"),
    c("run-folds-out-of-range", run_with("--folds", "2-3"), message="numbered 0..1"),
    c("run-folds-huge", run_with("--folds", "0-99999999999999"), message="from 0 to 9999"),
    c("run-folds-comma", run_with("--folds", ","), message="--folds"),
    c("run-gpu-slots-0", run_with("--gpu-slots", "0"), message="--gpu-slots"),
    c("run-gpu-slots-neg", run_with("--gpu-slots", "-1"), message="--gpu-slots"),
    c("run-repeats-0", run_with("--protocol", "splits", "--repeats", "0"), message="repeats"),
    c("run-repeats-neg", run_with("--protocol", "splits", "--repeats", "-3"), message="repeats"),
    c("run-test-size-0", run_with("--protocol", "splits", "--test-size", "0"), message="test"),
    c("run-test-size-1", run_with("--protocol", "holdout", "--test-size", "1"), message="test"),
    c("run-test-size-nan", run_with("--protocol", "holdout", "--test-size", "nan"), message="test"),
    c("run-protocol-unknown", run_with("--protocol", "loo"), message="--protocol"),
    c("run-protocol-fixed-no-split", run_with("--protocol", "fixed"), message="fixed"),
    c("run-protocol-published-no-masks", run_with("--protocol", "published"), message="published"),
    c("run-task-unknown", run_with("--task", "ranking"), message="--task"),
    c("run-device-unknown", run_with("--device", "tpu"), message="--device"),
    c("run-backend-unknown", run_with("--backend", "slurm"), message="--backend"),
    c("run-scheduler-without-dask", run_with("--scheduler", "tcp://127.0.0.1:9"), message="--scheduler"),
    c("run-unknown-option", run_with("--featurs", "10"), message="--featurs"),
    # run: unknown names, empty lists, conflicts
    c("run-dataset-unknown", run_with(datasets=["--datasets", "nosuch"]), message="unknown dataset 'nosuch'"),
    c("run-datasets-empty", run_with(datasets=["--datasets", ","]), message="--datasets is empty"),
    c("run-method-unknown", run_with(methods=["--methods", "nosuch"]), message="unknown method 'nosuch'"),
    c("run-methods-empty", run_with(methods=["--methods", ","]), message="--methods is empty"),
    c("run-method-bad-name", run_with(methods=["--methods", "../evil"]), message="evil"),
    c("run-suite-unknown", run_with("--suite", "nosuch", datasets=[]), message="unknown suite 'nosuch'"),
    c("run-suite-empty", run_with("--suite", " ", datasets=[]), message="--suite is empty"),
    c("run-dataset-not-in-suite", run_with("--suite", "synthetic", datasets=["--datasets", "uci-yacht"]),
      message="not in suite"),
    c("run-out-empty", run_with("--out", ""), message="--out is empty"),
    c("run-out-is-file", run_with("--out", "afile"), {"afile": "x"}, message="afile"),
    c("run-out-inside-file", run_with("--out", "afile/o"), {"afile": "x"}, message="afile"),
    c("run-data-dir-missing", run_with("--data-dir", "nodir"), message="nodir"),
    c("run-data-dir-is-file", run_with("--data-dir", "afile"), {"afile": "x"}, message="not a directory"),
    c("run-data-dir-empty", run_with("--data-dir", ""), message="--data-dir is empty"),
    c("run-env-data-dir-missing", RUN, env={"RFBENCH_DATA_DIR": "/nonexistent"}, message="RFBENCH_DATA_DIR"),
    c("run-env-jobs-abc", run_with(small=[s for s in SMALL if s not in ("--jobs", "1")] + ["--quiet"]),
      env={"RFBENCH_JOBS": "abc"}, message="error: --jobs (from $RFBENCH_JOBS) 'abc' is not a whole number"),
    c("run-jobs-with-scheduler", run_with("--backend", "dask", "--scheduler", "tcp://127.0.0.1:9"),
      message="--jobs sizes the workers"),
    c("run-dask-missing-or-unreachable", run_with("--backend", "dask", "--scheduler", "tcp://127.0.0.1:9",
                                                  small=[s for s in SMALL if s not in ("--jobs", "1")]),
      message="dask"),
    c("run-env-device-gpu", RUN, env={"RFBENCH_DEVICE": "gpu"}, message="RFBENCH_DEVICE=gpu"),
    # run: data files
    c("csv-missing-file", run_with("--target", "y", datasets=["--datasets", "nofile.csv"]), message="nofile.csv"),
    c("csv-no-target-option", run_with(datasets=["--datasets", "d.csv"]), {"d.csv": GOOD_CSV}, message="--target"),
    c("csv-target-missing", run_with("--target", "z", datasets=["--datasets", "d.csv"]), {"d.csv": GOOD_CSV},
      message="--target z: no such column"),
    c("csv-empty", run_with("--target", "y", datasets=["--datasets", "d.csv"]), {"d.csv": ""}, message="d.csv"),
    c("csv-header-only", run_with("--target", "y", datasets=["--datasets", "d.csv"]), {"d.csv": "a,b,c,y\n"},
      message="d.csv"),
    c("csv-stray-text-cell", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": csv_rows(stray=(17, "12a"))}, message="is numeric but for 1 cell(s) such as '12a'"),
    c("csv-text-target", run_with("--target", "y", "--task", "regression", datasets=["--datasets", "d.csv"]),
      {"d.csv": "a,y\n" + "".join(f"{i},v{i}\n" for i in range(60))}, message="y"),
    c("csv-constant-target", run_with("--target", "y", "--task", "regression", datasets=["--datasets", "d.csv"]),
      {"d.csv": "a,y\n" + "".join(f"{i},4\n" for i in range(60))}, message="constant target"),
    c("csv-repeated-column", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": csv_rows(header="a,a,c,y")}, message="more than once"),
    c("csv-ragged-rows", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": GOOD_CSV + "1,2\n1,2,3,4,5,6\n"}, message="d.csv"),
    c("csv-binary-garbage", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": bytes(range(256)) * 4}, message="d.csv"),
    c("csv-is-directory", run_with("--target", "y", datasets=["--datasets", "d.csv"]), {"d.csv/": None},
      message="d.csv"),
    c("csv-gz-truncated", run_with("--target", "y", datasets=["--datasets", "d.csv.gz"]),
      {"d.csv.gz": truncated_gz(GOOD_CSV)}, message="d.csv.gz"),
    c("csv-gz-not-gzip", run_with("--target", "y", datasets=["--datasets", "d.csv.gz"]),
      {"d.csv.gz": GOOD_CSV}, message="d.csv.gz"),
    c("csv-target-with-registered", run_with("--target", "y"), message="--target"),
    c("arff-bad-header", run_with("--target", "y", datasets=["--datasets", "d.arff"]),
      {"d.arff": "@relaton x\n@atribute a numeric\n@data\n1,2\n"}, message="d.arff"),
    c("arff-no-data-section", run_with("--target", "y", datasets=["--datasets", "d.arff"]),
      {"d.arff": "@relation x\n@attribute a numeric\n@attribute y numeric\n"}, message="d.arff"),
    c("arff-wrong-arity", run_with("--target", "y", datasets=["--datasets", "d.arff"]),
      {"d.arff": "@relation x\n@attribute a numeric\n@attribute y numeric\n@data\n" + "1,2,3\n" * 30},
      message="rows have more values than the 2 @attribute lines"),
    c("arff-target-missing", run_with("--target", "z", datasets=["--datasets", "d.arff"]),
      {"d.arff": "@relation x\n@attribute a numeric\n@attribute y numeric\n@data\n"
       + "".join(f"{i},{i * 2 % 7}\n" for i in range(60))}, message="z"),
    c("arff-empty", run_with("--target", "y", datasets=["--datasets", "d.arff"]), {"d.arff": ""},
      message="d.arff"),
    c("parquet-is-text", run_with("--target", "y", datasets=["--datasets", "d.parquet"]),
      {"d.parquet": GOOD_CSV}, message="d.parquet"),
    c("parquet-empty-file", run_with("--target", "y", datasets=["--datasets", "d.parquet"]),
      {"d.parquet": b""}, message="d.parquet"),
    c("parquet-truncated", run_with("--target", "y", datasets=["--datasets", "d.parquet"]),
      {"d.parquet": lambda: parquet_bytes(__import__("pandas").read_csv(io.StringIO(GOOD_CSV)))[:200]},
      message="d.parquet"),
    c("parquet-target-missing", run_with("--target", "z", datasets=["--datasets", "d.parquet"]),
      {"d.parquet": lambda: parquet_bytes(__import__("pandas").read_csv(io.StringIO(GOOD_CSV)))}, message="z"),
    c("openml-bad-id", run_with(datasets=["--datasets", "openml:abc"]), message="openml:abc"),
    c("openml-unreachable", run_with("--strict", datasets=["--datasets", "openml:999"]), message="999"),
    # registry files: the file itself
    c("registry-missing", [*DS_LIST[:2], "--registry", "nope.yaml"], message="nope.yaml"),
    c("registry-is-directory", DS_LIST, {"reg.yaml/": None}, message="reg.yaml"),
    c("registry-not-yaml", DS_LIST, {"reg.yaml": "datasets: [\n"}, message="reg.yaml"),
    c("registry-a-list", DS_LIST, {"reg.yaml": "- a\n- b\n"}, message="reg.yaml"),
    c("registry-empty-file", DS_LIST, {"reg.yaml": ""}, message="reg.yaml"),
    c("registry-unknown-section", DS_LIST, {"reg.yaml": "dataset: {}\n"}, message="unknown section"),
    c("registry-datasets-a-list", DS_LIST, {"reg.yaml": "datasets: [a, b]\n"}, message="'datasets' must be"),
    c("registry-python-tag", DS_LIST, {"reg.yaml": 'datasets: !!python/object/apply:os.system ["touch pwned"]\n'},
      message="reg.yaml"),
    c("registry-latin1", DS_LIST, {"reg.yaml": "datasets:\n  mine:\n    notes: caf\xe9\n".encode("latin-1")},
      message="reg.yaml"),
    c("registry-env-missing", ["datasets", "list"], env={"RFBENCH_REGISTRY": "nope.yaml"}, message="nope.yaml"),
    c("registry-methods-cmd-missing", ["methods", "--registry", "nope.yaml"], message="nope.yaml"),
    c("registry-run-missing", run_with("--registry", "nope.yaml"), message="nope.yaml"),
    c("registry-info-missing", ["datasets", "info", "friedman-generated", "--registry", "nope.yaml"],
      message="nope.yaml"),
    c("registry-fetch-missing", ["datasets", "fetch", "friedman-generated", "--registry", "nope.yaml"],
      message="nope.yaml"),
    # registry files: a dataset entry's fields
    c("reg-ds-not-mapping", DS_LIST, {"reg.yaml": "datasets:\n  mine: 5\n"}, message="must be a mapping"),
    c("reg-ds-bad-name", DS_LIST, {"reg.yaml": "datasets:\n  ../x: {generator: friedman, shape: [80, 5], "
                                   "target: y}\n"}, message="is not allowed"),
    c("reg-ds-task-wrong", DS_LIST, reg_dataset(task="ranking"), message="field 'task'"),
    c("reg-ds-task-number", DS_LIST, reg_dataset(task="5"), message="field 'task'"),
    c("reg-ds-shape-zero", DS_LIST, reg_dataset(shape="[0, 5]"), message="field 'shape'"),
    c("reg-ds-shape-text", DS_LIST, reg_dataset(shape="big"), message="field 'shape'"),
    c("reg-ds-suites-text", DS_LIST, reg_dataset(suites="mine"), message="field 'suites'"),
    c("reg-ds-suite-undeclared", DS_LIST, reg_dataset(suites="[mysuite]"), message="is not declared"),
    c("reg-ds-target-missing", DS_LIST, reg_dataset(target=None), message="target"),
    c("reg-ds-file-number", DS_LIST, reg_dataset(generator=None, file="5"), message="field 'file'"),
    c("reg-ds-format-wrong", DS_LIST, {**reg_dataset(generator=None, file="d.csv", format="xls"), "d.csv": GOOD_CSV},
      message="field 'format'"),
    c("reg-ds-sha256-number", DS_LIST, reg_dataset(generator=None, file="d.csv", sha256="1234"),
      message="field 'sha256' was read as a number"),
    c("reg-ds-sha256-short", DS_LIST, reg_dataset(generator=None, file="d.csv", sha256="abc"),
      message="field 'sha256' must be 64"),
    c("reg-ds-openml-id-text", DS_LIST, reg_dataset(generator=None, openml="{id: abc}"), message="openml.id"),
    c("reg-ds-generator-unknown", DS_LIST, reg_dataset(generator="nosuch"), message="field 'generator'"),
    c("reg-ds-generator-no-shape", DS_LIST, reg_dataset(shape=None), message="needs field 'shape'"),
    c("reg-ds-scale-inputs-wrong", DS_LIST, reg_dataset(scale_inputs="sideways"), message="scale_inputs"),
    c("reg-ds-aliases-number", DS_LIST, reg_dataset(aliases="5"), message="aliases"),
    c("reg-ds-alias-bad-name", DS_LIST, reg_dataset(aliases="['../x']"), message="is not allowed"),
    c("reg-ds-no-source", DS_LIST, reg_dataset(generator=None), message="needs at least one source"),
    c("reg-ds-mirror-escapes", DS_LIST, reg_dataset(generator=None, mirror="{file: ../x.csv, format: csv}"),
      message="mirror.file"),
    c("reg-ds-mirror-no-format", DS_LIST, reg_dataset(generator=None, mirror="{file: x.csv}"), message="mirror"),
    c("reg-ds-mirror-format-wrong", DS_LIST, reg_dataset(generator=None, mirror="{file: x.csv, format: xls}"),
      message="mirror.format"),
    c("reg-ds-splits-text", DS_LIST, reg_dataset(splits="masks.csv"), message="field 'splits'"),
    c("reg-ds-splits-extra-key", DS_LIST, reg_dataset(splits="{file: m.csv, rows: 3}"),
      message="unknown field(s) splits.rows"),
    c("reg-ds-splits-sha-short", DS_LIST, reg_dataset(splits="{file: m.csv, sha256: abc}"),
      message="splits.sha256"),
    c("reg-ds-holdout-text", DS_LIST, reg_dataset(holdout="half"), message="holdout"),
    c("reg-ds-holdout-split-wrong", DS_LIST, reg_dataset(holdout="{train: 40, test: 40, split: odd}"),
      message="holdout.split"),
    c("reg-ds-classification-labels", DS_LIST, reg_dataset(task="classification", labels="[a, b]"),
      message="labels"),
    c("reg-ds-download-no-url", DS_LIST, reg_dataset(download="{format: csv}"), message="download"),
    # registry files: a method entry's fields
    c("reg-m-not-mapping", METHODS, {"reg.yaml": "methods:\n  mine: 5\n"}, message="mine"),
    c("reg-m-bad-name", METHODS, {"reg.yaml": "methods:\n  ../evil: {estimator: 'a.b:C'}\n"},
      message="is not allowed"),
    c("reg-m-estimator-missing", METHODS, reg_method(estimator=None, params="{}"), message="'estimator'"),
    c("reg-m-estimator-number", METHODS, reg_method(estimator="5"), message="field 'estimator'"),
    c("reg-m-estimator-no-colon", METHODS, reg_method(estimator="rfbench.methods.rff"), message="estimator"),
    c("reg-m-estimator-task-wrong", METHODS, reg_method(estimator="{ranking: 'a.b:C'}"), message="estimator"),
    c("reg-m-estimator-module-missing", METHODS, reg_method(estimator="nosuchmod_xyz:Est"), message="nosuchmod_xyz"),
    c("reg-m-estimator-class-missing", METHODS, reg_method(estimator="rfbench.methods.rff:Nope"), message="Nope"),
    c("reg-m-params-list", METHODS, reg_method(params="[1, 2]"), message="field 'params'"),
    c("reg-m-params-unknown-arg", run_with("--registry", "reg.yaml", methods=["--methods", "mine"]),
      reg_method(params="{nosuch_arg: 1}"), message="nosuch_arg"),
    c("reg-m-per-dataset-list", METHODS, reg_method(per_dataset="[a]"), message="per_dataset"),
    c("reg-m-grid-empty-list", METHODS, reg_method(grid="{alpha: []}"), message="field 'grid'"),
    c("reg-m-placement-wrong", METHODS, reg_method(placement="gpu"), message="placement"),
    c("reg-m-cost-scaling-wrong", METHODS, reg_method(cost_scaling="{rows: 9}"), message="cost_scaling"),
    c("reg-m-thread-sensitive-text", METHODS, reg_method(thread_sensitive="'yes'"), message="thread_sensitive"),
    # dataset checksums and the run's registry
    c("reg-ds-sha256-mismatch", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      {**reg_dataset(generator=None, file="d.csv", sha256=BAD_SHA), "d.csv": GOOD_CSV},
      message="expects abab"),
    c("reg-ds-file-missing", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      reg_dataset(generator=None, file="gone.csv"), message="gone.csv is not there"),
    c("reg-ds-file-target-missing", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      {**reg_dataset(generator=None, file="d.csv", target="z"), "d.csv": GOOD_CSV}, message="'z'"),
    c("fetch-sha256-mismatch", ["datasets", "fetch", "mine", "--registry", "reg.yaml"],
      {**reg_dataset(generator=None, file="d.csv", sha256=BAD_SHA), "d.csv": GOOD_CSV},
      message="expects abab"),
    c("info-dataset-unknown", ["datasets", "info", "nosuch"], message="unknown dataset"),
    c("fetch-nothing", ["datasets", "fetch"], message="name datasets to fetch"),
    c("fetch-suite-unknown", ["datasets", "fetch", "--suite", "nosuch"], message="unknown suite"),
    c("list-suite-unknown", ["datasets", "list", "--suite", "nosuch"], message="unknown suite"),
    c("info-data-dir-is-file", ["datasets", "info", "breiman", "--data-dir", "afile"], {"afile": "x"},
      message="not a directory"),
    c("methods-width-neg", ["methods", "--width", "-3"], message="-3"),
    c("methods-width-narrow", ["methods", "--width", "10"], message="too narrow"),
    c("methods-width-abc", ["methods", "--width", "abc"], message="abc"),
    # the published protocol's split masks
    c("masks-wrong-row-count", TOY_RUN, toy(masks_csv(np.arange(59) % 10)), message="have 59 rows and the data 60"),
    c("masks-row-in-no-split", TOY_RUN, toy(masks_csv(np.arange(60) % 10, edit=_no_split)),
      message="row 8 is in no split"),
    c("masks-row-in-two-splits", TOY_RUN, toy(masks_csv(np.arange(60) % 10, edit=_two_splits)),
      message="row 9 is a test row of"),
    c("masks-value-2", TOY_RUN, toy(masks_csv(np.arange(60) % 10, edit=_value(2))), message="row 10, column 4 is '2'"),
    c("masks-value-text", TOY_RUN, toy(masks_csv(np.arange(60) % 10, edit=_value("x"))), message="row 10, column 4"),
    c("masks-split-index-out-of-range", [*TOY_RUN, "--repeats", "12"], toy(masks_csv(np.arange(60) % 10)),
      message="split index 11 is out of range"),
    c("masks-folds-out-of-range", [*TOY_RUN, "--folds", "10"], toy(masks_csv(np.arange(60) % 10)),
      message="--folds"),
    c("masks-truncated", TOY_RUN, toy(masks_csv(np.arange(60) % 10)[:40]), message="cannot be read"),
    c("masks-empty", TOY_RUN, toy(gz("")), message="mask.csv.gz"),
    c("masks-file-missing", TOY_RUN, {"data.csv.gz": TOY_DATA, "reg.yaml": toy_registry()}, message="mask.csv.gz"),
    c("masks-sha256-mismatch", TOY_RUN, toy(masks_csv(np.arange(60) % 10), "{file: mask.csv.gz, sha256: " + BAD_SHA + "}"),
      message="the registry expects"),
    c("masks-with-cv-protocol-repeats", [*TOY_RUN, "--repeats", "0"], toy(masks_csv(np.arange(60) % 10)),
      message="repeats"),
    # specs (status and reproduce --dry-run read them; nothing runs)
    c("spec-not-found", ["status", "nosuchspec"], message="nosuchspec"),
    c("spec-reproduce-not-found", ["reproduce", "nosuchspec", "--dry-run"], message="spec not found"),
    c("spec-not-yaml", ["status", "spec.yaml"], {"spec.yaml": "run: [\n"}, message="spec.yaml"),
    c("spec-a-list", ["status", "spec.yaml"], {"spec.yaml": "- 1\n"}, message="spec.yaml"),
    c("spec-empty", ["status", "spec.yaml"], {"spec.yaml": ""}, message="spec.yaml"),
    c("spec-run-number", ["status", "spec.yaml"], spec(run="5"), message="field 'run' must be a mapping"),
    c("spec-run-missing", ["status", "spec.yaml"], spec(run=None), message="missing field 'run'"),
    c("spec-title-list", ["status", "spec.yaml"], spec(title="[a]"), message="field 'title'"),
    c("spec-results-number", ["status", "spec.yaml"], spec(results="5"), message="field 'results'"),
    c("spec-results-outside", ["status", "spec.yaml"], spec(results="/etc/rfbench-x"), message="outside"),
    c("spec-features-text", ["reproduce", "spec.yaml", "--dry-run"],
      spec(run="{datasets: [friedman-generated], methods: [rff-gauss], features: ten}"),
      message="field 'run.features'"),
    c("spec-features-zero", ["status", "spec.yaml"],
      spec(run="{datasets: [friedman-generated], methods: [rff-gauss], features: [0]}"), message="features"),
    c("spec-datasets-empty", ["status", "spec.yaml"],
      spec(run="{datasets: [], methods: [rff-gauss], features: [10]}"), message="non-empty"),
    c("spec-dataset-unknown", ["status", "spec.yaml"],
      spec(run="{datasets: [nosuch], methods: [rff-gauss], features: [10]}"), message="nosuch"),
    c("spec-method-unknown", ["status", "spec.yaml"],
      spec(run="{datasets: [friedman-generated], methods: [nosuch], features: [10]}"), message="nosuch"),
    c("spec-exclude-unknown-method", ["status", "spec.yaml"],
      spec(run="{datasets: [friedman-generated], methods: [rff-gauss], features: [10], exclude: {lgbm: {x: y}}}"),
      message="exclude"),
    c("spec-protocol-number", ["status", "spec.yaml"], spec(protocol="5"), message="field 'protocol'"),
    c("spec-protocol-unknown-field", ["status", "spec.yaml"], spec(protocol="{name: cv, folds: 3}"),
      message="unknown field(s) protocol.folds"),
    c("spec-protocol-name-wrong", ["status", "spec.yaml"], spec(protocol="{name: loo}"), message="loo"),
    c("spec-protocol-outer-1", ["status", "spec.yaml"], spec(protocol="{name: cv, outer_folds: 1}"),
      message="at least 2"),
    c("spec-protocol-outer-text", ["status", "spec.yaml"], spec(protocol="{name: cv, outer_folds: ten}"),
      message="outer"),
    c("spec-test-name-wrong", ["status", "spec.yaml"], spec(test="{name: ztest}"), message="test.name"),
    c("spec-layout-wrong", ["status", "spec.yaml"], spec(layout="wide"), message="layout"),
    c("spec-metric-wrong", ["status", "spec.yaml"], spec(metric="auc"), message="metric"),
    c("spec-tolerance-text", ["status", "spec.yaml"], spec(tolerance="tight"), message="tolerance"),
    c("spec-published-missing-columns", ["status", "spec.yaml"], spec(published="x.csv"), message="missing field"),
    c("spec-published-file-missing", ["reproduce", "spec.yaml", "--dry-run"],
      spec(published="nosuch.csv", columns="{dataset: d, method: m, mean: e}", datasets="{a: friedman-generated}",
           methods="{A: rff-gauss}"), message="published table not found"),
    c("spec-methods-number", ["status", "spec.yaml"], spec(methods="{A: 5}"), message="methods.A"),
    c("spec-variants-unknown", ["status", "spec.yaml"], spec(methods="{A: rff-gauss}", variants="{B: [x]}"),
      message="variants"),
    c("spec-ci-no-reference", ["status", "spec.yaml"], spec(ci="{features: [10]}"), message="reference"),
    c("spec-unknown-top-field", ["status", "spec.yaml"], spec(runn="{}"), message="unknown field(s) runn"),
    c("spec-is-directory", ["status", "spec.yaml"], {"spec.yaml/": None}, message="spec.yaml"),
    c("spec-check-not-found", ["check", "DIR", "--spec", "nosuchspec"], {"DIR/": None}, message="spec not found"),
    c("spec-check-no-spec-for-dir", ["check", "DIR"], {"DIR/": None}, message="no spec has"),
    c("spec-plot-not-found", ["plot", "--spec", "nosuchspec"], message="spec not found"),
    c("spec-plot-with-dirs", ["plot", "DIR", "--spec", "gfc2016-table1"], {"DIR/": None}, message="--spec"),
    # reproduce: options (every case refused before anything runs)
    c("reproduce-nothing", ["reproduce"], message="name one or more specs"),
    c("reproduce-timeout-abc", ["reproduce", "gfc2016-table1", "--timeout", "abc"], message="not a duration"),
    c("reproduce-jobs-0", ["reproduce", "gfc2016-table1", "--dry-run", "--jobs", "0"], message="--jobs"),
    c("reproduce-threads-neg", ["reproduce", "gfc2016-table1", "--dry-run", "--threads", "-1"], message="--threads"),
    c("reproduce-folds-5-2", ["reproduce", "gfc2016-table1", "--dry-run", "--folds", "5-2"], message="--folds"),
    c("reproduce-gpu-slots-0", ["reproduce", "gfc2016-table1", "--dry-run", "--gpu-slots", "0"],
      message="--gpu-slots"),
    c("reproduce-dry-run-and-ci", ["reproduce", "gfc2016-table1", "--dry-run", "--ci"], message="--dry-run"),
    c("reproduce-dry-run-and-list", ["reproduce", "--dry-run", "--list"], message="--dry-run"),
    c("reproduce-out-empty", ["reproduce", "gfc2016-table1", "--ci", "--out", ""], message="--out is empty"),
    c("reproduce-ci-with-dask", ["reproduce", "gfc2016-table1", "--ci", "--backend", "dask"], message="--ci"),
    c("reproduce-ci-with-cuda", ["reproduce", "gfc2016-table1", "--ci", "--device", "cuda"], message="--ci"),
    c("reproduce-methods-unknown", ["reproduce", "spec.yaml", "--dry-run", "--methods", "nosuch"], spec(),
      message="nosuch"),
    c("reproduce-datasets-unknown", ["reproduce", "spec.yaml", "--dry-run", "--datasets", "nosuch"], spec(),
      message="nosuch"),
    # report
    c("report-no-dirs", ["report"], message="give the results directories"),
    c("report-dir-missing", ["report", "nodir"], message="results directory not found"),
    c("report-empty-dir", ["report", "DIR"], {"DIR/": None}, message="DIR"),
    c("report-dir-is-file", ["report", "afile"], {"afile": "x"}, message="afile"),
    c("report-bad-results-csv", ["report", "DIR"], {"DIR/results.csv": "a,b\n1,2\n"},
      message="is not a results table: none of its 1 row(s)"),
    c("report-format-unknown", ["report", "DIR", "--format", "pdf"], {"DIR/": None}, message="--format"),
    c("report-alpha-2", ["report", "DIR", "--alpha", "2"], {"DIR/": None}, message="2 is not a significance level"),
    c("report-alpha-nan", ["report", "DIR", "--alpha", "nan"], {"DIR/": None}, message="nan is not"),
    c("report-alpha-neg", ["report", "DIR", "--alpha", "-0.1"], {"DIR/": None}, message="-0.1 is not"),
    c("report-alpha-abc", ["report", "DIR", "--alpha", "abc"], {"DIR/": None}, message="is not a number"),
    c("report-width-neg", ["report", "DIR", "--width", "-3"], {"DIR/": None}, message="-3 is not in the range"),
    c("report-label-tex", ["report", "DIR", "--label", "}\\input{x}"], {"DIR/": None}, message="is not a LaTeX label"),
    c("report-latex-width-bad", ["report", "{run}", "--format", "latex", "--latex-width", "wide"],
      message="wide"),
    c("report-latex-width-neg", ["report", "{run}", "--format", "latex", "--latex-width", "-5pt"],
      message="-5pt"),
    c("report-compare-bad", ["report", "{run}", "--compare", "gfc"], message="gfc"),
    c("report-compare-unknown-cell", ["report", "{run}", "--compare", "nosuch@10:rff-gauss@10"],
      message="no finished task of nosuch at n = 10"),
    c("report-names-missing-file", ["report", "{run}", "--names", "names.yaml"], message="names.yaml"),
    c("report-names-python-tag", ["report", "DIR", "--names", "names.yaml"],
      {"DIR/": None, "names.yaml": 'a: !!python/object/apply:os.system ["touch pwned"]\n'},
      message="is not plain YAML"),
    c("report-names-malformed", ["report", "{run}", "--names", "a-b-c"], message="--names"),
    c("report-output-is-dir", ["report", "{run}", "--output", "DIR"], {"DIR/": None}, message="is a directory"),
    c("report-output-parent-missing", ["report", "{run}", "--output", "nodir/r.txt"], message="does not exist"),
    c("report-output-inside-file", ["report", "{run}", "--output", "afile/r.txt"], {"afile": "x"},
      message="afile is a file, not a directory"),
    c("report-output-empty", ["report", "{run}", "--output", ""], message="--output is empty"),
    c("report-relative-without-gp", ["report", "{run}", "--relative"], message="--relative"),
    c("report-gp-with-compare", ["report", "{run}", "--layout", "gp", "--compare", "a@1:b@1"], message="--compare"),
    c("report-layout-unknown", ["report", "DIR", "--layout", "wide"], {"DIR/": None}, message="--layout"),
    c("report-protocol-unknown", ["report", "{run}", "--protocol", "cv-o99-i9"], message="cv-o99-i9"),
    c("report-methods-filter-unknown", ["report", "{run}", "--methods", "nosuch"], message="nosuch"),
    c("report-datasets-filter-unknown", ["report", "{run}", "--datasets", "nosuch"], message="nosuch"),
    c("report-all-without-html", ["report", "--all", "--output", "site"], message="--all"),
    c("report-all-with-dirs", ["report", "DIR", "--all", "--format", "html", "--output", "site"], {"DIR/": None},
      message="--all"),
    c("report-all-with-compare", ["report", "--all", "--format", "html", "--output", "site", "--compare", "a@1:b@1"],
      message="--compare"),
    c("report-all-output-is-file", ["report", "--all", "--format", "html", "--output", "afile"], {"afile": "x"},
      message="is a file"),
    c("report-registry-missing", ["report", "DIR", "--registry", "nope.yaml"], {"DIR/": None}, message="nope.yaml"),
    # plot
    c("plot-no-dirs", ["plot"], message="give the results directories"),
    c("plot-dir-missing", ["plot", "nodir"], message="nodir"),
    c("plot-empty-dir", ["plot", "DIR"], {"DIR/": None}, message="DIR"),
    c("plot-kind-unknown", ["plot", "DIR", "--kind", "pie"], {"DIR/": None}, message="--kind"),
    c("plot-format-unknown", ["plot", "DIR", "--format", "svg"], {"DIR/": None}, message="--format"),
    c("plot-alpha-1.5", ["plot", "DIR", "--alpha", "1.5"], {"DIR/": None}, message="1.5 is not"),
    c("plot-output-is-file", ["plot", "{run}", "--output", "afile"], {"afile": "x"}, message="is a file"),
    c("plot-output-parent-missing", ["plot", "{run}", "--output", "nodir/p"], message="does not exist"),
    c("plot-output-empty", ["plot", "{run}", "--output", ""], message="--output is empty"),
    c("plot-cd-test-unknown", ["plot", "DIR", "--cd-test", "ttest"], {"DIR/": None}, message="--cd-test"),
    # check and status
    c("check-no-dirs", ["check"], message="DIRS"),
    c("check-dir-missing", ["check", "nodir", "--spec", "gfc2016-table1"], message="nodir"),
    c("check-bad-results-csv", ["check", "DIR", "--spec", "gfc2016-table1"], {"DIR/results.csv": "a,b\n1,2\n"},
      message="is not a results table"),
    c("status-dir-empty", ["status", "DIR"], {"DIR/": None}, message="no run in"),
    c("status-target-missing", ["status", "nosuch-thing"], message="nosuch-thing"),
    c("status-data-dir-missing", ["status", "gfc2016-table1", "--data-dir", "nodir"], message="nodir"),
    # user methods module:Class
    c("user-module-missing", run_with(methods=["--methods", "nosuchmod_xyz:Est"]), message="nosuchmod_xyz"),
    c("user-class-missing", run_with(methods=["--methods", "usermod:Nope"]), {"usermod.py": USER_MODULE},
      message="Nope"),
    c("user-not-an-estimator", run_with(methods=["--methods", "usermod:NotEstimator"]), {"usermod.py": USER_MODULE},
      message="has no fit method, so it is not an estimator"),
    c("user-not-a-class", run_with(methods=["--methods", "usermod:not_a_class"]), {"usermod.py": USER_MODULE},
      message="not_a_class"),
    c("user-module-syntax-error", run_with(methods=["--methods", "brokenmod:Est"]), {"brokenmod.py": "def (:\n"},
      message="brokenmod"),
    c("user-module-raises-on-import", run_with(methods=["--methods", "raisingmod:Est"]),
      {"raisingmod.py": "raise RuntimeError('import boom')\n"}, message="raisingmod"),
    c("user-bad-path-syntax", run_with(methods=["--methods", "a:b:c"]), message="a:b:c"),
    # baselines and compare
    c("baselines-write-and-check", ["baselines", "--write", "--check"], message="not both"),
    c("baselines-width-neg", ["baselines", "--width", "-1"], message="-1"),
    c("compare-run-no-methods", ["compare", "run", "gfc2016-table1", "--out", "o"], message="--methods"),
    c("compare-run-no-out", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss"], message="--out"),
    c("compare-run-unknown-baseline", ["compare", "run", "nope", "--methods", "rff-gauss", "--out", "o"],
      message="no baseline named 'nope'"),
    c("compare-run-corrupt-parquet", ["compare", "run", "b.parquet", "--methods", "rff-gauss", "--out", "o"],
      {"b.parquet": b"PAR1 this is not parquet"}, message="is not a Parquet file"),
    c("compare-run-empty-parquet", ["compare", "run", "b.parquet", "--methods", "rff-gauss", "--out", "o"],
      {"b.parquet": b""}, message="b.parquet"),
    c("compare-run-parquet-not-baseline", ["compare", "run", "b.parquet", "--methods", "rff-gauss", "--out", "o"],
      {"b.parquet": lambda: parquet_bytes(__import__("pandas").DataFrame({"a": [1, 2]}))},
      message="is not an rfbench baseline"),
    c("compare-run-empty-dir-baseline", ["compare", "run", "DIR", "--methods", "rff-gauss", "--out", "o"],
      {"DIR/": None}, message="no results in"),
    c("compare-run-has-method", ["compare", "run", "gfc2016-table1", "--methods", "gfc", "--out", "o"],
      message="gfc"),
    c("compare-run-dataset-not-in-baseline", ["compare", "run", "gfc2016-table1", "--methods", "usermod:OkRidge",
                                              "--datasets", "nosuch", "--out", "o"], {"usermod.py": USER_MODULE},
      message="nosuch"),
    c("compare-run-features-not-in-baseline", ["compare", "run", "gfc2016-table1", "--methods", "usermod:OkRidge",
                                               "--features", "300", "--out", "o"], {"usermod.py": USER_MODULE},
      message="300"),
    c("compare-run-features-abc", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--features", "abc",
                                   "--out", "o"], message="--features"),
    c("compare-run-folds-bad", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--folds", "5-2",
                                "--out", "o"], message="--folds"),
    c("compare-run-jobs-0", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--jobs", "0",
                             "--out", "o"], message="--jobs"),
    c("compare-run-timeout-abc", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--timeout", "abc",
                                  "--out", "o"], message="not a duration"),
    c("compare-run-out-empty", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--out", ""],
      message="--out"),
    c("compare-run-protocol-unknown", ["compare", "run", "gfc2016-table1", "--methods", "usermod:OkRidge",
                                       "--protocol", "cv-o3-i3", "--out", "o"], {"usermod.py": USER_MODULE},
      message="cv-o3-i3"),
    c("compare-report-no-results", ["compare", "report", "DIR"], {"DIR/": None}, message="DIR"),
    c("compare-report-corrupt-parquet", ["compare", "report", "{run}", "--against", "b.parquet"],
      {"b.parquet": b"not parquet at all"}, message="b.parquet"),
    c("compare-report-unknown-baseline", ["compare", "report", "{run}", "--against", "nope"],
      message="no baseline named 'nope'"),
    c("compare-report-alpha-1", ["compare", "report", "DIR", "--against", "x", "--alpha", "1"], {"DIR/": None},
      message="1 is not a significance level"),
    c("compare-report-label", ["compare", "report", "DIR", "--against", "x", "--label", "a b"], {"DIR/": None},
      message="is not a LaTeX label"),
    c("compare-report-output-is-dir", ["compare", "report", "{run}", "--against", "gfc2016-table1", "--output",
                                       "DIR"], {"DIR/": None}, message="is a directory"),
    c("compare-plot-output-is-file", ["compare", "plot", "{run}", "--against", "gfc2016-table1", "--output",
                                      "afile"], {"afile": "x"}, message="is a file"),
    c("compare-plot-kind-unknown", ["compare", "plot", "DIR", "--kind", "pie"], {"DIR/": None}, message="--kind"),
    # more edges of the options and the files
    c("run-max-samples-abc", run_with("--max-samples", "abc"), message="--max-samples"),
    c("run-inner-folds-abc", run_with("--inner-folds", "abc"), message="--inner-folds"),
    c("run-gpu-slots-abc", run_with("--gpu-slots", "abc"), message="--gpu-slots"),
    c("run-timeout-bad-unit", run_with("--timeout", "1h30x"), message="not a duration"),
    c("run-folds-neg", run_with("--folds", "-1"), message="--folds"),
    c("run-seeds-empty", run_with("--seeds", ","), message="--seeds"),
    c("run-features-space", run_with("--features", " "), message="--features"),
    c("run-outer-folds-more-than-rows", run_with("--outer-folds", "100"), message="rows"),
    c("run-test-size-abc", run_with("--protocol", "splits", "--test-size", "abc"), message="--test-size"),
    c("run-scheduler-malformed", run_with("--backend", "dask", "--scheduler", "notaurl",
                                          small=[s for s in SMALL if s not in ("--jobs", "1")]), message="scheduler"),
    c("csv-classification-many-classes", run_with("--target", "y", "--task", "classification",
                                                  datasets=["--datasets", "d.csv"]), {"d.csv": GOOD_CSV},
      message="classes"),
    c("csv-nan-target", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": "a,y\n" + "".join(f"{i},{'' if i % 2 else i}\n" for i in range(60))}, message="y"),
    c("csv-inf-input", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": "a,y\n" + "".join(f"{'inf' if i == 5 else i},{i % 7}\n" for i in range(60))}, message="d.csv"),
    c("csv-only-target", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": "y\n" + "".join(f"{i % 7}\n" for i in range(60))}, message="has only the target column"),
    c("csv-three-rows", run_with("--target", "y", datasets=["--datasets", "d.csv"]),
      {"d.csv": csv_rows(m=3)}, message="rows"),
    c("tsv-is-binary", run_with("--target", "y", datasets=["--datasets", "d.tsv"]), {"d.tsv": gz(GOOD_CSV)},
      message="d.tsv"),
    c("arff-truncated-gz", run_with("--target", "y", datasets=["--datasets", "d.arff.gz"]),
      {"d.arff.gz": truncated_gz("@relation x\n@attribute a numeric\n@attribute y numeric\n@data\n1,2\n")},
      message="d.arff"),
    c("reg-ds-file-is-directory", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      {**reg_dataset(generator=None, file="d.csv"), "d.csv/": None}, message="d.csv is a directory"),
    c("reg-ds-file-parquet-is-text", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      {**reg_dataset(generator=None, file="d.parquet"), "d.parquet": GOOD_CSV}, message="d.parquet"),
    c("reg-ds-file-gz-truncated", run_with("--registry", "reg.yaml", datasets=["--datasets", "mine"]),
      {**reg_dataset(generator=None, file="d.csv.gz", format="csv"), "d.csv.gz": truncated_gz(GOOD_CSV)},
      message="d.csv.gz"),
    c("masks-data-truncated", TOY_RUN, {**toy(masks_csv(np.arange(60) % 10)), "data.csv.gz": TOY_DATA[:60]},
      message="data.csv.gz"),
    c("report-names-a-list", ["report", "DIR", "--names", "names.yaml"], {"DIR/": None, "names.yaml": "- a\n- b\n"},
      message="names.yaml"),
    c("report-names-missing-yaml", ["report", "DIR", "--names", "nonames.yaml"], {"DIR/": None},
      message="nonames.yaml"),
    c("report-width-abc", ["report", "DIR", "--width", "abc"], {"DIR/": None}, message="abc"),
    c("report-alpha-inf", ["report", "DIR", "--alpha", "inf"], {"DIR/": None}, message="inf is not"),
    c("report-label-empty", ["report", "DIR", "--label", ""], {"DIR/": None}, message="is not a LaTeX label"),
    c("report-latex-width-zero", ["report", "{run}", "--format", "latex", "--latex-width", "0pt"], message="0pt"),
    c("report-html-output-parent-missing", ["report", "{run}", "--format", "html", "--output", "nodir/r.html"],
      message="does not exist"),
    c("plot-protocol-unknown", ["plot", "{run}", "--protocol", "cv-o99-i9", "--output", "p"], message="cv-o99-i9"),
    c("plot-methods-filter-unknown", ["plot", "{run}", "--methods", "nosuch", "--output", "p"], message="nosuch"),
    c("check-protocol-unknown", ["check", "{run}", "--spec", "spec.yaml", "--protocol", "cv-o99-i9"], spec(),
      message="cv-o99-i9"),
    c("status-data-dir-is-file", ["status", "gfc2016-table1", "--data-dir", "afile"], {"afile": "x"},
      message="not a directory"),
    c("compare-run-threads-neg", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--threads", "-1",
                                  "--out", "o"], message="--threads"),
    c("compare-run-registry-missing", ["compare", "run", "gfc2016-table1", "--methods", "rff-gauss", "--registry",
                                       "nope.yaml", "--out", "o"], message="nope.yaml"),
    c("compare-report-format-unknown", ["compare", "report", "DIR", "--format", "pdf"], {"DIR/": None},
      message="--format"),
    c("compare-report-width-neg", ["compare", "report", "DIR", "--width", "-1"], {"DIR/": None}, message="-1"),
    c("compare-plot-alpha-0", ["compare", "plot", "DIR", "--alpha", "0"], {"DIR/": None}, message="0 is not"),
    c("datasets-info-registry-bad", ["datasets", "info", "mine", "--registry", "reg.yaml"], reg_dataset(task="x"),
      message="field 'task'"),
    # the config file (./rfbench.toml, $RFBENCH_CONFIG) and the environment
    c("config-not-toml", ["datasets", "list"], {"rfbench.toml": "data_dirs = [\n"}, message="is not valid TOML"),
    c("config-unknown-key", ["datasets", "list"], {"rfbench.toml": "datadir = 'x'\n"}, message="unknown key"),
    c("config-device-wrong", RUN, {"rfbench.toml": "device = 'gpu'\n"}, message="'device' must be one of"),
    c("config-data-dirs-number", ["datasets", "list"], {"rfbench.toml": "data_dirs = 5\n"}, message="data_dirs"),
    c("config-data-dirs-missing", RUN, {"rfbench.toml": "data_dirs = ['nodir']\n"}, env={"RFBENCH_DATA_DIR": None},
      message="nodir"),
    c("config-registry-missing", ["methods"], {"rfbench.toml": "registry = ['nope.yaml']\n"}, message="nope.yaml"),
    c("config-cache-dir-empty", ["datasets", "list"], {"rfbench.toml": "cache_dir = ''\n"}, message="cache_dir"),
    c("config-env-missing", ["datasets", "list"], env={"RFBENCH_CONFIG": "noconfig.toml"},
      message="RFBENCH_CONFIG=noconfig.toml"),
    c("env-registry-bad-entry", ["methods"], reg_method(placement="gpu"), env={"RFBENCH_REGISTRY": "reg.yaml"},
      message="placement"),
    c("env-jobs-zero", run_with(small=[s for s in SMALL if s not in ("--jobs", "1")]), env={"RFBENCH_JOBS": "0"},
      message="error: --jobs (from $RFBENCH_JOBS) 0 must be at least 1; give the worker processes"),
    # the value typed equals the environment variable's: the message names the option, where it came from
    c("jobs-zero-typed-and-in-env", run_with("--jobs", "0"), env={"RFBENCH_JOBS": "0"},
      message="error: --jobs 0 must be at least 1; give the worker processes"),
    # the command line itself
    c("unknown-command", ["runn"], message="runn"),
    c("unknown-subcommand", ["datasets", "show"], message="show"),
    c("missing-argument", ["datasets", "info"], message="NAME"),
    c("compare-no-subcommand-arg", ["compare", "report"], message="DIRS"),
]


def _setup(where, files) -> None:
    for name, content in files.items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name.endswith("/"):
            path.mkdir(exist_ok=True)
            continue
        if callable(content):
            content = content()
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


def _listing(where) -> dict:
    return {str(p.relative_to(where)): (p.is_dir(), p.stat().st_size if p.is_file() else None)
            for p in where.rglob("*")}


def _shared() -> dict:
    """The files of the checkout's results directories (their top level: tables, indexes) and of the
    shipped baselines, with their times: a refused command line changes none of them."""
    from rfbench import registry

    paths = [*(registry.ROOT / "results").glob("*/*"), *(registry.ROOT / "rfbench" / "_data" / "baselines").glob("*")]
    return {str(p): p.stat().st_mtime_ns for p in paths if p.is_file()}


@pytest.mark.parametrize("argv, files, message, env", CASES)
def test_bad_input_is_one_line_exit_2_and_writes_nothing(argv, files, message, env, tmp_path, tmp_path_factory,
                                                         monkeypatch, capsys):
    work = tmp_path / "work"
    work.mkdir()
    _setup(work, files)
    for key, value in env.items():
        if value is None:
            monkeypatch.delenv(key, raising=False)
        else:
            monkeypatch.setenv(key, value)
    if "{run}" in argv:
        run = str(finished_run(tmp_path_factory))
        argv = [run if a == "{run}" else a for a in argv]
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend(str(work))
    before, shared = _listing(work), _shared()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exc:
        main(list(argv))
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2, (exc.value.code, err[-5:])
    assert len(err) == 1 and err[0].startswith("rfbench: error: "), err[-5:]
    assert message in err[0], err[0]
    assert _listing(work) == before, sorted(set(_listing(work)) - set(before))
    assert not (work / "pwned").exists()
    assert _shared() == shared


# -- a task at fault: its error record, and the run goes on ---------------------------------------

#: user methods at fault in their tasks, with what their error records say
AT_FAULT = {"RaisesInFit": "boom in fit", "RaisesInInit": "boom in __init__",
            "NaNPredictions": "nan",
            "WrongShape": "predict returned 1 value(s)"}


def test_a_task_at_fault_is_its_error_record_and_the_run_goes_on(tmp_path, monkeypatch, capsys):
    """One run of every faulty method beside rff-gauss (one run: a worker starts once): each faulty
    task is an error record saying why, rff-gauss's tasks are done, no claim is left."""
    (tmp_path / "usermod.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    methods = ",".join([*(f"usermod:{cls}" for cls in AT_FAULT), "rff-gauss"])
    try:
        main(run_with(methods=["--methods", methods]))
    except SystemExit as exc:
        assert exc.code in (0, None), capsys.readouterr().err
    records = [json.loads(p.read_text()) for p in (tmp_path / "o" / "records").glob("*.json")]
    for cls, message in AT_FAULT.items():
        mine = [r for r in records if r["method"] == f"usermod.{cls}"]
        assert len(mine) == 2 and all(r["status"] == "error" for r in mine), (cls, [r["status"] for r in mine])
        assert all(message.lower() in r["message"].lower() for r in mine), (cls, [r["message"] for r in mine])
    theirs = [r for r in records if r["method"] == "rff-gauss"]
    assert len(theirs) == 2 and all(r["status"] == "done" for r in theirs)
    assert not list((tmp_path / "o" / "records").glob("*.claim"))
