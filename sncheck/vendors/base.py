"""What a vendor plug-in provides, and what a platform sets.

A vendor is one package ``sncheck/vendors/<vendor>/`` whose ``plugin.py`` defines
``VENDOR = Vendor(...)``; :mod:`sncheck.vendors.registry` finds them. Nothing registers
itself on import: the registry reads ``VENDOR`` from each package's ``plugin`` module.

A :class:`Platform` (``platform:`` in an inventory) names a vendor and carries the
design values the inventory may leave out, the cards per host and how the OS counts
them, the scale-up domain size, the fact commands that apply and the numbers the
vendor's checks read (``params``: NVLink links per GPU and their speed, the fabric
retry window, HBM capacity...).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sncheck.vendors.facts import FactCommand, Parser

# (platform, supernode name, its hosts in inventory order, the host_fact rows of those
# hosts, the inventory's Host of each (address, imex_address)) -> more host_fact rows:
# the cross-host step over a whole scale-up domain. Every backend passes all five.
DomainCheck = Callable[["Platform", str, tuple[str, ...], list[dict], Mapping[str, Any]], list[dict]]


@dataclass(frozen=True)
class CollectiveTool:
    """The vendor's collective benchmark: program per collective, and its parser."""

    name: str                          # nccl-tests | rccl-tests | hccl_test
    programs: Mapping[str, str]        # collective -> binary name
    parse: Parser
    launcher: str = "mpirun"           # how it is started (sncheck.launch builds the line)


@dataclass(frozen=True)
class Platform:
    name: str
    vendor: str
    description: str
    cards_per_host: int                 # ranks per host, as the collective library sees them
    devices_per_package: int = 1        # a 910C package is two devices to the OS
    design: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # tier -> (bandwidth, latency)
    domain_hosts: int | None = None     # hosts in one scale-up domain (an NVL72 rack: 18 trays)
    checks: tuple[str, ...] = ()        # the fact commands that apply, by name
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def domain_cards(self) -> int | None:
        return self.domain_hosts * self.cards_per_host if self.domain_hosts else None


@dataclass(frozen=True)
class Vendor:
    name: str
    commands: Mapping[str, FactCommand]          # every fact command this vendor knows
    facts: Mapping[str, tuple[str, str]]         # fact -> (command, what makes it fail)
    parsers: Mapping[str, Parser]                # `sncheck parse` tool name -> parser
    platforms: Mapping[str, Platform]
    default_checks: tuple[str, ...] = ()         # commands for a host whose inventory names no platform
    collective: CollectiveTool | None = None
    torch_device: str = "cuda"                   # the torch probe's device type
    dist_backend: str = "nccl"                   # and its torch.distributed backend
    # the environment variable that masks cards for a job (an isolated card is left out)
    visible_devices_env: str = "CUDA_VISIBLE_DEVICES"
    domain_check: DomainCheck | None = None

    def commands_for(self, platform: Platform | None) -> list[FactCommand]:
        names = platform.checks if platform else self.default_checks
        return [self.commands[n] for n in names]
