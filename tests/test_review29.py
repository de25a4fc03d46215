"""Review 29: attacks on the session's judging landings (issue 29: ca0b7b2, 2e5ef86,
fb4f378, 4244d8f), each a full pre-upgrade gate on the mock (retests included) on the
two-host hgx-pair, where each NIC meets one card of the other supernode only."""

from pathlib import Path

import pytest

from sncheck.errors import ConfigError

from mock_gate import ends, mock_gate, named as named_in


def gate(tmp_path: Path, faults: list[str], inventory: str = "hgx-pair"):
    res = mock_gate(tmp_path, inventory, faults).results
    return res, named_in(res), ends(res)


def test_a_slow_link_between_the_two_hosts_leaves_no_end_card_quarantined(tmp_path):
    """main: the link is isolated, but its retest (its one pair, each end measured there
    alone) named both end cards "card or link, not localised", rivals of the link itself;
    they were taken as findings of their own, their retests had no known-good peer on
    scale_out, and both stayed quarantined for ever (the gate failed on two healthy cards).
    An end the evidence cannot tell from the link is the link's symptom again (the link is
    confirmed by it), not a finding of its own."""
    res, named, last = gate(tmp_path, ["{type: degraded_link, target: 'dgx-a/gpu3<->dgx-b/gpu3', factor: 0.4}"])
    assert named == {("dgx-a/gpu3<->dgx-b/gpu3", "link")}, named
    assert last == {"dgx-a/gpu3<->dgx-b/gpu3": "isolate"}, last


def test_a_dead_link_between_the_two_hosts_is_the_link_alone(tmp_path):
    res, named, last = gate(tmp_path, ["{type: dead_link, target: 'dgx-a/gpu0<->dgx-b/gpu0'}"])
    assert named == {("dgx-a/gpu0<->dgx-b/gpu0", "link")}, named
    assert last == {"dgx-a/gpu0<->dgx-b/gpu0": "isolate"}, last


@pytest.mark.parametrize("faults, line, nic, partner", [
    # ibstat not on the PATH: only the pair's measurement shows the NIC port down (main: the
    # link isolated, the NIC's collective finding released "not confirmed", gpu0 of both
    # hosts quarantined for ever)
    (["{type: missing_tool, target: dgx-a, tool: ibstat}", "{type: ib_port_down, target: dgx-a, port: 1}"],
     3, "dgx-a/nic0", "dgx-b/gpu0"),
    # the cable at a host port carries nothing: the same pair fails, the same three explain it
    (["{type: switch_port_down, target: 'leaf:only-leaf[18]'}"], 2, "dgx-b/nic1", "dgx-a/gpu1"),
])
def test_a_nic_fault_only_its_one_pair_shows_is_refused(tmp_path, faults, line, nic, partner):
    """fb4f378 refused a slow NIC measured beside one card of another supernode, since the
    NIC, the partner's NIC and the link explain the same pair; a NIC port down that no
    listing reads, and a switch port down at a host port, are the same fault to every
    measurement and were accepted (main: the link named and isolated, exit 1)."""
    with pytest.raises(ConfigError) as got:
        gate(tmp_path, faults)
    text = str(got.value)
    assert f"faults.yaml:{line}" in text and nic in text and partner in text, text


def test_a_nic_port_down_no_listing_reads_is_still_run_where_it_has_partners(tmp_path):
    """The refusal is for one partner only: on demo-2sn the NIC meets cards of eight hosts,
    and the measurement names it (the unseen class dead_nic_no_ibstat)."""
    res, named, last = gate(tmp_path, ["{type: missing_tool, target: node003, tool: ibstat}",
                                       "{type: ib_port_down, target: node003, port: 2}"],
                            inventory="demo-2sn")
    assert ("node003/nic1", "nic") in named, named
    assert last["node003/nic1"] == "isolate", last


def test_a_link_whose_release_was_withdrawn_is_not_released_again_by_the_same_card(tmp_path):
    """4244d8f: a link released as explained by an end card is retested again when that card
    is released, "the card no longer its explanation". main: the second retest named the same
    card from the link's pair again and released the link to it once more, then withdrew that
    too: the link (degraded at 0.7 all run long) stayed quarantined, never isolated. Here the
    card is late-slow at 0.6 (a scale-up slowness: its scale-out pairs beside controls are
    healthy, so its own retest releases it)."""
    res, named, last = gate(tmp_path, ["{type: degraded_link, target: 'node003/gpu1<->node011/gpu1', factor: 0.7}",
                                       "{type: slow_card, target: node003/gpu1, factor: 0.6, late: true}"],
                            inventory="demo-2sn")
    assert last["node003/gpu1<->node011/gpu1"] == "isolate", last
    # Since round 7 (scen8) the link's first retest no longer names the card from the link's pair
    # at all: the card's slowness is a scale-up one, inside its NIC's cap on scale-out, and of the
    # two the link fits the pair and the card's other pairs (explain.slowed). Released, then
    # withdrawn, at most once; here never released.
    acts = [e["action"] for e in res["isolation"] if e["entity"] == "node003/gpu1<->node011/gpu1"]
    [link] = [f for f in res["findings"] if f["entity"] == "node003/gpu1<->node011/gpu1"]
    assert "release" not in acts and len(link["evidence"].get("withdrawn", [])) <= 1, (acts, link["evidence"])


def test_a_link_released_to_a_card_then_withdrawn_is_not_released_to_it_again(tmp_path, monkeypatch):
    """The withdraw-once guard itself (4244d8f, ``retestbar.no_longer``), reached as before 3fd7454:
    with the search's fit-to-own-pairs tie rule off, the link's retest names the card from its
    two scale-out pairs (one the link's), the card's own retest releases it, the link's release is
    withdrawn, and its retest again must not release it to that card once more (the reviewer of
    stop 48: with the guard deleted the test above still passed)."""
    import sncheck.health.greedy as greedy  # (the search's steps: sncheck.health.greedy since r12-31)

    monkeypatch.setattr(greedy, "slowed", lambda lv, e, H2: 0)
    res, named, last = gate(tmp_path, ["{type: degraded_link, target: 'node003/gpu1<->node011/gpu1', factor: 0.7}",
                                       "{type: slow_card, target: node003/gpu1, factor: 0.6, late: true}"],
                            inventory="demo-2sn")
    assert last["node003/gpu1<->node011/gpu1"] == "isolate", last
    [link] = [f for f in res["findings"] if f["entity"] == "node003/gpu1<->node011/gpu1"]
    assert len(link["evidence"]["withdrawn"]) == 1, link["evidence"]["withdrawn"]


def test_seven_slow_cards_beside_a_host_as_slow_are_seven_cards(tmp_path):
    """ca0b7b2's case (7018) with the whole host as slow as the seven (0.7, not 0.9): gpu0
    starts every collective on time beside its seven late mates. main: host dgx-a named and
    isolated with it. ca0b7b2 judged the untold hosts' cards against every card measured:
    7 of those 16 are dgx-a's late cards (21.3-21.7 us) and dgx-b's, measured only beside each
    other, read ~1 us, so the median was 5.9 us and the MAD ~5.4 us; the seven sat at robust
    z ~2, inside collective-straggler's 5, and so did their skews beside their own mates
    (_Sides judged those against the same 16)."""
    cards = [f"{{type: slow_card, target: dgx-a/gpu{k}, factor: 0.7}}" for k in range(1, 8)]
    cards += [f"{{type: slow_card, target: dgx-b/gpu{k}, factor: 0.7}}" for k in range(8)]
    res, named, last = gate(tmp_path, cards)
    assert named == {(f"dgx-a/gpu{k}", "card") for k in range(1, 8)} | {("dgx-b", "host")}, named
    assert "dgx-a" not in last and "dgx-a/gpu0" not in last, last


def test_a_nic_port_down_its_listing_shows_is_the_nic_alone(tmp_path):
    """ibstat shows dgx-a/nic0 Down (isolated as hard evidence); its one pair's failure is
    that NIC's. main: the search took no card or NIC measured in one pair alone (it cannot be
    told from that pair's link by measurement), so it named the link 'between two otherwise
    healthy cards' too, and the retest isolated it beside the NIC. The listing tells the NIC
    apart (explain.alone): the NIC alone explains its pair, the smallest set."""
    res, named, last = gate(tmp_path, ["{type: ib_port_down, target: dgx-a, port: 1}"])
    assert named == {("dgx-a/nic0", "nic")}, named
    assert last == {"dgx-a/nic0": "isolate"}, last


def test_a_listed_nic_explains_its_own_pair_only(tmp_path):
    """The listing lifts the one-pair guard for dgx-a/nic0 alone: a degraded link on another
    scale-out pair of the same two hosts is still that link, not the listed NIC's, and the
    NIC's own pair names no link."""
    res, named, last = gate(tmp_path, ["{type: ib_port_down, target: dgx-a, port: 1}",
                                       "{type: degraded_link, target: 'dgx-a/gpu5<->dgx-b/gpu5', factor: 0.4}"])
    assert named == {("dgx-a/nic0", "nic"), ("dgx-a/gpu5<->dgx-b/gpu5", "link")}, named
    assert last == {"dgx-a/nic0": "isolate", "dgx-a/gpu5<->dgx-b/gpu5": "isolate"}, last
