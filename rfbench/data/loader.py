"""One function that returns (X, y, meta) for a dataset name, whatever the source.

Order: local cache (of earlier downloads) → mirror directory (RFBENCH_DATA_DIR / --data-dir) → built-in generator →
download (OpenML client) → DataUnavailable with a one-line hint on how to supply the data offline.
Mirror files are checked against the registry's sha256; a mismatch is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from rfbench.data.arff import read_arff
from rfbench.data.generators import GENERATORS
from rfbench.errors import DataUnavailable, UsageError
from rfbench.registry import Dataset, get_dataset

CACHE_VERSION = 1


@dataclass
class Loaded:
    X: np.ndarray
    y: np.ndarray
    source: str       # cache | mirror | generator | openml
    detail: str       # file path, generator seed, OpenML id


def cache_dir() -> Path:
    return Path(os.environ.get("RFBENCH_CACHE_DIR", Path.home() / ".cache" / "rfbench"))


def data_dir(override: str | os.PathLike | None = None) -> Path | None:
    """The mirror directory (--data-dir, else $RFBENCH_DATA_DIR; None when neither is set).

    A directory that is named but does not exist is refused rather than silently ignored (the run
    would otherwise fall back to generators and downloads and compute something else)."""
    if override is not None and str(override).strip() == "":
        raise UsageError("--data-dir is empty; name the dataset mirror directory, or leave the option out "
                         "to use $RFBENCH_DATA_DIR")
    if override is not None:
        value, origin = str(override), "--data-dir"
    else:
        value, origin = os.environ.get("RFBENCH_DATA_DIR", "").strip(), "RFBENCH_DATA_DIR"
        if not value:
            return None
    path = Path(value).expanduser()
    if not path.is_dir():
        fix = ("give the dataset mirror directory" if origin == "--data-dir" else
               "point it at the dataset mirror directory, or unset it to use only generated and downloaded datasets")
        shown = f"--data-dir {value}" if origin == "--data-dir" else f"RFBENCH_DATA_DIR={value}"
        raise UsageError(f"{shown} is not a directory ({'missing' if not path.exists() else 'a file'}); {fix}")
    return path


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_write_npz(path: Path, **arrays) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
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


def _frame_to_arrays(ds: Dataset, df: pd.DataFrame, target: str, origin: str) -> tuple[np.ndarray, np.ndarray]:
    if target not in df.columns:
        raise UsageError(f"dataset '{ds.name}': target column '{target}' not found in {origin}")
    if ds.task == "classification":
        y = _binarise(ds, df[target], origin)
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
    if X.shape != ds.shape:
        raise UsageError(f"dataset '{ds.name}' from {origin} has shape {X.shape[0]}×{X.shape[1]}, "
                         f"the registry expects {ds.m}×{ds.d}; the file is another version or the "
                         "entry's target/drop fields are wrong")


def _from_mirror(ds: Dataset, root: Path) -> Loaded | None:
    if ds.mirror is None:
        return None
    paths = [root / f for f, _ in ds.mirror.files]
    base = os.path.normpath(os.path.abspath(root))
    for p in paths:  # the registry refuses such paths already: defence in depth
        if os.path.commonpath([base, os.path.normpath(os.path.abspath(p))]) != base:
            raise UsageError(f"dataset '{ds.name}': mirror file {p} lies outside the data directory {root}")
    if not all(p.is_file() for p in paths):
        return None
    for path, (_, expected) in zip(paths, ds.mirror.files, strict=True):
        digest = sha256_of(path)
        if digest != expected:
            raise UsageError(f"mirror file {path} has sha256 {digest[:12]}…, the registry expects "
                             f"{expected[:12]}…; the file is corrupt or another version: "
                             "replace it with the registered file")
    path = paths[0]
    if ds.preprocess:  # a dataset-specific reader (row selections, transforms, as in the paper)
        from rfbench.data.prepare import PREPARERS

        if ds.preprocess not in PREPARERS:
            raise UsageError(f"dataset '{ds.name}': unknown preprocess '{ds.preprocess}'; known: "
                             f"{', '.join(sorted(PREPARERS))}")
        X, y = PREPARERS[ds.preprocess](path)
        return Loaded(np.asarray(X, float), np.asarray(y, float), "mirror", str(path))
    df = pd.concat([_read_mirror_file(ds, p) for p in paths], ignore_index=True)
    X, y = _frame_to_arrays(ds, df, ds.target, str(path))
    return Loaded(X, y, "mirror", " + ".join(map(str, paths)))


def _read_mirror_file(ds: Dataset, path: Path) -> pd.DataFrame:
    if ds.mirror.format == "arff":
        return read_arff(path)
    if ds.mirror.format == "csv-noheader":
        # columns are named by position: c0, c1, ...; ``target: c0`` or the last column's name
        df = pd.read_csv(path, header=None, sep=None, engine="python", skipinitialspace=True)
        df.columns = [f"c{i}" for i in range(df.shape[1])]
        return df
    return pd.read_csv(path, sep=ds.mirror.sep or ",")


def _from_generator(ds: Dataset) -> Loaded | None:
    if not ds.generator:
        return None
    X, y = GENERATORS[ds.generator](m=ds.m, seed=0)
    return Loaded(X, y, "generator", f"{ds.generator}(seed=0)")


def _from_openml(ds: Dataset) -> Loaded | None:
    if not ds.openml_id:
        return None
    from rfbench.data.openml_source import fetch_openml_frame

    df = fetch_openml_frame(ds.openml_id, cache_dir() / "openml")
    X, y = _frame_to_arrays(ds, df, ds.openml_target or ds.target, f"OpenML {ds.openml_id}")
    return Loaded(X, y, "openml", str(ds.openml_id))


def _from_url(ds: Dataset) -> Loaded | None:
    if not (ds.url and ds.download_format):
        return None
    from rfbench.data.url_source import fetch_url_frame

    df = fetch_url_frame(ds.name, ds.url, ds.download_format, ds.download_member, ds.target,
                         cache_dir())
    X, y = _frame_to_arrays(ds, df, ds.target, ds.url)
    return Loaded(X, y, "url", ds.url)


def _read_cache(ds: Dataset) -> Loaded | None:
    index = cache_dir() / f"{ds.name}.json"
    if not index.is_file():
        return None
    try:
        meta = json.loads(index.read_text())
        path = cache_dir() / f"{ds.name}-{meta['key']}.npz"
        with np.load(path) as z:
            X, y = z["X"], z["y"]
    except (OSError, ValueError, KeyError):
        return None  # an unreadable cache entry is rebuilt, never trusted
    if meta.get("registry") != _cache_key(ds, meta["source"], meta["detail"]):
        return None
    return Loaded(X, y, "cache", f"{meta['source']}:{meta['detail']}")


def _write_cache(ds: Dataset, loaded: Loaded) -> None:
    key = _cache_key(ds, loaded.source, loaded.detail)
    try:
        _atomic_write_npz(cache_dir() / f"{ds.name}-{key}.npz", X=loaded.X, y=loaded.y)
        meta = {"key": key, "registry": key, "source": loaded.source, "detail": loaded.detail}
        fd, tmp = tempfile.mkstemp(dir=cache_dir(), suffix=".tmp")
        with os.fdopen(fd, "w") as fh:
            json.dump(meta, fh)
        os.replace(tmp, cache_dir() / f"{ds.name}.json")
    except OSError:
        pass  # a read-only cache only costs speed


def load(name: str, data_dir_override=None, allow_download: bool = True, use_cache: bool = True) -> Loaded:
    """(X, y) of a registered dataset, from the first source that has it."""
    ds = get_dataset(name)
    if use_cache:
        cached = _read_cache(ds)
        if cached is not None:
            validate_arrays(ds, cached.X, cached.y, "the cache")
            return cached
    loaded = None
    root = data_dir(data_dir_override)
    if root is not None:
        loaded = _from_mirror(ds, root)
    if loaded is None:
        loaded = _from_generator(ds)
    problems = []
    for source in (_from_openml, _from_url):
        if loaded is not None or not allow_download:
            break
        try:
            loaded = source(ds)
        except DataUnavailable as exc:
            problems.append(str(exc))
    download_problem = "; ".join(problems) or ("download disabled" if not allow_download
                                                else "no download source registered")
    if loaded is None:
        where = f"not in mirror {root}" if root else "no mirror: RFBENCH_DATA_DIR unset"
        raise DataUnavailable(f"dataset '{name}' is not available ({where}; {download_problem}); "
                              f"to run offline: {ds.how_to_supply()}")
    validate_arrays(ds, loaded.X, loaded.y, loaded.detail)
    if use_cache and loaded.source in ("openml", "url"):
        # only downloads are cached: mirror files and generators are cheaper to re-read than
        # to keep consistent with a cache when the user changes RFBENCH_DATA_DIR
        _write_cache(ds, loaded)
    return loaded
