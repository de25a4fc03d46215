"""A cable's evidence bundle (DESIGN.md "Identifiers": ``<host>/nic<r><->leaf:<name>[<port>]`` and
``leaf:<a>[<p>]<->spine:<b>[<q>]``, kind link) holds the rows of the card pairs the fabric routes
over it. The bundle split the cable's id as a link between two cards (``leaf:na-r0[4]`` a card), so
no row matched and r9-02's cable finding had a bundle of its finding alone (fix16, round 15 review)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from sncheck.model import Finding
from sncheck.run.inputs import load_inventory
from sncheck.store.evidence import collect_evidence
from sncheck.store.frames import frames_of
from sncheck.topology import Topology

RAIL_SPINES = Path(__file__).resolve().parent / "data/scenarios-r9/inv-rail-spines.yaml"
UPLINK = "leaf:na-r0[4]<->spine:lo2[1]"  # na-r0's uplink to lo2 (tests/test_scenarios_r9.py)


def _pairs(topo: Topology) -> list[tuple[str, str]]:
    """Every pair of rail 0 and rail 1 cards: intra-host, scale-up and scale-out."""
    cards = [c.id for c in topo.cards if c.index < 2]
    return [(a, b) for i, a in enumerate(cards) for b in cards[i + 1:]]


def _bundle(tmp_path: Path, entity: str, fabric, kind: str = "link") -> set[str]:
    topo = Topology(load_inventory(RAIL_SPINES))
    rows = [{"kind": "p2p", "layer": "connectivity", "src": a, "dst": b, "link": f"{a}<->{b}", "tier": "scale_out",
             "bw_GBps": 40.0, "status": "ok"} for a, b in _pairs(topo)]
    rows += [{"kind": "host_fact", "layer": "connectivity", "host": h, "fact": "ib_ports", "ok": True, "status": "ok"}
             for h in ("na1", "nb1")]
    f = Finding(entity, kind, "connectivity", "p2p-bandwidth-below-design", "critical", "m")
    collect_evidence([f], None, frames_of(rows), tmp_path, fabric=fabric)
    listed = [p for p in f.evidence["files"] if p.endswith("rows.jsonl")]
    if not listed:
        return set()
    lines = [json.loads(ln) for ln in (tmp_path / listed[0]).read_text().splitlines()]
    return {ln.get("link") or ln["host"] for ln in lines}


def test_an_uplinks_bundle_holds_the_pairs_routed_over_it(tmp_path: Path) -> None:
    fabric = Topology(load_inventory(RAIL_SPINES)).fabric
    pairs = _pairs(Topology(load_inventory(RAIL_SPINES)))
    pos = np.array([[fabric.card_position(a), fabric.card_position(b)] for a, b in pairs])
    crossing = {f"{a}<->{b}" for (a, b), hit in zip(pairs, fabric.through(UPLINK, pos[:, 0], pos[:, 1])) if hit}
    assert crossing and "na1/gpu0<->nb1/gpu0" in crossing and "na1/gpu0<->nd1/gpu0" not in crossing  # nd: over lo1
    assert _bundle(tmp_path, UPLINK, fabric) == crossing


def test_a_nic_cables_bundle_holds_its_scale_out_pairs_and_its_hosts_facts(tmp_path: Path) -> None:
    topo = Topology(load_inventory(RAIL_SPINES))
    cable = topo.fabric.cable_of("na1/nic0")
    assert cable == "na1/nic0<->leaf:na-r0[1]"
    expected = {f"{a}<->{b}" for a, b in _pairs(topo) if "na1/gpu0" in (a, b) and not {a[:2], b[:2]} == {"na"}}
    assert "na1/gpu0<->nb1/gpu1" in expected and "na1/gpu0<->na2/gpu0" not in expected  # scale-out only
    assert _bundle(tmp_path, cable, topo.fabric) == expected | {"na1"}


def test_without_the_fabric_a_cables_bundle_holds_no_pair(tmp_path: Path) -> None:
    """(the split read 'leaf:na-r0[4]' as a card: no row either; never another pair's rows)"""
    assert _bundle(tmp_path, UPLINK, None) == set()


def _crossing(fabric, pairs: list[tuple[str, str]], element: str) -> set[str]:
    pos = np.array([[fabric.card_position(a), fabric.card_position(b)] for a, b in pairs])
    return {f"{a}<->{b}" for (a, b), hit in zip(pairs, fabric.through(element, pos[:, 0], pos[:, 1])) if hit}


def test_a_switchs_bundle_holds_the_pairs_whose_path_crosses_it(tmp_path: Path) -> None:
    """A leaf's or a spine's finding ("on 48 of 48 pair tests through it") had a bundle of its
    finding alone: its id is no card, host nor supernode (review17 #7)."""
    topo = Topology(load_inventory(RAIL_SPINES))
    leaf, spine = _crossing(topo.fabric, _pairs(topo), "leaf:na-r0"), _crossing(topo.fabric, _pairs(topo), "spine:lo2")
    assert "na1/gpu0<->nb1/gpu0" in leaf and "na1/gpu0<->na2/gpu0" not in leaf and "nb1/gpu0<->nc1/gpu0" not in leaf
    assert spine and spine != leaf
    (tmp_path / "leaf").mkdir(), (tmp_path / "spine").mkdir()
    assert _bundle(tmp_path / "leaf", "leaf:na-r0", topo.fabric, "switch") == leaf
    assert _bundle(tmp_path / "spine", "spine:lo2", topo.fabric, "switch") == spine
    readme = next((tmp_path / "leaf" / "evidence").glob("*/README.txt")).read_text()
    assert f"rows.jsonl: {len(leaf)} probe rows of the card pairs whose path crosses leaf:na-r0" in readme


def test_a_switch_no_pair_crosses_says_so_in_its_readme(tmp_path: Path) -> None:
    topo = Topology(load_inventory(RAIL_SPINES))
    assert _bundle(tmp_path, "leaf:na-r2", topo.fabric, "switch") == set()  # rail 2: no pair of rails 0-1
    readme = next((tmp_path / "evidence").glob("*/README.txt")).read_text()
    assert "no rows.jsonl: no measured card pair's path crosses leaf:na-r2" in readme
