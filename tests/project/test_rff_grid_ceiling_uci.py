"""bench/analysis/rff_grid_ceiling_uci.py: which sets the grid's ceiling binds on, and that the extended
grid keeps the paper's ten values (so a refit can only move where the CV prefers a σ above 100)."""

import json

import numpy as np
import pandas as pd
import pytest

from rfbench.methods.rff import DEFAULT_BANDWIDTHS
from tests.bench_scripts import bench_script


def records(dataset, sigmas, method="rff-gauss", n=100, status="done"):
    return pd.DataFrame([{"dataset": dataset, "method": method, "n_features": n, "fold": f, "status": status,
                          "params": json.dumps({"bandwidth": s})} for f, s in enumerate(sigmas)])


def test_the_sets_where_the_top_is_chosen_often_enough_most_often_first():
    study = bench_script("rff_grid_ceiling_uci", "analysis")
    top = float(DEFAULT_BANDWIDTHS.max())
    results = pd.concat([records("a", [top, top, 1.0, 1.0]), records("b", [top, top, top, 1.0]),
                         records("c", [1.0] * 4), records("d", [top] * 4, method="rff-laplace"),
                         records("e", [top] * 4, n=500), records("f", [top] * 4, status="error")])
    assert study.ceiling_sets(results, "rff-gauss", 0.5) == ["b", "a"]
    assert study.ceiling_sets(results, "rff-gauss", 0.7) == ["b"]
    assert study.ceiling_sets(results, "rff-laplace", 0.7) == ["d"]


def test_the_extended_grid_holds_the_paper_s_grid_and_goes_above_it():
    study = bench_script("rff_grid_ceiling_uci", "analysis")
    assert np.isin(DEFAULT_BANDWIDTHS, study.EXTENDED).all()
    above = study.EXTENDED[study.EXTENDED > study.CEILING]
    assert above.size > 0 and above.max() == pytest.approx(1e5)
