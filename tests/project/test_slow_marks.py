"""tests/slow_marks.py: a partial measurement never empties the list of slow tests."""

import csv
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import tests.slow_marks as slow_marks  # noqa: E402


def _measure(path: Path, rows) -> Path:
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=["nodeid", "cpu_s", "slow_in_source"])
        w.writeheader()
        w.writerows({"nodeid": n, "cpu_s": s, "slow_in_source": "0"} for n, s in rows)
    return path


@pytest.fixture
def slow_list(tmp_path, monkeypatch):
    listed = tmp_path / "slow-tests.txt"
    listed.write_text("# header\ntests/test_a.py::test_heavy  # 30.0 s\ntests/test_b.py::test_other  # 20.0 s\n")
    monkeypatch.setattr(slow_marks, "SLOW_LIST", listed)
    return listed


def test_a_partial_measurement_is_refused_and_the_list_kept(tmp_path, slow_list, capsys):
    before = slow_list.read_text()
    partial = _measure(tmp_path / "cpu.csv", [("tests/test_b.py::test_other[1]", 0.1), ("tests/test_c.py::test_x", 0.2)])
    assert slow_marks.main([str(partial), "--budget", "10"]) == 2
    assert "does not measure 1 of the 2 functions listed" in capsys.readouterr().err
    assert slow_list.read_text() == before
    assert slow_marks.main([str(_measure(tmp_path / "empty.csv", [])), "--budget", "10"]) == 2
    assert slow_list.read_text() == before


def test_merge_keeps_the_unmeasured_entries_and_decides_the_measured(tmp_path, slow_list):
    partial = _measure(tmp_path / "cpu.csv", [("tests/test_b.py::test_other[1]", 0.1), ("tests/test_c.py::test_x", 12.0)])
    assert slow_marks.main([str(partial), "--budget", "10", "--merge"]) == 0
    entries = [line.split("#")[0].strip() for line in slow_list.read_text().splitlines() if not line.startswith("#")]
    # test_heavy kept (not measured), test_x listed (12 s over the budget), test_other now fast
    assert entries == ["tests/test_a.py::test_heavy", "tests/test_c.py::test_x"]


def test_a_whole_measurement_rewrites_the_list(tmp_path, slow_list):
    whole = _measure(tmp_path / "cpu.csv", [("tests/test_a.py::test_heavy", 1.0), ("tests/test_b.py::test_other", 30.0)])
    assert slow_marks.main([str(whole), "--budget", "5"]) == 0
    entries = [line.split("#")[0].strip() for line in slow_list.read_text().splitlines() if not line.startswith("#")]
    assert entries == ["tests/test_b.py::test_other"]
