"""What produced a run's records: the code's commit and the machine (written into runs.jsonl)."""

from __future__ import annotations

import copy
import os
import platform
import subprocess
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path


def code_version() -> dict:
    """The git commit of the rfbench source that runs (and whether it has uncommitted changes), so
    that every invocation in runs.jsonl says which code produced its records; empty outside a
    checkout. Asked once per process: the code running is the code loaded at the first call."""
    return copy.deepcopy(_code_version())


@lru_cache(maxsize=1)
def _code_version() -> dict:
    src = Path(__file__).resolve().parent
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=src, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", str(src)],
                               cwd=src, capture_output=True, text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return {}
    return {"commit": commit, "dirty": bool(dirty)}


def machine_info() -> dict:
    """The interpreter, platform, cores, memory and package versions (once per process)."""
    return copy.deepcopy(_machine_info())


@lru_cache(maxsize=1)
def _machine_info() -> dict:
    versions = {}
    for pkg in ("rfbench", "numpy", "scipy", "scikit-learn", "lightgbm", "pandas", "openml", "joblib",
                "threadpoolctl"):
        try:
            versions[pkg] = version(pkg)
        except PackageNotFoundError:
            versions[pkg] = None
    try:
        mem_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem_gb = None
    return {"python": platform.python_version(), "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(), "cpu_count": os.cpu_count(),
            "memory_gb": round(mem_gb, 1) if mem_gb else None, "versions": versions}
