"""The GBRFF paper's figures 4 and 5 (Gautheron et al., ECML 2020, §4.4 and §4.6), drawn from JSON.

* Fig. 4: fit + predict time against the number of samples m for the six classification methods of
  Table 2, log-log, with the slope of log t against log m (bench/perf/gbrff_scaling.py measures it).
* Fig. 5: LightGBM and GBRFF2 (1000 iterations, hyper-parameters by 5-fold CV on the paper's grids)
  on three 2-D synthetic sets: decision surfaces with train/test accuracy, and test accuracy against
  the number of examples (bench/perf/gbrff_toys.py runs it).

The synthetic sets follow the GBRFF reference code's toy experiment (the paper only names them):

* swiss: two spirals of n/2 points, t = 1.5π(1 + 2u), u ~ U[0, 1], (t cos t, t sin t) for class −1 and
  0.9·(t cos t, t sin t) for class +1, plus N(0, 0.4²) noise on both coordinates;
* circles: four circles of n/4 points at equally spaced angles, radii 1, 2, 3, 4, N(0, 0.07²) noise on
  cos and sin before the radius scaling, classes alternating from −1 (the inner circle);
* board: n points uniform on [0, 4]², class −1 where ⌊x₁⌋ + ⌊x₂⌋ is even (a 4 × 4 checkerboard).

Each set is split 50/50 (stratified); the decision surface is evaluated on a grid of step 0.2 over the
data's bounding box, as in the reference code. GBRFF2 sees the raw coordinates (the reference toy
script applies no scaler; docs/history/gbrff.md has swiss on standardised inputs).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rfbench.errors import UsageError

#: the paper's six classification methods, in its Table 2 order, with the plot's colours
FIG4_METHODS = {"bmkr": ("BMKR", "#9467bd"), "gfc-gbrff": ("GFC", "#8c564b"), "pbrff": ("PBRFF", "#ff7f0e"),
                "gbrff1": ("GBRFF1", "#1f77b4"), "lgbm": ("LGBM", "#7f7f7f"), "gbrff2": ("GBRFF2", "#2ca02c")}
TOY_SETS = ("swiss", "circles", "board")
MESH_STEP = 0.2


# ------------------------------------------------------------------ synthetic sets (Fig. 5)
def make_swiss(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    half = n // 2
    parts = []
    for scale in (1.0, 0.9):
        t = 1.5 * np.pi * (1 + 2 * rng.uniform(0, 1, half))
        parts.append(scale * np.column_stack([t * np.cos(t), t * np.sin(t)]) + 0.4 * rng.standard_normal((half, 2)))
    return np.vstack(parts), np.repeat([-1, 1], half)


def make_circles(n: int, rng: np.random.Generator, n_circles: int = 4, noise: float = 0.07):
    per = n // n_circles
    angles = np.linspace(0, 2 * np.pi, per, endpoint=False)
    X, y = [], []
    for i in range(n_circles):
        unit = np.column_stack([np.cos(angles) + rng.normal(0, noise, per), np.sin(angles) + rng.normal(0, noise, per)])
        X.append((i + 1) * unit)
        y.append(np.full(per, -1 if i % 2 == 0 else 1))
    return np.vstack(X), np.concatenate(y)


def make_board(n: int, rng: np.random.Generator, cells: int = 4):
    X = rng.uniform(0, cells, (n, 2))
    y = np.where((np.floor(X[:, 0]) + np.floor(X[:, 1])) % 2 == 0, -1, 1)
    return X, y


def make_toy(name: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    makers = {"swiss": make_swiss, "circles": make_circles, "board": make_board}
    if name not in makers:
        raise UsageError(f"unknown synthetic set {name!r}; known: {', '.join(makers)}")
    return makers[name](int(n), np.random.default_rng(seed))


def mesh_of(X: np.ndarray, step: float = MESH_STEP) -> tuple[np.ndarray, np.ndarray]:
    """The evaluation grid over the data's bounding box (xx, yy as np.meshgrid)."""
    return np.meshgrid(np.arange(X[:, 0].min(), X[:, 0].max() + step, step),
                       np.arange(X[:, 1].min(), X[:, 1].max() + step, step))


# ------------------------------------------------------------------ reading the JSON
def read_json(path: Path, what: str) -> dict:
    path = Path(path)
    if not path.is_file():
        raise UsageError(f"{what} not found: {path} (run its bench/perf script first)")
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path} is not valid JSON ({exc})") from None


def fitted_slope(points: list[dict], m_from: int, at_least: int = 3) -> tuple[float | None, int | None]:
    """(slope of log t against log m, smallest m used): over the points with m ≥ ``m_from``, or when
    fewer than ``at_least`` of them, over the last ``at_least`` points (a method stopped early by the
    time limit); None when the method has fewer points than that."""
    pts = sorted((p["m"], p["seconds"]) for p in points)
    use = [p for p in pts if p[0] >= m_from]
    if len(use) < at_least:
        use = pts[-at_least:]
    if len(use) < at_least:
        return None, None
    m, t = np.log([p[0] for p in use]), np.log([p[1] for p in use])
    return float(np.polyfit(m, t, 1)[0]), int(use[0][0])


# ------------------------------------------------------------------ Fig. 4
def plot_scaling(data: dict, out: Path, m_from: int = 2000) -> list[str]:
    """Fig. 4 as PNG (and PDF beside it): log-log time against m, one line per method, the fitted
    slope in the legend. Returns one line per method (name, points, largest m, slope)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = data.get("methods") or {}
    if not methods:
        raise UsageError("the scaling JSON has no measured method yet")
    fig, ax = plt.subplots(figsize=(7.5, 5.0))
    lines = []
    for name in [m for m in FIG4_METHODS if m in methods] + [m for m in methods if m not in FIG4_METHODS]:
        points = sorted(methods[name].get("points") or [], key=lambda p: p["m"])
        if not points:
            continue
        label, colour = FIG4_METHODS.get(name, (name, None))
        s, m0 = fitted_slope(points, m_from)
        slope_txt = f"slope {s:.2f} (m ≥ {m0})" if s is not None else "too few points"
        ax.plot([p["m"] for p in points], [p["seconds"] for p in points], "o-", ms=3.5, color=colour,
                label=f"{label}: {slope_txt}")
        lines.append(f"{label:7s} {len(points):2d} points, largest m {points[-1]['m']:>7d} "
                     f"({points[-1]['seconds']:.1f} s), {slope_txt}")
    limit = data.get("limit_s")
    if limit:
        ax.axhline(limit, color="0.6", lw=0.8, ls=":")
        ax.annotate(f"time limit {limit:g} s (the paper: 1000 s)", (0.99, limit), xycoords=("axes fraction", "data"),
                    xytext=(0, 3), textcoords="offset points", ha="right", fontsize=8, color="0.4")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of samples m (make_classification, 150 × 1.5^k)")
    ax.set_ylabel("fit + predict time on all m (CPU s, one thread)")
    ax.set_title("GBRFF paper Fig. 4 (§4.4): time against m, fixed hyper-parameters, 100 iterations", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    fig.savefig(out.with_suffix(".pdf"))
    plt.close(fig)
    return lines


# ------------------------------------------------------------------ Fig. 5
def plot_toys(data: dict, surfaces: dict, out: Path) -> None:
    """Fig. 5 as PNG (and PDF): rows LightGBM and GBRFF2 with their decision surfaces (white: the
    boundary, dots: training points, crosses: test points) and train/test accuracy, then a row of
    test accuracy against the number of examples (mean ± std over the seeds run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    algos = [("lgbm", "LightGBM"), ("gbrff2", "GBRFF2")]
    fig, axes = plt.subplots(3, len(TOY_SETS), figsize=(4.2 * len(TOY_SETS), 12.5))
    points = ListedColormap(["#3C4EC2", "#B50927"])
    for j, name in enumerate(TOY_SETS):
        surf = surfaces.get(name)
        for i, (key, label) in enumerate(algos):
            ax = axes[i, j]
            ax.set_xticks([])
            ax.set_yticks([])
            if surf is None or key not in surf:
                ax.text(0.5, 0.5, "not run", ha="center", va="center", transform=ax.transAxes)
                continue
            s = surf[key]
            Z = np.asarray(s["Z"])
            top = float(np.max(np.abs(Z))) or 1.0
            filled = ax.contourf(surf["xx"], surf["yy"], Z, levels=np.linspace(-top, top, 21), cmap="coolwarm", zorder=0)
            filled.set_rasterized(True)  # a vector PDF of the filled contours is 1.2 MB
            ax.contour(surf["xx"], surf["yy"], Z, [0.0], colors="white", linewidths=2, zorder=1)
            ax.scatter(surf["X_train"][:, 0], surf["X_train"][:, 1], c=surf["y_train"], cmap=points, s=16,
                       edgecolor="k", linewidth=0.4, marker="o", zorder=2)
            ax.scatter(surf["X_test"][:, 0], surf["X_test"][:, 1], c=surf["y_test"], cmap=points, s=22,
                       edgecolor="k", linewidth=0.4, marker="P", zorder=2)
            title = f"{name}, {surf['n']} examples\n" if i == 0 else ""
            ax.set_title(f"{title}{label}: train {s['train_acc']:.1f}%, test {s['test_acc']:.1f}%", fontsize=10)
        ax = axes[2, j]
        rows = [r for r in data.get("curve", []) if r["dataset"] == name]
        for key, label in algos:
            by_n: dict[int, list] = {}
            for r in rows:
                if r["method"] == key:
                    by_n.setdefault(int(r["n"]), []).append(float(r["test_acc"]))
            if not by_n:
                continue
            ns = sorted(by_n)
            mean = np.array([np.mean(by_n[n]) for n in ns])
            std = np.array([np.std(by_n[n]) for n in ns])
            line, = ax.plot(ns, mean, "o-" if key == "gbrff2" else "s--", ms=3.5, lw=2,
                            color="#2ca02c" if key == "gbrff2" else "#8c564b", label=label)
            ax.fill_between(ns, mean - std, mean + std, color=line.get_color(), alpha=0.2)
        seeds = sorted({r["seed"] for r in rows})
        ax.set_title(f"{name}: test accuracy ({len(seeds)} seed{'s' if len(seeds) != 1 else ''})", fontsize=10)
        ax.set_xlabel("number of examples (half for training)")
        if j == 0:
            ax.set_ylabel("test accuracy (%)")
        ax.grid(True, alpha=0.3)
        if rows:
            ax.legend(fontsize=8, loc="lower right")
    iters = sorted({int(r.get("iterations", 0)) for r in data.get("curve", [])})
    fig.suptitle(f"GBRFF paper Fig. 5 (§4.6): LightGBM and GBRFF2, {'/'.join(map(str, iters)) or '?'} iterations, "
                 "hyper-parameters by 5-fold CV; dots: training half, crosses: test half", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    fig.savefig(out.with_suffix(".pdf"), dpi=100)
    plt.close(fig)


def toy_fit(name: str, n: int, seed: int, method: str, n_iter: int = 1000, folds: int = 5, with_surface: bool = False):
    """One (set, n, seed, method) of Fig. 5: the 50/50 stratified split, CV on the training half,
    train and test accuracy in %, and the decision surface on the mesh when asked."""
    from sklearn.model_selection import StratifiedKFold, train_test_split

    from rfbench.methods.gbrff import GBRFF2Classifier
    from rfbench.methods.lgbm import LGBMClassifierCV

    X, y = make_toy(name, n, seed)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.5, stratify=y, shuffle=True, random_state=seed)
    cv = list(StratifiedKFold(folds, shuffle=True, random_state=seed).split(Xtr, ytr))
    if method == "gbrff2":
        # raw coordinates, as the reference toy script (no scaler there): γ = g/d on the sets' own scale
        clf = GBRFF2Classifier(n_features=n_iter, cv=cv, random_state=seed, n_jobs=1, standardize=False).fit(Xtr, ytr)
        score = clf.decision_function
    elif method == "lgbm":
        clf = LGBMClassifierCV(n_features=n_iter, cv=cv, random_state=seed, n_jobs=1).fit(Xtr, ytr)
        model = clf.models_[clf.budget_model_[n_iter]]

        def score(Z):  # P(+1) − ½ in [−½, ½]: the boundary at 0 as GBRFF2's
            return model.predict_proba(Z)[:, 1] - 0.5
    else:
        raise UsageError(f"Fig. 5 runs lgbm and gbrff2, not {method!r}")
    out = {"dataset": name, "n": int(n), "seed": int(seed), "method": method,
           "train_acc": 100 * float(np.mean(clf.predict(Xtr) == ytr)),
           "test_acc": 100 * float(np.mean(clf.predict(Xte) == yte)),
           "params": {k: v for k, v in clf.best_params_.items() if isinstance(v, (int, float, str))}}
    if with_surface:
        xx, yy = mesh_of(X)
        out["surface"] = {"xx": xx, "yy": yy, "Z": score(np.column_stack([xx.ravel(), yy.ravel()])).reshape(xx.shape),
                          "X_train": Xtr, "y_train": ytr, "X_test": Xte, "y_test": yte}
    return out


def save_surfaces(path: Path, surfaces: dict) -> None:
    """Decision surfaces as one compressed npz: keys '<set>/<field>' and '<set>/<method>/Z'."""
    arrays = {}
    for name, s in surfaces.items():
        for k in ("xx", "yy", "X_train", "y_train", "X_test", "y_test"):
            arrays[f"{name}/{k}"] = np.asarray(s[k], dtype=np.int8 if k.startswith("y_") else np.float32)
        arrays[f"{name}/n"] = np.array(s["n"])
        for m in ("lgbm", "gbrff2"):
            if m in s:
                arrays[f"{name}/{m}/Z"] = np.asarray(s[m]["Z"], dtype=np.float32)
                arrays[f"{name}/{m}/acc"] = np.array([s[m]["train_acc"], s[m]["test_acc"]])
                arrays[f"{name}/{m}/standardize"] = np.array(bool(s[m].get("standardize", True)))
    np.savez_compressed(path, **arrays)


def load_surfaces(path: Path) -> dict:
    path = Path(path)
    if not path.is_file():
        return {}
    out: dict = {}
    with np.load(path) as z:
        for key in z.files:
            parts = key.split("/")
            s = out.setdefault(parts[0], {})
            if len(parts) == 2:
                s[parts[1]] = int(z[key]) if parts[1] == "n" else z[key]
            elif parts[2] == "Z":
                s.setdefault(parts[1], {}).setdefault("standardize", True)   # files before the flag
                s[parts[1]]["Z"] = z[key]
            elif parts[2] == "standardize":
                s.setdefault(parts[1], {})["standardize"] = bool(z[key])
            else:
                acc = z[key]
                s.setdefault(parts[1], {}).update(train_acc=float(acc[0]), test_acc=float(acc[1]))
    return out


#: examples of each set's decision-surface panel (the reference plotting script shows the middle of
#: its run's sizes: 400 for swiss and circles, 250 for board by its comments; 400 for all three here)
SURFACE_N = 400


