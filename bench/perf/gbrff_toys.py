"""GBRFF paper §4.6 / Fig. 5: LightGBM and GBRFF2 on the swiss, circles and board sets.

Both run 1000 iterations with their hyper-parameters chosen by 5-fold CV on the training half (the
paper's grids: LightGBM max_depth 1..10 × reg_lambda {0, 2^-5..2^-2}; GBRFF2 g 2^-2..2^2 × λ {0,
2^-5..2^-2}); each set of n examples is split 50/50 (stratified). The sets are generated as the GBRFF
reference code does (rfbench/reporting/figures_gbrff.py). Every (set, n, seed, method) is one point of the
accuracy-against-examples row; the n = SURFACE_N fit of the first seed also gives the decision surface.

Writes ``results/gbrff-toys.json`` (accuracies, chosen parameters, seconds; resumable),
``results/gbrff-toys-surfaces.npz`` (the surfaces) and ``results/gbrff-fig5-toys.png`` (and .pdf).
The paper's row goes from 50 to 2000 examples in steps of 50 over several seeds; the default here is
n ∈ {50, 100, 200, 400} and one seed (one core; about 15 core-minutes).

    python bench/perf/gbrff_toys.py [--sizes 50,100,200,400] [--seeds 1] [--iterations 1000]
    python bench/perf/gbrff_toys.py --plot-only
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from threadpoolctl import threadpool_limits

from rfbench.errors import UsageError
from rfbench.reporting.figures_gbrff import (
    SURFACE_N,
    TOY_SETS,
    load_surfaces,
    plot_toys,
    read_json,
    save_surfaces,
    toy_fit,
)
from rfbench.store import atomic_write_text

RESULTS = Path(__file__).resolve().parents[2] / "results"


def _ints(text: str, what: str, least: int) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise SystemExit(f"error: --{what} must be comma-separated integers, got {text!r}") from None
    if not values or min(values) < least:
        raise SystemExit(f"error: --{what} needs values of at least {least}, got {text!r}")
    return values


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="50,100,200,400")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--out", default=str(RESULTS / "gbrff-toys.json"))
    ap.add_argument("--surface-n", type=int, default=SURFACE_N, help="examples of the decision-surface panels")
    ap.add_argument("--plot-only", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    surf_path = out.with_name(out.stem + "-surfaces.npz")
    fig_path = out.with_name("gbrff-fig5-toys.png") if out.parent == RESULTS else out.with_suffix(".png")
    try:
        if not args.plot_only:
            # 5 folds of a stratified half need at least 5 points of each class: n ≥ 20 of 2 classes
            run(out, surf_path, _ints(args.sizes, "sizes", 20), _ints(args.seeds, "seeds", 0), args.iterations,
                args.surface_n)
        plot_toys(read_json(out, "toy results"), load_surfaces(surf_path), fig_path)
    except UsageError as exc:
        raise SystemExit(f"error: {exc}") from None
    print(f"wrote {fig_path}")


def run(out: Path, surf_path: Path, sizes: list[int], seeds: list[int], n_iter: int, surface_n: int = SURFACE_N) -> None:
    state = json.loads(out.read_text()) if out.exists() else {}
    state["setting"] = (f"{n_iter} iterations; 50/50 stratified split; 5-fold CV on the paper's grids; "
                        f"surfaces at n = {surface_n}, first seed; one thread")
    curve = state.setdefault("curve", [])
    surfaces = load_surfaces(surf_path)
    # GBRFF2 first ran on standardised inputs: those points are measured again on raw coordinates
    curve[:] = [r for r in curve if r["method"] != "gbrff2" or r.get("standardize") is False]
    for s in surfaces.values():
        if s.get("gbrff2", {}).get("standardize", True):
            del s["gbrff2"]
    done = {(r["dataset"], r["n"], r["seed"], r["method"]) for r in curve if r.get("iterations") == n_iter}
    if surface_n not in sizes:
        sizes = sorted([*sizes, surface_n])
    for n in sizes:
        for name in TOY_SETS:
            for seed in seeds:
                for method in ("gbrff2", "lgbm"):
                    want_surface = n == surface_n and seed == seeds[0] and method not in surfaces.get(name, {})
                    if (name, n, seed, method) in done and not want_surface:
                        continue
                    t0 = time.perf_counter()
                    with threadpool_limits(limits=1):
                        r = toy_fit(name, n, seed, method, n_iter=n_iter, with_surface=want_surface)
                    r["seconds"], r["iterations"] = time.perf_counter() - t0, n_iter
                    if method == "gbrff2":
                        r["standardize"] = False
                    surface = r.pop("surface", None)
                    if surface is not None:
                        s = surfaces.setdefault(name, {})
                        s.update({k: v for k, v in surface.items() if k != "Z"}, n=n)
                        s[method] = {"Z": surface["Z"], "train_acc": r["train_acc"], "test_acc": r["test_acc"],
                                     "standardize": False}
                        save_surfaces(surf_path, surfaces)
                    curve[:] = [c for c in curve if (c["dataset"], c["n"], c["seed"], c["method"], c.get("iterations"))
                                != (name, n, seed, method, n_iter)] + [r]
                    atomic_write_text(out, json.dumps(state, indent=1) + "\n")
                    print(f"{name:8s} n={n:5d} seed={seed} {method:6s} train {r['train_acc']:5.1f} "
                          f"test {r['test_acc']:5.1f}  {r['seconds']:.1f} s  {r['params']}", flush=True)


if __name__ == "__main__":
    main()
