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

Every nested section (tolerance, test, columns, wilcoxon entries, published_summary, chosen; run and ci
as RunPlan / CIConfig) is a frozen dataclass below, built and validated in load_spec alone (field types:
FIELD_TYPES; unknown or missing fields: _section), and read as attributes everywhere else.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path

from rfbench import config
from rfbench.errors import UsageError
from rfbench.execution.runconfig import MAX_FEATURES
from rfbench.protocol import Protocol
from rfbench.registry import (
    ROOT,
    Registry,
    bench_dir,
    is_packaged,
    load_yaml,
    or_default,
)
from rfbench.reporting import cells, gp_table
from rfbench.reporting.published import published_dir

TESTS = ("welch", "paired")

NUMBER = (int, float)
#: the type each spec field must have where given (null: its default); ``section.field`` inside a
#: mapping. Checked before any field is used, so a wrong type is one line naming it, not a TypeError.
FIELD_TYPES = {
    "title": (str, *NUMBER), "results": (str,), "published": (str,), "notes": (str,), "metric": (str,),
    "run": (dict,), "protocol": (dict,), "ci": (dict,), "tolerance": (dict,), "test": (dict, str), "layout": (str,),
    "methods": (dict,), "datasets": (dict,), "columns": (dict,), "not_comparable": (dict,), "filters": (dict,),
    "chosen": (dict,), "variants": (dict,), "dataset_variants": (dict,), "published_summary": (dict,),
    "also_reads": (list,), "results_anywhere": (bool,), "reasons": (dict,), "figures": (dict,), "n_features": (list,), "wilcoxon": (list,), "rank_summary": (bool,),
    "run.suite": (str,), "run.features": (list,), "ci.features": (list,), "ci.protocol": (dict,),
    "ci.reference": (str,), "ci.atol": NUMBER, "test.name": (str,), "tolerance.stds": NUMBER,
    "tolerance.relative": NUMBER, "tolerance.holdout_ses": NUMBER, "tolerance.why": (str,), "test.why": (str,),
    **{f"columns.{name}": (str,) for name in ("dataset", "method", "mean", "n_features", "std", "walltime", "std_is")},
    "columns.wide": (dict,), "columns.times": (dict,),
    **{f"published_summary.{name}": (str,) for name in ("file", "mean", "rank", "method", "note")},
    **{f"chosen.{name}": (str,) for name in ("published", "dataset_column", "value_column", "method", "param")},
    **{f"{section}.{name}": NUMBER for section in ("protocol", "ci.protocol")
       for name in ("outer_folds", "inner_folds", "repeats", "test_size", "seed", "max_samples")},
    "protocol.name": (str,), "ci.protocol.name": (str,),
}
TYPE_NAMES = {dict: "a mapping", list: "a list", str: "text", int: "a number", float: "a number", bool: "true or false"}


def _check_field_types(raw: dict, path: Path) -> None:
    """One line naming the first field of ``raw`` whose value has the wrong type (FIELD_TYPES)."""
    for field_name, kinds in FIELD_TYPES.items():
        *sections, key = field_name.split(".")
        value = raw
        for section in sections:
            value = value.get(section) if isinstance(value, dict) else None
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            continue
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            wanted = " or ".join(dict.fromkeys(TYPE_NAMES[k] for k in kinds))
            raise UsageError(f"{path.name}: field '{field_name}' must be {wanted}, not {type(value).__name__} "
                             f"{value!r:.40}")


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


@dataclass
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


@dataclass
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


@dataclass
class Spec:
    name: str
    published: str | None
    columns: Columns
    datasets: dict
    methods: dict
    path: Path | None = None
    title: str = ""
    results: Path | None = None
    also_reads: list = field(default_factory=list)
    plan: RunPlan | None = None
    ci: CIConfig | None = None
    n_features: list = field(default_factory=list)
    tolerance: Tolerance = field(default_factory=Tolerance)
    test: TTest = field(default_factory=TTest)
    layout: str = "default"              # the report's layout (rfbench.reporting.gp_table.LAYOUTS)
    not_comparable: dict = field(default_factory=dict)
    reasons: dict = field(default_factory=dict)    # rfbench dataset or "*" -> {paper method: Reason}
    protocol: dict = field(default_factory=dict)
    filters: dict = field(default_factory=dict)
    metric: str | None = None            # the published cells' metric code (rfbench.reporting.cells.METRICS)
    notes: str = ""
    rank_summary: bool = False           # also compare average ranks and mean scores over datasets
    wilcoxon: list[WilcoxonClaim] = field(default_factory=list)   # the paper's Wilcoxon comparisons (T values)
    chosen: Chosen | None = None         # a published table of selected hyper-parameters
    # the paper's printed summary rows (average ranks recomputed from the printed cells next to the
    # printed ones)
    published_summary: PublishedSummary | None = None
    # paper method → every rfbench method name that holds its results, first preferred (e.g. the
    # GFC paper's à la carte Q = 5 is `alc-q5` in Tables 2-3 and `alc` in Table 1: one run serves
    # both); ``methods`` maps to the first name
    method_alternates: dict = field(default_factory=dict)
    # paper method → other rfbench methods each checked against the same published cell, one row
    # each (an ablation: every variant next to the paper's number)
    variants: dict = field(default_factory=dict)
    # rfbench dataset → other rfbench datasets (another reading of the same data) whose rows are
    # checked against its published cells too, shown but not counted
    dataset_variants: dict = field(default_factory=dict)

    @property
    def protocol_key(self) -> str | None:
        """The protocol key of the spec's full runs (None: the spec does not fix a protocol)."""
        return self.plan.protocol.key() if self.plan else self.protocol.get("key")

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


def all_specs(registry: Registry | None = None) -> list[Spec]:
    """Every spec of bench/, its names checked against ``registry`` (default: the one built now)."""
    registry = or_default(registry)
    return [load_spec(str(p), registry) for p in spec_paths()]


def spec_of_results(directory, registry: Registry | None = None) -> Spec | None:
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


def _protocol(raw: dict, where: str, base: dict | None = None) -> Protocol:
    p = dict(base or {})
    p.update(raw or {})
    allowed = {"name", "outer_folds", "inner_folds", "repeats", "test_size", "seed", "max_samples"}
    unknown = set(p) - allowed
    if unknown:
        raise UsageError(f"{where}: unknown protocol field(s) {', '.join(sorted(unknown))}; "
                         f"allowed: {', '.join(sorted(allowed))}")
    return Protocol(**p)


def _names(value, where: str) -> list:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, list) or not value:
        raise UsageError(f"{where} must be a non-empty list")
    return value


def _plan(raw: dict, protocol: Protocol, where: str, registry: Registry) -> RunPlan:
    if "suite" in raw:
        datasets = [d.name for d in registry.suite(raw["suite"])]
    else:
        datasets = _names(raw.get("datasets"), f"{where}.datasets")
    for d in datasets:
        registry.dataset(d)
    methods = _names(raw.get("methods"), f"{where}.methods")
    for m in methods:
        registry.method(m)
    features = raw.get("features", [100])
    if not isinstance(features, list) or not all(isinstance(n, int) and not isinstance(n, bool) and n > 0
                                                 for n in features):
        raise UsageError(f"{where}.features must be a list of positive integers")
    if any(n > MAX_FEATURES for n in features):
        raise UsageError(f"{where}.features must be at most {MAX_FEATURES} each (as --features), "
                         f"got {max(features)}")
    exclude = raw.get("exclude") or {}
    if not isinstance(exclude, dict) or not all(isinstance(v, dict) for v in exclude.values()):
        raise UsageError(f"{where}.exclude must map methods to {{dataset: why}}")
    for m, excluded in exclude.items():
        if m not in methods:
            raise UsageError(f"{where}.exclude names method {m}, not among the run's methods")
        unknown = sorted(set(map(str, excluded)) - set(datasets))
        if unknown:
            raise UsageError(f"{where}.exclude.{m} names {', '.join(unknown)}, not among the run's datasets")
    return RunPlan(datasets, methods, features, protocol,
                   {str(m): {str(d): str(w) for d, w in excluded.items()} for m, excluded in exclude.items()})


def _section(cls, value, path: Path, name: str, needs: str = ""):
    """The frozen dataclass ``cls`` of the spec section ``name`` (a mapping, its field types already
    checked against FIELD_TYPES; None where the section is absent): one line naming an unknown field
    or (``needs``, else the missing fields) a missing one."""
    if value is None or value == {}:
        return None
    if not isinstance(value, dict):
        raise UsageError(f"{path.name}: field '{name}' must be a mapping, not {type(value).__name__} {value!r:.40}")
    declared = {f.name: f for f in fields(cls)}
    unknown = sorted(set(map(str, value)) - set(declared))
    if unknown:
        raise UsageError(f"{path.name}: unknown field(s) {', '.join(f'{name}.{k}' for k in unknown)}; "
                         f"allowed: {', '.join(declared)}")
    missing = [k for k, f in declared.items()
               if f.default is MISSING and f.default_factory is MISSING and value.get(k) is None]
    if missing:
        raise UsageError(f"{path.name}: {needs or f'{name} needs ' + ', '.join(missing)}")
    return cls(**{k: v for k, v in value.items() if v is not None})


def _wilcoxon(raw: dict, path: Path) -> list[WilcoxonClaim]:
    claims = [_section(WilcoxonClaim, entry, path, f"wilcoxon[{i}]") for i, entry in enumerate(raw.get("wilcoxon") or [])]
    for i, c in enumerate(claims):
        if c is None or not all(isinstance(n, int) and not isinstance(n, bool) for n in (c.n_a, c.n_b)):
            raise UsageError(f"{path.name}: wilcoxon[{i}] needs a, n_a, b, n_b (n_a and n_b whole numbers)")
    return claims


def _tolerance(raw: dict, path: Path) -> Tolerance:
    tol = raw.get("tolerance") or {}
    if "or_better_than" in tol:    # it passed cells 94x off the published number
        raise UsageError(f"{path.name}: tolerance.or_better_than is no longer supported; a cell passes only near its "
                         "own published number")
    ses = tol.get("holdout_ses")
    if ses is not None and not ses > 0:
        raise UsageError(f"{path.name}: tolerance.holdout_ses must be a positive number, got {ses!r}")
    t = _section(Tolerance, tol, path, "tolerance") or Tolerance()
    return Tolerance(stds=float(t.stds), relative=t.relative, holdout_ses=None if ses is None else float(ses),
                     why=str(t.why))


def _test(raw: dict, path: Path) -> TTest:
    test = raw.get("test") or {}
    t = (_section(TTest, test, path, "test") or TTest()) if isinstance(test, dict) else TTest(str(test))
    if t.name not in TESTS:
        raise UsageError(f"{path.name}: test.name must be one of {', '.join(TESTS)}, got {t.name!r}")
    return t


def _layout(raw: dict, path: Path) -> str:
    layout = raw.get("layout") or "default"
    if layout not in gp_table.LAYOUTS:
        raise UsageError(f"{path.name}: layout must be one of {', '.join(gp_table.LAYOUTS)}, got {layout!r}")
    return layout


@dataclass(frozen=True)
class Reason:
    """Why a failing cell misses: a sentence, the command whose output shows it and the committed results
    file that command reads (relative to the checkout); ``measured: false`` says the sentence is a
    hypothesis no committed measurement backs (the check prints it as unmeasured)."""
    text: str
    command: str
    results: str
    measured: bool = True


REASON_FIELDS = ("text", "command", "results", "measured")
ALL_DATASETS = "*"      # reasons: a paper method's reason on every dataset without one of its own


def _reason(value, where: str, path: Path) -> Reason:
    if not isinstance(value, dict) or not all(k in value for k in REASON_FIELDS[:3]):
        raise UsageError(f"{path.name}: {where} needs text, command and results (and optionally measured)")
    unknown = sorted(set(map(str, value)) - set(REASON_FIELDS))
    if unknown:
        raise UsageError(f"{path.name}: unknown field(s) {where}.{', '.join(unknown)}; allowed: "
                         f"{', '.join(REASON_FIELDS)}")
    if not isinstance(value.get("measured", True), bool):
        raise UsageError(f"{path.name}: {where}.measured must be true or false")
    return Reason(str(value["text"]), str(value["command"]), str(value["results"]), value.get("measured", True))


def _reasons(raw: dict, path: Path) -> dict:
    value = raw.get("reasons") or {}
    if not (isinstance(value, dict) and all(isinstance(v, dict) for v in value.values())):
        raise UsageError(f"{path.name}: reasons must map datasets to {{paper method: {{text, command, results}}}}")
    unknown = sorted(set(map(str, value)) - set(map(str, (raw.get("datasets") or {}).values())) - {ALL_DATASETS})
    if unknown:
        raise UsageError(f"{path.name}: reasons names {', '.join(unknown)}, not among the spec's datasets")
    return {str(d): {str(m): _reason(t, f"reasons.{d}.{m}", path) for m, t in v.items()} for d, v in value.items()}


def _metric(raw: dict, path: Path) -> str | None:
    if "higher_is_better" in raw:
        raise UsageError(f"{path}: 'higher_is_better' is now derived from the metric: write metric: accuracy (or "
                         f"another of {', '.join(cells.METRICS)}) instead")
    code = raw.get("metric")
    if code is not None and code not in cells.METRICS:
        raise UsageError(f"{path}: metric {code!r} is not one of {', '.join(cells.METRICS)}")
    return code


def load_spec(path_or_name: str, registry: Registry | None = None) -> Spec:
    """The spec of a name (bench/NAME.yaml) or file, validated; the datasets and methods its run names
    must be in ``registry`` (default: the one built now)."""
    path = find_spec(path_or_name)
    raw = load_yaml(path)
    top = [k for k in FIELD_TYPES if "." not in k]
    unknown = sorted(str(k) for k in raw if k not in top and k != "higher_is_better")   # retired: said below
    if unknown:      # a misspelt section ("runn") would otherwise be ignored without a word
        raise UsageError(f"{path.name}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(top)}")
    _check_field_types(raw, path)
    # an experiment that tests a paper's claim rather than a table has no published cells
    needed = ("published", "columns", "datasets", "methods") if raw.get("published") else ("run",)
    for key in needed:
        if key not in raw:
            raise UsageError(f"{path.name}: missing field '{key}'")
    tolerance, test = _tolerance(raw, path), _test(raw, path)
    alternates = {}
    for paper_m, names in (raw.get("methods") or {}).items():
        names = [names] if isinstance(names, str) else names
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise UsageError(f"{path.name}: methods.{paper_m} must be a method name or a list of names")
        alternates[paper_m] = names
    variants = raw.get("variants") or {}
    if not isinstance(variants, dict) or not all(isinstance(v, list) and all(isinstance(n, str) for n in v)
                                                 and k in alternates for k, v in variants.items()):
        raise UsageError(f"{path.name}: variants must map paper methods of 'methods' to lists of method names")
    dataset_variants = raw.get("dataset_variants") or {}
    if not isinstance(dataset_variants, dict) or not all(
            k in (raw.get("datasets") or {}).values() and isinstance(v, list) and all(isinstance(n, str) for n in v)
            for k, v in dataset_variants.items()):
        raise UsageError(f"{path.name}: dataset_variants must map datasets of 'datasets' to lists of dataset names")
    here = path.parent
    protocol_raw = raw.get("protocol") or {}
    plan = ci = None
    if "run" in raw:
        protocol = _protocol(protocol_raw, f"{path.name}: protocol")
        registry = or_default(registry)
        plan = _plan(raw["run"] or {}, protocol, f"{path.name}: run", registry)
        if "ci" in raw:
            c = raw["ci"] or {}
            if "reference" not in c:
                raise UsageError(f"{path.name}: ci needs a 'reference' file")
            ci_protocol = _protocol(c.get("protocol") or {}, f"{path.name}: ci.protocol", protocol_raw)
            ci_run = {k: c.get(k, (raw["run"] or {}).get(k)) for k in ("datasets", "methods", "features")}
            ci_run["exclude"] = c.get("exclude")      # the run's exclusions do not carry over: ci names its own
            ci = CIConfig(_plan(ci_run, ci_protocol, f"{path.name}: ci", registry), (here / c["reference"]).resolve(),
                          float(c.get("atol", 1e-9)))
    not_comparable = raw.get("not_comparable") or {}
    if not isinstance(not_comparable, dict):
        raise UsageError(f"{path.name}: not_comparable must map datasets to reasons")
    unknown = sorted(set(map(str, not_comparable)) - set(map(str, (raw.get("datasets") or {}).values())))
    if unknown:
        raise UsageError(f"{path.name}: not_comparable names {', '.join(unknown)}, not among the spec's datasets")
    return Spec(name=path.stem, path=path, title=str(raw.get("title", path.stem)), published=raw.get("published"),
                columns=_section(Columns, raw.get("columns"), path, "columns") or Columns(), datasets=raw.get("datasets") or {},
                methods={k: v[0] for k, v in alternates.items()}, method_alternates=alternates,
                variants={k: list(v) for k, v in variants.items()},
                dataset_variants={k: list(v) for k, v in dataset_variants.items()},
                results=results_path(path, raw["results"], bool(raw.get("results_anywhere")))
                if raw.get("results") else None,
                also_reads=[results_path(path, d, bool(raw.get("results_anywhere"))) for d in raw.get("also_reads") or []],
                plan=plan, ci=ci, n_features=raw.get("n_features", []),
                tolerance=tolerance, test=test, layout=_layout(raw, path),
                not_comparable={str(k): str(v) for k, v in not_comparable.items()}, reasons=_reasons(raw, path),
                protocol=protocol_raw, filters=raw.get("filters") or {},
                metric=_metric(raw, path), notes=str(raw.get("notes", "")),
                rank_summary=bool(raw.get("rank_summary", False)), wilcoxon=_wilcoxon(raw, path),
                chosen=_section(Chosen, raw.get("chosen"), path, "chosen"),
                published_summary=_section(PublishedSummary, raw.get("published_summary"), path, "published_summary",
                                           needs="published_summary needs file, mean and rank (and method) columns"))


def published_path(spec: Spec) -> Path:
    """A published table (in the published directory) or, for regression references, a repo file
    (bench/..., results/...)."""
    if spec.published.startswith("bench/"):
        return bench_dir().parent / spec.published
    if spec.published.startswith("results/"):
        return results_path(spec.path, spec.published) if spec.path and is_packaged(spec.path) \
            else ROOT / spec.published
    return published_dir() / spec.published
