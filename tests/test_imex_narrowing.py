"""An IMEX node down is named at its own tray on every path that reads host facts: the
node-check of one tray (its own view), and the Slurm backend's domain step. (The SSH and
mock paths are tested in test_vendor_nvidia.py and test_platforms.py.) The tool output is
the real 18-node nvidia-imex-ctl -N capture with node #8 UNAVAILABLE (sim_fabric.imex)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from sncheck.inventory import load_inventory
from sncheck.nodecheck import NodeReport, check_facts
from sncheck.vendors import registry
from sncheck.vendors.nvidia import sim_fabric

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "nvl72-rack.yaml"


def _runner(host: str, inv) -> callable:
    """What each NVL72 fact command prints on ``host`` while tray09's IMEX node is down."""
    hosts = inv.supernode_of(host).hosts
    out = sim_fabric.outputs(host, hosts.index(host), [], down_in_domain=(8,))
    by_argv = {tuple(c.argv): out[c.name] for c in registry.vendor_of(inv.platform_of(host))
               .commands_for(inv.platform_of(host)) if c.name in out}

    def run(argv: list[str], timeout: float):
        text = by_argv.get(tuple(argv))
        return SimpleNamespace(ok=text is not None, exit_code=0 if text is not None else 127,
                               stdout=text or "", stderr="" if text is not None else "not found",
                               timed_out=False, duration=0.01)
    return run


def test_node_check_of_the_down_tray_names_itself_and_no_other_tray_does() -> None:
    inv = load_inventory(INV)
    assert inv.supernode_of("tray09").hosts.index("tray09") == 8
    reports = {}
    for tray in ("tray01", "tray09"):
        report = NodeReport(tray, 4, "inventory")
        check_facts(tray, 4, time.monotonic() + 60, report, inventory=inv, run=_runner(tray, inv))
        reports[tray] = report
    assert [(p.entity, p.rule) for p in reports["tray09"].problems] == [("tray09", "imex_node")], \
        reports["tray09"].problems
    assert "IMEX node #8 172.31.52.239 is UNAVAILABLE in 1 of 1 trays'" in reports["tray09"].problems[0].message
    assert reports["tray01"].problems == []  # tray01 sees node #8 down; that is tray09's to act on


def test_slurm_backend_runs_the_domain_step(monkeypatch) -> None:
    from sncheck.backends import slurm
    from sncheck.topology import Topology
    from sncheck.vendors import facts as hostfacts

    monkeypatch.setattr(shutil, "which", lambda name: "/usr/bin/" + name)  # srun need not exist: the step is faked
    inv = load_inventory(INV)
    backend = slurm.SlurmBackend(Topology(inv))

    def step(hosts: list[str], emit) -> None:  # what the srun facts step emits: each tray's own rows
        for h in hosts:
            plat = inv.platform_of(h)
            expect = hostfacts.Expect(inv.hosts[h].cards, plat, len(inv.supernode_of(h).hosts))
            run = _runner(h, inv)
            for cmd in registry.vendor_of(plat).commands_for(plat):
                res = run(list(cmd.argv), 10)
                for row in hostfacts.evaluate(h, cmd, expect, exit_code=res.exit_code, stdout=res.stdout):
                    emit(row)

    monkeypatch.setattr(backend, "_facts_step", step)
    rows: list[dict] = []
    backend.host_facts(tuple(inv.hosts), rows.append)
    bad = sorted({(r["host"], r["fact"]) for r in rows if r["ok"] is False})
    assert bad == [("tray09", "imex_node")], bad
