"""The CI regression's numeric path (rfbench.experiments.numeric_path): the pins put a new process on
OpenBLAS's Haswell kernels and NumPy's AVX2 loops whatever the CPU, bench/ci-check.sh applies them before
the regression, a reference is written only on that path and a failing comparison off it says so."""

import csv
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from rfbench.errors import UsageError
from rfbench.experiments import numeric_path, regress
from rfbench.registry import load as load_registry
from tests.experiments.test_regress import _spec

ROOT = Path(__file__).resolve().parents[2]
X86 = platform.machine().lower() in ("x86_64", "amd64")


def _path_report(env: dict) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    return subprocess.run([sys.executable, "-m", "rfbench.experiments.numeric_path"], env={**clean, **env},
                          capture_output=True, text=True, timeout=120)


def test_the_targets_beyond_avx2_in_both_numpy_namings():
    assert numeric_path.above_avx2(["X86_V3", "X86_V4", "AVX512_ICL", "AVX512_SPR"]) == \
        ["X86_V4", "AVX512_ICL", "AVX512_SPR"]                                   # NumPy >= 2.4
    assert numeric_path.above_avx2(["SSSE3", "SSE41", "POPCNT", "SSE42", "AVX", "F16C", "FMA3", "AVX2", "AVX512F",
                                    "AVX512CD", "AVX512_KNL", "AVX512_SKX", "AVX512_ICL"]) == \
        ["AVX512F", "AVX512CD", "AVX512_KNL", "AVX512_SKX", "AVX512_ICL"]       # NumPy 1.26 - 2.3
    assert numeric_path.above_avx2(["ASIMD", "ASIMDHP", "SVE"]) == []


@pytest.mark.skipif(not X86, reason="the pinned path is x86-64's (OpenBLAS Haswell kernels)")
def test_the_pins_put_a_new_process_on_the_path_whatever_the_cpu():
    """On an AVX-512 machine both OpenBLAS copies (NumPy's, SciPy's) would report SkylakeX and NumPy its X86_V4
    loops without the pins; with them, every copy runs the Haswell kernels and NumPy stops at AVX2."""
    env = numeric_path.pinned_env()
    assert env["OPENBLAS_CORETYPE"] == "Haswell"
    res = _path_report(env)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("OpenBLAS Haswell kernels, NumPy capped at AVX2; on the CI references' path")
    assert "cannot disable" not in res.stderr          # every name given is one this NumPy knows


@pytest.mark.skipif(not X86, reason="the pinned path is x86-64's")
def test_another_path_is_named_with_the_fix():
    res = _path_report({**numeric_path.pinned_env(), "OPENBLAS_CORETYPE": "Sandybridge"})    # NumPy on the path
    assert res.returncode == 1
    assert res.stdout.startswith("OpenBLAS Sandybridge kernels, NumPy capped at AVX2; NOT on the CI references' path")
    assert "OPENBLAS_CORETYPE=Haswell" in res.stdout


def test_ci_check_pins_the_path_before_anything_runs():
    script = (ROOT / "bench" / "ci-check.sh").read_text().splitlines()
    computed = next(i for i, line in enumerate(script)
                    if line.startswith('pins="$(python -m rfbench.experiments.numeric_path --exports)"'))
    pin = script.index('eval "$pins"')
    assert computed < pin
    first_run = next(i for i, line in enumerate(script) if line.startswith(("rfbench ", "python -m rfbench.experiments.regress")))
    assert pin < first_run


def test_exports_are_shell_lines_that_set_the_pins():
    out = subprocess.run([sys.executable, "-m", "rfbench.experiments.numeric_path", "--exports"], capture_output=True,
                         text=True, timeout=120, check=True).stdout
    shown = subprocess.run(["bash", "-c", f'{out}\nenv'], capture_output=True, text=True, check=True).stdout.splitlines()
    for name, value in numeric_path.pinned_env().items():
        assert f"{name}={value}" in shown


def test_a_reference_is_written_on_the_path_only(tmp_path, monkeypatch):
    spec = _spec(tmp_path, ci="ci: {protocol: {max_samples: 120}, reference: reference/tiny.csv}\n")
    monkeypatch.setattr(numeric_path, "on_path", lambda: False)
    monkeypatch.setattr(numeric_path, "describe", lambda: "OpenBLAS SkylakeX kernels, NumPy with X86_V4")
    with pytest.raises(UsageError, match="written on the CI path.*SkylakeX.*numeric_path --exports"):
        regress.run_and_compare(spec, tmp_path / "run", write_reference=True, registry=load_registry())
    assert not (tmp_path / "run").exists() and not spec.ci.reference.exists()     # refused before anything ran


def test_a_failing_comparison_off_the_path_says_so(tmp_path, monkeypatch):
    spec = _spec(tmp_path, ci="ci: {protocol: {max_samples: 120}, reference: reference/tiny.csv}\n")
    regress.write_reference(spec, regress.ci_run(spec, tmp_path / "first", registry=load_registry()))
    rows = list(csv.reader(spec.ci.reference.open()))
    rows[1][4] = repr(float(rows[1][4]) * 2)
    with spec.ci.reference.open("w") as fh:
        csv.writer(fh, lineterminator="\n").writerows(rows)
    monkeypatch.setattr(numeric_path, "on_path", lambda: False)
    monkeypatch.setattr(numeric_path, "describe", lambda: "OpenBLAS SkylakeX kernels, NumPy with X86_V4")
    said = []
    assert regress.run_and_compare(spec, tmp_path / "second", registry=load_registry(), echo=said.append) == 1
    assert said[0].splitlines()[-1].startswith("note: this process runs OpenBLAS SkylakeX kernels, NumPy with X86_V4, "
                                                "not the references' path")
    monkeypatch.setattr(numeric_path, "on_path", lambda: True)
    assert regress.run_and_compare(spec, tmp_path / "third", registry=load_registry(), echo=said.append) == 1
    assert "note:" not in said[1]


@pytest.mark.skipif(not X86, reason="OpenBLAS's kernel sets are x86-64's")
def test_each_invocation_names_the_kernels_that_computed_its_records(tmp_path):
    """The same code gives other last bits on another kernel set, which a CV choice can amplify (a rerun of
    gfc-prior on uci-breastcancer split 3 at n = 500 on an AVX2 machine chose ν = 3e-8, where the record
    computed on an AVX-512 machine had 1e-10: RMSE 41.7 against 37.8); so runs.jsonl's machine says which
    kernels ran, as the process saw them (here forced to Sandybridge's), and the CPU's model."""
    import json

    clean = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES")}
    out = tmp_path / "run"
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "run", "--datasets", "friedman-generated",
                          "--methods", "rff-gauss", "--features", "10", "--outer-folds", "2", "--inner-folds", "2",
                          "--max-samples", "100", "--jobs", "1", "--quiet", "--no-report", "--out", str(out)],
                         env={**clean, **numeric_path.pinned_env(), "OPENBLAS_CORETYPE": "Sandybridge"},
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    [line] = (out / "runs.jsonl").read_text().splitlines()
    machine = json.loads(line)["machine"]
    assert machine["numeric_path"] == "OpenBLAS Sandybridge kernels, NumPy capped at AVX2"
    assert "cpu" in machine
