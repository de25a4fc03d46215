"""A retest's measurement that a culprit named before it explains is no evidence against another suspect
(sncheck.run.retestbar.by_known, one definition for a failed pair, a finding on other cards and one inside the
suspect: reviews20 #5)."""

from __future__ import annotations

import pandas as pd

from sncheck.health.metrics import DetectContext
from sncheck.model import Finding
from sncheck.run.retestbar import by_known, failed_own, known_ends, of_known
from tests.test_confirm_symptoms import DEMO, _context, _steps

RAIL_GROUP = {"measured": 0.3238, "expected": 1.0, "unit": "x predicted", "group": "rail:sn0:gpu1",
              "groups": ["rail:sn0:gpu1"], "collective": "all_to_all", "sizes": [8, 16384, 1073741824],
              "smallest_bytes": 8, "against": "peers"}


def test_a_domain_is_not_confirmed_by_a_card_named_before_its_retest(tmp_path):
    # reviews20 #5: connectivity confirmed node003/gpu2 (0.5, persistent) and released gpu1 (transient); the stress layer's slow rail group
    # rail:sn0:gpu1 (a transient card's) put sn0 under suspicion. Its group re-ran inside its bars; the retest's
    # pair collectives showed node003/gpu2 slow again, which "confirmed" the whole supernode (32 cards).
    ctx, _ = _context(DEMO, ["{type: slow_card, target: node003/gpu2, factor: 0.5}"], tmp_path)
    ctx.known = frozenset({("node003/gpu2", "card")})
    ctx.factors = {"node003/gpu1": 0.499, "node003/gpu2": 0.5009}  # what connectivity measured of both cards
    f = Finding("sn0", "supernode", "stress", "collective-group-slow", "warning",
                "supernode sn0: collective group rail:sn0:gpu1 (8 ranks): slow against its peer groups", dict(RAIL_GROUP))
    steps = _steps(ctx, [f])
    assert [(s.entity, s.action) for s in steps] == [("sn0", "quarantine"), ("sn0", "release")], f.evidence["retest"]
    assert [(s["rule"], s["outcome"]) for s in f.evidence["retest_symptoms"]] == [("collective-group-slow", False)]


def test_one_definition_of_what_a_known_culprit_explains():
    from sncheck.run.inputs import load_inventory
    from sncheck.topology import Topology
    topo = Topology(load_inventory(DEMO))
    dctx = DetectContext(topo, {}, known=frozenset({("node003/gpu2", "card"), ("node003", "host")}), subject="node003")
    src, dst = pd.Series(["node003/gpu2", "node003/gpu0", "node001/gpu1"]), pd.Series(["node003/gpu0", "node003/gpu1", "node003/gpu2"])
    # the known card explains its own pairs; a culprit holding the whole subject (its host) explains nothing of it
    assert by_known(src, dst, dctx, known_ends(dctx)).tolist() == [True, False, True]
    host = Finding("node003", "host", "connectivity", "p2p-bandwidth-below-design", "critical", "x")
    card = Finding("node003/gpu2", "card", "stress", "collective-pair-slow", "critical", "y")
    assert of_known(host, card, {"node003/gpu2"}, lambda: known_ends(dctx))
    assert not of_known(host, host, {"node003/gpu2", "node003/gpu0"}, lambda: known_ends(dctx))
    rows = pd.DataFrame({"kind": "p2p", "src": src, "dst": dst, "status": ["timeout", "ok", "timeout"]})
    # the host's failed pairs are both at the known dead card: that card's symptom, not the host's
    assert failed_own(rows, host, {c for c in topo.cards_of_host("node003")}, topo) is not None
    assert failed_own(rows, host, {c for c in topo.cards_of_host("node003")}, topo, dctx, known_ends(dctx)) is None
