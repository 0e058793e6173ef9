"""The runner's dispatch order and a run's wall time: the order before (``rfbench run``: the planned,
interleaved order; ``rfbench reproduce``: cheapest first) against longest first (issue 44 item 4),
each simulated with the runner's own dispatch loop (rfbench.execution.simulate) on committed task
times, no task run.

    python bench/perf/dispatch_order.py [--output results/dispatch-order.json]

What it simulates:

* the torgo suite (``rfbench run --suite torgo --features 100,500``, the 8 methods of
  bench/perf/suite.py): each work item one outer fold, its seconds the fold-0 time of
  results/suite-benchmark.json (the development machine's cores; every fold alike);
* each GFC table (``rfbench reproduce SPEC``): the work items of the cells its ``run`` asks for,
  each its committed record's seconds (results/<spec>/records, all outer folds), one runner call
  after the other as run_spec makes them; Tables 1-4 one reproduce after the other;

on 2 and 16 workers (every item on the CPU, the records' times), and on 16 workers + 4 GPU slots
with the device items' times measured on an H200 (bench/perf/gpu.py's projection of
results/gpu-benchmark.json). Longest first orders by the estimates the runner has: for a table the
estimator of ``rfbench status`` on the spec's records (cell medians), for the suite the items' own
seconds (what a run whose --out holds finished tasks estimates; a fresh --out has none and keeps
the planned order). Start-up, data loading and bookkeeping are not counted.
"""

from __future__ import annotations

import argparse
import functools
import importlib.util
import json
from pathlib import Path

from rfbench import registry
from rfbench.execution import runner
from rfbench.execution.simulate import simulate
from rfbench.experiments import reproduce
from rfbench.experiments.spec import load_spec
from rfbench.store import atomic_write_text

REPO = Path(__file__).resolve().parents[2]
WORKERS = (2, 16)


@functools.cache
def gpu_module():
    spec = importlib.util.spec_from_file_location("gpu_bench", REPO / "bench/perf/gpu.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cpu(method: str) -> bool:
    return False


def suite_runs() -> list[tuple]:
    gpu = gpu_module()
    ref = gpu.reference_seconds(gpu.suite_rows())
    tasks = [(d, m, n, f, s) for (d, m, n), s in ref.items() if m in gpu.SUITE_METHODS for f in range(gpu.OUTER_FOLDS)]
    items, seconds = gpu.runner_items(tasks, gpu.TORGO, gpu.SUITE_METHODS, _cpu)
    own = functools.partial(runner.longest_first, seconds=lambda its: [seconds[i] for i in its])
    return [(items, seconds, {"planned (rfbench run)": runner.interleaved, "longest_first": own})]


def spec_runs(spec_name: str) -> list[tuple]:
    gpu = gpu_module()
    reg = registry.load()
    spec = load_spec(spec_name, reg)
    orders = {"planned (rfbench run)": runner.interleaved,
              "cheapest_first (rfbench reproduce before)": reproduce.cheapest_first(spec, reg),
              "longest_first": reproduce.longest_first(spec, reg)}
    out = []
    for tasks, datasets, methods, _ in gpu.spec_runs(spec_name):
        items, seconds = gpu.runner_items(tasks, datasets, methods, _cpu)
        out.append((items, seconds, orders))
    return out


def walls(runs: list[tuple]) -> dict:
    """Per worker count, per order: the simulated hours of the runner calls one after the other; the
    fluid bound (work ÷ workers, or the longest item) beside them."""
    out = {}
    for jobs in WORKERS:
        row = {}
        for name in runs[0][2]:
            row[name] = sum(simulate(items, seconds, jobs, order=orders[name]).makespan
                            for items, seconds, orders in runs) / 3600
        row["fluid_bound"] = sum(max(sum(seconds.values()) / jobs, max(seconds.values()))
                                 for _, seconds, _ in runs) / 3600
        before = row.get("cheapest_first (rfbench reproduce before)", row["planned (rfbench run)"])
        row["gain_h"] = before - row["longest_first"]
        row["gain_pct"] = 100 * row["gain_h"] / before if before else 0.0
        out[f"{jobs} workers"] = row
    return out


def gpu_walls() -> dict:
    """16 cores + 4 GPU slots (the H200 run's measured rows): the suite in the planned order and
    longest first; each table in reproduce's order before and now."""
    gpu = gpu_module()
    measured = json.loads((REPO / "results/gpu-benchmark.json").read_text())
    cores, slots = measured["environment"]["cores"], measured["slots"]
    before = gpu.project(measured, cores, slots, table_order="cheapest_first")
    now = gpu.project(measured, cores, slots, table_order="longest_first")
    out = {"cores": cores, "slots": slots, "card": measured["environment"].get("card"),
           "torgo suite": {"planned (rfbench run)": now["torgo_suite"]["projected_wall_h"],
                           "longest_first": now["torgo_suite"]["longest_first_wall_h"],
                           "fluid_bound": now["torgo_suite"]["fluid_bound_h"]}}
    for name, table in now["tables"].items():
        if "error" in table:
            out[name] = table
            continue
        out[name] = {"cheapest_first (rfbench reproduce before)": before["tables"][name]["projected_wall_h"],
                     "longest_first": table["projected_wall_h"], "fluid_bound": table["fluid_bound_h"]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default=str(REPO / "results" / "dispatch-order.json"))
    args = ap.parse_args(argv)
    gpu = gpu_module()
    table_runs = {name: spec_runs(name) for name in gpu.TABLE_SPECS}
    out = {"what": "simulated wall hours of the runner's dispatch (rfbench.execution.simulate), per order; "
                   "bench/perf/dispatch_order.py",
           "cpu": {"torgo suite": walls(suite_runs()),
                   **{name: walls(runs) for name, runs in table_runs.items()},
                   "gfc2016-tables1-4": walls([r for runs in table_runs.values() for r in runs])},
           "items": {"torgo suite": len(suite_runs()[0][0]),
                     **{name: sum(len(r[0]) for r in runs) for name, runs in table_runs.items()}},
           "gpu": gpu_walls()}
    atomic_write_text(Path(args.output), json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
