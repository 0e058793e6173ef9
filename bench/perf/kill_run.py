"""What a SIGKILL of the run's process alone leaves behind: ``--trials`` runs of two tasks on ``--jobs 2``
(tests/execution/test_worker_lifecycle.py's estimator, sleeping a minute in its fit), each killed (``kill -9`` of
its pid only) once both tasks fit; prints, per trial, the seconds from the kill until no process of the
run's session is left (its workers, loky's resource trackers), given up at 10 s; then the median and
the worst. Exits 1 when a trial left a process for more than ``--max-s`` (5) seconds:

    python bench/perf/kill_run.py --trials 20
    python bench/perf/kill_run.py --trials 5 --pythonpath /tmp/old-checkout   # another code state
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]
from test_worker_lifecycle import kill_run_when_fitting  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--max-s", type=float, default=5.0)
    ap.add_argument("--pythonpath", default=str(ROOT), help="the rfbench checkout the runs use")
    args = ap.parse_args()
    os.environ["PYTHONPATH"] = args.pythonpath
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for trial in range(args.trials):
            times.append(kill_run_when_fitting(Path(tmp), trial))
            print(f"trial {trial + 1}: {times[-1]:.2f} s", flush=True)
    print(f"kill -> no process left: median {statistics.median(times):.2f} s, worst {max(times):.2f} s, "
          f"{sum(t > args.max_s for t in times)} of {len(times)} over {args.max_s:g} s")
    return int(max(times) > args.max_s)


if __name__ == "__main__":
    sys.exit(main())
