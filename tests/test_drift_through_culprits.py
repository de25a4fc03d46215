"""Issue 29 ("drift on the state store with a culprit present must not flag its peers"),
the sweep at 3753b8d, 5275 seed 1 (hgx-2su, a spine at 0.45): the pairs through a named
switch were judged as their ends' drift, and 13 cards of 7 healthy hosts ended the run
quarantined with p2p-bandwidth-drift ('scale_out pairs at 45% of its first recorded
level'), none re-measurable. A switch or link holds no card, but the pairs through it are
its symptom: they say nothing of the cards at their ends."""

from pathlib import Path

import numpy as np
import pandas as pd

from sncheck.health.drift import drift
from sncheck.health.metrics import DetectContext
from sncheck.health.rules import load_rules
from sncheck.model import link_id
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
INV = load_inventory(ROOT / "fixtures/inventories/hgx-2su.yaml")
TOPO = Topology(INV)
RULE = next(r for r in load_rules("default").rules if r.name == "p2p-bandwidth-drift")
CARDS = [c.id for c in TOPO.cards]
PAIRS = [(a, b) for i, a in enumerate(CARDS) for b in CARDS[i + 1:]
         if TOPO.tier(a, b) == "scale_out" and a.rsplit("gpu", 1)[1] == b.rsplit("gpu", 1)[1]]  # rail-matched
SPINE = TOPO.fabric.through("spine:spine1", np.array([TOPO.fabric.card_position(a) for a, _ in PAIRS]),
                            np.array([TOPO.fabric.card_position(b) for _, b in PAIRS]))
HISTORY = {"cards": {c: {"p2p_bandwidth/scale_out": [(50.2, 0.2), (50.0, 0.2)]} for c in CARDS}}


def rows(slow: str | None = None, spine: float = 0.45) -> pd.DataFrame:
    """Every rail-matched scale-out pair at 50 GB/s (+-0.8%), those through spine1 at ``spine``
    of it, every pair of ``slow`` at 0.7 of that."""
    out = []
    for k, ((a, b), through) in enumerate(zip(PAIRS, SPINE)):
        v = 50.0 * (1 + 0.004 * ((k * 7) % 5 - 2)) * (spine if through else 1.0) * (0.7 if slow in (a, b) else 1.0)
        out.append({"kind": "p2p", "layer": "connectivity", "link": link_id(a, b), "src": a, "dst": b,
                    "tier": "scale_out", "bytes": 1 << 26, "bw_GBps": v, "bw_rev_GBps": v, "bibw_GBps": 2 * v,
                    "lat_us": 5.0, "lat_p99_us": 5.1, "lat_max_us": 5.2, "checksum_ok": True, "status": "ok",
                    "error": None})
    return pd.DataFrame(out)


def drifted(frame: pd.DataFrame, known: set[tuple[str, str]]) -> set[str]:
    ctx = DetectContext(TOPO, dict(INV.design), history=HISTORY, known=frozenset(known))
    return {f.entity for f in drift(frame, RULE, ctx)}


def test_pairs_through_a_named_switch_are_not_their_ends_drift():
    assert SPINE.sum() and len(drifted(rows(), set())) > 13  # unnamed, the spine's pairs read as drift
    assert drifted(rows(), {("spine:spine1", "switch")}) == set()
    # a card that did drift still shows it on its pairs that avoid the switch
    assert drifted(rows("hgx05/gpu3"), {("spine:spine1", "switch")}) == {"hgx05/gpu3"}


def test_the_pair_of_a_named_link_is_not_its_ends_drift():
    a, b = PAIRS[0]
    frame = rows(spine=1.0)
    frame.loc[0:8, ["bw_GBps", "bw_rev_GBps", "bibw_GBps"]] = 5.0  # 9 of its 15 pairs, named links at a tenth
    assert drifted(frame, set()) == {a}
    assert drifted(frame, {(link_id(*PAIRS[k]), "link") for k in range(9)}) == set()
