"""Simulated tool output: the one interface between the mock backend and each vendor package.

The mock backend does not invent host facts. For each fact command of a host (its
platform's, ``registry.vendor_of(platform).commands_for(platform)``, the ones the SSH
backend runs), it asks the vendor package that parses that tool to *render* the tool's
output for the host's state, then parses and checks it with
:func:`sncheck.vendors.facts.check_host`, the same code path as the SSH backend, and
judges each supernode with the vendor's domain check, as the SSH backend does.
Renderers build their output from the real captures in ``fixtures/real/``
(:func:`sncheck.vendors.captures.capture`), so the parsers see the layouts real tools
print.

The interface, kept small on purpose:

* a vendor renders in its package's ``sim`` module (``sncheck/vendors/<vendor>/sim.py``),
  one function: ``render(command: str, state: HostState) -> ToolOutput | None``, the
  output of fact command ``command`` (``FactCommand.name``) on a host in ``state``;
  None where it has no output for that command on the host's platform (the mock then
  reports a harness gap, never a pass). A vendor with several platforms dispatches on
  ``state.platform`` (NVIDIA: HGX-class hosts, and NVL72 trays in ``nvidia/sim_fabric.py``);
  a tool several vendors share may be rendered by a helper package (``infiniband/sim.py``);
  :func:`simulator` finds the module from the host's platform (nothing registers
  itself on import);
* :class:`HostState` is what a renderer may read: the host's name, how many cards the
  OS shows, its platform's name (``None``: the vendor's default, an HGX-class host; the
  :class:`~sncheck.vendors.base.Platform` itself is ``registry.platform(name)``), the
  size of its scale-up domain and its place in it, the places of the hosts of its
  domain whose IMEX daemon is down (every tray's ``nvidia-imex-ctl`` shows them), the
  inventory's IMEX addresses of the domain's hosts where it gives them, and
  the host-level faults in effect there (a fault plan's ``tool`` and ``platform``
  faults, transient ones dropped once they have ended);
* :class:`ToolOutput` is what the tool printed and its exit status. A renderer acts
  out the faults of its tool (a pending remap, links down, a port Down, a fabric In
  Progress) and ignores the rest; ``missing_tool`` is acted out before any renderer
  runs (exit 127);
* output depends on the state only, never on the host's name: the mock renders and
  checks each distinct state once (a host name placeholder stands in) and relabels
  the rows for every host in that state. Serial numbers and GUIDs are the capture's
  own, as a replay would show them; a GPU's UUID is the host's own (:func:`own_ids`:
  the capture's, moved by the host's name, applied to the rows' and the output's text
  once a host is named), as one UUID is one card in the world.

Rendered output carries no simulator words: it reads like the real tool's.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from types import ModuleType
from typing import TYPE_CHECKING

from sncheck.config.faultplan import FAULT_TYPES, HOST_TOOL_FAULTS, Fault
from sncheck.model import rail_of
from sncheck.vendors import registry
from sncheck.vendors.captures import capture  # noqa: F401 (renderers read the real captures through it)
from sncheck.vendors.identity import own_ids  # noqa: F401 (the harnesses' rewrite: each host's own devices)

if TYPE_CHECKING:
    from sncheck.topology import Topology


@dataclass(frozen=True)
class ToolOutput:
    """What a tool printed, and its exit status (127: not on the PATH)."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration: float | None = None
    cut_at: int | None = None  # it printed more than this many bytes and was killed (transport.Result's)


@dataclass(frozen=True)
class HostState:
    """One simulated host, as a renderer sees it."""

    host: str
    cards: int
    platform: str | None = None  # the platform's name (sncheck.vendors.registry.platform)
    faults: tuple[Fault, ...] = field(default_factory=tuple)
    domain_hosts: int | None = None  # hosts in this host's scale-up domain (its supernode)
    index: int = 0  # its place in that domain (0-based; 0 for a host on no platform)
    down_in_domain: tuple[int, ...] = ()  # places of the domain's hosts whose IMEX is down
    # the inventory's imex_address of each host of the domain, in its order (() when none
    # gives one): a simulated IMEX node list shows these, as the real one would
    domain_addresses: tuple[str | None, ...] = ()

    def card_faults(self, index: int, ftype: str) -> list[Fault]:
        """The faults of type ``ftype`` on card ``index`` of this host."""
        card = f"{self.host}/gpu{index}"
        return [f for f in self.faults if f.type == ftype and f.target == card]

    def host_faults(self, ftype: str) -> list[Fault]:
        """The faults of type ``ftype`` that target the host itself."""
        return [f for f in self.faults if f.type == ftype and f.target == self.host]


def simulator(platform: str | None) -> ModuleType | None:
    """The ``sim`` module of the vendor of ``platform`` (None: the default vendor's), or
    None when that vendor renders nothing."""

    vendor = registry.vendor_of(registry.platform(platform) if platform else None)
    name = f"{__package__}.{vendor.name}.sim"
    return importlib.import_module(name) if importlib.util.find_spec(name) is not None else None


# How the mock acts out the fault types no tool renders, on every platform (probe and
# network faults: its cost model; missing_tool: exit 127 before any renderer runs).
EVERY_PLATFORM = {
    "slow_card": "mock model: the card's links and compute at factor x",
    "high_latency_card": "mock model: the card's latency x factor",
    "jittery_card": "mock model: latency spikes x factor with probability",
    "corrupt_card": "mock model: its p2p payloads and collectives wrong",
    "collective_corruption": "mock model: reductions through it wrong, p2p intact",
    "diverge": "mock model: the golden loss diverges",
    "degraded_link": "mock model: the link at factor x",
    "dead_link": "mock model: the link carries nothing",
    "down_host": "mock model: unreachable (connect timed out)",
    "missing_tool": "the tool exits 127 `not found` (a tool the platform's fact commands run)",
}


def acted_out(platform: str | None) -> dict[str, str]:
    """Fault type -> how the simulator acts it out on a host of ``platform`` (None: an
    inventory without one). A host-tool fault type not listed cannot be acted out there."""
    sim = simulator(platform)
    own = dict(getattr(sim, "ACTED", {}).get(platform, {})) if sim is not None else {}
    return {**EVERY_PLATFORM, **own}


def refusal(platform: str | None, ftype: str, card: int | None = None, tool: str | None = None,
            tools: tuple[str, ...] = ()) -> str | None:
    """Why a fault of ``ftype`` (on card index ``card``, or of missing ``tool``) cannot be
    acted out on a host of ``platform`` whose fact commands run ``tools``; None when it can."""
    where = platform or "a host with no platform (nvidia defaults)"
    how = acted_out(platform)
    if ftype not in how:
        return f"{ftype} cannot be acted out on {where}: its tools have no way to show it"
    if ftype == "missing_tool" and tool not in tools:
        return (f"missing_tool {tool!r} cannot be acted out on {where}: its fact commands run "
                f"{', '.join(sorted(set(tools))) or 'no tool'}")
    sim = simulator(platform)
    shown = getattr(sim, "RENDERED_CARDS", {}).get(platform) if sim is not None else None
    if card is not None and shown is not None and card >= shown and ftype not in EVERY_PLATFORM:
        return f"{ftype} on card {card} cannot be acted out on {platform}: its tool output lists {shown} cards"
    return None


def cannot_act_out(fault: Fault, topo: Topology) -> str | None:
    """Why the host's tools cannot show ``fault`` (its platform renders no such output), or
    None: the fault plan's refusal (:data:`sncheck.config.faultplan.Refusal`). Only faults the
    host's own tools report are judged here: the others are the mock's cost model, the same
    on every platform."""
    if fault.type not in HOST_TOOL_FAULTS:
        return None
    inv = topo.inventory
    plat = inv.platform_of(fault.host)
    off = {tool for tool, on in inv.checks_of(fault.host).items() if not on}
    tools = tuple(c.tool for c in registry.vendor_of(plat).commands_for(plat) if c.tool not in off)
    card = rail_of(fault.target) if FAULT_TYPES[fault.type].target == "card" else None
    return refusal(plat.name if plat else None, fault.type, card=card, tool=fault.tool, tools=tools)


def fault_table() -> str:
    """The README's table: fault type x platform -> how the simulator acts it out, or
    refused when the plan loads (exit 2, the fault plan's file and line)."""
    columns: list[tuple[list[str], dict[str, str]]] = []  # platforms that act alike share a column
    for name, plat in [("no platform", None)] + [(f"`{n}`", n) for n in sorted(registry.platforms())]:
        table = acted_out(plat)
        same = next((c for c in columns if c[1] == table), None)
        if same is None:
            columns.append(([name], table))
        else:
            same[0].append(name)
    tables = [t for _, t in columns]
    out = ["| fault type | " + " | ".join(", ".join(names) for names, _ in columns) + " |",
           "|---" * (len(columns) + 1) + "|"]
    model = [t for t in FAULT_TYPES if t not in HOST_TOOL_FAULTS]
    out.append("| " + ", ".join(f"`{t}`" for t in model) + " | "
               + " | ".join("mock model (every platform)" for _ in columns) + " |")
    for t in HOST_TOOL_FAULTS:
        cells = [table.get(t, "refused (exit 2)") for table in tables]
        out.append(f"| `{t}` | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def not_found(tool: str) -> ToolOutput:
    """What a POSIX shell prints for a program that is not on the PATH."""
    return ToolOutput(127, "", f"sh: 1: {tool}: not found\n")
