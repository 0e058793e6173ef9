"""Where the results of a spec are read from: the one resolution step of every command that reads a
spec's results (``report SPEC``, ``check SPEC``, ``plot SPEC``, ``status SPEC``, ``reproduce --list``,
``--check-only`` and ``--dry-run``'s estimates, ``report --all``).

The results of one of a spec's results directories (its own, and those it ``also_reads``) are

* the directory itself when it holds records here (records/*.json, or a results.csv): a local run
  always wins over what ships;
* else its shipped baseline, ``rfbench/_data/baselines/<directory name>.parquet`` (written by
  ``rfbench baselines --write`` from the committed results, one row per task:
  :mod:`rfbench.experiments.baselines`), whose rows :func:`rfbench.store.load_results` reads as
  records in the directory's place (:class:`Shipped`);
* else nothing (before a first run of a spec that ships no baseline).

Which one was read is said in one line (:func:`describe`). Nothing is written where a baseline is
read: check.txt, report.md and a spec's figures go to a local results directory only.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.registry import PACKAGE_DIR, Registry


@dataclass(frozen=True)
class Shipped:
    """The shipped baseline of a results directory that holds no records here, read in its place
    (``load_results`` calls :meth:`frame` where it would read the directory's records)."""
    directory: Path          # the results directory it stands for
    file: Path               # rfbench/_data/baselines/<directory name>.parquet

    @property
    def path(self) -> Path:
        return self.file

    def baseline(self):
        return _read(self.file)

    def frame(self) -> pd.DataFrame:
        """The rows as records (the columns of rfbench.store.COLUMNS)."""
        return self.baseline().results

    @property
    def tasks(self) -> int:
        """The rows of the file: one per task (finished, failed or timed out)."""
        return len(self.baseline().frame)

    def __str__(self) -> str:
        return f"shipped baseline {shown(self.file)}"


@functools.lru_cache(maxsize=32)
def _read(file: Path):
    from rfbench.experiments import baselines

    return baselines.read_file(file)


def shown(file: Path) -> str:
    """A shipped file as ``rfbench/_data/baselines/NAME.parquet`` (its path inside the package)."""
    try:
        return str(Path(file).resolve().relative_to(PACKAGE_DIR.parent))
    except ValueError:
        return str(file)


def holds_records(directory: Path) -> bool:
    """Whether a results directory holds results here: a record file, or a results.csv."""
    directory = Path(directory)
    records = directory / "records"
    if records.is_dir():
        with os.scandir(records) as entries:
            if any(e.name.endswith(".json") for e in entries):
                return True
    return (directory / "results.csv").is_file()


def shipped_file(directory: Path) -> Path | None:
    """The shipped baseline of a results directory (by its name), None when none ships."""
    from rfbench.experiments import baselines

    file = baselines.shipped_dir() / f"{Path(directory).name}{baselines.SUFFIX}"
    return file if file.is_file() else None


def source(directory: Path | None):
    """What the results of ``directory`` are read from: the directory (a Path) when it holds
    records, else its :class:`Shipped` baseline, else None."""
    if directory is None:
        return None
    directory = Path(directory)
    if holds_records(directory):
        return directory
    file = shipped_file(directory)
    return Shipped(directory, file) if file is not None else None


def of_spec(spec) -> list[tuple[Path, object]]:
    """(directory, source or None) of each of the spec's results directories, its own first."""
    return [(d, source(d)) for d in spec.result_dirs()]


def is_shipped(src) -> bool:
    return isinstance(src, Shipped)


def describe_one(directory: Path, src) -> str:
    """Where one results directory's results come from, in a few words."""
    if src is None:
        return f"none (no records in {directory}, no shipped baseline {Path(directory).name})"
    if is_shipped(src):
        why = (f"no records in {directory}" if Path(directory).is_dir()
               else f"no local results directory at {directory}")
        return f"{src} ({src.tasks} tasks; {why})"
    shipped = shipped_file(directory)
    return f"{directory}" + (f" (local results directory; it wins over the shipped baseline {shown(shipped)})"
                             if shipped is not None else " (local results directory)")


def describe(pairs) -> str:
    """``results: ...``: the one line saying where a spec's results were read from (``pairs``: the
    (directory, source) of :func:`of_spec`, or of the directories a command was given)."""
    return "results: " + "; ".join(describe_one(d, s) for d, s in pairs)


def resolve_arg(arg: str, registry: Registry):
    """A DIR argument of report, check and plot: an existing directory stays itself (spec None);
    a spec's name or file, or a spec's results directory that is not here, is that spec's own
    results directory resolved by :func:`source`. Returns (what load_results reads, the spec or
    None, the directory it stands for); anything else is returned as it is (load_results then
    says it is not found)."""
    from rfbench.experiments.spec import find_spec, load_spec, spec_of_results

    path = Path(arg)
    if path.is_dir():
        return arg, None, path
    try:
        find_spec(arg)
    except UsageError:
        spec = spec_of_results(path, registry) if path.name else None
    else:
        spec = load_spec(arg, registry)
    if spec is None or spec.results is None:
        return arg, None, path
    src = source(spec.results)
    if src is None:
        raise UsageError(f"spec {spec.name} has no results here: no records in {spec.results} and no shipped "
                         f"baseline {spec.results.name}; run `rfbench reproduce {spec.name}` first")
    return src, spec, spec.results
