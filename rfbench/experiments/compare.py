"""Compare a new method with the shipped baselines (``rfbench compare run | report``).

``run``: only the user's methods, on a baseline's datasets, under its protocol (key, seed, outer and
inner folds, or splits) and feature budgets, into the user's ``--out``. Before anything runs, the
outer splits the run will use are computed for every dataset and their fingerprint
(:func:`rfbench.execution.runner.outer_splits_fingerprint`) compared with the baseline's: different splits
(another data version, seed, fold count, test size) are refused. Under cv the run's
``folds/*.csv`` is checked again after the run; the splits, holdout and fixed protocols store no
splits, so there is nothing of the run's to re-check after it: the fingerprints computed before it
ran are what ``compare.json`` records. That file names the baseline, so that ``report`` finds it.

``report``: the run's results beside the baselines' in the papers' table layout, by
:func:`rfbench.reporting.report.render` (t-tests, Wilcoxon), on the (dataset, n, fold) that every shown method
has finished (the ``fold`` of a non-cv protocol is its split index): a screen over folds 0-2 gives
statistics over those three folds, and the output says so. The fingerprints are checked again
(under cv the run's ``folds/*.csv``, otherwise those its ``compare.json`` recorded): a run whose
splits differ from the baseline's, or a non-cv run not made by ``compare run``, is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rfbench.data.request import chosen_datasets, resolve_methods
from rfbench.errors import UsageError
from rfbench.execution import runner
from rfbench.execution.runconfig import RunConfig
from rfbench.experiments import baselines
from rfbench.experiments.spec import spec_paths
from rfbench.protocol import CV, Protocol
from rfbench.registry import Registry, gfc_note, load_yaml
from rfbench.reporting import cells
from rfbench.reporting import render as renderers
from rfbench.store import RunDir, atomic_write_text, load_results, pool_frames

MARKER = "compare.json"


def _protocol(b: baselines.Baseline, key: str | None) -> tuple[str, dict]:
    """(protocol key, settings) of the baseline the comparison runs under (one key, or ``key``)."""
    keys = sorted(b.protocols)
    if key is None:
        if len(keys) != 1:
            raise UsageError(f"baseline {b.name} holds protocols {', '.join(keys)}; choose one with --protocol KEY")
        key = keys[0]
    elif key not in b.protocols:
        raise UsageError(f"baseline {b.name} has no protocol {key} (it has {', '.join(keys)})")
    return key, b.protocols[key]


def _fingerprint_mismatch(dataset: str, seed: int, ours: str | None, theirs: str | None, where: str,
                          baseline: str) -> str:
    return (f"outer folds of {dataset} (seed {seed}) differ: {where} has {str(ours)[:19]}…, baseline {baseline} "
            f"{str(theirs)[:19]}…: not the same splits (another data version, seed, fold count or test size); run "
            f"it with `rfbench compare run {baseline} ...` into a new --out")


def run(baseline: str, methods: list[str], datasets: list[str] | None, features: list[int] | None, folds,
        out: str, config=None, *, registry: Registry, protocol_key: str | None = None,
        progress: bool = True, command: str | None = None):
    """Run ``methods`` on the baseline's outer folds (see the module notes); returns (RunDir, Baseline,
    datasets run). ``config`` (a :class:`rfbench.execution.runconfig.RunConfig`) sets the workers, threads, time
    limit and data directory; the folds and seeds are the baseline's (``folds``: a subset of them) and a
    dataset that cannot be obtained is an error. ``registry``: the registry the names are looked up in
    (:func:`rfbench.registry.load`), ``package.module:Class`` methods added to it."""
    config = config if config is not None else RunConfig()
    b = baselines.load(baseline, registry)
    key, settings = _protocol(b, protocol_key)
    rows = b.frame[b.frame["protocol"] == key]
    order = list(registry.datasets)
    held = sorted(set(rows["dataset"]), key=lambda d: (order.index(d) if d in order else len(order), d))
    datasets = list(chosen_datasets(registry, datasets or None, held, f"baseline {b.name}"))
    features = cells.subset(features or None, sorted(set(int(n) for n in rows["n_features"])), "--features",
                            f"baseline {b.name}")
    registry, methods = resolve_methods(registry, methods, "--methods is empty; name your estimator as "
                                        "package.module:Class (or a registered method)")
    methods = list(methods)
    theirs = sorted(set(methods) & set(rows["method"]))
    if theirs:
        raise UsageError(f"baseline {b.name} already holds {', '.join(theirs)}: its results ship; run your own "
                         "method (package.module:Class or a registered method the baseline lacks)")
    seeds = sorted(set(int(s) for s in rows["seed"]))
    protocol = Protocol(**settings, seed=seeds[0])
    # a run resumed or extended into the same --out keeps the fingerprints verified before
    verified = _recorded_fingerprints(Path(out), key)
    for seed in seeds:             # the splits it will use, before anything runs
        for d in datasets:
            want = b.fingerprints.get((key, d, seed))
            if want is None:
                raise UsageError(f"baseline {b.name} has no fingerprint of the splits of {d} (seed {seed}; its data "
                                 "was not here when the file was written), so identical splits cannot be verified; "
                                 "regenerate it with `rfbench baselines --write` beside the dataset mirror")
            ours = runner.outer_splits_fingerprint(d, Protocol(**settings, seed=seed), config.sources,
                                                   registry=registry)
            if ours != want:
                raise UsageError(_fingerprint_mismatch(d, seed, ours, want, "the data here", b.name))
            verified[(d, seed)] = ours
    config = config.replace(folds=folds, seeds=seeds, strict=True).resolved(methods, registry)   # jobs, threads once
    run_dir = runner.run(datasets, methods, features, protocol, out, config, registry=registry, progress=progress,
                         command=command)
    verify(run_dir.path, b, key)
    marker = {"baseline": b.ref, "protocol": key, "seeds": seeds, "datasets": datasets,
              "features": features, "methods": methods,
              "splits_sha256": [[d, seed, fp] for (d, seed), fp in sorted(verified.items())]}
    atomic_write_text(RunDir(out).inside(Path(out) / MARKER), json.dumps(marker, indent=2) + "\n")
    return run_dir, b, datasets


def _recorded_fingerprints(run_path: Path, key: str) -> dict:
    """(dataset, seed) → the fingerprint ``compare run`` computed before running into ``run_path``
    under protocol ``key`` (its compare.json); empty for a run it did not make."""
    try:
        marker = json.loads((Path(run_path) / MARKER).read_text())
        if marker.get("protocol") != key:
            return {}
        return {(d, int(seed)): fp for d, seed, fp in marker.get("splits_sha256") or []}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}


def verify(run_path: Path, b: baselines.Baseline, key: str, datasets=None) -> None:
    """Refuse (one line) a run directory whose outer splits differ from the baseline's, by fingerprint,
    for every (dataset, seed) it ran that the baseline holds (``datasets``: those, each required to
    have a fingerprint). Under cv the run's folds/*.csv are fingerprinted. The splits, holdout and
    fixed protocols store no splits: right after ``compare run`` there is nothing of the run's to
    check (``datasets`` None: this returns), and later the fingerprints its compare.json recorded
    before the run are compared, so a run not made by ``compare run`` cannot be verified."""
    cv = isinstance(Protocol.from_key(key), CV)
    if not cv and datasets is None:
        return
    prints = baselines.run_fingerprints(run_path) if cv else _recorded_fingerprints(run_path, key)
    for (protocol, d, seed), theirs in sorted(b.fingerprints.items()):
        if protocol != key or (datasets is not None and d not in datasets):
            continue
        ours = prints.get((d, seed))
        if ours is None:
            if datasets is not None:
                stored = f"no folds/{d}.csv (seed {seed})" if cv else \
                    f"no fingerprint of the {key} splits of {d} (seed {seed}) in its {MARKER}"
                raise UsageError(f"{run_path} has {stored}, so its splits cannot be checked against baseline "
                                 f"{b.name}; run it with `rfbench compare run {b.name} ...`")
            continue
        if ours != theirs:
            raise UsageError(_fingerprint_mismatch(d, seed, ours, theirs, str(run_path), b.name))


@dataclass
class Comparison:
    frame: pd.DataFrame            # the pooled results on the common folds, as report.render takes them
    notes: list[str]               # what the table is over, said above it
    folds: dict                    # dataset → the folds compared (a range text, e.g. '0-2')
    outer: int                     # folds of the protocol
    baselines: list[str]
    run_dirs: list[Path]           # the user's run directories
    # what the time figures' titles say when the walltimes are not all from one known machine
    time_caveat: str | None = None


def _machine(info: dict) -> str | None:
    """A run's machine as the comparison names it (cores, memory, processor, platform), from the
    ``machine`` of its run.json / runs.jsonl line; None when it records none."""
    m = info.get("machine") if isinstance(info, dict) else None
    if not isinstance(m, dict) or not any(m.get(k) for k in ("cpu_count", "memory_gb", "platform")):
        return None
    return (f"{m.get('cpu_count', '?')} cores, {m.get('memory_gb', '?')} GB, {m.get('processor') or '?'}, "
            f"{m.get('platform') or '?'}")


def machines_of(path) -> set[str]:
    """The machines a results directory's invocations ran on (runs.jsonl, else run.json); empty
    when none is recorded."""
    path = Path(path)
    infos = baselines.started_invocations(path)
    if not infos and (path / "run.json").is_file():
        try:
            infos = [json.loads((path / "run.json").read_text())]
        except ValueError:
            infos = []
    return {m for m in map(_machine, infos) if m}


def baseline_machines(b: baselines.Baseline) -> set[str]:
    """The machines a baseline's rows were measured on: a results directory's own runs.jsonl; for a
    shipped file (which records code version and device, not the machine) the runs.jsonl of the
    results directory it was made from, when this is a checkout that has it; else empty (unknown)."""
    if b.source.is_dir():
        return machines_of(b.source)
    for spec_path in spec_paths():
        results = load_yaml(spec_path).get("results")
        if results and Path(results).name == b.name:
            found = machines_of((spec_path.parent / results).resolve())
            if found:
                return found
    return set()


def machines_note(run_dirs, loaded) -> tuple[str, str | None]:
    """The notes' line on where the walltimes were measured and, when they are not all from one
    known machine, the short caveat the time figures' titles carry."""
    mine: set[str] = set()
    for d in run_dirs:
        mine |= machines_of(d)
    theirs = {b.name: baseline_machines(b) for b in loaded}
    unknown = [name for name, ms in theirs.items() if not ms]
    everyone = set().union(mine, *theirs.values())
    run_text = "; ".join(sorted(mine)) or "a machine its run.json does not record"
    if mine and not unknown and len(everyone) == 1:
        return (f"Walltimes: the run and the baseline(s) were measured on the same machine ({run_text}).", None)
    parts = [f"the run's on {run_text}"]
    for name, ms in theirs.items():
        parts.append(f"baseline {name}'s on " + ("; ".join(sorted(ms)) if ms else
                     "a machine it does not record (the shipped file holds code version and device only)"))
    if not mine or unknown:
        return ("Walltimes may mix machines: " + ", ".join(parts) + "; compare times across them with care.",
                "walltimes may mix machines (see the notes)")

    def short(ms: set[str]) -> set[str]:            # cores and memory, when they tell the machines apart
        return {", ".join(m.split(", ")[:2]) for m in ms}

    if len(short(everyone)) > 1:
        brief = [f"the run on {'; '.join(sorted(short(mine)))}"] + [
            f"baseline {name} on {'; '.join(sorted(short(ms)))}" for name, ms in theirs.items()]
    else:
        brief = [p.replace("'s on ", " on ", 1) for p in parts]
    return ("Walltimes mix machines: " + ", ".join(parts) + "; compare times across them with care.",
            "walltimes from different machines: " + ", ".join(brief))


def _baseline_names(run_dirs) -> list[str]:
    marker = Path(run_dirs[0]) / MARKER
    if marker.is_file():
        try:
            return [json.loads(marker.read_text())["baseline"]]
        except (ValueError, KeyError, TypeError):
            raise UsageError(f"{marker} is damaged; name the baseline with --against") from None
    raise UsageError(f"{run_dirs[0]} was not run by `rfbench compare run`; name the baseline(s) with --against "
                     "(see `rfbench baselines`)")


def compare(run_dirs, against: list[str] | None = None, methods: list[str] | None = None,
            datasets: list[str] | None = None, *, registry: Registry) -> Comparison:
    """The run's results and the baselines' on their common (dataset, n, fold) (module notes); a
    baseline given as a results directory is read with ``registry`` (:func:`rfbench.registry.load`)."""
    user = load_results(run_dirs)
    if not (user["status"] == "done").any():
        raise UsageError(f"no finished tasks in {', '.join(map(str, run_dirs))} (every record is an error or timeout; "
                         "see the message column of results.csv)")
    keys = sorted(set(user["protocol"].dropna().astype(str)))
    if len(keys) != 1:
        raise UsageError(f"{', '.join(map(str, run_dirs))} hold(s) protocols {', '.join(keys) or 'none'}; compare one "
                         "run of `rfbench compare run` at a time")
    key = keys[0]
    names = against or _baseline_names(run_dirs)
    loaded = [baselines.load(a, registry) for a in names]
    user_datasets = sorted(set(user["dataset"]))
    frames = [(", ".join(map(str, run_dirs)), user)]
    for b in loaded:
        _protocol(b, key)
        held = sorted({d for k, d, _ in b.fingerprints if k == key} & set(user_datasets))
        for d in run_dirs:
            verify(Path(d), b, key, datasets=held)
        rows = b.results[(b.results["protocol"] == key) & b.results["dataset"].isin(user_datasets)]
        if rows.empty:
            raise UsageError(f"baseline {b.name} has none of the run's datasets ({', '.join(user_datasets)}) under "
                             f"{key}")
        frames.append((f"baseline {b.name}", rows))
    df = pool_frames(frames)
    df = df[df["n_features"].isin(set(user["n_features"]))]
    df = cells.select(df, methods, datasets,
                      where=f"the run or baseline(s) {', '.join(b.name for b in loaded)} at its n")
    mine = set(user["method"]) & set(df["method"])
    if not mine:
        raise UsageError("--methods names none of the run's methods "
                         f"({', '.join(sorted(set(user['method'])))}); nothing to compare")
    df, folds = common_folds(df)
    if df.empty:
        raise UsageError("the run and the baselines have no finished fold in common; run more folds")
    protocol = Protocol.from_key(key)
    cv = isinstance(protocol, CV)
    outer, unit = protocol.n_outer, "folds" if cv else "splits"     # the fold is a split index
    seeds = sorted(set(int(s) for s in df["seed"]))
    fps = {b.fingerprints.get((key, d, s)) for b in loaded for d in folds for s in seeds} - {None}
    by_range: dict[str, list[str]] = {}
    for d, fs in folds.items():
        by_range.setdefault(fs, []).append(d)
    where = "; ".join(f"{unit} {r} of {outer} on {', '.join(ds)}" for r, ds in by_range.items())
    full = all(r == cells.fold_ranges(range(outer)) for r in by_range)     # (a holdout's one split: "0")
    # a screen keeps its protocol key: rfbench.reporting.cells sees cells with fewer folds than the protocol's
    # and labels the caption, the Wilcoxon rows and the CD diagram as a screen over these folds
    what = f"all outer {unit}" if full else "a screen"
    notes = [f"Compared: {', '.join(sorted(mine))} against the baseline(s) {', '.join(b.name for b in loaded)} under "
             f"{key}, seed {', '.join(map(str, seeds))}: {what}, {where}. Identical outer {unit} verified by their "
             f"fingerprint ({', '.join(sorted(f[:19] + '…' for f in fps))})" + ("." if cv else
             ", computed from the data by `rfbench compare run` before it ran (this protocol stores no splits)."),
             ("Every mean, std, t-test and Wilcoxon test below is over these folds only (the folds every shown "
              "method has finished), not over the published table's " + f"{outer} {unit}." if not full else
              "Every statistic below is over the folds every shown method has finished.")]
    where_timed, caveat = machines_note(run_dirs, loaded)
    notes.append(where_timed)
    gfc = gfc_note(set(df["method"]), registry)      # which reading of GFC a user picked
    if gfc:
        notes.append(gfc)
    return Comparison(df.reset_index(drop=True), notes, folds, outer, [b.name for b in loaded],
                      [Path(d) for d in run_dirs], caveat)


def common_folds(df: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Only the folds of each (dataset, n, seed) that every method shown there has finished, and
    dataset → those folds as a range text (the union over its n and seeds when they differ)."""
    done = df[df["status"] == "done"]
    keep = []
    folds: dict[str, set] = {}
    for (d, _n, _seed), cell in done.groupby(["dataset", "n_features", "seed"], sort=True):
        per_method = [set(g["fold"].astype(int)) for _, g in cell.groupby("method")]
        common = set.intersection(*per_method)
        if common:
            keep.append(cell[cell["fold"].astype(int).isin(common)])
            folds.setdefault(d, set()).update(common)
    out = pd.concat(keep) if keep else df.iloc[0:0]
    return out, {d: cells.fold_ranges(fs) for d, fs in folds.items()}


def table_model(c: Comparison, *, registry: Registry, **report_options):
    """The report's model of the compared folds (rfbench.reporting.report.table_model) with the
    comparison's notes added to it: above the table in every format, the first two (and the walltime
    caveat, when there is one) leading the LaTeX caption, and per dataset in CSV the folds compared,
    the folds of the protocol and the baselines."""
    from rfbench.reporting import report
    from rfbench.store import recorded_shapes

    report_options.setdefault("shapes", recorded_shapes(c.run_dirs))     # user datasets the registry may lack
    model = report.table_model(c.frame, registry=registry, **report_options)
    caption_notes = " ".join(c.notes[:2] + ([n for n in c.notes if n.startswith("Walltimes")] if c.time_caveat
                                           else []))
    datasets = [r.dataset for r in model.rows]
    return model.with_notes(c.notes, caption_notes, {
        "folds_compared": {d: c.folds.get(d) for d in datasets},
        "folds_of_protocol": dict.fromkeys(datasets, c.outer),
        "baselines": dict.fromkeys(datasets, ",".join(c.baselines))})


def title(c: Comparison) -> str:
    """What was compared with what, the run directories as the pages show paths (relative to the
    project, never this machine's absolute path: rfbench.reporting.shown_paths)."""
    from rfbench.reporting.shown_paths import shown

    return f"{', '.join(shown(d) for d in c.run_dirs)} against {', '.join(c.baselines)}"


def html_page(c: Comparison, model) -> str:
    """One self-contained page: the notes and the tables of the model (rfbench.reporting.render.html),
    every figure of rfbench plot drawn on the compared folds (the critical-difference diagram among
    them) and the run's provenance."""
    from rfbench.experiments import html_page as page

    fragment = renderers.render(model, "html", renderers.RenderOptions(html_fragment=True))
    return page.document(f"rfbench comparison: {title(c)}", [
        f"<h1>Comparison: {page.esc(title(c))}</h1>", fragment,
        page.figures_section(c.frame, c.run_dirs, time_caveat=c.time_caveat), page.provenance_section(c.run_dirs)])


def render(c: Comparison, fmt: str, *, registry: Registry, width: int | None = None, label: str | None = None,
           latex_width: float = renderers.TEXT_WIDTH_PT, **report_options) -> str:
    """The comparison's model (:func:`table_model`: the report with the notes) in one format; HTML
    is a page with the figures and the provenance."""
    renderers.check_format(fmt)
    model = table_model(c, registry=registry, **report_options)
    if fmt == "html":
        return html_page(c, model)
    return renderers.render(model, fmt, renderers.RenderOptions(width, label, latex_width))
