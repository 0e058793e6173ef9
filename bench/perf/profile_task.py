"""Where does the time of one task go? Profile one (dataset, method, n, outer fold) of the protocol.

The task runs exactly as in ``rfbench run`` (same data preparation, folds, seeds and thread budget,
through :func:`rfbench.execution.tasks.execute`), under cProfile. Prints the error and time of the task and
the functions with the largest own time, and writes the same text to ``--output``.

    python bench/perf/profile_task.py --dataset friedman --method gfc --features 500 [--fold 0]
        [--threads 1] [--top 15] [--output results/profile-gfc-friedman-n500.txt]
    python bench/perf/profile_task.py --protocol published --dataset uci-sml --method gbrff1
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import time
from pathlib import Path

from rfbench import protocol as proto
from rfbench import registry
from rfbench.data.sources import DataSources
from rfbench.execution.tasks import WorkerOptions, WorkItem, execute


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", required=True)
    ap.add_argument("--method", required=True)
    ap.add_argument("--features", type=int, default=100)
    ap.add_argument("--fold", type=int, default=0)
    ap.add_argument("--protocol", default="cv", help="the protocol's name, with its default settings "
                    "(cv: nested 10 x 5, seed 0; published: the UCI sets' fixed splits)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--output")
    args = ap.parse_args()
    item = WorkItem(args.dataset, args.method, args.fold, (args.features,))
    protocol = proto.Protocol(args.protocol)
    reg = registry.load()
    profiler = cProfile.Profile()
    t0 = time.perf_counter()
    profiler.enable()
    (record,) = execute(item, WorkerOptions(protocol, DataSources.from_settings(), args.threads, None, reg))
    profiler.disable()
    wall = time.perf_counter() - t0
    if record.status != "done":
        raise SystemExit(f"{args.method} on {args.dataset}: {record.status}: {record.message}")
    out = io.StringIO()
    out.write(f"{args.method} on {args.dataset}, n = {args.features}, outer fold {args.fold}, "
              f"{args.threads} thread(s): status {record.status}, error {record.error}, "
              f"tune {record.tune_s:.1f} s, fit {record.fit_s:.1f} s, predict {record.predict_s:.2f} s, "
              f"wall {wall:.1f} s (with profiling overhead)\n\n")
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(args.top)
    text = out.getvalue().replace(str(Path.cwd()) + "/", "")
    print(text)
    if args.output:
        Path(args.output).write_text(text)


if __name__ == "__main__":
    main()
