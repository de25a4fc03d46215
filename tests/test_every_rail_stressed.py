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


@pytest.mark.parametrize("inventory, fault, seed, entity", [
    ("fixtures/inventories/demo-2sn.yaml", "{type: slow_nic, target: node003, port: 2, factor: 0.6}", 1,
     "node003/nic1"),
    ("tests/data/scenarios-r6/inv-clos-2pod.yaml", "{type: degraded_link, target: 'ca4/gpu2<->cb2/gpu2', factor: 0.5}",
     2, "ca4/gpu2<->cb2/gpu2"),
], ids=["nic-0.6", "scale-out-link-0.5"])
def test_one_rails_slowness_the_design_bar_lets_by_is_read_against_the_other_rails(
        tmp_path: Path, inventory: str, fault: str, seed: int, entity: str) -> None:
    """reviews20 #1: judged against design alone (bar 0.5), a NIC at 0.6 passed the nightly (its rail's
    all_to_all at 0.60x of the other rails' and of design, exit 0, no finding) and a scale-out link at
    0.5 was a coin toss by seed. The cross groups are each other's peers (same ranks, same tier) too."""
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text(f"faults:\n  - {fault}\n")
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / inventory), "--backend", "mock",
                                  "--faults", str(plan), "--seed", str(seed), "--out", str(out), "-q"])
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"] for f in res["findings"] if f["gates"]}
    assert r.exit_code == 1 and named == {entity}, (r.exit_code, named)


@pytest.mark.parametrize("seed", [1, 2])
def test_two_slow_nics_on_two_of_four_rails_are_both_named(tmp_path: Path, seed: int) -> None:
    """reviews21 #6: with two of the four cross groups slow (0.4 NICs on rails 0 and 1), their peers' spread
    (the MAD of four groups, two of them the faults) was taken as the run's noise, also for the reading
    against design: 0.30 of design passed, zero findings, exit 0 (one NIC alone was found). Against design
    the noise is the repeats' alone."""
    plan, out = tmp_path / "faults.yaml", tmp_path / "out"
    plan.write_text("faults:\n  - {type: slow_nic, target: node003, port: 1, factor: 0.4}\n"
                    "  - {type: slow_nic, target: node010, port: 2, factor: 0.4}\n")
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / "fixtures/inventories/demo-2sn.yaml"),
                                  "--backend", "mock", "--faults", str(plan), "--seed", str(seed), "--out", str(out), "-q"])
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"] for f in res["findings"] if f["gates"]}
    assert r.exit_code == 1 and named == {"node003/nic0", "node010/nic1"}, (r.exit_code, named)


def test_a_cross_group_is_read_against_its_peer_rails_and_design_the_reading_nearer_its_bar_kept() -> None:
    """The cross groups (one a rail) are read against each other and against the scale-out design:
    one rail's NIC at 0.6 is beyond the peers' bar (0.8) and within design's (0.5), so its peers'
    reading is kept; with no design, nothing (as at latency-bound sizes). A row says what it was compared with, and a
    row compared with nothing ('none') carries no expected value (reports and beyond_culprits read it)."""
    import pandas as pd

    from sncheck.backends.mock import MockBackend
    from sncheck.health.groups import group_busbw
    from sncheck.health.metrics import DetectContext
    from sncheck.probeplan import StressPlan, stress_groups
    from sncheck.run.inputs import load_faults_text, load_inventory
    from sncheck.topology import Topology

    inv = load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml")
    topo = Topology(inv)
    rows: list[dict] = []
    MockBackend(topo, load_faults_text("faults: [{type: slow_nic, target: node003, port: 2, factor: 0.6}]", topo),
                seed=0).collectives(StressPlan(groups=stress_groups(topo), sizes=(8, 256 << 20)), rows.append)
    for design in (dict(inv.design), {}):
        judged = group_busbw(pd.DataFrame(rows), DetectContext(topo, design))
        if not design:
            assert set(judged[judged["group_kind"] == "cross"]["basis"]) == {"none"}
            continue
        cross = judged[judged["group_kind"] == "cross"]
        assert set(cross["group"]) == {f"cross:gpu{k}" for k in range(4)}
        assert set(cross["basis"]) <= {"peers", "design", "none"}
        assert cross[cross["basis"] == "none"]["expected_us"].isna().all(), cross[["group", "basis"]]
        assert cross[cross["basis"] != "none"]["expected_us"].notna().all(), cross[["group", "basis"]]
        slow = cross[(cross["group"] == "cross:gpu1") & (cross["collective"] == "all_to_all")
                     & (cross["size_bytes"] == 256 << 20)].iloc[0]
        assert slow["basis"] == "peers" and slow["value"] < 0.7, slow
    hosts = judged[judged["group_kind"] == "host"]
    assert (hosts["basis"] == "peers").any()  # the host groups still compare with each other


def test_which_reading_judges_a_cross_group_is_chosen_by_the_rule_s_own_bars() -> None:
    """A cross group read both ways was judged by whichever reading the SHIPPED bars chose (0.8 against
    its peers, 0.5 against design): an operator whose collective-group-slow says ``below: 0.9`` had a
    NIC at 0.85 (its rail's all-to-all 0.86 of the other rails') read against design (well within 0.5)
    and pass. Each rule's bars choose now; the
    shipped bars' choice is unchanged."""
    import pandas as pd

    from sncheck.backends.mock import MockBackend
    from sncheck.health.groups import DEFAULTS, group_busbw, reading, slow
    from sncheck.health.metrics import DetectContext
    from sncheck.probeplan import StressPlan, stress_groups
    from sncheck.run.inputs import load_faults_text, load_inventory
    from sncheck.topology import Topology

    inv = load_inventory(ROOT / "fixtures/inventories/demo-2sn.yaml")
    topo = Topology(inv)
    rows: list[dict] = []
    MockBackend(topo, load_faults_text("faults: [{type: slow_nic, target: node003, port: 2, factor: 0.85}]", topo),
                seed=0).collectives(StressPlan(groups=stress_groups(topo), sizes=(8, 256 << 20)), rows.append)
    judged = group_busbw(pd.DataFrame(rows), DetectContext(topo, dict(inv.design)))
    at = (judged["group"] == "cross:gpu1") & (judged["size_bytes"] == 256 << 20) & (judged["collective"] == "all_to_all")
    shipped, strict = dict(DEFAULTS), dict(DEFAULTS, below=0.9)
    assert set(judged[at]["basis"]) == {"design"} and not slow(judged, shipped)[at].any(), judged[at]
    assert reading(judged, shipped) is judged  # the shipped bars' choice is the frame's own
    mine = reading(judged, strict)
    assert set(mine[at]["basis"]) == {"peers"} and (mine[at]["value"] < 0.9).all(), mine[at]
    assert slow(judged, strict)[at].any()
    others = judged["group"].isin([f"cross:gpu{k}" for k in (0, 2, 3)])
    assert not slow(judged, strict)[others].any()  # the healthy rails stay within the stricter bar


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


def test_a_dead_leaf_is_named_beside_another_slow_fault(tmp_path: Path) -> None:
    """reviews20 #9: a dead rail-2 leaf (alone: found) beside a 0.5 link inside node005 vanished: the
    link's slow host group took the narrowing's one grid, the timed-out cross:gpu2 pointed at nothing,
    and the run failed for the link alone."""
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text("faults:\n  - {type: dead_switch, target: 'leaf:su0-rail2'}\n"
                    "  - {type: degraded_link, target: 'node005/gpu0<->node005/gpu1', factor: 0.5}\n")
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / "fixtures/inventories/demo-2sn.yaml"),
                                  "--backend", "mock", "--faults", str(plan), "--seed", "1", "--out", str(out), "-q"])
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"] for f in res["findings"] if f["gates"]}
    assert r.exit_code == 1 and {"leaf:su0-rail2", "node005/gpu0<->node005/gpu1"} <= named, (r.exit_code, named)


def test_a_corrupting_card_on_a_lone_two_card_host_is_the_card_its_rails_cross_group_tells(tmp_path: Path) -> None:
    """reviews20 #16: b1 is inv-dualrail's supernode sb alone, two cards. host:b1 and cross:gpu1 gave wrong
    results; the grid kept host:b1's two cards (the cross group dropped), the narrowing's one pair could not
    tell the card from the link, the link was named (it cannot be left out of a hostfile: the card kept
    corrupting) and cross:gpu1's wrong results went to three healthy leaves. The cross group crosses the host
    at b1/gpu1, and the narrowing borrows its peers over scale-out."""
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text("faults:\n  - {type: corrupt_card, target: b1/gpu1}\n")
    r = CliRunner().invoke(main, ["run", "nightly-stress", "-i", str(ROOT / "tests/data/scenarios-r11/inv-dualrail.yaml"),
                                  "--backend", "mock", "--faults", str(plan), "--seed", "1", "--out", str(out), "-q"])
    res = json.loads((out / "results.json").read_text())
    named = {f["entity"] for f in res["findings"] if f["gates"]}
    assert r.exit_code == 1 and named == {"b1/gpu1"}, (r.exit_code, named)
    assert {s["entity"]: s["action"] for s in res["isolation"]}.get("b1/gpu1") == "isolate", res["isolation"]


def test_rails_no_other_supernode_has_are_said_not_stressed_across_supernodes() -> None:
    """hostile25's note: supernodes of 4 and 2 cards a host left rails 2 and 3 without a cross group
    (their scale-out stressed by nothing) and nothing said so: an info finding about the check now."""
    from sncheck.layers.stress import NOT_CROSSED, not_crossed
    from sncheck.run.inputs import load_inventory_text
    from sncheck.topology import Topology
    text = ("name: uneven\ndesign:\n  scale_up: {bandwidth: 450, latency: 3}\n  scale_out: {bandwidth: 50, latency: 15}\n"
            "supernodes:\n  - {name: sa, hosts: 'a[1-2]', cards_per_host: 4}\n"
            "  - {name: sb, hosts: 'b[1-2]', cards_per_host: 2}\n")
    topo = Topology(load_inventory_text(text))
    (f,) = not_crossed(topo)
    assert (f.entity, f.rule, f.severity.value, f.evidence["rails"], f.not_measured, f.about.value) == (
        "sa", NOT_CROSSED, "info", [2, 3], True, "check"), f
    assert "rails 2, 3 not stressed across supernodes" in f.message
    assert not_crossed(topo, frozenset({"b1/gpu0"})) == []  # a scoped run of sb alone: nothing of sa's to say
    even = Topology(load_inventory_text(text.replace("cards_per_host: 2", "cards_per_host: 4")))
    assert not_crossed(even) == []
