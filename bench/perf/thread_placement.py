"""Two workers × one thread, or one worker × two threads? Measured per method on this machine.

A long run keeps every core busy either way; what differs is the throughput. For each method this
runs the same two work items (outer folds 0 and 1 of one dataset, every budget, exactly as
``rfbench run`` runs them through :func:`rfbench.execution.tasks.execute`):

* **2 × 1**: two worker processes at once, one thread each (``--jobs 2 --threads 1``);
* **1 × 2**: one worker process, the two items one after the other, two threads each
  (``--jobs 1 --threads 2``; the methods' ``n_jobs`` and BLAS both get the two threads);

and reports both wall times, their ratio and the faster placement, with the errors of both (a
method whose threads only regroup sums agrees to rounding). Run it on an otherwise idle machine.

    python bench/perf/thread_placement.py [--methods gfc,alc,...] [--dataset kinematics] \\
        [--features 100,500] [--output results/thread-placement.json]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from rfbench import contract, registry
from rfbench import (
    protocol as proto,  # first: rfbench sets the BLAS thread timeout before NumPy loads
)
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.store import atomic_write_text

SUITE_METHODS = ["gfc", "alc", "rff-gauss", "eerf", "lkrf", "gbrff", "lgbm", "salsa"]


def _items(method: str, dataset: str, budgets: tuple[int, ...], fold: int) -> list[WorkItem]:
    reg = registry.load()
    cls = reg.method(method).estimator_class(reg.dataset(dataset).task)
    shares = contract.shares_budgets(cls)     # as the runner plans work items
    return [WorkItem(dataset, method, fold, budgets)] if shares else [WorkItem(dataset, method, fold, (n,)) for n in budgets]


def _run_items(items: list[WorkItem], threads: int) -> list[dict]:
    """The items one after the other in this process (a fresh worker: data loaded inside)."""
    data_dir = os.environ.get("RFBENCH_DATA_DIR")
    reg = registry.load()
    out = []
    for item in items:
        out += execute(item, WorkerOptions(proto.Protocol(), DataSources.from_settings(data_dir), threads, None, reg))
    return out


def measure(method: str, dataset: str, budgets: tuple[int, ...]) -> dict:
    folds = [_items(method, dataset, budgets, f) for f in (0, 1)]
    # worker processes as the runner's: not daemonic (ProcessPoolExecutor's), so that a method's own
    # loky pool (à la carte's restarts, the grid searches) can start inside them with n_jobs = 2
    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(2, mp_context=ctx) as pool:   # 2 × 1: the two folds at once, one thread each
        list(pool.map(_run_items, [[], []], [1, 1]))       # both workers started before the clock
        t0 = time.perf_counter()
        two_by_one = list(pool.map(_run_items, folds, [1, 1]))
        wall_2x1 = time.perf_counter() - t0
    with ProcessPoolExecutor(1, mp_context=ctx) as pool:   # 1 × 2: one worker, the folds in turn, two threads
        pool.submit(_run_items, [], 2).result()
        t0 = time.perf_counter()
        one_by_two = pool.submit(_run_items, folds[0] + folds[1], 2).result()
        wall_1x2 = time.perf_counter() - t0
    errors = lambda recs: {f"f{r.fold}n{r.n_features}": r.error for r in recs}   # noqa: E731
    e21 = {k: v for recs in two_by_one for k, v in errors(recs).items()}
    return {"method": method, "dataset": dataset, "budgets": list(budgets), "wall_2x1_s": round(wall_2x1, 2),
            "wall_1x2_s": round(wall_1x2, 2), "ratio_1x2_over_2x1": round(wall_1x2 / wall_2x1, 3),
            "faster": "2x1" if wall_2x1 <= wall_1x2 else "1x2",
            "errors_2x1": e21, "errors_1x2": errors(one_by_two),
            "status": sorted({r.status for recs in [*two_by_one, one_by_two] for r in recs})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(SUITE_METHODS))
    ap.add_argument("--dataset", default="kinematics")
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--output", default="results/thread-placement.json")
    args = ap.parse_args()
    budgets = tuple(sorted(int(n) for n in args.features.split(",")))
    out = Path(args.output)
    state = json.loads(out.read_text()) if out.is_file() else {"machine_cores": os.cpu_count(), "rows": []}
    for method in args.methods.split(","):
        row = measure(method, args.dataset, budgets)
        state["rows"] = [r for r in state["rows"] if (r["method"], r["dataset"]) != (method, args.dataset)] + [row]
        atomic_write_text(out, json.dumps(state, indent=1))
        print(f"{method:10s} {args.dataset:12s} 2×1 {row['wall_2x1_s']:8.1f} s   1×2 {row['wall_1x2_s']:8.1f} s   "
              f"ratio {row['ratio_1x2_over_2x1']:.2f}  → {row['faster']}", flush=True)


if __name__ == "__main__":
    main()
