"""Sparse variational GP regression (methods.yaml ``svgp``): Hensman, Fusi & Lawrence 2013,
"Gaussian Processes for Big Data" (UAI), in GPyTorch.

Model: y = f(x) + ε on the training targets standardised inside ``fit`` (mean 0, standard deviation
1), ε ~ N(0, σ²), f ~ GP(0, k) with ``gp``'s kernel, the ARD squared exponential::

    k(x, x′) = s² exp(−½ Σ_j (x_j − x′_j)² / ℓ_j²)

on the inputs standardised inside ``fit`` (column mean 0, std 1; a constant column is left at std
1). With one ℓ_j per input this is the same family of kernels as ``gp``'s on the raw inputs (ℓ_j
there = ℓ_j here × std(x_j)); the standardisation makes one Adam step mean the same on every input.
M inducing points Z (M × d) carry u = f(Z); the variational posterior q(u) = N(m, S) is
parametrised whitened (u = L v, K_ZZ = LLᵀ, q(v) = N(m_v, S_v), S_v = C Cᵀ with C lower triangular:
GPyTorch's ``VariationalStrategy`` with ``CholeskyVariationalDistribution``).

ELBO (Hensman et al.'s bound that factorises over the rows; GPyTorch's ``VariationalELBO`` with
``num_data`` = the fitting rows m)::

    L = Σ_i E_q(f_i)[log N(y_i | f_i, σ²)] − KL(q(u) ‖ p(u)),

estimated without bias on a minibatch B as (m/|B|) Σ_{i∈B} … − KL (GPyTorch divides it by m).
Everything is learned jointly by maximising it: m_v, C, Z (``learn_inducing_locations=True``),
ℓ_1..ℓ_d, s² and σ² (GPyTorch's positive softplus parametrisation; σ² ≥ 1e-4, its default bound).
GPyTorch adds its jitter, 1e-6 in float64, to the diagonal of K_ZZ (and of the K_XX it uses); the
tests include it when they compare the ELBO with the closed form.

M = ``n_features`` (the feature budget n), capped at the fitting rows (``best_params_["note"]``
says so). Z starts at M of the fitting rows drawn without replacement from ``random_state``
(FALKON's uniform centres, the same budget's rows the Nyström methods get), not at k-means centres:
Z is learned, so the start matters less than for a fixed set, and k-means would add an O(m M d)
step per Lloyd iteration and a second seeded algorithm to the fit. Starts of the kernel: ℓ_j = √d
(``gp``'s start, on standardised inputs), s² = 1 (the variance of the standardised target),
σ² = 0.1 (``gp``'s start 0); q(v) starts at GPyTorch's m_v ≈ 0 (N(0, 1e-3²) noise), C = I.

Optimiser: Adam (learning rate ``learning_rate`` = 0.01, GPyTorch's SVGP examples' rate) on all
parameters, minibatches of ``batch_size`` = 1024 rows of a seeded permutation (the whole set when it
is smaller). An epoch is one pass, ⌈m/B⌉ steps, or ``min_epoch_steps`` = 20 steps where a pass is
fewer (a small set then gets 20 Adam steps, more than one pass, between two validation checks
instead of one).

Stopping: ``validation_fraction`` = 10 % of the training rows (at least one; drawn from
``random_state``) are held out of the ELBO; after every epoch the predictive mean's MSE on them is
computed, and training stops after ``patience`` = 10 epochs without a lower one, or at
``max_epochs`` = 200. The state of the best epoch (all parameters) is restored. The held-out MSE
(not the held-out ELBO) is the criterion because the predictive mean is what is scored.
``validation_fraction=0`` fits on every row for ``max_epochs`` and keeps the last state.

Prediction: the predictive mean of f (equal to that of y), mapped back to the target's unit.
The inner CV folds ``cv`` are not used: the hyper-parameters are learned by the ELBO
(``best_params_["cv"]`` says so). ``n_jobs`` (the runner passes its threads per task) is torch's
CPU threads during ``fit`` and ``predict`` (restored after; None or ≤ 0: torch's own setting), as
xRFM's ``n_threads``: torch is imported inside ``fit``, after the runner's threadpoolctl limits
were set, so without it a task's first fit would use every core.

Precision, device and seeding: float64. ``device`` "cpu" (the default) and "torch-cpu" run on
torch's CPU (there is no NumPy path: GPyTorch is torch); "cuda"/"cuda:K" on the GPU. torch's
generator is seeded with an int drawn from ``random_state`` inside ``torch.random.fork_rng`` (the
caller's torch state is left alone), so a fit on the CPU is deterministic.

Why GPyTorch: it is the field's library for SVGP (Gardner et al. 2018), so the row is the
reference implementation rather than a re-derivation; it is the optional extra ``gp``
(``pip install gpytorch``), imported only inside ``fit`` and ``predict``.
"""

from __future__ import annotations

import copy
import math
from contextlib import contextmanager
from numbers import Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils.validation import check_is_fitted, validate_data

from rfbench.methods import constraints as cons
from rfbench.methods.common import as_generator, import_extra, seed_from, standardise_columns
from rfbench.methods.device import torch_device, uses_torch
from rfbench.methods.tuning import Stopwatch

#: the starts of the kernel's hyper-parameters (module notes)
SIGNAL0 = 1.0
NOISE0 = 0.1
#: what to install where gpytorch is missing
EXTRA = "pip install gpytorch"
#: rows of one block of the prediction (its N × M cross-kernel)
PREDICT_ROWS = 4096


def import_gpytorch():
    """The ``gpytorch`` package, or ModuleNotFoundError (name 'gpytorch') naming rfbench's extra."""
    return import_extra("gpytorch", "svgp", EXTRA)


def build_model(Z, num_data: int):
    """GPyTorch's SVGP of the module notes on the inducing inputs ``Z`` (a float64 torch tensor, M × d):
    (model, likelihood, mll), with ℓ_j = √d, s² = 1, σ² = 0.1, on Z's device."""
    import torch

    gpytorch = import_gpytorch()

    class SVGP(gpytorch.models.ApproximateGP):
        def __init__(self, Z):
            q = gpytorch.variational.CholeskyVariationalDistribution(Z.shape[0])
            strategy = gpytorch.variational.VariationalStrategy(self, Z, q, learn_inducing_locations=True)
            super().__init__(strategy)
            self.mean_module = gpytorch.means.ZeroMean()
            self.covar_module = gpytorch.kernels.ScaleKernel(
                gpytorch.kernels.RBFKernel(ard_num_dims=Z.shape[1]))

        def forward(self, x):
            return gpytorch.distributions.MultivariateNormal(self.mean_module(x), self.covar_module(x))

    d = Z.shape[1]
    model = SVGP(Z).to(Z.device, torch.float64)
    likelihood = gpytorch.likelihoods.GaussianLikelihood().to(Z.device, torch.float64)
    # the starting values on Z's device: GPyTorch's setters transform a tensor with the constraint's
    # buffers as given, so a CPU tensor meets CUDA buffers there
    on = dict(dtype=torch.float64, device=Z.device)
    model.covar_module.base_kernel.lengthscale = torch.full((1, d), math.sqrt(d), **on)
    model.covar_module.outputscale = torch.tensor(SIGNAL0, **on)
    likelihood.noise = torch.tensor([NOISE0], **on)
    mll = gpytorch.mlls.VariationalELBO(likelihood, model, num_data=int(num_data))
    return model, likelihood, mll


@contextmanager
def torch_threads(n_jobs):
    """torch's CPU threads set to ``n_jobs`` inside the block (None or ≤ 0: left as they are)."""
    import torch

    if n_jobs is None or int(n_jobs) <= 0:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n_jobs))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class SVGPRegressor(RegressorMixin, BaseEstimator):
    """Sparse variational GP regression (Hensman et al. 2013) in GPyTorch; see the module notes.

    Parameters
    ----------
    n_features : M, the number of inducing points (capped at the fitting rows).
    batch_size : rows of one Adam step.
    learning_rate : Adam's learning rate.
    max_epochs : the most epochs.
    min_epoch_steps : the fewest Adam steps of one epoch (more than one pass over a small set).
    patience : epochs without a lower validation MSE before stopping.
    validation_fraction : the part of the training rows held out for early stopping (0: none).
    cv : the inner folds: not used (hyper-parameters by the ELBO).
    random_state : the held-out rows, the inducing rows, the minibatches and torch's seed.
    n_jobs : torch's CPU threads during fit and predict (None or ≤ 0: torch's own).
    device : "cpu" / "torch-cpu" (torch on the CPU) or "cuda" / "cuda:K".

    Attributes
    ----------
    inducing_points_ (M × d, in the input's unit), lengthscales_ (in the input's unit),
    signal_variance_, noise_variance_ (in the standardised target's unit), n_inducing_,
    validation_rows_ (the held-out rows' indices), n_epochs_, best_epoch_, n_steps_,
    validation_mse_ (per epoch, standardised unit), best_params_, tune_time_, n_features_in_.
    """

    _parameter_constraints: dict = {
        "n_features": [cons.positive_int()],
        "batch_size": [cons.positive_int()],
        "learning_rate": [cons.positive_real()],
        "max_epochs": [cons.non_negative_int()],
        "min_epoch_steps": [cons.positive_int()],
        "patience": [cons.positive_int()],
        "validation_fraction": [cons.Interval(Real, 0.0, 1.0, closed="left")],
        "cv": cons.CV,
        "random_state": cons.RANDOM_STATE,
        "n_jobs": cons.N_JOBS,
        "device": cons.DEVICE,
    }

    def __init__(self, n_features=100, batch_size=1024, learning_rate=0.01, max_epochs=200,
                 min_epoch_steps=20, patience=10, validation_fraction=0.1, cv=5, random_state=None,
                 n_jobs=1, device="cpu"):
        self.n_features = n_features
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self.max_epochs = max_epochs
        self.min_epoch_steps = min_epoch_steps
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.cv = cv
        self.random_state = random_state
        self.n_jobs = n_jobs
        self.device = device

    def _torch_device(self):
        if uses_torch(self.device):
            return torch_device(self.device)
        import torch

        return torch.device("cpu")

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        X, y = validate_data(self, X, y, y_numeric=True, dtype=np.float64, ensure_min_samples=2)
        import_gpytorch()                     # the extra named before any work
        import torch

        dev = self._torch_device()
        y = np.asarray(y, dtype=np.float64)
        rng = as_generator(self.random_state)
        m_all = X.shape[0]
        n_val = 0
        if self.validation_fraction > 0:
            n_val = min(max(1, int(round(float(self.validation_fraction) * m_all))), m_all - 1)
        perm = rng.permutation(m_all)
        val, fit_rows = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        m = fit_rows.size
        M = min(int(self.n_features), m)
        inducing = fit_rows[np.sort(rng.choice(m, size=M, replace=False))]
        seed = seed_from(rng)

        self.x_mean_, self.x_std_ = standardise_columns(X[fit_rows])
        self.y_mean_ = float(y[fit_rows].mean())
        self.y_std_ = float(y[fit_rows].std()) or 1.0
        Xz = (X - self.x_mean_) / self.x_std_
        yz = (y - self.y_mean_) / self.y_std_
        as_t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64, device=dev)  # noqa: E731
        Xf, yf = as_t(Xz[fit_rows]), as_t(yz[fit_rows])
        Xv, yv = as_t(Xz[val]), as_t(yz[val])
        B = min(int(self.batch_size), m)
        steps = max(math.ceil(m / B), int(self.min_epoch_steps))
        history = []
        timer = Stopwatch()
        with timer, torch_threads(self.n_jobs), torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            torch.manual_seed(seed)
            gen = torch.Generator(device="cpu").manual_seed(seed)
            model, likelihood, mll = build_model(as_t(Xz[inducing]), m)
            params = list(model.parameters()) + list(likelihood.parameters())
            opt = torch.optim.Adam(params, lr=float(self.learning_rate))
            best, best_mse, best_epoch, since, n_steps, epoch = None, math.inf, 0, 0, 0, 0
            order = torch.empty(0, dtype=torch.long)
            pos = 0
            for epoch in range(1, int(self.max_epochs) + 1):
                model.train()
                likelihood.train()
                for _ in range(steps):
                    if pos + B > order.numel():        # a fresh seeded permutation per pass
                        order, pos = torch.randperm(m, generator=gen), 0
                    idx = order[pos:pos + B].to(dev)
                    pos += B
                    opt.zero_grad(set_to_none=True)
                    loss = -mll(model(Xf[idx]), yf[idx])
                    loss.backward()
                    opt.step()
                    n_steps += 1
                if n_val:
                    mse = self._mse(model, likelihood, Xv, yv)
                    history.append(mse)
                    if mse < best_mse:
                        best_mse, best_epoch, since = mse, epoch, 0
                        best = copy.deepcopy((model.state_dict(), likelihood.state_dict()))
                    else:
                        since += 1
                        if since >= int(self.patience):
                            break
            if best is not None:
                model.load_state_dict(best[0])
                likelihood.load_state_dict(best[1])
            else:
                best_epoch = epoch
        # the fitted state as CPU tensors (GPyTorch's model class is local to build_model: the estimator
        # pickles with its state, and predict rebuilds the model from it)
        self.state_ = tuple({k: v.detach().cpu().clone() for k, v in sd.items()}
                            for sd in (model.state_dict(), likelihood.state_dict()))
        self.num_data_ = m
        kern = model.covar_module
        ell = kern.base_kernel.lengthscale.detach().cpu().numpy().ravel() * self.x_std_
        Z = model.variational_strategy.inducing_points.detach().cpu().numpy()
        self.inducing_points_ = Z * self.x_std_ + self.x_mean_
        self.lengthscales_ = ell
        self.signal_variance_ = float(kern.outputscale.detach().cpu())
        self.noise_variance_ = float(likelihood.noise.detach().cpu().ravel()[0])
        self.n_inducing_ = M
        self.validation_rows_ = val
        self.n_epochs_, self.best_epoch_, self.n_steps_ = epoch, best_epoch, n_steps
        self.validation_mse_ = np.array(history)
        self.tune_time_ = timer.total
        params = {
            "inducing_points": M, "lengthscales": [float(v) for v in ell],
            "signal_variance": self.signal_variance_, "noise_variance": self.noise_variance_,
            "epochs": epoch, "best_epoch": best_epoch, "steps": n_steps,
            "validation_mse": float(best_mse) if n_val else None, "validation_rows": n_val,
            "cv": "inner folds not used: hyper-parameters by the ELBO",
        }
        if int(self.n_features) > m:
            params["note"] = (f"n_features {int(self.n_features)} > {m} fitting rows: M = {m} "
                              "(every fitting row an inducing point)")
        self.best_params_ = params
        return self

    @staticmethod
    def _predict_z(model, likelihood, X):
        """The predictive mean at the standardised inputs X (a tensor), standardised unit."""
        import gpytorch
        import torch

        model.eval()
        likelihood.eval()
        with torch.no_grad(), gpytorch.settings.skip_posterior_variances():
            return torch.cat([model(X[i:i + PREDICT_ROWS]).mean for i in range(0, X.shape[0], PREDICT_ROWS)])

    def _mse(self, model, likelihood, X, y) -> float:
        pred = self._predict_z(model, likelihood, X)
        return float(((pred - y) ** 2).mean())

    def predict(self, X):
        """The predictive mean."""
        check_is_fitted(self, "state_")
        X = validate_data(self, X, dtype=np.float64, reset=False)
        import torch

        dev = self._torch_device()
        as_t = lambda a: torch.as_tensor(np.ascontiguousarray(a), dtype=torch.float64, device=dev)  # noqa: E731
        Z = (self.inducing_points_ - self.x_mean_) / self.x_std_
        with torch_threads(self.n_jobs):
            model, likelihood, _ = build_model(as_t(Z), self.num_data_)
            model.load_state_dict(self.state_[0])
            likelihood.load_state_dict(self.state_[1])
            pred = self._predict_z(model, likelihood, as_t((X - self.x_mean_) / self.x_std_)).cpu().numpy()
        return self.y_mean_ + self.y_std_ * pred
