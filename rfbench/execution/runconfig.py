"""How a run runs: workers, threads, time limit, seeds, folds, backend, data, device — one frozen,
typed :class:`RunConfig`, validated once when it is built.

``rfbench run``, ``rfbench reproduce``, ``rfbench compare run`` and the library call
(``runner.run(datasets, methods, features, protocol, out, config=RunConfig(...), registry=registry)``) all build one, so
every bound (``--jobs`` ≥ 1, ``--threads`` ≥ 1, ``--timeout`` within 30 days, ``--scheduler`` only with
``--backend dask`` and without ``--threads``, ``--gpu-slots`` ≥ 1, ``--device`` there) is checked in
this one place and said in one line (:class:`rfbench.errors.UsageError`).

Nothing here decides a number of a result: the config says where and how tasks run, the protocol
(rfbench.protocol) what they compute. The device is not part of the protocol key.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rfbench.errors import UsageError
from rfbench.execution.backends import BACKENDS as BACKEND_FACTORIES

if TYPE_CHECKING:       # not imported at run time: `rfbench --help` imports this module
    from rfbench.data.sources import DataSources
    from rfbench.registry import Registry

#: the longest --timeout: the task's alarm (setitimer) of timeout × budgets overflows far beyond it
MAX_TIMEOUT_S = 30 * 86400
#: the largest feature budget (--features, a spec's run.features): a method allocates rows × n
#: features, so more cannot run anyway
MAX_FEATURES = 10**6
#: the backends' names, from the one mapping of them (rfbench.execution.backends: no import beyond it here)
BACKENDS = tuple(BACKEND_FACTORIES)
#: what a run computes on once resolved (``--device auto`` becomes "cpu" or "cuda"); "torch-cpu" (the
#: device code on the CPU, for CI's device regression: ``python -m rfbench.experiments.regress --device torch-cpu``)
#: is a library setting only, not a command-line choice
RUN_DEVICES = ("cpu", "cuda", "torch-cpu")
#: device tasks in flight at once with --device cuda (--gpu-slots)
DEFAULT_GPU_SLOTS = 4
#: the most worker processes (or threads per worker) a run accepts: beyond it a local run fails on open
#: files long before it would gain anything (one worker per core is the useful maximum)
MAX_WORKERS = 1024


def check_timeout(seconds: float | None, shown: str | None = None) -> float | None:
    """``seconds`` if it is a usable per-task limit (None: no limit), else a UsageError; ``shown``:
    the option's text as the user typed it (e.g. '2h')."""
    if seconds is None:
        return None
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds != seconds:
        raise UsageError(f"--timeout {seconds!r} must be a number of seconds")
    if seconds <= 0:
        raise UsageError("--timeout must be positive")
    if seconds > MAX_TIMEOUT_S:
        raise UsageError(f"--timeout '{shown or f'{seconds:g}s'}' is longer than {MAX_TIMEOUT_S // 86400} days "
                         f"({MAX_TIMEOUT_S // 3600}h); give a shorter limit, or leave --timeout out for none")
    return float(seconds)


def resolve_device(requested: str) -> tuple[str, str | None]:
    """(the device a run uses, a note to show once) for ``--device cpu|cuda|auto``, through
    :func:`rfbench.methods.device.resolve`; what it refuses is one UsageError line."""
    from rfbench.methods import device as devices

    try:
        return devices.resolve(requested)
    except (devices.DeviceUnavailable, ValueError) as exc:
        raise UsageError(str(exc)) from None


def default_jobs(method_names, threads: int | None = None, cores: int | None = None,
                 *, registry: Registry) -> int:
    """Worker processes when --jobs is left out: one per core, one thread each (the faster placement
    measured for every built-in method), unless every method of the run is registered with
    ``placement: threads`` (then one worker with every core); with --threads, as many workers as
    cores // threads. The methods are those of ``registry``."""
    cores = cores or os.cpu_count() or 1
    if threads is not None:
        return max(1, cores // threads)
    if method_names and all(registry.method(m).placement == "threads" for m in method_names):
        return 1
    return cores


def _ints(values, option: str) -> tuple[int, ...] | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise UsageError(f"{option} must be integers, got {values!r}")
    return tuple(values)


@dataclass(frozen=True)
class RunConfig:
    """The settings of one run that are not its protocol. The library's defaults: one in-process
    worker, cores // jobs threads, no time limit, the protocol's seed, every fold, the local backend,
    the dataset mirror of the settings, the CPU.

    ``jobs=None``: one worker per core (:func:`default_jobs`, the command line's default; see
    :meth:`resolved`). ``device``: "cpu", "cuda" or "auto" (resolved when the config is built: "auto" becomes
    "cuda" or "cpu", with ``device_note`` saying why; "cuda" without torch or a GPU is refused), or
    "torch-cpu": the device methods run their torch code on the CPU (refused without torch).
    ``gpu_slots``: with the GPU, at most this many device tasks in flight at once (each worker that
    runs one caps its share of GPU memory to 0.9 / gpu_slots); the other workers run CPU tasks.
    ``gpu_beside``: the device tasks run on ``gpu_slots`` workers of their own beside the ``jobs`` CPU
    workers instead of holding one of them (no effect on the CPU)."""

    jobs: int | None = 1
    threads: int | None = None
    timeout_s: float | None = None
    seeds: tuple[int, ...] | None = None
    folds: tuple[int, ...] | None = None
    backend: str = "local"
    scheduler: str | None = None
    data_dir: str | None = None
    strict: bool = False
    device: str = "cpu"
    gpu_slots: int = DEFAULT_GPU_SLOTS
    gpu_beside: bool = False
    device_note: str | None = field(default=None, compare=False)
    #: the mirror directories of ``data_dir`` (else $RFBENCH_DATA_DIR, else the config file), resolved
    #: once when the config is built (None: resolve them now); the workers are given these and read
    #: neither the environment nor the config file
    data_dirs: tuple[str, ...] | None = None
    #: the download cache (None: $RFBENCH_CACHE_DIR, else the config file, else ~/.cache/rfbench),
    #: resolved once like ``data_dirs`` and given to the workers; both as one value: :attr:`sources`
    cache_dir: str | None = None

    def __post_init__(self):
        set_ = object.__setattr__.__get__(self)  # frozen: normalised once, here
        for name in ("jobs", "threads", "gpu_slots"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise UsageError(f"--{name.replace('_', '-')} must be an integer, got {value!r}")
        if self.jobs is not None and self.jobs < 1:
            raise UsageError("--jobs must be at least 1")
        if self.jobs is not None and self.jobs > MAX_WORKERS:
            raise UsageError(f"--jobs {self.jobs} exceeds {MAX_WORKERS} worker processes (each holds open files and "
                             f"memory; this machine has {os.cpu_count() or 1} cores): give at most one per core")
        if self.threads is not None and self.threads < 1:
            raise UsageError(f"--threads {self.threads} must be at least 1 (leave it out for cores // jobs)")
        if self.threads is not None and self.threads > MAX_WORKERS:
            raise UsageError(f"--threads {self.threads} exceeds {MAX_WORKERS}; give at most the cores of the machine")
        if not isinstance(self.gpu_beside, bool):
            raise UsageError(f"--gpu-beside is a flag (True or False), got {self.gpu_beside!r}")
        if self.gpu_slots is None or self.gpu_slots < 1:
            raise UsageError(f"--gpu-slots {self.gpu_slots} must be at least 1 (device tasks in flight at once)")
        set_("timeout_s", check_timeout(self.timeout_s))
        seeds = _ints(self.seeds, "--seeds")
        if seeds is not None:
            seeds = tuple(dict.fromkeys(seeds))
            if not seeds:
                raise UsageError("--seeds names no seed; use e.g. --seeds 0,1,2")
        set_("seeds", seeds)
        set_("folds", _ints(self.folds, "--folds"))
        if self.backend not in BACKENDS:
            raise UsageError(f"--backend {self.backend}: use "
                             + ", ".join(f"{name} ({entry.about})" for name, entry in BACKEND_FACTORIES.items()))
        if self.scheduler is not None and not self.scheduler.strip():
            raise UsageError("--scheduler is empty; give the dask scheduler's address, e.g. tcp://10.0.0.5:8786")
        if self.scheduler is not None and self.backend != "dask":
            raise UsageError("--scheduler names a dask scheduler: add --backend dask")
        if self.scheduler is not None and self.threads is not None:
            raise UsageError("--threads sizes local workers; with --scheduler each dask worker's threads come from "
                             "its own cores (leave --threads out, start the workers with the --nthreads you want)")
        from rfbench.data.loader import cache_dir, data_dirs

        # a named mirror directory (option, environment, config) that is not there: refused now
        set_("data_dirs", tuple(str(p) for p in data_dirs(self.data_dir if self.data_dirs is None
                                                          else tuple(self.data_dirs))))
        if self.cache_dir is not None and not str(self.cache_dir).strip():
            raise UsageError("cache_dir is empty; name the download cache directory, or leave it out")
        # absolute: a worker (a dask worker too) may start in another directory
        set_("cache_dir", str(cache_dir(None if self.cache_dir is None else Path(self.cache_dir).expanduser()).absolute()))
        if self.device not in RUN_DEVICES or self.device == "cuda":
            device, note = resolve_device(self.device)      # "auto", "cuda" (checked), or a bad value
            set_("device", device)
            if self.device_note is None:
                set_("device_note", note)
        elif self.device == "torch-cpu":
            from rfbench.methods import device as devices

            try:
                devices.torch_module()
            except devices.DeviceUnavailable as exc:
                raise UsageError(f"device torch-cpu: {exc}") from None
        if self.device == "cuda" and self.backend == "dask":
            raise UsageError("--device cuda runs device tasks on local workers; the dask backend does not place "
                             "them on GPUs (use --backend local, or --device cpu)")

    @property
    def sources(self) -> DataSources:
        """Where the run's datasets are read from: ``data_dirs`` and ``cache_dir`` as one value, the one
        the run hands to everything that loads data (its workers included)."""
        from rfbench.data.sources import DataSources

        return DataSources(self.data_dirs, self.cache_dir)

    def replace(self, **changes) -> RunConfig:
        """A copy with ``changes``, validated again (its data directories resolved again only when
        ``data_dir`` changes)."""
        if "data_dir" in changes:
            changes.setdefault("data_dirs", None)
        return dataclasses.replace(self, **changes)

    def with_workers(self, jobs: int, threads: int | None) -> RunConfig:
        """This config with its workers given (see :meth:`resolved`): ``jobs`` a number, ``threads``
        one too but on an existing dask cluster (None: each worker's own)."""
        return self.replace(jobs=jobs, threads=threads)

    def resolved(self, method_names, registry: Registry) -> RunConfig:
        """This config with its workers resolved for a run of ``method_names`` (of ``registry``), by the
        command before the runner (which resolves a library caller's again; a resolved one is kept):
        ``jobs`` left out is :func:`default_jobs` of the methods that are installed (a skipped one sizes
        nothing; 1 with an existing dask scheduler, whose workers set it), ``threads`` left out the cores
        shared among the jobs (None with an existing dask scheduler: each worker's own)."""
        jobs = self.jobs
        if jobs is None and self.scheduler is not None:
            jobs = 1
        elif jobs is None:
            installed = [m for m in method_names if not registry.method(m).missing()]
            jobs = default_jobs(installed, self.threads, registry=registry)
        threads = self.threads
        if self.scheduler is None:  # local workers or a LocalCluster: the cores shared among the jobs
            threads = threads or max(1, (os.cpu_count() or 1) // jobs)
        if (jobs, threads) == (self.jobs, self.threads):
            return self
        return self.with_workers(jobs, threads)

    def request(self, protocol):
        """(one protocol per seed, the sorted folds or None) of this config on ``protocol``: the
        folds must be outer folds (splits) of it; every seed's protocol is validated now."""
        seeds = [protocol.seed] if self.seeds is None else list(self.seeds)
        protocols = [dataclasses.replace(protocol, seed=s) for s in seeds]
        folds = self.folds
        if folds is not None:
            bad = sorted(f for f in folds if not 0 <= f < protocol.n_outer)
            if bad or not folds:
                raise UsageError(f"--folds {','.join(map(str, bad)) or '(empty)'}: outer folds are numbered "
                                 f"0..{protocol.n_outer - 1} for this protocol")
            folds = sorted(set(folds))
        return protocols, folds

    @property
    def device_slots(self) -> int | None:
        """Device tasks allowed in flight at once: ``gpu_slots`` on the GPU (and with "torch-cpu"),
        None (no device tasks) on the CPU."""
        return self.gpu_slots if self.device != "cpu" else None
