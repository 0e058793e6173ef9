"""One prepared run on a GPU machine: how long the torgo suite and the GFC paper's Tables 1–4
take there, its GPU and its cores working together (issue 38 item 6).

    python bench/perf/gpu.py [--device cuda] [--budget-s 420] [--slots 4] \\
        [--output results/gpu-benchmark.json]

What it does, inside ``--budget-s`` seconds of wall time:

1. **device phase**: one outer fold (fold 0, exactly as the runner builds it: rfbench.execution.tasks.fold_task)
   of every (dataset, method, n) that the device serves, on ``--slots`` worker processes sharing the
   GPU (each capped at 0.9/slots of its memory): first the torgo suite (12 sets × n = 100, 500), then
   what the GFC tables add (the other sets, à la carte with Q = 1 and 2, the other RFF kernels);
2. **CPU phase, at the same time**: on the other cores (one thread each), a sample of the same
   folds on the NumPy path (errors side by side, time ratio per fold), plus calibration folds of
   the CPU-only methods (GFC, GBRFF, LightGBM), whose times against ``results/suite-benchmark.json``
   (measured on rfbench's 2-core development machine) give this machine's core speed;
3. **projection**: the device methods' fold times × outer folds, divided by the concurrency the
   slots measured; the CPU-only methods' core-seconds (suite: results/suite-benchmark.json; tables:
   their committed records) × the core-speed factor ÷ the cores left to them; wall = the larger of
   the two, since they run side by side. A device cell that was not measured in the budget is
   projected from its committed CPU time ÷ its method's median measured speed-up, and marked.

The JSON is rewritten after every finished fold, so a run stopped at any point keeps what it
measured. With ``--device torch-cpu`` (or cpu) the same script runs on a machine without a GPU
(CI-sized: small ``--budget-s``) to show that it works; its numbers then say nothing of a GPU.
"""

from __future__ import annotations

import argparse
import functools
import json
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


def fit_fold(dataset: str, method: str, n: int, fold: int, device: str, data_dir: str | None) -> dict:
    """Fit one outer fold as the runner does, on ``device`` when the estimator takes one."""
    from threadpoolctl import threadpool_limits

    from rfbench import contract, registry
    from rfbench import protocol as proto
    from rfbench.execution.tasks import fold_task

    row = {"dataset": dataset, "method": method, "n": n, "fold": fold, "device": "cpu"}
    try:
        protocol = proto.Protocol(name="cv", outer_folds=OUTER_FOLDS, inner_folds=5, seed=0)
        task = fold_task(dataset, method, fold, protocol, data_dir, threads=1, registry=registry.load())
        params = dict(task.common)
        if device != "cpu" and contract.accepts_device(task.cls):
            params["device"] = device
            row["device"] = device
        if contract.shares_budgets(task.cls):
            params["budgets"] = [n]
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
        cls = _registry().method(method).estimator_class("regression")
    except Exception:  # noqa: BLE001
        return False
    return contract.accepts_device(cls)


def device_plan(available: set[str], table_datasets: list[str], only: list[str] | None = None,
                budgets=BUDGETS) -> list[tuple[str, str, int]]:
    """(dataset, method, n) served by the device: the torgo suite first, then the GFC tables' rest
    (``only``: these methods alone)."""
    suite_methods = [m for m in SUITE_METHODS if not only or m in only]
    suite = [(ds, m, n) for m in suite_methods if accepts_device(m) for ds in TORGO for n in budgets]
    extra_methods = [m for m in ("alc", "alc-q1", "alc-q2", "rff-laplace", "rff-cauchy", "rff-gauss",
                                 "rff-gauss-grid", "rff-laplace-grid", "rff-cauchy-grid") if not only or m in only]
    extra = [(ds, m, n) for m in extra_methods if accepts_device(m) for ds in table_datasets
             for n in budgets if (ds, m, n) not in suite]
    plan = [t for t in suite + extra if t[0] in available]
    # longest first within each part: big budgets and à la carte first keeps the slots full
    key = {t: i for i, t in enumerate(plan)}
    return sorted(plan, key=lambda t: (t not in suite, -t[2], not t[1].startswith("alc"), key[t]))


def cpu_plan(available: set[str], device_tasks: list, budgets=BUDGETS) -> list[tuple[str, str, int]]:
    """The CPU sample: the same folds on the NumPy path for a spread of (method, n, dataset),
    then calibration folds of the CPU-only methods. Longest first."""
    device_methods = sorted({m for _, m, _ in device_tasks if m in SUITE_METHODS})
    small = [d for d in ("delta-ailerons", "delta-elevators", "kinematics", "cpu-activity", "breiman",
                         "pumadyn") if d in available]
    sample = []
    for m in device_methods:
        if m == "alc":
            sample += [(d, m, n) for n in budgets for d in (small[:3] if n == max(BUDGETS) else small)]
        else:
            sample += [(d, m, n) for d in small[:3] for n in budgets]
    calibration = [(d, m, 100) for m in ("lgbm", "gbrff", "gfc") for d in small[:2]]
    longest = [t for t in sample if t[1] == "alc" and t[2] == 500]
    return longest + calibration + [t for t in sample if t not in longest]


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


def committed_seconds(spec_name: str) -> dict[tuple[str, str, int], float]:
    """(dataset, method, n) → total seconds of all outer folds in the spec's committed records."""
    from rfbench.experiments.spec import load_spec
    from rfbench.store import load_results

    spec = load_spec(spec_name)
    frame = load_results([str(d) for d in spec.result_dirs()])
    frame = frame[frame["status"] == "done"]
    sums = frame.groupby(["dataset", "method", "n_features"])["total_s"].sum()
    return {(d, m, int(n)): float(s) for (d, m, n), s in sums.items()}


def project(out: dict, cores: int, slots: int) -> dict:
    dev = {(r["dataset"], r["method"], r["n"]): r for r in out["device_rows"] if r["status"] == "done"}
    cpu = {(r["dataset"], r["method"], r["n"]): r for r in out["cpu_rows"] if r["status"] == "done"}
    ref = reference_seconds(suite_rows())
    # this machine's core speed: calibration folds against the development machine's rows
    core = [ref[k] / r["seconds"] for k, r in cpu.items() if k in ref and k[1] in ("lgbm", "gbrff", "gfc")]
    core_factor = statistics.median(core) if core else 1.0      # > 1: these cores are faster
    # device speed-up per fold: against this machine's cores where sampled, else the dev machine
    ratios: dict[str, list[float]] = {}
    for k, r in dev.items():
        if k in cpu:
            ratios.setdefault(k[1], []).append(cpu[k]["seconds"] / r["seconds"])
        elif k in ref:
            ratios.setdefault(k[1], []).append(ref[k] / core_factor / r["seconds"])
    speedup = {m: statistics.median(v) for m, v in ratios.items()}
    gain = out.get("slot_concurrency") or 1.0
    cpu_cores = max(1, cores - slots)

    def wall(cells: dict[tuple, float], label: str) -> dict:
        """cells: (dataset, method, n) → seconds of the whole protocol on the dev machine's cores."""
        device_s, cpu_core_s, estimated = 0.0, 0.0, []
        for (d, m, n), s in cells.items():
            if accepts_device(m):
                if (d, m, n) in dev:
                    device_s += dev[(d, m, n)]["seconds"] * OUTER_FOLDS
                else:
                    base = m if m in speedup else ("alc" if m.startswith("alc") else "rff-gauss")
                    device_s += s / core_factor / speedup.get(base, 1.0)
                    estimated.append(f"{d}/{m}/{n}")
            else:
                cpu_core_s += s / core_factor
        gpu_wall = device_s / gain
        cpu_wall = cpu_core_s / cpu_cores
        return {"what": label, "device_seconds": device_s, "device_wall_s": gpu_wall,
                "cpu_core_seconds": cpu_core_s, "cpu_wall_s": cpu_wall,
                "projected_wall_h": max(gpu_wall, cpu_wall) / 3600,
                "projected_wall_h_if_serial": (gpu_wall + cpu_wall) / 3600,
                "device_cells_estimated": len(estimated), "estimated_cells": estimated[:40]}

    suite_cells = {(d, m, n): s * OUTER_FOLDS for (d, m, n), s in ref.items() if m in SUITE_METHODS}
    tables = {}
    all_tables: dict[tuple, float] = {}
    for spec_name in TABLE_SPECS:
        try:
            cells = committed_seconds(spec_name)
        except Exception as exc:  # noqa: BLE001 - no committed records: say so
            tables[spec_name] = {"error": f"{type(exc).__name__}: {exc}"[:200]}
            continue
        tables[spec_name] = wall(cells, spec_name)
        all_tables.update(cells)
    tables["gfc2016-tables1-4"] = wall(all_tables, "GFC Tables 1-4 together (one run of every cell)")
    return {"core_speed_factor": core_factor, "core_factor_from": len(core), "speedup_per_method": speedup,
            "slot_concurrency": gain, "cores_for_cpu_methods": cpu_cores,
            "torgo_suite": wall(suite_cells, "torgo suite, 12 sets x 8 methods x n=100,500, 10 outer folds"),
            "tables": tables}


def check_tolerances() -> dict[tuple[str, str, int], float]:
    """(dataset, method, n) → the GFC tables' check tolerance (stds × the published std)."""
    from rfbench.experiments.check import published_table
    from rfbench.experiments.spec import load_spec

    out = {}
    for name in TABLE_SPECS:
        spec = load_spec(name)
        col = spec.columns
        for _, row in published_table(spec).iterrows():
            method, dataset = spec.methods.get(str(row[col.method])), spec.datasets.get(row[col.dataset])
            if method and dataset:
                out[(dataset, method, int(row[col.n_features]))] = spec.tolerance.stds * float(row[col.std])
    return out


def per_fold_comparison(out: dict) -> list[dict]:
    tolerance = check_tolerances()
    cpu = {(r["dataset"], r["method"], r["n"]): r for r in out["cpu_rows"] if r["status"] == "done"}
    rows = []
    for r in out["device_rows"]:
        k = (r["dataset"], r["method"], r["n"])
        if r["status"] == "done" and k in cpu:
            c = cpu[k]
            rows.append({"dataset": k[0], "method": k[1], "n": k[2], "error_device": r["error"],
                         "error_cpu": c["error"], "error_diff": r["error"] - c["error"],
                         "seconds_device": r["seconds"], "seconds_cpu_core": c["seconds"],
                         "speedup": c["seconds"] / r["seconds"], "check_tolerance": tolerance.get(k)})
    return rows


# --------------------------------------------------------------------------------------------
# the summary that the README and docs/device.md quote

def render(out: dict) -> str:
    """Markdown summary of a results file (rfbench.experiments.reproduce renders the README's with it)."""
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
            pending[pool.submit(fit_fold, d, m, n, 0, device, data_dir)] = (d, m, n)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda", help="cuda (default), torch-cpu or cpu (a dry run without a GPU)")
    ap.add_argument("--budget-s", type=float, default=420.0, help="wall seconds for the measuring (default 420)")
    ap.add_argument("--slots", type=int, default=4, help="worker processes sharing the GPU (default 4)")
    ap.add_argument("--cpu-workers", type=int, default=None, help="CPU sample workers (default: cores - slots)")
    ap.add_argument("--datasets", help="comma-separated subset (default: every available set)")
    ap.add_argument("--features", default="100,500", help="budgets n (default 100,500)")
    ap.add_argument("--methods", help="comma-separated device methods (default: every one the device serves)")
    ap.add_argument("--output", default=str(REPO / "results" / "gpu-benchmark.json"))
    ap.add_argument("--render", metavar="FILE", help="print the markdown summary of a results file and stop")
    args = ap.parse_args(argv)
    if args.render:
        print(render(json.loads(Path(args.render).read_text())))
        return 0

    from rfbench.data.loader import offline
    from rfbench.experiments.spec import load_spec

    data_dir = os.environ.get("RFBENCH_DATA_DIR")
    table_ds = list(load_spec("gfc2016-table1").plan.datasets)
    wanted = args.datasets.split(",") if args.datasets else list(dict.fromkeys(TORGO + table_ds))
    available = {d for d in wanted if offline(d, data_dir)}      # present; the loader checks the files
    cores = os.cpu_count() or 1
    cpu_workers = args.cpu_workers or max(1, cores - args.slots)
    out = {"environment": environment(args.device), "budget_s": args.budget_s, "slots": args.slots,
           "cpu_workers": cpu_workers, "datasets": sorted(available), "device_rows": [], "cpu_rows": []}
    budgets = tuple(int(v) for v in args.features.split(","))
    dtasks = device_plan(available, table_ds, args.methods.split(",") if args.methods else None, budgets)
    ctasks = cpu_plan(available, dtasks, budgets)
    out["planned"] = {"device": len(dtasks), "cpu": len(ctasks)}
    output = Path(args.output)

    def save():
        out["per_fold"] = per_fold_comparison(out)
        output.parent.mkdir(parents=True, exist_ok=True)
        tmp = output.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1, default=float) + "\n")
        tmp.replace(output)

    deadline = time.time() + args.budget_s
    ctx = mp.get_context("spawn")        # CUDA cannot be used in a forked child
    dev_pool = ProcessPoolExecutor(args.slots, mp_context=ctx, initializer=_init_worker,
                                   initargs=(args.device, args.slots))
    cpu_pool = ProcessPoolExecutor(cpu_workers, mp_context=ctx, initializer=_init_worker, initargs=("cpu", 1))
    import threading

    cpu_thread = threading.Thread(target=run_phase, args=(cpu_pool, ctasks, "cpu", data_dir, deadline,
                                                          cpu_workers, out["cpu_rows"], save), daemon=True)
    cpu_thread.start()
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
