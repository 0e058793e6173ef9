"""The device contract of the dense methods (rfbench.methods.device): which values are valid, how
--device resolves with and without torch and a GPU, and what counts as a GPU out-of-memory error."""

import sys

import pytest

from rfbench.methods import device


@pytest.mark.parametrize("value", ["cpu", "cuda", "cuda:0", "cuda:3", "torch-cpu"])
def test_valid_devices(value):
    assert device.check_device(value) == value


@pytest.mark.parametrize("value", ["gpu", "CUDA", "cuda:", "cuda:x", "", None, 1, "mps"])
def test_invalid_devices_name_the_valid_ones(value):
    with pytest.raises(ValueError, match="device must be one of cpu, cuda, torch-cpu"):
        device.check_device(value)


def test_cpu_is_the_numpy_path():
    assert not device.uses_torch("cpu")
    assert device.uses_torch("torch-cpu") and device.uses_torch("cuda:1")
    with pytest.raises(ValueError, match="NumPy path"):
        device.torch_device("cpu")


def test_resolve_cpu_needs_nothing(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)          # as if torch were not installed
    assert device.resolve("cpu") == ("cpu", None)
    assert not device.uses_torch("cpu")
    with pytest.raises(ValueError, match="NumPy path"):      # the same answer as with torch
        device.torch_device("cpu")


def test_without_torch_cuda_is_refused_and_auto_falls_back(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(device.DeviceUnavailable, match=r"the GPU path needs torch: pip install torch \(the build for your CUDA"):
        device.resolve("cuda")
    dev, note = device.resolve("auto")
    assert dev == "cpu" and "auto" in note and "CPU" in note
    assert not device.cuda_available()
    with pytest.raises(device.DeviceUnavailable, match="needs torch"):
        device.torch_device("torch-cpu")


def test_without_a_gpu_cuda_is_refused(monkeypatch):
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(device.DeviceUnavailable, match="sees no CUDA GPU"):
        device.resolve("cuda")
    with pytest.raises(device.DeviceUnavailable, match="sees no CUDA GPU"):
        device.torch_device("cuda")
    assert device.resolve("auto")[0] == "cpu"
    assert device.torch_device("torch-cpu") == torch.device("cpu")


def test_resolve_refuses_unknown_values():
    with pytest.raises(ValueError, match="cpu, cuda, auto"):
        device.resolve("gpu")


def test_out_of_memory_is_recognised():
    class OutOfMemoryError(RuntimeError):
        pass

    assert device.is_out_of_memory(OutOfMemoryError("whatever"))
    assert device.is_out_of_memory(RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB"))
    assert not device.is_out_of_memory(MemoryError("host memory"))
    assert not device.is_out_of_memory(ValueError("bad input"))
