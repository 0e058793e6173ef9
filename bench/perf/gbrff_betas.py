"""GBRFF1's inner CV: its five β fitted together (the cosines' angles' cos and sin once per step,
``fit_gbrff1_betas``) against one at a time (the former path, ``_GBRFFBase._fit_models``).

For each shape (rows × inputs, synthetic data: the time depends on the shape only), one inner fold's
25 (g, β) models of GBRFF1-R (regression, the UCI suite's) and GBRFF1 (classification, the torgo
tables') at ``--steps`` boosting steps, both ways, alternating ``--repeats`` times on one thread:
CPU seconds of each (the median), their ratio, and whether every model's predictions are the same
bits both ways. Writes ``results/gbrff-betas.json``.

    python bench/perf/gbrff_betas.py [--shapes 1000x10,4000x20] [--steps 100] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from rfbench.methods.gbrff import GBRFF1Classifier, GBRFF1Regressor, _GBRFFBase
from rfbench.store import atomic_write_text

OUT = Path(__file__).resolve().parents[2] / "results" / "gbrff-betas.json"


def one_fold(est, X, y, steps, together: bool):
    """(CPU seconds, [(index, predictions on X)]) of the 25 models of one inner fold."""
    combos = est._grid()
    fit = est._fit_models if together else (lambda *a: _GBRFFBase._fit_models(est, *a))
    t0 = time.process_time()
    models = sorted(fit(X, y, combos, steps, 12345), key=lambda im: im[0])
    cpu = time.process_time() - t0
    return cpu, [m.decision(X) for _, m in models]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", default="1000x10,4000x20")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rows_out = []
    for shape in args.shapes.split(","):
        m, d = (int(v) for v in shape.lower().split("x"))
        rng = np.random.default_rng(0)
        X = rng.standard_normal((m, d))
        y_reg = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.standard_normal(m)
        y_reg = (y_reg - y_reg.mean()) / y_reg.std()
        y_cls = np.where(X[:, 0] * X[:, 1] > 0, 1.0, -1.0)
        for name, est, y in (("gbrff1 regression", GBRFF1Regressor(), y_reg),
                             ("gbrff1 classification", GBRFF1Classifier(), y_cls)):
            times = {False: [], True: []}
            same = True
            with threadpool_limits(limits=1):
                for _ in range(args.repeats):
                    ref = None
                    for together in (False, True):
                        cpu, preds = one_fold(est, X, y, args.steps, together)
                        times[together].append(cpu)
                        if ref is None:
                            ref = preds
                        else:
                            same &= all(np.array_equal(a, b) for a, b in zip(ref, preds, strict=True))
            row = {"method": name, "rows": m, "inputs": d, "steps": args.steps, "models": len(est._grid()),
                   "one_at_a_time_cpu_s": float(np.median(times[False])),
                   "together_cpu_s": float(np.median(times[True])),
                   "identical": bool(same)}
            row["ratio"] = row["one_at_a_time_cpu_s"] / row["together_cpu_s"]
            rows_out.append(row)
            print(f"{name:24s} {m:6d} x {d:3d}: one at a time {row['one_at_a_time_cpu_s']:7.2f} s, together "
                  f"{row['together_cpu_s']:7.2f} s of CPU ({row['ratio']:.2f}x), identical: {same}", flush=True)
    doc = {"machine": f"{platform.node() or 'this machine'}: {platform.processor() or platform.machine()}, one thread",
           "repeats": args.repeats, "rows": rows_out}
    atomic_write_text(args.out, json.dumps(doc, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
