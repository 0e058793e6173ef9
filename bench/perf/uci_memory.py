"""Peak memory of every method of the UCI fixed-split suite at its largest set (keggundirected,
63 608 rows, 27 inputs; split 0 trains on 57 247 rows) at n = 500, one fresh process per method.

Each child builds split 0 exactly as the runner does (rfbench.execution.tasks.fold_task: the published
splits, the training-part scaling, the seeded inner folds) and fits the method as the runner calls it
(inner CV, refit, predict) on one BLAS thread, and times it in wall and CPU seconds (``fit_s``,
``cpu_s``: the machine may be running other work). The parent samples the child's resident memory every
0.2 s (psutil) and the child reports its own ru_maxrss at the end; the peak is the larger of the two,
less the child's memory after loading the data (the baseline). A method still fitting after
``--limit`` seconds is stopped: its row then holds the peak so far (a lower bound) and the time limit.
Rows already in the output are kept (the script resumes).

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/uci_memory.py [--limit 1200] [--methods a,b]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, resource, sys, time
from threadpoolctl import threadpool_limits
from rfbench import registry
from rfbench.execution.tasks import fold_task
from rfbench.protocol import Protocol

dataset, method, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
with threadpool_limits(1):
    task = fold_task(dataset, method, 0, Protocol("published"), None, threads=1, registry=registry.load())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"event": "loaded", "baseline_gb": base, "m_train": len(task.y_tr)}), flush=True)
    start, cpu0 = time.perf_counter(), time.process_time()
    est = task.cls(n_features=n, **task.common).fit(task.X_tr, task.y_tr)
    est.predict(task.X_te)
    fit_s, cpu_s = time.perf_counter() - start, time.process_time() - cpu0
print(json.dumps({"event": "done", "fit_s": fit_s, "cpu_s": cpu_s,
                  "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}), flush=True)
"""


def measure(dataset: str, method: str, n: int, limit: float) -> dict:
    import psutil

    proc = subprocess.Popen([sys.executable, "-c", CHILD, dataset, method, str(n)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env={**__import__("os").environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"})
    watched = psutil.Process(proc.pid)
    sampled, start = 0.0, time.monotonic()
    while proc.poll() is None:
        try:
            sampled = max(sampled, watched.memory_info().rss / 2**30)
        except psutil.Error:
            break
        if time.monotonic() - start > limit:
            proc.kill()
            break
        time.sleep(0.2)
    out, err = proc.communicate()
    events = {e["event"]: e for e in (json.loads(line) for line in out.splitlines() if line.startswith("{"))}
    row = {"dataset": dataset, "method": method, "n": n, "sampled_peak_gb": sampled,
           "baseline_gb": events.get("loaded", {}).get("baseline_gb"), "m_train": events.get("loaded", {}).get("m_train")}
    if "done" in events:
        row.update(status="done", fit_s=events["done"]["fit_s"], cpu_s=events["done"]["cpu_s"],
                   peak_gb=max(sampled, events["done"]["peak_rss_gb"]))
    elif proc.returncode is not None and proc.returncode < 0 or time.monotonic() - start > limit:
        row.update(status=f"stopped after {limit:g} s (the peak is a lower bound)", fit_s=None, peak_gb=sampled)
    else:
        row.update(status="error: " + (err.strip().splitlines() or ["?"])[-1][:300], fit_s=None, peak_gb=sampled)
    return row


def main(argv=None) -> int:
    from rfbench import registry
    from rfbench.experiments.spec import load_spec

    methods = load_spec("uci-splits", registry.load()).plan.methods
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="uci-keggundirected")
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--methods", default=",".join(methods))
    ap.add_argument("--limit", type=float, default=1200.0, help="seconds a method may fit before it is stopped")
    ap.add_argument("--output", default=str(ROOT / "results" / "uci-memory.json"))
    args = ap.parse_args(argv)
    path = Path(args.output)
    rows = json.loads(path.read_text())["rows"] if path.is_file() else []
    have = {(r["dataset"], r["method"], r["n"]) for r in rows if r["status"] == "done"}
    for method in args.methods.split(","):
        if (args.dataset, method, args.n) in have:
            continue
        row = measure(args.dataset, method, args.n, args.limit)
        rows = [r for r in rows if (r["dataset"], r["method"], r["n"]) != (args.dataset, method, args.n)] + [row]
        path.write_text(json.dumps({"machine": "2-core development VM, one BLAS thread per fit",
                                    "limit_gb": 8, "rows": rows}, indent=1) + "\n")
        print(f"{method}: {row['status']}, peak {row['peak_gb']:.2f} GB"
              + (f", {row['fit_s']:.0f} s" if row.get("fit_s") else ""), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
