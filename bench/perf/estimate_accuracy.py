"""How well the task-time estimator (rfbench.execution.estimate: ``rfbench status``, ``--dry-run``,
the runner's longest-first order) predicts a set it has not seen, from the committed records.

A run extrapolates: it has finished the smaller sets and is asked about the larger ones. So for every
(method, n) of the committed stores and every finished dataset D beyond the smallest ``--min-known``,
the size law is fitted to the cell's finished datasets with fewer rows than D (their median task
times, as the estimator takes them) and asked for D; the error is log10(estimate / measured median).
Two estimators side by side, on the same cells: one law through every finished set (the estimator
before 2026-11-29) and the law fitted to the ``SIZE_NEIGHBOURS`` sets nearest the task in rows (the
estimator now). Methods that declare their scaling (methods.yaml ``cost_scaling``) are left out: the
neighbours do not change them.

Writes results/estimate-accuracy.json; prints a table per method (median |log10 error|, the share
within 2× and 10×, the worst ratio).

    python bench/perf/estimate_accuracy.py
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from tabulate import tabulate

from rfbench import registry as registry_mod
from rfbench.execution import estimate
from rfbench.store import load_results

ROOT = Path(__file__).resolve().parents[2]


def medians(stores: list[Path]) -> pd.Series:
    """Median seconds of one task per (store, method, n, dataset), done tasks only."""
    parts = []
    for store in stores:
        df = load_results([store])
        df = df[df["status"] == "done"].astype({"n_features": int, "total_s": float})
        parts.append(df.assign(store=store.name))
    done = pd.concat(parts, ignore_index=True)
    return done.groupby(["store", "method", "n_features", "dataset"])["total_s"].median()


def held_out_errors(times: pd.Series, shape: dict, neighbours: int, min_known: int) -> list[float]:
    """log10(estimate / measured) for each dataset beyond the ``min_known`` smallest, the law fitted
    to the smaller ones."""
    names = sorted(times.index, key=lambda n: shape[n])
    saved = estimate.SIZE_NEIGHBOURS
    estimate.SIZE_NEIGHBOURS = neighbours
    try:
        errors = []
        for i in range(min_known, len(names)):
            known = [n for n in names[:i] if shape[n][0] < shape[names[i]][0]]
            if len(known) < min_known:
                continue
            law = estimate._size_model(times[known], shape)
            errors.append(float(np.log10(law(*shape[names[i]]) / times[names[i]])))
        return errors
    finally:
        estimate.SIZE_NEIGHBOURS = saved


def summary(errors: list[float]) -> dict:
    e = np.abs(np.asarray(errors))
    return {"cells": int(e.size), "median_abs_log10": round(float(np.median(e)), 3),
            "within_2x": round(float(np.mean(e <= np.log10(2))), 3),
            "within_10x": round(float(np.mean(e <= 1)), 3),
            "worst_ratio": round(float(10 ** e.max()), 1)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", nargs="*", type=Path, help="run directories (default: every committed one)",
                    default=sorted(p.parent for p in (ROOT / "results").glob("*/results.csv")))
    ap.add_argument("--min-known", type=int, default=4, help="finished smaller sets a law needs")
    ap.add_argument("--output", type=Path, default=ROOT / "results" / "estimate-accuracy.json")
    args = ap.parse_args(argv)
    reg = registry_mod.load()
    med = medians(args.stores)
    rows, every = [], {"all": [], "near": []}
    for (store, method, n), times in med.groupby(level=["store", "method", "n_features"]):
        if reg.method(method).cost_scaling:
            continue
        times = times.droplevel(["store", "method", "n_features"])
        shape = {name: reg.dataset(name).shape for name in times.index}
        errs = {"all": held_out_errors(times, shape, 10**9, args.min_known),
                "near": held_out_errors(times, shape, estimate.SIZE_NEIGHBOURS, args.min_known)}
        if not errs["all"]:
            continue
        for k in every:
            every[k] += errs[k]
        rows.append({"store": store, "method": method, "n": int(n),
                     **{f"{k}_{m}": v for k in errs for m, v in summary(errs[k]).items()}})
    table = pd.DataFrame(rows)
    total = {k: summary(v) for k, v in every.items()}
    print(tabulate(table[["store", "method", "n", "all_cells", "all_median_abs_log10", "near_median_abs_log10",
                          "all_within_2x", "near_within_2x", "all_worst_ratio", "near_worst_ratio"]],
                   headers="keys", showindex=False))
    print(f"\nevery cell: one law through every set {total['all']}\n"
          f"            the {estimate.SIZE_NEIGHBOURS} nearest sets     {total['near']}")
    args.output.write_text(json.dumps({
        "what": "held-out extrapolation error of the task-time estimator (bench/perf/estimate_accuracy.py)",
        "stores": [str(s.relative_to(ROOT)) if s.is_relative_to(ROOT) else str(s) for s in args.stores],
        "min_known": args.min_known, "size_neighbours": estimate.SIZE_NEIGHBOURS,
        "total": total, "cells": rows}, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
