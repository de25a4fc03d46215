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
* rule ``switch-port-counter-growth``: an error counter of a switch port that grew between the
  two reads beyond the bar of a counter_growth rule of the rules file that judges it (the
  shipped ``ib-port-errors-grew``: above 0, critical; ``ib-port-discards-grew``: above 100,
  warning), at the worst crossed rule's severity, as a run judges its NICs' reads; what no
  rule judges, a port read once, and a counter read lower after than before, is not judged
  (warning). Entity: the cable at that port as found (kind link), the switch port itself when
  nothing is cabled there.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from sncheck.fabric import LEAF, SPINE, Cabling, Fabric, port_id, switch_id
from sncheck.model import LINK_SEP, Basis, EntityKind, Finding, Severity, natural_key
from sncheck.vendors.portcounters import CLEAR, saturated

if TYPE_CHECKING:
    from sncheck.health.rules import Rule

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


class Bar(NamedTuple):
    """A rule's bar for a counter's growth: the rule, the growth it allows, its severity."""
    rule: str
    above: float
    severity: Severity


def growth_bars(rules: Iterable[Rule]) -> dict[str, list[Bar]]:
    """Each counter's bars: the counter_growth rules on ``fabric_counters`` that judge its growth
    (as a run judges its NICs' reads: :func:`sncheck.health.fabric.counter_growth`)."""
    bars: dict[str, list[Bar]] = {}
    for r in rules:
        if r.op == "counter_growth" and r.metric == "fabric_counters" and r.params.get("of", "growth") == "growth" \
                and r.params.get("fact") in (None, "ib_counters"):  # (a switch port's counters are an IB port's)
            for c in r.params.get("counters") or ():
                bars.setdefault(str(c), []).append(Bar(r.name, float(r.params["above"]), r.severity))
    return bars


def counter_growth_findings(before: Mapping[str, Mapping[str, int]], after: Mapping[str, Mapping[str, int]],
                            found: Cabling | None, bars: Mapping[str, list[Bar]]) -> list[Finding]:
    """A finding per switch port (``leaf:<name>[<p>]``) whose error counters (the reader
    gives only error counters: sncheck.vendors.infiniband.discovery) grew from ``before`` to
    ``after`` beyond a rule's bar (``bars``: :func:`growth_bars`), at the worst crossed rule's
    severity, named as the cable found at that port. What cannot be judged is a finding of its
    own (not judged), never a pass: a counter that grew and no rule judges, a port read only
    now (its growth unknown), a port or counter read before and not now, a counter read lower
    now than before (a reset, a wrap, another port's read: its growth unknown)."""
    at_port = {}
    if found is not None:
        at_port = {port_id(switch_id(LEAF, sw), p): _cable(nic, sw, p) for nic, (sw, p) in found.nics.items()}
        for up, down in found.uplinks.items():
            cable = _uplink(up, down)
            at_port[port_id(switch_id(LEAF, up[0]), up[1])] = cable
            at_port[port_id(switch_id(SPINE, down[0]), down[1])] = cable
    out = []
    for port in sorted(after.keys() | before.keys(), key=natural_key):
        entity = at_port.get(port, port)
        where = f"switch port {port}{f' ({entity})' if entity != port else ''}"
        was, now = before.get(port), after.get(port)
        if was is None or now is None:
            said = "read only now: its growth is unknown" if was is None else "read before and not now"
            out.append(_unjudged(entity, f"{where}: {said}", {"switch_port": port}))
            continue
        gone = sorted(set(was) - set(now))
        # at its width's maximum in either read (perfquery without -x reads PortCounters: they stop there, IBA
        # 16.1.3.5): its growth is unknown (reviews17 #3)
        capped = {c: (was[c], v) for c, v in sorted(now.items()) if c in was and (saturated(c, was[c]) or saturated(c, v))}
        grew = {c: (was[c], v) for c, v in sorted(now.items()) if c in was and v - was[c] > 0 and c not in capped}
        crossed = {c: [b for b in bars.get(c, ()) if v - a > b.above] for c, (a, v) in grew.items()}
        unruled = [c for c in grew if c not in bars]
        # read lower now (reset, wrapped, another port's read): its growth is unknown (round 8)
        lower = {c: (was[c], v) for c, v in sorted(now.items()) if c in was and v < was[c] and c not in capped}
        # a counter the earlier read did not hold (another sncheck's file): it grew by at most what it reads, so
        # above the lowest bar on it now (above zero with none) its growth is unknown; at or under, it crossed none
        new = sorted(c for c, v in now.items() if c not in was and v > min((b.above for b in bars.get(c, ())), default=0))
        if unruled or gone or lower or new or capped:
            why = ([f"no rule judges the growth of {', '.join(unruled)}"] if unruled else []) + \
                ([f"{', '.join(gone)} read before and not now"] if gone else []) + \
                ([f"{', '.join(f'{c}={now[c]}' for c in new)} read only now: the growth is unknown"] if new else []) + \
                ([", ".join(f"{c} {a} -> {b}" for c, (a, b) in lower.items()) + " went down (reset, wrapped, or "
                  "another port read): the growth is unknown"] if lower else []) + \
                ([", ".join(f"{c} {a} -> {b}" for c, (a, b) in capped.items()) + f" at the counter's maximum (it "
                  f"stops there: {CLEAR}): the growth is unknown"]
                 if capped else [])
            counters = {**_grown(grew, unruled), **{c: {"before": a, "after": b, "growth": None}
                                                    for c, (a, b) in (lower | capped).items()}}
            out.append(_unjudged(entity, f"{where}: not judged: {'; '.join(why)}",
                                 {"switch_port": port, "counters": counters}))
        failed = [c for c in grew if crossed.get(c)]
        if not failed:
            continue
        worst = max((b for c in failed for b in crossed[c]), key=lambda b: b.severity.rank)
        said = ", ".join(f"{c} {a} -> {b} (over {', '.join(f'{x.rule} +{x.above:g}' for x in crossed[c])})"
                         for c, (a, b) in grew.items() if c in failed)
        out.append(Finding(entity, EntityKind.LINK, LAYER, GROWTH, worst.severity,
                           f"{where}: error counters grew during the run beyond the rules' bars: {said}",
                           {"switch_port": port, "counters": _grown(grew, failed),
                            "rules": sorted({b.rule for c in failed for b in crossed[c]})}))
    return out


def _grown(grew: Mapping[str, tuple[int, int]], names: list[str]) -> dict:
    return {c: {"before": grew[c][0], "after": grew[c][1], "growth": grew[c][1] - grew[c][0]} for c in names}


def _unjudged(entity: str, message: str, evidence: dict) -> Finding:
    return Finding(entity, EntityKind.LINK, LAYER, GROWTH, Severity.WARNING, message, evidence,
                   basis=Basis.NOT_JUDGED)
