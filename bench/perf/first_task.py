"""Time to the first progress lines of a fresh `rfbench run` (the README's quick start by default).

Runs the command several times into a fresh temporary --out each, reads its stderr line by line
and notes when each kind of line first appears: any line, the bar's start ("running N tasks"), the
first finished task. Prints the medians (and every run) so that a change to start-up is measured
before and after on the same machine:

    python bench/perf/first_task.py --repeats 3
    python bench/perf/first_task.py --repeats 3 --pythonpath /tmp/old-checkout   # another code state

Each run is stopped (SIGINT, as Ctrl-C) once its first task has finished.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

QUICK_START = ("run --suite synthetic --methods rff-gauss,rff-laplace,rff-cauchy,lgbm-quick --features 100 "
               "--outer-folds 5 --max-samples 4000")
KINDS = {"first line": re.compile(r"."),
         "bar drawn": re.compile(r"\] 0/\d+ tasks"),
         "first task done": re.compile(r"\] [1-9]\d*/\d+ tasks")}


def one_run(args: list[str], env: dict) -> dict[str, float]:
    """Seconds from the start of the process to the first line of each kind."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", "from rfbench.cli import main; main()", *args, "--out", os.path.join(tmp, "out")],
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
        seen: dict[str, float] = {}
        for line in proc.stderr:
            now = time.perf_counter() - t0
            for kind, pattern in KINDS.items():
                if kind not in seen and pattern.search(line):
                    seen[kind] = now
            if "first task done" in seen:
                proc.send_signal(signal.SIGINT)
                break
        proc.wait()
        if "first task done" not in seen:
            raise SystemExit(f"the run ended before a task finished (exit {proc.returncode})")
        return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--command", default=QUICK_START, help="rfbench arguments, without --out")
    ap.add_argument("--pythonpath", default=None, help="import rfbench from this checkout (default: as installed)")
    args = ap.parse_args()
    env = dict(os.environ)
    if args.pythonpath:
        env["PYTHONPATH"] = args.pythonpath
    runs = [one_run(args.command.split(), env) for _ in range(args.repeats)]
    for kind in KINDS:
        values = [r[kind] for r in runs]
        print(f"{kind:16s} median {statistics.median(values):5.1f} s   runs: "
              + ", ".join(f"{v:.1f}" for v in values))


if __name__ == "__main__":
    main()
