"""Per-tier judging, the scale-out NIC as an entity, links worse than their two ends,
and cards too thinly measured to be told from their link (issue 17 items 2, 3, 6;
issue 18 item 3)."""

from pathlib import Path

import pytest

from sncheck.actions.base import Isolated
from sncheck.actions.files import service_view
from mock_gate import mock_gate
from sncheck.run.inputs import load_inventory
from sncheck.health.policy import check_cap, entity_kind
from sncheck.store.rundir import read_rows
from sncheck.model import link_id

ROOT = Path(__file__).resolve().parent.parent
INVENTORIES = ROOT / "fixtures/inventories"


def run(tmp_path: Path, inventory: str, faults: list[str], seed: int = 1):
    outcome = mock_gate(tmp_path, inventory, faults, seed)
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
