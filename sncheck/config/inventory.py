"""Load and validate an inventory YAML into typed objects.

Every error names the file and line and exits 2 through the CLI. The format is the
contract in DESIGN.md, extended with optional keys (marked below).
"""

from __future__ import annotations

import ipaddress
import socket
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Collection
from typing import TYPE_CHECKING, Annotated, Callable, Mapping, TypeVar

from pydantic import AfterValidator, BeforeValidator, Field

from sncheck.config import hostlist
from sncheck.errors import ConfigError
from sncheck.config.fabric import FabricSchema, FabricSpec, parse_fabric
from sncheck.config.schema import Choice, Flag, HostItems, Int, Num, Schema, Shape, Text, told, validate
from sncheck.config.units import parse_bandwidth, parse_latency
from sncheck.config.yamlio import LineDict, Source, load_file, load_text

if TYPE_CHECKING:  # the vendors' platforms, a layer above config: the loader is told them
    from sncheck.vendors.base import Platform

TIERS = ("intra_host", "scale_up", "scale_out")
T = TypeVar("T")
DIST_BACKENDS = ("gloo", "nccl", "hccl")  # torch.distributed backends the probe runs on (hccl: torch_npu)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SAFE_ADDRESS = re.compile(r"^[A-Za-z0-9._:-]+$")
# what the resolver's inet_aton reads as an IPv4 address: one to four parts, each decimal, octal (a
# leading 0) or hex (0x): '010.0.0.1' is 8.0.0.1, '10.0.12' is 10.0.0.12, '127.1' and '2130706433'
# are 127.0.0.1 (glibc getaddrinfo tries it before DNS)
_INET_ATON = re.compile(r"^(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}$")
# a login name: POSIX's portable set, '_' first, a directory user's '@realm', Samba's trailing '$';
# never a blank, a shell metacharacter or a leading '-' (an ssh option)
_SAFE_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@-]*\$?$")

# Bounds (README "Input bounds"): far above any real cluster, low enough that a typo
# cannot make sncheck plan for days or allocate gigabytes.
MAX_HOSTS = hostlist.MAX_HOSTS     # hosts in one inventory
MAX_CARDS_PER_HOST = 1024          # worker ranks per host (a CloudMatrix node has 16)
MAX_CARDS = 1_000_000              # cards in one inventory
MAX_TIMEOUT_S = 7 * 86400.0        # ssh connect/command timeouts, seconds
MAX_FORKS = 4096                   # hosts worked on at once over SSH
MAX_EXTRA_ARGS = 256
MAX_PARALLEL_STEPS = 1024          # srun steps at once from one login node (slurm backend)


@dataclass(frozen=True)
class TierDesign:
    bandwidth_GBps: float
    latency_us: float


def tier_design(design: Mapping[str, T], tier: str) -> T | None:
    """A tier's entry in a table of per-tier design values (TierDesign, or the dicts a
    calibration records): the one home of "intra-host pairs use the scale-up values
    unless the table gives intra_host its own"."""
    if tier == "intra_host" and "intra_host" not in design:
        tier = "scale_up"
    return design.get(tier)


@dataclass(frozen=True)
class Host:
    name: str
    supernode: str
    cards: int
    address: str | None = None
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None
    # The tray's IMEX address as nvidia-imex-ctl -N lists it (NVL72), canonical IP text;
    # None: its ``address`` is tried in its place.
    imex_address: str | None = None
    # Reached through an SSH gateway that routes by user (sshpiper): its address and port are
    # the gateway's, which other such hosts share, each with a user of its own; the hosts reach
    # each other by their inventory names (``SshJobs.peer_address``).
    ssh_gateway: bool = False


@dataclass(frozen=True)
class Supernode:
    name: str
    hosts: tuple[str, ...]
    platform: str | None = None   # a name in sncheck.vendors.registry.platforms() (Inventory.platforms)
    # Checks (tools) this cluster has or has not: {"dcgmi": False} skips dcgmi and records
    # it as skipped. The top level's, then the supernode's (which wins per tool).
    checks: tuple[tuple[str, bool], ...] = ()


@dataclass(frozen=True)
class SshDefaults:
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    known_hosts: str | None = None
    connect_timeout: float = 10.0
    command_timeout: float = 300.0
    forks: int = 32


@dataclass(frozen=True)
class Launcher:
    type: str = "mpirun"  # mpirun | srun
    extra_args: tuple[str, ...] = ()
    nccl_tests_dir: str | None = None
    # The slurm backend's srun steps running at once (a supernode's, a rail's): each is an
    # srun on the login node and a step slurmctld creates, so a fleet's 500 supernodes go
    # through in waves rather than all at once.
    parallel_steps: int = 32


@dataclass(frozen=True)
class Inventory:
    name: str
    supernodes: tuple[Supernode, ...]
    hosts: dict[str, Host]
    design: dict[str, TierDesign] = field(default_factory=dict)
    backend: str | None = None
    dist_backend: str | None = None
    near_budget_s: float | None = None  # backend.near_budget_s: None, the backend's own (Backend.near_budget)
    ssh: SshDefaults = SshDefaults()
    launcher: Launcher = Launcher()
    source: str = "<embedded>"
    description: str | None = None  # the inventory's own words about the cluster (``inventory check``)
    # The scale-out fabric as the inventory declares it (sncheck.config.fabric); None: derived
    # from the platform (sncheck.fabric: rail r serves card r, one leaf per rail).
    fabric: FabricSpec | None = None
    # The platforms its supernodes name, as the loader was told them (sncheck.vendors.registry).
    platforms: Mapping[str, Platform] = field(default_factory=dict, repr=False, compare=False)

    @property
    def card_count(self) -> int:
        return sum(h.cards for h in self.hosts.values())

    def supernode_of(self, host: str) -> Supernode:
        name = self.hosts[host].supernode
        return next(s for s in self.supernodes if s.name == name)

    def checks_of(self, host: str) -> dict[str, bool]:
        """Which checks (by tool name) the inventory switches on or off for ``host``."""
        return dict(self.supernode_of(host).checks)

    def platform_of(self, host: str) -> Platform | None:
        """The host's Platform (sncheck.vendors.base), or None when the inventory names none."""
        name = self.supernode_of(host).platform
        return None if name is None else self.platforms[name]

    def design_for(self, tier: str) -> TierDesign | None:
        """Design values of a tier (:func:`tier_design`)."""
        return tier_design(self.design, tier)


Count = Annotated[int, Int(1, MAX_CARDS_PER_HOST)]
Port = Annotated[int, Int(1, 65535)]
Seconds = Annotated[float, Num(0, MAX_TIMEOUT_S, lo_open=True, unit="seconds")]
Path_ = Annotated[str, Text()]
_TOOL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")
Checks = Annotated[dict[Annotated[str, Text(_TOOL, "is not a tool name")], Annotated[bool, Flag()]],
                   Shape("a mapping of tool name to true or false, e.g. {<tool>: false}")]
PlatformName = Annotated[str, Text(), told("platforms", lambda v, known: f"unknown platform {v!r}; choose one of: "
                                                                         f"{', '.join(sorted(known))}")]


def _ip(value: str) -> str:
    """An IP address (v4 or v6), in its canonical text (``ipaddress``)."""
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise ValueError(f"must be an IP address (as the IMEX node list names the node), got {value!r}") from None


def _unit(parse: Callable[[object], float]) -> Callable[[object], float]:
    def check(value: object) -> float:
        return parse(value)  # its ValueError names the unit and the value
    return check


class TierSchema(Schema):
    what = "design tier"
    bandwidth: Annotated[float, BeforeValidator(_unit(parse_bandwidth))]
    latency: Annotated[float, BeforeValidator(_unit(parse_latency))]


class DesignSchema(Schema):
    what = "design"
    intra_host: TierSchema | None = None
    scale_up: TierSchema | None = None
    scale_out: TierSchema | None = None


class BackendSchema(Schema):
    what = "backend"
    nullable = frozenset({"dist_backend"})
    type: Annotated[str, Text(), told("backends", lambda v, known: f"must be one of {', '.join(known)}, got {v!r}")]
    dist_backend: Annotated[str, Choice(DIST_BACKENDS)] | None = None
    near_budget_s: Seconds | None = None  # a near suspect's re-measurement, at most (Backend.near_budget)


def _backend(value: object) -> object:
    return {"type": value} if isinstance(value, str) else value  # ``backend: ssh``


class SshSchema(Schema):
    what = "ssh"
    user: Annotated[str, Text(_SAFE_USER)] | None = None  # as hosts.NAME.user ('root;id' was taken here)
    port: Port | None = None
    identity_file: Path_ | None = None
    known_hosts: Path_ | None = None
    connect_timeout: Seconds = SshDefaults.connect_timeout
    command_timeout: Seconds = SshDefaults.command_timeout
    forks: Annotated[int, Int(1, MAX_FORKS)] = SshDefaults.forks


class LauncherSchema(Schema):
    what = "launcher"
    nullable = frozenset({"nccl_tests_dir"})
    # Accepted and validated since the first inventory, never read: a host's slots are the
    # ranks sncheck places on it (launch/commands.py hostfile_text). Refused, not dropped.
    refused = {"hostfile_slots": "not used: each host's hostfile slots are the ranks sncheck places on it "
                                 "(its cards); remove the key"}
    type: Annotated[str, Choice(("mpirun", "srun"))] = Launcher.type
    extra_args: Annotated[list[Annotated[str, Field(strict=True)]], Field(max_length=MAX_EXTRA_ARGS),
                          Shape(f"a list of at most {MAX_EXTRA_ARGS} strings")] = []
    nccl_tests_dir: Path_ | None = None
    parallel_steps: Annotated[int, Int(1, MAX_PARALLEL_STEPS)] = Launcher.parallel_steps


class SupernodeSchema(Schema):
    what = "supernode"
    nullable = frozenset({"checks"})
    name: Annotated[str, Text(_SAFE_NAME)]
    hosts: HostItems
    cards_per_host: Count | None = None
    platform: PlatformName | None = None
    checks: Checks | None = None


class HostSchema(Schema):
    what = "host overrides"
    address: Annotated[str, Text(_SAFE_ADDRESS), AfterValidator(_address)] | None = None
    port: Port | None = None
    user: Annotated[str, Text(_SAFE_USER)] | None = None
    identity_file: Path_ | None = None
    cards: Count | None = None
    imex_address: Annotated[str, Text(), AfterValidator(_ip)] | None = None
    ssh_gateway: Annotated[bool, Flag()] = False


class InventorySchema(Schema):
    """An inventory file (DESIGN.md's contract, README "Inventory")."""

    what = "inventory"
    nullable = frozenset({"hosts", "fabric", "checks"})
    name: Path_ | None = None
    description: Annotated[str, Text()] | None = None
    platform: PlatformName | None = None
    checks: Checks | None = None
    design: DesignSchema | None = None
    supernodes: Annotated[list[SupernodeSchema], Field(min_length=1), Shape("a non-empty list of supernodes")]
    backend: Annotated[BackendSchema, BeforeValidator(_backend)] | None = None
    ssh: SshSchema | None = None
    hosts: Annotated[dict[Annotated[str, Field(strict=True)], HostSchema | None],
                     Shape("a mapping of host name to overrides")] | None = None
    launcher: LauncherSchema | None = None
    fabric: FabricSchema | None = None


def is_address(text: str) -> bool:
    """Whether ``text`` is an address a host's ``address`` may hold (a name, IPv4 or IPv6)."""
    return _SAFE_ADDRESS.fullmatch(text) is not None and address_problem(text) is None


def address_problem(text: str) -> str | None:
    """Why ``text``, of an address's characters, reaches another machine than it says, or None.
    An IPv4 address is four numbers 0-255 without leading zeros: any other form the resolver reads
    as one ('010.0.0.1' is 8.0.0.1, '10.0.12' is 10.0.0.12) sent sncheck to a machine no one named
    (hostile round 21, H21-18). A ':' is IPv6's: 'host:port' is no address (the port is ``port``)."""
    if ":" in text:
        try:
            return _no_host(ipaddress.IPv6Address(text))
        except ValueError:
            return "holds ':' but is no IPv6 address (a port goes in 'port')"
    if _INET_ATON.fullmatch(text):
        try:
            return _no_host(ipaddress.IPv4Address(text))
        except ValueError:
            try:
                read = f"the resolver reads it as {socket.inet_ntoa(socket.inet_aton(text))}"
            except OSError:
                read = "no resolver reads it as an address"
            return f"is no IPv4 address of four numbers 0-255 without leading zeros: {read}"
    return None


def _no_host(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an IP address is no one host's, or None: a connection to 0.0.0.0 or '::' reaches this
    machine (Linux takes the unspecified address as the local one), so the control node was
    measured and judged under the host's name; a multicast group, the broadcast address and
    0.0.0.0/8 ('this network') are no host's either (hostile round 22, H22-06)."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return _no_host(ip.ipv4_mapped)
    if ip.is_unspecified:
        return "is the unspecified address: a connection to it reaches this machine, not a host"
    if ip.is_multicast:
        return "is a multicast group, no host"
    if ip == ipaddress.IPv4Address("255.255.255.255") or ip in ipaddress.IPv4Network("0.0.0.0/8"):
        return "is the broadcast address or 'this network' (0.0.0.0/8), no host"
    return None


def _address(value: str) -> str:
    if (why := address_problem(value)) is not None:
        raise ValueError(f"{value!r} {why}")
    return value


def is_login_name(text: str) -> bool:
    """Whether ``text`` is a login name ``ssh.user`` and a host's ``user`` may hold."""
    return _SAFE_USER.fullmatch(text) is not None


def _design(schema: DesignSchema | None, raw: object) -> dict[str, TierDesign]:
    """The declared tiers, in the file's order."""
    if schema is None or not isinstance(raw, dict):
        return {}
    return {tier: TierDesign(spec.bandwidth, spec.latency) for tier in raw if (spec := getattr(schema, tier))}


def _platform_design(top: Platform | None, used: dict[str | None, Platform | None]) -> dict[str, TierDesign]:
    """Design values of the platform (top level, or the one every supernode names)."""
    plat = top or (next(iter(used.values())) if len(used) == 1 else None)
    if plat is None:
        return {}
    out = {}
    for tier, (bw, lat) in plat.design.items():
        out[tier] = TierDesign(parse_bandwidth(bw), parse_latency(lat))
    return out


def parse_inventory(src: Source, *, backends: Collection[str], platforms: Mapping[str, Platform]) -> Inventory:
    """The inventory of ``src``, checked against the ``backends`` and ``platforms`` sncheck
    knows (the registries of sncheck.backends and sncheck.vendors: a layer above config, so
    the caller tells them; :mod:`sncheck.run.inputs` does)."""
    schema = validate(InventorySchema, src, src.data, context={"backends": tuple(backends), "platforms": platforms})
    root: LineDict = src.data
    top_platform = platforms[schema.platform] if schema.platform is not None else None
    top_checks = schema.checks or {}
    backend = schema.backend.type if schema.backend else None
    dist_backend = schema.backend.dist_backend if schema.backend else None
    near_budget_s = schema.backend.near_budget_s if schema.backend else None
    s = schema.ssh or SshSchema()
    ssh = SshDefaults(user=s.user, port=s.port, identity_file=s.identity_file, known_hosts=s.known_hosts,
                      connect_timeout=s.connect_timeout, command_timeout=s.command_timeout, forks=s.forks)
    la = schema.launcher or LauncherSchema()
    launcher = Launcher(la.type, tuple(la.extra_args), la.nccl_tests_dir, la.parallel_steps)

    supernodes: list[Supernode] = []
    platforms_used: dict[str | None, Platform | None] = {}
    hosts: dict[str, Host] = {}
    spelt: dict[str, str] = {}  # a host's name as DNS compares it -> the name first given
    bare: dict[str, str] = {}  # a one-label host name (as DNS compares it) -> the name given
    qualified: dict[str, str] = {}  # a domain name's first label -> the name given
    sn_names: set[str] = set()  # the supernodes' names so far
    n_cards = 0  # the cards of the hosts so far (the cap's running count)
    for spec, sn in zip(schema.supernodes, root["supernodes"]):
        sn_name = spec.name
        if sn_name.lower() in sn_names:  # told apart without case, as hosts are (one evidence folder on a case-blind disk)
            was = next(x.name for x in supernodes if x.name.lower() == sn_name.lower())
            raise src.error(f"duplicate supernode name {sn_name!r}" + ("" if was == sn_name else
                            f" (as {was!r}: supernode names are compared without case)"), sn, "name")
        plat = platforms[spec.platform] if spec.platform is not None else top_platform
        if spec.cards_per_host is not None:
            cards = spec.cards_per_host
        elif plat is not None:
            cards = plat.cards_per_host
        else:
            raise src.error(f"supernode {sn_name!r} needs cards_per_host (or a platform that sets it)", sn)
        if not spec.hosts:
            raise src.error(f"supernode {sn_name!r} has no hosts", sn, "hosts")
        try:
            names = hostlist.expand(spec.hosts, limit=min(MAX_HOSTS - len(hosts), (MAX_CARDS - n_cards) // cards))
        except hostlist.HostlistTooLarge as e:
            raise src.error(f"{e} (at most {MAX_HOSTS} hosts and {MAX_CARDS} cards in one inventory)",
                            sn, "hosts") from e
        except ValueError as e:
            raise src.error(str(e), sn, "hosts") from e
        for h in names:
            # DNS compares names without case, and 'h01.' is h01 rooted: one machine by two spellings
            # would be measured twice, and isolating one name would leave the other in service
            first = spelt.setdefault(h.lower().rstrip("."), h)
            if first in hosts:
                other = hosts[first].supernode
                was = "" if first == h else f" (as {first!r}: host names are compared as DNS does, without case " \
                                            "or a trailing dot)"
                msg = (f"host {h!r} is listed twice in supernode {sn_name!r}{was}" if other == sn_name
                       else f"host {h!r} is in two supernodes: {other!r} and {sn_name!r}{was}")
                raise src.error(msg, sn, "hosts")
            if (alias := _one_machine(h, bare, qualified)) is not None:
                raise src.error(f"host {h!r} and host {alias!r} may be one machine (a short name and a domain name "
                                "of it): it would be measured twice, and isolating one name would leave the other in "
                                "service; name every host one way", sn, "hosts")
            hosts[h] = Host(h, sn_name, cards)
        if plat is not None and plat.domain_hosts and len(names) > plat.domain_hosts:
            tip = " (list each host as its own supernode)" if plat.domain_hosts == 1 else ""
            raise src.error(f"supernode {sn_name!r} has {len(names)} hosts; one {plat.name} scale-up domain has "
                            f"at most {plat.domain_hosts}{tip}", sn, "hosts")
        checks = {**top_checks, **(spec.checks or {})}
        supernodes.append(Supernode(sn_name, tuple(names), plat.name if plat else None, tuple(checks.items())))
        sn_names.add(sn_name.lower())
        platforms_used[plat.name if plat else None] = plat
        n_cards += cards * len(names)
        if n_cards > MAX_CARDS:
            raise src.error(f"the inventory has more than {MAX_CARDS} cards (the cap)", sn, "hosts")

    for sn_spec, sn in zip(supernodes, root["supernodes"]):
        for name in (sn_spec.name, *sn_spec.hosts):  # history and findings read a tier's name as the tier
            if name.lower().rstrip(".") in TIERS:
                raise src.error(f"{'supernode' if name == sn_spec.name else 'host'} {name!r} has the name of a "
                                "link tier: history and findings could not tell them apart",
                                sn, "name" if name == sn_spec.name else "hosts")
        # A one-host supernode may bear its host's name (hgx01 of hgx-2su.yaml); any other
        # supernode and a host of one name are one entity to findings, status and isolate.
        host = spelt.get(sn_spec.name.lower().rstrip("."))  # as DNS compares a host's name
        if host is not None and sn_spec.hosts != (host,):
            raise src.error(f"host {host!r} has the name of supernode {sn_spec.name!r} of "
                            f"{len(sn_spec.hosts)} hosts: findings, status and isolate could not tell them apart",
                            sn, "name")

    imex_of: dict[str, str] = {}  # IMEX address -> the host that claims it
    for h, over in (schema.hosts or {}).items():
        overrides = root["hosts"]
        if h not in hosts:
            raise src.error(f"host {h!r} has overrides but is in no supernode", overrides, h)
        o = over or HostSchema()
        imex = o.imex_address
        if imex is not None and imex in imex_of:
            raise src.error(f"hosts {imex_of[imex]} and {h} have the same imex_address {imex}: each IMEX "
                            f"node is one tray", overrides[h], "imex_address")
        if imex is not None:
            imex_of[imex] = h
        base = hosts[h]
        hosts[h] = Host(h, base.supernode, o.cards if o.cards is not None else base.cards, address=o.address,
                        port=o.port, user=o.user, identity_file=o.identity_file, imex_address=imex,
                        ssh_gateway=o.ssh_gateway)
    design = {**_platform_design(top_platform, platforms_used), **_design(schema.design, root.get("design"))}
    if sum(h.cards for h in hosts.values()) > MAX_CARDS:
        raise src.error(f"the inventory has more than {MAX_CARDS} cards (the cap)", root, "hosts")
    fabric = parse_fabric(src, schema.fabric, root["fabric"], {h: x.cards for h, x in hosts.items()}) \
        if schema.fabric is not None else None
    return Inventory(name=schema.name or Path(src.name).stem, supernodes=tuple(supernodes), hosts=hosts,
                     design=design, backend=backend, dist_backend=dist_backend, near_budget_s=near_budget_s,
                     ssh=ssh, launcher=launcher, source=src.name, fabric=fabric, description=schema.description,
                     platforms={p.name: p for p in platforms_used.values() if p is not None})


def load_inventory(path: str | Path, *, backends: Collection[str], platforms: Mapping[str, Platform]) -> Inventory:
    return parse_inventory(load_file(path), backends=backends, platforms=platforms)


def load_inventory_text(text: str, name: str = "<inventory>", *, backends: Collection[str],
                        platforms: Mapping[str, Platform]) -> Inventory:
    return parse_inventory(load_text(text, name), backends=backends, platforms=platforms)


MAX_LOCAL_CARDS = 256  # worker processes the local backend starts on one machine


def local_inventory(cards: int = 4) -> Inventory:
    """The embedded default: this machine as one host with ``cards`` worker ranks.

    Design values are left empty: the local backend calibrates them on each run.
    """
    if not 2 <= cards <= MAX_LOCAL_CARDS:
        raise ConfigError(f"--cards must be from 2 to {MAX_LOCAL_CARDS} (worker processes on this "
                          f"machine), got {cards}")
    return Inventory(
        name="local",
        supernodes=(Supernode("local", ("localhost",)),),
        hosts={"localhost": Host("localhost", "local", cards)},
        backend="local",
        source="<embedded local inventory>",
    )


def _one_machine(name: str, bare: dict[str, str], qualified: dict[str, str]) -> str | None:
    """The host already listed that host ``name`` may be one machine with: ``h1`` and
    ``h1.example.com`` (hostile round 25: taken as two hosts), compared as DNS does. Two domain
    names (``h1.a.example``, ``h1.b.example``) and IPv4 addresses are told apart. Records ``name``."""
    key = name.lower().rstrip(".")
    label, dot, _ = key.partition(".")
    if dot and re.fullmatch(r"[0-9.]+", key):  # an address: its labels are no names
        return None
    if dot:
        qualified.setdefault(label, name)
        return bare.get(label)
    bare.setdefault(key, name)
    return qualified.get(key)
