"""The fabric as found against the fabric as declared: cabling findings, and switch ports
whose error counters grew between two reads.

Both take plain data (sncheck.fabric.Cabling, counters by switch port id), whatever read the
fabric (``sncheck fabric check``: ibnetdiscover and perfquery through the InfiniBand plug-in).

* rule ``cabling`` (critical): a NIC found on another switch or port than the fabric declares
  (miscabled: the finding names the declared cable and says where it is), a NIC not found at
  all (missing), a host whose adapters cannot be told apart (its rails unread), a declared
  leaf-spine uplink not found or found elsewhere, an uplink found that the fabric does not
  declare. Entity: the declared cable (``<host>/nic<r><->leaf:<name>[<port>]``, kind link), or
  the host.
* rule ``switch-port-counter-growth`` (warning): an error counter of a switch port that grew
  between the two reads (a read that saw the port once judges nothing). Entity: the cable at
  that port as found (kind link), the switch port itself when nothing is cabled there.
"""

from __future__ import annotations

from collections.abc import Mapping

from sncheck.fabric import LEAF, SPINE, Cabling, Fabric, port_id, switch_id
from sncheck.model import LINK_SEP, EntityKind, Finding, Severity, natural_key

CABLING = "cabling"
GROWTH = "switch-port-counter-growth"
LAYER = "fabric"

def _cable(nic: str, leaf: str, port: int) -> str:
    return f"{nic}{LINK_SEP}{port_id(switch_id(LEAF, leaf), port)}"


def _uplink(leaf: tuple[str, int], spine: tuple[str, int]) -> str:
    return f"{port_id(switch_id(LEAF, leaf[0]), leaf[1])}{LINK_SEP}{port_id(switch_id(SPINE, spine[0]), spine[1])}"


def _finding(entity: str, kind: str, message: str, evidence: dict) -> Finding:
    return Finding(entity, EntityKind(kind), LAYER, CABLING, Severity.CRITICAL, message, evidence)


def cabling_findings(fabric: Fabric, found: Cabling) -> list[Finding]:
    """Every difference between the declared cabling and ``found`` (one finding each)."""
    declared = fabric.declared_cabling()
    out: list[Finding] = []
    for host, why in sorted(found.unread.items(), key=lambda x: natural_key(x[0])):
        out.append(_finding(host, "host", f"{host}: {why}", {"why": why}))
    where = {v: k for k, v in found.nics.items()}  # (switch, port) -> the NIC found there
    for nic, (leaf, port) in sorted(declared.nics.items(), key=lambda x: natural_key(x[0])):
        host = nic.rpartition("/")[0]
        if host in found.unread:
            continue
        cable = _cable(nic, leaf, port)
        got = found.nics.get(nic)
        ev = {"declared": port_id(switch_id(LEAF, leaf), port)}
        if got is None:
            out.append(_finding(cable, "link", f"{nic} is not cabled: the fabric has no link from it "
                                f"(declared on {ev['declared']})", ev))
        elif got != (leaf, port):
            there = port_id(switch_id(LEAF, got[0]), got[1])
            taken = where.get((leaf, port))
            also = f"; {taken} is on its declared port" if taken else f"; nothing is on {ev['declared']}"
            out.append(_finding(cable, "link", f"{nic} is miscabled: found on {there}, declared on "
                                f"{ev['declared']}{also}", {**ev, "found": there}))
    for up, down in sorted(declared.uplinks.items()):
        got_down = found.uplinks.get(up)
        if got_down != down:
            cable = _uplink(up, down)
            if got_down is None:
                message = f"uplink {cable} is not cabled: nothing is found on {port_id(switch_id(LEAF, up[0]), up[1])}"
            else:
                message = (f"uplink {cable} is miscabled: {port_id(switch_id(LEAF, up[0]), up[1])} is found on "
                           f"{port_id(switch_id(SPINE, got_down[0]), got_down[1])}")
            out.append(_finding(cable, "link", message, {"declared": cable}))
    for up, down in sorted(found.uplinks.items()):
        if up not in declared.uplinks:
            cable = _uplink(up, down)
            out.append(_finding(cable, "link", f"uplink {cable} is found but the fabric does not declare it",
                                {"found": cable}))
    return out


def counter_growth_findings(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]],
                            found: Cabling | None = None, above: int = 0) -> list[Finding]:
    """A finding per switch port (``leaf:<name>[<p>]``) whose error counters (the reader
    gives only error counters: sncheck.vendors.infiniband.discovery) grew by more than
    ``above`` from ``before`` to ``after``, named as the cable found at that port."""
    at_port = {}
    if found is not None:
        at_port = {port_id(switch_id(LEAF, sw), p): _cable(nic, sw, p) for nic, (sw, p) in found.nics.items()}
        for up, down in found.uplinks.items():
            cable = _uplink(up, down)
            at_port[port_id(switch_id(LEAF, up[0]), up[1])] = cable
            at_port[port_id(switch_id(SPINE, down[0]), down[1])] = cable
    out = []
    for port in sorted(after, key=natural_key):
        was = before.get(port)
        if was is None:
            continue
        grew = {c: (was[c], v) for c, v in sorted(after[port].items())
                if isinstance(was.get(c), int) and isinstance(v, int) and v - was[c] > above}
        if not grew:
            continue
        entity = at_port.get(port, port)
        said = ", ".join(f"{c} {a} -> {b}" for c, (a, b) in grew.items())
        out.append(Finding(entity, EntityKind.LINK, LAYER, GROWTH, Severity.WARNING,
                           f"switch port {port}{f' ({entity})' if entity != port else ''}: error counters grew "
                           f"during the run: {said}",
                           {"switch_port": port, "counters": {c: {"before": a, "after": b, "growth": b - a}
                                                              for c, (a, b) in grew.items()}}))
    return out
