"""``ibnetdiscover -p`` (``--ports``): the ports report, one line per port of every node found.

Grammar, from rdma-core's ``infiniband-diags/ibnetdiscover.c`` ``dump_ports_report`` (called
through ``ibnd_iter_nodes`` for every node of the fabric; each node's ports from its highest
number down to 1, port 0 never)::

    "%2s %5d %2d 0x%016llx %s %s"    type (SW CA RT ??), LID (a switch's smalid, else the
                                      port's base LID), port, port GUID, width, speed
    then, a port with a far end:      " - %2s %5d %2d 0x%016llx ( '%s' - '%s' )"
                                      (the far end's type, LID, port, port GUID; the node's
                                      description, the far node's)
    or, a port without one:           "%36s'%s'" (36 blanks, the node's description)

Width ``dump_linkwidth_compat`` (1x 2x 4x 8x 12x, ``??``), speed ``dump_linkspeed_compat`` /
``dump_linkspeedext_compat`` (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR, ``???``). The report has
no header and no end line; every node of the fabric is in it, so every link is listed from
both its ends: a link listed from one end only is a cut (or an excerpt), an error. A switch's
ports are all there, from its highest down to 1 (libibnetdisc ``recv_port0_info`` queries
PortInfo on every port 1..numports of a switch it finds, linked or not): a switch whose ports
are not 1..N, each once, is an excerpt or a cut, an error. A line the grammar does not hold (a
cut inside one: its tail, a quote not closed) is an error. A port without a far end whose
description stands without quotes (infiniband_exporter's test3 fixture) is read alike.
"""

from __future__ import annotations

import re
from typing import Any

PORT_LINE = re.compile(r"^(SW|CA|RT|\?\?)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{16})\s+(\S+)\s+(\S+)(.*)$")
_LINKED = re.compile(r"^\s+-\s+(SW|CA|RT|\?\?)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{16})\s+\( '(.*)' - '(.*)' \)\s*$")
_UNLINKED = re.compile(r"^\s+'(.*)'\s*$")
_UNLINKED_BARE = re.compile(r"^\s{2,}([^'\s].*?)\s*$")  # the description without its quotes
_WIDTHS = {"1x", "2x", "4x", "8x", "12x", "??"}
_SPEEDS = {"SDR", "DDR", "QDR", "FDR10", "FDR", "EDR", "HDR", "NDR", "XDR", "???"}
_TYPES = {"SW": "switch", "CA": "ca", "RT": "router", "??": None}


def is_ports_report(text: str) -> bool:
    """Whether the output's first record line is a ports report's (the topology file's are
    'vendid=', 'Switch', 'Ca' and '[p]' lines)."""
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            return PORT_LINE.match(line) is not None
    return False


def parse_ports_report(text: str, other: Any) -> dict[str, Any]:
    """Every port line as ``ports[{type, lid, port, guid, width, speed, desc, remote}]``
    (``remote``: ``{type, lid, port, guid, desc}`` or null for a port without a far end).
    ``other`` names a line no record holds (the tool's error line as it is)."""
    ports: list[dict[str, Any]] = []
    errors: list[str] = []
    for raw in text.splitlines():
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = PORT_LINE.match(line.strip())
        entry = _port(m) if m else None
        if entry is None:
            errors.append(other(line.strip()))
            continue
        ports.append(entry)
    return {"tool": "ibnetdiscover", "format": "ports", "ports": ports, "nodes": [],
            "errors": errors + _one_ended(ports) + _switch_gaps(ports)}


MAX_PORT = 255    # a port number is a byte (ib_types' PortInfo, SMP port select): 1..254 on a switch
MAX_LID = 0xFFFF  # a LID is 16 bits


def _port(m: re.Match) -> dict[str, Any] | None:
    if m.group(5) not in _WIDTHS or m.group(6) not in _SPEEDS:
        return None
    # a port or LID no fabric has is no line of the tool's (switch port 4294967295 made the gap
    # check build every number up to it: memory ran out)
    if not (0 < int(m.group(3)) <= MAX_PORT and int(m.group(2)) <= MAX_LID):
        return None
    entry: dict[str, Any] = {"type": _TYPES[m.group(1)], "lid": int(m.group(2)), "port": int(m.group(3)),
                             "guid": f"0x{m.group(4).lower()}", "width": m.group(5), "speed": m.group(6)}
    tail = m.group(7)
    if far := _LINKED.match(tail):
        if not (0 < int(far.group(3)) <= MAX_PORT and int(far.group(2)) <= MAX_LID):
            return None
        entry["desc"] = far.group(5)
        entry["remote"] = {"type": _TYPES[far.group(1)], "lid": int(far.group(2)), "port": int(far.group(3)),
                           "guid": f"0x{far.group(4).lower()}", "desc": far.group(6)}
    elif alone := _UNLINKED.match(tail) or _UNLINKED_BARE.match(tail):
        entry["desc"] = alone.group(1)
        entry["remote"] = None
    else:
        return None
    return entry


def _one_ended(ports: list[dict[str, Any]]) -> list[str]:
    """A link whose far port has no line listing it back: the report lists every node's ports,
    so the far end's line is missing (a cut, an excerpt) or names another link."""
    ends = {(p["guid"], p["port"]): p for p in ports}
    out = []
    for p in ports:
        far = p["remote"]
        if far is None:
            continue
        back = ends.get((far["guid"], far["port"]))
        if back is None or back["remote"] is None or (back["remote"]["guid"], back["remote"]["port"]) != \
                (p["guid"], p["port"]):
            out.append(f"{p['guid']} port {p['port']} ({p['desc']!r}) links to {far['guid']} port {far['port']}, "
                       "whose line does not list it back (cut short, or an excerpt)")
    return out


def _switch_gaps(ports: list[dict[str, Any]]) -> list[str]:
    """A switch lists every port 1..N once (recv_port0_info): its missing or repeated ports."""
    by_switch: dict[str, list[int]] = {}
    for p in ports:
        if p["type"] == "switch":
            by_switch.setdefault(p["guid"], []).append(p["port"])
    out = []
    for guid, listed in by_switch.items():
        missing = sorted(set(range(1, max(listed) + 1)) - set(listed))
        if missing or len(listed) != len(set(listed)):
            shown = ", ".join(map(str, missing[:8])) + (f" and {len(missing) - 8} more" if len(missing) > 8 else "")
            out.append(f"switch {guid}: {'ports ' + shown + ' not listed' if missing else 'a port listed twice'} "
                       "(the report lists every port of a switch once: an excerpt or a cut)")
    return out
