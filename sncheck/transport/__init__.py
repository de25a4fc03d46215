"""SSH transport: quoted commands, one connection per host, fan-out over many.

from sncheck.transport import Connection, resolve_host, run_on_all

spec = resolve_host("node001", {"address": "10.0.0.1"})
with Connection(spec) as conn:
    result = conn.run(["nvidia-smi", "-L"], timeout=30)
"""

from sncheck.transport.command import build_command
from sncheck.transport.connection import Connection
from sncheck.transport.group import Ahead, GroupResult, HostTaskError, fan_out, run_on_all
from sncheck.transport.result import Result
from sncheck.transport.sshconfig import HostSpec, load_ssh_config, peer_names_dialled, resolve_host, shared_endpoints

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
