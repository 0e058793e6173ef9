"""How well the task-time estimator's size law (rfbench.execution.estimate: ``rfbench status``,
``--dry-run``, the runner's longest-first order) predicts a set it has not seen, from the committed
records; and two alternatives that were measured against it and not adopted.

A run extrapolates: it has finished the smaller sets and is asked about the larger ones. So for every
(method, n) of the committed stores and every finished dataset D, the law is fitted to the cell's
finished datasets with at most rows(D) / gap rows (their median task times, as the estimator takes
them; at least ``--min-known`` of them) and asked for D; the error is log10(estimate / measured
median). gap 1.01: the next set (a run in progress); 4 and 10: a set 4× and 10× beyond every finished
one (a dry run of a suite whose large sets have not started). Methods that declare their scaling
(methods.yaml ``cost_scaling``) are left out. The laws compared, on the same cells:

* ``estimator``: rfbench's own (one power law through every finished set);
* ``nearest-8``: the power law fitted to the 8 finished sets nearest D in log rows (follows a regime
  change such as SALSA's and KRR's switch to Nyström above 4 000 rows once a set of it is finished);
* ``level-8``: the estimator's exponents, its level from the 8 nearest sets.

Writes results/estimate-accuracy.json; prints one line per (gap, law): cells, the median |log10
error|, the share within 2× and within 10×, and the share over-estimated by more than 10×.

Then the ratio between budgets (a cell scaled from the same dataset at another n): every finished
(store, method, dataset) with both budgets of a pair is left out in turn and predicted from its time
at the other budget times the method's median ratio over the other datasets with both, taken over all
of them (``every set``, the estimator until 2026-11-30) or over the RATIO_SETS nearest in rows
(``nearest``, the estimator's now) or as n / n' (``n ratio``, without any set).

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
from rfbench.execution.estimate import (
    cpu_path_only,
    nearest_in_rows,
    size_exponents,
    size_model,
    task_cost,
)
from rfbench.store import device_tasks, load_results

ROOT = Path(__file__).resolve().parents[2]
GAPS = (1.01, 4.0, 10.0)
NEIGHBOURS = 8


def medians(stores: list[Path]) -> pd.Series:
    """Median seconds of one task (task_cost: its CPU seconds where recorded, as the estimator reads
    them) per (store, method, n, dataset), done tasks only."""
    parts = []
    for store in stores:
        df = load_results([store])
        df = df[df["status"] == "done"].astype({"n_features": int, "fold": int, "total_s": float})
        df = cpu_path_only(df, device_tasks([store]))      # the estimator's rule: a GPU's task is not timed
        parts.append(df.assign(store=store.name, cost_s=task_cost(df)))
    done = pd.concat(parts, ignore_index=True)
    return done.groupby(["store", "method", "n_features", "dataset"])["cost_s"].median()


def exponents_or_linear(rows, inputs, log_t) -> tuple[float, float]:
    """The size law's exponents through these sets; (1, 1) where they all have one size."""
    return size_exponents(rows, inputs, log_t) or (1.0, 1.0)


def alternative(times: pd.Series, shape: dict, local_exponents: bool):
    """(rows, inputs) ↦ time: a power law whose level (and with ``local_exponents`` its exponents) is
    fitted to the NEIGHBOURS finished sets nearest the task in log rows; floored at the fastest set."""
    rows = np.log([shape[n][0] for n in times.index])
    inputs = np.log([shape[n][1] for n in times.index])
    log_t = np.log(times.to_numpy(dtype=float))
    b_all, c_all = exponents_or_linear(rows, inputs, log_t)

    def law(r, d):
        pick = np.argsort(np.abs(rows - np.log(r)), kind="stable")[:NEIGHBOURS]
        b, c = b_all, c_all
        if local_exponents:
            b, c = exponents_or_linear(rows[pick], inputs[pick], log_t[pick])
        log_a = float(np.median(log_t[pick] - b * rows[pick] - c * inputs[pick]))
        return float(np.exp(max(log_a + b * np.log(r) + c * np.log(d), log_t.min())))

    return law


LAWS = {"estimator": size_model,
        f"nearest-{NEIGHBOURS}": lambda times, shape: alternative(times, shape, True),
        f"level-{NEIGHBOURS}": lambda times, shape: alternative(times, shape, False)}


def held_out_errors(times: pd.Series, shape: dict, make_law, gap: float, min_known: int) -> list[float]:
    """log10(estimate / measured) for each dataset with at least ``min_known`` finished sets of at
    most its rows / ``gap``, the law fitted to those."""
    errors = []
    for target in times.index:
        known = [n for n in times.index if shape[n][0] * gap <= shape[target][0]]
        if len(known) >= min_known:
            law = make_law(times[known], shape)
            errors.append(float(np.log10(law(*shape[target]) / times[target])))
    return errors


def budget_ratio_errors(med: pd.Series, reg) -> dict[str, list[float]]:
    """log10(estimate / measured) of each finished (store, method, dataset, n) predicted from the same
    dataset at another budget n' (every pair of budgets with at least three datasets), per ratio rule."""
    errors = {"every set": [], "nearest": [], "n ratio": []}
    cells = med.unstack("n_features")
    for _, table in cells.groupby(level=["store", "method"]):
        table = table.droplevel(["store", "method"])
        for n in table.columns:
            for other in table.columns:
                both = table[[n, other]].dropna() if n != other else table.iloc[:0]
                if len(both) < 3:
                    continue
                rows = {d: reg.dataset(d).shape[0] for d in both.index}
                ratio = both[n] / both[other]
                for target in both.index:
                    rest = ratio.drop(target)
                    near = nearest_in_rows(rest.index, rows, rows[target])
                    for rule, r in (("every set", rest.median()), ("nearest", rest[near].median()),
                                    ("n ratio", n / other)):
                        errors[rule].append(float(np.log10(both.loc[target, other] * r / both.loc[target, n])))
    return errors


def summary(errors: list[float]) -> dict:
    e = np.asarray(errors)
    return {"cells": int(e.size), "median_abs_log10": round(float(np.median(np.abs(e))), 3),
            "within_2x": round(float(np.mean(np.abs(e) <= np.log10(2))), 3),
            "within_10x": round(float(np.mean(np.abs(e) <= 1)), 3),
            "over_10x": round(float(np.mean(e > 1)), 3)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stores", nargs="*", type=Path, help="run directories (default: every committed one)",
                    default=sorted(p.parent for p in (ROOT / "results").glob("*/results.csv")))
    ap.add_argument("--min-known", type=int, default=4, help="finished smaller sets a law needs")
    ap.add_argument("--output", type=Path, default=ROOT / "results" / "estimate-accuracy.json")
    args = ap.parse_args(argv)
    reg = registry_mod.load()
    med = medians(args.stores)
    errors = {(gap, name): [] for gap in GAPS for name in LAWS}
    for (_, method, _), times in med.groupby(level=["store", "method", "n_features"]):
        declared = reg.method(method).cost_scaling
        if "rows" in declared or "inputs" in declared:
            continue
        times = times.droplevel(["store", "method", "n_features"])
        shape = {name: reg.dataset(name).shape for name in times.index}
        for gap in GAPS:
            for name, make_law in LAWS.items():
                errors[(gap, name)] += held_out_errors(times, shape, make_law, gap, args.min_known)
    rows = [{"gap": gap, "law": name, **summary(errs)} for (gap, name), errs in errors.items()]
    print(tabulate(rows, headers="keys", showindex=False))
    ratio_rows = [{"ratio": rule, **summary(errs)} for rule, errs in budget_ratio_errors(med, reg).items()]
    print(tabulate(ratio_rows, headers="keys", showindex=False))
    args.output.write_text(json.dumps({
        "what": "held-out error of the task-time estimator's size law and two alternatives "
                "(bench/perf/estimate_accuracy.py)",
        "stores": [str(s.relative_to(ROOT)) if s.is_relative_to(ROOT) else str(s) for s in args.stores],
        "min_known": args.min_known, "rows": rows, "budget_ratio_rows": ratio_rows}, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
