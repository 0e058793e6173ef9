"""One BMKR boosting fit with and without sklearn's finiteness scan of the precomputed Gram matrices.

Every SVR of a BMKR fit gets one of the fit's 11 stored n × n Gram matrices (kernel="precomputed"),
and sklearn scans that matrix for NaN/inf before each of the 100 × 11 libsvm calls. The matrices are
built by rfbench from validated rows, so `KernelBank.svr` fits under
``sklearn.config_context(assume_finite=True)``. This times `fit_bmkr` (T boosting steps, one C) on
an inner-fold-sized random sample of a dataset (standardised, one BLAS thread) both ways,
alternating, and checks that both give the same model bit for bit.

    python bench/perf/bmkr_fit.py [--dataset splice] [--rows 1778] [--C 0.1] [--steps 100] \\
        [--repeats 3] [--output results/bmkr-fit.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from unittest import mock

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench import registry
from rfbench.data import loader
from rfbench.methods import bmkr
from rfbench.methods.rfkit import encode_binary_labels, scaler_stats
from rfbench.store import atomic_write_text


def timed_fit(bank, y, steps: int, C: float, scan: bool):
    """(CPU seconds, wall seconds, fitted arrays) of one fit; ``scan`` restores sklearn's check."""
    patch = (mock.patch.object(bmkr, "config_context", lambda **kw: contextlib.nullcontext())
             if scan else contextlib.nullcontext())
    with patch:
        c0, w0 = time.process_time(), time.perf_counter()
        out = bmkr.fit_bmkr(bank, y, steps, C)
        return time.process_time() - c0, time.perf_counter() - w0, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="splice")
    ap.add_argument("--rows", type=int, default=1778, help="sample size (splice's inner-fold training part)")
    ap.add_argument("--C", type=float, default=0.1)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--output", default="results/bmkr-fit.json")
    args = ap.parse_args()

    data = loader.load(args.dataset, registry=registry.load())
    _, y_pm = encode_binary_labels(np.asarray(data.y))
    rows = np.random.default_rng(args.seed).permutation(len(y_pm))[:args.rows]
    X = np.asarray(data.X, dtype=float)[rows]
    mean, scale = scaler_stats(X, True)
    X, y = (X - mean) / scale, y_pm[rows]
    with threadpool_limits(1):
        bank = bmkr.KernelBank(X, bmkr.RBF_GAMMAS, 4096.0, "stored")
        runs = {"scan": [], "no_scan": []}
        models = {}
        for _ in range(args.repeats):
            for name in runs:
                cpu, wall, models[name] = timed_fit(bank, y, args.steps, args.C, scan=name == "scan")
                runs[name].append({"cpu_s": cpu, "wall_s": wall})
                print(f"{name:8s} cpu {cpu:7.2f} s  wall {wall:7.2f} s", flush=True)
    same = all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(models["scan"], models["no_scan"], strict=True))
    med = {name: float(np.median([r["cpu_s"] for r in rs])) for name, rs in runs.items()}
    result = {"dataset": args.dataset, "rows": int(X.shape[0]), "inputs": int(X.shape[1]), "C": args.C,
              "steps": args.steps, "repeats": args.repeats, "runs": runs, "median_cpu_s": med,
              "speedup_cpu": med["scan"] / med["no_scan"], "identical_models": bool(same)}
    print(f"median CPU: scan {med['scan']:.2f} s, no scan {med['no_scan']:.2f} s, "
          f"ratio {result['speedup_cpu']:.2f}; identical models: {same}")
    atomic_write_text(Path(args.output), json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
