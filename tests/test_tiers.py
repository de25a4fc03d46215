"""Per-tier judging, the scale-out NIC as an entity, links worse than their two ends,
and cards too thinly measured to be told from their link (issue 17 items 2, 3, 6;
issue 18 item 3)."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sncheck.actions.base import Isolated
from sncheck.actions.files import service_view
from sncheck.run.inputs import load_inventory, load_playbook
from sncheck.health.localize import LinkBar, localize
from sncheck.health.policy import check_cap, entity_kind
from sncheck.run.runner import RunOptions, execute
from sncheck.store.rundir import read_rows
from sncheck.model import card_of
from sncheck.topology import Topology
from sncheck.model import host_of, link_id, nic_of

ROOT = Path(__file__).resolve().parent.parent
GATE = load_playbook(str(ROOT / "playbooks/pre-upgrade-gate.yaml"))
INVENTORIES = ROOT / "fixtures/inventories"


def run(tmp_path: Path, inventory: str, faults: list[str], seed: int = 1):
    tmp_path.mkdir(parents=True, exist_ok=True)
    plan = tmp_path / "faults.yaml"
    plan.write_text("faults:\n" + "".join(f"  - {f}\n" for f in faults))
    outcome = execute(GATE, load_inventory(INVENTORIES / f"{inventory}.yaml"),
                      RunOptions(backend="mock", faults=str(plan), seed=seed, out=str(tmp_path / "run")))
    hardware = [f for f in outcome.results["findings"] if f.get("about", "hardware") == "hardware"]
    return outcome, hardware


def final_actions(outcome) -> dict[str, str]:
    return {i["entity"]: i["action"] for i in outcome.results["isolation"]}


def test_mi300x_slow_nic_is_one_finding_confirmed_over_scale_out_and_isolated(tmp_path):
    outcome, found = run(tmp_path, "mi300x-pod", ["{type: slow_nic, target: mi03, port: 3, factor: 0.5}"])
    assert [(f["entity"], f["entity_kind"]) for f in found] == [("mi03/nic2", "nic")], found
    ev = found[0]["evidence"]
    assert ev["tier"] == "scale_out" and ev["expected"] == 50.0  # RoCE's design, not the XGMI/RoCE mean
    assert ev["confirmed"] is True
    assert final_actions(outcome) == {"mi03/nic2": "isolate"}
    # The retest measured the NIC's card over the scale-out network.
    retest = [r for r in read_rows(tmp_path / "run") if r.get("confirms") == "mi03/nic2" and r["kind"] == "p2p"]
    mine = [r for r in retest if "mi03/gpu2" in (r["src"], r["dst"])]
    assert mine and {r["tier"] for r in mine} == {"scale_out"}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mi300x_card_at_1_6x_latency_is_found(tmp_path, seed):
    outcome, found = run(tmp_path, "mi300x-pod",
                         ["{type: high_latency_card, target: mi05/gpu6, factor: 1.6}"], seed)
    assert [(f["entity"], f["entity_kind"]) for f in found] == [("mi05/gpu6", "card")], found
    ev = found[0]["evidence"]
    assert ev["expected"] == {"intra_host": 3.0, "scale_out": 5.0}[ev["tier"]]  # its tier's design latency
    assert final_actions(outcome) == {"mi05/gpu6": "isolate"}


@pytest.mark.parametrize("inventory,host,port", [("mi300x-pod", "mi03", 3), ("fleet-12sn", "s00n1", 5)])
def test_dead_nic_on_a_host_without_ibstat_is_one_finding(tmp_path, inventory, host, port):
    """No ibstat to say the port is down: the pair tests alone name the NIC (on the
    12-supernode fleet its 22 scale-out pairs were 22 link findings), and no healthy
    card is quarantined (the pooled tiers quarantined 54 on MI300X)."""
    outcome, found = run(tmp_path, inventory, [f"{{type: missing_tool, target: {host}, tool: ibstat}}",
                                               f"{{type: ib_port_down, target: {host}, port: {port}}}"])
    nic = f"{host}/nic{port - 1}"
    assert [(f["entity"], f["entity_kind"]) for f in found] == [(nic, "nic")], found
    assert final_actions(outcome) == {nic: "isolate"}
    checks = [f for f in outcome.results["findings"] if f.get("about") == "check"]
    assert [(f["entity"], f["evidence"].get("tool")) for f in checks] == [(host, "ibstat")]


def test_link_well_below_two_sick_ends_is_its_own_finding(tmp_path):
    a, b = "node003/gpu1", "node003/gpu2"
    outcome, found = run(tmp_path, "demo-2sn", [f"{{type: slow_card, target: {a}, factor: 0.6}}",
                                                f"{{type: high_latency_card, target: {b}, factor: 3}}",
                                                f'{{type: dead_link, target: "{a}<->{b}"}}'])
    assert {(f["entity"], f["entity_kind"]) for f in found} == {(a, "card"), (b, "card"),
                                                                (link_id(a, b), "link")}
    ends = final_actions(outcome)
    assert ends[link_id(a, b)] == "isolate"
    # Each sick card's retest has the other as a control showing a symptom too: the
    # confirmation may leave them quarantined (never released).
    assert ends[a] in ("isolate", "quarantine") and ends[b] in ("isolate", "quarantine")


# ------------------------------------------------------------------ localize, as frames
def _cells(topo: Topology, value, design: dict[str, float]) -> pd.DataFrame:
    """Every pair of the topology, with ``value(a, b, tier)`` and its tier's design."""
    ids = topo.card_ids
    a, b = zip(*[(x, y) for i, x in enumerate(ids) for y in ids[i + 1:]])
    cells = pd.DataFrame({"src": a, "dst": b})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    cells["link"] = topo.link_ids(cells["src"], cells["dst"])
    cells["value"] = [value(x, y, t) for x, y, t in zip(cells["src"], cells["dst"], cells["tier"])]
    cells["design"] = cells["tier"].map(design).astype(float)
    cells["failed"] = cells["value"].isna()
    return cells


@pytest.fixture(scope="module")
def pod() -> Topology:
    return Topology(load_inventory(INVENTORIES / "mi300x-pod.yaml"))


DESIGN = {"intra_host": 64.0, "scale_out": 50.0}


def test_localize_names_the_nic_bad_only_over_scale_out(pod):
    card = "mi02/gpu5"

    def value(a, b, tier):
        return DESIGN[tier] * (0.5 if card in (a, b) and tier == "scale_out" else 1.0)

    cells = _cells(pod, value, DESIGN)
    cells["bad"] = cells["value"] / cells["design"] < 0.8
    culprits = localize(cells, pod, link_bar=LinkBar(True, 0.8))
    assert [(c.entity, c.kind) for c in culprits] == [(nic_of(card), "nic")]
    assert card_of(nic_of(card)) == card
    # Bad inside the domain as well: the card itself.
    cells["bad"] |= ((cells["src"] == card) | (cells["dst"] == card)) & (cells["tier"] == "intra_host")
    assert [(c.entity, c.kind) for c in localize(cells, pod)] == [(card, "card")]
    # Flagged by a per-card score in its scale-out tier alone: its NIC; in a tier inside: the card.
    cells["bad"] = False
    assert [(c.entity, c.kind) for c in localize(cells, pod, {card: {"scale_out"}})] == [(nic_of(card), "nic")]
    assert [(c.entity, c.kind) for c in localize(cells, pod, {card: {"intra_host"}})] == [(card, "card")]


def test_localize_independent_link_needs_to_be_well_below_its_ends(pod):
    a, b = "mi01/gpu0", "mi01/gpu1"
    slow = {a: 0.6, b: 0.7}

    def value(x, y, tier, link=0.3):
        v = DESIGN[tier] * min(slow.get(x, 1.0), slow.get(y, 1.0))
        return v * link if {x, y} == {a, b} else v

    # The pair a<->b carries 0.6 x link of design; its ends' levels are 0.6 and 0.7: it is
    # a link of its own when below 0.8 x 0.6 of design, i.e. a link factor below 0.8.
    for link_factor, independent in ((1.0, False), (0.9, False), (0.6, True), (0.0, True)):
        cells = _cells(pod, lambda x, y, t: value(x, y, t, link_factor) or np.nan, DESIGN)
        cells["bad"] = cells["failed"] | (cells["value"] / cells["design"] < 0.8)
        named = {(c.entity, c.kind) for c in localize(cells, pod, link_bar=LinkBar(True, 0.8))}
        assert {(a, "card"), (b, "card")} <= named
        assert ((link_id(a, b), "link") in named) == independent, (link_factor, named)
        # Without a bar (a counter or a robust-z rule) a cell beside sick ends is their symptom.
        assert (link_id(a, b), "link") not in {(c.entity, c.kind) for c in localize(cells, pod)}


def test_a_card_measured_in_one_pair_is_card_or_link_not_localised(pod):
    cells = pd.DataFrame({"src": ["mi01/gpu0"], "dst": ["mi02/gpu0"], "tier": ["scale_out"],
                          "link": [link_id("mi01/gpu0", "mi02/gpu0")], "value": [1.0], "bad": [True]})
    culprits = localize(cells, pod)
    assert sorted((c.entity, c.kind, c.note) for c in culprits) == [
        ("mi01/gpu0", "card", "unlocalised"), ("mi02/gpu0", "card", "unlocalised")]
    # With other healthy pairs at both ends, the same bad pair is the link.
    more = pd.DataFrame({"src": ["mi01/gpu0", "mi02/gpu0"], "dst": ["mi01/gpu1", "mi02/gpu1"],
                         "tier": ["intra_host"] * 2, "link": ["x", "y"], "value": [1.0, 1.0], "bad": [False, False]})
    assert [(c.entity, c.kind) for c in localize(pd.concat([cells, more]), pod)] == \
        [(link_id("mi01/gpu0", "mi02/gpu0"), "link")]


def test_a_nic_is_isolated_by_masking_its_card():
    assert entity_kind("mi03/nic2") == "nic" and entity_kind("mi03/gpu2") == "card"
    inv = load_inventory(INVENTORIES / "mi300x-pod.yaml")
    view = service_view(inv, {"mi03/nic2": Isolated("mi03/nic2", "nic")})
    assert view.excluded_hosts == () and view.hidden_cards == ("mi03/gpu2",)
    assert view.visible["mi03"] == (0, 1, 3, 4, 5, 6, 7)
    cap = check_cap([{"entity": "mi03/nic2", "entity_kind": "nic", "action": "isolate"}], 64, 8, 0.1)
    assert cap.ok and cap.cards == 1 and cap.hosts == 0


def test_nvl72_rack_at_0_9_is_the_supernode(tmp_path):
    """Every tray of the rack at 0.9: no healthy peer inside the domain to be told by;
    judged against its tier's design by the shipped rules (a whole rack at 90% of design
    is a real degradation), the rack is the one culprit, its golden step time included,
    and its retest re-measures the domain's pairs and confirms it: never "within bounds"."""
    lines = [f"{{type: slow_card, target: tray{t:02d}/gpu{k}, factor: 0.9}}" for t in range(1, 19) for k in range(4)]
    outcome, found = run(tmp_path, "nvl72-rack", lines)
    assert [(f["entity"], f["entity_kind"]) for f in found] == [("rack0", "supernode")], found
    ev = found[0]["evidence"]
    assert ev["expected"] == 900.0 and 0.85 < ev["measured"] / ev["expected"] < 0.95
    assert ev["tier"] == "scale_up" and ev["confirmed"] is True, ev["retest"]
    assert "within bounds" not in ev["retest"]
    assert final_actions(outcome) == {"rack0": "isolate"}


def test_a_slow_nic_beside_a_slow_domain_is_confirmed_over_scale_out(tmp_path):
    """Two domains, one slow inside (judged on its scale-up pairs), a slow NIC in the
    other: the slow domain's cards still carry the NIC's scale-out pairs at the NIC's
    speed, so they are its retest's far side. Without them the NIC had no far side and
    stayed quarantined; both end isolated."""
    slow = [f"{{type: slow_card, target: node00{h}/gpu{g}, factor: 0.6}}" for h in range(1, 9) for g in range(4)]
    outcome, found = run(tmp_path, "demo-2sn", [*slow, "{type: slow_nic, target: node016, port: 1, factor: 0.5}"])
    assert {(f["entity"], f["entity_kind"]) for f in found} == {("sn0", "supernode"), ("node016/nic0", "nic")}
    nic = next(f for f in found if f["entity"] == "node016/nic0")
    assert nic["evidence"]["confirmed"] is True, nic["evidence"]["retest"]
    assert final_actions(outcome) == {"sn0": "isolate", "node016/nic0": "isolate"}
    retest = [r for r in read_rows(tmp_path / "run") if r.get("confirms") == "node016/nic0" and r["kind"] == "p2p"]
    assert retest and {r["tier"] for r in retest} == {"scale_out"}


def test_a_control_whose_bad_pairs_are_all_with_one_worse_card_is_not_a_culprit():
    """A scale-up retest of one slow card beside one control on each other host of its
    3-host domain (fleet-12sn), each pair twice: each control has half its pairs bad,
    every one with the slow card; the slow card is the one culprit (the controls were
    named too, and the card's retest said its controls showed the symptom). Two cards
    bad with everyone beside one control: each of the two is named."""
    topo = Topology(load_inventory(INVENTORIES / "fleet-12sn.yaml"))
    x, a, b = "s02n2/gpu7", "s02n1/gpu7", "s02n3/gpu7"
    rows = [(x, a), (x, b), (a, b)] * 2
    cells = pd.DataFrame({"src": [p for p, _ in rows], "dst": [q for _, q in rows]})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    cells["link"] = topo.link_ids(cells["src"], cells["dst"])
    assert set(cells["tier"]) == {"scale_up"}
    cells["bad"] = (cells["src"] == x) | (cells["dst"] == x)
    assert [(c.entity, c.kind) for c in localize(cells, topo)] == [(x, "card")]
    cells["bad"] = True  # every pair bad: no card is beside one worse card
    assert {c.entity for c in localize(cells, topo)} >= {x, a, b}


def test_controls_whose_bad_pairs_are_all_with_a_worse_host_are_not_culprits():
    """A scale-out retest of a whole slow MI300X host (8 cards) beside three controls on
    other hosts, each pair twice: each control has 16 of its 20 pairs bad, every one with
    the host's cards (each bad with everyone). The host is the one culprit; the controls
    were named as cards too, and the host's retest said its controls showed the symptom
    and left it quarantined. Controls slow alike (their pairs with each other bad too)
    are still named."""
    topo = Topology(load_inventory(INVENTORIES / "mi300x-pod.yaml"))
    host = topo.cards_of_host("mi04")
    controls = ["mi01/gpu0", "mi02/gpu0", "mi03/gpu0"]
    order = host + controls
    rows = [(p, q) for i, p in enumerate(order) for q in order[i + 1:] if host_of(p) != host_of(q)] * 2
    cells = pd.DataFrame({"src": [p for p, _ in rows], "dst": [q for _, q in rows]})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    cells["link"] = topo.link_ids(cells["src"], cells["dst"])
    assert set(cells["tier"]) == {"scale_out"}
    cells["bad"] = cells["src"].isin(host) | cells["dst"].isin(host)
    assert [(c.entity, c.kind) for c in localize(cells, topo)] == [("mi04", "host")]
    cells["bad"] = True  # the controls slow alike: they are named beside the host
    assert {c.entity for c in localize(cells, topo)} >= {"mi04", *controls}


def test_a_faint_card_beside_a_worse_card_is_still_named():
    """Platform scenario 5056: a card at 3.9x latency and one at 1.52x on the same domain.
    Under the per-card rule both are flagged; the faint card's one bad pair is with the
    worse card. Only a host's or supernode's cards explain a card's pairs away: a card
    culprit found first in the loop is not such a culprit, and a card flagged by its own
    score is never dropped (3d03fd8 dropped it: recall of faint cards fell to 0.92)."""
    topo = Topology(load_inventory(INVENTORIES / "demo-2sn.yaml"))
    cards = topo.cards_of_supernode(topo.inventory.supernodes[0].name)
    worse, faint = cards[1], cards[6]
    rows = [(p, q) for i, p in enumerate(cards) for q in cards[i + 1:]]
    cells = pd.DataFrame({"src": [p for p, _ in rows], "dst": [q for _, q in rows]})
    cells["tier"] = topo.tiers(cells["src"], cells["dst"])
    cells["link"] = topo.link_ids(cells["src"], cells["dst"])
    cells["bad"] = cells["src"].eq(worse) | cells["dst"].eq(worse)
    named = {(c.entity, c.kind) for c in localize(cells, topo, {worse: {"*"}, faint: {"*"}})}
    assert named == {(worse, "card"), (faint, "card")}
    # and with no score, a card whose only bad pair is with the worse card is its symptom
    assert {(c.entity, c.kind) for c in localize(cells, topo)} == {(worse, "card")}
