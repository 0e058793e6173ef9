"""Exact regression of every published table's fast CI configuration against a reviewed run.

Every spec (``bench/<name>.yaml``) has a ``ci:`` block (parsed into ``Spec.ci``, see
:mod:`rfbench.experiments.spec`): a fast configuration of the spec's run (a few datasets, subsampled, small n,
2-3 outer folds) and ``reference``, the committed CSV of a reviewed run of that configuration, one
row per task::

    dataset,method,n_features,fold,error,params

``error`` is the task's test error in full float precision (``repr``) and ``params`` the record's
chosen hyper-parameters as canonical JSON (sorted keys). Runs are seeded and bit-for-bit
deterministic, so CI asks for an exact match: every error and every numeric hyper-parameter within
``atol`` (default 1e-9), every other hyper-parameter equal. Any change that moves a number fails
with the cell named (dataset, method, n, fold, field, reference vs ours).

CI runs every task on one thread (``threads=1``, whatever the machine's core count), as the
references were written, so that no BLAS or OpenMP reduction order depends on the machine's core
count; ``jobs`` only spreads tasks over processes and does not change a number.

    python -m rfbench.experiments.regress --all                 # CI: run and compare every spec's ci block
    python -m rfbench.experiments.regress gfc2016-table4        # one spec
    python -m rfbench.experiments.regress SPEC --write-reference  # after reviewing a change that moves numbers

The device regression runs the same ci configurations with the device code on the CPU
(``--device torch-cpu``: the torch path of every method whose estimator takes a ``device``,
:func:`rfbench.contract.accepts_device`) against the same references, which are the NumPy path's.
The torch path agrees with NumPy to rounding, not bit for bit (a flat CV curve can pick another λ,
à la carte's L-BFGS-B magnifies 1e-13 into a test error 0.3 % off), so a device cell is judged by
the table's own check rule (:func:`rfbench.experiments.check.tolerance`) with the reference cell in place of the
published one: per (dataset, method, n) of the ci configuration,

    |mean device error − mean reference error| ≤ stds × the reference cell's std over its folds
    (its standard error where the spec's published spread is one, ``columns.std_is: se``; the
    spec's ``relative`` and ``holdout_ses`` criteria as the check applies them), and at least
    DEVICE_FLOOR × |reference mean| (a cell whose folds all have one error has no spread);

its chosen hyper-parameters are not compared. The tasks of the methods that take no device run on
the NumPy path in that run too and must still match exactly. Specs whose ci configuration has no
device method are skipped with a note. The runs go into a temporary directory, never results/.

    python -m rfbench.experiments.regress --device torch-cpu --all    # CI (bench/ci-check.sh), when torch is installed

Exit status: 0 when every task matches, 1 when a cell differs (or a task is missing or extra),
2 on a usage error (no ci block, no reference file, unknown spec).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

from rfbench import registry as registries
from rfbench.errors import UsageError
from rfbench.experiments import check, numeric_path
from rfbench.experiments.spec import CIConfig, Spec, all_specs, load_spec
from rfbench.registry import Registry
from rfbench.reporting import cells
from rfbench.store import RunDir, atomic_write_text

KEY = ["dataset", "method", "n_features", "fold"]
REFERENCE_COLUMNS = [*KEY, "error", "params"]
COMPARE_COLUMNS = [*KEY, "status", "field", "reference", "ours"]
STATUSES = ("match", "differ", "missing", "extra")


def _fix(spec: Spec) -> str:
    return (f"review a run of its ci configuration and write the reference with "
            f"`rfbench reproduce {spec.name} --ci --write-reference` "
            f"(or `python -m rfbench.experiments.regress {spec.name} --write-reference`)")


def _ci(spec: Spec) -> CIConfig:
    if spec.ci is None:
        raise UsageError(f"{spec.name}: the spec has no ci block; add one (a fast configuration of its run, "
                         f"see rfbench/experiments/spec.py) and then {_fix(spec)}")
    return spec.ci


def ci_run(spec: Spec, out: Path, jobs: int = 1, threads: int | None = None, *, registry: Registry,
           resume: bool = False, progress: bool = False, device: str = "cpu") -> Path:
    """Run the spec's CI configuration (strict: a missing dataset is an error) into ``out``.

    ``threads`` per task defaults to 1 (the references' setting; see the module docstring).
    ``device``: the run's device ("cpu", the references' NumPy path; "torch-cpu" for the device
    regression, see :func:`device_compare`).
    ``out`` must hold no records yet unless ``resume``: records of an earlier run (another code
    version) would be compared instead of this code's numbers."""
    from rfbench.execution import runner
    from rfbench.execution.runconfig import RunConfig

    ci = _ci(spec)
    out = Path(out)
    if not resume and (out / "records").is_dir() and any((out / "records").glob("*.json")):
        raise UsageError(f"{out} already holds records; a ci run starts from an empty directory "
                         "(remove it or give another output directory)")
    plan = ci.plan
    for datasets, methods in plan.method_groups():    # ci.exclude: a slow method on fewer datasets
        config = RunConfig(jobs=jobs, threads=threads or 1, strict=True, device=device)
        runner.run(datasets, methods, plan.features, plan.protocol, str(out), config.resolved(methods, registry),
                   registry=registry, progress=progress,
                   command=f"rfbench.experiments.regress ci_run {spec.name}")
    return out


# ---------------------------------------------------------------------------------------------
# records and reference tables


def canonical_params(params) -> str:
    """The params JSON of a record with sorted keys ("{}" when the record has none)."""
    if params is None or (isinstance(params, float) and math.isnan(params)) or params == "":
        return "{}"
    value = json.loads(params) if isinstance(params, str) else params
    return json.dumps(value, sort_keys=True)


def _run_records(spec: Spec, run_dir: Path) -> list[dict]:
    """The run directory's records of the spec's CI protocol (other protocols are ignored)."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise UsageError(f"results directory not found: {run_dir}")
    protocol = _ci(spec).plan.protocol
    return [r for r in RunDir(run_dir).records()
            if r.get("protocol") == protocol.key() and r.get("seed") == protocol.seed]


def _key(rec) -> tuple:
    return (str(rec["dataset"]), str(rec["method"]), int(rec["n_features"]), int(rec["fold"]))


def read_reference(spec: Spec) -> pd.DataFrame:
    """The committed reference of the spec's CI configuration (all columns as strings)."""
    path = _ci(spec).reference
    if not path.is_file():
        raise UsageError(f"{spec.name}: ci reference {path} not found; {_fix(spec)}")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise UsageError(f"{spec.name}: ci reference {path} is not a readable CSV ({exc}); {_fix(spec)}") from None
    missing = [c for c in REFERENCE_COLUMNS if c not in df.columns]
    if missing:
        raise UsageError(f"{spec.name}: ci reference {path} lacks column(s) {', '.join(missing)}; {_fix(spec)}")
    return df


def write_reference(spec: Spec, run_dir: Path) -> Path:
    """Write the spec's reference CSV from a (reviewed) run of its CI configuration."""
    ci = _ci(spec)
    records = _run_records(spec, run_dir)
    if not records:
        raise UsageError(f"{spec.name}: {run_dir} holds no records of the ci protocol "
                         f"{ci.plan.protocol.key()}; run the ci configuration first")
    failed = [r for r in records if r.get("status") != "done"]
    if failed:
        first = failed[0]
        raise UsageError(f"{spec.name}: {len(failed)} task(s) of the run did not finish (e.g. {first['dataset']} "
                         f"{first['method']} n={first['n_features']} fold {first['fold']}: {first.get('status')} "
                         f"{first.get('message') or ''}); a reference holds finished tasks only".rstrip())
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(REFERENCE_COLUMNS)
    for rec in sorted(records, key=_key):
        writer.writerow([rec["dataset"], rec["method"], int(rec["n_features"]), int(rec["fold"]),
                         repr(float(rec["error"])), canonical_params(rec.get("params"))])
    atomic_write_text(ci.reference, buf.getvalue())
    return ci.reference


_write_reference = write_reference   # for run_and_compare, whose flag of the same name hides it


# ---------------------------------------------------------------------------------------------
# comparison


def _num(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _close(a: float, b: float, atol: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol


def _param_diffs(ref, ours, atol: float, where: str = "params") -> list[tuple[str, str, str]]:
    """(field, reference, ours) for every hyper-parameter that differs (numbers within ``atol``)."""
    if _num(ref) and _num(ours):
        return [] if _close(float(ref), float(ours), atol) else [(where, repr(ref), repr(ours))]
    if isinstance(ref, dict) and isinstance(ours, dict):
        out = []
        for k in sorted(set(ref) | set(ours)):
            if k not in ours:
                out.append((f"{where}.{k}", json.dumps(ref[k]), "(absent)"))
            elif k not in ref:
                out.append((f"{where}.{k}", "(absent)", json.dumps(ours[k])))
            else:
                out.extend(_param_diffs(ref[k], ours[k], atol, f"{where}.{k}"))
        return out
    if isinstance(ref, list) and isinstance(ours, list) and len(ref) == len(ours):
        return [d for i, (a, b) in enumerate(zip(ref, ours, strict=True))
                for d in _param_diffs(a, b, atol, f"{where}[{i}]")]
    return [] if ref == ours and type(ref) is type(ours) else [(where, json.dumps(ref), json.dumps(ours))]


def compare_tables(reference: pd.DataFrame, records: list[dict], atol: float = 1e-9) -> pd.DataFrame:
    """One row per task of the reference or of ``records``: status match | differ | missing (in the
    reference, not in the run) | extra (in the run, not in the reference); for differ, ``field``
    names what differs ("error", "params.<name>", "status"; several joined by ", ") and
    ``reference`` / ``ours`` hold the values ("; "-joined)."""
    ref = {_key(r): r for r in reference.to_dict("records")}
    ours = {_key(r): r for r in records}
    rows = []
    for key in sorted(set(ref) | set(ours)):
        row = dict(zip(KEY, key, strict=True), status="match", field="", reference="", ours="")
        if key not in ours:
            row["status"] = "missing"
        elif key not in ref:
            row["status"] = "extra"
        else:
            r, o = ref[key], ours[key]
            diffs = []
            if o.get("status") != "done":
                diffs.append(("status", "done", f"{o.get('status')}: {o.get('message') or ''}".strip()))
            else:
                ref_err, our_err = float(r["error"]), float(o["error"])
                if not _close(ref_err, our_err, atol):
                    diffs.append(("error", repr(ref_err), repr(our_err)))
                diffs.extend(_param_diffs(json.loads(r["params"] or "{}"),
                                          json.loads(canonical_params(o.get("params"))), atol))
            if diffs:
                row.update(status="differ", field=", ".join(d[0] for d in diffs),
                           reference="; ".join(d[1] for d in diffs), ours="; ".join(d[2] for d in diffs))
        rows.append(row)
    return pd.DataFrame(rows, columns=COMPARE_COLUMNS)


def ci_compare(spec: Spec, run_dir: Path) -> pd.DataFrame:
    """Compare a run of the spec's CI configuration with its committed reference, task by task."""
    ci = _ci(spec)
    return compare_tables(read_reference(spec), _run_records(spec, run_dir), ci.atol)


def render(table: pd.DataFrame, spec: Spec) -> str:
    """A one-line verdict, then one line per task that does not match."""
    n = len(table)
    counts = {s: int((table["status"] == s).sum()) for s in STATUSES}
    name = f"{spec.name} ci"
    if n and counts["match"] == n:
        return f"{name}: {n} of {n} tasks match the reference"
    if not n:
        return f"{name}: FAIL: neither the reference nor the run holds a task"
    words = {"differ": "differs" if counts["differ"] == 1 else "differ", "missing": "missing", "extra": "extra"}
    parts = [f"{counts[s]} {words[s]}" for s in ("differ", "missing", "extra") if counts[s]]
    lines = [f"{name}: FAIL: {counts['match']} of {n} tasks match the reference; {', '.join(parts)}"]
    for row in table[table["status"] != "match"].itertuples(index=False):
        cell = f"  {row.dataset} {row.method} n={row.n_features} fold {row.fold}"
        if row.status == "missing":
            lines.append(f"{cell}: missing (in the reference, not in this run)")
        elif row.status == "extra":
            lines.append(f"{cell}: extra (in this run, not in the reference)")
        else:
            fields = row.field.split(", ")
            refs, ours = row.reference.split("; "), row.ours.split("; ")
            details = []
            for f, a, b in zip(fields, refs, ours, strict=False):
                delta = ""
                try:
                    delta = f" (Δ {float(b) - float(a):+.3g})"
                except ValueError:
                    pass
                details.append(f"{f}: reference {a} vs ours {b}{delta}")
            lines.append(f"{cell}: " + "; ".join(details))
    if counts["missing"] or counts["extra"]:
        lines.append(f"  (missing or extra tasks: if the ci block changed on purpose, {_fix(spec)})")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# device regression: the device code on the CPU against the same reference, within the check's rule

#: the devices the device regression runs ("cuda" runs the same comparison on a GPU machine)
REGRESS_DEVICES = ("torch-cpu", "cuda")
#: the least tolerance of a device cell, relative to its reference mean: a cell whose reference folds
#: all have the same error has no spread, and the torch path still differs from NumPy by rounding
DEVICE_FLOOR = 1e-6
DEVICE_COLUMNS = ["dataset", "method", "n_features", "folds", "reference_mean", "reference_spread", "mean",
                  "delta", "tolerance", "status", "message"]
#: a device cell is within the tolerance, outside it, or failed (a task missing, extra, not finished,
#: or not computed on the run's device)
DEVICE_STATUSES = ("within", "outside", "failed")


def device_methods(spec: Spec, registry: Registry) -> set[tuple[str, str]]:
    """The (dataset, method) pairs of the spec's ci configuration whose estimator takes a ``device``
    (:func:`rfbench.contract.accepts_device`): the pairs a device run computes with the torch code."""
    from rfbench import contract

    pairs = set()
    for datasets, methods in _ci(spec).plan.method_groups():
        for dname in datasets:
            task = registry.dataset(dname).task
            for mname in methods:
                method = registry.method(mname)
                if method.supports(task) and contract.accepts_device(method.estimator_class(task)):
                    pairs.add((dname, mname))
    return pairs


def reference_spread(spec: Spec, errors: pd.Series) -> tuple[float, float]:
    """(mean, spread) of a reference cell's fold errors, measured as the check measures a reproduced
    cell (:func:`rfbench.reporting.cells.pooled`): the spread is the std over the folds (splits, repeats), or
    its standard error (std / √folds) where the spec's published spread is one (``columns.std_is: se``):
    the reference's analogue of the published std that the check's tolerance scales."""
    errors = errors.astype(float).reset_index(drop=True)
    pool = cells.pooled(errors, pd.Series(0, index=errors.index))
    spread = pool["fold_std"]
    if spec.columns.std_is == "se" and pool["min_folds"] > 0:
        spread /= math.sqrt(pool["min_folds"])
    return pool["mean"], spread


def device_tolerance(spec: Spec, dataset: str, reference_mean: float, spread: float, registry: Registry) -> float:
    """The largest |mean device error − mean reference error| of a cell that passes: the check's
    tolerance (:func:`rfbench.experiments.check.tolerance`) of the reference cell as if it were the published one,
    at least :data:`DEVICE_FLOOR` × |reference mean|."""
    return max(check.tolerance(spec, dataset, reference_mean, spread, registry), DEVICE_FLOOR * abs(reference_mean))


def device_rule_text(spec: Spec) -> str:
    """The device cells' pass rule in words (the check's rule, reference in place of published)."""
    spread = "reference standard errors" if spec.columns.std_is == "se" else "reference stds over the folds"
    t = spec.tolerance
    parts = [f"{t.stds:g} {spread}"] if t.stds or not (t.relative or t.holdout_ses) else []
    if t.relative:
        parts.append(f"{t.relative:.0%} of the reference mean")
    if t.holdout_ses:
        parts.append(f"{t.holdout_ses:g} standard errors of a test-MSE difference (2/√n_test of the reference mean)")
    return f"|Δ mean| ≤ {' or '.join(parts)}, at least {DEVICE_FLOOR:g} of the reference mean"


def compare_device_tables(spec: Spec, reference: pd.DataFrame, records: list[dict], on_device: set[tuple[str, str]],
                          device: str = "torch-cpu", atol: float = 1e-9, *,
                          registry: Registry) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(device cells, CPU tasks) of a device run against the reference.

    Device cells (the (dataset, method) pairs of ``on_device``): one row per (dataset, method, n),
    ``status`` within / outside (:func:`device_tolerance`) / failed (a task of the reference missing
    from the run or extra in it, not finished, or computed elsewhere than on ``device``; ``message``
    says which). CPU tasks (every other pair): :func:`compare_tables`, exactly as the exact regression."""

    def pair(row) -> tuple[str, str]:
        return str(row["dataset"]), str(row["method"])

    ref_rows = reference.to_dict("records")
    cpu_ref = pd.DataFrame([r for r in ref_rows if pair(r) not in on_device], columns=reference.columns)
    cpu_table = compare_tables(cpu_ref, [r for r in records if pair(r) not in on_device], atol)

    ref_cells: dict[tuple, dict] = {}
    for r in ref_rows:
        if pair(r) in on_device:
            ref_cells.setdefault(_key(r)[:3], {})[int(r["fold"])] = float(r["error"])
    our_cells: dict[tuple, dict] = {}
    for r in records:
        if pair(r) in on_device:
            our_cells.setdefault(_key(r)[:3], {})[int(r["fold"])] = r
    rows = []
    for cell in sorted(set(ref_cells) | set(our_cells)):
        ref, ours = ref_cells.get(cell, {}), our_cells.get(cell, {})
        row = dict(zip(["dataset", "method", "n_features"], cell, strict=True), folds=len(ref),
                   reference_mean=math.nan, reference_spread=math.nan, mean=math.nan, delta=math.nan,
                   tolerance=math.nan, status="failed", message="")
        if ref:
            row["reference_mean"], row["reference_spread"] = reference_spread(spec, pd.Series(list(ref.values())))
            row["tolerance"] = device_tolerance(spec, cell[0], row["reference_mean"], row["reference_spread"],
                                                registry)
        problems = []
        if missing := sorted(set(ref) - set(ours)):
            problems.append(f"fold {cells.fold_ranges(missing)} missing (in the reference, not in this run)")
        if extra := sorted(set(ours) - set(ref)):
            problems.append(f"fold {cells.fold_ranges(extra)} extra (in this run, not in the reference)")
        for fold, rec in sorted(ours.items()):
            if rec.get("status") != "done":
                problems.append(f"fold {fold} {rec.get('status')}: {rec.get('message') or ''}".rstrip(": "))
            elif rec.get("device", device) != device:
                problems.append(f"fold {fold} ran on {rec.get('device')}, not {device}")
        if problems:
            row["message"] = "; ".join(problems)
        else:
            row["mean"] = float(pd.Series([float(r["error"]) for r in ours.values()]).mean())
            row["delta"] = row["mean"] - row["reference_mean"]
            row["status"] = "within" if abs(row["delta"]) <= row["tolerance"] else "outside"
        rows.append(row)
    return pd.DataFrame(rows, columns=DEVICE_COLUMNS), cpu_table


def _cell_name(row) -> str:
    return f"{row.dataset} {row.method} n={row.n_features}"


def render_device(cell_table: pd.DataFrame, cpu_table: pd.DataFrame, spec: Spec, device: str = "torch-cpu") -> str:
    """One line per spec (device cells within / total, the worst cell against its tolerance, the CPU
    tasks' exact match), then one line per device cell or CPU task that fails."""
    n, within = len(cell_table), int((cell_table["status"] == "within").sum())
    matched = int((cpu_table["status"] == "match").sum())
    verdict = "" if device_passed(cell_table, cpu_table) else "FAIL: "
    head = (f"{spec.name} ci on {device}: {verdict}{within} of {n} device cells within the check tolerance "
            f"({device_rule_text(spec)})")
    judged = cell_table[cell_table["status"] != "failed"]
    if len(judged):
        w = next(judged.loc[[(judged["delta"].abs() / judged["tolerance"]).idxmax()]].itertuples(index=False))
        head += (f"; worst {_cell_name(w)}: |Δ| {abs(w.delta):.3g} {'≤' if w.status == 'within' else '>'} "
                 f"{w.tolerance:.3g}")
    if len(cpu_table):
        head += (f"; {'' if matched == len(cpu_table) else 'only '}{matched} of {len(cpu_table)} CPU tasks "
                 f"({', '.join(sorted(set(cpu_table['method'])))}) match exactly")
    lines = [head]
    for row in cell_table[cell_table["status"] != "within"].itertuples(index=False):
        if row.status == "failed":
            lines.append(f"  {_cell_name(row)}: {row.message}")
        else:
            lines.append(f"  {_cell_name(row)}: mean {row.mean!r} vs reference {row.reference_mean!r} "
                         f"(Δ {row.delta:+.3g}) outside the tolerance {row.tolerance:.3g} "
                         f"(reference spread {row.reference_spread:.3g} over {row.folds} folds)")
    if matched < len(cpu_table):
        lines.extend(render(cpu_table, spec).split("\n")[1:])
    return "\n".join(lines)


def device_passed(cell_table: pd.DataFrame, cpu_table: pd.DataFrame) -> bool:
    """Whether a device run passes: every device cell within, every CPU task a match, at least one cell."""
    return (len(cell_table) > 0 and bool((cell_table["status"] == "within").all())
            and bool((cpu_table["status"] == "match").all()))


def device_compare(spec: Spec, run_dir: Path, device: str = "torch-cpu", *,
                   registry: Registry) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Compare a device run of the spec's CI configuration with its committed (NumPy) reference:
    :func:`compare_device_tables` of its records."""
    return compare_device_tables(spec, read_reference(spec), _run_records(spec, run_dir),
                                 device_methods(spec, registry), device, _ci(spec).atol, registry=registry)


def _outside_results(out: Path, registry: Registry) -> Path:
    """``out`` unless it lies in a spec's results directory (a device run never writes there)."""
    resolved = Path(out).resolve()
    for spec in all_specs(registry):
        if spec.results is not None and resolved.is_relative_to(Path(spec.results).resolve()):
            raise UsageError(f"{out} lies in {spec.name}'s results directory; a device regression runs into a "
                             "temporary directory (leave --out out) or another directory")
    return Path(out)


def device_run_and_compare(spec: Spec, out: Path | None = None, *, device: str = "torch-cpu", jobs: int = 1,
                           threads: int | None = None, registry: Registry, echo=print) -> int | None:
    """Run the spec's CI configuration on ``device`` into ``out`` (default: a new temporary
    directory), compare it with the reference (:func:`device_compare`) and print the verdict. Returns
    1 when it fails, 0 when it passes, None (after a one-line note) when no method of the ci
    configuration takes a device."""
    _ci(spec)
    read_reference(spec)
    if not device_methods(spec, registry):
        methods = sorted({m for _, ms in _ci(spec).plan.method_groups() for m in ms})
        echo(f"{spec.name} ci on {device}: skipped, no method of its ci configuration takes a device "
             f"({', '.join(methods)}: the exact regression covers them)")
        return None
    out = _outside_results(out, registry) if out else Path(tempfile.mkdtemp(prefix=f"rfbench-ci-{device}-{spec.name}-"))
    t0 = time.perf_counter()
    run_dir = ci_run(spec, out, jobs=jobs, threads=threads, registry=registry, device=device)
    secs = time.perf_counter() - t0
    cell_table, cpu_table = device_compare(spec, run_dir, device, registry=registry)
    head, *rest = render_device(cell_table, cpu_table, spec, device).split("\n")
    echo("\n".join([f"{head} (run {secs:.0f} s in {run_dir})", *rest]))
    return 0 if device_passed(cell_table, cpu_table) else 1

# ---------------------------------------------------------------------------------------------
# command line: `rfbench reproduce SPEC... --ci [--write-reference]` and `python -m rfbench.experiments.regress`


def run_and_compare(spec: Spec, out: Path | None = None, *, write_reference: bool = False, jobs: int = 1,
                    threads: int | None = None, registry: Registry, echo=print) -> int:
    """Run the spec's CI configuration into ``out`` (default: a new temporary directory), then
    compare it with the reference and print the verdict (or, with ``write_reference``, write the
    reference). Returns 1 when a task does not match, else 0; bad input raises UsageError before
    anything runs."""
    _ci(spec)
    if not write_reference:
        read_reference(spec)
    elif not numeric_path.on_path():
        raise UsageError(f"{spec.name}: a reference is written on the CI path ({numeric_path.PATH_WORDS}), which "
                         f"every CI machine can take; this process runs {numeric_path.describe()}: run "
                         f"{numeric_path.PIN_COMMAND} in the shell first")
    out = Path(out) if out else Path(tempfile.mkdtemp(prefix=f"rfbench-ci-{spec.name}-"))
    t0 = time.perf_counter()
    run_dir = ci_run(spec, out, jobs=jobs, threads=threads, registry=registry)
    secs = time.perf_counter() - t0
    if write_reference:
        path = _write_reference(spec, run_dir)
        echo(f"{spec.name} ci: wrote {path} ({len(read_reference(spec))} tasks; run {secs:.0f} s in {run_dir})")
        return 0
    table = ci_compare(spec, run_dir)
    head, *rest = render(table, spec).split("\n")
    matched = bool(len(table)) and bool((table["status"] == "match").all())
    note = [] if matched or not (advice := numeric_path.advice()) else [advice]
    echo("\n".join([f"{head} (run {secs:.0f} s in {run_dir})", *rest, *note]))
    return 0 if matched else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rfbench.experiments.regress",
                                 description="Run each spec's fast ci configuration and compare every error and "
                                             "chosen hyper-parameter exactly with its committed reference; with "
                                             "--device, run the device code and compare each cell within the "
                                             "table's check tolerance.")
    ap.add_argument("specs", nargs="*", metavar="SPEC", help="spec names or files (bench/<name>.yaml)")
    ap.add_argument("--all", action="store_true", help="every spec in bench/ (each must have a ci block)")
    ap.add_argument("--write-reference", action="store_true",
                    help="write the reference from this run instead of comparing (review the numbers first)")
    ap.add_argument("--device", choices=REGRESS_DEVICES, default=None,
                    help="the device regression: run the methods that take a device on it (torch-cpu: their torch "
                         "code on the CPU) and compare each (dataset, method, n) cell's mean error with the "
                         "reference within the table's check tolerance; the other methods' tasks still exactly; "
                         "specs without a device method are skipped")
    ap.add_argument("--out", type=Path, default=None,
                    help="parent directory of the runs (one new subdirectory per spec; default: a temporary one)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (tasks run on one thread each)")
    args = ap.parse_args(argv)
    try:
        if args.all == bool(args.specs):
            raise UsageError("name specs or give --all, not both")
        if args.device and args.write_reference:
            raise UsageError("--write-reference writes the NumPy path's reference; leave out --device")
        reg = registries.load()
        specs = all_specs(reg) if args.all else [load_spec(s, reg) for s in args.specs]
        for spec in specs:             # every usage error before anything runs
            _ci(spec)
            if not args.write_reference:
                read_reference(spec)
        if args.device:
            from rfbench.execution.runconfig import RunConfig

            RunConfig(device=args.device)       # no torch (or no GPU for cuda): one line, before anything runs
            if args.out:
                _outside_results(args.out, reg)
        base = args.out or Path(tempfile.mkdtemp(prefix="rfbench-ci-"))
        t0 = time.perf_counter()
        if args.device:
            verdicts = [device_run_and_compare(spec, base / f"{spec.name}-{args.device}", device=args.device,
                                               jobs=args.jobs, registry=reg) for spec in specs]
            ran = [v for v in verdicts if v is not None]
            failed = sum(ran)
            print(f"device regression ({args.device}): {len(ran)} spec(s), {len(specs) - len(ran)} skipped, "
                  f"{failed} failing, in {time.perf_counter() - t0:.0f} s")
            return 1 if failed else 0
        failed = sum(run_and_compare(spec, base / spec.name, write_reference=args.write_reference, jobs=args.jobs,
                                     registry=reg) for spec in specs)
        print(f"ci regression: {len(specs)} spec(s), {failed} failing, in {time.perf_counter() - t0:.0f} s")
        return 1 if failed else 0
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
