"""bench/analysis/alc_cv_gap.py: à la carte's test error against the inner-CV error its search reached,
in the records' own metric (the torgo tables' RMSE × 100 of range-one outputs; the UCI splits' RMSE on
the target as stored, converted from the standardised target the estimator saw)."""

import json

import pandas as pd
import pytest

from tests.bench_scripts import bench_script


def records(metric, cv_mse, errors, dataset="d"):
    return pd.DataFrame([{"dataset": dataset, "method": "alc-q1", "n_features": 100, "fold": f, "status": "done",
                          "metric": metric, "error": e, "params": json.dumps({"cv_mse": c})}
                         for f, (c, e) in enumerate(zip(cv_mse, errors, strict=True))])


def test_the_gap_in_the_scaled_outputs_unit():
    gap = bench_script("alc_cv_gap", "analysis")
    (row,) = gap.gaps(records("rmse100", [0.01, 0.04], [12.0, 25.0])).to_dict("records")
    assert row["cv_rmse100"] == pytest.approx(15.0) and row["test_rmse100"] == pytest.approx(18.5)
    assert row["gap"] == pytest.approx(3.5) and row["gap_rank"] == 1 and "gap_share" not in row


def test_the_gap_on_the_target_as_stored_uses_each_split_s_scale(monkeypatch):
    gap = bench_script("alc_cv_gap", "analysis")
    monkeypatch.setattr(gap, "target_unit", lambda dataset, split: {0: 2.0, 1: 4.0}[split])
    both = pd.concat([records("rmse", [0.25, 0.25], [3.0, 5.0]), records("rmse", [0.01, 0.01], [1.0, 1.0], "e")])
    rows = {r["dataset"]: r for r in gap.gaps(both).to_dict("records")}
    # √0.25 = 0.5 standardised: 1.0 and 2.0 on the stored target's scale of each split
    assert rows["d"]["cv_rmse"] == pytest.approx(1.5) and rows["d"]["gap"] == pytest.approx(2.5)
    assert rows["d"]["gap_share"] == pytest.approx(2.5 / 4.0)
    assert rows["e"]["cv_rmse"] == pytest.approx(0.3) and rows["e"]["gap_share"] == pytest.approx(0.7)
    assert rows["e"]["gap_rank"] == 1 and rows["d"]["gap_rank"] == 2      # ranked by share, not unit


def test_one_metric_per_file():
    gap = bench_script("alc_cv_gap", "analysis")
    mixed = pd.concat([records("rmse100", [0.01], [1.0]), records("rmse", [0.01], [1.0], "e")])
    with pytest.raises(SystemExit, match="one of rmse100, rmse is needed"):
        gap.gaps(mixed)
