"""``ibstat`` output for a simulated host, rendered from a real capture.

The interface is :mod:`sncheck.vendors.sim`: ``COMMANDS`` and ``render(command, state)``.

The simulated host has one HDR InfiniBand adapter per card (rail-aligned, as on HGX
hosts): CA ``mlx5_<i>`` serves rail i. CA i is CA block i mod 8 of
``ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt`` (ConnectX-6, port 1 Active /
LinkUp at 200, its own GUIDs and LIDs; past the 8th, the GUIDs moved: :func:`_copy`), named ``mlx5_<i>``; the capture's closing
``ibpanic`` line is a real fault and is left out.

``ib_port_down`` (port p) acts out on CA ``mlx5_<p-1>``: ``State: Down``,
``Physical state: Polling`` (no peer on the cable), ``Rate: 10``, as ibstat prints a
port whose link is gone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from sncheck.vendors.infiniband import ibstat
from sncheck.vendors.infiniband.checks import rail_adapters
from sncheck.vendors.sim import HostState, ToolOutput, capture

COMMANDS = ("ibstat",)

IBSTAT_CAPTURE = "ib/03_ibstat_a100_azure_8xIB200_ibpanic_error.txt"
DOWN = {"State": "Down", "Physical state": "Polling", "Rate": "10"}
_FIELD = re.compile(r"^(\s*)([A-Za-z][A-Za-z ]*?):\s*(.*)$")


ROCE_CAPTURE = "ib/04_ibstat_h100_roce_12CA_all_active_eth.txt"


@lru_cache(maxsize=4)
def _ca_templates(name: str = IBSTAT_CAPTURE) -> tuple[tuple[str, ...], ...]:
    """The capture's CA blocks, without a closing ibpanic line."""
    lines = [ln for ln in capture(name).splitlines() if not ln.startswith("ibpanic")]
    starts = [i for i, ln in enumerate(lines) if ln.startswith("CA '")] + [len(lines)]
    return tuple(tuple(lines[a:b]) for a, b in zip(starts, starts[1:]))


_GUID = re.compile(r"(GUID: 0x)([0-9a-fA-F]{16})\b")


def _copy(block: Sequence[str], k: int) -> list[str]:
    """The ``k``-th copy of a CA block (a host of more cards than the capture has CAs): its GUIDs
    moved by ``k``, as another adapter's are its own (one node GUID under two CAs is one CA
    listed twice: the ibstat view refuses it, hostile round 21)."""
    if not k:
        return list(block)
    return [_GUID.sub(lambda m: f"{m[1]}{int(m[2], 16) ^ (k << 24):016x}", line) for line in block]


def _down(block: Sequence[str]) -> list[str]:
    out = []
    for line in block:
        m = _FIELD.match(line)
        if m and m.group(2) in DOWN:
            line = f"{m.group(1)}{m.group(2)}: {DOWN[m.group(2)]}"
        out.append(line)
    return out


def render_ibstat(state: HostState, name: str = IBSTAT_CAPTURE) -> str:
    """``ibstat`` of the host. From the HDR capture (the default): one CA per card,
    ``mlx5_<i>`` serving rail i. From a capture of a whole host (``ROCE_CAPTURE``): its
    CAs as they are; rail i is the i-th of its rail adapters as the check tells them
    (:func:`sncheck.vendors.infiniband.checks.rail_adapters`). ``ib_port_down`` (port p)
    takes rail p-1's port Down."""
    down = {int(f.port or 1) - 1 for f in state.host_faults("ib_port_down")}
    templates = _ca_templates(name)
    if name == IBSTAT_CAPTURE:
        out: list[str] = []
        for i in range(state.cards):
            ca_block = [f"CA 'mlx5_{i}'", *_copy(templates[i % len(templates)][1:], i // len(templates))]
            out += _down(ca_block) if i in down else ca_block
        return "\n".join(out) + "\n"
    cas = ibstat.parse_ibstat("\n".join(ln for t in templates for ln in t))["cas"]
    rails = rail_adapters(cas, state.cards)
    if rails is None and down:
        raise LookupError(f"{name}: cannot tell the rails of {state.cards} cards")
    gone = {rails[r] for r in down if rails and r < len(rails)}
    out = []
    for block in templates:
        ca = block[0].split("'")[1]
        out += _down(block) if ca in gone else list(block)
    return "\n".join(out) + "\n"


def render(command: str, state: HostState) -> ToolOutput:
    """The output of fact command ``command`` (``ibstat``) on the simulated host ``state``."""
    if command != "ibstat":
        raise KeyError(command)
    return ToolOutput(0, render_ibstat(state))
