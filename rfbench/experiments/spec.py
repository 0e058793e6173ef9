"""Experiment specs: one YAML file per published table, the single source of what to run, where
its results go, what they are checked against and how.

A spec (``bench/<name>.yaml``; relative paths in it are relative to the spec file, except the
``results`` and ``also_reads`` directories of a spec packaged in an installed wheel: those go to
``<results_root>/<last part of the path>``, results_root = $RFBENCH_RESULTS_ROOT, else the config's
``results_root``, else ./results of the current directory; see rfbench/config.py)::

    title:      one line naming the paper and table
    results:    the table's one results directory, e.g. ../results/gfc2016-table1
    also_reads: other results directories that hold columns of this table (read, never written)
    run:        what `rfbench reproduce` runs: {datasets: [...] or suite: S, methods: [...],
                features: [...] (each at most 10^6, as --features), exclude: {method: {dataset: why}}};
                ``exclude`` names the cells the paper did not run (e.g. GBRFF Table 2's '-'): never
                run, listed by the check
    protocol:   {name: cv|splits|holdout|fixed, outer_folds, inner_folds, repeats, test_size, seed}
    published:  the published CSV (in the published directory) or a repo file (bench/...)
    columns:    which published columns hold dataset / n_features / method / mean / std / walltime
                (std_is: se, wide: {paper method: prefix}, times: {label: time field}; class Columns)
    datasets:   paper dataset name -> rfbench dataset;  methods: paper method -> rfbench method(s)
    dataset_variants: rfbench dataset -> [rfbench datasets]: another reading of the same data (e.g.
                MNIST with its pixels scaled jointly), each paper method's cell also checked on it, one
                row each, shown but not counted
    variants:   paper method -> [rfbench methods]: each also checked against that method's published
                cells, one row each (an ablation)
    tolerance:  {stds: 2, relative: null, holdout_ses: null, why: "..."}: pass when |ours - published|
                <= stds x published std (or <= relative x published mean, or, for one holdout split,
                <= holdout_ses standard errors of the difference of two test MSEs on the dataset's
                holdout.test points: holdout_ses x 2/sqrt(n_test) x published mean)
    test:       {name: welch|paired, why: "..."}: the t-test the paper bolds cells with
    layout:     default | gp: the layout of the spec's report (report.md, its HTML page; rfbench report
                --layout): gp is the GP / kernel-learning papers' table (rfbench.reporting.gp_table)
    metric:     the metric code of the published cells (rfbench.reporting.cells.METRICS; default: an error, lower
                is better): its direction (higher is better for accuracy) orders ranks and Wilcoxon wins
    not_comparable: {rfbench dataset: reason}: cells whose problem differs from the paper's
    reasons:    {rfbench dataset or "*": {paper method: {text, command, results[, measured]}}}: why
                those cells miss the published number (a :class:`Reason`; "*": every dataset without its own)
    wilcoxon:   the paper's Wilcoxon claims [{a, n_a, b, n_b, published_T, published_datasets}]
    published_summary: {file, method, mean, rank, note}: the paper's printed average ranks and means,
                shown next to the same recomputed from its printed cells
    chosen:     {published, dataset_column, value_column, method, param}: a published table of selected
                hyper-parameters, next to those our runs chose
    ci:         the fast regression configuration (see rfbench.experiments.regress): {datasets, methods, features,
                protocol overrides, exclude (as run.exclude: a slow method kept to fewer datasets),
                reference: CSV of every task's error and chosen hyper-parameters}

Every field is declared in SPEC_FIELDS (rfbench.schema: its type, choices, bounds, whether it is
required; an unknown, missing or wrong field is one line naming it) and checked in load_spec before
any is read. Every nested section (tolerance, test, columns, wilcoxon entries, published_summary,
chosen, reasons; run and ci as RunPlan / CIConfig; protocol as one Protocol) is a frozen value built
there alone and read as attributes everywhere else. The Spec itself is frozen, its name maps read-only
and its lists tuples: a changed spec is a new one (``dataclasses.replace``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path

from rfbench import config
from rfbench.errors import UsageError
from rfbench.execution.runconfig import MAX_FEATURES
from rfbench.protocol import Protocol
from rfbench.registry import ROOT, Entries, Registry, bench_dir, is_packaged, load_yaml
from rfbench.reporting import cells, gp_table
from rfbench.reporting.published import published_dir
from rfbench.schema import NUMBER, TEXT, Field, check

TESTS = ("welch", "paired")

#: a spec's declared fields, section by section (rfbench.schema: type, choices, bounds, required),
#: checked in load_spec before any is used: a wrong field is one line naming it. What relates
#: fields to each other or to the registry (a dataset of ``datasets``, a method of ``run``) is
#: checked by the readers below.
PROTOCOL_FIELDS = {
    "name": Field(TEXT), "outer_folds": Field((int,), low=2), "inner_folds": Field((int,), low=2),
    "repeats": Field((int,), low=1), "test_size": Field(NUMBER, low=0, high=1), "seed": Field((int,), low=0),
    "max_samples": Field((int,), low=2),
}
NAMES = Field((list, str), expect="a non-empty list of names")
FEATURES = Field(items=(int,), low=1, high=MAX_FEATURES, nonempty=True)
EXCLUDE = Field((dict,), expect="a mapping of methods to {dataset: why}")
RUN_FIELDS = {"datasets": NAMES, "suite": Field(TEXT), "methods": NAMES, "features": FEATURES, "exclude": EXCLUDE}
CI_FIELDS = {"datasets": NAMES, "methods": NAMES, "features": FEATURES, "exclude": EXCLUDE,
             "protocol": Field((dict,), fields=PROTOCOL_FIELDS),
             "reference": Field(TEXT, required=True, expect="the CSV of every task's error (relative to the spec)"),
             "atol": Field(NUMBER, low=0)}
TOLERANCE_FIELDS = {"stds": Field(NUMBER, low=0), "relative": Field(NUMBER, low=0),
                    "holdout_ses": Field(NUMBER, low=0, open_low=True), "why": Field(TEXT)}
TEST_FIELDS = {"name": Field(choices=TESTS), "why": Field(TEXT)}
COLUMNS_FIELDS = {**{k: Field(TEXT) for k in ("dataset", "method", "mean", "n_features", "std", "walltime", "std_is")},
                  "wide": Field((dict,)), "times": Field((dict,))}
WILCOXON_FIELDS = {"a": Field(TEXT, required=True), "n_a": Field((int,), required=True),
                   "b": Field(TEXT, required=True), "n_b": Field((int,), required=True),
                   "published_T": Field(NUMBER), "published_datasets": Field((int,))}
SUMMARY_FIELDS = {"file": Field(TEXT, required=True, expect="the published file of the printed rows"),
                  "mean": Field(TEXT, required=True, expect="the column of the printed means"),
                  "rank": Field(TEXT, required=True, expect="the column of the printed average ranks"),
                  "method": Field(TEXT), "note": Field(TEXT)}
CHOSEN_FIELDS = {k: Field(TEXT, required=True) for k in ("published", "dataset_column", "value_column", "method", "param")}
REASON_FIELDS = {"text": Field(required=True), "command": Field(required=True), "results": Field(required=True),
                 "measured": Field((bool,))}
SPEC_FIELDS = {
    "title": Field((str, *NUMBER)), "results": Field(TEXT), "published": Field(TEXT), "notes": Field(TEXT),
    "metric": Field(TEXT, choices=tuple(cells.METRICS)),
    "run": Field((dict,), fields=RUN_FIELDS), "protocol": Field((dict,), fields=PROTOCOL_FIELDS),
    "ci": Field((dict,), fields=CI_FIELDS), "tolerance": Field((dict,), fields=TOLERANCE_FIELDS),
    "test": Field((dict,), fields=TEST_FIELDS), "layout": Field(TEXT, choices=tuple(gp_table.LAYOUTS)),
    "methods": Field((dict,)), "datasets": Field((dict,)), "columns": Field((dict,), fields=COLUMNS_FIELDS),
    "not_comparable": Field((dict,), expect="a mapping of datasets to reasons"), "filters": Field((dict,)),
    "chosen": Field((dict,), fields=CHOSEN_FIELDS), "variants": Field((dict,)), "dataset_variants": Field((dict,)),
    "published_summary": Field((dict,), fields=SUMMARY_FIELDS), "also_reads": Field((list,)),
    "results_anywhere": Field((bool,)), "reasons": Field((dict,)), "figures": Field((dict,)),
    "n_features": Field((list,)), "wilcoxon": Field((list,)), "rank_summary": Field((bool,)),
}


def results_path(spec_file: Path, value: str, anywhere: bool = False) -> Path:
    """A spec's ``results`` / ``also_reads`` directory: relative to the spec file, or for a spec packaged
    in an installed wheel, <results_root>/<last part of the path> (never inside site-packages).

    A spec's directory must stay where its user sees it: under the spec's project (the spec file's
    directory or the one above it, where bench/ specs keep ../results) or under the working
    directory. Anything else (an absolute path elsewhere, ``../../../x``, ``/etc/...``) is refused in one
    line unless the spec says ``results_anywhere: true``."""
    if is_packaged(spec_file):
        return (config.results_root() / Path(value).name).resolve()
    path = (spec_file.parent / value).resolve()
    if not anywhere:
        project, here = spec_file.resolve().parent.parent, Path.cwd().resolve()
        if not (path.is_relative_to(project) or path.is_relative_to(here)):
            raise UsageError(f"{spec_file.name}: results directory {value!r} resolves to {path}, outside the spec's "
                             f"project ({project}) and the working directory ({here}); give a path under one of "
                             "them, or set results_anywhere: true in the spec to write there on purpose")
    return path


@dataclass(frozen=True)
class RunPlan:
    """What `rfbench reproduce` runs for a spec (or its fast CI configuration)."""
    datasets: list
    methods: list
    features: list
    protocol: Protocol
    exclude: dict = field(default_factory=dict)     # method -> {dataset: why it is not run}

    def runs(self, method: str, dataset: str) -> bool:
        """Whether the plan runs this method on this dataset (not an excluded cell)."""
        return dataset not in self.exclude.get(method, {})

    def method_groups(self) -> list[tuple[list, list]]:
        """(datasets, methods) groups that together cover the plan without its excluded cells: one
        group when nothing is excluded."""
        groups: dict[tuple, list] = {}
        for m in self.methods:
            groups.setdefault(tuple(d for d in self.datasets if self.runs(m, d)), []).append(m)
        return [(list(ds), ms) for ds, ms in groups.items() if ds]


@dataclass(frozen=True)
class CIConfig:
    """A fast configuration of the spec's run whose every error and chosen hyper-parameter is
    compared exactly with a committed reference run (``reference``: a CSV, one row per task)."""
    plan: RunPlan
    reference: Path
    atol: float = 1e-9


@dataclass(frozen=True)
class Tolerance:
    """``tolerance``: a cell passes when |ours - published| <= stds x published std (or <= relative x
    published mean, or <= holdout_ses standard errors of a holdout test-MSE difference x published mean)."""
    stds: float = 2.0
    relative: float | None = None
    holdout_ses: float | None = None
    why: str = ""


@dataclass(frozen=True)
class TTest:
    """``test``: the t-test the paper bolds cells with (a name of TESTS) and why."""
    name: str = "welch"
    why: str = ""


@dataclass(frozen=True)
class Columns:
    """``columns``: the published columns holding each field (None: the table has no such column);
    ``std_is: se`` when the published spread is a standard error; ``wide``: paper method -> column
    prefix of a wide table; ``times``: label -> a field of TIME_FIELDS (rfbench.experiments.check)."""
    dataset: str = "dataset"
    method: str = "method"
    mean: str = "mean"
    n_features: str | None = None
    std: str | None = None
    walltime: str | None = None
    std_is: str | None = None
    wide: dict | None = None
    times: dict = field(default_factory=dict)


@dataclass(frozen=True)
class WilcoxonClaim:
    """One of the paper's Wilcoxon claims: method a with n_a features against b with n_b."""
    a: str
    n_a: int
    b: str
    n_b: int
    published_T: float | None = None
    published_datasets: int | None = None


@dataclass(frozen=True)
class PublishedSummary:
    """``published_summary``: the published file of the paper's printed mean and average-rank rows."""
    file: str
    mean: str
    rank: str
    method: str = "method"
    note: str | None = None


@dataclass(frozen=True)
class Chosen:
    """``chosen``: a published table of selected hyper-parameters (dataset and value columns) and
    our method and the name of the parameter in its records' ``params``."""
    published: str
    dataset_column: str
    value_column: str
    method: str
    param: str


def frozen(value):
    """``value`` read-only all the way down: a mapping as :class:`~rfbench.registry.Entries` (it pickles),
    a list as a tuple."""
    if isinstance(value, Mapping):
        return Entries((k, frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(frozen(v) for v in value)
    return value


@dataclass(frozen=True)
class Spec:
    """A loaded spec: immutable, its name maps read-only and its lists tuples (a changed spec is a new
    one, ``dataclasses.replace``; the maps and lists given there are frozen too)."""
    name: str
    published: str | None
    columns: Columns
    datasets: Mapping
    methods: Mapping
    path: Path | None = None
    title: str = ""
    results: Path | None = None
    also_reads: tuple = ()
    plan: RunPlan | None = None
    ci: CIConfig | None = None
    n_features: tuple = ()
    tolerance: Tolerance = field(default_factory=Tolerance)
    test: TTest = field(default_factory=TTest)
    layout: str = "default"              # the report's layout (rfbench.reporting.gp_table.LAYOUTS)
    not_comparable: Mapping = field(default_factory=Entries)
    reasons: Mapping = field(default_factory=Entries)    # rfbench dataset or "*" -> {paper method: Reason}
    # the protocol of the spec's full runs (the plan's, where it has a run); None: the spec fixes none
    protocol: Protocol | None = None
    filters: Mapping = field(default_factory=Entries)
    metric: str | None = None            # the published cells' metric code (rfbench.reporting.cells.METRICS)
    notes: str = ""
    rank_summary: bool = False           # also compare average ranks and mean scores over datasets
    wilcoxon: tuple[WilcoxonClaim, ...] = ()   # the paper's Wilcoxon comparisons (T values)
    chosen: Chosen | None = None         # a published table of selected hyper-parameters
    # the paper's printed summary rows (average ranks recomputed from the printed cells next to the
    # printed ones)
    published_summary: PublishedSummary | None = None
    # paper method → every rfbench method name that holds its results, first preferred (e.g. the
    # GFC paper's à la carte Q = 5 is `alc-q5` in Tables 2-3 and `alc` in Table 1: one run serves
    # both); ``methods`` maps to the first name
    method_alternates: Mapping = field(default_factory=Entries)
    # paper method → other rfbench methods each checked against the same published cell, one row
    # each (an ablation: every variant next to the paper's number)
    variants: Mapping = field(default_factory=Entries)
    # rfbench dataset → other rfbench datasets (another reading of the same data) whose rows are
    # checked against its published cells too, shown but not counted
    dataset_variants: Mapping = field(default_factory=Entries)

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, (Mapping, list, tuple)):
                object.__setattr__(self, f.name, frozen(value))

    @property
    def protocol_key(self) -> str | None:
        """The protocol key of the spec's full runs (None: the spec does not fix a protocol)."""
        return self.protocol.key() if self.protocol else None

    def result_dirs(self) -> list[Path]:
        """The directories whose records make up this table: its own, then those it also reads."""
        return [d for d in [self.results, *self.also_reads] if d is not None]

    @property
    def higher_is_better(self) -> bool:
        """The direction of the published cells' metric (rfbench.reporting.cells: defined once)."""
        return self.metric is not None and cells.metric(self.metric).higher_is_better


def spec_paths() -> list[Path]:
    """Every published-table spec in bench/ (sorted by name)."""
    return sorted(p for p in bench_dir().glob("*.yaml"))


def all_specs(registry: Registry) -> list[Spec]:
    """Every spec of bench/, its names checked against ``registry``."""
    return [load_spec(str(p), registry) for p in spec_paths()]


def spec_of_results(directory, registry: Registry) -> Spec | None:
    """The spec whose results directory this is (None: a directory of no spec)."""
    path = Path(directory).resolve()
    return next((s for s in all_specs(registry) if s.results == path), None)


def find_spec(path_or_name: str) -> Path:
    path = Path(path_or_name)
    if path.is_file():
        return path.resolve()
    candidate = bench_dir() / (path_or_name if path_or_name.endswith(".yaml") else f"{path_or_name}.yaml")
    if not candidate.is_file():
        known = ", ".join(p.stem for p in spec_paths())
        raise UsageError(f"spec not found: {path_or_name} (looked in {bench_dir()}; known: {known})")
    return candidate.resolve()


def _names(value, where: str) -> list:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not value:
        raise UsageError(f"{where} must be a non-empty list")
    return value


def _plan(raw: dict, protocol: Protocol, where: str, registry: Registry) -> RunPlan:
    """A run (or ci) section, its fields' types already checked (RUN_FIELDS), against the registry."""
    if "suite" in raw:
        datasets = [d.name for d in registry.suite(raw["suite"])]
    else:
        datasets = _names(raw.get("datasets"), f"{where}.datasets")
    for d in datasets:
        registry.dataset(d)
    methods = _names(raw.get("methods"), f"{where}.methods")
    for m in methods:
        registry.method(m)
    exclude = raw.get("exclude") or {}
    if not all(isinstance(v, dict) for v in exclude.values()):
        raise UsageError(f"{where}.exclude must map methods to {{dataset: why}}")
    for m, excluded in exclude.items():
        if m not in methods:
            raise UsageError(f"{where}.exclude names method {m}, not among the run's methods")
        unknown = sorted(set(map(str, excluded)) - set(datasets))
        if unknown:
            raise UsageError(f"{where}.exclude.{m} names {', '.join(unknown)}, not among the run's datasets")
    return RunPlan(datasets, methods, raw.get("features") or [100], protocol,
                   {str(m): {str(d): str(w) for d, w in excluded.items()} for m, excluded in exclude.items()})


def _section(cls, value: dict | None):
    """The frozen dataclass of a section whose fields are checked (SPEC_FIELDS); None where absent."""
    return cls(**{k: v for k, v in value.items() if v is not None}) if value else None


@dataclass(frozen=True)
class Reason:
    """Why a failing cell misses: a sentence, the command whose output shows it and the committed results
    file that command reads (relative to the checkout); ``measured: false`` says the sentence is a
    hypothesis no committed measurement backs (the check prints it as unmeasured)."""
    text: str
    command: str
    results: str
    measured: bool = True


ALL_DATASETS = "*"      # reasons: a paper method's reason on every dataset without one of its own


def _reasons(value: dict, spec_datasets: set, where: str) -> dict:
    if not all(isinstance(v, dict) for v in value.values()):
        raise UsageError(f"{where}: reasons must map datasets to {{paper method: {{text, command, results}}}}")
    unknown = sorted(set(map(str, value)) - spec_datasets - {ALL_DATASETS})
    if unknown:
        raise UsageError(f"{where}: reasons names {', '.join(unknown)}, not among the spec's datasets")
    return {str(d): {str(m): Reason(**{k: (r[k] if k == "measured" else str(r[k])) for k in r})
                     for m, r in ((m, check(t, REASON_FIELDS, where, prefix=f"reasons.{d}.{m}."))
                                  for m, t in v.items())}
            for d, v in value.items()}


def _retired(raw: dict, path: Path) -> None:
    """Fields a spec no longer takes, each refused with what to write instead."""
    if "higher_is_better" in raw:
        raise UsageError(f"{path}: 'higher_is_better' is now derived from the metric: write metric: accuracy (or "
                         f"another of {', '.join(cells.METRICS)}) instead")
    if isinstance(raw.get("tolerance"), dict) and "or_better_than" in raw["tolerance"]:
        # it passed cells 94x off the published number
        raise UsageError(f"{path.name}: tolerance.or_better_than is no longer supported; a cell passes only near its "
                         "own published number")


def load_spec(path_or_name: str, registry: Registry) -> Spec:
    """The spec of a name (bench/NAME.yaml) or file, validated; the datasets and methods its run names
    must be in ``registry``."""
    path = find_spec(path_or_name)
    raw = load_yaml(path)
    _retired(raw, path)
    if isinstance(raw.get("test"), str):          # test: welch, short for test: {name: welch}
        raw = {**raw, "test": {"name": raw["test"]}}
    where = path.name
    check(raw, SPEC_FIELDS, where)
    # an experiment that tests a paper's claim rather than a table has no published cells
    for key in ("published", "columns", "datasets", "methods") if raw.get("published") else ("run",):
        if key not in raw:
            raise UsageError(f"{where}: missing field '{key}'")
    spec_datasets = set(map(str, (raw.get("datasets") or {}).values()))
    alternates = {}
    for paper_m, names in (raw.get("methods") or {}).items():
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise UsageError(f"{where}: methods.{paper_m} must be a method name or a list of names")
        alternates[paper_m] = names
    variants = raw.get("variants") or {}
    if not all(isinstance(v, list) and all(isinstance(n, str) for n in v) and k in alternates
               for k, v in variants.items()):
        raise UsageError(f"{where}: variants must map paper methods of 'methods' to lists of method names")
    dataset_variants = raw.get("dataset_variants") or {}
    if not all(k in spec_datasets and isinstance(v, list) and all(isinstance(n, str) for n in v)
               for k, v in dataset_variants.items()):
        raise UsageError(f"{where}: dataset_variants must map datasets of 'datasets' to lists of dataset names")
    not_comparable = raw.get("not_comparable") or {}
    unknown = sorted(set(map(str, not_comparable)) - spec_datasets)
    if unknown:
        raise UsageError(f"{where}: not_comparable names {', '.join(unknown)}, not among the spec's datasets")
    protocol_raw = raw.get("protocol") or {}
    protocol = Protocol(**protocol_raw) if protocol_raw else None
    plan = ci = None
    if "run" in raw:
        protocol = protocol or Protocol()
        plan = _plan(raw["run"] or {}, protocol, f"{where}: run", registry)
        if "ci" in raw:
            c = raw["ci"] or {}
            ci_run = {k: c.get(k, (raw["run"] or {}).get(k)) for k in ("datasets", "methods", "features")}
            ci_run["exclude"] = c.get("exclude")      # the run's exclusions do not carry over: ci names its own
            ci_plan = _plan(ci_run, Protocol(**{**protocol_raw, **(c.get("protocol") or {})}), f"{where}: ci", registry)
            ci = CIConfig(ci_plan, (path.parent / c["reference"]).resolve(), float(c.get("atol", 1e-9)))
    tolerance = _section(Tolerance, raw.get("tolerance")) or Tolerance()
    anywhere = bool(raw.get("results_anywhere"))
    wilcoxon = [WilcoxonClaim(**check(entry, WILCOXON_FIELDS, where, prefix=f"wilcoxon[{i}]."))
                for i, entry in enumerate(raw.get("wilcoxon") or [])]
    return Spec(name=path.stem, path=path, title=str(raw.get("title", path.stem)), published=raw.get("published"),
                columns=_section(Columns, raw.get("columns")) or Columns(), datasets=raw.get("datasets") or {},
                methods={k: v[0] for k, v in alternates.items()}, method_alternates=alternates,
                variants={k: list(v) for k, v in variants.items()},
                dataset_variants={k: list(v) for k, v in dataset_variants.items()},
                results=results_path(path, raw["results"], anywhere) if raw.get("results") else None,
                also_reads=[results_path(path, d, anywhere) for d in raw.get("also_reads") or []],
                plan=plan, ci=ci, n_features=raw.get("n_features", []),
                tolerance=Tolerance(float(tolerance.stds), tolerance.relative,
                                    None if tolerance.holdout_ses is None else float(tolerance.holdout_ses),
                                    str(tolerance.why)),
                test=_section(TTest, raw.get("test")) or TTest(), layout=raw.get("layout") or "default",
                not_comparable={str(k): str(v) for k, v in not_comparable.items()},
                reasons=_reasons(raw.get("reasons") or {}, spec_datasets, where),
                protocol=protocol, filters=raw.get("filters") or {},
                metric=raw.get("metric"), notes=str(raw.get("notes", "")),
                rank_summary=bool(raw.get("rank_summary", False)), wilcoxon=wilcoxon,
                chosen=_section(Chosen, raw.get("chosen")),
                published_summary=_section(PublishedSummary, raw.get("published_summary")))


def published_path(spec: Spec) -> Path:
    """A published table (in the published directory) or, for regression references, a repo file
    (bench/..., results/...)."""
    if spec.published.startswith("bench/"):
        return bench_dir().parent / spec.published
    if spec.published.startswith("results/"):
        return results_path(spec.path, spec.published) if spec.path and is_packaged(spec.path) \
            else ROOT / spec.published
    return published_dir() / spec.published
