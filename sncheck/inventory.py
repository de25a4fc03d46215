"""Load and validate an inventory YAML into typed objects.

Every error names the file and line and exits 2 through the CLI. The format is the
contract in DESIGN.md, extended with optional keys (marked below).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import hostlist
from .errors import ConfigError
from .units import parse_bandwidth, parse_latency
from .yamlio import LineDict, Source, check_keys, load_file, load_text

TIERS = ("intra_host", "scale_up", "scale_out")
BACKENDS = ("mock", "local", "ssh")  # the one list of backend names (registry: sncheck.backends)
DIST_BACKENDS = ("gloo", "nccl")  # torch.distributed backends the probe runs on
_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
_SAFE_ADDRESS = re.compile(r"^[A-Za-z0-9._:-]+$")

TOP_KEYS = ("name", "description", "design", "supernodes", "backend", "ssh", "hosts", "launcher")
SUPERNODE_KEYS = ("name", "hosts", "cards_per_host")
HOST_KEYS = ("address", "port", "user", "identity_file", "cards")
SSH_KEYS = ("user", "port", "identity_file", "known_hosts", "connect_timeout", "command_timeout", "forks")
BACKEND_KEYS = ("type", "dist_backend")
LAUNCHER_KEYS = ("type", "hostfile_slots", "extra_args", "nccl_tests_dir")


@dataclass(frozen=True)
class TierDesign:
    bandwidth_GBps: float
    latency_us: float


@dataclass(frozen=True)
class Host:
    name: str
    supernode: str
    cards: int
    address: str | None = None
    port: int | None = None
    user: str | None = None
    identity_file: str | None = None


@dataclass(frozen=True)
class Supernode:
    name: str
    hosts: tuple[str, ...]


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

    @property
    def card_count(self) -> int:
        return sum(h.cards for h in self.hosts.values())

    def design_for(self, tier: str) -> TierDesign | None:
        """Design values of a tier; intra-host pairs use scale-up values unless given."""
        if tier == "intra_host" and "intra_host" not in self.design:
            tier = "scale_up"
        return self.design.get(tier)


def _positive_int(src: Source, node: LineDict, key: str, what: str) -> int:
    value = node[key]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise src.error(f"{what} must be a positive integer, got {value!r}", node, key)
    return value


def _port(src: Source, node: LineDict, key: str) -> int:
    value = node[key]
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 65536:
        raise src.error(f"port must be an integer 1-65535, got {value!r}", node, key)
    return value


def _str(src: Source, node: LineDict, key: str, pattern: re.Pattern | None = None) -> str:
    value = node[key]
    if not isinstance(value, str) or not value:
        raise src.error(f"{key} must be a non-empty string, got {value!r}", node, key)
    if pattern and not pattern.match(value):
        raise src.error(f"{key} {value!r} has characters that are not allowed", node, key)
    return value


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


def parse_inventory(src: Source) -> Inventory:
    root = check_keys(src, src.data, TOP_KEYS, "inventory", required=("supernodes",))
    name = _str(src, root, "name") if "name" in root else Path(src.name).stem
    design = _design(src, root["design"]) if "design" in root else {}

    backend = dist_backend = None
    if "backend" in root:
        b = root["backend"]
        if isinstance(b, str):
            b = LineDict({"type": b})
            b.line, b.key_lines = root.line_of("backend"), {}
        b = check_keys(src, b, BACKEND_KEYS, "backend")
        backend = b.get("type")
        if backend not in BACKENDS:
            raise src.error(f"backend type must be one of {', '.join(BACKENDS)}, got {backend!r}", b, "type")
        dist_backend = b.get("dist_backend")
        if dist_backend is not None and dist_backend not in DIST_BACKENDS:
            raise src.error(f"dist_backend must be one of {', '.join(DIST_BACKENDS)}, got {dist_backend!r}",
                            b, "dist_backend")

    ssh = SshDefaults()
    if "ssh" in root:
        s = check_keys(src, root["ssh"], SSH_KEYS, "ssh")
        ssh = SshDefaults(
            user=_str(src, s, "user") if "user" in s else None,
            port=_port(src, s, "port") if "port" in s else None,
            identity_file=_str(src, s, "identity_file") if "identity_file" in s else None,
            known_hosts=_str(src, s, "known_hosts") if "known_hosts" in s else None,
            connect_timeout=float(s.get("connect_timeout", 10.0)),
            command_timeout=float(s.get("command_timeout", 300.0)),
            forks=_positive_int(src, s, "forks", "ssh.forks") if "forks" in s else 32,
        )

    launcher = Launcher()
    if "launcher" in root:
        lnode = check_keys(src, root["launcher"], LAUNCHER_KEYS, "launcher")
        ltype = lnode.get("type", "mpirun")
        if ltype not in ("mpirun", "srun"):
            raise src.error(f"launcher type must be mpirun or srun, got {ltype!r}", lnode, "type")
        extra = lnode.get("extra_args", [])
        if not isinstance(extra, list) or not all(isinstance(a, str) for a in extra):
            raise src.error("launcher.extra_args must be a list of strings", lnode, "extra_args")
        launcher = Launcher(ltype, tuple(extra), lnode.get("nccl_tests_dir"))

    sn_list = root["supernodes"]
    if not isinstance(sn_list, list) or not sn_list:
        raise src.error("supernodes must be a non-empty list", root, "supernodes")
    supernodes: list[Supernode] = []
    hosts: dict[str, Host] = {}
    host_where: dict[str, str] = {}
    for sn in sn_list:
        sn = check_keys(src, sn, SUPERNODE_KEYS, "supernode", required=("name", "hosts", "cards_per_host"))
        sn_name = _str(src, sn, "name", _SAFE_NAME)
        if any(s.name == sn_name for s in supernodes):
            raise src.error(f"duplicate supernode name {sn_name!r}", sn, "name")
        cards = _positive_int(src, sn, "cards_per_host", f"cards_per_host of supernode {sn_name}")
        if sn["hosts"] in (None, "", []):
            raise src.error(f"supernode {sn_name!r} has no hosts", sn, "hosts")
        try:
            names = hostlist.expand(sn["hosts"])
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
        supernodes.append(Supernode(sn_name, tuple(names)))

    if "hosts" in root and root["hosts"] is not None:
        overrides = root["hosts"]
        if not isinstance(overrides, dict):
            raise src.error("hosts must be a mapping of host name to overrides", root, "hosts")
        for h, spec in overrides.items():
            if h not in hosts:
                raise src.error(f"host {h!r} has overrides but is in no supernode", overrides, str(h))
            spec = check_keys(src, spec or LineDict(), HOST_KEYS, f"hosts.{h}")
            base = hosts[h]
            hosts[h] = Host(
                h, base.supernode,
                _positive_int(src, spec, "cards", f"cards of host {h}") if "cards" in spec else base.cards,
                address=_str(src, spec, "address", _SAFE_ADDRESS) if "address" in spec else None,
                port=_port(src, spec, "port") if "port" in spec else None,
                user=_str(src, spec, "user", _SAFE_NAME) if "user" in spec else None,
                identity_file=_str(src, spec, "identity_file") if "identity_file" in spec else None,
            )
    return Inventory(name=name, supernodes=tuple(supernodes), hosts=hosts, design=design,
                     backend=backend, dist_backend=dist_backend, ssh=ssh, launcher=launcher,
                     source=src.name)


def load_inventory(path: str | Path) -> Inventory:
    return parse_inventory(load_file(path))


def load_inventory_text(text: str, name: str = "<inventory>") -> Inventory:
    return parse_inventory(load_text(text, name))


def local_inventory(cards: int = 4) -> Inventory:
    """The embedded default: this machine as one host with ``cards`` worker ranks.

    Design values are left empty: the local backend calibrates them on each run.
    """
    if cards < 2:
        raise ConfigError(f"--cards must be at least 2 for pairwise tests, got {cards}")
    return Inventory(
        name="local",
        supernodes=(Supernode("local", ("localhost",)),),
        hosts={"localhost": Host("localhost", "local", cards)},
        backend="local",
        source="<embedded local inventory>",
    )
