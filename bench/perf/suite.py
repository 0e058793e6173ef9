"""Core-seconds of the whole torgo suite per (method, n), measured on one outer fold per dataset.

`rfbench run --suite torgo --features 100,500` with every method is what a user waits on. This
runs one outer fold of every (dataset, method) exactly as the runner does (:func:`rfbench.tasks.execute`:
same folds, seeds, data and thread budget; a method that fits all budgets in one model runs once
for both), and projects each (method, n) to the full protocol: seconds × outer folds, summed over
the datasets. A work item that serves several budgets is attributed to them in proportion to n
(its fit is one model grown to the largest n; the split matters only for the per-n columns, the
totals are exact). The projected wall hours on two cores assume two one-core lanes kept busy.

    python bench/perf/suite.py [--methods gfc,alc,...] [--datasets ...] [--threads 1] \\
        [--output results/suite-benchmark.json]

Rows already in the output file are kept unless re-measured (run a subset, then the rest);
``--label`` names the code state (e.g. "before", "after gbrff budgets") and keeps one set of rows
per label, so one file holds the before/after comparison. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from rfbench import (
    protocol as proto,  # rfbench first: it sets the BLAS thread timeout before NumPy loads
)
from rfbench import registry
from rfbench.store import atomic_write_text
from rfbench.tasks import WorkItem, execute

SUITE_METHODS = ["gfc", "alc", "rff-gauss", "eerf", "lkrf", "gbrff", "lgbm", "salsa"]


def projected(rows: list[dict], outer_folds: int) -> list[dict]:
    """Per (method, n): measured seconds summed over datasets and projected to the protocol."""
    out: dict[tuple[str, int], dict] = {}
    for r in rows:
        share = {n: n / sum(r["budgets"]) for n in r["budgets"]}
        for n in r["budgets"]:
            cell = out.setdefault((r["method"], n), {"method": r["method"], "n_features": n, "datasets": 0,
                                                     "fold_seconds": 0.0})
            cell["datasets"] += 1
            cell["fold_seconds"] += r["seconds"] * share[n]
    for cell in out.values():
        cell["projected_core_hours"] = cell["fold_seconds"] * outer_folds / 3600
    return sorted(out.values(), key=lambda c: (c["method"], c["n_features"]))


def summary(rows: list[dict], outer_folds: int, cores: int = 2) -> dict:
    cells = projected(rows, outer_folds)
    core_h = sum(c["projected_core_hours"] for c in cells)
    return {"cells": cells, "projected_core_hours": core_h, "projected_wall_hours_2_cores": core_h / cores,
            "datasets": sorted({r["dataset"] for r in rows}), "outer_folds": outer_folds}


def table(summ: dict) -> str:
    from tabulate import tabulate

    rows = [[c["method"], c["n_features"], c["datasets"], f"{c['fold_seconds']:.1f}", f"{c['projected_core_hours']:.2f}"]
            for c in summ["cells"]]
    rows.append(["all", "", len(summ["datasets"]), "", f"{summ['projected_core_hours']:.2f}"])
    return (tabulate(rows, headers=["method", "n", "datasets", "s (one fold, all sets)", "core-h (protocol)"])
            + f"\nprojected wall time on 2 cores: {summ['projected_wall_hours_2_cores']:.1f} h\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="torgo")
    ap.add_argument("--datasets", default=None, help="comma-separated subset of the suite")
    ap.add_argument("--methods", default=",".join(SUITE_METHODS))
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--label", default="current", help="the code state these rows measure")
    ap.add_argument("--output", default="results/suite-benchmark.json")
    args = ap.parse_args()
    protocol = proto.Protocol()
    datasets = [d.name for d in registry.suite_datasets(args.suite)]
    if args.datasets:
        datasets = [d for d in datasets if d in args.datasets.split(",")]
    budgets = tuple(sorted(int(n) for n in args.features.split(",")))
    out = Path(args.output)
    state = json.loads(out.read_text()) if out.is_file() else {"labels": {}}
    rows = state["labels"].setdefault(args.label, {"rows": []})["rows"]
    for method in args.methods.split(","):
        shares = getattr(registry.get_method(method).estimator_class("regression"), "shares_budgets", False)
        for dataset in datasets:
            items = [WorkItem(dataset, method, args.fold, budgets)] if shares else \
                    [WorkItem(dataset, method, args.fold, (n,)) for n in budgets]
            for item in items:
                t0 = time.perf_counter()
                recs = execute(item, protocol, os.environ.get("RFBENCH_DATA_DIR"), args.threads, None)
                row = {"dataset": dataset, "method": method, "budgets": list(item.budgets), "fold": args.fold,
                       "threads": args.threads, "seconds": time.perf_counter() - t0,
                       "status": sorted({r["status"] for r in recs}),
                       "errors": {str(r["n_features"]): r.get("error") for r in recs},
                       "params": {str(r["n_features"]): r.get("params") for r in recs}}
                rows[:] = [r for r in rows if (r["dataset"], r["method"], r["budgets"]) !=
                           (dataset, method, row["budgets"])] + [row]
                state["labels"][args.label]["summary"] = summary(rows, protocol.n_outer)
                atomic_write_text(out, json.dumps(state, indent=1))
                print(f"{method:10s} {dataset:16s} n={','.join(map(str, item.budgets)):8s} {row['seconds']:8.1f} s",
                      flush=True)
    for label, block in state["labels"].items():
        print(f"\n== {label}\n" + table(block["summary"]))


if __name__ == "__main__":
    main()
