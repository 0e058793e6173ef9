"""One work item, executed: an outer fold of a (dataset, method) for one or several n_features
budgets, exactly as the runner runs it (scaled data, inner folds, seeds, thread budget), always
returning one record per budget, whatever happens (done, error or timeout).

The datasets and methods are looked up in the :class:`rfbench.registry.Registry` the caller passes
(a worker process gets it with each work item, as an argument)."""

from __future__ import annotations

import contextlib
import json
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

from rfbench import contract
from rfbench import protocol as proto
from rfbench.data.loader import load_entry
from rfbench.data.sources import DataSources
from rfbench.methods.device import is_out_of_memory
from rfbench.registry import Dataset, Registry
from rfbench.store.record import SIGN_FIT, Record, timestamp


@dataclass(frozen=True)
class WorkItem:
    """``device``: "cpu", or the device its estimator is given ("cuda": a device task, of a run with
    --device cuda whose estimator class takes ``device``; see contract.accepts_device)."""
    dataset: str
    method: str
    fold: int
    budgets: tuple[int, ...]
    device: str = "cpu"

    @property
    def on_device(self) -> bool:
        return self.device != "cpu"


@dataclass(frozen=True)
class WorkerOptions:
    """What a worker needs beside its work item, one value for the whole run (picklable, sent with
    each task): the seed's protocol, where the data is read from (the mirror directories and the
    download cache resolved once by the run's :class:`rfbench.execution.runconfig.RunConfig`, its
    ``sources``: a worker reads neither the environment nor the config file), the BLAS/OpenMP threads
    of a task (None: the dask worker's own share of its host), the per-budget time limit, the part of
    the run's registry its items are looked up in, and the GPU's device slots (a device task caps its
    memory to 0.9 / gpu_slots)."""
    protocol: proto.Protocol
    sources: DataSources
    threads: int | None
    timeout_s: float | None
    registry: Registry
    gpu_slots: int = 1

    def replace(self, **changes) -> WorkerOptions:
        return replace(self, **changes)


class TaskTimeout(Exception):
    pass


@contextlib.contextmanager
def alarm(seconds: float | None):
    """Raise TaskTimeout in this (main) thread after ``seconds`` of wall time. Off the main thread (a
    task in a dask worker's thread) no signal can reach the task: the limit is then the process-level
    one alone (the client kills the worker of a task past its deadline)."""
    if not seconds or seconds <= 0 or threading.current_thread() is not threading.main_thread():
        yield
        return

    def _raise(signum, frame):
        raise TaskTimeout(f"exceeded the timeout of {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@lru_cache(maxsize=1024)
def method_seed(seed: int, fold: int) -> int:
    # the same stream for every method on a fold, so e.g. the three RFF kernels share draws
    return int(np.random.default_rng([seed, fold, 15485863]).integers(2**31 - 1))


@lru_cache(maxsize=4)
def prepared(ds: Dataset, sources: DataSources, max_samples: int | None, seed: int):
    """(ds, X, y, source): the loaded, subsampled, label-encoded data of a dataset (its registry entry;
    kept for the next tasks of the process, keyed by the entry itself, so that another entry of the
    same name is another dataset); ``sources``: where it is read from."""
    loaded = load_entry(ds, sources.data_dirs, cache=sources.cache_dir)
    idx = proto.subsample_index(loaded.X.shape[0], max_samples, seed)
    X, y = loaded.X[idx], loaded.y[idx]
    if ds.task == "classification":
        y, _ = proto.encode_labels(y)
    return ds, X, y, loaded.source


_controller_cache: dict = {}


def thread_limits(threads: int):
    """threadpoolctl's limits as a context manager, through one ``ThreadpoolController`` per process:
    creating one scans every loaded native library (~2 ms, a third of the runner's own time on a
    50 ms task). It is rebuilt whenever modules were imported since, so that a native library loaded
    by a later task (e.g. LightGBM's OpenMP) is limited too."""
    from threadpoolctl import ThreadpoolController

    n_modules = len(sys.modules)
    if _controller_cache.get("n_modules") != n_modules:
        _controller_cache.update(n_modules=n_modules, controller=ThreadpoolController())
    return _controller_cache["controller"].limit(limits=threads)


class Timed:
    """Wall and process-CPU seconds of a ``with`` block (the CPU of every thread of this process)."""

    def __enter__(self):
        self._start = (time.perf_counter(), time.process_time())
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self._start[0]
        self.cpu = time.process_time() - self._start[1]
        return False


#: what a device task's error record says when the GPU ran out of memory
GPU_OOM = "GPU out of memory: {}; lower --gpu-slots or the budget"
_gpu_capped: list = []      # the memory fraction this worker process capped its GPU memory to, once


def cap_gpu_memory(gpu_slots: int) -> float | None:
    """Cap this process's share of GPU memory to 0.9 / ``gpu_slots`` (what --gpu-slots device tasks
    in flight at once may each take), once per process; only in a process that runs a device task
    (whose estimator imports torch anyway) and only when torch sees a GPU. The fraction set, or None."""
    if _gpu_capped:
        return _gpu_capped[0]
    try:
        import torch
    except ImportError:                 # the estimator says what is missing, in its record
        return None
    if not torch.cuda.is_available():
        return None
    fraction = 0.9 / max(1, int(gpu_slots))
    torch.cuda.set_per_process_memory_fraction(fraction)
    _gpu_capped.append(fraction)
    return fraction


def _first_line(exc: BaseException) -> str:
    return str(exc).splitlines()[0] if str(exc) else ""


def execute(item: WorkItem, options: WorkerOptions, data: tuple | None = None) -> list[Record]:
    """Run one work item (in a worker) as ``options`` say; returns one record per budget, whatever
    happens. Its dataset and method are the entries of ``options.registry``.

    ``data``: the dataset's prepared (X, y, source), sent by a client whose workers cannot load it
    themselves (dask); by default the worker loads it from ``options.sources``. A device item
    (``item.device`` not "cpu") first caps this process's GPU memory (:func:`cap_gpu_memory` of
    ``options.gpu_slots``); a GPU out-of-memory error is its error record (:data:`GPU_OOM`), never a crash."""
    protocol, threads, timeout_s, registry = options.protocol, options.threads, options.timeout_s, options.registry
    sources, gpu_slots = options.sources, options.gpu_slots
    records = {n: Record.base(dataset=item.dataset, method=item.method, n_features=n, fold=item.fold,
                              seed=protocol.seed, protocol=protocol.key(), threads=threads).replace(device="cpu")
               for n in item.budgets}
    t_start = time.perf_counter()
    try:
        if item.on_device:
            cap_gpu_memory(gpu_slots)
        with thread_limits(threads):
            _execute(item, registry, protocol, sources, threads, timeout_s, records, data)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - every failure becomes a record, never a crash
        # (a method's SystemExit too: user code must not end the run; KeyboardInterrupt still stops it)
        status = "timeout" if isinstance(exc, TaskTimeout) else "error"
        if is_out_of_memory(exc):       # torch's line is long: cut it, so that the advice stays in the record
            message = GPU_OOM.format((_first_line(exc) or type(exc).__name__)[:300])
            _free_gpu_cache()
        else:
            message = f"{type(exc).__name__}: {_first_line(exc)}"
        for n, rec in records.items():
            if rec.status != "done":
                records[n] = rec.failing(status, message, traceback.format_exc(),
                                         total_s=time.perf_counter() - t_start)
    now = timestamp()
    return [rec.replace(finished_at=now) for rec in records.values()]


def _free_gpu_cache() -> None:
    """After a GPU out-of-memory error: give the cached blocks back for the next task (torch only
    when the task imported it)."""
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            torch.cuda.empty_cache()


@dataclass
class FoldTask:
    """One outer fold of one (dataset, method), ready to fit: the fold's scaled data and the
    estimator class with every constructor argument but ``n_features``."""
    ds: object
    source: str
    X_tr: np.ndarray
    X_te: np.ndarray
    y_tr: np.ndarray
    y_te: np.ndarray
    cls: type
    common: dict
    as_sign: bool
    # the target's unit: what takes a standardised error back to the target as stored (the training
    # std under the published protocol's "stored" scaling; 1 where the error is on scaled outputs)
    y_unit: float = 1.0


def fold_task(dataset: str, method_name: str, fold: int, protocol: proto.Protocol,
              sources: DataSources | None, threads: int = 1, data: tuple | None = None, device: str = "cpu", *,
              registry: Registry) -> FoldTask:
    """The data and estimator arguments of one outer fold exactly as the runner fits it (also for
    diagnosis scripts that refit one task), the dataset and method being those of ``registry``;
    ``sources``: where the data is read from (None: :meth:`DataSources.from_settings`, for such a
    script); ``data``: see :func:`execute`. ``device`` other than "cpu" is passed to an estimator class
    that takes one (contract.accepts_device), never to another."""
    sources = DataSources.given_or_settings(sources)
    if data is None:
        ds, source, X_tr, X_te, y_tr, y_te, cv, y_unit = _fold_data(registry.dataset(dataset), fold, protocol, sources)
    else:
        ds, source, X_tr, X_te, y_tr, y_te, cv, y_unit = _split_and_scale(registry.dataset(dataset), *data, fold,
                                                                          protocol, sources)
    method = registry.method(method_name)
    common = {"cv": cv, "random_state": method_seed(protocol.seed, fold), "n_jobs": threads, **method.params_for(dataset)}
    cls = method.estimator_class(ds.task)
    if device != "cpu" and contract.accepts_device(cls):
        common["device"] = device
    return FoldTask(ds, source, X_tr, X_te, y_tr, y_te, cls,
                    common, ds.task == "classification" and not method.is_native(ds.task), y_unit)


@lru_cache(maxsize=1)
def _fold_data(ds: Dataset, fold: int, protocol: proto.Protocol, sources: DataSources):
    """:func:`_split_and_scale` of the loaded data, kept for the next task: the runner plans the
    budgets of a fold (and often its methods) one after the other. Read-only arrays, so that an
    estimator writing into its input fails loudly instead of changing the next task's data."""
    ds, X, y, source = prepared(ds, sources, protocol.max_samples, protocol.seed)
    out = _split_and_scale(ds, X, y, source, fold, protocol, sources)
    for part in (*out[2:6], *(ix for pair in out[6] for ix in pair)):
        part.flags.writeable = False
    return out


def own_splits(ds: Dataset, protocol: proto.Protocol, sources: DataSources) -> proto.OwnSplits:
    """What a protocol's outer splits read of the dataset itself: its published split masks (the
    published protocol; :func:`rfbench.data.loader.load_split_masks`, from the mirror directories of
    ``sources``), else its registry ``holdout``."""
    if isinstance(protocol, proto.Published):
        from rfbench.data.loader import load_split_masks

        return load_split_masks(ds, sources.data_dirs)
    return ds.holdout


def _split_and_scale(ds, X, y, source, fold: int, protocol: proto.Protocol, sources: DataSources):
    """(ds, source, X_tr, X_te, y_tr, y_te, inner splits, y_unit) of one outer fold: the protocol's
    outer split, training-part statistics for the scaling, the inner folds, and the target's unit
    (see :class:`FoldTask`)."""
    tr, te = proto.outer_splits(protocol, y, ds.task, own_splits(ds, protocol, sources))[fold]
    scaler = proto.Scaler.fit(X[tr], y[tr], ds.task, protocol.target_scaling, ds.scale_inputs)
    y_tr, y_te = (scaler.y(y[tr]), scaler.y(y[te])) if ds.task == "regression" else (y[tr], y[te])
    cv = proto.inner_splits(protocol, y_tr, ds.task, fold)
    y_unit = scaler.y_range if protocol.target_scaling == "stored" and ds.task == "regression" else 1.0
    return ds, source, scaler.x(X[tr]), scaler.x(X[te]), y_tr, y_te, cv, y_unit


def _execute(item, registry, protocol, sources, threads, timeout_s, records, data=None):
    task = fold_task(item.dataset, item.method, item.fold, protocol, sources, threads, data, item.device,
                     registry=registry)
    ds, cls, common, as_sign = task.ds, task.cls, task.common, task.as_sign
    X_tr, X_te, y_tr, y_te = task.X_tr, task.X_te, task.y_tr, task.y_te
    for n, rec in records.items():
        records[n] = rec.replace(source=task.source, task=ds.task + (SIGN_FIT if as_sign else ""),
                                 n_train=len(y_tr), n_test=len(y_te), device=common.get("device", "cpu"))

    def finish(n, est, predict, fit: Timed, share=1.0):
        """``share``: this budget's part of a fit that served several budgets (its tuning and
        fitting time are attributed in proportion to n, so that the budgets' times add up to the
        item's instead of repeating it; the whole is kept in ``shared_fit_s``). ``cpu_s``: the
        worker process's CPU seconds over fit + predict (every thread of it), which a busy machine
        moves far less than the wall time."""
        with Timed() as pred_t:
            pred = predict()
            if as_sign:
                pred = np.where(pred >= 0, 1.0, -1.0)
        # a non-finite prediction is the method's failure, never a result: an error record, which a
        # rerun retries (a done record must hold a finite error)
        values = np.asarray(pred)
        bad = (int(values.size - np.count_nonzero(np.isfinite(values)))
               if np.issubdtype(values.dtype, np.number) else 0)
        if bad:
            raise ValueError(f"the method predicted {bad} non-finite value{'s' * (bad != 1)} (NaN or inf) of "
                             f"{values.size}; no error can be computed")
        tune = contract.tuning_seconds(est)
        params = contract.chosen_params(est, n)
        records[n] = records[n].replace(
            status="done", metric=proto.metric_name(ds.task, protocol.target_scaling),
            error=proto.score(ds.task, y_te, pred, protocol.target_scaling, task.y_unit), tune_s=tune * share,
            fit_s=max(fit.wall - tune, 0.0) * share, predict_s=pred_t.wall,
            total_s=fit.wall * share + pred_t.wall, cpu_s=fit.cpu * share + pred_t.cpu,
            params=json.dumps(params, default=float),
            # data-dependent feature methods (EERF, LKRF): the feature selection part of fit
            preprocess_s=contract.preprocess_seconds(est),
            shared_fit_s=fit.wall if share != 1.0 else None, message="")

    if contract.shares_budgets(cls):
        est = cls(n_features=max(item.budgets), budgets=list(item.budgets), **common)
        if contract.fit_is_shared(est, len(y_tr)):
            with alarm(timeout_s * len(item.budgets) if timeout_s else None):
                with Timed() as fit:
                    est.fit(X_tr, y_tr)
                for n in item.budgets:
                    finish(n, est, lambda n=n: est.predict(X_te, budget=n), fit, share=n / sum(item.budgets))
            return
    # one fit per budget: a method that does not share, or one whose budget applies at this size
    for n in item.budgets:
        try:
            with alarm(timeout_s):
                est = cls(n_features=n, **common)
                with Timed() as fit:
                    est.fit(X_tr, y_tr)
                finish(n, est, lambda est=est: est.predict(X_te), fit)
        except TaskTimeout as exc:
            records[n] = records[n].failing("timeout", str(exc))

