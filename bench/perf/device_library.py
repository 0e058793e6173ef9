"""torch or JAX for the device path: the à la carte CV objective and its gradient (float64) in
each library, timed against rfbench's NumPy path on the same problem (issue 38 item 3).

    python bench/perf/device_library.py --device cpu  [--out results/device-library-cpu.json]
    python bench/perf/device_library.py --device cuda [--out ...]      (on a GPU machine)

For each library present: import time (a fresh interpreter), agreement with the NumPy value and
gradient (relative), the median time of one evaluation and, batched, of ten restarts evaluated at
once (per restart). Problems: m rows (kinematics-sized by default), d = 8, Q = 5, n = 100 and 500,
k = 5 contiguous folds. The objective here is a benchmark copy written for each library; the one
rfbench runs is rfbench/methods/alc_torch.py.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

from rfbench.methods import alc
from rfbench.methods.common import resolve_cv
from rfbench.methods.cvgrad import contiguous_folds

#: what each library holds on the GPU after its runs (JAX preallocates a share of the card by default)
MEMORY: dict = {}


def problem(m: int, d: int, n: int, Q: int, B: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    m -= m % 5                   # equal folds: the benchmark copy reshapes the rows into them
    X = rng.uniform(-1, 1, (m, d))
    y = np.sin(X @ rng.standard_normal(d)) + 0.1 * rng.standard_normal(m)
    y = y - y.mean()
    splits, X_cv, y_cv = contiguous_folds(resolve_cv(5, m, rng), X, y)
    s = n // Q
    starts = alc.initial_solutions(X_cv, y_cv, Q, s, B, rng)
    thetas = np.stack([th for th, _ in starts])
    Us = np.stack([U for _, U in starts])
    return X_cv, y_cv, splits, thetas, Us, float(np.var(y))


def numpy_eval(X, y, splits, theta, U, y_var):
    return alc.alc_objective(theta, X, y, U, splits, y_var)


def objective_fn(xp, X, y, k, Q, s, d, y_var):
    """The batched objective in array library ``xp`` (torch or jax.numpy, through the names both
    share): θ (B × p), U (B × Q × s × d) → the B CV errors."""
    m = X.shape[0]
    mk = m // k
    yf = y.reshape(k, mk)

    def f(theta, U):
        B = theta.shape[0]
        mu = theta[:, :Q * d].reshape(B, Q, 1, d)
        D = theta[:, Q * d:2 * Q * d].reshape(B, Q, 1, d)
        nu2 = theta[:, 2 * Q * d:2 * Q * d + Q] ** 2
        scale = (nu2[:, :, None] * xp.ones_like(U[..., 0])).reshape(B, Q * s)   # ν_q² repeated s times
        lam = xp.exp(theta[:, -1])
        W = (D * U + mu).reshape(B, Q * s, d)
        P = X @ W.swapaxes(1, 2)                                     # B × m × n
        Z = xp.concatenate([xp.ones_like(P[..., :1]), xp.sin(P) * scale[:, None, :],
                            xp.cos(P) * scale[:, None, :]], axis=2)
        p = Z.shape[2]
        Zf = Z.reshape(B, k, mk, p)
        Gk = Zf.swapaxes(2, 3) @ Zf                                  # every fold's Gram matrix
        bk = (Zf * yf[None, :, :, None]).sum(axis=2)
        A = (Gk.sum(axis=1, keepdims=True) - Gk) \
            + ((m - mk) * lam)[:, None, None, None] * xp.eye(p, dtype=X.dtype)[None, None]
        c = xp.linalg.solve(A, (bk.sum(axis=1, keepdims=True) - bk)[..., None])[..., 0]
        r = (Zf @ c[..., None])[..., 0] - yf[None]
        return (r ** 2).sum(axis=(1, 2)) / (mk * k) / y_var
    return f


def median_time(fn, repeats: int, sync=lambda: None) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def import_seconds(module: str) -> float | None:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired):
        return None
    return float(out.stdout.strip())


def rel(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def bench_torch(device, X, y, splits, thetas, Us, y_var, Q, s, repeats):
    import torch

    dev = torch.device("cuda" if device == "cuda" else "cpu")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    Xt = torch.as_tensor(X, dtype=torch.float64, device=dev)
    yt = torch.as_tensor(y, dtype=torch.float64, device=dev)
    f = objective_fn(torch, Xt, yt, len(splits), Q, s, X.shape[1], y_var)
    Ut = torch.as_tensor(Us, dtype=torch.float64, device=dev)

    def value_grad(th, U):
        th = th.detach().requires_grad_(True)
        with dev:                                   # factories (torch.eye) on the device
            v = f(th, U)
        (g,) = torch.autograd.grad(v.sum(), th)
        return v.detach(), g

    th_all = torch.as_tensor(thetas, dtype=torch.float64, device=dev)
    v1, g1 = value_grad(th_all[:1], Ut[:1])
    one = median_time(lambda: value_grad(th_all[:1], Ut[:1]), repeats, sync)
    batched = median_time(lambda: value_grad(th_all, Ut), repeats, sync) / len(thetas)
    if device == "cuda":
        MEMORY["torch"] = {"bytes_reserved": torch.cuda.memory_reserved(),
                           "peak_bytes_in_use": torch.cuda.max_memory_allocated()}
    return float(v1[0]), g1[0].cpu().numpy(), one, batched


def bench_jax(device, X, y, splits, thetas, Us, y_var, Q, s, repeats):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    backend = "gpu" if device == "cuda" else "cpu"
    dev = jax.devices(backend)[0]
    Xj = jax.device_put(jnp.asarray(X), dev)
    yj = jax.device_put(jnp.asarray(y), dev)
    f = objective_fn(jnp, Xj, yj, len(splits), Q, s, X.shape[1], y_var)
    vg = jax.jit(jax.value_and_grad(lambda th, U: f(th, U).sum()))
    th_all = jax.device_put(jnp.asarray(thetas), dev)
    U_all = jax.device_put(jnp.asarray(Us), dev)
    v1, g1 = vg(th_all[:1], U_all[:1])

    def run(th, U):
        out = vg(th, U)
        jax.block_until_ready(out)
    one = median_time(lambda: run(th_all[:1], U_all[:1]), repeats)
    batched = median_time(lambda: run(th_all, U_all), repeats) / len(thetas)
    stats = dev.memory_stats() or {}
    MEMORY["jax"] = {k: stats.get(k) for k in ("bytes_limit", "bytes_reserved", "peak_bytes_in_use")}
    return float(v1), np.asarray(g1[0]), one, batched


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--rows", type=int, default=7372, help="m (default: kinematics' 8192 × 0.9)")
    ap.add_argument("--features", default="100,500")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    Q, d, B = 5, 8, 10
    out = {"machine": platform.node(), "processor": platform.processor() or platform.machine(),
           "device": args.device, "rows": args.rows, "Q": Q, "d": d, "restarts_batched": B, "libraries": {}}
    if args.device == "cuda":
        import torch
        out["card"] = torch.cuda.get_device_name(0)
    for lib in ("torch", "jax"):
        out["libraries"][lib] = {"import_s": import_seconds(lib), "problems": []}
    out["problems"] = []
    for n in (int(v) for v in args.features.split(",")):
        s = n // Q
        X, y, splits, thetas, Us, y_var = problem(args.rows, d, n, Q, B)
        v_np, g_np = numpy_eval(X, y, splits, thetas[0], Us[0], y_var)
        t_np = median_time(functools.partial(numpy_eval, X, y, splits, thetas[0], Us[0], y_var), args.repeats)
        out["problems"].append({"n": n, "numpy_one_s": t_np})
        for lib, fn in (("torch", bench_torch), ("jax", bench_jax)):
            try:
                v, g, one, batched = fn(args.device, X, y, splits, thetas, Us, y_var, Q, s, args.repeats)
            except Exception as exc:  # noqa: BLE001 - a library that is missing or fails is reported
                out["libraries"][lib]["problems"].append({"n": n, "error": f"{type(exc).__name__}: {exc}"[:300]})
                continue
            out["libraries"][lib]["problems"].append(
                {"n": n, "value_rel": rel(v, v_np), "grad_rel": rel(g, g_np), "one_s": one,
                 "batched_per_restart_s": batched, "numpy_over_one": t_np / one,
                 "numpy_over_batched": t_np / batched})
        print(json.dumps(out["libraries"], indent=None)[:2000], file=sys.stderr)
    out["gpu_memory"] = MEMORY
    out["threads"] = {"torch": __import__("torch").get_num_threads() if "torch" in sys.modules else None}
    text = json.dumps(out, indent=1)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
