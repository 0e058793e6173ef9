"""Where a dense method computes: NumPy on the CPU (the default and the reference), or torch in
float64 on a device.

An estimator that can use a device takes ``device`` (one of :data:`DEVICES`):

* ``"cpu"``: the NumPy path, bit-identical to the committed results;
* ``"cuda"`` (or ``"cuda:K"``): the same algorithm written in torch, float64, on the GPU;
* ``"torch-cpu"``: the torch path on the CPU. Nobody runs it for speed (NumPy is faster there):
  it exists so that CI, which has no GPU, runs the device code against the NumPy path.

torch is imported only here and only when a torch path is asked for (``pip install torch``; in a checkout, ``pip install -e '.[gpu]'``);
the NumPy path never imports it. docs/device.md says why torch, and what runs where.
"""

from __future__ import annotations

import re

#: the values of an estimator's ``device`` parameter ("cuda:K" names one GPU of several)
DEVICES = ("cpu", "cuda", "torch-cpu")
_CUDA = re.compile(r"cuda(:\d+)?")
#: what the command line's --device takes
CLI_DEVICES = ("cpu", "cuda", "auto")


class DeviceUnavailable(RuntimeError):
    """A torch device was asked for where there is none (no torch, or no GPU)."""


def check_device(device) -> str:
    """``device`` if it names a valid device, else ValueError with the valid values."""
    if isinstance(device, str) and (device in DEVICES or _CUDA.fullmatch(device)):
        return device
    raise ValueError(f"device must be one of {', '.join(DEVICES)} (or cuda:K), got {device!r}")


def uses_torch(device: str) -> bool:
    """Whether ``device`` selects the torch path (anything but "cpu")."""
    return check_device(device) != "cpu"


def torch_module():
    """torch, or DeviceUnavailable saying how to install it."""
    try:
        import torch
    except ImportError as exc:
        raise DeviceUnavailable("the GPU path needs torch: pip install torch (the build for your CUDA: "
                                "https://pytorch.org/get-started/locally/; docs/device.md)") from exc
    return torch


def torch_device(device: str):
    """The ``torch.device`` of an estimator's ``device`` ("torch-cpu" → the CPU). "cpu" is refused
    before torch is looked for: it is the NumPy path, with or without torch."""
    if check_device(device) == "cpu":
        raise ValueError("device='cpu' is the NumPy path; it has no torch device")
    torch = torch_module()
    if device == "torch-cpu":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise DeviceUnavailable(f"device {device!r} asked for, but torch {torch.__version__} sees no CUDA GPU")
    return torch.device(device)


def free_bytes(device: str) -> int | None:
    """The bytes this process can still allocate on ``device``'s GPU, or None for "cpu" and
    "torch-cpu" (the host's memory is not a device's, and the CPU limits are time, not memory): the
    device's free memory plus the blocks this process holds cached but unused (a worker's earlier
    tasks leave them; they are its own to reuse), and at most its per-process share
    (``set_per_process_memory_fraction``: a run's worker takes 0.9 / --gpu-slots) less what it has
    allocated."""
    if check_device(device) in ("cpu", "torch-cpu"):
        return None
    torch = torch_module()
    dev = torch_device(device)
    free, total = torch.cuda.mem_get_info(dev)
    allocated = torch.cuda.memory_allocated(dev)
    cached = torch.cuda.memory_reserved(dev) - allocated
    share = getattr(torch.cuda, "get_per_process_memory_fraction", lambda _dev: 1.0)(dev)   # torch >= 2.6
    return int(max(min(free + cached, share * total - allocated), 0))


def cuda_available() -> bool:
    """Whether torch is installed and sees a CUDA GPU (False without torch)."""
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def resolve(requested: str) -> tuple[str, str | None]:
    """The device a run uses for ``--device`` (cpu | cuda | auto) and a note for the user, or
    DeviceUnavailable: "cuda" without torch or without a GPU is refused, "auto" falls back to the
    CPU with a note."""
    if requested not in CLI_DEVICES:
        raise ValueError(f"--device must be one of {', '.join(CLI_DEVICES)}, got {requested!r}")
    if requested == "cpu":
        return "cpu", None
    try:
        torch = torch_module()
        if not torch.cuda.is_available():
            raise DeviceUnavailable(f"torch {torch.__version__} sees no CUDA GPU")
    except DeviceUnavailable as exc:
        if requested == "cuda":
            raise DeviceUnavailable(f"--device cuda: {exc} (use --device cpu, or auto to fall back)") from None
        return "cpu", f"--device auto: {exc}; the dense methods run on the CPU"
    return "cuda", None


def is_out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` is a GPU out-of-memory error (torch.OutOfMemoryError or its message)."""
    name = type(exc).__name__
    return name == "OutOfMemoryError" or "CUDA out of memory" in str(exc)
