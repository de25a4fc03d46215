"""Every rail's scale-out carries the stress layer's collectives (reviews19 #2): with one
cross-supernode group over rail 0 alone, the shipped nightly-stress playbook passed a dead
rail-2 leaf and a NIC at 0.3 on rail 2 with no finding at all (exit 0, "verdict pass")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from sncheck.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("fault, entity", [
    ("{type: dead_switch, target: 'leaf:su0-rail2'}", "leaf:su0-rail2"),
    ("{type: slow_nic, target: node003, port: 3, factor: 0.3}", "node003/nic2"),
], ids=["dead-rail2-leaf", "rail2-nic"])
def test_the_nightly_stresses_every_rails_scale_out(tmp_path: Path, fault: str, entity: str) -> None:
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text(f"faults:\n  - {fault}\n")
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / "fixtures/inventories/demo-2sn.yaml"),
                                  "--backend", "mock", "--faults", str(plan), "--seed", "1", "--out", str(out), "-q"])
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"] for f in res["findings"] if f["gates"]}
    assert r.exit_code == 1 and entity in named, (r.exit_code, named)
    stress = next(layer["summary"] for layer in res["layers"] if layer["name"] == "stress")
    assert stress["groups"] == 16 + 8 + 2 + 4, stress  # hosts, rail groups, domains and a cross group a rail
    # rail 2's own cross group showed it (slow, or failed outright: its rail-2 cards of both domains suspects)
    assert "cross:gpu2" in stress.get("slow_groups", {}) or {"node003/gpu2", "node011/gpu2"} <= set(
        stress["suspects"]), stress


def test_a_cross_group_is_read_against_design_alone_never_labelled_peers() -> None:
    """The cross groups (one a rail) are judged against the scale-out design, not each other: where no
    design bounds a size (here: no design given), a row says it was not compared ('none'), never
    'peers' beside a value no peer set (a label the reports and beyond_culprits read)."""
    import pandas as pd

    from sncheck.backends.mock import MockBackend
    from sncheck.health.groups import group_busbw
    from sncheck.health.metrics import DetectContext
    from sncheck.probeplan import StressPlan, stress_groups
    from sncheck.run.inputs import load_faults_text, load_inventory
    from sncheck.topology import Topology

    topo = Topology(load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml"))
    rows: list[dict] = []
    MockBackend(topo, load_faults_text("faults: []", topo), seed=0).collectives(
        StressPlan(groups=stress_groups(topo), sizes=(8, 1 << 20)), rows.append)
    judged = group_busbw(pd.DataFrame(rows), DetectContext(topo, {}))
    cross = judged[judged["group_kind"] == "cross"]
    assert set(cross["group"]) == {f"cross:gpu{k}" for k in range(4)}
    assert set(cross["basis"]) == {"none"} and cross["expected_us"].isna().all(), cross[["group", "basis"]]
    hosts = judged[judged["group_kind"] == "host"]
    assert (hosts["basis"] == "peers").any()  # the host groups still compare with each other


def test_a_lone_group_s_tier_is_worked_out_once_not_once_a_row(monkeypatch) -> None:
    """A cross group's rows are one a size and collective, and its tier reads every card of it (16,384
    at 131,072 cards): worked out a row, it cost the 16k gate ~1.2 s a group_busbw, four times a run.
    Once a group and topology, the same design readings."""
    import pandas as pd

    from sncheck.backends.mock import MockBackend
    from sncheck.health import groups
    from sncheck.health.metrics import DetectContext
    from sncheck.probeplan import StressPlan, stress_groups
    from sncheck.run.inputs import load_faults_text, load_inventory
    from sncheck.topology import Topology

    inv = load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml")
    topo = Topology(inv)
    rows: list[dict] = []
    MockBackend(topo, load_faults_text("faults: []", topo), seed=0).collectives(
        StressPlan(groups=stress_groups(topo), sizes=(8, 1 << 20, 1 << 30)), rows.append)
    asked: list[str] = []
    members = groups.group_members
    monkeypatch.setattr(groups, "group_members", lambda g, t: asked.append(g) or members(g, t))
    ctx = DetectContext(topo, dict(inv.design))
    first = groups.group_busbw(pd.DataFrame(rows), ctx)
    again = groups.group_busbw(pd.DataFrame(rows), ctx)
    cross = sorted(g for g in asked if g.startswith("cross:"))
    assert cross == [f"cross:gpu{k}" for k in range(4)], cross
    assert (first.loc[first["group_kind"] == "cross", "basis"] == "design").any()  # read against the design
    pd.testing.assert_frame_equal(first, again)
