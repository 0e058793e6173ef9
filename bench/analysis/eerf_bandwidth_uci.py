"""EERF and LKRF on the UCI splits: how much of their gap to RFF is the σ rule they share.

On the kegg sets (and sml, energy) of ``results/uci-splits`` EERF and LKRF are 1.7-4.3× above kernel
ridge at n = 100 where RFF is not. Both draw their candidate frequencies from N(0, σ⁻² I) with σ the
EERF paper's rule, the mean distance to the 50th nearest neighbour (method-notes §4.2), while
``rff-gauss`` chooses σ among ten values by inner CV. This refits, on the runner's own tasks
(:func:`rfbench.execution.tasks.fold_task`: the published split, inputs standardised on its training
part, the record's seed), per split:

- ``eerf`` as recorded (the rule's σ); its error is checked against the record;
- ``eerf`` with σ replaced by the σ ``rff-gauss``'s inner CV chose on that split (the rule still runs
  and consumes the generator as before, so the candidates are the same standard-normal draws scaled
  by another σ: only σ changes);
- ``rff-gauss`` with its bandwidth fixed at the rule's σ (λ still by inner CV);

and records two facts of the training part that make a 50-NN distance small: the share of rows with
an exact duplicate among the training rows, and the rule's σ against the median distance between
rows. Errors: test RMSE on the target as stored (the records' ``rmse``).

    RFBENCH_DATA_DIR=../shared/datasets python bench/analysis/eerf_bandwidth_uci.py \
        [--sets uci-keggdirected uci-keggundirected uci-sml uci-energy uci-pol uci-kin40k] [--splits 0 1 2] \
        [--results results/uci-splits/results.csv] [--output results/eerf-bandwidth-uci.json]

One thread; about five minutes on the 2-core development machine.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path
from unittest import mock

import numpy as np
import pandas as pd
from scipy.spatial.distance import pdist
from threadpoolctl import threadpool_limits

from rfbench import protocol as proto
from rfbench import registry
from rfbench.execution.tasks import fold_task
from rfbench.methods import eerf as eerf_module

DEFAULT_SETS = ["uci-keggdirected", "uci-keggundirected", "uci-sml", "uci-energy", "uci-pol", "uci-kin40k"]
N_FEATURES = 100


def recorded(results: pd.DataFrame, dataset: str, method: str, split: int) -> pd.Series:
    rows = results[(results["dataset"] == dataset) & (results["method"] == method) & (results["fold"] == split)
                   & (results["n_features"] == N_FEATURES) & (results["status"] == "done")]
    if len(rows) != 1:
        raise SystemExit(f"eerf_bandwidth_uci: {len(rows)} done records of {method} on {dataset} split {split} "
                         f"at n = {N_FEATURES} in the results; one is needed")
    return rows.iloc[0]


def fit_error(dataset: str, method: str, split: int, reg, **overrides) -> tuple[float, dict]:
    """(test RMSE on the stored target, the estimator's chosen parameters) of one refit task."""
    protocol = proto.Protocol("published")
    task = fold_task(dataset, method, split, protocol, None, registry=reg)
    est = task.cls(n_features=N_FEATURES, **{**task.common, **overrides}).fit(task.X_tr, task.y_tr)
    error = proto.score(task.ds.task, task.y_te, est.predict(task.X_te), protocol.target_scaling, task.y_unit)
    return float(error), dict(getattr(est, "best_params_", {}))


def eerf_with_sigma(dataset: str, split: int, sigma: float, reg) -> tuple[float, dict]:
    """EERF with the candidate pool's σ replaced by ``sigma`` after the rule has run (same draws)."""
    rule = eerf_module.knn_bandwidth

    def replaced(*args, **kwargs):
        rule(*args, **kwargs)          # consume the generator exactly as the rule does
        return float(sigma)

    with mock.patch.object(eerf_module, "knn_bandwidth", replaced):
        return fit_error(dataset, "eerf", split, reg)


def data_facts(dataset: str, split: int, sigma: float, reg) -> dict:
    task = fold_task(dataset, "eerf", split, proto.Protocol("published"), None, registry=reg)
    X = task.X_tr
    _, inverse, counts = np.unique(X, axis=0, return_inverse=True, return_counts=True)
    rng = np.random.default_rng(split)
    sample = X[rng.choice(X.shape[0], size=min(2000, X.shape[0]), replace=False)]
    median_distance = float(np.median(pdist(sample)))
    return {"train_rows": int(X.shape[0]), "inputs": int(X.shape[1]),
            "duplicated_row_share": round(float(np.mean(counts[inverse.ravel()] > 1)), 4),
            "median_distance": round(median_distance, 4), "rule_sigma_over_median_distance": round(sigma / median_distance, 4)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=DEFAULT_SETS)
    ap.add_argument("--splits", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--results", default="results/uci-splits/results.csv")
    ap.add_argument("--output", default="results/eerf-bandwidth-uci.json")
    args = ap.parse_args(argv)
    results = pd.read_csv(args.results)
    reg = registry.load()
    cells = []
    with threadpool_limits(1):
        for dataset in args.sets:
            for split in args.splits:
                start = time.perf_counter()
                rec = {m: recorded(results, dataset, m, split) for m in ("eerf", "lkrf", "rff-gauss", "krr")}
                rff_sigma = float(json.loads(rec["rff-gauss"]["params"])["bandwidth"])
                refit, chosen = fit_error(dataset, "eerf", split, reg)
                rule_sigma = float(chosen["sigma"])
                with_rff_sigma, _ = eerf_with_sigma(dataset, split, rff_sigma, reg)
                rff_at_rule, _ = fit_error(dataset, "rff-gauss", split, reg, bandwidths=[rule_sigma])
                cells.append({
                    "dataset": dataset, "split": split, "rule_sigma": round(rule_sigma, 4),
                    "rff_gauss_cv_sigma": rff_sigma,
                    "krr": float(rec["krr"]["error"]), "lkrf": float(rec["lkrf"]["error"]),
                    "rff_gauss": float(rec["rff-gauss"]["error"]), "rff_gauss_at_rule_sigma": rff_at_rule,
                    "eerf": float(rec["eerf"]["error"]), "eerf_refit": refit,
                    "eerf_refit_relative_difference": abs(refit - float(rec["eerf"]["error"])) / float(rec["eerf"]["error"]),
                    "eerf_at_rff_sigma": with_rff_sigma,
                    **data_facts(dataset, split, rule_sigma, reg),
                    "seconds": round(time.perf_counter() - start, 1)})
                print({k: (round(v, 4) if isinstance(v, float) else v) for k, v in cells[-1].items()}, flush=True)
    table = pd.DataFrame(cells)
    summary = (table.groupby("dataset", sort=False)
               .agg(splits=("split", "size"), rule_sigma=("rule_sigma", "mean"), rff_gauss_cv_sigma=("rff_gauss_cv_sigma", "median"),
                    krr=("krr", "mean"), rff_gauss=("rff_gauss", "mean"), rff_gauss_at_rule_sigma=("rff_gauss_at_rule_sigma", "mean"),
                    eerf=("eerf", "mean"), eerf_at_rff_sigma=("eerf_at_rff_sigma", "mean"), lkrf=("lkrf", "mean"),
                    duplicated_row_share=("duplicated_row_share", "mean"),
                    rule_sigma_over_median_distance=("rule_sigma_over_median_distance", "mean"))
               .reset_index())
    # the share of EERF's excess over kernel ridge that giving it RFF's σ removes
    excess = summary["eerf"] - summary["krr"]
    summary["gap_closed_share"] = np.where(excess > 0, (summary["eerf"] - summary["eerf_at_rff_sigma"]) / excess, np.nan)
    out = {"n_features": N_FEATURES, "results": args.results, "cells": cells,
           "summary": json.loads(summary.round(4).to_json(orient="records")),
           "largest_refit_difference": float(table["eerf_refit_relative_difference"].max()),
           "machine": f"{platform.node()} {platform.processor() or platform.machine()}, one thread, shared 2-core VM"}
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print(f"largest relative difference between a refit EERF and its record: {out['largest_refit_difference']:.2e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
