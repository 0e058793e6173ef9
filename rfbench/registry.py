"""Registry: datasets.yaml, methods.yaml and bench/*.yaml read into small validated objects.

A malformed entry fails once, before any work starts, with one line naming the file, the entry
and the field.
"""

from __future__ import annotations

import importlib
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from rfbench.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
TASKS = ("regression", "classification")
# dataset and method names become file names (records/<dataset>__<method>__….json, folds/<dataset>.csv,
# the download cache): letters, digits, '-', '_' and '.', not leading, never '..'
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_ESTIMATOR = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


def check_name(file: Path, name, kind: str) -> str:
    """A registry entry's name, refused unless it is a safe file-name component."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise UsageError(f"{file.name}: {kind} name {name!r} is not allowed: use letters, digits, '-', '_' "
                         "and '.' (not first, never '..'), since it becomes part of file names")
    return name


def _inside_data_dir(value) -> bool:
    """A mirror path relative to the data directory that cannot leave it (no absolute path, no '..')."""
    if not isinstance(value, str) or not value.strip():
        return False
    parts = re.split(r"[/\\]", value)
    return not (value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", value) or ".." in parts)


def datasets_file() -> Path:
    return Path(os.environ.get("RFBENCH_DATASETS_YAML", ROOT / "datasets.yaml"))


def methods_file() -> Path:
    return Path(os.environ.get("RFBENCH_METHODS_YAML", ROOT / "methods.yaml"))


def bench_dir() -> Path:
    return ROOT / "bench"


@dataclass(frozen=True)
class Mirror:
    file: str
    sha256: str
    format: str
    sep: str | None = None                     # csv field separator (default: comma)
    # further files of the same layout whose rows follow the first file's (e.g. a train and a
    # validation file that the paper used together): ((file, sha256), ...)
    append: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> tuple[tuple[str, str], ...]:
        return ((self.file, self.sha256), *self.append)


@dataclass(frozen=True)
class Dataset:
    name: str
    task: str
    suites: tuple[str, ...]
    shape: tuple[int, int]
    target: str
    paper: str = ""
    mirror: Mirror | None = None
    openml_id: int | None = None
    openml_target: str | None = None
    url: str | None = None
    generator: str | None = None
    drop: tuple[str, ...] = ()
    drop_constant: bool = False
    download_format: str | None = None
    download_member: str | None = None
    negative: tuple[str, ...] = ()      # classification: source labels mapped to −1
    positive: tuple[str, ...] = ()      # ... and to +1 (GBRFF paper Table 1)
    one_hot: bool = False               # one-hot encode categorical inputs
    holdout: tuple[int, int] | None = None  # (n_train, n_test) of the paper's single split
    preprocess: str | None = None       # name of a dataset-specific reader in rfbench.data.prepare
    notes: str = ""

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def d(self) -> int:
        return self.shape[1]

    def how_to_supply(self) -> str:
        hints = []
        if self.mirror:
            hints.append(f"put {self.mirror.file} under RFBENCH_DATA_DIR (or --data-dir)")
        if self.openml_id:
            hints.append(f"fetch OpenML id {self.openml_id} with network (rfbench datasets fetch {self.name})")
        elif self.url:
            hints.append(f"download {self.url}" + (" (rfbench datasets fetch does it)" if self.download_format else ""))
        return "; or ".join(hints) if hints else "no source is registered"


@dataclass(frozen=True)
class Method:
    name: str
    estimators: dict  # task -> "module:Class"
    params: dict = field(default_factory=dict)
    description: str = ""
    paper: str = ""

    def supports(self, task: str) -> bool:
        return task in self.estimators or "regression" in self.estimators

    def estimator_class(self, task: str):
        """The estimator class for a task (a regressor also serves classification via ±1 + sign)."""
        if not self.supports(task):
            raise UsageError(f"method '{self.name}' has no estimator for {task} datasets")
        return self._resolve(self.estimators.get(task) or self.estimators["regression"])

    def _resolve(self, path: str):
        """``module:Class`` → the class; one line naming methods.yaml's entry when it cannot be."""
        module, _, cls = path.partition(":")
        where = f"{methods_file().name}: entry '{self.name}': estimator {path!r}"
        try:
            mod = importlib.import_module(module)
        except ImportError as exc:
            raise UsageError(f"{where}: cannot import module '{module}' ({type(exc).__name__}: {exc})") from None
        found = getattr(mod, cls, None)
        if not isinstance(found, type):
            raise UsageError(f"{where}: module '{module}' has no class '{cls}'")
        return found

    def check(self) -> Method:
        """Import every estimator class of the method now (before any task runs)."""
        for path in self.estimators.values():
            self._resolve(path)
        return self

    def is_native(self, task: str) -> bool:
        return task in self.estimators


def _fail(file: Path, entry: str, msg: str):
    raise UsageError(f"{file.name}: entry '{entry}': {msg}")


def _load_yaml(path: Path) -> dict:
    if not path.is_file():
        raise UsageError(f"registry file not found: {path}")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise UsageError(f"{path.name} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path.name}: top level must be a mapping")
    return data


def _parse_dataset(path: Path, name: str, e) -> Dataset:
    if not isinstance(e, dict):
        _fail(path, name, "must be a mapping")
    for key in ("task", "suites", "shape", "target"):
        if key not in e:
            _fail(path, name, f"missing field '{key}'")
    if e["task"] not in TASKS:
        _fail(path, name, f"field 'task' must be one of {TASKS}, got {e['task']!r}")
    shape = e["shape"]
    if not (isinstance(shape, list) and len(shape) == 2 and all(isinstance(v, int) and v > 0 for v in shape)):
        _fail(path, name, f"field 'shape' must be [rows, inputs] of positive ints, got {shape!r}")
    if not isinstance(e["suites"], list):
        _fail(path, name, "field 'suites' must be a list")
    mirror = None
    if "mirror" in e:
        mi = e["mirror"]
        if not isinstance(mi, dict) or not {"file", "sha256", "format"} <= set(mi):
            _fail(path, name, "field 'mirror' needs file, sha256 and format")
        append = []
        for extra in mi.get("append") or []:
            if not isinstance(extra, dict) or not {"file", "sha256"} <= set(extra):
                _fail(path, name, "field 'mirror.append' must be a list of {file, sha256}")
            append.append((str(extra["file"]), str(extra["sha256"])))
        for f in [mi["file"], *(f for f, _ in append)]:
            if not _inside_data_dir(f):
                _fail(path, name, f"field 'mirror.file' must be a path relative to the data directory that stays "
                      f"inside it (no absolute path, no '..'), got {f!r}")
        for sha in [str(mi["sha256"]), *(s for _, s in append)]:
            if len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha):
                _fail(path, name, "field 'mirror.sha256' must be 64 lowercase hex digits")
        sha = str(mi["sha256"])
        if mi["format"] not in ("arff", "csv", "csv-noheader", "text", "mat"):
            _fail(path, name, "field 'mirror.format' must be arff, csv, csv-noheader, text or mat, "
                  f"got {mi['format']!r}")
        mirror = Mirror(str(mi["file"]), sha, mi["format"], mi.get("sep"), tuple(append))
    oml = e.get("openml") or {}
    if oml and not isinstance(oml.get("id"), int):
        _fail(path, name, "field 'openml.id' must be an integer")
    labels = e.get("labels") or {}
    if e["task"] == "classification":
        if not (isinstance(labels, dict) and labels.get("negative") and labels.get("positive")):
            _fail(path, name, "classification needs 'labels: {negative: [...], positive: [...]}'")
    dl = e.get("download") or {}
    if dl and (not e.get("url") or dl.get("format") not in ("arff", "csv", "whitespace")):
        _fail(path, name, "field 'download' needs a 'url' and format arff, csv or whitespace")
    if not (mirror or oml or e.get("url") or e.get("generator")):
        _fail(path, name, "needs at least one source: mirror, openml, url or generator")
    if e.get("generator") is not None:
        from rfbench.data.generators import GENERATORS

        if e["generator"] not in GENERATORS:
            _fail(path, name, f"field 'generator' must be one of {', '.join(sorted(GENERATORS))}, "
                  f"got {e['generator']!r}")
    return Dataset(
        name=name, task=e["task"], suites=tuple(e["suites"]), shape=(shape[0], shape[1]),
        target=str(e["target"]), paper=str(e.get("paper", name)), mirror=mirror,
        openml_id=oml.get("id"), openml_target=oml.get("target"), url=e.get("url"),
        generator=e.get("generator"), drop=tuple(e.get("drop", ())),
        drop_constant=bool(e.get("drop_constant", False)), download_format=dl.get("format"),
        download_member=dl.get("member"),
        negative=tuple(str(v) for v in labels.get("negative", ())),
        positive=tuple(str(v) for v in labels.get("positive", ())),
        one_hot=bool(e.get("one_hot", False)), preprocess=e.get("preprocess"), holdout=_holdout(path, name, e.get("holdout")),
        notes=str(e.get("notes", "")),
    )


def _holdout(path: Path, name: str, value) -> tuple[int, int] | None:
    if value is None:
        return None
    if not (isinstance(value, dict) and all(isinstance(value.get(k), int) and value[k] > 0 for k in ("train", "test"))):
        _fail(path, name, "field 'holdout' must be {train: rows, test: rows}")
    return value["train"], value["test"]


@lru_cache(maxsize=4)
def _datasets(path: Path) -> tuple[dict[str, Dataset], dict[str, str]]:
    data = _load_yaml(path)
    entries = data.get("datasets")
    if not isinstance(entries, dict) or not entries:
        raise UsageError(f"{path.name}: needs a non-empty 'datasets' mapping")
    datasets = {check_name(path, name, "dataset"): _parse_dataset(path, name, e) for name, e in entries.items()}
    suites = dict(data.get("suites") or {})
    for ds in datasets.values():
        for s in ds.suites:
            if s not in suites:
                _fail(path, ds.name, f"suite '{s}' is not declared under 'suites'")
    return datasets, suites


def datasets() -> dict[str, Dataset]:
    return _datasets(datasets_file())[0]


def suites() -> dict[str, str]:
    return _datasets(datasets_file())[1]


def get_dataset(name: str) -> Dataset:
    all_ds = datasets()
    if name not in all_ds:
        raise UsageError(f"unknown dataset '{name}'; known: {', '.join(sorted(all_ds))}")
    return all_ds[name]


def suite_datasets(suite: str) -> list[Dataset]:
    if suite not in suites():
        raise UsageError(f"unknown suite '{suite}'; known: {', '.join(sorted(suites()))}")
    return [d for d in datasets().values() if suite in d.suites]


@lru_cache(maxsize=4)
def _methods(path: Path) -> dict[str, Method]:
    data = _load_yaml(path)
    out = {}
    for name, e in data.items():
        check_name(path, name, "method")
        if not isinstance(e, dict) or "estimator" not in e:
            _fail(path, name, "missing field 'estimator'")
        est = e["estimator"]
        if isinstance(est, str):
            kind = e.get("kind", "regressor")
            est = {"regression": est} if kind == "regressor" else {"classification": est}
        if not isinstance(est, dict) or not set(est) <= set(TASKS):
            _fail(path, name, "field 'estimator' must be 'module:Class' or a task -> 'module:Class' map")
        for target in est.values():
            if not isinstance(target, str) or not _ESTIMATOR.fullmatch(target):
                _fail(path, name, f"field 'estimator' must name 'package.module:Class', got {target!r}")
        if not isinstance(e.get("params") or {}, dict):
            _fail(path, name, "field 'params' must be a mapping of constructor arguments")
        out[name] = Method(name, dict(est), dict(e.get("params") or {}),
                           str(e.get("description", "")), str(e.get("paper", "")))
    return out


def methods() -> dict[str, Method]:
    return _methods(methods_file())


def get_method(name: str) -> Method:
    all_m = methods()
    if name not in all_m:
        raise UsageError(f"unknown method '{name}'; known: {', '.join(sorted(all_m))}")
    return all_m[name]
