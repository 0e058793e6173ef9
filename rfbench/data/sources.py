"""Where a run's datasets are read from: its mirror directories and its download cache, as one value.

A run resolves both once, in its :class:`rfbench.execution.runconfig.RunConfig` (``config.sources``),
and hands that one value to everything that loads data for it, its workers included, instead of two
loose parameters carried side by side. The data loader itself (:func:`rfbench.data.loader.load`) keeps
its two plain arguments, ``data_dir_override`` and ``cache``, for a library caller."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DataSources:
    """Where a run's datasets are read from, resolved once (by the run's ``RunConfig``, or by
    :meth:`from_settings`), so that a worker reads neither the environment nor the config file:
    ``data_dirs`` the mirror directories, searched in order (() for none), ``cache_dir`` the download
    cache, absolute (None: the setting, for a library caller). Frozen, hashable and picklable: a key
    of the tasks' data cache (rfbench.execution.tasks.prepared) and part of each task's options."""
    data_dirs: tuple[str, ...]
    cache_dir: str | None

    @classmethod
    def from_settings(cls, data_dir: str | None = None) -> DataSources:
        """The sources of a library call, resolved now: the mirror directories of ``data_dir`` (a
        --data-dir value, several separated by os.pathsep; None: $RFBENCH_DATA_DIR, else the config
        file; a named directory that is not there is refused), the download cache left to the setting."""
        from rfbench.data.loader import data_dirs

        return cls(tuple(str(p) for p in data_dirs(data_dir)), None)

    @classmethod
    def given_or_settings(cls, sources: DataSources | None) -> DataSources:
        """``sources`` as given, or :meth:`from_settings` when None: the default of every library
        function that takes ``sources`` (a script that refits one task passes None)."""
        return sources if sources is not None else cls.from_settings()
