"""Progress of (possibly unfinished) runs: what was asked for, what is done, what is left.

What was asked for comes from the experiment spec whose results directory it is (its datasets ×
methods × budgets × outer folds, methods only on the task types they support); a directory that
belongs to no spec falls back to the union of its invocations' plans in ``runs.jsonl``. The done
ones are the records. Tasks of datasets that cannot be obtained offline are counted apart
(``no_data``), not as left. Column ``cells_done`` counts the datasets whose (method, n) cell is complete (cells.completeness:
every seed has every fold), of ``cells`` asked for. The time left is estimated per task from the median time of the finished tasks of the
same (dataset, method, n); for a cell with none yet, from the same dataset and method at another
budget (scaled by the method's time ratio between budgets), else from a power law in rows and
inputs (the registry shape) fitted to the (method, n)'s finished datasets (proportional to
rows × inputs with a single dataset; a budget no dataset has reached yet: the law of the method's
nearest other budget, scaled), a rough guess (column ``by_size`` counts those tasks): the
estimator of :mod:`rfbench.execution.estimate`, which ``rfbench run --dry-run`` shares. One core per
task, as the long runs use it. The datasets and methods are those of the :class:`rfbench.registry.Registry`
given (built once by the command).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from rfbench import protocol as proto
from rfbench.data.loader import offline
from rfbench.errors import UsageError
from rfbench.execution.estimate import cpu_path_only, task_cost, task_seconds
from rfbench.experiments import sources, timings
from rfbench.experiments.spec import load_spec, spec_of_results
from rfbench.registry import Registry
from rfbench.reporting import cells as cells_mod
from rfbench.store import claim_is_stale, device_tasks, load_results

KEY = ["dataset", "method", "n_features", "fold"]


def spec_plan(spec, registry: Registry) -> pd.DataFrame:
    """(dataset, method, n_features, fold, protocol) of every task the spec's run declares."""
    p = spec.plan
    rows = []
    for dname in p.datasets:
        task = registry.dataset(dname).task
        for mname in p.methods:
            if registry.method(mname).supports(task) and p.runs(mname, dname):
                rows.extend((dname, mname, int(n), f, p.protocol.key())
                            for n in p.features for f in range(p.protocol.n_outer))
    return pd.DataFrame(rows, columns=KEY + ["protocol"])


def _target(arg: str, registry: Registry):
    """(label, directory, what its results are read from (rfbench.experiments.sources: the directory,
    its shipped baseline or None), plan, merge, the spec or None) of a spec name/file or a results
    directory."""
    path = Path(arg)
    if path.is_dir():
        spec = spec_of_results(path, registry)
        if spec is not None and spec.plan:
            return spec.name, path, path, spec_plan(spec, registry), "left", spec
        return str(arg), path, path, planned_tasks(path, registry), "outer", None
    spec = load_spec(arg, registry)
    if spec.plan is None or spec.results is None:
        raise UsageError(f"spec {spec.name} declares no run")
    return spec.name, spec.results, sources.source(spec.results), spec_plan(spec, registry), "left", spec


def planned_tasks(path: Path, registry: Registry) -> pd.DataFrame:
    """(dataset, method, n_features, fold, protocol) of every task some invocation asked for."""
    history = Path(path) / "runs.jsonl"
    rows = set()
    task_of: dict[str, str | None] = {}           # registry look-ups once per name, not per invocation
    supports: dict[tuple[str, str], bool] = {}

    def task(dname):
        if dname not in task_of:
            try:
                task_of[dname] = registry.dataset(dname).task
            except UsageError:
                task_of[dname] = None             # a dataset the registry no longer has
        return task_of[dname]

    def runs(mname, task):
        if (mname, task) not in supports:
            try:
                supports[(mname, task)] = bool(registry.method(mname).supports(task))
            except UsageError:
                supports[(mname, task)] = False
        return supports[(mname, task)]

    if history.is_file():
        for line in filter(str.strip, history.read_text().splitlines()):
            info = json.loads(line)
            protocol = proto.Protocol(**info["protocol"])
            folds = info.get("folds") or range(protocol.n_outer)
            for dname in info.get("datasets", []):
                if task(dname) is None:
                    continue
                for mname in info.get("methods", []):
                    if not runs(mname, task(dname)):
                        continue
                    rows.update((dname, mname, int(n), int(f), protocol.key())
                                for n in info.get("features", []) for f in folds)
    return pd.DataFrame(sorted(rows), columns=KEY + ["protocol"])


def status(targets, data_dir, registry: Registry) -> pd.DataFrame:
    """One row per (spec or directory, method, n): tasks asked for, done, failed, left (with data
    offline), without data offline, and the estimated core-hours left; the names are those of
    ``registry``. A spec's results are read where
    :mod:`rfbench.experiments.sources` says (its directory, else its shipped baseline): the table's
    ``attrs["sources"]`` holds the line saying which, one per spec."""
    out, said = [], []
    for arg in targets:
        # a spec's plan is the whole question (records beyond it belong to other experiments);
        # a plain directory's plan is rebuilt from its history, so its records count too
        label, path, src, plan, how, spec = _target(str(arg), registry)
        if not Path(str(arg)).is_dir():           # a spec named: say where its results were read from
            said.append(f"{label}: {sources.describe([(path, src)])}")
        try:
            res = load_results([src], mixed_protocols=True) if src is not None and (
                sources.is_shipped(src) or Path(src).is_dir()) else None
        except UsageError:                        # nothing finished yet
            res = None
        if res is None:
            if how == "outer" and plan.empty:     # a directory with neither runs.jsonl nor records
                raise UsageError(f"no run in {path} yet (no runs.jsonl, no records); start one with "
                                 f"`rfbench run --out {path}` or name a spec (`rfbench status` alone shows every spec)")
            res = pd.DataFrame(columns=KEY + ["protocol", "status", "total_s", "cpu_s", "fit_s"])
        res = res.astype({"n_features": int, "fold": int})
        if len(plan):                             # a spec's table counts its own protocol only
            res = res[res["protocol"].isin(set(plan["protocol"]))]
        if "cpu_s" not in res:                    # records written before cpu_s: their wall time counts
            res = res.assign(cpu_s=np.nan)
        if "fit_s" not in res:
            res = res.assign(fit_s=np.nan)
        tasks = plan.merge(res[KEY + ["protocol", "status", "total_s", "cpu_s", "fit_s"]], on=KEY + ["protocol"],
                           how=how)
        tasks["status"] = tasks["status"].fillna("todo")
        available = {name: offline(registry.dataset(name), data_dir, registry=registry)
                     for name in tasks["dataset"].unique()}
        no_data = (tasks["status"] == "todo") & ~tasks["dataset"].map(available).astype(bool)
        tasks.loc[no_data, "status"] = "no data"
        done = tasks[tasks["status"] == "done"]
        # times of the NumPy path: a task a GPU computed does not show it (its count still counts)
        timed = cpu_path_only(done, device_tasks([src]) if src is not None else set())
        per_mn = timed.assign(cost_s=task_cost(timed)).groupby(["method", "n_features"])["cost_s"].median()
        if spec is not None:        # a method without a finished task here: its tasks in the other specs
            timed, note = timings.estimate_timings(spec, timed, registry)
            if note:
                said.append(f"{label}: {note}")
        estimate = task_seconds(timed, registry=registry)
        running = sum(not claim_is_stale(p) for p in _claims(path / "records"))
        complete = cells_mod.completeness(done)["complete"] if len(done) else pd.Series(dtype=bool)
        # every task left at once: a fold's budgets run together (a budget-free fit shared among them)
        left_all = tasks[~tasks["status"].isin(["done", "no data"])]
        est_all, known_all = estimate.of_tasks([(r.dataset, r.method, int(r.n_features), (r.fold, r.protocol))
                                                for r in left_all.itertuples()])
        left_all = left_all.assign(est_s=np.asarray(est_all, dtype=float), known=np.asarray(known_all, dtype=bool))
        for (meth, n), g in tasks.groupby(["method", "n_features"], sort=True):
            left = left_all.loc[g.index.intersection(left_all.index)]
            est, known = left["est_s"].to_numpy(), list(left["known"])
            out.append({"spec": label, "method": meth, "n": int(n), "asked": len(g),
                        "done": int((g["status"] == "done").sum()),
                        "failed": int(g["status"].isin(["error", "timeout"]).sum()),
                        "left": len(left),
                        "cells_done": int(sum(complete.get((d, n, meth), False) for d in g["dataset"].unique())),
                        "cells": int(g["dataset"].nunique()), "no_data": int((g["status"] == "no data").sum()), "median_task_s": per_mn.get((meth, n), np.nan),
                        "left_core_h": float(np.nansum(est)) / 3600 if len(left) else 0.0,
                        "by_size": len(known) - int(sum(known)),
                        "unestimated": int(np.isnan(est).sum())})
        if running:
            out.append({"spec": label, "method": f"({running} task(s) running now)"})
    table = pd.DataFrame(out)
    table.attrs["sources"] = said
    return table


def _claims(records: Path) -> list[Path]:
    """records/*.claim (one listing of the directory, without matching 100 000 names against a glob)."""
    try:
        with os.scandir(records) as entries:
            return [records / e.name for e in entries if e.name.endswith(".claim")]
    except OSError:
        return []


def render(table: pd.DataFrame) -> str:
    total = table[["asked", "done", "left", "no_data", "left_core_h"]].sum(numeric_only=True)
    shown = table.copy()
    # counts stay integers when a "running now" row (no counts) turns their columns into floats
    for col in ("n", "asked", "done", "failed", "left", "cells_done", "cells", "no_data", "by_size", "unestimated"):
        shown[col] = [("" if pd.isna(v) else str(int(v))) for v in table[col]]
    body = tabulate(shown.astype(object).where(shown.notna(), ""), headers="keys", tablefmt="simple",
                    showindex=False, floatfmt=".1f")
    per_spec = table.groupby("spec", sort=False)[["asked", "done", "failed", "left", "no_data", "left_core_h"]].sum()
    lines = "".join(f"{name}: {int(r.done)} of {int(r.asked)} done, {int(r.failed)} failed, {int(r.left)} left "
                    f"(≈ {r.left_core_h:.1f} core-h), {int(r.no_data)} without data offline\n"
                    for name, r in per_spec.iterrows())
    return (body + "\n\n" + lines + f"\nIn all: {int(total['done'])} of {int(total['asked'])} tasks done, "
            f"{int(total['left'])} left, {int(total['no_data'])} without data offline (they need the network), "
            f"about {total['left_core_h']:.1f} core-hours on one core each (by_size: a rough guess from another budget "
            "of the same dataset, or from a power law in rows and inputs fitted to other datasets' times or declared by the method; unestimated: no finished task of that "
            "method and n)\n")
