"""Load and validate an inventory YAML into typed objects.

Every error names the file and line and exits 2 through the CLI. The format is the
contract in DESIGN.md, extended with optional keys (marked below).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Collection
from typing import TYPE_CHECKING, Mapping, TypeVar

from sncheck.config import hostlist
from sncheck.errors import ConfigError
from sncheck.config.fabric import FabricSpec, parse_fabric
from sncheck.config.units import parse_bandwidth, parse_latency
from sncheck.config.yamlio import LineDict, Source, check_keys, field_int, field_number, field_str, load_file, load_text

if TYPE_CHECKING:  # the vendors' platforms, a layer above config: the loader is told them
    from sncheck.vendors.base import Platform

TIERS = ("intra_host", "scale_up", "scale_out")
T = TypeVar("T")
DIST_BACKENDS = ("gloo", "nccl", "hccl")  # torch.distributed backends the probe runs on (hccl: torch_npu)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SAFE_ADDRESS = re.compile(r"^[A-Za-z0-9._:-]+$")

TOP_KEYS = ("name", "description", "platform", "checks", "design", "supernodes", "backend", "ssh", "hosts",
            "launcher", "fabric")
SUPERNODE_KEYS = ("name", "hosts", "cards_per_host", "platform", "checks")
HOST_KEYS = ("address", "port", "user", "identity_file", "cards", "imex_address")
SSH_KEYS = ("user", "port", "identity_file", "known_hosts", "connect_timeout", "command_timeout", "forks")
BACKEND_KEYS = ("type", "dist_backend")
LAUNCHER_KEYS = ("type", "extra_args", "nccl_tests_dir", "parallel_steps")

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
    ssh: SshDefaults = SshDefaults()
    launcher: Launcher = Launcher()
    source: str = "<embedded>"
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


def _positive_int(src: Source, node: LineDict, key: str, what: str, hi: int | None = None) -> int:
    return field_int(src, node, key, 1, hi, what=what)


def _port(src: Source, node: LineDict, key: str) -> int:
    return field_int(src, node, key, 1, 65535, what="port")


def _str(src: Source, node: LineDict, key: str, pattern: re.Pattern | None = None) -> str:
    return field_str(src, node, key, pattern=pattern)


def _ip(src: Source, node: LineDict, key: str, what: str) -> str:
    """An IP address (v4 or v6), in its canonical text (``ipaddress``)."""
    value = field_str(src, node, key, what=what)
    try:
        return str(ipaddress.ip_address(value))
    except ValueError:
        raise src.error(f"{what} must be an IP address (as the IMEX node list names the node), "
                        f"got {value!r}", node, key) from None


def _design(src: Source, node: object) -> dict[str, TierDesign]:
    node = check_keys(src, node, TIERS, "design")
    out = {}
    for tier, spec in node.items():
        spec = check_keys(src, spec, ("bandwidth", "latency"), f"design.{tier}",
                          required=("bandwidth", "latency"))
        try:
            bw = parse_bandwidth(spec["bandwidth"])
        except ValueError as e:
            raise src.error(str(e), spec, "bandwidth") from e
        try:
            lat = parse_latency(spec["latency"])
        except ValueError as e:
            raise src.error(str(e), spec, "latency") from e
        out[tier] = TierDesign(bw, lat)
    return out


_TOOL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}$")


def _checks(src: Source, node: LineDict, key: str) -> dict[str, bool]:
    """``checks: {dcgmi: false, ibstat: false}``: tool name -> whether the cluster has it."""
    value = node[key]
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise src.error("checks must be a mapping of tool name to true or false, e.g. {<tool>: false}", node, key)
    out = {}
    for tool, on in value.items():
        if not isinstance(tool, str) or not _TOOL.match(tool):
            raise src.error(f"checks: {tool!r} is not a tool name", value, str(tool))
        if not isinstance(on, bool):
            raise src.error(f"checks.{tool} must be true or false, got {on!r}", value, tool)
        out[tool] = on
    return out


def _platform(src: Source, node: LineDict, key: str, known: Mapping[str, Platform]) -> Platform:
    value = node[key]
    if value not in known:
        raise src.error(f"unknown platform {value!r}; choose one of: {', '.join(sorted(known))}", node, key)
    return known[value]


def _platform_design(src: Source, root: LineDict, top, used: dict) -> dict[str, TierDesign]:
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
    root = check_keys(src, src.data, TOP_KEYS, "inventory", required=("supernodes",))
    name = _str(src, root, "name") if "name" in root else Path(src.name).stem
    design = _design(src, root["design"]) if "design" in root else {}
    top_platform = _platform(src, root, "platform", platforms) if "platform" in root else None
    top_checks = _checks(src, root, "checks") if "checks" in root else {}

    backend = dist_backend = None
    if "backend" in root:
        b = root["backend"]
        if isinstance(b, str):
            b = LineDict({"type": b})
            b.line, b.key_lines = root.line_of("backend"), {}
        b = check_keys(src, b, BACKEND_KEYS, "backend", required=("type",))
        backend = field_str(src, b, "type", choices=tuple(backends), what="backend type")
        if b.get("dist_backend") is not None:
            dist_backend = field_str(src, b, "dist_backend", choices=DIST_BACKENDS, what="dist_backend")

    ssh = SshDefaults()
    if "ssh" in root:
        s = check_keys(src, root["ssh"], SSH_KEYS, "ssh")
        ssh = SshDefaults(
            user=_str(src, s, "user") if "user" in s else None,
            port=_port(src, s, "port") if "port" in s else None,
            identity_file=_str(src, s, "identity_file") if "identity_file" in s else None,
            known_hosts=_str(src, s, "known_hosts") if "known_hosts" in s else None,
            connect_timeout=(field_number(src, s, "connect_timeout", 0, MAX_TIMEOUT_S, lo_open=True,
                                          what="ssh.connect_timeout (seconds)")
                             if "connect_timeout" in s else 10.0),
            command_timeout=(field_number(src, s, "command_timeout", 0, MAX_TIMEOUT_S, lo_open=True,
                                          what="ssh.command_timeout (seconds)")
                             if "command_timeout" in s else 300.0),
            forks=_positive_int(src, s, "forks", "ssh.forks", MAX_FORKS) if "forks" in s else 32,
        )

    launcher = Launcher()
    if "launcher" in root:
        if isinstance(root["launcher"], dict) and "hostfile_slots" in root["launcher"]:
            # Accepted and validated since the first inventory, never read: a host's slots are
            # the ranks sncheck places on it (launch/commands.py hostfile_text). Refused, not dropped.
            raise src.error("launcher.hostfile_slots is not used: each host's hostfile slots are the ranks "
                            "sncheck places on it (its cards); remove the key", root["launcher"], "hostfile_slots")
        lnode = check_keys(src, root["launcher"], LAUNCHER_KEYS, "launcher")
        ltype = field_str(src, lnode, "type", choices=("mpirun", "srun"), what="launcher type") \
            if "type" in lnode else "mpirun"
        extra = lnode.get("extra_args", [])
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra) \
                or len(extra) > MAX_EXTRA_ARGS:
            raise src.error(f"launcher.extra_args must be a list of at most {MAX_EXTRA_ARGS} strings",
                            lnode, "extra_args")
        tests_dir = (field_str(src, lnode, "nccl_tests_dir", what="launcher.nccl_tests_dir")
                     if lnode.get("nccl_tests_dir") is not None else None)
        parallel = _positive_int(src, lnode, "parallel_steps", "launcher.parallel_steps", MAX_PARALLEL_STEPS) \
            if "parallel_steps" in lnode else Launcher.parallel_steps
        launcher = Launcher(ltype, tuple(extra), tests_dir, parallel)

    sn_list = root["supernodes"]
    if not isinstance(sn_list, list) or not sn_list:
        raise src.error("supernodes must be a non-empty list", root, "supernodes")
    supernodes: list[Supernode] = []
    platforms_used: dict = {}
    hosts: dict[str, Host] = {}
    host_where: dict[str, str] = {}
    n_cards = 0
    for sn in sn_list:
        sn = check_keys(src, sn, SUPERNODE_KEYS, "supernode", required=("name", "hosts"))
        sn_name = _str(src, sn, "name", _SAFE_NAME)
        if any(s.name == sn_name for s in supernodes):
            raise src.error(f"duplicate supernode name {sn_name!r}", sn, "name")
        plat = _platform(src, sn, "platform", platforms) if "platform" in sn else top_platform
        if "cards_per_host" in sn:
            cards = _positive_int(src, sn, "cards_per_host", f"cards_per_host of supernode {sn_name}",
                                  MAX_CARDS_PER_HOST)
        elif plat is not None:
            cards = plat.cards_per_host
        else:
            raise src.error(f"supernode {sn_name!r} needs cards_per_host (or a platform that sets it)", sn)
        if sn["hosts"] in (None, "", []):
            raise src.error(f"supernode {sn_name!r} has no hosts", sn, "hosts")
        try:
            names = hostlist.expand(sn["hosts"], limit=min(MAX_HOSTS - len(hosts),
                                                           (MAX_CARDS - n_cards) // cards))
        except hostlist.HostlistTooLarge as e:
            raise src.error(f"{e} (at most {MAX_HOSTS} hosts and {MAX_CARDS} cards in one inventory)",
                            sn, "hosts") from e
        except ValueError as e:
            raise src.error(str(e), sn, "hosts") from e
        for h in names:
            if h in hosts:
                other = hosts[h].supernode
                msg = (f"host {h!r} is listed twice in supernode {sn_name!r}" if other == sn_name
                       else f"host {h!r} is in two supernodes: {other!r} and {sn_name!r}")
                raise src.error(msg, sn, "hosts")
            hosts[h] = Host(h, sn_name, cards)
            host_where[h] = src.where(sn, "hosts")
        if plat is not None and plat.domain_hosts and len(names) > plat.domain_hosts:
            tip = " (list each host as its own supernode)" if plat.domain_hosts == 1 else ""
            raise src.error(f"supernode {sn_name!r} has {len(names)} hosts; one {plat.name} scale-up domain has "
                            f"at most {plat.domain_hosts}{tip}", sn, "hosts")
        checks = {**top_checks, **(_checks(src, sn, "checks") if "checks" in sn else {})}
        supernodes.append(Supernode(sn_name, tuple(names), plat.name if plat else None, tuple(checks.items())))
        platforms_used[plat.name if plat else None] = plat
        total_cards = sum(x.cards for x in hosts.values())
        if total_cards > MAX_CARDS:
            raise src.error(f"the inventory has more than {MAX_CARDS} cards (the cap)", sn, "hosts")

    if "hosts" in root and root["hosts"] is not None:
        overrides = root["hosts"]
        if not isinstance(overrides, dict):
            raise src.error("hosts must be a mapping of host name to overrides", root, "hosts")
        imex_of: dict[str, str] = {}  # IMEX address -> the host that claims it
        for h, spec in overrides.items():
            if not isinstance(h, str) or h not in hosts:
                raise src.error(f"host {h!r} has overrides but is in no supernode", overrides, str(h))
            spec = check_keys(src, spec or LineDict(), HOST_KEYS, f"hosts.{h}")
            base = hosts[h]
            imex = _ip(src, spec, "imex_address", f"imex_address of host {h}") if "imex_address" in spec else None
            if imex is not None and imex in imex_of:
                raise src.error(f"hosts {imex_of[imex]} and {h} have the same imex_address {imex}: each IMEX "
                                f"node is one tray", spec, "imex_address")
            if imex is not None:
                imex_of[imex] = h
            hosts[h] = Host(
                h, base.supernode,
                _positive_int(src, spec, "cards", f"cards of host {h}", MAX_CARDS_PER_HOST)
                if "cards" in spec else base.cards,
                address=_str(src, spec, "address", _SAFE_ADDRESS) if "address" in spec else None,
                port=_port(src, spec, "port") if "port" in spec else None,
                user=_str(src, spec, "user", _SAFE_NAME) if "user" in spec else None,
                identity_file=_str(src, spec, "identity_file") if "identity_file" in spec else None,
                imex_address=imex,
            )
    design = {**_platform_design(src, root, top_platform, platforms_used), **design}
    if sum(h.cards for h in hosts.values()) > MAX_CARDS:
        raise src.error(f"the inventory has more than {MAX_CARDS} cards (the cap)", root, "hosts")
    fabric = parse_fabric(src, root["fabric"], {h: x.cards for h, x in hosts.items()}) \
        if root.get("fabric") is not None else None
    return Inventory(name=name, supernodes=tuple(supernodes), hosts=hosts, design=design,
                     backend=backend, dist_backend=dist_backend, ssh=ssh, launcher=launcher,
                     source=src.name, fabric=fabric,
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
