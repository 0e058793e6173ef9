"""Per-fold walltime on one core and on two, side by side, against the published walltime.

The long reproduction runs use one core per task (two lanes on the machine's two cores), which is
the most work per hour; the GFC paper's walltimes are per outer fold with its methods parallelised
over 5 (n = 100) or 25 (n = 500) cores. This measures what the second core buys one task: every
(dataset, method, n, fold) runs exactly as in ``rfbench run`` (:func:`rfbench.execution.tasks.execute`,
same folds, seeds and data) once with ``--threads 1`` and once with ``--threads 2`` (GFC: descents
in two processes; à la carte: restarts in two processes, then two BLAS threads), one after the
other, and the published walltime of the cell is read from the GFC paper's Table 1. Run it on an
otherwise idle machine.

    python bench/perf/speed_cores.py --output results/speed-cores.json \\
        --task gfc:500:ailerons --task alc:100:delta-ailerons [--fold 0]

Rows of tasks not measured this time stay in the output file (re-measure a subset with --task).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from rfbench import (
    protocol as proto,  # first: rfbench sets the BLAS thread timeout before NumPy loads
)
from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute
from rfbench.experiments.spec import load_spec
from rfbench.reporting.published import published_dir

DEFAULT_TASKS = ["gfc:500:ailerons", "gfc:500:bank", "gfc:500:pumadyn", "gfc:500:elevators",
                 "gfc:500:cpu-activity", "alc:100:delta-ailerons", "alc:100:cal-housing",
                 "alc:500:delta-ailerons"]


def published_walltimes() -> dict[tuple[str, str, int], float]:
    """(rfbench dataset, rfbench method, n) → the GFC paper's Table 1 walltime per fold (s)."""
    import pandas as pd
    spec = load_spec("gfc2016-table1", registry.load())
    pub = pd.read_csv(published_dir() / spec.published)
    return {(spec.datasets[r["dataset"]], spec.methods[r["method"]], int(r["n_features"])): float(r["walltime_s"])
            for _, r in pub.iterrows() if r["dataset"] in spec.datasets}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--task", action="append", help="method:n:dataset (repeatable)")
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--output", default="results/speed-cores.json")
    args = ap.parse_args()
    published = published_walltimes()
    protocol = proto.Protocol()
    reg = registry.load()
    rows = []
    for spec in args.task or DEFAULT_TASKS:
        method, n, dataset = spec.split(":")
        item = WorkItem(dataset, method, args.fold, (int(n),))
        row = {"dataset": dataset, "method": method, "n_features": int(n), "fold": args.fold,
               "published_walltime_s": published.get((dataset, method, int(n)))}
        for threads in (1, 2):
            t0 = time.perf_counter()
            (rec,) = execute(item, WorkerOptions(protocol, DataSources.from_settings(), threads, None, reg))
            wall = time.perf_counter() - t0
            if rec.status != "done":
                raise SystemExit(f"{spec} with {threads} thread(s): {rec.status}: {rec.message}")
            row[f"wall_{threads}core_s"] = round(wall, 2)
            row[f"error_{threads}core"] = round(rec.error, 4)
        pub = row["published_walltime_s"]
        row["two_core_gain"] = round(row["wall_1core_s"] / row["wall_2core_s"], 2)
        row["speedup_1core"] = round(pub / row["wall_1core_s"], 1) if pub else None
        row["speedup_2core"] = round(pub / row["wall_2core_s"], 1) if pub else None
        rows.append(row)
        print(json.dumps(row), flush=True)
    # rows of other tasks already in the file are kept (re-measure a subset with --task)
    out = Path(args.output)
    key = lambda r: (r["dataset"], r["method"], r["n_features"], r["fold"])  # noqa: E731
    fresh = {key(r) for r in rows}
    kept = [r for r in json.loads(out.read_text()) if key(r) not in fresh] if out.is_file() else []
    out.write_text(json.dumps(kept + rows, indent=1) + "\n")
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
