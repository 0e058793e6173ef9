"""The numeric path of the exact CI regression: which SIMD kernels compute its numbers.

The CI references (bench/reference/*.csv) are compared to 1e-9, and the small ci configurations amplify
the last bit of a BLAS product (a flat CV curve picks another λ). OpenBLAS and NumPy choose their kernels
at run time from the CPU: on an AVX-512 machine OpenBLAS runs its SkylakeX kernels and NumPy its X86_V4
loops (another summation and FMA order), on an AVX2 machine the Haswell kernels and X86_V3 loops. The same
code then gives references that match on one kind of machine and fail on the other (session 36: 0 of 36
gfc2016-table1 tasks on an AMD EPYC without AVX-512, against references written on AVX-512 machines).

So the regression runs on one path that every x86-64 CI machine has, pinned before NumPy loads:

    OPENBLAS_CORETYPE=Haswell                 OpenBLAS's AVX2 kernels (NumPy's and SciPy's copies alike)
    NPY_DISABLE_CPU_FEATURES=X86_V4 ...       NumPy's dispatched loops capped at AVX2 (X86_V3)

``bench/ci-check.sh`` sets them (``eval "$(python -m rfbench.experiments.numeric_path --exports)"``), and
a reference is written only on that path. :func:`describe` says what a process runs on, for the verdict
of a failing comparison.
"""

from __future__ import annotations

import argparse
import shlex
import sys

# what a process computes on is provenance (each invocation's machine in runs.jsonl names it); this
# module pins and checks the CI references' path with it
from rfbench.provenance import (
    above_avx2,
    blas_kernels,
    describe,
    numpy_above_avx2,
    numpy_features,
    numpy_has_avx2,
)

OPENBLAS_CORE = "Haswell"
#: the path in words, and the shell line that pins it (bench/ci-check.sh runs its equivalent)
PATH_WORDS = f"OpenBLAS {OPENBLAS_CORE} kernels, NumPy capped at AVX2"
PIN_COMMAND = 'eval "$(python -m rfbench.experiments.numeric_path --exports)"'


def pinned_env() -> dict[str, str]:
    """The variables that put a new process on the references' path (empty on a CPU that is not x86-64)."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return {}
    dispatch, _ = numpy_features()
    env = {"OPENBLAS_CORETYPE": OPENBLAS_CORE}
    if disable := above_avx2(dispatch):
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disable)
    return env


def on_path() -> bool:
    """Whether this process computes on the references' path."""
    kernels = blas_kernels()
    return all(k == OPENBLAS_CORE for k in kernels) and numpy_has_avx2() and not numpy_above_avx2()


def advice() -> str:
    """The note a failing comparison adds when this process is off the references' path."""
    if on_path():
        return ""
    return (f"note: this process runs {describe()}, not the references' path ({PATH_WORDS}): another CPU "
            f"rounds differently. Pin it as bench/ci-check.sh does: {PIN_COMMAND}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m rfbench.experiments.numeric_path",
                                 description="The CI regression's numeric path: print the shell exports that pin "
                                             "it, or say whether this process is on it.")
    ap.add_argument("--exports", action="store_true", help="print `export NAME=VALUE` lines for a shell's eval")
    args = ap.parse_args(argv)
    if args.exports:
        for name, value in pinned_env().items():
            print(f"export {name}={shlex.quote(value)}")
        return 0
    print(f"{describe()}; {'on' if on_path() else 'NOT on'} the CI references' path"
          f"{'' if on_path() else ' (set: ' + ' '.join(f'{k}={shlex.quote(v)}' for k, v in pinned_env().items()) + ')'}")
    return 0 if on_path() else 1


if __name__ == "__main__":
    sys.exit(main())
