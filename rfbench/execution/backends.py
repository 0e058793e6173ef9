"""The backends of a run, by name: where its work items run. One mapping, :data:`BACKENDS`, is the
authority: the runner opens the run's backend through it, :class:`rfbench.execution.runconfig.RunConfig`
accepts its names and the command line's ``--backend`` offers them.

A backend is a factory: given the run's resolved ``RunConfig``, a context manager (open for all the
run's seeds) that yields an :class:`rfbench.execution.executor.Backend`. The factories import their
module when called, so that this mapping is cheap to import (``rfbench --help`` reads its names).

A new backend is one module (its factory and its executor, run by
:class:`rfbench.execution.executor.Dispatch`) and one entry here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class BackendEntry:
    """``open``: RunConfig → context manager of the run's Backend. ``about``: what it runs on, in a
    few words (the --backend help, the line refusing an unknown name). ``connects``: it reaches
    something that may refuse it in one line (a scheduler), so no progress line comes before it."""
    open: Callable
    about: str
    connects: bool = False


def _local(config):
    from rfbench.execution import pool

    return pool.local_backend(config)


def _dask(config):
    from rfbench.execution import dask_pool

    return dask_pool.dask_backend(config)


def _futures(config):
    from rfbench.execution import futures_pool

    return futures_pool.futures_backend(config)


BACKENDS: dict[str, BackendEntry] = {
    "local": BackendEntry(_local, "this machine"),
    "dask": BackendEntry(_dask, "a dask.distributed cluster", connects=True),
    "futures": BackendEntry(_futures, "this machine, a concurrent.futures process pool"),
}


def open_backend(config):
    """The run's backend (a context manager giving an :class:`rfbench.execution.executor.Backend`)."""
    return BACKENDS[config.backend].open(config)
