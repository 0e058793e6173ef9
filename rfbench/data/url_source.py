"""Download from a dataset's original URL (for datasets with no usable OpenML copy).

A registry entry opts in with ``download: {format: arff | csv | whitespace, member: path}``:
the file at ``url`` (or the archive member ``member`` of a .tgz / .tar.gz / .zip at ``url``) is read
in that format. ``whitespace`` is Torgo's ``.data`` layout: numbers separated by blanks, target
last. The downloaded bytes are kept in the cache directory, written atomically.
"""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import pandas as pd

from rfbench.config import new_file_mode
from rfbench.data.arff import read_arff
from rfbench.errors import DataUnavailable, UsageError


def _download(url: str, target: Path, timeout: float) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 - registry URLs
            payload = resp.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        raise DataUnavailable(f"download of {url} failed: {getattr(exc, 'reason', exc)}") from None
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
    os.fchmod(fd, new_file_mode())
    with os.fdopen(fd, "wb") as fh:
        fh.write(payload)
    os.replace(tmp, target)


def _member_bytes(archive: Path, member: str | None) -> bytes:
    if member is None:
        return archive.read_bytes()
    try:
        if zipfile.is_zipfile(archive):
            with zipfile.ZipFile(archive) as zf:
                return zf.read(member)
        with tarfile.open(archive) as tf:
            fh = tf.extractfile(member)
            if fh is None:
                raise KeyError(member)
            return fh.read()
    except (KeyError, tarfile.TarError, zipfile.BadZipFile) as exc:
        raise UsageError(f"{archive.name} does not hold '{member}' ({type(exc).__name__}); "
                         "fix the registry's download.member") from None


def fetch_url_frame(name: str, url: str, fmt: str, member: str | None, target: str,
                    cache_root: Path, timeout: float = 60.0) -> pd.DataFrame:
    """The downloaded dataset as a DataFrame whose target column is named ``target``."""
    archive = cache_root / "url" / name / Path(url.split("?")[0]).name
    if not archive.is_file():
        _download(url, archive, timeout)
    raw = _member_bytes(archive, member)
    if fmt == "arff":
        path = archive.with_suffix(".member.arff")
        path.write_bytes(raw)
        return read_arff(path)
    if fmt == "csv":
        return pd.read_csv(io.BytesIO(raw))
    if fmt == "whitespace":
        df = pd.read_csv(io.BytesIO(raw), sep=r"\s+", header=None, comment="%")
        df.columns = [f"x{i}" for i in range(df.shape[1] - 1)] + [target]
        return df
    raise UsageError(f"dataset '{name}': unknown download format '{fmt}'")
