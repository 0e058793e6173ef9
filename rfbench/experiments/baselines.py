"""Baselines: every spec's committed results directory as one compact columnar file that ships in
the wheel (``rfbench/_data/baselines/<results directory name>.parquet``), so that an installed
rfbench can compare a new method with the published tables' reproductions without the checkout.

A baseline file is one row per task (dataset, method, n_features, fold, seed, protocol: the task
key) with its status, error, chosen hyper-parameters (``params``, the record's JSON text), times,
sizes and message (every field of :data:`rfbench.store.COLUMNS`), and three derived columns:

* ``code``: the git commit (``+dirty`` when the tree had uncommitted changes) of the invocation
  that wrote the record (its ``runs.jsonl`` line; a record older than invocation ids belongs to
  the last invocation started before it finished); null where no invocation recorded one;
* ``device``: what the task ran on: the record's ``device`` field, ``cpu`` where it has none (every
  built-in method runs on CPU);
* ``folds_sha256``: the fingerprint of the outer splits of the task's dataset, seed and protocol:
  under cv :func:`rfbench.protocol.folds_fingerprint` of the stored ``folds/<dataset>.csv``; under
  splits, holdout and fixed, which store no splits, :func:`rfbench.protocol.splits_fingerprint` of the
  splits computed from the data (:func:`rfbench.execution.runner.outer_splits_fingerprint`, the runner's own
  computation), null where the data could not be obtained offline when the file was written.

The schema metadata holds the spec's name and the protocol of each protocol key
(:func:`table_metadata`). Files are written deterministically (rows sorted by the task key, fixed
schema, no pandas metadata, no timestamps): the same results give the same bytes under one
pyarrow version, so a regenerated file shows in ``git status`` only when a record changed.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.data.loader import offline
from rfbench.data.sources import DataSources
from rfbench.errors import DataUnavailable, UsageError
from rfbench.execution import runner
from rfbench.experiments.spec import all_specs, spec_paths
from rfbench.protocol import CV, Protocol, folds_fingerprint
from rfbench.registry import PACKAGE_DIR, Registry, in_checkout, load_yaml
from rfbench.store import COLUMNS, TASK_KEY, RunDir, parse_timestamp, read_results_csv
from rfbench.store import invocations as store_invocations

FORMAT = "rfbench-baseline-1"
METADATA_KEY = b"rfbench.baseline"
SUFFIX = ".parquet"
#: the device of a record that does not name one: every built-in method runs on CPU
DEFAULT_DEVICE = "cpu"
DERIVED = ["code", "device", "folds_sha256"]


def read_folds_file(path: Path) -> np.ndarray:
    """The fold of every row of a ``folds/<dataset>.csv`` (columns row, fold; rows 0..m-1 in order),
    or a UsageError naming the file."""
    try:
        df = pd.read_csv(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise UsageError(f"{path} is not a fold assignment ({type(exc).__name__}); it is written by `rfbench run`, "
                         "run it again into a new --out") from None
    if list(df.columns) != ["row", "fold"] or not np.array_equal(df["row"].to_numpy(), np.arange(len(df))):
        raise UsageError(f"{path} is not a fold assignment (columns row,fold with rows 0..m-1 in order); it is "
                         "written by `rfbench run`, run it again into a new --out")
    return df["fold"].to_numpy(dtype=np.int64)


def run_fingerprints(path: Path) -> dict[tuple[str, int], str]:
    """(dataset, seed) → fingerprint of every fold assignment a results directory holds:
    ``folds/<dataset>.csv`` (seed 0) and ``folds/s<seed>/<dataset>.csv``."""
    out = {}
    folds = Path(path) / "folds"
    for f in sorted(folds.glob("*.csv")):
        out[(f.stem, 0)] = folds_fingerprint(read_folds_file(f))
    for sub in sorted(folds.glob("s*")):
        if sub.is_dir() and re.fullmatch(r"s\d+", sub.name):
            for f in sorted(sub.glob("*.csv")):
                out[(f.stem, int(sub.name[1:]))] = folds_fingerprint(read_folds_file(f))
    return out


def started_invocations(path: Path) -> list[dict]:
    """The invocations of a results directory that say when they started, by start time."""
    lines = [i for i in store_invocations(path) if parse_timestamp(i.get("started_at")) is not None]
    return sorted(lines, key=lambda i: parse_timestamp(i["started_at"]))


def _code_label(info: dict) -> str | None:
    code = info.get("code") or {}
    commit = code.get("commit") if isinstance(code, dict) else None
    if not commit:
        return None
    return commit + ("+dirty" if code.get("dirty") else "")


def _code_of(records: pd.DataFrame, invocations: list[dict]) -> list:
    """The code version of every record: its invocation's, else the last invocation started before
    it finished (as store.run_walltime attributes such records)."""
    by_id = {i["invocation"]: _code_label(i) for i in invocations if i.get("invocation")}
    starts = [parse_timestamp(i["started_at"]) for i in invocations]
    out = []
    for inv, finished in zip(records["invocation"].tolist(), records["finished_at"].tolist(), strict=True):
        if isinstance(inv, str) and inv in by_id:
            out.append(by_id[inv])
            continue
        t = parse_timestamp(finished)
        before = [j for j, s in enumerate(starts) if t is not None and s <= t]
        out.append(_code_label(invocations[before[-1]]) if before else None)
    return out


def _protocols(invocations: list[dict], keys) -> dict[str, dict]:
    """protocol key → the protocol's settings without the seed (from runs.jsonl), for every key the
    records hold; a key no invocation describes is parsed from the key itself."""
    out = {}
    for info in invocations:
        key, settings = info.get("protocol_key"), info.get("protocol")
        if key in keys and isinstance(settings, dict) and key not in out:
            out[key] = {k: v for k, v in settings.items() if k != "seed"}
    for key in keys:
        if key not in out:
            out[key] = Protocol.from_key(key).key_settings()
        settings = out[key]
        if Protocol(**settings).key() != key:       # a runs.jsonl line that does not match its key
            raise UsageError(f"protocol {settings} does not give its key {key}; the results directory's runs.jsonl "
                             "is inconsistent")
    return out


def _schema():
    import pyarrow as pa

    types = {"n_features": pa.int32(), "fold": pa.int32(), "seed": pa.int64(), "n_train": pa.int64(),
             "n_test": pa.int64(), "threads": pa.int32()}
    floats = {"error", "tune_s", "fit_s", "predict_s", "total_s", "cpu_s", "preprocess_s"}
    return pa.schema([pa.field(c, types.get(c, pa.float64() if c in floats else pa.string()))
                      for c in [*COLUMNS, *DERIVED]])


def _text(value):
    """A text column's value as the record has it (a dict or list as its JSON; None for a missing one)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    return str(value)


def _computed_fingerprints(frame: pd.DataFrame, protocols: dict, data_dir: str | None,
                           unavailable: list | None, registry: Registry) -> dict[tuple, str | None]:
    """(protocol key, dataset, seed) → fingerprint of the splits of every non-cv protocol the rows
    hold, computed from the data (:func:`rfbench.execution.runner.outer_splits_fingerprint`); None where the
    data cannot be obtained offline (nothing is downloaded), each such key appended to ``unavailable``."""
    out = {}
    rows = frame[["protocol", "dataset", "seed"]].dropna().drop_duplicates()
    for key, dataset, seed in sorted(rows.itertuples(index=False, name=None)):
        settings = protocols.get(key)
        if settings is None or isinstance(Protocol(**settings), CV):      # cv: its folds/*.csv are stored
            continue
        fingerprint = None
        if dataset in registry.datasets and offline(registry.dataset(dataset), data_dir, registry=registry):
            try:
                fingerprint = runner.outer_splits_fingerprint(dataset, Protocol(**settings, seed=int(seed)),
                                                              DataSources.from_settings(data_dir), registry=registry)
            except DataUnavailable:     # mirror files present but not loadable (e.g. a failed checksum)
                pass
        if fingerprint is None and unavailable is not None:
            unavailable.append((key, dataset, int(seed)))
        out[(key, dataset, int(seed))] = fingerprint
    return out


def code_of(records: pd.DataFrame, path) -> list:
    """The code version of every record of the results directory ``path`` (columns invocation and
    finished_at), from its runs.jsonl: the ``code`` column of a baseline file."""
    return _code_of(records, started_invocations(Path(path)))


def results_table(path, spec: str | None = None, data_dir: str | None = None, unavailable: list | None = None, *,
                  registry: Registry):
    """One results directory (its records, else its results.csv) as a baseline table (pyarrow),
    rows sorted by the task key, with the derived columns and the metadata (see the module notes).
    The non-cv fingerprints load each dataset (of ``registry``) from
    ``data_dir`` (default: $RFBENCH_DATA_DIR); the (protocol key, dataset, seed) whose data is not
    here are appended to ``unavailable``."""
    import pyarrow as pa

    path = Path(path)
    run = RunDir(path)
    frame = pd.DataFrame(run.columns([*COLUMNS, "invocation", "device"]), columns=[*COLUMNS, "invocation", "device"])
    if frame.empty and (path / "results.csv").is_file():
        frame = read_results_csv(path / "results.csv").assign(invocation=None, device=None)
    if frame.empty:
        raise UsageError(f"no results in {path}; run `rfbench run` or `rfbench reproduce` first")
    frame = frame.sort_values(TASK_KEY, kind="stable").reset_index(drop=True)
    invocations = started_invocations(path)
    frame["code"] = _code_of(frame, invocations)
    frame["device"] = [d if isinstance(d, str) and d else DEFAULT_DEVICE for d in frame["device"].tolist()]
    keys = sorted(set(frame["protocol"].dropna().astype(str)))
    protocols = _protocols(invocations, keys)
    stored = run_fingerprints(path)
    computed = _computed_fingerprints(frame, protocols, data_dir, unavailable, registry)

    def fingerprint(key, dataset, seed):
        seed = int(seed) if seed == seed else 0          # a record without a seed ran seed 0
        return computed[(key, dataset, seed)] if (key, dataset, seed) in computed else stored.get((dataset, seed))

    frame["folds_sha256"] = [fingerprint(*task) for task in zip(frame["protocol"].tolist(), frame["dataset"].tolist(),
                                                                 frame["seed"].tolist(), strict=True)]
    schema = _schema()
    columns = {}
    for f in schema:
        values = frame[f.name].tolist()
        if pa.types.is_string(f.type):
            values = [_text(v) for v in values]
        elif pa.types.is_integer(f.type):
            values = [None if v is None or v != v else int(v) for v in values]
        else:
            values = [None if v is None or v != v else float(v) for v in values]
        columns[f.name] = pa.array(values, type=f.type)
    meta = table_metadata(path.name, spec, protocols)
    return pa.table(columns, schema=schema.with_metadata({METADATA_KEY: json.dumps(meta, sort_keys=True)}))


def table_metadata(name: str, spec: str | None, protocols: dict) -> dict:
    """What a baseline file says about itself: its format, name (the results directory's), spec and
    the settings of every protocol key its rows hold."""
    return {"format": FORMAT, "name": name, "spec": spec, "protocols": protocols}


def write_table(table, path: Path) -> bytes:
    """The table as Parquet bytes (zstd, the format measured in docs/baselines.md), written to
    ``path`` atomically unless it holds these bytes already; returns the bytes."""
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd", compression_level=19, use_dictionary=True,
                   write_statistics=False)
    data = buf.getvalue()
    path = Path(path)
    if not (path.is_file() and path.read_bytes() == data):
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(path)
    line = checksum_line(data, path.name)
    check = checksum_path(path)
    if not (check.is_file() and check.read_text() == line):
        tmp = check.with_name(f".{check.name}.tmp")
        tmp.write_text(line)
        tmp.replace(check)
    return data


def checksum_path(path: Path) -> Path:
    """The checksum file beside a baseline file: ``<name>.parquet.sha256``, one ``sha256sum`` line."""
    return Path(path).with_name(Path(path).name + ".sha256")


def checksum_line(data: bytes, name: str) -> str:
    return f"{hashlib.sha256(data).hexdigest()}  {name}\n"


def verify(path: Path, data: bytes, required: bool) -> None:
    """A baseline file's bytes against the checksum stored beside it (``sha256sum -c`` format): a
    UsageError naming both when they differ, or when ``required`` (a shipped file) and it is missing."""
    check = checksum_path(path)
    if not check.is_file():
        if required:
            raise UsageError(f"{path} has no checksum file {check.name} beside it; reinstall rfbench (or, in a "
                             "checkout, run `rfbench baselines --write`)")
        return
    expected = check.read_text().split()[0] if check.read_text().split() else ""
    actual = hashlib.sha256(data).hexdigest()
    if actual != expected:
        raise UsageError(f"{path} has sha256 {actual}, its checksum file says {expected}: the file is damaged or "
                         "was changed; reinstall rfbench (or, in a checkout, run `rfbench baselines --write`)")


# -- what ships ------------------------------------------------------------------------------------

def shipped_dir() -> Path:
    """rfbench/_data/baselines of the package running (the checkout's, or the installed wheel's)."""
    return PACKAGE_DIR / "_data" / "baselines"


def sources(registry: Registry) -> list[tuple[str, Path]]:
    """(spec name, results directory) of every spec whose results directory holds results: what
    ``rfbench baselines --write`` turns into the shipped files (one per directory, the first spec
    naming it)."""
    seen, out = set(), []
    for sp in all_specs(registry):
        if sp.results is None or sp.results in seen:
            continue
        seen.add(sp.results)
        if (sp.results / "records").is_dir() or (sp.results / "results.csv").is_file():
            out.append((sp.name, sp.results))
    return out


def write_all(dest: Path | None = None, unavailable: list | None = None, *,
              registry: Registry) -> list[tuple[Path, bool]]:
    """Regenerate every shipped file from the checkout's results directories; (file, changed) each.
    Files of directories that no spec names any more are removed. The (results directory name,
    protocol key, dataset, seed) whose non-cv fingerprint stays null, the data not being here, are
    appended to ``unavailable``."""
    if dest is None:
        if not in_checkout():
            raise UsageError("rfbench baselines --write regenerates the shipped files from the results/ of a "
                             "development checkout; this rfbench is an installed package")
        dest = shipped_dir()
    dest.mkdir(parents=True, exist_ok=True)
    out, names = [], set()
    for spec, results in sources(registry):
        path = dest / f"{results.name}{SUFFIX}"
        before = path.read_bytes() if path.is_file() else None
        missing: list = []
        write_table(results_table(results, spec, unavailable=missing, registry=registry), path)
        if unavailable is not None:
            unavailable += [(results.name, *task) for task in missing]
        out.append((path, before != path.read_bytes()))
        names.add(path.name)
    for stale in sorted(dest.glob(f"*{SUFFIX}")):
        if stale.name not in names:
            stale.unlink()
            checksum_path(stale).unlink(missing_ok=True)
            out.append((stale, True))
    return out


@dataclass
class Baseline:
    """A baseline read back: its rows as a pandas frame in the shape store.load_results returns
    (COLUMNS), plus the derived columns; its name, spec and protocols; where it came from."""
    name: str
    spec: str | None
    frame: pd.DataFrame
    protocols: dict
    source: Path
    size: int | None = None                     # bytes of the shipped file
    fingerprints: dict = field(default_factory=dict)   # (protocol key, dataset, seed) → splits fingerprint

    @property
    def ref(self) -> str:
        """What loads it again (:func:`load`): its name when it ships, else its path."""
        shipped_file = self.source.parent.resolve() == shipped_dir().resolve() and self.source.suffix == SUFFIX
        return self.name if shipped_file else str(self.source.resolve())

    @property
    def results(self) -> pd.DataFrame:
        """The rows as store.load_results returns them."""
        return self.frame[COLUMNS].reset_index(drop=True)


def _from_table(table, source: Path, size: int | None = None) -> Baseline:
    raw = (table.schema.metadata or {}).get(METADATA_KEY)
    try:
        meta = json.loads(raw)
        if meta.get("format") != FORMAT:
            raise ValueError
    except (TypeError, ValueError, AttributeError):
        raise UsageError(f"{source} is not an rfbench baseline file ({FORMAT}); regenerate it with "
                         "`rfbench baselines --write`") from None
    frame = table.to_pandas()
    missing = [c for c in [*COLUMNS, *DERIVED] if c not in frame]
    if missing:
        raise UsageError(f"{source} lacks the column(s) {', '.join(missing)}; regenerate it with "
                         "`rfbench baselines --write`")
    wrong = [f"{f.name} is {table.schema.field(f.name).type}, not {f.type}" for f in _schema()
             if table.schema.field(f.name).type != f.type]
    if wrong:
        raise UsageError(f"{source}: column {wrong[0]}{f' (and {len(wrong) - 1} more)' if len(wrong) > 1 else ''}; "
                         "not a baseline this rfbench wrote: regenerate it with `rfbench baselines --write`")
    prints = {}
    for key, d, s, fp in frame[["protocol", "dataset", "seed", "folds_sha256"]].drop_duplicates().itertuples(
            index=False):
        if isinstance(fp, str):
            prints[(key, d, int(s))] = fp
    return Baseline(meta["name"], meta.get("spec"), frame, meta.get("protocols") or {}, source, size, prints)


def read_file(path: Path) -> Baseline:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    data = path.read_bytes()
    verify(path, data, required=path.parent.resolve() == shipped_dir().resolve())
    try:
        table = pq.read_table(pa.BufferReader(data))
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} is not a Parquet file ({type(exc).__name__}); regenerate it with "
                         "`rfbench baselines --write`") from None
    return _from_table(table, Path(path), Path(path).stat().st_size)


def shipped() -> list[Path]:
    """The baseline files that ship, by name."""
    return sorted(shipped_dir().glob(f"*{SUFFIX}"))


def _spec_results_name(name: str) -> str | None:
    """The results directory's name of the spec ``name`` (e.g. eerf2018-claim → eerf-claim), or None."""
    for p in spec_paths():
        if p.stem == name:
            results = load_yaml(p).get("results")
            return Path(results).name if results else None
    return None


def load(name_or_dir: str, registry: Registry) -> Baseline:
    """A baseline by its shipped name (``rfbench baselines``), its spec's name, or a results
    directory (a checkout's results/gfc2016-table1, or a run of one's own: its non-cv fingerprints
    computed from the datasets of ``registry``)."""
    text = str(name_or_dir)
    path = Path(text)
    if path.is_dir():
        table = results_table(path, registry=registry)
        return _from_table(table, path)
    if text.endswith(SUFFIX) and path.is_file():
        return read_file(path)
    files = {p.stem: p for p in shipped()}
    name = text if text in files else _spec_results_name(text)
    if name not in files:
        known = ", ".join(files) or "none"
        raise UsageError(f"no baseline named {text!r} (shipped: {known}; or give a results directory); "
                         "see `rfbench baselines`")
    return read_file(files[name])


def listing(baselines: list[Baseline]) -> list[dict]:
    """One row per baseline: name (starred when its spec has another name), protocol, datasets, tasks
    (done/all when some failed), whether `rfbench compare` can verify its splits, size, methods."""
    rows = []
    for b in baselines:
        df = b.frame
        done = int((df["status"] == "done").sum())
        rows.append({"name": b.name if b.spec in (None, b.name) else f"{b.name}*",
                     "protocol": ",".join(sorted(b.protocols)), "sets": df["dataset"].nunique(),
                     "tasks": f"{len(df)}" if done == len(df) else f"{done}/{len(df)}",
                     "compare": "yes" if df["folds_sha256"].notna().all() else "no",
                     "size": _size(b.size), "methods": ", ".join(sorted(df["method"].unique()))})
    return rows


def _size(n: int | None) -> str:
    if n is None:
        return ""
    return f"{n / 1024:.0f} KiB" if n < 1024 ** 2 else f"{n / 1024 ** 2:.2f} MiB"


def stale(unverified: list | None, registry: Registry) -> list[str]:
    """What differs between the shipped files and the checkout's results directories (one line per
    file: missing, extra, or the columns that differ); empty when they agree. A non-cv fingerprint
    whose data is not here (a clone without the mirror) cannot be recomputed: the shipped value is
    accepted, and its (file name, protocol key, dataset, seed) appended to ``unverified``; every
    other value is compared."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = {p.stem: p for p in shipped()}
    out, names = [], set()
    for spec, results in sources(registry):
        names.add(results.name)
        path = files.get(results.name)
        if path is None:
            out.append(f"{results.name}: no shipped file for {results}")
            continue
        missing: list = []
        want, have = results_table(results, spec, unavailable=missing, registry=registry), pq.read_table(path)
        if missing and have.schema == want.schema and have.num_rows == want.num_rows:
            # the rows of the unavailable fingerprints keep the shipped value (the rows of both are in
            # task-key order); every other row's fingerprint is still compared
            skip = set(missing)
            tasks = zip(*(want.column(c).to_pylist() for c in ("protocol", "dataset", "seed")), strict=True)
            kept = [h if t in skip else w for t, w, h in zip(tasks, want.column("folds_sha256").to_pylist(),
                                                              have.column("folds_sha256").to_pylist(), strict=True)]
            column = want.schema.get_field_index("folds_sha256")
            want = want.set_column(column, want.schema.field(column), pa.array(kept, type=pa.string()))
            if unverified is not None:
                unverified += [(path.name, *task) for task in missing]
        if have.schema.metadata != want.schema.metadata:
            out.append(f"{path.name}: its metadata differs from {results}")
        elif have.schema != want.schema or have.num_rows != want.num_rows:
            out.append(f"{path.name}: {have.num_rows} rows, {results} has {want.num_rows}")
        else:
            differ = [c for c in want.column_names if not have.column(c).equals(want.column(c))]
            if differ:
                out.append(f"{path.name}: column(s) {', '.join(differ)} differ from {results}")
    out += [f"{p.name}: no spec's results directory is {p.stem}" for n, p in files.items() if n not in names]
    return out
