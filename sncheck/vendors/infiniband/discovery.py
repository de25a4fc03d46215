"""The InfiniBand fabric read from the fabric itself: ``ibnetdiscover``'s topology as cabling
(sncheck.fabric.Cabling) and ``perfquery``'s counters of every switch port.

Names. A switch is named by its node description, with every character a switch id may not
hold (``:``, ``[``, ``]``, ``/``, blanks, ...) replaced by ``-`` (:func:`switch_name`), then its
GUID appended where two switches' names would be one (``<name>-0x...``); a switch
with a host adapter on it is a leaf, one with only switches on it a spine. A host adapter's
node description is ``<host> <device>`` (the kernel's default: the host name, then the RDMA
device, ``node001 mlx5_3``); its rail is the device's place among that host's adapters in the
fabric, in natural order (mlx5_2 before mlx5_10), as :func:`counters.rails` numbers them. A
host with another number of adapters than cards cannot have its rails told apart: it is
``unread`` (one finding), never guessed. An adapter of a host the inventory does not list is a
``stray`` (another cluster on the same fabric): counted, not judged.

Counters: one ``perfquery -l <lid> 255`` per switch (every port of it in one call, the LID
from ``ibnetdiscover``'s ``port 0 lid``; opensm must have assigned LIDs), parsed by
:func:`counters.parse_perfquery`.
"""

from __future__ import annotations

from collections import Counter

import re
from collections.abc import Mapping
from typing import Any

from sncheck.errors import ParseError
from sncheck.fabric import Cabling, port_id, switch_id
from sncheck.topology import natural_key
from sncheck.vendors import listing
from sncheck.vendors.infiniband.counters import ERROR_COUNTERS, parse_perfquery
from sncheck.vendors.infiniband.ibnetdiscover import parse_ibnetdiscover

TOPOLOGY_ARGV = ("ibnetdiscover",)
_NOT_IN_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def switch_name(desc: str) -> str:
    """A switch's node description as a switch name (``leaf:<name>``)."""
    return _NOT_IN_NAME.sub("-", desc.strip()).strip("-") or "unnamed"


def parse_topology(text: str) -> dict[str, Any]:
    parsed = parse_ibnetdiscover(text)
    if parsed.get("format") == "ports":  # -p's report: no node records, so no adapter, switch or cable would be found
        raise ParseError("an 'ibnetdiscover -p' ports report, not the topology: it holds no node records; "
                         "give ibnetdiscover's default output (no -p)", tool="ibnetdiscover")
    parsed["errors"] += listing.elided("ibnetdiscover", text)  # (as parse_text says it: the parser skips it)
    try:
        _switches(parsed)
    except ParseError as e:  # two switches one name: the topology does not read whole
        parsed["errors"].append(e.message)
    return parsed


def switch_kinds(parsed: dict[str, Any]) -> dict[str, str]:
    """Switch guid -> ``leaf`` (a host adapter on it) or ``spine``."""
    return {n["guid"]: "leaf" if any(x["remote_type"] == "ca" for x in n["links"]) else "spine"
            for n in parsed["nodes"] if n["type"] == "switch"}


def _switches(parsed: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Switch guid -> (kind, name). Switches whose descriptions give one name (unmanaged
    switches keep their vendor's default description; 'leaf 1' and 'leaf:1' read alike) are
    told apart by their GUID, ``<name>-<guid>``: one name for two switches would merge their
    ports' cables and counters."""
    kinds = switch_kinds(parsed)
    names = {n["guid"]: switch_name(n["desc"]) for n in parsed["nodes"] if n["type"] == "switch"}
    count = Counter(names.values())
    named = {guid: f"{name}-{guid}" if count[name] > 1 else name for guid, name in names.items()}
    # A GUID-suffixed name can be another switch's own description ('a', 'a', 'a-0x1'): no
    # name is then safe to give either, and a guess would merge two switches; refused.
    count = Counter(named.values())
    clash = next((name for name, n in count.items() if n > 1), None)
    if clash is not None:
        guids = sorted(g for g, name in named.items() if name == clash)
        raise ParseError(f"switches {guids[0]} and {guids[1]} both read as '{clash}' (a description equal to "
                         "another switch's with its GUID): rename one", tool="ibnetdiscover")
    return {guid: (kinds[guid], name) for guid, name in named.items()}


def cabling(parsed: dict[str, Any], cards: Mapping[str, int]) -> Cabling:
    """The cables ``ibnetdiscover`` found, named for an inventory whose hosts have ``cards``."""
    switches = _switches(parsed)
    by_host: dict[str, list[tuple[str, dict]]] = {}
    strays: list[str] = []
    unread: dict[str, str] = {}
    for n in parsed["nodes"]:
        if n["type"] != "ca":
            continue
        host, _, device = n["desc"].strip().partition(" ")
        if host not in cards:
            strays.append(n["desc"])
            continue
        by_host.setdefault(host, []).append((device.strip() or n["guid"], n))
    nics: dict[str, tuple[str, int]] = {}
    for host, adapters in by_host.items():
        if len(adapters) != cards[host]:
            unread[host] = (f"{len(adapters)} adapters of it in the fabric for its {cards[host]} cards: its rails "
                            f"cannot be told apart ({', '.join(sorted((d for d, _ in adapters), key=natural_key))})")
            continue
        for rail, (_, n) in enumerate(sorted(adapters, key=lambda a: natural_key(a[0]))):
            link = next((x for x in n["links"] if x["remote_guid"] in switches), None)
            if link is not None:
                nics[f"{host}/nic{rail}"] = (switches[link["remote_guid"]][1], link["remote_port"])
    for host in cards:
        if host not in by_host:
            unread[host] = "no adapter of it in the fabric"
    uplinks = {}
    for guid, (kind, name) in switches.items():
        if kind != "leaf":
            continue
        node = next(n for n in parsed["nodes"] if n["guid"] == guid)
        for x in node["links"]:
            far = switches.get(x["remote_guid"])
            if far is not None and far[0] == "spine":
                uplinks[(name, x["port"])] = (far[1], x["remote_port"])
    return Cabling(nics, uplinks, unread, tuple(strays))


def counter_commands(parsed: dict[str, Any]) -> list[tuple[str, tuple[str, ...]]]:
    """``(switch id, argv)``: the perfquery that reads every port of each switch."""
    out: list[tuple[str, tuple[str, ...]]] = []
    switches = _switches(parsed)
    for n in parsed["nodes"]:
        if n["type"] == "switch" and n["lid"]:
            kind, name = switches[n["guid"]]
            out.append((switch_id(kind, name), ("perfquery", "-l", str(n["lid"]), "255")))
    return out


def port_counters(switch: str, text: str) -> tuple[dict[str, dict[str, int]], list[str]]:
    """One switch's perfquery output as ``{switch port id: {error counter: value}}`` (sysfs
    names; traffic and wait counters left out) and its errors."""
    parsed = parse_perfquery(text)
    ports = {port_id(switch, p["port"]): {c: v for c, v in p["counters"].items() if c in ERROR_COUNTERS}
             for p in parsed["ports"] if isinstance(p["port"], int)}
    return ports, parsed["errors"]
