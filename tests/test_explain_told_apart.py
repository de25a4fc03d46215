"""Issue 29, item 1 of its Done-when: a host is the culprit only when its healthy-looking
cards are not healthy. On an HGX host every NVLink pair of a card is with its host mates
and its scale-out pairs run at the NIC's cap, so bandwidth cannot tell seven slow cards
from the host (the explainer says so: ``separated: false``). A per-card measurement,
the launch skew of collectives, tells them: its cards are judged against the other
cards' skew, and the late ones are findings of their own only where some card of the
host is clearly on time (inside half the rule's bar)."""

import pandas as pd
import pytest

from sncheck.health.metrics import DetectContext
from sncheck.health.ops import peer_outlier
from sncheck.health.rules import load_rules
from sncheck.run.inputs import load_inventory
from sncheck.topology import Topology
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOPO = Topology(load_inventory(ROOT / "fixtures/inventories/hgx-2su.yaml"))
RULES = {r.name: r for r in load_rules().rules}
RULE = RULES["collective-straggler"]


def rows(late: dict[str, float]) -> pd.DataFrame:
    """Rank rows of 12 collectives over every card: 1.3 us of skew (+-0.1), plus ``late``."""
    out = []
    for k in range(12):
        for i, c in enumerate(TOPO.cards):
            out.append({"kind": "rank", "group": f"all:{k}", "card": c.id,
                        "skew_us": 1.3 + 0.05 * ((i * 7) % 5 - 2) + 0.01 * k + late.get(c.id, 0.0)})
    return pd.DataFrame(out)


def judge(late: dict[str, float], untold: bool = True) -> set[str]:
    ctx = DetectContext(TOPO, {}, known=frozenset({("hgx02", "host")}),
                        untold=frozenset({"hgx02"}) if untold else frozenset())
    return {f.entity for f in peer_outlier(rows(late), RULE, ctx)}


HOST = [f"hgx02/gpu{g}" for g in range(8)]
FLEET = Topology(load_inventory(ROOT / "fixtures/inventories/fleet-12sn.yaml"))  # three-host domains


def test_seven_late_cards_of_an_untold_host_are_seven_findings_and_the_eighth_none():
    """main: the cards of a named host were never judged: the host stood for all eight."""
    late = {c: 32.0 for c in HOST if c != "hgx02/gpu3"}  # (1/0.61 - 1) * 50 us
    assert judge(late) == set(late)


@pytest.mark.parametrize("excess", [32.0, 5.6, 4.0])
def test_a_host_whose_cards_are_all_late_or_none_clearly_on_time_stays_the_host(excess):
    """Every card late (a slow host), or all near the bar (a faint host at 0.9 to 0.93:
    4 to 5.6 us late): nothing told apart, the host's finding stands."""
    assert judge({c: excess for c in HOST}) == set()
    assert judge({c: excess if c != "hgx02/gpu3" else 3.0 for c in HOST}) == set()  # the eighth not clearly on time


def test_a_separated_host_keeps_its_cards_out_of_the_peers():
    late = {c: 32.0 for c in HOST if c != "hgx02/gpu3"}
    assert judge(late, untold=False) == set()


# ---- issue 29 Done-when, the faint card released by its retest (scenario 5065 of the generator)
def test_a_cards_scale_up_retest_gives_it_the_partners_its_card_bar_needs():
    """main: one control per other host of the domain: on a fleet of three-host domains a
    card at 0.90 was retested against two partners, fewer than the card bar's min_pairs (3),
    so its median was never judged and the faint card was released."""
    from sncheck.run.controls import peers_for

    topo = FLEET
    card_bar = RULES["p2p-bandwidth-card-slow"]
    peers = peers_for(["s06n2/gpu6"], topo, set(), "scale_up")
    assert len(peers) >= card_bar.params.get("min_pairs", 3)
    assert all(topo.tier("s06n2/gpu6", p) == "scale_up" for p in peers)
    assert peers[:2] == ["s06n1/gpu6", "s06n3/gpu6"]  # the same index on each other host first
    avoid = {"s06n1/gpu6", "s06n3/gpu0"}
    assert not set(peers_for(["s06n2/gpu6"], topo, avoid, "scale_up")) & avoid


def test_a_card_bar_the_retest_could_not_apply_never_releases():
    """A per-card symptom retested with fewer partners on its tier than the bar's min_pairs
    is not judged (stays quarantined), never "inside the bar" (main: released)."""
    from sncheck.model import EntityKind, Finding, Severity
    from sncheck.run.retestbar import too_few_partners

    card_bar = RULES["p2p-bandwidth-card-slow"]
    f = Finding("s06n2/gpu6", EntityKind.CARD, "connectivity", card_bar.name, Severity.WARNING, "", {})

    def rows(partners):
        return pd.DataFrame([{"kind": "p2p", "status": "ok", "src": "s06n2/gpu6", "dst": p} for p in partners]
                            + [{"kind": "p2p", "status": "ok", "src": "s06n1/gpu6", "dst": "s06n3/gpu6"}])

    assert "2 partners" in too_few_partners(card_bar, rows(["s06n1/gpu6", "s06n3/gpu6"] * 2), f, FLEET, "scale_up")
    assert too_few_partners(card_bar, rows(["s06n1/gpu6", "s06n3/gpu6", "s06n1/gpu0"]), f, FLEET, "scale_up") is None
    # partners on another tier do not count for this one
    assert too_few_partners(card_bar, rows(["s06n1/gpu6", "s06n3/gpu6", "s06n2/gpu0"]), f, FLEET, "scale_up")


def test_a_three_host_domains_retest_gives_each_sampled_card_the_partners_its_bar_needs():
    """main: one card per host, two partners each on a three-host domain: the domain bar
    (min_pairs 3) never judged the retest and a faint domain at 0.884 (generator 5076,
    fleet-12sn) was released. Large domains keep one card a host."""
    from sncheck.run.controls import domain_sample

    sample = domain_sample(FLEET, "sn01", "scale_up")
    assert len(sample) == 6 and len(set(sample)) == 6
    assert all(sum(FLEET.tier(c, o) == "scale_up" for o in sample) >= 3 for c in sample)
    nvl72 = Topology(load_inventory(ROOT / "fixtures/inventories/nvl72-rack.yaml"))
    big = domain_sample(nvl72, nvl72.supernode_names[0], "scale_up")
    assert len({c.rsplit("/", 1)[0] for c in big}) == len(big)  # one card a host


def test_a_domain_bar_the_retest_could_not_apply_never_releases():
    from sncheck.model import EntityKind, Finding, Severity
    from sncheck.run.retestbar import too_few_partners

    bar = RULES["p2p-bandwidth-domain-below-design"]
    f = Finding("sn01", EntityKind.SUPERNODE, "connectivity", bar.name, Severity.WARNING, "", {})
    one_a_host = ["s01n1/gpu0", "s01n2/gpu1", "s01n3/gpu2"]
    rows = pd.DataFrame([{"kind": "p2p", "status": "ok", "src": a, "dst": b}
                         for i, a in enumerate(one_a_host) for b in one_a_host[i + 1:]])
    assert "fewer than two" in too_few_partners(bar, rows, f, FLEET, "scale_up")
    from sncheck.run.controls import domain_sample

    sample = domain_sample(FLEET, "sn01", "scale_up")
    rows = pd.DataFrame([{"kind": "p2p", "status": "ok", "src": a, "dst": b}
                         for i, a in enumerate(sample) for b in sample[i + 1:]])
    assert too_few_partners(bar, rows, f, FLEET, "scale_up") is None


# ---- issue 29, the sweep at 3753b8d: a host slowed whole named as its card 0 (5107, 5128)
def mock_rows(late_across: dict[str, float], late_within: dict[str, float] = {},  # noqa: B006 -- read only
              pairs: tuple[str, ...] = ()) -> pd.DataFrame:
    """Rank rows as the mock's stress layer plans them: each host's cards together
    (``host:``), card 0 of every host together (``cross:gpu0``, the rail-0 groups), and
    narrowing pairs of ``pairs``' cards with another host's same-index card. A card starts
    ``late_within`` us late beside its own host's cards and ``late_across`` us beside
    other hosts' (a host slowed whole: its cards are late only beside other hosts')."""
    out = []
    for k in range(12):
        for i, c in enumerate(TOPO.cards):
            noise = 1.0 + 0.05 * ((i * 7) % 5 - 2) + 0.01 * k
            out.append({"kind": "rank", "group": f"host:{c.id.split('/')[0]}", "card": c.id,
                        "skew_us": noise + late_within.get(c.id, 0.0)})
            if c.id.endswith("/gpu0"):
                out.append({"kind": "rank", "group": "cross:gpu0", "card": c.id,
                            "skew_us": noise + late_across.get(c.id, 0.0)})
        for j, c in enumerate(pairs):
            partner = c.replace("hgx02/", "hgx01/")
            group = f"pair:{partner}<->{c}"
            out += [{"kind": "rank", "group": group, "card": partner, "skew_us": 0.0},
                    {"kind": "rank", "group": group, "card": c, "skew_us": 0.05 * (j % 3) + late_across.get(c, 0.0)}]
    return pd.DataFrame(out)


def judged(frame: pd.DataFrame, untold: bool) -> dict[str, str]:
    ctx = DetectContext(TOPO, {}, known=frozenset({("hgx02", "host")}) if untold else frozenset(),
                        untold=frozenset({"hgx02"}) if untold else frozenset())
    return {f.entity: f.entity_kind.value for f in peer_outlier(frame, RULE, ctx)}


def test_a_host_slowed_whole_that_no_bandwidth_named_is_the_host_not_its_card_0():
    """5128 seed 2 (mi04 at 0.889: only card 0 late, in the rail-0 groups; its mates on
    time beside each other only): main named mi04/gpu0 a straggler, a card<->host
    mis-level. No mate is measured on time beside another host's card: the host."""
    whole = {c: 32.0 for c in HOST}
    assert judged(mock_rows(whole), untold=False) == {"hgx02": "host"}


def test_a_host_slowed_whole_and_named_keeps_its_finding_from_card_0():
    """5107 (every hgx04 card at 0.60, the host named by bandwidth, not told from its
    cards): main told card 0 apart (late beside other hosts, its mates 'on time' beside
    each other), and the merge gave it the host's critical verdict. The narrowing pairs
    measure every mate late beside other hosts' cards: nothing told apart."""
    whole = {c: 32.0 for c in HOST}
    assert judged(mock_rows(whole, pairs=tuple(HOST)), untold=True) == {}


@pytest.mark.parametrize("card", ["hgx02/gpu0", "hgx02/gpu3"])
def test_a_slow_card_late_beside_its_own_mates_is_still_the_card(card):
    """One slow card is late beside its host's cards too, which no host fault does: the card."""
    rows = mock_rows({card: 32.0}, {card: 32.0})
    assert judged(rows, untold=False) == {card: "card"}


def test_seven_late_cards_of_a_named_host_beside_a_mate_on_time_against_other_hosts():
    """The HGX case stays: seven slow cards, the eighth measured on time in its narrowing
    pairs with other hosts' cards (a healthy reference): seven card findings."""
    late = {c: 32.0 for c in HOST if c != "hgx02/gpu3"}
    rows = mock_rows(late, late, pairs=tuple(HOST))
    assert judged(rows, untold=True) == dict.fromkeys(late, "card")
    # the same seven with no mate measured beside other hosts' cards, and late only
    # beside them: nothing tells them from the host
    assert judged(mock_rows(late, pairs=tuple(c for c in HOST if c != "hgx02/gpu3")), untold=True) == {}


def test_a_host_slowed_whole_beside_a_slower_named_host_is_not_told_from_its_card_0():
    """The sweep at 3753b8d, 5275 seed 1 (hgx-2su: hgx07 slowed whole at 0.674, hgx02 at 0.60,
    both named by bandwidth, not told from their cards): hgx07's narrowing pairs were with
    hgx02's cards, later still, so its mates were 'on time beside another host's card' and
    card 0 was told from its host (a card<->host mis-level). A mate on time only beside
    cards a named culprit holds is no healthy reference: nothing told apart."""
    whole = {c: 24.0 for c in HOST} | {c.replace("hgx02/", "hgx01/"): 32.0 for c in HOST}
    frame = mock_rows(whole, pairs=tuple(HOST))
    pair = frame["group"].str.startswith("pair:")
    frame.loc[pair, "skew_us"] = frame.loc[pair, "card"].str.startswith("hgx01/") * 8.0  # the slower host's late
    ctx = DetectContext(TOPO, {}, known=frozenset({("hgx01", "host"), ("hgx02", "host")}),
                        untold=frozenset({"hgx01", "hgx02"}))
    assert {f.entity for f in peer_outlier(frame, RULE, ctx)} == set()
    # beside a host no culprit names the same mates on time tell card 0 apart, as before
    frame.loc[pair, "skew_us"] = 0.0
    ctx = DetectContext(TOPO, {}, known=frozenset({("hgx02", "host")}), untold=frozenset({"hgx02"}))
    assert {f.entity for f in peer_outlier(frame, RULE, ctx) if f.entity.startswith("hgx02")} == {"hgx02/gpu0"}


def test_a_domain_slowed_whole_is_no_card_or_host_straggler():
    """Issue 29, the straggler mis-level one level up: an NVL72 rack slowed whole starts its
    cards late only beside other racks' (cross:gpu0); its host, rail and domain groups lie
    inside it, all equally slow. A card's skew is its median over its groups, so its card 0
    is late in one group of four: no card or host of it is a straggler, whether bandwidth
    named the rack (held, not told from its cards) or not (the generator's whole and faint
    NVL72 and CloudMatrix domains, 3753b8d log, --again on main: 0 differ)."""
    from sncheck.probeplan import stress_groups

    topo = Topology(load_inventory(ROOT / "fixtures/inventories/nvl72-2rack.yaml"))
    rack = topo.supernode_names[0]
    mine = set(topo.cards_of_supernode(rack))
    out = []
    for k in range(6):
        for g in stress_groups(topo):
            outside = any(c not in mine for c in g.members)
            out += [{"kind": "rank", "group": g.id, "card": c,
                     "skew_us": 1.0 + 0.05 * ((i * 7) % 5 - 2) + 0.01 * k + (24.0 if c in mine and outside else 0.0)}
                    for i, c in enumerate(g.members)]
    frame = pd.DataFrame(out)
    assert (frame["group"] == "cross:gpu0").any()
    for known in (frozenset(), frozenset({(rack, "supernode")})):
        ctx = DetectContext(topo, {}, known=known, untold=frozenset({rack}) if known else frozenset())
        assert peer_outlier(frame, RULE, ctx) == []


def test_a_retest_that_measured_no_pair_of_the_suspect_on_its_symptoms_tier_never_releases():
    """reviews21 #4: a host whose every NIC ran at 0.5 (a scale-out symptom) was retested on its NVLink pairs
    alone; every one read healthy and the host was released, exit 0. No pair of the suspect on the symptom's
    tier is 'not re-measured where it showed' (stays quarantined), never inside the bar."""
    from sncheck.model import EntityKind, Finding, Severity
    from sncheck.run.retestbar import too_few_partners

    rule = RULES["collective-pair-slow"]
    f = Finding("s06n2", EntityKind.HOST, "stress", rule.name, Severity.CRITICAL, "", {})
    mine = set(FLEET.cards_of_host("s06n2"))

    def rows(pairs):
        return pd.DataFrame([{"kind": "collective", "group_kind": "pair", "group": f"pair:{a}<->{b}", "status": "ok"}
                             for a, b in pairs])

    inside = [("s06n2/gpu0", "s06n1/gpu0"), ("s06n2/gpu1", "s06n3/gpu1")]
    assert all(FLEET.tier(a, b) != "scale_out" for a, b in inside)
    assert "no pair of it measured on its tier (scale_out)" in too_few_partners(rule, rows(inside), f, FLEET,
                                                                                "scale_out", mine)
    out = next(c for c in FLEET.cards if FLEET.tier("s06n2/gpu0", c.id) == "scale_out").id
    short = too_few_partners(rule, rows(inside + [("s06n2/gpu0", out)]), f, FLEET, "scale_out", mine)
    assert short is None or "no pair of it measured" not in short
