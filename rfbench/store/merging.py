"""Pooling results: :func:`load_results` reads one or more results directories as one table under
the rules every command that reads results shares (one record per task, finished copies that
disagree refused, other outer folds refused, one protocol per cell), and :func:`pool_frames` pools
tables of other sources (a shipped baseline) under the same rules."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rfbench.errors import UsageError
from rfbench.store.record import TASK_KEY, on_device, record_key
from rfbench.store.rundir import RunDir, open_run
from rfbench.store.table import read_results_csv, records_frame

#: a cell of the tables: what one protocol must cover
CELL = ["dataset", "method", "n_features"]


class CombineError(UsageError):
    """Results that cannot be pooled: one task with different errors, or one cell under two protocols."""


def load_results(dirs, protocol: str | None = None, *, mixed_protocols: bool = False,
                 missing_ok: bool = False) -> pd.DataFrame:
    """All records of one or more run directories (the records are the source of truth), pooled
    by the rules every command that reads results shares (report, check, plot, reproduce, the
    table at the end of run). Records that cannot be counted (a missing or non-numeric field, an
    unknown status) are skipped with one warning line each naming the file and the field. An entry
    of ``dirs`` with a ``frame()`` method (a shipped baseline standing in for a results directory
    that is not here: rfbench.experiments.sources) is read through it, its rows pooled as records.

    Pooling, by task key (dataset, method, n_features, fold, seed, protocol; :func:`record_key`):

    * a task found in several directories (the same directory given twice, a copy, a run resumed
      elsewhere) counts once: a finished record wins over an error/timeout one, then the newest;
      finished copies must agree on the error (to 1e-9 relative: the same code on other thread
      counts differs in the last bits);
    * finished copies whose errors differ (two code versions) are refused with one line naming the
      task and both directories (CombineError, exit 2): keeping either silently would hide the
      change; report the directories separately, or delete the stale record;
    * directories whose finished records of one (dataset, seed, protocol) were computed on other
      outer folds (their ``folds/<dataset>.csv`` differ) are refused with one line (CombineError):
      their fold k is another test set, so neither pooling nor pairing folds would be sound;
    * ``protocol``: only the records of that protocol key count (a directory holding several);
      none is an error naming the keys the directories hold, unless ``missing_ok`` (the check's
      default, the spec's protocol: then every published cell is missing);
    * one (dataset, method, n) finished under two protocols (other fold counts, --max-samples) is
      refused with one line naming them, unless ``mixed_protocols`` (status counts tasks, it pools
      nothing): select one with ``--protocol KEY``.

    Records of different seeds are distinct tasks and all count: a cell's statistics are pooled
    over seeds by the report (rfbench.reporting.report.summarise) and the check."""
    frames = []
    for d in dirs:
        if hasattr(d, "frame"):         # a source read in a directory's place (a shipped baseline)
            frames.append(d.frame().assign(_dir=str(d)))
            continue
        run = open_run(d)
        if not run.path.is_dir():
            raise UsageError(f"results directory not found: {d}")
        frame = run.frame()
        if frame.empty and (run.path / "results.csv").is_file():
            frame = read_results_csv(run.path / "results.csv")
        frames.append(frame.assign(_dir=str(d)))
    df = pd.concat(frames, ignore_index=True) if frames else records_frame([]).assign(_dir=None)
    if df.empty:
        raise UsageError(f"no results in {', '.join(map(str, dirs))}; run `rfbench run` first")
    if len(dirs) > 1:
        # a shipped baseline stores no folds/*.csv (its rows carry their splits' fingerprint): the
        # directories among the sources are compared
        folds = {str(d): open_run(d) for d in dirs if not hasattr(d, "frame")}
        _refuse_other_outer_folds(df if protocol is None else df[df["protocol"].astype(str) == protocol], folds)
    df = _one_record_per_task(df)
    if protocol is not None:
        held = sorted(set(df["protocol"].dropna().astype(str)))
        df = df[df["protocol"].astype(str) == protocol]
        if df.empty and not missing_ok:
            raise UsageError(f"no records of protocol {protocol} in {', '.join(map(str, dirs))} (they hold "
                             f"{', '.join(held) or 'no protocol key'}); name one of those with --protocol")
    if not mixed_protocols:
        _refuse_mixed_protocols(df)
    return df.drop(columns="_dir").reset_index(drop=True)


def device_tasks(srcs) -> set[tuple]:
    """(dataset, method, n_features, fold, protocol) of the records in ``srcs`` (run directories as
    paths or RunDir, or shipped baselines in their place) that a torch device computed
    (:func:`rfbench.store.record.on_device`): every estimator of the NumPy path's time (the runner's
    order and dry run, status, reproduce) leaves these out through
    :func:`rfbench.execution.estimate.cpu_path_only`."""
    keys: set[tuple] = set()
    fields = ["dataset", "method", "n_features", "fold", "protocol", "device"]
    for d in srcs:
        if isinstance(d, RunDir):
            rows = d.columns(fields) if d.path.is_dir() else []
        elif hasattr(d, "baseline"):            # a shipped baseline: its frame names each task's device
            rows = d.baseline().frame[fields].itertuples(index=False, name=None)
        elif hasattr(d, "frame"):               # another stand-in: no device to read
            continue
        else:
            run = open_run(d)
            rows = run.columns(fields) if run.path.is_dir() else []
        keys.update((str(ds), str(m), int(n), int(f), str(p)) for ds, m, n, f, p, dev in rows if on_device(dev))
    return keys


def _refuse_other_outer_folds(df: pd.DataFrame, runs: dict) -> None:
    """CombineError when two directories hold finished records of one (dataset, seed, protocol) but
    different outer folds (their folds/<dataset>.csv differ): fold k of one is not fold k of the
    other, so pooling them, or pairing their folds in a paired test, would compare other test sets."""
    done = df[(df["status"] == "done") & df["seed"].notna()]
    for (dataset, seed, protocol), group in done.groupby(["dataset", "seed", "protocol"], sort=True):
        held = sorted(set(group["_dir"]) & set(runs))
        if len(held) < 2:
            continue
        texts = {}
        for d in held:
            path = runs[d].folds_path(dataset, int(seed))
            texts[d] = path.read_bytes() if path.is_file() else None
        known = {d: t for d, t in texts.items() if t is not None}
        if len(set(known.values())) > 1:
            a, b = list(known)[:2]
            raise CombineError(
                f"{dataset} (seed {int(seed)}, protocol {protocol}) has other outer folds in {a} than in {b} "
                f"(their folds/{dataset}.csv differ): their fold k is not the same test set, so they are not "
                "pooled or paired; report the directories separately, or rerun one into a new --out")


def pool_frames(frames) -> pd.DataFrame:
    """Results of several sources, ``[(label, frame in COLUMNS), ...]`` (e.g. a run directory and a
    shipped baseline), pooled by the rules of :func:`load_results`: one record per task, finished
    copies that disagree refused (naming the labels), one cell under two protocols refused."""
    df = pd.concat([f.assign(_dir=str(label)) for label, f in frames], ignore_index=True)
    df = _one_record_per_task(df)
    _refuse_mixed_protocols(df)
    return df.drop(columns="_dir").reset_index(drop=True)


def _task_label(row) -> str:
    seed = "?" if pd.isna(row["seed"]) else f"{int(row['seed'])}"
    return (f"{row['dataset']} {row['method']} n={int(row['n_features'])} fold {int(row['fold'])} seed {seed} "
            f"protocol {row['protocol']}")


def _record_file(row) -> str:
    if pd.isna(row["seed"]) or pd.isna(row["protocol"]):
        return "its records/*.json file"
    key = record_key(row["dataset"], row["method"], int(row["n_features"]), int(row["fold"]), int(row["seed"]),
                     row["protocol"])
    return f"records/{key}.json of one directory"


def _one_record_per_task(df: pd.DataFrame) -> pd.DataFrame:
    """One row per task key (see load_results); CombineError when finished copies disagree."""
    if not df.duplicated(TASK_KEY).any():
        return df
    done = df["status"] == "done"
    error = pd.to_numeric(df["error"], errors="coerce").where(done)
    by_task = error.groupby([df[k] for k in TASK_KEY], dropna=False, sort=False)
    lo, hi = by_task.transform("min"), by_task.transform("max")
    differ = done & ~np.isclose(lo, hi, rtol=1e-9, atol=1e-12, equal_nan=True)
    if differ.any():
        n_tasks = len(df[differ].drop_duplicates(TASK_KEY))
        first = df[differ].iloc[0]
        same = np.logical_and.reduce([(df[k] == first[k]) | (df[k].isna() & pd.isna(first[k])) for k in TASK_KEY])
        copies = df[same & done]
        a, b = copies.loc[error[same & done].idxmin()], copies.loc[error[same & done].idxmax()]
        more = f" ({n_tasks - 1} more task(s) differ)" if n_tasks > 1 else ""
        raise CombineError(
            f"task {_task_label(first)} has different results: error {a['error']:.10g} in {a['_dir']}, "
            f"{b['error']:.10g} in {b['_dir']}{more} (two code versions?); report the directories separately, "
            f"or delete the stale record ({_record_file(first)})")
    order = df.assign(_done=done, _at=df["finished_at"].astype(str).where(df["finished_at"].notna(), ""))
    order = order.sort_values(["_done", "_at"], ascending=False, kind="stable")
    return df.loc[sorted(order.drop_duplicates(TASK_KEY, keep="first").index)]


def _refuse_mixed_protocols(df: pd.DataFrame) -> None:
    """CombineError when a (dataset, method, n) has finished records under more than one protocol."""
    done = df[df["status"] == "done"]
    if done.empty:
        return
    protocols = done["protocol"].astype(str).where(done["protocol"].notna(), "(none)")
    counts = protocols.groupby([done[k] for k in CELL]).nunique()
    mixed = counts[counts > 1]
    if mixed.empty:
        return
    ds, meth, n = mixed.index[0]
    cell = (done["dataset"] == ds) & (done["method"] == meth) & (done["n_features"] == n)
    held = {p: sorted(set(done.loc[cell & (protocols == p), "_dir"])) for p in sorted(set(protocols[cell]))}
    more = f" ({len(mixed) - 1} more cell(s) too)" if len(mixed) > 1 else ""
    raise CombineError(
        f"{ds} {meth} n={n} has results under {len(held)} protocols, which are not pooled: "
        + ", ".join(f"{p} (in {', '.join(d)})" for p, d in held.items())
        + f"{more}; select one with --protocol KEY, e.g. --protocol {next(iter(held))}")
