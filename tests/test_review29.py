"""Review 29: attacks on the session's judging landings (issue 29: ca0b7b2, 2e5ef86,
fb4f378, 4244d8f), each a full pre-upgrade gate on the mock (retests included) on the
two-host hgx-pair, where each NIC meets one card of the other supernode only."""

from pathlib import Path

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
