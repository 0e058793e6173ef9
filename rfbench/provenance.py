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
            "processor": platform.processor() or platform.machine(), "cpu": cpu_model(), "cpu_count": os.cpu_count(),
            "memory_gb": round(mem_gb, 1) if mem_gb else None, "numeric_path": numeric_path(), "versions": versions}


def cpu_model() -> str | None:
    """The CPU's model name (/proc/cpuinfo), or None where the system does not say."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def numeric_path() -> str | None:
    """The SIMD kernels this process computes with (:func:`describe`): the same code gives other last
    bits on another kernel set (OpenBLAS's SkylakeX against its Haswell kernels, NumPy's AVX-512 loops),
    which a cross-validated choice can amplify into another λ or ν; None where it cannot be read."""
    try:
        return describe()
    except Exception:  # noqa: BLE001 - provenance is written whatever NumPy or threadpoolctl can say
        return None


# -- which SIMD kernels compute this process's numbers (rfbench.experiments.numeric_path pins the CI's)


def numpy_features() -> tuple[list[str], dict]:
    """NumPy's dispatched SIMD targets and which of them this CPU runs."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return list(__cpu_dispatch__), dict(__cpu_features__)


def above_avx2(dispatch: list[str]) -> list[str]:
    """NumPy's dispatched x86 targets beyond AVX2: X86_V4 and the AVX512_* groups (NumPy ≥ 2.4), or the
    AVX512* features of older NumPy; every name is one this NumPy accepts (it warns on another)."""
    return [name for name in dispatch if name == "X86_V4" or name.startswith("AVX512")]


def blas_kernels() -> list[str]:
    """The kernel set of every OpenBLAS loaded in this process (NumPy's and SciPy's copies)."""
    import scipy.linalg  # noqa: F401 - loads SciPy's OpenBLAS, so that threadpoolctl sees it
    from threadpoolctl import threadpool_info

    return sorted({str(lib.get("architecture")) for lib in threadpool_info() if lib.get("internal_api") == "openblas"})


def numpy_above_avx2() -> list[str]:
    """NumPy's dispatched targets beyond AVX2 that this process runs."""
    dispatch, features = numpy_features()
    return [name for name in above_avx2(dispatch) if features.get(name)]


def numpy_has_avx2() -> bool:
    """Whether NumPy runs its AVX2 loops (X86_V3; AVX2 and FMA3 in NumPy before 2.4)."""
    dispatch, features = numpy_features()
    avx2 = [name for name in dispatch if name in ("X86_V3", "AVX2", "FMA3")]
    return bool(avx2) and all(features.get(name) for name in avx2)


def describe() -> str:
    """What this process runs on, in words."""
    simd = numpy_above_avx2()
    numpy = ("with " + " ".join(simd) if simd else "capped at AVX2" if numpy_has_avx2() else "without its AVX2 loops")
    return f"OpenBLAS {', '.join(blas_kernels()) or 'not loaded'} kernels, NumPy {numpy}"
