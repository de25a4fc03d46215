"""Round 9 (README "Scenarios r9"): a leaf-to-spine cable is a culprit of its own.

r8-22 (and r9-02, r9-03, r9-09, r9-28): one switch port of a leaf's uplink down. The pairs
routed over that cable time out; the same leaf's pairs over its other uplinks, and the
spine's pairs from other leaves, read 1.0. No card, NIC, leaf or spine explains that without
a healthy pair it predicts dead, and the search's candidates had no cable: the 8 pairs were
named as 8 links "between two otherwise healthy cards". The cable (DESIGN.md "Identifiers",
``leaf:<a>[<p>]<->spine:<b>[<q>]``, kind link) is now a candidate on the path of every pair
the fabric routes over it (``explain.uplinks``), re-measured by the pairs through it
(``Fabric.through``) and acted on as the fabric's: repaired, its leaf port shut meanwhile.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from click.testing import CliRunner

from sncheck.actions.base import ActionRequest, ActionContext, switch_plan
from sncheck.cli.main import main
from sncheck.model import is_uplink
from sncheck.run.inputs import load_inventory
from sncheck.run.scope import cards_of
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
RAIL_SPINES = ROOT / "tests/data/scenarios-r9/inv-rail-spines.yaml"
CABLE = "leaf:na-r0[4]<->spine:lo2[1]"  # na-r0's uplink to lo2: na's rail 0 with nb and nc (lo1 carries na-nd)


def _connectivity(tmp_path: Path, inventory: Path, fault: str) -> dict:
    """A mock connectivity run of one fault-plan line, seed 1: exit 1, its results."""
    plan, out = tmp_path / "faults.yaml", tmp_path / "run"
    plan.write_text(f"faults:\n  - {fault}\n")
    r = CliRunner().invoke(main, ["connectivity", "-i", str(inventory), "--backend", "mock", "--faults", str(plan),
                                  "--seed", "1", "--out", str(out), "-q"])
    assert r.exit_code == 1, r.output
    return json.loads((out / "results.json").read_text())


def test_a_cable_carries_the_pairs_its_spine_routes_from_its_leaf():
    topo = Topology(load_inventory(RAIL_SPINES))
    fabric = topo.fabric
    assert is_uplink(CABLE) and not is_uplink("na1/gpu0<->nb1/gpu0") and not is_uplink("na1/nic0<->leaf:na-r0[1]")
    assert fabric.uplink_ref(CABLE) == (fabric.leaf_index["na-r0"], fabric.spine_index["lo2"])
    pos = {c: fabric.card_position(c) for c in ("na1/gpu0", "nb1/gpu0", "nc2/gpu0", "nd1/gpu0", "nb1/gpu1")}
    a = np.array([pos["na1/gpu0"]] * 3 + [pos["nb1/gpu0"]])
    b = np.array([pos["nb1/gpu0"], pos["nc2/gpu0"], pos["nd1/gpu0"], pos["nc2/gpu0"]])
    # na-nb and na-nc over lo2 from na-r0: on it; na-nd over lo1, nb-nc not from na-r0: not
    assert fabric.through(CABLE, a, b).tolist() == [True, True, False, False]
    # its retest's scope: the cards under na-r0 and under the leaves lo2 routes na-r0 to (nb's and
    # nc's rails 0 and 1: ECMP picks lo2 for each of those leaf pairs), never nd's nor rails 2-3
    assert sorted(cards_of(CABLE, topo, "link")) == ["na1/gpu0", "na2/gpu0"] + sorted(
        f"{h}/gpu{r}" for h in ("nb1", "nb2", "nc1", "nc2") for r in (0, 1))


def test_a_cable_is_acted_on_by_the_fabric_never_by_masking_cards():
    plan = switch_plan(ActionRequest(CABLE, "link", "isolate"), ActionContext())
    assert plan is not None and plan.skip.startswith(f"repair cable {CABLE}; until then shut port leaf:na-r0[4]")
    assert switch_plan(ActionRequest("na1/gpu0<->nb1/gpu0", "link", "isolate"), ActionContext()) is None


def test_an_uplink_cable_down_is_the_cable_confirmed_and_isolated(tmp_path):
    # r9-02: the 8 pairs over the cable time out, na-r0's 4 over lo1 and lo2's other pairs read 1.0.
    # Before: 8 links "between two otherwise healthy cards", each isolated.
    res = _connectivity(tmp_path, RAIL_SPINES, "{type: switch_port_down, target: 'leaf:na-r0[4]'}")
    [f] = [f for f in res["findings"] if f["severity"] in ("warning", "critical")]
    assert (f["entity"], f["entity_kind"]) == (CABLE, "link")
    assert f["message"].startswith(f"cable {CABLE}: ") and "8 of 8 pair tests routed over it" in f["message"]
    assert {e["entity"]: e["action"] for e in res["isolation"]} == {CABLE: "isolate"}
    # its evidence bundle holds the 8 pairs' rows (it held none: the id split as two cards)
    [rows] = [tmp_path / "run" / p for p in f["evidence"]["files"] if p.endswith("rows.jsonl")]
    links = {json.loads(ln)["link"] for ln in rows.read_text().splitlines()
             if json.loads(ln)["layer"] == "connectivity"}
    assert len(links) == 8 and all(link.startswith(("na1/gpu0<->", "na2/gpu0<->")) for link in links), links


TRIO = """name: r9-trio
design:
  intra_host: {bandwidth: "400 GB/s", latency: "2 us"}
  scale_up: {bandwidth: "400 GB/s", latency: "3 us"}
  scale_out: {bandwidth: "400 Gb/s", latency: "12 us"}
supernodes:
  - {name: s1, hosts: h1, cards_per_host: 2}
  - {name: s2, hosts: h2, cards_per_host: 2}
  - {name: s3, hosts: h3, cards_per_host: 2}
backend:
  type: mock
"""


def test_a_card_whose_scale_out_sits_at_its_nics_cap_is_alone_in_its_one_pair(tmp_path):
    # r9-13: a 2-card host alone in its domain, h1/gpu1 at 0.5: its one intra-host pair reads 0.5,
    # its scale-out pairs 1.0 at the NIC's cap whatever its speed. Before: "card h1/gpu0" (either
    # card, the first by name, "separated"); the pair tells neither card from the link.
    inv = tmp_path / "trio.yaml"
    inv.write_text(TRIO)
    res = _connectivity(tmp_path, inv, "{type: slow_card, target: h1/gpu1, factor: 0.5}")
    [f] = [f for f in res["findings"] if f["severity"] in ("warning", "critical")]
    assert (f["entity"], f["entity_kind"], f["evidence"].get("localised")) == ("h1", "host", False)


def test_two_cables_no_measurement_tells_apart_are_neither_named_nor_released(tmp_path):
    # reviews15 #4: nd-r1's uplink to lo1 down; lo1 joins nd-r1 to na-r1 alone, so na-r1's uplink to
    # lo1 carries the same 4 dead pairs. The search named the first cable by name, its retest
    # re-measured that cable's other pairs (healthy) and released it: exit 0 with 4 pairs dead.
    # Neither cable is named now: the 4 pairs are links, as before cables were candidates.
    res = _connectivity(tmp_path, RAIL_SPINES, "{type: switch_port_down, target: 'leaf:nd-r1[3]'}")
    named = {f["entity"] for f in res["findings"] if f["severity"] in ("warning", "critical")}
    assert named == {f"{a}/gpu1<->{b}/gpu1" for a in ("na1", "na2") for b in ("nd1", "nd2")}
    assert {e["action"] for e in res["isolation"] if e["entity"] in named} == {"quarantine", "isolate"}
