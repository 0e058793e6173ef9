"""FALKON against the GP rows on the three large UCI sets, and falkon / gp on a GPU against the CPU
(issue 44 item 3), measured on one GPU machine in one short run.

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/uci_gpu.py --device cuda --budget-s 400 \\
        --output results/uci-gpu.json

On split 0 of the published splits of kin40k, protein and keggdirected (36 000, 41 157 and 43 944
training rows), each fit built exactly as the runner builds it (rfbench.execution.tasks.fold_task:
training-part scaling, seeded inner folds; the RMSE in the target's stored unit), in a fresh child
process per fit with a time limit:

* **on the device, one fit at a time** (the GPU is not shared, so its times are its own):
  ``falkon`` at M = 10 000 centres with its default σ × λ grid chosen by the inner 5-fold CV
  (``factor_bytes`` as given: the default 1 GiB solves one λ at a time, ≤ 4 GB; more lets the nine
  λ share each kernel pass); ``gp`` exact on ``--gp-rows`` seeded training rows (gp-sod's
  subset-of-data rule with a larger N than the CPU's 3 500); then ``falkon`` at M = 500 and
  ``gp-sod`` (N = 3 500, the suite's row) on the device, the same fits as the CPU's below;
* **on the CPU, meanwhile** (``--cpu-threads`` BLAS threads per fit, the fits side by side on the
  other cores): ``falkon`` at M = 500 and ``gp-sod`` (N = 3 500), the suite's rows as the CPU path
  computes them, so that each device fit has its CPU twin (errors within rounding, time ratio).

Each row: dataset, method, n, device, status (done / error / timeout), fit seconds (fit + predict,
the device synchronised), RMSE, the chosen parameters, the peak memory (the device's
``max_memory_allocated`` on a GPU, else the child's peak resident set less its size after loading
the data). The JSON is rewritten after every finished fit, so a run stopped at any moment keeps what
it measured. With ``--device torch-cpu`` it runs anywhere (CI-sized budget): its numbers then say
nothing of a GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SETS = ["uci-kin40k", "uci-protein", "uci-keggdirected"]

CHILD = r"""
import json, os, resource, sys, time
spec = json.loads(sys.argv[1])
from threadpoolctl import threadpool_limits
from rfbench import registry
from rfbench import protocol as proto
from rfbench.execution.tasks import fold_task

device = spec["device"]
cuda = device.startswith("cuda")
if cuda:
    import torch
    torch.set_num_threads(spec["threads"])
    A = torch.eye(8, dtype=torch.float64, device=device) * 2.0     # the context and the solver handles first
    torch.linalg.cholesky_ex(A @ A); torch.cuda.synchronize()
with threadpool_limits(spec["threads"]):
    protocol = proto.Protocol("published")
    task = fold_task(spec["dataset"], spec["method"], 0, protocol, None, threads=spec["threads"],
                     device=device, registry=registry.load())
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(json.dumps({"event": "loaded", "m_train": int(len(task.y_tr))}), flush=True)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    params = {**task.common, **spec["params"]}
    start = time.perf_counter()
    est = task.cls(n_features=spec["n"], **params).fit(task.X_tr, task.y_tr)
    pred = est.predict(task.X_te)
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    rmse = proto.score(task.ds.task, task.y_te, pred, protocol.target_scaling, y_unit=task.y_unit)
peak = (torch.cuda.max_memory_allocated() / 2**30 if cuda
        else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20 - base)
chosen = {k: v for k, v in getattr(est, "best_params_", {}).items() if isinstance(v, (int, float, str))}
print(json.dumps({"event": "done", "seconds": seconds, "rmse": float(rmse), "peak_gb": peak,
                  "m_train": int(len(task.y_tr)), "chosen": chosen}), flush=True)
"""


def fit(item: dict, limit: float, env: dict) -> dict:
    """One fit in a fresh child process, stopped after ``limit`` seconds."""
    row = {k: item[k] for k in ("dataset", "method", "n", "device", "params", "threads", "role")}
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(item)], capture_output=True, text=True,
                              timeout=max(limit, 1.0), env=env, cwd=REPO)
    except subprocess.TimeoutExpired:
        row.update(status="timeout", limit_s=round(limit, 1), wall_s=round(time.monotonic() - start, 1))
        return row
    events = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    done = [e for e in events if e.get("event") == "done"]
    if proc.returncode == 0 and done:
        row.update(status="done", **{k: v for k, v in done[0].items() if k != "event"})
    else:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        row.update(status="error", message=tail[:300])
    row["wall_s"] = round(time.monotonic() - start, 1)
    return row


def plan(device: str, gp_rows: int, factor_bytes: int, cpu_threads: int, device_threads: int,
         item_s: float, full_gp_s: float = 0.0):
    """(device queue, CPU queue): the device fits in order of importance, and their CPU twins; a
    device fit is stopped after ``item_s`` seconds, so that one slow fit leaves time for the rest.
    ``full_gp_s`` > 0: last, the exact GP on every training row of each set (``gp`` on the device: its
    N is what the GPU's free memory holds, above these sets' rows on an H100 or H200), each stopped
    after ``full_gp_s`` seconds: the GP row the issue's "≥ 10× less fit time" speaks of (36 000-44 000
    rows: an m × m matrix of 10-15 GB)."""
    gpu, cpu = [], []
    for ds in SETS:
        gpu.append(dict(dataset=ds, method="falkon", n=10_000, device=device, threads=device_threads,
                        params={"factor_bytes": factor_bytes}, role="falkon M=10000", limit=item_s))
        gpu.append(dict(dataset=ds, method="gp-sod", n=100, device=device, threads=device_threads,
                        params={"max_rows": gp_rows}, role=f"gp N={gp_rows}", limit=item_s))
    for ds in SETS:
        for method, n, role in (("falkon", 500, "falkon M=500"), ("gp-sod", 100, "gp-sod N=3500")):
            gpu.append(dict(dataset=ds, method=method, n=n, device=device, threads=device_threads, params={},
                            role=role, limit=item_s))
            cpu.append(dict(dataset=ds, method=method, n=n, device="cpu", threads=cpu_threads, params={},
                            role=role))
    if factor_bytes != 2**30:    # the default's memory (one λ at a time) at M = 10 000, on the first set
        gpu.append(dict(dataset=SETS[0], method="falkon", n=10_000, device=device, threads=device_threads,
                        params={"factor_bytes": 2**30}, role="falkon M=10000, factor_bytes 1 GiB",
                        limit=item_s))
    if full_gp_s > 0:
        for ds in SETS:
            gpu.append(dict(dataset=ds, method="gp", n=100, device=device, threads=device_threads,
                            params={}, role="gp all rows", limit=full_gp_s))
    return gpu, cpu


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--budget-s", type=float, default=400.0)
    ap.add_argument("--gp-rows", type=int, default=10_000)
    ap.add_argument("--factor-bytes", type=int, default=2**30)
    ap.add_argument("--cpu-threads", type=int, default=2)
    ap.add_argument("--cpu-fits", type=int, default=6, help="CPU fits side by side")
    ap.add_argument("--device-threads", type=int, default=4)
    ap.add_argument("--item-s", type=float, default=120.0, help="the longest one device fit may take")
    ap.add_argument("--full-gp-s", type=float, default=0.0,
                    help="> 0: the exact GP on every training row of each set last, each stopped after this")
    ap.add_argument("--only-full-gp", action="store_true",
                    help="the exact GPs on every row alone (after a run that measured the rest); needs --full-gp-s")
    ap.add_argument("--output", type=Path, default=REPO / "results" / "uci-gpu.json")
    args = ap.parse_args(argv)

    deadline = time.monotonic() + args.budget_s
    gpu_queue, cpu_queue = plan(args.device, args.gp_rows, args.factor_bytes, args.cpu_threads,
                                args.device_threads, args.item_s, args.full_gp_s)
    if args.only_full_gp:
        if args.full_gp_s <= 0:
            ap.error("--only-full-gp needs --full-gp-s SECONDS (each fit's limit)")
        gpu_queue, cpu_queue = [r for r in gpu_queue if r["role"] == "gp all rows"], []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    out = {"what": __doc__.split("\n\n")[0], "device": args.device, "budget_s": args.budget_s,
           "gp_rows": args.gp_rows, "factor_bytes": args.factor_bytes, "cpu_threads": args.cpu_threads,
           "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count()}, "rows": []}
    if args.device.startswith("cuda"):
        import torch

        out["machine"]["gpu"] = torch.cuda.get_device_name(0)
        out["machine"]["torch"] = torch.__version__

    def save():
        args.output.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.output.with_suffix(".tmp")
        tmp.write_text(json.dumps(out, indent=1) + "\n")
        os.replace(tmp, args.output)

    def run_queue(queue):
        for item in queue:
            left = deadline - time.monotonic()
            if left < 5:
                out["rows"].append({**{k: item[k] for k in ("dataset", "method", "n", "device", "role")},
                                    "status": "not run (budget spent)"})
                continue
            row = fit(item, min(left, item.get("limit", left)), env)
            out["rows"].append(row)
            save()
            print(json.dumps({k: row.get(k) for k in ("role", "dataset", "device", "status", "seconds", "rmse",
                                                       "peak_gb")}), flush=True)

    with ThreadPoolExecutor(1 + args.cpu_fits) as pool:
        jobs = [pool.submit(run_queue, gpu_queue)]
        jobs += [pool.submit(run_queue, cpu_queue[k::args.cpu_fits]) for k in range(args.cpu_fits)]
        for job in jobs:
            job.result()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main())
