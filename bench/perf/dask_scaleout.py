"""Scale-out of --backend dask: the same suite on 1 and on 2 single-thread dask workers, and on the
local loky backend with --jobs 1 and 2, each a fresh `rfbench run` (wall time of the whole command,
start-up included).

The suite (30 tasks, about 100 s on one core): friedman-generated and breiman-generated (8000 rows)
× rff-gauss, rff-laplace and lgbm-quick × n = 500 × 5 outer folds (3 inner folds). The dask runs use
a LocalCluster (``--backend dask --jobs N --threads 1``); the local runs ``--jobs N --threads 1``
with a long ``--timeout``, so that --jobs 1 too runs in a worker process rather than in the
runner's own. Every run must give the same errors and chosen hyper-parameters.

    python bench/perf/dask_scaleout.py [--output results/dask-scaleout.json]

Speed-up is wall(1 worker) / wall(2 workers) per backend; efficiency against loky is
wall(loky, N) / wall(dask, N): 1.0 means dask costs nothing over the local pool. The summed task
times show whether the workers had their cores: on a machine busy with other work they grow with
the number of workers. The overhead, wall − summed task time / workers, is what the backend adds
(start-up, scheduling, writing records). Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

SUITE = ["--datasets", "friedman-generated,breiman-generated", "--methods", "rff-gauss,rff-laplace,lgbm-quick",
         "--features", "500", "--outer-folds", "5", "--inner-folds", "3", "--max-samples", "8000", "--threads", "1",
         "--quiet", "--no-report"]
RUNS = {   # label → backend options; loky and dask alternate so that a change of load hits both
    "loky-1": ["--jobs", "1", "--timeout", "1h"],
    "dask-1": ["--backend", "dask", "--jobs", "1"],
    "loky-2": ["--jobs", "2", "--timeout", "1h"],
    "dask-2": ["--backend", "dask", "--jobs", "2"],
}


def measure(label: str, options: list[str], root: Path) -> tuple[float, object]:
    import pandas as pd

    out = root / label
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rfbench.cli", "run", *SUITE, *options, "--out", str(out)], check=True)
    wall = time.perf_counter() - t0
    df = pd.read_csv(out / "results.csv")
    if not (df["status"] == "done").all():
        raise SystemExit(f"{label}: not every task is done: {df['status'].value_counts().to_dict()}")
    return wall, df.set_index(["dataset", "method", "n_features", "fold"]).sort_index()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", default="results/dask-scaleout.json")
    ap.add_argument("--note", default="machine state not recorded: see the load averages and task_s",
                    help="what else ran on the machine during the measurement")
    args = ap.parse_args()
    load_before = os.getloadavg()
    wall, tables = {}, {}
    with tempfile.TemporaryDirectory(prefix="dask-scaleout-") as tmp:
        for label, options in RUNS.items():
            wall[label], tables[label] = measure(label, options, Path(tmp))
            print(f"{label}: {wall[label]:.1f} s", flush=True)
    first = tables["loky-1"]
    same = all(t["error"].tolist() == first["error"].tolist() and t["params"].tolist() == first["params"].tolist()
               for t in tables.values())
    result = {
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "suite": " ".join(SUITE), "tasks": len(first), "cores": os.cpu_count(),
        "wall_s": {k: round(v, 1) for k, v in wall.items()},
        # the tasks' own time summed: it grows when the workers compete for cores with other processes
        "task_s": {k: round(float(t["total_s"].sum()), 1) for k, t in tables.items()},
        # the run's cost beyond its tasks (start-up, scheduling, records): a share of the wall time that
        # competition for the cores inflates far less than the wall time itself
        "overhead_s": {k: round(wall[k] - float(t["total_s"].sum()) / int(k[-1]), 1) for k, t in tables.items()},
        "speedup_1_to_2_workers": {b: round(wall[f"{b}-1"] / wall[f"{b}-2"], 2) for b in ("dask", "loky")},
        "efficiency_against_loky": {n: round(wall[f"loky-{n}"] / wall[f"dask-{n}"], 2) for n in ("1", "2")},
        "identical_records": same,
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "note": "wall time of each whole `rfbench run` (start-up included); " + args.note,
    }
    print(f"\n{'run':8} {'wall s':>8}\n" + "\n".join(f"{k:8} {v:8.1f}" for k, v in wall.items()))
    print(f"speed-up 1 → 2 workers: dask {result['speedup_1_to_2_workers']['dask']}, "
          f"loky {result['speedup_1_to_2_workers']['loky']}; efficiency of dask against loky: "
          f"1 worker {result['efficiency_against_loky']['1']}, 2 workers {result['efficiency_against_loky']['2']}; "
          f"identical records: {same}")
    Path(args.output).write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.output}")
    if not same:
        raise SystemExit("the backends gave different records")


if __name__ == "__main__":
    main()
