"""Registry: datasets.yaml, methods.yaml and bench/*.yaml read into small validated objects, extended
by user registries, installed plugins and datasets and methods named on the command line.

The built-in files are package data (``rfbench/_data/``, read through importlib.resources); in a
development checkout those are symlinks to the top-level datasets.yaml, methods.yaml and bench/, which
stay the source of truth.

Extensions (a name already registered is an error, never a silent override):

* user registry files (``--registry FILE``, ``$RFBENCH_REGISTRY``, config key ``registry``): YAML with
  ``methods:``, ``datasets:`` and ``suites:`` sections (the schema of methods.yaml / datasets.yaml,
  with relaxed dataset fields: see README "Bring your own method and data");
* installed plugins: entry points of the group ``rfbench.methods`` (``name = "package.module:Class"``);
* the command line: ``--methods package.module:Class`` and ``--datasets file.csv`` / ``openml:ID``
  (:meth:`Registry.with_command_line`, :func:`resolve_method_names`,
  :func:`rfbench.data.loader.resolve_dataset_names`).

The merged result is one immutable value, a :class:`Registry`, built once per command by
:func:`load` (the settings ``$RFBENCH_REGISTRY`` and the config's ``registry`` are read there, and
nowhere else) and passed explicitly to whatever looks a name up: the runner, its tasks, and the
worker processes, which get it as an argument (it pickles). Nothing here keeps state between
calls: building a registry again reads the files again.

A malformed entry fails once, before any work starts, with one line naming the file, the entry
and the field.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import importlib.util
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from rfbench import config
from rfbench.contract import conforming, is_classifier_class, unknown_arguments
from rfbench.errors import UsageError
from rfbench.schema import NUMBER, TEXT, Field, check, refuse

PACKAGE_DIR = Path(__file__).resolve().parent
ROOT = PACKAGE_DIR.parent        # the checkout, in a development tree
TASKS = ("regression", "classification", "multiclass")
#: how a protocol standardises the inputs on the training part (datasets.yaml scale_inputs)
SCALE_INPUTS = ("columns", "joint")
ENTRY_POINT_GROUP = "rfbench.methods"
#: how a method's tasks use the cores when --jobs is left out (Method.placement)
PLACEMENTS = ("processes", "threads")
#: libyaml's safe loader where PyYAML was built with it: the same documents, parsed ~8x faster (the
#: registries are read by every command and every worker process)
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: the origin of the datasets and methods named on the command line
COMMAND_LINE = "command line"
# dataset and method names become file names (records/<dataset>__<method>__….json, folds/<dataset>.csv,
# the download cache): letters, digits, '-', '_' and '.', not leading, never '..'
_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*")
_ESTIMATOR = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")
FILE_FORMATS = {".csv": "csv", ".tsv": "tsv", ".arff": "arff", ".parquet": "parquet", ".pq": "parquet"}
#: the values of a dataset's ``generator`` field: the functions of rfbench.data.generators.GENERATORS
#: (named here, so that the registry, below the data layer, does not import it)
GENERATOR_NAMES = ("breiman", "friedman")


def check_name(file: Path, name, kind: str) -> str:
    """A registry entry's name, refused unless it is a safe file-name component."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise UsageError(f"{Path(file).name}: {kind} name {name!r} is not allowed: use letters, digits, '-', '_' "
                         "and '.' (not first, never '..'), since it becomes part of file names")
    return name


def _inside_data_dir(value) -> bool:
    """A mirror path relative to the data directory that cannot leave it (no absolute path, no '..')."""
    if not isinstance(value, str) or not value.strip():
        return False
    parts = re.split(r"[/\\]", value)
    return not (value.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:", value) or ".." in parts)


# -- where the built-in files are ----------------------------------------------------------------

def _resource(*parts: str) -> Path:
    """A packaged file under rfbench/_data/, symlinks resolved (in a checkout: the top-level file)."""
    return Path(str(importlib.resources.files("rfbench").joinpath("_data", *parts))).resolve()


def in_checkout() -> bool:
    """Whether rfbench runs from a development checkout (its package directory beside pyproject.toml
    and bench/), rather than from an installed wheel."""
    return (ROOT / "pyproject.toml").is_file() and (ROOT / "bench").is_dir()


def is_packaged(path: Path) -> bool:
    """Whether a file lies inside the installed package (a packaged spec of a wheel install)."""
    try:
        Path(path).resolve().relative_to(PACKAGE_DIR)
    except ValueError:
        return False
    return True


def datasets_file() -> Path:
    return Path(os.environ.get("RFBENCH_DATASETS_YAML") or _resource("datasets.yaml"))


def methods_file() -> Path:
    return Path(os.environ.get("RFBENCH_METHODS_YAML") or _resource("methods.yaml"))


def bench_dir() -> Path:
    return _resource("bench")


def packaged_published_dir() -> Path:
    """The papers' published tables that ship with the package (facts: CSVs + provenance notes)."""
    return _resource("published")


# -- entries ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Mirror:
    file: str
    sha256: str                                # "" (user entries only): not checked
    format: str
    sep: str | None = None                     # csv field separator (default: comma)
    # further files of the same layout whose rows follow the first file's (e.g. a train and a
    # validation file that the paper used together): ((file, sha256), ...)
    append: tuple[tuple[str, str], ...] = ()

    @property
    def files(self) -> tuple[tuple[str, str], ...]:
        return ((self.file, self.sha256), *self.append)


@dataclass(frozen=True)
class SplitMasks:
    """A dataset's published train/test splits (``splits: {file, sha256}``): a gzipped or plain CSV
    with no header, one 0/1 column per split, one line per data row; row i is a test row of split j
    where column j is 1 (each row a test row of exactly one split). Read by
    :func:`rfbench.data.loader.load_split_masks` for the ``published`` protocol."""
    file: str                                  # relative to the data directory (a user's: absolute)
    sha256: str                                # "" (user entries only): not checked


@dataclass(frozen=True)
class Dataset:
    name: str
    task: str
    suites: tuple[str, ...]
    shape: tuple[int, int]              # (0, 0): not declared (user data), not checked
    target: str                         # "" (OpenML user data): the dataset's default target
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
    positive: tuple[str, ...] = ()      # ... and to +1 (GBRFF paper Table 1); user data: inferred
    one_hot: bool = False               # one-hot encode categorical inputs
    # (n_train, n_test) of the paper's split: a protocol.HoldoutSizes, whose ``fixed`` flag marks the
    # data files' own split (``holdout: {train, test, split: files}``) against a seeded one
    holdout: tuple[int, int] | None = None
    preprocess: str | None = None       # name of a dataset-specific reader in rfbench.data.prepare
    # how the protocol standardises the inputs on the training part: "columns" (each input its own
    # mean and std) or "joint" (one mean and std over every entry: MNIST's pixels scaled together)
    scale_inputs: str = "columns"
    notes: str = ""
    file: str | None = None             # user data: an absolute file path (csv, tsv, arff, parquet)
    file_format: str | None = None
    sep: str | None = None
    sha256: str = ""                    # of ``file``; "" : not checked
    origin: str = "built-in"            # built-in | the user registry file | command line
    unavailable: str | None = None      # command line: why the data could not be obtained
    # the published fixed train/test splits (``--protocol published``): the split masks' file
    splits: SplitMasks | None = None
    # other names the command line accepts for this dataset (a paper's name where it differs)
    aliases: tuple[str, ...] = ()

    @property
    def m(self) -> int:
        return self.shape[0]

    @property
    def d(self) -> int:
        return self.shape[1]

    @property
    def user(self) -> bool:
        return self.origin != "built-in"

    def supply_hints(self) -> dict[str, str]:
        """Source kind (file, mirror, openml, url) → how a user supplies the data from it: the one
        wording of the refusals (:meth:`how_to_supply`) and of ``rfbench datasets info``."""
        hints = {}
        if self.file:
            hints["file"] = f"restore the file {self.file}"
        if self.mirror:
            hints["mirror"] = f"put {self.mirror.file} under RFBENCH_DATA_DIR (or --data-dir)"
        if self.openml_id:
            hints["openml"] = f"fetch OpenML id {self.openml_id} with network (rfbench datasets fetch {self.name})"
        elif self.url:
            hints["url"] = f"download {self.url}" + (" (rfbench datasets fetch does it)" if self.download_format else "")
        return hints

    def how_to_supply(self) -> str:
        return "; or ".join(self.supply_hints().values()) or "no source is registered"


@dataclass(frozen=True)
class Method:
    name: str
    estimators: dict  # task -> "module:Class"
    params: dict = field(default_factory=dict)
    description: str = ""
    paper: str = ""
    grid: dict | list | None = None     # user methods: GridSearchCV grid over the inner folds
    # dataset → constructor parameters on that dataset only, over ``params`` (a paper's per-dataset
    # settings, e.g. the EERF paper's M₀, N₀/N and feature map of Tables 3-5)
    per_dataset: dict = field(default_factory=dict)
    origin: str = "built-in"            # built-in | user registry file | entry point … | command line
    sys_path: tuple[str, ...] = ()      # directories the estimator's module is imported from
    # the faster use of the cores for this method's tasks (bench/perf/thread_placement.py): one worker
    # process per core with one thread each ("processes") or one worker with every core ("threads")
    placement: str = "processes"
    # declared growth of a task's time, t ∝ rows^a · inputs^b ({"rows": a, "inputs": b}), for
    # methods whose cost the small finished datasets cannot reveal (kernel SVMs: rows²), with
    # "rows_cap" where it stops growing with rows (gp-sod fits N rows of any larger set), and
    # "budget_capped_at_rows" (1.0) where n is capped at the training rows (svgp's M inducing points):
    # a set with fewer rows than n shows another budget's time; used by `rfbench status` to estimate
    # cells with no finished task; "budget_free" (1.0) where one fit serves every budget whatever n
    cost_scaling: dict = field(default_factory=dict)
    # whether the BLAS thread count changes its numbers (its reductions are not thread-invariant:
    # bench/perf/thread_invariance.py measures every method); a resume with another thread count
    # into the same results is then refused instead of mixing both (rfbench.execution.runner)
    thread_sensitive: bool = False
    # an optional package the estimators need ({"package": import name, "extra": rfbench's extra that
    # installs it, or absent}): where it is not importable the method is refused in one line
    # (:meth:`missing`) before its module is imported
    requires: dict = field(default_factory=dict)

    def missing(self) -> str | None:
        """The one line refusing the method where its required package is not installed, else None."""
        package = self.requires.get("package")
        if not package or importlib.util.find_spec(package) is not None:
            return None
        extra = self.requires.get("extra")
        # rfbench is installed from its checkout or wheel, not the package index: the package itself
        how = f"pip install {package}" + (f"; in rfbench's checkout: pip install -e '.[{extra}]'" if extra else "")
        return f"method '{self.name}' needs the package '{package}', which is not installed here ({how})"

    def supports(self, task: str) -> bool:
        """A native estimator for the task, or a regressor (fitted to ±1 labels on two classes);
        several classes need a native (multiclass) estimator."""
        return task in self.estimators or ("regression" in self.estimators and task != "multiclass")

    def params_for(self, dataset: str) -> dict:
        """The constructor parameters on ``dataset``: ``params``, then its ``per_dataset`` entry."""
        return {**self.params, **self.per_dataset.get(dataset, {})}

    def estimator_class(self, task: str):
        """The estimator class for a task (a regressor also serves classification via ±1 + sign).

        A user estimator that does not take rfbench's constructor arguments (n_features, cv,
        random_state, n_jobs), or that has a ``grid``, is wrapped so that it does
        (:func:`rfbench.contract.conforming`)."""
        if not self.supports(task):
            raise UsageError(f"method '{self.name}' has no estimator for {task} datasets")
        cls = self._resolve(self.estimators.get(task) or self.estimators["regression"])
        return cls if self.origin == "built-in" else conforming(cls, self.grid)

    def _where(self, path: str) -> str:
        source = methods_file().name if self.origin == "built-in" else self.origin
        return f"{source}: entry '{self.name}': estimator {path!r}"

    def _resolve(self, path: str):
        """``module:Class`` → the class; one line naming the registry entry when it cannot be, or the
        method's required package when that is not installed."""
        line = self.missing()
        if line:
            raise UsageError(line)
        return import_estimator(path, self._where(path), self.sys_path)

    def check(self) -> Method:
        """Import every estimator class of the method now (before any task runs), and check a user
        method's params and grid against its constructor."""
        for path in self.estimators.values():
            cls = self._resolve(path)
            if self.origin != "built-in":
                _check_arguments(cls, self.params, self.grid, self._where(path))
                for overrides in self.per_dataset.values():
                    _check_arguments(cls, overrides, None, self._where(path))
        return self

    def is_native(self, task: str) -> bool:
        return task in self.estimators


def _check_arguments(cls, params: dict, grid, where: str) -> None:
    unknown, names = unknown_arguments(cls, params, grid)
    if unknown:
        raise UsageError(f"{where}: {', '.join(unknown)} {'is not a parameter' if len(unknown) == 1 else 'are not parameters'} "
                         f"of {cls.__name__} (it takes: {', '.join(sorted(names)) or 'none'})")


def import_estimator(path: str, where: str, sys_path=()) -> type:
    module, _, cls = path.partition(":")
    for d in reversed(sys_path):
        if d not in sys.path:
            sys.path.insert(0, d)
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name if isinstance(exc, ModuleNotFoundError) else None
        if missing and not (module == missing or module.startswith(missing + ".")):
            # the module is there, a package it imports is not (an optional dependency of the method)
            raise UsageError(f"{where}: module '{module}' needs '{missing}', which is not installed here "
                             f"({type(exc).__name__}: {exc}); install it, or leave the method out") from None
        raise UsageError(f"{where}: cannot import module '{module}' ({type(exc).__name__}: {exc})") from None
    except Exception as exc:  # noqa: BLE001 - a user module that fails on import: one line, no traceback
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise UsageError(f"{where}: importing module '{module}' failed ({type(exc).__name__}: {first})") from None
    found = getattr(mod, cls, None)
    if not isinstance(found, type):
        raise UsageError(f"{where}: module '{module}' has no class '{cls}'")
    if not callable(getattr(found, "fit", None)):   # else every task of it would be an error record saying so
        raise UsageError(f"{where}: class '{cls}' has no fit method, so it is not an estimator (scikit-learn's API: "
                         "fit(X, y), then predict(X))")
    return found


# -- parsing ------------------------------------------------------------------------------------

def _fail(file: Path, entry: str, msg: str):
    raise UsageError(f"{Path(file).name}: entry '{entry}': {msg}")


def load_yaml(path: Path) -> dict:
    """A YAML file whose top level is a mapping (registries, user registries, specs), or one line
    saying what is wrong with it."""
    if not path.is_file():
        raise UsageError(f"registry file not found: {path}")
    try:
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=SAFE_LOADER)
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x}); "
                         "save it as UTF-8") from None
    except yaml.YAMLError as exc:
        raise UsageError(f"{path.name} is not valid YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise UsageError(f"{path.name}: top level must be a mapping")
    return data


def _sha256_field(path: Path, name: str, value, field: str) -> str:
    """A sha256 field as written ("" when absent), refused when YAML read it as a number: an unquoted
    all-digit digest is an int that has lost its leading zeros (or been read as octal), and
    ``or ""`` would turn a 0 into "no checksum"."""
    if value is None or value == "":
        return ""
    if not isinstance(value, str):
        _fail(path, name, f"field '{field}' was read as a number ({type(value).__name__}), not text (YAML reads an "
              f"unquoted all-digit value as a number); quote it: {field.rsplit('.', 1)[-1]}: \"<64 hex digits>\"")
    return value


HEX64 = "[0-9a-f]{64}"
MIRROR_FORMATS = ("arff", "csv", "csv-noheader", "text", "mat", "idx")
USER_MIRROR_FORMATS = (*MIRROR_FORMATS, "tsv", "parquet")
USER_FILE_FORMATS = ("csv", "tsv", "csv-noheader", "arff", "parquet")
INSIDE_DATA_DIR = "a path relative to the data directory that stays inside it (no absolute path, no '..')"
USER_PATH = "a path (relative to this registry file or absolute)"


def _sha256(required: bool) -> Field:
    """A checksum: 64 lowercase hex digits; a user entry's may be left out (the file is not checked)."""
    return Field(TEXT, required=required, pattern=HEX64 if required else f"(?:{HEX64})?",
                 expect="64 lowercase hex digits")


def dataset_schema(user: bool) -> dict[str, Field]:
    """The declared fields of a dataset entry: of datasets.yaml, or (``user``) of a user registry or
    the command line, whose checksums are optional and which may name a data ``file``. Fields that
    depend on each other (a source, labels, a generator's shape) are checked by parse_dataset."""
    digest = _sha256(required=not user)
    mirror = {"file": Field(TEXT, required=True), "sha256": digest,
              "format": Field(required=True, choices=USER_MIRROR_FORMATS if user else MIRROR_FORMATS),
              "sep": Field(TEXT),
              "append": Field(items=(dict,), expect="a list of {file, sha256}")}
    return {
        "task": Field(required=True, choices=TASKS),
        "suites": Field(required=True, items=TEXT),
        "shape": Field(required=not user, items=(int,), length=2, low=1, expect="[rows, inputs] of positive ints"),
        "target": Field(required=True),
        "mirror": Field((dict,), fields=mirror, closed=False),
        "openml": Field((dict,), fields={"id": Field((int,), required=True), "target": Field(TEXT)}, closed=False),
        "url": Field(TEXT),
        "download": Field((dict,), fields={"format": Field(required=True, choices=("arff", "csv", "whitespace")),
                                           "member": Field(TEXT)}, closed=False),
        "generator": Field(choices=tuple(sorted(GENERATOR_NAMES))),
        "labels": Field((dict,), fields={"negative": Field((list,)), "positive": Field((list,))}, closed=False),
        "holdout": Field((dict,), fields={"train": Field((int,), required=True, low=1),
                                 "test": Field((int,), required=True, low=1),
                                 "split": Field(choices=("random", "files"), expect="random or files")}),
        "splits": Field((dict,), fields={"file": Field(TEXT, required=True, pattern=r".*\S.*",
                                              expect=USER_PATH if user else INSIDE_DATA_DIR),
                                "sha256": digest}),
        "scale_inputs": Field(choices=SCALE_INPUTS),
        "aliases": Field(items=TEXT, expect="a list of names"),
        "drop": Field((list,)), "drop_constant": Field((bool,)), "one_hot": Field((bool,)),
        "preprocess": Field(TEXT),
        **({"file": Field(TEXT, pattern=r".*\S.*", expect=USER_PATH), "format": Field(choices=USER_FILE_FORMATS),
            "sha256": digest, "sep": Field(TEXT)} if user else {}),
    }


DATASET_SCHEMA, USER_DATASET_SCHEMA = dataset_schema(user=False), dataset_schema(user=True)


def _digests(e: dict):
    """(field, value) of each sha256 a dataset entry gives: refused first when YAML read one as a number."""
    mirror = e.get("mirror") if isinstance(e.get("mirror"), dict) else {}
    splits = e.get("splits") if isinstance(e.get("splits"), dict) else {}
    appended = [a for a in mirror.get("append") or [] if isinstance(a, dict)] if isinstance(mirror.get("append"), list) else []
    yield "sha256", e.get("sha256")
    yield "mirror.sha256", mirror.get("sha256")
    yield from (("mirror.append.sha256", a.get("sha256")) for a in appended)
    yield "splits.sha256", splits.get("sha256")


def parse_dataset(path: Path, name: str, e, user: bool = False) -> Dataset:
    """One dataset entry (of datasets.yaml, a user registry file or the command line, ``path`` naming
    where it comes from) as a validated Dataset, or a one-line UsageError naming the entry and the
    field. ``user``: an entry of a user registry (relative ``file`` paths are relative to ``path``'s
    directory; task defaults to regression, suites to none, shape and the sha256 checksums are
    optional, classification labels are inferred when not given)."""
    where = f"{Path(path).name}: entry '{name}'"
    if not isinstance(e, dict):
        _fail(path, name, "must be a mapping")
    if user:
        e = {"task": "regression", "suites": [], **e}
        if "target" not in e and (e.get("openml") or str(e.get("file") or "").lower().endswith(".arff")):
            e["target"] = (e.get("openml") or {}).get("target") or ""
    for field_name, value in _digests(e):
        _sha256_field(path, name, value, field_name)
    # a user's shape may be [0, 0]: not declared, not checked
    check(e if not (user and e.get("shape") == [0, 0]) else {**e, "shape": None},
          USER_DATASET_SCHEMA if user else DATASET_SCHEMA, where, closed=False)
    shape = e.get("shape") or [0, 0]
    mirror = None
    if e.get("mirror") is not None:
        mi = e["mirror"]
        append = []
        for extra in mi.get("append") or []:
            check(extra, {"file": Field(TEXT, required=True), "sha256": _sha256(required=not user)}, where,
                  prefix="mirror.append.", closed=False)
            append.append((str(extra["file"]), str(extra.get("sha256") or "")))
        for f in [mi["file"], *(f for f, _ in append)]:
            if not _inside_data_dir(f):
                raise refuse(where, "mirror.file", INSIDE_DATA_DIR, f)
        if mi["format"] == "idx" and not e.get("preprocess"):
            _fail(path, name, "a mirror of format idx (MNIST's binary files) needs a 'preprocess' reader")
        mirror = Mirror(str(mi["file"]), str(mi.get("sha256") or ""), mi["format"], mi.get("sep"), tuple(append))
    file = file_format = None
    if user and e.get("file") is not None:
        file = str((Path(path).parent / Path(e["file"]).expanduser()).absolute())
        file_format = e.get("format") or FILE_FORMATS.get(Path(file).suffix.lower())
        if file_format not in USER_FILE_FORMATS:
            raise refuse(where, "format", f"one of {', '.join(USER_FILE_FORMATS)} (default: from the file's "
                         "extension)", file_format)
    oml = e.get("openml") or {}
    labels = e.get("labels") or {}
    if e["task"] == "classification" and not (user and not labels):
        if not (labels.get("negative") and labels.get("positive")):
            _fail(path, name, "classification needs 'labels: {negative: [...], positive: [...]}'")
    dl = e.get("download") or {}
    if dl and not e.get("url"):
        _fail(path, name, "field 'download' needs a 'url' and format arff, csv or whitespace")
    if not (mirror or oml or e.get("url") or e.get("generator") or file or e.get("unavailable")):
        _fail(path, name, "needs at least one source: " + ("file, " if user else "") + "mirror, openml, url or generator")
    if e.get("generator") is not None and shape == [0, 0]:
        _fail(path, name, "a generator needs field 'shape' (its rows and inputs)")
    return Dataset(
        name=name, task=e["task"], suites=tuple(e["suites"]), shape=(shape[0], shape[1]),
        target=str(e["target"]), paper=str(e.get("paper", name)), mirror=mirror,
        openml_id=oml.get("id"), openml_target=oml.get("target"), url=e.get("url"),
        generator=e.get("generator"), drop=tuple(e.get("drop", ())),
        drop_constant=bool(e.get("drop_constant", False)), download_format=dl.get("format"),
        download_member=dl.get("member"),
        negative=tuple(str(v) for v in labels.get("negative", ())),
        positive=tuple(str(v) for v in labels.get("positive", ())),
        one_hot=bool(e.get("one_hot", False)), preprocess=e.get("preprocess"),
        scale_inputs=str(e.get("scale_inputs", "columns")), holdout=_holdout(path, name, e.get("holdout"), shape[0]),
        notes=str(e.get("notes", "")),
        file=file, file_format=file_format, sep=e.get("sep"), sha256=str(e.get("sha256") or "") if file else "",
        origin=str(path) if user else "built-in", unavailable=e.get("unavailable"),
        splits=_split_masks(path, where, e.get("splits"), user),
        aliases=tuple(check_name(path, a, "dataset alias") for a in e.get("aliases") or []),
    )


def _split_masks(path: Path, where: str, value: dict | None, user: bool) -> SplitMasks | None:
    """``splits: {file, sha256}`` (its fields checked by DATASET_SCHEMA): the published split masks, a
    file under the data directory, or a user's relative to the registry file (as its data 'file')."""
    if value is None:
        return None
    if user:
        return SplitMasks(str((Path(path).parent / Path(value["file"]).expanduser()).absolute()),
                          str(value.get("sha256") or ""))
    if not _inside_data_dir(value["file"]):
        raise refuse(where, "splits.file", INSIDE_DATA_DIR, value["file"])
    return SplitMasks(str(value["file"]), str(value["sha256"]))


def _holdout(path: Path, name: str, value: dict | None, rows: int):
    """``holdout: {train, test[, split]}`` (its fields checked by DATASET_SCHEMA): the paper's split
    sizes; ``split: random`` (default) a seeded permutation takes them, ``split: files`` they are the
    data files' own split (rows in file order: the first ``train`` rows, then ``test``; they must
    cover every row of the dataset)."""
    from rfbench.protocol import HoldoutSizes

    if value is None:
        return None
    split = value.get("split", "random")
    if split == "files" and rows and value["train"] + value["test"] != rows:
        _fail(path, name, f"holdout with split: files must cover the {rows} rows: train {value['train']} + test "
              f"{value['test']} = {value['train'] + value['test']}")
    return HoldoutSizes(value["train"], value["test"], fixed=split == "files")


def read_datasets_file(path: Path) -> tuple[dict[str, Dataset], dict[str, str]]:
    """(datasets, suites) of a built-in datasets file (datasets.yaml's schema), read now."""
    data = load_yaml(path)
    entries = data.get("datasets")
    if not isinstance(entries, dict) or not entries:
        raise UsageError(f"{path.name}: needs a non-empty 'datasets' mapping")
    datasets = {check_name(path, name, "dataset"): parse_dataset(path, name, e) for name, e in entries.items()}
    suites = dict(data.get("suites") or {})
    taken = set(datasets)
    for ds in datasets.values():
        for s in ds.suites:
            if s not in suites:
                _fail(path, ds.name, f"suite '{s}' is not declared under 'suites'")
        for alias in ds.aliases:
            if alias in taken:
                _fail(path, ds.name, f"alias '{alias}' is already a dataset's name or alias")
            taken.add(alias)
    return datasets, suites


#: a required package's import name, or an extra's name
_REQUIRED = r"[A-Za-z_][A-Za-z0-9_.-]*"
#: the declared fields of a method entry beside its estimator (checked by _parse_method, which also
#: reads the estimator, the grid and the per-dataset parameters' values)
METHOD_SCHEMA = {
    "params": Field((dict,), expect="a mapping of constructor arguments"),
    "per_dataset": Field((dict,), expect="a mapping of dataset names to mappings of constructor arguments"),
    "placement": Field(choices=PLACEMENTS),
    "cost_scaling": Field((dict,), expect="a mapping of rows and/or inputs to exponents between 0 and 4, e.g. {rows: 2}, "
                          "and optionally rows_cap: the rows above which a task costs as at rows_cap, "
                          "budget_capped_at_rows: true where the budget n is capped at the training rows, "
                          "budget_free: true where one fit serves every budget whatever n",
                          fields={"rows": Field(NUMBER, low=0, high=4), "inputs": Field(NUMBER, low=0, high=4),
                                  "rows_cap": Field(NUMBER, low=1), "budget_capped_at_rows": Field((bool,)),
                                  "budget_free": Field((bool,))}),
    "thread_sensitive": Field((bool,)),
    "requires": Field((dict,), expect="{package: import name, extra: rfbench's extra} (extra optional), e.g. "
                      "{package: xrfm, extra: xrfm}",
                      fields={"package": Field(TEXT, required=True, pattern=_REQUIRED),
                              "extra": Field(TEXT, pattern=_REQUIRED)}),
}


def _parse_method(path: Path, name: str, e, user: bool = False, origin: str | None = None,
                  sys_path: tuple[str, ...] = ()) -> Method:
    check_name(path, name, "method")
    if not isinstance(e, dict) or "estimator" not in e:
        _fail(path, name, "missing field 'estimator'")
    est = e["estimator"]
    if isinstance(est, str):
        kind = e.get("kind")
        if kind is None and user and _ESTIMATOR.fullmatch(est):   # a user estimator says what it is
            where = f"{origin or Path(path).name}: entry '{name}': estimator {est!r}"
            kind = "classifier" if is_classifier_class(import_estimator(est, where, sys_path)) else "regressor"
        est = {"regression": est} if (kind or "regressor") == "regressor" else {"classification": est}
    if not isinstance(est, dict) or not set(est) <= set(TASKS):
        _fail(path, name, "field 'estimator' must be 'module:Class' or a task -> 'module:Class' map")
    for target in est.values():
        if not isinstance(target, str) or not _ESTIMATOR.fullmatch(target):
            _fail(path, name, f"field 'estimator' must name 'package.module:Class', got {target!r}")
    check(e, METHOD_SCHEMA, f"{Path(path).name}: entry '{name}'", closed=False)
    per_dataset = e.get("per_dataset") or {}
    if not all(isinstance(k, str) and isinstance(v, dict) for k, v in per_dataset.items()):
        _fail(path, name, "field 'per_dataset' must map dataset names to mappings of constructor arguments")
    grid = e.get("grid")
    if grid is not None:
        grids = grid if isinstance(grid, list) else [grid]
        if not grids or not all(isinstance(g, dict) and g and all(isinstance(v, list) and v for v in g.values())
                                for g in grids):
            _fail(path, name, "field 'grid' must map constructor parameters to non-empty lists of values "
                  "(or be a list of such mappings)")
    placement = e.get("placement", "processes")
    cost = e.get("cost_scaling") or {}
    thread_sensitive = e.get("thread_sensitive", False)
    requires = e.get("requires") or {}
    return Method(name, dict(est), dict(e.get("params") or {}), str(e.get("description", "")),
                  str(e.get("paper", "")), grid=grid, origin=origin or ("built-in" if not user else str(path)),
                  sys_path=tuple(sys_path), per_dataset={k: dict(v) for k, v in per_dataset.items()},
                  placement=placement, cost_scaling={k: float(v) for k, v in cost.items()},
                  thread_sensitive=thread_sensitive, requires=dict(requires))


def read_methods_file(path: Path) -> dict[str, Method]:
    """The methods of a built-in methods file (methods.yaml's schema), read now."""
    data = load_yaml(path)
    return {name: _parse_method(path, name, e) for name, e in data.items()}


# -- extensions: user registry files, entry points, the command line -------------------------------

def settings_files() -> list[Path]:
    """The user registry files of the settings: ``$RFBENCH_REGISTRY`` (several separated by
    os.pathsep), then the config's ``registry``; read when a registry is built (:func:`load`)."""
    env = os.environ.get("RFBENCH_REGISTRY", "")
    return [Path(v.strip()).expanduser() for v in env.split(os.pathsep) if v.strip()] + list(config.load().registry)


def read_user_file(path: Path) -> tuple[dict, dict, dict]:
    """A user registry file: (datasets, suites, methods), read now."""
    data = load_yaml(path)
    unknown = sorted(set(data) - {"datasets", "methods", "suites"})
    if unknown:
        raise UsageError(f"{path}: unknown section(s) {', '.join(map(str, unknown))}; a user registry has "
                         "'methods:', 'datasets:' and 'suites:'")
    sections = {}
    for key in ("datasets", "methods", "suites"):
        value = data.get(key) or {}
        if not isinstance(value, dict):
            raise UsageError(f"{path}: '{key}' must be a mapping of names to entries")
        sections[key] = value
    suites = {str(k): str(v) for k, v in sections["suites"].items()}
    datasets = {check_name(path, name, "dataset"): parse_dataset(path, name, e, user=True)
                for name, e in sections["datasets"].items()}
    for ds in datasets.values():
        for s in ds.suites:
            if s not in suites:
                _fail(path, ds.name, f"suite '{s}' is not declared under this file's 'suites' (user datasets "
                      "join user suites only)")
    methods = {}
    for name, e in sections["methods"].items():
        if not isinstance(e, dict):
            _fail(path, name, "must be a mapping")
        dirs = [str(path.parent)] + [str((path.parent / Path(p).expanduser()).absolute())
                                     for p in (e.get("path") or [])]
        methods[name] = _parse_method(path, name, {k: v for k, v in e.items() if k != "path"}, user=True,
                                      sys_path=tuple(dirs))
    return datasets, suites, methods


def entry_point_methods() -> dict[str, Method]:
    """Methods of installed plugins: entry points of the group ``rfbench.methods``, read now."""
    fn = importlib.metadata.entry_points
    try:
        eps = fn(group=ENTRY_POINT_GROUP)
    except TypeError:                     # an entry_points() without selection (very old API)
        eps = fn().get(ENTRY_POINT_GROUP, [])
    out = {}
    for ep in eps:
        dist = getattr(getattr(ep, "dist", None), "name", None)
        origin = f"entry point '{ep.name}' ({ENTRY_POINT_GROUP}" + (f", distribution {dist})" if dist else ")")
        if ep.name in out:
            raise UsageError(f"{origin}: method '{ep.name}' is also registered by {out[ep.name].origin}")
        out[ep.name] = _parse_method(Path(origin), ep.name, {"estimator": ep.value}, user=True, origin=origin)
    return out


def command_line_dataset(name: str, entry: dict) -> Dataset:
    """A dataset named on the command line (a data file, openml:ID), as registered."""
    where = Path(COMMAND_LINE)
    return parse_dataset(where, check_name(where, name, "dataset"), entry, user=True)


def command_line_method(name: str, entry: dict) -> Method:
    """A method named on the command line (``package.module:Class``; ``sys_path``: the directories its
    module is imported from), as registered."""
    return _parse_method(Path(COMMAND_LINE), name, {k: v for k, v in entry.items() if k != "sys_path"}, user=True,
                         origin=COMMAND_LINE, sys_path=tuple(entry.get("sys_path") or ()))


def _registered_by(entry) -> str:
    """Where a registered dataset or method comes from, as the refusal of a second one says it."""
    origin = entry.origin
    if origin == "built-in":
        return "the built-in registry"
    if origin == COMMAND_LINE:
        return "the command line"
    if origin.startswith("entry point "):
        return f"installed plugin {origin}"
    return origin


def _merge(kind: str, base: dict, layers: list[tuple[str, dict]]) -> dict:
    merged = dict(base)
    where = {n: "the built-in registry" for n in base}
    for origin, entries in layers:
        for name, entry in entries.items():
            if name in merged:
                raise UsageError(f"{origin}: {kind} '{name}' is already registered by {where[name]}; give it "
                                 "another name (a user entry never overrides a registered one)")
            merged[name] = entry
            where[name] = origin
    return merged


class Entries(Mapping):
    """A read-only mapping of names to registry entries (or a spec's name maps), in registration order.
    Unlike types.MappingProxyType it pickles: a :class:`Registry` goes to worker processes."""

    __slots__ = ("_items",)

    def __init__(self, items=()):
        self._items = dict(items)

    def __getitem__(self, name):
        return self._items[name]

    def __iter__(self):
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Entries({self._items!r})"

    def __reduce__(self):
        return (Entries, (self._items,))


@dataclass(frozen=True)
class Registry:
    """The datasets, suites and methods a command may name: the built-in files, the user's registry
    files, installed plugins and the command line's additions, merged and validated. Immutable: an
    addition (:meth:`with_command_line`) is a new value. Built by :func:`load`, passed explicitly;
    it pickles, so that worker processes get it as an argument."""

    datasets: Entries
    suites: Entries
    methods: Entries

    def dataset(self, name: str) -> Dataset:
        if name not in self.datasets:
            known = self.canonical_name(name)
            if known != name:
                return self.datasets[known]
            raise UsageError(f"unknown dataset '{name}'; known: {', '.join(sorted(self.datasets))}")
        return self.datasets[name]

    def canonical_name(self, name: str) -> str:
        """The registered name of a dataset named by one of its aliases (``name`` itself otherwise)."""
        if name in self.datasets:
            return name
        for ds in self.datasets.values():
            if name in ds.aliases:
                return ds.name
        return name

    def method(self, name: str) -> Method:
        if name not in self.methods:
            hint = " (or a module path, package.module:Class)" if ":" not in name else ""
            raise UsageError(f"unknown method '{name}'; known: {', '.join(sorted(self.methods))}{hint}")
        return self.methods[name]

    def suite(self, suite: str) -> list[Dataset]:
        """The datasets of a suite, in registration order."""
        if suite not in self.suites:
            raise UsageError(f"unknown suite '{suite}'; known: {', '.join(sorted(self.suites))}")
        return [d for d in self.datasets.values() if suite in d.suites]

    def with_command_line(self, datasets: Mapping[str, dict] | None = None,
                          methods: Mapping[str, dict] | None = None) -> Registry:
        """This registry with datasets and methods named on the command line (name → entry, as
        :func:`command_line_dataset` and :func:`command_line_method` read them). A name registered
        elsewhere is refused; the same name given again must be the same entry."""
        added = {"dataset": {n: command_line_dataset(n, e) for n, e in (datasets or {}).items()},
                 "method": {n: command_line_method(n, e) for n, e in (methods or {}).items()}}
        merged = {"dataset": dict(self.datasets), "method": dict(self.methods)}
        for kind, entries in added.items():
            for name, entry in entries.items():
                held = merged[kind].get(name)
                if held is not None and held.origin != COMMAND_LINE:
                    raise UsageError(f"the command line: {kind} '{name}' is already registered by "
                                     f"{_registered_by(held)}; give it another name (a user entry never "
                                     "overrides a registered one)")
                if held is not None and held != entry:
                    raise UsageError(f"{kind} '{name}' is named twice on the command line with different sources; "
                                     "give one of them another name in a --registry file")
                merged[kind][name] = entry
        return Registry(Entries(merged["dataset"]), self.suites, Entries(merged["method"]))

    def only(self, dataset_names: Iterable[str], method_names: Iterable[str]) -> Registry:
        """The part of this registry that a run of these datasets and methods needs (what its worker
        processes are given: a few entries to pickle per task, not every one)."""
        return Registry(Entries({n: self.dataset(n) for n in dataset_names}), self.suites,
                        Entries({n: self.method(n) for n in method_names}))

    @classmethod
    def load(cls, files: Iterable[str | os.PathLike] = (), *, settings: bool = True,
             command_line: Mapping[str, Mapping[str, dict]] | None = None) -> Registry:
        """See :func:`load`."""
        return load(files, settings=settings, command_line=command_line)


def load(files: Iterable[str | os.PathLike] = (), *, settings: bool = True,
         command_line: Mapping[str, Mapping[str, dict]] | None = None) -> Registry:
    """The registry, built now: the built-in datasets and methods files (``$RFBENCH_DATASETS_YAML`` and
    ``$RFBENCH_METHODS_YAML`` replace them, for tests), installed plugins, the user registry files
    ``files`` (``--registry``) and, with ``settings``, those of ``$RFBENCH_REGISTRY`` and the config's
    ``registry``; then ``command_line``: {"datasets": {name: entry}, "methods": {name: entry}}
    (:meth:`Registry.with_command_line`)."""
    given = [Path(p).expanduser().absolute() for p in files or ()]
    for p in given:
        if not p.is_file():
            raise UsageError(f"--registry {p}: no such file")
    user_files = tuple(dict.fromkeys([*given, *(f.absolute() for f in (settings_files() if settings else ()))]))
    base_ds, base_suites = read_datasets_file(datasets_file())
    base_methods = read_methods_file(methods_file())
    layers = []
    for f in user_files:
        if not f.is_file():
            raise UsageError(f"user registry file not found: {f} (from --registry, RFBENCH_REGISTRY or the "
                             "config's 'registry')")
        layers.append((str(f), read_user_file(f)))
    datasets = _merge("dataset", base_ds, [(f, d) for f, (d, _, _) in layers])
    suites = _merge("suite", base_suites, [(f, s) for f, (_, s, _) in layers])
    methods = _merge("method", base_methods, [*(("installed plugin " + m.origin, {n: m})
                                                for n, m in entry_point_methods().items()),
                                              *((f, m) for f, (_, _, m) in layers)])
    registry = Registry(Entries(datasets), Entries(suites), Entries(methods))
    if command_line:
        registry = registry.with_command_line(command_line.get("datasets"), command_line.get("methods"))
    return registry


def method_name_of(path: str) -> str:
    """The registered name of a method given as ``package.module:Class``: ``package.module.Class``."""
    return path.replace(":", ".")


#: the suite a run runs when neither a suite nor datasets are named (:func:`rfbench.data.request.resolve_run`)
DEFAULT_SUITE = "synthetic"


def subset(given: Iterable | None, held: Iterable, option: str, where: str) -> list:
    """The names of ``held`` that ``given`` asks for, in ``held``'s order (None: all of them). An
    empty request, or a name ``held`` lacks, is a UsageError naming it and the ones there are."""
    held = list(held)
    if given is None:
        return held
    given = list(dict.fromkeys(given))
    if not given:
        raise UsageError(f"{option} names nothing; give comma-separated names or leave the option out")
    unknown = [g for g in given if g not in held]
    if unknown:
        raise UsageError(f"{option}: {', '.join(map(str, unknown))} not in {where} (they have "
                         f"{', '.join(map(str, held))})")
    return [h for h in held if h in given]


def resolve_method_names(registry: Registry, names) -> tuple[Registry, list[str]]:
    """(the registry with them, the method names) of the command line's methods: registered names as
    they are, ``package.module:Class`` registered as ``package.module.Class`` (imported from the
    current directory, then sys.path)."""
    out, added = [], {}
    for n in names:
        if ":" in n:
            if not _ESTIMATOR.fullmatch(n):
                raise UsageError(f"--methods {n!r}: a module path must be 'package.module:Class'")
            name = method_name_of(n)
            held = registry.methods.get(name)
            if held is not None and held.origin != COMMAND_LINE:
                raise UsageError(f"--methods {n}: its name '{name}' is already registered by {held.origin}; "
                                 "use that name")
            added[name] = {"estimator": n, "sys_path": [str(Path.cwd())]}
            n = name
        out.append(n)
    return (registry.with_command_line(methods=added) if added else registry), out


GFC_ESTIMATORS = {"rfbench.methods.gfc:GFCRegressor", "rfbench.methods.gfc_gbrff:GFCGBRFFClassifier"}
GFC_CHECK = "rfbench check gfc2016-table1"


def gfc_rows(registry: Registry) -> list:
    """The registered methods that are readings of GFC (their estimator is one of GFC_ESTIMATORS)."""
    return [m for m in registry.methods.values() if set(m.estimators.values()) & GFC_ESTIMATORS]


def gfc_note(shown, registry: Registry) -> str | None:
    """One line naming every GFC row and what each is (from the registry's descriptions), when a
    shown method is one of them (``shown`` None: for the registry's listing, always); None
    otherwise. ``gfc`` is one reading of the paper's Algorithm 2 among several, so a user who picks
    one is told which others exist and where each is checked against the published Table 1."""
    rows = gfc_rows(registry)
    picked = [m.name for m in rows if shown is None or m.name in set(shown)]
    if not picked:
        return None

    def head(m) -> str:
        return m.description.split(": ")[0] if m.description else m.paper

    ablation = [m.name for m in rows if head(m) == "GFC ablation"]
    parts = [f"{m.name} = {head(m)}" for m in rows if m.name not in ablation]
    if ablation:
        parts.insert(min(2, len(parts)), f"{', '.join(ablation)} = gfc with one reading changed each (the ablation)")
    lead = "GFC rows" if shown is None else f"GFC rows (shown here: {', '.join(picked)}); rfbench has {len(rows)}"
    return (f"{lead}: " + "; ".join(parts) + f". Each against the published Table 1: `{GFC_CHECK}`"
            + ("." if shown is None else "; `rfbench methods --width 0` describes them."))
