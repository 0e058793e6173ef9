"""À la carte's ridge factorisations on a GPU: which batched Cholesky and which solve (issue 38).

    python bench/perf/cholesky_device.py [--device cuda] [--repeats 7] [--fold kinematics]

One evaluation of à la carte's objective at n = 500 factors k = 5 ridge matrices of 1 001 × 1 001
(50 when the 10 restarts are batched) and solves with each factor twice. This times, on the same
batches: the factorisation by torch's library call (``torch.linalg.cholesky_ex``, whose backend
torch picks), by MAGMA, one matrix at a time, and right-looking by blocks of 64, 128, 256 columns
(every matrix of the batch at once); the solve by ``torch.cholesky_solve`` (library, MAGMA) and by
two batched triangular solves (``alc_torch.solve``, what à la carte runs since this measurement).
Then one evaluation of the objective (alc_device's problem, m = 7 372) with each pairing, single and 10 restarts batched, its profile (the ten heaviest operators by device time)
with the library pairing and the fastest one, and with ``--fold`` one outer fold of à la carte at
n = 500 alone on the device with each of those two pairings: seconds, and how they split between
the batched restarts and the final single-restart iterations. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from rfbench.methods import alc_torch  # noqa: E402


@contextlib.contextmanager
def linalg_library(name: str):
    """torch.backends.cuda.preferred_linalg_library for the block; "default" lets torch choose."""
    before = torch.backends.cuda.preferred_linalg_library()
    torch.backends.cuda.preferred_linalg_library(name)
    try:
        yield
    finally:
        torch.backends.cuda.preferred_linalg_library(before)


LIBRARY_CHOLESKY_EX = torch.linalg.cholesky_ex


def blocked_cholesky_ex(P: torch.Tensor, block: int = 128) -> tuple[torch.Tensor, torch.Tensor]:
    """torch.linalg.cholesky_ex (lower factor, info) of a batch P (… × p × p), right-looking by
    blocks of ``block`` columns: per block one small batched factorisation, one batched triangular
    solve and one batched product, so that every matrix of the batch is worked on at once (the
    library's batched factorisation of large matrices goes one matrix at a time on a GPU)."""
    p = P.shape[-1]
    if p <= block:
        return LIBRARY_CHOLESKY_EX(P)
    A = P.clone()
    info = torch.zeros(P.shape[:-2], dtype=torch.int32, device=P.device)
    for k in range(0, p, block):
        e = min(k + block, p)
        L_kk, info_k = LIBRARY_CHOLESKY_EX(A[..., k:e, k:e])
        info = torch.where((info == 0) & (info_k > 0), info_k + k, info)
        A[..., k:e, k:e] = L_kk
        if e < p:
            L_ik = torch.linalg.solve_triangular(L_kk.mT, A[..., e:, k:e], upper=True, left=False)
            A[..., e:, k:e] = L_ik
            A[..., e:, e:] -= L_ik @ L_ik.mT
    return A.tril_(), info


def looped_cholesky_ex(P):
    out = [LIBRARY_CHOLESKY_EX(M) for M in P.reshape(-1, *P.shape[-2:])]
    return (torch.stack([L for L, _ in out]).reshape(P.shape),
            torch.stack([i for _, i in out]).reshape(P.shape[:-2]))


def magma(fn):
    def call(*args):
        with linalg_library("magma"):
            return fn(*args)
    return call


FACTORS = {
    "library": LIBRARY_CHOLESKY_EX,
    "magma": magma(LIBRARY_CHOLESKY_EX),
    "looped": looped_cholesky_ex,
    "blocked-64": lambda P: blocked_cholesky_ex(P, 64),
    "blocked-128": lambda P: blocked_cholesky_ex(P, 128),
    "blocked-256": lambda P: blocked_cholesky_ex(P, 256),
}
SOLVES = {
    "library": torch.cholesky_solve,
    "magma": magma(torch.cholesky_solve),
    "triangular": alc_torch.solve,     # what alc_torch runs since this measurement
}


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def median_ms(fn, device, repeats: int) -> float:
    fn()
    sync(device)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync(device)
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def spd_batch(batch: int, p: int, device, seed: int = 0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    Z = torch.randn(batch, 2 * p, p, generator=g, dtype=torch.float64).to(device)
    return Z.mT @ Z / (2 * p) + 1e-3 * torch.eye(p, dtype=torch.float64, device=device)


def kernels(device, repeats: int) -> list[dict]:
    rows = []
    for p in (201, 1001):
        for batch in (5, 50):
            P = spd_batch(batch, p, device)
            b = torch.randn(batch, p, 1, dtype=torch.float64, device=device)
            L_ref = LIBRARY_CHOLESKY_EX(P)[0]
            for name, fn in FACTORS.items():
                try:
                    L = fn(P)[0]
                except RuntimeError as exc:          # MAGMA absent from this build of torch
                    rows.append({"op": "factor", "how": name, "p": p, "batch": batch, "error": str(exc)[:120]})
                    continue
                rows.append({"op": "factor", "how": name, "p": p, "batch": batch,
                             "ms": median_ms(functools.partial(fn, P), device, repeats),
                             "rel_to_library": float((L - L_ref).abs().max() / L_ref.abs().max())})
            c_ref = torch.cholesky_solve(b, L_ref)
            for name, fn in SOLVES.items():
                try:
                    c = fn(b, L_ref)
                except RuntimeError as exc:
                    rows.append({"op": "solve", "how": name, "p": p, "batch": batch, "error": str(exc)[:120]})
                    continue
                rows.append({"op": "solve", "how": name, "p": p, "batch": batch,
                             "ms": median_ms(functools.partial(fn, b, L_ref), device, repeats),
                             "rel_to_library": float((c - c_ref).abs().max() / c_ref.abs().max())})
    return rows


@contextlib.contextmanager
def pairing(factor: str, solve: str):
    """alc_torch with this factorisation and this solve (it calls torch.linalg.cholesky_ex and its
    own ``solve`` by module attribute, so both can be swapped for the block)."""
    cholesky_ex, solver = torch.linalg.cholesky_ex, alc_torch.solve
    torch.linalg.cholesky_ex, alc_torch.solve = FACTORS[factor], SOLVES[solve]
    try:
        yield
    finally:
        torch.linalg.cholesky_ex, alc_torch.solve = cholesky_ex, solver


def evaluations(device_name: str, device, repeats: int, pairings) -> tuple[list[dict], dict]:
    import alc_device

    X, y, splits, y_var, starts = alc_device.problem(7372, 500, 10)
    prob = alc_torch.Problem(X, y, splits, y_var, [U for _, U in starts], device_name)
    thetas = np.stack([th for th, _ in starts])
    with pairing("library", "library"):
        v0, g0 = prob.evaluate(thetas, range(len(thetas)))
    rows = []
    for factor, solve in pairings:
        with pairing(factor, solve):
            try:
                v, g = prob.evaluate(thetas, range(len(thetas)))
            except RuntimeError as exc:
                rows.append({"factor": factor, "solve": solve, "error": str(exc)[:120]})
                continue
            rows.append({"factor": factor, "solve": solve,
                         "single_ms": median_ms(lambda: prob.single(thetas[0], 0), device, repeats),
                         "batched_ms": median_ms(lambda: prob.evaluate(thetas, range(len(thetas))), device,
                                                 repeats),
                         "value_rel": float(np.max(np.abs(v - v0) / np.abs(v0))),
                         "grad_rel": float(np.linalg.norm(g - g0) / np.linalg.norm(g0))})
    return rows, {"prob": prob, "theta": thetas[0]}


def profile(ctx: dict, factor: str, solve: str) -> list[str]:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if torch.cuda.is_available() else [])
    with pairing(factor, solve):
        ctx["prob"].single(ctx["theta"], 0)
        with torch_profile(activities=activities) as prof:
            for _ in range(3):
                ctx["prob"].single(ctx["theta"], 0)
    key = "self_device_time_total" if torch.cuda.is_available() else "self_cpu_time_total"
    try:
        table = prof.key_averages().table(sort_by=key, row_limit=12)
    except Exception:  # noqa: BLE001 - older names
        table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=12)
    return table.splitlines()


def fold(dataset: str, n: int, device_name: str, factor: str, solve: str) -> dict:
    import gpu

    inside_lockstep = [False]
    phases = {"restarts_s": 0.0, "final_s": 0.0, "evaluations_batched": 0, "evaluations_single": 0}
    lockstep, minimise, evaluate = alc_torch.lockstep_minimise, alc_torch._minimise, alc_torch.Problem.evaluate

    def timed_lockstep(*a, **k):
        t0 = time.perf_counter()
        inside_lockstep[0] = True
        try:
            return lockstep(*a, **k)
        finally:
            inside_lockstep[0] = False
            phases["restarts_s"] += time.perf_counter() - t0

    def timed_minimise(*a, **k):
        if inside_lockstep[0]:            # a restart's own optimiser: timed by the lockstep
            return minimise(*a, **k)
        t0 = time.perf_counter()
        try:
            return minimise(*a, **k)
        finally:
            phases["final_s"] += time.perf_counter() - t0

    def counted(self, thetas, which):
        phases["evaluations_batched" if len(which) > 1 else "evaluations_single"] += 1
        return evaluate(self, thetas, which)

    alc_torch.lockstep_minimise, alc_torch._minimise, alc_torch.Problem.evaluate = \
        timed_lockstep, timed_minimise, counted
    try:
        with pairing(factor, solve):
            row = gpu.fit_fold(dataset, "alc", n, 0, device_name, os.environ.get("RFBENCH_DATA_DIR"))
    finally:
        alc_torch.lockstep_minimise, alc_torch._minimise, alc_torch.Problem.evaluate = \
            lockstep, minimise, evaluate
    return {"factor": factor, "solve": solve, **row, **phases}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--fold", help="a dataset: time one outer fold of à la carte n=500 alone")
    ap.add_argument("--fold-n", type=int, default=500, help="the fold's n (default 500)")
    ap.add_argument("--output", help="also write the JSON here")
    args = ap.parse_args(argv)
    from rfbench.methods.device import torch_device

    device = torch_device(args.device)
    torch.set_num_threads(1)
    out = {"torch": torch.__version__, "device": args.device,
           "card": torch.cuda.get_device_name(0) if device.type == "cuda" else None}
    t0 = time.perf_counter()
    out["kernels"] = kernels(device, args.repeats)
    pairings = [("library", "library"), ("magma", "magma"), ("library", "triangular")] + \
               [(f"blocked-{b}", s) for b in (64, 128, 256) for s in ("library", "triangular")]
    out["evaluations"], ctx = evaluations(args.device, device, args.repeats, pairings)
    best = min((r for r in out["evaluations"] if "error" not in r), key=lambda r: r["single_ms"])
    out["best"] = {"factor": best["factor"], "solve": best["solve"]}
    out["profile_library"] = profile(ctx, "library", "library")
    out["profile_best"] = profile(ctx, best["factor"], best["solve"])
    if args.fold:
        out["folds"] = [fold(args.fold, args.fold_n, args.device, "library", "library"),
                        fold(args.fold, args.fold_n, args.device, best["factor"], best["solve"])]
    out["wall_s"] = time.perf_counter() - t0
    text = json.dumps(out, indent=1)
    if args.output:
        Path(args.output).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
