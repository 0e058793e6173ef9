"""Load a script of ``bench/perf`` as a module, so that a test calls its functions directly."""

import importlib.util
from pathlib import Path

BENCH_PERF = Path(__file__).resolve().parents[1] / "bench" / "perf"


def bench_script(name: str, folder: str = "perf"):
    """The module of ``bench/<folder>/<name>.py`` (executed afresh on each call)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH_PERF.parent / folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
