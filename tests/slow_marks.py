"""Write tests/slow-tests.txt from a measurement, so the slow marks follow it.

    python -m pytest -q --cpu-times cpu.csv        # the whole suite, with the dataset mirror
    python tests/slow_marks.py cpu.csv [--budget 45]

Test functions (their parametrizations summed) not marked slow in their source are taken heaviest
first until the CPU seconds of the rest fit the budget; the list keeps each one's measured seconds.
A measurement that misses functions the list names (a partial run) is refused, since it would drop
their marks; ``--merge`` keeps those entries as they are and decides the measured functions alone.
"""

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from conftest import SLOW_LIST, function_id  # noqa: E402


def listed_before() -> dict[str, str]:
    """function id → its line in the current list."""
    if not SLOW_LIST.is_file():
        return {}
    lines = [line for line in SLOW_LIST.read_text().splitlines() if line.split("#", 1)[0].strip()]
    return {line.split("#", 1)[0].strip(): line for line in lines}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("csv", help="the file written by pytest --cpu-times (a run of the whole suite)")
    ap.add_argument("--budget", type=float, default=45.0, help="CPU seconds left to the fast loop")
    ap.add_argument("--merge", action="store_true",
                    help="a partial measurement: keep the listed functions it did not measure")
    args = ap.parse_args(argv)
    cpu: dict[str, float] = defaultdict(float)
    in_source: set[str] = set()
    with open(args.csv, newline="") as fh:
        for row in csv.DictReader(fh):
            cpu[function_id(row["nodeid"])] += float(row["cpu_s"])
            if row["slow_in_source"] == "1":
                in_source.add(function_id(row["nodeid"]))
    if not cpu:
        print(f"error: {args.csv} holds no measured test; run `python -m pytest -q --cpu-times {args.csv}` first",
              file=sys.stderr)
        return 2
    before = listed_before()
    unmeasured = sorted(set(before) - set(cpu))
    if unmeasured and not args.merge:
        print(f"error: {args.csv} does not measure {len(unmeasured)} of the {len(before)} functions listed in "
              f"{SLOW_LIST.name} (e.g. {unmeasured[0]}): a partial run would drop their marks; measure the whole "
              "suite, or pass --merge to keep their entries", file=sys.stderr)
        return 2
    kept = [before[f] for f in unmeasured]     # --merge: as they were
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
             *sorted([*(f"{f}  # {s:.1f} s" for f, s in listed), *kept])]
    SLOW_LIST.write_text("\n".join(lines) + "\n")
    print(f"{len(listed)} functions listed{f' (and {len(kept)} kept unmeasured)' if kept else ''}; the fast loop "
          f"keeps {rest:.1f} CPU s over {len(fast) - len(listed)} functions ({len(in_source)} are marked slow in "
          "their source)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
