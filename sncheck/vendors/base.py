"""What a vendor plug-in provides, and what a platform sets.

A vendor is one package ``sncheck/vendors/<vendor>/`` whose ``plugin.py`` defines
``VENDOR = Vendor(...)``, listed once in :data:`sncheck.vendors.registry.BUILTIN` (or
by a third party in the ``sncheck.vendors`` entry-point group). Nothing registers
itself on import.

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
from sncheck.vendors.listing import Listing

# (platform, supernode name, its hosts in inventory order, the host_fact rows of those
# hosts, the inventory's Host of each (address, imex_address)) -> more host_fact rows:
# the cross-host step over a whole scale-up domain. Every backend passes all five.
DomainCheck = Callable[["Platform", str, tuple[str, ...], list[dict], Mapping[str, Any]], list[dict]]


# (collective, min bytes, max bytes, step_factor=, iters=, warmup=, directory=) -> argv
CollectiveArgv = Callable[..., list[str]]
# (parsed log, the stress group, collective, repeat) -> collective rows
CollectiveRows = Callable[[dict, Any, str, int], list[dict]]


@dataclass(frozen=True)
class CollectiveTool:
    """The vendor's collective benchmark: its program per collective, its parser, and,
    when sncheck can launch it as the stress layer's collectives (the SSH and Slurm
    backends, through the inventory's ``launcher``), its command line and the rows made
    from a parsed log. Without ``argv`` it is a ``sncheck parse`` tool only, and the
    collectives run in the torch probe."""

    name: str                          # nccl-tests | rccl-tests | hccl_test
    programs: Mapping[str, str]        # collective -> binary name
    parse: Callable[..., dict[str, Any]]  # (text, collective=None) -> the parsed log
    argv: CollectiveArgv | None = None
    rows: CollectiveRows | None = None

    def program(self) -> str:
        """The binary looked for on a host's PATH to tell whether the tool is installed."""
        return self.programs.get("all_reduce") or next(iter(self.programs.values()))


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
    card_memory_GiB: float | None = None  # memory per rank (sncheck plan), when the platform fixes it
    # Dense tensor-core TFLOP/s per rank by training precision (sncheck plan's time account);
    # a precision left out has no published figure here: --peak-tflops gives it.
    peak_tflops: Mapping[str, float] = field(default_factory=dict)

    @property
    def domain_cards(self) -> int | None:
        return self.domain_hosts * self.cards_per_host if self.domain_hosts else None


@dataclass(frozen=True)
class View:
    """A parse view (``sncheck parse NAME``): its parser, and what one record of its output
    is (:class:`sncheck.vendors.listing.Listing`: for ``--expect N`` and a cut last record;
    None for a view with no records to count, a log or a one-off answer). Its grammar is
    written in ``GRAMMAR`` of the parser's module (:mod:`sncheck.vendors.grammar`)."""

    parse: Parser
    listing: Listing | None = None
    stamped: bool = False  # the grammar's lines start with their time (a log): delivery keeps it


@dataclass(frozen=True)
class CardListing:
    """How a host lists its cards: the fact command whose output lists them, and the
    count of cards in its parsed output (``node-check`` without an inventory or GRES)."""

    command: str
    count: Callable[[dict[str, Any]], int]


@dataclass(frozen=True)
class PairTest:
    """A scale-out test between two hosts' NICs on one rail (perftest): a server on one
    host, a client on the other; the client's output is judged."""

    tool: str                            # the program, the plan's tool name, the inventory's checks: key
    fact: str                            # the host_fact its check makes (ib_bw, ib_lat)
    argv: Callable[[str, int, str | None], list[str]]  # (NIC device, port, server address; None: the server)
    parse: Parser
    judged_against: str                  # "nic_rate" (the NIC's port rate) | "design_latency" (scale_out)
    check: Callable[[str, dict[str, Any], float, str], list[dict]]  # (host, parsed, that bound, peer) -> rows


@dataclass(frozen=True)
class ScaleOut:
    """A host's scale-out NICs and the tests between them (:mod:`sncheck.backends.scaleout`)."""

    nic_tool: str                                    # the program that lists the NICs (rail k = the k-th)
    nic_argv: tuple[str, ...]
    nic_rails: Callable[[str], list[tuple[str, float | None]]]   # its output -> [(device, rate Gb/s)]
    pair_tests: Mapping[str, PairTest]               # tool -> test
    base_port: int                                   # rail k's server listens on base_port + k
    not_listening: Callable[[str], bool]             # client output: the server was not up yet
    # the NICs' port error counters, read before and after the run (sncheck.backends.hostreads)
    counters_tool: str = "ib-counters"
    counters_argv: Callable[[str], list[str]] | None = None     # (sysfs root) -> argv
    parse_counters: Parser | None = None
    error_counters: tuple[str, ...] = ()             # the counters whose growth is a fault
    counters: tuple[str, ...] = ()                   # every counter its read may name (rules name them)
    rails: Callable[[list[str]], dict[str, int]] | None = None  # NIC devices -> rail
    # other views of the same port counters (the fabric's PMA reads: perfquery, ibqueryerrors),
    # judged as the counter read is (sncheck parse: a lone read the value before, --since growth)
    counter_views: tuple[str, ...] = ()
    # those of them listing only the ports whose counters are over the tool's thresholds (ibqueryerrors):
    # with --since a port no longer listed is not lost, one listed now and not before is not judged
    over_threshold_views: tuple[str, ...] = ()


@dataclass(frozen=True)
class CopyBench:
    """A host's own copy test between its cards (nvbandwidth, TransferBench p2p)."""

    tool: str                   # the plan's tool name and the inventory's checks: key
    argv: tuple[str, ...]
    parse: Parser
    # (host, parsed, the inventory's scale-up design GB/s or None, the platform's params) -> rows
    check: Callable[[str, dict[str, Any], float | None, Mapping[str, Any]], list[dict]]
    card_fact: str              # the card-to-card fact a host of two or more cards must get
    facts: tuple[str, ...] = ()  # the other facts its check may make (host-to-card copies)


@dataclass(frozen=True)
class BusListing:
    """How the kernel log's reports name cards: the fact commands whose output lists each
    card's bus id, and (the host's raw outputs kept so far, what its inventory says) ->
    bus id -> card index (None where that listing does not name every card)."""

    commands: tuple[str, ...]
    buses: Callable[[list[dict], Any], dict[str, int | None]]


@dataclass(frozen=True)
class Vendor:
    name: str
    commands: Mapping[str, FactCommand]          # every fact command this vendor knows
    facts: Mapping[str, tuple[str, str]]         # fact -> (command, what makes it fail)
    views: Mapping[str, View]                    # `sncheck parse` tool name -> its parser and listing
    platforms: Mapping[str, Platform]
    default_checks: tuple[str, ...] = ()         # commands for a host whose inventory names no platform
    collective: CollectiveTool | None = None
    torch_device: str = "cuda"                   # the torch probe's device type
    dist_backend: str = "nccl"                   # and its torch.distributed backend
    torch_module: str | None = None              # the module that gives torch the device (torch_npu)
    card_listing: CardListing | None = None
    scale_out: ScaleOut | None = None            # the NICs and the pair tests between hosts
    copy_bench: CopyBench | None = None          # the copy test inside a host
    bus_listing: BusListing | None = None
    # the environment variable that masks cards for a job (an isolated card is left out)
    visible_devices_env: str = "CUDA_VISIBLE_DEVICES"
    domain_check: DomainCheck | None = None
    # words that name the vendor's driver in kernel log lines (NVRM, amdgpu): the lines an
    # evidence bundle keeps
    kernel_log_words: tuple[str, ...] = ()

    def commands_for(self, platform: Platform | None) -> list[FactCommand]:
        names = platform.checks if platform else self.default_checks
        return [self.commands[n] for n in names]
