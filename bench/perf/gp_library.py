"""Exact GP: rfbench's own NumPy/SciPy code against GPyTorch, and the fit time against m (issue 44).

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/gp_library.py [--sizes 1000,2000,4000]
        [--repeats 3] [--fit-iter 20] [--fit-sizes 250,500,1000] [--out results/gp-library.json]

Data: ``uci-kin40k`` (d = 8), the first m rows of a seeded permutation, inputs standardised, target
standardised. Everything on the CPU, float64, on one thread (threadpoolctl's BLAS limit and
``torch.set_num_threads(1)``). What is timed, side by side (the libraries alternate inside every
repeat, so a load on the machine hits both alike):

* ``eval``: one negative log marginal likelihood and its gradient at the same hyper-parameters:
  ours (``gp.nll_and_grad``: Cholesky, ``potri``, analytic traces); GPyTorch's
  ``ExactMarginalLogLikelihood`` forward + backward with Cholesky forced
  (``max_cholesky_size`` above m: the exact method) and with its default above 800 rows (CG and
  Lanczos: not exact; 10 probe vectors, its setting);
* ``fit``: ``--fit-iter`` iterations of each library's usual optimiser from start 0: ours L-BFGS-B
  (one start, ``GPRegressor(n_restarts=1, max_iter=fit_iter)``); GPyTorch the documented loop, Adam
  (lr 0.1) with Cholesky forced; with the negative log likelihood per row each reached;
* ``fit_vs_m``: ``GPRegressor()``'s whole default fit (3 starts × 20 iterations, the best to 200)
  at ``--fit-sizes``: seconds and evaluations, from which docs/gp.md sets N (:data:`gp.MAX_ROWS`).

An existing ``--out`` is resumed: its sizes are kept and the ones measured again replaced, so the parts
can be run as separate invocations (``--skip``). Medians over ``--repeats``; the machine is recorded (``provenance.machine_info``) with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from rfbench import provenance, registry
from rfbench.data import load
from rfbench.methods import gp


def data(m: int, seed: int = 0):
    loaded = load("uci-kin40k", registry=registry.load())
    X, y = loaded.X, loaded.y
    idx = np.random.default_rng(seed).permutation(len(y))[:m]
    X, y = np.asarray(X, float)[idx], np.asarray(y, float)[idx]
    X = (X - X.mean(0)) / X.std(0)
    return X, (y - y.mean()) / y.std()


def theta0(X):
    return gp.initial_thetas(X, 1, np.random.default_rng(0))[0]


def gpytorch_model(X, y, theta):
    import gpytorch

    class Exact(gpytorch.models.ExactGP):
        def __init__(self, x, t, lik):
            super().__init__(x, t, lik)
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(gpytorch.kernels.RBFKernel(ard_num_dims=x.shape[1]))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    x, t = torch.from_numpy(X), torch.from_numpy(y)
    lik = gpytorch.likelihoods.GaussianLikelihood(noise_constraint=gpytorch.constraints.GreaterThan(1e-6)).double()
    model = Exact(x, t, lik).double()
    ell, s2, noise = gp.unpack(theta)
    model.covar_module.base_kernel.lengthscale = torch.from_numpy(ell)[None]
    model.covar_module.outputscale = s2
    lik.noise = noise
    model.train()
    lik.train()
    return model, lik, gpytorch.mlls.ExactMarginalLogLikelihood(lik, model), x, t


def gpytorch_eval(X, y, theta, exact: bool):
    import gpytorch

    model, lik, mll, x, t = gpytorch_model(X, y, theta)
    size = 10**7 if exact else gpytorch.settings.max_cholesky_size.value()
    with gpytorch.settings.max_cholesky_size(size):
        t0 = time.perf_counter()
        loss = -mll(model(x), t)
        loss.backward()
        return time.perf_counter() - t0, float(loss)


def gpytorch_fit(X, y, theta, iters: int):
    import gpytorch

    model, lik, mll, x, t = gpytorch_model(X, y, theta)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    with gpytorch.settings.max_cholesky_size(10**7):
        t0 = time.perf_counter()
        for _ in range(iters):
            opt.zero_grad()
            loss = -mll(model(x), t)
            loss.backward()
            opt.step()
        seconds = time.perf_counter() - t0
        model.eval()
        with torch.no_grad():
            model.train()
            final = float(-mll(model(x), t))
    # GPyTorch's mll is already divided by m
    return seconds, final


def ours_eval(X, y, theta):
    t0 = time.perf_counter()
    v, _ = gp.nll_and_grad(theta, X, y)
    return time.perf_counter() - t0, v


def ours_fit(X, y, iters: int, **kw):
    est = gp.GPRegressor(n_restarts=kw.get("n_restarts", 1), max_iter=kw.get("max_iter", iters), random_state=0,
                         max_rows=10**6)
    t0 = time.perf_counter()
    est.fit(X, y)
    return time.perf_counter() - t0, est.nll_, est.best_params_["evaluations"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,2000,4000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fit-iter", type=int, default=20)
    ap.add_argument("--fit-sizes", default="250,500,1000")
    ap.add_argument("--skip", default="", help="comma list of parts to skip: eval,fit,fit_vs_m")
    ap.add_argument("--out", default="results/gp-library.json")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    torch.set_num_threads(1)
    earlier = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
    out = {"machine": provenance.machine_info(), "load_average_start": os.getloadavg(), "threads": 1,
           "dtype": "float64", "data": "uci-kin40k, d = 8, seeded subsample, standardised",
           "eval": {}, "fit": {}, "fit_vs_m": {}}
    for part in ("eval", "fit", "fit_vs_m"):      # an earlier run's sizes are kept (--out is resumed)
        out[part].update(earlier.get(part, {}))
    if earlier:
        out["earlier_runs"] = earlier.get("earlier_runs", []) + [{k: earlier.get(k) for k in (
            "load_average_start", "load_average_end")}]
    import gpytorch
    out["versions"] = {"gpytorch": gpytorch.__version__, "torch": torch.__version__, "numpy": np.__version__}

    def save():
        out["load_average_end"] = os.getloadavg()
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(out, indent=1, default=float) + "\n")

    with threadpool_limits(limits=1):
        for m in [int(s) for s in args.sizes.split(",")]:
            X, y = data(m)
            th = theta0(X)
            if "eval" not in skip:
                rows = {"ours": [], "gpytorch_cholesky": [], "gpytorch_default": []}
                for _ in range(args.repeats):
                    rows["ours"].append(ours_eval(X, y, th))
                    rows["gpytorch_cholesky"].append(gpytorch_eval(X, y, th, exact=True))
                    rows["gpytorch_default"].append(gpytorch_eval(X, y, th, exact=False))
                res = {k: {"median_s": statistics.median(s for s, _ in v), "all_s": [s for s, _ in v],
                           "nll_per_row": v[0][1]} for k, v in rows.items()}
                res["ratio_gpytorch_cholesky_over_ours"] = res["gpytorch_cholesky"]["median_s"] / res["ours"]["median_s"]
                res["ratio_gpytorch_default_over_ours"] = res["gpytorch_default"]["median_s"] / res["ours"]["median_s"]
                out["eval"][str(m)] = res
                print("eval", m, json.dumps(res, default=float), flush=True)
                save()
            if "fit" not in skip:
                s_ours, v_ours, n_ours = ours_fit(X, y, args.fit_iter)
                s_gpt, v_gpt = gpytorch_fit(X, y, th, args.fit_iter)
                res = {"iterations": args.fit_iter,
                       "ours_lbfgsb": {"s": s_ours, "nll_per_row": v_ours, "evaluations": n_ours},
                       "gpytorch_adam": {"s": s_gpt, "nll_per_row": v_gpt, "evaluations": args.fit_iter},
                       "ratio_gpytorch_over_ours": s_gpt / s_ours}
                out["fit"][str(m)] = res
                print("fit", m, json.dumps(res, default=float), flush=True)
                save()
        if "fit_vs_m" not in skip:
            for m in [int(s) for s in args.fit_sizes.split(",")]:
                X, y = data(m)
                t0 = time.perf_counter()
                est = gp.GPRegressor(random_state=0, max_rows=10**6).fit(X, y)
                res = {"s": time.perf_counter() - t0, "evaluations": est.best_params_["evaluations"],
                       "nll_per_row": est.nll_}
                res["s_per_evaluation"] = res["s"] / res["evaluations"]
                out["fit_vs_m"][str(m)] = res
                print("fit_vs_m", m, json.dumps(res, default=float), flush=True)
                save()
    save()


if __name__ == "__main__":
    main()
