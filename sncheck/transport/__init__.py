"""SSH transport: quoted commands, one connection per host, fan-out over many.

from sncheck.transport import Connection, resolve_host, run_on_all

spec = resolve_host("node001", {"address": "10.0.0.1"})
with Connection(spec) as conn:
    result = conn.run(["nvidia-smi", "-L"], timeout=30)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sncheck.transport.command import build_command
from sncheck.transport.result import Result

if TYPE_CHECKING:
    from sncheck.transport.connection import Connection
    from sncheck.transport.group import Ahead, GroupResult, HostTaskError, fan_out, run_on_all
    from sncheck.transport.sshconfig import HostSpec, load_ssh_config, peer_names_dialled, resolve_host, shared_endpoints

# The names whose modules import paramiko (and with it invoke and cryptography: 0.13-0.2 s)
# load when first asked for: a run on the mock, local or Slurm backend never asks.
_LAZY = {"Connection": "connection", "Ahead": "group", "GroupResult": "group", "HostTaskError": "group",
         "fan_out": "group", "run_on_all": "group", "HostSpec": "sshconfig", "load_ssh_config": "sshconfig",
         "peer_names_dialled": "sshconfig", "resolve_host": "sshconfig", "shared_endpoints": "sshconfig"}


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)

__all__ = [
    "Ahead",
    "Connection",
    "GroupResult",
    "HostSpec",
    "HostTaskError",
    "Result",
    "build_command",
    "fan_out",
    "load_ssh_config",
    "peer_names_dialled",
    "resolve_host",
    "run_on_all",
    "shared_endpoints",
]
