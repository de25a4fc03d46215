"""``ibstat`` output for a simulated host, rendered from a real capture.

The interface is :mod:`sncheck.vendors.sim`: ``COMMANDS`` and ``render(command, state)``.

The simulated host has one HDR InfiniBand adapter per card (rail-aligned, as on HGX
hosts): CA ``mlx5_<i>`` serves rail i. CA i is CA block i mod 8 of
``ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt`` (ConnectX-6, port 1 Active /
LinkUp at 200, its own GUIDs and LIDs), named ``mlx5_<i>``; the capture's closing
``ibpanic`` line is a real fault and is left out.

``ib_port_down`` (port p) acts out on CA ``mlx5_<p-1>``: ``State: Down``,
``Physical state: Polling`` (no peer on the cable), ``Rate: 10``, as ibstat prints a
port whose link is gone.
"""

from __future__ import annotations

import re
from functools import lru_cache

from sncheck.vendors.sim import HostState, ToolOutput, capture

COMMANDS = ("ibstat",)

IBSTAT_CAPTURE = "ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt"
DOWN = {"State": "Down", "Physical state": "Polling", "Rate": "10"}
_FIELD = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*?):\s*(.*)$")


@lru_cache(maxsize=1)
def _ca_templates() -> tuple[tuple[str, ...], ...]:
    """The capture's CA blocks, without the closing ibpanic line."""
    lines = [ln for ln in capture(IBSTAT_CAPTURE).splitlines() if not ln.startswith("ibpanic")]
    starts = [i for i, ln in enumerate(lines) if ln.startswith("CA '")] + [len(lines)]
    return tuple(tuple(lines[a:b]) for a, b in zip(starts, starts[1:]))


def _ca_block(index: int, down: bool) -> list[str]:
    templates = _ca_templates()
    out = [f"CA 'mlx5_{index}'"]
    for line in templates[index % len(templates)][1:]:
        m = _FIELD.match(line)
        if down and m and m.group(2) in DOWN:
            line = f"{m.group(1)}{m.group(2)}: {DOWN[m.group(2)]}"
        out.append(line)
    return out


def render_ibstat(state: HostState) -> str:
    down = {int(f.port or 1) - 1 for f in state.host_faults("ib_port_down")}
    out: list[str] = []
    for i in range(state.cards):
        out += _ca_block(i, i in down)
    return "\n".join(out) + "\n"


def render(command: str, state: HostState) -> ToolOutput:
    """The output of fact command ``command`` (``ibstat``) on the simulated host ``state``."""
    if command != "ibstat":
        raise KeyError(command)
    return ToolOutput(0, render_ibstat(state))
