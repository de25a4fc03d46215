"""Host facts of a simulated host on a platform: each vendor's ``sim`` renders the tool
output of every fact command from real captures, with the host's platform faults acted
out in it; the vendor's own parsers and checks then judge it (:func:`facts.evaluate`),
and its domain check judges each supernode. So the checks that judge the mock are the
ones that judge real hosts.

A vendor simulates when its package has ``sim.py`` (NVIDIA's NVL72 lives in
``nvidia/sim_fabric.py``) with ``outputs(host, index, faults, down_in_domain) -> {command
name: output}``.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import Any

from . import facts, registry

_SIM_MODULE = {"nvidia": "sim_fabric"}


def simulator(vendor: str):
    try:
        return importlib.import_module(f"{__package__}.{vendor}.{_SIM_MODULE.get(vendor, 'sim')}")
    except ModuleNotFoundError:
        return None


def platform_rows(inventory: Any, hosts: Sequence[str], faults: Sequence[Any],
                  reachable: Sequence[str] | None = None) -> list[dict]:
    """``host_fact`` rows of ``hosts`` that are on a platform whose vendor simulates.

    The domain check sees every ``reachable`` host of the supernode (default: all), as a
    retest of one tray still sees its rack; only the rows of ``hosts`` are returned."""
    rows: list[dict] = []
    for sn in inventory.supernodes:
        if not sn.platform:
            continue
        plat = registry.platform(sn.platform)
        vendor = registry.vendor_of(plat)
        sim = simulator(vendor.name)
        mine = [h for h in sn.hosts if h in hosts]
        if sim is None or not mine:
            continue
        seen = [h for h in sn.hosts if reachable is None or h in reachable or h in mine]
        down = [sn.hosts.index(f.host) for f in faults if f.type == "imex_down" and f.host in sn.hosts]
        sn_rows: list[dict] = []
        for h in seen:
            on_host = [f for f in faults if f.host == h]
            out = sim.outputs(h, sn.hosts.index(h), on_host, down)
            expect = facts.Expect(cards=inventory.hosts[h].cards, platform=plat, domain_hosts=len(sn.hosts))
            for cmd in vendor.commands_for(plat):
                if cmd.name in out:
                    sn_rows += facts.evaluate(h, cmd, expect, exit_code=0, stdout=out[cmd.name])
        if vendor.domain_check:
            sn_rows += vendor.domain_check(plat, sn.name, sn.hosts, sn_rows)
        rows += [r for r in sn_rows if r["host"] in mine]
    return rows
