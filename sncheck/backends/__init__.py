"""The backend registry: written out, so nothing registers itself on import."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from sncheck.errors import ConfigError, HarnessError

if TYPE_CHECKING:
    from sncheck.backends.base import Backend

# The one list of backend names: the inventory's backend.type and the CLI's --backend
# choices read it (importing this package loads no backend module).
BACKENDS: dict[str, tuple[str, str]] = {
    "mock": ("sncheck.backends.mock", "MockBackend"),
    "local": ("sncheck.backends.local", "LocalBackend"),
    "ssh": ("sncheck.backends.ssh", "SshBackend"),
    "slurm": ("sncheck.backends.slurm", "SlurmBackend"),  # from a Slurm login node, jobs through srun
}


def get_backend(name: str) -> type[Backend]:
    if name not in BACKENDS:
        raise ConfigError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    module, cls = BACKENDS[name]
    try:
        return getattr(import_module(module), cls)
    except ModuleNotFoundError as e:
        if e.name == "torch":
            raise HarnessError(f"the {name} backend needs torch: pip install 'sncheck[local]' "
                               "(torch==2.13.0 is the CPU build)") from e
        if e.name == module:
            raise HarnessError(f"the {name} backend is not available in this build") from e
        raise
