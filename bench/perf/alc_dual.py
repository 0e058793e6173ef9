"""À la carte through the primal and the dual k-fold path (``cvgrad.Paths(dual=True)``), measured
(docs/history/cvgrad.md, "The dual k-fold path").

``--task METHOD:DATASET:N`` (repeatable): split 0 of the published protocol fitted as the runner fits
it, once with each path, one BLAS thread, side by side in this process: CPU seconds and the chosen λ
and inner-CV MSE. ``--rerun DATASETS --methods ... --features N``: every split of those cells fitted
with the dual path, against the committed records of ``--against`` (their test RMSE and inner-CV MSE,
which the primal path computed): how many searches ended lower, higher or at the same optimum, a
Wilcoxon signed-rank test of the test RMSEs, and each cell's mean before and after. Needs the mirror
(``RFBENCH_DATA_DIR``).

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/alc_dual.py \\
        --task alc-q2:uci-challenger:500 --task alc-q1:uci-housing:500 --task alc-q1:uci-solar:500 \\
        --task alc-q1:uci-autos:100 \\
        --rerun uci-challenger,uci-fertility,uci-concreteslump,uci-autos,uci-servo,uci-breastcancer,uci-machine \\
        --methods alc-q1,alc-q2,alc-q5 --features 100 --output results/alc-dual.json
"""

from __future__ import annotations

import argparse
import functools
import json
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats
from threadpoolctl import threadpool_limits

from rfbench import registry
from rfbench.execution.tasks import fold_task
from rfbench.methods import alc
from rfbench.methods.cvgrad import Paths
from rfbench.protocol import Protocol


@contextmanager
def path(dual: bool):
    """À la carte's objective through the dual (or the default primal) k-fold path inside the block."""
    original = alc.alc_objective
    alc.alc_objective = functools.partial(original, paths=Paths(dual=dual))
    try:
        yield
    finally:
        alc.alc_objective = original


def fit(method: str, dataset: str, n: int, split: int, dual: bool, reg) -> dict:
    """One split as the runner fits it: CPU seconds of the fit, test RMSE (the stored target's unit),
    chosen λ and inner-CV MSE."""
    task = fold_task(dataset, method, split, Protocol("published"), None, threads=1, registry=reg)
    with threadpool_limits(1), path(dual):
        start = time.process_time()
        est = task.cls(n_features=n, **task.common).fit(task.X_tr, task.y_tr)
        cpu = time.process_time() - start
    rmse = float(np.sqrt(np.mean((est.predict(task.X_te) - task.y_te) ** 2)) * task.y_unit)
    return {"method": method, "dataset": dataset, "n": n, "split": split, "dual": dual, "cpu_s": round(cpu, 2),
            "rmse": rmse, "lambda": est.lambda_, "cv_mse": est.best_params_["cv_mse"]}


def compare(rows: list[dict], against: Path) -> dict:
    """The dual path's reruns against the committed records of the same tasks."""
    old = pd.read_csv(against / "results.csv")
    old = old[old["status"] == "done"]
    new = pd.DataFrame(rows).rename(columns={"n": "n_features", "split": "fold"})
    both = new.merge(old, on=["dataset", "method", "n_features", "fold"], suffixes=("", "_committed"))
    cv_old = np.array([json.loads(p)["cv_mse"] for p in both["params"]])
    ratio = both["cv_mse"].to_numpy() / cv_old
    same = np.abs(ratio - 1) <= 1e-6
    cells = (both.groupby(["dataset", "method"])
             .agg(committed=("error", "mean"), dual=("rmse", "mean")).reset_index())
    return {"tasks": len(both),
            "cv_optimum": {"lower": int(((ratio < 1) & ~same).sum()), "higher": int(((ratio > 1) & ~same).sum()),
                           "same_within_1e-6": int(same.sum()),
                           "geometric_mean_ratio": float(np.exp(np.mean(np.log(ratio))))},
            "test_rmse_wilcoxon_p": float(stats.wilcoxon(both["error"], both["rmse"]).pvalue),
            "median_cell_ratio": float((cells["dual"] / cells["committed"]).median()),
            "worst_task": both.assign(r=both["rmse"] / both["error"]).sort_values("r").iloc[-1][
                ["dataset", "method", "fold", "error", "rmse", "lambda"]].to_dict(),
            "cells": cells.round(6).to_dict("records")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", default=[], help="METHOD:DATASET:N, split 0 with each path")
    ap.add_argument("--rerun", help="comma-separated datasets: every split with the dual path")
    ap.add_argument("--methods", default="alc-q1,alc-q2,alc-q5")
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--against", default="results/uci-splits", help="the committed records the rerun is compared with")
    ap.add_argument("--output", default="results/alc-dual.json")
    args = ap.parse_args(argv)
    reg = registry.load()
    out: dict = {"what": __doc__.splitlines()[0], "timing": [], "rerun": None}
    for spec in args.task:
        method, dataset, n = spec.split(":")
        pair = [fit(method, dataset, int(n), 0, dual, reg) for dual in (False, True)]
        out["timing"].append({"task": spec, "primal": pair[0], "dual": pair[1],
                              "speed_up": round(pair[0]["cpu_s"] / pair[1]["cpu_s"], 2)})
        print(f"{spec}: primal {pair[0]['cpu_s']} s, dual {pair[1]['cpu_s']} s; lambda {pair[0]['lambda']:.4g} / "
              f"{pair[1]['lambda']:.4g}", flush=True)
    if args.rerun:
        rows = [fit(m, d, args.features, s, True, reg) for d in args.rerun.split(",") for m in args.methods.split(",")
                for s in range(10)]
        out["rerun"] = compare(rows, Path(args.against))
        r = out["rerun"]
        print(f"rerun of {r['tasks']} tasks with the dual path: inner-CV optimum lower in {r['cv_optimum']['lower']}, "
              f"higher in {r['cv_optimum']['higher']}, the same in {r['cv_optimum']['same_within_1e-6']}; test RMSE "
              f"Wilcoxon p = {r['test_rmse_wilcoxon_p']:.2f}, median cell ratio {r['median_cell_ratio']:.4f}; worst "
              f"task {r['worst_task']}")
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
