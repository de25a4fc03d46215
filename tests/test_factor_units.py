"""A culprit's factor is its slowdown against what its healthy peers measure (explain.reference),
and a slow group no culprit explains is first what its slow host groups share with it, never at
once its supernode (reviews19 #8, #9).

A stress narrowing's healthy pairs read 1.59 of design: one card at 0.5 read a factor of 0.47
(design units) while its pairs were judged against the 1.59 level, 0.63 of their peers under
it, so it explained nothing and its three links were named "between two otherwise healthy
cards", with a warning on its whole supernode. Hand-built pair frames (milliseconds) and two
mock runs of the shipped nightly-stress (seconds)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from sncheck.cli.main import main as cli
from sncheck.health.culprits import explain_cells
from sncheck.health.explain import reference
from sncheck.health.groups import crossing
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import load_rules
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = ROOT / "fixtures/inventories"
REPRO = ROOT / "tests/data/factor-units"
PAIR_SLOW = [r for r in load_rules("default").rules if r.name == "collective-pair-slow"]


def _topo(name: str) -> Topology:
    return Topology(load_inventory(INVENTORIES / f"{name}.yaml"))


@pytest.fixture(scope="module")
def demo() -> Topology:
    return _topo("demo-2sn")


@pytest.fixture(scope="module")
def hgx() -> Topology:
    return _topo("hgx-2su")


def _narrowing(topo: Topology, host: str, card: str, slow: float, level: float, seed: int = 1) -> pd.DataFrame:
    """A host's intra-host pairs as the stress narrowing measures them (pair_busbw over the tier's
    design): healthy pairs at ``level`` x design, the card's at ``slow`` of that, 2% noise."""
    cards = topo.cards_of_host(host)
    pairs = [(x, y) for i, x in enumerate(cards) for y in cards[i + 1:]]
    cells = pd.DataFrame({"src": [a for a, _ in pairs], "dst": [b for _, b in pairs]})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    f = np.array([slow if card in (a, b) else 1.0 for a, b in pairs])
    cells["value"] = level * f * (1 + 0.02 * np.random.default_rng(seed).standard_normal(len(pairs)))
    cells["design"] = 1.0
    cells["failed"] = False
    return cells


def _named(cells: pd.DataFrame, topo: Topology, suspect: str) -> dict[str, float]:
    ctx = DetectContext(topo, dict(topo.inventory.design), narrowed=frozenset({suspect}))
    return {f.entity: f.evidence["factor"] for f in explain_cells(cells, PAIR_SLOW, ctx)}


@pytest.mark.parametrize("level", [1.59, 3.0])
@pytest.mark.parametrize("slow", [0.3, 0.5, 0.6, 0.7])
def test_a_slow_card_is_the_card_whatever_its_tiers_level_over_design(demo, level, slow):
    """Its factor is over its peers' level: the card alone, at its own slowdown (before: its links)."""
    got = _named(_narrowing(demo, "node007", "node007/gpu1", slow, level), demo, "node007/gpu1")
    assert list(got) == ["node007/gpu1"], got
    assert got["node007/gpu1"] == pytest.approx(slow, abs=0.03)


def test_a_slow_card_on_an_eight_card_host_stays_the_card(hgx):
    got = _named(_narrowing(hgx, "hgx03", "hgx03/gpu5", 0.5, 1.59), hgx, "hgx03/gpu5")
    assert list(got) == ["hgx03/gpu5"] and got["hgx03/gpu5"] == pytest.approx(0.5, abs=0.03), got


def test_a_level_at_or_below_design_keeps_design_as_the_reference(demo):
    """Below design the level may be a culprit's own: design stays a factor's 1, as it was."""
    assert [reference(x) for x in (0.7, 1.0, 1.59, float("nan"), 0.0)] == [1.0, 1.0, 1.59, 1.0, 1.0]
    got = _named(_narrowing(demo, "node007", "node007/gpu1", 0.5, 1.0), demo, "node007/gpu1")
    assert list(got) == ["node007/gpu1"] and got["node007/gpu1"] == pytest.approx(0.5, abs=0.03), got


def test_a_slow_group_is_first_what_its_slow_host_groups_share_with_it(demo):
    rail = demo.cards_of_supernode("sn0")[1::4]  # rail:sn0:gpu1
    host = set(demo.cards_of_host("node006"))
    # host x rail: one card
    assert crossing(rail, {"rail:sn0:gpu1": set(rail), "host:node006": host}, demo) == {
        "node006/gpu1": ["host:node006"]}
    # a domain group holding one slow host group: that host
    domain = demo.cards_of_supernode("sn0")
    assert crossing(domain, {"domain:sn0": set(domain), "host:node006": host}, demo) == {"node006": ["host:node006"]}
    # nothing smaller says it: the supernode (none here)
    assert crossing(rail, {"rail:sn0:gpu1": set(rail)}, demo) == {}
    many = {f"host:node00{i}": set(demo.cards_of_host(f"node00{i}")) for i in range(1, 5)}
    assert crossing(domain, {"domain:sn0": set(domain), **many}, demo) == {}


def _run(tmp_path: Path, faults: str, seed: int) -> tuple[int, dict]:
    out = tmp_path / "out"
    r = CliRunner().invoke(cli, ["run", "nightly-stress", "-i", str(INVENTORIES / "demo-2sn.yaml"), "--backend", "mock",
                                 "--faults", str(REPRO / faults), "--seed", str(seed), "--out", str(out), "-q",
                                 "--force"])
    return r.exit_code, json.loads((out / "results.json").read_text())


def test_one_slow_card_on_a_four_card_host_under_the_nightly_is_named(tmp_path):
    """reviews19 #8: the card, no link through it, no supernode (before: three links and sn0 isolated)."""
    code, r = _run(tmp_path, "slow-card-node007.yaml", 1)
    assert code == 1
    assert [(f["entity"], f["severity"]) for f in r["findings"]] == [("node007/gpu1", "critical")], r["findings"]
    assert {s["entity"] for s in r["isolation"]} == {"node007/gpu1"}


def test_a_jittery_card_is_named_not_its_supernode(tmp_path):
    """reviews19 #9: its host and rail groups slow, one link of it named by the narrowing: the rail
    group's finding was supernode sn0, isolated; then the card where they cross (collective-group-slow).
    Since the stress layer reads each card's tail (collective-latency-spikes, reviews20 #11) the card is
    named by its own spikes, and the groups it explains say nothing more."""
    _, r = _run(tmp_path, "jitter-card.yaml", 1)
    named = {(f["entity"], f["entity_kind"]) for f in r["findings"] if f["gates"]}
    assert named == {("node006/gpu1", "card")}, named
    assert {s["entity"] for s in r["isolation"]} == {"node006/gpu1"}


def test_a_slow_card_beside_a_slow_leaf_is_the_card_not_its_links(tmp_path):
    """A card at 0.5 and a rail-1 leaf at 0.4 under the nightly (reviews20's card flood): the narrowing
    is every pair of the fleet, the card's 31 pairs inside sn0 read 0.30 of their peers and its
    scale-out pairs 0.85 (the NIC caps a card's speed there: the mock's ``min(B_out, s B_up)``). The
    search fitted the card one factor for every tier, 0.31, contradicted by its scale-out pairs, and
    named its 31 links "between two otherwise healthy cards" beside it (and 31 quarantines). A
    pairwise collective's bandwidth is capped by the NIC as a pair test's is (culprits._model)."""
    code, r = _run(tmp_path, "slow-leaf-and-card-node006.yaml", 1)
    gating = sorted((f["entity"], f["entity_kind"]) for f in r["findings"] if f["gates"])
    assert code == 1 and gating == [("leaf:su0-rail1", "switch"), ("node006/gpu0", "card")], gating
    assert {s["entity"] for s in r["isolation"]} == {"leaf:su0-rail1", "node006/gpu0"}


@pytest.mark.parametrize("seed", [1, 2])
def test_a_slow_card_on_a_six_card_host_is_the_card_not_its_nvswitch_pairs(tmp_path, seed):
    """reviews21 #1: y2 holds 6 cards in a supernode of 8-card hosts, its NVSwitch (450 GB/s) faster
    than its scale-up (200 GB/s). A card at 0.5 read 0.29 on its 5 intra-host pairs and 0.38 on its
    16 scale-up ones; one factor for both, the majority's 0.38, left each intra-host pair 0.76
    unexplained, and all five were named links, confirmed and isolated beside the card."""
    out = tmp_path / "out"
    CliRunner().invoke(cli, ["run", "nightly-stress", "-i", str(REPRO / "inv-rail8.yaml"), "--backend", "mock",
                             "--faults", str(REPRO / "slow-card-y2-six-card-host.yaml"), "--seed", str(seed),
                             "--out", str(out), "-q"])
    r = json.loads((out / "results.json").read_text())
    slow = [(f["entity"], f["entity_kind"]) for f in r["findings"] if f["rule"].startswith("collective-pair")]
    assert slow == [("y2/gpu1", "card")], slow
    assert {s["entity"] for s in r["isolation"]} == {"y2/gpu1"}
