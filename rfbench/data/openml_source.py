"""Download through the real ``openml`` client.

The server is ``RFBENCH_OPENML_SERVER`` when set (tests point it at a small OpenML-compatible server
on 127.0.0.1), otherwise the client's default. The client's cache lives under rfbench's cache
directory so that a download is made once.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pandas as pd

from rfbench.errors import DataUnavailable


def fetch_openml_frame(dataset_id: int, cache_root: Path) -> pd.DataFrame:
    """The dataset as one DataFrame (target column included)."""
    os.environ.setdefault("OPENML_SKIP_PARQUET", "true")  # ARFF path only: no MinIO round trips
    try:
        import openml
    except ImportError as exc:  # pragma: no cover - openml is a declared dependency
        raise DataUnavailable(f"the openml package is not importable ({exc})") from None
    cache_root.mkdir(parents=True, exist_ok=True)
    openml.config.set_root_cache_directory(str(cache_root))
    server = os.environ.get("RFBENCH_OPENML_SERVER")
    if server:
        openml.config.server = server
    openml.config.set_retry_policy("robot", int(os.environ.get("RFBENCH_OPENML_RETRIES", "1")))
    # one download at a time per cache: two invocations fetching the same id (two lanes of one
    # run) would otherwise race in the client's cache, one deleting the other's partial files
    lock = open(cache_root / ".download.lock", "w")  # noqa: SIM115 - released in finally
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        ds = openml.datasets.get_dataset(dataset_id, download_data=True, download_qualities=False,
                                         download_features_meta_data=False)
        frame, *_ = ds.get_data(dataset_format="dataframe")
        frame.attrs["openml_default_target"] = ds.default_target_attribute or ""
    except Exception as exc:  # network errors, server errors: all mean "not available here"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataUnavailable(f"OpenML dataset {dataset_id} could not be downloaded: {first[:200]}") from None
    finally:
        lock.close()                                   # closing the file releases the lock
    return frame
