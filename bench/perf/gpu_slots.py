"""--device cuda on a real GPU: the GPU slots, the per-worker memory cap and the out-of-memory record.

Needs torch with a CUDA GPU. Writes a test estimator (a ``device`` parameter; its fit allocates
``--alloc-gib`` GiB of float64 on the device, holds it ``--fit-s`` seconds and notes when) and a CPU
twin, then runs ``rfbench run --device cuda`` twice:

1. ``--jobs 4 --gpu-slots 2``, 6 device and 6 CPU tasks: every task done, device records say
   ``cuda``, never more than 2 device fits at once, CPU fits beside them;
2. ``--gpu-slots 4`` with fits that allocate 0.3 of the GPU, more than the 0.9 / 4 each worker is
   capped to (without the cap they would fit, two workers being the only users): every device task is an
   error record "GPU out of memory: ...; lower --gpu-slots or the budget", the CPU tasks are done,
   the run exits 0.

Prints one JSON object (the checks and the timings) and exits 1 when a check fails:

    python bench/perf/gpu_slots.py
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MODULE = '''
import json
import os
import time

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin


class CpuTwin(RegressorMixin, BaseEstimator):
    kind = "cpu"

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1):
        self.n_features, self.cv, self.random_state, self.n_jobs = n_features, cv, random_state, n_jobs

    def _work(self):
        time.sleep(float(os.environ["FIT_S"]))
        return {}

    def fit(self, X, y):
        start = time.time()
        info = self._work()
        with open(os.path.join(os.environ["LOG"], "fits.jsonl"), "a") as fh:
            fh.write(json.dumps({"kind": self.kind, "pid": os.getpid(), "start": start, "end": time.time(),
                                 **info}) + "\\n")
        self.mean_ = float(np.mean(y))
        return self

    def predict(self, X):
        return np.full(len(X), self.mean_)


class OnDevice(CpuTwin):
    kind = "device"

    def __init__(self, n_features=10, cv=None, random_state=None, n_jobs=1, device="cpu"):
        super().__init__(n_features, cv, random_state, n_jobs)
        self.device = device

    def _work(self):
        import torch

        dev = torch.device(self.device)
        total = torch.cuda.get_device_properties(dev).total_memory
        block = torch.ones(int(float(os.environ["ALLOC_GIB"]) * 2**30 / 8), dtype=torch.float64, device=dev)
        torch.cuda.synchronize(dev)
        time.sleep(float(os.environ["FIT_S"]))
        info = {"allocated": torch.cuda.memory_allocated(dev), "total": total, "device": self.device,
                "sum_ok": bool(block[:10].sum().item() == 10.0)}
        del block
        return info
'''


def run(tmp: Path, name: str, args: list[str], env: dict) -> tuple[int, float, list[dict], list[dict], str]:
    log = tmp / f"log-{name}"
    log.mkdir()
    out = tmp / f"run-{name}"
    t0 = time.perf_counter()
    res = subprocess.run([sys.executable, "-m", "rfbench.cli", "run", "--datasets", "friedman-generated",
                          "--methods", "gpumod:OnDevice,gpumod:CpuTwin", "--features", "10", "--inner-folds", "2",
                          "--max-samples", "300", "--device", "cuda", "--quiet", "--no-report", "--out", str(out),
                          *args], capture_output=True, text=True, cwd=tmp, env=dict(env, LOG=str(log)))
    wall = time.perf_counter() - t0
    fits = [json.loads(line) for line in (log / "fits.jsonl").read_text().splitlines()] \
        if (log / "fits.jsonl").exists() else []
    recs = [json.loads(p.read_text()) for p in (out / "records").glob("*.json")] if (out / "records").is_dir() else []
    return res.returncode, wall, fits, recs, res.stderr[-1500:]


def most_at_once(intervals) -> int:
    events = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    now = peak = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--fit-s", type=float, default=2.0)
    ap.add_argument("--alloc-gib", type=float, default=1.0)
    args = ap.parse_args()
    import torch

    if not torch.cuda.is_available():
        raise SystemExit(f"torch {torch.__version__} sees no CUDA GPU")
    total_gib = torch.cuda.get_device_properties(0).total_memory / 2**30
    root = Path(__file__).resolve().parents[2]
    checks, report = {}, {"gpu": torch.cuda.get_device_name(0), "total_gib": round(total_gib, 1),
                          "torch": torch.__version__}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        (tmp / "gpumod.py").write_text(MODULE)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp), str(root)]), FIT_S=str(args.fit_s),
                   ALLOC_GIB=str(args.alloc_gib))
        rc, wall, fits, recs, err = run(tmp, "slots", ["--outer-folds", "6", "--jobs", "4", "--gpu-slots", "2"], env)
        dev = [(f["start"], f["end"]) for f in fits if f["kind"] == "device"]
        cpu = [(f["start"], f["end"]) for f in fits if f["kind"] == "cpu"]
        report["slots_run"] = {"rc": rc, "wall_s": round(wall, 1), "device_fits": len(dev), "cpu_fits": len(cpu),
                               "most_device_at_once": most_at_once(dev), "stderr": err if rc else ""}
        checks["slots: exit 0, 12 done"] = rc == 0 and len(recs) == 12 and {r["status"] for r in recs} == {"done"}
        checks["slots: device records cuda, cpu records cpu"] = {(r["method"], r["device"]) for r in recs} == {
            ("gpumod.OnDevice", "cuda"), ("gpumod.CpuTwin", "cpu")}
        checks["slots: at most 2 device fits at once"] = len(dev) == 6 and most_at_once(dev) <= 2
        checks["slots: CPU fits beside device fits"] = any(s < de and ds < e for s, e in cpu for ds, de in dev)
        checks["slots: the tensors were on the GPU"] = all(f.get("sum_ok") for f in fits if f["kind"] == "device")

        # more than 0.9 / 4 of the GPU per fit: each device task runs out of its share
        oom_env = dict(env, ALLOC_GIB=str(round(total_gib * 0.3, 1)), FIT_S="0.5")
        rc, wall, fits, recs, err = run(tmp, "oom", ["--outer-folds", "3", "--jobs", "2", "--gpu-slots", "4"], oom_env)
        dev_recs = [r for r in recs if r["method"] == "gpumod.OnDevice"]
        report["oom_run"] = {"rc": rc, "wall_s": round(wall, 1), "alloc_gib": oom_env["ALLOC_GIB"],
                             "messages": sorted({r["message"][:160] for r in dev_recs}), "stderr": err if rc else ""}
        checks["oom: exit 0"] = rc == 0
        checks["oom: every device task a one-line GPU out-of-memory error"] = len(dev_recs) == 3 and all(
            r["status"] == "error" and r["message"].startswith("GPU out of memory: ")
            and r["message"].endswith("; lower --gpu-slots or the budget") for r in dev_recs)
        checks["oom: CPU tasks done"] = sorted(r["status"] for r in recs if r["method"] == "gpumod.CpuTwin") == ["done"] * 3
    report["checks"] = checks
    print(json.dumps(report, indent=2))
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
