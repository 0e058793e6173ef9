"""A spec's records and the task times its estimates read (``rfbench status``, ``rfbench reproduce
--dry-run`` and the run order of ``rfbench reproduce``), each read where
:mod:`rfbench.experiments.sources` says (the local results directory, else the shipped baseline).

A method new to a spec has no finished task there yet (torgo-modern's GP rows before their first
task): its estimate borrows the method's finished tasks in the other specs' results
(:func:`borrowed_timings`), whose datasets place it on the method's size law, instead of leaving its
cells unestimated. What a task computes is the same under every protocol (the inner CV, the refit
on the training part, the prediction): the protocols differ in which rows are trained on.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rfbench.errors import UsageError
from rfbench.execution.estimate import cpu_path_only
from rfbench.experiments import sources
from rfbench.experiments.spec import Spec, all_specs
from rfbench.registry import Registry
from rfbench.store import COLUMNS, CombineError, RunDir, device_tasks, load_results


def load_results_of(srcs, spec: Spec) -> pd.DataFrame:
    """The records of the spec's protocol in ``srcs`` (directories or shipped baselines)."""
    try:
        return load_results(srcs, protocol=spec.protocol_key, missing_ok=True)
    except CombineError:        # conflicting records or mixed protocols: said in one line, never hidden
        raise
    except UsageError:          # directories without a record yet
        return pd.DataFrame(columns=COLUMNS)


def results_of(spec: Spec, read_only: bool = False) -> pd.DataFrame:
    """Every record of the spec's protocol in its directories, each read where
    :func:`rfbench.experiments.sources.source` says: the local directory when it holds records, else
    its shipped baseline (an empty frame when neither has any). ``read_only``: its local directories
    are read without writing their records index (another spec's, which the command was not pointed
    at)."""
    return _results_in(_sources(spec, read_only), spec)


def _sources(spec: Spec, read_only: bool) -> list:
    dirs = [src for _, src in sources.of_spec(spec) if src is not None]
    return [RunDir(d, read_only=True) if read_only and isinstance(d, Path) else d for d in dirs]


def _results_in(dirs: list, spec: Spec) -> pd.DataFrame:
    return load_results_of(dirs, spec) if dirs else pd.DataFrame(columns=COLUMNS)


def cpu_timings(spec: Spec, read_only: bool = False) -> pd.DataFrame:
    """The spec's done tasks that the NumPy path computed, with their times: what the estimates of
    its run order read (a task a GPU computed does not show the CPU path's time)."""
    dirs = _sources(spec, read_only)       # once: its records and its device tasks are read from them
    results = _results_in(dirs, spec)
    done = results[results["status"] == "done"].astype({"n_features": int})
    return cpu_path_only(done, device_tasks(dirs))


def borrowed_timings(spec: Spec, own: pd.DataFrame, registry: Registry) -> tuple[pd.DataFrame, dict]:
    """The CPU-path finished tasks, in the other specs' results, of the methods of the spec's run
    that have none in ``own`` (its :func:`cpu_timings`), and {method: the specs they come from}.
    Only the specs whose run has such a method are read; empty when every method has times here."""
    timed = set(own["method"])
    missing = [m for m in spec.plan.methods if m not in timed] if spec.plan else []
    frames, origin = [], {}
    if not missing:
        return own.iloc[:0], origin
    for other in all_specs(registry):
        wanted = [m for m in missing if other.plan and m in other.plan.methods]
        if other.name == spec.name or not wanted:
            continue
        times = cpu_timings(other, read_only=True)
        times = times[times["method"].isin(wanted)]
        for m in times["method"].unique():
            origin.setdefault(m, []).append(other.name)
        frames.append(times)
    return (pd.concat(frames, ignore_index=True) if frames else own.iloc[:0]), origin


def estimate_timings(spec: Spec, own: pd.DataFrame, registry: Registry) -> tuple[pd.DataFrame, str]:
    """``own`` and the :func:`borrowed_timings` of the spec's methods without times, and the note that
    says which (empty when none was borrowed)."""
    borrowed, origin = borrowed_timings(spec, own, registry)
    if borrowed.empty:
        return own, ""
    columns = [c for c in own.columns if c in borrowed.columns]
    by_origin: dict[tuple, list] = {}
    for m, specs in sorted(origin.items()):
        by_origin.setdefault(tuple(specs), []).append(m)
    note = "; ".join(f"{', '.join(ms)}: no finished task here, estimated from {'its' if len(ms) == 1 else 'their'} "
                     f"finished tasks in {', '.join(specs)}" for specs, ms in by_origin.items())
    return pd.concat([own, borrowed[columns]], ignore_index=True), note
