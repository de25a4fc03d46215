"""The torch probe's device and torch.distributed backend (runs on the hosts).

Each vendor plug-in names its pair (:class:`sncheck.vendors.base.Vendor`): NVIDIA and
AMD ``cuda`` + ``nccl`` (ROCm builds put HIP behind ``torch.cuda`` and RCCL behind
"nccl"), Huawei Ascend ``npu`` + ``hccl`` through ``torch_npu``, which registers
``torch.npu`` and the "hccl" backend when imported. The job carries the explicit
``dist_backend`` (``gloo`` | ``nccl`` | ``hccl``, from the CLI or the inventory) and the
vendor's ``torch_device``:

* ``gloo``: the CPU, one process per card, whatever the vendor;
* ``nccl``: ``cuda:LOCAL_RANK``;
* ``hccl``, or no backend named and the vendor's device ``npu``: ``npu:LOCAL_RANK``,
  which needs ``torch_npu``; without it (or without an NPU it can see) the probe stops
  with :class:`DeviceUnavailableError`, never falling back to the CPU, which would
  measure the wrong thing;
* no backend named otherwise: ``nccl`` on ``cuda`` where CUDA is available, else ``gloo``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

BACKEND_DEVICE = {"gloo": "cpu", "nccl": "cuda", "hccl": "npu"}
DEVICE_MODULES = {"npu": "torch_npu"}  # device type -> the module that registers it with torch


class DeviceUnavailableError(RuntimeError):
    """The job asks for an accelerator this host's Python cannot drive."""


@dataclass(frozen=True)
class Device:
    backend: str  # the torch.distributed backend: gloo | nccl | hccl
    kind: str     # the torch device type: cpu | cuda | npu

    @property
    def accelerated(self) -> bool:
        return self.kind != "cpu"

    def torch_device(self, torch: Any, local_rank: int) -> Any:
        return torch.device(f"{self.kind}:{local_rank}") if self.accelerated else torch.device("cpu")

    def module(self, torch: Any) -> Any:
        """``torch.cuda`` or ``torch.npu``: set_device, synchronize, device_count."""
        return getattr(torch, self.kind)


def choose(dist_backend: str | None, torch_device: str | None, torch: Any,
           importer: Callable[[str], Any] = importlib.import_module, vendor_backend: str | None = None) -> Device:
    """The device and backend of a job (see the module docstring). ``vendor_backend`` is
    the vendor plug-in's backend on its device (nccl, hccl), taken when no backend is
    named. ``importer`` imports a device's module (``torch_npu``); tests pass their own."""
    if dist_backend is not None and dist_backend not in BACKEND_DEVICE:
        raise DeviceUnavailableError(f"unknown dist_backend {dist_backend!r}; known: {', '.join(BACKEND_DEVICE)}")
    if dist_backend == "gloo":
        return Device("gloo", "cpu")
    kind = BACKEND_DEVICE[dist_backend] if dist_backend else torch_device
    if kind in DEVICE_MODULES:
        _require(kind, torch, importer)
        return Device(dist_backend or vendor_backend or _backend_of(kind), kind)
    if dist_backend == "nccl":
        return Device("nccl", "cuda")
    return Device(vendor_backend or "nccl", "cuda") if torch.cuda.is_available() else Device("gloo", "cpu")


def _backend_of(kind: str) -> str:
    return next(b for b, k in BACKEND_DEVICE.items() if k == kind)


def _require(kind: str, torch: Any, importer: Callable[[str], Any]) -> None:
    name = DEVICE_MODULES[kind]
    backend = _backend_of(kind)
    try:
        importer(name)
    except ImportError as e:
        raise DeviceUnavailableError(
            f"the {backend} backend ({kind} devices) needs {name}, which this Python cannot import ({e}); "
            f"install the {name} build that matches torch {getattr(torch, '__version__', '?')}, "
            f"or run on CPU with --dist-backend gloo") from e
    mod = getattr(torch, kind, None)
    if mod is None or not mod.is_available():
        raise DeviceUnavailableError(f"{name} is installed but torch sees no {kind} device on this host")
