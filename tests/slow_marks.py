"""Write tests/slow-tests.txt from a measurement, so the slow marks follow it.

    python -m pytest -q --cpu-times cpu.csv        # the whole suite, with the dataset mirror
    python tests/slow_marks.py cpu.csv [--budget 45]

Test functions (their parametrizations summed) not marked slow in their source are taken heaviest
first until the CPU seconds of the rest fit the budget; the list keeps each one's measured seconds.
"""

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import SLOW_LIST, function_id  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the file written by pytest --cpu-times (a run of the whole suite)")
    ap.add_argument("--budget", type=float, default=45.0, help="CPU seconds left to the fast loop")
    args = ap.parse_args()
    cpu: dict[str, float] = defaultdict(float)
    in_source: set[str] = set()
    with open(args.csv, newline="") as fh:
        for row in csv.DictReader(fh):
            cpu[function_id(row["nodeid"])] += float(row["cpu_s"])
            if row["slow_in_source"] == "1":
                in_source.add(function_id(row["nodeid"]))
    fast = {f: s for f, s in cpu.items() if f not in in_source}
    listed, rest = [], sum(fast.values())
    for f, s in sorted(fast.items(), key=lambda kv: -kv[1]):
        if rest <= args.budget:
            break
        listed.append((f, s))
        rest -= s
    lines = ["# Test functions marked slow by measurement (CPU seconds of this process + the subprocesses",
             f"# it waited for), written by tests/slow_marks.py from `pytest --cpu-times`, budget {args.budget:g} s:",
             f"# the fast loop (`-m \"not slow\"`) measured {rest:.1f} CPU s over {len(fast) - len(listed)} functions.",
             *(f"{f}  # {s:.1f} s" for f, s in sorted(listed))]
    SLOW_LIST.write_text("\n".join(lines) + "\n")
    print(f"{len(listed)} functions listed; the fast loop keeps {rest:.1f} CPU s over "
          f"{len(fast) - len(listed)} functions ({len(in_source)} are marked slow in their source)")


if __name__ == "__main__":
    main()
