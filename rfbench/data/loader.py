"""One function that returns (X, y, meta) for a dataset name, whatever the source.

Order: local cache (of earlier downloads) → a user dataset's own file → mirror directories
(--data-dir, else RFBENCH_DATA_DIR, else the config's data_dirs; several, os.pathsep-separated,
searched in order) → built-in generator → download (OpenML client, URL) → DataUnavailable with a
one-line hint on how to supply the data offline. Mirror files are checked against the registry's
sha256; a mismatch is refused (user entries may leave the checksum out).

Datasets named on the command line (``--datasets file.csv --target y``, ``openml:ID``) are turned
into registry entries by :func:`resolve_dataset_names`, which returns the registry with them.

The functions take the registry's entry of a dataset (a :class:`rfbench.registry.Dataset`); ``load``
and ``offline`` also take a name, looked up in the registry they are given (by default the one
:func:`rfbench.registry.load` builds then).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
import zlib
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench import config
from rfbench.data.arff import read_arff
from rfbench.data.generators import GENERATORS
from rfbench.errors import DataUnavailable, UsageError
from rfbench.protocol import SplitAssignment
from rfbench.registry import (
    COMMAND_LINE,
    FILE_FORMATS,
    Dataset,
    Registry,
    check_name,
    command_line_dataset,
)

CACHE_VERSION = 1


@dataclass
class Loaded:
    X: np.ndarray
    y: np.ndarray
    source: str       # cache | file | mirror | generator | openml | url
    detail: str       # file path, generator seed, OpenML id


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    """The download cache: ``override`` (a run's ``RunConfig.cache_dir``, resolved once, so that a
    worker reads neither the environment nor the config file), else $RFBENCH_CACHE_DIR, else the
    config's cache_dir, else ~/.cache/rfbench."""
    return Path(override) if override is not None else config.cache_dir()


def data_dirs(override: str | os.PathLike | tuple[str, ...] | None = None) -> list[Path]:
    """The mirror directories, searched in order: --data-dir, else $RFBENCH_DATA_DIR, else the config's
    data_dirs (each may hold several directories separated by os.pathsep); [] when none is set.
    ``override`` a tuple: directories resolved once already (a run's ``RunConfig.data_dirs``, () for
    none), taken as they are, so that a worker reads neither the environment nor the config file.

    A directory that is named but does not exist is refused rather than silently ignored (the run
    would otherwise fall back to generators and downloads and compute something else)."""
    if isinstance(override, tuple):
        return [Path(p) for p in override]
    if override is not None and str(override).strip() == "":
        raise UsageError("--data-dir is empty; name the dataset mirror directory, or leave the option out "
                         "to use $RFBENCH_DATA_DIR")
    if override is not None:
        values, origin = [v for v in str(override).split(os.pathsep) if v.strip()], "--data-dir"
    elif os.environ.get("RFBENCH_DATA_DIR", "").strip():
        values = [v.strip() for v in os.environ["RFBENCH_DATA_DIR"].split(os.pathsep) if v.strip()]
        origin = "RFBENCH_DATA_DIR"
    else:
        cfg = config.load()
        values, origin = [str(p) for p in cfg.data_dirs], f"data_dirs in {cfg.origin.get('data_dirs')}"
    paths = []
    for value in values:
        path = Path(value).expanduser()
        if not path.is_dir():
            fix = ("give the dataset mirror directory" if origin == "--data-dir" else
                   "point it at the dataset mirror directory, or unset it to use only generated and downloaded "
                   "datasets")
            shown = {"--data-dir": f"--data-dir {value}", "RFBENCH_DATA_DIR": f"RFBENCH_DATA_DIR={value}"}.get(
                origin, f"{value} ({origin})")
            raise UsageError(f"{shown} is not a directory ({'missing' if not path.exists() else 'a file'}); {fix}")
        paths.append(path)
    return paths


def data_dir(override: str | os.PathLike | None = None) -> Path | None:
    """The first mirror directory (None when none is set); see :func:`data_dirs`."""
    dirs = data_dirs(override)
    return dirs[0] if dirs else None


def mirror_root(ds: Dataset, override=None) -> Path | None:
    """The first mirror directory that holds every mirror file of the dataset (not hashed here)."""
    if ds.mirror is None:
        return None
    for root in data_dirs(override):
        if all((root / f).is_file() for f, _ in ds.mirror.files):
            return root
    return None


def where_found(ds: Dataset, override=None, cache=None) -> str:
    """Where ``load`` would take the dataset from here, from what is actually present (files are
    not hashed): ``file``, ``mirror``, ``cache``, ``generator``, ``openml (needs network)`` or
    ``url (needs network)``, else ``absent (...)`` naming the file that was looked for."""
    if ds.unavailable:
        return "absent (could not be obtained when it was named)"
    if ds.file:
        return "file" if Path(ds.file).is_file() else f"absent (file {ds.file} not found)"
    if mirror_root(ds, override) is not None:
        return "mirror"
    if (cache_dir(cache) / f"{ds.name}.json").is_file():
        return "cache (an earlier download)"
    if ds.generator:
        return "generator"
    if ds.openml_id:
        return "openml (needs network)"
    if ds.url and ds.download_format:
        return "url (needs network)"
    if ds.mirror:
        dirs = data_dirs(override)
        missing = next((f for f, _ in ds.mirror.files if not dirs or not (dirs[0] / f).is_file()), ds.mirror.file)
        return (f"absent (mirror file {missing} not found in {os.pathsep.join(map(str, dirs))})" if dirs
                else f"absent (mirror file {missing}: no mirror set, RFBENCH_DATA_DIR or --data-dir)")
    if ds.url:
        return f"absent (not in the mirror; by hand from {ds.url})"
    return "absent (no source registered)"


def entry(dataset: Dataset | str, registry: Registry) -> Dataset:
    """The registry entry of a dataset given by its entry or its name (looked up in ``registry``:
    :func:`rfbench.registry.load` builds it, the command line passes its own)."""
    return dataset if isinstance(dataset, Dataset) else registry.dataset(dataset)


def offline(dataset: Dataset | str, data_dir=None, *, registry: Registry) -> bool:
    """Whether a dataset can be obtained here without the network: its own file (user data) or its
    mirror files are present with the sha256 the registry gives them (a file that would be refused
    when read is not counted: :func:`has_checksum`), a generator makes it, or an earlier download is
    cached."""
    return data_state(dataset, data_dir, registry=registry) == "offline"


def data_state(dataset: Dataset | str, data_dir=None, *, registry: Registry, cache=None) -> str:
    """"offline" (see :func:`offline`), "sha256 differs" (its file or mirror files are here, but not
    the ones the registry names: reading them would be refused) or "needs network"; ``cache``: see
    :func:`cache_dir`."""
    ds = entry(dataset, registry)
    if ds.file and Path(ds.file).is_file():     # a user dataset's own file
        return "offline" if has_checksum(Path(ds.file), ds.sha256) else "sha256 differs"
    root = mirror_root(ds, data_dir)
    changed = root is not None and not all(has_checksum(root / f, sha) for f, sha in ds.mirror.files)
    if root is not None and not changed:
        return "offline"
    if ds.generator or (cache_dir(cache) / f"{ds.name}.json").is_file():
        return "offline"
    return "sha256 differs" if changed else "needs network"


def has_checksum(path: Path, expected: str | None) -> bool:
    """Whether the file has the sha256 ``expected`` (True when none is registered), hashed once per
    version of the file (its size and modification time) in this process."""
    if not expected:
        return True
    stat = path.stat()
    return _digest(str(path), stat.st_size, stat.st_mtime_ns) == expected


@lru_cache(maxsize=512)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    return sha256_of(Path(path))


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write_npz(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.fchmod(fd, config.new_file_mode())
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, **arrays)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _cache_key(ds: Dataset, source: str, detail: str) -> str:
    # the key changes whenever the registry entry or the source changes, so a stale cache is ignored
    fields = [CACHE_VERSION, ds.name, ds.shape, ds.target, ds.drop, ds.drop_constant, source, detail,
              ds.mirror.sha256 if ds.mirror else None]
    return hashlib.sha256(json.dumps(fields, default=str).encode()).hexdigest()[:16]


def _is_number(value) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def _binarise(ds: Dataset, labels: pd.Series, origin: str) -> np.ndarray:
    """Source class labels → ±1 by the registry's (GBRFF Table 1) binarisation."""
    text = labels.astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    if numeric.notna().all():  # "+1" and "1", "2.0" and "2" name the same class
        text = numeric.map(lambda v: f"{v:g}")
        # registry names that are not numbers ("no" beside "1") cannot match numeric labels
        norm = lambda vals: {f"{float(v):g}" for v in vals if _is_number(v)}  # noqa: E731
    else:
        norm = set
    neg, pos = norm(ds.negative), norm(ds.positive)
    unknown = sorted(set(text) - neg - pos)
    if unknown:
        raise UsageError(f"dataset '{ds.name}' from {origin} has labels {unknown[:5]} that the registry "
                         "maps to neither class; fix its 'labels' field")
    return np.where(text.isin(pos), 1.0, -1.0)


def _two_classes(ds: Dataset, labels: pd.Series, origin: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """User data without a 'labels' field: its two classes, the smaller (numerically, else
    alphabetically) → −1."""
    values = class_values(labels)
    if len(values) != 2:
        raise UsageError(f"dataset '{ds.name}' from {origin}: classification needs a target with exactly two "
                         f"classes, found {len(values)} ({', '.join(values[:5])}{', ...' if len(values) > 5 else ''}); "
                         "map them to two with 'labels: {negative: [...], positive: [...]}' in a --registry entry, "
                         "or use --task regression")
    return (values[0],), (values[1],)


def class_codes(labels: pd.Series) -> np.ndarray:
    """Several classes → codes 0, 1, …, C − 1 in the order of :func:`class_values` (floats, as every
    target here); a missing label becomes NaN (refused by validate_arrays)."""
    text = labels.astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    if numeric.notna().all():
        text = numeric.map(lambda v: f"{v:g}")
    codes = {v: i for i, v in enumerate(class_values(labels))}
    return text.map(codes).where(labels.notna()).to_numpy(dtype=float)


def class_values(labels: pd.Series) -> list[str]:
    """The distinct labels of a target column, sorted numerically when they are numbers."""
    text = labels.dropna().astype(str).str.strip()
    numeric = pd.to_numeric(text, errors="coerce")
    if numeric.notna().all():
        return [f"{v:g}" for v in sorted(set(numeric))]
    return sorted(set(text))


def default_target(ds: Dataset, df: pd.DataFrame) -> str:
    """A user entry without a target: OpenML's default target attribute, or an ARFF file's last attribute."""
    target = ds.target or (df.attrs.get("openml_default_target") or "")
    if not target and ds.file_format == "arff":
        target = str(df.columns[-1])
    return target


def _frame_to_arrays(ds: Dataset, df: pd.DataFrame, target: str, origin: str) -> tuple[np.ndarray, np.ndarray]:
    if ds.user and not target:
        target = default_target(ds, df)
    if target not in df.columns:
        raise UsageError(f"dataset '{ds.name}': target column '{target}' not found in {origin}"
                         + (f" (columns: {', '.join(map(str, df.columns[:8]))}{', ...' if df.shape[1] > 8 else ''})"
                            if ds.user else ""))
    if ds.task == "classification" and ds.user and not (ds.negative or ds.positive):
        neg, pos = _two_classes(ds, df[target], origin)
        y = _binarise(replace(ds, negative=neg, positive=pos), df[target], origin)
    elif ds.task == "classification":
        y = _binarise(ds, df[target], origin)
    elif ds.task == "multiclass":
        y = class_codes(df[target])
    else:
        y = pd.to_numeric(df[target], errors="coerce").to_numpy(dtype=float)
    Xdf = df.drop(columns=[target, *[c for c in ds.drop if c in df.columns]])
    if ds.one_hot:
        Xdf = pd.get_dummies(Xdf, dtype=float)
    bad = [c for c in Xdf.columns if not pd.api.types.is_numeric_dtype(Xdf[c])]
    if bad:
        raise UsageError(f"dataset '{ds.name}': non-numeric input columns {bad[:3]} in {origin}")
    X = Xdf.to_numpy(dtype=float)
    if ds.drop_constant:
        X = X[:, np.nanstd(X, axis=0) > 0]
    return X, y


def validate_arrays(ds: Dataset, X: np.ndarray, y: np.ndarray, origin: str) -> None:
    """Missing values and shape mismatches are refused with one line naming the problem."""
    n_nan_x = int(np.count_nonzero(~np.isfinite(X)))
    n_nan_y = int(np.count_nonzero(~np.isfinite(y)))
    if n_nan_x or n_nan_y:
        raise UsageError(f"dataset '{ds.name}' from {origin} has {n_nan_x + n_nan_y} missing or "
                         f"non-finite values ({n_nan_x} in inputs, {n_nan_y} in target); "
                         "impute or drop them in the source, or fix its registry entry")
    if ds.task == "regression" and len(y) and np.ptp(y) == 0:
        raise UsageError(f"dataset '{ds.name}' from {origin} has a constant target ({y[0]:g} in every row): "
                         "there is nothing to predict and its error would be 0; check the target column")
    if ds.shape != (0, 0) and X.shape != ds.shape:
        raise UsageError(f"dataset '{ds.name}' from {origin} has shape {X.shape[0]}×{X.shape[1]}, "
                         f"the registry expects {ds.m}×{ds.d}; the file is another version or the "
                         "entry's target/drop fields are wrong")


def _from_mirror(ds: Dataset, roots) -> Loaded | None:
    """The dataset from the first of the mirror directories ``roots`` that holds all its files."""
    if ds.mirror is None:
        return None
    roots = [roots] if isinstance(roots, (str, os.PathLike)) else list(roots)
    for root in roots:
        loaded = _from_mirror_dir(ds, Path(root))
        if loaded is not None:
            return loaded
    return None


def _from_mirror_dir(ds: Dataset, root: Path) -> Loaded | None:
    paths = [root / f for f, _ in ds.mirror.files]
    base = os.path.normpath(os.path.abspath(root))
    for p in paths:  # the registry refuses such paths already: defence in depth
        if os.path.commonpath([base, os.path.normpath(os.path.abspath(p))]) != base:
            raise UsageError(f"dataset '{ds.name}': mirror file {p} lies outside the data directory {root}")
    if not all(p.is_file() for p in paths):
        return None
    for path, (_, expected) in zip(paths, ds.mirror.files, strict=True):
        if not expected and ds.user:     # a user entry without a checksum
            continue
        digest = sha256_of(path)
        if digest != expected:
            fix = (f"the file changed, or the sha256 in {ds.origin} is wrong: fix one (restore the file, or put "
                   "the actual sha256 there once you trust the file; a changed file needs a new --out)" if ds.user
                   else "the file is corrupt or another version: replace it with the registered file")
            raise UsageError(f"mirror file {path} has sha256 {digest}, the registry expects {expected}; {fix}")
    path = paths[0]
    if ds.preprocess:  # a dataset-specific reader (row selections, transforms, as in the paper)
        from rfbench.data.prepare import PREPARERS

        if ds.preprocess not in PREPARERS:
            raise UsageError(f"dataset '{ds.name}': unknown preprocess '{ds.preprocess}'; known: "
                             f"{', '.join(sorted(PREPARERS))}")
        reader = PREPARERS[ds.preprocess]
        # a reader of several files (a training and a test file) gets every mirror file, in order
        X, y = reader.load(paths)
        detail = " + ".join(map(str, paths)) if reader.multi_file else str(path)
        return Loaded(np.asarray(X, float), np.asarray(y, float), "mirror", detail)
    df = pd.concat([_read_mirror_file(ds, p) for p in paths], ignore_index=True)
    X, y = _frame_to_arrays(ds, df, ds.target, str(path))
    return Loaded(X, y, "mirror", " + ".join(map(str, paths)))


def load_split_masks(ds: Dataset, data_dir_override=None) -> SplitAssignment:
    """The published train/test splits of a dataset (its registry ``splits`` entry) as the split of
    every row, read from the first data directory that holds the masks file and checked: its sha256,
    0/1 values only, every row a test row of exactly one split. One line (UsageError) naming the file
    and the problem otherwise; DataUnavailable when no data directory holds it."""
    if ds.splits is None:
        raise UsageError(f"dataset '{ds.name}' has no published splits (its registry entry has no 'splits' "
                         "file); use --protocol cv, splits or holdout, or a dataset of suite uci")
    roots = data_dirs(data_dir_override)
    if Path(ds.splits.file).is_absolute():      # a user registry's masks file
        path = Path(ds.splits.file) if Path(ds.splits.file).is_file() else None
        if path is None:
            raise UsageError(f"the split masks of dataset '{ds.name}' ({ds.splits.file}) are not found; restore "
                             f"the file or fix 'splits.file' in {ds.origin}")
    else:
        path = next((Path(r) / ds.splits.file for r in roots if (Path(r) / ds.splits.file).is_file()), None)
    if path is None:
        where = os.pathsep.join(map(str, roots)) if roots else "no mirror: RFBENCH_DATA_DIR unset"
        raise DataUnavailable(f"the split masks of dataset '{ds.name}' ({ds.splits.file}) are not available "
                              f"({where}); put them under RFBENCH_DATA_DIR (or --data-dir)")
    stat = path.stat()      # the file's stamp is part of the key: a changed file is read (and hashed) again
    return _read_split_masks(ds, path, (stat.st_mtime_ns, stat.st_size))


@lru_cache(maxsize=64)
def _read_split_masks(ds: Dataset, path: Path, stamp: tuple[int, int]) -> SplitAssignment:
    digest = sha256_of(path)
    if ds.splits.sha256 and digest != ds.splits.sha256:
        raise UsageError(f"split masks {path} have sha256 {digest}, the registry expects {ds.splits.sha256}; the "
                         "file is corrupt or another version: replace it with the registered file")
    try:
        masks = pd.read_csv(path, header=None, sep=",", dtype=str, keep_default_na=False).to_numpy()
    except (EOFError, OSError, zlib.error, ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UsageError(f"split masks {path} cannot be read ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'truncated or corrupt'}); restore the file") from None
    return SplitAssignment.from_masks(masks, str(path), digest)


def _read_mirror_file(ds: Dataset, path: Path) -> pd.DataFrame:
    return read_table(path, ds.mirror.format, ds.mirror.sep)


def read_table(path: Path, fmt: str, sep: str | None = None) -> pd.DataFrame:
    """A data file as a DataFrame: arff, csv (header row), tsv, csv-noheader, parquet."""
    if fmt == "arff":
        return read_arff(path)
    if fmt == "csv-noheader":
        # columns are named by position: c0, c1, ...; ``target: c0`` or the last column's name. A
        # gzipped file (.gz) is read as it is; a declared separator takes pandas' fast C parser
        try:
            df = (pd.read_csv(path, header=None, sep=sep) if sep else
                  pd.read_csv(path, header=None, sep=None, engine="python", skipinitialspace=True))
        except (EOFError, OSError, zlib.error, ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise UsageError(f"{path}: cannot be read as csv without header ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else 'truncated or corrupt'}); restore the file") from None
        df.columns = [f"c{i}" for i in range(df.shape[1])]
        return df
    if fmt == "parquet":
        try:
            return pd.read_parquet(path)
        except ImportError as exc:
            raise UsageError(f"{path}: reading parquet needs pyarrow (pip install pyarrow): {exc}") from None
        except (OSError, ValueError) as exc:        # pyarrow's ArrowInvalid is a ValueError
            raise UsageError(f"{path}: cannot be read as parquet ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else 'truncated or corrupt'}); restore the file "
                             "or name its format") from None
    try:
        return pd.read_csv(path, sep=sep or ("\t" if fmt == "tsv" else ","))
    except (ValueError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot be read as {fmt} ({str(exc).splitlines()[0]})") from None
    except (EOFError, OSError, zlib.error) as exc:      # a truncated or corrupt .gz (EOFError would read as Ctrl-C)
        raise UsageError(f"{path}: cannot be read as {fmt} ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'truncated or corrupt'}); restore the file") from None


def _from_file(ds: Dataset) -> Loaded | None:
    """A user dataset's own file (``file:`` of a user registry entry, or --datasets FILE)."""
    if not ds.file:
        return None
    path = Path(ds.file)
    if not path.is_file():
        raise DataUnavailable(f"dataset '{ds.name}': file {path} not found ({ds.origin}); "
                              f"to run: {ds.how_to_supply()}")
    if ds.sha256:
        digest = sha256_of(path)
        if digest != ds.sha256:
            raise UsageError(f"dataset '{ds.name}': file {path} has sha256 {digest}, {ds.origin} expects "
                             f"{ds.sha256}; the file changed, or the registry's sha256 is wrong: fix one (restore "
                             "the file, or put the actual sha256 in the registry once you trust the file; results of "
                             "a changed file belong in a new --out)")
    df = read_table(path, ds.file_format, ds.sep)
    X, y = _frame_to_arrays(ds, df, ds.target, str(path))
    return Loaded(X, y, "file", str(path))


def _from_generator(ds: Dataset) -> Loaded | None:
    if not ds.generator:
        return None
    X, y = GENERATORS[ds.generator](m=ds.m, seed=0)
    return Loaded(X, y, "generator", f"{ds.generator}(seed=0)")


def _from_openml(ds: Dataset, cache: Path) -> Loaded | None:
    if not ds.openml_id:
        return None
    from rfbench.data.openml_source import fetch_openml_frame

    df = fetch_openml_frame(ds.openml_id, cache / "openml")
    X, y = _frame_to_arrays(ds, df, ds.openml_target or ds.target, f"OpenML {ds.openml_id}")
    return Loaded(X, y, "openml", str(ds.openml_id))


def _from_url(ds: Dataset, cache: Path) -> Loaded | None:
    if not (ds.url and ds.download_format):
        return None
    from rfbench.data.url_source import fetch_url_frame

    df = fetch_url_frame(ds.name, ds.url, ds.download_format, ds.download_member, ds.target,
                         cache)
    X, y = _frame_to_arrays(ds, df, ds.target, ds.url)
    return Loaded(X, y, "url", ds.url)


def _read_cache(ds: Dataset, cache: Path) -> Loaded | None:
    index = cache / f"{ds.name}.json"
    if not index.is_file():
        return None
    try:
        meta = json.loads(index.read_text())
        path = cache / f"{ds.name}-{meta['key']}.npz"
        with np.load(path) as z:
            X, y = z["X"], z["y"]
    except (OSError, ValueError, KeyError):
        return None  # an unreadable cache entry is rebuilt, never trusted
    if meta.get("registry") != _cache_key(ds, meta["source"], meta["detail"]):
        return None
    return Loaded(X, y, "cache", f"{meta['source']}:{meta['detail']}")


def _write_cache(ds: Dataset, loaded: Loaded, cache: Path) -> None:
    key = _cache_key(ds, loaded.source, loaded.detail)
    try:
        _atomic_write_npz(cache / f"{ds.name}-{key}.npz", X=loaded.X, y=loaded.y)
        meta = {"key": key, "registry": key, "source": loaded.source, "detail": loaded.detail}
        fd, tmp = tempfile.mkstemp(dir=cache, suffix=".tmp")
        os.fchmod(fd, config.new_file_mode())
        with os.fdopen(fd, "w") as fh:
            json.dump(meta, fh)
        os.replace(tmp, cache / f"{ds.name}.json")
    except OSError:
        pass  # a read-only cache only costs speed


def load(dataset: Dataset | str, data_dir_override=None, allow_download: bool = True, use_cache: bool = True,
         *, registry: Registry, cache=None) -> Loaded:
    """(X, y) of a registered dataset (its entry, or its name in ``registry``), from the first source
    that has it; ``data_dir_override``: see :func:`data_dirs`, ``cache``: see :func:`cache_dir` (a run's
    workers pass its resolved ones; a library call leaves them to the settings).
    ``registry`` is required (there is no default one): a library user passes the one
    :func:`rfbench.registry.load` builds, ``load(name, registry=rfbench.registry.load())``."""
    return load_entry(entry(dataset, registry), data_dir_override, allow_download, use_cache, cache=cache)


def load_entry(ds: Dataset, data_dir_override=None, allow_download: bool = True, use_cache: bool = True, *,
               cache=None) -> Loaded:
    """:func:`load` of a registry entry itself (nothing to look up: the run's workers, which hold the
    entries of the run's registry)."""
    name = ds.name
    if ds.unavailable:
        raise DataUnavailable(ds.unavailable)
    cache = cache_dir(cache)
    if use_cache:
        cached = _read_cache(ds, cache)
        if cached is not None:
            validate_arrays(ds, cached.X, cached.y, "the cache")
            return cached
    roots = data_dirs(data_dir_override)
    root = roots[0] if roots else None
    loaded = _from_file(ds)
    if loaded is None and roots:
        loaded = _from_mirror(ds, roots)
    if loaded is None:
        loaded = _from_generator(ds)
    problems = []
    for source in (_from_openml, _from_url):
        if loaded is not None or not allow_download:
            break
        try:
            loaded = source(ds, cache)
        except DataUnavailable as exc:
            problems.append(str(exc))
    download_problem = "; ".join(problems) or ("download disabled" if not allow_download
                                                else "no download source registered")
    if loaded is None:
        where = (f"not in mirror {os.pathsep.join(map(str, roots))}" if root
                 else "no mirror: RFBENCH_DATA_DIR unset")
        raise DataUnavailable(f"dataset '{name}' is not available ({where}; {download_problem}); "
                              f"to run offline: {ds.how_to_supply()}")
    validate_arrays(ds, loaded.X, loaded.y, loaded.detail)
    if use_cache and loaded.source in ("openml", "url"):
        # only downloads are cached: mirror files and generators are cheaper to re-read than
        # to keep consistent with a cache when the user changes RFBENCH_DATA_DIR
        _write_cache(ds, loaded, cache)
    return loaded


# -- datasets named on the command line ---------------------------------------------------------

def _note(msg: str) -> None:
    print(f"note: {msg}", file=sys.stderr)


def _is_file_spec(name: str) -> bool:
    return Path(name).suffix.lower() in FILE_FORMATS or "/" in name or os.sep in name or Path(name).is_file()


def _file_dataset_name(path: Path) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", path.stem).lstrip(".") or "data"
    return re.sub(r"\.\.+", ".", name)


#: a text column whose cells are numbers at least this often is a numeric column with stray text, not
#: a categorical one (one-hot encoding it would turn every distinct number into an input)
MOSTLY_NUMERIC = 0.9


def _refuse_stray_text(name: str, df: pd.DataFrame, origin: str) -> None:
    """One line for a mostly numeric column that holds some text (e.g. 'n/a' or '1,5' among numbers)."""
    for column in df.columns:
        if pd.api.types.is_numeric_dtype(df[column]):
            continue
        cells = df[column].dropna().astype(str).str.strip()
        parsed = pd.to_numeric(cells, errors="coerce")
        if len(cells) and parsed.notna().mean() >= MOSTLY_NUMERIC:
            bad = cells[parsed.isna()]
            raise UsageError(f"dataset '{name}': column '{column}' of {origin} is numeric but for {len(bad)} "
                             f"cell(s) such as {bad.iloc[0]!r} (row {bad.index[0]}); fix or blank them in the file "
                             "(a text column would be one-hot encoded)")


def _infer(name: str, df: pd.DataFrame, target: str, task: str | None, origin: str, note) -> dict:
    """Task, labels and one-hot encoding of a user table: regression unless --task classification, or a
    target that is not numeric or has two values (said in one note line). A mostly numeric column
    with stray text is refused rather than one-hot encoded."""
    if target not in df.columns:
        shown = ", ".join(map(str, df.columns[:8])) + (", ..." if df.shape[1] > 8 else "")
        raise UsageError(f"--target {target}: no such column in {origin} (columns: {shown})")
    _refuse_stray_text(name, df, origin)
    y = df[target]
    values = class_values(y)
    numeric = pd.to_numeric(y.dropna().astype(str).str.strip(), errors="coerce").notna().all()
    entry: dict = {}
    if task is None:
        task = "classification" if (not numeric or len(values) == 2) else "regression"
        if task == "classification":
            why = "is not numeric" if not numeric else "has two values"
            note(f"dataset '{name}': target '{target}' {why}: classification"
                 + (f" ({values[0]} → −1, {values[1]} → +1)" if len(values) == 2 else "")
                 + "; give --task regression to predict it as a number")
    if task == "classification":
        if len(values) != 2:
            raise UsageError(f"dataset '{name}': target '{target}' has {len(values)} classes; rfbench's "
                             "classification protocol is binary (±1): map the classes to two with "
                             "'labels: {negative: [...], positive: [...]}' in a --registry entry, or give "
                             "--task regression")
        entry["labels"] = {"negative": [values[0]], "positive": [values[1]]}
    elif not numeric:
        raise UsageError(f"dataset '{name}': target '{target}' is not numeric; regression needs a numeric target "
                         "(leave --task out, or give --task classification for two classes)")
    inputs = df.drop(columns=[target])
    categorical = [c for c in inputs.columns if not pd.api.types.is_numeric_dtype(inputs[c])]
    if categorical:
        entry["one_hot"] = True
        note(f"dataset '{name}': {len(categorical)} non-numeric input column(s) one-hot encoded "
             f"({', '.join(map(str, categorical[:3]))}{', ...' if len(categorical) > 3 else ''})")
    entry["task"] = task
    return entry


def resolve_dataset_names(registry: Registry, names, target: str | None = None, task: str | None = None,
                          note=_note, fetch: bool = True) -> tuple[Registry, list[str]]:
    """(the registry with them, the dataset names) of the command line's datasets (the registry
    itself is not changed: the one returned is a new value): registered names as they are; a data file (csv, tsv, arff,
    parquet) registered under its file name's stem with ``target`` (required but for ARFF, whose
    default is the last attribute); ``openml:ID`` registered as ``openml-ID`` (target: ``target`` or
    the dataset's default target attribute). The task is ``task``, else inferred (one note line).
    An OpenML dataset that cannot be downloaded is registered as unavailable: the run skips it with a
    warning (an error with --strict). ``fetch=False`` (a dry run): ``openml:ID`` is registered without
    contacting OpenML, its task ``task`` (regression when not given) and its target and shape unknown
    (:func:`unresolved_openml` names them)."""
    out, user = [], False
    for n in names:
        added = None
        if n.lower().startswith("openml:"):
            added = _register_openml(registry, n, target, task, note, fetch)
        elif n not in registry.datasets and _is_file_spec(n):
            added = _register_file(registry, n, target, task, note)
        if added is not None:
            n, user = added[0], True
            registry = registry.with_command_line(datasets=dict([added]))
        else:
            n = registry.canonical_name(n)      # a paper's name (an alias) → the registered name
        if n not in out:
            out.append(n)
    if (target or task) and not user:
        raise UsageError(f"{'--target' if target else '--task'} applies to data files and openml:ID in --datasets "
                         "only (a registered dataset has its target and task in its registry entry)")
    return registry, out


def _check_new(registry: Registry, name: str, source: str) -> None:
    check_name(Path(COMMAND_LINE), name, "dataset")
    held = registry.datasets.get(name)
    if held is not None and held.origin != COMMAND_LINE:
        raise UsageError(f"--datasets {source}: its name '{name}' is already a registered dataset "
                         f"({held.origin}); rename the file, or register it under another name in a "
                         "--registry file")


def _refuse_duplicate_header(path: Path, fmt: str) -> None:
    """pandas renames a repeated column name 'a' to 'a.1': refuse instead, since --target or drop
    could then name the wrong column."""
    if fmt not in ("csv", "tsv"):
        return
    header = pd.read_csv(path, sep="\t" if fmt == "tsv" else ",", header=None, nrows=1, dtype=str).iloc[0]
    names = [str(h).strip() for h in header]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise UsageError(f"{path}: column name(s) {', '.join(repeated)} appear more than once in the header row; "
                         "give every column its own name")


def _register_file(registry: Registry, spec: str, target: str | None, task: str | None, note) -> tuple[str, dict]:
    """(name, entry) of a data file named on the command line."""
    path = Path(spec).expanduser().absolute()
    if not path.is_file():
        raise UsageError(f"--datasets {spec}: no such file (a data file: csv, tsv, arff or parquet; or a "
                         "registered dataset name, see `rfbench datasets list`)")
    fmt = FILE_FORMATS.get(path.suffix.lower(), "csv")
    name = _file_dataset_name(path)
    _check_new(registry, name, spec)
    df = read_table(path, fmt)
    if df.empty:
        raise UsageError(f"--datasets {spec}: {path} has no data rows; give a file with a header row and data")
    _refuse_duplicate_header(path, fmt)
    if not target:
        if fmt != "arff":
            raise UsageError(f"--datasets {spec} needs --target COLUMN: the column to predict (columns: "
                             f"{', '.join(map(str, df.columns[:8]))}{', ...' if df.shape[1] > 8 else ''})")
        target = str(df.columns[-1])
    if target in df.columns and df.shape[1] < 2:
        raise UsageError(f"--datasets {spec}: {path} has only the target column '{target}'; a data file needs input "
                         "columns beside it")
    entry = {"file": str(path), "format": fmt, "target": target, "sha256": sha256_of(path),
             **_infer(name, df, target, task, str(path), note)}
    shape = _shape(name, entry, df, target, str(path))
    return name, {**entry, "shape": list(shape)}


def _shape(name: str, entry: dict, df: pd.DataFrame, target: str, origin: str) -> tuple[int, int]:
    ds = command_line_dataset(name, entry)
    X, y = _frame_to_arrays(ds, df, target, origin)
    validate_arrays(ds, X, y, origin)
    return X.shape


#: the notes of an ``openml:ID`` a dry run registered without resolving it
UNRESOLVED = "not resolved: a dry run does not contact OpenML"
TASK_UNKNOWN = "; task unknown"


def unresolved_openml(registry: Registry, names) -> list[str]:
    """The names among ``names`` of ``openml:ID`` datasets registered without contacting OpenML
    (``resolve_dataset_names(..., fetch=False)``): their target, shape (and task, unless given) are
    known only when a run downloads them."""
    return [n for n in names if registry.datasets[n].notes.startswith(UNRESOLVED)]


def _register_openml(registry: Registry, spec: str, target: str | None, task: str | None, note,
                     fetch: bool = True) -> tuple[str, dict]:
    """(name, entry) of ``openml:ID`` named on the command line (an unavailable one when it cannot be
    downloaded; without ``fetch``, one registered as it is named, OpenML not contacted)."""
    raw = spec.partition(":")[2].strip()
    if not raw.isdigit() or int(raw) < 1:
        raise UsageError(f"--datasets {spec}: an OpenML dataset is openml:ID with a positive integer ID, "
                         "e.g. openml:4531")
    did = int(raw)
    name = f"openml-{did}"
    _check_new(registry, name, spec)
    if not fetch:
        return name, {"openml": {"id": did, "target": target}, "target": target or "", "task": task or "regression",
                      "notes": UNRESOLVED + ("" if task else TASK_UNKNOWN)}
    from rfbench.data.openml_source import fetch_openml_frame

    try:
        df = fetch_openml_frame(did, cache_dir() / "openml")
    except DataUnavailable as exc:
        return name, {"openml": {"id": did, "target": target}, "target": target or "", "task": task or "regression",
                      "unavailable": f"dataset '{name}' is not available ({exc}); to run offline: fetch OpenML id "
                                     f"{did} once with network"}
    tgt = target or df.attrs.get("openml_default_target") or ""
    if not tgt or "," in tgt:
        raise UsageError(f"--datasets {spec}: OpenML {did} has {'several default targets' if tgt else 'no default target'}"
                         f"; give --target COLUMN")
    entry = {"openml": {"id": did, "target": tgt}, "target": tgt, **_infer(name, df, tgt, task, f"OpenML {did}", note)}
    shape = _shape(name, entry, df, tgt, f"OpenML {did}")
    return name, {**entry, "shape": list(shape)}


def provenance(registry: Registry, dataset_names, method_names=()) -> dict:
    """What run.json records of the user datasets and methods of a run (built-in ones: nothing):
    where each comes from, a data file's sha256 and the shape; an estimator's module path."""
    out: dict = {}
    for name in dataset_names:
        ds = registry.dataset(name)
        if not ds.user:
            continue
        info = {"origin": ds.origin, "task": ds.task, "target": ds.target or None,
                "shape": list(ds.shape) if ds.shape != (0, 0) else None}
        if ds.file:
            info["file"] = ds.file
            info["sha256"] = ds.sha256 or (sha256_of(Path(ds.file)) if Path(ds.file).is_file() else None)
        if ds.mirror:
            info["mirror"] = [f for f, _ in ds.mirror.files]
        if ds.openml_id:
            info["openml"] = ds.openml_id
        out.setdefault("datasets", {})[name] = info
    for name in method_names:
        m = registry.method(name)
        if m.origin != "built-in":
            out.setdefault("methods", {})[name] = {"origin": m.origin, "estimators": m.estimators,
                                                   "params": m.params, "grid": m.grid}
    return out
