"""A floor under the torgo suite's time: the work the papers' protocol makes every implementation do.

``bench/perf/suite.py`` measures what the suite costs; this measures how much of that cost is work
no faster code can skip on this machine without changing the arithmetic (issue 21 item 1's
question: can the suite reach its target at identical results?). Measured on outer fold 0 as the
runner prepares it, one thread:

* à la carte, per (dataset, n): one evaluation of the CV objective at the first restart's
  initial solution, against the float64 work inside it that the objective needs whatever the
  code: the five fold Gram matrices (NumPy's syrk on the real fold blocks) and the five ridge
  matrices' Cholesky factorisations (LAPACK, in place). The paper fixes the number of
  evaluations (10 restarts × 20 L-BFGS-B iterations, then 200), so share × the method's projected
  core-hours is its floor.
* LightGBM, per dataset: on the first inner fold, every max_depth of the grid at one reg_lambda,
  the fit (the fold binned once, as the inner CV does, then the trees) against the two predictions
  the protocol scores (100 and 500 trees). The fit share × projected core-hours is its floor (the
  50 × 5 fits of 500 trees are the grid's).
* the other six methods: their projected core-hours as measured, no floor claimed.

    python bench/perf/suite_floor.py [--datasets ...] [--benchmark results/suite-benchmark.json] \\
        [--output results/suite-floor.json]

The projection uses the benchmark file's current label (its per-(dataset, method, n) rows).
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import fold_task
from rfbench.methods import alc, cvgrad
from rfbench.methods.common import as_generator, resolve_cv
from rfbench.methods.cvgrad import Workspace, contiguous_folds
from rfbench.methods.lgbm import DEFAULT_GRID
from rfbench.store import atomic_write_text


def _median_s(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def alc_share(task, n: int) -> dict:
    """One objective evaluation against its five fold Gram matrices + five Cholesky factorisations."""
    est = task.cls(n_features=n, **task.common)
    rng = as_generator(task.common["random_state"])    # drawn as ALCRegressor.fit draws restart 0
    splits, X, y = contiguous_folds(resolve_cv(est.cv, task.X_tr.shape[0], rng), task.X_tr,
                                    task.y_tr - task.y_tr.mean())
    Q, s = est.n_components, n // est.n_components
    [(theta0, U)] = alc.initial_solutions(X, task.y_tr, Q, s, 1, rng)
    work = Workspace()
    evaluation = _median_s(lambda: alc.alc_objective(theta0, X, y, U, splits, 1.0, work))
    Z = work.get("Z", (X.shape[0], 2 * Q * s + 1))      # the design of the last evaluation
    p = Z.shape[1]
    blocks = [(sp.va[0], sp.va[-1] + 1) for sp in splits]   # contiguous validation folds
    grams = [np.empty((p, p)) for _ in blocks]
    gram = _median_s(lambda: [np.matmul(Z[lo:hi].T, Z[lo:hi], out=g) for (lo, hi), g in zip(blocks, grams, strict=True)])
    P = sum(grams) + X.shape[0] * alc.LAMBDA0 * np.eye(p)
    chol = len(blocks) * _median_s(lambda: cvgrad._cho_factor_in_place(lambda out: np.copyto(out, P),
                                                                       np.empty_like(P)))
    return {"m": int(X.shape[0]), "p": int(p), "evaluation_s": evaluation, "gram_s": gram, "cholesky_s": chol,
            "share": (gram + chol) / evaluation}


def lgbm_share(task, reg_lambda: float = 2**-4) -> dict:
    """Fit (the fold's binning once, then 500 trees per max_depth of the grid, as the inner CV does)
    against the two scoring predictions."""
    import lightgbm

    est = task.cls(n_features=500, **task.common)
    rng = as_generator(task.common["random_state"])
    tr, va = next(iter(resolve_cv(est.cv, task.X_tr.shape[0], rng)))
    X, y = np.asarray(task.X_tr), np.asarray(task.y_tr)
    est._threads = 1
    t0 = time.perf_counter()
    data = lightgbm.Dataset(X[tr], y[tr], params={"objective": "regression", **est._fixed(0)}).construct()
    fit, predict = time.perf_counter() - t0, 0.0
    for depth in DEFAULT_GRID["max_depth"]:
        t0 = time.perf_counter()
        booster = lightgbm.train({**est._params({"max_depth": depth, "reg_lambda": reg_lambda}, 0),
                                  "objective": "regression"}, data, num_boost_round=500)
        t1 = time.perf_counter()
        for n in (100, 500):
            np.mean((booster.predict(X[va], num_iteration=n) - y[va]) ** 2)
        fit, predict = fit + t1 - t0, predict + time.perf_counter() - t1
    return {"fit_s": fit, "predict_s": predict, "share": fit / (fit + predict)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="torgo")
    ap.add_argument("--datasets", default=None, help="comma-separated subset of the suite")
    ap.add_argument("--benchmark", default="results/suite-benchmark.json")
    ap.add_argument("--output", default="results/suite-floor.json")
    ap.add_argument("--resume", action="store_true",
                    help="keep the shares of the datasets --output already has (re-project only)")
    args = ap.parse_args()
    protocol = proto.Protocol()
    bench = json.loads(Path(args.benchmark).read_text())
    label = bench["current"]
    rows = bench["labels"][label]["rows"]
    reg = registry.load()
    datasets = [d.name for d in reg.suite(args.suite)]
    if args.datasets:
        datasets = [d for d in datasets if d in args.datasets.split(",")]
    sources = DataSources.from_settings(os.environ.get("RFBENCH_DATA_DIR"))
    measured: dict[str, dict] = {}
    if args.resume and Path(args.output).is_file():
        kept = json.loads(Path(args.output).read_text())["measured"]
        measured = {d: {"alc": {int(n): v for n, v in m["alc"].items()}, "lgbm": m["lgbm"]} for d, m in kept.items()}
    with threadpool_limits(limits=1):
        for dataset in (d for d in datasets if d not in measured):
            task = fold_task(dataset, "alc", 0, protocol, sources, 1, registry=reg)
            measured[dataset] = {"alc": {n: alc_share(task, n) for n in (100, 500)},
                                 "lgbm": lgbm_share(fold_task(dataset, "lgbm", 0, protocol, sources, 1, registry=reg))}
            a, g = measured[dataset]["alc"], measured[dataset]["lgbm"]
            print(f"{dataset:16s} alc share n=100 {a[100]['share']:.2f}, n=500 {a[500]['share']:.2f} "
                  f"(evaluation {a[500]['evaluation_s'] * 1e3:.0f} ms); lgbm fit share {g['share']:.2f}", flush=True)
    # floor per method: each (dataset, n) row of the benchmark times its measured share
    outer = protocol.n_outer
    per_method: dict[str, dict] = {}
    for r in rows:
        if r["dataset"] not in measured:
            continue
        cell = per_method.setdefault(r["method"], {"measured_core_hours": 0.0, "floor_core_hours": 0.0})
        hours = r["seconds"] * outer / 3600
        if r["method"] == "alc":
            share = measured[r["dataset"]]["alc"][r["budgets"][0]]["share"]
        elif r["method"] == "lgbm":
            share = measured[r["dataset"]]["lgbm"]["share"]
        else:
            share = 1.0
        cell["measured_core_hours"] += hours
        cell["floor_core_hours"] += hours * share
    total = sum(c["floor_core_hours"] for c in per_method.values())
    out = {"benchmark_label": label, "datasets": sorted(measured), "measured": measured, "methods": per_method,
           "floor_core_hours": total, "floor_wall_hours_2_cores": total / 2,
           "measured_core_hours": sum(c["measured_core_hours"] for c in per_method.values())}
    atomic_write_text(Path(args.output), json.dumps(out, indent=1) + "\n")
    from tabulate import tabulate
    print(tabulate([[m, f"{c['measured_core_hours']:.2f}", f"{c['floor_core_hours']:.2f}"]
                    for m, c in sorted(per_method.items(), key=lambda kv: -kv[1]["measured_core_hours"])]
                   + [["all", f"{out['measured_core_hours']:.2f}", f"{total:.2f}"]],
                   headers=["method", "core-h measured", "core-h floor"]))
    print(f"floor on 2 cores: {total / 2:.1f} h (benchmark label {label!r}); written: {args.output}")


if __name__ == "__main__":
    main()
