"""A switch or cable suspect's retest whose own pairs show the fault again, localized at
another level (review17 #4, #8): never "inside the bar", never a release
(sncheck.run.retestbar.holders, tied, failed_own)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from sncheck.health.metrics import DetectContext
from sncheck.model import Finding, Severity
from sncheck.run.inputs import load_inventory
from sncheck.run.retestbar import failed_own
from sncheck.topology import Topology
from tests.test_confirm_symptoms import decisions, finding, run

DATA = Path(__file__).resolve().parent / "data"


def test_a_dead_uplink_whose_retest_is_named_at_its_leaf_is_not_released(tmp_path):
    # r10-02 + r10-13 together: every retest pair through the dead uplink timed out and the
    # retest's localization named its leaf, leaf:tor-c; the cable read "inside the bar" and went
    # back into service (seeds 1 and 2)
    code, res = run(tmp_path, str(DATA / "scenarios-r10/inv-tor.yaml"),
                    ["{type: slow_switch, target: 'leaf:tor-b', factor: 0.5}",
                     "{type: slow_card, target: pa1/gpu0, factor: 0.5}",
                     "{type: switch_port_down, target: 'leaf:tor-c[10]'}"], seed=2)
    cable = "leaf:tor-c[10]<->spine:x2[3]"
    assert code == 1
    assert (cable, "release") not in decisions(res)
    f = finding(res, cable)
    assert f["severity"] == "critical" and "released" not in f["message"]
    assert "leaf:tor-c" in f["evidence"]["retest"]  # reproduced, by its leaf


def test_a_slow_leaf_tied_in_its_retest_to_another_leaf_stays_named_beside_a_transient_cable(tmp_path):
    # every pair of leaf:nc-r0's retest crossed leaf:nb-r0 too; the retest named nb-r0 and nc-r0,
    # at 0.6 on 4 of 4 pairs, was released: the gate passed (seeds 1-3). The transient cable beside
    # it is still released (its own pairs at design in the retest).
    code, res = run(tmp_path, str(DATA / "scenarios-r9/inv-rail-spines.yaml"),
                    ["{type: switch_port_down, target: 'leaf:nc-r1[4]', transient: true}",
                     "{type: slow_switch, target: 'leaf:nc-r0', factor: 0.6}"], seed=1)
    assert code == 1
    assert ("leaf:nc-r0", "isolate") in decisions(res)
    assert ("leaf:nc-r1[4]<->spine:lo2[6]", "release") in decisions(res)


def test_a_failed_pair_through_the_suspect_is_never_inside_the_bar():
    topo = Topology(load_inventory(str(DATA / "scenarios-r10/inv-tor.yaml")))
    cable = "leaf:tor-c[10]<->spine:x2[3]"
    f = Finding(cable, "link", "connectivity", "p2p-bandwidth-below-design", Severity.CRITICAL, "m", {})
    fab = topo.fabric
    cards = sorted(topo.by_id)
    pos = np.array([fab.card_position(c) for c in cards])
    a, b = np.meshgrid(np.arange(len(cards)), np.arange(len(cards)))
    on = fab.through(cable, pos[a.ravel()], pos[b.ravel()])
    x, y = a.ravel()[on][0], b.ravel()[on][0]  # a pair the fabric routes over the cable
    off = fab.through("leaf:tor-a", pos[a.ravel()], pos[b.ravel()]) & ~on
    u, v = a.ravel()[off][0], b.ravel()[off][0]  # and one it does not
    rows = pd.DataFrame([{"kind": "p2p", "src": cards[u], "dst": cards[v], "status": "timeout"},
                         {"kind": "p2p", "src": cards[x], "dst": cards[y], "status": "ok"}])
    assert failed_own(rows, f, set(), topo) is None  # a failure beside it is not its own
    rows.loc[1, "status"] = "timeout"
    assert failed_own(rows, f, set(), topo) == "1 of its 1 pair tests in the retest failed (timeout): never inside the bar"
    # a pair collective through it (r9-03 + r9-07: the dead uplink's collective symptom read inside the bar)
    coll = pd.DataFrame([{"kind": "collective", "group": f"pair:{cards[x]}<->{cards[y]}", "status": s}
                         for s in ("ok", "timeout", "error")])
    assert failed_own(coll, f, set(), topo) == "2 of its 3 pair tests in the retest failed (error, timeout): " \
        "never inside the bar"


def test_a_failed_pair_through_another_known_dead_culprit_is_not_charged_to_the_suspect():
    # r11-39: spine core-a, suspect for a transient NIC's slow cross group, stayed quarantined on the 128
    # pairs of its retest that timed out through leaf suc-r7, dead and isolated before it
    topo = Topology(load_inventory(str(DATA / "scenarios-r10/inv-tor.yaml")))
    spine = Finding("spine:x2", "switch", "stress", "collective-group-slow", Severity.WARNING, "m", {})
    fab = topo.fabric
    cards = sorted(topo.by_id)
    pos = np.array([fab.card_position(c) for c in cards])
    a, b = (m.ravel() for m in np.meshgrid(np.arange(len(cards)), np.arange(len(cards))))
    on = fab.through("spine:x2", pos[a], pos[b])
    dead = fab.through("leaf:tor-d", pos[a], pos[b])
    x, y = a[on & dead][0], b[on & dead][0]  # through the spine and the dead leaf
    u, v = a[on & ~dead][0], b[on & ~dead][0]  # through the spine only
    rows = pd.DataFrame([{"kind": "p2p", "src": cards[x], "dst": cards[y], "status": "timeout"},
                         {"kind": "p2p", "src": cards[u], "dst": cards[v], "status": "ok"}])
    dctx = DetectContext(topo, {}, known=frozenset({("leaf:tor-d", "switch"), ("spine:x2", "switch")}),
                         subject="spine:x2")
    assert failed_own(rows, spine, set(), topo) == "1 of its 2 pair tests in the retest failed (timeout): " \
        "never inside the bar"  # not told who else is known: charged
    assert failed_own(rows, spine, set(), topo, dctx) is None  # the leaf's symptom, not the spine's
    rows.loc[1, "status"] = "timeout"  # one of its own beside the leaf fails: charged, counted without the leaf's
    assert failed_own(rows, spine, set(), topo, dctx) == "1 of its 1 pair tests in the retest failed (timeout): " \
        "never inside the bar"
    # every pair of its own crosses the dead leaf: the retest cannot judge it (neither against it nor for it)
    alone = rows.iloc[:1]
    assert failed_own(alone, spine, set(), topo, dctx) == "every one of its 1 pair tests in the retest crosses a " \
        "known culprit, 1 failed there: not judged"
