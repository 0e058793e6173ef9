"""One evaluation of à la carte's CV objective and gradient: the NumPy path against the torch path
that ALCRegressor(device=...) runs (rfbench/methods/alc_torch.py), single and batched (issue 38).

    python bench/perf/alc_device.py [--devices cpu,torch-cpu] [--rows 2000] [--features 100,500]
        [--repeats 7] [--batch 10] [--torch-threads N]
    python bench/perf/alc_device.py --devices cpu,cuda          (on a GPU machine)

Problem: m rows uniform in [-1, 1]^d (d = 8), y = sin(x·a) + noise, Q = 5, k = 5 contiguous folds,
the θ's and u's of ``--batch`` restarts drawn by alc.initial_solutions. For each n and device, the
median over ``--repeats`` of: "cpu", alc.alc_objective (BLAS on one thread, its workspace reused,
as ALCRegressor runs it); a torch device, alc_torch.Problem.evaluate for one restart
(``single_s``) and for all restarts at once (``batched_per_restart_s`` = the batch's time / B),
including the transfer of θ in and of (f, ∇f) out, which also synchronises a GPU. ``value_rel`` and
``grad_rel``: the torch path against NumPy on restart 0. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import time

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench.methods import alc
from rfbench.methods.common import resolve_cv
from rfbench.methods.cvgrad import Workspace, contiguous_folds

Q, D_IN, FOLDS = 5, 8, 5


def problem(m: int, n: int, B: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1.0, 1.0, (m, D_IN))
    y = np.sin(X @ rng.standard_normal(D_IN)) + 0.1 * rng.standard_normal(m)
    y -= y.mean()
    splits, X, y = contiguous_folds(resolve_cv(FOLDS, m, rng), X, y)
    starts = alc.initial_solutions(X, y, Q, n // Q, B, rng)
    return X, y, splits, float(np.var(y)), starts


def median_s(fn, repeats: int) -> float:
    fn()                                      # warm-up (allocations, kernels, workspace)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def rel(a, b) -> float:
    return float(np.linalg.norm(np.subtract(a, b)) / np.linalg.norm(b))


def time_device(dev: str, X, y, splits, y_var: float, starts, repeats: int) -> dict:
    """The medians of one device (see the module notes) on one problem."""
    theta0, U0 = starts[0]
    if dev == "cpu":
        with threadpool_limits(limits=1):
            one = functools.partial(alc.alc_objective, theta0, X, y, U0, splits, y_var, Workspace())
            return {"single_s": median_s(one, repeats)}
    from rfbench.methods import alc_torch

    prob = alc_torch.Problem(X, y, splits, y_var, [U for _, U in starts], dev)
    thetas = np.stack([th for th, _ in starts])
    value, grad = prob.single(theta0, 0)
    value0, grad0 = alc.alc_objective(theta0, X, y, U0, splits, y_var)
    return {"value_rel": abs(value - value0) / abs(value0), "grad_rel": rel(grad, grad0),
            "single_s": median_s(functools.partial(prob.single, theta0, 0), repeats),
            "batched_per_restart_s": median_s(functools.partial(prob.evaluate, thetas, range(len(thetas))),
                                              repeats) / len(thetas)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="cpu,torch-cpu", help="cpu (NumPy), torch-cpu, cuda[:K]")
    ap.add_argument("--rows", type=int, default=2000)
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--batch", type=int, default=10, help="restarts evaluated at once")
    ap.add_argument("--torch-threads", type=int, help="torch.set_num_threads (default: torch's)")
    args = ap.parse_args(argv)
    devices = args.devices.split(",")
    out = {"machine": platform.node(), "processor": platform.processor() or platform.machine(),
           "rows": args.rows, "d": D_IN, "Q": Q, "folds": FOLDS, "batch": args.batch,
           "repeats": args.repeats, "results": []}
    if any(dev != "cpu" for dev in devices):
        import torch

        if args.torch_threads:
            torch.set_num_threads(args.torch_threads)
        out["torch"] = {"version": torch.__version__, "threads": torch.get_num_threads()}
        if any(dev.startswith("cuda") for dev in devices):
            out["torch"]["card"] = torch.cuda.get_device_name(0)
    for n in (int(v) for v in args.features.split(",")):
        X, y, splits, y_var, starts = problem(args.rows, n, args.batch)
        for dev in devices:
            out["results"].append({"n": n, "device": dev,
                                   **time_device(dev, X, y, splits, y_var, starts, args.repeats)})
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
