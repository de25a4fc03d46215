"""The inventory's ``fabric:`` key: how the scale-out NICs hang off leaf and spine switches.

Optional; without it the fabric is derived from the platform (:mod:`sncheck.fabric`):
rail *r* serves card *r*, one leaf per rail for the whole cluster, no spines. Grammar
(README "The scale-out fabric"; every error names the file and line)::

    fabric:
      scalable_unit: 8               # hosts per scalable unit, in inventory order: one leaf
                                     #   su<k>-rail<r> per unit and rail, host i of a unit on port i+1
      leaves:                        # or an explicit map (replaces the units): every NIC on one leaf
        - {name: a-rail3, rail: 3, hosts: "node[001-008]", first_port: 1}   # port first_port + position
        - {name: odd, ports: {node009/nic0: 5, node010/nic0: 7}}            # NIC -> port
      spines: 2                      # spine0, spine1 joining every leaf; or a list of names;
                                     #   or [{name: s0, rails: [0, 1]}, {name: s1, leaves: [a-rail3]}]

A leaf's uplink to each spine it joins takes the ports after its highest host port, in
spine order; a spine's port to a leaf is the leaf's place among the leaves it joins, from 1.
Rails are the cards' (rail r serves card r, DESIGN.md): a NIC is ``<host>/nic<r>`` with r
below the host's cards.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from sncheck.config import hostlist
from sncheck.config.yamlio import LineDict, Source, _show, check_keys, field_int, field_str

FABRIC_KEYS = ("scalable_unit", "leaves", "spines")
LEAF_KEYS = ("name", "rail", "hosts", "first_port", "ports")
SPINE_KEYS = ("name", "rails", "leaves")
MAX_PORT = 65535     # a switch port number (InfiniBand's are 1-255; Ethernet chassis go higher)
MAX_SPINES = 4096
SWITCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # no ':' '[' ']' '/': they delimit ids
_NIC = re.compile(r"^(?P<host>.+)/nic(?P<rail>\d+)$")


def unit_leaf(unit: int, rail: int) -> str:
    """The leaf of a rail in a scalable unit, when the inventory does not map leaves."""
    return f"su{unit}-rail{rail}"


@dataclass(frozen=True)
class LeafSpec:
    """A declared leaf: the NICs it serves, each ``(host, rail, port)``."""
    name: str
    nics: tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class SpineSpec:
    """A declared spine and the leaves it joins (None: every leaf)."""
    name: str
    leaves: tuple[str, ...] | None = None
    rails: tuple[int, ...] | None = None  # joins the leaves whose NICs are on these rails


@dataclass(frozen=True)
class FabricSpec:
    scalable_unit: int | None = None
    leaves: tuple[LeafSpec, ...] = ()   # explicit map; empty: leaves by scalable unit
    spines: tuple[SpineSpec, ...] = ()


def _name(src: Source, node: LineDict, key: str, what: str) -> str:
    value = field_str(src, node, key, what=what)
    if not SWITCH_NAME.match(value):
        raise src.error(f"{what} {value!r} must be letters, digits, '.', '_' or '-' (':', '[', ']' and '/' "
                        f"delimit switch and port ids)", node, key)
    return value


def _rails(src: Source, node: LineDict, key: str, what: str) -> tuple[int, ...]:
    value = node[key]
    items = value if isinstance(value, list) else [value]
    if not items or any(isinstance(r, bool) or not isinstance(r, int) or r < 0 for r in items):
        raise src.error(f"{what} must be a rail number or a list of them (from 0), got {_show(value)}", node, key)
    return tuple(items)


def _leaf(src: Source, node: object, cards: Mapping[str, int]) -> LeafSpec:
    node = check_keys(src, node, LEAF_KEYS, "fabric leaf", required=("name",))
    name = _name(src, node, "name", "leaf name")
    nics: list[tuple[str, int, int]] = []
    if ("hosts" in node) != ("rail" in node):
        raise src.error(f"leaf {name}: hosts and rail go together (rail r of each host)", node,
                        "hosts" if "hosts" in node else "rail")
    if "first_port" in node and "hosts" not in node:
        raise src.error(f"leaf {name}: first_port numbers the ports of its hosts; it has none", node, "first_port")
    if "hosts" in node:
        rail = field_int(src, node, "rail", 0, None, what=f"leaf {name} rail")
        first = field_int(src, node, "first_port", 1, MAX_PORT, what=f"leaf {name} first_port") \
            if "first_port" in node else 1
        try:
            names = hostlist.expand(node["hosts"])
        except ValueError as e:
            raise src.error(f"leaf {name}: {e}", node, "hosts") from e
        if first + len(names) - 1 > MAX_PORT:
            raise src.error(f"leaf {name}: ports from {first} for {len(names)} hosts pass {MAX_PORT}", node, "hosts")
        for i, host in enumerate(names):
            _check_nic(src, node, "hosts", name, host, rail, cards)
            nics.append((host, rail, first + i))
    if "ports" in node:
        ports = node["ports"]
        if not isinstance(ports, dict) or not ports:
            raise src.error(f"leaf {name}: ports must map NICs to port numbers, e.g. {{node001/nic0: 1}}",
                            node, "ports")
        for nic, port in ports.items():
            m = _NIC.match(nic) if isinstance(nic, str) else None
            if m is None:
                raise src.error(f"leaf {name}: {nic!r} is not a NIC id <host>/nic<rail>", ports, str(nic))
            if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= MAX_PORT:
                raise src.error(f"leaf {name}: the port of {nic} must be an integer from 1 to {MAX_PORT}, "
                                f"got {_show(port)}", ports, nic)
            _check_nic(src, ports, nic, name, m["host"], int(m["rail"]), cards)
            nics.append((m["host"], int(m["rail"]), port))
    if not nics:
        raise src.error(f"leaf {name} serves no NIC: give hosts and rail, or ports", node)
    seen: dict[int, str] = {}
    for host, rail, port in nics:
        if port in seen:
            raise src.error(f"leaf {name} port {port} is cabled twice: {seen[port]} and {host}/nic{rail}", node)
        seen[port] = f"{host}/nic{rail}"
    return LeafSpec(name, tuple(nics))


def _check_nic(src: Source, node: object, key: str, leaf: str, host: str, rail: int,
               cards: Mapping[str, int]) -> None:
    if host not in cards:
        raise src.error(f"leaf {leaf}: host {host!r} is in no supernode", node, key)
    if rail >= cards[host]:
        raise src.error(f"leaf {leaf}: {host} has {cards[host]} cards, so no rail {rail} "
                        f"(rail r serves card r, from 0)", node, key)


def _spines(src: Source, root: LineDict, leaves: set[str]) -> tuple[SpineSpec, ...]:
    value = root["spines"]
    if isinstance(value, int) and not isinstance(value, bool):
        count = field_int(src, root, "spines", 0, MAX_SPINES, what="fabric spines (a count)")
        return tuple(SpineSpec(f"spine{i}") for i in range(count))
    if not isinstance(value, list) or len(value) > MAX_SPINES:
        raise src.error(f"fabric spines must be a count, or a list of at most {MAX_SPINES} names or "
                        f"{{name, rails | leaves}}, got {_show(value)}", root, "spines")
    out: list[SpineSpec] = []
    for item in value:
        if isinstance(item, str):
            item = LineDict({"name": item})
            item.line, item.key_lines = root.line_of("spines"), {}
        item = check_keys(src, item, SPINE_KEYS, "fabric spine", required=("name",))
        name = _name(src, item, "name", "spine name")
        if any(s.name == name for s in out):
            raise src.error(f"duplicate spine name {name!r}", item, "name")
        if "rails" in item and "leaves" in item:
            raise src.error(f"spine {name}: give rails or leaves, not both", item, "leaves")
        joined = None
        if "leaves" in item:
            joined = item["leaves"]
            if not isinstance(joined, list) or not joined or not all(isinstance(x, str) for x in joined):
                raise src.error(f"spine {name}: leaves must be a list of leaf names", item, "leaves")
            unknown = [x for x in joined if x not in leaves]
            if unknown:
                raise src.error(f"spine {name}: {unknown[0]!r} is not a leaf of the fabric "
                                f"(leaves by scalable unit are named {unit_leaf(0, 0)}, {unit_leaf(0, 1)}, ...)",
                                item, "leaves")
            joined = tuple(joined)
        rails = _rails(src, item, "rails", f"spine {name} rails") if "rails" in item else None
        out.append(SpineSpec(name, joined, rails))
    return tuple(out)


def parse_fabric(src: Source, node: object, cards: Mapping[str, int]) -> FabricSpec:
    """The ``fabric:`` mapping, checked against the inventory's hosts and their cards
    (``cards``: host -> cards, in inventory order)."""
    root = check_keys(src, node, FABRIC_KEYS, "fabric")
    unit = field_int(src, root, "scalable_unit", 1, hostlist.MAX_HOSTS, what="fabric scalable_unit") \
        if "scalable_unit" in root else None
    leaves: tuple[LeafSpec, ...] = ()
    if "leaves" in root:
        if unit is not None:
            raise src.error("fabric: give scalable_unit or leaves, not both (leaves map every NIC itself)",
                            root, "leaves")
        items = root["leaves"]
        if not isinstance(items, list) or not items:
            raise src.error("fabric leaves must be a non-empty list", root, "leaves")
        leaves = tuple(_leaf(src, item, cards) for item in items)
        where: dict[tuple[str, int], str] = {}
        for item, leaf in zip(items, leaves):
            if sum(1 for x in leaves if x.name == leaf.name) > 1:
                raise src.error(f"duplicate leaf name {leaf.name!r}", item, "name")
            for host, rail, _ in leaf.nics:
                if (host, rail) in where:
                    raise src.error(f"{host}/nic{rail} hangs off two leaves: {where[(host, rail)]} and {leaf.name}",
                                    item)
                where[(host, rail)] = leaf.name
        missing = next(((h, r) for h, n in cards.items() for r in range(n) if (h, r) not in where), None)
        if missing is not None:
            raise src.error(f"fabric leaves: {missing[0]}/nic{missing[1]} hangs off no leaf (an explicit map "
                            f"names every NIC: rail r of every host)", root, "leaves")
    if leaves:
        names = {x.name for x in leaves}
    else:  # leaves by scalable unit (the whole cluster one unit without scalable_unit)
        hosts, rails = len(cards), max(cards.values(), default=0)
        names = {unit_leaf(k, r) for k in range(-(-hosts // (unit or max(hosts, 1)))) for r in range(rails)}
    spines = _spines(src, root, names) if "spines" in root else ()
    return FabricSpec(unit, leaves, spines)
