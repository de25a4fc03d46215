"""InfiniBand / RoCE port facts from ``ibstat``, shared by every vendor's platforms.

Every port Active / LinkUp; the expected rate of a port is the highest rate among ports
of the same adapter model and link layer on the host (a 400G RoCE NIC next to a 100G
management NIC is fine; one 400G NIC at 200G is not).
"""

from __future__ import annotations

from typing import Any

from sncheck.vendors.facts import Expect, command, fact_row, listed
from sncheck.vendors.infiniband import ibstat


def check_ib_ports(host: str, parsed: dict[str, Any], expect: Expect) -> list[dict]:
    ports = [(ca, p) for ca in parsed.get("cas") or [] for p in ca["ports"]]
    top: dict[tuple, float] = {}
    for ca, p in ports:
        key = (ca.get("ca_type"), p.get("link_layer"))
        if p.get("rate_gbps") is not None:
            top[key] = max(top.get(key, 0), p["rate_gbps"])
    bad: list[str] = []
    up = 0
    for ca, p in ports:
        name = f"{ca['name']} port {p['port']}"
        state, phys = str(p.get("state") or "?"), str(p.get("physical_state") or "?")
        if state.lower() != "active" or phys.lower() != "linkup":
            bad.append(f"{name} {state}/{phys}")
            continue
        up += 1
        best = top.get((ca.get("ca_type"), p.get("link_layer")))
        if p.get("rate_gbps") is not None and best is not None and p["rate_gbps"] < best:
            bad.append(f"{name} at {p['rate_gbps']:g} Gb/s (same adapters run {best:g} Gb/s)")
    bad += [str(e) for e in parsed.get("errors") or []]
    rates = ", ".join(f"{r:g}" for r in sorted(set(top.values()), reverse=True)) or "?"
    msg = f"{up}/{len(ports)} IB/RoCE ports active (rates {rates} Gb/s)"
    if bad:
        msg += f": {listed(bad)}"
    return [fact_row(host, "ib_ports", up, len(ports), not bad and bool(ports), msg, "ibstat")]


IBSTAT = command("ibstat", "ibstat", ["ibstat"], ibstat.parse_ibstat, check_ib_ports, "ib_ports")
IB_FACTS = {"ib_ports": ("ibstat", "a port not Active/LinkUp, below its adapters' top rate, or an ibpanic")}
