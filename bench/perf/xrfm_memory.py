"""Peak host memory of an xRFM fit on the CPU against its fitting rows, and the constant
``rfbench.methods.xrfm.BYTES_PER_KERNEL_ENTRY`` that its memory check uses.

xRFM's fit (one leaf on the CPU up to 60 000 rows) holds float32 rows × rows kernels; the peak grows
with the square of the rows the leaf is fitted on. Each size is one fresh process fitting
``XRFMRegressor`` as the runner does (inner 5-fold: it fits on 4/5 of the rows and tunes on the rest)
on seeded Gaussian data with 27 inputs (keggundirected's width), one thread. The peak is the
process's ru_maxrss after the fit, less its ru_maxrss before it; the bytes per kernel entry are the
slope of that peak against fitting rows² between the two largest sizes, the fixed part its intercept.
Writes results/xrfm-memory.json and prints what the check estimates at the five largest
UCI sets.

    python bench/perf/xrfm_memory.py [--rows 5000,10000,15000]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, resource, sys, time
import numpy as np
import torch
from rfbench.methods.xrfm import XRFMRegressor

m = int(sys.argv[1])
rng = np.random.default_rng(0)
X = rng.standard_normal((m, 27))
y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(m)
torch.set_num_threads(1)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
start = time.perf_counter()
est = XRFMRegressor(cv=5, random_state=0, n_jobs=1, max_memory=None).fit(X, y)
print(json.dumps({"rows": m, "fit_rows": m - m // 5, "fit_s": time.perf_counter() - start, "baseline_gb": base,
                  "peak_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}))
"""

#: the five largest sets of the suite (their registered shapes give the rows)
LARGEST = ("uci-kin40k", "uci-protein", "uci-tamielectric", "uci-keggdirected", "uci-keggundirected")


def main(argv=None) -> int:
    from rfbench import registry
    from rfbench.methods import xrfm as wrapper

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="5000,10000,15000")
    ap.add_argument("--output", default=str(ROOT / "results" / "xrfm-memory.json"))
    args = ap.parse_args(argv)
    rows = []
    for m in (int(v) for v in args.rows.split(",")):
        out = subprocess.run([sys.executable, "-c", CHILD, str(m)], capture_output=True, text=True, check=True,
                             env={**__import__("os").environ, "OMP_NUM_THREADS": "1"})
        row = json.loads(out.stdout.strip().splitlines()[-1])
        row["fit_peak_gb"] = row["peak_gb"] - row["baseline_gb"]
        rows.append(row)
        print(f"{row['fit_rows']} fitting rows: peak {row['fit_peak_gb']:.3f} GB over the baseline, "
              f"{row['fit_s']:.1f} s", flush=True)
    a, b = rows[-2], rows[-1]
    slope = (b["fit_peak_gb"] - a["fit_peak_gb"]) * 2**30 / (b["fit_rows"] ** 2 - a["fit_rows"] ** 2)
    intercept = b["fit_peak_gb"] * 2**30 - slope * b["fit_rows"] ** 2
    largest = {}
    reg = registry.load()
    for name in LARGEST:
        rows_all = reg.dataset(name).shape[0]
        train = rows_all - rows_all // 10          # a published split's 90 %
        fit_rows = train - -(-train // 5)          # the first inner fold's training part
        largest[name] = {"fit_rows": fit_rows, "estimate_gib": wrapper.host_memory_bytes(fit_rows) / 2**30}
    result = {"machine": "2-core development VM, one thread per fit", "rows": rows,
              "bytes_per_kernel_entry_measured": slope,
              "bytes_per_kernel_entry_used": wrapper.BYTES_PER_KERNEL_ENTRY,
              "fixed_gib_measured": intercept / 2**30, "fixed_gib_used": wrapper.FIXED_BYTES / 2**30,
              "max_memory_gib": wrapper.MAX_MEMORY / 2**30, "largest_sets": largest}
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
    print(f"bytes per kernel entry: measured {slope:.2f}, used {wrapper.BYTES_PER_KERNEL_ENTRY}; beside it: measured "
          f"{intercept / 2**30:.3f} GiB, used {wrapper.FIXED_BYTES / 2**30:.3f}")
    for name, row in largest.items():
        print(f"{name}: {row['fit_rows']} fitting rows → {row['estimate_gib']:.1f} GiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
