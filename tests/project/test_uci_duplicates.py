"""bench/analysis/uci_duplicates.py: per published split, the test rows that are training rows (by
inputs, and by inputs and target) and the training rows with a copy among the training rows."""

import numpy as np
import pytest

from tests.bench_scripts import bench_script


def test_shares_by_hand():
    study = bench_script("uci_duplicates", "analysis")
    X = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
    y = np.array([1.0, 1.0, 9.0, 2.0, 3.0, 4.0])
    # split 0 tests rows 1 (a copy of row 0) and 2 (row 0's inputs, another target);
    # split 1 tests rows 3 and 5 (no copies), training on rows 0, 1, 2, 4
    masks = np.array([[0, 0], [1, 0], [1, 0], [0, 1], [0, 0], [0, 1]])
    shares = study.split_shares(X, y, masks).set_index("split")
    assert shares.loc[0, "test_inputs_in_train"] == 1.0
    assert shares.loc[0, "test_rows_in_train"] == 0.5
    assert shares.loc[0, "train_rows_duplicated"] == 0.0          # rows 0, 3, 4, 5 are distinct
    assert shares.loc[1, "test_inputs_in_train"] == 0.0 and shares.loc[1, "test_rows_in_train"] == 0.0
    assert shares.loc[1, "train_rows_duplicated"] == pytest.approx(2 / 4)   # rows 0 and 1


def test_without_the_mirror_one_line(tmp_path):
    study = bench_script("uci_duplicates", "analysis")
    with pytest.raises(SystemExit, match="no uci-splits/ in the dataset mirror"):
        study.main(["--data-dir", str(tmp_path), "--output", str(tmp_path / "out.json")])
