"""The isolation policy: confirm, release, repeat offenders, and the safety cap."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from sncheck.model import IsolationStep
from sncheck.health.policy import DEFAULT_WINDOW, check_cap, decide, decide_entry, entity_kind, is_repeat_offender, needs_confirmation
from sncheck.store.state import StateStore

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("confirmed, released_at, expected", [
    (True, None, "isolate"),
    (False, None, "release"),
    (None, None, "quarantine"),                         # the retest could not run: not a pass
    (False, NOW - timedelta(days=2), "isolate"),        # a lemon: no second chance
    (None, NOW - timedelta(days=6, hours=23), "isolate"),
    (False, NOW - timedelta(days=8), "release"),        # released long ago: a fresh start
    (True, NOW - timedelta(days=30), "isolate"),
])
def test_decide(confirmed: bool | None, released_at: datetime | None, expected: str) -> None:
    assert decide("node003/gpu2", "card", confirmed, released_at, NOW) == expected


def test_window_edges_and_custom_window() -> None:
    assert is_repeat_offender(NOW - DEFAULT_WINDOW, NOW)
    assert not is_repeat_offender(NOW - DEFAULT_WINDOW - timedelta(seconds=1), NOW)
    assert not is_repeat_offender(NOW + timedelta(minutes=1), NOW)  # a release in the future is bad data
    assert decide("n1", "host", False, NOW - timedelta(hours=30), NOW, window=timedelta(days=1)) == "release"
    with pytest.raises(ValueError, match="entity kind"):
        decide("n1", "rack", True, None, NOW)


def test_needs_confirmation_reads_the_store_with_an_injected_now(tmp_path: Path) -> None:
    with StateStore(tmp_path) as store:
        assert needs_confirmation("node003/gpu2", store, NOW)
        store.record_action("r1", IsolationStep("node003/gpu2", "card", "quarantine", "slow"),
                            ts=NOW - timedelta(days=3))
        store.record_action("r1", IsolationStep("node003/gpu2", "card", "release", "not confirmed"),
                            ts=NOW - timedelta(days=3))
        assert not needs_confirmation("node003/gpu2", store, NOW)            # tripped again within 7 days
        assert needs_confirmation("node003/gpu2", store, NOW + timedelta(days=5))  # 8 days after the release
        assert needs_confirmation("node003/gpu1", store, NOW)
        entry = decide_entry(IsolationStep("node003/gpu2", "card", "quarantine", "p2p: slow", rule="p2p"),
                             confirmed=False, released_at=store.last_release("node003/gpu2"), now=NOW)
    assert entry.action == "isolate" and entry.rule == "p2p"
    assert entry.reason.startswith("repeat offender: released 2026-11-26") and "7 days" in entry.reason


def test_decide_entry_reasons() -> None:
    q = IsolationStep("node007", "host", "quarantine", "host-unreachable: no answer", rule="host-unreachable")
    assert decide_entry(q, True, None, NOW).reason == "confirmed by the retest: host-unreachable: no answer"
    assert decide_entry(q, False, None, NOW).action == "release"
    assert "record kept" in decide_entry(q, False, None, NOW).reason
    assert decide_entry(q, None, None, NOW).action == "quarantine"


def test_entity_kind_by_shape() -> None:
    assert entity_kind("node003/gpu2") == "card"
    assert entity_kind("node001/gpu0<->node001/gpu1") == "link"
    assert entity_kind("node003") == "host"
    assert entity_kind("rack/gpux") == "host"


# -- the safety cap --------------------------------------------------------------------------

def isolate(entity: str, kind: str) -> dict:
    return {"entity": entity, "entity_kind": kind, "action": "isolate"}


def test_cap_blocks_a_fabric_wide_isolation() -> None:
    cards = [isolate(f"node{h:03d}/gpu{i}", "card") for h in range(1, 6) for i in range(4)]  # 20 of 64 cards
    res = check_cap(cards[:19], total_cards=64, total_hosts=16)
    assert not res.ok
    assert res.cards == 19 and res.card_share == pytest.approx(19 / 64)
    assert "fabric-wide or harness problem" in res.message and "Nothing was applied" in res.message
    assert "19 of 64 cards (29.7%)" in res.message


def test_cap_counts_a_host_as_all_its_cards() -> None:
    # One host of 8 cards in a cluster of 4 hosts x 8 + 1 x 2: 8/34 cards, 1/5 hosts.
    host_cards = {"a": 8, "b": 8, "c": 8, "d": 8, "e": 2}
    res = check_cap([isolate("a", "host")], 34, 5, cap=0.25, host_cards=host_cards)
    assert res.ok and res.cards == 8 and res.hosts == 1
    res = check_cap([isolate("e", "host"), isolate("e/gpu1", "card")], 34, 5, cap=0.2, host_cards=host_cards)
    assert res.ok and res.cards == 2  # the card on the isolated host is not counted twice
    res = check_cap([isolate("a", "host"), isolate("b/gpu0", "card")], 34, 5, cap=0.25, host_cards=host_cards)
    assert not res.ok and res.cards == 9 and "9 of 34 cards (26.5%)" in res.message  # 1 host fits, +1 card does not
    res = check_cap([isolate("a", "host"), isolate("b", "host")], 34, 5, cap=0.25, host_cards=host_cards)
    assert not res.ok and "2 of 5 hosts (40.0%)" in res.message


def test_cap_host_share_and_edges() -> None:
    # 2 of 16 hosts of 1 card each: 12.5% of hosts and of cards.
    res = check_cap([isolate("h1", "host"), isolate("h2", "host")], 16, 16)
    assert not res.ok and res.host_share == 0.125
    assert check_cap([isolate("h1", "host")], 10, 10).ok               # exactly at the cap is allowed
    assert check_cap([isolate("h1", "host")], 10, 10, cap=0.0).ok is False
    assert check_cap([], 10, 10).ok


def test_cap_always_allows_one_host_and_its_cards() -> None:
    # 4 hosts x 4 cards: 10% is 0.4 hosts and 1.6 cards, yet one host (4 cards) may go.
    host_cards = {f"node{i}": 4 for i in range(1, 5)}
    res = check_cap([isolate("node3", "host")], 16, 4, host_cards=host_cards)
    assert res.ok and res.hosts == 1 and res.cards == 4, res.message
    res = check_cap([isolate("node3", "host"), isolate("node3/gpu1", "card")], 16, 4, host_cards=host_cards)
    assert res.ok and res.cards == 4                       # its own card is not counted twice
    assert check_cap([isolate(f"node{i}/gpu0", "card") for i in range(1, 5)], 16, 4, host_cards=host_cards).ok
    res = check_cap([isolate("node3", "host"), isolate("node1/gpu0", "card")], 16, 4, host_cards=host_cards)
    assert not res.ok and "5 of 16 cards" in res.message   # one host plus one more card is over
    res = check_cap([isolate("node3", "host"), isolate("node4", "host")], 16, 4, host_cards=host_cards)
    assert not res.ok and "2 of 4 hosts" in res.message
    assert check_cap([isolate("node3", "host")], 16, 4, cap=0.0).ok is False   # cap 0 allows nothing
    # A big cluster: the cap's share wins over the one-host floor.
    assert check_cap([isolate(f"n{i}", "host") for i in range(10)], 800, 100).ok
    assert not check_cap([isolate(f"n{i}", "host") for i in range(11)], 800, 100).ok


def test_cap_ignores_quarantine_release_and_links_and_counts_supernodes() -> None:
    entries = [
        IsolationStep("n1/gpu0", "card", "quarantine", "x"),
        IsolationStep("n2/gpu0", "card", "release", "x"),
        IsolationStep("n1/gpu0<->n1/gpu1", "link", "isolate", "x"),
    ]
    res = check_cap(entries, 8, 2)
    assert res.ok and res.cards == 0
    res = check_cap([isolate("sn0", "supernode")], 64, 16, supernode_hosts={"sn0": [f"n{i}" for i in range(8)]})
    assert not res.ok and res.hosts == 8 and res.cards == 32
    with pytest.raises(ValueError):
        check_cap([], 0, 1)
    with pytest.raises(ValueError):
        check_cap([], 8, 2, cap=1.5)


def test_cap_floor_is_one_host_in_all_not_one_more_a_run() -> None:
    """Issue 30: the floor was one more host a run, so five one-host commands took 5 of 16
    hosts (31%) out. What is out already counts against the same floor."""
    host_cards = {f"node{i}": 4 for i in range(1, 17)}
    out = [isolate("node3", "host")]
    assert check_cap(out, 64, 16, host_cards=host_cards).ok
    res = check_cap(out + [isolate("node4", "host")], 64, 16, host_cards=host_cards)
    assert not res.ok and "2 of 16 hosts" in res.message and "--force-cap" in res.message
    cards = [isolate(f"node{i}/gpu0", "card") for i in (4, 5, 6)]
    assert check_cap(out + cards[:2], 64, 16, host_cards=host_cards).ok       # 6 of 64 cards: within 10%
    assert not check_cap(out + cards, 64, 16, host_cards=host_cards).ok       # 7 of 64: over
    assert check_cap(out + cards, 64, 16, 0.2, host_cards=host_cards).ok
