"""Core-seconds of the whole torgo suite per (method, n), measured on one outer fold per dataset.

`rfbench run --suite torgo --features 100,500` with every method is what a user waits on. This
runs one outer fold of every (dataset, method) exactly as the runner does (:func:`rfbench.execution.tasks.execute`:
same folds, seeds, data and thread budget; a method that fits all budgets in one model runs once
for both), and projects each (method, n) to the full protocol: seconds × outer folds, summed over
the datasets. A work item that serves several budgets is attributed to them in proportion to n
(its fit is one model grown to the largest n; the split matters only for the per-n columns, the
totals are exact). The projected wall hours on two cores assume two one-core lanes kept busy.

    python bench/perf/suite.py [--methods gfc,alc,...] [--datasets ...] [--threads 1] \\
        [--output results/suite-benchmark.json]

Rows already in the output file are kept unless re-measured (run a subset, then the rest);
``--label`` names the code state (e.g. "before", "after gbrff budgets") and keeps one set of rows
per label, so one file holds the before/after comparison; ``--resume`` skips the rows the label
already has (the file is written after every row, so a killed run loses one row at most).
``--merge FILE`` adds the rows of another output file (e.g. a "before" measured from a checkout
of the old commit at the same time as the "after"); ``--compare BASE:OTHER`` names two labels
measured side by side, whose ratio is then kept in the file (the first two labels are such a
pair); ``--carry-from LABEL`` completes a label's projection with LABEL's rows for the (dataset,
method) pairs it did not measure (a method whose code did not change), each marked
``carried_from``. Rows carry wall and process CPU seconds. Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rfbench import contract, registry
from rfbench import (
    protocol as proto,  # rfbench first: it sets the BLAS thread timeout before NumPy loads
)
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.store import atomic_write_text

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


def compare(base: list[dict], other: list[dict]) -> list[dict]:
    """Per method, on the (dataset, budgets) both labels measured themselves: seconds, ratio, and
    whether every record's chosen hyper-parameters and error are the same."""
    key = lambda r: (r["dataset"], r["method"], tuple(r["budgets"]))   # noqa: E731
    mine = {key(r): r for r in other if r.get("carried_from") is None}
    out: dict[str, dict] = {}
    for a in base:
        b = mine.get(key(a))
        if b is None or a.get("carried_from") is not None:
            continue
        c = out.setdefault(a["method"], {"method": a["method"], "pairs": 0, "seconds_base": 0.0, "seconds_other": 0.0,
                                         "same_params": 0, "same_error": 0, "records": 0, "max_abs_error_diff": 0.0})
        c["pairs"] += 1
        c["seconds_base"] += a["seconds"]
        c["seconds_other"] += b["seconds"]
        if "cpu_seconds" in a and "cpu_seconds" in b:  # rows measured since the cpu column exists
            c["cpu_seconds_base"] = c.get("cpu_seconds_base", 0.0) + a["cpu_seconds"]
            c["cpu_seconds_other"] = c.get("cpu_seconds_other", 0.0) + b["cpu_seconds"]
        for n, err in a["errors"].items():
            c["records"] += 1
            c["same_params"] += (a.get("params") or {}).get(n) == (b.get("params") or {}).get(n)
            c["same_error"] += err == b["errors"].get(n)
            if err is not None and b["errors"].get(n) is not None:
                c["max_abs_error_diff"] = max(c["max_abs_error_diff"], abs(err - b["errors"][n]))
    for c in out.values():
        c["speedup"] = c["seconds_base"] / c["seconds_other"] if c["seconds_other"] else None
        if c.get("cpu_seconds_other"):
            c["cpu_speedup"] = c["cpu_seconds_base"] / c["cpu_seconds_other"]
    return list(out.values())


def merge(out: Path, others: list[Path], label: str, carry_from: str | None, outer_folds: int,
          compare_pairs: list[list[str]] = ()) -> None:
    state = json.loads(out.read_text()) if out.is_file() else {"labels": {}}
    for other in others:
        for lab, block in json.loads(other.read_text())["labels"].items():
            rows = state["labels"].setdefault(lab, {"rows": []})["rows"]
            new = {(r["dataset"], r["method"], tuple(r["budgets"])) for r in block["rows"]}
            rows[:] = [r for r in rows if (r["dataset"], r["method"], tuple(r["budgets"])) not in new] + block["rows"]
    if carry_from:
        rows = state["labels"].setdefault(label, {"rows": []})["rows"]
        rows[:] = [r for r in rows if r.get("carried_from") is None]
        have = {(r["dataset"], r["method"]) for r in rows}
        rows += [dict(r, carried_from=carry_from) for r in state["labels"][carry_from]["rows"]
                 if (r["dataset"], r["method"]) not in have and r.get("carried_from") is None]
        state["current"] = label  # the completed projection of the newest code (docs/results.md shows it)
    for block in state["labels"].values():
        block["summary"] = summary(block["rows"], outer_folds)
    labels = list(state["labels"])
    # the pairs measured side by side (at the same time, same folds): the first two labels, plus --compare
    pairs = state.setdefault("compare", [labels[:2]] if len(labels) > 1 else [])
    pairs += [p for p in compare_pairs if p not in pairs]
    state["comparisons"] = {f"{a} -> {b}": compare(state["labels"][a]["rows"], state["labels"][b]["rows"])
                            for a, b in pairs}
    atomic_write_text(out, json.dumps(state, indent=1))
    for lab, block in state["labels"].items():
        print(f"\n== {lab}\n" + table(block["summary"]))
    from tabulate import tabulate
    for name, rows in state["comparisons"].items():
        print(f"\n== {name} (side by side, same folds)\n" + tabulate(
            [[c["method"], c["pairs"], f"{c['seconds_base']:.1f}", f"{c['seconds_other']:.1f}", f"{c['speedup']:.2f}",
              f"{c['same_params']}/{c['records']}", f"{c['same_error']}/{c['records']}", f"{c['max_abs_error_diff']:.3g}"]
             for c in rows], headers=["method", "folds", "s before", "s after", "speed-up", "same params",
                                      "same error", "max |Δ error|"]))


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
    ap.add_argument("--merge", action="append", default=[], help="another output file whose rows to add")
    ap.add_argument("--carry-from", help="complete --label's projection with this label's rows")
    ap.add_argument("--compare", action="append", default=[], metavar="BASE:OTHER",
                    help="a pair of labels measured side by side, to compare (kept in the file)")
    ap.add_argument("--resume", action="store_true",
                    help="skip the (dataset, method, budgets) rows --label already has (a run killed midway)")
    args = ap.parse_args()
    protocol = proto.Protocol()
    if args.merge or args.carry_from or args.compare:
        merge(Path(args.output), [Path(m) for m in args.merge], args.label, args.carry_from, protocol.n_outer,
              [c.split(":", 1) for c in args.compare])
        return
    reg = registry.load()
    datasets = [d.name for d in reg.suite(args.suite)]
    if args.datasets:
        datasets = [d for d in datasets if d in args.datasets.split(",")]
    budgets = tuple(sorted(int(n) for n in args.features.split(",")))
    out = Path(args.output)
    state = json.loads(out.read_text()) if out.is_file() else {"labels": {}}
    rows = state["labels"].setdefault(args.label, {"rows": []})["rows"]
    for method in args.methods.split(","):
        shares = contract.shares_budgets(reg.method(method).estimator_class("regression"))
        for dataset in datasets:
            items = [WorkItem(dataset, method, args.fold, budgets)] if shares else \
                    [WorkItem(dataset, method, args.fold, (n,)) for n in budgets]
            for item in items:
                if args.resume and any((r["dataset"], r["method"], r["budgets"]) == (dataset, method, list(item.budgets))
                                       for r in rows):
                    continue
                t0, cpu0 = time.perf_counter(), time.process_time()
                recs = execute(item, WorkerOptions(protocol, DataSources.from_settings(), args.threads, None, reg))
                row = {"dataset": dataset, "method": method, "budgets": list(item.budgets), "fold": args.fold,
                       "threads": args.threads, "seconds": time.perf_counter() - t0,
                       "cpu_seconds": time.process_time() - cpu0,
                       "status": sorted({r.status for r in recs}),
                       "errors": {str(r.n_features): r.error for r in recs},
                       "params": {str(r.n_features): r.params for r in recs}}
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
