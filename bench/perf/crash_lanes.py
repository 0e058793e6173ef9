"""What worker deaths cost a run: 5 tasks of which 4 kill their worker, against the same 5 tasks clean.

Each task is a fit of ``--fit-s`` seconds (tests/execution/test_lanes.py's estimator); in the crash run the
tasks of folds 1-4 kill their worker (``os._exit``) ``--crash-after-s`` into their fit, each twice
(MAX_WORKER_DEATHS) before it is recorded as ``worker died``; fold 0's task finishes. Both runs use
``--jobs 2``. Prints the wall time of each run (medians over ``--repeats``, every run listed) and their
ratio, and exits 1 when the crash run takes more than ``--max-ratio`` (1.5) × the clean one:

    python bench/perf/crash_lanes.py --repeats 3
    python bench/perf/crash_lanes.py --repeats 3 --pythonpath /tmp/old-checkout   # another code state
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from test_lanes import LANEMOD  # noqa: E402


def one_run(env: dict, crash: bool, tmp: Path) -> float:
    out = tmp / f"run-{'crash' if crash else 'clean'}-{time.monotonic_ns()}"
    log = tmp / f"log-{time.monotonic_ns()}"
    log.mkdir()
    run_env = dict(env, RFBENCH_TEST_LOG=str(log), **({"CRASH": "1"} if crash else {}))
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "run", "--datasets", "friedman-generated", "--methods",
                          "lanemod:Lane", "--features", "10", "--outer-folds", "5", "--inner-folds", "2",
                          "--max-samples", "200", "--jobs", "2", "--quiet", "--no-report", "--out", str(out)],
                         capture_output=True, text=True, cwd=tmp, env=run_env)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        raise SystemExit(f"exit {res.returncode}: {res.stderr[-2000:]}")
    return wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--fit-s", type=float, default=5.0, help="seconds of each task's fit")
    ap.add_argument("--crash-after-s", type=float, default=1.0, help="seconds into its fit a crashing task dies")
    ap.add_argument("--max-ratio", type=float, default=1.5)
    ap.add_argument("--pythonpath", default=None, help="import rfbench from this checkout (default: this one)")
    args = ap.parse_args()
    from rfbench.execution.tasks import method_seed

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "lanemod.py").write_text(LANEMOD)
        code = args.pythonpath or str(ROOT)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp), code]), RFBENCH_JOBS="2",
                   SURVIVOR_RS=str(method_seed(0, 0)), FIT_S=str(args.fit_s), CRASH_AFTER_S=str(args.crash_after_s))
        clean, crash = [], []
        for _ in range(args.repeats):           # alternating, so that a change of load hits both
            clean.append(one_run(env, False, tmp))
            crash.append(one_run(env, True, tmp))
    result = {"code": code, "fit_s": args.fit_s, "crash_after_s": args.crash_after_s, "jobs": 2,
              "clean_s": [round(s, 2) for s in clean], "crash_s": [round(s, 2) for s in crash],
              "clean_median_s": round(statistics.median(clean), 2), "crash_median_s": round(statistics.median(crash), 2)}
    result["ratio"] = round(result["crash_median_s"] / result["clean_median_s"], 3)
    print(json.dumps(result, indent=2))
    if result["ratio"] > args.max_ratio:
        print(f"crash run {result['ratio']:.2f}× the clean run (more than {args.max_ratio}×)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
