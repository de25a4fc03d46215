"""Retests batched per wave (sncheck.run.batches): suspects whose pair retests hold no card in
common are measured in one backend call, each judged on its own rows exactly as one at a time;
a batch that fails leaves only its suspects quarantined, with the reason."""

from __future__ import annotations

import json
from pathlib import Path


import pytest

from sncheck.backends.mock import MockBackend
from sncheck.errors import HarnessError
from sncheck.run.inputs import load_faults, load_inventory
from sncheck.health.rules import load_rules
from sncheck.layers.base import LayerContext
from sncheck.model import Finding
from sncheck.run.confirm import confirm
from sncheck.topology import Topology

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "fixtures/inventories/demo-2sn.yaml")
# three slow intra-host links on three hosts, one of them transient (released by its retest)
FAULTS = ("  - {type: degraded_link, target: 'node001/gpu0<->node001/gpu1', factor: 0.4}\n"
          "  - {type: degraded_link, target: 'node004/gpu2<->node004/gpu3', factor: 0.4, transient: true}\n"
          "  - {type: degraded_link, target: 'node010/gpu1<->node010/gpu3', factor: 0.4}\n")
LINKS = ("node001/gpu0<->node001/gpu1", "node004/gpu2<->node004/gpu3", "node010/gpu1<->node010/gpu3")


class Counting(MockBackend):
    """The mock, counting its p2p calls (and failing the ones asked to)."""

    def __init__(self, *args, fail: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[int] = []  # each call's pairs
        self.fail = fail

    def p2p(self, plan, emit) -> None:
        self.calls.append(sum(len(r.pairs) for r in plan.rounds))
        if self.fail is not None and len(self.calls) == self.fail:
            raise HarnessError("srun: error: step launch failed (the test's)")
        super().p2p(plan, emit)


# a card on node001 whose retest's control (node001/gpu3, its one host mate not a suspect) is the first link's too
SHARING = Finding("node001/gpu2", "card", "connectivity", "p2p-bandwidth-below-design", "critical", "card slow",
                  {"tier": "intra_host"})


def _wave(tmp_path, links=LINKS, fail=None, extra=()):
    inv = load_inventory(DEMO)
    topo = Topology(inv)
    tmp_path.mkdir(exist_ok=True)
    plan = tmp_path / "f.yaml"
    plan.write_text("faults:\n" + FAULTS)
    backend = Counting(topo, load_faults(str(plan), topo), seed=1, fail=fail)
    backend.begin_confirmation()
    rows: list[dict] = []
    ctx = LayerContext(topo, backend, rows.append, dict(inv.design), rules=load_rules("default"), rows=rows)
    suspects = [Finding(link, "link", "connectivity", "p2p-bandwidth-below-design", "critical", "link slow",
                        {"tier": "intra_host"}) for link in links] + list(extra)
    return confirm(ctx, suspects), backend, rows


def _one_at_a_time(monkeypatch):
    """confirm() as before batches: each suspect's window run alone."""
    from sncheck.run import batches
    monkeypatch.setattr(batches, "retests", lambda ctx, windows, sink_of: {
        w.f.entity: batches._guarded(w.run) for w in windows})
    import sncheck.run.confirm as confirm_module
    monkeypatch.setattr(confirm_module, "retests", batches.retests)


def _verdicts(outcome):
    return {e: (r.confirmed, r.how, r.note, r.symptoms) for e, r in outcome.items()}


def test_a_wave_of_three_disjoint_suspects_is_one_backend_call_with_the_same_verdicts(tmp_path, monkeypatch):
    batched, backend, rows = _wave(tmp_path / "b")
    assert len(backend.calls) == 1  # one step for the three suspects' pairs
    # each suspect's rows are its own: the cards of its host, tagged with it
    for link in LINKS:
        mine = [r for r in rows if r.get("confirms") == link and r.get("kind") == "p2p"]
        host = link.split("/")[0]
        assert mine and all(r["src"].startswith(host + "/") and r["dst"].startswith(host + "/") for r in mine)
    assert [batched[link].confirmed for link in LINKS] == [True, False, True]
    _one_at_a_time(monkeypatch)
    serial, backend1, rows1 = _wave(tmp_path / "s")
    assert len(backend1.calls) == 3
    assert _verdicts(batched) == _verdicts(serial)  # to the measured numbers in each note
    strip = lambda rs: sorted(json.dumps({k: v for k, v in r.items()}, sort_keys=True, default=str) for r in rs)  # noqa: E731
    assert strip(rows) == strip(rows1)  # the same rows, the same tags: only the number of calls differs


def test_a_suspect_sharing_cards_with_a_batch_goes_in_a_later_one(tmp_path):
    outcome, backend, rows = _wave(tmp_path, extra=(SHARING,))
    assert len(backend.calls) == 2
    assert backend.calls[1] == sum(1 for r in rows if r.get("confirms") == SHARING.entity and r.get("kind") == "p2p")
    assert set(outcome) == set(LINKS) | {SHARING.entity}


def test_a_failed_batch_leaves_only_its_suspects_quarantined_with_the_reason(tmp_path):
    outcome, backend, _ = _wave(tmp_path, fail=1, extra=(SHARING,))  # the first batch's step fails
    assert len(backend.calls) == 2
    for link in LINKS:
        assert outcome[link].confirmed is None
        assert "the retest could not run (srun: error: step launch failed (the test's))" in outcome[link].note
    assert outcome[SHARING.entity].confirmed is False  # the later batch ran: a healthy card, released


def test_a_suspect_retested_by_more_than_its_pairs_runs_alone_in_its_place(tmp_path):
    card = Finding("node012/gpu0", "card", "stress", "collective-pair-slow", "critical", "slow in pairs", {})
    outcome, backend, _ = _wave(tmp_path, extra=(card,))
    assert len(backend.calls) == 1  # the three links' batch; the card's collectives are not p2p
    assert set(outcome) == set(LINKS) | {card.entity}


@pytest.mark.torch
def test_on_the_local_backend_a_batch_is_one_torch_world_and_each_row_goes_to_its_retest():
    pytest.importorskip("torch")
    from sncheck.backends.local import LocalBackend
    from sncheck.config.inventory import TierDesign, local_inventory

    class CountingLocal(LocalBackend):
        calls = 0

        def p2p(self, plan, emit) -> None:
            CountingLocal.calls += 1
            super().p2p(plan, emit)

    topo = Topology(local_inventory(4))
    backend = CountingLocal(topo, seed=1, dist_backend="gloo")
    rows: list[dict] = []
    ctx = LayerContext(topo, backend, rows.append, {"intra_host": TierDesign(2.0, 100.0)},
                       rules=load_rules("local-cpu"), rows=rows)
    links = ("localhost/gpu0<->localhost/gpu1", "localhost/gpu2<->localhost/gpu3")
    try:
        outcome = confirm(ctx, [Finding(link, "link", "connectivity", "p2p-bandwidth-below-design", "critical",
                                        "link slow", {"tier": "intra_host"}) for link in links])
    finally:
        backend.close()
    assert CountingLocal.calls == 1 and set(outcome) == set(links)
    for link in links:  # its own pair only (no controls: every card is a suspect's), tagged with it
        mine = {(r["src"], r["dst"]) for r in rows if r.get("kind") == "p2p" and r.get("confirms") == link}
        assert {frozenset(p) for p in mine} == {frozenset(link.split("<->"))}
        assert "not re-measured" not in outcome[link].note
