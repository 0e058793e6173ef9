"""GBRFF paper figures: the synthetic sets as the reference code makes them, the fitted slope, and
both figures drawn from small JSON inputs (headless)."""

import json

import numpy as np
import pytest

from rfbench.errors import UsageError
from rfbench.reporting.figures_gbrff import (
    fitted_slope,
    load_surfaces,
    make_toy,
    mesh_of,
    plot_scaling,
    plot_toys,
    read_json,
    save_surfaces,
    toy_fit,
)


def test_synthetic_sets():
    X, y = make_toy("board", 400, 0)
    assert X.shape == (400, 2) and X.min() >= 0 and X.max() < 4
    np.testing.assert_array_equal(y == -1, (np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2 == 0)
    X, y = make_toy("circles", 400, 0)
    radius = np.hypot(X[:, 0], X[:, 1])
    for i, r in enumerate((1, 2, 3, 4)):                     # 100 points per circle, classes alternate
        part = slice(100 * i, 100 * (i + 1))
        assert abs(np.median(radius[part]) - r) < 0.1 * r and set(y[part]) == {-1 if i % 2 == 0 else 1}
    X, y = make_toy("swiss", 401, 0)
    assert X.shape == (400, 2) and (y == 1).sum() == 200
    t = np.hypot(X[:200, 0], X[:200, 1])                     # |(t cos t, t sin t)| = t ∈ [1.5π, 4.5π] + noise
    assert t.min() > 1.5 * np.pi - 2 and t.max() < 4.5 * np.pi + 2
    np.testing.assert_array_equal(make_toy("swiss", 50, 3)[0], make_toy("swiss", 50, 3)[0])
    with pytest.raises(UsageError, match="unknown synthetic set"):
        make_toy("moons", 10, 0)
    xx, yy = mesh_of(np.array([[0.0, 0.0], [1.0, 0.5]]))
    assert xx.shape == (4, 6) and yy[-1, 0] >= 0.5


def test_fitted_slope():
    pts = [{"m": m, "seconds": 1e-3 * m ** 1.5} for m in (100, 1000, 3000, 9000)]
    assert fitted_slope(pts, 1000) == (pytest.approx(1.5), 1000)
    assert fitted_slope(pts, 5000) == (pytest.approx(1.5), 1000)   # too few above: the last three
    assert fitted_slope(pts[:2], 10) == (None, None)


def test_figures_are_written(tmp_path):
    data = {"limit_s": 30, "methods": {
        "gbrff2": {"points": [{"m": m, "seconds": 1e-4 * m} for m in (150, 1500, 15000)]},
        "bmkr": {"points": [{"m": m, "seconds": 1e-5 * m ** 2} for m in (150, 500, 1500)]}}}
    lines = plot_scaling(data, tmp_path / "fig4.png")
    assert (tmp_path / "fig4.png").stat().st_size > 10_000 and (tmp_path / "fig4.pdf").is_file()
    assert any("BMKR" in line and "slope 2.00" in line for line in lines)
    with pytest.raises(UsageError, match="no measured method"):
        plot_scaling({"methods": {}}, tmp_path / "x.png")
    r = toy_fit("board", 60, 0, "gbrff2", n_iter=3, with_surface=True)
    assert 0 <= r["test_acc"] <= 100 and r["surface"]["Z"].shape == r["surface"]["xx"].shape
    surf = dict(r["surface"], n=60)
    surf["gbrff2"] = {"Z": surf.pop("Z"), "train_acc": r["train_acc"], "test_acc": r["test_acc"]}
    save_surfaces(tmp_path / "s.npz", {"board": surf})
    back = load_surfaces(tmp_path / "s.npz")
    assert back["board"]["n"] == 60 and back["board"]["gbrff2"]["test_acc"] == pytest.approx(r["test_acc"])
    for k in ("xx", "yy", "X_train"):                       # coordinates round-trip (float32), labels too
        np.testing.assert_allclose(back["board"][k], surf[k], rtol=1e-6)
    np.testing.assert_array_equal(back["board"]["y_test"], surf["y_test"])
    plot_toys({"curve": [dict(r, surface=None, iterations=3)]}, back, tmp_path / "fig5.png")
    assert (tmp_path / "fig5.png").stat().st_size > 10_000
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(UsageError, match="not valid JSON"):
        read_json(tmp_path / "bad.json", "x")
    with pytest.raises(UsageError, match="not found"):
        read_json(tmp_path / "none.json", "toy results")
    json.dumps(r["params"])
