"""Which methods' numbers change with the number of BLAS threads (issue 46 item 5): every built-in
method fitted twice on the same small problem, under 1 and 2 threads (threadpoolctl's limit and the
estimator's ``n_jobs``), and its predictions compared bit for bit.

    python bench/perf/thread_invariance.py [--output results/thread-invariance.json]

A regression problem (300 rows, 6 inputs, n = 20 features) for the regressors, a two-class one for
the methods that only classify. A method whose predictions differ is marked ``thread_sensitive:
true`` in methods.yaml, and the runner refuses to complete one of its cells with another thread
count than its finished tasks used (rfbench.execution.runner.refuse_thread_mixing).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

ROOT = Path(__file__).resolve().parents[2]


def predictions(cls, params: dict, X, y, X_test, threads: int):
    with threadpool_limits(threads):
        est = cls(n_features=20, cv=5, random_state=0, n_jobs=threads, **params).fit(X, y)
        return np.asarray(est.predict(X_test), dtype=np.float64)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--output", type=Path, default=ROOT / "results" / "thread-invariance.json")
    ap.add_argument("--methods", default=None, help="only these methods (comma-separated); their rows replace "
                    "theirs in the output, the others' are kept")
    args = ap.parse_args(argv)
    from rfbench import registry

    warnings.filterwarnings("ignore")
    reg = registry.load()
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    X_test = rng.normal(size=(100, 6))
    y_reg = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=300)
    y_cls = (X[:, 0] * X[:, 1] + 0.3 * rng.normal(size=300) > 0).astype(int)
    rows = []
    only = set(args.methods.split(",")) if args.methods else None
    kept = []
    if only and args.output.is_file():
        kept = [r for r in json.loads(args.output.read_text())["rows"] if r["method"] not in only]
    for name, method in sorted(reg.methods.items()):
        if only and name not in only:
            continue
        task = "regression" if method.supports("regression") else "classification"
        row = {"method": name, "task": task, "declared_thread_sensitive": method.thread_sensitive}
        try:
            cls = method.estimator_class(task)
            y = y_reg if task == "regression" else y_cls
            p1, p2 = (predictions(cls, method.params_for("x"), X, y, X_test, t) for t in (1, 2))
            diff = float(np.max(np.abs(p1 - p2)))
            row.update(status="done", max_abs_difference=diff, thread_sensitive=diff != 0.0)
        except Exception as exc:  # noqa: BLE001 - a method that cannot run here (a missing extra) is said so
            row.update(status="error", message=f"{type(exc).__name__}: {exc}"[:200])
        rows.append(row)
        print(json.dumps(row), flush=True)
    rows = sorted(kept + rows, key=lambda r: r["method"])
    disagree = [r["method"] for r in rows if r.get("status") == "done"
                and r["thread_sensitive"] != r["declared_thread_sensitive"]]
    out = {"what": __doc__.splitlines()[0], "rows": rows, "registry_disagrees": disagree}
    args.output.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.output}; methods whose methods.yaml flag disagrees with the measurement: "
          f"{', '.join(disagree) or 'none'}")
    return 1 if disagree else 0


if __name__ == "__main__":
    sys.exit(main())
