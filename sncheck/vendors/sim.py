"""Simulated tool output: the interface between the mock backend and each vendor package.

The mock backend does not invent host facts. For each fact command of a host (its
platform's, ``registry.vendor_of(platform).commands_for(platform)``, the ones the SSH
backend runs), it asks the
vendor package that parses that tool to *render* the tool's output for the host's
state, then parses and checks it with :func:`sncheck.vendors.facts.check_host`, the same
code path as the SSH backend. Renderers build their output from the real captures in
``fixtures/real/`` (:func:`sncheck.vendors.captures.capture`), so the parsers see
the layouts real tools print.

The interface, kept small on purpose:

* a vendor's ``sim`` module (``sncheck/vendors/<vendor>/sim.py``) exposes
  ``COMMANDS: tuple[str, ...]``, the fact command names (``FactCommand.name``, as its
  plug-in's ``commands`` name them) it renders, and
  ``render(command: str, state: HostState) -> ToolOutput``;
* :class:`HostState` is what a renderer may read: the host's name, how many cards the
  OS shows, its platform's name (``None``: the vendor's default, an HGX-class host; the
  :class:`~sncheck.vendors.base.Platform` itself is ``registry.platform(name)``), the
  size of its scale-up domain, and the
  host-level faults in effect there (a fault plan's ``tool`` and ``platform`` faults,
  transient ones dropped once they have ended);
* :class:`ToolOutput` is what the tool printed and its exit status. A renderer acts
  out the faults of its tool (a pending remap, links down, a port Down) and ignores the
  rest; ``missing_tool`` is acted out before any renderer runs (exit 127);
* the registry of sim modules is written out in :mod:`sncheck.backends.mockfacts`
  (nothing registers itself on import);
* output depends on the state only, never on the host's name: the mock renders and
  checks each distinct state once (a host name placeholder stands in) and relabels
  the rows for every host in that state. Serial numbers, UUIDs and GUIDs are the
  capture's own, as a replay would show them.

Rendered output carries no simulator words: it reads like the real tool's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from ..faults import Fault
from .captures import capture  # noqa: F401 (renderers read the real captures through it)


@dataclass(frozen=True)
class ToolOutput:
    """What a tool printed, and its exit status (127: not on the PATH)."""

    exit_code: int
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration: float | None = None


@dataclass(frozen=True)
class HostState:
    """One simulated host, as a renderer sees it."""

    host: str
    cards: int
    platform: str | None = None  # the platform's name (sncheck.vendors.registry.platform)
    faults: tuple[Fault, ...] = field(default_factory=tuple)
    domain_hosts: int | None = None  # hosts in this host's scale-up domain (its supernode)

    def card_faults(self, index: int, ftype: str) -> list[Fault]:
        """The faults of type ``ftype`` on card ``index`` of this host."""
        card = f"{self.host}/gpu{index}"
        return [f for f in self.faults if f.type == ftype and f.target == card]

    def host_faults(self, ftype: str) -> list[Fault]:
        """The faults of type ``ftype`` that target the host itself."""
        return [f for f in self.faults if f.type == ftype and f.target == self.host]



def not_found(tool: str) -> ToolOutput:
    """What a POSIX shell prints for a program that is not on the PATH."""
    return ToolOutput(127, "", f"sh: 1: {tool}: not found\n")
