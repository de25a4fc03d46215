"""An IMEX node down is named at its own tray on every path that reads host facts: the
node-check of one tray (its own view), and the Slurm backend's domain step. (The SSH and
mock paths are tested in test_vendor_nvidia.py and test_platforms.py.) The tool output is
the real 18-node nvidia-imex-ctl -N capture with node #8 UNAVAILABLE (sim_fabric.imex)."""

from __future__ import annotations

import time
from pathlib import Path

from sncheck.run.inputs import load_inventory
from sncheck.run.nodecheck import NodeReport, check_facts

from imex_replay import replay_runner, slurm_fact_rows

INV = Path(__file__).resolve().parents[1] / "fixtures" / "inventories" / "nvl72-rack.yaml"


def _runner(host: str, inv):
    """What each NVL72 fact command prints on ``host`` while tray09's IMEX node is down."""
    hosts = inv.supernode_of(host).hosts
    return replay_runner(host, hosts.index(host), inv.platform_of(host), (8,))


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
    inv = load_inventory(INV)
    rows = slurm_fact_rows(inv, lambda h: _runner(h, inv), monkeypatch)
    bad = sorted({(r["host"], r["fact"]) for r in rows if r["ok"] is False})
    assert bad == [("tray09", "imex_node")], bad
