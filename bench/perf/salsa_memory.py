"""Peak memory of SALSA's two variants at the issue's sizes (one fresh process per measurement).

* exact path at m = 8192 (kinematics, all rows, D = 8; threshold lifted so the exact path runs);
* Nyström path at m = 40 768 (friedman generator, D = 10) with n = 500 landmarks.

Each fit is the method as the runner calls it: 5-fold CV over the order search and λ, then the
final fit, on one BLAS thread. Peak RSS is the process's ru_maxrss after the fit; the baseline is
the RSS after loading the data (before the fit). Writes results/salsa-memory.json.

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/salsa_memory.py [--output results/salsa-memory.json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

CASES = {
    "exact-m8192": {"dataset": "kinematics", "rows": 8192, "n_features": None, "threshold": None},
    "nystrom-m40768-n500": {"dataset": "friedman", "rows": 40768, "n_features": 500, "threshold": 4000},
}

CHILD = r"""
import json, resource, sys, time
import numpy as np
from threadpoolctl import threadpool_limits
from rfbench.data.loader import load
from rfbench.registry import load as load_registry
from rfbench.methods.salsa import SALSARegressor

case = json.loads(sys.argv[1])
loaded = load(case["dataset"], registry=load_registry())
X, y = loaded.X[: case["rows"]], loaded.y[: case["rows"]]
X = (X - X.mean(0)) / X.std(0)
base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
est = SALSARegressor(n_features=case["n_features"], threshold=case["threshold"], cv=5, random_state=0)
t0 = time.perf_counter()
with threadpool_limits(limits=1):
    est.fit(X, y)
secs = time.perf_counter() - t0
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"m": int(X.shape[0]), "D": int(X.shape[1]), "baseline_gb": base_kb / 2**20,
                  "peak_rss_gb": peak_kb / 2**20, "fit_s": secs, "params": est.best_params_}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="results/salsa-memory.json")
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated subset of " + ",".join(CASES))
    args = ap.parse_args()
    out = {}
    for name in args.cases.split(","):
        res = subprocess.run([sys.executable, "-c", CHILD, json.dumps(CASES[name])],
                             capture_output=True, text=True, check=False)
        if res.returncode != 0:
            sys.exit(f"{name}: the measurement failed: {res.stderr.strip().splitlines()[-1]}")
        out[name] = json.loads(res.stdout.strip().splitlines()[-1])
        print(f"{name}: peak RSS {out[name]['peak_rss_gb']:.2f} GB (baseline {out[name]['baseline_gb']:.2f} GB), "
              f"fit {out[name]['fit_s']:.0f} s, {out[name]['params']}", flush=True)
    Path(args.output).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
