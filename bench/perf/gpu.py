"""One prepared run on a GPU machine: how long the torgo suite and the GFC paper's Tables 1–4
take there, its GPU and its cores working together (issue 38 item 6).

    python bench/perf/gpu.py [--device cuda] [--budget-s 420] [--slots 4] \\
        [--output results/gpu-benchmark.json]
    python bench/perf/gpu.py --project-only [results/gpu-benchmark.json]

What it does, inside ``--budget-s`` seconds of wall time:

1. **device phase**: one outer fold (fold 0, exactly as the runner builds it: rfbench.execution.tasks.fold_task)
   of every (dataset, method, n) that the device serves, on ``--slots`` worker processes sharing the
   GPU (each capped at 0.9/slots of its memory): first the torgo suite (12 sets × n = 100, 500), then
   torgo-modern's device rows on the same sets (falkon, gp-sod, xrfm, svgp), then what the GFC tables add (the other sets, à la carte with Q = 1 and 2, the other RFF kernels);
   before that, à la carte's n = 500 folds of three sets one at a time (the GPU otherwise idle):
   the per-fold speed-up, which the shared phase's folds do not show;
2. **CPU phase, at the same time**: on the other cores (one thread each), a sample of the same
   folds on the NumPy path (errors side by side, time ratio per fold), plus calibration folds of
   the CPU-only methods (GFC, GBRFF, LightGBM: the same work items as their rows of
   ``results/suite-benchmark.json``, measured on rfbench's 2-core development machine), whose
   times give this machine's core speed per method, with every core busy;
3. **projection**, for ``rfbench run --jobs <cores> --gpu-slots <slots>``, which keeps every worker
   busy: the device methods' fold times (measured while sharing the GPU) × outer folds hold a
   worker each, at most ``slots`` at a time; the CPU-only methods' core-seconds (suite:
   results/suite-benchmark.json; tables: the committed records of the cells that the spec's own
   ``run`` asks for, not the other records of its directories) ÷ their method's core speed fill
   the other workers, all of them once the device tasks are done. The larger of the GPU's time
   (device seconds ÷ the concurrency the slots measured) and the workers' (device seconds + CPU
   core-seconds) ÷ cores is the fluid lower bound (``fluid_bound_h``); the projected wall is the
   runner's own dispatch simulated on a virtual clock (rfbench.execution.simulate: the work items
   in the order the runner gives them, `rfbench run`'s for the suite, `rfbench reproduce`'s for a
   table, placed on the workers and GPU slots as rfbench.execution.executor.Dispatch places them;
   a device fold's seconds × slots ÷ the measured concurrency: the GPU's measured throughput when
   every slot is busy, and the workers' bound counts those seconds).
   A device cell that was not measured in the budget is projected from its committed CPU time ÷
   its method's median measured speed-up, and marked.

``--project-only [FILE]`` recomputes the projection from a results file's measured rows
(default results/gpu-benchmark.json), without a GPU.

The JSON is rewritten after every finished fold, so a run stopped at any point keeps what it
measured. With ``--device torch-cpu`` (or cpu) the same script runs on a machine without a GPU
(CI-sized: small ``--budget-s``) to show that it works; its numbers then say nothing of a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import multiprocessing as mp
import os
import platform
import statistics
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TORGO = ["delta-ailerons", "kinematics", "cpu-activity", "bank", "pumadyn", "delta-elevators", "ailerons",
         "pole-telecom", "elevators", "cal-housing", "breiman", "friedman"]
SUITE_METHODS = ["gfc", "alc", "rff-gauss", "eerf", "lkrf", "gbrff", "lgbm", "salsa"]
#: torgo-modern's rows (bench/torgo-modern.yaml), which the torgo suite's hour now includes (issue 44 item 4)
MODERN_METHODS = ["falkon", "hgb", "gp-sod", "xrfm", "svgp"]
TABLE_SPECS = ["gfc2016-table1", "gfc2016-tables2-3", "gfc2016-table4"]
BUDGETS = (100, 500)
OUTER_FOLDS = 10


# --------------------------------------------------------------------------------------------
# worker side

def _init_worker(device: str, slots: int) -> None:
    os.environ["OMP_NUM_THREADS"] = "1"
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    os.environ["MKL_NUM_THREADS"] = "1"
    if device.startswith("cuda"):
        import torch

        torch.cuda.set_per_process_memory_fraction(0.9 / slots)
        torch.set_num_threads(1)
        # create the context and the cuBLAS / cuSOLVER handles now, so that no fold's time has them
        A = torch.eye(8, dtype=torch.float64, device=device) * 2.0
        torch.linalg.solve_triangular(torch.linalg.cholesky_ex(A @ A)[0], A, upper=False)
        torch.cuda.synchronize()


def fit_fold(dataset: str, method: str, n: int, fold: int, device: str, data_dir: str | None,
             budgets: tuple[int, ...] | None = None) -> dict:
    """Fit one outer fold as the runner does, on ``device`` when the estimator takes one; a method
    that grows one model for several budgets grows it for ``budgets`` (default: n alone)."""
    from threadpoolctl import threadpool_limits

    from rfbench import contract, registry
    from rfbench import protocol as proto
    from rfbench.data.sources import DataSources
    from rfbench.execution.tasks import fold_task

    row = {"dataset": dataset, "method": method, "n": n, "fold": fold, "device": "cpu"}
    try:
        protocol = proto.Protocol(name="cv", outer_folds=OUTER_FOLDS, inner_folds=5, seed=0)
        task = fold_task(dataset, method, fold, protocol, DataSources.from_settings(data_dir), threads=1,
                         registry=registry.load())
        params = dict(task.common)
        if device != "cpu" and contract.accepts_device(task.cls):
            params["device"] = device
            row["device"] = device
        if contract.shares_budgets(task.cls):
            params["budgets"] = list(budgets or [n])
            row["budgets"] = params["budgets"]
        with threadpool_limits(1):
            t0 = time.perf_counter()
            est = task.cls(n_features=n, **params)
            est.fit(task.X_tr, task.y_tr)
            pred = est.predict(task.X_te)
            row["seconds"] = time.perf_counter() - t0
        row["error"] = float(proto.score(task.ds.task, task.y_te, pred, protocol.target_scaling))
        row["status"] = "done"
    except Exception as exc:  # noqa: BLE001 - a failed fold is a row with its message
        row.update(status="error", message=f"{type(exc).__name__}: {exc}"[:300])
    return row


# --------------------------------------------------------------------------------------------
# plans

@functools.cache
def _registry():
    from rfbench import registry

    return registry.load()


@functools.cache
def accepts_device(method: str) -> bool:
    """Whether the method's regressor takes a device (rfbench.contract's rule), asked once per method:
    the plans and the projection ask for every cell."""
    from rfbench import contract

    try:
        cls = regressor_class(method)
    except Exception:  # noqa: BLE001
        return False
    return contract.accepts_device(cls)


@functools.cache
def regressor_class(method: str) -> type:
    """The method's regressor class, imported for its contract alone (whether it shares budgets, takes a
    device): a method's extra (xrfm, gpytorch) is imported only when it fits, so the projection is the
    same with or without the extra installed (the registry's estimator_class refuses without it)."""
    from rfbench.registry import import_estimator

    entry = _registry().method(method)
    path = entry.estimators.get("regression") or next(iter(entry.estimators.values()))
    return import_estimator(path, f"method '{method}'", entry.sys_path)


def device_plan(available: set[str], table_datasets: list[str], only: list[str] | None = None,
                budgets=BUDGETS) -> list[tuple[str, str, int]]:
    """(dataset, method, n) served by the device: the torgo suite first, then torgo-modern's device
    rows on the same sets, then the GFC tables' rest (``only``: these methods alone)."""
    suite_methods = [m for m in SUITE_METHODS if not only or m in only]
    suite = [(ds, m, n) for m in suite_methods if accepts_device(m) for ds in TORGO for n in budgets]
    modern = [(ds, m, n) for m in MODERN_METHODS if (not only or m in only) and accepts_device(m)
              for ds in TORGO for n in budgets]
    extra_methods = [m for m in ("alc", "alc-q1", "alc-q2", "rff-laplace", "rff-cauchy", "rff-gauss",
                                 "rff-gauss-grid", "rff-laplace-grid", "rff-cauchy-grid") if not only or m in only]
    extra = [(ds, m, n) for m in extra_methods if accepts_device(m) for ds in table_datasets
             for n in budgets if (ds, m, n) not in suite]
    plan = [t for t in suite + modern + extra if t[0] in available]
    # longest first within each part: big budgets and à la carte first keeps the slots full
    key = {t: i for i, t in enumerate(plan)}
    part = {**{t: 2 for t in extra}, **{t: 1 for t in modern}, **{t: 0 for t in suite}}
    return sorted(plan, key=lambda t: (part[t], -t[2], not t[1].startswith("alc"), key[t]))


#: the CPU-only methods' calibration folds: method → the budgets of its results/suite-benchmark.json
#: work item (LightGBM and GBRFF grow one model for both budgets; the task's n is the largest)
CALIBRATION = {"lgbm": (100, 500), "gbrff": (100, 500), "gfc": (500,)}


def cpu_plan(available: set[str], device_tasks: list, budgets=BUDGETS) -> list[tuple[str, str, int]]:
    """The CPU sample: the same folds on the NumPy path for a spread of (method, n, dataset),
    then calibration folds of the CPU-only methods, each the same work item as the suite
    benchmark's row (LightGBM and GBRFF on three sets, GFC on two). Longest first."""
    device_methods = sorted({m for _, m, _ in device_tasks if m in SUITE_METHODS})
    small = [d for d in ("delta-ailerons", "delta-elevators", "kinematics", "cpu-activity", "breiman",
                         "pumadyn") if d in available]
    sample = []
    for m in device_methods:
        if m == "alc":
            sample += [(d, m, n) for n in budgets for d in (small[:3] if n == max(BUDGETS) else small)]
        else:
            sample += [(d, m, n) for d in small[:3] for n in budgets]
    calibration = [(d, m, max(b)) for m, b in CALIBRATION.items() for d in small[:2 if m == "gfc" else 3]]
    longest = [t for t in sample if t[1] == "alc" and t[2] == 500]
    return longest + calibration + [t for t in sample if t not in longest]


def alone_plan(device_tasks: list, budgets=BUDGETS) -> list[tuple[str, str, int]]:
    """À la carte's largest-n folds of the CPU sample's first three sets, to run one at a time on an
    otherwise idle GPU before the shared phase: the per-fold speed-up, which sharing the GPU with
    the other slots' folds hides (their throughput is the shared phase's)."""
    small = ("delta-ailerons", "delta-elevators", "kinematics")
    return [t for t in device_tasks if t[1] == "alc" and t[2] == max(budgets) and t[0] in small]


# --------------------------------------------------------------------------------------------
# projection

def suite_rows() -> list[dict]:
    data = json.loads((REPO / "results" / "suite-benchmark.json").read_text())
    return data["labels"][data["current"]]["rows"]


def reference_seconds(rows: list[dict]) -> dict[tuple[str, str, int], float]:
    """(dataset, method, n) → fold-0 seconds on the development machine (a shared fit split by n)."""
    out = {}
    for r in rows:
        for n in r["budgets"]:
            out[(r["dataset"], r["method"], int(n))] = r["seconds"] * n / sum(r["budgets"])
    return out


def spec_cells(spec_name: str) -> set[tuple[str, str, int]]:
    """(dataset, method, n) that the spec's ``run`` asks for, as ``rfbench reproduce`` expands it
    (rfbench.experiments.reproduce.run_groups: its methods × datasets less run.exclude, × features)."""
    from rfbench.experiments.reproduce import run_groups
    from rfbench.experiments.spec import load_spec

    spec = load_spec(spec_name, _registry())
    return {(d, m, int(n)) for ds, ms in run_groups(spec) for d in ds for m in ms for n in spec.plan.features}


def committed_tasks(spec_name: str) -> list[tuple[str, str, int, int, float]]:
    """(dataset, method, n, fold, seconds) of the spec's committed done tasks of its own run: the
    records of its protocol in its directories (rfbench.experiments.reproduce.results_of) whose cell
    the spec's ``run`` asks for; records of other runs kept in the same directories (Table 4's
    LightGBM) or read from another spec's (``also_reads``) do not count. The seconds are the
    estimator's (rfbench.execution.estimate.task_cost: CPU seconds where the record has them, the wall
    time of a busy development machine being no measure of the task)."""
    from rfbench.execution.estimate import task_cost
    from rfbench.experiments.reproduce import results_of
    from rfbench.experiments.spec import load_spec

    cells = spec_cells(spec_name)
    frame = results_of(load_spec(spec_name, _registry()))
    frame = frame[frame["status"] == "done"]
    frame = frame.assign(cost_s=task_cost(frame))
    return [(d, m, int(n), int(f), float(s))
            for d, m, n, f, s in frame[["dataset", "method", "n_features", "fold", "cost_s"]].itertuples(index=False)
            if (d, m, int(n)) in cells]


def committed_seconds(spec_name: str) -> dict[tuple[str, str, int], float]:
    """(dataset, method, n) → total seconds of all outer folds in the spec's committed records of its run."""
    out: dict[tuple[str, str, int], float] = {}
    for d, m, n, _, s in committed_tasks(spec_name):
        out[(d, m, n)] = out.get((d, m, n), 0.0) + s
    return out


def core_factors(cpu_rows: list[dict], rows: list[dict]) -> dict[str, float]:
    """Per CPU-only method, this machine's core speed against the development machine's: the median
    over its calibration folds of dev seconds ÷ seconds here (> 1: these cores are faster). A
    calibration fold repeats a suite benchmark row's work item (same budgets), with every core busy."""
    suite = {(r["dataset"], r["method"], max(r["budgets"])): r for r in rows}
    ratios: dict[str, list[float]] = {}
    for r in cpu_rows:
        ref = suite.get((r["dataset"], r["method"], r["n"]))
        if (r["status"] == "done" and r["method"] in CALIBRATION and ref is not None
                and list(r.get("budgets", [r["n"]])) == list(ref["budgets"])):
            ratios.setdefault(r["method"], []).append(ref["seconds"] / r["seconds"])
    return {m: statistics.median(v) for m, v in ratios.items()}


@functools.cache
def shares_budgets(method: str) -> bool:
    """Whether the runner grows one model for all of an item's budgets (rfbench.contract's rule)."""
    from rfbench import contract

    return contract.shares_budgets(regressor_class(method))


def runner_items(tasks: list[tuple[str, str, int, int, float]], datasets: list[str], methods: list[str],
                 on_device) -> tuple[list, dict]:
    """The runner's work items of ``tasks`` (dataset, method, n, fold, projected seconds) in the order
    rfbench.execution.runner.plan lists them (datasets, methods, folds, budgets; a method that shares
    budgets: one item per fold for all of them, its seconds the sum), and item → seconds."""
    from rfbench.execution.tasks import WorkItem

    rank_d, rank_m = {d: i for i, d in enumerate(datasets)}, {m: i for i, m in enumerate(methods)}
    groups: dict[tuple, list] = {}
    for d, m, n, f, sec in sorted(tasks, key=lambda t: (rank_d.get(t[0], len(rank_d)), t[0],
                                                        rank_m.get(t[1], len(rank_m)), t[1], t[3], t[2])):
        key = (d, m, f) if shares_budgets(m) else (d, m, f, n)
        groups.setdefault(key, []).append((n, sec))
    items, seconds = [], {}
    for key, parts in groups.items():
        item = WorkItem(key[0], key[1], key[2], tuple(n for n, _ in parts), "cuda" if on_device(key[1]) else "cpu")
        items.append(item)
        seconds[item] = sum(sec for _, sec in parts)
    return items, seconds


def project(out: dict, cores: int, slots: int, table_order: str = "longest_first") -> dict:
    """The projection of a results file's measured rows for ``cores`` workers and ``slots`` GPU
    slots; ``table_order``: the order ``rfbench reproduce`` gives its work items (a function of
    rfbench.experiments.reproduce: longest_first, its order; cheapest_first, its order before)."""
    from rfbench.execution import runner
    from rfbench.execution.simulate import simulate

    dev = {(r["dataset"], r["method"], r["n"]): r for r in out["device_rows"] if r["status"] == "done"}
    cpu = {(r["dataset"], r["method"], r["n"]): r for r in out["cpu_rows"] if r["status"] == "done"}
    rows = suite_rows()
    ref = reference_seconds(rows)
    # this machine's core speed per CPU-only method (calibration folds against the dev machine's
    # rows); a method without calibration folds takes the median of the others
    factors = core_factors(out["cpu_rows"], rows)
    core_factor = statistics.median(factors.values()) if factors else 1.0
    # device speed-up per fold: against this machine's cores where sampled, else the dev machine
    ratios: dict[str, list[float]] = {}
    for k, r in dev.items():
        if k in cpu:
            ratios.setdefault(k[1], []).append(cpu[k]["seconds"] / r["seconds"])
        elif k in ref:
            ratios.setdefault(k[1], []).append(ref[k] / core_factor / r["seconds"])
    speedup = {m: statistics.median(v) for m, v in ratios.items()}
    gain = out.get("slot_concurrency") or 1.0
    # a device fold's seconds were measured with ``gain`` folds in flight on average; with every slot
    # busy the GPU's throughput is taken to stay the measured one, each fold ``slots / gain`` slower
    stretch = max(1.0, slots / gain)

    def wall(runs: list[tuple[list, list, list, object]], label: str) -> dict:
        """runs: the runner calls, one after the other: (tasks (dataset, method, n, fold, seconds on
        the dev machine's cores), datasets, methods, the runner's order of their work items)."""
        device_s, cpu_core_s, estimated, simulated, peak, fluid, longest = 0.0, 0.0, set(), 0.0, 0, 0.0, 0.0
        beside, beside_fluid, unprojected = 0.0, 0.0, set()
        for tasks, datasets, methods, order in runs:
            here, device_before, cpu_before = [], device_s, cpu_core_s
            for d, m, n, f, s in tasks:
                if not (accepts_device(m) and (d, m, n) in dev) and not math.isfinite(s):
                    unprojected.add(f"{d}/{m}/{n}")     # neither measured here nor timed in a record
                    continue
                if accepts_device(m):
                    if (d, m, n) in dev:
                        sec = dev[(d, m, n)]["seconds"]
                    else:
                        base = m if m in speedup else ("alc" if m.startswith("alc") else "rff-gauss")
                        sec = s / core_factor / speedup.get(base, 1.0)
                        estimated.add(f"{d}/{m}/{n}")
                    device_s += sec
                    sec *= stretch
                else:
                    sec = s / factors.get(m, core_factor)
                    cpu_core_s += sec
                here.append((d, m, n, f, sec))
            # ``rfbench run --jobs cores --gpu-slots slots``: the runner's own dispatch on a virtual
            # clock (rfbench.execution.simulate), each item its projected seconds; a device item
            # holds a worker and a slot for its (shared-GPU) seconds
            items, seconds = runner_items(here, datasets, methods, accepts_device)
            placed = simulate(items, seconds, cores, slots, order=order)
            simulated += placed.makespan
            peak = max(peak, placed.peak_device)
            # longest first by the items' own projected seconds (a run whose --out holds finished
            # tasks of this machine orders its items so: rfbench.execution.runner.longest_first)
            by_own = functools.partial(runner.longest_first, seconds=lambda xs, secs=seconds: [secs[x] for x in xs])
            longest += simulate(items, seconds, cores, slots, order=by_own).makespan
            # --gpu-beside: the device items on slots of their own beside the ``cores`` CPU workers
            # (their workers' host time not counted against the cores)
            beside += simulate(items, seconds, cores, slots, order=by_own, beside=True).makespan
            # the fluid lower bound of the call: the GPU's time (device seconds ÷ the concurrency the
            # slots measured) or the work spread evenly on every core, whichever is larger
            dev_here, cpu_here = device_s - device_before, cpu_core_s - cpu_before
            fluid += max(dev_here / gain, (cpu_here + dev_here * stretch) / cores)
            beside_fluid += max(dev_here / gain, cpu_here / cores)
        gpu_wall = device_s / gain
        lanes_wall = (cpu_core_s + device_s * stretch) / cores
        return {"what": label, "device_seconds": device_s, "device_wall_s": gpu_wall,
                "cpu_core_seconds": cpu_core_s, "workers_wall_s": lanes_wall,
                "fluid_bound_h": fluid / 3600, "simulated_wall_s": simulated,
                "projected_wall_h": simulated / 3600, "longest_first_wall_h": longest / 3600,
                "beside_wall_h": beside / 3600, "beside_fluid_bound_h": beside_fluid / 3600,
                "runner_calls": len(runs), "peak_device_in_flight": peak,
                "device_cells_estimated": len(estimated), "estimated_cells": sorted(estimated)[:40],
                "cells_not_projected": len(unprojected), "not_projected": sorted(unprojected)[:40]}

    suite_tasks = [(d, m, n, f, s) for (d, m, n), s in ref.items() if m in SUITE_METHODS for f in range(OUTER_FOLDS)]
    suite_run = (suite_tasks, TORGO, SUITE_METHODS, runner.interleaved)      # rfbench run --suite torgo
    # with torgo-modern's rows: a fold's seconds from its committed record (falkon, hgb), else the
    # cell's measured device fold; a cell with neither is not projected, and said
    modern_tasks = modern_suite_tasks()
    modern_run = (suite_tasks + modern_tasks, TORGO, SUITE_METHODS + MODERN_METHODS, runner.interleaved)
    tables = {}
    all_runs: list = []
    for spec_name in TABLE_SPECS:
        try:
            runs = spec_runs(spec_name, table_order)
        except Exception as exc:  # noqa: BLE001 - no committed records: say so
            tables[spec_name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        tables[spec_name] = wall(runs, spec_name)
        cells = {(d, m, n) for tasks, *_ in runs for d, m, n, _, _ in tasks}
        missing = spec_cells(spec_name) - cells
        tables[spec_name].update(run_cells=len(cells) + len(missing), run_cells_without_records=len(missing))
        all_runs += runs
    tables["gfc2016-tables1-4"] = wall(all_runs, "GFC Tables 1-4, one rfbench reproduce after the other")
    return {"core_speed_factor": core_factor, "core_speed_per_method": factors,
            "core_factor_from": sum(1 for r in out["cpu_rows"] if r["method"] in CALIBRATION
                                    and r["status"] == "done"),
            "speedup_per_method": speedup, "slot_concurrency": gain, "device_fold_stretch": stretch,
            "cores": cores, "slots": slots,
            "wall": "projected_wall_h: the runner's dispatch (rfbench.execution.simulate) of the work items in its "
                    f"order (the suite: rfbench run's planned order, a fresh --out; a table: rfbench reproduce's, "
                    f"{table_order}); longest_first_wall_h: longest first by the items' projected seconds; "
                    "beside_wall_h: that with --gpu-beside (device items on slots of their own, beside the "
                    "cores CPU workers; beside_fluid_bound_h its bound); "
                    "fluid_bound_h: the lower bound (GPU time or work ÷ cores)",
            "torgo_suite": wall([suite_run], "torgo suite, 12 sets x 8 methods x n=100,500, 10 outer folds"),
            "torgo_suite_modern": wall([modern_run], "torgo suite with torgo-modern's 5 rows (13 methods)"),
            "tables": tables}


def modern_suite_tasks() -> list[tuple[str, str, int, int, float]]:
    """(dataset, method, n, fold, seconds on the development machine) of torgo-modern's run: each
    fold's committed time, else the median of its cell's committed folds, else NaN (no record: a
    device cell is then projected from its measured fold, a CPU-only one not at all)."""
    committed: dict[tuple, dict[int, float]] = {}
    try:
        for d, m, n, f, sec in committed_tasks("torgo-modern"):
            committed.setdefault((d, m, n), {})[f] = sec
    except Exception:  # noqa: BLE001 - no committed records (a fresh clone's baseline is read instead)
        pass
    tasks = []
    for m in MODERN_METHODS:
        for d in TORGO:
            for n in BUDGETS:
                folds = committed.get((d, m, n), {})
                median = statistics.median(folds.values()) if folds else float("nan")
                tasks += [(d, m, n, f, folds.get(f, median)) for f in range(OUTER_FOLDS)]
    return tasks


def spec_runs(spec_name: str, order: str = "longest_first") -> list[tuple[list, list, list, object]]:
    """The runner calls of ``rfbench reproduce SPEC`` (rfbench.experiments.reproduce.run_spec: one per
    group of its run), each (its committed tasks, datasets, methods, the order it gives the runner:
    ``order``, the name of its function in rfbench.experiments.reproduce)."""
    from rfbench.experiments import reproduce
    from rfbench.experiments.reproduce import run_groups
    from rfbench.experiments.spec import load_spec

    spec = load_spec(spec_name, _registry())
    tasks = committed_tasks(spec_name)
    order = getattr(reproduce, order)(spec, _registry())
    runs = []
    for ds, ms in run_groups(spec):
        mine = [t for t in tasks if t[0] in ds and t[1] in ms]
        if mine:
            runs.append((mine, ds, ms, order))
    return runs


def check_tolerances() -> dict[tuple[str, str, int], float]:
    """(dataset, method, n) → the GFC tables' check tolerance (stds × the published std)."""
    from rfbench.experiments.check import published_table
    from rfbench.experiments.spec import load_spec

    out = {}
    for name in TABLE_SPECS:
        spec = load_spec(name, _registry())
        col = spec.columns
        for _, row in published_table(spec).iterrows():
            method, dataset = spec.methods.get(str(row[col.method])), spec.datasets.get(row[col.dataset])
            if method and dataset:
                out[(dataset, method, int(row[col.n_features]))] = spec.tolerance.stds * float(row[col.std])
    return out


def per_fold_comparison(out: dict) -> list[dict]:
    tolerance = check_tolerances()
    cpu = {(r["dataset"], r["method"], r["n"]): r for r in out["cpu_rows"] if r["status"] == "done"}
    alone = {(r["dataset"], r["method"], r["n"]): r for r in out.get("alone_rows", []) if r["status"] == "done"}
    rows = []
    for r in out["device_rows"]:
        k = (r["dataset"], r["method"], r["n"])
        if r["status"] == "done" and k in cpu:
            c = cpu[k]
            rows.append({"dataset": k[0], "method": k[1], "n": k[2], "error_device": r["error"],
                         "error_cpu": c["error"], "error_diff": r["error"] - c["error"],
                         "seconds_device": r["seconds"], "seconds_cpu_core": c["seconds"],
                         "speedup": c["seconds"] / r["seconds"], "check_tolerance": tolerance.get(k)})
            if k in alone:
                rows[-1].update(seconds_device_alone=alone[k]["seconds"], error_device_alone=alone[k]["error"],
                                speedup_alone=c["seconds"] / alone[k]["seconds"])
    return rows


# --------------------------------------------------------------------------------------------
# the summary that docs/results.md and docs/device.md quote

def render(out: dict) -> str:
    """Markdown summary of a results file (rfbench.experiments.reproduce renders docs/results.md's with it)."""
    from rfbench.experiments.reproduce import gpu_benchmark_markdown

    return gpu_benchmark_markdown(out)


# --------------------------------------------------------------------------------------------
# driver

def environment(device: str) -> dict:
    env = {"machine": platform.node(), "processor": platform.processor() or platform.machine(),
           "cores": os.cpu_count(), "python": platform.python_version(), "device": device}
    try:
        import torch

        env["torch"] = torch.__version__
        if device.startswith("cuda"):
            env["card"] = torch.cuda.get_device_name(0)
            env["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    except ImportError:
        env["torch"] = None
    return env


def run_phase(pool: ProcessPoolExecutor, tasks: list, device: str, data_dir, deadline: float, width: int,
              rows: list, on_row) -> float:
    """Keep ``width`` folds in flight until the tasks or the time run out; returns the busy wall."""
    queue = list(reversed(tasks))
    pending = {}
    t0 = time.perf_counter()
    while queue or pending:
        while queue and len(pending) < width and time.time() < deadline:
            d, m, n = queue.pop()
            budgets = CALIBRATION.get(m) if device == "cpu" else None
            pending[pool.submit(fit_fold, d, m, n, 0, device, data_dir, budgets)] = (d, m, n)
        if not pending:
            break
        done, _ = wait(pending, timeout=max(0.1, deadline - time.time()), return_when=FIRST_COMPLETED)
        for fut in done:
            pending.pop(fut)
            rows.append(fut.result())
            on_row()
        if time.time() >= deadline and not done:
            break
    return time.perf_counter() - t0


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), torch-cpu or cpu (a dry run without a GPU)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall seconds for the measuring (default 420)")
    ap.add_argument("--slots", type=int, default=4, help="worker processes sharing the GPU (default 4)")
    ap.add_argument("--cpu-workers", type=int, default=None, help="CPU sample workers (default: cores - slots)")
    ap.add_argument("--datasets", help="comma-separated subset (default: every available set)")
    ap.add_argument("--features", default="100,500", help="budgets n (default 100,500)")
    ap.add_argument("--methods", help="comma-separated device methods (default: every one the device serves)")
    ap.add_argument("--output", help="the JSON written (default results/gpu-benchmark.json; with --project-only: "
                                     "none unless given)")
    ap.add_argument("--render", metavar="FILE", help="print the markdown summary of a results file and stop")
    ap.add_argument("--project-only", nargs="?", const=str(REPO / "results" / "gpu-benchmark.json"), metavar="FILE",
                    help="no measuring: the projection recomputed from a results file's measured rows (default "
                         "results/gpu-benchmark.json; its cores and slots), printed, and written with the rows "
                         "to --output if given")
    args = ap.parse_args(argv)
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0
    if args.project_only:
        measured = json.loads(Path(args.project_only).read_text())
        measured["projection"] = project(measured, measured["environment"].get("cores") or os.cpu_count() or 1,
                                         measured.get("slots", args.slots))
        if args.output:
            atomic_write(Path(args.output), json.dumps(measured, indent=1, default=float) + "\n")
        print(json.dumps(measured["projection"], indent=1, default=float))
        return 0
    args.output = args.output or str(REPO / "results" / "gpu-benchmark.json")

    from rfbench.data.loader import offline
    from rfbench.experiments.spec import load_spec

    data_dir = os.environ.get("RFBENCH_DATA_DIR")
    table_ds = list(load_spec("gfc2016-table1", _registry()).plan.datasets)
    wanted = args.datasets.split(",") if args.datasets else list(dict.fromkeys(TORGO + table_ds))
    available = {d for d in wanted if offline(d, data_dir, registry=_registry())}      # present; the loader checks the files
    cores = os.cpu_count() or 1
    cpu_workers = args.cpu_workers or max(1, cores - args.slots)
    out = {"environment": environment(args.device), "budget_s": args.budget_s, "slots": args.slots,
           "cpu_workers": cpu_workers, "datasets": sorted(available), "alone_rows": [], "device_rows": [],
           "cpu_rows": []}
    budgets = tuple(int(v) for v in args.features.split(","))
    dtasks = device_plan(available, table_ds, args.methods.split(",") if args.methods else None, budgets)
    ctasks = cpu_plan(available, dtasks, budgets)
    atasks = alone_plan(dtasks, budgets)
    out["planned"] = {"alone": len(atasks), "device": len(dtasks), "cpu": len(ctasks)}
    output = Path(args.output)

    def save():
        out["per_fold"] = per_fold_comparison(out)
        atomic_write(output, json.dumps(out, indent=1, default=float) + "\n")

    deadline = time.time() + args.budget_s
    ctx = mp.get_context("spawn")        # CUDA cannot be used in a forked child
    dev_pool = ProcessPoolExecutor(args.slots, mp_context=ctx, initializer=_init_worker,
                                   initargs=(args.device, args.slots))
    cpu_pool = ProcessPoolExecutor(cpu_workers, mp_context=ctx, initializer=_init_worker, initargs=("cpu", 1))
    import threading

    cpu_thread = threading.Thread(target=run_phase, args=(cpu_pool, ctasks, "cpu", data_dir, deadline,
                                                          cpu_workers, out["cpu_rows"], save), daemon=True)
    cpu_thread.start()
    run_phase(dev_pool, atasks, args.device, data_dir, deadline, 1, out["alone_rows"], save)
    busy = run_phase(dev_pool, dtasks, args.device, data_dir, deadline, args.slots, out["device_rows"], save)
    done_dev = [r for r in out["device_rows"] if r["status"] == "done"]
    out["device_busy_wall_s"] = busy
    out["slot_concurrency"] = (sum(r["seconds"] for r in done_dev) / busy) if done_dev and busy > 0 else 1.0
    cpu_thread.join(timeout=max(0.0, deadline - time.time()) + 5)
    for child in mp.active_children():          # stop what the budget cut short
        child.kill()
    try:
        out["projection"] = project(out, cores, args.slots)
    except Exception as exc:  # noqa: BLE001 - the measured rows are still written
        out["projection"] = {"error": f"{type(exc).__name__}: {exc}"}
    save()
    p = out["projection"]
    print(json.dumps({"card": out["environment"].get("card"), "device_folds": len(done_dev),
                      "cpu_folds": len(out["cpu_rows"]), "speedup_per_method": p.get("speedup_per_method"),
                      "torgo_suite_h": p.get("torgo_suite", {}).get("projected_wall_h"),
                      "tables": {k: v.get("projected_wall_h") for k, v in p.get("tables", {}).items()}},
                     indent=1, default=float))
    sys.stdout.flush()
    os._exit(0)             # the pools' cut-short workers were killed; do not wait on them


if __name__ == "__main__":
    raise SystemExit(main())
