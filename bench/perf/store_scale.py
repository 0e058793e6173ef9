"""How the results store scales: `rfbench status` and `rfbench report` on 100 000 records, and the
runner's bookkeeping per task (issue 22 item 5; targets: ≤ 5 s each, ≤ 5 % per task).

**The store.** A synthetic results directory of 100 000 records is written through the store's own
API (:meth:`rfbench.store.RunDir.write_record` and ``write_run_info``, so the layout is the real
one: ``records/<key>.json``, ``runs.jsonl``, ``run.json``): 20 registered regression datasets × 10
methods × n = 100, 500 × 10 outer folds × 25 seeds under ``cv-o10-i5``, one ``runs.jsonl`` line
per seed as ``rfbench run --seeds 0,...,24`` writes them. Records are as the runner writes them
(errors, times, sizes, chosen hyper-parameters as JSON, invocation ids, finish times); about
0.5 % are ``error`` records (with a traceback) and 0.2 % ``timeout``. A directory given with
``--dir`` that already holds the records is reused (writing them takes minutes: one fsync each).
Then, each a cold process, median of ``--repeat`` (3):

* ``rfbench status DIR`` (a directory that belongs to no spec: the plan is rebuilt from its
  ``runs.jsonl``; done/failed/left per (method, n), the estimate of the time left);
* ``rfbench report DIR`` (text, ``--width 0``) and ``rfbench report DIR --format latex``;
* once each: ``rfbench status`` with the index removed (it reads every record file and rewrites the
  index), and with the index as a run killed before its final consolidation leaves it (one
  appended line per record; it rewrites the index as columns), then the status after that;

and in this process, on a fresh :class:`~rfbench.store.RunDir` each time: ``records()``,
``done_keys()`` and ``write_results_csv()``. Each is timed twice: "cold", with the directory's
index removed first (what the first reader after a run that wrote no index pays: every record
file parsed), and "warm" (the normal case: an index that is up to date with the records).

**The runner.** A run of 2 000 tasks through ``rfbench run`` (a cold process, ``--jobs 1``, the
in-process executor): overhead per task = (wall time of the run − Σ ``total_s`` of its records) /
tasks, also as a fraction of the mean task. ``total_s`` is a task's fit + predict; everything else
the runner does for a task is overhead (its claim, the data's split and scaling for the fold, the
record's atomic write and its share of the group commit, the progress line) and so are the process
start, the data loading and the plan, spread over the 2 000 tasks. That fixed start-up cost is also
measured alone (median of 3 cold runs of one task: wall − its total_s), and the per-task overhead
without it is reported beside the total: the part that grows with the run. The tasks must not be so tiny that this is
meaningless: a 2 ms fit would make any fsync look like 100 % overhead. The run uses ``rff-gauss``
(its full inner CV: 10 bandwidths × a continuous 1-D search of λ over 3 inner folds) on
``salsa-housing`` (506 × 12, mirrored) subsampled to 300 rows, n = 50..140 in steps of 10, 10 outer
folds, 20 seeds: 10 × 10 × 20 = 2 000 tasks of some 30–70 ms each (mean ~50 ms), the size of a
real quick run's task; the overhead in ms per task is the number to compare across task sizes. ``--cached-threadpool`` times the same run once more with threadpoolctl's limits taken through
one cached ``ThreadpoolController`` (what ``rfbench.execution.tasks.execute`` would do instead of calling
``threadpool_limits()``, which lists the process's shared libraries again for every task: ~2 ms,
the largest part of the overhead). ``--tasks-only`` / ``--store-only`` run one half.

    RFBENCH_DATA_DIR=../shared/datasets python bench/perf/store_scale.py [--dir /tmp/rfbench-100k] \\
        [--output results/store-scale.json] [--label after]

The output keeps one block per ``--label`` (e.g. "before" and "after" a change), so one file holds
both sides. The machine note says what else ran: measure on an idle machine when there is one.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

DATASETS = ["parkinsons-tm", "ujindoorloc", "ct-slice", "year-msd", "delta-ailerons", "kinematics",
            "cpu-activity", "bank", "pumadyn", "delta-elevators", "ailerons", "pole-telecom", "elevators",
            "cal-housing", "breiman", "friedman", "salsa-housing", "salsa-galaxy", "salsa-skillcraft",
            "salsa-ccpp"]
METHODS = ["gfc", "alc", "alc-q1", "alc-q2", "rff-gauss", "rff-laplace", "rff-cauchy", "eerf", "lkrf", "gbrff2"]
FEATURES = [100, 500]
FOLDS = 10
SEEDS = 25
PROTOCOL = {"name": "cv", "outer_folds": FOLDS, "inner_folds": 5, "seed": 0, "repeats": 20, "test_size": 0.3,
            "max_samples": None}
KEY = "cv-o10-i5"
MACHINE_NOTE = "shared machine (2 cores), niced background lane running"

TASK_RUN = ["--datasets", "salsa-housing", "--methods", "rff-gauss", "--features", "50,60,70,80,90,100,110,120,130,140",
            "--outer-folds", "10", "--inner-folds", "3", "--max-samples", "300",
            "--seeds", ",".join(map(str, range(20))), "--jobs", "1", "--threads", "1"]


def commit() -> str:
    """The commit of the rfbench package measured (with '+changes' when its files differ from it)."""
    import rfbench

    root = Path(rfbench.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--", "rfbench"],
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown (not a git checkout)"
    return head + ("+changes" if dirty else "")


def expected_records() -> int:
    return len(DATASETS) * len(METHODS) * len(FEATURES) * FOLDS * SEEDS


def write_synthetic(path: Path) -> int:
    """The synthetic directory (see the module docstring); returns the number of records."""
    from rfbench import registry
    from rfbench.store import Record, RunDir

    run = RunDir(path).ensure()
    rng = np.random.default_rng(0)
    t0 = datetime(2026, 11, 1, tzinfo=UTC)
    written = 0
    reg = registry.load()
    for seed in range(SEEDS):
        invocation = uuid.UUID(int=int(rng.integers(2**63))).hex[:12]
        started = t0 + timedelta(hours=30 * seed)
        run.write_run_info({
            "command": "rfbench run --suite gfc --methods " + ",".join(METHODS) + " --features 100,500 --seeds 0-24",
            "started_at": started.isoformat(timespec="seconds"), "invocation": invocation,
            "datasets": DATASETS, "methods": METHODS, "features": FEATURES,
            "protocol": dict(PROTOCOL, seed=seed), "protocol_key": KEY, "jobs": 2, "threads_per_worker": 1,
            "timeout_s": 1800.0, "folds": None, "data_dir": "../shared/datasets",
        })
        at = started
        for d_i, dname in enumerate(DATASETS):
            m_rows = reg.dataset(dname).shape[0]
            n_test = m_rows // FOLDS
            for m_i, meth in enumerate(METHODS):
                base_err = 3.0 + d_i * 0.7 + m_i * 0.05
                for n in FEATURES:
                    scale = 0.02 * (1 + d_i) * (n / 100) * (1 + m_i / 3)
                    for fold in range(FOLDS):
                        tune = float(scale * rng.uniform(5, 20))
                        fit = float(scale * rng.uniform(0.5, 2))
                        pred = float(scale * rng.uniform(0.01, 0.05))
                        at += timedelta(seconds=tune + fit + pred)
                        rec = {"dataset": dname, "method": meth, "n_features": n, "fold": fold, "seed": seed,
                               "protocol": KEY, "threads": 1, "metric": "rmse100", "source": "mirror",
                               "task": "regression", "n_train": m_rows - n_test, "n_test": n_test,
                               "invocation": invocation, "finished_at": at.isoformat(timespec="seconds")}
                        u = rng.uniform()
                        if u < 0.005:
                            rec.update(status="error", error=None, tune_s=None, fit_s=None, predict_s=None,
                                       total_s=float(rng.uniform(0.1, 3)), preprocess_s=None, params=None,
                                       message="LinAlgError: Singular matrix",
                                       traceback="Traceback (most recent call last):\n  File ...\n"
                                                 "numpy.linalg.LinAlgError: Singular matrix\n")
                        elif u < 0.007:
                            rec.update(status="timeout", error=None, tune_s=None, fit_s=None, predict_s=None,
                                       total_s=1800.0, preprocess_s=None, params=None,
                                       message="exceeded the timeout of 1800 s")
                        else:
                            params = {"lambda": float(10 ** rng.uniform(-8, -1)), "sigma": float(rng.uniform(0.5, 9)),
                                      "cv_mse": float(rng.uniform(1e-3, 1e-1))}
                            rec.update(status="done", error=float(base_err + rng.normal(0, 0.3)), tune_s=tune,
                                       fit_s=fit, predict_s=pred, total_s=tune + fit + pred,
                                       preprocess_s=float(fit / 3) if meth in ("eerf", "lkrf") else None,
                                       params=json.dumps(params), message="")
                        run.write_record(Record.from_dict(rec))
                        written += 1
        print(f"  seed {seed}: {written} records", file=sys.stderr, flush=True)
    return written


def timed_cli(args: list[str], repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "rfbench.cli", *args], capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
        if proc.returncode:
            raise SystemExit(f"rfbench {' '.join(args)} failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return {"median_s": statistics.median(times), "runs_s": times}


def timed(fn, repeat: int) -> dict:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return {"median_s": statistics.median(times), "runs_s": times}


def index_paths(path: Path) -> list[Path]:
    """The store's derived files that make reading fast (none before the index existed)."""
    return [p for p in (path / "records.index.jsonl", path / "records" / ".index") if p.exists()]


def drop_index(path: Path) -> None:
    for p in index_paths(path):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def measure_store(path: Path, repeat: int) -> dict:
    from rfbench.store import RunDir

    n = len(list((path / "records").glob("*.json")))
    out: dict = {"records": n, "shape": f"{len(DATASETS)} datasets × {len(METHODS)} methods × "
                 f"{len(FEATURES)} n × {FOLDS} folds × {SEEDS} seeds"}

    def cold(fn):
        def run():
            drop_index(path)
            fn()
        return run

    for name, fn in (("records", lambda: RunDir(path).records()),
                     ("done_keys", lambda: RunDir(path).done_keys()),
                     ("write_results_csv", lambda: RunDir(path).write_results_csv())):
        out[f"{name}_cold"] = timed(cold(fn), repeat)
        fn()                                          # leaves the index (if any) up to date
        out[f"{name}_warm"] = timed(fn, repeat)
    for name, args in (("status", ["status", str(path)]),
                       ("report_text", ["report", str(path), "--width", "0"]),
                       ("report_latex", ["report", str(path), "--format", "latex"])):
        out[name] = timed_cli(args, repeat)
    drop_index(path)
    out["status_cold_index"] = timed_cli(["status", str(path)], 1)
    if journal_index(path):             # as a run killed before its final consolidation leaves it
        out["status_appended_index"] = timed_cli(["status", str(path)], 1)
        out["status_after_rewrite"] = timed_cli(["status", str(path)], 1)
    return out


def journal_index(path: Path) -> bool:
    """The index as a run that wrote every record and was killed before its end leaves it: one
    appended line per record, no columns (False: the store measured has no records index)."""
    from rfbench import store

    if not hasattr(store, "_entry_line"):
        return False
    drop_index(path)
    with open(path / store.INDEX_NAME, "w") as out:
        for entry in sorted(os.scandir(path / "records"), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                with open(entry.path) as fh:
                    text = fh.read()
                out.write(store.index.entry_line(entry.name[:-5], store.index.signature(os.stat(entry.path)), text))
    return True


#: `rfbench run` with threadpoolctl's limits taken through one cached ThreadpoolController (built
#: again when a module was imported since: a new native library may have been loaded) instead of
#: threadpool_limits(), which lists the process's shared libraries again for every task (~2 ms)
CACHED_THREADPOOL = """
import sys, threadpoolctl
_cache = {}
def threadpool_limits(limits=None, user_api=None):
    n = len(sys.modules)
    if _cache.get("n") != n:
        _cache["n"], _cache["c"] = n, threadpoolctl.ThreadpoolController()
    return _cache["c"].limit(limits=limits, user_api=user_api)
threadpoolctl.threadpool_limits = threadpool_limits
from rfbench.cli import main
sys.argv[0] = "rfbench"
main()
"""


def measure_startup(workdir: Path, cmd: list[str], repeat: int = 3) -> float:
    """The run's fixed cost, paid once whatever the number of tasks (interpreter, imports,
    registries, data loading, plan, the final consolidation): median over ``repeat`` cold runs of
    one task of the same kind of (wall − its total_s)."""
    import pandas as pd

    one = list(TASK_RUN)
    one[one.index("--features") + 1], one[one.index("--seeds") + 1] = "50", "0"
    costs = []
    for _ in range(repeat):
        out = workdir / "startup"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        proc = subprocess.run([*cmd, "run", *one, "--folds", "0", "--out", str(out), "--quiet", "--no-report"],
                              capture_output=True, text=True)
        wall = time.perf_counter() - t0
        if proc.returncode:
            raise SystemExit(f"rfbench run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
        costs.append(wall - float(pd.read_csv(out / "results.csv")["total_s"].sum()))
        shutil.rmtree(out, ignore_errors=True)
    return float(sorted(costs)[len(costs) // 2])


def measure_tasks(workdir: Path, cached_threadpool: bool = False) -> dict:
    import pandas as pd

    out = workdir / "tasks"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-c", CACHED_THREADPOOL] if cached_threadpool else [sys.executable, "-m", "rfbench.cli"]
    t0 = time.perf_counter()
    proc = subprocess.run([*cmd, "run", *TASK_RUN, "--out", str(out), "--quiet", "--no-report"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"rfbench run failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    df = pd.read_csv(out / "results.csv")
    tasks = len(df)
    bare = float(df["total_s"].sum())
    over = wall - bare
    shutil.rmtree(out, ignore_errors=True)
    startup = measure_startup(workdir, cmd)
    steady = over - startup
    return {"command": "rfbench run " + " ".join(TASK_RUN), "tasks": tasks,
            "statuses": df["status"].value_counts().to_dict(), "wall_s": wall, "sum_task_s": bare,
            "mean_task_ms": 1000 * bare / tasks, "median_task_ms": 1000 * float(df["total_s"].median()),
            "overhead_ms_per_task": 1000 * over / tasks, "overhead_fraction": over / bare,
            "startup_s": startup, "steady_overhead_ms_per_task": 1000 * steady / tasks,
            "steady_overhead_fraction": steady / bare,
            **({"threadpool": "one cached ThreadpoolController (bench/perf/store_scale.py CACHED_THREADPOOL)"}
               if cached_threadpool else {})}


MEASURES = [("rfbench status", "status", "≤ 5 s"), ("rfbench report (text)", "report_text", "≤ 5 s"),
            ("rfbench report (latex)", "report_latex", "≤ 5 s"), ("RunDir.records(), no index", "records_cold", ""),
            ("RunDir.records()", "records_warm", ""), ("RunDir.done_keys(), no index", "done_keys_cold", ""),
            ("RunDir.done_keys()", "done_keys_warm", ""), ("write_results_csv(), no index", "write_results_csv_cold", ""),
            ("write_results_csv()", "write_results_csv_warm", ""),
            ("rfbench status, index removed first", "status_cold_index", ""),
            ("rfbench status, index = 100 000 appended lines (run killed)", "status_appended_index", ""),
            ("rfbench status, the next one", "status_after_rewrite", "")]


def side_by_side(data: dict, labels: list[str]) -> str:
    """Every measure of the given labels (e.g. before, after) side by side, in seconds."""
    from tabulate import tabulate

    blocks = [data["labels"][lab] for lab in labels]
    rows = []
    for name, key, target in MEASURES:
        vals = [b.get("store", {}).get(key, {}).get("median_s") for b in blocks]
        if any(v is not None for v in vals):
            rows.append([name, *("" if v is None else f"{v:.2f}" for v in vals), target])
    for name, key, fmt in (("runner: wall of 2 000 tasks (s)", "wall_s", "{:.1f}"),
                           ("runner: Σ total_s (s)", "sum_task_s", "{:.1f}"),
                           ("runner: mean task (ms)", "mean_task_ms", "{:.0f}"),
                           ("runner: overhead per task (ms)", "overhead_ms_per_task", "{:.1f}"),
                           ("runner: overhead / task time", "overhead_fraction", "{:.1%}"),
                           ("runner: fixed start-up cost (s, median of 3 one-task runs)", "startup_s", "{:.2f}"),
                           ("runner: per-task overhead without start-up (ms)", "steady_overhead_ms_per_task", "{:.1f}"),
                           ("runner: per-task overhead without start-up / task time", "steady_overhead_fraction",
                            "{:.1%}")):
        vals = [b.get("tasks", {}).get(key) for b in blocks]
        if any(v is not None for v in vals):
            rows.append([name, *("" if v is None else fmt.format(v) for v in vals),
                         "≤ 5 %" if key == "overhead_fraction" else ""])
    vals = [b.get("tasks_cached_threadpool") for b in blocks]
    if any(vals):
        rows.append(["runner, cached threadpool controller: overhead per task (ms)",
                     *("" if v is None else f"{v['overhead_ms_per_task']:.1f}" for v in vals), ""])
        rows.append(["runner, cached threadpool controller: overhead / task time",
                     *("" if v is None else f"{v['overhead_fraction']:.1%}" for v in vals), "≤ 5 %"])
    return tabulate(rows, headers=["measure", *labels, "target"], disable_numparse=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=None, help="the synthetic results directory (reused when it holds the records; "
                                                "default: a temporary directory, removed at the end)")
    ap.add_argument("--output", default="results/store-scale.json")
    ap.add_argument("--label", default="current", help="the code state these numbers measure")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--store-only", action="store_true")
    ap.add_argument("--tasks-only", action="store_true")
    ap.add_argument("--note", default=MACHINE_NOTE, help="what else ran on the machine")
    ap.add_argument("--cached-threadpool", action="store_true",
                    help="also time the run with threadpoolctl's limits through one cached controller")
    ap.add_argument("--code", default=None, help="the code state measured (default: the checkout's commit)")
    args = ap.parse_args()
    os.environ.setdefault("RFBENCH_DATA_DIR", "../shared/datasets")

    tmp = None
    if args.dir is None:
        tmp = Path(tempfile.mkdtemp(prefix="rfbench-store-scale-"))
        path = tmp / "results"
    else:
        path = Path(args.dir)
    block: dict = {"measured_at": datetime.now(UTC).isoformat(timespec="seconds"), "machine": args.note,
                   "code": args.code or commit(),
                   "cpu_count": os.cpu_count(), "load_average_at_start": list(os.getloadavg())}
    try:
        if not args.tasks_only:
            have = len(list((path / "records").glob("*.json"))) if (path / "records").is_dir() else 0
            if have != expected_records():
                if have:
                    raise SystemExit(f"{path} holds {have} records, not {expected_records()}: give an empty --dir")
                print(f"writing {expected_records()} records into {path} ...", file=sys.stderr)
                t0 = time.perf_counter()
                write_synthetic(path)
                block["write_s"] = time.perf_counter() - t0
            block["store"] = measure_store(path, args.repeat)
        if not args.store_only:
            work = Path(tmp or tempfile.mkdtemp(prefix="rfbench-store-tasks-"))
            block["tasks"] = measure_tasks(work)
            if args.cached_threadpool:
                block["tasks_cached_threadpool"] = measure_tasks(work, cached_threadpool=True)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    block["load_average_at_end"] = list(os.getloadavg())
    print(side_by_side({"labels": {args.label: block}}, [args.label]))
    output = Path(args.output)
    data = json.loads(output.read_text()) if output.is_file() else {}
    data.setdefault("labels", {})
    old = data["labels"].get(args.label, {})
    data["labels"][args.label] = {**old, **block}
    data["targets"] = {"status_s": 5.0, "report_s": 5.0, "runner_overhead_fraction": 0.05}
    from rfbench.store import atomic_write_text

    atomic_write_text(output, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {output}")
    if len(data["labels"]) > 1:
        print()
        print(side_by_side(data, list(data["labels"])))


if __name__ == "__main__":
    main()
