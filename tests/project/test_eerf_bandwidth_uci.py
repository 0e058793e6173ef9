"""bench/analysis/eerf_bandwidth_uci.py: EERF refit with another σ changes σ alone (the rule still
consumes the generator), and the facts of a training part that make a 50-NN distance small."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from rfbench import registry
from tests.bench_scripts import bench_script


def test_the_rule_s_own_sigma_given_back_reproduces_the_plain_fit(mirror_dir, monkeypatch):
    # skillcraft's 3 000 training rows exceed the rule's 2 000 query points, so the rule draws from
    # the generator: a replacement that skipped it would shift every later draw and change the error
    monkeypatch.setenv("RFBENCH_DATA_DIR", str(mirror_dir))
    study = bench_script("eerf_bandwidth_uci", "analysis")
    reg = registry.load()
    plain, chosen = study.fit_error("uci-skillcraft", "eerf", 0, reg)
    same, _ = study.eerf_with_sigma("uci-skillcraft", 0, chosen["sigma"], reg)
    other, _ = study.eerf_with_sigma("uci-skillcraft", 0, 4 * chosen["sigma"], reg)
    assert same == plain
    assert other != pytest.approx(plain, rel=1e-6)


def test_duplicated_rows_and_the_median_distance(monkeypatch):
    study = bench_script("eerf_bandwidth_uci", "analysis")
    X = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    monkeypatch.setattr(study, "fold_task", lambda *a, **k: SimpleNamespace(X_tr=X))
    facts = study.data_facts("d", 0, sigma=2.5, reg=None)
    # rows 0 and 1 are one row twice; pairwise distances 0, 5, 10, 5, 10, 5: median 5
    assert facts["duplicated_row_share"] == 0.5
    assert facts["median_distance"] == pytest.approx(5.0)
    assert facts["rule_sigma_over_median_distance"] == pytest.approx(0.5)


def test_a_missing_record_is_one_line():
    study = bench_script("eerf_bandwidth_uci", "analysis")
    results = pd.DataFrame([{"dataset": "d", "method": "eerf", "fold": 0, "n_features": 100, "status": "error"}])
    with pytest.raises(SystemExit, match="0 done records of eerf on d split 0"):
        study.recorded(results, "d", "eerf", 0)
