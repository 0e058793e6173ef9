"""The wheel the tests install: `pip wheel` on a copy of the checkout's files (tests/cli/test_install.py,
the README's compare section in tests/experiments/test_compare.py)."""

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _copy_source(dest: Path) -> Path:
    """The files a build needs (the build writes build/ and *.egg-info into its source tree)."""
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "datasets.yaml", "methods.yaml"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "bench", src / "bench", ignore=shutil.ignore_patterns("perf", "__pycache__"))
    shutil.copytree(ROOT / "published", src / "published")
    shutil.copytree(ROOT / "rfbench", src / "rfbench", symlinks=True, ignore=shutil.ignore_patterns("__pycache__"))
    return src


def build_wheel(tmp_path: Path) -> Path:
    """The wheel `pip wheel` builds from a copy of the checkout's files, in tmp_path/dist."""
    src = _copy_source(tmp_path)
    dist = tmp_path / "dist"
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", str(src), "--no-deps", "-q", "-w", str(dist)],
                           capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    return next(dist.glob("rfbench-*.whl"))
