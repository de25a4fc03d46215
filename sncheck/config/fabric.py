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
from typing import Annotated, Any, Union

from pydantic import BeforeValidator, Discriminator, Field, Tag

from sncheck.config import hostlist
from sncheck.config.schema import HostItems, Int, Schema, Shape, Text, by_type
from sncheck.config.yamlio import LineDict, Source

MAX_PORT = 65535     # a switch port number (InfiniBand's are 1-255; Ethernet chassis go higher)
MAX_SPINES = 4096
SWITCH_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")  # no ':' '[' ']' '/': they delimit ids
# the rail as card ids write an index: ASCII digits, no leading zero ('nic00' and 'nic٠' read as nic0
# through int(), an id no finding or --targets spells: hostile round 18, H18-02)
_NIC = re.compile(r"^(?P<host>.+)/nic(?P<rail>0|[1-9][0-9]*)$")

SwitchName = Annotated[str, Text(SWITCH_NAME, "must be letters, digits, '.', '_' or '-' (':', '[', ']' and '/' "
                                              "delimit switch and port ids)")]
SwitchPort = Annotated[int, Int(1, MAX_PORT)]
Rail = Annotated[int, Int(0)]


def _one_or_list(value: Any) -> Any:
    return [value] if isinstance(value, int) and not isinstance(value, bool) else value


class LeafSchema(Schema):
    """A leaf of an explicit map: ``hosts`` + ``rail`` (+ ``first_port``), and/or ``ports``."""

    what = "fabric leaf"
    name: SwitchName
    rail: Rail | None = None
    hosts: HostItems | None = None
    first_port: SwitchPort | None = None
    ports: Annotated[dict[Annotated[str, Text(_NIC, "is not a NIC id <host>/nic<rail> (the rail as a card index: "
                                                    "0, 1, ... in ASCII digits)")], SwitchPort],
                     Field(min_length=1), Shape("a mapping of NICs to port numbers, e.g. {node001/nic0: 1}")] \
        | None = None


class SpineSchema(Schema):
    """A spine by name, joining the leaves of ``rails`` or the named ``leaves`` (neither: every leaf)."""

    what = "fabric spine"
    name: SwitchName
    rails: Annotated[list[Rail], BeforeValidator(_one_or_list), Field(min_length=1),
                     Shape("a rail number or a list of them (from 0)")] | None = None
    leaves: Annotated[list[Annotated[str, Text()]], Field(min_length=1), Shape("a list of leaf names")] | None = None


def _named(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


Spines = Annotated[
    Union[Annotated[int, Int(0, MAX_SPINES), Tag("<count>")],
          Annotated[list[Annotated[SpineSchema, BeforeValidator(_named)]], Field(max_length=MAX_SPINES), Tag("<list>")]],
    Discriminator(by_type(count=int, list=list)),
    Shape(f"a count, or a list of at most {MAX_SPINES} names or {{name, rails | leaves}}")]


class FabricSchema(Schema):
    what = "fabric"
    scalable_unit: Annotated[int, Int(1, hostlist.MAX_HOSTS)] | None = None
    leaves: Annotated[list[LeafSchema], Shape("a non-empty list of leaves")] | None = None
    spines: Spines | None = None


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


def _leaf(src: Source, leaf: LeafSchema, node: LineDict, cards: Mapping[str, int]) -> LeafSpec:
    """A leaf's NICs, checked against the inventory's hosts (``node``: its raw mapping, for lines)."""
    name = leaf.name
    nics: list[tuple[str, int, int]] = []
    if (leaf.hosts is None) != (leaf.rail is None):
        raise src.error(f"leaf {name}: hosts and rail go together (rail r of each host)", node,
                        "hosts" if "hosts" in node else "rail")
    if leaf.first_port is not None and leaf.hosts is None:
        raise src.error(f"leaf {name}: first_port numbers the ports of its hosts; it has none", node, "first_port")
    if leaf.hosts is not None and leaf.rail is not None:
        rail, first = leaf.rail, leaf.first_port or 1
        try:
            names = hostlist.expand(leaf.hosts)
        except ValueError as e:
            raise src.error(f"leaf {name}: {e}", node, "hosts") from e
        if first + len(names) - 1 > MAX_PORT:
            raise src.error(f"leaf {name}: ports from {first} for {len(names)} hosts pass {MAX_PORT}", node, "hosts")
        for i, host in enumerate(names):
            _check_nic(src, node, "hosts", name, host, rail, cards)
            nics.append((host, rail, first + i))
    for nic, port in (leaf.ports or {}).items():
        m = _NIC.match(nic)
        assert m is not None  # the schema's pattern
        _check_nic(src, node["ports"], nic, name, m["host"], int(m["rail"]), cards)
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


def _spines(src: Source, spines: int | list[SpineSchema], root: LineDict, leaves: set[str]) -> tuple[SpineSpec, ...]:
    if isinstance(spines, int):
        return tuple(SpineSpec(f"spine{i}") for i in range(spines))
    out: list[SpineSpec] = []
    for spine, raw in zip(spines, root["spines"]):
        item = raw if isinstance(raw, LineDict) else root  # a bare name: the spines key's line
        key = "spines" if item is root else "name"
        if any(s.name == spine.name for s in out):
            raise src.error(f"duplicate spine name {spine.name!r}", item, key)
        if spine.rails is not None and spine.leaves is not None:
            raise src.error(f"spine {spine.name}: give rails or leaves, not both", item, "leaves")
        unknown = [x for x in spine.leaves or () if x not in leaves]
        if unknown:
            raise src.error(f"spine {spine.name}: {unknown[0]!r} is not a leaf of the fabric "
                            f"(leaves by scalable unit are named {unit_leaf(0, 0)}, {unit_leaf(0, 1)}, ...)",
                            item, "leaves")
        for what, named in (("leaves", spine.leaves), ("rails", spine.rails)):
            # a membership test read the second as nothing: the file said an uplink the fabric lacks
            met: set[object] = set()
            for x in named or ():
                if x in met:
                    raise src.error(f"spine {spine.name}: {what} names {x!r} twice (one uplink to each)", item, what)
                met.add(x)
        out.append(SpineSpec(spine.name, None if spine.leaves is None else tuple(spine.leaves),
                             None if spine.rails is None else tuple(spine.rails)))
    return tuple(out)


def parse_fabric(src: Source, fabric: FabricSchema, root: LineDict, cards: Mapping[str, int]) -> FabricSpec:
    """The ``fabric:`` mapping as its schema read it (``root``: the raw mapping, for lines),
    checked against the inventory's hosts and their cards (``cards``: host -> cards, in
    inventory order)."""
    unit = fabric.scalable_unit
    leaves: tuple[LeafSpec, ...] = ()
    if fabric.leaves is not None:
        if unit is not None:
            raise src.error("fabric: give scalable_unit or leaves, not both (leaves map every NIC itself)",
                            root, "leaves")
        items = root["leaves"]
        if not items:
            raise src.error("fabric leaves must be a non-empty list", root, "leaves")
        leaves = tuple(_leaf(src, leaf, item, cards) for leaf, item in zip(fabric.leaves, items))
        where: dict[tuple[str, int], tuple[str, int]] = {}  # NIC -> (leaf, port)
        for item, leaf in zip(items, leaves):
            if sum(1 for x in leaves if x.name == leaf.name) > 1:
                raise src.error(f"duplicate leaf name {leaf.name!r}", item, "name")
            for host, rail, port in leaf.nics:
                if (host, rail) in where:
                    other, first = where[(host, rail)]
                    # one leaf twice was said as 'two leaves: a and a' (hostile round 20, H20-16)
                    raise src.error(f"{host}/nic{rail} is cabled twice to leaf {leaf.name}, on ports {first} and {port}"
                                    if other == leaf.name else f"{host}/nic{rail} hangs off two leaves: {other} and "
                                    f"{leaf.name}", item)
                where[(host, rail)] = (leaf.name, port)
        missing = next(((h, r) for h, n in cards.items() for r in range(n) if (h, r) not in where), None)
        if missing is not None:
            raise src.error(f"fabric leaves: {missing[0]}/nic{missing[1]} hangs off no leaf (an explicit map "
                            f"names every NIC: rail r of every host)", root, "leaves")
    if leaves:
        names = {x.name for x in leaves}
    else:  # leaves by scalable unit (the whole cluster one unit without scalable_unit)
        hosts, rails = len(cards), max(cards.values(), default=0)
        names = {unit_leaf(k, r) for k in range(-(-hosts // (unit or max(hosts, 1)))) for r in range(rails)}
    spines = _spines(src, fabric.spines, root, names) if fabric.spines is not None else ()
    _check_switches(src, root, leaves, names, spines)
    return FabricSpec(unit, leaves, spines)


def _check_switches(src: Source, root: LineDict, leaves: tuple[LeafSpec, ...], names: set[str],
                    spines: tuple[SpineSpec, ...]) -> None:
    """Each switch one name, whatever its case (a leaf and a spine, or ``a`` and ``A``, would be
    one entity to isolate and one evidence folder on a case-blind disk); every spine joins a
    leaf (a spine of rails no leaf serves has no cable); every uplink port a port number
    (a leaf's uplinks follow its highest host port). Hostile round 17."""
    seen: dict[str, str] = {}
    order = [x.name for x in leaves] if leaves else sorted(names)
    for kind, name in [*(("leaf", n) for n in order), *(("spine", s.name) for s in spines)]:
        if name.lower() in seen:
            raise src.error(f"{kind} {name!r} has the name of {seen[name.lower()]}: switch names are told apart "
                            "without case (one entity to isolate, one evidence folder)", root,
                            "spines" if kind == "spine" else "leaves")
        seen[name.lower()] = f"{kind} {name!r}"
    rails = {x.name: {r for _, r, _ in x.nics} for x in leaves} or {n: {_unit_rail(n)} for n in names}

    def joins(spine: SpineSpec, leaf: str) -> bool:  # as sncheck.fabric.Fabric joins them
        return (spine.leaves is None and spine.rails is None or leaf in (spine.leaves or ())
                or bool(rails[leaf] & set(spine.rails or ())))

    for spine in spines:
        if not any(joins(spine, n) for n in names):
            raise src.error(f"spine {spine.name} joins no leaf: no leaf serves rail(s) "
                            f"{', '.join(map(str, spine.rails or ()))} (a spine with no cable)", root, "spines")
    for leaf in leaves:
        top, up = max(p for _, _, p in leaf.nics), sum(joins(spine, leaf.name) for spine in spines)
        if top + up > MAX_PORT:
            raise src.error(f"leaf {leaf.name}: its {up} uplinks follow its highest host port {top}: port "
                            f"{top + up} passes {MAX_PORT}", root, "spines")


def _unit_rail(leaf: str) -> int:
    """The rail of a leaf named by scalable unit (``su<k>-rail<r>``)."""
    return int(leaf.rsplit("rail", 1)[1])
