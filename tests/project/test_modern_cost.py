"""bench/perf/modern_cost.py: the papers' rows' seconds from the suite benchmark and the table's ratios."""

import json

import pandas as pd
import pytest

from tests.bench_scripts import bench_script


def test_a_shared_fit_is_split_by_n_and_the_cpu_seconds_are_preferred(tmp_path):
    cost = bench_script("modern_cost")
    rows = [{"dataset": "kinematics", "method": "gbrff", "budgets": [100, 500], "seconds": 60.0, "cpu_seconds": 30.0,
             "status": ["done"]},
            {"dataset": "kinematics", "method": "rff-gauss", "budgets": [100], "seconds": 2.0, "status": ["done"]},
            {"dataset": "bank", "method": "rff-gauss", "budgets": [100], "seconds": 9.0, "status": ["timeout"]}]
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"current": "now", "labels": {"now": {"rows": rows}}}))
    got = cost.papers_seconds(path).set_index(["method", "n"])["seconds"]
    # gbrff's one boosting run serves both budgets: 30 CPU seconds split 1:5; rff-gauss has no cpu_seconds
    assert got.to_dict() == pytest.approx({("gbrff", 100): 5.0, ("gbrff", 500): 25.0, ("rff-gauss", 100): 2.0})
    table = pd.DataFrame([("kinematics", "rff-gauss", 100, 2.0), ("bank", "rff-gauss", 100, 4.0),
                          ("kinematics", "falkon", 100, 9.0), ("bank", "falkon", 100, 30.0)],
                         columns=["dataset", "method", "n", "seconds"])
    s = cost.summary(table).set_index("method")
    assert s.loc["falkon", "median"] == 19.5 and s.loc["falkon", "largest"] == 30.0 and s.loc["falkon", "sets"] == 2
    assert s.loc["falkon", "vs_rff_gauss"] == pytest.approx(19.5 / 3.0)
